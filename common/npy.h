/* common/npy.h - the header of a NumPy .npy array (format versions 1, 2 and 3), and the
 * conversion of its elements to what a data set stores: uint8 pixels and int32 labels.
 *
 * A .npy file is the magic "\x93NUMPY", a version (major, minor), the header length
 * (2 bytes little-endian in version 1, 4 in versions 2 and 3), the header, then the
 * array's bytes. The header is a Python dict literal padded with spaces and ended by a
 * newline: {'descr': '<u1', 'fortran_order': False, 'shape': (60000, 28, 28), }.
 * npy_parse_header reads exactly that: the three keys, each once, and nothing else
 * (numpy's own reader asks the same). The descr is a simple type: a byte order
 * ('<', '>', '|' or '='), a kind ('u', 'i', 'f', 'b') and an item size; structured
 * dtypes (a list) are refused.
 *
 * Everything read from the file is bounded before it is used: the header length
 * (NPY_HEADER_MAX), the number of dimensions (NPY_MAX_DIMS), and the byte count, which is
 * computed with overflow checks; the caller compares it with what the file (or zip
 * member) really holds. Shared by the worker (worker/dsload.c reads the arrays) and the
 * coordinator (common/dsprobe.c checks an .npz at submission). */
#ifndef PACER_NPY_H
#define PACER_NPY_H

#include <stddef.h>
#include <stdint.h>

#define NPY_MAGIC_LEN 6
#define NPY_PREAMBLE_MAX 12        /* magic, version, 4-byte header length */
#define NPY_HEADER_MAX 65536       /* numpy itself refuses headers beyond 10000 bytes */
#define NPY_MAX_DIMS 4             /* (N, C, H, W) at most: more is not an image array */
#define NPY_MAX_BYTES (1ull << 40) /* 1 TiB: larger is a corrupt header */

typedef struct {
    char kind;         /* 'u' unsigned, 'i' signed, 'f' float, 'b' bool */
    int itemsize;      /* bytes per element: 1, 2, 4 or 8 */
    int big_endian;    /* '>' in descr ('|' and '=' read as little-endian here) */
    int fortran_order; /* column-major: the first index varies fastest */
    int ndim;          /* 0 .. NPY_MAX_DIMS */
    int64_t shape[NPY_MAX_DIMS];
    uint64_t count;     /* elements: the product of shape (1 for ndim 0) */
    uint64_t nbytes;    /* count * itemsize */
    size_t data_offset; /* where the elements start: preamble + header */
    char descr[32];     /* as written, for messages ("<f8") */
} npy_header_t;

/* Parses the preamble and header at buf[0 .. len) (the first bytes of the file; more
 * may follow). Returns 0, or -1 with err saying what is wrong ("not a .npy file (no
 * \x93NUMPY magic)", "header: unknown key 'foo'", "shape: dimension 2 is negative").
 * When len is shorter than the header claims, the message says "truncated". */
int npy_parse_header(const uint8_t *buf, size_t len, npy_header_t *out, char *err, size_t errlen);

/* The number of bytes npy_parse_header needs to see: the preamble first
 * (NPY_PREAMBLE_MAX, or len when less), then, once the preamble is known, preamble +
 * header. Returns 0 when buf holds no valid preamble (npy_parse_header says why). */
size_t npy_header_size(const uint8_t *buf, size_t len);

/* The byte stride of each dimension (fortran_order undone here), so that the element at
 * index (i0, i1, ...) starts at sum(i_k * strides[k]) bytes into the data. */
void npy_strides(const npy_header_t *h, uint64_t strides[NPY_MAX_DIMS]);

/* Reads one element as a double / an int64 (kind 'f' / 'u', 'i', 'b'), byte order
 * handled. p points at the element. */
double npy_get_f64(const npy_header_t *h, const uint8_t *p);
int64_t npy_get_i64(const npy_header_t *h, const uint8_t *p, int *overflow);

#endif
