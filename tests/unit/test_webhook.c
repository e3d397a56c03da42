/* tests/unit/test_webhook.c - the pure parts of webhooks (coordinator/webhook.h): the
 * HMAC-SHA256 their signatures use against RFC 4231's vectors, the URL rules (http and
 * https only, no credentials, the allow-list and its default), the body's refusals by
 * name, and which pacer:events events are which webhook events; the address filter
 * (coordinator/webhook_addr.h) on every spelling of an internal address a URL may use and
 * on the socket addresses a delivery connects to; and one real POST (webhook_post_once)
 * to a name that resolves to 127.0.0.1, refused before any connection unless the host was
 * named, with errors that do not tell a closed port from a silent one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "sha256.h"
#include "webhook.h"
#include "webhook_addr.h"

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
    url_refused("http://127.0.0.1:8080/", NULL, "host 127.0.0.1 is a loopback address: webhooks call no loopback");
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

/* Every spelling of an internal address a URL may use, refused when the subscription is
 * made under the default list (*), each naming what it is. */
static void test_address_spellings(void **state)
{
    (void)state;
    static const struct {
        const char *url, *want;
    } cases[] = {
        {"http://127.1/", "host 127.1 is a loopback address"},
        {"http://2130706433/", "host 2130706433 is a loopback address"},
        {"http://0x7f000001/", "host 0x7f000001 is a loopback address"},
        {"http://0177.0.0.1/", "host 0177.0.0.1 is a loopback address"},
        {"http://localhost./", "host localhost. is a loopback address"},
        {"http://LocalHost/", "host LocalHost is a loopback address"},
        {"http://hooks.localhost:8080/", "host hooks.localhost is a loopback address"},
        {"http://[::127.0.0.1]/", "host ::127.0.0.1 is a loopback address"},
        {"http://[::ffff:127.0.0.1]/", "host ::ffff:127.0.0.1 is a loopback address"},
        {"http://[::1]:80/", "host ::1 is a loopback address"},
        {"http://0/", "host 0 is an unspecified address"},
        {"http://0.0.0.0:9/", "host 0.0.0.0 is an unspecified address"},
        {"http://[::]/", "host :: is an unspecified address"},
        {"http://10.1/", "host 10.1 is a private address"},
        {"http://167772161/", "host 167772161 is a private address"},
        {"http://172.31.255.1/", "host 172.31.255.1 is a private address"},
        {"http://192.168.0.1/", "host 192.168.0.1 is a private address"},
        {"http://100.64.0.1/", "host 100.64.0.1 is a private address"},
        {"http://[fc00::1]/", "host fc00::1 is a private address"},
        {"http://[fd12:3456::1]/", "host fd12:3456::1 is a private address"},
        {"http://[::ffff:10.0.0.1]/", "host ::ffff:10.0.0.1 is a private address"},
        {"http://2852039166/", "host 2852039166 is a link-local address"},
        {"http://169.254.169.254/latest/meta-data", "host 169.254.169.254 is a link-local address"},
        {"http://[fe80::1%25lo]/", "host fe80::1%25lo is a link-local address"},
        {"http://[::ffff:169.254.169.254]/", "host ::ffff:169.254.169.254 is a link-local address"},
        {"http://[64:ff9b::7f00:1]/", "host 64:ff9b::7f00:1 is a loopback address"},
        {"http://[2002:a00:1::]/", "host 2002:a00:1:: is a private address"},
        {"http://224.0.0.1/", "host 224.0.0.1 is a multicast address"},
        {"http://[ff02::1]/", "host ff02::1 is a multicast address"},
        {"http://255.255.255.255/", "host 255.255.255.255 is a reserved address"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        url_refused(cases[i].url, NULL, cases[i].want);
        url_refused(cases[i].url, "*", "unless --webhook-hosts names the host");
    }
    url_refused("http://[hooks.example.com]/", NULL, "url: [hooks.example.com] is not an IPv6 address");
    char err[256];
    /* public addresses, in any spelling, and names (checked when a delivery connects) */
    const char *fine[] = {"http://8.8.8.8/",
                          "http://134744072/",
                          "http://[2001:4860:4860::8888]/",
                          "http://[::ffff:8.8.8.8]/",
                          "https://hooks.example.com./x",
                          "http://localhost.example.com/"};
    for (size_t i = 0; i < sizeof fine / sizeof *fine; i++)
        if (webhook_url_check(fine[i], NULL, err, sizeof err) != 0) fail_msg("%s refused: %s", fine[i], err);
    /* a host the list names is the admin's to allow, in the spelling the list gives */
    assert_int_equal(webhook_url_check("http://127.1:9/", "*, 127.1", err, sizeof err), 0);
    assert_int_equal(webhook_url_check("http://localhost./", "localhost", err, sizeof err), 0);
    url_refused("http://127.1:9/", "*, 127.0.0.1", "host 127.1 is a loopback address");
}

static const char *kind4(const char *text)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    assert_int_equal(inet_pton(AF_INET, text, &a.sin_addr), 1);
    return webhook_addr_kind((const struct sockaddr *)&a);
}

static const char *kind6(const char *text)
{
    struct sockaddr_in6 a = {.sin6_family = AF_INET6};
    assert_int_equal(inet_pton(AF_INET6, text, &a.sin6_addr), 1);
    return webhook_addr_kind((const struct sockaddr *)&a);
}

