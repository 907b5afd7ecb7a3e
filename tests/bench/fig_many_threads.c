/*
 * dlock benchmarks — figure 10: many threads, few connections (issue 15).
 *
 *  a. T = 1, 8, 32, 128 threads, each locking its own name (reentrant),
 *     uncontended: one client multiplexed on C = 1 and C = 2 connections,
 *     one pooled client (pool = max(T, 8)), and the raw floor of T hiredis
 *     connections each doing the two EVALSHA round trips, in alternating
 *     rounds of the same run. Targets: multiplexed with C <= 2, ratio >= 1.0
 *     at T = 32 and 128, >= 0.95 at T = 1.
 *  b. Server CPU per lock+unlock pair at T = 128 (INFO cpu, used_cpu_sys +
 *     used_cpu_user, before and after a timed run of one side alone):
 *     multiplexed vs pooled vs raw.
 *  c. 10 000 threads (64 KiB stacks) blocked in try_lock on 10 000
 *     different locks, one client (one subscriber connection): process RSS
 *     and heap growth per blocked waiter, the server connections the
 *     waiting client uses (INFO clients), and the wake-up latency when all
 *     locks are released at once (force_unlock from 8 threads; latency =
 *     the waiter's return - the moment its lock's release was sent). The
 *     latencies depend on how fast the releases come (the re-acquisitions
 *     queue behind each other on the client's connection and CPUs), so the
 *     figure also prints the release span (first to last release sent) and
 *     the drain (first release to last return).
 * Runs in seconds: fewer, shorter rounds than the other figures.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlock/redis.h>

#include "bench.h"

#define MANY_ROUNDS 10
/* T = 1 is one round trip at a time: its rounds scatter most (a thread's
 * core against the server's), so it gets more of them for its median. */
#define MANY_ROUNDS_T1 30
#define MANY_ROUND_MS 200
#define WAITERS 10000
#define WAITER_STACK (64 * 1024)
#define RELEASERS 8

static int redis_client(dlock_client **out, const bench_config *cfg,
                        int multiplex, int n)
{
    dlock_redis_options ro = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    char err[256];
    int rc;

    ro.multiplex = multiplex;
    if (multiplex)
        ro.connections = n;
    else
        ro.pool_size = n;
    rc = dlock_redis_backend_new(&b, cfg->redis_url, &ro, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "bench: many_threads: %s\n", err);
        return rc;
    }
    rc = dlock_client_new(out, b, NULL);
    if (rc != 0)
        dlock_backend_free(b);
    return rc;
}

/* ---- the sides --------------------------------------------------------- */

typedef struct side_ctx {
    dlock_client *client;
    const char *tag;
} side_ctx;

static int lib_open(void *ctx, int idx, void **state)
{
    side_ctx *x = ctx;
    char name[96];
    snprintf(name, sizeof name, "bench:many:%s:%d", x->tag, idx);
    return bench_lock_open((dlock_rlock **)state,
                           bench_lock_type_find("reentrant"), x->client, name);
}

static int raw_open(void *ctx, int idx, void **state)
{
    char name[64];
    snprintf(name, sizeof name, "bench:many:raw:%d", idx);
    return bench_raw_connect((bench_raw_conn **)state, ctx, name) == 0 ? 0 : -1;
}

static int raw_pair(void *state)
{
    return bench_raw_pair(state, NULL);
}

static void raw_close(void *state)
{
    bench_raw_close(state);
}

static void json_row(int t, const char *mode, int conns, const bench_rate *r,
                     const bench_rate *raw, double target)
{
    double ratio = bench_ratio(r, raw);
    bench_json j;

    bench_json_begin(&j, "many_threads");
    bench_json_int(&j, "threads", t);
    bench_json_str(&j, "mode", mode);
    bench_json_int(&j, "connections", conns);
    bench_json_num(&j, "pairs_per_s", bench_rate_per_s(r));
    bench_json_num(&j, "raw_pairs_per_s", bench_rate_per_s(raw));
    bench_json_num(&j, "ratio_vs_raw", ratio);
    bench_json_num(&j, "ratio_min", bench_ratio_q(r, raw, 0));
    bench_json_num(&j, "ratio_max", bench_ratio_q(r, raw, 1));
    bench_json_num(&j, "client_cpu_us_per_pair", bench_cpu_us_per_pair(r));
    if (target > 0) {
        bench_json_num(&j, "target_ratio", target);
        bench_json_str(&j, "target", bench_verdict(1, ratio >= target));
    }
    bench_json_int(&j, "failures", r->errors);
    bench_json_end(&j);
    bench_row("%4d  %-9s %3d %11.0f %12.0f %7.3f   %s", t, mode, conns,
              bench_rate_per_s(r), bench_rate_per_s(raw), ratio,
              target > 0 ? bench_verdict(1, ratio >= target) : "-");
    if (r->errors)
        bench_row("      (%d threads failed; first: %s)", r->errors, r->error);
}

