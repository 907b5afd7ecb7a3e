/*
 * dlock benchmarks — figure 5: memory.
 *
 * Bytes are glibc's own count of heap bytes in use (mallinfo2().uordblks,
 * summed over all arenas; chunk headers included, which is what a handle
 * really costs). main.c runs this figure in a child process started with
 * GLIBC_TUNABLES=glibc.malloc.tcache_count=0 and MALLOC_ARENA_MAX=1: glibc's
 * per-thread caches keep freed chunks counted as in use, and new arenas
 * bring headers of their own, both of which would blur a per-waiter figure.
 *
 *  a. per idle handle: N handles on distinct names (a mock client: making a
 *     handle does no I/O, so the backend does not matter);
 *  b. per blocked waiter: W threads blocked in try_lock on a held lock. The
 *     threads exist and sit at a gate before the first snapshot, so their
 *     stacks and thread bookkeeping are not counted; the second snapshot is
 *     taken once the counting backend has seen every waiter's two busy
 *     attempts (before and after subscribing), i.e. all are asleep. A first,
 *     unmeasured pass lets pools and tables (connections, channel tables)
 *     reach their size, so the figure is what one more waiter costs.
 *     Waiters end by running out of their wait budget: a release would wake
 *     them all, and W waiters retrying after each release cost W^2 calls.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define NAME_FMT "bench:mem:%07d" /* 17 bytes for any index below 10^7 */
#define NAME_LEN 17
#define HANDLE_TARGET_BASE 256
#define WAIT_BUDGET_MS 2500
#define HOLD_LEASE_MS 60000
#define WAITER_STACK (256 * 1024)

static long long heap_in_use(void)
{
    struct mallinfo2 m = mallinfo2();
    return (long long)m.uordblks;
}

/* ---- a. idle handles ------------------------------------------------------------------ */

static void handles(const bench_config *cfg, const bench_lock_type *t)
{
    dlock_rlock **v = calloc((size_t)cfg->handles, sizeof(*v));
    dlock_client *client = NULL;
    long long before, after;
    double per;
    char name[32];
    int i, made = 0, target = HANDLE_TARGET_BASE + NAME_LEN;
    bench_json j;

    if (!v || bench_client_new(&client, cfg, BENCH_MOCK, 0, NULL, NULL) != 0) {
        bench_row("%-10s cannot set up", t->name);
        free(v);
        return;
    }
    before = heap_in_use();
    for (i = 0; i < cfg->handles; i++) {
        snprintf(name, sizeof name, NAME_FMT, i);
        /* The constructor alone: a type's store preparation (a
         * semaphore's permit) would add store memory, not handle memory. */
        if (t->make(&v[i], client, name) != 0)
            break;
        made++;
    }
    after = heap_in_use();
    per = made ? (double)(after - before) / made : 0;
    for (i = 0; i < made; i++)
        dlock_rlock_free(v[i]);
    dlock_client_free(client);
    free(v);

    bench_row("%-10s handle   %8d %12.1f   <= %d    %s", t->name, made, per, target,
              bench_verdict(made > 0, per <= target));
    bench_json_begin(&j, "memory_handle");
    bench_json_str(&j, "lock", t->name);
    bench_json_int(&j, "handles", made);
    bench_json_num(&j, "bytes_per_handle", per);
    bench_json_int(&j, "name_len", NAME_LEN);
    bench_json_int(&j, "target_bytes", target);
    bench_json_str(&j, "target", bench_verdict(made > 0, per <= target));
    bench_json_end(&j);
}

/* ---- b. blocked waiters ------------------------------------------------------------------ */

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int parked, open;
} gate;

typedef struct waiter {
    gate *g;
    dlock_rlock *l;
    int rc;
} waiter;

static void *wait_main(void *arg)
{
    waiter *w = arg;

    /* The thread's first allocation sets up its malloc state: done before
     * the first snapshot. */
    free(malloc(64));
    pthread_mutex_lock(&w->g->mu);
    w->g->parked++;
    pthread_cond_broadcast(&w->g->cv);
    while (!w->g->open)
        pthread_cond_wait(&w->g->cv, &w->g->mu);
    pthread_mutex_unlock(&w->g->mu);
    w->rc = dlock_try_lock(w->l, WAIT_BUDGET_MS, HOLD_LEASE_MS);
    if (w->rc == 0)
        dlock_unlock(w->l);
    return NULL;
}

/* One pass: W waiters block on `shared_l` while the main thread holds it
 * through `holder`. Returns the heap growth while they were blocked, and in
 * *blocked how many were seen asleep. */