/* The classifier a delivery's socket callback asks about each address it connects to. */
static void test_address_kinds(void **state)
{
    (void)state;
    static const char *const v4[][2] = {
        {"127.0.0.1", "loopback"},         {"127.255.0.9", "loopback"}, {"10.0.0.1", "private"},
        {"172.16.0.1", "private"},         {"192.168.77.1", "private"}, {"100.127.0.1", "private"},
        {"169.254.169.254", "link-local"}, {"0.0.0.0", "unspecified"},  {"0.1.2.3", "unspecified"},
        {"224.0.0.251", "multicast"},      {"239.1.1.1", "multicast"},  {"240.0.0.1", "reserved"},
        {"255.255.255.255", "reserved"},
    };
    for (size_t i = 0; i < sizeof v4 / sizeof *v4; i++) assert_string_equal(kind4(v4[i][0]), v4[i][1]);
    static const char *const v6[][2] = {
        {"::1", "loopback"},
        {"::", "unspecified"},
        {"::ffff:127.0.0.1", "loopback"},
        {"::127.0.0.1", "loopback"},
        {"::ffff:192.168.1.1", "private"},
        {"fc00::1", "private"},
        {"fdff::1", "private"},
        {"fe80::1", "link-local"},
        {"febf::1", "link-local"},
        {"ff02::1", "multicast"},
        {"::ffff:0:10.0.0.1", "private"},
        {"64:ff9b::a9fe:a9fe", "link-local"},
        {"2002:7f00:1::1", "loopback"},
        {"::8.8.8.8", "reserved"},
    };
    for (size_t i = 0; i < sizeof v6 / sizeof *v6; i++) assert_string_equal(kind6(v6[i][0]), v6[i][1]);
    const char *public4[] = {"8.8.8.8", "172.32.0.1", "172.15.255.255", "192.169.0.1", "100.128.0.1", "1.1.1.1"};
    for (size_t i = 0; i < sizeof public4 / sizeof *public4; i++) assert_null(kind4(public4[i]));
    const char *public6[] = {"2001:4860:4860::8888", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"};
    for (size_t i = 0; i < sizeof public6 / sizeof *public6; i++) assert_null(kind6(public6[i]));
}

/* A receiver on 127.0.0.1 that answers one request 204 (the thread's argument: its socket). */
static void *answer_once(void *arg)
{
    int s = *(int *)arg, c = accept(s, NULL, NULL);
    if (c >= 0) {
        char buf[4096];
        ssize_t n = 0, got;
        /* the request's headers and its body (small): until the peer has sent them all */
        while ((got = read(c, buf + n, sizeof buf - 1 - (size_t)n)) > 0) {
            n += got;
            buf[n] = 0;
            const char *end = strstr(buf, "\r\n\r\n");
            if (end && strstr(buf, "{}") > end) break;
        }
        const char ans[] = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
        if (write(c, ans, sizeof ans - 1) < 0) perror("write");
        close(c);
    }
    return NULL;
}

static int listener(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s, 4), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return s;
}

/* A delivery to a name that resolves to 127.0.0.1 (localhost, which no list names here) is
 * refused at its connection, before any byte leaves; the same POST with the host named
 * (check_addresses 0) reaches the receiver. A port nothing listens on and one that the
 * filter refuses say nothing about the port. */
static void test_post_resolved(void **state)
{
    (void)state;
    int port, status = -1, s = listener(&port);
    char url[96], why[256] = "";
    snprintf(url, sizeof url, "http://localhost:%d/hook", port);
    if (webhook_post_once(url, "0123456789abcdef", "{}", 1, &status, why, sizeof why) == -1 &&
        strstr(why, "without libcurl")) {
        close(s);
        skip();
    }
    assert_string_equal(why, "the receiver's address is not one webhooks may call (only a host --webhook-hosts names "
                             "may be internal)");
    assert_int_equal(status, 0);
    struct pollfd p = {.fd = s, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 200), 0); /* no connection came */
    /* the spellings the URL check refuses, had a subscription got past it (one made under
     * a wider list): libcurl reads each as this host, and the connection is refused (or,
     * for a name the resolver here does not know, never made) */
    const char *hosts[] = {"127.1", "2130706433", "0x7f000001", "0177.0.0.1",     "localhost.", "[::ffff:127.0.0.1]",
                           "0",     "[::1]",      "[::]",       "hooks.localhost"};
    for (size_t i = 0; i < sizeof hosts / sizeof *hosts; i++) {
        snprintf(url, sizeof url, "http://%s:%d/hook", hosts[i], port);
        assert_int_equal(webhook_post_once(url, "0123456789abcdef", "{}", 1, &status, why, sizeof why), -1);
        if (!strstr(why, "is not one webhooks may call") && !strstr(why, "did not resolve"))
            fail_msg("%s: %s", url, why);
        assert_int_equal(poll(&p, 1, 50), 0);
    }

    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, answer_once, &s), 0);
    snprintf(url, sizeof url, "http://localhost:%d/hook", port);
    int rc = webhook_post_once(url, "0123456789abcdef", "{}", 0, &status, why, sizeof why);
    pthread_join(t, NULL);
    if (rc != 0) fail_msg("a named host's POST: %s", why);
    assert_int_equal(status, 204);
    close(s);
    /* the port is closed now: the error is the one a silent receiver gets */
    assert_int_equal(webhook_post_once(url, "0123456789abcdef", "{}", 0, &status, why, sizeof why), -1);
    assert_string_equal(why,
                        "no HTTP answer from the receiver (it could not be reached, or did not answer within 10 s)");
    assert_int_equal(status, 0);
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
        cmocka_unit_test(test_address_spellings),
        cmocka_unit_test(test_address_kinds),
        cmocka_unit_test(test_post_resolved),
        cmocka_unit_test(test_bodies),
        cmocka_unit_test(test_events),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
