/*
 * Redisson parity (issue 19): a read unlock that shortens the read-write
 * lock's life wakes waiting writers; re-entry never shortens a hold; object
 * lifetime on every object; permanent permits.
 *
 * Each case is written once and runs on the mock (virtual clock: exact
 * times, no sleeping) and on Redis (short real times, with slack).
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* A time of the case: ms as written on the mock, divided by scale on Redis
 * (real time: the suite stays fast). */
static int64_t T(const dlock_fx *fx, int64_t ms, int64_t scale)
{
    return fx->is_mock ? ms : ms / scale;
}

static void free_semaphore(void *o) { dlock_semaphore_free(o); }

/* ---- 1. a read unlock that shortens the lock's life wakes writers -------- */

typedef struct write_try {
    dlock_fx *fx;
    dlock_rlock *w;
    int64_t wait_ms, lease_ms;
    int rc;
    int64_t got_at; /* dlock_fx_now when try_lock returned */
} write_try;

static void write_try_main(void *arg)
{
    write_try *t = arg;

    t->rc = dlock_try_lock_as(t->w, "W", t->wait_ms, t->lease_ms);
    t->got_at = dlock_fx_now(t->fx);
}

/* The reproduction: A reads (lease 4 000), 2 s later B reads (lease
 * 4 000), a writer waits (6 000), 100 ms later B unlocks: the writer must get
 * in when A's lease ends (~1 900 ms after it began), not B's (~4 000). Redis:
 * the same at a fifth of the times. */
