/*
 * The range of time arguments (api/dlock/times.h), on every backend:
 * dlock_test_bounds("mock") and dlock_test_bounds("redis").
 *
 *  - a lease, TTL or option above DLOCK_TIME_MAX_MS is DLOCK_EINVAL and
 *    leaves nothing in the store (it used to leave a lock without expiry
 *    behind an EPROTO: the scripts wrote, then PEXPIRE failed);
 *  - a lease of exactly DLOCK_TIME_MAX_MS works;
 *  - a wait of INT64_MAX waits (its deadline used to overflow and end the
 *    wait after one attempt);
 *  - the library's scripts, called directly with a bad time (what a caller
 *    bypassing the C checks would do), reply an error and write nothing.
 *    That last part runs the generated scripts (build/gen/scripts.h): the
 *    scripts' own guard is what is tested, and nothing public reaches them
 *    without the C checks in front.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/sys/methods.h"
#include "scripts.h" /* the library's scripts, generated */

#define BEGIN(state) dlock_fx_begin(state, __func__)
#define BOUND DLOCK_TIME_MAX_MS

/* Leases and TTLs above the bound; INT64_MAX / 2 is the one a careless
 * "now + lease" check lets through. */
static const int64_t too_long[] = {INT64_MAX, INT64_MAX / 2, BOUND + 1};
#define NTOO (sizeof(too_long) / sizeof(too_long[0]))

/* ---- helpers ------------------------------------------------------------- */

typedef struct lock_type {
    const char *name;
    int (*make)(dlock_rlock **out, dlock_client *c, const char *name);
} lock_type;

static const lock_type types[] = {
    {"reentrant", dlock_reentrant_new},       {"fair", dlock_fair_new},
    {"fenced", dlock_fenced_new},             {"read", dlock_rwlock_read_new},
    {"write", dlock_rwlock_write_new},        {"semaphore", dlock_semaphore_lock_new},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

static int is_semaphore(const lock_type *t)
{
    return strcmp(t->name, "semaphore") == 0;
}

static long long exists(dlock_client *c, const char *key)
{
    return dlock_fx_call_int(c, "exists", key, 0, NULL);
}

/* A handle of type t on name, freed by the teardown. */
static dlock_rlock *handle(dlock_fx *fx, const lock_type *t, dlock_client *c,
                           const char *name)
{
    dlock_rlock *l = NULL;

    assert_int_equal(t->make(&l, c, name), 0);
    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    fx->locks[fx->nlocks++] = l;
    return l;
}

/* The first handle of type t on the case's name for t (into name, 160
 * bytes): the semaphore lock gets one permit first (absent = 0 permits). */
static dlock_rlock *make_lock(dlock_fx *fx, const lock_type *t, dlock_client *c,
                              char *name)
{
    snprintf(name, 160, "%s:%s", fx->name, t->name);
    if (is_semaphore(t)) {
        dlock_semaphore *s = NULL;
        assert_int_equal(dlock_semaphore_new(&s, c, name), 0);
        assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
        dlock_semaphore_free(s);
    }
    return handle(fx, t, c, name);
}

/* Nothing of a lock of type t is stored under name (the semaphore lock:
 * its count is still the one permit, and no holder is recorded). */
static void assert_untouched(dlock_client *c, const lock_type *t, const char *name)
{
    char key[256], buf[64];

    if (is_semaphore(t)) {
        dlock_fx_call_str(c, buf, sizeof(buf), "get", name, 0, NULL, NULL);
        assert_string_equal(buf, "1");
        snprintf(key, sizeof(key), "{%s}:holders", name);
        assert_int_equal(exists(c, key), 0);
        return;
    }
    assert_int_equal(exists(c, name), 0);
    snprintf(key, sizeof(key), "redisson_lock_token:{%s}", name);
    assert_int_equal(exists(c, key), 0);
    snprintf(key, sizeof(key), "redisson_lock_queue:{%s}", name);
    assert_int_equal(exists(c, key), 0);
}

/* ---- leases of the lock types ------------------------------------------------ */

static void lease_above_bound_is_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    size_t i, k;

    for (i = 0; i < NTYPES; i++) {
        char name[160];
        dlock_rlock *l;
        int64_t token = -1;

        l = make_lock(fx, &types[i], fx->c1, name);
        for (k = 0; k < NTOO; k++) {
            assert_int_equal(dlock_try_lock(l, 0, too_long[k]), DLOCK_EINVAL);
            assert_non_null(strstr(dlock_errmsg(l), "lease"));
            assert_int_equal(dlock_try_lock(l, 100, too_long[k]), DLOCK_EINVAL);
            assert_int_equal(dlock_lock(l, too_long[k]), DLOCK_EINVAL);
            assert_int_equal(dlock_try_lock_as(l, "someone:1", 0, too_long[k]),
                             DLOCK_EINVAL);
            if (strcmp(types[i].name, "fenced") == 0)
                assert_int_equal(dlock_fenced_try_lock(l, &token, 0, too_long[k]),
                                 DLOCK_EINVAL);
            assert_untouched(fx->c1, &types[i], name);
        }
        /* and the name is free for another client */
        assert_int_equal(dlock_fx_is_locked(l), 0);
    }
}