/* ---- a. throughput ------------------------------------------------------ */

static void throughput(const bench_config *cfg0, bench_raw *raw)
{
    static const int threads[] = {1, 8, 32, 128};
    bench_config cfg = *cfg0;
    size_t k;

    cfg.rounds = MANY_ROUNDS;
    cfg.round_ms = MANY_ROUND_MS;
    bench_heading("10a. many threads, redis, reentrant, uncontended: T threads "
                  "each on its own lock; multiplexed (C connections), pooled "
                  "(pool = max(T, 8)) vs T raw connections (target: "
                  "multiplexed C <= 2 ratio >= 1.0 at T >= 32, >= 0.95 at "
                  "T = 1)",
                  "   T  mode        C     pairs/s  raw pairs/s   ratio   target");
    for (k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        int t = threads[k], pool = t > 8 ? t : 8;
        dlock_client *m1 = NULL, *m2 = NULL, *p = NULL;
        side_ctx x[3] = {{NULL, "m1"}, {NULL, "m2"}, {NULL, "pool"}};
        bench_side sides[4];
        bench_rate rates[4];
        double target;

        memset(rates, 0, sizeof rates);
        cfg.rounds = t == 1 ? MANY_ROUNDS_T1 : MANY_ROUNDS;
        if (redis_client(&m1, &cfg, 1, 1) != 0 ||
            redis_client(&m2, &cfg, 1, 2) != 0 ||
            redis_client(&p, &cfg, 0, pool) != 0) {
            bench_row("%4d  cannot create the clients", t);
            dlock_client_free(m1);
            dlock_client_free(m2);
            dlock_client_free(p);
            continue;
        }
        x[0].client = m1;
        x[1].client = m2;
        x[2].client = p;
        sides[0] = (bench_side){"raw", raw_open, raw_pair, raw_close, raw};
        sides[1] = (bench_side){"mux1", lib_open, bench_lock_pair, bench_lock_close, &x[0]};
        sides[2] = (bench_side){"mux2", lib_open, bench_lock_pair, bench_lock_close, &x[1]};
        sides[3] = (bench_side){"pool", lib_open, bench_lock_pair, bench_lock_close, &x[2]};
        bench_alternate(&cfg, sides, 4, t, rates);
        target = t == 1 ? 0.95 : t >= 32 ? 1.0 : 0;
        if (rates[0].errors)
            bench_row("      (raw: %d threads failed; first: %s)",
                      rates[0].errors, rates[0].error);
        json_row(t, "multiplex", 1, &rates[1], &rates[0], target);
        json_row(t, "multiplex", 2, &rates[2], &rates[0], target);
        json_row(t, "pool", pool, &rates[3], &rates[0], 0);
        dlock_client_free(m1);
        dlock_client_free(m2);
        dlock_client_free(p);
    }
}

/* ---- b. server CPU per pair ------------------------------------------- */

