/* http/auth.c - see auth.h. */
#include "auth.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int auth_equal(const char *presented, size_t plen, const char *secret, size_t slen)
{
    /* Walk the secret's length whatever was presented, and fold every difference into
     * one accumulator: no early exit tells an attacker how many leading bytes matched. */
    volatile unsigned char diff = (unsigned char)(plen != slen);
    for (size_t i = 0; i < slen; i++) {
        unsigned char p = i < plen ? (unsigned char)presented[i] : 0;
        diff |= (unsigned char)(p ^ (unsigned char)secret[i]);
    }
    return diff == 0;
}

int auth_bearer(const char *header, const char **tok, size_t *len)
{
    if (!header) return -1;
    while (*header == ' ' || *header == '\t') header++;
    if (strncasecmp(header, "Bearer", 6) != 0 || (header[6] != ' ' && header[6] != '\t')) return -1;
    const char *t = header + 6;
    while (*t == ' ' || *t == '\t') t++;
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) n--;
    if (n == 0) return -1;
    *tok = t;
    *len = n;
    return 0;
}

int auth_token_check(const char *tok, char *err, size_t errlen)
{
    size_t n = tok ? strlen(tok) : 0;
    if (n == 0) {
        snprintf(err, errlen, "the token is empty");
        return -1;
    }
    if (n >= AUTH_TOKEN_MAX) {
        snprintf(err, errlen, "the token is longer than %d bytes", AUTH_TOKEN_MAX - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if (iscntrl((unsigned char)tok[i]) || tok[i] == ' ') {
            snprintf(err, errlen, "the token contains white space or control characters");
            return -1;
        }
    return 0;
}

int auth_token_load(const char *path, char *out, size_t outlen, char *err, size_t errlen)
{
    char line[AUTH_TOKEN_MAX + 2];
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--token-file %s: %s", path, strerror(errno));
        return -1;
    }
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    if (!ok) line[0] = 0;
    char *s = line;
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    char why[128];
    if (auth_token_check(s, why, sizeof why) != 0 || n + 1 > outlen) {
        snprintf(err, errlen, "--token-file %s: %s", path, n + 1 > outlen ? "token too long" : why);
        return -1;
    }
    memcpy(out, s, n + 1);
    return 0;
}

int auth_host_is_loopback(const char *host)
{
    if (!host || !*host) return 0;
    if (strcasecmp(host, "localhost") == 0) return 1;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    struct in6_addr a6;
    if (inet_pton(AF_INET6, host, &a6) == 1) return memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
    return 0;
}

int auth_host_header_parse(const char *value, char *host, size_t len)
{
    if (!value || !len) return -1;
    const char *h = value, *end;
    size_t n = strlen(value);
    if (n == 0 || n > AUTH_HOST_MAX + 8) return -1;
    const char *port = NULL;
    int bracket = h[0] == '[';
    if (bracket) {
        const char *rb = strchr(h, ']');
        if (!rb) return -1;
        h++;
        end = rb;
        if (rb[1] == ':') port = rb + 2;
        else if (rb[1]) return -1;
    } else {
        const char *colon = strchr(h, ':');
        if (colon && strchr(colon + 1, ':')) return -1; /* a bare IPv6 address needs brackets */
        end = colon ? colon : h + n;
        if (colon) port = colon + 1;
    }
    if (port) {
        size_t pl = strlen(port);
        if (pl == 0 || pl > 5 || strspn(port, "0123456789") != pl || atol(port) > 65535) return -1;
    }
    size_t hl = (size_t)(end - h);
    if (hl > 1 && !bracket && h[hl - 1] == '.') hl--; /* "localhost." is localhost */
    if (hl == 0 || hl > AUTH_HOST_MAX || hl >= len) return -1;
    for (size_t i = 0; i < hl; i++) {
        unsigned char c = (unsigned char)h[i];
        int ok = isalnum(c) || c == '.' || c == '-' || c == '_' || (bracket && c == ':');
        if (!ok) return -1;
        host[i] = (char)tolower(c);
    }
    host[hl] = 0;
    /* No empty label: "a..b", ".a" or "a.." (one final dot was dropped above) name no
     * host, and accepting "a.." as "a." would make the parse differ from its own output
     * (found by fuzz/fuzz_host.c). */
    if (!bracket && (host[0] == '.' || host[hl - 1] == '.' || strstr(host, ".."))) return -1;
    /* Brackets hold an IPv6 address and nothing else ("[.]" was accepted as "."). */
    struct in6_addr a6;
    if (bracket && inet_pton(AF_INET6, host, &a6) != 1) return -1;
    return 0;
}

int auth_host_allowed(const char *value, const char *const *allowed, int nallowed)
{
    char host[AUTH_HOST_MAX + 1], want[AUTH_HOST_MAX + 1];
    if (auth_host_header_parse(value, host, sizeof host) != 0) return 0;
    if (auth_host_is_loopback(host)) return 1;
    for (int i = 0; i < nallowed; i++)
        if (allowed[i] && auth_host_header_parse(allowed[i], want, sizeof want) == 0 && strcmp(host, want) == 0)
            return 1;
    return 0;
}

const char *auth_host_headers_problem(size_t nhosts, const char *value, size_t len)
{
    if (nhosts > 1) return "more than one Host header; HTTP/1.1 allows exactly one";
    if (value && memchr(value, 0, len)) return "the Host header holds a NUL byte";
    return NULL;
}
