/*
 * Conformance cases of the read-write lock (api/dlock/rwlock.h, issue 4):
 * shared readers, the exclusive writer, downgrade, the refused upgrade,
 * per-hold read leases and dead readers, wake-ups, the halves' independent
 * hold counts and force_unlocks, the watchdog, the Redisson layout, and a
 * stress run. Each case is written once and runs on the mock (on the
 * virtual clock: exact times, no sleeping for leases) and on Redis (ms
 * leases, loose bounds).
 *
 * Many cases name owners explicitly (the *_as calls) instead of starting a
 * thread per owner: a writer "w:x" is just another process's thread.
 * Helper threads only record what they saw; assertions run on the test
 * thread after the join.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/lost_reply.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"
#include "scripts.h" /* the library's scripts, generated: called directly below */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* An owner id that is nobody's thread: another process's writer. */
#define OTHER_WRITER "other-process:7"

/* ---- handles and reads ------------------------------------------------------ */

static dlock_rlock *half(dlock_fx *fx, dlock_client *c, const char *name, int write)
{
    dlock_rlock *l = NULL;

    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    if (write)
        assert_int_equal(dlock_rwlock_write_new(&l, c, name), 0);
    else
        assert_int_equal(dlock_rwlock_read_new(&l, c, name), 0);
    assert_non_null(l);
    fx->locks[fx->nlocks++] = l;
    return l;
}

#define RD(fx, c) half(fx, c, (fx)->name, 0)
#define WR(fx, c) half(fx, c, (fx)->name, 1)

/* ---- the store, directly ----------------------------------------------------- */

/* The hash field's value ("" when absent). */
static const char *field(dlock_fx *fx, const char *name, const char *f)
{
    static char buf[64];
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", name, 1, f, NULL);
    return buf;
}

/* DESIGN §2: the marker of owner's k-th read hold, {N}:O:rwlock_timeout:k,
 * without added braces when N has its own. */
static void marker_key(char *buf, size_t n, const char *name, const char *owner, int k)
{
    if (strchr(name, '{'))
        snprintf(buf, n, "%s:%s:rwlock_timeout:%d", name, owner, k);
    else
        snprintf(buf, n, "{%s}:%s:rwlock_timeout:%d", name, owner, k);
}

static long long marker_pttl(dlock_fx *fx, const char *owner, int k)
{
    char key[512];
    marker_key(key, sizeof(key), fx->name, owner, k);
    return dlock_fx_call_int(fx->c2, "pttl", key, 0, NULL);
}

static char *writer_field(const char *owner)
{
    static char buf[DLOCK_OWNER_MAX + 8];
    snprintf(buf, sizeof(buf), "%s:write", owner);
    return buf;
}

/* ---- helper threads ------------------------------------------------------------ */

enum { OP_LOCK, OP_TRY };
enum { KEEP, RELEASE, RELEASE_ON_GO };

typedef struct actor {
    dlock_fx *fx;
    dlock_rlock *l;
    const char *as; /* explicit owner id, or NULL: the thread's own */
    int op;
    int64_t wait_ms, lease_ms;
    int then;             /* KEEP, RELEASE, RELEASE_ON_GO */
    int *go;              /* RELEASE_ON_GO: unlock once *go is set */
    int *acquired;        /* if set: bumped once the lock is held */
    /* results */
    int rc, held, unlock_rc;
    int64_t start_v, end_v, start_real, end_real;
    dlock_fx_thread t;
} actor;

static void actor_main(void *arg)
{
    actor *a = arg;
    int64_t give_up;

    a->start_v = dlock_fx_now(a->fx);
    a->start_real = dlock_fx_real_ms();
    if (a->op == OP_LOCK)
        a->rc = a->as ? dlock_lock_as(a->l, a->as, a->lease_ms)
                      : dlock_lock(a->l, a->lease_ms);
    else
        a->rc = a->as ? dlock_try_lock_as(a->l, a->as, a->wait_ms, a->lease_ms)
                      : dlock_try_lock(a->l, a->wait_ms, a->lease_ms);
    a->end_real = dlock_fx_real_ms();
    a->end_v = dlock_fx_now(a->fx);
    if (a->rc != 0)
        return;
    if ((a->as ? dlock_is_held_as(a->l, a->as, &a->held) : dlock_is_held(a->l, &a->held)) != 0)
        a->held = -1;
    if (a->acquired)
        __atomic_add_fetch(a->acquired, 1, __ATOMIC_SEQ_CST);
    if (a->then == KEEP)
        return;
    give_up = dlock_fx_real_ms() + 60000;
    while (a->then == RELEASE_ON_GO && !__atomic_load_n(a->go, __ATOMIC_SEQ_CST) &&
           dlock_fx_real_ms() < give_up)
        dlock_fx_sleep_real(1);
    a->unlock_rc = a->as ? dlock_unlock_as(a->l, a->as) : dlock_unlock(a->l);
}

static void actor_init(actor *a, dlock_fx *fx, dlock_rlock *l, int op,
                       int64_t wait_ms, int64_t lease_ms, int then)
{
    memset(a, 0, sizeof(*a));
    a->fx = fx;
    a->l = l;
    a->op = op;
    a->wait_ms = wait_ms;
    a->lease_ms = lease_ms;
    a->then = then;
    a->rc = a->unlock_rc = 1;
    a->held = -1;
}

/* Starts a and waits until it is blocked (mock: asleep on the clock;
 * redis: after redis_ms). Returns 0, or -1 if it did not block. */
static int start_blocked(dlock_fx *fx, actor *a, int64_t redis_ms)
{
    int base = dlock_fx_settle(fx);

    dlock_fx_start(&a->t, actor_main, a);
    if (dlock_fx_wait_blocked(fx, base, redis_ms) != 0)
        return -1;
    return dlock_fx_done(&a->t) ? -1 : 0;
}

/* ---- readers and writers -------------------------------------------------------- */

static void readers_share(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *r2 = RD(fx, fx->c2);
    dlock_rlock *w1 = WR(fx, fx->c1), *w2 = WR(fx, fx->c2);
    actor third;
    char buf[64];

    assert_int_equal(dlock_fx_is_locked(r1), 0);
    assert_int_equal(dlock_fx_remain_ttl(r1), -2);
    assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
    /* another process reads at the same time: no waiting */
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), 0);
    /* and another thread of the first process */
    actor_init(&third, fx, r1, OP_TRY, 0, fx->long_lease_ms, RELEASE);
    dlock_fx_start(&third.t, actor_main, &third);
    assert_int_equal(dlock_fx_join(fx, &third.t, 10000, r1), 0);
    assert_int_equal(third.rc, 0);
    assert_int_equal(third.held, 1);
    assert_int_equal(third.unlock_rc, 0);

    assert_int_equal(dlock_fx_is_locked(r2), 1);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count_as(r1, fx->owner2), 1);
    assert_int_equal(dlock_fx_hold_count_as(w1, fx->owner1), 0);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hlen", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "3"); /* mode + two readers */
    assert_string_equal(field(fx, fx->name, "mode"), "read");

    /* a writer is excluded while any reader holds */
    assert_int_equal(dlock_try_lock_as(w1, OTHER_WRITER, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_fx_is_locked(r1), 1);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(r2), 0);
    assert_int_equal(dlock_fx_is_locked(r1), 0);
    assert_int_equal(dlock_fx_remain_ttl(r2), -2);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "exists", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "0");
    /* the last reader gone: the writer is in, readers are out */
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(r1, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock_as(w1, OTHER_WRITER), 0);
    assert_int_equal(dlock_fx_is_locked(w1), 0);
}

/* A blocked writer is woken by the last reader's unlock (a message: on the
 * mock the clock does not move), not by the first. */
