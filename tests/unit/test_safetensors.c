/* tests/unit/test_safetensors.c - the safetensors format (common/safetensors.h): tensors
 * written and read back bit for bit, a file from a hand-written header (padding, metadata,
 * any order of ranges) read, and each hostile file refused by a message that names what is
 * wrong: a bad header length, a truncated file, offsets out of range, overlapping tensors,
 * a hole, a wrong dtype, a shape whose size is not its bytes', a repeated name, a name too
 * long, and headers that are not JSON objects. BF16 is written rounded to nearest, ties to
 * even, and BF16 and F16 read widened exactly; Hugging Face GPT-2's names and Conv1D layout
 * (common/st_gpt2.h) are written and read back as nanoGPT's. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"
#include "st_gpt2.h"

/* A file of header text h (unpadded) and data_len bytes of data (value i at byte i). */
static uint8_t *make_file(const char *h, size_t data_len, size_t *len)
{
    size_t hl = strlen(h);
    *len = 8 + hl + data_len;
    uint8_t *b = malloc(*len);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, h, hl);
    for (size_t i = 0; i < data_len; i++) b[8 + hl + i] = (uint8_t)i;
    return b;
}

static void refused_bytes(const uint8_t *b, size_t len, const char *want)
{
    st_file_t f;
    char err[512] = "";
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("error '%s' does not name '%s'", err, want);
    if (strchr(err, '\n')) fail_msg("error '%s' is not one line", err);
    assert_null(f.tensors);
}

static void refused(const char *h, size_t data_len, const char *want)
{
    size_t len;
    uint8_t *b = make_file(h, data_len, &len);
    refused_bytes(b, len, want);
    free(b);
}

static void test_round_trip(void **state)
{
    (void)state;
    float a[6] = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 1e-30f}, c[1] = {7.0f};
    st_tensor_t t[3] = {{.name = "transformer.wte.weight", .rank = 2, .dims = {2, 3}, .count = 6, .data = a},
                        {.name = "empty", .rank = 2, .dims = {0, 4}, .count = 0, .data = NULL},
                        {.name = "scalar", .rank = 0, .count = 1, .data = c}};
    uint8_t *b;
    size_t len;
    char err[256] = "";
    assert_int_equal(st_write_buffer(t, 3, &b, &len, err, sizeof err), 0);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | b[i];
    assert_int_equal(hl % 8, 0); /* padded: the data starts aligned */
    assert_int_equal(len, 8 + hl + 7 * sizeof(float));
    assert_non_null(strstr((const char *)b + 8, "\"__metadata__\":{\"format\":\"pt\""));
    st_file_t f;
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), 0);
    assert_int_equal(f.n, 3);
    assert_int_equal(st_find(&f, "scalar"), 2);
    assert_int_equal(st_find(&f, "nothing"), -1);
    assert_string_equal(f.tensors[0].name, "transformer.wte.weight");
    assert_int_equal(f.tensors[0].rank, 2);
    assert_int_equal(f.tensors[0].dims[1], 3);
    assert_int_equal(f.tensors[1].count, 0);
    assert_int_equal(f.tensors[2].rank, 0);
    float back[6];
    st_read_floats(&f, 0, back);
    assert_memory_equal(back, a, sizeof a);
    st_read_floats(&f, 2, back);
    assert_memory_equal(back, c, sizeof c);
    st_free(&f);
    free(b);
    /* the writer refuses a repeated name and an out-of-range rank */
    t[1] = t[0];
    assert_int_equal(st_write_buffer(t, 2, &b, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "'transformer.wte.weight' given twice"));
    t[0].rank = ST_MAX_RANK + 1;
    assert_int_equal(st_write_buffer(t, 1, &b, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "rank 9 out of 0..8"));
}

static void test_hand_written(void **state)
{
    (void)state;
    /* ranges in another order than the header's, trailing spaces, metadata of strings */
    const char *h = "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
                    "\"__metadata__\":{\"k\":\"v\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]}}   ";
    size_t len;
    uint8_t *b = make_file(h, 12, &len);
    st_file_t f;
    char err[256] = "";
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), 0);
    assert_int_equal(f.n, 2);
    assert_string_equal(f.tensors[0].name, "b");
    assert_int_equal(f.tensors[0].begin, 8);
    float v;
    st_read_floats(&f, 0, &v);
    assert_memory_equal(&v, b + len - 4, 4);
    st_free(&f);
    free(b);
}

