/*
 * dlock benchmarks — figure 11: the asynchronous API (api/dlock/async.h).
 *
 *  a. async_throughput: uncontended lock+unlock pairs per second from ONE
 *     thread with K = 1, 8, 64, 512 operations in flight on one
 *     multiplexed connection (poll mode), beside the blocking API with
 *     T = 1 and 128 threads on the same kind of client in the same run,
 *     and the client's CPU per pair; with the server's CPU per pair at
 *     K = 64 and the ceiling it implies (1 / server CPU per pair); and
 *     the pairs per second of a client whose loop runs without slices
 *     (loop_slice_ms 0), the mean of 3 alternating runs per side.
 *     Goals: K = 64 >= 1.5 x blocking T = 128; K = 1 >= 0.95 x T = 1;
 *     slices cost nothing (>= 1 x the run without).
 *  b. async_pending: N waits on N locks held by another client, on one
 *     loop thread: heap and RSS per pending operation, the process's
 *     threads, the server connections of the waiting client; then every
 *     lock released at once (force_unlock from 8 threads): wake-up latency
 *     p50/p99/max from each release to its callback. Goal at N = 10 000:
 *     heap <= 1 024 B per operation, p99 <= 10 ms.
 *  c. async_cancel: N = 10 000 waits for fair locks held elsewhere, all
 *     cancelled: the time until every callback ran, and what is left on
 *     the server (fair queues, pub/sub channels). Goal: 0 and 0.
 * Printed as tables and JSON lines; goals are printed, never asserted.
 */
#include <dirent.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <dlock/redis.h>

#include "bench.h"

#define RUN_MS 1000
#define SLICE_ROUNDS 3 /* 11a: alternating runs with and without slices */
#define RELEASERS 8

static int client_mux1(dlock_client **out, const bench_config *cfg)
{
    return bench_client_new(out, cfg, BENCH_REDIS, 0, NULL, NULL);
}

/* ---- a. throughput ----------------------------------------------------------- */

typedef struct slot {
    struct pump *p;
    dlock_rlock *l;
} slot;

typedef struct pump {
    dlock_loop *lp;
    int64_t end_ns;
    long pairs, errors;
    int live;
    int last_rc; /* the last error's code */
} pump;

static void on_unlocked(void *arg, dlock_op_id op, const dlock_result *r);

static void on_locked(void *arg, dlock_op_id op, const dlock_result *r)
{
    slot *s = arg;

    (void)op;
    if (r->rc != 0) {
        s->p->errors++;
        s->p->last_rc = r->rc;
        s->p->live--;
        return;
    }
    if (dlock_unlock_async(s->p->lp, NULL, s->l, r->owner, on_unlocked, s) != 0) {
        s->p->errors++;
        s->p->live--;
    }
}

static void on_unlocked(void *arg, dlock_op_id op, const dlock_result *r)
{
    slot *s = arg;

    (void)op;
    if (r->rc != 0) {
        s->p->errors++;
        s->p->last_rc = r->rc;
    } else {
        s->p->pairs++;
    }
    if (bench_now_ns() >= s->p->end_ns ||
        dlock_lock_async(s->p->lp, NULL, s->l, NULL, 0, 0, on_locked, s) != 0)
        s->p->live--;
}

/* Pairs per second and client CPU us per pair with k in flight. */
static double async_rate(dlock_client *c, int k, double *cpu_us)
{
    slot *slots = calloc((size_t)k, sizeof(*slots));
    pump p = {0};
    int64_t t0 = 0, c0;
    int i;

    if (!slots || dlock_loop_new(&p.lp, c, NULL) != 0) {
        free(slots);
        return 0;
    }
    bench_loop_room(p.lp, k);
    for (i = 0; i < k; i++) {
        char name[64];

        snprintf(name, sizeof name, "bench:async:%d:%d", k, i);
        slots[i].p = &p;
        if (dlock_reentrant_new(&slots[i].l, c, name) != 0)
            goto out;
    }
    t0 = bench_now_ns();
    c0 = bench_thread_cpu_ns();
    p.end_ns = t0 + (int64_t)RUN_MS * 1000000;
    for (i = 0; i < k; i++)
        if (dlock_lock_async(p.lp, NULL, slots[i].l, NULL, 0, 0, on_locked, &slots[i]) == 0)
            p.live++;
    while (p.live > 0)
        dlock_loop_run(p.lp, 10);
    *cpu_us = p.pairs ? (double)(bench_thread_cpu_ns() - c0) / 1000.0 / (double)p.pairs : 0;
    t0 = bench_now_ns() - t0;
out:
    dlock_loop_free(p.lp);
    for (i = 0; i < k; i++)
        dlock_rlock_free(slots[i].l);
    free(slots);
    if (p.errors)
        fprintf(stderr, "bench: async: %ld errors at K = %d (the last: %s)\n", p.errors, k,
                dlock_errname(p.last_rc));
    return t0 > 0 ? (double)p.pairs * 1e9 / (double)t0 : 0;
}

