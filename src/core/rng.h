/* A small, seeded, reproducible RNG (xoshiro256** seeded through
 * splitmix64). Same seed, same stream, on every machine. */
#ifndef SPF_CORE_RNG_H
#define SPF_CORE_RNG_H

#include <stdint.h>

typedef struct rng {
    uint64_t s[4];
} rng;

void rng_seed(rng *r, uint64_t seed);
uint64_t rng_next(rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double rng_uniform(rng *r);
/* Uniform integer in [0, bound), bound > 0, without modulo bias. */
uint64_t rng_below(rng *r, uint64_t bound);
/* Standard normal (Box–Muller). */
double rng_normal(rng *r);

#endif