#define E(name, off0, off1, shape, dtype) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #off0 "," #off1 "]}"

static void test_hostile(void **state)
{
    (void)state;
    /* the header length: fewer than 8 bytes, beyond the bound, past the end of the file */
    uint8_t small[5] = {0};
    refused_bytes(small, sizeof small, "shorter than the 8-byte header length (truncated)");
    uint8_t big[16] = {0};
    big[4] = 1; /* 2^32 */
    refused_bytes(big, sizeof big, "header length 4294967296, beyond the bound");
    size_t len;
    uint8_t *b = make_file("{" E("a", 0, 4, "[1]", "F32") "}", 4, &len);
    refused_bytes(b, 20, "past the end of the file of 20 bytes (truncated)");
    /* the data cut short: the tensor's offsets are then outside it */
    refused_bytes(b, len - 1, "need more than the data section's 3 bytes (truncated");
    free(b);
    refused("{" E("a", 8, 16, "[2]", "F32") "}", 8, "tensor 'a': data_offsets not [BEGIN, END]");
    refused("{" E("a", 4, 0, "[0]", "F32") "}", 8, "offsets out of range");
    refused("{" E("a", -4, 0, "[1]", "F32") "}", 8, "offsets out of range");
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4, "offsets out of range");
    /* overlaps and holes */
    refused("{" E("a", 0, 8, "[2]", "F32") "," E("b", 4, 12, "[2]", "F32") "}", 12, "'a' and 'b' overlap");
    refused("{" E("a", 0, 4, "[1]", "F32") "," E("b", 0, 4, "[1]", "F32") "}", 4, "overlap");
    refused("{" E("a", 0, 4, "[1]", "F32") "," E("b", 8, 12, "[1]", "F32") "}", 12, "bytes 4 to 8 of the data");
    refused("{" E("a", 0, 4, "[1]", "F32") "}", 8, "bytes 4 to 8 of the data belong to no tensor");
    /* dtypes */
    refused("{" E("a", 0, 2, "[1]", "I16") "}", 2, "tensor 'a': dtype I16, only F32, BF16 and F16 are read");
    refused("{" E("a", 0, 8, "[1]", "F64") "}", 8, "dtype F64, only F32");
    refused("{" E("a", 0, 4, "[1]", "BF16") "}", 4, "shape size mismatch: 1 BF16 elements are 2 bytes");
    refused("{" E("a", 0, 4, "[3]", "F16") "}", 4, "need more than the data section's 4 bytes");
    refused("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'a': no dtype");
    /* shapes against sizes */
    refused("{" E("a", 0, 8, "[3]", "F32") "}", 12, "shape size mismatch: 3 F32 elements are 12 bytes");
    refused("{" E("a", 0, 8, "[3,2]", "F32") "}", 8, "shape size mismatch");
    refused("{" E("a", 0, 8, "[4294967296,4294967296,4294967296]", "F32") "}", 8, "shape size mismatch");
    refused("{" E("a", 0, 4, "[-1]", "F32") "}", 4, "shape dimension 0 is not an integer >= 0");
    refused("{" E("a", 0, 4, "[1,1,1,1,1,1,1,1,1]", "F32") "}", 4, "at most 8 dimensions");
    refused("{" E("a", 0, 4, "\"1\"", "F32") "}", 4, "shape is not an array");
    /* names */
    refused("{" E("a", 0, 4, "[1]", "F32") "," E("a", 4, 8, "[1]", "F32") "}", 8, "duplicate object key");
    char h[700], name[300];
    memset(name, 'x', 299);
    name[299] = '\0';
    snprintf(h, sizeof h, "{\"%s\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", name);
    refused(h, 4, "a tensor name of 299 bytes");
    refused("{" E("", 0, 4, "[1]", "F32") "}", 4, "a tensor name of 0 bytes");
    /* a name holding a line break, quoted in the refusal: one line (fuzz_safetensors's finding) */
    refused("{" E("tr\\nsf", 0, 32, "[4,2]", "F16") "}", 32, "tensor 'tr?sf': shape size mismatch");
    /* the JSON itself */
    refused("[1]", 0, "does not start with '{'");
    refused("{\"a\":", 0, "header JSON:");
    refused("{\"a\": 1}", 0, "tensor 'a' is not an object");
    refused("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ is not an object of strings");
    refused("{\"a\\u0000b\":1}", 0, "header JSON:");
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* BF16 out: to nearest, ties to even (a tie below and above an even word, a carry into the
 * exponent, past the largest finite value to infinity, a NaN quiet); BF16 and F16 in:
 * exactly the value of the bits (F16's subnormals, infinities and NaNs too). */
static void test_half_dtypes(void **state)
{
    (void)state;
    const uint32_t in[8] = {0x3f808000u, 0x3f818000u, 0x3f80c000u, 0x3fffffffu,
                            0x7f7fffffu, 0xff800000u, 0x7f800001u, 0x00000001u};
    const uint16_t want[8] = {0x3f80, 0x3f82, 0x3f81, 0x4000, 0x7f80, 0xff80, 0x7fc0, 0x0000};
    float a[8];
    for (int i = 0; i < 8; i++) a[i] = bits_float(in[i]);
    st_tensor_t t = {.name = "w", .rank = 1, .dims = {8}, .count = 8, .data = a, .dtype = ST_BF16};
    uint8_t *b;
    size_t len;
    char err[256] = "";
    assert_int_equal(st_write_buffer(&t, 1, &b, &len, err, sizeof err), 0);
    st_file_t f;
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.tensors[0].dtype, ST_BF16);
    assert_int_equal(f.data_len, 16);
    float back[8];
    st_read_floats(&f, 0, back);
    for (int i = 0; i < 8; i++) {
        uint16_t w;
        memcpy(&w, f.data + 2 * i, 2);
        if (w != want[i]) fail_msg("bf16 of 0x%08x: 0x%04x, want 0x%04x", in[i], w, want[i]);
        assert_int_equal(float_bits(back[i]), (uint32_t)want[i] << 16);
    }
    st_free(&f);
    free(b);
    /* F16 in: 1, -2, the smallest subnormal (2^-24), the largest subnormal, the largest
     * finite (65504), infinity, -0, a NaN */
    const uint16_t h[8] = {0x3c00, 0xc000, 0x0001, 0x03ff, 0x7bff, 0x7c00, 0x8000, 0x7e00};
    const float hv[7] = {1.0f, -2.0f, 0x1p-24f, 1023 * 0x1p-24f, 65504.0f, 1.0f / 0.0f, -0.0f};
    size_t flen;
    uint8_t *fb = make_file("{\"h\":{\"dtype\":\"F16\",\"shape\":[2,4],\"data_offsets\":[0,16]}}", 16, &flen);
    memcpy(fb + flen - 16, h, 16);
    assert_int_equal(st_parse(fb, flen, &f, err, sizeof err), 0);
    st_read_floats(&f, 0, back);
    for (int i = 0; i < 7; i++) assert_int_equal(float_bits(back[i]), float_bits(hv[i]));
    assert_true(back[7] != back[7]);
    /* F32 out refuses nothing; F16 is not written */
    t.dtype = ST_F16;
    assert_int_equal(st_write_buffer(&t, 1, &b, &len, err, sizeof err), -1);
    assert_non_null(strstr(err, "dtype F16 (F32 and BF16 are written)"));
    st_free(&f);
    free(fb);
}

