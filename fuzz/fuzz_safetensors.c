/* fuzz/fuzz_safetensors.c - libFuzzer target for the safetensors reader (common/
 * safetensors.c, what init.safetensors reads): the bytes of a file, header and data. Build
 * and run: make fuzz-safetensors.
 *
 * Invariants: a refusal is one line and leaves no tensors; an accepted file has at most
 * ST_TENSORS_MAX tensors, each with a name of 1 to ST_NAME_MAX - 1 bytes found by st_find,
 * at most ST_MAX_RANK dimensions whose product is its count, and bytes inside the data
 * section, which lies inside the input; reading every tensor stays inside it (ASan checks
 * the reads). Each accepted file written back by st_write_buffer parses to the same
 * tensors. The seeds in fuzz/corpus/safetensors/ are files pacer's writer and a hand
 * wrote (F32 tensors, metadata, an empty tensor, a scalar).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

static void check_accepted(const st_file_t *f, const uint8_t *data, size_t size)
{
    if (f->n < 0 || f->n > ST_TENSORS_MAX || f->data < data || f->data_len > size ||
        (size_t)(f->data - data) > size - f->data_len)
        abort();
    float *buf = NULL;
    for (int i = 0; i < f->n; i++) {
        const st_tensor_t *t = &f->tensors[i];
        size_t nl = strnlen(t->name, ST_NAME_MAX);
        if (nl == 0 || nl >= ST_NAME_MAX || st_find(f, t->name) != i || t->rank < 0 || t->rank > ST_MAX_RANK) abort();
        uint64_t count = 1;
        for (int d = 0; d < t->rank; d++) count *= (uint64_t)t->dims[d];
        if (count != t->count || t->begin > f->data_len || t->count * sizeof(float) > f->data_len - t->begin) abort();
        float *nb = realloc(buf, t->count ? t->count * sizeof(float) : 1);
        if (!nb) abort();
        buf = nb;
        st_read_floats(f, i, buf);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    st_file_t f;
    char err[512] = "";
    if (st_parse(data, size, &f, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n') || f.tensors || f.n) abort();
        return 0;
    }
    check_accepted(&f, data, size);
    /* written back and read again: the same names, shapes and bytes */
    st_tensor_t *t = calloc((size_t)(f.n ? f.n : 1), sizeof *t);
    float *vals = calloc(f.data_len / sizeof(float) + 1, sizeof(float));
    if (!t || !vals) abort();
    size_t at = 0;
    for (int i = 0; i < f.n; i++) {
        t[i] = f.tensors[i];
        st_read_floats(&f, i, vals + at);
        t[i].data = vals + at;
        at += t[i].count;
    }
    uint8_t *out;
    size_t outlen;
    st_file_t g;
    if (st_write_buffer(t, f.n, &out, &outlen, err, sizeof err) != 0) abort();
    if (st_parse(out, outlen, &g, err, sizeof err) != 0 || g.n != f.n) abort();
    for (int i = 0; i < f.n; i++) {
        const st_tensor_t *a = &f.tensors[i], *b = &g.tensors[i];
        if (strcmp(a->name, b->name) != 0 || a->rank != b->rank || a->count != b->count ||
            memcmp(a->dims, b->dims, sizeof a->dims) != 0 ||
            (a->count && memcmp(g.data + b->begin, t[i].data, a->count * sizeof(float)) != 0))
            abort();
    }
    st_free(&g);
    free(out);
    free(vals);
    free(t);
    st_free(&f);
    return 0;
}
