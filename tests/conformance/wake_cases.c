/*
 * Conformance cases of the wake-ups (issue 39 section 1): a client's
 * waiters of one channel queue in arrival order, and a release wakes as
 * few of them as can use it: an unlock the first (so it costs one script
 * call, not one per waiter), a write unlock every reader, a semaphore's n
 * permits n waiters; a woken waiter that leaves hands the wake on. For
 * blocking threads and for a dlock_loop's operations alike.
 *
 * What is counted: the client's refused attempts (dlock_metrics.busy). Each
 * waiter makes two before it sleeps (the first attempt, the one after
 * subscribing); a case waits for those, and for the waiter to be asleep,
 * before it starts the next, so that arrival order is the start order.
 * Holders elsewhere hold with a long lease: no waiter's TTL timer fires.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* How long a Redis case waits for what it expects (real ms). */
#define REDIS_WAIT_MS 10000
/* Waiting threads and operations per case. */
#define NTHREADS 8
#define NOPS 16

/* No assertion: helper threads read it too. */
static uint64_t busy(dlock_client *c)
{
    dlock_metrics m = DLOCK_METRICS_INIT;

    if (dlock_client_metrics(c, &m) != 0)
        return UINT64_MAX;
    return m.busy;
}

/* Waits (real time) until c has seen n refused attempts. */
static void wait_busy(dlock_client *c, uint64_t n)
{
    int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;

    while (busy(c) < n && dlock_fx_real_ms() < end)
        dlock_fx_sleep_real(1);
    assert_true(busy(c) >= n);
}

/* ---- blocking threads ------------------------------------------------------- */

/* What the threads share: the order they were granted in, and the
 * client's refused attempts at each grant. */
typedef struct chain {
    pthread_mutex_t mu;
    int order[NOPS];
    uint64_t busy_at[NOPS];
    int granted;
    dlock_client *c;
} chain;

typedef struct waiter {
    dlock_fx_thread t;
    chain *ch;
    int index;
    dlock_rlock *l;          /* lock: lock, note, unlock */
    dlock_semaphore *s;      /* or acquire one permit */
    int rc, unlock_rc;
} waiter;

static void note_grant(chain *ch, int index)
{
    pthread_mutex_lock(&ch->mu);
    ch->order[ch->granted] = index;
    ch->busy_at[ch->granted] = busy(ch->c);
    ch->granted++;
    pthread_mutex_unlock(&ch->mu);
}

static void waiter_main(void *arg)
{
    waiter *w = arg;

    if (w->s) {
        w->rc = dlock_semaphore_acquire(w->s, 1);
        if (w->rc == 0)
            note_grant(w->ch, w->index);
        return;
    }
    w->rc = dlock_lock(w->l, 60000);
    if (w->rc != 0)
        return;
    note_grant(w->ch, w->index);
    w->unlock_rc = dlock_unlock(w->l);
}

/* ws[0..NTHREADS) and their chain, on client c (ws' objects: the case's). */
static void waiters_init(waiter *ws, chain *ch, dlock_client *c)
{
    int i;

    memset(ch, 0, sizeof(*ch));
    memset(ws, 0, sizeof(*ws) * NTHREADS);
    pthread_mutex_init(&ch->mu, NULL);
    ch->c = c;
    for (i = 0; i < NTHREADS; i++) {
        ws[i].ch = ch;
        ws[i].index = i;
    }
}

/* Starts ws[0..n), each once the one before sleeps (two refused attempts
 * each beyond base: the first, and the one after subscribing). */
static void start_in_order(dlock_fx *fx, waiter *ws, int n, uint64_t base)
{
    int i;

    for (i = 0; i < n; i++) {
        int sleepers = dlock_fx_settle(fx);

        dlock_fx_start(&ws[i].t, waiter_main, &ws[i]);
        wait_busy(fx->c1, base + 2 * (uint64_t)(i + 1));
        assert_int_equal(dlock_fx_wait_blocked(fx, sleepers, 250), 0);
    }
}

static void join_all(dlock_fx *fx, waiter *ws, int n, dlock_rlock *rescue)
{
    int i, late = 0;

    for (i = 0; i < n; i++)
        late |= dlock_fx_join(fx, &ws[i].t, REDIS_WAIT_MS, rescue) != 0;
    assert_int_equal(late, 0);
}

/* Every grant but the first came from the release before it; that release
 * may have cost one refused attempt at most (2 script calls). */
static void assert_cheap_hand_offs(const chain *ch, uint64_t before)
{
    int i;

    for (i = 0; i < ch->granted; i++) {
        uint64_t prev = i == 0 ? before : ch->busy_at[i - 1];

        if (ch->busy_at[i] - prev > 1)
            fail_msg("release %d cost %llu refused attempts", i,
                     (unsigned long long)(ch->busy_at[i] - prev));
    }
}