static void server_cpu(const bench_config *cfg0, bench_raw *raw)
{
    const int t = 128;
    bench_config cfg = *cfg0;
    dlock_client *m = NULL, *p = NULL;
    side_ctx x[2] = {{NULL, "cpu-m"}, {NULL, "cpu-p"}};
    bench_side sides[3];
    const char *mode[3] = {"raw", "multiplex", "pool"};
    int conns[3] = {t, 1, t};
    int i;

    cfg.rounds = 2;
    cfg.round_ms = 500;
    bench_heading("10b. server CPU per lock+unlock pair, T = 128 (INFO cpu: "
                  "used_cpu_sys + used_cpu_user)",
                  "  mode        C     pairs/s   server us/pair");
    if (redis_client(&m, &cfg, 1, 1) != 0 || redis_client(&p, &cfg, 0, t) != 0) {
        bench_row("   cannot create the clients");
        goto out;
    }
    x[0].client = m;
    x[1].client = p;
    sides[0] = (bench_side){"raw", raw_open, raw_pair, raw_close, raw};
    sides[1] = (bench_side){"mux", lib_open, bench_lock_pair, bench_lock_close, &x[0]};
    sides[2] = (bench_side){"pool", lib_open, bench_lock_pair, bench_lock_close, &x[1]};
    for (i = 0; i < 3; i++) {
        bench_rate r;
        double before, after, us;
        bench_json j;

        memset(&r, 0, sizeof r);
        before = bench_raw_server_cpu_s(raw);
        bench_alternate(&cfg, &sides[i], 1, t, &r);
        after = bench_raw_server_cpu_s(raw);
        /* The per-thread setup (connections, script loads) is in the
         * difference too, spread over every pair of the run. */
        us = r.pairs ? (after - before) * 1e6 / (double)r.pairs : 0;
        bench_row("  %-9s %3d %11.0f %12.2f", mode[i], conns[i],
                  bench_rate_per_s(&r), us);
        bench_json_begin(&j, "many_threads_server_cpu");
        bench_json_int(&j, "threads", t);
        bench_json_str(&j, "mode", mode[i]);
        bench_json_int(&j, "connections", conns[i]);
        bench_json_num(&j, "pairs_per_s", bench_rate_per_s(&r));
        bench_json_num(&j, "server_cpu_us_per_pair", us);
        bench_json_int(&j, "failures", r.errors);
        bench_json_end(&j);
    }
out:
    dlock_client_free(m);
    dlock_client_free(p);
}

/* ---- c. 10 000 waiters ----------------------------------------------------- */

typedef struct waiter {
    dlock_rlock *l;
    int64_t released_ns; /* written by a releaser before its force_unlock */
    int64_t woke_ns;
    int rc;
} waiter;

typedef struct release_job {
    waiter *w;
    int from, to;
} release_job;

static void *wait_run(void *arg)
{
    waiter *w = arg;
    w->rc = dlock_try_lock(w->l, BENCH_WAIT_MS, BENCH_LEASE_MS);
    w->woke_ns = bench_now_ns();
    if (w->rc == 0)
        dlock_unlock(w->l);
    return NULL;
}

static void *release_run(void *arg)
{
    release_job *j = arg;
    int i;
    for (i = j->from; i < j->to; i++) {
        __atomic_store_n(&j->w[i].released_ns, bench_now_ns(), __ATOMIC_RELAXED);
        dlock_force_unlock(j->w[i].l, NULL);
    }
    return NULL;
}

