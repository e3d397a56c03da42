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
        if (strnlen(t[i].name, ST_NAME_MAX) >= ST_NAME_MAX || !t[i].name[0] ||
            strcmp(t[i].name, "__metadata__") == 0) {
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
            snprintf(err, errlen, "safetensors: tensor '%s': rank %d out of 0..%d", t[i].name, t[i].rank,
                     ST_MAX_RANK);
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