/* NTHREADS threads wait for a lock held elsewhere; one release: they get
 * it one after the other in arrival order, each hand-off costing at most
 * one refused attempt (before: every waiter woken at every release). */
static void wake_threads_one_per_release(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    waiter ws[NTHREADS];
    chain ch;
    uint64_t before;
    int i;

    waiters_init(ws, &ch, fx->c1);
    assert_int_equal(dlock_lock(holder, 60000), 0);
    for (i = 0; i < NTHREADS; i++)
        ws[i].l = dlock_fx_lock(fx, fx->c1, fx->name);
    before = busy(fx->c1);
    start_in_order(fx, ws, NTHREADS, before);
    before = busy(fx->c1);
    assert_int_equal(dlock_unlock(holder), 0);
    join_all(fx, ws, NTHREADS, holder);
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(ws[i].rc, 0);
        assert_int_equal(ws[i].unlock_rc, 0);
    }
    assert_int_equal(ch.granted, NTHREADS);
    for (i = 0; i < NTHREADS; i++)
        assert_int_equal(ch.order[i], i); /* first come, first woken */
    assert_cheap_hand_offs(&ch, before);
    pthread_mutex_destroy(&ch.mu);
}

/* A semaphore with no permit and NTHREADS waiters for one each: a release
 * of 2 lets the first two in and wakes nobody else (no refused attempt);
 * the rest follow when the others are released. */
static void free_sem(void *s)
{
    dlock_semaphore_free(s);
}

static void wake_semaphore_release_n_wakes_n(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *giver = NULL;
    waiter ws[NTHREADS];
    chain ch;
    uint64_t before, refused;
    int i, release_rc, rest_rc, first_two, others_wait = 0;

    waiters_init(ws, &ch, fx->c1);
    assert_int_equal(dlock_semaphore_new(&giver, fx->c2, fx->name), 0);
    dlock_fx_keep(fx, giver, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(giver, NULL, 0), 0);
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(dlock_semaphore_new(&ws[i].s, fx->c1, fx->name), 0);
        dlock_fx_keep(fx, ws[i].s, free_sem);
    }
    before = busy(fx->c1);
    start_in_order(fx, ws, NTHREADS, before);
    before = busy(fx->c1);
    /* what is seen before the rest is released is asserted after the
     * join: no assertion may end the case while its threads run */
    release_rc = dlock_semaphore_release(giver, 2);
    first_two = dlock_fx_wait_done(&ws[0].t, REDIS_WAIT_MS) == 0 &&
                dlock_fx_wait_done(&ws[1].t, REDIS_WAIT_MS) == 0;
    for (i = 2; i < NTHREADS; i++)
        others_wait += dlock_fx_still_waiting(fx, &ws[i].t);
    refused = busy(fx->c1) - before;
    rest_rc = dlock_semaphore_release(giver, NTHREADS - 2);
    join_all(fx, ws, NTHREADS, NULL);
    assert_int_equal(release_rc, 0);
    assert_int_equal(rest_rc, 0);
    assert_true(first_two);
    assert_int_equal(others_wait, NTHREADS - 2);
    assert_int_equal(refused, 0); /* before: NTHREADS - 2 */
    for (i = 0; i < NTHREADS; i++)
        assert_int_equal(ws[i].rc, 0);
    assert_int_equal(ch.granted, NTHREADS);
    pthread_mutex_destroy(&ch.mu);
}

/* Readers waiting for a writer elsewhere all get in at its unlock (the
 * write-unlock message wakes every waiter), with no refused attempt. */
static void wake_write_unlock_wakes_every_reader(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *writer = NULL;
    waiter ws[NTHREADS];
    chain ch;
    uint64_t before;
    int i;

    waiters_init(ws, &ch, fx->c1);
    assert_int_equal(dlock_rwlock_write_new(&writer, fx->c2, fx->name), 0);
    dlock_fx_keep(fx, writer, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(writer, 60000), 0);
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(dlock_rwlock_read_new(&ws[i].l, fx->c1, fx->name), 0);
        dlock_fx_keep(fx, ws[i].l, (void (*)(void *))dlock_rlock_free);
    }
    before = busy(fx->c1);
    start_in_order(fx, ws, NTHREADS, before);
    before = busy(fx->c1);
    assert_int_equal(dlock_unlock(writer), 0);
    join_all(fx, ws, NTHREADS, NULL);
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(ws[i].rc, 0);
        assert_int_equal(ws[i].unlock_rc, 0);
    }
    assert_int_equal(busy(fx->c1) - before, 0);
    pthread_mutex_destroy(&ch.mu);
}

