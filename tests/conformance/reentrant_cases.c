/*
 * The reentrant lock's conformance cases. Each case is written once against
 * the fixture (tests/harness/fixture.h) and runs on every backend:
 * dlock_test_conformance("mock") and dlock_test_conformance("redis").
 *
 * On the mock nothing sleeps for a lease or a watchdog period: only the
 * virtual clock moves, so those cases are exact (a timed wait ends after
 * exactly its wait, not before). On Redis the times are real and short, and
 * the bounds are loose (no tight timing assertions on a loaded machine).
 *
 * Helper threads record what they see; assertions run on the test thread
 * after the helper has been joined.
 */
#include "dlock/sys/backend.h"
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/lost_reply.h"
#include "../harness/runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)
/* The constructor of the lock type the group runs on (reentrant, fair...). */
#define MAKE_LOCK(out, c, name) dlock_fx_lock_type_current()->make(out, c, name)

/* ---- a helper thread that acquires ---------------------------------------- */

enum { OP_LOCK, OP_TRY };

typedef struct waiter {
    dlock_fx *fx;
    dlock_client *c; /* l's client */
    dlock_rlock *l;
    int op;
    int64_t wait_ms, lease_ms;
    int release;           /* unlock right after acquiring */
    /* results */
    char owner[DLOCK_OWNER_MAX];
    int rc, held, unlock_rc;
    int64_t start_v, end_v;          /* backend clock around the call */
    int64_t start_real, end_real;    /* real time around the call */
    dlock_fx_thread t;
} waiter;

static void waiter_main(void *arg)
{
    waiter *w = arg;

    dlock_client_owner(w->c, w->owner, sizeof(w->owner));
    w->held = -1;
    w->unlock_rc = 1;
    w->start_v = dlock_fx_now(w->fx);
    w->start_real = dlock_fx_real_ms();
    if (w->op == OP_LOCK)
        w->rc = dlock_lock(w->l, w->lease_ms);
    else
        w->rc = dlock_try_lock(w->l, w->wait_ms, w->lease_ms);
    w->end_real = dlock_fx_real_ms();
    w->end_v = dlock_fx_now(w->fx);
    if (w->rc == 0) {
        if (dlock_is_held(w->l, &w->held) != 0)
            w->held = -1;
        if (w->release)
            w->unlock_rc = dlock_unlock(w->l);
    }
}

static void waiter_init(waiter *w, dlock_fx *fx, dlock_client *c, dlock_rlock *l,
                        int op, int64_t wait_ms, int64_t lease_ms, int release)
{
    memset(w, 0, sizeof(*w));
    w->fx = fx;
    w->c = c;
    w->l = l;
    w->op = op;
    w->wait_ms = wait_ms;
    w->lease_ms = lease_ms;
    w->release = release;
    w->rc = 1;
}

/* ---- hold counts and what other owners see -------------------------------- */

static void hold_count_across_reentry(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    char buf[64];

    assert_int_equal(dlock_fx_hold_count(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);

    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 1);
    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 2);
    assert_int_equal(dlock_fx_is_held(l1), 1);

    /* Redisson's layout: a hash at the name, field = owner id, value = the
     * hold count. */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "type", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "hash");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", fx->name, 1, fx->owner1, NULL);
    assert_string_equal(buf, "2");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hlen", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "1");

    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 1);
    assert_int_equal(dlock_fx_is_locked(l1), 1);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_fx_is_held(l1), 0);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    /* one unlock too many */
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
}

typedef struct observer {
    dlock_rlock *l;
    const char *holder;
    char owner[DLOCK_OWNER_MAX];
    int rc_owner;
    int locked, held, held_as, try_rc;
    int64_t count, count_as;
    dlock_client *c;
} observer;

/* Another thread of the holder's own client is another owner. */
static void observer_main(void *arg)
{
    observer *o = arg;

    o->rc_owner = dlock_client_owner(o->c, o->owner, sizeof(o->owner));
    o->locked = o->held = o->held_as = -1;
    o->count = o->count_as = -1;
    if (dlock_is_locked(o->l, &o->locked) != 0)
        o->locked = -2;
    if (dlock_is_held(o->l, &o->held) != 0)
        o->held = -2;
    if (dlock_is_held_as(o->l, o->holder, &o->held_as) != 0)
        o->held_as = -2;
    if (dlock_hold_count(o->l, &o->count) != 0)
        o->count = -2;
    if (dlock_hold_count_as(o->l, o->holder, &o->count_as) != 0)
        o->count_as = -2;
    o->try_rc = dlock_try_lock(o->l, 0, 0);
}

static void seen_from_other_owners(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    observer o;
    int joined;

    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);

    memset(&o, 0, sizeof(o));
    o.l = l1;
    o.c = fx->c1;
    o.holder = fx->owner1;
    {
        dlock_fx_thread t;
        dlock_fx_start(&t, observer_main, &o);
        joined = dlock_fx_join(fx, &t, 10000, l1);
    }
    assert_int_equal(joined, 0);
    assert_int_equal(o.rc_owner, 0);
    assert_string_not_equal(o.owner, fx->owner1);
    assert_int_equal(o.locked, 1);
    assert_int_equal(o.held, 0);
    assert_int_equal(o.held_as, 1);
    assert_int_equal(o.count, 0);
    assert_int_equal(o.count_as, 2);
    assert_int_equal(o.try_rc, DLOCK_EBUSY);

    /* the other client (another process) */
    assert_int_equal(dlock_fx_is_locked(l2), 1);
    assert_int_equal(dlock_fx_is_held(l2), 0);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count(l2), 0);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 2);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner2), 0);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);

    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    /* free now: the other client gets it at once */
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_is_held_as(l1, fx->owner2), 1);
    assert_int_equal(dlock_unlock(l2), 0);
}

static void owner_ids(void **state)
{
    dlock_fx *fx = BEGIN(state);
    const char *id1 = dlock_client_id(fx->c1), *id2 = dlock_client_id(fx->c2);
    char again[DLOCK_OWNER_MAX];
    size_t i;

    assert_non_null(id1);
    assert_non_null(id2);
    /* libuuid's lower-case text form */
    assert_int_equal(strlen(id1), 36);
    for (i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
            assert_int_equal(id1[i], '-');
        else
            assert_non_null(strchr("0123456789abcdef", id1[i]));
    }
    assert_string_not_equal(id1, id2);
    /* owner = "<uuid>:<thread id>" */
    assert_memory_equal(fx->owner1, id1, 36);
    assert_int_equal(fx->owner1[36], ':');
    assert_true(strlen(fx->owner1) > 37);
    assert_true(strspn(fx->owner1 + 37, "0123456789") == strlen(fx->owner1 + 37));
    /* the same thread on the other client: same thread id, other uuid */
    assert_string_equal(fx->owner1 + 36, fx->owner2 + 36);
    assert_int_equal(dlock_client_owner(fx->c1, again, sizeof(again)), 0);
    assert_string_equal(again, fx->owner1);
}