static void writer_waits_for_last_reader(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    const int64_t hold = fx->is_mock ? fx->long_lease_ms : 10000;
    int blocked, after_first, joined;
    int64_t v0, t0;
    actor w;

    assert_int_equal(dlock_lock(r1, hold), 0);
    assert_int_equal(dlock_lock(r2, hold), 0);
    actor_init(&w, fx, w2, OP_LOCK, 0, fx->long_lease_ms, RELEASE);
    blocked = start_blocked(fx, &w, 300);
    assert_int_equal(dlock_unlock(r1), 0);
    dlock_fx_settle(fx);
    if (!fx->is_mock)
        dlock_fx_sleep_real(200);
    after_first = dlock_fx_done(&w.t);
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(r2), 0);
    joined = dlock_fx_join(fx, &w.t, fx->is_mock ? 5000 : hold / 2, r1);

    assert_int_equal(blocked, 0);
    assert_int_equal(after_first, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.held, 1);
    assert_int_equal(w.unlock_rc, 0);
    if (fx->is_mock) {
        assert_int_equal(w.end_v, v0);
    } else {
        printf("  [redis] writer in %" PRId64 " ms after the last read unlock\n",
               w.end_real - t0);
        assert_true(w.end_real - t0 < hold / 2);
    }
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_int_equal(dlock_fx_is_locked(r2), 0);
}

static void writer_blocks_readers_and_writers(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *w1 = WR(fx, fx->c1), *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    const int64_t hold = fx->is_mock ? fx->long_lease_ms : 10000;
    const int64_t wait = fx->is_mock ? 5000 : 150;
    int blocked_r, blocked_w, joined;
    int64_t v0, t0, ttl;
    actor rd, wr;

    assert_int_equal(dlock_lock(w1, hold), 0);
    assert_string_equal(field(fx, fx->name, "mode"), "write");
    assert_string_equal(field(fx, fx->name, writer_field(fx->owner1)), "1");
    assert_int_equal(dlock_fx_is_locked(w2), 1);
    assert_int_equal(dlock_fx_is_locked(r2), 0);
    ttl = dlock_fx_remain_ttl(w2);
    assert_true(ttl > 0 && ttl <= hold);
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock(w2, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock_as(w1, OTHER_WRITER, 0, 0), DLOCK_EBUSY);

    /* a timed reader waits out its budget */
    actor_init(&rd, fx, r2, OP_TRY, wait, fx->long_lease_ms, RELEASE);
    if (fx->is_mock) {
        assert_int_equal(start_blocked(fx, &rd, 0), 0);
        dlock_fx_advance(fx, wait);
    } else {
        dlock_fx_start(&rd.t, actor_main, &rd);
    }
    assert_int_equal(dlock_fx_join(fx, &rd.t, fx->is_mock ? 5000 : wait + 5000, w1), 0);
    assert_int_equal(rd.rc, DLOCK_ETIMEDOUT);
    if (fx->is_mock)
        assert_int_equal(rd.end_v - rd.start_v, wait);

    /* a blocked reader and a blocked writer both get their turn after the
     * write unlock, woken by messages */
    actor_init(&rd, fx, r2, OP_LOCK, 0, fx->long_lease_ms, RELEASE);
    actor_init(&wr, fx, w2, OP_LOCK, 0, fx->long_lease_ms, RELEASE);
    blocked_r = start_blocked(fx, &rd, 300);
    blocked_w = start_blocked(fx, &wr, 300);
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(w1), 0);
    joined = dlock_fx_join(fx, &rd.t, fx->is_mock ? 5000 : hold / 2, w1);
    joined |= dlock_fx_join(fx, &wr.t, fx->is_mock ? 5000 : hold / 2, w1);

    assert_int_equal(blocked_r, 0);
    assert_int_equal(blocked_w, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(rd.rc, 0);
    assert_int_equal(rd.held, 1);
    assert_int_equal(rd.unlock_rc, 0);
    assert_int_equal(wr.rc, 0);
    assert_int_equal(wr.held, 1);
    assert_int_equal(wr.unlock_rc, 0);
    if (fx->is_mock) {
        assert_int_equal(rd.end_v, v0);
        assert_int_equal(wr.end_v, v0);
    } else {
        int64_t last = rd.end_real > wr.end_real ? rd.end_real : wr.end_real;
        printf("  [redis] reader and writer through %" PRId64 " ms after the write unlock\n",
               last - t0);
        assert_true(last - t0 < hold / 2);
    }
    assert_int_equal(dlock_fx_is_locked(r2), 0);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
}

/* ---- downgrade and upgrade ------------------------------------------------------- */

static void downgrade(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    const int64_t hold = fx->is_mock ? fx->long_lease_ms : 10000;
    int blocked, joined;
    int64_t v0, t0;
    actor rd;

    assert_int_equal(dlock_lock(w1, hold), 0);
    /* the writer takes the read lock too */
    assert_int_equal(dlock_try_lock(r1, 0, hold), 0);
    assert_int_equal(dlock_fx_hold_count(r1), 1);
    assert_int_equal(dlock_fx_hold_count(w1), 1);
    assert_string_equal(field(fx, fx->name, "mode"), "write");
    assert_int_equal(dlock_fx_is_locked(r2), 1);
    assert_int_equal(dlock_fx_is_locked(w2), 1);
    /* still exclusive for everyone else */
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), DLOCK_EBUSY);

    /* a reader blocked now is woken by the write unlock */
    actor_init(&rd, fx, r2, OP_LOCK, 0, fx->long_lease_ms, KEEP);
    blocked = start_blocked(fx, &rd, 300);
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(w1), 0);
    joined = dlock_fx_join(fx, &rd.t, fx->is_mock ? 5000 : hold / 2, w1);
    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(rd.rc, 0);
    assert_int_equal(rd.held, 1);
    if (fx->is_mock)
        assert_int_equal(rd.end_v, v0);
    else
        assert_true(rd.end_real - t0 < hold / 2);

    /* the former writer still reads, alongside the new reader */
    assert_int_equal(dlock_fx_hold_count(r1), 1);
    assert_int_equal(dlock_fx_hold_count(w1), 0);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_int_equal(dlock_fx_remain_ttl(w2), -2);
    assert_string_equal(field(fx, fx->name, "mode"), "read");
    assert_string_equal(field(fx, fx->name, writer_field(fx->owner1)), "");
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_hold_count(r2), 1);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(w1), DLOCK_ENOTOWNER);

    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_unlock(r2), 0);
    /* the reader thread's hold remains (another owner) */
    assert_int_equal(dlock_fx_is_locked(r1), 1);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_force_unlock(r2, NULL), 0);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock_as(w2, OTHER_WRITER), 0);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_int_equal(dlock_fx_is_locked(r2), 0);
}

