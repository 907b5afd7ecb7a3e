/*
 * The spin lock (api/dlock/spin_lock.h): the reentrant lock's generic cases
 * on it (tests/conformance/reentrant_cases.c), but those that check a
 * pub/sub wake-up, and its own cases: a waiter gets the lock by polling,
 * without a single subscription; the layout is the reentrant lock's; a
 * polling wait can be cancelled; bad options are refused.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"
#include "../harness/wrap_backend.h"

#include "dlock/sys/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* reentrant_cases.c */
int dlock_test_lock_type(const char *backend, const dlock_fx_lock_type *type,
                         const char *const *skip, const struct CMUnitTest *own,
                         size_t nown);

static int make_spin(dlock_rlock **out, dlock_client *c, const char *name)
{
    return dlock_spin_lock_new(out, c, name, NULL);
}

static const dlock_fx_lock_type spin_type = {"spin", make_spin};

/* The generic cases the spin lock skips: each asserts that the waiter was
 * woken by the release's message with no virtual time passing on the mock
 * (a polling waiter wakes at its next poll, which needs the clock to move);
 * spin_waiter_polls_without_subscribing below is their spin counterpart.
 * On the mock only: mutual_exclusion's threads contend without the case
 * moving the virtual clock, so a polling waiter would sleep for ever (on
 * Redis it runs, in real time). */
static const char *const spin_skips[] = {
    "waiter_wakes_on_unlock", "waiter_wakes_on_force_unlock",
    "timed_waiter_wakes_on_unlock", "waiter_wakes_odd_name",
    "many_waiters_all_get_it", "mock:mutual_exclusion", NULL,
};

/* ---- a backend that counts subscriptions ---------------------------------- */

/* A real backend (the fixture's store, or the fixture's redis-server)
 * behind a table that forwards every call and counts the subscribe calls. */
typedef struct counting {
    dlock_test_wrap w; /* first */
    int subscribes; /* atomic */
} counting;

static int c_subscribe(dlock_backend *b, dlock_subscription **out, const char *channel,
                       dlock_message_fn fn, void *arg)
{
    __atomic_add_fetch(&((counting *)b)->subscribes, 1, __ATOMIC_SEQ_CST);
    return dlock_test_wrap_subscribe(b, out, channel, fn, arg);
}

static int c_subscribe_until(dlock_backend *b, dlock_subscription **out,
                             const char *channel, dlock_message_fn fn, void *arg,
                             int64_t deadline_ms, char *errbuf, size_t errlen)
{
    __atomic_add_fetch(&((counting *)b)->subscribes, 1, __ATOMIC_SEQ_CST);
    return dlock_test_wrap_subscribe_until(b, out, channel, fn, arg, deadline_ms,
                                           errbuf, errlen);
}

static const dlock_backend_methods counting_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "counting",
    .eval = dlock_test_wrap_eval,
    .subscribe = c_subscribe,
    .unsubscribe = dlock_test_wrap_unsubscribe,
    .clock = dlock_test_wrap_clock,
    .free = dlock_test_wrap_free,
    .eval_until = dlock_test_wrap_eval_until,
    .subscribe_until = c_subscribe_until,
    .reconnects = dlock_test_wrap_reconnects,
    .publish_command = dlock_test_wrap_publish_command,
    .key_slot = dlock_test_wrap_key_slot,
};

static void free_client(void *c)
{
    dlock_client_free(c);
}

static void free_lock(void *l)
{
    dlock_rlock_free(l);
}

/* A client on a counting backend over the fixture's store or server, freed
 * by teardown; *count is its subscribe counter. */
static dlock_client *counting_client(dlock_fx *fx, int **count)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    counting *cb = calloc(1, sizeof(*cb));
    dlock_client *c = NULL;
    int rc;

    assert_non_null(cb);
    cb->w.base.methods = &counting_methods;
    rc = dlock_fx_backend_new(fx, &cb->w.inner);
    if (rc != 0)
        free(cb);
    assert_int_equal(rc, 0);
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    opts.budget_slack_ms = 2000; /* as the fixture's clients (fixture.c) */
    rc = dlock_client_new(&c, &cb->w.base, &opts);
    if (rc != 0)
        dlock_test_wrap_free(&cb->w.base);
    assert_int_equal(rc, 0);
    *count = &cb->subscribes;
    return dlock_fx_keep(fx, c, free_client);
}

/* ---- a waiting thread ------------------------------------------------------- */

typedef struct waiter {
    dlock_rlock *l;
    int64_t wait_ms, lease_ms;
    int rc, unlock_rc;
    dlock_fx_thread t;
} waiter;

static void waiter_main(void *arg)
{
    waiter *w = arg;

    w->unlock_rc = 1;
    w->rc = w->wait_ms < 0 ? dlock_lock(w->l, w->lease_ms)
                           : dlock_try_lock(w->l, w->wait_ms, w->lease_ms);
    if (w->rc == 0)
        w->unlock_rc = dlock_unlock(w->l);
}

/* Starts w on l and waits until it has blocked. 0 or -1. */
static int start_blocked(dlock_fx *fx, waiter *w, dlock_rlock *l, int64_t wait_ms,
                         int64_t lease_ms)
{
    int base = dlock_fx_settle(fx);

    memset(w, 0, sizeof(*w));
    w->l = l;
    w->wait_ms = wait_ms;
    w->lease_ms = lease_ms;
    w->rc = 1;
    dlock_fx_start(&w->t, waiter_main, w);
    return dlock_fx_wait_blocked(fx, base, 300);
}

/* ---- the cases ---------------------------------------------------------------- */

/* The point of the spin lock: a waiter gets the lock after the release by
 * polling, and never subscribes; a reentrant waiter on the same counting
 * client does subscribe (so the counter can see one). */
