/* fuzz/fuzz_safetensors.c - libFuzzer target for the safetensors reader (common/
 * safetensors.c, what init.safetensors reads): the bytes of a file, header and data. Build
 * and run: make fuzz-safetensors.
 *
 * Invariants: a refusal is one line and leaves no tensors; an accepted file has at most
 * ST_TENSORS_MAX tensors, each with a name of 1 to ST_NAME_MAX - 1 bytes found by st_find,
 * at most ST_MAX_RANK dimensions whose product is its count, and bytes inside the data
 * section, which lies inside the input; reading every tensor stays inside it (ASan checks
 * the reads). Each accepted file written back by st_write_buffer (F16 as F32) parses to the
 * same tensors and values. Then read as Hugging Face GPT-2's (common/st_gpt2.h: renamed,
 * transposed, mask buffers dropped), every tensor read again stays inside the input, and the
 * file converted as GET model.safetensors?names=hf&dtype=bf16 converts it parses. The seeds
 * in fuzz/corpus/safetensors/ are files pacer's writer and a hand wrote (F32 tensors,
 * metadata, an empty tensor, a scalar, BF16 and F16, GPT-2 names in either layout).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"
#include "st_gpt2.h"

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
        if (count != t->count || t->begin > f->data_len || t->count * st_dtype_size(t->dtype) > f->data_len - t->begin)
            abort();
        float *nb = realloc(buf, t->count ? t->count * sizeof(float) : 1);
        if (!nb) abort();
        buf = nb;
        st_read_floats(f, i, buf);
    }
    free(buf);
}

/* the same floats, NaNs as NaNs (a signalling one is written back quiet) */
static int same_floats(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) != 0 && !(a[i] != a[i] && b[i] != b[i])) return 0;
    return 1;
}

/* f read as Hugging Face GPT-2's, and converted as the GET's query can ask */
static void check_hf(const uint8_t *data, size_t size)
{
    st_file_t f;
    char err[512] = "";
    if (st_parse(data, size, &f, err, sizeof err) != 0) abort();
    int hf = st_from_hf(&f, err, sizeof err);
    if (hf >= 0) check_accepted(&f, data, size);
    else if (!err[0]) abort();
    st_free(&f);
    const st_out_t o = {.hf = 1, .dtype = ST_BF16};
    uint8_t *out = NULL;
    size_t len = 0;
    int rc = st_convert(data, size, &o, &out, &len, err, sizeof err);
    if (rc == 0 && (st_parse(out, len, &f, err, sizeof err) != 0 || (st_free(&f), 0))) abort();
    if (rc != 0 && (rc != -2 || out)) abort();
    free(out);
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
    float *vals = calloc(f.data_len / 2 + 1, sizeof(float)), *back = calloc(f.data_len / 2 + 1, sizeof(float));
    if (!t || !vals || !back) abort();
    size_t at = 0;
    for (int i = 0; i < f.n; i++) {
        t[i] = f.tensors[i];
        if (t[i].dtype == ST_F16) t[i].dtype = ST_F32; /* F16 is not written: its values are floats */
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
            memcmp(a->dims, b->dims, sizeof a->dims) != 0)
            abort();
        st_read_floats(&g, i, back);
        if (!same_floats(back, t[i].data, a->count)) abort();
    }
    st_free(&g);
    free(out);
    free(vals);
    free(back);
    free(t);
    st_free(&f);
    check_hf(data, size);
    return 0;
}