static void waiters(const bench_config *cfg, bench_raw *raw)
{
    dlock_client *holder = NULL, *wc = NULL;
    bench_counts *counts = NULL;
    waiter *w = calloc(WAITERS, sizeof *w);
    dlock_rlock **held = calloc(WAITERS, sizeof *held);
    pthread_t *th = calloc(WAITERS, sizeof *th);
    int64_t *lat = calloc(WAITERS, sizeof *lat);
    pthread_t rel[RELEASERS];
    release_job jobs[RELEASERS];
    pthread_attr_t attr;
    long rss0, rss1, clients0 = 0, clients1;
    long long heap0, heap1;
    int i, n = 0, started = 0, woke = 0, failed = 0;
    int64_t t0, rel_first = INT64_MAX, rel_last = 0, last_return = 0;
    bench_json j;

    bench_heading("10c. 10 000 threads blocked on 10 000 different locks, one "
                  "client (default options): memory per waiter, server "
                  "connections, wake-up latency when all are released at once",
                  "  waiters  RSS B/waiter  heap B/waiter  connections  "
                  "p50 ms  p99 ms  max ms  release span ms  drain ms");
    if (!w || !held || !th || !lat ||
        bench_client_new(&holder, cfg, BENCH_REDIS, 0, NULL, NULL) != 0 ||
        (clients0 = bench_server_clients(raw)) < 0 ||
        bench_client_new(&wc, cfg, BENCH_REDIS, 0, NULL, &counts) != 0) {
        bench_row("   cannot set up the figure");
        goto out;
    }
    /* The holder takes every lock; the waiters' handles exist before the
     * first snapshot (a handle is the memory figure's business). */
    for (i = 0; i < WAITERS; i++) {
        char name[48];
        snprintf(name, sizeof name, "bench:many:wait:%d", i);
        if (bench_lock_open(&held[i], bench_lock_type_find("reentrant"), holder,
                            name) != 0 ||
            dlock_try_lock(held[i], 0, 120000) != 0 ||
            bench_lock_open(&w[i].l, bench_lock_type_find("reentrant"), wc,
                            name) != 0)
            break;
        n++;
    }
    if (n < WAITERS) {
        bench_row("   could only prepare %d locks", n);
        goto out;
    }
    /* One warm call, so the waiting client's connection is open. */
    {
        int locked;
        dlock_is_locked(w[0].l, &locked);
    }
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WAITER_STACK);
    rss0 = bench_rss_bytes();
    heap0 = (long long)mallinfo2().uordblks;
    for (i = 0; i < n; i++) {
        if (pthread_create(&th[i], &attr, wait_run, &w[i]) != 0)
            break;
        started++;
    }
    pthread_attr_destroy(&attr);
    /* Asleep: each waiter's two busy attempts (before and after
     * subscribing) were answered. */
    t0 = bench_now_ns();
    while (bench_counts_busy(counts) < 2 * (uint64_t)started &&
           bench_now_ns() - t0 < 60000000000LL)
        bench_sleep_ms(20);
    bench_sleep_ms(100);
    rss1 = bench_rss_bytes();
    heap1 = (long long)mallinfo2().uordblks;
    clients1 = bench_server_clients(raw);

    for (i = 0; i < RELEASERS; i++) {
        jobs[i].w = w;
        jobs[i].from = (int)((long)started * i / RELEASERS);
        jobs[i].to = (int)((long)started * (i + 1) / RELEASERS);
        pthread_create(&rel[i], NULL, release_run, &jobs[i]);
    }
    for (i = 0; i < RELEASERS; i++)
        pthread_join(rel[i], NULL);
    for (i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        if (w[i].released_ns < rel_first)
            rel_first = w[i].released_ns;
        if (w[i].released_ns > rel_last)
            rel_last = w[i].released_ns;
        if (w[i].woke_ns > last_return)
            last_return = w[i].woke_ns;
        if (w[i].rc == 0)
            lat[woke++] = w[i].woke_ns - w[i].released_ns;
        else
            failed++;
    }
    {
        double rss_per = started ? (double)(rss1 - rss0) / started : 0;
        double heap_per = started ? (double)(heap1 - heap0) / started : 0;
        double p50 = bench_quantile(lat, (size_t)woke, 0.5) / 1e6;
        double p99 = bench_quantile(lat, (size_t)woke, 0.99) / 1e6;
        double mx = bench_quantile(lat, (size_t)woke, 1.0) / 1e6;
        double span = started ? (rel_last - rel_first) / 1e6 : 0;
        double drain = started ? (last_return - rel_first) / 1e6 : 0;
        bench_row("  %7d %13.0f %14.0f %12ld %7.1f %7.1f %7.1f %16.0f %9.0f",
                  started, rss_per, heap_per, clients1 - clients0, p50, p99,
                  mx, span, drain);
        if (failed)
            bench_row("   (%d waiters did not get their lock)", failed);
        bench_json_begin(&j, "many_waiters");
        bench_json_int(&j, "waiters", started);
        bench_json_int(&j, "thread_stack_bytes", WAITER_STACK);
        bench_json_num(&j, "rss_bytes_per_waiter", rss_per);
        bench_json_num(&j, "heap_bytes_per_waiter", heap_per);
        bench_json_int(&j, "server_connections", clients1 - clients0);
        bench_json_num(&j, "wake_p50_ms", p50);
        bench_json_num(&j, "wake_p99_ms", p99);
        bench_json_num(&j, "wake_max_ms", mx);
        bench_json_num(&j, "release_span_ms", span);
        bench_json_num(&j, "drain_ms", drain);
        bench_json_int(&j, "failures", failed);
        bench_json_end(&j);
    }
out:
    for (i = 0; i < n; i++) {
        dlock_rlock_free(held[i]);
        dlock_rlock_free(w[i].l);
    }
    dlock_client_free(wc);
    dlock_client_free(holder);
    free(lat);
    free(th);
    free(held);
    free(w);
}

void bench_fig_many_threads(const bench_config *cfg, bench_raw *raw)
{
    throughput(cfg, raw);
    server_cpu(cfg, raw);
    waiters(cfg, raw);
}
