/* common/npy.c - see npy.h.
 *
 * The header is parsed by hand rather than by a Python-literal evaluator: the grammar
 * numpy writes is tiny (a dict of three keys whose values are a string, a boolean and a
 * tuple of integers), and a parser that accepts only that cannot be talked into anything
 * else. Whitespace is allowed wherever Python allows it; Python 2's long suffix ("60000L")
 * is accepted in shapes because old files have it.
 */
#include "npy.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const uint8_t NPY_MAGIC[NPY_MAGIC_LEN] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* The header length field and the preamble size of a version; 0 for a version this
 * reader does not know. */
static size_t preamble_of(const uint8_t *buf, size_t *hlen)
{
    if (buf[6] == 1 && buf[7] == 0) {
        *hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
        return 10;
    }
    if ((buf[6] == 2 || buf[6] == 3) && buf[7] == 0) {
        *hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        return 12;
    }
    return 0;
}

size_t npy_header_size(const uint8_t *buf, size_t len)
{
    if (len < NPY_PREAMBLE_MAX) return NPY_PREAMBLE_MAX;
    if (memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0) return 0;
    size_t hlen = 0, pre = preamble_of(buf, &hlen);
    if (!pre || hlen > NPY_HEADER_MAX) return 0;
    return pre + hlen;
}

/* ---- the dict literal ---------------------------------------------------------------- */

typedef struct {
    const char *p, *end;
    char *err;
    size_t errlen;
} cursor_t;

static void skip_ws(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int expect(cursor_t *c, char ch, const char *where)
{
    skip_ws(c);
    if (c->p >= c->end || *c->p != ch) return fail(c->err, c->errlen, "header: expected '%c' %s", ch, where);
    c->p++;
    return 0;
}

/* A quoted string without escapes (none of numpy's keys or descrs has one) into out. */
static int parse_string(cursor_t *c, char *out, size_t outlen, const char *what)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return fail(c->err, c->errlen, "header: expected a quoted %s", what);
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return fail(c->err, c->errlen, "header: escapes in a %s are not supported", what);
        if ((unsigned char)*c->p < 0x20) return fail(c->err, c->errlen, "header: control character in a %s", what);
        if (n + 1 >= outlen) return fail(c->err, c->errlen, "header: %s longer than %zu bytes", what, outlen - 1);
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return fail(c->err, c->errlen, "header: unterminated %s", what);
    c->p++;
    out[n] = 0;
    return 0;
}

static int parse_bool(cursor_t *c, int *out)
{
    skip_ws(c);
    size_t left = (size_t)(c->end - c->p);
    if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
        *out = 1;
        c->p += 4;
        return 0;
    }
    if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
        *out = 0;
        c->p += 5;
        return 0;
    }
    return fail(c->err, c->errlen, "header: fortran_order must be True or False");
}

/* (d0, d1, ...) with up to NPY_MAX_DIMS non-negative integers, each at most 2^40. */
static int parse_shape(cursor_t *c, npy_header_t *h)
{
    if (expect(c, '(', "to open the shape") < 0) return -1;
    h->ndim = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') break;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') {
            if (c->p < c->end && *c->p == '-')
                return fail(c->err, c->errlen, "shape: dimension %d is negative", h->ndim);
            return fail(c->err, c->errlen, "shape: expected a dimension (a non-negative integer)");
        }
        if (h->ndim == NPY_MAX_DIMS) return fail(c->err, c->errlen, "shape: more than %d dimensions", NPY_MAX_DIMS);
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            v = v * 10 + (*c->p++ - '0');
            if (v > (int64_t)NPY_MAX_BYTES)
                return fail(c->err, c->errlen, "shape: dimension %d is larger than %llu", h->ndim,
                            (unsigned long long)NPY_MAX_BYTES);
        }
        if (c->p < c->end && *c->p == 'L') c->p++;
        h->shape[h->ndim++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        skip_ws(c);
        if (c->p >= c->end || *c->p != ')') return fail(c->err, c->errlen, "shape: expected ',' or ')'");
    }
    c->p++; /* ')' */
    return 0;
}

/* '<u1', '|b1', '>f4': byte order, kind, item size. */
static int parse_descr(const char *d, npy_header_t *h, char *err, size_t errlen)
{
    snprintf(h->descr, sizeof h->descr, "%s", d);
    size_t n = strlen(d);
    int order_ok = n == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=');
    int size = n == 3 ? d[2] - '0' : 0;
    int kind_ok = order_ok && (d[1] == 'u' || d[1] == 'i' || d[1] == 'f' || d[1] == 'b');
    int size_ok = (d[1] == 'u' || d[1] == 'i') ? (size == 1 || size == 2 || size == 4 || size == 8)
                  : d[1] == 'f'                ? (size == 4 || size == 8)
                                               : size == 1;
    if (!kind_ok || !size_ok)
        return fail(err, errlen, "dtype '%s' is not one pacer reads (integers, bool, float32 or float64)", d);
    h->kind = d[1];
    h->itemsize = size;
    h->big_endian = d[0] == '>' && size > 1;
    return 0;
}