/* ---- blocking and timed waits ---------------------------------------------- */

static void busy_while_held(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t t0;

    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    t0 = dlock_fx_now(fx);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock(l2, 0, fx->lease_ms), DLOCK_EBUSY);
    /* wait 0 is one attempt: no time passes on the clock for it */
    if (fx->is_mock)
        assert_int_equal(dlock_fx_now(fx), t0);
    assert_int_equal(dlock_fx_hold_count(l2), 0);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 1);
    /* the holder itself re-enters with try_lock */
    assert_int_equal(dlock_try_lock(l1, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 2);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(l1, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l2), 0);
}

static void try_lock_times_out(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    const int64_t wait = fx->is_mock ? 5000 : 150;
    int blocked = 0, early = 0, joined, base;
    waiter w;

    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    waiter_init(&w, fx, fx->c2, l2, OP_TRY, wait, fx->long_lease_ms, 1);
    base = dlock_fx_settle(fx);
    dlock_fx_start(&w.t, waiter_main, &w);
    if (fx->is_mock) {
        blocked = dlock_fx_wait_blocked(fx, base, 0);
        /* One virtual ms short of the wait: it must still be waiting. */
        dlock_fx_advance(fx, wait - 1);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 1);
    }
    joined = dlock_fx_join(fx, &w.t, fx->is_mock ? 5000 : wait + 5000, l1);

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, DLOCK_ETIMEDOUT);
    if (fx->is_mock) {
        /* exactly the wait, in virtual time */
        assert_int_equal(w.end_v - w.start_v, wait);
    } else {
        int64_t took = w.end_real - w.start_real;
        printf("  [redis] try_lock(wait %" PRId64 " ms) gave up after %" PRId64 " ms\n",
               wait, took);
        /* ms clocks may round by 1 ms; the upper bound is loose on purpose */
        assert_true(took >= wait - 1);
        assert_true(took < wait + 2000);
    }
    /* the holder was not disturbed */
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count_as(l1, w.owner), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
}

/* ---- leases ------------------------------------------------------------------ */

static void lease_expiry_lets_other_in(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t ttl;
    int rc;

    assert_int_equal(dlock_lock(l1, fx->lease_ms), 0);
    ttl = dlock_fx_remain_ttl(l1);
    assert_true(ttl > 0 && ttl <= fx->lease_ms);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);

    dlock_fx_advance(fx, fx->lease_ms + (fx->is_mock ? 1 : 100));
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_fx_remain_ttl(l2), -2);
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);

    /* The old owner is told the truth and changes nothing. */
    rc = dlock_unlock(l1);
    printf("  [%s] unlock after the lease expired: %s\n", fx->backend,
           dlock_errname(rc));
    assert_true(rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_is_held(l2), 1);
    assert_int_equal(dlock_fx_hold_count(l2), 1);
    assert_int_equal(dlock_fx_is_held_as(l1, fx->owner2), 1);
    assert_int_equal(dlock_fx_is_held_as(l1, fx->owner1), 0);
    /* the lost hold is forgotten: a second unlock is a plain non-owner's */
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_hold_count(l2), 1);
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
}

/* A lease means what it says: re-entry and a partial unlock set the TTL to
 * the lease again, they do not add to what is left. */
static void lease_reapplied_on_reentry(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    const int64_t lease = fx->is_mock ? fx->lease_ms : 400;
    const int64_t slack = fx->is_mock ? 0 : 100; /* real time passes */
    int64_t ttl;

    assert_int_equal(dlock_lock(l1, lease), 0);
    dlock_fx_advance(fx, lease / 2);
    ttl = dlock_fx_remain_ttl(l1);
    assert_true(ttl > 0 && ttl <= lease / 2);
    assert_int_equal(dlock_lock(l1, lease), 0);
    ttl = dlock_fx_remain_ttl(l1);
    assert_true(ttl <= lease && ttl >= lease - slack);

    dlock_fx_advance(fx, lease / 2);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 1);
    ttl = dlock_fx_remain_ttl(l1);
    assert_true(ttl <= lease && ttl >= lease - slack);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
}

static void remain_ttl_values(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    char buf[64];
    int existed = -1;
    int64_t ttl;

    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    assert_int_equal(dlock_lock(l1, 0), 0);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    assert_int_equal(dlock_unlock(l1), 0);

    /* A lock hash without expiry (as another Redisson client may leave
     * one): -1, held by that owner, busy for us. */
    dlock_fx_call_str(fx->c1, buf, sizeof(buf), "hset", fx->name, 2, "other-owner:1", "1");
    assert_string_equal(buf, "1");
    assert_int_equal(dlock_fx_remain_ttl(l1), -1);
    assert_int_equal(dlock_fx_is_locked(l1), 1);
    assert_int_equal(dlock_fx_is_held_as(l1, "other-owner:1"), 1);
    assert_int_equal(dlock_fx_hold_count_as(l2, "other-owner:1"), 1);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    existed = -1;
    assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    assert_int_equal(existed, 0);
}

/* ---- the watchdog -------------------------------------------------------------- */

static void watchdog_keeps_lease0_alive(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t ttl;

    assert_int_equal(dlock_lock(l1, 0), 0);
    ttl = dlock_fx_remain_ttl(l1);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);

    /* Four times the watchdog timeout: without renewals it would be long
     * gone. */
    dlock_fx_advance(fx, 4 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_is_locked(l2), 1);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
}

static void watchdog_partial_unlock_keeps_renewing(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);

    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_hold_count(l1), 1);

    dlock_fx_advance(fx, 4 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 1);
    assert_true(dlock_fx_remain_ttl(l2) > 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

static void watchdog_stops_after_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    char buf[64], pexp[32];

    assert_int_equal(dlock_lock(l1, 0), 0);
    dlock_fx_advance(fx, fx->watchdog_ms); /* renewed a few times */
    assert_int_equal(dlock_fx_is_held(l1), 1);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);

    /* A watchdog still renewing would find the lock gone and report it. */
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    /* Plant the same hash (owner field and all) with a TTL of one watchdog
     * timeout. A watchdog still renewing this hold would keep extending
     * it; a stopped one lets it expire. */
    snprintf(pexp, sizeof(pexp), "%" PRId64, fx->watchdog_ms);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, fx->owner1, "1");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "pexpire", fx->name, 1, pexp, NULL);
    assert_string_equal(buf, "1");
    dlock_fx_advance(fx, 2 * fx->watchdog_ms + (fx->is_mock ? 0 : 100));
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

