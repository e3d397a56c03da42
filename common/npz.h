/* common/npz.h - reading the arrays of a NumPy .npz (np.savez or np.savez_compressed: a
 * zip archive of NAME.npy members), through libzip.
 *
 * Every message names the archive and the array: "d/mnist.npz: x_train: truncated:
 * 47040000 bytes of data announced, 4096 in the archive". Sizes come from the archive's
 * central directory and the array's header, and are checked against each other before
 * anything is allocated: a member must hold exactly its header plus count x itemsize
 * bytes. A deflated member cannot announce more than DEFLATE_MAX_RATIO times its
 * compressed size (what deflate can reach at best), so a forged size is refused before
 * it costs memory; what the data really holds is read into a buffer the caller sized
 * from the header, never past it, and the CRC-32 is checked at the member's end.
 */
#ifndef PACER_NPZ_H
#define PACER_NPZ_H

#include <stddef.h>
#include <stdint.h>

#include "npy.h"

typedef struct npz npz_t;

/* One array of an open archive, between npz_array_open and npz_array_close. */
typedef struct {
    npy_header_t h;
    char name[32];         /* "x_train" */
    uint64_t member_bytes; /* the .npy member's uncompressed size */
    uint64_t done;         /* bytes of data read so far (npz_array_read_part) */
    void *file;            /* libzip's zip_file_t */
} npz_array_t;

/* Opens path read-only. Returns 0, or -1 with err "PATH: not a zip archive (an .npz is one)"
 * and the like. */
int npz_open(const char *path, npz_t **out, char *err, size_t errlen);
void npz_close(npz_t *z);
/* The archive's path, as given to npz_open. */
const char *npz_path(const npz_t *z);

/* 1 when the archive has NAME.npy. */
int npz_has(npz_t *z, const char *name);

/* Opens NAME.npy and reads its header into a->h. Returns 0, or -1 with err naming the
 * archive and the array ("PATH: no array 'y_test'" when it is missing). */
int npz_array_open(npz_t *z, const char *name, npz_array_t *a, char *err, size_t errlen);
/* Reads the array's a->h.nbytes bytes of data into dst, then checks that the member ends
 * there and that its CRC-32 matches. Returns 0 or -1 with err. */
int npz_array_read(npz_t *z, npz_array_t *a, void *dst, char *err, size_t errlen);
/* The same in parts, so that a caller holds a chunk, not the array (worker/dsload.c
 * streams a data set into its cache): read_part reads the next n bytes of data into dst
 * (refused past h.nbytes; a member that ends early is "truncated"), and finish, once
 * every byte was read, checks the member's end and its CRC-32. Each returns 0 or -1
 * with err. */
int npz_array_read_part(npz_t *z, npz_array_t *a, void *dst, uint64_t n, char *err, size_t errlen);
int npz_array_finish(npz_t *z, npz_array_t *a, char *err, size_t errlen);
void npz_array_close(npz_array_t *a);

/* A fingerprint of the archive's content: FNV-1a over every member's name, size, method
 * and CRC-32 from the central directory (the CRC covers the member's bytes, so a change
 * to any array changes it) without reading the data. */
uint64_t npz_fingerprint(npz_t *z);

#endif
