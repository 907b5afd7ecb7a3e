/*
 * The conformance cases of the semaphore, the permit-expirable semaphore and
 * the semaphore as a lock. Each case is written once against the fixture
 * (tests/harness/fixture.h) and runs on every backend:
 * dlock_test_semaphore("mock") and dlock_test_semaphore("redis"). The
 * count-down latch's own cases are tests/conformance/latch_cases.c; the
 * cases here that put every object under one name (a key of another type,
 * objects outliving their client, a fork() child) take the latch along.
 *
 * On the mock, leases and timed waits run on the virtual clock: nothing
 * sleeps, and waits end exactly when they should. On Redis the leases are a
 * few hundred ms of real time and the bounds are loose.
 *
 * Helper threads record what they see; assertions run on the test thread
 * after the helper has been joined. The objects a case makes are freed by
 * the case's teardown, so a failing assertion leaks nothing.
 */
#include "../harness/asserts.h"
#include "../harness/lost_reply.h"
#include "../harness/fixture.h"
#include "../harness/recorder.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- objects freed by the teardown --------------------------------------- */

#define MAX_OBJECTS 32

static struct owned {
    void *obj;
    void (*free_fn)(void *);
} owned[MAX_OBJECTS];
static size_t nowned;

static void free_sem(void *o) { dlock_semaphore_free(o); }
static void free_permit(void *o) { dlock_permit_semaphore_free(o); }
static void free_latch(void *o) { dlock_latch_free(o); }

static void *keep(void *obj, void (*free_fn)(void *))
{
    assert_non_null(obj);
    assert_true(nowned < MAX_OBJECTS);
    owned[nowned].obj = obj;
    owned[nowned].free_fn = free_fn;
    nowned++;
    return obj;
}

/* The case's objects first: they keep the clients alive, and the fixture's
 * teardown expects to drop the last references. */
static int teardown(void **state)
{
    while (nowned > 0) {
        nowned--;
        owned[nowned].free_fn(owned[nowned].obj);
    }
    return dlock_fx_teardown(state);
}

static dlock_semaphore *sem(dlock_client *c, const char *name)
{
    dlock_semaphore *s = NULL;
    assert_int_equal(dlock_semaphore_new(&s, c, name), 0);
    return keep(s, free_sem);
}

static dlock_permit_semaphore *psem(dlock_client *c, const char *name)
{
    dlock_permit_semaphore *p = NULL;
    assert_int_equal(dlock_permit_semaphore_new(&p, c, name), 0);
    return keep(p, free_permit);
}

static dlock_latch *latch(dlock_client *c, const char *name)
{
    dlock_latch *l = NULL;
    assert_int_equal(dlock_latch_new(&l, c, name), 0);
    return keep(l, free_latch);
}

/* A semaphore-lock handle, freed by the fixture with its lock handles. */
static dlock_rlock *semlock(dlock_fx *fx, dlock_client *c, const char *name)
{
    dlock_rlock *l = NULL;
    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    assert_int_equal(dlock_semaphore_lock_new(&l, c, name), 0);
    assert_non_null(l);
    fx->locks[fx->nlocks++] = l;
    return l;
}

/* ---- small helpers ------------------------------------------------------- */

static int64_t avail(dlock_semaphore *s)
{
    int64_t v = -999;
    assert_int_equal(dlock_semaphore_available_permits(s, &v), 0);
    return v;
}

static int64_t p_avail(dlock_permit_semaphore *p)
{
    int64_t v = -999;
    assert_int_equal(dlock_permit_semaphore_available_permits(p, &v), 0);
    return v;
}

static int64_t p_acquired(dlock_permit_semaphore *p)
{
    int64_t v = -999;
    assert_int_equal(dlock_permit_semaphore_acquired_permits(p, &v), 0);
    return v;
}

static int64_t p_total(dlock_permit_semaphore *p)
{
    int64_t v = -999;
    assert_int_equal(dlock_permit_semaphore_total_permits(p, &v), 0);
    return v;
}

static int64_t lease_of(dlock_permit_semaphore *p, const char *id)
{
    int64_t v = -999;
    assert_int_equal(dlock_permit_semaphore_lease_of(p, &v, id), 0);
    return v;
}

static long long key_int(dlock_client *c, const char *cmd, const char *key)
{
    char buf[64];
    dlock_fx_call_str(c, buf, sizeof(buf), cmd, key, 0, NULL, NULL);
    return strtoll(buf, NULL, 10);
}

/* "prefix{name}suffix", or without the braces when name has one (the
 * library's key rule, written out here to check the layout). */
static void key_of(char *buf, size_t len, const char *prefix, const char *name,
                   const char *suffix)
{
    int braced = strchr(name, '{') == NULL;
    snprintf(buf, len, "%s%s%s%s%s", prefix, braced ? "{" : "", name,
             braced ? "}" : "", suffix);
}

/* "{name}suffix": a name with braces of its own, so that no second pair
 * is added; the fixture's name as it is when it has them already (on
 * Redis Cluster it carries a hash tag). */
static void braced_name(char *buf, size_t len, const char *name, const char *suffix)
{
    snprintf(buf, len, name[0] == '{' ? "%s%s" : "{%s}%s", name, suffix);
}

static int is_permit_id(const char *id)
{
    return id && strlen(id) == DLOCK_PERMIT_ID_LEN &&
           strspn(id, "0123456789abcdef") == DLOCK_PERMIT_ID_LEN;
}

/* The score of the permit whose id is hex in the sorted set key, which
 * holds ids as their 16 raw bytes (Redisson's layout); -1 when absent. */
static long long raw_id_score(dlock_client *c, const char *key, const char *hex)
{
    unsigned char raw[DLOCK_PERMIT_ID_LEN / 2];
    long long score = -1;
    dlock_reply *r = NULL;
    size_t i;

    for (i = 0; i < sizeof(raw); i++) {
        unsigned v = 0;
        assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
        raw[i] = (unsigned char)v;
    }
    assert_int_equal(dlock_fx_call(c, &r, "zrange", key, 3, "0", "-1", "withscores"), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ARRAY);
    for (i = 0; i + 1 < r->n; i += 2)
        if (r->elems[i]->len == sizeof(raw) && memcmp(r->elems[i]->str, raw, sizeof(raw)) == 0)
            score = strtoll(r->elems[i + 1]->str, NULL, 10);
    dlock_reply_free(r);
    return score;
}

static int64_t wall_now(dlock_client *c)
{
    return dlock_clock_wall(dlock_backend_clock(dlock_client_backend(c)));
}

/* ---- helper threads ------------------------------------------------------ */

enum op_kind {
    SEM_ACQUIRE,   /* dlock_semaphore_acquire(n) */
    SEM_TRY,       /* dlock_semaphore_try_acquire(n, wait) */
    PERMIT_TRY,    /* dlock_permit_semaphore_try_acquire(n, wait, lease) */
    LOCK_LOCK,     /* dlock_lock(lease), then unlock if asked */
    LOCK_TRY,      /* dlock_try_lock(wait, lease), then unlock if asked */
    LATCH_AWAIT    /* dlock_latch_await */
};

typedef struct op {
    dlock_fx *fx;
    dlock_client *c;
    enum op_kind kind;
    void *obj;
    int64_t n, wait_ms, lease_ms;
    int unlock;
    /* results */
    int rc, held, unlock_rc;
    char **ids;
    char owner[DLOCK_OWNER_MAX];
    int64_t start_v, end_v, start_real, end_real;
    dlock_fx_thread t;
} op;

static void op_main(void *arg)
{
    op *o = arg;

    dlock_client_owner(o->c, o->owner, sizeof(o->owner));
    o->held = -1;
    o->unlock_rc = 1;
    o->start_v = dlock_fx_now(o->fx);
    o->start_real = dlock_fx_real_ms();
    switch (o->kind) {
    case SEM_ACQUIRE:
        o->rc = dlock_semaphore_acquire(o->obj, o->n);
        break;
    case SEM_TRY:
        o->rc = dlock_semaphore_try_acquire(o->obj, o->n, o->wait_ms);
        break;
    case PERMIT_TRY:
        o->rc = dlock_permit_semaphore_try_acquire(o->obj, &o->ids, o->n, o->wait_ms,
                                                   o->lease_ms);
        break;
    case LOCK_LOCK:
    case LOCK_TRY:
        o->rc = o->kind == LOCK_LOCK ? dlock_lock(o->obj, o->lease_ms)
                                     : dlock_try_lock(o->obj, o->wait_ms, o->lease_ms);
        if (o->rc == 0 && dlock_is_held(o->obj, &o->held) != 0)
            o->held = -2;
        if (o->rc == 0 && o->unlock)
            o->unlock_rc = dlock_unlock(o->obj);
        break;
    case LATCH_AWAIT:
        o->rc = dlock_latch_await(o->obj);
        break;
    }
    o->end_real = dlock_fx_real_ms();
    o->end_v = dlock_fx_now(o->fx);
}

