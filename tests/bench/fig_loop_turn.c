/*
 * dlock benchmarks — figure 11d: how long dlock holds up the application's
 * event loop.
 *
 * An application's loop (here a small poll() loop driving a dlock_loop in
 * hook mode, as the libuv, libevent and libev adapters do) also runs a
 * timer of its own every 10 ms. Two loads on one loop:
 *  - chains: K = 10 000 uncontended lock+unlock chains (each callback starts
 *    the next operation) for RUN_MS;
 *  - starts: N = 100 000 one-shot lock+unlock pairs started at once, run
 *    to the end (an operation holds a fiber, two mappings, only while it
 *    runs: the loop's pool has at most 1 024).
 * For each: the longest single dlock call (dlock_loop_on_fd / _on_timer,
 * and each starter of the application's first burst), the longest gap
 * between two ticks of the 10 ms timer from the end of that burst (the
 * burst is the application's own work: it holds its loop however dlock
 * runs), the starts refused (DLOCK_EAGAIN, DLOCK_ENOMEM), and the pairs per
 * second (and, since a loaded machine preempts a call at any point, the
 * calls' 99th percentile, how many took above 5 ms and the loop thread's
 * CPU time in the longest), with the client's loop_slice_ms at 0 (no bound: the baseline, a
 * call runs until nothing is left) and at its default, in the same run, on
 * the mock and on Redis. Goals (default slice): longest call <= 5 ms,
 * longest tick gap <= 20 ms, pairs/s not below the baseline's.
 * And 11f: the chains' load with 1 000 in flight on a pooled client
 * (multiplex=0, 8 connections) on Redis: operations queue for a connection
 * on their fibers, which must not hold the loop's thread (goal: the same).
 * And 11e (--only loop_budget): N waits of 500 ms for locks held
 * elsewhere, started at once on one loop: how late each is called back
 * after its starter + wait (goal: within the client's budget_slack_ms).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define RUN_MS 2000 /* chains: per side, in ROUNDS alternating runs */
#define ROUNDS 4
#define TICK_MS 10
#define CHAINS 10000
#define STARTS 100000
#define POOL_CHAINS 1000 /* 11f: in flight on */
#define POOL_CONNS 8     /* connections */
#define POOL_WAIT_MS 10000

/* The application's loop: dlock's fd and timer (the hooks), its own tick,
 * and what it measures. */
typedef struct host {
    dlock_loop *lp;
    int fd;              /* what dlock asked to watch, or -1 */
    int64_t timer_ns;    /* dlock's timer, due at, or -1 */
    int64_t tick_ns;     /* the application's next tick */
    int64_t last_tick_ns;
    int64_t longest_call_ns, longest_gap_ns;
    int64_t longest_cpu_ns; /* the loop thread's CPU time in its longest call */
    int64_t most_cpu_ns;    /* the most CPU time one call used */
    long calls, calls_over;  /* dlock calls, and those above 5 ms */
    int64_t *call_ns;        /* each call's time */
    size_t ncall, capcall;
    long pairs, errors;      /* over the side's runs */
    long refused;            /* starts refused (each an error too) */
    int last_error;          /* the last failed operation's code */
    int64_t burst_ns;        /* the application's bursts of starters */
    long burst_starts;       /* and how many starters they called */
    int64_t elapsed_ns;
} host;

static void h_add_read(void *d, int fd)
{
    ((host *)d)->fd = fd;
}

static void h_del_read(void *d, int fd)
{
    (void)fd;
    ((host *)d)->fd = -1;
}

static void h_timer(void *d, int64_t ms)
{
    ((host *)d)->timer_ns = ms < 0 ? -1 : bench_now_ns() + ms * 1000000;
}

/* Counts a dlock call that took t ns of which cpu on this thread. */
static void count_call(host *h, int64_t t, int64_t cpu)
{
    h->calls++;
    h->calls_over += t > 5000000;
    if (h->ncall == h->capcall) {
        size_t cap = h->capcall ? 2 * h->capcall : 4096;
        int64_t *v = realloc(h->call_ns, cap * sizeof(*v));

        if (v) {
            h->call_ns = v;
            h->capcall = cap;
        }
    }
    if (h->ncall < h->capcall)
        h->call_ns[h->ncall++] = t;
    if (t > h->longest_call_ns) {
        h->longest_call_ns = t;
        h->longest_cpu_ns = cpu;
    }
    if (cpu > h->most_cpu_ns)
        h->most_cpu_ns = cpu;
}

