/* common/safetensors.c - see safetensors.h. */
#include "safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "errmsg.h"
#include "fs.h"
#include "jsonbody.h"

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

size_t st_dtype_size(st_dtype_t d) { return d == ST_F32 ? 4 : 2; }

const char *st_dtype_name(st_dtype_t d) { return d == ST_BF16 ? "BF16" : d == ST_F16 ? "F16" : "F32"; }

/* float32 to bf16, to nearest, ties to even, a NaN kept a quiet NaN: kernels/cpu/bf16.h's
 * rounding, which common/ cannot include (its arrows point down to it, not from it). */
static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u | 0x00400000u) >> 16);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* IEEE binary16 to float32, exactly: every half is a float (subnormals normalised). */
static float from_f16(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return from_bits(sign | 0x7f800000u | man << 13); /* inf, NaN */
    if (exp != 0) return from_bits(sign | (exp + 112) << 23 | man << 13);
    if (man == 0) return from_bits(sign);
    int e = 113; /* a subnormal: m * 2^-24, shifted up until its leading one is the implicit bit */
    while (!(man & 0x400u)) man <<= 1, e--;
    return from_bits(sign | (uint32_t)e << 23 | (man & 0x3ffu) << 13);
}

/* The header object of the n tensors t, their data laid out in order from 0. */
static json_t *header_json(const st_tensor_t *t, int n, size_t *data_len, char *err, size_t errlen)
{
    json_t *h = json_object(), *meta = json_object();
    if (!h || !meta) goto oom;
    json_object_set_new(meta, "format", json_string("pt"));
    json_object_set_new(meta, "producer", json_string("pacer"));
    json_object_set_new(h, "__metadata__", meta);
    meta = NULL;
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        if (strnlen(t[i].name, ST_NAME_MAX) >= ST_NAME_MAX || !t[i].name[0] || strcmp(t[i].name, "__metadata__") == 0) {
            snprintf(err, errlen, "safetensors: tensor %d: name '%.60s' empty, reserved or too long", i, t[i].name);
            json_decref(h);
            return NULL;
        }
        if (json_object_get(h, t[i].name)) {
            snprintf(err, errlen, "safetensors: tensor name '%s' given twice", t[i].name);
            json_decref(h);
            return NULL;
        }
        if (t[i].rank < 0 || t[i].rank > ST_MAX_RANK || (t[i].transposed && t[i].rank != 2) ||
            (t[i].dtype != ST_F32 && t[i].dtype != ST_BF16)) {
            snprintf(err, errlen,
                     "safetensors: tensor '%s': rank %d out of 0..%d, transposed and not 2-D, or dtype %s "
                     "(F32 and BF16 are written)",
                     t[i].name, t[i].rank, ST_MAX_RANK, st_dtype_name(t[i].dtype));
            json_decref(h);
            return NULL;
        }
        json_t *e = json_object(), *shape = json_array(), *offs = json_array();
        if (!e || !shape || !offs) {
            json_decref(e), json_decref(shape), json_decref(offs);
            goto oom;
        }
        for (int d = 0; d < t[i].rank; d++) json_array_append_new(shape, json_integer(t[i].dims[d]));
        json_array_append_new(offs, json_integer((json_int_t)off));
        off += t[i].count * st_dtype_size(t[i].dtype);
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_object_set_new(e, "dtype", json_string(st_dtype_name(t[i].dtype)));
        json_object_set_new(e, "shape", shape);
        json_object_set_new(e, "data_offsets", offs);
        json_object_set_new(h, t[i].name, e);
    }
    *data_len = off;
    return h;
oom:
    json_decref(meta);
    json_decref(h);
    snprintf(err, errlen, "safetensors: out of memory");
    return NULL;
}

/* Tensor t's data at p, little-endian (the host's byte order: every supported host's), in
 * its dtype and dims' order; the end of what it wrote. */