static void upgrade_refused_at_once(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    const int64_t wait = fx->is_mock ? fx->long_lease_ms : 5000;
    int64_t v0, t0;
    actor up;
    int joined;

    assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_try_lock(w1, 0, fx->long_lease_ms), DLOCK_EDEADLK);
    assert_true(strlen(dlock_errmsg(w1)) > 0);
    assert_int_equal(dlock_try_lock(w1, wait, 0), DLOCK_EDEADLK);
    /* through the other process's handle, with the owner id: the same */
    assert_int_equal(dlock_try_lock_as(w2, fx->owner1, wait, fx->long_lease_ms), DLOCK_EDEADLK);
    /* lock() too, on a helper thread (so a hang fails the case; the rescue
     * takes the read lock away) */
    actor_init(&up, fx, w1, OP_LOCK, 0, 0, RELEASE);
    up.as = fx->owner1;
    dlock_fx_start(&up.t, actor_main, &up);
    joined = dlock_fx_join(fx, &up.t, 10000, r1);
    assert_int_equal(joined, 0);
    assert_int_equal(up.rc, DLOCK_EDEADLK);
    if (fx->is_mock)
        assert_int_equal(dlock_fx_now(fx), v0);
    else
        assert_true(dlock_fx_real_ms() - t0 < wait);

    /* nothing changed */
    assert_int_equal(dlock_fx_hold_count(r1), 1);
    assert_int_equal(dlock_fx_hold_count(w1), 0);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_string_equal(field(fx, fx->name, writer_field(fx->owner1)), "");
    assert_string_equal(field(fx, fx->name, "mode"), "read");

    /* with another reader as well: still the deadlock, not "busy" */
    assert_int_equal(dlock_lock(r2, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(w1, 0, 0), DLOCK_EDEADLK);
    assert_int_equal(dlock_try_lock(w2, 0, 0), DLOCK_EDEADLK);
    assert_int_equal(dlock_unlock(r1), 0);
    /* once it no longer reads, it simply waits like any writer */
    assert_int_equal(dlock_try_lock(w1, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(r2), 0);
    assert_int_equal(dlock_try_lock(w1, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(w1), 0);

    /* the failed lease-0 attempts left nothing for the watchdog */
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    assert_int_equal(dlock_fx_is_locked(w1), 0);
    assert_int_equal(dlock_fx_is_locked(r1), 0);
}

/* ---- leases ------------------------------------------------------------------------ */

/* Readers with leases 10 s and 3 s: the writer, arriving 2 s after the first
 * reader, gets in when the longer lease ends (8 s after it started waiting),
 * not when the shorter one does. On Redis: a tenth of those times. */
static void writer_waits_for_longest_reader_lease(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    const int64_t unit = fx->is_mock ? 1000 : 100;
    int64_t t_r1, ttl, took;
    int blocked, early_short = 1, early_long = 1, joined, rc;
    actor w;

    t_r1 = dlock_fx_real_ms();
    assert_int_equal(dlock_lock(r1, 10 * unit), 0);
    dlock_fx_advance(fx, 2 * unit);
    assert_int_equal(dlock_lock(r2, 3 * unit), 0);
    ttl = dlock_fx_remain_ttl(r1);
    assert_true(ttl > 3 * unit && ttl <= 8 * unit);
    assert_true(marker_pttl(fx, fx->owner2, 1) > 0);

    actor_init(&w, fx, w2, OP_TRY, 20 * unit, fx->long_lease_ms, RELEASE);
    blocked = start_blocked(fx, &w, 0);
    /* the short reader's lease ends at 5 s: the writer must still wait */
    dlock_fx_advance(fx, 3 * unit + (fx->is_mock ? 1 : 50));
    if (fx->is_mock)
        dlock_fx_settle(fx);
    early_short = dlock_fx_done(&w.t);
    assert_int_equal(marker_pttl(fx, fx->owner2, 1), -2);
    assert_int_equal(dlock_fx_hold_count_as(r1, fx->owner2), 0);
    assert_int_equal(dlock_fx_hold_count_as(r1, fx->owner1), 1);
    assert_int_equal(dlock_fx_is_locked(r2), 1);
    if (fx->is_mock) {
        /* one ms before the long lease ends */
        dlock_fx_advance(fx, 5 * unit - 2);
        dlock_fx_settle(fx);
        early_long = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 2);
    } else {
        early_long = 0;
    }
    joined = dlock_fx_join(fx, &w.t, fx->is_mock ? 5000 : 20 * unit + 2000, r1);

    assert_int_equal(blocked, 0);
    assert_int_equal(early_short, 0);
    assert_int_equal(early_long, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.held, 1);
    assert_int_equal(w.unlock_rc, 0);
    if (fx->is_mock) {
        took = w.end_v - w.start_v;
        printf("  [mock] writer in after %" PRId64 " ms (virtual)\n", took);
        assert_true(took >= 8 * unit && took <= 8 * unit + 1);
    } else {
        took = w.end_real - w.start_real;
        printf("  [redis] writer in after %" PRId64 " ms, %" PRId64
               " ms after the first reader's 1000 ms lease began\n",
               took, w.end_real - t_r1);
        /* not before the longer lease ended (ms clocks may round by a few ms) */
        assert_true(w.end_real - t_r1 >= 10 * unit - 5);
        assert_true(w.end_real - t_r1 < 10 * unit + 1500);
    }
    /* both readers are told their lease ran out */
    rc = dlock_unlock(r1);
    assert_int_equal(rc, DLOCK_ELOST);
    assert_int_equal(dlock_unlock(r2), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(r2), DLOCK_ENOTOWNER);
}

/* A read hold whose lease ran out while another reader keeps the lock: its
 * owner's unlock says so, and changes nothing for the live reader. */
static void read_lease_expiry_is_lost(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    int64_t ttl;

    assert_int_equal(dlock_lock(r1, fx->lease_ms), 0);
    assert_int_equal(dlock_lock(r1, fx->lease_ms), 0);
    assert_int_equal(dlock_lock(r2, fx->long_lease_ms), 0);
    ttl = dlock_fx_remain_ttl(r1);
    assert_true(ttl > fx->lease_ms);
    dlock_fx_advance(fx, fx->lease_ms + (fx->is_mock ? 1 : 100));
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 0);
    assert_int_equal(dlock_fx_is_held_as(r2, fx->owner1), 0);
    assert_int_equal(dlock_fx_is_locked(r2), 1);

    assert_int_equal(dlock_unlock(r1), DLOCK_ELOST);
    /* every hold of that owner is gone, here and in the store */
    assert_int_equal(dlock_unlock(r1), DLOCK_ENOTOWNER);
    assert_string_equal(field(fx, fx->name, fx->owner1), "");
    assert_int_equal(dlock_fx_hold_count(r2), 1);
    ttl = dlock_fx_remain_ttl(r2);
    assert_true(ttl > fx->long_lease_ms / 2);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(r2), 0);
    assert_int_equal(dlock_fx_is_locked(r2), 0);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock_as(w2, OTHER_WRITER), 0);
}

/* A lease means what it says: write re-entry and a partial write unlock set
 * the TTL to the lease again (Redisson adds it to what is left). */
static void write_lease_means_what_it_says(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *w1 = WR(fx, fx->c1);
    const int64_t lease = fx->is_mock ? fx->lease_ms : 400;
    const int64_t slack = fx->is_mock ? 0 : 100;
    int64_t ttl;

    assert_int_equal(dlock_lock(w1, lease), 0);
    dlock_fx_advance(fx, lease / 2);
    assert_int_equal(dlock_lock(w1, lease), 0);
    ttl = dlock_fx_remain_ttl(w1);
    assert_true(ttl <= lease && ttl >= lease - slack);
    dlock_fx_advance(fx, lease / 2);
    assert_int_equal(dlock_unlock(w1), 0);
    assert_int_equal(dlock_fx_hold_count(w1), 1);
    ttl = dlock_fx_remain_ttl(w1);
    assert_true(ttl <= lease && ttl >= lease - slack);
    /* it ends when the lease says */
    dlock_fx_advance(fx, lease + (fx->is_mock ? 1 : 100));
    assert_int_equal(dlock_fx_is_locked(w1), 0);
    assert_int_equal(dlock_unlock(w1), DLOCK_ELOST);
}

/* Another client on the same store or server: a process that can die. */
static dlock_client *extra_client(dlock_fx *fx)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    char err[256] = "";
    int rc;

    if (fx->is_mock)
        rc = dlock_mock_backend_new(&b, fx->store);
    else
        rc = dlock_redis_backend_new(&b, dlock_fx_redis_url(), NULL, err, sizeof(err));
    assert_int_equal(rc, 0);
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    rc = dlock_client_new(&c, b, &opts);
    if (rc != 0)
        dlock_backend_free(b);
    assert_int_equal(rc, 0);
    dlock_fx_settle(fx);
    return c;
}

/* A reader (lease 0) whose process dies: nobody renews it, and the writer
 * gets in one watchdog timeout later. */
static void dead_reader_collected(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *w2 = WR(fx, fx->c2), *dead = NULL;
    dlock_client *cd = extra_client(fx);
    int64_t t_dead;
    int blocked, early = 0, joined;
    actor w;

    assert_int_equal(dlock_rwlock_read_new(&dead, cd, fx->name), 0);
    t_dead = dlock_fx_real_ms();
    assert_int_equal(dlock_lock(dead, 0), 0);
    /* the process dies: its handle and client go, the remote hold stays */
    dlock_rlock_free(dead);
    dlock_client_free(cd);
    dlock_fx_settle(fx);
    assert_int_equal(dlock_fx_is_locked(w2), 0);

    actor_init(&w, fx, w2, OP_TRY, 10 * fx->watchdog_ms, fx->long_lease_ms, RELEASE);
    blocked = start_blocked(fx, &w, 0);
    if (fx->is_mock) {
        dlock_fx_advance(fx, fx->watchdog_ms - 1);
        dlock_fx_settle(fx);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 2);
    }
    joined = dlock_fx_join(fx, &w.t, fx->is_mock ? 5000 : 10 * fx->watchdog_ms + 2000,
                           NULL);
    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.unlock_rc, 0);
    if (fx->is_mock) {
        assert_true(w.end_v - w.start_v >= fx->watchdog_ms - 1);
        assert_true(w.end_v - w.start_v <= fx->watchdog_ms + 1);
    } else {
        printf("  [redis] writer in %" PRId64 " ms after the dead reader's %" PRId64
               " ms lease began\n", w.end_real - t_dead, fx->watchdog_ms);
        assert_true(w.end_real - t_dead >= fx->watchdog_ms - 5);
        assert_true(w.end_real - t_dead < fx->watchdog_ms + 2000);
    }
}