static void timed_call(host *h, int timer)
{
    int64_t t0 = bench_now_ns(), c0 = bench_thread_cpu_ns();

    if (timer)
        dlock_loop_on_timer(h->lp);
    else
        dlock_loop_on_fd(h->lp, h->fd, DLOCK_LOOP_READ);
    count_call(h, bench_now_ns() - t0, bench_thread_cpu_ns() - c0);
}

/* A gap between ticks, ending now. */
static void tick_gap(host *h, int64_t now)
{
    if (now - h->last_tick_ns > h->longest_gap_ns)
        h->longest_gap_ns = now - h->last_tick_ns;
    h->last_tick_ns = now;
}

/* One iteration of the application's loop, as libuv's: due timers (its
 * tick, dlock's), then a poll for dlock's fd until the next timer. */
static void host_turn(host *h)
{
    int64_t now = bench_now_ns(), next = h->tick_ns, wait_ms;
    struct pollfd p = {h->fd, POLLIN, 0};

    if (now >= h->tick_ns) {
        tick_gap(h, now);
        h->tick_ns = now + (int64_t)TICK_MS * 1000000;
        next = h->tick_ns;
    }
    if (h->timer_ns >= 0 && h->timer_ns <= now) {
        h->timer_ns = -1;
        timed_call(h, 1);
    }
    if (h->timer_ns >= 0 && h->timer_ns < next)
        next = h->timer_ns;
    now = bench_now_ns();
    wait_ms = next > now ? (next - now + 999999) / 1000000 : 0;
    if (poll(&p, 1, (int)wait_ms) > 0)
        timed_call(h, 0);
}

typedef struct chain {
    host *h;
    dlock_rlock *l;
    int64_t end_ns; /* chains: start no pair after; starts: 0, one pair */
    int64_t wait_ms; /* each lock's: 0, or on a pool its queue's budget */
    long *pairs, *errors, *refused;
    int *live;
} chain;

static void on_unlocked(void *arg, dlock_op_id op, const dlock_result *r);

static void on_locked(void *arg, dlock_op_id op, const dlock_result *r)
{
    chain *c = arg;

    (void)op;
    if (r->rc != 0 || dlock_unlock_async(c->h->lp, NULL, c->l, r->owner, on_unlocked, c) != 0) {
        c->h->last_error = r->rc;
        ++*c->errors;
        --*c->live;
    }
}

static void on_unlocked(void *arg, dlock_op_id op, const dlock_result *r)
{
    chain *c = arg;

    (void)op;
    if (r->rc != 0) {
        c->h->last_error = r->rc;
        ++*c->errors;
    } else
        ++*c->pairs;
    if (bench_now_ns() >= c->end_ns) {
        --*c->live;
    } else if (dlock_lock_async(c->h->lp, NULL, c->l, NULL, c->wait_ms, BENCH_LEASE_MS,
                                on_locked, c) != 0) {
        ++*c->refused;
        --*c->live;
    }
}

/* One run on a hook-mode loop of a client of which (loop_slice_ms
 * slice_ms; pool > 0: pooled, that many connections), added to h: n
 * chains for run_ms (> 0), or n one-shot pairs (run_ms 0). 0, or -1 when
 * it could not run. */
