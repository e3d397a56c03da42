/* common/st_gpt2.c - see st_gpt2.h. */
#include "st_gpt2.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PREFIX "transformer."

/* name without the "transformer." prefix, and whether it had one */
static const char *bare(const char *name, int *prefixed)
{
    *prefixed = strncmp(name, PREFIX, sizeof PREFIX - 1) == 0;
    return *prefixed ? name + sizeof PREFIX - 1 : name;
}

/* For a bare name "h.N.REST" (N decimal digits), REST; else NULL. */
static const char *block_rest(const char *b)
{
    if (b[0] != 'h' || b[1] != '.' || b[2] < '0' || b[2] > '9') return NULL;
    const char *p = b + 2;
    while (*p >= '0' && *p <= '9') p++;
    return *p == '.' ? p + 1 : NULL;
}

/* 1 for a block's matrix product (Linear in nanoGPT, Conv1D in Hugging Face GPT-2) */
static int is_product(const char *name)
{
    int pre;
    const char *r = block_rest(bare(name, &pre));
    return r && (strcmp(r, "attn.c_attn.weight") == 0 || strcmp(r, "attn.c_proj.weight") == 0 ||
                 strcmp(r, "mlp.c_fc.weight") == 0 || strcmp(r, "mlp.c_proj.weight") == 0);
}

/* A GPT-2 name outside the blocks (bare), or a block's: 1, else 0 */
static int is_gpt2_name(const char *b)
{
    return block_rest(b) || strcmp(b, "wte.weight") == 0 || strcmp(b, "wpe.weight") == 0 ||
           strcmp(b, "ln_f.weight") == 0 || strcmp(b, "ln_f.bias") == 0;
}

int st_out_parse(const char *names, const char *dtype, st_out_t *o, char *err, size_t errlen)
{
    o->hf = 0;
    o->dtype = ST_F32;
    if (names && names[0] && strcasecmp(names, "hf") == 0) o->hf = 1;
    else if (names && names[0] && strcasecmp(names, "nanogpt") != 0)
        return snprintf(err, errlen,
                        "names: '%.40s' is not one of nanogpt (the model's own) and hf (Hugging Face GPT-2's)", names),
               -1;
    if (dtype && dtype[0] && strcasecmp(dtype, "bf16") == 0) o->dtype = ST_BF16;
    else if (dtype && dtype[0] && strcasecmp(dtype, "f32") != 0)
        return snprintf(err, errlen, "dtype: '%.40s' is not one of f32 and bf16", dtype), -1;
    return 0;
}

static void swap_dims(st_tensor_t *t)
{
    const int64_t d = t->dims[0];
    t->dims[0] = t->dims[1];
    t->dims[1] = d;
    t->transposed = !t->transposed;
}

int st_out_apply(st_tensor_t *t, int n, const st_out_t *o, char *err, size_t errlen)
{
    int gpt = 0;
    for (int i = 0; i < n; i++) {
        t[i].dtype = o->dtype;
        if (!o->hf || !is_product(t[i].name) || t[i].rank != 2) continue;
        gpt |= strstr(t[i].name, "attn.c_attn.weight") != NULL;
        swap_dims(&t[i]);
    }
    if (o->hf && !gpt)
        return snprintf(err, errlen,
                        "names hf: Hugging Face GPT-2's names are the built-in GPT's only (this model has no "
                        "transformer.h.0.attn.c_attn.weight); leave names out for the model's own"),
               -1;
    return 0;
}

/* 1 when f's tensors are Hugging Face's (st_gpt2.h's rule), 0 when nanoGPT's, -1 when no
 * GPT-2 name is among them */