/* A dead reader next to a live one: the live reader's watchdog renews only
 * its own hold, so once the live reader leaves, the writer is in at once. */
static void dead_reader_not_renewed_by_live_one(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w2 = WR(fx, fx->c2), *dead = NULL;
    dlock_client *cd = extra_client(fx);
    char dead_owner[DLOCK_OWNER_MAX];
    int64_t ttl;

    assert_int_equal(dlock_client_owner(cd, dead_owner, sizeof(dead_owner)), 0);
    assert_int_equal(dlock_rwlock_read_new(&dead, cd, fx->name), 0);
    assert_int_equal(dlock_lock(dead, 0), 0);
    assert_int_equal(dlock_lock(r1, 0), 0);
    dlock_rlock_free(dead);
    dlock_client_free(cd);
    dlock_fx_settle(fx);

    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    /* the live hold was renewed, the dead one was not */
    assert_int_equal(marker_pttl(fx, dead_owner, 1), -2);
    ttl = marker_pttl(fx, fx->owner1, 1);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    assert_int_equal(dlock_fx_hold_count_as(w2, fx->owner1), 0);
    assert_int_equal(dlock_fx_hold_count_as(r1, fx->owner1), 1);
    assert_int_equal(dlock_fx_is_held_as(r1, dead_owner), 0);
    assert_int_equal(dlock_try_lock(w2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_fx_is_locked(r1), 0);
    assert_int_equal(dlock_try_lock(w2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(w2), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* ---- wake-ups ---------------------------------------------------------------------- */

#define NREADERS 20

/* 20 readers blocked behind a writer (ten per process) all get in on the
 * one message of the write unlock, and hold the lock together. */
static void blocked_readers_all_wake(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *w1 = WR(fx, fx->c1), *r1 = RD(fx, fx->c1), *r2 = RD(fx, fx->c2);
    const int64_t hold = fx->is_mock ? fx->long_lease_ms : 10000;
    actor a[NREADERS];
    int i, base, blocked, go = 0, acquired = 0, joined = 0;
    uint64_t pubs = 0, pubs_after = 0;
    int64_t v0, t0, give_up, last = 0;
    char hlen[32];

    assert_int_equal(dlock_lock(w1, hold), 0);
    base = dlock_fx_settle(fx);
    for (i = 0; i < NREADERS; i++) {
        actor_init(&a[i], fx, i % 2 ? r2 : r1, OP_LOCK, 0, fx->long_lease_ms,
                   RELEASE_ON_GO);
        a[i].go = &go;
        a[i].acquired = &acquired;
        dlock_fx_start(&a[i].t, actor_main, &a[i]);
    }
    if (fx->is_mock)
        blocked = dlock_vclock_wait_sleepers(fx->vclock, base + NREADERS, 10000) == 0 &&
                  dlock_fx_settle(fx) >= base + NREADERS ? 0 : -1;
    else
        blocked = dlock_fx_wait_blocked(fx, base, 500);
    if (fx->is_mock)
        pubs = dlock_mock_store_publish_count(fx->store);
    v0 = dlock_fx_now(fx);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(w1), 0);
    give_up = dlock_fx_real_ms() + (fx->is_mock ? 10000 : hold / 2);
    while (__atomic_load_n(&acquired, __ATOMIC_SEQ_CST) < NREADERS &&
           dlock_fx_real_ms() < give_up)
        dlock_fx_sleep_real(1);
    /* all of them at once, in the store */
    dlock_fx_call_str(fx->c2, hlen, sizeof(hlen), "hlen", fx->name, 0, NULL, NULL);
    if (fx->is_mock)
        pubs_after = dlock_mock_store_publish_count(fx->store);
    __atomic_store_n(&go, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < NREADERS; i++)
        joined |= dlock_fx_join(fx, &a[i].t, 10000, w1);

    assert_int_equal(blocked, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(acquired, NREADERS);
    assert_string_equal(hlen, "21"); /* mode + 20 readers */
    for (i = 0; i < NREADERS; i++) {
        assert_int_equal(a[i].rc, 0);
        assert_int_equal(a[i].held, 1);
        assert_int_equal(a[i].unlock_rc, 0);
        if (a[i].end_real - t0 > last)
            last = a[i].end_real - t0;
        if (fx->is_mock)
            assert_int_equal(a[i].end_v, v0);
    }
    if (fx->is_mock) {
        /* one message woke them all (not a chain of one per reader) */
        assert_int_equal(pubs_after, pubs + 1);
    } else {
        printf("  [redis] %d blocked readers all in %" PRId64 " ms after the write unlock\n",
               NREADERS, last);
        assert_true(last < 2000);
    }
    assert_int_equal(dlock_fx_is_locked(r1), 0);
}

/* ---- the halves' own counts and force_unlocks ------------------------------------- */

static void hold_counts_both_halves(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    int k;

    assert_int_equal(dlock_lock(w1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(w1, fx->long_lease_ms), 0);
    for (k = 0; k < 3; k++)
        assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_fx_hold_count(w1), 2);
    assert_int_equal(dlock_fx_hold_count(r1), 3);
    assert_int_equal(dlock_fx_hold_count_as(w2, fx->owner1), 2);
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 3);
    assert_int_equal(dlock_fx_hold_count(r2), 0);
    assert_int_equal(dlock_fx_hold_count(w2), 0);
    /* Redisson's fields and one marker per read hold */
    assert_string_equal(field(fx, fx->name, writer_field(fx->owner1)), "2");
    assert_string_equal(field(fx, fx->name, fx->owner1), "3");
    for (k = 1; k <= 3; k++)
        assert_true(marker_pttl(fx, fx->owner1, k) > 0);
    assert_int_equal(marker_pttl(fx, fx->owner1, 4), -2);

    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_fx_hold_count(r1), 2);
    assert_int_equal(dlock_fx_hold_count(w1), 2);
    assert_int_equal(marker_pttl(fx, fx->owner1, 3), -2);
    assert_int_equal(dlock_unlock(w1), 0);
    assert_int_equal(dlock_fx_hold_count(w1), 1);
    assert_int_equal(dlock_fx_hold_count(r1), 2);
    assert_int_equal(dlock_unlock(w1), 0);
    assert_int_equal(dlock_fx_hold_count(w1), 0);
    assert_int_equal(dlock_fx_hold_count(r1), 2);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_int_equal(dlock_fx_is_locked(r2), 1);
    assert_int_equal(dlock_unlock(w1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_fx_hold_count(r1), 0);
    assert_int_equal(dlock_unlock(r1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_is_locked(r2), 0);
    assert_int_equal(marker_pttl(fx, fx->owner1, 1), -2);
    assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
}

static void force_unlock_one_half_keeps_other(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    int existed;

    /* the write half of a writer that also reads: the read hold stays */
    assert_int_equal(dlock_lock(w1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
    existed = -1;
    assert_int_equal(dlock_force_unlock(w2, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fx_is_locked(w2), 0);
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 1);
    assert_string_equal(field(fx, fx->name, "mode"), "read");
    assert_true(marker_pttl(fx, fx->owner1, 1) > 0);
    assert_int_equal(dlock_try_lock(r2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(w1), DLOCK_ELOST);
    existed = -1;
    assert_int_equal(dlock_force_unlock(w2, &existed), 0);
    assert_int_equal(existed, 0);
    assert_int_equal(dlock_fx_hold_count(r1), 1);
    assert_int_equal(dlock_fx_hold_count(r2), 1);
    assert_true(marker_pttl(fx, fx->owner2, 1) > 0);

    /* the read half with readers only: all of them go, markers too */
    assert_int_equal(dlock_force_unlock(r1, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fx_is_locked(r1), 0);
    assert_int_equal(marker_pttl(fx, fx->owner1, 1), -2);
    assert_int_equal(marker_pttl(fx, fx->owner2, 1), -2);
    assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
    assert_int_equal(dlock_unlock(r1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(r2), DLOCK_ELOST);
    existed = -1;
    assert_int_equal(dlock_force_unlock(r1, &existed), 0);
    assert_int_equal(existed, 0);

    /* the read half of a writer that also reads: the write hold stays */
    assert_int_equal(dlock_lock(w1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_force_unlock(r2, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fx_hold_count(w1), 1);
    assert_int_equal(dlock_fx_hold_count(r1), 0);
    assert_int_equal(dlock_fx_is_locked(w2), 1);
    assert_int_equal(dlock_fx_is_locked(r2), 0);
    assert_string_equal(field(fx, fx->name, "mode"), "write");
    assert_int_equal(marker_pttl(fx, fx->owner1, 1), -2);
    assert_int_equal(marker_pttl(fx, fx->owner1, 2), -2);
    assert_true(dlock_fx_remain_ttl(w2) > 0);
    assert_int_equal(dlock_try_lock(r2, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(r1), DLOCK_ELOST);
    assert_int_equal(dlock_force_unlock(r2, &existed), 0);
    assert_int_equal(existed, 0);
    assert_int_equal(dlock_unlock(w1), 0);
    assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
}

/* ---- the watchdog ------------------------------------------------------------------ */

static void watchdog_renews_both_halves(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    char name[DLOCK_NAME_MAX + 1], owner[DLOCK_OWNER_MAX];
    int64_t ttl;
    int client = 0;

    /* two readers, each on its own client's watchdog */
    assert_int_equal(dlock_lock(r1, 0), 0);
    assert_int_equal(dlock_lock(r2, 0), 0);
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count_as(r1, fx->owner2), 1);
    ttl = marker_pttl(fx, fx->owner1, 1);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    ttl = dlock_fx_remain_ttl(r1);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(r1), 0);
    assert_int_equal(dlock_unlock(r2), 0);

    /* a writer that downgrades, both holds on the watchdog */
    assert_int_equal(dlock_lock(w1, 0), 0);
    assert_int_equal(dlock_lock(r1, 0), 0);
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_hold_count_as(w2, fx->owner1), 1);
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 1);
    ttl = dlock_fx_remain_ttl(w2);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    assert_int_equal(dlock_unlock(w1), 0);
    /* the read hold alone, still renewed */
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_hold_count_as(r2, fx->owner1), 1);
    assert_int_equal(dlock_fx_lost_count(fx), 0);

    /* the read hold taken away: the watchdog reports exactly that hold */
    assert_int_equal(dlock_force_unlock(r2, NULL), 0);
    assert_int_equal(dlock_fx_wait_lost(fx, 1, 2 * fx->watchdog_ms), 1);
    dlock_fx_lost_last(fx, name, sizeof(name), owner, sizeof(owner), &client);
    assert_string_equal(name, fx->name);
    assert_string_equal(owner, fx->owner1);
    assert_int_equal(client, 1);
    assert_int_equal(dlock_unlock(r1), DLOCK_ELOST);
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 1);
    assert_int_equal(dlock_fx_is_locked(w1), 0);
    assert_int_equal(dlock_fx_is_locked(r1), 0);
}

/* ---- layout, channel, odd names ----------------------------------------------------- */

typedef struct msg_log {
    pthread_mutex_t mutex;
    char seen[64];
    int n;
} msg_log;

static void on_message(void *arg, const char *channel, const char *message, size_t len)
{
    msg_log *m = arg;

    (void)channel;
    if (len == 0)
        return; /* a reconnect notice, not a message */
    pthread_mutex_lock(&m->mutex);
    if (strlen(m->seen) + len + 2 < sizeof(m->seen)) {
        strncat(m->seen, message, len);
        strcat(m->seen, ",");
    }
    m->n++;
    pthread_mutex_unlock(&m->mutex);
}

/* What arrived once n messages have (or after a real-time bound). */
static void messages(msg_log *m, int n, char *out, size_t len)
{
    int64_t give_up = dlock_fx_real_ms() + 3000;
    int got;

    for (;;) {
        pthread_mutex_lock(&m->mutex);
        got = m->n;
        snprintf(out, len, "%s", m->seen);
        pthread_mutex_unlock(&m->mutex);
        if (got >= n || dlock_fx_real_ms() > give_up)
            break;
        dlock_fx_sleep_real(1);
    }
}

/* The Redisson layout and channel, for a plain name and for names that
 * carry their own braces (no braces are added then). */
static void layout_and_channel(void **state)
{
    dlock_fx *fx = BEGIN(state);
    /* Every name begins with "dlock" or "{dlock", as the README's ACL
     * user's key patterns want (the redis-acl row runs this case too). */
    const char *const forms[] = {"%s", "{%s}:x", "dlock-a{b}%s c\nd"};
    size_t i;

    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        char name[160], channel[200], key[512], got[64];
        dlock_rlock *r1, *w1, *r2;
        dlock_subscription *sub = NULL;
        msg_log m;

        snprintf(name, sizeof(name), forms[i], fx->name);
        r1 = half(fx, fx->c1, name, 0);
        w1 = half(fx, fx->c1, name, 1);
        r2 = half(fx, fx->c2, name, 0);
        if (strchr(name, '{'))
            snprintf(channel, sizeof(channel), "redisson_rwlock:%s", name);
        else
            snprintf(channel, sizeof(channel), "redisson_rwlock:{%s}", name);
        memset(&m, 0, sizeof(m));
        pthread_mutex_init(&m.mutex, NULL);
        assert_int_equal(dlock_backend_subscribe(dlock_client_backend(fx->c2), &sub,
                                                 channel, on_message, &m), 0);

        assert_int_equal(dlock_lock(r1, fx->long_lease_ms), 0);
        /* shorter than r1's: its unlock neither ends nor shortens the lock */
        assert_int_equal(dlock_lock(r2, fx->long_lease_ms / 2), 0);
        marker_key(key, sizeof(key), name, fx->owner1, 1);
        assert_true(dlock_fx_call_int(fx->c2, "pttl", key, 0, NULL) > 0);
        marker_key(key, sizeof(key), name, fx->owner2, 1);
        assert_true(dlock_fx_call_int(fx->c2, "pttl", key, 0, NULL) > 0);
        assert_string_equal(field(fx, name, "mode"), "read");
        assert_int_equal(dlock_unlock(r2), 0); /* not the last: no message */
        assert_int_equal(dlock_unlock(r1), 0); /* the last reader: "0" */
        assert_int_equal(dlock_fx_call_int(fx->c2, "exists", key, 0, NULL), 0);
        assert_int_equal(dlock_lock(w1, fx->long_lease_ms), 0);
        assert_string_equal(field(fx, name, writer_field(fx->owner1)), "1");
        assert_int_equal(dlock_unlock(w1), 0); /* "1" */
        messages(&m, 2, got, sizeof(got));
        dlock_backend_unsubscribe(dlock_client_backend(fx->c2), sub);
        pthread_mutex_destroy(&m.mutex);
        printf("  [%s] messages on %s: %s\n", fx->backend, i ? "a braced name" : "a plain name",
               got);
        assert_string_equal(got, "0,1,");
        assert_int_equal(dlock_fx_call_int(fx->c2, "exists", name, 0, NULL), 0);
    }
}

/* ---- bad input ---------------------------------------------------------------------- */

static void wrong_type_under_name(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *halves[2];
    char buf[64];
    int i, v, hung;
    int64_t n;

    halves[0] = r1;
    halves[1] = w1;
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1, "precious", NULL);
    assert_string_equal(buf, "OK");
    for (i = 0; i < 2; i++) {
        dlock_rlock *l = halves[i];
        actor a;

        /* lock() must fail, not wait for a "holder" (on a thread, so a
         * hang fails the case) */
        actor_init(&a, fx, l, OP_LOCK, 0, 0, RELEASE);
        dlock_fx_start(&a.t, actor_main, &a);
        hung = dlock_fx_wait_done(&a.t, 10000) != 0;
        if (hung)
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
        dlock_fx_join(fx, &a.t, 10000, NULL);
        assert_int_equal(hung, 0);
        assert_int_equal(a.rc, DLOCK_EPROTO);
        assert_true(strstr(dlock_errmsg(l), "WRONGTYPE") != NULL ||
                    strstr(dlock_errmsg(l), "wrong kind") != NULL);
        assert_int_equal(dlock_try_lock(l, fx->is_mock ? fx->long_lease_ms : 2000,
                                        fx->lease_ms), DLOCK_EPROTO);
        assert_int_equal(dlock_unlock(l), DLOCK_EPROTO);
        assert_int_equal(dlock_force_unlock(l, &v), DLOCK_EPROTO);
        assert_int_equal(dlock_is_locked(l, &v), DLOCK_EPROTO);
        assert_int_equal(dlock_hold_count(l, &n), DLOCK_EPROTO);
        assert_int_equal(dlock_remain_ttl(l, &n), DLOCK_EPROTO);
    }
    /* untouched, no expiry, and nothing else written */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "precious");
    assert_int_equal(dlock_fx_call_int(fx->c2, "pttl", fx->name, 0, NULL), -1);
    assert_int_equal(marker_pttl(fx, fx->owner1, 1), -2);
    if (fx->is_mock)
        assert_int_equal(dlock_mock_store_dbsize(fx->store), 1);
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
}

static void bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = (dlock_rlock *)&l;
    char *name = malloc(DLOCK_NAME_MAX + 2);

    assert_non_null(name);
    assert_int_equal(dlock_rwlock_read_new(NULL, fx->c1, fx->name), DLOCK_EINVAL);
    assert_int_equal(dlock_rwlock_write_new(NULL, fx->c1, fx->name), DLOCK_EINVAL);
    assert_int_equal(dlock_rwlock_read_new(&l, NULL, fx->name), DLOCK_EINVAL);
    assert_null(l);
    l = (dlock_rlock *)&l;
    assert_int_equal(dlock_rwlock_write_new(&l, fx->c1, NULL), DLOCK_EINVAL);
    assert_null(l);
    l = (dlock_rlock *)&l;
    assert_int_equal(dlock_rwlock_read_new(&l, fx->c1, ""), DLOCK_EINVAL);
    assert_null(l);
    memset(name, 'n', DLOCK_NAME_MAX + 1);
    name[DLOCK_NAME_MAX + 1] = '\0';
    l = (dlock_rlock *)&l;
    assert_int_equal(dlock_rwlock_write_new(&l, fx->c1, name), DLOCK_EINVAL);
    assert_null(l);
    free(name);

    /* a half is a full RLock: the generic checks apply */
    l = RD(fx, fx->c1);
    assert_string_equal(dlock_rlock_name(l), fx->name);
    assert_int_equal(dlock_lock(l, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_try_lock(l, -1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_as(l, "", 0), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock(l), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock(WR(fx, fx->c2)), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fx_is_locked(l), 0);
    if (fx->is_mock)
        assert_int_equal(dlock_mock_store_dbsize(fx->store), 0);
}

/* ---- owner ids the layout reserves (issue 32) --------------------------------------- */

/* The hash holds "mode", the readers' ids and the writers' "<owner>:write"
 * side by side: on either half an owner id must not be "mode" nor end in
 * ":write". */
static const char *const reserved_owners[] = {"mode", OTHER_WRITER ":write", ":write",
                                              "mode:write", NULL};
/* Ids next to them, which are fine. */
static const char *const fine_owners[] = {"Mode", "modes", "write", "w:x:writer",
                                          "w:x:write ", "w:x:write:", NULL};

static void free_rlock(void *l) { dlock_rlock_free(l); }
static void free_bucket(void *b) { dlock_bucket_free(b); }

/* Issue 32 A: writer W holds the write lock; a read unlock as "W:write" (the
 * writer's field) answered DLOCK_ENOTOWNER and deleted W's write hold: W's
 * unlock then said DLOCK_ELOST, every other owner was shut out until the
 * TTL ran out, and the state said the lock was free. Refused before
 * anything is sent. */
static void read_unlock_as_writer_field_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1), *w2 = WR(fx, fx->c2);
    const char *keys[] = {fx->name, NULL};
    char wfield[DLOCK_OWNER_MAX + 8], before[512], after[512];

    snprintf(wfield, sizeof(wfield), "%s", writer_field(OTHER_WRITER));
    assert_int_equal(dlock_lock_as(w1, OTHER_WRITER, fx->long_lease_ms), 0);
    dlock_fx_keys_dump(fx->c2, keys, before, sizeof(before));
    assert_int_equal(dlock_unlock_as(r1, wfield), DLOCK_EINVAL);
    printf("  [%s] %s\n", fx->backend, dlock_errmsg(r1));
    assert_non_null(strstr(dlock_errmsg(r1), "reserved"));
    dlock_fx_keys_dump(fx->c2, keys, after, sizeof(after));
    assert_string_equal(after, before);
    /* W still holds it, and shuts the others out */
    assert_int_equal(dlock_fx_hold_count_as(w1, OTHER_WRITER), 1);
    assert_int_equal(dlock_fx_is_locked(w2), 1);
    assert_int_equal(dlock_try_lock_as(w2, "someone-else:1", 0, fx->lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock_as(w1, OTHER_WRITER), 0);
    assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
}

/* Issue 32 B: a read lock as owner "mode" wrote mode=read, failed with
 * DLOCK_EPROTO ("hash value is not an integer") and left {mode: read}
 * without expiry: writers were refused for ever, and neither half's force
 * unlock cleared it. Refused before anything is sent, on both halves. */
static void owner_named_mode_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *halves[2], *w2 = WR(fx, fx->c2);
    int i;

    halves[0] = RD(fx, fx->c1);
    halves[1] = WR(fx, fx->c1);
    for (i = 0; i < 2; i++) {
        assert_int_equal(dlock_try_lock_as(halves[i], "mode", 0, fx->lease_ms),
                         DLOCK_EINVAL);
        assert_non_null(strstr(dlock_errmsg(halves[i]), "\"mode\""));
        assert_int_equal(dlock_lock_as(halves[i], "mode", 0), DLOCK_EINVAL);
        assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
    }
    if (fx->is_mock)
        assert_int_equal(dlock_mock_store_dbsize(fx->store), 0);
    /* a writer gets in at once */
    assert_int_equal(dlock_try_lock_as(w2, OTHER_WRITER, 0, fx->lease_ms), 0);
    assert_int_equal(dlock_unlock_as(w2, OTHER_WRITER), 0);
}

/* Every call that takes an owner id refuses the reserved ones, on both
 * halves, through a MultiLock and as a guarded write's owner, with nothing
 * sent; the ids next to them work. */
static void reserved_owner_ids_refused_by_every_call(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *halves[2], *other = NULL, *multi = NULL, *members[2];
    dlock_guard guard = DLOCK_GUARD_INIT;
    dlock_bucket *bucket = NULL;
    char other_name[160], bucket_name[160], before[512], after[512];
    const char *keys[] = {fx->name, other_name, bucket_name, NULL};
    uint64_t published = 0;
    int64_t n;
    size_t i, k;
    int v;

    halves[0] = RD(fx, fx->c1);
    halves[1] = WR(fx, fx->c1);
    snprintf(other_name, sizeof(other_name), "%s:other", fx->name);
    snprintf(bucket_name, sizeof(bucket_name), "%s:bucket", fx->name);
    /* the writer also reads (a downgrade): mode, W:write and W are set */
    assert_int_equal(dlock_lock_as(halves[1], OTHER_WRITER, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock_as(halves[0], OTHER_WRITER, fx->long_lease_ms), 0);
    dlock_fx_keys_dump(fx->c2, keys, before, sizeof(before));
    if (fx->is_mock)
        published = dlock_mock_store_publish_count(fx->store);

    for (k = 0; reserved_owners[k]; k++) {
        const char *o = reserved_owners[k];

        for (i = 0; i < 2; i++) {
            dlock_rlock *h = halves[i];

            /* (dlock_lock_as in owner_named_mode_refused: here, with the
             * lock held, a write half that took the id would wait) */
            assert_int_equal(dlock_try_lock_as(h, o, 0, fx->lease_ms), DLOCK_EINVAL);
            assert_int_equal(dlock_unlock_as(h, o), DLOCK_EINVAL);
            assert_int_equal(dlock_is_held_as(h, o, &v), DLOCK_EINVAL);
            assert_int_equal(dlock_hold_count_as(h, o, &n), DLOCK_EINVAL);
            assert_int_equal(dlock_extend_as(h, o, fx->lease_ms), DLOCK_EINVAL);
            assert_non_null(strstr(dlock_errmsg(h), "reserved"));
        }
    }
    /* a MultiLock with a half among its members: nothing of it is taken,
     * not even the members before that half */
    assert_int_equal(dlock_reentrant_new(&other, fx->c1, other_name), 0);
    dlock_fx_keep(fx, other, free_rlock);
    members[0] = other;
    members[1] = halves[0];
    assert_int_equal(dlock_multilock_new(&multi, members, 2), 0);
    dlock_fx_keep(fx, multi, free_rlock);
    assert_int_equal(dlock_try_lock_as(multi, "mode", 0, fx->lease_ms), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock_as(multi, OTHER_WRITER ":write"), DLOCK_EINVAL);
    printf("  [%s] %s\n", fx->backend, dlock_errmsg(multi));
    /* a guarded write on the write half's behalf */
    assert_int_equal(dlock_bucket_new(&bucket, fx->c1, bucket_name, dlock_codec_string()), 0);
    dlock_fx_keep(fx, bucket, free_bucket);
    guard.lock = halves[1];
    guard.owner = "mode";
    assert_int_equal(dlock_bucket_set_guarded(bucket, &guard, "v", 0), DLOCK_EINVAL);
    printf("  [%s] %s\n", fx->backend, dlock_bucket_errmsg(bucket));
    dlock_fx_keys_dump(fx->c2, keys, after, sizeof(after));
    assert_string_equal(after, before);
    if (fx->is_mock)
        assert_int_equal(dlock_mock_store_publish_count(fx->store), published);

    /* the ids next to the reserved ones are owners like any */
    assert_int_equal(dlock_unlock_as(halves[0], OTHER_WRITER), 0);
    assert_int_equal(dlock_unlock_as(halves[1], OTHER_WRITER), 0);
    for (k = 0; fine_owners[k]; k++) {
        const char *o = fine_owners[k];

        for (i = 0; i < 2; i++) {
            assert_int_equal(dlock_try_lock_as(halves[i], o, 0, fx->lease_ms), 0);
            assert_int_equal(dlock_fx_hold_count_as(halves[i], o), 1);
            assert_int_equal(dlock_unlock_as(halves[i], o), 0);
        }
    }
    assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
}

/* The scripts refuse the reserved ids themselves, with an error reply and
 * nothing written, for a caller that bypasses the C checks (another
 * library on the same layout, a hand-made EVAL). */
static void scripts_refuse_reserved_owners(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *w1 = WR(fx, fx->c1);
    char chan[200], markers[200], lease[24], before[512], after[512];
    const char *keys[] = {fx->name, NULL};
    const dlock_script *scripts[4];
    size_t i, k;

    scripts[0] = &dlock__script_rwlock_read_acquire;
    scripts[1] = &dlock__script_rwlock_write_acquire;
    scripts[2] = &dlock__script_rwlock_read_release;
    scripts[3] = &dlock__script_rwlock_write_release;
    snprintf(chan, sizeof(chan), "redisson_rwlock:{%s}", fx->name);
    snprintf(markers, sizeof(markers), "{%s}", fx->name);
    snprintf(lease, sizeof(lease), "%" PRId64, fx->long_lease_ms);
    assert_int_equal(dlock_lock_as(w1, OTHER_WRITER, fx->long_lease_ms), 0);
    dlock_fx_keys_dump(fx->c2, keys, before, sizeof(before));
    for (k = 0; reserved_owners[k]; k++) {
        const char *acq[] = {fx->name, chan, markers, lease, reserved_owners[k]};
        const char *rel[] = {fx->name, chan, markers, reserved_owners[k], "0", "publish"};

        for (i = 0; i < 4; i++) {
            dlock_reply *r = NULL;
            char err[256] = "";

            assert_int_equal(dlock_backend_eval(dlock_client_backend(fx->c1), &r, scripts[i],
                                                3, i < 2 ? 2 : 3, i < 2 ? acq : rel,
                                                NULL, err, sizeof(err)), 0);
            assert_non_null(r);
            if (r->type != DLOCK_REPLY_ERROR)
                fprintf(stderr, "  script %s took owner \"%s\": reply type %d\n",
                        scripts[i]->name, reserved_owners[k], (int)r->type);
            assert_int_equal(r->type, DLOCK_REPLY_ERROR);
            assert_non_null(strstr(r->str, "reserved"));
            dlock_reply_free(r);
        }
    }
    dlock_fx_keys_dump(fx->c2, keys, after, sizeof(after));
    assert_string_equal(after, before);
    assert_int_equal(dlock_fx_hold_count_as(w1, OTHER_WRITER), 1);
    assert_int_equal(dlock_unlock_as(w1, OTHER_WRITER), 0);
}

/* A read lock on a hash whose hold count is not an integer (planted by
 * hand) fails with DLOCK_EPROTO and changes nothing: the script checks
 * before its first write (it used to set mode=read first, and leave it
 * without expiry). */
static void read_lock_on_bad_count_changes_nothing(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    const char *keys[] = {fx->name, NULL};
    char before[512], after[512], buf[64];
    int round;

    for (round = 0; round < 2; round++) {
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
        /* round 0: no mode at all; round 1: in read mode */
        if (round == 1)
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, "mode", "read");
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, fx->owner1, "x");
        dlock_fx_keys_dump(fx->c2, keys, before, sizeof(before));
        assert_int_equal(dlock_try_lock(r1, 0, fx->lease_ms), DLOCK_EPROTO);
        printf("  [%s] %s\n", fx->backend, dlock_errmsg(r1));
        assert_int_equal(dlock_unlock(r1), DLOCK_ENOTOWNER);
        assert_int_equal(dlock_unlock(w1), DLOCK_ENOTOWNER);
        dlock_fx_keys_dump(fx->c2, keys, after, sizeof(after));
        assert_string_equal(after, before);
    }
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
}

/* ---- stress -------------------------------------------------------------------------- */

#define ST_THREADS 8
#define ST_ITERS 1000

typedef struct st_shared {
    int writers, readers;      /* inside, right now (local gauges) */
    long violations;           /* a writer not alone, a reader beside a writer */
    long torn;                 /* a reader saw the two values differ */
    const char *key_a, *key_b; /* the value, written in two steps */
} st_shared;

typedef struct st_worker {
    st_shared *sh;
    dlock_client *c;
    dlock_rlock *r, *w;
    int64_t lease_ms;
    unsigned seed;
    long reads, writes, downgrades;
    int errors, first_err;
    char where[48];
    dlock_fx_thread t;
} st_worker;

static int st_fail(st_worker *k, int rc, const char *what, int i)
{
    if (k->errors++ == 0) {
        k->first_err = rc;
        snprintf(k->where, sizeof(k->where), "%s #%d", what, i);
    }
    return rc;
}

/* Both values, in two round trips: a reader must see them equal. */
static int st_check(st_worker *k)
{
    long long a = -1, b = -2;
    int rc = dlock_fx_counter_get(k->c, k->sh->key_a, &a);

    if (rc == 0)
        rc = dlock_fx_counter_get(k->c, k->sh->key_b, &b);
    if (rc == 0 && a != b)
        __atomic_add_fetch(&k->sh->torn, 1, __ATOMIC_SEQ_CST);
    return rc;
}

static void st_read(st_worker *k, int i)
{
    int rc = dlock_lock(k->r, k->lease_ms);

    if (rc != 0) {
        st_fail(k, rc, "read lock", i);
        return;
    }
    __atomic_add_fetch(&k->sh->readers, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&k->sh->writers, __ATOMIC_SEQ_CST) != 0)
        __atomic_add_fetch(&k->sh->violations, 1, __ATOMIC_SEQ_CST);
    rc = st_check(k);
    if (rc != 0)
        st_fail(k, rc, "read", i);
    __atomic_sub_fetch(&k->sh->readers, 1, __ATOMIC_SEQ_CST);
    rc = dlock_unlock(k->r);
    if (rc != 0)
        st_fail(k, rc, "read unlock", i);
    k->reads++;
}