static int turn_run(const bench_config *cfg, bench_backend which, int pool, int64_t slice_ms,
                    int n, int run_ms, int round, host *h)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    chain *ch = calloc((size_t)n, sizeof(*ch));
    dlock_loop_hooks hooks = {DLOCK_LOOP_HOOKS_VERSION, h, h_add_read, h_del_read,
                              NULL, NULL, h_timer, NULL, NULL};
    int live = 0, i, rc = -1;
    int64_t t0, end;

    h->lp = NULL;
    h->fd = -1;
    h->timer_ns = -1;
    o.loop_slice_ms = slice_ms;
    if (!ch || bench_client_new(&c, cfg, which, pool, &o, NULL) != 0 ||
        dlock_loop_new(&h->lp, c, &hooks) != 0)
        goto out;
    bench_loop_room(h->lp, n);
    for (i = 0; i < n; i++) {
        char name[80];

        snprintf(name, sizeof name, "bench:turn:%d:%lld:%d:%d:%d", pool, (long long)slice_ms,
                 round, n, i);
        /* Uncontended locks: a wait budget is only what a borrower on
         * a pool spends queueing for a connection (with none it has
         * budget_slack_ms, which 1 000 queued behind 8 overrun). */
        ch[i] = (chain){h, NULL, 0, pool > 0 ? POOL_WAIT_MS : 0, &h->pairs, &h->errors,
                        &h->refused, &live};
        if (dlock_reentrant_new(&ch[i].l, c, name) != 0)
            goto out;
    }
    t0 = bench_now_ns();
    end = run_ms > 0 ? t0 + (int64_t)run_ms * 1000000 : 0;
    for (i = 0; i < n; i++) {
        int64_t s0 = bench_now_ns(), c0 = bench_thread_cpu_ns();

        ch[i].end_ns = end;
        if (dlock_lock_async(h->lp, NULL, ch[i].l, NULL, ch[i].wait_ms, BENCH_LEASE_MS, on_locked,
                             &ch[i]) == 0)
            live++;
        else
            h->refused++;
        count_call(h, bench_now_ns() - s0, bench_thread_cpu_ns() - c0);
    }
    h->burst_ns += bench_now_ns() - t0;
    h->burst_starts += n;
    /* The ticks from the end of the burst (the application's own work);
     * the pairs per second over the burst and the rest. */
    h->tick_ns = bench_now_ns() + (int64_t)TICK_MS * 1000000;
    h->last_tick_ns = bench_now_ns();
    while (live > 0 && bench_now_ns() < t0 + 120 * 1000000000LL)
        host_turn(h);
    tick_gap(h, bench_now_ns()); /* the stretch since the last tick */
    h->elapsed_ns += bench_now_ns() - t0;
    h->errors += live;
    rc = 0;
out:
    dlock_loop_free(h->lp);
    for (i = 0; ch && i < n; i++)
        dlock_rlock_free(ch[i].l);
    dlock_client_free(c);
    free(ch);
    return rc;
}

static double pairs_per_s(const host *h)
{
    return h->elapsed_ns > 0 ? (double)h->pairs * 1e9 / (double)h->elapsed_ns : 0;
}

/* rounds alternating runs of each side, the baseline first. */
static void turn_rows(const bench_config *cfg, bench_backend which, int pool, const char *load,
                      int n, int run_ms, int rounds)
{
    static const dlock_client_options defaults = DLOCK_CLIENT_OPTIONS_INIT;
    host base, mine;
    double p99;
    int r, ok = 1;
    bench_json j;

    memset(&base, 0, sizeof base);
    memset(&mine, 0, sizeof mine);
    for (r = 0; r < rounds && ok; r++)
        ok = turn_run(cfg, which, pool, 0, n, run_ms, r, &base) == 0 &&
             turn_run(cfg, which, pool, defaults.loop_slice_ms, n, run_ms, r, &mine) == 0;
    if (!ok) {
        bench_row("%-6s %-7s %7d  not run (no client or loop)", bench_backend_name(which),
                  load, n);
        goto out;
    }
    p99 = bench_quantile(mine.call_ns, mine.ncall, 0.99) / 1e6;
    bench_row("%-6s %-7s %7d  %9.1f %9.1f  %9.1f %9.1f  %9.0f %9.0f  %5.2f x  %s",
              bench_backend_name(which), load, n, base.longest_call_ns / 1e6,
              mine.longest_call_ns / 1e6, base.longest_gap_ns / 1e6,
              mine.longest_gap_ns / 1e6, pairs_per_s(&base), pairs_per_s(&mine),
              pairs_per_s(&base) > 0 ? pairs_per_s(&mine) / pairs_per_s(&base) : 0,
              bench_verdict(1, mine.longest_gap_ns <= 20000000 &&
                                   (pool > 0 || /* 11f's goal is the gap alone */
                                    (mine.longest_call_ns <= 5000000 && mine.refused == 0 &&
                                     pairs_per_s(&mine) >= pairs_per_s(&base) * 0.95))));
    bench_row("  sliced: %ld calls, p99 %.1f ms, %ld above 5 ms, the longest's CPU %.1f ms, "
              "the most CPU of a call %.1f ms; a starter of the burst %.1f us; errors: "
              "baseline %ld (%s), sliced %ld (%s); starts refused: baseline %ld, sliced %ld",
              mine.calls, p99, mine.calls_over, mine.longest_cpu_ns / 1e6,
              mine.most_cpu_ns / 1e6,
              mine.burst_starts > 0 ? (double)mine.burst_ns / 1e3 / (double)mine.burst_starts : 0,
              base.errors, base.last_error ? dlock_errname(base.last_error) : "-", mine.errors,
              mine.last_error ? dlock_errname(mine.last_error) : "-", base.refused, mine.refused);
    bench_json_begin(&j, "async_loop_turn");
    bench_json_str(&j, "backend", bench_backend_name(which));
    bench_json_str(&j, "load", load);
    bench_json_int(&j, "pool", pool);
    bench_json_int(&j, "n", n);
    bench_json_int(&j, "rounds", rounds);
    bench_json_int(&j, "slice_ms", defaults.loop_slice_ms);
    bench_json_num(&j, "longest_call_ms", mine.longest_call_ns / 1e6);
    bench_json_num(&j, "longest_tick_gap_ms", mine.longest_gap_ns / 1e6);
    bench_json_num(&j, "pairs_per_s", pairs_per_s(&mine));
    bench_json_int(&j, "calls", mine.calls);
    bench_json_int(&j, "calls_over_5ms", mine.calls_over);
    bench_json_num(&j, "p99_call_ms", p99);
    bench_json_num(&j, "longest_call_cpu_ms", mine.longest_cpu_ns / 1e6);
    bench_json_num(&j, "most_call_cpu_ms", mine.most_cpu_ns / 1e6);
    bench_json_num(&j, "burst_start_us", mine.burst_starts > 0
                                             ? (double)mine.burst_ns / 1e3 / (double)mine.burst_starts
                                             : 0);
    bench_json_num(&j, "baseline_longest_call_ms", base.longest_call_ns / 1e6);
    bench_json_num(&j, "baseline_longest_tick_gap_ms", base.longest_gap_ns / 1e6);
    bench_json_num(&j, "baseline_pairs_per_s", pairs_per_s(&base));
    bench_json_int(&j, "errors", base.errors + mine.errors);
    bench_json_int(&j, "refused", base.refused + mine.refused);
    bench_json_end(&j);
out:
    free(base.call_ns);
    free(mine.call_ns);
}

