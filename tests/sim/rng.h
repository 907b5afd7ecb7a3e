/*
 * Simulator: the one random source of a run. Everything the run decides
 * (workload, faults, pauses) comes from it, so the seed names the run.
 */
#ifndef DLOCK_SIM_RNG_H
#define DLOCK_SIM_RNG_H

#include <stdint.h>

typedef struct sim_rng {
    uint64_t s;
} sim_rng;

/* splitmix64: any seed, 0 included, gives a full-period stream. */
static inline uint64_t sim_rng_next(sim_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi] (hi >= lo). */
static inline int64_t sim_rng_range(sim_rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(sim_rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* 1 with probability per10k / 10 000. */
static inline int sim_rng_chance(sim_rng *r, int per10k)
{
    return per10k > 0 && (int)(sim_rng_next(r) % 10000) < per10k;
}

#endif /* DLOCK_SIM_RNG_H */
