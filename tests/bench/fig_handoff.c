/*
 * dlock benchmarks — figure 12: contended hand-off (issue 39 section 1).
 *
 * N one-shot waiters of one client queue for one lock that another client
 * holds; it is released, and each waiter in turn takes the lock, works
 * 1 ms (a sleep: the loop's thread or the waiter's own is busy), unlocks
 * and is done. As blocking threads (N = 16, 64) and as operations of one
 * dlock_loop in poll mode on this thread (N = 16, 64, 1 000, 10 000).
 *
 *  - grants/s: N / (the last grant - the release), against the ideal
 *    1 / (work + RTT) of the same run (work: the sleeps' measured mean;
 *    RTT: one raw EVALSHA round trip, measured before each row). Goal:
 *    >= 0.8 of the ideal at N = 16, 64 and 1 000.
 *  - script calls per release: every script call the waiting client made
 *    from the release on (the unlocks included), per grant; refused: the
 *    attempts among them that were refused. One release costs its unlock
 *    and the next waiter's attempt: 2. Goal at N = 1 000: <= 2.
 *  - hand-off latency: from a holder's unlock call to the next grant,
 *    p50/p99. Goal at N = 10 000 (async): p50 <= 2 ms, p99 <= 10 ms.
 *
 * The waiters are all parked before the release (each made its two
 * refused attempts: the first, and the one after subscribing). Printed as
 * a table and JSON lines; goals are printed, never asserted.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define WORK_NS 1000000LL
#define WAIT_MS 300000 /* far above any chain of the figure */
#define PARK_TIMEOUT_NS (120 * 1000000000LL)
#define GATE_LEASE_MS 600000

/* One row's run. Grants are exclusive, so the grant sequence number g
 * (taken while holding) orders everything. */
typedef struct run {
    int n;
    dlock_client *waiter, *holder;
    bench_counts *counts;
    dlock_rlock **locks;  /* one handle per thread (async: locks[0]) */
    char (*owners)[24];   /* async owners */
    dlock_loop *lp;
    int64_t *grant_ns, *unlock_ns, work_ns;
    int granted, unlocked, errors;
} run;

static void work(run *r, int g)
{
    struct timespec ts = {0, WORK_NS};
    int64_t t = bench_now_ns();

    nanosleep(&ts, NULL);
    r->unlock_ns[g] = bench_now_ns();
    __atomic_add_fetch(&r->work_ns, r->unlock_ns[g] - t, __ATOMIC_RELAXED);
}

static int take_grant(run *r)
{
    int g = __atomic_fetch_add(&r->granted, 1, __ATOMIC_RELAXED);

    r->grant_ns[g] = bench_now_ns();
    return g;
}

/* ---- threads ------------------------------------------------------------------ */

typedef struct thread_arg {
    run *r;
    int i;
} thread_arg;