/* ---- 11e. budgets ------------------------------------------------------------ */

#define BUDGET_WAIT_MS 500

typedef struct budget_op {
    int64_t started_ns, called_ns;
    int rc;
} budget_op;

static void on_budget_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    budget_op *b = arg;

    (void)op;
    b->called_ns = bench_now_ns();
    b->rc = r->rc;
}

/* n waits of BUDGET_WAIT_MS for n locks held by another client, started
 * at once on one loop (poll mode), on which: how late each is called back
 * after its starter + wait. */
static void budget_row(const bench_config *cfg, bench_backend which, int n)
{
    static const dlock_client_options defaults = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *waiter = NULL, *holder = NULL;
    dlock_rlock **mine = calloc((size_t)n, sizeof(*mine));
    dlock_rlock **theirs = calloc((size_t)n, sizeof(*theirs));
    budget_op *ops = calloc((size_t)n, sizeof(*ops));
    int64_t *after = calloc((size_t)n, sizeof(*after)), end;
    dlock_loop *lp = NULL;
    int i, timedout = 0, refused = 0;
    size_t k = 0;
    int64_t slack_ns = defaults.budget_slack_ms * 1000000LL;
    bench_json j;

    if (!mine || !theirs || !ops || !after ||
        bench_client_new(&waiter, cfg, which, 0, NULL, NULL) != 0 ||
        /* each mock client has a store of its own: there the holder is
         * the waiter's client, its thread's owner */
        (which != BENCH_MOCK && bench_client_new(&holder, cfg, which, 0, NULL, NULL) != 0) ||
        dlock_loop_new(&lp, waiter, NULL) != 0)
        goto out;
    bench_loop_room(lp, n);
    for (i = 0; i < n; i++) {
        char name[64];

        snprintf(name, sizeof name, "bench:budget:%d:%d", n, i);
        if (dlock_reentrant_new(&mine[i], waiter, name) != 0 ||
            dlock_reentrant_new(&theirs[i], holder ? holder : waiter, name) != 0 ||
            dlock_lock(theirs[i], BENCH_LEASE_MS) != 0)
            goto out;
    }
    for (i = 0; i < n; i++) {
        ops[i].started_ns = bench_now_ns();
        ops[i].rc = 1;
        if (dlock_lock_async(lp, NULL, mine[i], NULL, BUDGET_WAIT_MS, BENCH_LEASE_MS,
                             on_budget_done, &ops[i]) != 0) {
            ops[i].rc = 1;
            refused++;
        }
    }
    end = bench_now_ns() + 60 * 1000000000LL;
    while (dlock_loop_pending(lp) > 0 && bench_now_ns() < end)
        dlock_loop_run(lp, 10);
    for (i = 0; i < n; i++) {
        if (ops[i].rc == 1)
            continue;
        timedout += ops[i].rc == DLOCK_ETIMEDOUT;
        /* late: after its starter + wait */
        after[k++] = ops[i].called_ns - ops[i].started_ns - BUDGET_WAIT_MS * 1000000LL;
    }
    bench_row("%-6s %6d  %6d  %9.1f  %9.1f  %9.1f  %6d/%-6d %7d  %s", bench_backend_name(which),
              n, BUDGET_WAIT_MS, bench_quantile(after, k, 0.5) / 1e6,
              bench_quantile(after, k, 0.99) / 1e6, bench_quantile(after, k, 1.0) / 1e6,
              timedout, n, refused,
              bench_verdict(k > 0, refused == 0 && bench_quantile(after, k, 1.0) <= slack_ns));
    bench_json_begin(&j, "async_budget");
    bench_json_str(&j, "backend", bench_backend_name(which));
    bench_json_int(&j, "n", n);
    bench_json_int(&j, "wait_ms", BUDGET_WAIT_MS);
    bench_json_num(&j, "late_p50_ms", bench_quantile(after, k, 0.5) / 1e6);
    bench_json_num(&j, "late_p99_ms", bench_quantile(after, k, 0.99) / 1e6);
    bench_json_num(&j, "late_max_ms", bench_quantile(after, k, 1.0) / 1e6);
    bench_json_int(&j, "slack_ms", defaults.budget_slack_ms);
    bench_json_int(&j, "timed_out", timedout);
    bench_json_int(&j, "refused", refused);
    bench_json_end(&j);
out:
    bench_waits_free(lp, waiter, holder, mine, theirs, n);
    free(ops);
    free(after);
}

