/* common/rng.c - see rng.h. */
#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void rng_seed(rng_t *r, uint64_t seed)
{
    uint64_t x = seed;
    r->s[0] = splitmix64(&x);
    r->s[1] = splitmix64(&x);
    if (r->s[0] == 0 && r->s[1] == 0) r->s[1] = 1; /* the all-zero state is a fixed point */
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(rng_t *r)
{
    uint64_t s0 = r->s[0], s1 = r->s[1];
    uint64_t result = s0 + s1;
    s1 ^= s0;
    r->s[0] = rotl(s0, 24) ^ s1 ^ (s1 << 16);
    r->s[1] = rotl(s1, 37);
    return result;
}

float rng_uniform(rng_t *r) { return (float)(rng_next(r) >> 40) * (1.0f / 16777216.0f); }

float rng_normal(rng_t *r)
{
    /* Box-Muller in double so the tails are right; u1 is kept away from 0. */
    double u1 = ((double)(rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);
    double u2 = (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

uint32_t rng_below(rng_t *r, uint32_t n)
{
    /* Multiply-shift; the bias is below 2^-32 for the n pacer uses. */
    return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

void rng_shuffle(rng_t *r, int32_t *perm, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)rng_below(r, (uint32_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}