static void *thread_main(void *arg)
{
    thread_arg *a = arg;
    run *r = a->r;
    int g;

    if (dlock_try_lock(r->locks[a->i], WAIT_MS, BENCH_LEASE_MS) != 0) {
        __atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    g = take_grant(r);
    work(r, g);
    if (dlock_unlock(r->locks[a->i]) != 0)
        __atomic_add_fetch(&r->errors, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&r->unlocked, 1, __ATOMIC_RELAXED);
    return NULL;
}

/* ---- a loop's operations ---------------------------------------------------------- */

typedef struct op_arg {
    run *r;
    int i;
} op_arg;

static void on_unlocked(void *arg, dlock_op_id op, const dlock_result *res)
{
    op_arg *a = arg;

    (void)op;
    if (res->rc != 0)
        a->r->errors++;
    a->r->unlocked++;
}

static void on_locked(void *arg, dlock_op_id op, const dlock_result *res)
{
    op_arg *a = arg;
    run *r = a->r;

    (void)op;
    if (res->rc != 0) {
        r->errors++;
        r->unlocked++;
        return;
    }
    work(r, take_grant(r));
    if (dlock_unlock_async(r->lp, NULL, r->locks[0], r->owners[a->i], on_unlocked, a) != 0) {
        r->errors++;
        r->unlocked++;
    }
}

/* ---- the row --------------------------------------------------------------------- */

static int parked(run *r)
{
    return bench_counts_busy(r->counts) >= 2 * (uint64_t)r->n;
}

static void row(const bench_config *cfg, bench_raw *raw, int async, int n)
{
    run r;
    char name[64];
    pthread_t *th = NULL;
    thread_arg *ta = NULL;
    op_arg *oa = NULL;
    int64_t rtt = 0, t0 = 0, end, *lat = NULL;
    uint64_t evals0 = 0, busy0 = 0;
    double rate, ideal, work_ms, calls, refused;
    int i, started = 0, nlat = 0;
    bench_json j;

    memset(&r, 0, sizeof r);
    r.n = n;
    snprintf(name, sizeof name, "bench:handoff:%s:%d", async ? "async" : "threads", n);
    r.locks = calloc((size_t)n, sizeof(*r.locks));
    r.owners = calloc((size_t)n, sizeof(*r.owners));
    r.grant_ns = calloc((size_t)n, sizeof(int64_t));
    r.unlock_ns = calloc((size_t)n, sizeof(int64_t));
    lat = calloc((size_t)n, sizeof(int64_t));
    th = calloc((size_t)n, sizeof(*th));
    ta = calloc((size_t)n, sizeof(*ta));
    oa = calloc((size_t)n, sizeof(*oa));
    if (!r.locks || !r.owners || !r.grant_ns || !r.unlock_ns || !lat || !th || !ta || !oa ||
        bench_client_new(&r.waiter, cfg, BENCH_REDIS, 0, NULL, &r.counts) != 0 ||
        bench_client_new(&r.holder, cfg, BENCH_REDIS, 0, NULL, NULL) != 0)
        goto out;
    {
        dlock_rlock *gate = NULL;
        /* held far longer than the row runs: the waiters' TTL timers
         * (the gate's TTL, from their refusals) do not fire mid-chain */
        int ok = dlock_reentrant_new(&gate, r.holder, name) == 0 &&
                 dlock_lock(gate, GATE_LEASE_MS) == 0;
        if (!ok) {
            dlock_rlock_free(gate);
            goto out;
        }
        rtt = bench_raw_rtt_ns(raw, 300);
        for (i = 0; i < (async ? 1 : n); i++)
            if (dlock_reentrant_new(&r.locks[i], r.waiter, name) != 0)
                goto gate_out;
        if (async && dlock_loop_new(&r.lp, r.waiter, NULL) != 0)
            goto gate_out;
        if (async)
            bench_loop_room(r.lp, n);
        for (i = 0; i < n; i++) {
            if (async) {
                snprintf(r.owners[i], sizeof r.owners[i], "handoff-%d", i);
                oa[i].r = &r;
                oa[i].i = i;
                if (dlock_lock_async(r.lp, NULL, r.locks[0], r.owners[i], WAIT_MS,
                                     BENCH_LEASE_MS, on_locked, &oa[i]) != 0)
                    goto gate_out;
            } else {
                ta[i].r = &r;
                ta[i].i = i;
                if (pthread_create(&th[i], NULL, thread_main, &ta[i]) != 0)
                    goto gate_out;
            }
            started++;
        }
        end = bench_now_ns() + PARK_TIMEOUT_NS;
        while (!parked(&r) && bench_now_ns() < end) {
            if (async)
                dlock_loop_run(r.lp, 5);
            else
                bench_sleep_ms(5);
        }
        bench_sleep_ms(20); /* the last refusals reach their sleeps */
        if (async)
            dlock_loop_run(r.lp, 0);
        evals0 = bench_counts_evals(r.counts);
        busy0 = bench_counts_busy(r.counts);
        t0 = bench_now_ns();
        if (dlock_unlock(gate) != 0)
            r.errors++;
    gate_out:
        end = bench_now_ns() + PARK_TIMEOUT_NS;
        while (__atomic_load_n(&r.unlocked, __ATOMIC_RELAXED) < started &&
               bench_now_ns() < end) {
            if (async)
                dlock_loop_run(r.lp, 10);
            else
                bench_sleep_ms(5);
        }
        if (!async)
            for (i = 0; i < started; i++)
                pthread_join(th[i], NULL);
        dlock_force_unlock(gate, NULL);
        dlock_rlock_free(gate);
        if (started < n || r.granted < n) {
            bench_row("%-7s %6d  failed: %d of %d started, %d granted, %d errors",
                      async ? "async" : "threads", n, started, n, r.granted, r.errors);
            goto out;
        }
    }
    calls = (double)(bench_counts_evals(r.counts) - evals0) / n;
    refused = (double)(bench_counts_busy(r.counts) - busy0) / n;
    work_ms = (double)r.work_ns / n / 1e6;
    rate = n / ((double)(r.grant_ns[n - 1] - t0) / 1e9);
    ideal = 1e3 / (work_ms + (double)rtt / 1e6);
    for (i = 1; i < n; i++)
        lat[nlat++] = r.grant_ns[i] - r.unlock_ns[i - 1];
    bench_row("%-7s %6d  %9.0f  %7.0f  %5.2f  %7.3f  %6.3f  %7.2f  %7.2f  %6.2f  %6.2f  %d",
              async ? "async" : "threads", n, rate, ideal, rate / ideal, work_ms,
              (double)rtt / 1e6, calls, refused, bench_quantile(lat, (size_t)nlat, 0.5) / 1e6,
              bench_quantile(lat, (size_t)nlat, 0.99) / 1e6, r.errors);
    bench_json_begin(&j, "handoff");
    bench_json_str(&j, "driver", async ? "async" : "threads");
    bench_json_int(&j, "n", n);
    bench_json_num(&j, "grants_per_s", rate);
    bench_json_num(&j, "ideal_per_s", ideal);
    bench_json_num(&j, "ratio", rate / ideal);
    bench_json_num(&j, "work_ms", work_ms);
    bench_json_num(&j, "rtt_ms", (double)rtt / 1e6);
    bench_json_num(&j, "calls_per_release", calls);
    bench_json_num(&j, "refused_per_release", refused);
    bench_json_num(&j, "p50_ms", bench_quantile(lat, (size_t)nlat, 0.5) / 1e6);
    bench_json_num(&j, "p99_ms", bench_quantile(lat, (size_t)nlat, 0.99) / 1e6);
    bench_json_int(&j, "errors", r.errors);
    bench_json_end(&j);
out:
    dlock_loop_free(r.lp);
    for (i = 0; r.locks && i < n; i++)
        dlock_rlock_free(r.locks[i]);
    dlock_client_free(r.waiter);
    dlock_client_free(r.holder);
    free(r.locks);
    free(r.owners);
    free(r.grant_ns);
    free(r.unlock_ns);
    free(lat);
    free(th);
    free(ta);
    free(oa);
}

void bench_fig_handoff(const bench_config *cfg, bench_raw *raw)
{
    bench_heading("12. contended hand-off, redis, reentrant: N one-shot waiters of one client "
                  "on one lock, each lock, 1 ms of work, unlock (goals: >= 0.8 of the ideal "
                  "1 / (work + RTT) at N = 16, 64, 1 000; <= 2 calls per release at "
                  "N = 1 000; async N = 10 000: p50 <= 2 ms, p99 <= 10 ms)",
                  "driver       N   grants/s    ideal  ratio  work ms  RTT ms  "
                  "calls/r  refus/r  p50 ms  p99 ms  errors");
    row(cfg, raw, 0, 16);
    row(cfg, raw, 0, 64);
    row(cfg, raw, 1, 16);
    row(cfg, raw, 1, 64);
    row(cfg, raw, 1, 1000);
    row(cfg, raw, 1, 10000);
}