static void lost_callback_on_force_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    char name[DLOCK_NAME_MAX + 1], owner[DLOCK_OWNER_MAX];
    int existed = -1, client = 0, n;

    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    /* the next renewal finds it gone */
    n = dlock_fx_wait_lost(fx, 1, 2 * fx->watchdog_ms);
    assert_int_equal(n, 1);
    dlock_fx_lost_last(fx, name, sizeof(name), owner, sizeof(owner), &client);
    assert_string_equal(name, fx->name);
    assert_string_equal(owner, fx->owner1);
    assert_int_equal(client, 1);

    /* reported once, then no longer renewed */
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 1);

    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    /* and the name is free for anyone */
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* ---- wake-ups ---------------------------------------------------------------- */

/* A waiter (on c2, in its own thread) blocks while c1 holds name with a long
 * lease; the holder unlocks (or c2 force-unlocks) and the waiter must get
 * the lock from the pub/sub message, not from polling: on the mock the
 * clock does not move, so nothing but the message can wake it; on Redis
 * the holder's lease is 10 s and the waiter must be in long before that. */
static void wake_case(dlock_fx *fx, const char *name, int op, int via_force)
{
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, name);
    const int64_t hold = fx->is_mock ? fx->long_lease_ms : 10000;
    int blocked, early, joined, base, existed = -1;
    uint64_t pubs = 0;
    int64_t v0, t0, latency;
    waiter w;

    assert_int_equal(dlock_lock(l1, hold), 0);
    waiter_init(&w, fx, fx->c2, l2, op, 2 * hold, fx->long_lease_ms, 1);
    base = dlock_fx_settle(fx);
    dlock_fx_start(&w.t, waiter_main, &w);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    early = dlock_fx_done(&w.t);
    if (fx->is_mock)
        pubs = dlock_mock_store_publish_count(fx->store);
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    if (via_force)
        assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    else
        assert_int_equal(dlock_unlock(l1), 0);
    joined = dlock_fx_join(fx, &w.t, fx->is_mock ? 5000 : hold / 2, l1);
    latency = w.end_real - t0;

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.held, 1);
    assert_int_equal(w.unlock_rc, 0);
    if (fx->is_mock) {
        /* no virtual time passed: the message did it */
        assert_int_equal(w.end_v, v0);
        assert_true(dlock_mock_store_publish_count(fx->store) >= pubs + 1);
    } else {
        printf("  [redis] waiter in %s woke %" PRId64 " ms after %s\n",
               op == OP_LOCK ? "lock" : "try_lock", latency,
               via_force ? "force_unlock" : "unlock");
        assert_true(latency < hold / 2);
    }
    if (via_force) {
        assert_int_equal(existed, 1);
        /* the holder's hold was taken away */
        assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    }
    assert_int_equal(dlock_fx_is_locked(l1), 0);
}

static void waiter_wakes_on_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    wake_case(fx, fx->name, OP_LOCK, 0);
}

static void waiter_wakes_on_force_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    wake_case(fx, fx->name, OP_LOCK, 1);
}

static void timed_waiter_wakes_on_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    wake_case(fx, fx->name, OP_TRY, 0);
}

/* The channel of a braced name drops the added braces (Redisson's rule):
 * publisher and subscriber must agree on it, odd bytes and all. */
static void waiter_wakes_odd_name(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160];

    snprintf(name, sizeof(name), "{%s} a\nb \xff", fx->name);
    wake_case(fx, name, OP_LOCK, 0);
}

/* Says which lock the watchdog reported lost, if any. */
static void report_lost(dlock_fx *fx)
{
    char name[DLOCK_NAME_MAX + 1], owner[DLOCK_OWNER_MAX];
    int client = 0;
    int n = dlock_fx_lost_last(fx, name, sizeof(name), owner, sizeof(owner), &client);

    if (n > 0)
        printf("  [%s] %d lost-lock callback(s), last on client %d: \"%s\" owner %s\n",
               fx->backend, n, client, name, owner);
}

/* No message comes when a lease runs out: the waiter must retry when the
 * holder's TTL (the reply of its attempt) has passed. */
static void waiter_gets_lock_when_lease_expires(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int blocked = 0, early = 0, joined, base, rc;
    waiter w;

    assert_int_equal(dlock_lock(l1, fx->lease_ms), 0);
    waiter_init(&w, fx, fx->c2, l2, OP_TRY, 10 * fx->lease_ms, fx->long_lease_ms, 1);
    base = dlock_fx_settle(fx);
    dlock_fx_start(&w.t, waiter_main, &w);
    if (fx->is_mock) {
        blocked = dlock_fx_wait_blocked(fx, base, 0);
        dlock_fx_advance(fx, fx->lease_ms - 1);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 2);
    }
    joined = dlock_fx_join(fx, &w.t, fx->is_mock ? 5000 : 10 * fx->lease_ms + 2000, l1);

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.held, 1);
    assert_int_equal(w.unlock_rc, 0);
    if (fx->is_mock) {
        /* in right at the expiry, not a full wait later */
        assert_true(w.end_v - w.start_v >= fx->lease_ms);
        assert_true(w.end_v - w.start_v <= fx->lease_ms + 1);
    } else {
        int64_t took = w.end_real - w.start_real;
        printf("  [redis] waiter got a %" PRId64 " ms lease's lock after %" PRId64 " ms\n",
               fx->lease_ms, took);
        assert_true(took < 5 * fx->lease_ms);
    }
    rc = dlock_unlock(l1);
    assert_true(rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER);
}

#define MANY 4

/* Several waiters, two per client (so two share each client's channel
 * subscription): one unlock starts a chain in which every waiter gets the
 * lock in turn, each woken by the previous one's unlock. */
static void many_waiters_all_get_it(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    const int64_t hold = fx->is_mock ? fx->long_lease_ms : 10000;
    waiter w[MANY];
    int i, base, blocked, joined = 0;
    int64_t v0, t0, last = 0;

    assert_int_equal(dlock_lock(l1, hold), 0);
    base = dlock_fx_settle(fx);
    for (i = 0; i < MANY; i++) {
        waiter_init(&w[i], fx, i % 2 ? fx->c2 : fx->c1, i % 2 ? l2 : l1, OP_LOCK, 0,
                    hold, 1);
        dlock_fx_start(&w[i].t, waiter_main, &w[i]);
    }
    if (fx->is_mock) {
        blocked = dlock_vclock_wait_sleepers(fx->vclock, base + MANY, 5000) == 0 &&
                  dlock_fx_settle(fx) >= base + MANY ? 0 : -1;
    } else {
        blocked = dlock_fx_wait_blocked(fx, base, 300);
    }
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(l1), 0);
    for (i = 0; i < MANY; i++)
        joined |= dlock_fx_join(fx, &w[i].t, fx->is_mock ? 10000 : hold / 2, l1);

    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    for (i = 0; i < MANY; i++) {
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(w[i].held, 1);
        assert_int_equal(w[i].unlock_rc, 0);
        if (w[i].end_real - t0 > last)
            last = w[i].end_real - t0;
        if (fx->is_mock)
            assert_int_equal(w[i].end_v, v0);
    }
    if (!fx->is_mock) {
        printf("  [redis] %d waiters all through %" PRId64 " ms after the unlock\n",
               MANY, last);
        assert_true(last < hold / 2);
    }
    assert_int_equal(dlock_fx_is_locked(l1), 0);
}