static void lease_at_bound_works(void **state)
{
    dlock_fx *fx = BEGIN(state);
    size_t i;

    for (i = 0; i < NTYPES; i++) {
        char name[160];
        dlock_rlock *l, *other;
        int64_t ttl;

        l = make_lock(fx, &types[i], fx->c1, name);
        assert_int_equal(dlock_try_lock(l, 0, BOUND), 0);
        assert_int_equal(dlock_try_lock(l, 0, BOUND), 0); /* re-entry */
        ttl = dlock_fx_remain_ttl(l);
        assert_true(ttl > BOUND - 60000 && ttl <= BOUND);
        assert_int_equal(dlock_unlock(l), 0); /* re-applies the lease */
        ttl = dlock_fx_remain_ttl(l);
        assert_true(ttl > BOUND - 60000 && ttl <= BOUND);
        /* another owner waits for it */
        other = handle(fx, &types[i], fx->c2, name);
        if (strcmp(types[i].name, "read") != 0)
            assert_int_equal(dlock_try_lock(other, 0, BOUND), DLOCK_EBUSY);
        assert_int_equal(dlock_unlock(l), 0);
        assert_int_equal(dlock_fx_is_locked(l), 0);
    }
}

/* ---- the other objects' times ------------------------------------------------- */

static void object_times_above_bound_are_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = NULL;
    dlock_permit_semaphore *p = NULL;
    dlock_bucket *b = NULL;
    dlock_rlock *guard_lock = NULL;
    dlock_guard g = DLOCK_GUARD_INIT;
    char key[160], **ids = NULL, **ids2 = NULL;
    int64_t v;
    size_t k;
    int o = -1;

    snprintf(key, sizeof(key), "%s:sem", fx->name);
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, key), 0);
    snprintf(key, sizeof(key), "%s:psem", fx->name);
    assert_int_equal(dlock_permit_semaphore_new(&p, fx->c1, key), 0);
    guard_lock = make_lock(fx, &types[0], fx->c1, key);
    {
        /* the bucket in its guard lock's hash tag: one slot on a cluster */
        char bkey[200];
        snprintf(bkey, sizeof(bkey), "{%s}:bucket", key);
        assert_int_equal(dlock_bucket_new(&b, fx->c1, bkey, dlock_codec_string()), 0);
    }
    assert_int_equal(dlock_lock(guard_lock, 0), 0);
    g.lock = guard_lock;
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, NULL, 1), 0);

    for (k = 0; k < NTOO; k++) {
        assert_int_equal(dlock_semaphore_try_set_permits_ttl(s, &o, 1, too_long[k]),
                         DLOCK_EINVAL);
        assert_int_equal(exists(fx->c1, dlock_semaphore_name(s)), 0);
        assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, too_long[k]),
                         DLOCK_EINVAL);
        assert_null(ids);
        assert_int_equal(dlock_permit_semaphore_try_acquire(p, &ids, 1, 0, too_long[k]),
                         DLOCK_EINVAL);
        assert_int_equal(dlock_bucket_set(b, "x", too_long[k]), DLOCK_EINVAL);
        assert_int_equal(dlock_bucket_set_if_absent(b, &o, "x", too_long[k]),
                         DLOCK_EINVAL);
        assert_int_equal(dlock_bucket_compare_and_set(b, &o, NULL, "x", too_long[k]),
                         DLOCK_EINVAL);
        assert_int_equal(dlock_bucket_set_guarded(b, &g, "x", too_long[k]),
                         DLOCK_EINVAL);
        assert_int_equal(exists(fx->c1, dlock_bucket_name(b)), 0);
    }
    assert_int_equal(dlock_permit_semaphore_available_permits(p, &v), 0);
    assert_int_equal(v, 1);

    /* At the bound: all of them work. */
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(s, &o, 1, BOUND), 0);
    assert_int_equal(o, 1);
    assert_true(dlock_fx_call_int(fx->c1, "pttl", dlock_semaphore_name(s), 0, NULL)
                > BOUND - 60000);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, BOUND), 0);
    assert_int_equal(dlock_permit_semaphore_lease_of(p, &v, ids[0]), 0);
    assert_true(v > BOUND - 60000 && v <= BOUND);
    for (k = 0; k < NTOO; k++)
        assert_int_equal(dlock_permit_semaphore_update_lease(p, ids[0], too_long[k]),
                         DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_update_lease(p, ids[0], BOUND), 0);
    /* the permit is taken, not leaked forever: a second one waits */
    assert_int_equal(dlock_permit_semaphore_try_acquire(p, &ids2, 1, 0, 1000),
                     DLOCK_EBUSY);
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), 0);
    dlock_permit_ids_free(ids);
    assert_int_equal(dlock_bucket_set(b, "x", BOUND), 0);
    assert_true(dlock_fx_call_int(fx->c1, "pttl", dlock_bucket_name(b), 0, NULL)
                > BOUND - 60000);
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "y", BOUND), 0);
    assert_int_equal(dlock_unlock(guard_lock), 0);

    dlock_bucket_free(b);
    dlock_permit_semaphore_free(p);
    dlock_semaphore_free(s);
}