/* ---- a loop's operations ------------------------------------------------------ */

typedef struct async_chain {
    dlock_loop *lp;
    dlock_rlock *l;
    chain ch;
    char owners[NOPS][32];
    int locked_rc[NOPS], unlocked_rc[NOPS], calls[NOPS], unlocks;
    dlock_op_id ops[NOPS];
} async_chain;

typedef struct async_arg {
    async_chain *a;
    int index;
} async_arg;

static async_arg args[NOPS];

static void on_unlocked(void *arg, dlock_op_id op, const dlock_result *r)
{
    async_arg *x = arg;

    (void)op;
    x->a->unlocked_rc[x->index] = r->rc;
    x->a->unlocks++;
}

static void on_locked(void *arg, dlock_op_id op, const dlock_result *r)
{
    async_arg *x = arg;
    async_chain *a = x->a;

    (void)op;
    a->calls[x->index]++;
    a->locked_rc[x->index] = r->rc;
    if (r->rc != 0)
        return;
    note_grant(&a->ch, x->index);
    if (dlock_unlock_async(a->lp, NULL, a->l, a->owners[x->index], on_unlocked, x) != 0)
        a->unlocked_rc[x->index] = -1000;
}

static void free_loop(void *lp)
{
    dlock_loop_free(lp);
}

/* Runs the loop until cond(a) or REDIS_WAIT_MS (mock: until nothing is
 * due). */
static void run_until(dlock_fx *fx, async_chain *a, int (*cond)(const async_chain *))
{
    int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;

    do {
        assert_true(dlock_loop_run(a->lp, fx->is_mock ? 0 : 10) >= 0);
    } while (!cond(a) && dlock_fx_real_ms() < end);
    if (fx->is_mock)
        assert_true(dlock_loop_run(a->lp, 0) >= 0);
}

static uint64_t want_busy;

static int busy_reached(const async_chain *a)
{
    return busy(a->ch.c) >= want_busy;
}

static int all_unlocked(const async_chain *a)
{
    return a->unlocks >= NOPS;
}

static int none_pending(const async_chain *a)
{
    return dlock_loop_pending(a->lp) == 0;
}

static async_chain *async_chain_new(dlock_fx *fx)
{
    async_chain *a = calloc(1, sizeof(*a));
    int i;

    assert_non_null(a);
    dlock_fx_keep(fx, a, free);
    pthread_mutex_init(&a->ch.mu, NULL);
    a->ch.c = fx->c1;
    a->l = dlock_fx_lock(fx, fx->c1, fx->name);
    assert_int_equal(dlock_loop_new(&a->lp, fx->c1, NULL), 0);
    dlock_fx_keep(fx, a->lp, free_loop);
    for (i = 0; i < NOPS; i++) {
        snprintf(a->owners[i], sizeof a->owners[i], "op-%d", i);
        args[i].a = a;
        args[i].index = i;
    }
    return a;
}

/* Starts the chain's operations in order, each once the one before sleeps
 * (when the loop's run returns, its fiber has parked). */
static void async_start_in_order(dlock_fx *fx, async_chain *a)
{
    uint64_t base = busy(fx->c1);
    int i;

    for (i = 0; i < NOPS; i++) {
        assert_int_equal(dlock_lock_async(a->lp, &a->ops[i], a->l, a->owners[i],
                                          DLOCK_WAIT_FOREVER, 60000, on_locked, &args[i]),
                         0);
        want_busy = base + 2 * (uint64_t)(i + 1);
        run_until(fx, a, busy_reached);
        assert_true(busy_reached(a));
    }
}

/* NOPS operations on one loop wait for a lock held elsewhere; one release:
 * they are granted in arrival order, each hand-off costing at most one
 * refused attempt. */
static void wake_async_one_per_release(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    async_chain *a;
    uint64_t before;
    int i;

    assert_int_equal(dlock_lock(holder, 60000), 0);
    a = async_chain_new(fx);
    async_start_in_order(fx, a);
    before = busy(fx->c1);
    assert_int_equal(dlock_unlock(holder), 0);
    run_until(fx, a, all_unlocked);
    assert_int_equal(a->ch.granted, NOPS);
    for (i = 0; i < NOPS; i++) {
        assert_int_equal(a->calls[i], 1);
        assert_int_equal(a->locked_rc[i], 0);
        assert_int_equal(a->unlocked_rc[i], 0);
        assert_int_equal(a->ch.order[i], i);
    }
    assert_cheap_hand_offs(&a->ch, before);
    pthread_mutex_destroy(&a->ch.mu);
}