void bench_fig_loop_turn(const bench_config *cfg)
{
    static const bench_backend backends[] = {BENCH_MOCK, BENCH_REDIS};
    size_t i;

    bench_heading("11d. async loop turns: K lock+unlock chains for 2 s (4 alternating runs per side), or N pairs (2 runs) started at "
                  "once, on one hook-mode loop beside a 10 ms timer of the application; "
                  "loop_slice_ms 0 (no bound, baseline) vs the default, same run "
                  "(goal: call <= 5 ms, tick gap <= 20 ms, pairs/s >= 0.95 x baseline)",
                  "store  load          N   call ms (0 / dflt)  tick gap ms (0 / dflt)  "
                  "pairs/s (0 / dflt)    ratio  target");
    for (i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        turn_rows(cfg, backends[i], 0, "chains", CHAINS, RUN_MS / ROUNDS, ROUNDS);
        turn_rows(cfg, backends[i], 0, "starts", STARTS, 0, 2);
    }
}

void bench_fig_loop_budget(const bench_config *cfg)
{
    static const bench_backend backends[] = {BENCH_MOCK, BENCH_REDIS};
    size_t i;

    bench_heading("11e. async wait budgets: N waits of 500 ms for locks held elsewhere, "
                  "started at once on one loop (poll mode): how late each is called back "
                  "after its starter + wait (goal: max <= budget_slack_ms, none refused)",
                  "store       N  wait ms  late p50   late p99   late max  timed out  "
                  "refused  target");
    for (i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        budget_row(cfg, backends[i], 10000);
        budget_row(cfg, backends[i], 30000);
    }
}

void bench_fig_loop_pool(const bench_config *cfg)
{
    bench_heading("11f. async loop turns on a pool: K = 1 000 lock+unlock chains in flight on "
                  "a pooled client (multiplex=0, 8 connections), redis, beside the 10 ms "
                  "timer; as 11d (goal: tick gap <= 20 ms)",
                  "store  load          N   call ms (0 / dflt)  tick gap ms (0 / dflt)  "
                  "pairs/s (0 / dflt)    ratio  target");
    turn_rows(cfg, BENCH_REDIS, POOL_CONNS, "pool 8", POOL_CHAINS, RUN_MS / ROUNDS, ROUNDS);
}