/* A GPT-2 of one block, width 2 (c_attn [6, 2], c_proj [2, 2], c_fc [8, 2], mlp.c_proj
 * [2, 8] in nanoGPT's layout), written under Hugging Face's names: the four products
 * transposed, the rest as they are; read back (bare GPT2Model names with a mask buffer too)
 * as nanoGPT's, bit for bit. A model without c_attn has no Hugging Face names. */
static void test_hf_names(void **state)
{
    (void)state;
    static const char *const names[6] = {
        "transformer.wte.weight",          "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_proj.weight",
        "transformer.h.0.mlp.c_fc.weight", "transformer.h.0.mlp.c_proj.weight",  "transformer.h.0.attn.c_attn.bias"};
    static const int64_t dims[6][2] = {{4, 2}, {6, 2}, {2, 2}, {8, 2}, {2, 8}, {6, 1}};
    float v[64];
    for (int i = 0; i < 64; i++) v[i] = (float)i + 0.5f;
    st_tensor_t t[6];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 6; i++) {
        snprintf(t[i].name, sizeof t[i].name, "%s", names[i]);
        t[i].rank = i == 5 ? 1 : 2;
        t[i].dims[0] = dims[i][0];
        t[i].dims[1] = dims[i][1];
        t[i].count = (size_t)(dims[i][0] * dims[i][1]);
        t[i].data = v;
    }
    st_out_t o;
    char err[256] = "";
    assert_int_equal(st_out_parse("hf", "F32", &o, err, sizeof err), 0);
    assert_int_equal(st_out_apply(t, 6, &o, err, sizeof err), 0);
    uint8_t *b;
    size_t len;
    assert_int_equal(st_write_buffer(t, 6, &b, &len, err, sizeof err), 0);
    st_file_t f;
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), 0);
    /* the file: c_attn [2, 6], its element (i, j) nanoGPT's (j, i) */
    int c = st_find(&f, names[1]);
    assert_int_equal(f.tensors[c].dims[0], 2);
    assert_int_equal(f.tensors[c].dims[1], 6);
    float raw[16];
    memcpy(raw, f.data + f.tensors[c].begin, 12 * sizeof(float));
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 6; j++) assert_true(raw[i * 6 + j] == v[j * 2 + i]);
    /* read back: nanoGPT's shapes and values */
    assert_int_equal(st_from_hf(&f, err, sizeof err), 1);
    for (int k = 0; k < 6; k++) {
        int i = st_find(&f, names[k]);
        assert_true(i >= 0);
        assert_int_equal(f.tensors[i].dims[0], dims[k][0]);
        float back[16];
        st_read_floats(&f, i, back);
        assert_memory_equal(back, v, f.tensors[i].count * sizeof(float));
    }
    st_free(&f);
    free(b);
    /* GPT2Model's bare names and a mask buffer: prefixed, the buffer left out */
    for (int i = 0; i < 6; i++) memmove(t[i].name, t[i].name + 12, strlen(t[i].name + 12) + 1);
    assert_int_equal(st_write_buffer(t, 6, &b, &len, err, sizeof err), 0);
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), 0);
    assert_int_equal(st_from_hf(&f, err, sizeof err), 1);
    assert_int_equal(f.n, 6);
    for (int k = 0; k < 6; k++) assert_true(st_find(&f, names[k]) >= 0);
    st_free(&f);
    free(b);
    /* nanoGPT's own layout is left as it is */
    st_out_t plain = {0};
    st_tensor_t u[6];
    memcpy(u, t, sizeof u);
    for (int i = 0; i < 6; i++) {
        snprintf(u[i].name, sizeof u[i].name, "%s", names[i]);
        u[i].rank = i == 5 ? 1 : 2;
        u[i].dims[0] = dims[i][0];
        u[i].dims[1] = dims[i][1];
        u[i].transposed = 0;
    }
    assert_int_equal(st_out_apply(u, 6, &plain, err, sizeof err), 0);
    assert_int_equal(st_write_buffer(u, 6, &b, &len, err, sizeof err), 0);
    assert_int_equal(st_parse(b, len, &f, err, sizeof err), 0);
    assert_int_equal(st_from_hf(&f, err, sizeof err), 0);
    assert_int_equal(f.tensors[st_find(&f, names[1])].transposed, 0);
    st_free(&f);
    /* st_convert: the same file as Hugging Face's; another model's refused with -2 */
    uint8_t *hb;
    size_t hlen;
    assert_int_equal(st_convert(b, len, &o, &hb, &hlen, err, sizeof err), 0);
    assert_int_equal(st_parse(hb, hlen, &f, err, sizeof err), 0);
    assert_int_equal(f.tensors[st_find(&f, names[1])].dims[0], 2);
    st_free(&f);
    free(hb);
    free(b);
    st_tensor_t lin = {.name = "fc.weight", .rank = 2, .dims = {2, 3}, .count = 6, .data = v};
    assert_int_equal(st_write_buffer(&lin, 1, &b, &len, err, sizeof err), 0);
    assert_int_equal(st_convert(b, len, &o, &hb, &hlen, err, sizeof err), -2);
    assert_non_null(strstr(err, "names hf: Hugging Face GPT-2's names are the built-in GPT's only"));
    free(b);
    assert_int_equal(st_out_parse("gpt2", NULL, &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "names: 'gpt2' is not one of nanogpt"));
    assert_int_equal(st_out_parse(NULL, "fp8", &o, err, sizeof err), -1);
    assert_non_null(strstr(err, "dtype: 'fp8' is not one of f32 and bf16"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_half_dtypes),  cmocka_unit_test(test_hf_names), cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_hand_written), cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