static void st_write(st_worker *k, int i, int downgrade)
{
    long long v = -1;
    int rc = dlock_lock(k->w, k->lease_ms);

    if (rc != 0) {
        st_fail(k, rc, "write lock", i);
        return;
    }
    if (__atomic_add_fetch(&k->sh->writers, 1, __ATOMIC_SEQ_CST) != 1 ||
        __atomic_load_n(&k->sh->readers, __ATOMIC_SEQ_CST) != 0)
        __atomic_add_fetch(&k->sh->violations, 1, __ATOMIC_SEQ_CST);
    /* get, set a, set b: three round trips, only the lock makes them one */
    rc = dlock_fx_counter_get(k->c, k->sh->key_a, &v);
    if (rc == 0)
        rc = dlock_fx_counter_set(k->c, k->sh->key_a, v + 1);
    if (rc == 0)
        rc = dlock_fx_counter_set(k->c, k->sh->key_b, v + 1);
    if (rc != 0)
        st_fail(k, rc, "write", i);
    if (downgrade) {
        rc = dlock_lock(k->r, k->lease_ms);
        if (rc != 0) {
            st_fail(k, rc, "downgrade read lock", i);
            downgrade = 0;
        }
    }
    __atomic_sub_fetch(&k->sh->writers, 1, __ATOMIC_SEQ_CST);
    if (downgrade)
        __atomic_add_fetch(&k->sh->readers, 1, __ATOMIC_SEQ_CST);
    rc = dlock_unlock(k->w);
    if (rc != 0)
        st_fail(k, rc, "write unlock", i);
    k->writes++;
    if (!downgrade)
        return;
    /* now a reader among readers: what it wrote is still whole */
    rc = st_check(k);
    if (rc != 0)
        st_fail(k, rc, "read after downgrade", i);
    __atomic_sub_fetch(&k->sh->readers, 1, __ATOMIC_SEQ_CST);
    rc = dlock_unlock(k->r);
    if (rc != 0)
        st_fail(k, rc, "downgraded read unlock", i);
    k->downgrades++;
}

