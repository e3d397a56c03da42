/* fuzz/fuzz_webhook.c - libFuzzer target for a POST /api/v1/webhooks body
 * (webhook_body_parse, coordinator/webhook.h), the URL rules it applies
 * (webhook_url_check) and the host classifier under them (webhook_host_kind,
 * coordinator/webhook_addr.h, given the input as a host too): all read a request from
 * outside. Build and run: make fuzz-webhook.
 *
 * Properties beyond no crash / UB: a refusal says why; an accepted body's URL passes the
 * URL check alone, starts with http:// or https://, holds no '@' before its path and no
 * byte outside printable ASCII; its secret is 16 to 256 bytes and it asks for an event.
 * A host's kind is NULL or one of the six the filter names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "webhook.h"
#include "webhook_addr.h"

static void host_kind(const uint8_t *data, size_t size)
{
    char host[300];
    if (size >= sizeof host) size = sizeof host - 1;
    memcpy(host, data, size);
    host[size] = 0;
    const char *k = webhook_host_kind(host);
    static const char *const kinds[] = {"loopback", "private", "link-local", "unspecified", "multicast", "reserved"};
    if (!k) return;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (strcmp(k, kinds[i]) == 0) return;
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    host_kind(data, size);
    webhook_req_t r;
    char err[512] = "";
    if (webhook_body_parse((const char *)data, size, "*", &r, err, sizeof err) != 0) {
        if (!err[0]) abort();
        return 0;
    }
    if (webhook_url_check(r.url, "*", err, sizeof err) != 0) abort();
    if (strncasecmp(r.url, "http://", 7) != 0 && strncasecmp(r.url, "https://", 8) != 0) abort();
    const char *rest = strstr(r.url, "//") + 2;
    size_t auth = strcspn(rest, "/?#");
    if (memchr(rest, '@', auth)) abort();
    for (const char *p = r.url; *p; p++)
        if ((unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f) abort();
    size_t sl = strlen(r.secret);
    if (sl < WEBHOOK_SECRET_MIN || sl > WEBHOOK_SECRET_MAX || r.events == 0) abort();
    /* the URL alone, under a list that names no host: never accepted */
    if (webhook_url_check(r.url, "nothing.invalid", err, sizeof err) == 0 && !strcasestr(r.url, "nothing.invalid"))
        abort();
    return 0;
}