static void op_start(op *o, dlock_fx *fx, dlock_client *c, enum op_kind kind, void *obj,
                     int64_t n, int64_t wait_ms, int64_t lease_ms)
{
    memset(o, 0, sizeof(*o));
    o->fx = fx;
    o->c = c;
    o->kind = kind;
    o->obj = obj;
    o->n = n;
    o->wait_ms = wait_ms;
    o->lease_ms = lease_ms;
    o->rc = 1;
    dlock_fx_start(&o->t, op_main, o);
}

/* Frees a waiter that should have returned by now: what it waits for is
 * made to happen (many permits, an open latch). */
static void op_rescue(op *o)
{
    switch (o->kind) {
    case SEM_ACQUIRE:
    case SEM_TRY:
        dlock_semaphore_add_permits(o->obj, 1000);
        break;
    case PERMIT_TRY:
        dlock_permit_semaphore_add_permits(o->obj, 1000);
        break;
    case LOCK_LOCK:
    case LOCK_TRY: {
        dlock_semaphore *s = NULL;
        if (dlock_semaphore_new(&s, o->c, dlock_rlock_name(o->obj)) == 0) {
            dlock_semaphore_add_permits(s, 1000);
            dlock_semaphore_free(s);
        }
        break;
    }
    case LATCH_AWAIT:
        dlock_latch_delete(o->obj, NULL);
        break;
    }
}

/* Joins o, waiting up to real_ms of real time: 0, or -1 when it had to be
 * rescued. Frees the ids it got. */
static int op_join(dlock_fx *fx, op *o, int64_t real_ms)
{
    int late = dlock_fx_wait_done(&o->t, real_ms) != 0;
    int is_lock = o->kind == LOCK_LOCK || o->kind == LOCK_TRY;

    if (late) {
        fprintf(stderr, "  [%s] helper still blocked after %" PRId64 " ms: rescuing it\n",
                fx->backend, real_ms);
        op_rescue(o);
    }
    dlock_fx_join(fx, &o->t, 10000, is_lock ? o->obj : NULL);
    return late ? -1 : 0;
}

/* ==== the semaphore ======================================================= */

/* acquire(2) waits until two permits are there: one release of 1 wakes it,
 * but must not let it through (the permit stays available), and the
 * add_permits that makes 2 does. */
static void sem_acquire_waits_for_enough(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s1 = sem(fx->c1, fx->name), *s2 = sem(fx->c2, fx->name);
    int set = -1, blocked, waiting_after_one, joined, base;
    int64_t v0 = 0, after_one;
    op w;

    assert_int_equal(dlock_semaphore_try_set_permits(s1, &set, 0), 0);
    assert_int_equal(set, 1);
    assert_int_equal(avail(s1), 0);

    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, SEM_ACQUIRE, s2, 2, 0, 0);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    v0 = dlock_fx_now(fx);
    assert_int_equal(dlock_semaphore_release(s1, 1), 0);
    waiting_after_one = dlock_fx_still_waiting(fx, &w.t);
    after_one = avail(s1);
    assert_int_equal(dlock_semaphore_add_permits(s1, 1), 0);
    joined = op_join(fx, &w, 10000);

    assert_int_equal(blocked, 0);
    assert_int_equal(waiting_after_one, 1);
    assert_int_equal(after_one, 1);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(avail(s1), 0);
    if (fx->is_mock) /* messages did it: no virtual time passed */
        assert_int_equal(w.end_v, v0);
}

/* set 10, acquire 10, add -5 -> -5, release 10 -> 5 */
static void sem_count_goes_negative(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name), *s2 = sem(fx->c2, fx->name);
    char buf[64];

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 10), 0);
    assert_int_equal(dlock_semaphore_acquire(s, 10), 0);
    assert_int_equal(avail(s2), 0);
    assert_int_equal(dlock_semaphore_add_permits(s2, -5), 0);
    assert_int_equal(avail(s), -5);
    assert_int_equal(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_EBUSY);
    assert_true(strlen(dlock_semaphore_errmsg(s)) > 0);
    assert_int_equal(dlock_semaphore_release(s, 10), 0);
    assert_int_equal(avail(s2), 5);
    /* Redisson's layout: a plain string integer at the name */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "type", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "string");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "5");
    assert_int_equal(dlock_semaphore_try_acquire(s2, 5, 0), 0);
    assert_int_equal(avail(s), 0);
}

static void sem_drain_and_release_if_exists(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    char missing[160];
    dlock_semaphore *m;
    int64_t drained = -1;
    int done = -1;

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 7), 0);
    assert_int_equal(dlock_semaphore_drain_permits(s, &drained), 0);
    assert_int_equal(drained, 7);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_semaphore_drain_permits(s, &drained), 0);
    assert_int_equal(drained, 0);
    /* a debt is not drained away */
    assert_int_equal(dlock_semaphore_add_permits(s, -2), 0);
    assert_int_equal(dlock_semaphore_drain_permits(s, &drained), 0);
    assert_int_equal(drained, 0);
    assert_int_equal(avail(s), -2);
    assert_int_equal(dlock_semaphore_drain_permits(s, NULL), 0);

    /* on a name that does not exist: false, and nothing is created */
    snprintf(missing, sizeof(missing), "%s:missing", fx->name);
    m = sem(fx->c2, missing);
    assert_int_equal(dlock_semaphore_release_if_exists(m, &done, 3), 0);
    assert_int_equal(done, 0);
    done = -1;
    assert_int_equal(dlock_semaphore_release_if_exists(m, &done, 0), 0);
    assert_int_equal(done, 0);
    assert_int_equal(dlock_semaphore_release_if_exists(m, NULL, 1), 0);
    assert_int_equal(key_int(fx->c2, "exists", missing), 0);
    assert_int_equal(avail(m), 0);
    assert_int_equal(key_int(fx->c2, "exists", missing), 0);

    /* on one that does */
    assert_int_equal(dlock_semaphore_release_if_exists(s, &done, 3), 0);
    assert_int_equal(done, 1);
    assert_int_equal(avail(s), 1);
}

/* try_acquire(4, wait) with 2 available gets through when two releases
 * arrive during the wait. */
static void sem_try_acquire_gets_releases_during_wait(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s1 = sem(fx->c1, fx->name), *s2 = sem(fx->c2, fx->name);
    const int64_t wait = fx->is_mock ? 30000 : 5000;
    int blocked, after_first, joined, base;
    op w;

    assert_int_equal(dlock_semaphore_try_set_permits(s1, NULL, 2), 0);
    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, SEM_TRY, s2, 4, wait, 0);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    dlock_fx_advance(fx, fx->is_mock ? wait / 3 : 0);
    assert_int_equal(dlock_semaphore_release(s1, 1), 0);
    after_first = dlock_fx_still_waiting(fx, &w.t);
    dlock_fx_advance(fx, fx->is_mock ? wait / 3 : 0);
    assert_int_equal(dlock_semaphore_release(s1, 1), 0);
    joined = op_join(fx, &w, fx->is_mock ? 5000 : wait + 5000);

    assert_int_equal(blocked, 0);
    assert_int_equal(after_first, 1);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(avail(s1), 0);
    if (fx->is_mock)
        assert_int_equal(w.end_v - w.start_v, 2 * (wait / 3));
    else
        assert_true(w.end_real - w.start_real < wait);
}

static void sem_try_acquire_times_out(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s1 = sem(fx->c1, fx->name), *s2 = sem(fx->c2, fx->name);
    const int64_t wait = fx->is_mock ? 5000 : 150;
    int blocked = 0, early = 0, joined, base;
    op w;

    assert_int_equal(dlock_semaphore_try_set_permits(s1, NULL, 1), 0);
    assert_int_equal(dlock_semaphore_try_acquire(s2, 2, 0), DLOCK_EBUSY);
    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, SEM_TRY, s2, 2, wait, 0);
    if (fx->is_mock) {
        blocked = dlock_fx_wait_blocked(fx, base, 0);
        dlock_fx_advance(fx, wait - 1);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 1);
    }
    joined = op_join(fx, &w, fx->is_mock ? 5000 : wait + 5000);

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, DLOCK_ETIMEDOUT);
    if (fx->is_mock)
        assert_int_equal(w.end_v - w.start_v, wait);
    else
        assert_true(w.end_real - w.start_real >= wait - 1);
    /* the permit that was there is still there */
    assert_int_equal(avail(s1), 1);
}

/* The documented non-fair behaviour: a waiter for 3 is overtaken by a
 * caller wanting 1, and still gets its 3 once they are there. */
