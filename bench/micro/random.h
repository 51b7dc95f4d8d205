/* The microbenchmarks' random numbers: xorshift64, a few instructions per draw
 * so that drawing costs little beside the allocator, and seeded so that every
 * run of a benchmark makes the same calls. */
#ifndef HH_MICRO_RANDOM_H
#define HH_MICRO_RANDOM_H

#include <stdint.h>

/* The next number of the sequence in STATE (never 0: seed with a non-zero value). */
static inline uint64_t micro_random(uint64_t *state) {
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

/* A number from 0 to BOUND - 1 (the high bits: xorshift's low bits are weaker). */
static inline uint64_t micro_random_below(uint64_t *state, uint64_t bound) {
    return (uint64_t)(((unsigned __int128)micro_random(state) * bound) >> 64);
}

/* A seed for stream NUMBER (a thread's, say): distinct streams, never 0. */
static inline uint64_t micro_seed(uint64_t number) {
    return 0x9E3779B97F4A7C15ull * (number + 1) | 1;
}

#endif