/* ---- options and configuration ------------------------------------------------ */

static dlock_backend *new_backend(dlock_fx *fx)
{
    dlock_backend *b = NULL;
    char err[256] = "";

    if (fx->is_mock)
        assert_int_equal(dlock_mock_backend_new(&b, fx->store), 0);
    else
        assert_int_equal(dlock_redis_backend_new(&b, dlock_fx_redis_url(), NULL,
                                                 err, sizeof(err)), 0);
    return b;
}

static int client_with(dlock_fx *fx, int field, int64_t v)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = new_backend(fx);
    dlock_client *c = NULL;
    int rc;

    if (field == 0)
        o.watchdog_timeout_ms = v;
    else if (field == 1)
        o.max_hold_ms = v;
    else
        o.fair_wait_slack_ms = v;
    rc = dlock_client_new(&c, b, &o);
    if (rc != 0) {
        assert_null(c);
        dlock_backend_free(b); /* a failed client_new leaves it to us */
    }
    dlock_client_free(c);
    return rc;
}

static int json_with(dlock_fx *fx, const char *field, int64_t v, char *err,
                     size_t errlen)
{
    char text[512];
    dlock_client *c = NULL;
    int rc;

    snprintf(text, sizeof(text), "{\"url\": \"%s\", \"%s\": %" PRId64 "}",
             fx->is_mock ? "mock:" : dlock_fx_redis_url(), field, v);
    err[0] = '\0';
    rc = dlock_client_from_json_string(&c, text, err, errlen);
    if (rc != 0)
        assert_null(c);
    dlock_client_free(c);
    return rc;
}