typedef struct blocking_thread {
    dlock_client *c;
    int idx, t;
    int64_t end_ns;
    long pairs;
    pthread_t th;
} blocking_thread;

static void *blocking_run(void *arg)
{
    blocking_thread *b = arg;
    dlock_rlock *l = NULL;
    char name[64];

    snprintf(name, sizeof name, "bench:async-blocking:%d:%d", b->t, b->idx);
    if (dlock_reentrant_new(&l, b->c, name) != 0)
        return NULL;
    while (bench_now_ns() < b->end_ns) {
        if (dlock_lock(l, 0) == 0 && dlock_unlock(l) == 0)
            b->pairs++;
    }
    dlock_rlock_free(l);
    return NULL;
}

static double blocking_rate(dlock_client *c, int t)
{
    blocking_thread *th = calloc((size_t)t, sizeof(*th));
    int64_t t0 = bench_now_ns();
    long pairs = 0;
    int i;

    if (!th)
        return 0;
    for (i = 0; i < t; i++) {
        th[i] = (blocking_thread){.c = c, .idx = i, .t = t,
                                  .end_ns = t0 + (int64_t)RUN_MS * 1000000};
        pthread_create(&th[i].th, NULL, blocking_run, &th[i]);
    }
    for (i = 0; i < t; i++) {
        pthread_join(th[i].th, NULL);
        pairs += th[i].pairs;
    }
    free(th);
    return (double)pairs * 1e9 / (double)(bench_now_ns() - t0);
}

static void throughput(const bench_config *cfg, bench_raw *raw)
{
    static const int ks[] = {1, 8, 64, 512};
    dlock_client_options unbounded = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL, *c0 = NULL;
    double b1, b128, rate[4], rate0[4] = {0}, cpu[4] = {0}, cpu0, s0, s1, server_us = 0;
    size_t i;
    bench_json j;

    /* The baseline of the loop's slices: a client whose loop runs until
     * nothing is left (loop_slice_ms 0). */
    unbounded.loop_slice_ms = 0;
    if (client_mux1(&c, cfg) != 0 ||
        bench_client_new(&c0, cfg, BENCH_REDIS, 0, &unbounded, NULL) != 0) {
        dlock_client_free(c);
        return;
    }
    b1 = blocking_rate(c, 1);
    b128 = blocking_rate(c, 128);
    for (i = 0; i < 4; i++) {
        int r;

        s0 = bench_raw_server_cpu_s(raw);
        rate[i] = async_rate(c, ks[i], &cpu[i]);
        s1 = bench_raw_server_cpu_s(raw);
        if (ks[i] == 64 && rate[i] > 0)
            server_us = (s1 - s0) * 1e6 / (rate[i] * RUN_MS / 1000.0);
        /* The slices' cost: alternating runs with and without them, so
         * that the machine's noise falls on both sides alike. */
        rate0[i] = async_rate(c0, ks[i], &cpu0);
        for (r = 1; r < SLICE_ROUNDS; r++) {
            rate[i] += async_rate(c, ks[i], &cpu0);
            rate0[i] += async_rate(c0, ks[i], &cpu0);
        }
        rate[i] /= SLICE_ROUNDS;
        rate0[i] /= SLICE_ROUNDS;
    }
    dlock_client_free(c);
    dlock_client_free(c0);
    bench_heading("11a. async throughput, redis, reentrant, uncontended: one thread, K in "
                  "flight on one multiplexed connection, vs blocking threads and vs a "
                  "loop without slices (loop_slice_ms 0; pairs/s: the mean of 3 "
                  "alternating runs per side) (same run)",
                  "   K     pairs/s  client us/pair   vs blocking    target  "
                  "slice 0 pairs/s  vs slice 0");
    for (i = 0; i < 4; i++) {
        int k = ks[i];
        double base = k == 1 ? b1 : b128;
        const char *against = k == 1 ? "T=1" : "T=128";
        double want = k == 1 ? 0.95 : 1.5;

        bench_row("%4d  %10.0f  %14.1f   %5.2f x %-5s %-6s  %15.0f  %8.2f x", k, rate[i],
                  cpu[i], base > 0 ? rate[i] / base : 0, against,
                  k == 1 || k == 64 ? bench_verdict(1, rate[i] >= want * base) : "-",
                  rate0[i], rate0[i] > 0 ? rate[i] / rate0[i] : 0);
        bench_json_begin(&j, "async_throughput");
        bench_json_int(&j, "k", k);
        bench_json_num(&j, "pairs_per_s", rate[i]);
        bench_json_num(&j, "client_cpu_us_per_pair", cpu[i]);
        bench_json_num(&j, "blocking_t1_pairs_per_s", b1);
        bench_json_num(&j, "blocking_t128_pairs_per_s", b128);
        bench_json_num(&j, "slice0_pairs_per_s", rate0[i]);
        bench_json_end(&j);
    }
    bench_row("blocking: T=1 %.0f pairs/s, T=128 %.0f pairs/s; server CPU per pair at K=64: "
              "%.1f us, ceiling %.0f pairs/s", b1, b128, server_us,
              server_us > 0 ? 1e6 / server_us : 0);
}

