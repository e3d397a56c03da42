/* coordinator/strhash.h - the one string hash of the coordinator side: djb2 (h * 33 + c),
 * which picks the slot of a direct-mapped cache from its key (api.c's parse caches, the
 * HTTP layer's job cache). Not for anything an attacker could flood: a collision only
 * replaces a cache entry. */
#ifndef PACER_STRHASH_H
#define PACER_STRHASH_H

static inline unsigned str_hash(const char *s)
{
    unsigned h = 5381;
    for (; *s; s++) h = h * 33u + (unsigned char)*s;
    return h;
}

#endif
