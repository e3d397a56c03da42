/* common/utf8.c - see utf8.h. */
#include "utf8.h"

#include <string.h>

size_t utf8_char(const unsigned char *s, size_t n, uint32_t *cp, size_t *prefix)
{
    const unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* what the second byte may be (Table 3-7) */
    uint32_t v;
    if (prefix) *prefix = 0;
    if (c < 0x80) {
        if (cp) *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, v = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, v = c & 0x0F;
        if (c == 0xE0) lo = 0xA0; /* below: an overlong form */
        if (c == 0xED) hi = 0x9F; /* above: a surrogate */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, v = c & 0x07;
        if (c == 0xF0) lo = 0x90; /* below: an overlong form */
        if (c == 0xF4) hi = 0x8F; /* above: past U+10FFFF */
    } else {
        return 0;
    }
    size_t k = 1;
    for (; k < len && k < n; k++) {
        const unsigned b = s[k];
        if (b < lo || b > hi) break;
        lo = 0x80, hi = 0xBF;
        v = v << 6 | (b & 0x3F);
    }
    if (k == len) {
        if (cp) *cp = v;
        return len;
    }
    if (prefix) *prefix = k;
    return 0;
}

size_t utf8_sanitize(const char *in, size_t n, int final, char *out, size_t cap)
{
    size_t i = 0, o = 0;
    while (i < n) {
        size_t pre = 0;
        const size_t l = utf8_char((const unsigned char *)in + i, n - i, NULL, &pre);
        if (!l && pre == n - i && !final) break; /* cut short: the rest may come */
        const char *c = l ? in + i : UTF8_REPLACEMENT;
        const size_t cl = l ? l : 3;
        if (o + cl + 1 > cap) break;
        memcpy(out + o, c, cl);
        o += cl;
        i += l ? l : pre ? pre : 1;
    }
    if (cap) out[o] = '\0';
    return i;
}