/* ---- b. pending waits ------------------------------------------------------------- */

/* Runs lp until every wait started has made its first attempt and sleeps:
 * nothing due and its fd quiet for 20 runs in a row (a run does one slice,
 * so a fixed number of runs would leave most of 10 000 starts unrun), at
 * most 60 s. */
static void settle(dlock_loop *lp)
{
    int64_t end = bench_now_ns() + 60 * 1000000000LL;
    int quiet = 0;

    while (quiet < 20 && bench_now_ns() < end) {
        struct pollfd p = {dlock_loop_fd(lp), POLLIN, 0};

        dlock_loop_run(lp, 5);
        quiet = dlock_loop_timeout_ms(lp) != 0 && poll(&p, 1, 0) == 0 ? quiet + 1 : 0;
    }
}

typedef struct pending {
    dlock_rlock *mine, *theirs;
    int64_t released_ns, woke_ns;
    int rc;
} pending;

typedef struct release_job {
    pending *p;
    int from, to;
} release_job;

static void on_pending_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    pending *p = arg;

    (void)op;
    p->woke_ns = bench_now_ns();
    p->rc = r->rc;
}

static void *release_run(void *arg)
{
    release_job *j = arg;
    int i;

    for (i = j->from; i < j->to; i++) {
        __atomic_store_n(&j->p[i].released_ns, bench_now_ns(), __ATOMIC_RELAXED);
        dlock_force_unlock(j->p[i].theirs, NULL);
    }
    return NULL;
}

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

void bench_loop_room(dlock_loop *lp, int n)
{
    if (dlock_loop_max_in_flight(lp) < (size_t)n)
        dlock_loop_set_max_in_flight(lp, (size_t)n);
}

long bench_max_map_count(void)
{
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    long v = 0;

    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = 0;
        fclose(f);
    }
    return v;
}

