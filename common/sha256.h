/* common/sha256.h - SHA-256 (FIPS 180-4): the content hash an uploaded ONNX model is
 * stored and fetched by (coordinator/modelstore.c, the worker's Redis fetch, pacer-worker
 * --check-onnx). No crypto library is linked for one hash; test_common checks the
 * standard vectors. */
#ifndef PACER_SHA256_H
#define PACER_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64 /* lower-case hex digits; a buffer needs one more byte */

/* The digest of len bytes at data as 64 lower-case hex digits and a NUL in hex. */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
/* Whether s is exactly 64 lower-case hex digits (what sha256_hex writes). */
int sha256_hex_valid(const char *s);

#endif
