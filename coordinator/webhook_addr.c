/* coordinator/webhook_addr.c - see webhook_addr.h. */
#include "webhook_addr.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* An IPv4 address in host order. */
static const char *v4_kind(uint32_t a)
{
    unsigned o1 = a >> 24, o2 = (a >> 16) & 0xff;
    if (o1 == 0) return "unspecified"; /* 0/8: "this network", 0.0.0.0 reaches this host */
    if (o1 == 127) return "loopback";
    if (o1 == 10 || (o1 == 172 && (o2 & 0xf0) == 16) || (o1 == 192 && o2 == 168)) return "private";
    if (o1 == 100 && (o2 & 0xc0) == 64) return "private"; /* 100.64/10: carrier-grade NAT's shared space */
    if (o1 == 169 && o2 == 254) return "link-local";      /* cloud metadata services live here */
    if ((o1 & 0xf0) == 224) return "multicast";
    if ((o1 & 0xf0) == 240) return "reserved"; /* 240/4 and the broadcast address */
    if ((a & 0xffffff00u) == 0xc0000000u || (o1 == 198 && (o2 & 0xfe) == 18))
        return "reserved"; /* 192.0.0/24 (protocol assignments), 198.18/15 (benchmarking) */
    return NULL;
}

static uint32_t v4_at(const unsigned char *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static int all_zero(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

static const char *v6_kind(const unsigned char *b)
{
    if (all_zero(b, 15)) return b[15] == 0 ? "unspecified" : b[15] == 1 ? "loopback" : "reserved";
    if (all_zero(b, 10) && b[10] == 0xff && b[11] == 0xff) return v4_kind(v4_at(b + 12)); /* ::ffff:a.b.c.d */
    if (all_zero(b, 12)) {                                                                /* ::a.b.c.d (deprecated) */
        const char *k = v4_kind(v4_at(b + 12));
        return k ? k : "reserved";
    }
    if (all_zero(b, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) /* ::ffff:0:a.b.c.d */
        return v4_kind(v4_at(b + 12));
    static const unsigned char nat64[12] = {0, 0x64, 0xff, 0x9b}; /* 64:ff9b::/96 carries an IPv4 address */
    if (memcmp(b, nat64, 12) == 0) return v4_kind(v4_at(b + 12));
    if (b[0] == 0x20 && b[1] == 0x02) return v4_kind(v4_at(b + 2)); /* 6to4: 2002:AABB:CCDD::/48 */
    if ((b[0] & 0xfe) == 0xfc) return "private";                    /* fc00::/7, unique local */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local"; /* fe80::/10 */
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private";    /* fec0::/10, site-local (deprecated) */
    if (b[0] == 0xff) return "multicast";
    return NULL;
}

const char *webhook_addr_kind(const struct sockaddr *sa)
{
    if (!sa) return "reserved";
    if (sa->sa_family == AF_INET) {
        struct sockaddr_in in;
        memcpy(&in, sa, sizeof in);
        return v4_kind(ntohl(in.sin_addr.s_addr));
    }
    if (sa->sa_family == AF_INET6) {
        struct sockaddr_in6 in6;
        memcpy(&in6, sa, sizeof in6);
        return v6_kind(in6.sin6_addr.s6_addr);
    }
    return "reserved";
}

const char *webhook_host_kind(const char *host)
{
    char h[256];
    size_t n = strlen(host);
    if (n == 0 || n >= sizeof h) return NULL;
    memcpy(h, host, n + 1);
    char *zone = strchr(h, '%'); /* an IPv6 zone, "%25lo" in a URL: the address before it decides */
    if (zone) *zone = 0, n = strlen(h);
    if (n && h[n - 1] == '.') h[--n] = 0; /* a fully qualified name's root dot */
    /* libcurl answers localhost and every name under it with loopback addresses itself */
    if (strcasecmp(h, "localhost") == 0 || (n > 10 && strcasecmp(h + n - 10, ".localhost") == 0)) return "loopback";
    struct in_addr a4;
    if (inet_aton(h, &a4) == 1) return v4_kind(ntohl(a4.s_addr)); /* 127.1, 2130706433, 0x7f000001, 0177.0.0.1 */
    unsigned char a6[16];
    if (inet_pton(AF_INET6, h, a6) == 1) return v6_kind(a6);
    return NULL;
}
