/*
 * dlock benchmarks — a backend that wraps another and counts.
 *
 * Built on the public backend vtable (api/dlock/sys/backend.h), as a user
 * would write one. It forwards every call unchanged and observes:
 *  - script calls, and calls of renewal scripts (the watchdog's), so the
 *    watchdog figure counts calls per period on any backend;
 *  - the CPU clock of the thread running renewals, so the figure can tell
 *    the watchdog's own CPU time apart from the rest of the process;
 *  - for a thread that armed stamps: when its latest acquisition attempt
 *    went out (the attempt that wins tells a hand-off's wake-up from its
 *    round trip), and when its first busy reply came back (from then on the
 *    server has the waiter queued: what the FIFO check needs to know).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../harness/wrap_backend.h"
#include "bench.h"

struct bench_counts {
    uint64_t evals, renewals, busy;
    clockid_t renewer_clock;
    int have_renewer;
};

typedef struct count_backend {
    dlock_test_wrap w; /* first */
    bench_counts counts;
} count_backend;

static __thread bench_stamps *stamps;

void bench_counts_arm(bench_stamps *s)
{
    stamps = s;
}

static void note_renewer(bench_counts *k)
{
    clockid_t id;

    if (__atomic_load_n(&k->have_renewer, __ATOMIC_ACQUIRE))
        return;
    if (pthread_getcpuclockid(pthread_self(), &id) != 0)
        return;
    k->renewer_clock = id;
    __atomic_store_n(&k->have_renewer, 1, __ATOMIC_RELEASE);
}

static int cb_eval(dlock_backend *b, dlock_reply **out,
                   const dlock_script *script, size_t nkeys, size_t nargs,
                   const char *const *argv, const size_t *argvlen,
                   char *errbuf, size_t errlen)
{
    count_backend *cb = (count_backend *)b;
    const char *name = script && script->name ? script->name : "";
    int acquiring = strstr(name, "acquire") != NULL;
    int rc;

    if (acquiring && stamps)
        stamps->last_send = bench_now_ns();
    rc = dlock_backend_eval(cb->w.inner, out, script, nkeys, nargs, argv, argvlen,
                            errbuf, errlen);
    __atomic_add_fetch(&cb->counts.evals, 1, __ATOMIC_RELAXED);
    if (strstr(name, "renew")) {
        __atomic_add_fetch(&cb->counts.renewals, 1, __ATOMIC_RELAXED);
        note_renewer(&cb->counts);
    }
    /* Any reply but nil (acquired) or an error means "not yet": the waiter
     * is known to the server from this moment on. */
    if (rc == 0 && acquiring && (*out)->type != DLOCK_REPLY_NIL &&
        (*out)->type != DLOCK_REPLY_ERROR) {
        __atomic_add_fetch(&cb->counts.busy, 1, __ATOMIC_RELAXED);
        if (stamps && stamps->first_busy == 0)
            stamps->first_busy = bench_now_ns();
    }
    return rc;
}

/* A call over several slots of one node (the watchdog's on a cluster):
 * counted as a call when the inner backend ran it. */
static int cb_eval_node(dlock_backend *b, dlock_reply **out,
                        const dlock_script *script, size_t nkeys, size_t nargs,
                        const char *const *argv, const size_t *argvlen,
                        int64_t deadline_ms, char *errbuf, size_t errlen)
{
    count_backend *cb = (count_backend *)b;
    int rc = dlock_backend_eval_node(cb->w.inner, out, script, nkeys, nargs, argv,
                                     argvlen, deadline_ms, errbuf, errlen);

    if (rc == DLOCK_ENOTSUP)
        return rc;
    __atomic_add_fetch(&cb->counts.evals, 1, __ATOMIC_RELAXED);
    if (script && script->name && strstr(script->name, "renew")) {
        __atomic_add_fetch(&cb->counts.renewals, 1, __ATOMIC_RELAXED);
        note_renewer(&cb->counts);
    }
    return rc;
}

/* No eval_until and no split calls: every call goes through cb_eval (or
 * cb_eval_node), which counts it. */
static const dlock_backend_methods count_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "count",
    .eval = cb_eval,
    .subscribe = dlock_test_wrap_subscribe,
    .unsubscribe = dlock_test_wrap_unsubscribe,
    .clock = dlock_test_wrap_clock,
    .free = dlock_test_wrap_free,
    .reconnects = dlock_test_wrap_reconnects,
    .publish_command = dlock_test_wrap_publish_command,
    .key_slot = dlock_test_wrap_key_slot,
    .key_node = dlock_test_wrap_key_node,
    .eval_node = cb_eval_node,
};

/* Wraps inner (taken over on success). */
static int wrap(dlock_backend **out, dlock_backend *inner, bench_counts **counts)
{
    count_backend *cb = calloc(1, sizeof(*cb));

    if (!cb)
        return DLOCK_ENOMEM;
    cb->w.base.methods = &count_methods;
    cb->w.inner = inner;
    *counts = &cb->counts;
    *out = &cb->w.base;
    return 0;
}

uint64_t bench_counts_evals(const bench_counts *k)
{
    return __atomic_load_n(&k->evals, __ATOMIC_RELAXED);
}

uint64_t bench_counts_renewals(const bench_counts *k)
{
    return __atomic_load_n(&k->renewals, __ATOMIC_RELAXED);
}

uint64_t bench_counts_busy(const bench_counts *k)
{
    return __atomic_load_n(&k->busy, __ATOMIC_RELAXED);
}

int64_t bench_counts_renewer_cpu_ns(bench_counts *k)
{
    struct timespec ts;

    if (!__atomic_load_n(&k->have_renewer, __ATOMIC_ACQUIRE) ||
        clock_gettime(k->renewer_clock, &ts) != 0)
        return -1;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- clients on either store ------------------------------------------------ */

const char *bench_backend_name(bench_backend b)
{
    return b == BENCH_MOCK ? "mock" : "redis";
}

int bench_client_new(dlock_client **out, const bench_config *cfg,
                     bench_backend which, int pool_size,
                     const dlock_client_options *opts, bench_counts **counts)
{
    dlock_backend *b = NULL, *w;
    char err[256];
    int rc;

    *out = NULL;
    if (which == BENCH_MOCK) {
        dlock_mock_store *st;
        rc = dlock_mock_store_new(&st, NULL);
        if (rc != 0)
            return rc;
        rc = dlock_mock_backend_new(&b, st);
        dlock_mock_store_free(st); /* the backend keeps it */
    } else {
        dlock_redis_options ro = DLOCK_REDIS_OPTIONS_INIT;
        if (pool_size > 0) {
            ro.multiplex = 0;
            ro.pool_size = pool_size;
        }
        rc = dlock_redis_backend_new(&b, cfg->redis_url, &ro, err, sizeof err);
    }
    if (rc != 0)
        return rc;
    if (counts) {
        rc = wrap(&w, b, counts);
        if (rc != 0) {
            dlock_backend_free(b);
            return rc;
        }
        b = w;
    }
    rc = dlock_client_new(out, b, opts);
    if (rc != 0)
        dlock_backend_free(b);
    return rc;
}