static void pending_run(const bench_config *cfg, bench_raw *raw, int n)
{
    dlock_client *waiter = NULL, *holder = NULL;
    pending *p = calloc((size_t)n, sizeof(*p));
    int64_t *lat = calloc((size_t)n, sizeof(*lat));
    release_job jobs[RELEASERS];
    pthread_t rel[RELEASERS];
    dlock_loop *lp = NULL;
    long rss0, rss1, conns0, conns1;
    struct mallinfo2 m0, m1;
    int i, ok = 0, threads;
    size_t nlat = 0;
    int64_t end;
    bench_json j;

    if (!p || !lat || client_mux1(&waiter, cfg) != 0 || client_mux1(&holder, cfg) != 0)
        goto out;
    for (i = 0; i < n; i++) {
        char name[64];

        snprintf(name, sizeof name, "bench:async-pending:%d:%d", n, i);
        if (dlock_reentrant_new(&p[i].mine, waiter, name) != 0 ||
            dlock_reentrant_new(&p[i].theirs, holder, name) != 0 ||
            dlock_lock(p[i].theirs, 0) != 0)
            goto out;
        p[i].rc = 1;
    }
    if (dlock_loop_new(&lp, waiter, NULL) != 0)
        goto out;
    bench_loop_room(lp, n);
    conns0 = bench_server_clients(raw);
    malloc_trim(0);
    m0 = mallinfo2();
    rss0 = bench_rss_bytes();
    for (i = 0; i < n; i++)
        dlock_lock_async(lp, NULL, p[i].mine, NULL, DLOCK_WAIT_FOREVER, 0, on_pending_done,
                         &p[i]);
    settle(lp);
    m1 = mallinfo2();
    rss1 = bench_rss_bytes();
    conns1 = bench_server_clients(raw);
    threads = threads_now();
    for (i = 0; i < RELEASERS; i++) {
        jobs[i] = (release_job){p, n * i / RELEASERS, n * (i + 1) / RELEASERS};
        pthread_create(&rel[i], NULL, release_run, &jobs[i]);
    }
    /* 30 s, and 1 s more per 10 000 waits */
    end = bench_now_ns() + (30 + n / 10000) * 1000000000LL;
    while (dlock_loop_pending(lp) > 0 && bench_now_ns() < end)
        dlock_loop_run(lp, 10);
    for (i = 0; i < RELEASERS; i++)
        pthread_join(rel[i], NULL);
    for (i = 0; i < n; i++) {
        if (p[i].rc == 0) {
            ok++;
            lat[nlat++] = p[i].woke_ns - p[i].released_ns;
        }
    }
    bench_row("%6d  %12ld  %13ld  %7d  %11ld  %6.1f  %6.1f  %6.1f  %d/%d", n,
              (long)((long)(m1.uordblks - m0.uordblks) / n), (rss1 - rss0) / n, threads,
              conns1 - conns0 + 1, bench_quantile(lat, nlat, 0.50) / 1e6,
              bench_quantile(lat, nlat, 0.99) / 1e6, bench_quantile(lat, nlat, 1.0) / 1e6,
              ok, n);
    bench_json_begin(&j, "async_pending");
    bench_json_int(&j, "n", n);
    bench_json_int(&j, "heap_bytes_per_op", (long long)(m1.uordblks - m0.uordblks) / n);
    bench_json_int(&j, "rss_bytes_per_op", (rss1 - rss0) / n);
    bench_json_int(&j, "threads", threads);
    bench_json_int(&j, "acquired", ok);
    bench_json_num(&j, "p50_ms", bench_quantile(lat, nlat, 0.50) / 1e6);
    bench_json_num(&j, "p99_ms", bench_quantile(lat, nlat, 0.99) / 1e6);
    bench_json_num(&j, "max_ms", bench_quantile(lat, nlat, 1.0) / 1e6);
    bench_json_end(&j);
out:
    dlock_loop_free(lp);
    for (i = 0; p && i < n; i++) {
        if (p[i].rc == 0)
            dlock_unlock(p[i].mine);
        dlock_rlock_free(p[i].mine);
        dlock_rlock_free(p[i].theirs);
    }
    dlock_client_free(waiter);
    dlock_client_free(holder);
    free(lat);
    free(p);
}

/* ---- c. cancels --------------------------------------------------------------------- */

void bench_waits_free(dlock_loop *lp, dlock_client *waiter, dlock_client *holder,
                      dlock_rlock **mine, dlock_rlock **theirs, int n)
{
    int i;

    dlock_loop_free(lp);
    for (i = 0; i < n; i++) {
        if (theirs && theirs[i])
            dlock_force_unlock(theirs[i], NULL);
        if (mine)
            dlock_rlock_free(mine[i]);
        if (theirs)
            dlock_rlock_free(theirs[i]);
    }
    dlock_client_free(waiter);
    dlock_client_free(holder);
    free(mine);
    free(theirs);
}