/* dlock_rlock_free stops the watchdog for that handle's holds: the lock
 * then expires like a crashed process's, and nobody is told it was lost. */
static void freed_handle_stops_renewal(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_rlock *lf = NULL;
    int64_t ttl;

    assert_int_equal(MAKE_LOCK(&lf, fx->c1, fx->name), 0);
    assert_int_equal(dlock_lock(lf, 0), 0);
    dlock_rlock_free(lf); /* the remote lock stays */
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);

    dlock_fx_advance(fx, fx->watchdog_ms + (fx->is_mock ? 1 : 150));
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* max_hold_ms caps renewal: the lock outlives its first lease, then runs
 * out, and the owner's unlock says so. */
static void max_hold_bounds_renewal(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l;
    char err[256] = "";
    int rc;

    if (fx->is_mock)
        rc = dlock_mock_backend_new(&b, fx->store);
    else
        rc = dlock_redis_backend_new(&b, dlock_fx_redis_url(), NULL, err, sizeof(err));
    assert_int_equal(rc, 0);
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    opts.max_hold_ms = 2 * fx->watchdog_ms;
    rc = dlock_client_new(&c, b, &opts);
    if (rc != 0)
        dlock_backend_free(b);
    assert_int_equal(rc, 0);
    if (fx->is_mock)
        dlock_fx_settle(fx);
    l = dlock_fx_lock(fx, c, fx->name);
    dlock_client_free(c); /* l keeps it; teardown frees l */

    assert_int_equal(dlock_lock(l, 0), 0);
    /* past the first lease: renewed */
    dlock_fx_advance(fx, fx->watchdog_ms * 3 / 2);
    assert_int_equal(dlock_fx_is_locked(l2), 1);
    /* past the cap plus a lease: gone */
    dlock_fx_advance(fx, 2 * fx->watchdog_ms + (fx->is_mock ? 1 : 200));
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
}

/* What the fork() child of forked_child_refused tries. */
typedef struct child_args {
    dlock_client *c;
    dlock_rlock *l; /* its parent's lock, on c */
} child_args;

static void child_calls(void *arg, int *rcs)
{
    child_args *a = arg;
    dlock_rlock *x = NULL;
    int v;

    rcs[0] = dlock_lock(a->l, 0);
    rcs[1] = dlock_try_lock(a->l, 0, 0);
    rcs[2] = dlock_is_locked(a->l, &v);
    rcs[3] = MAKE_LOCK(&x, a->c, "child");
}

/* A fork() child must not act under its parent's identity. */
static void forked_child_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    child_args args;
    int rcs[4] = {1, 1, 1, 1};

    args.c = fx->c1;
    args.l = l1;
    dlock_fx_run_in_child(child_calls, &args, rcs, 4);
    assert_int_equal(rcs[0], DLOCK_EFORKED);
    assert_int_equal(rcs[1], DLOCK_EFORKED);
    assert_int_equal(rcs[2], DLOCK_EFORKED);
    assert_int_equal(rcs[3], DLOCK_EFORKED);
    /* nothing happened, and the parent goes on as before */
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_unlock(l1), 0);
}

/* ---- mutual exclusion ---------------------------------------------------------- */

#define MX_THREADS 8
#define MX_ITERS 1000

typedef struct mx_shared {
    int inside;   /* threads in the critical section (atomics) */
    int overlaps; /* times a thread found someone else in it */
} mx_shared;

typedef struct mx_worker {
    mx_shared *shared;
    dlock_rlock *l;
    dlock_client *c;
    const char *key;
    int64_t lease_ms;
    int errors, first_err, done;
    char where[32];
    dlock_fx_thread t;
} mx_worker;

