/* common/sha256.h - SHA-256 (FIPS 180-4): the content hash an uploaded ONNX model is
 * stored and fetched by (coordinator/modelstore.c, the worker's Redis fetch, pacer-worker
 * --check-onnx), and HMAC-SHA256 over it for webhooks' signatures. No crypto library is linked for one hash; test_common checks the
 * standard vectors. */
#ifndef PACER_SHA256_H
#define PACER_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_HEX_LEN 64 /* lower-case hex digits; a buffer needs one more byte */

/* The digest of len bytes at data as 64 lower-case hex digits and a NUL in hex. */
void sha256_hex(const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
/* HMAC-SHA256 (RFC 2104) of len bytes at data under key, as 64 lower-case hex digits: the
 * signature of a webhook's body with its secret (coordinator/webhook.c); test_webhook
 * checks RFC 4231's vectors. */
void hmac_sha256_hex(const void *key, size_t keylen, const void *data, size_t len, char hex[SHA256_HEX_LEN + 1]);
/* Whether s is exactly 64 lower-case hex digits (what sha256_hex writes). */
int sha256_hex_valid(const char *s);

#endif
