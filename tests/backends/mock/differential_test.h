/*
 * The differential test of the mock store against redis-server
 * (tests/backends/mock/differential_test.c), as an engine that both the
 * make-check slice and the long run
 * (tests/backends/mock/differential/stress_main.c) drive.
 */
#ifndef DLOCK_TEST_DIFFERENTIAL_H
#define DLOCK_TEST_DIFFERENTIAL_H

#include <stdint.h>
#include <stdio.h>

#include "../../harness/redis_server.h"

typedef struct dlock_diff dlock_diff;

typedef struct dlock_diff_stats {
    unsigned long commands;   /* command pairs compared */
    unsigned long scripts;    /* script pairs compared */
    unsigned long expiries;   /* real-time expiry steps */
    unsigned long mismatches; /* pairs that differed */
    unsigned long io_errors;  /* lost the Redis connection (run stops) */
} dlock_diff_stats;

/* A fresh mock store on the real-time clock and a connection to srv (NULL:
 * start a server of its own, stopped by close). Both sides are flushed.
 * Mismatches are described on log (may be NULL; the first 20 only).
 * 0 or -1. */
int dlock_diff_open(dlock_diff **out, dlock_test_redis *srv, uint64_t seed,
                    FILE *log);
void dlock_diff_close(dlock_diff *d);

/* Replays the fixed regressions, then ncommands random commands with
 * nscripts random scripts spread among them. Returns 0 (no mismatch), 1
 * (mismatches) or -1 (lost the server); *st (may be NULL) gets the
 * totals so far. */
int dlock_diff_run(dlock_diff *d, unsigned long ncommands,
                   unsigned long nscripts, dlock_diff_stats *st);

#endif /* DLOCK_TEST_DIFFERENTIAL_H */