static void sem_large_waiter_overtaken(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s1 = sem(fx->c1, fx->name), *s2 = sem(fx->c2, fx->name);
    int blocked, waiting, joined, base;
    op big;

    assert_int_equal(dlock_semaphore_try_set_permits(s1, NULL, 0), 0);
    base = dlock_fx_settle(fx);
    op_start(&big, fx, fx->c2, SEM_ACQUIRE, s2, 3, 0, 0);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    assert_int_equal(dlock_semaphore_release(s1, 2), 0);
    /* the small request fits into what the big one cannot use */
    assert_int_equal(dlock_semaphore_try_acquire(s1, 1, 0), 0);
    waiting = dlock_fx_still_waiting(fx, &big.t);
    assert_int_equal(avail(s1), 1);
    assert_int_equal(dlock_semaphore_release(s1, 2), 0);
    joined = op_join(fx, &big, 10000);

    assert_int_equal(blocked, 0);
    assert_int_equal(waiting, 1);
    assert_int_equal(joined, 0);
    assert_int_equal(big.rc, 0);
    assert_int_equal(avail(s1), 0);
}

static void sem_try_set_permits_and_ttl(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name), *t;
    char tname[160];
    const int64_t ttl = fx->is_mock ? fx->lease_ms : 300;
    int set = -1;
    long long pttl;

    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 5), 0);
    assert_int_equal(set, 1);
    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 9), 0);
    assert_int_equal(set, 0);
    assert_int_equal(avail(s), 5);
    assert_int_equal(key_int(fx->c1, "pttl", fx->name), -1);

    snprintf(tname, sizeof(tname), "%s:ttl", fx->name);
    t = sem(fx->c2, tname);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(t, &set, 3, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(t, &set, 3, -5), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(t, &set, 3, ttl), 0);
    assert_int_equal(set, 1);
    pttl = key_int(fx->c2, "pttl", tname);
    assert_true(pttl > 0 && pttl <= ttl);
    /* taking and giving permits keeps the TTL */
    assert_int_equal(dlock_semaphore_acquire(t, 2), 0);
    assert_int_equal(dlock_semaphore_release(t, 1), 0);
    assert_int_equal(dlock_semaphore_drain_permits(t, NULL), 0);
    assert_int_equal(dlock_semaphore_add_permits(t, 1), 0);
    pttl = key_int(fx->c2, "pttl", tname);
    assert_true(pttl > 0 && pttl <= ttl);
    dlock_fx_advance(fx, ttl + (fx->is_mock ? 0 : 100));
    assert_int_equal(avail(t), 0);
    assert_int_equal(key_int(fx->c2, "exists", tname), 0);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(t, &set, 4, ttl), 0);
    assert_int_equal(set, 1);
    assert_int_equal(avail(t), 4);
}

/* Waiters listen on "redisson_sc:{name}"; the message is the new count, sent
 * only when permits become available. */
static void sem_messages_carry_the_count(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160], channel[200];
    dlock_semaphore *s;
    recorder rec;
    int i, n;
    static const char *const expect[] = {"3", "4", "2"};

    for (i = 0; i < 2; i++) {
        /* and with a name that has braces: no second pair is added */
        if (i == 0)
            snprintf(name, sizeof(name), "%s", fx->name);
        else
            braced_name(name, sizeof(name), fx->name, ":x");
        key_of(channel, sizeof(channel), "redisson_sc:", name, "");
        if (i == 1)
            assert_int_equal(strncmp(channel, "redisson_sc:{dlock-test", 23), 0);
        s = sem(fx->c1, name);
        recorder_start(&rec, fx->c2, channel);
        assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 0), 0); /* 0: silent */
        assert_int_equal(dlock_semaphore_release(s, 3), 0);              /* "3" */
        assert_int_equal(dlock_semaphore_add_permits(s, -1), 0);         /* silent */
        assert_int_equal(dlock_semaphore_add_permits(s, 2), 0);          /* "4" */
        assert_int_equal(dlock_semaphore_acquire(s, 4), 0);              /* silent */
        assert_int_equal(dlock_semaphore_drain_permits(s, NULL), 0);     /* silent */
        assert_int_equal(dlock_semaphore_release(s, 0), 0);              /* nothing sent */
        assert_int_equal(dlock_semaphore_release_if_exists(s, NULL, 2), 0); /* "2" */
        recorder_count(&rec, 3);
        if (!fx->is_mock)
            dlock_fx_sleep_real(100); /* would anything more come? */
        n = recorder_count(&rec, 3);
        recorder_stop(&rec);
        assert_int_equal(n, 3);
        assert_string_equal(rec.msgs[0], expect[0]);
        assert_string_equal(rec.msgs[1], expect[1]);
        assert_string_equal(rec.msgs[2], expect[2]);
    }
}