static uint8_t *put_data(const st_tensor_t *t, uint8_t *p)
{
    if (t->dtype == ST_F32 && !t->transposed) {
        if (t->count) memcpy(p, t->data, t->count * sizeof(float));
        return p + t->count * sizeof(float);
    }
    const size_t rows = t->transposed ? (size_t)t->dims[0] : 1, cols = t->transposed ? (size_t)t->dims[1] : 1;
    for (size_t k = 0; k < t->count; k++) {
        /* element k of dims' order; a transposed source holds it at column-major k */
        const float v = t->transposed ? t->data[k % cols * rows + k / cols] : t->data[k];
        if (t->dtype == ST_F32) {
            memcpy(p, &v, 4);
            p += 4;
        } else {
            const uint16_t h = to_bf16(v);
            memcpy(p, &h, 2);
            p += 2;
        }
    }
    return p;
}

int st_write_buffer(const st_tensor_t *t, int n, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    size_t data_len = 0;
    json_t *h = header_json(t, n, &data_len, err, errlen);
    if (!h) return -1;
    char *text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(h);
    if (!text) return snprintf(err, errlen, "safetensors: out of memory"), -1;
    /* the header padded with spaces to a multiple of 8 bytes: the data then starts aligned */
    size_t hl = strlen(text), padded = (hl + 7) / 8 * 8;
    size_t total = 8 + padded + data_len;
    uint8_t *b = malloc(total);
    if (!b) {
        free(text);
        return snprintf(err, errlen, "safetensors: out of memory (%zu bytes)", total), -1;
    }
    put_le64(b, padded);
    memcpy(b + 8, text, hl);
    memset(b + 8 + hl, ' ', padded - hl);
    free(text);
    uint8_t *p = b + 8 + padded;
    for (int i = 0; i < n; i++) p = put_data(&t[i], p);
    *out = b;
    *outlen = total;
    return 0;
}