static void options_above_bound_are_refused(void **state)
{
    static const char *const json_fields[] = {
        "watchdog_timeout_ms", "max_hold_ms", "fair_wait_slack_ms",
        "connect_timeout_ms", "command_timeout_ms", "reconnect_min_ms",
        "reconnect_max_ms"};
    dlock_fx *fx = BEGIN(state);
    char err[256];
    size_t f, k;

    for (f = 0; f < 3; f++) {
        for (k = 0; k < NTOO; k++)
            assert_int_equal(client_with(fx, (int)f, too_long[k]), DLOCK_EINVAL);
        assert_int_equal(client_with(fx, (int)f, BOUND), 0);
    }
    for (f = 0; f < sizeof(json_fields) / sizeof(json_fields[0]); f++) {
        for (k = 0; k < NTOO; k++) {
            assert_int_equal(json_with(fx, json_fields[f], too_long[k], err,
                                       sizeof(err)), DLOCK_EINVAL);
            assert_non_null(strstr(err, json_fields[f]));
        }
        /* reconnect_min_ms alone at the bound is above the default max */
        if (strcmp(json_fields[f], "reconnect_min_ms") != 0)
            assert_int_equal(json_with(fx, json_fields[f], BOUND, err, sizeof(err)), 0);
    }
    if (!fx->is_mock) {
        dlock_redis_options ro = DLOCK_REDIS_OPTIONS_INIT;
        dlock_backend *b = NULL;

        for (k = 0; k < NTOO; k++) {
            ro.command_timeout_ms = too_long[k];
            assert_int_equal(dlock_redis_backend_new(&b, dlock_fx_redis_url(), &ro,
                                                     err, sizeof(err)), DLOCK_EINVAL);
            assert_null(b);
        }
    }
}

/* ---- endless waits --------------------------------------------------------------- */

/* A helper thread's blocking call and its answer. */
typedef struct waiter {
    int (*call)(struct waiter *w);
    dlock_rlock *l;
    dlock_semaphore *s;
    dlock_permit_semaphore *p;
    dlock_latch *latch;
    int rc;
    dlock_fx_thread t;
} waiter;

static void waiter_main(void *arg)
{
    waiter *w = arg;
    w->rc = w->call(w);
}

/* Starts w, lets time pass (mock: 1000 virtual s, inside every lease the
 * cases use; redis: 300 ms) and asserts that it is still waiting. */
static void start_and_check_waiting(dlock_fx *fx, waiter *w, dlock_rlock *rescue)
{
    int base = dlock_fx_settle(fx), blocked, early;

    w->rc = 1;
    dlock_fx_start(&w->t, waiter_main, w);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    if (fx->is_mock)
        dlock_fx_advance(fx, 1000000);
    dlock_fx_settle(fx);
    early = dlock_fx_done(&w->t);
    if (early || blocked != 0) {
        dlock_fx_join(fx, &w->t, 5000, rescue);
        fprintf(stderr, "  [%s] the INT64_MAX wait returned early: %s\n", fx->backend,
                dlock_errname(w->rc));
    }
    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
}

static void finish(dlock_fx *fx, waiter *w, dlock_rlock *rescue)
{
    assert_int_equal(dlock_fx_join(fx, &w->t, 10000, rescue), 0);
    assert_int_equal(w->rc, 0);
}

static int try_lock_forever(waiter *w)
{
    return dlock_try_lock(w->l, INT64_MAX, 0);
}

static void wait_int64_max_waits_for_release(void **state)
{
    dlock_fx *fx = BEGIN(state);
    size_t i;

    for (i = 0; i < NTYPES; i++) {
        char name[160];
        dlock_rlock *l1, *l2;
        waiter w;

        if (strcmp(types[i].name, "read") == 0)
            continue; /* readers share: nothing to wait for */
        l1 = make_lock(fx, &types[i], fx->c1, name);
        l2 = handle(fx, &types[i], fx->c2, name);
        assert_int_equal(dlock_lock(l1, 0), 0); /* the watchdog keeps it */
        memset(&w, 0, sizeof(w));
        w.call = try_lock_forever;
        w.l = l2;
        start_and_check_waiting(fx, &w, l1);
        assert_int_equal(dlock_unlock(l1), 0);
        finish(fx, &w, l1);
        assert_int_equal(dlock_fx_is_held(l2), 0); /* held by the waiter's thread */
        assert_int_equal(dlock_unlock_as(l2, fx->owner2), DLOCK_ENOTOWNER);
        assert_int_equal(dlock_force_unlock(l2, NULL), 0);
    }
}

static int semaphore_forever(waiter *w)
{
    return dlock_semaphore_try_acquire(w->s, 1, INT64_MAX);
}

static int permit_forever(waiter *w)
{
    char **ids = NULL;
    int rc = dlock_permit_semaphore_try_acquire(w->p, &ids, 1, INT64_MAX, 60000);

    dlock_permit_ids_free(ids);
    return rc;
}

