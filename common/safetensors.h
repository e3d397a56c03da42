/* common/safetensors.h - Hugging Face's safetensors format, written and read.
 *
 * A file is an 8-byte little-endian header length N, N bytes of a UTF-8 JSON object (padded
 * with spaces) mapping each tensor name to {"dtype", "shape", "data_offsets": [BEGIN, END]}
 * plus an optional "__metadata__" object of string values, then the data section: each
 * tensor's row-major little-endian bytes at [BEGIN, END) from the section's start, the
 * ranges covering it without holes or overlaps. Only F32 tensors are written and read.
 *
 * The reader treats the file as hostile: the header length is bounded (ST_HEADER_MAX) and
 * inside the file, the JSON is parsed by jansson, every entry is checked (dtype F32, at most
 * ST_MAX_RANK dimensions, each dimension and the element count bounded, data_offsets inside
 * the data section and of the shape's byte size), names are unique and at most
 * ST_NAME_MAX - 1 bytes, and no two ranges overlap. A refusal names what is wrong.
 */
#ifndef PACER_SAFETENSORS_H
#define PACER_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_RANK 8
#define ST_NAME_MAX 256
#define ST_HEADER_MAX (100u << 20) /* the reference implementation's bound */
#define ST_TENSORS_MAX 65536

typedef struct {
    char name[ST_NAME_MAX];
    int rank;
    int64_t dims[ST_MAX_RANK];
    size_t count;       /* elements: the dims' product (1 for rank 0) */
    const float *data;  /* count floats: the writer's input, or the reader's view into its buffer */
} st_tensor_t;

/* The safetensors bytes of the n tensors t (in that order, F32) with __metadata__
 * {"format": "pt", "producer": "pacer"}, malloc'ed into *out. 0, or -1 with err (a name
 * too long or repeated, a rank out of range, out of memory). */
int st_write_buffer(const st_tensor_t *t, int n, uint8_t **out, size_t *outlen, char *err, size_t errlen);
/* The same into the file path (written whole or not at all). */
int st_write_file(const char *path, const st_tensor_t *t, int n, char *err, size_t errlen);

#endif
