/*
 * The test program's parts spread over worker processes (make check's
 * DLOCK_TEST_JOBS): most of the suite waits (leases, timeouts, servers
 * starting), so a few workers on two cores finish it in a fraction of the
 * time one process takes. Each worker is a fork of the test program with
 * its own throwaway servers; it takes the next part not yet taken as soon
 * as it is free, so the longest parts, listed first, start first.
 */
#ifndef DLOCK_TEST_JOBS_H
#define DLOCK_TEST_JOBS_H

#include <stddef.h>

#define DLOCK_TEST_TIMED_MAX 128

typedef struct dlock_test_timed {
    char what[64];
    double s;
} dlock_test_timed;

/* What one worker tells the parent, in memory shared with it. */
typedef struct dlock_test_report {
    int total, failed; /* its cases; set by dlock_test_jobs_publish */
    int published;     /* 1 once total and failed were set */
    int ntimed;        /* its parts' wall times */
    dlock_test_timed timed[DLOCK_TEST_TIMED_MAX];
    char phase[512];   /* what it is doing (named if it dies) */
} dlock_test_report;

/* The report of the calling process (the worker's own; with one job, the
 * program's). Valid from the start of dlock_test_jobs_run to the end of
 * the program; before that, a static one. */
dlock_test_report *dlock_test_jobs_mine(void);

/* Copies dlock_test_total and dlock_test_failed (harness/runner.h) into
 * the caller's report (async-signal-safe: the alarm and fatal paths call
 * it before they leave). */
void dlock_test_jobs_publish(void);

/* Runs parts 0..nparts-1 with run_part(i): jobs <= 1 in this process, in
 * order; else in jobs forked workers, each taking the next free part,
 * with its stdout and stderr in a file of its own that is copied to
 * stdout (whole, one worker after another) when the worker ends. Each
 * worker calls finish() after its last part and publishes its counters.
 * Then *sum holds every worker's counters and timings (a worker that died
 * without publishing adds one failure, reported with its phase). Returns
 * 0, or -1 when the workers could not be started (nothing ran). */
int dlock_test_jobs_run(size_t nparts, int jobs, void (*run_part)(size_t i),
                        void (*finish)(void), dlock_test_report *sum);

#endif /* DLOCK_TEST_JOBS_H */