int st_write_file(const char *path, const st_tensor_t *t, int n, char *err, size_t errlen)
{
    uint8_t *b;
    size_t len;
    if (st_write_buffer(t, n, &b, &len, err, errlen) != 0) return -1;
    int rc = fs_atomic_write(path, b, len, 0644);
    if (rc != 0) snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    free(b);
    return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

static uint64_t get_le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A JSON integer in [0, max] into *out; 0, or -1. */
static int bounded_int(const json_t *v, uint64_t max, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max) return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

/* The shape of entry e of tensor t (its rank, dims, count), the count's bytes bounded by
 * the data section's. 0, or -1 with err. */
static int parse_shape(const json_t *e, st_tensor_t *t, size_t data_len, char *err, size_t errlen)
{
    const json_t *shape = json_object_get(e, "shape");
    if (!json_is_array(shape) || json_array_size(shape) > ST_MAX_RANK)
        return snprintf(err, errlen, "safetensors: tensor '%s': shape is not an array of at most %d dimensions",
                        t->name, ST_MAX_RANK),
               -1;
    t->rank = (int)json_array_size(shape);
    uint64_t count = 1, cap = data_len / st_dtype_size(t->dtype);
    for (int d = 0; d < t->rank; d++) {
        uint64_t v;
        if (bounded_int(json_array_get(shape, (size_t)d), INT64_MAX, &v) != 0)
            return snprintf(err, errlen, "safetensors: tensor '%s': shape dimension %d is not an integer >= 0", t->name,
                            d),
                   -1;
        t->dims[d] = (int64_t)v;
        /* bounded before the product: count never passes the floats the data can hold */
        if (v != 0 && count > cap / v) count = cap + 1;
        else count *= v;
    }
    if (count > cap)
        return snprintf(err, errlen,
                        "safetensors: tensor '%s': shape size mismatch: its elements need more "
                        "than the data section's %zu bytes (truncated, or the shape is wrong)",
                        t->name, data_len),
               -1;
    t->count = (size_t)count;
    return 0;
}

/* Entry e of tensor name into *t. 0, or -1 with err. */
static int parse_entry(const char *name, const json_t *e, st_tensor_t *t, size_t data_len, char *err, size_t errlen)
{
    size_t nl = strlen(name);
    if (nl == 0 || nl >= ST_NAME_MAX)
        return snprintf(err, errlen, "safetensors: a tensor name of %zu bytes (1 to %d)", nl, ST_NAME_MAX - 1), -1;
    memcpy(t->name, name, nl + 1);
    if (!json_is_object(e)) return snprintf(err, errlen, "safetensors: tensor '%s' is not an object", name), -1;
    const char *dt = json_string_value(json_object_get(e, "dtype"));
    if (!dt) return snprintf(err, errlen, "safetensors: tensor '%s': no dtype", name), -1;
    if (strcmp(dt, "F32") == 0) t->dtype = ST_F32;
    else if (strcmp(dt, "BF16") == 0) t->dtype = ST_BF16;
    else if (strcmp(dt, "F16") == 0) t->dtype = ST_F16;
    else
        return snprintf(err, errlen, "safetensors: tensor '%s': dtype %.16s, only F32, BF16 and F16 are read", name, dt),
               -1;
    const size_t es = st_dtype_size(t->dtype);
    if (parse_shape(e, t, data_len, err, errlen) != 0) return -1;
    const json_t *offs = json_object_get(e, "data_offsets");
    uint64_t b, end;
    if (!json_is_array(offs) || json_array_size(offs) != 2 || bounded_int(json_array_get(offs, 0), data_len, &b) ||
        bounded_int(json_array_get(offs, 1), data_len, &end) || b > end)
        return snprintf(err, errlen,
                        "safetensors: tensor '%s': data_offsets not [BEGIN, END] with 0 <= BEGIN <= END <= %zu "
                        "(the data section's bytes): offsets out of range",
                        name, data_len),
               -1;
    if (end - b != t->count * es)
        return snprintf(err, errlen,
                        "safetensors: tensor '%s': shape size mismatch: %zu %s elements are %zu bytes, its "
                        "data_offsets span %llu",
                        name, t->count, dt, t->count * es, (unsigned long long)(end - b)),
               -1;
    t->begin = (size_t)b;
    return 0;
}

static int by_begin(const void *a, const void *b)
{
    const st_tensor_t *x = *(const st_tensor_t *const *)a, *y = *(const st_tensor_t *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    const size_t xb = x->count * st_dtype_size(x->dtype), yb = y->count * st_dtype_size(y->dtype);
    return xb < yb ? -1 : xb > yb;
}

/* The tensors' ranges cover the data section, without overlaps (the format's rule: no
 * holes either). 0, or -1 with err. */
static int check_layout(const st_file_t *f, char *err, size_t errlen)
{
    const st_tensor_t **s = malloc((size_t)(f->n ? f->n : 1) * sizeof *s);
    if (!s) return snprintf(err, errlen, "safetensors: out of memory"), -1;
    for (int i = 0; i < f->n; i++) s[i] = &f->tensors[i];
    qsort(s, (size_t)f->n, sizeof *s, by_begin);
    size_t at = 0;
    int rc = 0;
    for (int i = 0; i < f->n && rc == 0; i++) {
        if (s[i]->begin < at)
            rc = snprintf(err, errlen, "safetensors: tensors '%s' and '%s' overlap (at byte %zu of the data)",
                          s[i - 1]->name, s[i]->name, s[i]->begin);
        else if (s[i]->begin > at)
            rc = snprintf(err, errlen, "safetensors: bytes %zu to %zu of the data belong to no tensor", at, s[i]->begin);
        at = s[i]->begin + s[i]->count * st_dtype_size(s[i]->dtype);
    }
    if (rc == 0 && at != f->data_len)
        rc = snprintf(err, errlen, "safetensors: bytes %zu to %zu of the data belong to no tensor", at, f->data_len);
    free(s);
    return rc ? -1 : 0;
}

/* The header object h's entries into f. 0, or -1 with err. */
static int parse_header(const json_t *h, st_file_t *f, char *err, size_t errlen)
{
    size_t n = json_object_size(h);
    if (n > ST_TENSORS_MAX + 1)
        return snprintf(err, errlen, "safetensors: %zu entries, more than %d tensors", n, ST_TENSORS_MAX), -1;
    f->tensors = calloc(n ? n : 1, sizeof *f->tensors);
    if (!f->tensors) return snprintf(err, errlen, "safetensors: out of memory"), -1;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)h, key, v)
    {
        if (strcmp(key, "__metadata__") == 0) {
            const char *mk;
            json_t *mv;
            int ok = json_is_object(v);
            json_object_foreach(v, mk, mv) ok = ok && json_is_string(mv);
            if (!ok) return snprintf(err, errlen, "safetensors: __metadata__ is not an object of strings"), -1;
            continue;
        }
        if (parse_entry(key, v, &f->tensors[f->n], f->data_len, err, errlen) != 0) return -1;
        f->n++;
    }
    return check_layout(f, err, errlen);
}

