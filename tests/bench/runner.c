/*
 * dlock benchmarks — timed loops, alternating between sides.
 *
 * A side (bench.h) is one way of doing lock+unlock pairs. The runner starts
 * N threads once; each opens its state for every side and does one untimed
 * pair on each (connecting, loading scripts). Then, round after round, the
 * main thread names a side, lets all threads loop on it for round_ms, stops
 * them and counts their pairs. Keeping threads and connections across rounds
 * makes rounds cheap, so there can be many short ones: the shorter the
 * rounds, the closer in time the runs a ratio compares.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

double bench_cpu_us_per_pair(const bench_rate *r)
{
    return r->pairs > 0 ? r->cpu_seconds * 1e6 / (double)r->pairs : 0.0;
}

int64_t bench_thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

double bench_ratio_q(const bench_rate *side, const bench_rate *base, double q)
{
    int64_t v[BENCH_MAX_ROUNDS];
    size_t n = 0;
    int r;

    /* In parts per million, to reuse the integer quantile. */
    for (r = 0; r < side->nrounds && r < base->nrounds; r++)
        if (base->round_rate[r] > 0)
            v[n++] = (int64_t)(side->round_rate[r] / base->round_rate[r] * 1e6);
    return (double)bench_quantile(v, n, q) / 1e6;
}

typedef struct run {
    const bench_side *sides;
    size_t nsides;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* Under mu: the side of the current round, its number (a thread runs
     * each round once), threads done with it, threads ready at all. */
    size_t side;
    unsigned gen;
    int done, ready, quit;
    int stop; /* atomic: end the current round's loop */
} run;

typedef struct worker {
    run *run;
    int idx;
    pthread_t thread;
    void **state;  /* per side; NULL when it could not be opened */
    int *rc;       /* per side: the failure that stopped it, or 0 */
    uint64_t pairs; /* in the current round */
    int64_t end_ns, cpu_ns;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    run *r = w->run;
    unsigned seen = 0;
    size_t k;

    for (k = 0; k < r->nsides; k++) {
        const bench_side *s = &r->sides[k];
        w->rc[k] = s->open(s->ctx, w->idx, &w->state[k]);
        if (w->rc[k] == 0)
            w->rc[k] = s->pair(w->state[k]); /* warm-up, untimed */
    }
    pthread_mutex_lock(&r->mu);
    r->ready++;
    pthread_cond_broadcast(&r->cv);
    for (;;) {
        const bench_side *s;
        while (r->gen == seen && !r->quit)
            pthread_cond_wait(&r->cv, &r->mu);
        if (r->quit)
            break;
        seen = r->gen;
        k = r->side;
        pthread_mutex_unlock(&r->mu);

        s = &r->sides[k];
        w->pairs = 0;
        w->cpu_ns = bench_thread_cpu_ns();
        while (w->rc[k] == 0 && !__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
            w->rc[k] = s->pair(w->state[k]);
            if (w->rc[k] == 0)
                w->pairs++;
        }
        w->end_ns = bench_now_ns();
        w->cpu_ns = bench_thread_cpu_ns() - w->cpu_ns;

        pthread_mutex_lock(&r->mu);
        r->done++;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    for (k = 0; k < r->nsides; k++)
        if (w->state[k])
            r->sides[k].close(w->state[k]);
    return NULL;
}

int bench_failures;

static void note_error(bench_rate *acc, const bench_side *side, int rc)
{
    __atomic_fetch_add(&bench_failures, 1, __ATOMIC_RELAXED);
    acc->errors++;
    if (acc->error[0] == '\0')
        snprintf(acc->error, sizeof acc->error, "%s: failed with %d (%s)",
                 side->label, rc, rc < 0 ? dlock_errname(rc) : "?");
}

/* One timed round of side k in all started threads. */
static void round_of(run *r, worker *w, int started, size_t k, int ms,
                     bench_rate *acc)
{
    uint64_t pairs = 0;
    int64_t t0, t1 = 0, cpu = 0;
    int i;

    pthread_mutex_lock(&r->mu);
    r->side = k;
    r->done = 0;
    __atomic_store_n(&r->stop, 0, __ATOMIC_RELAXED);
    r->gen++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    t0 = bench_now_ns();
    bench_sleep_ms(ms);
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&r->mu);
    while (r->done < started)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    for (i = 0; i < started; i++) {
        pairs += w[i].pairs;
        cpu += w[i].cpu_ns;
        if (w[i].end_ns > t1)
            t1 = w[i].end_ns;
    }
    if (t1 <= t0)
        return;
    acc->pairs += pairs;
    acc->seconds += (double)(t1 - t0) / 1e9;
    acc->cpu_seconds += (double)cpu / 1e9;
    if (acc->nrounds < BENCH_MAX_ROUNDS)
        acc->round_rate[acc->nrounds++] = (double)pairs / ((double)(t1 - t0) / 1e9);
}

void bench_alternate(const bench_config *cfg, const bench_side *sides,
                     size_t nsides, int nthreads, bench_rate *rates)
{
    worker *w = calloc((size_t)nthreads, sizeof(*w));
    run r;
    int i, round, started = 0;
    size_t k;

    memset(&r, 0, sizeof r);
    r.sides = sides;
    r.nsides = nsides;
    pthread_mutex_init(&r.mu, NULL);
    pthread_cond_init(&r.cv, NULL);
    for (i = 0; w && i < nthreads; i++) {
        w[i].run = &r;
        w[i].idx = i;
        w[i].state = calloc(nsides, sizeof(*w[i].state));
        w[i].rc = calloc(nsides, sizeof(*w[i].rc));
        if (!w[i].state || !w[i].rc ||
            pthread_create(&w[i].thread, NULL, work, &w[i]) != 0) {
            free(w[i].state);
            free(w[i].rc);
            break;
        }
        started++;
    }
    if (started < nthreads)
        for (k = 0; k < nsides; k++)
            note_error(&rates[k], &sides[k], DLOCK_ENOMEM);

    pthread_mutex_lock(&r.mu);
    while (r.ready < started)
        pthread_cond_wait(&r.cv, &r.mu);
    pthread_mutex_unlock(&r.mu);
    for (round = 0; started == nthreads && round < cfg->rounds; round++) {
        for (k = 0; k < nsides; k++) {
            size_t side = round % 2 == 0 ? k : nsides - 1 - k;
            round_of(&r, w, started, side, cfg->round_ms, &rates[side]);
        }
    }

    pthread_mutex_lock(&r.mu);
    r.quit = 1;
    pthread_cond_broadcast(&r.cv);
    pthread_mutex_unlock(&r.mu);
    for (i = 0; i < started; i++) {
        pthread_join(w[i].thread, NULL);
        for (k = 0; k < nsides; k++)
            if (w[i].rc[k] != 0)
                note_error(&rates[k], &sides[k], w[i].rc[k]);
        free(w[i].state);
        free(w[i].rc);
    }
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
    free(w);
}

/* ---- process and server readings (figures 10c and 11) ---- */

long bench_rss_bytes(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
        rss = -1;
    fclose(f);
    return rss < 0 ? -1 : rss * sysconf(_SC_PAGESIZE);
}

long bench_server_clients(bench_raw *raw)
{
    char info[4096];
    const char *p;
    if (bench_raw_info(raw, "clients", info, sizeof info) != 0)
        return -1;
    p = strstr(info, "connected_clients:");
    return p ? atol(p + 18) : -1;
}