static void sem_bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name), *n = (dlock_semaphore *)&n;
    uint64_t pubs = fx->is_mock ? dlock_mock_store_publish_count(fx->store) : 0;
    int v = 7;
    int64_t i = 7;
    char *longname = malloc(DLOCK_NAME_MAX + 2);

    /* constructors */
    assert_int_equal(dlock_semaphore_new(NULL, fx->c1, "x"), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_new(&n, NULL, "x"), DLOCK_EINVAL);
    assert_null(n);
    n = (dlock_semaphore *)&n;
    assert_int_equal(dlock_semaphore_new(&n, fx->c1, NULL), DLOCK_EINVAL);
    assert_null(n);
    n = (dlock_semaphore *)&n;
    assert_int_equal(dlock_semaphore_new(&n, fx->c1, ""), DLOCK_EINVAL);
    assert_null(n);
    assert_non_null(longname);
    memset(longname, 'n', DLOCK_NAME_MAX + 1);
    longname[DLOCK_NAME_MAX + 1] = '\0';
    n = (dlock_semaphore *)&n;
    assert_int_equal(dlock_semaphore_new(&n, fx->c1, longname), DLOCK_EINVAL);
    free(longname);
    assert_null(n);
    dlock_semaphore_free(NULL);
    assert_null(dlock_semaphore_name(NULL));
    assert_string_equal(dlock_semaphore_name(s), fx->name);
    assert_non_null(dlock_semaphore_errmsg(NULL));

    /* NULL object or out */
    assert_int_equal(dlock_semaphore_try_set_permits(NULL, &v, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(NULL, &v, 1, 10), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_acquire(NULL, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_acquire(NULL, 1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release(NULL, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release_if_exists(NULL, &v, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_add_permits(NULL, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_drain_permits(NULL, &i), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_available_permits(NULL, &i), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_available_permits(s, NULL), DLOCK_EINVAL);

    /* negative counts and waits */
    assert_int_equal(dlock_semaphore_try_set_permits(s, &v, -1), DLOCK_EINVAL);
    assert_true(strstr(dlock_semaphore_errmsg(s), "permits") != NULL);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(s, &v, -1, 100), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_acquire(s, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_acquire(s, -1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_acquire(s, 1, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_try_acquire(s, 1, INT64_MIN), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release(s, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release(s, INT64_MIN), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release_if_exists(s, &v, -3), DLOCK_EINVAL);
    /* beyond what the scripts count exactly */
    assert_int_equal(dlock_semaphore_add_permits(s, DLOCK_PERMITS_MAX + 1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_add_permits(s, INT64_MIN), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release(s, INT64_MAX), DLOCK_EINVAL);

    /* zero: acquire succeeds at once (even with no permits at all), release
     * is a no-op that creates nothing */
    assert_int_equal(dlock_semaphore_acquire(s, 0), 0);
    assert_int_equal(dlock_semaphore_try_acquire(s, 0, 0), 0);
    assert_int_equal(dlock_semaphore_release(s, 0), 0);
    assert_int_equal(dlock_semaphore_add_permits(s, 0), 0);
    assert_int_equal(key_int(fx->c1, "exists", fx->name), 0);
    if (fx->is_mock) {
        assert_int_equal(dlock_mock_store_dbsize(fx->store), 0);
        assert_int_equal(dlock_mock_store_publish_count(fx->store), pubs);
    }

    /* the count may not be pushed out of the exact range either */
    assert_int_equal(dlock_semaphore_add_permits(s, DLOCK_PERMITS_MAX), 0);
    assert_int_equal(dlock_semaphore_release(s, 1), DLOCK_EPROTO);
    assert_int_equal(avail(s), DLOCK_PERMITS_MAX);
}

/* ---- the stress run ------------------------------------------------------ */

#define ST_THREADS 8
#define ST_ITERS 1000
#define ST_PERMITS 3

/* Enter: one more holder in the backend's gauge, one more pass counted;
 * replies the gauge. Leave: one holder less. One script each, so the gauge
 * is exact whatever the interleaving. */
static const dlock_script gauge_enter = {
    "test_gauge_enter",
    "redis.call('incr', KEYS[2])\nreturn redis.call('incr', KEYS[1])\n"};
static const dlock_script gauge_leave = {
    "test_gauge_leave", "return redis.call('decr', KEYS[1])\n"};

typedef struct st_worker {
    dlock_client *c;
    dlock_semaphore *s; /* plain semaphore threads */
    dlock_rlock *l;     /* semaphore-as-lock threads */
    int64_t lease_ms;
    const char *keys[2]; /* gauge, passes */
    int *max_seen, *violations;
    int errors, first_err, passes;
    char where[32];
} st_worker;

static int gauge(st_worker *w, const dlock_script *sc, long long *v)
{
    dlock_reply *r = NULL;
    size_t nkeys = sc == &gauge_enter ? 2 : 1;
    int rc = dlock_backend_eval(dlock_client_backend(w->c), &r, sc, nkeys, 0, w->keys,
                                NULL, NULL, 0);

    if (rc == 0 && r->type != DLOCK_REPLY_INTEGER)
        rc = DLOCK_EPROTO;
    if (rc == 0)
        *v = r->integer;
    dlock_reply_free(r);
    return rc;
}

static void st_main(void *arg)
{
    st_worker *w = arg;
    int i, rc;

    for (i = 0; i < ST_ITERS; i++) {
        long long inside = 0, left = 0;
        int seen;

        rc = w->s ? dlock_semaphore_acquire(w->s, 1) : dlock_lock(w->l, w->lease_ms);
        if (rc != 0) {
            w->errors++;
            w->first_err = rc;
            snprintf(w->where, sizeof(w->where), "acquire #%d", i);
            return;
        }
        rc = gauge(w, &gauge_enter, &inside);
        if (rc == 0) {
            seen = __atomic_load_n(w->max_seen, __ATOMIC_SEQ_CST);
            while (inside > seen &&
                   !__atomic_compare_exchange_n(w->max_seen, &seen, (int)inside, 0,
                                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
                ;
            if (inside > ST_PERMITS)
                __atomic_add_fetch(w->violations, 1, __ATOMIC_SEQ_CST);
            /* Stay inside a moment: on the mock, calls are so quick that
             * holders would rarely overlap, and the gauge would prove less. */
            {
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            }
            rc = gauge(w, &gauge_leave, &left);
        }
        if (rc != 0 && w->errors++ == 0) {
            w->first_err = rc;
            snprintf(w->where, sizeof(w->where), "gauge #%d", i);
        }
        rc = w->s ? dlock_semaphore_release(w->s, 1) : dlock_unlock(w->l);
        if (rc != 0) {
            w->errors++;
            w->first_err = rc;
            snprintf(w->where, sizeof(w->where), "release #%d", i);
            return;
        }
        w->passes++;
    }
}

/* 8 threads, two clients (4 threads each), on a 3-permit semaphore. With
 * mixed set, half the threads hold the semaphore as a lock instead (lease 0
 * and a long lease), all from one count. A gauge kept in the backend counts
 * the holders inside. */
static void stress(dlock_fx *fx, int mixed)
{
    dlock_semaphore *s1 = sem(fx->c1, fx->name), *s2 = sem(fx->c2, fx->name);
    dlock_rlock *l1 = semlock(fx, fx->c1, fx->name), *l2 = semlock(fx, fx->c2, fx->name);
    st_worker w[ST_THREADS];
    dlock_fx_thread t[ST_THREADS];
    char gauge_key[160], passes_key[160];
    int i, joined = 0, errors = 0, max_seen = 0, violations = 0, passes = 0;
    long long g = -1, total = -1;
    int64_t t0;

    /* one hash tag: the gauge script touches both (one slot on a cluster) */
    snprintf(gauge_key, sizeof(gauge_key), "{%s}:gauge", fx->name);
    snprintf(passes_key, sizeof(passes_key), "{%s}:passes", fx->name);
    assert_int_equal(dlock_semaphore_try_set_permits(s1, NULL, ST_PERMITS), 0);
    memset(w, 0, sizeof(w));
    for (i = 0; i < ST_THREADS; i++) {
        w[i].c = i % 2 ? fx->c2 : fx->c1;
        if (!mixed || (i / 2) % 2 == 0)
            w[i].s = i % 2 ? s2 : s1;
        else
            w[i].l = i % 2 ? l2 : l1;
        w[i].lease_ms = i < 4 ? 0 : fx->long_lease_ms;
        w[i].keys[0] = gauge_key;
        w[i].keys[1] = passes_key;
        w[i].max_seen = &max_seen;
        w[i].violations = &violations;
    }
    t0 = dlock_fx_real_ms();
    for (i = 0; i < ST_THREADS; i++)
        dlock_fx_start(&t[i], st_main, &w[i]);
    for (i = 0; i < ST_THREADS; i++)
        joined |= dlock_fx_join(fx, &t[i], 120000, NULL);
    for (i = 0; i < ST_THREADS; i++) {
        if (w[i].errors)
            printf("  [%s] stress thread %d: %d errors, first %s at %s\n", fx->backend,
                   i, w[i].errors, dlock_errname(w[i].first_err), w[i].where);
        errors += w[i].errors;
        passes += w[i].passes;
    }
    assert_int_equal(dlock_fx_counter_get(fx->c1, gauge_key, &g), 0);
    assert_int_equal(dlock_fx_counter_get(fx->c1, passes_key, &total), 0);
    printf("  [%s] stress: %d threads x %d on %d permits (%s): %" PRId64 " ms, "
           "max holders seen %d, violations %d, passes %lld, available after %" PRId64
           ", gauge after %lld\n",
           fx->backend, ST_THREADS, ST_ITERS, ST_PERMITS,
           mixed ? "4 plain, 4 as a lock" : "all plain", dlock_fx_real_ms() - t0,
           max_seen, violations, total, avail(s1), g);

    assert_int_equal(joined, 0);
    assert_int_equal(errors, 0);
    assert_int_equal(violations, 0);
    /* saturated: every permit was in use at some point, and never more */
    assert_int_equal(max_seen, ST_PERMITS);
    assert_int_equal(passes, ST_THREADS * ST_ITERS);
    assert_int_equal(total, ST_THREADS * ST_ITERS);
    assert_int_equal(g, 0);
    assert_int_equal(avail(s2), ST_PERMITS);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

static void sem_stress_plain(void **state)
{
    stress(BEGIN(state), 0);
}

static void sem_stress_plain_and_lock(void **state)
{
    stress(BEGIN(state), 1);
}

/* ==== the permit-expirable semaphore ====================================== */

static void permit_acquire_and_release(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name), *p2 = psem(fx->c2, fx->name);
    const int64_t lease = fx->long_lease_ms;
    char timeout[200], buf[64];
    char **ids = NULL, **none = NULL;
    int64_t wall;
    int set = -1, ok = -1;
    long long score;

    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, &set, 3), 0);
    assert_int_equal(set, 1);
    wall = wall_now(fx->c1);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 2, lease), 0);
    assert_non_null(ids);
    assert_true(is_permit_id(ids[0]));
    assert_true(is_permit_id(ids[1]));
    assert_null(ids[2]);
    assert_string_not_equal(ids[0], ids[1]);
    assert_int_equal(p_avail(p2), 1);
    assert_int_equal(p_acquired(p2), 2);
    assert_int_equal(p_total(p2), 3);

    /* the layout: the count, and the ids scored by their lease's end */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "1");
    key_of(timeout, sizeof(timeout), "", fx->name, ":timeout");
    assert_int_equal(key_int(fx->c2, "zcard", timeout), 2);
    score = raw_id_score(fx->c2, timeout, ids[0]);
    if (fx->is_mock) {
        assert_int_equal(score, wall + lease);
        assert_int_equal(lease_of(p2, ids[0]), lease);
    } else {
        assert_true(score >= wall + lease && score < wall + lease + 2000);
        assert_true(lease_of(p2, ids[0]) > lease - 2000);
    }

    assert_int_equal(dlock_permit_semaphore_release(p2, ids[0]), 0);
    assert_int_equal(p_avail(p), 2);
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), DLOCK_ENOTOWNER);
    assert_true(strstr(dlock_permit_semaphore_errmsg(p), "not taken") != NULL);
    assert_int_equal(lease_of(p, ids[0]), -2);
    assert_int_equal(dlock_permit_semaphore_try_release(p, &ok, ids[1]), 0);
    assert_int_equal(ok, 1);
    assert_int_equal(dlock_permit_semaphore_try_release(p, &ok, ids[1]), 0);
    assert_int_equal(ok, 0);
    assert_int_equal(p_avail(p), 3);
    assert_int_equal(p_acquired(p), 0);
    assert_int_equal(key_int(fx->c2, "zcard", timeout), 0);
    dlock_permit_ids_free(ids);

    /* zero permits: an empty list at once */
    assert_int_equal(dlock_permit_semaphore_acquire(p, &none, 0, lease), 0);
    assert_non_null(none);
    assert_null(none[0]);
    dlock_permit_ids_free(none);
    dlock_permit_ids_free(NULL);
    assert_int_equal(p_avail(p), 3);
}

/* A permit with a 1 s lease expires, a blocked acquirer gets it, and the
 * old id's release says it expired. */
static void permit_expiry_goes_to_waiter(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p1 = psem(fx->c1, fx->name), *p2 = psem(fx->c2, fx->name);
    const int64_t lease = fx->is_mock ? 1000 : 200;
    char **old = NULL;
    int blocked = 0, early = 0, joined, base, ok = -1;
    op w;

    assert_int_equal(dlock_permit_semaphore_try_set_permits(p1, NULL, 1), 0);
    assert_int_equal(dlock_permit_semaphore_acquire(p1, &old, 1, lease), 0);
    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, PERMIT_TRY, p2, 1, 20 * lease, fx->long_lease_ms);
    if (fx->is_mock) {
        blocked = dlock_fx_wait_blocked(fx, base, 0);
        dlock_fx_advance(fx, lease - 1);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 1);
    }
    joined = op_join(fx, &w, fx->is_mock ? 5000 : 20 * lease + 5000);

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_non_null(w.ids);
    assert_true(is_permit_id(w.ids[0]));
    assert_string_not_equal(w.ids[0], old[0]);
    if (fx->is_mock) /* in at the expiry, not a full wait later */
        assert_int_equal(w.end_v - w.start_v, lease);
    else
        assert_true(w.end_real - w.start_real < 10 * lease);

    assert_int_equal(dlock_permit_semaphore_release(p1, old[0]), DLOCK_ELOST);
    printf("  [%s] release of an expired permit: %s\n", fx->backend,
           dlock_permit_semaphore_errmsg(p1));
    assert_true(strstr(dlock_permit_semaphore_errmsg(p1), "lease ran out") != NULL);
    assert_int_equal(dlock_permit_semaphore_try_release(p1, &ok, old[0]), 0);
    assert_int_equal(ok, 0);
    assert_int_equal(dlock_permit_semaphore_update_lease(p1, old[0], lease), DLOCK_ELOST);
    assert_int_equal(lease_of(p1, old[0]), -2);
    /* nothing of that touched the new holder */
    assert_int_equal(p_avail(p1), 0);
    assert_int_equal(p_acquired(p1), 1);
    assert_true(lease_of(p1, w.ids[0]) > 0);
    assert_int_equal(dlock_permit_semaphore_release(p1, w.ids[0]), 0);
    assert_int_equal(p_avail(p1), 1);
    dlock_permit_ids_free(old);
    dlock_permit_ids_free(w.ids);
}

static void permit_waiter_wakes_on_release(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p1 = psem(fx->c1, fx->name), *p2 = psem(fx->c2, fx->name);
    char **ids = NULL;
    int blocked, joined, base;
    int64_t v0;
    op w;

    assert_int_equal(dlock_permit_semaphore_try_set_permits(p1, NULL, 1), 0);
    assert_int_equal(dlock_permit_semaphore_acquire(p1, &ids, 1, fx->long_lease_ms), 0);
    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, PERMIT_TRY, p2, 1, 2 * fx->long_lease_ms, fx->long_lease_ms);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    v0 = dlock_fx_now(fx);
    assert_int_equal(dlock_permit_semaphore_release(p1, ids[0]), 0);
    joined = op_join(fx, &w, 10000);

    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_true(is_permit_id(w.ids[0]));
    if (fx->is_mock)
        assert_int_equal(w.end_v, v0);
    assert_int_equal(p_acquired(p1), 1);
    assert_int_equal(dlock_permit_semaphore_release(p2, w.ids[0]), 0);
    dlock_permit_ids_free(ids);
    dlock_permit_ids_free(w.ids);
}

/* A list is released all or nothing; a bad id changes nothing. */
static void permit_release_list_all_or_nothing(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name);
    const char *never = "0123456789abcdef0123456789abcdef";
    const int64_t short_lease = fx->is_mock ? 1000 : 150;
    char **ids = NULL, **brief = NULL;
    const char *list[3];
    size_t bad = 99;
    int ok = -1;

    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, NULL, 4), 0);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 3, fx->long_lease_ms), 0);

    list[0] = ids[0];
    list[1] = never;
    list[2] = ids[2];
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, list, 3), DLOCK_ENOTOWNER);
    assert_int_equal(bad, 1);
    assert_int_equal(p_acquired(p), 3);
    assert_int_equal(p_avail(p), 1);
    assert_int_equal(dlock_permit_semaphore_try_release_all(p, &ok, list, 3), 0);
    assert_int_equal(ok, 0);
    assert_int_equal(p_acquired(p), 3);
    /* the same id twice is bad input, and changes nothing */
    list[1] = ids[0];
    bad = 99;
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, list, 3), DLOCK_EINVAL);
    assert_int_equal(bad, 1);
    assert_int_equal(dlock_permit_semaphore_try_release_all(p, &ok, list, 2), DLOCK_EINVAL);
    /* a repeat is bad input even behind an id that is not taken */
    list[1] = never;
    list[2] = ids[0];
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, list, 3), DLOCK_EINVAL);
    assert_int_equal(bad, 2);
    list[2] = ids[2];
    /* so is something that is not a permit id */
    list[1] = "not-a-permit-id";
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, list, 3), DLOCK_EINVAL);
    assert_int_equal(bad, 1);
    assert_int_equal(p_acquired(p), 3);

    /* an expired id in the list: ELOST, the live ones stay taken */
    assert_int_equal(dlock_permit_semaphore_acquire(p, &brief, 1, short_lease), 0);
    dlock_fx_advance(fx, short_lease + (fx->is_mock ? 0 : 50));
    list[0] = ids[1];
    list[1] = brief[0];
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, list, 2), DLOCK_ELOST);
    assert_int_equal(bad, 1);
    assert_int_equal(p_acquired(p), 3);
    assert_int_equal(p_avail(p), 1); /* the expired one is back */

    /* and the good lists go through */
    list[0] = ids[0];
    list[1] = ids[1];
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, list, 2), 0);
    assert_int_equal(bad, 2);
    assert_int_equal(p_acquired(p), 1);
    assert_int_equal(dlock_permit_semaphore_try_release_all(
                         p, &ok, (const char *const *)ids + 2, 1), 0);
    assert_int_equal(ok, 1);
    assert_int_equal(dlock_permit_semaphore_release_all(p, &bad, NULL, 0), 0);
    assert_int_equal(bad, 0);
    assert_int_equal(p_acquired(p), 0);
    assert_int_equal(p_avail(p), 4);
    dlock_permit_ids_free(ids);
    dlock_permit_ids_free(brief);
}