static void read_unlock_shortening_wakes_writer(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r = NULL, *w = NULL;
    const int64_t lease = T(fx, 4000, 5), gap = T(fx, 2000, 5), later = T(fx, 100, 5);
    const int64_t slack = fx->is_mock ? 0 : 120;
    write_try wt;
    dlock_fx_thread th;
    int64_t a_ends, start, waited;
    int base, done;

    assert_int_equal(dlock_rwlock_read_new(&r, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = r;
    assert_int_equal(dlock_rwlock_write_new(&w, fx->c2, fx->name), 0);
    fx->locks[fx->nlocks++] = w;

    assert_int_equal(dlock_lock_as(r, "A", lease), 0);
    a_ends = dlock_fx_now(fx) + lease;
    dlock_fx_advance(fx, gap);
    assert_int_equal(dlock_lock_as(r, "B", lease), 0);

    memset(&wt, 0, sizeof(wt));
    wt.fx = fx;
    wt.w = w;
    wt.wait_ms = T(fx, 6000, 5);
    wt.lease_ms = lease;
    base = dlock_fx_settle(fx);
    start = dlock_fx_now(fx);
    dlock_fx_start(&th, write_try_main, &wt);
    assert_int_equal(dlock_fx_wait_blocked(fx, base, later), 0);
    if (fx->is_mock)
        dlock_fx_advance(fx, later);
    assert_int_equal(dlock_unlock_as(r, "B"), 0);
    dlock_fx_settle(fx); /* the writer, woken, sleeps on the new TTL */

    /* A's lease ends: the writer gets in now, not when B's would have. */
    if (fx->is_mock)
        dlock_fx_advance(fx, a_ends - dlock_fx_now(fx) + 1);
    done = dlock_fx_wait_done(&th, fx->is_mock ? 2000 : a_ends - dlock_fx_now(fx) + 400) == 0;
    if (!done && fx->is_mock)
        dlock_fx_advance(fx, wt.wait_ms); /* let it finish, to measure */
    assert_int_equal(dlock_fx_join(fx, &th, 5000, NULL), 0);
    waited = wt.got_at - start;
    printf("    writer waited %" PRId64 " ms (A's lease ends %" PRId64
           " ms after it began; B's %" PRId64 ")\n",
           waited, a_ends - start, a_ends + gap - start);
    assert_int_equal(wt.rc, 0);
    assert_true(done);
    assert_true(waited >= a_ends - start - (fx->is_mock ? 0 : 30));
    assert_true(waited <= a_ends - start + 1 + slack);
    assert_int_equal(dlock_unlock_as(w, "W"), 0);
}

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

/* The message is Redisson's read-unlock "0" on redisson_rwlock:{name}, so a
 * Java writer asleep on the same lock is woken too; an unlock that does not
 * shorten the lock's life sends nothing. */
static void read_unlock_shortening_publishes_zero(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_backend *b = dlock_client_backend(fx->c2);
    dlock_subscription *sub = NULL;
    dlock_rlock *r = NULL;
    char channel[160], got[64];
    int64_t give_up;
    msg_log m;

    assert_int_equal(dlock_rwlock_read_new(&r, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = r;
    snprintf(channel, sizeof(channel), "redisson_rwlock:{%s}", fx->name);
    memset(&m, 0, sizeof(m));
    pthread_mutex_init(&m.mutex, NULL);
    assert_int_equal(dlock_backend_subscribe(b, &sub, channel, on_message, &m), 0);
    assert_int_equal(dlock_lock_as(r, "A", T(fx, 4000, 5)), 0);
    assert_int_equal(dlock_lock_as(r, "B", T(fx, 8000, 5)), 0);
    assert_int_equal(dlock_lock_as(r, "C", T(fx, 2000, 5)), 0);
    assert_int_equal(dlock_unlock_as(r, "C"), 0); /* not the longest: nothing */
    assert_int_equal(dlock_unlock_as(r, "B"), 0); /* 8 000 -> 4 000: "0" */
    assert_true(dlock_fx_remain_ttl(r) <= T(fx, 4000, 5));
    give_up = dlock_fx_real_ms() + 3000;
    for (;;) {
        pthread_mutex_lock(&m.mutex);
        snprintf(got, sizeof(got), "%s", m.seen);
        pthread_mutex_unlock(&m.mutex);
        if (got[0] || dlock_fx_real_ms() > give_up)
            break;
        dlock_fx_sleep_real(1);
    }
    dlock_fx_sleep_real(50); /* anything more would show now */
    pthread_mutex_lock(&m.mutex);
    snprintf(got, sizeof(got), "%s", m.seen);
    pthread_mutex_unlock(&m.mutex);
    dlock_backend_unsubscribe(b, sub);
    pthread_mutex_destroy(&m.mutex);
    assert_string_equal(got, "0,");
    assert_int_equal(dlock_unlock_as(r, "A"), 0);
}

/* ---- 2. re-entry never shortens a hold ----------------------------------- */

/* Holds l for owner o with a long lease, re-enters with a short one, lets
 * the short one pass: still held, nobody else gets in, and the partial
 * unlock does not cut the hold either. */
static void check_reentry_keeps_longer(dlock_fx *fx, dlock_rlock *l, dlock_rlock *other)
{
    const int64_t outer = T(fx, 10000, 8), inner = T(fx, 1000, 8);
    const int64_t slack = fx->is_mock ? 0 : 100;
    int64_t ttl;

    assert_int_equal(dlock_lock(l, outer), 0);
    assert_int_equal(dlock_try_lock(l, 0, inner), 0);
    ttl = dlock_fx_remain_ttl(l);
    assert_true(ttl >= outer - slack && ttl <= outer);
    dlock_fx_advance(fx, 2 * inner);
    assert_int_equal(dlock_fx_hold_count(l), 2);
    if (other)
        assert_int_equal(dlock_try_lock(other, 0, inner), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l), 0); /* the inner hold */
    assert_int_equal(dlock_fx_hold_count(l), 1);
    ttl = dlock_fx_remain_ttl(l);
    assert_true(ttl >= outer - 2 * inner - slack && ttl <= outer - 2 * inner);
    if (other)
        assert_int_equal(dlock_try_lock(other, 0, inner), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_fx_is_locked(l), 0);
}

static void reentry_keeps_longer(dlock_fx *fx, int (*make)(dlock_rlock **, dlock_client *,
                                                          const char *))
{
    dlock_rlock *l = NULL, *o = NULL;

    assert_int_equal(make(&l, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = l;
    assert_int_equal(make(&o, fx->c2, fx->name), 0);
    fx->locks[fx->nlocks++] = o;
    check_reentry_keeps_longer(fx, l, o);
}

static void reentry_keeps_longer_reentrant(void **state)
{
    reentry_keeps_longer(BEGIN(state), dlock_reentrant_new);
}

static void reentry_keeps_longer_fair(void **state)
{
    reentry_keeps_longer(BEGIN(state), dlock_fair_new);
}

static void reentry_keeps_longer_fenced(void **state)
{
    reentry_keeps_longer(BEGIN(state), dlock_fenced_new);
}

static void reentry_keeps_longer_write(void **state)
{
    reentry_keeps_longer(BEGIN(state), dlock_rwlock_write_new);
}

/* Read holds: the other owner is a writer, who must stay out. */
static void reentry_keeps_longer_read(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *r = NULL, *w = NULL;

    assert_int_equal(dlock_rwlock_read_new(&r, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = r;
    assert_int_equal(dlock_rwlock_write_new(&w, fx->c2, fx->name), 0);
    fx->locks[fx->nlocks++] = w;
    check_reentry_keeps_longer(fx, r, w);
}

static void reentry_keeps_longer_semaphore_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s = NULL;

    assert_int_equal(dlock_semaphore_new(&s, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, s, free_semaphore);
    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
    reentry_keeps_longer(fx, dlock_semaphore_lock_new);
}

static const struct CMUnitTest parity_cases[] = {
    DLOCK_FX_CASE(read_unlock_shortening_wakes_writer),
    DLOCK_FX_CASE(read_unlock_shortening_publishes_zero),
    DLOCK_FX_CASE(reentry_keeps_longer_reentrant),
    DLOCK_FX_CASE(reentry_keeps_longer_fair),
    DLOCK_FX_CASE(reentry_keeps_longer_fenced),
    DLOCK_FX_CASE(reentry_keeps_longer_write),
    DLOCK_FX_CASE(reentry_keeps_longer_read),
    DLOCK_FX_CASE(reentry_keeps_longer_semaphore_lock),
};

int dlock_test_parity(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("parity", backend, parity_cases);
}
