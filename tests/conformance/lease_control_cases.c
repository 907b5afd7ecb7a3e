/*
 * The conformance cases of lease control and what the client reports about
 * it: dlock_extend / dlock_extend_as, per-lock and max_hold_ms on_lost, the
 * client's on_lost setter, the log hook's lines for a renewal failure and a
 * lost lock, and the client's metrics after a known sequence (exact on the
 * mock's virtual clock). Each case runs on every backend:
 * dlock_test_lease_control("mock"), dlock_test_lease_control("redis"), ...
 * The Redis-only side (the log hook and the reconnect counter across a
 * server restart) is tests/backends/redis/log_hook_test.c.
 *
 * Renewal failures are made by wrapping the case's backend (mock or Redis)
 * in a pass-through backend that fails the renewal scripts on request
 * (tests/harness/failing_backend.h): the store underneath is the real one.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"
#include "../harness/failing_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/sys/backend.h"
#include "../harness/log_capture.h"

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- a log capture (tests/harness/log_capture.h) ------------------------ */

static void cap_stop(void *unused)
{
    (void)unused;
    dlock_set_log(NULL, NULL, 0);
}

/* Captures every line until the case's teardown. */
static void cap_start(dlock_fx *fx)
{
    static int token; /* what the fixture keeps: the capture is global */

    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_DEBUG), 0);
    dlock_fx_keep(fx, &token, cap_stop);
}

static void free_lock(void *o) { dlock_rlock_free(o); }
static void free_sem(void *o) { dlock_semaphore_free(o); }

/* A client of its own (fresh metrics) on the fixture's store or server,
 * behind a failing backend (*fb, owned by the client), with opts' times
 * (max_hold_ms) and no on_lost. Kept for teardown. */
static dlock_client *own_client(dlock_fx *fx, int64_t max_hold_ms,
                                dlock_test_failing **fb)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;

    o.max_hold_ms = max_hold_ms;
    return dlock_fx_failing_client(fx, &o, fb);
}

/* ---- a lost-lock recorder ---------------------------------------------- */

typedef struct lost_rec {
    pthread_mutex_t mu;
    int n;
    char name[DLOCK_NAME_MAX + 1];
    char owner[DLOCK_OWNER_MAX];
} lost_rec;

static void on_lost_rec(void *arg, const char *name, const char *owner)
{
    lost_rec *r = arg;

    pthread_mutex_lock(&r->mu);
    r->n++;
    snprintf(r->name, sizeof(r->name), "%s", name);
    snprintf(r->owner, sizeof(r->owner), "%s", owner);
    pthread_mutex_unlock(&r->mu);
}

static int lost_n(lost_rec *r)
{
    int n;

    pthread_mutex_lock(&r->mu);
    n = r->n;
    pthread_mutex_unlock(&r->mu);
    return n;
}

/* Lets time pass in watchdog steps until r saw n calls (or max_ms). */
static int wait_rec(dlock_fx *fx, lost_rec *r, int n, int64_t max_ms)
{
    int64_t step = fx->is_mock ? fx->watchdog_ms / 3 : 10, spent = 0;

    while (lost_n(r) < n && spent < max_ms) {
        dlock_fx_advance(fx, step);
        spent += step;
    }
    return lost_n(r);
}

/* The margin past an expiry: exact on the virtual clock, generous for
 * Redis's real one. */
static int64_t past(dlock_fx *fx)
{
    return fx->is_mock ? 1 : 150;
}

/* ---- dlock_extend -------------------------------------------------------- */

/* While held: the lease is set (longer, then shorter), the count kept,
 * and the lock outlives its first lease. */
static void extend_while_held(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t ttl, n = 0;

    assert_int_equal(dlock_lock(l, fx->lease_ms), 0);
    assert_int_equal(dlock_lock(l, fx->lease_ms), 0); /* two holds */
    assert_int_equal(dlock_extend(l, fx->long_lease_ms), 0);
    dlock_fx_advance(fx, fx->lease_ms + past(fx));
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > fx->lease_ms && ttl <= fx->long_lease_ms);
    assert_int_equal(dlock_hold_count(l, &n), 0);
    assert_int_equal(n, 2);

    /* shorter: the lease is set, not kept at the longer one */
    assert_int_equal(dlock_extend_as(l2, fx->owner1, fx->lease_ms), 0);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->lease_ms);

    /* 0: the watchdog takes over and keeps it past that lease */
    assert_int_equal(dlock_extend(l, 0), 0);
    dlock_fx_advance(fx, fx->watchdog_ms + past(fx));
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* After expiry: DLOCK_ELOST, nothing re-acquired; the unlock says ELOST
 * too; and with another owner holding it now, that owner's lock is left
 * alone. */