static void permit_update_lease_and_lease_of(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name), *p2 = psem(fx->c2, fx->name);
    const int64_t lease = fx->is_mock ? fx->lease_ms : 300;
    char timeout[200], expired[200];
    char **ids = NULL;
    int64_t left;

    key_of(timeout, sizeof(timeout), "", fx->name, ":timeout");
    key_of(expired, sizeof(expired), "", fx->name, ":expired");
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, NULL, 1), 0);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, lease), 0);
    dlock_fx_advance(fx, lease / 2);
    left = lease_of(p2, ids[0]);
    if (fx->is_mock)
        assert_int_equal(left, lease / 2);
    else
        assert_true(left > 0 && left <= lease / 2);
    assert_int_equal(dlock_permit_semaphore_update_lease(p2, ids[0], 3 * lease), 0);
    left = lease_of(p, ids[0]);
    assert_true(left <= 3 * lease && left > 3 * lease - (fx->is_mock ? 1 : 100));
    /* past the first lease's end: still taken */
    dlock_fx_advance(fx, lease);
    assert_int_equal(p_acquired(p), 1);
    assert_int_equal(p_avail(p), 0);
    /* past the new one: reads count it as available without writing */
    dlock_fx_advance(fx, 2 * lease + (fx->is_mock ? 0 : 50));
    assert_int_equal(p_acquired(p), 0);
    assert_int_equal(p_avail(p), 1);
    assert_int_equal(p_total(p), 1);
    assert_int_equal(lease_of(p, ids[0]), -2);
    assert_int_equal(key_int(fx->c2, "zcard", timeout), 1);
    /* the next write reclaims it and remembers the id as expired */
    assert_int_equal(dlock_permit_semaphore_update_lease(p, ids[0], lease), DLOCK_ELOST);
    assert_int_equal(key_int(fx->c2, "zcard", timeout), 0);
    assert_int_equal(key_int(fx->c2, "zcard", expired), 1);
    assert_int_equal(key_int(fx->c2, "get", fx->name), 1);
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), DLOCK_ELOST);
    dlock_permit_ids_free(ids);
}

