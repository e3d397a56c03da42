/* fuzz/fuzz_host.c - libFuzzer target for the DNS-rebinding rule (issue 13): the Host
 * header check a coordinator without a token applies before answering (421), and the
 * --allowed-host names it is compared with. Build and run: make fuzz-host.
 *
 * Input: lines; the first is the Host header value, the others (at most 4) the
 * --allowed-host values. Properties beyond no crash / UB:
 *  - auth_host_header_parse writes at most len bytes (also for tiny buffers), and what it
 *    accepts is lower case, has no port, brackets or final dot, and parses to itself;
 *  - auth_host_allowed says 1 exactly when the parsed host is a loopback name or address
 *    or equals one of the parsed allowed names: never for a malformed header;
 *  - auth_host_headers_problem (the 400 rule, issue 42), given the first line as received
 *    (NUL bytes included): refused exactly when a NUL is inside or two headers came.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"

#define MAX_ALLOWED 4

static void check_parse(const char *value)
{
    char host[AUTH_HOST_MAX + 1];
    if (auth_host_header_parse(value, host, sizeof host) != 0) {
        /* a refusal holds for every buffer size */
        char small[8];
        if (auth_host_header_parse(value, small, sizeof small) == 0) abort();
        return;
    }
    size_t n = strlen(host);
    if (n == 0 || n > AUTH_HOST_MAX) abort();
    for (size_t i = 0; i < n; i++)
        if (host[i] >= 'A' && host[i] <= 'Z') abort();
    if (n > 1 && host[n - 1] == '.' && !strchr(host, ':')) abort();
    /* a smaller buffer: refused or the same text, never written past */
    for (size_t len = 1; len <= 16; len *= 2) {
        char *b = malloc(len);
        if (!b) return;
        if (auth_host_header_parse(value, b, len) == 0 && strcmp(b, host) != 0) abort();
        free(b);
    }
    /* what was accepted parses to itself (an IPv6 address needs its brackets again) */
    char again[AUTH_HOST_MAX + 1], wrapped[AUTH_HOST_MAX + 3];
    const char *v = host;
    if (strchr(host, ':')) {
        snprintf(wrapped, sizeof wrapped, "[%s]", host);
        v = wrapped;
    }
    if (auth_host_header_parse(v, again, sizeof again) != 0 || strcmp(again, host) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    const uint8_t *nl = memchr(data, '\n', size);
    size_t first = nl ? (size_t)(nl - data) : size;
    int has_nul = memchr(data, 0, first) != NULL;
    const char *why = auth_host_headers_problem(1, text, first);
    if ((why != NULL) != has_nul || (why && !*why)) abort();
    if (!auth_host_headers_problem(2, text, first)) abort();
    if (auth_host_headers_problem(0, NULL, 0)) abort();
    const char *lines[1 + MAX_ALLOWED];
    int nlines = 0;
    char *p = text;
    while (nlines < 1 + MAX_ALLOWED) {
        lines[nlines++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = 0;
        p = nl + 1;
    }
    for (int i = 0; i < nlines; i++) check_parse(lines[i]);

    const char *value = lines[0];
    const char *const *allowed = (const char *const *)(lines + 1);
    int nallowed = nlines - 1;
    int got = auth_host_allowed(value, allowed, nallowed);
    /* the rule, spelled out again */
    char host[AUTH_HOST_MAX + 1], want[AUTH_HOST_MAX + 1];
    int expect = 0;
    if (auth_host_header_parse(value, host, sizeof host) == 0) {
        expect = auth_host_is_loopback(host);
        for (int i = 0; i < nallowed && !expect; i++)
            if (auth_host_header_parse(allowed[i], want, sizeof want) == 0 && strcmp(host, want) == 0) expect = 1;
    }
    if (got != expect) abort();
    /* the header alone (no --allowed-host) is allowed only for loopback */
    if (auth_host_allowed(value, NULL, 0) && !(expect && auth_host_is_loopback(host))) abort();
    free(text);
    return 0;
}