static int latch_forever(waiter *w)
{
    return dlock_latch_await_for(w->latch, INT64_MAX);
}

static void object_waits_int64_max_wait(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160], **ids = NULL;
    waiter w;

    memset(&w, 0, sizeof(w));
    snprintf(name, sizeof(name), "%s:sem", fx->name);
    assert_int_equal(dlock_semaphore_new(&w.s, fx->c2, name), 0);
    w.call = semaphore_forever;
    start_and_check_waiting(fx, &w, NULL);
    assert_int_equal(dlock_semaphore_release(w.s, 1), 0);
    finish(fx, &w, NULL);
    dlock_semaphore_free(w.s);

    memset(&w, 0, sizeof(w));
    snprintf(name, sizeof(name), "%s:psem", fx->name);
    assert_int_equal(dlock_permit_semaphore_new(&w.p, fx->c2, name), 0);
    assert_int_equal(dlock_permit_semaphore_try_set_permits(w.p, NULL, 1), 0);
    assert_int_equal(dlock_permit_semaphore_acquire(w.p, &ids, 1, BOUND), 0);
    w.call = permit_forever;
    start_and_check_waiting(fx, &w, NULL);
    assert_int_equal(dlock_permit_semaphore_release(w.p, ids[0]), 0);
    finish(fx, &w, NULL);
    dlock_permit_ids_free(ids);
    dlock_permit_semaphore_free(w.p);

    memset(&w, 0, sizeof(w));
    snprintf(name, sizeof(name), "%s:latch", fx->name);
    assert_int_equal(dlock_latch_new(&w.latch, fx->c2, name), 0);
    assert_int_equal(dlock_latch_try_set_count(w.latch, NULL, 1), 0);
    w.call = latch_forever;
    start_and_check_waiting(fx, &w, NULL);
    assert_int_equal(dlock_latch_count_down(w.latch), 0);
    finish(fx, &w, NULL);
    dlock_latch_free(w.latch);
}

/* ---- the scripts' own checks ------------------------------------------------------- */

/* Times a script must refuse: above the bound, negative, not an integer. */
static const char *const bad_times[] = {
    "9223372036854775807", "4611686018427387903", "1000000000001",
    "00000000000000000001", "-1", "1e3", "1.5", "", "abc", " 5", "0x10"};
#define NBAD (sizeof(bad_times) / sizeof(bad_times[0]))

/* Runs s with the arguments given (keys first) and asserts an error reply. */
static void assert_refused(dlock_client *c, const dlock_script *s, size_t nkeys,
                           size_t nargs, const char *const *argv)
{
    dlock_reply *r = NULL;
    char err[256] = "";
    int rc = dlock_backend_eval(dlock_client_backend(c), &r, s, nkeys, nargs, argv,
                                NULL, err, sizeof(err));

    assert_int_equal(rc, 0);
    assert_non_null(r);
    if (r->type != DLOCK_REPLY_ERROR)
        fprintf(stderr, "  script %s took a bad time (%s): reply type %d\n", s->name,
                argv[nkeys], (int)r->type);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    assert_non_null(strstr(r->str, "invalid"));
    dlock_reply_free(r);
}

/* The acquisition scripts, with every bad lease (and slack, and now), on a
 * free name: nothing is written. */