static void permit_set_and_add(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name);
    char **ids = NULL, **more = NULL;
    int set = -1;

    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, &set, 5), 0);
    assert_int_equal(set, 1);
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, &set, 7), 0);
    assert_int_equal(set, 0);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 2, fx->long_lease_ms), 0);
    assert_int_equal(p_avail(p), 3);
    assert_int_equal(p_total(p), 5);
    assert_int_equal(dlock_permit_semaphore_set_permits(p, 4), 0);
    assert_int_equal(p_avail(p), 2);
    assert_int_equal(p_acquired(p), 2);
    assert_int_equal(p_total(p), 4);
    /* fewer than are taken: the available count goes below zero */
    assert_int_equal(dlock_permit_semaphore_set_permits(p, 1), 0);
    assert_int_equal(p_avail(p), -1);
    assert_int_equal(p_total(p), 1);
    assert_int_equal(dlock_permit_semaphore_try_acquire(p, &more, 1, 0, fx->long_lease_ms),
                     DLOCK_EBUSY);
    assert_null(more);
    assert_int_equal(dlock_permit_semaphore_release_all(
                         p, NULL, (const char *const *)ids, 2), 0);
    assert_int_equal(p_avail(p), 1);
    assert_int_equal(dlock_permit_semaphore_add_permits(p, -3), 0);
    assert_int_equal(p_avail(p), -2);
    assert_int_equal(p_total(p), -2);
    assert_int_equal(dlock_permit_semaphore_add_permits(p, 5), 0);
    assert_int_equal(p_avail(p), 3);
    assert_int_equal(
        dlock_permit_semaphore_try_acquire(p, &more, 3, 0, fx->long_lease_ms), 0);
    assert_int_equal(p_avail(p), 0);
    dlock_permit_ids_free(ids);
    dlock_permit_ids_free(more);
}

static void permit_bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name), *n = (dlock_permit_semaphore *)&n;
    const char *good = "0123456789abcdef0123456789abcdef";
    static const char *const malformed[] = {
        "", "0123456789ABCDEF0123456789ABCDEF", "0123456789abcdef0123456789abcde",
        "0123456789abcdef0123456789abcdef0", "0123456789abcdef0123456789abcdeg"};
    char **ids = (char **)&ids;
    const char *list[2];
    int64_t v;
    size_t i;
    int ok;

    assert_int_equal(dlock_permit_semaphore_new(NULL, fx->c1, "x"), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_new(&n, NULL, "x"), DLOCK_EINVAL);
    assert_null(n);
    n = (dlock_permit_semaphore *)&n;
    assert_int_equal(dlock_permit_semaphore_new(&n, fx->c1, ""), DLOCK_EINVAL);
    assert_null(n);
    dlock_permit_semaphore_free(NULL);
    assert_null(dlock_permit_semaphore_name(NULL));
    assert_string_equal(dlock_permit_semaphore_name(p), fx->name);
    assert_non_null(dlock_permit_semaphore_errmsg(NULL));
    assert_int_equal(dlock_permit_semaphore_acquire(NULL, &ids, 1, 10), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_release(NULL, good), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_available_permits(NULL, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_available_permits(p, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_lease_of(p, NULL, good), DLOCK_EINVAL);

    /* counts, leases and waits */
    assert_int_equal(dlock_permit_semaphore_acquire(p, NULL, 1, 10), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, -1, 10), DLOCK_EINVAL);
    assert_null(ids);
    assert_int_equal(
        dlock_permit_semaphore_acquire(p, &ids, DLOCK_PERMITS_PER_CALL + 1, 10),
        DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, 0), DLOCK_EINVAL);
    assert_true(strstr(dlock_permit_semaphore_errmsg(p), "lease") != NULL);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, -2), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_try_acquire(p, &ids, 1, -1, 10), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_set_permits(p, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, &ok, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_add_permits(p, INT64_MIN), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_update_lease(p, good, 0), DLOCK_EINVAL);

    /* ids */
    assert_int_equal(dlock_permit_semaphore_release(p, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_try_release(p, &ok, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_release_all(p, NULL, NULL, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_release_all(p, NULL, list,
                                                        DLOCK_PERMITS_PER_CALL + 1),
                     DLOCK_EINVAL);
    for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
        assert_int_equal(dlock_permit_semaphore_release(p, malformed[i]), DLOCK_EINVAL);
        assert_int_equal(dlock_permit_semaphore_try_release(p, &ok, malformed[i]),
                         DLOCK_EINVAL);
        assert_int_equal(dlock_permit_semaphore_update_lease(p, malformed[i], 10),
                         DLOCK_EINVAL);
        assert_int_equal(dlock_permit_semaphore_lease_of(p, &v, malformed[i]),
                         DLOCK_EINVAL);
    }
    list[0] = good;
    list[1] = malformed[1];
    assert_int_equal(dlock_permit_semaphore_release_all(p, NULL, list, 2), DLOCK_EINVAL);
    /* a well-formed id nobody issued: not taken, a clear answer */
    assert_int_equal(dlock_permit_semaphore_release(p, good), DLOCK_ENOTOWNER);
    assert_true(strstr(dlock_permit_semaphore_errmsg(p), good) != NULL);
    assert_int_equal(dlock_permit_semaphore_update_lease(p, good, 10), DLOCK_ENOTOWNER);
    assert_int_equal(lease_of(p, good), -2);

    /* none of it set anything up */
    assert_int_equal(p_total(p), 0);
    assert_int_equal(key_int(fx->c1, "exists", fx->name), 0);
    if (fx->is_mock)
        assert_int_equal(dlock_mock_store_dbsize(fx->store), 0);
}

/* ==== the semaphore as a lock ============================================= */

static void semlock_permits_bound_holders(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    dlock_rlock *l1 = semlock(fx, fx->c1, fx->name), *l2 = semlock(fx, fx->c2, fx->name);
    const char *third = "third-owner:1";
    char holders[200], buf[64];
    int64_t ttl;

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 2), 0);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(l2, fx->long_lease_ms), 0);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_try_lock_as(l1, third, 0, fx->long_lease_ms), DLOCK_EBUSY);
    /* re-entry takes no second permit */
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 2);
    assert_int_equal(dlock_fx_hold_count_as(l1, fx->owner2), 1);
    assert_int_equal(dlock_fx_hold_count_as(l1, third), 0);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_fx_is_held_as(l2, third), 0);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 1);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->long_lease_ms);
    /* the layout */
    key_of(holders, sizeof(holders), "", fx->name, ":holders");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", holders, 1, fx->owner1, NULL);
    assert_string_equal(buf, "2");
    assert_int_equal(key_int(fx->c2, "hlen", holders), 2);

    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 1);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(avail(s), 1);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock_as(l1, third), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_try_lock_as(l1, third, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock_as(l2, third), 0);
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(avail(s), 2);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    assert_int_equal(key_int(fx->c2, "exists", holders), 0);
}

/* An owner that never unlocks (its process died) loses its permit when the
 * lease ends, and the waiter gets it. */
static void semlock_dead_holder_permit_returns(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    dlock_rlock *l1 = semlock(fx, fx->c1, fx->name), *l2 = semlock(fx, fx->c2, fx->name);
    const int64_t lease = fx->is_mock ? fx->lease_ms : 200;
    int blocked = 0, early = 0, joined, base;
    op w;

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
    assert_int_equal(dlock_lock(l1, lease), 0);
    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, LOCK_LOCK, l2, 0, 0, fx->long_lease_ms);
    if (fx->is_mock) {
        blocked = dlock_fx_wait_blocked(fx, base, 0);
        dlock_fx_advance(fx, lease - 1);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 1);
    }
    joined = op_join(fx, &w, fx->is_mock ? 5000 : 20 * lease + 5000);

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.held, 1);
    if (fx->is_mock)
        assert_int_equal(w.end_v - w.start_v, lease);
    assert_int_equal(dlock_fx_is_held_as(l1, w.owner), 1);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 0);
    assert_int_equal(avail(s), 0);
    /* the dead owner's late unlock is told the truth and changes nothing */
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_is_held_as(l1, w.owner), 1);
    assert_int_equal(dlock_unlock_as(l2, w.owner), 0);
    assert_int_equal(avail(s), 1);
}

/* With lease 0 the watchdog keeps the permit; a process that stops renewing
 * (its handle freed) gives it back one watchdog timeout later. */