static void mx_main(void *arg)
{
    mx_worker *w = arg;
    int i, rc;

    for (i = 0; i < MX_ITERS; i++) {
        long long v = -1;

        rc = dlock_lock(w->l, w->lease_ms);
        if (rc != 0) {
            w->errors++;
            w->first_err = rc;
            snprintf(w->where, sizeof(w->where), "lock #%d", i);
            return;
        }
        if (__atomic_add_fetch(&w->shared->inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&w->shared->overlaps, 1, __ATOMIC_SEQ_CST);
        /* get and set in two round trips: only the lock makes them atomic */
        rc = dlock_fx_counter_get(w->c, w->key, &v);
        if (rc == 0)
            rc = dlock_fx_counter_set(w->c, w->key, v + 1);
        __atomic_sub_fetch(&w->shared->inside, 1, __ATOMIC_SEQ_CST);
        if (rc != 0 && w->errors++ == 0) {
            w->first_err = rc;
            snprintf(w->where, sizeof(w->where), "counter #%d", i);
        }
        rc = dlock_unlock(w->l);
        if (rc != 0) {
            w->errors++;
            w->first_err = rc;
            snprintf(w->where, sizeof(w->where), "unlock #%d", i);
            return;
        }
        w->done++;
    }
}

static void mutual_exclusion(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    mx_shared shared = {0, 0};
    mx_worker w[MX_THREADS];
    char key[160];
    long long total = -1;
    int i, joined = 0, errors = 0;
    int64_t t0 = dlock_fx_real_ms();

    snprintf(key, sizeof(key), "%s:counter", fx->name);
    memset(w, 0, sizeof(w));
    for (i = 0; i < MX_THREADS; i++) {
        w[i].shared = &shared;
        /* half the threads on each client: two processes, four threads each */
        w[i].c = i % 2 ? fx->c2 : fx->c1;
        w[i].l = i % 2 ? l2 : l1;
        w[i].key = key;
        /* half watchdog-renewed, half with a lease nothing outlives */
        w[i].lease_ms = (i / 2) % 2 ? fx->long_lease_ms : 0;
    }
    for (i = 0; i < MX_THREADS; i++)
        dlock_fx_start(&w[i].t, mx_main, &w[i]);
    for (i = 0; i < MX_THREADS; i++)
        joined |= dlock_fx_join(fx, &w[i].t, 120000, w[i].l);
    printf("  [%s] %d threads x %d lock/get/set/unlock: %" PRId64 " ms\n",
           fx->backend, MX_THREADS, MX_ITERS, dlock_fx_real_ms() - t0);

    for (i = 0; i < MX_THREADS; i++) {
        if (w[i].errors)
            printf("  [%s] thread %d: %d errors, first %s at %s (%s)\n",
                   fx->backend, i, w[i].errors, dlock_errname(w[i].first_err),
                   w[i].where, dlock_errmsg(w[i].l));
        errors += w[i].errors;
    }
    assert_int_equal(joined, 0);
    assert_int_equal(errors, 0);
    assert_int_equal(shared.overlaps, 0);
    assert_int_equal(dlock_fx_counter_get(fx->c1, key, &total), 0);
    assert_int_equal(total, MX_THREADS * MX_ITERS);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    report_lost(fx);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* Churn: threads lock (lease 0) and unlock their own locks in a tight loop
 * while the watchdog renews every period. A renewal that races with a
 * final unlock must not be reported as a lost lock: the lock was released
 * on purpose. */
typedef struct churn {
    dlock_rlock *l;
    int *stop;
    int errors, first_err;
    long rounds;
} churn;

static void churn_main(void *arg)
{
    churn *ch = arg;
    int rc;

    while (!__atomic_load_n(ch->stop, __ATOMIC_SEQ_CST)) {
        rc = dlock_lock(ch->l, 0);
        if (rc == 0)
            rc = dlock_unlock(ch->l);
        if (rc != 0 && ch->errors++ == 0)
            ch->first_err = rc;
        __atomic_add_fetch(&ch->rounds, 1, __ATOMIC_RELAXED);
    }
}

static long churn_rounds(churn *ch, int n)
{
    long sum = 0;
    int i;
    for (i = 0; i < n; i++)
        sum += __atomic_load_n(&ch[i].rounds, __ATOMIC_RELAXED);
    return sum;
}

#define CHURN_THREADS 4

static void watchdog_races_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    churn ch[CHURN_THREADS];
    dlock_fx_thread t[CHURN_THREADS];
    char name[160];
    int stop = 0, i, joined = 0, errors = 0, periods;
    long rounds = 0;

    memset(ch, 0, sizeof(ch));
    for (i = 0; i < CHURN_THREADS; i++) {
        snprintf(name, sizeof(name), "%s:%d", fx->name, i);
        ch[i].l = dlock_fx_lock(fx, i % 2 ? fx->c2 : fx->c1, name);
        ch[i].stop = &stop;
    }
    for (i = 0; i < CHURN_THREADS; i++)
        dlock_fx_start(&t[i], churn_main, &ch[i]);
    /* Renewal rounds of each client's watchdog: 1.5 s of real time on
     * Redis; on the mock, where they cost nothing but the race window is
     * narrower, more of them. */
    periods = fx->is_mock ? 200 : 15;
    for (i = 0; i < periods; i++) {
        /* A virtual advance takes microseconds: on the mock, let the
         * threads run a little before each renewal so that the two meet. */
        if (fx->is_mock) {
            long before = churn_rounds(ch, CHURN_THREADS);
            int64_t until = dlock_fx_real_ms() + 1000;
            while (churn_rounds(ch, CHURN_THREADS) < before + 20 &&
                   dlock_fx_real_ms() < until)
                dlock_fx_sleep_real(1);
        }
        dlock_fx_advance(fx, fx->watchdog_ms / 3);
    }
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < CHURN_THREADS; i++)
        joined |= dlock_fx_join(fx, &t[i], 10000, ch[i].l);
    for (i = 0; i < CHURN_THREADS; i++) {
        errors += ch[i].errors;
        rounds += ch[i].rounds;
        if (ch[i].errors)
            printf("  [%s] churn thread %d: first error %s\n", fx->backend, i,
                   dlock_errname(ch[i].first_err));
    }
    printf("  [%s] %ld lock/unlock rounds during %d watchdog periods\n",
           fx->backend, rounds, periods);
    assert_int_equal(joined, 0);
    assert_int_equal(errors, 0);
    assert_true(rounds > 0);
    report_lost(fx);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* ---- explicit owners --------------------------------------------------------- */

typedef struct xowner {
    dlock_fx *fx;
    dlock_rlock *l;
    char owner[DLOCK_OWNER_MAX];
    int owner_rc, lock_rc;
    /* thread B */
    int plain_unlock_rc, held_after, unlock_as_rc, locked_after;
    int64_t count_after;
} xowner;

static void xowner_lock(void *arg)
{
    xowner *x = arg;
    x->owner_rc = dlock_client_owner(x->fx->c1, x->owner, sizeof(x->owner));
    x->lock_rc = dlock_lock_as(x->l, x->owner, 0);
}

static void xowner_unlock(void *arg)
{
    xowner *x = arg;
    x->held_after = x->locked_after = -1;
    x->count_after = -1;
    /* B's own owner id does not hold it */
    x->plain_unlock_rc = dlock_unlock(x->l);
    if (dlock_is_held_as(x->l, x->owner, &x->held_after) != 0)
        x->held_after = -2;
    if (dlock_hold_count_as(x->l, x->owner, &x->count_after) != 0)
        x->count_after = -2;
    x->unlock_as_rc = dlock_unlock_as(x->l, x->owner);
    if (dlock_is_locked(x->l, &x->locked_after) != 0)
        x->locked_after = -2;
}

/* An attempt that ran but whose reply was lost, retried: one hold, freed
 * by one unlock (lost_reply.h). */
static void retry_after_lost_reply_counts_once(void **state)
{
    dlock_fx *fx = BEGIN(state);
    const dlock_fx_lock_type *type = dlock_fx_lock_type_current();

    dlock_fx_lost_reply_check(fx, type->make, type->make, strcmp(type->name, "simple") != 0);
}

static void explicit_owner_across_threads(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_fx_thread a, b;
    xowner x;
    int ja, jb;
    const char *job = "worker-7/job 42";

    memset(&x, 0, sizeof(x));
    x.fx = fx;
    x.l = l1;
    dlock_fx_start(&a, xowner_lock, &x);
    ja = dlock_fx_join(fx, &a, 10000, l1);
    assert_int_equal(ja, 0);
    assert_int_equal(x.owner_rc, 0);
    assert_int_equal(x.lock_rc, 0);
    assert_string_not_equal(x.owner, fx->owner1);

    /* thread A is gone; the watchdog still renews its lease-0 hold */
    dlock_fx_advance(fx, 4 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_is_held_as(l2, x.owner), 1);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    dlock_fx_start(&b, xowner_unlock, &x);
    jb = dlock_fx_join(fx, &b, 10000, l1);
    assert_int_equal(jb, 0);
    assert_int_equal(x.plain_unlock_rc, DLOCK_ENOTOWNER);
    assert_int_equal(x.held_after, 1);
    assert_int_equal(x.count_after, 1);
    assert_int_equal(x.unlock_as_rc, 0);
    assert_int_equal(x.locked_after, 0);

    /* the watchdog stopped with the unlock from the other thread */
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    /* any string is an owner id: the other client sees the same holder */
    assert_int_equal(dlock_lock_as(l1, job, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock_as(l1, job, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_hold_count_as(l2, job), 2);
    assert_int_equal(dlock_try_lock(l1, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock_as(l1, job), 0);
    assert_int_equal(dlock_unlock_as(l1, job), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
}

/* ---- bad input ----------------------------------------------------------------- */

static dlock_backend *new_backend(dlock_fx *fx)
{
    dlock_backend *b = NULL;
    char err[256];
    int rc;

    if (fx->is_mock)
        rc = dlock_mock_backend_new(&b, fx->store);
    else
        rc = dlock_redis_backend_new(&b, dlock_fx_redis_url(), NULL, err, sizeof(err));
    assert_int_equal(rc, 0);
    assert_non_null(b);
    return b;
}

static void bad_input_null(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_client_options bad = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = (dlock_client *)&c; /* must be reset to NULL */
    dlock_rlock *nl = (dlock_rlock *)&nl;
    dlock_backend *b;
    char buf[DLOCK_OWNER_MAX], err[256];
    int v = 7;
    int64_t n = 7;

    /* the client */
    assert_int_equal(dlock_client_new(NULL, NULL, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_client_new(&c, NULL, NULL), DLOCK_EINVAL);
    assert_null(c);
    b = new_backend(fx);
    assert_int_equal(dlock_client_new(NULL, b, NULL), DLOCK_EINVAL);
    bad.watchdog_timeout_ms = -1;
    c = (dlock_client *)&c;
    assert_int_equal(dlock_client_new(&c, b, &bad), DLOCK_EINVAL);
    assert_null(c);
    dlock_backend_free(b); /* failed constructors leave it to us */
    assert_int_equal(dlock_client_connect(NULL, "mock:", NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_client_connect(&c, NULL, NULL, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_client_owner(NULL, buf, sizeof(buf)), DLOCK_EINVAL);
    assert_int_equal(dlock_client_owner(fx->c1, NULL, sizeof(buf)), DLOCK_EINVAL);
    assert_int_equal(dlock_client_owner(fx->c1, buf, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_client_owner(fx->c1, buf, 37), DLOCK_EINVAL);
    assert_null(dlock_client_id(NULL));
    assert_null(dlock_client_backend(NULL));
    dlock_client_free(NULL);

    /* the constructor */
    assert_int_equal(MAKE_LOCK(NULL, fx->c1, fx->name), DLOCK_EINVAL);
    assert_int_equal(MAKE_LOCK(&nl, NULL, fx->name), DLOCK_EINVAL);
    assert_null(nl);
    nl = (dlock_rlock *)&nl;
    assert_int_equal(MAKE_LOCK(&nl, fx->c1, NULL), DLOCK_EINVAL);
    assert_null(nl);
    dlock_rlock_free(NULL);

    /* every lock function */
    assert_int_equal(dlock_lock(NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_as(NULL, fx->owner1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_as(l, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock(NULL, 0, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock_as(NULL, fx->owner1, 0, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock_as(l, NULL, 0, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock(NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock_as(NULL, fx->owner1), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock_as(l, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_force_unlock(NULL, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_is_locked(NULL, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_is_locked(l, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_is_held(NULL, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_is_held(l, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_is_held_as(NULL, fx->owner1, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_is_held_as(l, NULL, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_is_held_as(l, fx->owner1, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_hold_count(NULL, &n), DLOCK_EINVAL);
    assert_int_equal(dlock_hold_count(l, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_hold_count_as(NULL, fx->owner1, &n), DLOCK_EINVAL);
    assert_int_equal(dlock_hold_count_as(l, NULL, &n), DLOCK_EINVAL);
    assert_int_equal(dlock_hold_count_as(l, fx->owner1, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_remain_ttl(NULL, &n), DLOCK_EINVAL);
    assert_int_equal(dlock_remain_ttl(l, NULL), DLOCK_EINVAL);
    assert_non_null(dlock_errmsg(NULL));
    assert_null(dlock_rlock_name(NULL));
    /* existed may be NULL */
    assert_int_equal(dlock_force_unlock(l, NULL), 0);

    /* owner ids: empty and too long are refused, the longest one works */
    {
        char longest[DLOCK_OWNER_MAX + 1];
        memset(longest, 'o', sizeof(longest));
        longest[DLOCK_OWNER_MAX] = '\0';
        assert_int_equal(dlock_lock_as(l, "", 0), DLOCK_EINVAL);
        assert_int_equal(dlock_unlock_as(l, ""), DLOCK_EINVAL);
        assert_int_equal(dlock_lock_as(l, longest, 0), DLOCK_EINVAL);
        assert_int_equal(dlock_is_held_as(l, longest, &v), DLOCK_EINVAL);
        /* none of the bad calls touched the store (checked before the
         * valid lock below: a fenced lock's token counter outlives it) */
        if (fx->is_mock)
            assert_int_equal(dlock_mock_store_dbsize(fx->store), 0);
        longest[DLOCK_OWNER_MAX - 1] = '\0';
        assert_int_equal(dlock_lock_as(l, longest, fx->long_lease_ms), 0);
        assert_int_equal(dlock_fx_is_held_as(l, longest), 1);
        assert_int_equal(dlock_unlock_as(l, longest), 0);
    }

    /* the error table */
    assert_string_equal(dlock_errname(DLOCK_ELOST), "ELOST");
    assert_string_equal(dlock_errname(-99), "UNKNOWN");
    assert_string_equal(dlock_strerror(12345), "unknown error");
    assert_string_not_equal(dlock_strerror(DLOCK_EBUSY), dlock_strerror(DLOCK_ECONN));

    assert_int_equal(dlock_fx_is_locked(l), 0);
}

static void bad_names(void **state)
{
    dlock_fx *fx = BEGIN(state);
    /* Freed by teardown: a type that fails here must not leak it (the
     * conformance kit runs these cases on types that may fail). */
    char *name = dlock_fx_keep(fx, malloc(DLOCK_NAME_MAX + 2), free);
    dlock_rlock *l = (dlock_rlock *)&l, *l1, *l2;

    assert_int_equal(MAKE_LOCK(&l, fx->c1, ""), DLOCK_EINVAL);
    assert_null(l);
    memset(name, 'n', DLOCK_NAME_MAX + 1);
    memcpy(name, fx->name, strlen(fx->name)); /* unique on this server */
    name[DLOCK_NAME_MAX + 1] = '\0';
    l = (dlock_rlock *)&l;
    assert_int_equal(MAKE_LOCK(&l, fx->c1, name), DLOCK_EINVAL);
    assert_null(l);

    /* exactly DLOCK_NAME_MAX bytes: a lock like any other */
    name[DLOCK_NAME_MAX] = '\0';
    l1 = dlock_fx_lock(fx, fx->c1, name);
    l2 = dlock_fx_lock(fx, fx->c2, name);
    assert_int_equal(strlen(dlock_rlock_name(l1)), DLOCK_NAME_MAX);
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
}

/* Whether name and its wake-up channel share a slot (always, but on Redis
 * Cluster: api/dlock/sys/backend.h key_slot). */
static int one_slot(dlock_fx *fx, const char *name)
{
    dlock_backend *b = dlock_client_backend(fx->c1);
    char channel[300];
    snprintf(channel, sizeof(channel),
             strchr(name, '{') ? "redisson_lock__channel:%s" : "redisson_lock__channel:{%s}",
             name);
    return dlock_backend_key_slot(b, channel, strlen(channel)) ==
           dlock_backend_key_slot(b, name, strlen(name));
}

static void odd_names_end_to_end(void **state)
{
    dlock_fx *fx = BEGIN(state);
    static const char *const suffixes[] = {
        "br{ace}s", "}{", "{", "with space", "new\nline", "tab\tcr\r",
        "\xff\xfe\x80 not utf-8", "quote\"'\\", "%s%n"};
    char name[256], buf[64];
    size_t i;

    for (i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        dlock_rlock *l1, *l2;

        snprintf(name, sizeof(name), "%s %s", fx->name, suffixes[i]);
        if (!one_slot(fx, name)) {
            /* Redis Cluster: a '{' without a {tag} leaves the name's keys
             * in different slots; refused (tests/backends/redis/cluster_test.c) */
            dlock_rlock *l = NULL;
            assert_int_equal(dlock_fx_lock_type_current()->make(&l, fx->c1, name),
                             DLOCK_EINVAL);
            assert_null(l);
            continue;
        }
        l1 = dlock_fx_lock(fx, fx->c1, name);
        l2 = dlock_fx_lock(fx, fx->c2, name);
        assert_string_equal(dlock_rlock_name(l1), name);
        assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
        assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
        assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
        assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 2);
        /* stored under exactly the name given */
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", name, 1, fx->owner1, NULL);
        assert_string_equal(buf, "2");
        assert_int_equal(dlock_unlock(l1), 0);
        assert_int_equal(dlock_unlock(l1), 0);
        assert_int_equal(dlock_fx_is_locked(l2), 0);
        assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
        assert_int_equal(dlock_unlock(l2), 0);
    }
}

static void negative_times(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);

    assert_int_equal(dlock_lock(l, -1), DLOCK_EINVAL);
    assert_true(strlen(dlock_errmsg(l)) > 0);
    assert_int_equal(dlock_lock(l, INT64_MIN), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_as(l, fx->owner1, -5), DLOCK_EINVAL);
    /* -1 is not "forever" for the caller: any negative wait is refused */
    assert_int_equal(dlock_try_lock(l, -1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock(l, -2, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock(l, INT64_MIN, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock(l, 0, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock_as(l, fx->owner1, -1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock_as(l, fx->owner1, 0, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_fx_is_locked(l), 0);
    assert_int_equal(dlock_fx_hold_count(l), 0);
}

static void unknown_url_scheme(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = (dlock_client *)&c;
    char err[256] = "";

    assert_int_equal(dlock_client_connect(&c, "memcached://127.0.0.1:11211",
                                          NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_null(c);
    printf("  [%s] unknown scheme: %s\n", fx->backend, err);
    assert_true(strlen(err) > 0);
    assert_non_null(strstr(err, "memcached"));
    err[0] = '\0';
    assert_int_equal(dlock_client_connect(&c, "", NULL, err, sizeof(err)), DLOCK_EINVAL);
    assert_true(strlen(err) > 0);
    /* errbuf is optional */
    assert_int_equal(dlock_client_connect(&c, "nope", NULL, NULL, 0), DLOCK_EINVAL);
    /* a password never shows in the message */
    err[0] = '\0';
    assert_int_equal(dlock_client_connect(&c, "rediss://u:s3cret@h:1?tls=s3cret", NULL,
                                          err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "unknown parameter"));
    assert_null(strstr(err, "s3cret"));
    /* (nor any other part of a URL that holds one: a raw '&' or '@' in a
     * password moves its rest into the names; one without gets the name) */
    assert_null(strstr(err, "'tls'"));
    err[0] = '\0';
    assert_int_equal(dlock_client_connect(&c, "rediss://h:1?tls=1", NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "'tls'"));
    /* and the good schemes work through the same call */
    if (fx->is_mock) {
        assert_int_equal(dlock_client_connect(&c, "mock:", NULL, err, sizeof(err)), 0);
    } else {
        assert_int_equal(dlock_client_connect(&c, dlock_fx_redis_url(), NULL, err,
                                              sizeof(err)),
                         0);
    }
    assert_non_null(c);
    dlock_client_free(c);
}

/* Runs w on its own thread and waits up to real_ms of real time, without
 * moving the clock. Returns 1 if it had to be freed by deleting key (it was
 * waiting when it should have failed), else 0. */
static int run_unmoved(dlock_fx *fx, waiter *w, int64_t real_ms, const char *key)
{
    int hung;

    dlock_fx_start(&w->t, waiter_main, w);
    hung = dlock_fx_wait_done(&w->t, real_ms) != 0;
    if (hung) {
        dlock_reply *r = NULL;
        if (dlock_fx_call(fx->c2, &r, "del", key, 0) == 0)
            dlock_reply_free(r);
    }
    dlock_fx_join(fx, &w->t, 10000, w->l);
    return hung;
}

static void wrong_type_under_name(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    char buf[64];
    const char *msg;
    int rc, hung;
    waiter w;

    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1, "precious", NULL);
    assert_string_equal(buf, "OK");

    /* lock() would wait forever for a "holder" that is not one: it must
     * fail instead (on its own thread, so that a hang fails the case) */
    waiter_init(&w, fx, fx->c1, l1, OP_LOCK, 0, 0, 1);
    hung = run_unmoved(fx, &w, 10000, fx->name);
    assert_int_equal(hung, 0);
    assert_int_equal(w.rc, DLOCK_EPROTO);
    msg = dlock_errmsg(l1);
    printf("  [%s] lock on a string: %s\n", fx->backend, msg);
    assert_true(strstr(msg, "WRONGTYPE") != NULL || strstr(msg, "wrong kind") != NULL);

    /* an error ends a timed wait at once instead of waiting it out (on the
     * mock the clock does not move: a waiting call would never return) */
    waiter_init(&w, fx, fx->c1, l1, OP_TRY, 2000, fx->lease_ms, 1);
    hung = run_unmoved(fx, &w, fx->is_mock ? 5000 : 1500, fx->name);
    assert_int_equal(hung, 0);
    assert_int_equal(w.rc, DLOCK_EPROTO);
    assert_int_equal(dlock_try_lock(l1, 0, fx->lease_ms), DLOCK_EPROTO);

    rc = dlock_unlock(l1);
    assert_true(rc == DLOCK_EPROTO || rc == DLOCK_ENOTOWNER);
    assert_int_equal(dlock_hold_count(l1, &(int64_t){0}), DLOCK_EPROTO);

    /* the string is untouched, and has no expiry */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "precious");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "pttl", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "-1");
    /* nothing is left for the watchdog to renew */
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "precious");
}

static void unlock_by_non_owner(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t ttl;

    /* nobody holds it */
    assert_int_equal(dlock_unlock(l2), DLOCK_ENOTOWNER);
    assert_true(strlen(dlock_errmsg(l2)) > 0);

    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(l2), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock_as(l2, "someone-else:1"), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 1);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > fx->long_lease_ms / 2);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
}

/* A lock handle keeps its client alive (client.h, Lifetime). */
static void lock_outlives_client(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char err[256] = "";

    assert_int_equal(dlock_client_connect(&c, fx->is_mock ? "mock:" : dlock_fx_redis_url(),
                                          NULL, err, sizeof(err)),
                     0);
    assert_int_equal(MAKE_LOCK(&l, c, fx->name), 0);
    dlock_client_free(c);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(dlock_hold_count(l, &(int64_t){0}), 0);
    if (!fx->is_mock) /* "mock:" is a private store, invisible to c2 */
        assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
}

/* ---- the suite --------------------------------------------------------------- */

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest reentrant_cases[] = {
    CASE(hold_count_across_reentry),
    CASE(seen_from_other_owners),
    CASE(owner_ids),
    CASE(busy_while_held),
    CASE(try_lock_times_out),
    CASE(lease_expiry_lets_other_in),
    CASE(lease_reapplied_on_reentry),
    CASE(remain_ttl_values),
    CASE(watchdog_keeps_lease0_alive),
    CASE(watchdog_partial_unlock_keeps_renewing),
    CASE(watchdog_stops_after_unlock),
    CASE(lost_callback_on_force_unlock),
    CASE(waiter_wakes_on_unlock),
    CASE(waiter_wakes_on_force_unlock),
    CASE(timed_waiter_wakes_on_unlock),
    CASE(waiter_wakes_odd_name),
    CASE(waiter_gets_lock_when_lease_expires),
    CASE(many_waiters_all_get_it),
    CASE(freed_handle_stops_renewal),
    CASE(max_hold_bounds_renewal),
    CASE(forked_child_refused),
    CASE(mutual_exclusion),
    CASE(watchdog_races_unlock),
    CASE(explicit_owner_across_threads),
    CASE(retry_after_lost_reply_counts_once),
    CASE(bad_input_null),
    CASE(bad_names),
    CASE(odd_names_end_to_end),
    CASE(negative_times),
    CASE(unknown_url_scheme),
    CASE(wrong_type_under_name),
    CASE(unlock_by_non_owner),
    CASE(lock_outlives_client),
};

/* The lock types that promise the reentrant lock's whole RLock contract:
 * every case here runs, unchanged, for each of them. */
static const dlock_fx_lock_type lock_types[] = {
    {"reentrant", dlock_reentrant_new},
    {"fair", dlock_fair_new},
    {"fenced", dlock_fenced_new},
};

#define NTYPES (sizeof(lock_types) / sizeof(lock_types[0]))

int dlock_test_conformance_count(void)
{
    return (int)(NTYPES * sizeof(reentrant_cases) / sizeof(reentrant_cases[0]));
}

/* Runs every case on backend ("mock" or "redis"; for redis, main has set the
 * server URL with dlock_fx_set_redis_url), once per lock type. Returns the
 * number of failures. */
int dlock_test_conformance(const char *backend)
{
    int failed = 0;
    size_t i;

    for (i = 0; i < NTYPES; i++)
        failed += dlock_test_conformance_type(&lock_types[i], backend,
                                              dlock_fx_conformance_skips());
    return failed;
}

/* Declared in tests/harness/fixture.h. Runs the cases above on one lock
 * type, but those named in skip (NULL, or a NULL-terminated list of case names, each with the reason at its
 * definition; "mock:name" skips it on the mock only): for the types whose
 * contract differs on purpose (the simple lock is not reentrant, the spin
 * lock has no pub/sub). The group is "conformance/<type> on <backend>".
 * Returns the group's failures. */
int dlock_test_conformance_type(const dlock_fx_lock_type *type, const char *backend,
                                const char *const *skip)
{
    struct CMUnitTest run[sizeof(reentrant_cases) / sizeof(reentrant_cases[0])];
    size_t i, n = 0, k;
    char group[96];
    int failed;

    for (i = 0; i < sizeof(reentrant_cases) / sizeof(reentrant_cases[0]); i++) {
        for (k = 0; skip && skip[k]; k++) {
            const char *name = skip[k];
            if (strncmp(name, "mock:", 5) == 0 &&
                dlock_fx_group_for(backend) != dlock_fx_group_redis)
                name += 5;
            if (strcmp(name, reentrant_cases[i].name) == 0)
                break;
        }
        if ((!skip || !skip[k]) && !dlock_fx_skipped(reentrant_cases[i].name) &&
            dlock_test_case_wanted(reentrant_cases[i].name))
            run[n++] = reentrant_cases[i];
    }
    if (n == 0)
        return 0;
    dlock_fx_use_lock_type(type);
    snprintf(group, sizeof(group), "conformance/%s on %s", type->name, backend);
    failed = dlock_test_count((int)n, _cmocka_run_group_tests(
        group, run, n, dlock_fx_group_for(backend), NULL));
    dlock_fx_use_lock_type(NULL);
    return failed;
}

/* A lock type's whole run on backend: the generic cases (with its skips),
 * then its own cases in the group "<type> lock on <backend>", with the
 * type selected for dlock_fx_lock. Returns the failures. */
int dlock_test_lock_type(const char *backend, const dlock_fx_lock_type *type,
                         const char *const *skip, const struct CMUnitTest *own,
                         size_t nown)
{
    int failed = dlock_test_conformance_type(type, backend, skip);
    char group[96];

    dlock_fx_use_lock_type(type);
    snprintf(group, sizeof(group), "%s lock on %s", type->name, backend);
    failed += dlock_fx_run_cases(group, own, nown, dlock_fx_group_for(backend));
    dlock_fx_use_lock_type(NULL);
    return failed;
}