static void spin_waiter_polls_without_subscribing(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    int *subs = NULL;
    dlock_client *c3 = counting_client(fx, &subs);
    dlock_rlock *l3 = NULL, *r3 = NULL;
    int blocked, joined, done_early;
    int64_t took;
    waiter w;

    assert_int_equal(make_spin(&l3, c3, fx->name), 0);
    dlock_fx_keep(fx, l3, free_lock);
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    blocked = start_blocked(fx, &w, l3, -1, fx->long_lease_ms);
    /* the poll pauses: it keeps trying, and failing, while the lock is held */
    dlock_fx_advance(fx, fx->is_mock ? 1000 : 100);
    done_early = dlock_fx_done(&w.t);
    took = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(l1), 0);
    /* the next poll (at most 128 ms away) finds it free */
    if (fx->is_mock)
        dlock_fx_advance(fx, 200);
    joined = dlock_fx_join(fx, &w.t, 10000, l1);
    took = dlock_fx_real_ms() - took;

    assert_int_equal(blocked, 0);
    assert_int_equal(done_early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.unlock_rc, 0);
    assert_int_equal(__atomic_load_n(subs, __ATOMIC_SEQ_CST), 0);
    if (!fx->is_mock)
        printf("  [%s] spin waiter in %" PRId64 " ms after the unlock\n", fx->backend,
               took);

    /* the same wait on a reentrant handle of that client subscribes */
    assert_int_equal(dlock_reentrant_new(&r3, c3, fx->name), 0);
    dlock_fx_keep(fx, r3, free_lock);
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    blocked = start_blocked(fx, &w, r3, -1, fx->long_lease_ms);
    assert_int_equal(dlock_unlock(l1), 0);
    joined = dlock_fx_join(fx, &w.t, 10000, l1);
    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_true(__atomic_load_n(subs, __ATOMIC_SEQ_CST) >= 1);
}

/* Redisson's RedissonSpinLock keeps RLock's hash: a spin handle and a
 * reentrant handle on one name are one lock. */
static void spin_shares_the_reentrant_layout(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *s1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *r2 = NULL;
    char buf[64], *text = NULL;
    uint64_t pubs = 0;

    assert_int_equal(dlock_reentrant_new(&r2, fx->c2, fx->name), 0);
    dlock_fx_keep(fx, r2, free_lock);
    assert_int_equal(dlock_lock(s1, 0), 0);
    assert_int_equal(dlock_lock(s1, 0), 0);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", fx->name, 1, fx->owner1, NULL);
    assert_string_equal(buf, "2");
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 2);
    assert_int_equal(dlock_try_lock(r2, 0, 0), DLOCK_EBUSY);
    /* the watchdog renews it with the hash renewal script */
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_is_held_as(r2, fx->owner1), 1);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    assert_int_equal(dlock_rlock_state_text(s1, &text), 0);
    printf("  [%s] %s\n", fx->backend, text);
    assert_non_null(strstr(text, "\"type\":\"spin\""));
    assert_non_null(strstr(text, "\"holds\":2"));
    free(text);

    /* unlock publishes on the reentrant lock's channel, for its waiters */
    if (fx->is_mock)
        pubs = dlock_mock_store_publish_count(fx->store);
    assert_int_equal(dlock_unlock(s1), 0);
    assert_int_equal(dlock_unlock(s1), 0);
    if (fx->is_mock)
        assert_true(dlock_mock_store_publish_count(fx->store) == pubs + 1);
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(s1, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_fx_hold_count_as(s1, fx->owner2), 1);
    assert_int_equal(dlock_unlock(r2), 0);
}

/* A polling wait sleeps on the clock like any other: a cancel ends it. */
static void spin_wait_cancelled(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int blocked, joined;
    waiter w;

    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    blocked = start_blocked(fx, &w, l2, -1, fx->long_lease_ms);
    assert_int_equal(dlock_client_cancel_waits(fx->c2), 0);
    joined = dlock_fx_join(fx, &w.t, 10000, l1);
    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, DLOCK_ECANCELED);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_unlock(l1), 0);
}

static void spin_bad_options(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_spin_options o = DLOCK_SPIN_OPTIONS_INIT;
    dlock_rlock *l = (dlock_rlock *)&o;

    o.initial_delay_ms = 0;
    assert_int_equal(dlock_spin_lock_new(&l, fx->c1, fx->name, &o), DLOCK_EINVAL);
    assert_null(l);
    o.initial_delay_ms = 200; /* above max_delay_ms */
    assert_int_equal(dlock_spin_lock_new(&l, fx->c1, fx->name, &o), DLOCK_EINVAL);
    o.max_delay_ms = DLOCK_TIME_MAX_MS + 1;
    assert_int_equal(dlock_spin_lock_new(&l, fx->c1, fx->name, &o), DLOCK_EINVAL);
    o.max_delay_ms = 400;
    assert_int_equal(dlock_spin_lock_new(&l, fx->c1, fx->name, &o), 0);
    assert_non_null(l);
    assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), 0);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    assert_int_equal(dlock_spin_lock_new(NULL, fx->c1, fx->name, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_spin_lock_new(&l, fx->c1, "", NULL), DLOCK_EINVAL);
}

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest spin_cases[] = {
    CASE(spin_waiter_polls_without_subscribing),
    CASE(spin_shares_the_reentrant_layout),
    CASE(spin_wait_cancelled),
    CASE(spin_bad_options),
};

int dlock_test_spin(const char *backend)
{
    return dlock_test_lock_type(backend, &spin_type, spin_skips, spin_cases,
                                sizeof(spin_cases) / sizeof(spin_cases[0]));
}