typedef struct cancelled {
    int calls, canceled;
} cancelled;

static void on_cancel_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    cancelled *c = arg;

    (void)op;
    c->calls++;
    c->canceled += r->rc == DLOCK_ECANCELED;
}

static void cancel_run(const bench_config *cfg, bench_raw *raw, int n)
{
    dlock_client *waiter = NULL, *holder = NULL;
    dlock_rlock **mine = calloc((size_t)n, sizeof(*mine));
    dlock_rlock **theirs = calloc((size_t)n, sizeof(*theirs));
    dlock_op_id *ops = calloc((size_t)n, sizeof(*ops));
    dlock_loop *lp = NULL;
    cancelled done = {0, 0};
    long long queues, channels;
    int64_t t0, t1, end;
    int i;
    bench_json j;

    if (!mine || !theirs || !ops || client_mux1(&waiter, cfg) != 0 ||
        client_mux1(&holder, cfg) != 0)
        goto out;
    for (i = 0; i < n; i++) {
        char name[64];

        snprintf(name, sizeof name, "bench:async-cancel:%d", i);
        if (dlock_fair_new(&mine[i], waiter, name) != 0 ||
            dlock_fair_new(&theirs[i], holder, name) != 0 || dlock_lock(theirs[i], 0) != 0)
            goto out;
    }
    if (dlock_loop_new(&lp, waiter, NULL) != 0)
        goto out;
    bench_loop_room(lp, n);
    for (i = 0; i < n; i++)
        dlock_lock_async(lp, &ops[i], mine[i], NULL, DLOCK_WAIT_FOREVER, 0, on_cancel_done,
                         &done);
    settle(lp);
    t0 = bench_now_ns();
    for (i = 0; i < n; i++)
        dlock_op_cancel(lp, ops[i]);
    end = t0 + 60 * 1000000000LL;
    while (dlock_loop_pending(lp) > 0 && bench_now_ns() < end)
        dlock_loop_run(lp, 10);
    t1 = bench_now_ns();
    queues = bench_raw_count(raw, "KEYS %s", "redisson_lock_queue:{bench:async-cancel:*");
    channels = bench_raw_count(raw, "PUBSUB CHANNELS %s", "*bench:async-cancel*");
    bench_row("%6d  %12.1f  %9d  %14lld  %16lld", n, (double)(t1 - t0) / 1e6, done.canceled,
              queues, channels);
    bench_json_begin(&j, "async_cancel");
    bench_json_int(&j, "n", n);
    bench_json_num(&j, "all_callbacks_ms", (double)(t1 - t0) / 1e6);
    bench_json_int(&j, "canceled", done.canceled);
    bench_json_int(&j, "queues_left", queues);
    bench_json_int(&j, "channels_left", channels);
    bench_json_end(&j);
out:
    bench_waits_free(lp, waiter, holder, mine, theirs, n);
    free(ops);
}

void bench_fig_async(const bench_config *cfg, bench_raw *raw)
{
    throughput(cfg, raw);
    bench_heading("11b. async pending: N waits on one loop thread for locks held elsewhere; "
                  "then all released at once (goal at N = 100 000: heap <= 1024 B/op, "
                  "RSS <= 2048 B/op)",
                  "     N  heap B/op     RSS B/op  threads  connections  p50 ms  p99 ms  "
                  "max ms  acquired");
    pending_run(cfg, raw, 1000);
    pending_run(cfg, raw, 10000);
    /* A pending wait holds no fiber (a heap record: api/dlock/async.h), so
     * no memory mapping either: 100 000 run whatever vm.max_map_count;
     * 1 000 000 (two million lock objects, one minute or more) when
     * DLOCK_BENCH_MILLION is set. */
    pending_run(cfg, raw, 100000);
    if (getenv("DLOCK_BENCH_MILLION"))
        pending_run(cfg, raw, 1000000);
    else
        bench_row("N = 1 000 000: not run (set DLOCK_BENCH_MILLION=1)");
    bench_heading("11c. async cancel: N waits for fair locks held elsewhere, all cancelled "
                  "(goal: nothing left on the server)",
                  "     N  all done ms   canceled  fair queues left  channels left");
    cancel_run(cfg, raw, 10000);
}