static void extend_after_expiry_is_lost(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t ttl;

    assert_int_equal(dlock_lock(l, fx->lease_ms), 0);
    dlock_fx_advance(fx, fx->lease_ms + past(fx));
    assert_int_equal(dlock_extend(l, fx->long_lease_ms), DLOCK_ELOST);
    assert_non_null(strstr(dlock_errmsg(l), "lease ran out"));
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_extend(l, fx->long_lease_ms), DLOCK_ELOST);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);

    /* lost, and someone else took it meanwhile */
    assert_int_equal(dlock_lock(l, fx->lease_ms), 0);
    dlock_fx_advance(fx, fx->lease_ms + past(fx));
    assert_int_equal(dlock_lock(l2, fx->long_lease_ms), 0);
    assert_int_equal(dlock_extend(l, fx->long_lease_ms), DLOCK_ELOST);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner2), 1);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 0);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->long_lease_ms);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* By a non-owner: DLOCK_ENOTOWNER and the holder's lease unchanged; bad
 * input: DLOCK_EINVAL, nothing changed. */
static void extend_by_non_owner(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    int64_t ttl;

    assert_int_equal(dlock_lock(l, fx->lease_ms), 0);
    assert_int_equal(dlock_extend(l2, fx->long_lease_ms), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_extend_as(l, "someone-else:1", fx->long_lease_ms),
                     DLOCK_ENOTOWNER);
    ttl = dlock_fx_remain_ttl(l);
    assert_true(ttl > 0 && ttl <= fx->lease_ms);
    assert_int_equal(dlock_extend(l, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_extend(l, DLOCK_TIME_MAX_MS + 1), DLOCK_EINVAL);
    assert_int_equal(dlock_extend_as(l, "", 1000), DLOCK_EINVAL);
    assert_int_equal(dlock_extend(NULL, 1000), DLOCK_EINVAL);
    ttl = dlock_fx_remain_ttl(l);
    assert_true(ttl > 0 && ttl <= fx->lease_ms);
    assert_int_equal(dlock_unlock(l), 0);
}

/* Every built-in type with a lease extends through its slot. */
static void extend_every_lease_type(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *rw = NULL, *fenced = NULL, *fair = NULL, *sem = NULL;
    dlock_rlock *probe = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_semaphore *permits = NULL;
    char name[160];
    int set = 0;
    int64_t ttl;

    assert_int_equal(dlock_fair_new(&fair, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, fair, free_lock);
    snprintf(name, sizeof(name), "%s:rw", fx->name);
    assert_int_equal(dlock_rwlock_write_new(&rw, fx->c1, name), 0);
    dlock_fx_keep(fx, rw, free_lock);
    snprintf(name, sizeof(name), "%s:fenced", fx->name);
    assert_int_equal(dlock_fenced_new(&fenced, fx->c1, name), 0);
    dlock_fx_keep(fx, fenced, free_lock);
    snprintf(name, sizeof(name), "%s:sem", fx->name);
    assert_int_equal(dlock_semaphore_new(&permits, fx->c1, name), 0);
    dlock_fx_keep(fx, permits, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(permits, &set, 1), 0);
    assert_int_equal(set, 1);
    assert_int_equal(dlock_semaphore_lock_new(&sem, fx->c1, name), 0);
    dlock_fx_keep(fx, sem, free_lock);

    assert_int_equal(dlock_lock(fair, fx->lease_ms), 0);
    assert_int_equal(dlock_lock(rw, fx->lease_ms), 0);
    assert_int_equal(dlock_lock(fenced, fx->lease_ms), 0);
    assert_int_equal(dlock_lock(sem, fx->lease_ms), 0);
    assert_int_equal(dlock_extend(fair, fx->long_lease_ms), 0);
    assert_int_equal(dlock_extend(rw, fx->long_lease_ms), 0);
    assert_int_equal(dlock_extend(fenced, fx->long_lease_ms), 0);
    assert_int_equal(dlock_extend(sem, fx->long_lease_ms), 0);
    dlock_fx_advance(fx, fx->lease_ms + past(fx));
    assert_int_equal(dlock_fx_is_held_as(probe, fx->owner1), 1); /* the fair lock */
    ttl = dlock_fx_remain_ttl(rw);
    assert_true(ttl > fx->lease_ms);
    ttl = dlock_fx_remain_ttl(fenced);
    assert_true(ttl > fx->lease_ms);
    ttl = dlock_fx_remain_ttl(sem);
    assert_true(ttl > fx->lease_ms);
    assert_int_equal(dlock_unlock(fair), 0);
    assert_int_equal(dlock_unlock(rw), 0);
    assert_int_equal(dlock_unlock(fenced), 0);
    assert_int_equal(dlock_unlock(sem), 0);
    /* not held any more: the hold ended, so not lost either */
    assert_int_equal(dlock_extend(rw, fx->long_lease_ms), DLOCK_ENOTOWNER);
}

/* ---- on_lost ------------------------------------------------------------- */

/* A lock object's own callback replaces the client's for its holds. */
static void on_lost_per_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    lost_rec rec = {PTHREAD_MUTEX_INITIALIZER, 0, "", ""};

    assert_int_equal(dlock_rlock_set_on_lost(NULL, on_lost_rec, &rec), DLOCK_EINVAL);
    assert_int_equal(dlock_rlock_set_on_lost(l, on_lost_rec, &rec), 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(dlock_force_unlock(l2, NULL), 0);
    assert_int_equal(wait_rec(fx, &rec, 1, 2 * fx->watchdog_ms), 1);
    assert_string_equal(rec.name, fx->name);
    assert_string_equal(rec.owner, fx->owner1);
    assert_int_equal(dlock_fx_lost_count(fx), 0); /* not the client's */
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
    /* before teardown frees rec's frame: no more calls can come */
    assert_int_equal(dlock_rlock_set_on_lost(l, NULL, NULL), 0);
}

/* max_hold_ms stopping renewal is reported to on_lost, set after creation
 * with the client's setter; the lease then runs out. */
static void on_lost_at_max_hold(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_test_failing *fb;
    dlock_client *c = own_client(fx, 2 * fx->watchdog_ms, &fb);
    dlock_rlock *l = dlock_fx_lock(fx, c, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    lost_rec rec = {PTHREAD_MUTEX_INITIALIZER, 0, "", ""};
    char owner[DLOCK_OWNER_MAX];

    cap_start(fx);
    assert_int_equal(dlock_client_set_on_lost(NULL, on_lost_rec, &rec), DLOCK_EINVAL);
    assert_int_equal(dlock_client_set_on_lost(c, on_lost_rec, &rec), 0);
    assert_int_equal(dlock_client_owner(c, owner, sizeof(owner)), 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(wait_rec(fx, &rec, 1, 4 * fx->watchdog_ms), 1);
    assert_string_equal(rec.name, fx->name);
    assert_string_equal(rec.owner, owner);
    assert_int_equal(dlock_test_log_count("max_hold_ms", fx->name), 1);
    /* the renewal stopped, the lease runs out */
    dlock_fx_advance(fx, fx->watchdog_ms + past(fx));
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
    assert_int_equal(lost_n(&rec), 1); /* reported once */
    assert_int_equal(dlock_client_set_on_lost(c, NULL, NULL), 0);
}

/* ---- the log hook ------------------------------------------------------- */

/* A failed renewal and a lost lock each leave a line; nothing else about
 * this lock does. */
static void log_renewal_failure_and_lost(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_test_failing *fb;
    dlock_client *c = own_client(fx, 0, &fb);
    dlock_rlock *l = dlock_fx_lock(fx, c, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_metrics m = DLOCK_METRICS_INIT;
    int i;

    cap_start(fx);
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, 5), DLOCK_EINVAL);
    assert_int_equal(dlock_lock(l, 0), 0);
    dlock_test_failing_set(fb, DLOCK_TEST_FAIL_RENEWALS);
    for (i = 0; i < 300 && dlock_test_log_count("renewal of", fx->name) == 0; i++)
        dlock_fx_advance(fx, fx->is_mock ? fx->watchdog_ms / 3 : 10);
    dlock_test_failing_set(fb, DLOCK_TEST_FAIL_NONE);
    if (dlock_test_log_count("renewal of", fx->name) == 0)
        dlock_test_log_dump();
    assert_true(dlock_test_log_count("renewal of", fx->name) >= 1);
    assert_true(dlock_test_log_count("warn", "injected failure") >= 1);
    assert_int_equal(dlock_test_log_count("lost by", fx->name), 0);
    assert_int_equal(dlock_client_metrics(c, &m), 0);
    assert_true(m.renewal_failures >= 1);

    assert_int_equal(dlock_force_unlock(l2, NULL), 0);
    for (i = 0; i < 300 && dlock_test_log_count("lost by", fx->name) == 0; i++)
        dlock_fx_advance(fx, fx->is_mock ? fx->watchdog_ms / 3 : 10);
    assert_int_equal(dlock_test_log_count("lost by", fx->name), 1);
    assert_int_equal(dlock_test_log_count("found by the watchdog", fx->name), 1);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
    assert_int_equal(dlock_test_log_count("lost by", fx->name), 1); /* once per hold */
    /* no line holds a newline */
    assert_int_equal(dlock_test_log_count("\n", NULL), 0);
}

/* ---- metrics ------------------------------------------------------------- */

/* A known sequence, counted: exact on the mock, where time is virtual. */
static void metrics_after_known_sequence(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_test_failing *fb;
    dlock_client *c = own_client(fx, 0, &fb);
    dlock_rlock *l = dlock_fx_lock(fx, c, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_metrics m = DLOCK_METRICS_INIT, bad = DLOCK_METRICS_INIT;
    uint64_t sum;
    size_t i;

    bad.version = 99;
    assert_int_equal(dlock_client_metrics(c, &bad), DLOCK_EINVAL);
    bad.version = 0;
    assert_int_equal(dlock_client_metrics(c, &bad), DLOCK_EINVAL);
    assert_int_equal(bad.acquisitions, 0); /* nothing written */
    assert_int_equal(dlock_client_metrics(NULL, &m), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics(c, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics(c, &m), 0);
    assert_int_equal(m.acquisitions, 0);

    /* 2 acquisitions (one re-entry), one hold of 1000 ms */
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    /* 2 refusals: another owner's wait-0 try_lock, twice */
    assert_int_equal(dlock_try_lock_as(l, "other:1", 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock_as(l, "other:1", 0, fx->long_lease_ms), DLOCK_EBUSY);
    dlock_fx_advance(fx, 1000);
    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_unlock(l), 0);
    /* a watchdog hold: one full watchdog timeout = 3 renewals on the mock */
    assert_int_equal(dlock_lock(l, 0), 0);
    dlock_fx_advance(fx, fx->watchdog_ms);
    /* lost, found by the watchdog, then the unlock: counted once */
    assert_int_equal(dlock_force_unlock(l2, NULL), 0);
    for (i = 0; i < 300; i++) {
        assert_int_equal(dlock_client_metrics(c, &m), 0);
        if (m.lost > 0)
            break;
        dlock_fx_advance(fx, fx->is_mock ? fx->watchdog_ms / 3 : 10);
    }
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);

    assert_int_equal(dlock_client_metrics(c, &m), 0);
    assert_int_equal(m.version, DLOCK_METRICS_VERSION);
    assert_int_equal(m.messages_ignored, 0); /* no odd message sent */
    assert_int_equal(m.unsynced_no_replica, 0); /* no sync asked */
    assert_int_equal(m.unsynced_refused, 0);
    assert_int_equal(m.acquisitions, 3);
    assert_int_equal(m.busy, 2);
    assert_int_equal(m.lost, 1);
    assert_int_equal(m.renewal_failures, 0);
    assert_int_equal(m.reconnects, 0);
    assert_int_equal(m.wait_ms.count, 3);
    assert_int_equal(m.hold_ms.count, 2); /* the first hold, and the lost one */
    for (sum = 0, i = 0; i < DLOCK_METRICS_BUCKETS; i++)
        sum += m.hold_ms.buckets[i];
    assert_int_equal(sum, 2);
    for (sum = 0, i = 0; i < DLOCK_METRICS_BUCKETS; i++)
        sum += m.wait_ms.buckets[i];
    assert_int_equal(sum, 3);
    if (fx->is_mock) {
        /* virtual time: the waits took 0 ms, the first hold 1000 ms
         * exactly (bucket "<= 1000", index 9), renewals every 1/3 */
        assert_int_equal(m.wait_ms.sum_ms, 0);
        assert_int_equal(m.wait_ms.buckets[0], 3);
        assert_int_equal(m.hold_ms.buckets[9], 1);
        assert_int_equal(m.renewals, 3); /* 3 in the timeout; the next finds it gone */
    } else {
        assert_true(m.renewals >= 1);
        assert_true(m.hold_ms.sum_ms >= 1000);
    }
}

/* Pushed figures: once per watchdog period, on the watchdog thread, the
 * same as a read; none after the push is turned off. */
typedef struct pushed {
    pthread_mutex_t mu;
    int n;
    uint64_t acquisitions;
} pushed;

static void on_push(void *arg, const dlock_metrics *m)
{
    pushed *p = arg;

    pthread_mutex_lock(&p->mu);
    p->n++;
    p->acquisitions = m->acquisitions;
    pthread_mutex_unlock(&p->mu);
}

static void metrics_pushed_each_period(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_test_failing *fb;
    dlock_client *c = own_client(fx, 0, &fb);
    dlock_rlock *l = dlock_fx_lock(fx, c, fx->name);
    pushed p = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    int i, n;

    assert_int_equal(dlock_client_set_metrics_push(NULL, on_push, &p), DLOCK_EINVAL);
    assert_int_equal(dlock_client_set_metrics_push(c, on_push, &p), 0);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    for (i = 0; i < 300; i++) {
        pthread_mutex_lock(&p.mu);
        n = p.n;
        pthread_mutex_unlock(&p.mu);
        if (n >= 2)
            break;
        dlock_fx_advance(fx, fx->is_mock ? fx->watchdog_ms / 3 : 10);
    }
    assert_int_equal(dlock_client_set_metrics_push(c, NULL, NULL), 0);
    pthread_mutex_lock(&p.mu);
    n = p.n;
    assert_true(n >= 2);
    if (fx->is_mock)
        assert_int_equal(n, 2); /* one per period exactly */
    assert_int_equal(p.acquisitions, 1);
    pthread_mutex_unlock(&p.mu);
    /* a push under way when it was turned off may still land: look from
     * one period later */
    dlock_fx_advance(fx, fx->watchdog_ms);
    pthread_mutex_lock(&p.mu);
    n = p.n;
    pthread_mutex_unlock(&p.mu);
    dlock_fx_advance(fx, fx->watchdog_ms);
    pthread_mutex_lock(&p.mu);
    assert_int_equal(p.n, n);
    pthread_mutex_unlock(&p.mu);
    assert_int_equal(dlock_unlock(l), 0);
}

/* ---- the suite ----------------------------------------------------------- */

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest lease_control_cases[] = {
    CASE(extend_while_held),
    CASE(extend_after_expiry_is_lost),
    CASE(extend_by_non_owner),
    CASE(extend_every_lease_type),
    CASE(on_lost_per_lock),
    CASE(on_lost_at_max_hold),
    CASE(log_renewal_failure_and_lost),
    CASE(metrics_after_known_sequence),
    CASE(metrics_pushed_each_period),
};

int dlock_test_lease_control(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("lease_control", backend, lease_control_cases);
}

/* The extend cases again on another lock type (the composite types of
 * tests/conformance/composite_types.c): the group "extend/<type> on
 * <backend>". */
int dlock_test_extend_type(const dlock_fx_lock_type *type, const char *backend)
{
    static const struct CMUnitTest cases[] = {
        CASE(extend_while_held),
        CASE(extend_after_expiry_is_lost),
        CASE(extend_by_non_owner),
    };
    char what[64];
    int failed;

    snprintf(what, sizeof(what), "extend/%s", type->name);
    dlock_fx_use_lock_type(type);
    failed = DLOCK_FX_RUN_GROUP(what, backend, cases);
    dlock_fx_use_lock_type(NULL);
    return failed;
}
