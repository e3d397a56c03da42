/* tests/unit/test_webhook.c - the pure parts of webhooks (coordinator/webhook.h): the
 * HMAC-SHA256 their signatures use against RFC 4231's vectors, the URL rules (http and
 * https only, no credentials, the allow-list and its default), the body's refusals by
 * name, and which pacer:events events are which webhook events. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "sha256.h"
#include "webhook.h"

static void test_hmac_rfc4231(void **state)
{
    (void)state;
    char hex[SHA256_HEX_LEN + 1];
    unsigned char k1[20];
    memset(k1, 0x0b, sizeof k1);
    hmac_sha256_hex(k1, sizeof k1, "Hi There", 8, hex);
    assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_sha256_hex("Jefe", 4, "what do ya want for nothing?", 28, hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    unsigned char k6[131];
    memset(k6, 0xaa, sizeof k6);
    const char *d6 = "Test Using Larger Than Block-Size Key - Hash Key First";
    hmac_sha256_hex(k6, sizeof k6, d6, strlen(d6), hex);
    assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
    sha256_hex("abc", 3, hex); /* the plain hash still is SHA-256 */
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

static void url_refused(const char *url, const char *allow, const char *want)
{
    char err[256] = "";
    assert_int_equal(webhook_url_check(url, allow, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("%s: error '%s' does not say '%s'", url, err, want);
}

static void test_urls(void **state)
{
    (void)state;
    char err[256];
    assert_int_equal(webhook_url_check("https://hooks.example.com/pacer?x=1", NULL, err, sizeof err), 0);
    assert_int_equal(webhook_url_check("http://hooks.example.com:8080/", "*", err, sizeof err), 0);
    assert_int_equal(webhook_url_check("http://127.0.0.1:9/x", "127.0.0.1", err, sizeof err), 0);
    assert_int_equal(webhook_url_check("http://[::1]:9/x", "::1, 127.0.0.1", err, sizeof err), 0);
    url_refused("ftp://example.com/", NULL, "only http:// and https://");
    url_refused("file:///etc/passwd", NULL, "only http:// and https://");
    url_refused("https://user:pw@example.com/", NULL, "credentials");
    url_refused("https://user@example.com/", NULL, "credentials");
    url_refused("http://127.0.0.1:8080/", NULL, "127.0.0.1 is a loopback, private or link-local address");
    url_refused("http://localhost/", NULL, "loopback");
    url_refused("http://10.1.2.3/", NULL, "private");
    url_refused("http://169.254.169.254/latest/meta-data", NULL, "link-local");
    url_refused("http://[::1]/", NULL, "loopback");
    url_refused("http://evil.example.com/", "hooks.example.com", "not on the coordinator's webhook allow-list");
    url_refused("http://example.com:99999/", NULL, "port");
    url_refused("http://example.com:/", NULL, "port");
    url_refused("http:///x", NULL, "no host");
    url_refused("http://exa mple.com/", NULL, "a space, control or non-ASCII byte");
    url_refused("", NULL, "empty");
}

static void body_refused(const char *body, const char *want)
{
    webhook_req_t r;
    char err[512] = "";
    assert_int_equal(webhook_body_parse(body, strlen(body), "*", &r, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("%s: error '%s' does not say '%s'", body, err, want);
}

static void test_bodies(void **state)
{
    (void)state;
    webhook_req_t r;
    char err[512];
    const char *ok = "{\"url\": \"https://h.example/x\", \"events\": [\"job.succeeded\", \"job.interrupted\"], "
                     "\"secret\": \"0123456789abcdef\", \"job\": \"j-12\"}";
    assert_int_equal(webhook_body_parse(ok, strlen(ok), "*", &r, err, sizeof err), 0);
    assert_string_equal(r.url, "https://h.example/x");
    assert_string_equal(r.job, "j-12");
    assert_int_equal(r.events, (1u << 0) | (1u << 3));
    body_refused("[]", "not a JSON object");
    body_refused("{\"url\": \"https://h.example/\", \"events\": [\"job.exploded\"], \"secret\": \"0123456789abcdef\"}",
                 "\"job.exploded\" is not an event");
    body_refused("{\"url\": \"https://h.example/\", \"events\": [], \"secret\": \"0123456789abcdef\"}", "events:");
    body_refused("{\"url\": \"https://h.example/\", \"events\": [\"job.failed\"], \"secret\": \"short\"}", "secret:");
    body_refused("{\"url\": \"https://h.example/\", \"events\": [\"job.failed\"]}", "secret:");
    body_refused("{\"events\": [\"job.failed\"], \"secret\": \"0123456789abcdef\"}", "url: missing");
    body_refused("{\"url\": \"gopher://h/\", \"events\": [\"job.failed\"], \"secret\": \"0123456789abcdef\"}", "url:");
    body_refused("{\"url\": \"https://h.example/\", \"events\": [\"job.failed\"], \"secret\": \"0123456789abcdef\", "
                 "\"job\": \"../x\"}",
                 "job: must be a job id");
    body_refused("{\"url\": \"https://h.example/\", \"events\": [\"job.failed\"], \"secret\": \"0123456789abcdef\", "
                 "\"hmm\": 1}",
                 "hmm: not a field of a webhook");
}

static const char *event_of(const char *text)
{
    json_t *e = json_loads(text, 0, NULL);
    const char *name = webhook_event_of(e);
    json_decref(e);
    return name;
}

static void test_events(void **state)
{
    (void)state;
    assert_string_equal(event_of("{\"type\": \"state\", \"job\": \"j-1\", \"state\": \"SUCCEEDED\"}"), "job.succeeded");
    assert_string_equal(event_of("{\"type\": \"state\", \"job\": \"j-1\", \"state\": \"FAILED\"}"), "job.failed");
    assert_string_equal(event_of("{\"type\": \"state\", \"job\": \"j-1\", \"state\": \"CANCELLED\"}"), "job.cancelled");
    assert_string_equal(event_of("{\"type\": \"interruption\", \"job\": \"j-1\"}"), "job.interrupted");
    /* an experiment's events as coordinator/experiment.c writes them: its end, and its
     * cancel (which has no state); a trial's events end nothing */
    assert_string_equal(event_of("{\"type\": \"experiment\", \"experiment\": \"e-1\", \"action\": \"finished\", "
                                 "\"state\": \"SUCCEEDED\"}"),
                        "experiment.succeeded");
    assert_string_equal(event_of("{\"type\": \"experiment\", \"experiment\": \"e-1\", \"action\": \"finished\", "
                                 "\"state\": \"FAILED\"}"),
                        "experiment.failed");
    assert_string_equal(event_of("{\"type\": \"experiment\", \"experiment\": \"e-1\", \"action\": \"cancelled\"}"),
                        "experiment.cancelled");
    assert_null(event_of("{\"type\": \"experiment\", \"experiment\": \"e-1\", \"action\": \"stopped\", "
                         "\"trial\": 2, \"job\": \"j-3\"}"));
    assert_null(event_of("{\"type\": \"experiment\", \"experiment\": \"e-1\", \"action\": \"submitted\", "
                         "\"state\": \"SUCCEEDED\"}"));
    assert_null(event_of("{\"type\": \"state\", \"job\": \"j-1\", \"state\": \"RUNNING\"}"));
    assert_null(event_of("{\"type\": \"audit\", \"state\": \"FAILED\"}"));
    assert_null(event_of("{\"state\": \"FAILED\"}"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_bodies),
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