static void st_main(void *arg)
{
    st_worker *k = arg;
    int i;

    for (i = 0; i < ST_ITERS && k->errors == 0; i++) {
        int dice = (int)(rand_r(&k->seed) % 100);

        if (dice < 20)
            st_write(k, i, 0);
        else if (dice < 25)
            st_write(k, i, 1);
        else
            st_read(k, i);
    }
}

static void stress_readers_and_writers(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r1 = RD(fx, fx->c1), *w1 = WR(fx, fx->c1);
    dlock_rlock *r2 = RD(fx, fx->c2), *w2 = WR(fx, fx->c2);
    st_shared sh;
    st_worker k[ST_THREADS];
    char key_a[160], key_b[160];
    long long a = -1, b = -1;
    long reads = 0, writes = 0, downgrades = 0;
    int i, joined = 0, errors = 0;
    int64_t t0 = dlock_fx_real_ms();

    memset(&sh, 0, sizeof(sh));
    snprintf(key_a, sizeof(key_a), "%s:a", fx->name);
    snprintf(key_b, sizeof(key_b), "%s:b", fx->name);
    sh.key_a = key_a;
    sh.key_b = key_b;
    memset(k, 0, sizeof(k));
    for (i = 0; i < ST_THREADS; i++) {
        k[i].sh = &sh;
        /* two processes, four threads each */
        k[i].c = i % 2 ? fx->c2 : fx->c1;
        k[i].r = i % 2 ? r2 : r1;
        k[i].w = i % 2 ? w2 : w1;
        /* half on the watchdog, half with a lease nothing outlives */
        k[i].lease_ms = (i / 2) % 2 ? fx->long_lease_ms : 0;
        k[i].seed = 0x5eed0000u + (unsigned)i;
    }
    for (i = 0; i < ST_THREADS; i++)
        dlock_fx_start(&k[i].t, st_main, &k[i]);
    for (i = 0; i < ST_THREADS; i++)
        joined |= dlock_fx_join(fx, &k[i].t, 120000, k[i].w);
    for (i = 0; i < ST_THREADS; i++) {
        if (k[i].errors)
            printf("  [%s] thread %d: %d errors, first %s at %s\n", fx->backend, i,
                   k[i].errors, dlock_errname(k[i].first_err), k[i].where);
        errors += k[i].errors;
        reads += k[i].reads;
        writes += k[i].writes;
        downgrades += k[i].downgrades;
    }
    assert_int_equal(dlock_fx_counter_get(fx->c1, key_a, &a), 0);
    assert_int_equal(dlock_fx_counter_get(fx->c1, key_b, &b), 0);
    printf("  [%s] stress: %d threads x %d: %ld operations (%ld reads, %ld writes, "
           "%ld of them downgraded) in %" PRId64 " ms; violations %ld, torn reads %ld, "
           "counter %lld\n",
           fx->backend, ST_THREADS, ST_ITERS, reads + writes, reads, writes, downgrades,
           dlock_fx_real_ms() - t0, sh.violations, sh.torn, a);

    assert_int_equal(joined, 0);
    assert_int_equal(errors, 0);
    assert_int_equal(reads + writes, ST_THREADS * ST_ITERS);
    assert_true(writes > 0 && reads > 0 && downgrades > 0);
    assert_int_equal(sh.violations, 0);
    assert_int_equal(sh.torn, 0);
    /* no write was lost: the writers were alone */
    assert_int_equal(a, writes);
    assert_int_equal(b, writes);
    assert_int_equal(dlock_fx_is_locked(r1), 0);
    assert_int_equal(dlock_fx_is_locked(w1), 0);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* ---- the suite ----------------------------------------------------------------------- */

#define CASE(f) DLOCK_FX_CASE(f)

/* Either half: an attempt that ran but whose reply was lost, retried, is
 * one hold, and its one unlock lets a writer in (lost_reply.h). */
static void read_retry_after_lost_reply_counts_once(void **state)
{
    dlock_fx_lost_reply_check(BEGIN(state), dlock_rwlock_read_new, dlock_rwlock_write_new, 1);
}

static void write_retry_after_lost_reply_counts_once(void **state)
{
    dlock_fx_lost_reply_check(BEGIN(state), dlock_rwlock_write_new, dlock_rwlock_write_new, 1);
}

static const struct CMUnitTest rwlock_cases[] = {
    CASE(read_retry_after_lost_reply_counts_once),
    CASE(write_retry_after_lost_reply_counts_once),
    CASE(readers_share),
    CASE(writer_waits_for_last_reader),
    CASE(writer_blocks_readers_and_writers),
    CASE(downgrade),
    CASE(upgrade_refused_at_once),
    CASE(writer_waits_for_longest_reader_lease),
    CASE(read_lease_expiry_is_lost),
    CASE(write_lease_means_what_it_says),
    CASE(dead_reader_collected),
    CASE(dead_reader_not_renewed_by_live_one),
    CASE(blocked_readers_all_wake),
    CASE(hold_counts_both_halves),
    CASE(force_unlock_one_half_keeps_other),
    CASE(watchdog_renews_both_halves),
    CASE(layout_and_channel),
    CASE(wrong_type_under_name),
    CASE(bad_input),
    CASE(read_unlock_as_writer_field_refused),
    CASE(owner_named_mode_refused),
    CASE(reserved_owner_ids_refused_by_every_call),
    CASE(scripts_refuse_reserved_owners),
    CASE(read_lock_on_bad_count_changes_nothing),
    CASE(stress_readers_and_writers),
};

/* Runs every read-write lock case on backend ("mock" or "redis"; for redis,
 * main has set the server URL). Returns the number of failures. */
int dlock_test_rwlock(const char *backend)
{
    int before = dlock_test_failed;
    char group[64];

    /* Any backend but the mock is a Redis server ("redis", "redis-tls"). */
    snprintf(group, sizeof(group), "conformance/rwlock on %s", backend);
    dlock_fx_run_cases(group, rwlock_cases, sizeof(rwlock_cases) / sizeof(rwlock_cases[0]),
                       dlock_fx_group_for(backend));
    return dlock_test_failed - before;
}
