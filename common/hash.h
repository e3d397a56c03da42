/* common/hash.h - the one hash of the tree, FNV-1a (64 bits): the fingerprint a checkpoint
 * carries of its job spec and of its model's parameter layout (worker/checkpoint.c,
 * common/spec.c), and, folded to an unsigned, the slot of a direct-mapped cache (the
 * coordinator's parse caches, the HTTP layer's job cache), where a collision only replaces
 * an entry.
 *
 * It detects a mismatch (another spec, another layout), not an adversary: whoever can
 * write the checkpoint file can also write a matching fingerprint, which is why every
 * field of a checkpoint is also validated on its own before use. */
#ifndef PACER_HASH_H
#define PACER_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HASH_FNV1A_INIT 0xcbf29ce484222325ull

/* Continues hash h over n bytes at p. */
static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A cache slot for a NUL-terminated key. */
static inline unsigned str_hash(const char *s) { return (unsigned)hash_fnv1a(HASH_FNV1A_INIT, s, strlen(s)); }

#endif
