/* common/rng.h - the one deterministic random number generator pacer uses
 * (xoshiro128+ on 64-bit words, splitmix64 seeding). Same seed, same stream, on every
 * machine: weight init, shuffling and augmentation all draw from an rng_t seeded from
 * the job seed, which is what makes a run bitwise repeatable. */
#ifndef PACER_RNG_H
#define PACER_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[2];
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_next(rng_t *r);
float rng_uniform(rng_t *r);              /* [0, 1) with 24 bits */
float rng_normal(rng_t *r);               /* standard normal, Box-Muller */
uint32_t rng_below(rng_t *r, uint32_t n); /* uniform in [0, n), n > 0 */
/* Fisher-Yates shuffle of perm[0..n). */
void rng_shuffle(rng_t *r, int32_t *perm, int n);

#endif
