/* tests/unit/test_safetensors.c - the safetensors format (common/safetensors.h): tensors
 * written and read back bit for bit, a file from a hand-written header (padding, metadata,
 * any order of ranges) read, and each hostile file refused by a message that names what is
 * wrong: a bad header length, a truncated file, offsets out of range, overlapping tensors,
 * a hole, a wrong dtype, a shape whose size is not its bytes', a repeated name, a name too
 * long, and headers that are not JSON objects. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

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
    refused("{" E("a", 0, 2, "[1]", "BF16") "}", 2, "tensor 'a': dtype BF16, only F32 is read");
    refused("{" E("a", 0, 8, "[1]", "F64") "}", 8, "dtype F64, only F32");
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
    /* the JSON itself */
    refused("[1]", 0, "does not start with '{'");
    refused("{\"a\":", 0, "header JSON:");
    refused("{\"a\": 1}", 0, "tensor 'a' is not an object");
    refused("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__ is not an object of strings");
    refused("{\"a\\u0000b\":1}", 0, "header JSON:");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_hand_written),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