static long long waiter_pass(const bench_config *cfg, bench_counts *counts,
                             dlock_rlock *holder, dlock_rlock *shared_l,
                             int *blocked)
{
    int n = cfg->waiters, i, started = 0;
    waiter *w = calloc((size_t)n, sizeof(*w));
    pthread_t *th = calloc((size_t)n, sizeof(*th));
    pthread_attr_t attr;
    gate g;
    long long before, after = 0;
    uint64_t busy0, want;
    int64_t deadline;

    *blocked = 0;
    if (!w || !th || dlock_try_lock(holder, BENCH_WAIT_MS, HOLD_LEASE_MS) != 0) {
        free(w);
        free(th);
        return -1;
    }
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, WAITER_STACK);
    for (i = 0; i < n; i++) {
        w[i].g = &g;
        w[i].l = shared_l;
        if (pthread_create(&th[i], &attr, wait_main, &w[i]) != 0)
            break;
        started++;
    }
    pthread_mutex_lock(&g.mu);
    while (g.parked < started)
        pthread_cond_wait(&g.cv, &g.mu);
    pthread_mutex_unlock(&g.mu);

    busy0 = bench_counts_busy(counts);
    want = busy0 + 2 * (uint64_t)started;
    before = heap_in_use();
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);

    /* All asleep once each made its two busy attempts; then a moment for
     * the last ones to go from their reply to their sleep. Measured well
     * before the budget ends in any case. */
    deadline = bench_now_ns() + (int64_t)WAIT_BUDGET_MS * 1000000 / 2;
    while (bench_counts_busy(counts) < want && bench_now_ns() < deadline)
        bench_sleep_ms(2);
    bench_sleep_ms(50);
    after = heap_in_use();
    {
        uint64_t seen = bench_counts_busy(counts) - busy0;
        *blocked = seen >= want - busy0 ? started : (int)(seen / 2);
    }

    for (i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    dlock_unlock(holder);
    pthread_attr_destroy(&attr);
    pthread_cond_destroy(&g.cv);
    pthread_mutex_destroy(&g.mu);
    free(th);
    free(w);
    return after - before;
}

static void waiters(const bench_config *cfg, const bench_lock_type *t,
                    bench_backend which)
{
    dlock_client *client = NULL;
    bench_counts *counts;
    dlock_rlock *holder = NULL, *shared_l = NULL;
    long long grown;
    int blocked = 0;
    double per;
    char name[64];
    bench_json j;

    snprintf(name, sizeof name, "bench:mem:wait:%s", t->name);
    if (bench_client_new(&client, cfg, which, 0, NULL, &counts) != 0 ||
        bench_lock_open(&holder, t, client, name) != 0 ||
        bench_lock_open(&shared_l, t, client, name) != 0) {
        bench_row("%-10s waiter   cannot set up on %s", t->name, bench_backend_name(which));
        goto out;
    }
    waiter_pass(cfg, counts, holder, shared_l, &blocked); /* warm-up */
    grown = waiter_pass(cfg, counts, holder, shared_l, &blocked);
    per = blocked > 0 ? (double)grown / blocked : 0;
    bench_row("%-10s waiter   %8d %12.1f   (%s; %d of %d seen asleep)", t->name,
              cfg->waiters, per, bench_backend_name(which), blocked, cfg->waiters);
    bench_json_begin(&j, "memory_waiter");
    bench_json_str(&j, "lock", t->name);
    bench_json_str(&j, "backend", bench_backend_name(which));
    bench_json_int(&j, "waiters", cfg->waiters);
    bench_json_int(&j, "waiters_asleep", blocked);
    bench_json_num(&j, "bytes_per_waiter", per);
    bench_json_end(&j);
out:
    dlock_rlock_free(shared_l);
    dlock_rlock_free(holder);
    dlock_client_free(client);
}

void bench_fig_memory(const bench_config *cfg)
{
    size_t i;

    bench_heading("5. memory: heap bytes per idle handle (name 17 bytes; target "
                  "<= 256 + name) and per blocked waiter",
                  "lock       what        count        bytes   target");
    for (i = 0; i < bench_nlock_types; i++)
        handles(cfg, &bench_lock_types[i]);
    for (i = 0; i < bench_nlock_types; i++) {
        if (bench_lock_types[i].shared) {
            bench_row("%-10s waiter   (holders share it: nobody blocks)",
                      bench_lock_types[i].name);
            continue;
        }
        waiters(cfg, &bench_lock_types[i], BENCH_MOCK);
        waiters(cfg, &bench_lock_types[i], BENCH_REDIS);
    }
}