/* The first operation in line is cancelled right after the release
 * (possibly woken already): the wake goes on to the second, which gets
 * the lock; the others sleep on, and nobody is stranded. */
static void wake_async_cancelled_passes_on(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    async_chain *a;
    int i;

    assert_int_equal(dlock_lock(holder, 60000), 0);
    a = async_chain_new(fx);
    async_start_in_order(fx, a);
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_op_cancel(a->lp, a->ops[0]), 0);
    run_until(fx, a, all_unlocked);
    assert_int_equal(a->calls[0], 1);
    assert_int_equal(a->locked_rc[0], DLOCK_ECANCELED);
    assert_int_equal(a->ch.granted, NOPS - 1);
    for (i = 1; i < NOPS; i++) {
        assert_int_equal(a->locked_rc[i], 0);
        assert_int_equal(a->ch.order[i - 1], i);
    }
    run_until(fx, a, none_pending);
    assert_int_equal(dlock_loop_pending(a->lp), 0);
    pthread_mutex_destroy(&a->ch.mu);
}

/* Two operations wait for 2 permits each of a semaphore that has none; a
 * release of 1 wakes the first, which is refused and hands the wake on
 * to the second, refused too: there it stops, each waiter having tried
 * once for that message. (The wake used to go round them for as long as
 * they waited: a script call per turn, floored at one per 25 ms on the
 * real clock, and on the virtual clock a busy loop in which no time ever
 * passed; the simulator's seed 4 found it, tests/sim/.) */
static void on_sem(void *arg, dlock_op_id op, const dlock_result *r)
{
    (void)op;
    *(int *)arg = r->rc;
}

static void wake_semaphore_refusals_stop(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *giver = NULL, *s = NULL;
    dlock_loop *lp = NULL;
    dlock_op_id ops[2];
    int rcs[2] = {1, 1}, i, k;
    uint64_t base, refused;
    int64_t end;

    assert_int_equal(dlock_semaphore_new(&giver, fx->c2, fx->name), 0);
    dlock_fx_keep(fx, giver, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(giver, NULL, 0), 0);
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, s, free_sem);
    assert_int_equal(dlock_loop_new(&lp, fx->c1, NULL), 0);
    dlock_fx_keep(fx, lp, free_loop);
    base = busy(fx->c1);
    for (i = 0; i < 2; i++) {
        assert_int_equal(dlock_semaphore_acquire_async(lp, &ops[i], s, 2, 60000, on_sem,
                                                       &rcs[i]),
                         0);
        /* asleep once it made its two attempts */
        end = dlock_fx_real_ms() + REDIS_WAIT_MS;
        while (busy(fx->c1) < base + 2 * (uint64_t)(i + 1) && dlock_fx_real_ms() < end)
            assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 10) >= 0);
        assert_true(busy(fx->c1) >= base + 2 * (uint64_t)(i + 1));
    }
    base = busy(fx->c1);
    assert_int_equal(dlock_semaphore_release(giver, 1), 0);
    if (fx->is_mock) {
        for (k = 0; k < 100; k++)
            assert_true(dlock_loop_run(lp, 0) >= 0);
    } else {
        end = dlock_fx_real_ms() + 300;
        while (dlock_fx_real_ms() < end)
            assert_true(dlock_loop_run(lp, 10) >= 0);
    }
    refused = busy(fx->c1) - base;
    assert_true(refused <= 2);
    assert_int_equal(rcs[0], 1);
    assert_int_equal(rcs[1], 1);
    for (i = 0; i < 2; i++)
        assert_int_equal(dlock_op_cancel(lp, ops[i]), 0);
    end = dlock_fx_real_ms() + REDIS_WAIT_MS;
    while (dlock_loop_pending(lp) > 0 && dlock_fx_real_ms() < end)
        assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 10) >= 0);
    assert_int_equal(rcs[0], DLOCK_ECANCELED);
    assert_int_equal(rcs[1], DLOCK_ECANCELED);
}

/* ---- the group ------------------------------------------------------------ */

static const struct CMUnitTest wake_cases[] = {
    DLOCK_FX_CASE(wake_threads_one_per_release),
    DLOCK_FX_CASE(wake_semaphore_release_n_wakes_n),
    DLOCK_FX_CASE(wake_write_unlock_wakes_every_reader),
    DLOCK_FX_CASE(wake_async_one_per_release),
    DLOCK_FX_CASE(wake_async_cancelled_passes_on),
    DLOCK_FX_CASE(wake_semaphore_refusals_stop),
};

int dlock_test_wake(const char *backend);
int dlock_test_wake(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("wake", backend, wake_cases);
}
