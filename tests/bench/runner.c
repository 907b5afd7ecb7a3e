/*
 * dlock benchmarks — timed loops.
 *
 * A side (bench.h) is one way of doing lock+unlock pairs; the runner runs it
 * in N threads for a fixed time and counts pairs. Each thread opens its
 * state and does one untimed pair first (connecting, loading scripts), then
 * all threads start together at a gate, so the clock covers steady state
 * only.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

int64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_ms(int64_t ms)
{
    struct timespec ts;

    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

double bench_rate_per_s(const bench_rate *r)
{
    return r->seconds > 0 ? (double)r->pairs / r->seconds : 0.0;
}

typedef struct run {
    const bench_side *side;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int ready, go; /* the start gate, under mu */
    int stop;
} run;

typedef struct worker {
    run *run;
    int idx;
    pthread_t thread;
    uint64_t pairs;
    int64_t end_ns;
    int rc;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    const bench_side *s = w->run->side;
    void *state = NULL;

    w->rc = s->open(s->ctx, w->idx, &state);
    if (w->rc == 0)
        w->rc = s->pair(state); /* warm-up, untimed */
    pthread_mutex_lock(&w->run->mu);
    w->run->ready++;
    pthread_cond_broadcast(&w->run->cv);
    while (!w->run->go)
        pthread_cond_wait(&w->run->cv, &w->run->mu);
    pthread_mutex_unlock(&w->run->mu);
    while (w->rc == 0 && !__atomic_load_n(&w->run->stop, __ATOMIC_RELAXED)) {
        w->rc = s->pair(state);
        if (w->rc == 0)
            w->pairs++;
    }
    w->end_ns = bench_now_ns();
    if (state)
        s->close(state);
    return NULL;
}

static void note_error(bench_rate *acc, const bench_side *side, int rc)
{
    acc->errors++;
    if (acc->error[0] == '\0')
        snprintf(acc->error, sizeof acc->error, "%s: a pair failed with %d (%s)",
                 side->label, rc, rc < 0 ? dlock_errname(rc) : "?");
}

void bench_run_side(const bench_side *side, int nthreads, int ms, bench_rate *acc)
{
    worker *w = calloc((size_t)nthreads, sizeof(*w));
    run r;
    int64_t t0, t1 = 0;
    int i, started = 0;

    if (!w) {
        note_error(acc, side, DLOCK_ENOMEM);
        return;
    }
    memset(&r, 0, sizeof r);
    r.side = side;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    for (i = 0; i < nthreads; i++) {
        w[i].run = &r;
        w[i].idx = i;
        if (pthread_create(&w[i].thread, NULL, work, &w[i]) != 0)
            break;
        started++;
    }
    if (started < nthreads)
        note_error(acc, side, DLOCK_ENOMEM);
    /* Everyone warmed up, then the clock starts and everyone goes. */
    pthread_mutex_lock(&r.mu);
    while (r.ready < started)
        pthread_cond_wait(&r.cv, &r.mu);
    r.go = 1;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
    t0 = bench_now_ns();
    bench_sleep_ms(ms);
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELAXED);
    for (i = 0; i < started; i++) {
        pthread_join(w[i].thread, NULL);
        acc->pairs += w[i].pairs;
        if (w[i].end_ns > t1)
            t1 = w[i].end_ns;
        if (w[i].rc != 0)
            note_error(acc, side, w[i].rc);
    }
    if (t1 > t0)
        acc->seconds += (double)(t1 - t0) / 1e9;
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
    free(w);
}

void bench_alternate(const bench_config *cfg, const bench_side *sides,
                     size_t nsides, int nthreads, bench_rate *rates)
{
    int round;
    size_t i;

    for (round = 0; round < cfg->rounds; round++) {
        for (i = 0; i < nsides; i++) {
            size_t k = round % 2 == 0 ? i : nsides - 1 - i;
            bench_run_side(&sides[k], nthreads, cfg->round_ms, &rates[k]);
        }
    }
}