int npy_parse_header(const uint8_t *buf, size_t len, npy_header_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len < NPY_MAGIC_LEN || memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return fail(err, errlen, "not a .npy array (no \\x93NUMPY magic)");
    if (len < 8) return fail(err, errlen, "truncated: %zu bytes, no version", len);
    size_t hlen = 0, pre = (len >= NPY_PREAMBLE_MAX || (buf[6] == 1 && len >= 10)) ? preamble_of(buf, &hlen) : 0;
    if (!pre) {
        if (!((buf[6] >= 1 && buf[6] <= 3) && buf[7] == 0))
            return fail(err, errlen, "unknown .npy format version %u.%u (pacer reads 1.0, 2.0, 3.0)", buf[6], buf[7]);
        return fail(err, errlen, "truncated: %zu bytes, no header length", len);
    }
    if (hlen > NPY_HEADER_MAX) return fail(err, errlen, "header of %zu bytes (at most %d)", hlen, NPY_HEADER_MAX);
    if (len < pre + hlen) return fail(err, errlen, "truncated: header of %zu bytes, file has %zu", hlen, len - pre);
    for (size_t i = 0; i < hlen; i++) {
        uint8_t b = buf[pre + i];
        if ((b < 0x20 || b > 0x7e) && b != '\n' && b != '\t' && b != '\r')
            return fail(err, errlen, "header: byte 0x%02x at %zu is not printable ASCII", b, i);
    }

    cursor_t c = {(const char *)buf + pre, (const char *)buf + pre + hlen, err, errlen};
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    if (expect(&c, '{', "at the start (a dict)") < 0) return -1;
    for (;;) {
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}') break;
        char key[32], val[32];
        if (parse_string(&c, key, sizeof key, "key") < 0) return -1;
        if (expect(&c, ':', "after a key") < 0) return -1;
        if (strcmp(key, "descr") == 0) {
            if (have_descr++) return fail(err, errlen, "header: 'descr' given twice");
            if (parse_string(&c, val, sizeof val, "descr") < 0) {
                skip_ws(&c);
                if (c.p < c.end && *c.p == '[')
                    return fail(err, errlen, "dtype: a structured dtype (pacer reads plain number arrays)");
                return -1;
            }
            if (parse_descr(val, out, err, errlen) < 0) return -1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_fortran++) return fail(err, errlen, "header: 'fortran_order' given twice");
            if (parse_bool(&c, &out->fortran_order) < 0) return -1;
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape++) return fail(err, errlen, "header: 'shape' given twice");
            if (parse_shape(&c, out) < 0) return -1;
        } else {
            return fail(err, errlen, "header: unknown key '%s'", key);
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p >= c.end || *c.p != '}') return fail(err, errlen, "header: expected ',' or '}' after a value");
    }
    c.p++; /* '}' */
    skip_ws(&c);
    if (c.p != c.end) return fail(err, errlen, "header: text after the closing '}'");
    if (!have_descr || !have_fortran || !have_shape)
        return fail(err, errlen, "header: no '%s'", !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");

    uint64_t count = 1;
    for (int i = 0; i < out->ndim; i++) {
        if (__builtin_mul_overflow(count, (uint64_t)out->shape[i], &count) || count > NPY_MAX_BYTES)
            return fail(err, errlen, "shape: more than %llu elements", (unsigned long long)NPY_MAX_BYTES);
    }
    out->count = count;
    out->nbytes = count * (uint64_t)out->itemsize;
    if (out->nbytes > NPY_MAX_BYTES)
        return fail(err, errlen, "shape: more than %llu bytes of data", (unsigned long long)NPY_MAX_BYTES);
    out->data_offset = pre + hlen;
    return 0;
}

/* ---- elements ------------------------------------------------------------------------ */

void npy_strides(const npy_header_t *h, uint64_t strides[NPY_MAX_DIMS])
{
    uint64_t s = (uint64_t)h->itemsize;
    for (int k = 0; k < NPY_MAX_DIMS; k++) strides[k] = 0;
    if (h->fortran_order) {
        for (int k = 0; k < h->ndim; k++) {
            strides[k] = s;
            s *= (uint64_t)h->shape[k];
        }
    } else {
        for (int k = h->ndim - 1; k >= 0; k--) {
            strides[k] = s;
            s *= (uint64_t)h->shape[k];
        }
    }
}

/* The element's bytes as an unsigned integer in host order (little-endian hosts). */
static uint64_t raw_bits(const npy_header_t *h, const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < h->itemsize; i++) {
        int k = h->big_endian ? h->itemsize - 1 - i : i;
        v |= (uint64_t)p[k] << (8 * i);
    }
    return v;
}

double npy_get_f64(const npy_header_t *h, const uint8_t *p)
{
    uint64_t v = raw_bits(h, p);
    if (h->kind == 'f' && h->itemsize == 4) {
        uint32_t u = (uint32_t)v;
        float f;
        memcpy(&f, &u, sizeof f);
        return f;
    }
    if (h->kind == 'f') {
        double d;
        memcpy(&d, &v, sizeof d);
        return d;
    }
    int overflow = 0;
    return (double)npy_get_i64(h, p, &overflow);
}

int64_t npy_get_i64(const npy_header_t *h, const uint8_t *p, int *overflow)
{
    uint64_t v = raw_bits(h, p);
    *overflow = 0;
    if (h->kind == 'i' && h->itemsize < 8) {
        /* sign-extend from the item's width */
        uint64_t sign = 1ull << (8 * h->itemsize - 1);
        return (int64_t)((v ^ sign) - sign);
    }
    if (h->kind == 'i') return (int64_t)v;
    if (h->kind == 'f') {
        *overflow = 1; /* not an integer type */
        return 0;
    }
    if (v > (uint64_t)INT64_MAX) {
        *overflow = 1;
        return INT64_MAX;
    }
    return (int64_t)v;
}