static int hf_layout(const st_file_t *f)
{
    int gpt = 0, hf = 0;
    for (int i = 0; i < f->n; i++) {
        const st_tensor_t *t = &f->tensors[i];
        int pre;
        const char *b = bare(t->name, &pre), *r = block_rest(b);
        if (!is_gpt2_name(b)) continue;
        gpt = 1;
        hf |= !pre; /* GPT2Model's names: the Hub's files */
        if (!r || t->rank != 2) continue;
        if (strcmp(r, "attn.c_attn.weight") == 0 || strcmp(r, "mlp.c_fc.weight") == 0) hf |= t->dims[0] < t->dims[1];
        if (strcmp(r, "mlp.c_proj.weight") == 0) hf |= t->dims[0] > t->dims[1];
    }
    return gpt ? hf : -1;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(const st_tensor_t *const *)a)->name, (*(const st_tensor_t *const *)b)->name);
}

/* f's names unique (after renaming). 0, or -1 with err. */
static int names_unique(const st_file_t *f, char *err, size_t errlen)
{
    const st_tensor_t **s = malloc((size_t)(f->n ? f->n : 1) * sizeof *s);
    if (!s) return snprintf(err, errlen, "safetensors: out of memory"), -1;
    for (int i = 0; i < f->n; i++) s[i] = &f->tensors[i];
    qsort(s, (size_t)f->n, sizeof *s, by_name);
    int rc = 0;
    for (int i = 1; i < f->n && rc == 0; i++)
        if (strcmp(s[i - 1]->name, s[i]->name) == 0)
            rc = snprintf(err, errlen,
                          "safetensors: Hugging Face GPT-2 names: '%s' is there with and without the "
                          "transformer. prefix",
                          s[i]->name);
    free(s);
    return rc ? -1 : 0;
}

int st_from_hf(st_file_t *f, char *err, size_t errlen)
{
    const int hf = hf_layout(f);
    if (hf < 0) return 0;
    int k = 0;
    for (int i = 0; i < f->n; i++) {
        st_tensor_t t = f->tensors[i];
        int pre;
        const char *b = bare(t.name, &pre), *r = block_rest(b);
        /* the causal-mask buffers of Hugging Face's (and nanoGPT's) attention: no weights */
        if (r && ((strcmp(r, "attn.bias") == 0 && t.rank == 4) || strcmp(r, "attn.masked_bias") == 0)) continue;
        if (hf && !pre && is_gpt2_name(b)) {
            if (strlen(b) + sizeof PREFIX - 1 >= ST_NAME_MAX)
                return snprintf(err, errlen, "safetensors: tensor '%.60s...': too long once prefixed", t.name), -1;
            char full[ST_NAME_MAX];
            snprintf(full, sizeof full, PREFIX "%s", b);
            memcpy(t.name, full, sizeof full);
        }
        if (hf && t.rank == 2 && is_product(t.name)) swap_dims(&t);
        f->tensors[k++] = t;
    }
    f->n = k;
    if (hf && names_unique(f, err, errlen) != 0) return -1;
    return hf;
}

int st_convert(const uint8_t *in, size_t len, const st_out_t *o, uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    st_file_t f;
    if (st_parse(in, len, &f, err, errlen) != 0) return -1;
    size_t floats = 0;
    for (int i = 0; i < f.n; i++) floats += f.tensors[i].count; /* bounded by the bytes: st_parse */
    float *vals = malloc((floats ? floats : 1) * sizeof *vals);
    int rc = vals ? 0 : (snprintf(err, errlen, "safetensors: out of memory (%zu floats)", floats), -1);
    for (size_t i = 0, at = 0; rc == 0 && i < (size_t)f.n; i++) {
        st_read_floats(&f, (int)i, vals + at);
        f.tensors[i].data = vals + at;
        f.tensors[i].transposed = 0;
        at += f.tensors[i].count;
    }
    if (rc == 0 && st_out_apply(f.tensors, f.n, o, err, errlen) != 0) rc = -2;
    if (rc == 0) rc = st_write_buffer(f.tensors, f.n, out, outlen, err, errlen);
    free(vals);
    st_free(&f);
    return rc;
}