static void scripts_refuse_bad_times(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160], tok[200], queue[200], zs[200], chan[200], holders[200],
        lease_pre[200], sem_chan[200], ptimeout[200], pexpired[200], pname[160],
        buf[64], rw_chan[200], markers[200];
    const char *owner = fx->owner1;
    size_t k;

    snprintf(name, sizeof(name), "%s:s", fx->name);
    snprintf(tok, sizeof(tok), "redisson_lock_token:{%s}", name);
    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
    snprintf(zs, sizeof(zs), "redisson_lock_timeout:{%s}", name);
    snprintf(chan, sizeof(chan), "redisson_lock__channel:{%s}", name);
    snprintf(holders, sizeof(holders), "{%s}:holders", name);
    snprintf(lease_pre, sizeof(lease_pre), "{%s}:lease:", name);
    snprintf(sem_chan, sizeof(sem_chan), "redisson_sc:{%s}", name);
    snprintf(rw_chan, sizeof(rw_chan), "redisson_rwlock:{%s}", name);
    snprintf(markers, sizeof(markers), "{%s}", name);
    snprintf(pname, sizeof(pname), "%s:p", fx->name);
    snprintf(ptimeout, sizeof(ptimeout), "{%s}:timeout", pname);
    snprintf(pexpired, sizeof(pexpired), "{%s}:expired", pname);

    for (k = 0; k < NBAD; k++) {
        const char *t = bad_times[k];
        const char *a1[] = {name, t, owner};
        const char *a2[] = {name, tok, t, owner};
        const char *rw[] = {name, rw_chan, markers, t, owner};
        const char *fair1[] = {name, queue, zs, chan, t, owner, "1000", "1700000000000", "0",
                               "1", "publish"};
        const char *fair2[] = {name, queue, zs, chan, "1000", owner, t, "1700000000000", "0",
                               "1", "publish"};
        const char *fair3[] = {name, queue, zs, chan, "1000", owner, "1000", t, "0", "1",
                               "publish"};
        const char *sem[] = {name, holders, lease_pre, sem_chan, t, owner, "publish"};
        const char *sem_set[] = {name, "1", t, sem_chan, "publish"};
        const char *renew[] = {name, t, owner};
        const char *bucket[] = {name, "v", t, "0"};
        const char *permit[] = {pname, ptimeout, pexpired, "1700000000000", "1000",
                                "10", "ch", t, "0123456789abcdef0123456789abcdef",
                                "publish"};
        const char *permit_now[] = {pname, ptimeout, pexpired, t, "1000",
                                    "10", "ch", "1000", "0123456789abcdef0123456789abcdef",
                                    "publish"};

        assert_refused(fx->c1, &dlock__script_reentrant_acquire, 1, 2, a1);
        assert_refused(fx->c1, &dlock__script_fenced_acquire, 2, 2, a2);
        assert_refused(fx->c1, &dlock__script_rwlock_read_acquire, 3, 2, rw);
        assert_refused(fx->c1, &dlock__script_rwlock_write_acquire, 3, 2, rw);
        assert_refused(fx->c1, &dlock__script_fair_acquire, 4, 7, fair1);
        assert_refused(fx->c1, &dlock__script_fair_acquire, 4, 7, fair2);
        /* 10^12 + 1 is a fine wall-clock reading (2001), not a duration */
        if (strcmp(t, "1000000000001") != 0)
            assert_refused(fx->c1, &dlock__script_fair_acquire, 4, 7, fair3);
        assert_refused(fx->c1, &dlock__script_hash_renew, 1, 2, renew);
        assert_refused(fx->c1, &dlock__script_rwlock_read_renew, 1, 2, renew);
        assert_refused(fx->c1, &dlock__script_rwlock_write_renew, 1, 2, renew);
        assert_refused(fx->c1, &dlock__script_semaphore_lock_renew, 1, 2, renew);
        assert_int_equal(exists(fx->c1, name), 0);
        assert_int_equal(exists(fx->c1, tok), 0);
        assert_int_equal(exists(fx->c1, queue), 0);
        assert_int_equal(exists(fx->c1, zs), 0);
        /* the semaphore, its lock, a bucket and the permits */
        assert_refused(fx->c1, &dlock__script_semaphore_try_set, 1, 4, sem_set);
        assert_refused(fx->c1, &dlock__script_bucket_set, 1, 3, bucket);
        assert_int_equal(exists(fx->c1, name), 0);
        dlock_fx_call_str(fx->c1, buf, sizeof(buf), "set", name, 1, "1", NULL);
        assert_refused(fx->c1, &dlock__script_semaphore_lock_acquire, 3, 4, sem);
        assert_int_equal(exists(fx->c1, holders), 0);
        dlock_fx_call_str(fx->c1, buf, sizeof(buf), "get", name, 0, NULL, NULL);
        assert_string_equal(buf, "1");
        assert_int_equal(dlock_fx_call_int(fx->c1, "del", name, 0, NULL), 1);
        dlock_fx_call_str(fx->c1, buf, sizeof(buf), "set", pname, 1, "1", NULL);
        /* "-1" is a lease there: DLOCK_PERMIT_PERMANENT (redisson_parity_cases.c) */
        if (strcmp(t, "-1") != 0)
            assert_refused(fx->c1, &dlock__script_permit_acquire, 3, 7, permit);
        if (strcmp(t, "1000000000001") != 0)
            assert_refused(fx->c1, &dlock__script_permit_acquire, 3, 7, permit_now);
        assert_int_equal(exists(fx->c1, ptimeout), 0);
        dlock_fx_call_str(fx->c1, buf, sizeof(buf), "get", pname, 0, NULL, NULL);
        assert_string_equal(buf, "1");
        assert_int_equal(dlock_fx_call_int(fx->c1, "del", pname, 0, NULL), 1);
    }
}

