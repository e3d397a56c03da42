/* common/safetensors.h - Hugging Face's safetensors format, written and read.
 *
 * A file is an 8-byte little-endian header length N, N bytes of a UTF-8 JSON object (padded
 * with spaces) mapping each tensor name to {"dtype", "shape", "data_offsets": [BEGIN, END]}
 * plus an optional "__metadata__" object of string values, then the data section: each
 * tensor's row-major little-endian bytes at [BEGIN, END) from the section's start, the
 * ranges covering it without holes or overlaps. F32 and BF16 tensors are written (BF16
 * rounded to nearest, ties to even, as torch.Tensor.bfloat16() rounds); F32, BF16 and F16
 * tensors are read, the 16-bit ones widened to float32 exactly.
 *
 * The reader treats the file as hostile: the header length is bounded (ST_HEADER_MAX) and
 * inside the file, the JSON is parsed by jansson, every entry is checked (dtype F32, BF16 or
 * F16, at most ST_MAX_RANK dimensions, each dimension and the element count bounded,
 * data_offsets inside the data section and of the shape's byte size), names are unique and
 * at most ST_NAME_MAX - 1 bytes, and no two ranges overlap. A refusal names what is wrong.
 */
#ifndef PACER_SAFETENSORS_H
#define PACER_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_RANK 8
#define ST_NAME_MAX 256
#define ST_HEADER_MAX (100u << 20) /* the reference implementation's bound */
#define ST_TENSORS_MAX 65536

/* The element types read and written: float32, bfloat16 (float32's upper 16 bits), IEEE
 * binary16. */
typedef enum { ST_F32 = 0, ST_BF16, ST_F16 } st_dtype_t;

typedef struct {
    char name[ST_NAME_MAX];
    int rank;
    int64_t dims[ST_MAX_RANK];
    size_t count;      /* elements: the dims' product (1 for rank 0) */
    const float *data; /* the writer's input: count floats */
    size_t begin;      /* the reader's: the first byte of its data in the data section */
    st_dtype_t dtype;  /* the writer's: what to write (F32 or BF16); the reader's: what the file holds */
    /* a 2-D tensor whose floats (the writer's data) or bytes (the reader's) are the transpose
     * of dims, [dims[1], dims[0]] row-major: read and written as dims say */
    int transposed;
} st_tensor_t;

/* A parsed file: its tensors in header order, and its data section (a view into the bytes
 * st_parse was given, which the caller keeps while it reads). */
typedef struct {
    st_tensor_t *tensors;
    int n;
    const uint8_t *data;
    size_t data_len;
} st_file_t;

/* The safetensors bytes of the n tensors t (in that order, each of its dtype, F32 or BF16)
 * with __metadata__ {"format": "pt", "producer": "pacer"}, malloc'ed into *out. 0, or -1
 * with err (a name too long or repeated, a rank out of range, a transposed tensor not 2-D,
 * a dtype not written, out of memory). */
int st_write_buffer(const st_tensor_t *t, int n, uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* The same into the file path (written whole or not at all). */
int st_write_file(const char *path, const st_tensor_t *t, int n, char *err, size_t errlen);

/* The len bytes of a safetensors file into *f (the caller keeps buf, and frees f with
 * st_free). 0, or -1 with err naming what is wrong: the header length (beyond
 * ST_HEADER_MAX, or past the end of the file), the JSON, a name (empty, too long, repeated),
 * a dtype other than F32, BF16 and F16, a shape, data_offsets outside the data section or of another size
 * than the shape's, two tensors' bytes overlapping, or bytes that belong to no tensor. */
int st_parse(const uint8_t *buf, size_t len, st_file_t *f, char *err, size_t errlen);
void st_free(st_file_t *f);
/* The index of the tensor named name, or -1. */
int st_find(const st_file_t *f, const char *name);
/* The bytes of one element of dtype d (4 or 2). */
size_t st_dtype_size(st_dtype_t d);
/* The name of dtype d in a header ("F32", "BF16", "F16"). */
const char *st_dtype_name(st_dtype_t d);
/* Tensor i's count floats into dst, row-major in its dims (little-endian bytes, any
 * alignment; BF16 and F16 widened exactly; a transposed tensor transposed back). */
void st_read_floats(const st_file_t *f, int i, float *dst);

#endif
