/* common/safetensors.c - see safetensors.h. */
#include "safetensors.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fs.h"

static void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
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
        if (t[i].rank < 0 || t[i].rank > ST_MAX_RANK) {
            snprintf(err, errlen, "safetensors: tensor '%s': rank %d out of 0..%d", t[i].name, t[i].rank, ST_MAX_RANK);
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
        off += t[i].count * sizeof(float);
        json_array_append_new(offs, json_integer((json_int_t)off));
        json_object_set_new(e, "dtype", json_string("F32"));
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
    /* the data little-endian: the host's floats as they are (every supported host is) */
    uint8_t *p = b + 8 + padded;
    for (int i = 0; i < n; i++) {
        if (t[i].count) memcpy(p, t[i].data, t[i].count * sizeof(float));
        p += t[i].count * sizeof(float);
    }
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
    uint64_t count = 1, cap = data_len / sizeof(float);
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
    if (strcmp(dt, "F32") != 0)
        return snprintf(err, errlen, "safetensors: tensor '%s': dtype %.16s, only F32 is read", name, dt), -1;
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
    if (end - b != t->count * sizeof(float))
        return snprintf(err, errlen,
                        "safetensors: tensor '%s': shape size mismatch: %zu F32 elements are %zu bytes, its "
                        "data_offsets span %llu",
                        name, t->count, t->count * sizeof(float), (unsigned long long)(end - b)),
               -1;
    t->begin = (size_t)b;
    return 0;
}

static int by_begin(const void *a, const void *b)
{
    const st_tensor_t *x = *(const st_tensor_t *const *)a, *y = *(const st_tensor_t *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->count < y->count ? -1 : x->count > y->count;
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
        at = s[i]->begin + s[i]->count * sizeof(float);
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
        return snprintf(err, errlen, "safetensors: header JSON: %s (byte %d of the header)", je.text, je.position), -1;
    f->data = buf + 8 + hl;
    f->data_len = len - 8 - (size_t)hl;
    int rc = json_is_object(h) ? parse_header(h, f, err, errlen)
                               : (snprintf(err, errlen, "safetensors: the header is not a JSON object"), -1);
    json_decref(h);
    if (rc != 0) st_free(f);
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
    if (t->count) memcpy(dst, f->data + t->begin, t->count * sizeof(float));
}