static void semlock_watchdog_keeps_permit(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    dlock_rlock *l1 = semlock(fx, fx->c1, fx->name), *l2 = semlock(fx, fx->c2, fx->name);
    dlock_rlock *lf = NULL;
    int64_t ttl;

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
    assert_int_equal(dlock_lock(l1, 0), 0);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    dlock_fx_advance(fx, 4 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(avail(s), 1);
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    assert_int_equal(dlock_semaphore_lock_new(&lf, fx->c1, fx->name), 0);
    assert_int_equal(dlock_lock(lf, 0), 0);
    dlock_rlock_free(lf); /* the remote hold stays, unrenewed */
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    dlock_fx_advance(fx, fx->watchdog_ms + (fx->is_mock ? 0 : 150));
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* Braces in the name: the watchdog's renewal script finds the same keys as
 * the other scripts. */
static void semlock_braced_name_renewed(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160], holders[200];
    dlock_semaphore *s;
    dlock_rlock *l1, *l2;

    braced_name(name, sizeof(name), fx->name, ":sem");
    s = sem(fx->c1, name);
    l1 = semlock(fx, fx->c1, name);
    l2 = semlock(fx, fx->c2, name);
    key_of(holders, sizeof(holders), "", name, ":holders");
    assert_int_equal(strncmp(holders, "{dlock-test", 11), 0);
    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(key_int(fx->c2, "hlen", holders), 1);
    dlock_fx_advance(fx, 4 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_is_held_as(l2, fx->owner1), 1);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(avail(s), 1);
}

/* A release of plain permits wakes a lock waiter (one count, one channel),
 * and force_unlock gives every holder's permit back. */
static void semlock_shares_plain_count(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    dlock_rlock *l1 = semlock(fx, fx->c1, fx->name), *l2 = semlock(fx, fx->c2, fx->name);
    int blocked, joined, base, existed = -1;
    int64_t v0;
    op w;

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
    assert_int_equal(dlock_semaphore_acquire(s, 1), 0);
    assert_int_equal(dlock_try_lock(l1, 0, 0), DLOCK_EBUSY);
    base = dlock_fx_settle(fx);
    op_start(&w, fx, fx->c2, LOCK_TRY, l2, 0, 2 * fx->long_lease_ms, fx->long_lease_ms);
    blocked = dlock_fx_wait_blocked(fx, base, 300);
    v0 = dlock_fx_now(fx);
    assert_int_equal(dlock_semaphore_release(s, 1), 0);
    joined = op_join(fx, &w, 10000);

    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    if (fx->is_mock)
        assert_int_equal(w.end_v, v0);
    assert_int_equal(avail(s), 0);
    /* a plain acquirer now waits for the lock holder */
    assert_int_equal(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_EBUSY);

    assert_int_equal(dlock_semaphore_add_permits(s, 1), 0);
    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_force_unlock(l1, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(avail(s), 2);
    assert_int_equal(dlock_fx_is_locked(l1), 0);
    /* both holds were taken away: the owners are told so */
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock_as(l2, w.owner), DLOCK_ELOST);
    assert_int_equal(dlock_force_unlock(l1, &existed), 0);
    assert_int_equal(existed, 0);
    assert_int_equal(avail(s), 2);
}

static void semlock_bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = semlock(fx, fx->c1, fx->name), *n = (dlock_rlock *)&n;

    assert_int_equal(dlock_semaphore_lock_new(NULL, fx->c1, "x"), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_lock_new(&n, NULL, "x"), DLOCK_EINVAL);
    assert_null(n);
    n = (dlock_rlock *)&n;
    assert_int_equal(dlock_semaphore_lock_new(&n, fx->c1, ""), DLOCK_EINVAL);
    assert_null(n);
    assert_int_equal(dlock_lock(l, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock(l, -1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock(l), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_hold_count(l, NULL), DLOCK_EINVAL);
    assert_string_equal(dlock_rlock_name(l), fx->name);
    /* no permits set up: busy, not an error */
    assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_fx_is_locked(l), 0);
    if (fx->is_mock)
        assert_int_equal(dlock_mock_store_dbsize(fx->store), 0);
}

/* ==== a key of another type under the name ================================ */

/* Runs o (which must fail at once, not wait) and returns its result. */
static int run_failing(dlock_fx *fx, op *o)
{
    int late = op_join(fx, o, 10000);
    assert_int_equal(late, 0);
    return o->rc;
}

static void expect_untouched(dlock_fx *fx, const char *key, const char *type)
{
    char buf[64];

    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "type", key, 0, NULL, NULL);
    assert_string_equal(buf, type);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "pttl", key, 0, NULL, NULL);
    assert_string_equal(buf, "-1");
}

static void wrong_type_under_name(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name);
    dlock_latch *a = latch(fx->c1, fx->name);
    dlock_rlock *l = semlock(fx, fx->c1, fx->name);
    char timeout[200], holders[200], buf[64];
    size_t dbsize = 0;
    char **ids = NULL;
    int64_t v;
    int round, rc;
    op o;

    for (round = 0; round < 2; round++) {
        /* a string that is not a count, then a hash */
        if (round == 0) {
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1, "precious", NULL);
        } else {
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, "f", "v");
        }
        if (fx->is_mock)
            dbsize = dlock_mock_store_dbsize(fx->store);

        /* blocking calls fail at once instead of waiting */
        op_start(&o, fx, fx->c1, SEM_ACQUIRE, s, 1, 0, 0);
        assert_int_equal(run_failing(fx, &o), DLOCK_EPROTO);
        printf("  [%s] semaphore on a %s: %s\n", fx->backend, round ? "hash" : "string",
               dlock_semaphore_errmsg(s));
        assert_true(strstr(dlock_semaphore_errmsg(s),
                           round ? "WRONGTYPE" : "integer") != NULL);
        op_start(&o, fx, fx->c1, PERMIT_TRY, p, 1, 2 * fx->long_lease_ms, fx->lease_ms);
        assert_int_equal(run_failing(fx, &o), DLOCK_EPROTO);
        assert_null(o.ids);
        op_start(&o, fx, fx->c1, LOCK_LOCK, l, 0, 0, 0);
        assert_int_equal(run_failing(fx, &o), DLOCK_EPROTO);
        op_start(&o, fx, fx->c1, LATCH_AWAIT, a, 0, 0, 0);
        assert_int_equal(run_failing(fx, &o), DLOCK_EPROTO);

        /* everything else */
        assert_int_equal(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_EPROTO);
        assert_int_equal(dlock_semaphore_release(s, 1), DLOCK_EPROTO);
        assert_int_equal(dlock_semaphore_release_if_exists(s, NULL, 1), DLOCK_EPROTO);
        assert_int_equal(dlock_semaphore_add_permits(s, -1), DLOCK_EPROTO);
        assert_int_equal(dlock_semaphore_drain_permits(s, NULL), DLOCK_EPROTO);
        assert_int_equal(dlock_semaphore_available_permits(s, &v), DLOCK_EPROTO);
        assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), DLOCK_EPROTO);
        assert_int_equal(dlock_permit_semaphore_try_acquire(p, &ids, 1, 0, 10),
                         DLOCK_EPROTO);
        assert_int_equal(dlock_permit_semaphore_set_permits(p, 3), DLOCK_EPROTO);
        assert_int_equal(dlock_permit_semaphore_available_permits(p, &v), DLOCK_EPROTO);
        assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), DLOCK_EPROTO);
        rc = dlock_unlock(l);
        assert_true(rc == DLOCK_EPROTO || rc == DLOCK_ENOTOWNER);
        assert_int_equal(dlock_is_locked(l, &(int){0}), DLOCK_EPROTO);
        assert_int_equal(dlock_force_unlock(l, NULL), DLOCK_EPROTO);
        assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), DLOCK_EPROTO);
        assert_int_equal(dlock_latch_count_down(a), DLOCK_EPROTO);
        assert_int_equal(dlock_latch_count(a, &v), DLOCK_EPROTO);
        assert_int_equal(dlock_latch_delete(a, NULL), DLOCK_EPROTO);
        assert_int_equal(dlock_latch_await_for(a, 0), DLOCK_EPROTO);

        expect_untouched(fx, fx->name, round ? "hash" : "string");
        if (round == 0) {
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
            assert_string_equal(buf, "precious");
        }
        if (fx->is_mock)
            assert_int_equal(dlock_mock_store_dbsize(fx->store), dbsize);
    }
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);

    /* the auxiliary keys too: the permits' set, the lock's holders */
    key_of(timeout, sizeof(timeout), "", fx->name, ":timeout");
    key_of(holders, sizeof(holders), "", fx->name, ":holders");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", timeout, 1, "x", NULL);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "rpush", holders, 1, "x", NULL);
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, NULL, 1), DLOCK_EPROTO);
    assert_int_equal(dlock_permit_semaphore_total_permits(p, &v), DLOCK_EPROTO);
    assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), DLOCK_EPROTO);
    assert_int_equal(dlock_hold_count(l, &v), DLOCK_EPROTO);
    assert_int_equal(key_int(fx->c2, "exists", fx->name), 0);
    expect_untouched(fx, timeout, "string");
    expect_untouched(fx, holders, "list");
    /* nothing is left for the watchdog either */
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* ==== a call that fails changes nothing (issue 32) ========================= */

/* The writing scripts give back the permits of ended holds and expired
 * permits first (the reclaiming step), and used to do it before finding a
 * value they cannot work with, planted by hand: a hold count that is not
 * an integer, a count INCRBY refuses ("007"), an addition that takes the
 * count past +-(2^53 - 1). Now they check first: after the error the store
 * is as it was. */