/* A release that re-applies a bad lease (the lease to re-apply while still
 * held) must not have taken the hold away first: reentrant, fair, write
 * half, semaphore lock, each held twice. */
static void release_scripts_refuse_bad_lease(void **state)
{
    static const size_t which[] = {0, 1, 4, 5};
    dlock_fx *fx = BEGIN(state);
    size_t i, k;

    for (i = 0; i < sizeof(which) / sizeof(which[0]); i++) {
        const lock_type *t = &types[which[i]];
        char name[160], chan[200], queue[200], zs[200], holders[200], pre[200],
            markers[200];
        dlock_rlock *l;

        l = make_lock(fx, t, fx->c1, name);
        snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", name);
        snprintf(zs, sizeof(zs), "redisson_lock_timeout:{%s}", name);
        snprintf(holders, sizeof(holders), "{%s}:holders", name);
        snprintf(pre, sizeof(pre), "{%s}:lease:", name);
        snprintf(markers, sizeof(markers), "{%s}", name);
        assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
        assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
        for (k = 0; k < NBAD; k++) {
            const char *bad = bad_times[k], *o = fx->owner1;

            if (strcmp(t->name, "reentrant") == 0) {
                const char *argv[] = {name, chan, "0", bad, o, "publish"};
                snprintf(chan, sizeof(chan), "redisson_lock__channel:{%s}", name);
                assert_refused(fx->c1, &dlock__script_reentrant_release, 2, 4, argv);
            } else if (strcmp(t->name, "fair") == 0) {
                const char *argv[] = {name, queue, zs, chan, "0", bad, o, "1700000000000",
                                      "publish"};
                snprintf(chan, sizeof(chan), "redisson_lock__channel:{%s}", name);
                assert_refused(fx->c1, &dlock__script_fair_release, 4, 5, argv);
            } else if (strcmp(t->name, "write") == 0) {
                const char *argv[] = {name, chan, markers, o, bad, "publish"};
                snprintf(chan, sizeof(chan), "redisson_rwlock:{%s}", name);
                assert_refused(fx->c1, &dlock__script_rwlock_write_release, 3, 3, argv);
            } else {
                const char *argv[] = {name, holders, pre, chan, bad, o, "publish"};
                snprintf(chan, sizeof(chan), "redisson_sc:{%s}", name);
                assert_refused(fx->c1, &dlock__script_semaphore_lock_release, 3, 4,
                               argv);
            }
            assert_int_equal(dlock_fx_hold_count(l), 2);
        }
        assert_int_equal(dlock_unlock(l), 0);
        assert_int_equal(dlock_unlock(l), 0);
        assert_int_equal(dlock_fx_is_locked(l), 0);
    }
}

static const struct CMUnitTest bounds_cases[] = {
    DLOCK_FX_CASE(lease_above_bound_is_refused),
    DLOCK_FX_CASE(lease_at_bound_works),
    DLOCK_FX_CASE(object_times_above_bound_are_refused),
    DLOCK_FX_CASE(options_above_bound_are_refused),
    DLOCK_FX_CASE(wait_int64_max_waits_for_release),
    DLOCK_FX_CASE(object_waits_int64_max_wait),
    DLOCK_FX_CASE(scripts_refuse_bad_times),
    DLOCK_FX_CASE(release_scripts_refuse_bad_lease),
};

int dlock_test_bounds(const char *backend);
int dlock_test_bounds(const char *backend)
{
    dlock_test_set_phase("bounds on %s", backend);
    return DLOCK_FX_RUN_GROUP("bounds", backend, bounds_cases);
}