int st_parse(const uint8_t *buf, size_t len, st_file_t *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    if (len < 8)
        return snprintf(err, errlen, "safetensors: %zu bytes, shorter than the 8-byte header length (truncated)", len),
               -1;
    uint64_t hl = get_le64(buf);
    if (hl > ST_HEADER_MAX)
        return snprintf(err, errlen, "safetensors: header length %llu, beyond the bound of %u bytes",
                        (unsigned long long)hl, ST_HEADER_MAX),
               -1;
    if (hl > len - 8)
        return snprintf(err, errlen, "safetensors: header length %llu past the end of the file of %zu bytes (truncated)",
                        (unsigned long long)hl, len),
               -1;
    if (hl < 2 || buf[8] != '{')
        return snprintf(err, errlen, "safetensors: the header does not start with '{': not a JSON object"), -1;
    json_error_t je;
    json_t *h = json_loadb((const char *)buf + 8, (size_t)hl, JSON_REJECT_DUPLICATES, &je);
    if (!h)
        return snprintf(err, errlen, "safetensors: header JSON: %s (byte %d of the header)", jsonbody_text(&je),
                        je.position),
               -1;
    f->data = buf + 8 + hl;
    f->data_len = len - 8 - (size_t)hl;
    int rc = json_is_object(h) ? parse_header(h, f, err, errlen)
                               : (snprintf(err, errlen, "safetensors: the header is not a JSON object"), -1);
    json_decref(h);
    if (rc != 0) {
        st_free(f);
        errmsg_one_line(err, errlen); /* a tensor's name quoted may hold a newline */
    }
    return rc;
}

void st_free(st_file_t *f)
{
    free(f->tensors);
    memset(f, 0, sizeof *f);
}

int st_find(const st_file_t *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].name, name) == 0) return i;
    return -1;
}

void st_read_floats(const st_file_t *f, int i, float *dst)
{
    const st_tensor_t *t = &f->tensors[i];
    const uint8_t *p = f->data + t->begin;
    if (t->dtype == ST_F32 && !t->transposed) {
        if (t->count) memcpy(dst, p, t->count * sizeof(float));
        return;
    }
    const size_t es = st_dtype_size(t->dtype);
    const size_t rows = t->transposed ? (size_t)t->dims[0] : 1, cols = t->transposed ? (size_t)t->dims[1] : 1;
    for (size_t k = 0; k < t->count; k++) { /* k: the file's order; a transposed file's is dims' column-major */
        float v;
        uint16_t h;
        if (t->dtype == ST_F32) memcpy(&v, p + k * es, 4);
        else {
            memcpy(&h, p + k * es, 2);
            v = t->dtype == ST_BF16 ? from_bits((uint32_t)h << 16) : from_f16(h);
        }
        dst[t->transposed ? k % rows * cols + k / rows : k] = v;
    }
}