static void failed_call_changes_nothing(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = semlock(fx, fx->c1, fx->name);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name);
    char holders[200], timeout[200], expired[200], lease[400], buf[64], before[1024],
        after[1024];
    const char *lock_keys[] = {fx->name, holders, lease, NULL};
    const char *permit_keys[] = {fx->name, timeout, expired, NULL};
    char **ids = NULL;
    int round;

    key_of(holders, sizeof(holders), "", fx->name, ":holders");
    key_of(timeout, sizeof(timeout), "", fx->name, ":timeout");
    key_of(expired, sizeof(expired), "", fx->name, ":expired");
    key_of(lease, sizeof(lease), "", fx->name, ":lease:");
    strcat(lease, fx->owner1);
    key_of(lease, sizeof(lease), "", fx->name, ":lease:");
    strcat(lease, fx->owner1);

    /* the semaphore as a lock: a holder whose lease ended ("dead:1": no
     * lease key) beside a live holder whose hold count is not an integer
     * (round 0), or a count INCRBY refuses (round 1) */
    for (round = 0; round < 2; round++) {
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", holders, 0, NULL, NULL);
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", lease, 0, NULL, NULL);
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1,
                          round == 0 ? "1" : "007", NULL);
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", holders, 2, "dead:1", "1");
        if (round == 0) {
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", holders, 2, fx->owner1, "x");
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", lease, 1, "1", NULL);
        }
        dlock_fx_keys_dump(fx->c2, lock_keys, before, sizeof(before));
        assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), DLOCK_EPROTO);
        printf("  [%s] %s\n", fx->backend, dlock_errmsg(l));
        assert_int_equal(dlock_unlock(l), DLOCK_EPROTO);
        /* a force unlock needs no hold count, only the count */
        if (round == 1)
            assert_int_equal(dlock_force_unlock(l, NULL), DLOCK_EPROTO);
        dlock_fx_keys_dump(fx->c2, lock_keys, after, sizeof(after));
        assert_string_equal(after, before);
    }
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", holders, 0, NULL, NULL);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", lease, 0, NULL, NULL);

    /* the permits: an expired permit beside a count near the bound (round
     * 0: adding 5 would pass it) or one INCRBY refuses (round 1) */
    for (round = 0; round < 2; round++) {
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1,
                          round == 0 ? "9007199254740990" : "007", NULL);
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "zadd", timeout, 2, "1", "expired-permit-id");
        dlock_fx_keys_dump(fx->c2, permit_keys, before, sizeof(before));
        if (round == 0) {
            assert_int_equal(dlock_permit_semaphore_add_permits(p, 5), DLOCK_EPROTO);
        } else {
            assert_int_equal(dlock_permit_semaphore_try_acquire(p, &ids, 1, 0, fx->lease_ms),
                             DLOCK_EPROTO);
            assert_null(ids);
            assert_int_equal(dlock_permit_semaphore_set_permits(p, 3), DLOCK_EPROTO);
        }
        printf("  [%s] %s\n", fx->backend, dlock_permit_semaphore_errmsg(p));
        dlock_fx_keys_dump(fx->c2, permit_keys, after, sizeof(after));
        assert_string_equal(after, before);
    }
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", timeout, 0, NULL, NULL);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
}

/* ==== lifetime and fork() ================================================= */

/* Objects keep their client alive (client.h, Lifetime). */
static void objects_outlive_client(void **state)
{
    dlock_fx *fx = BEGIN(state);
    const char *url = fx->is_mock ? "mock:" : dlock_fx_redis_url();
    dlock_client *c = NULL;
    dlock_semaphore *s = NULL;
    dlock_permit_semaphore *p = NULL;
    dlock_latch *a = NULL;
    dlock_rlock *l = NULL;
    char **ids = NULL;
    char err[256] = "";

    assert_int_equal(dlock_client_connect(&c, url, NULL, err, sizeof(err)), 0);
    assert_int_equal(dlock_semaphore_new(&s, c, fx->name), 0);
    keep(s, free_sem);
    assert_int_equal(dlock_permit_semaphore_new(&p, c, fx->name), 0);
    keep(p, free_permit);
    assert_int_equal(dlock_latch_new(&a, c, fx->name), 0);
    keep(a, free_latch);
    assert_int_equal(dlock_semaphore_lock_new(&l, c, fx->name), 0);
    fx->locks[fx->nlocks++] = l;
    dlock_client_free(c);

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 2), 0);
    assert_int_equal(dlock_semaphore_acquire(s, 1), 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(avail(s), 0);
    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), 0);
    dlock_permit_ids_free(ids);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    assert_int_equal(dlock_latch_count_down(a), 0);
    assert_int_equal(dlock_latch_await(a), 0);
}

/* What the fork() child of forked_child_refused tries. */
typedef struct child_args {
    dlock_client *c;
    dlock_semaphore *s;
    dlock_permit_semaphore *p;
    dlock_latch *a;
    dlock_rlock *l;
} child_args;

static void child_calls(void *arg, int *rcs)
{
    child_args *c = arg;
    dlock_semaphore *x = NULL;
    char **ids = NULL;
    int64_t v;

    rcs[0] = dlock_semaphore_acquire(c->s, 1);
    rcs[1] = dlock_semaphore_available_permits(c->s, &v);
    rcs[2] = dlock_permit_semaphore_acquire(c->p, &ids, 1, 1000);
    rcs[3] = dlock_permit_semaphore_release(c->p, "0123456789abcdef0123456789abcdef");
    rcs[4] = dlock_latch_await(c->a);
    rcs[5] = dlock_latch_count_down(c->a);
    rcs[6] = dlock_lock(c->l, 0);
    rcs[7] = dlock_semaphore_new(&x, c->c, "child");
}

/* A fork() child must not act under its parent's identity. */
static void forked_child_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    dlock_permit_semaphore *p = psem(fx->c1, fx->name);
    dlock_latch *a = latch(fx->c1, fx->name);
    dlock_rlock *l = semlock(fx, fx->c1, fx->name);
    child_args args;
    int rcs[8], i;

    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
    args.c = fx->c1;
    args.s = s;
    args.p = p;
    args.a = a;
    args.l = l;
    dlock_fx_run_in_child(child_calls, &args, rcs, 8);
    for (i = 0; i < 8; i++)
        assert_int_equal(rcs[i], DLOCK_EFORKED);
    /* nothing happened, and the parent goes on as before */
    assert_int_equal(avail(s), 1);
    assert_int_equal(dlock_fx_is_locked(l), 0);
    assert_int_equal(dlock_semaphore_acquire(s, 1), 0);
    assert_int_equal(dlock_semaphore_release(s, 1), 0);
}

/* ---- the suite ----------------------------------------------------------- */

#define CASE(f) cmocka_unit_test_setup_teardown(f, dlock_fx_setup, teardown)

/* A semaphore lock of one permit: an attempt that ran but whose reply was
 * lost, retried, takes one permit and one hold, and its one unlock gives
 * the permit back (lost_reply.h). */
static void semlock_retry_after_lost_reply_counts_once(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = sem(fx->c1, fx->name);
    int set = 0;

    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 1), 0);
    assert_int_equal(set, 1);
    dlock_fx_lost_reply_check(fx, dlock_semaphore_lock_new, dlock_semaphore_lock_new, 1);
    assert_int_equal(avail(s), 1);
}

static const struct CMUnitTest semaphore_cases[] = {
    CASE(semlock_retry_after_lost_reply_counts_once),
    CASE(sem_acquire_waits_for_enough),
    CASE(sem_count_goes_negative),
    CASE(sem_drain_and_release_if_exists),
    CASE(sem_try_acquire_gets_releases_during_wait),
    CASE(sem_try_acquire_times_out),
    CASE(sem_large_waiter_overtaken),
    CASE(sem_try_set_permits_and_ttl),
    CASE(sem_messages_carry_the_count),
    CASE(sem_bad_input),
    CASE(sem_stress_plain),
    CASE(sem_stress_plain_and_lock),
    CASE(permit_acquire_and_release),
    CASE(permit_expiry_goes_to_waiter),
    CASE(permit_waiter_wakes_on_release),
    CASE(permit_release_list_all_or_nothing),
    CASE(permit_update_lease_and_lease_of),
    CASE(permit_set_and_add),
    CASE(permit_bad_input),
    CASE(semlock_permits_bound_holders),
    CASE(semlock_dead_holder_permit_returns),
    CASE(semlock_watchdog_keeps_permit),
    CASE(semlock_braced_name_renewed),
    CASE(semlock_shares_plain_count),
    CASE(semlock_bad_input),
    CASE(wrong_type_under_name),
    CASE(failed_call_changes_nothing),
    CASE(objects_outlive_client),
    CASE(forked_child_refused),
};

/* Runs every case on backend ("mock" or "redis"; for redis, main has set the
 * server URL). Returns the number of failures. */
int dlock_test_semaphore(const char *backend);
int dlock_test_semaphore(const char *backend)
{
    int before = dlock_test_failed;
    char group[64];

    /* Any backend but the mock is a Redis server ("redis", "redis-tls"). */
    snprintf(group, sizeof(group), "conformance/semaphore on %s", backend);
    dlock_fx_run_cases(group, semaphore_cases,
                       sizeof(semaphore_cases) / sizeof(semaphore_cases[0]),
                       dlock_fx_group_for(backend));
    return dlock_test_failed - before;
}
