/*
 * Conformance cases of the fair lock that the reentrant cases do not cover:
 * FIFO hand-off, waiters that give up or die, wake-ups of the head only, and
 * FIFO under contention. Each case is written once and runs on the mock (on
 * the virtual clock) and on Redis (ms leases, loose bounds).
 *
 * The cases look at the queue through the Redisson layout of DESIGN §2
 * (redisson_lock_queue:{N}, redisson_lock_timeout:{N}), which is part of the
 * contract: a Java client sharing the lock sees the same keys.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)
#define NWAIT 8

static dlock_rlock *fair_lock(dlock_fx *fx, dlock_client *c)
{
    dlock_rlock *l = NULL;

    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    assert_int_equal(dlock_fair_new(&l, c, fx->name), 0);
    fx->locks[fx->nlocks++] = l;
    return l;
}

/* The library's key rule: braces unless the name has one (on Redis
 * Cluster the fixture's names carry a hash tag already). */
static void key_of(char *buf, size_t n, const char *prefix, const char *name)
{
    snprintf(buf, n, strchr(name, '{') ? "%s%s" : "%s{%s}", prefix, name);
}

static long long queue_len(dlock_fx *fx)
{
    char key[160];

    key_of(key, sizeof(key), "redisson_lock_queue:", fx->name);
    return dlock_fx_call_int(fx->c1, "LLEN", key, 0, NULL);
}

static long long deadlines_len(dlock_fx *fx)
{
    char key[160];

    key_of(key, sizeof(key), "redisson_lock_timeout:", fx->name);
    return dlock_fx_call_int(fx->c1, "ZCARD", key, 0, NULL);
}

/* Waits (real time, bounded) until the queue holds n waiters, so that
 * waiters are started in a known arrival order. */
static void wait_queue_len(dlock_fx *fx, long long n)
{
    int64_t give_up = dlock_fx_real_ms() + 5000;

    while (queue_len(fx) < n && dlock_fx_real_ms() < give_up)
        dlock_fx_sleep_real(1);
    assert_int_equal(queue_len(fx), n);
    /* On the mock the waiter must also be asleep on the clock before the
     * case advances it. */
    dlock_fx_settle(fx);
}

/* ---- waiters -------------------------------------------------------------- */

typedef struct order_log {
    pthread_mutex_t mutex;
    int order[NWAIT];
    int n;
} order_log;

typedef struct waiter {
    dlock_rlock *l;
    dlock_client *c;
    int index;
    int64_t lease_ms;
    int64_t wait_ms; /* -1: dlock_lock */
    int unlock;      /* unlock right after acquiring */
    order_log *log;
    int rc, unlock_rc;
    char owner[DLOCK_OWNER_MAX];
} waiter;

static void waiter_main(void *arg)
{
    waiter *w = arg;
    char owner[DLOCK_OWNER_MAX];

    /* Published under the log's mutex: the test thread reads it. */
    dlock_client_owner(w->c, owner, sizeof(owner));
    pthread_mutex_lock(&w->log->mutex);
    memcpy(w->owner, owner, sizeof(owner));
    pthread_mutex_unlock(&w->log->mutex);
    w->rc = w->wait_ms < 0 ? dlock_lock(w->l, w->lease_ms)
                           : dlock_try_lock(w->l, w->wait_ms, w->lease_ms);
    if (w->rc != 0)
        return;
    pthread_mutex_lock(&w->log->mutex);
    w->log->order[w->log->n++] = w->index;
    pthread_mutex_unlock(&w->log->mutex);
    if (w->unlock)
        w->unlock_rc = dlock_unlock(w->l);
}

static int logged(order_log *log)
{
    int n;

    pthread_mutex_lock(&log->mutex);
    n = log->n;
    pthread_mutex_unlock(&log->mutex);
    return n;
}

/* Starts NWAIT waiters one after another (each queued before the next
 * starts), alternating between the two clients. */
static void start_waiters(dlock_fx *fx, waiter *w, dlock_fx_thread *t,
                          order_log *log, int64_t lease_ms, int unlock)
{
    int i;

    for (i = 0; i < NWAIT; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].c = i % 2 ? fx->c2 : fx->c1;
        w[i].l = fair_lock(fx, w[i].c);
        w[i].index = i;
        w[i].lease_ms = lease_ms;
        w[i].wait_ms = -1;
        w[i].unlock = unlock;
        w[i].log = log;
        dlock_fx_start(&t[i], waiter_main, &w[i]);
        wait_queue_len(fx, i + 1);
    }
}

/* ---- cases ---------------------------------------------------------------- */

/* Lease hand-off: nobody unlocks; each waiter takes over exactly when the
 * lease in front of it ends, in arrival order. */
static void fifo_on_lease_end(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    waiter w[NWAIT];
    dlock_fx_thread t[NWAIT];
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    int i, joined = 0, early = -1, late = -1;

    /* On Redis the holder's lease must outlast queueing the waiters (real
     * time, on a loaded machine); each waiter's own lease is the short one
     * the hand-offs are timed by. */
    assert_int_equal(dlock_lock(holder, fx->is_mock ? fx->lease_ms : 5 * fx->lease_ms), 0);
    start_waiters(fx, w, t, &log, fx->lease_ms, 0);
    /* Findings are recorded and asserted once every waiter is joined: a
     * failed assertion must not leave threads running. */
    for (i = 0; i < NWAIT && early < 0 && late < 0; i++) {
        if (fx->is_mock) {
            /* Not a moment before the lease in front ends... */
            dlock_fx_advance(fx, fx->lease_ms - 1);
            dlock_fx_settle(fx);
            if (logged(&log) != i)
                early = i;
            dlock_fx_advance(fx, 1);
        }
        /* ...and then the next in line, and only it. */
        if (dlock_fx_wait_done(&t[i], 5000) != 0)
            late = i;
    }
    for (i = 0; i < NWAIT; i++)
        joined |= dlock_fx_join(fx, &t[i], 5000, holder);
    if (early >= 0 || late >= 0)
        printf("  [%s] hand-off %d came %s\n", fx->backend,
               early >= 0 ? early : late, early >= 0 ? "early" : "late");
    assert_int_equal(early, -1);
    assert_int_equal(late, -1);
    assert_int_equal(joined, 0);
    assert_int_equal(log.n, NWAIT);
    for (i = 0; i < NWAIT; i++) {
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(log.order[i], i);
    }
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(deadlines_len(fx), 0);
}

/* Unlock hand-off: each waiter unlocks at once; the chain runs in arrival
 * order without the clock moving (pub/sub wake-ups only). */
static void fifo_on_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    waiter w[NWAIT];
    dlock_fx_thread t[NWAIT];
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    int i, joined = 0;

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    start_waiters(fx, w, t, &log, fx->long_lease_ms, 1);
    assert_int_equal(dlock_unlock(holder), 0);
    for (i = 0; i < NWAIT; i++)
        joined |= dlock_fx_join(fx, &t[i], 10000, holder);
    assert_int_equal(joined, 0);
    for (i = 0; i < NWAIT; i++) {
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(w[i].unlock_rc, 0);
        assert_int_equal(log.order[i], i);
    }
    assert_int_equal(log.n, NWAIT);
    assert_int_equal(queue_len(fx), 0);
}

/* A waiter whose wait runs out leaves the queue at once; the one behind it
 * gets the lock on the next unlock without waiting for anything. */
static void timed_out_waiter_leaves_queue(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    waiter w[2];
    dlock_fx_thread t[2];
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    int64_t wait_ms = fx->is_mock ? 5000 : 150;
    int joined = 0;

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    memset(w, 0, sizeof(w));
    w[0].c = fx->c2;
    w[0].l = fair_lock(fx, w[0].c);
    w[0].log = &log;
    w[0].wait_ms = wait_ms;
    w[0].lease_ms = fx->long_lease_ms;
    dlock_fx_start(&t[0], waiter_main, &w[0]);
    wait_queue_len(fx, 1);
    w[1].c = fx->c1;
    w[1].l = fair_lock(fx, w[1].c);
    w[1].log = &log;
    w[1].index = 1;
    w[1].wait_ms = -1;
    w[1].lease_ms = fx->long_lease_ms;
    w[1].unlock = 1;
    dlock_fx_start(&t[1], waiter_main, &w[1]);
    wait_queue_len(fx, 2);

    dlock_fx_advance(fx, wait_ms);
    joined |= dlock_fx_join(fx, &t[0], 5000, holder);
    assert_int_equal(w[0].rc, DLOCK_ETIMEDOUT);
    assert_int_equal(queue_len(fx), 1);
    assert_int_equal(deadlines_len(fx), 1);

    /* No clock advance on the mock: only the unlock can wake the waiter. */
    assert_int_equal(dlock_unlock(holder), 0);
    joined |= dlock_fx_join(fx, &t[1], 5000, holder);
    assert_int_equal(joined, 0);
    assert_int_equal(w[1].rc, 0);
    assert_int_equal(w[1].unlock_rc, 0);
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(deadlines_len(fx), 0);
}

/* A waiter that queued and died (simulated: its entries are written as a
 * dead client would have left them) is purged when its deadline passes, and
 * the live waiter behind it gets the lock then, not before. */
static void dead_waiter_is_purged(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    dlock_clock *clk = dlock_backend_clock(dlock_client_backend(fx->c1));
    int64_t slack = fx->is_mock ? 20000 : 300;
    char queue[160], deadlines[160], score[32];
    const char *dead = "00000000-dead-dead-dead-000000000000:1";
    dlock_reply *r = NULL;
    waiter w;
    dlock_fx_thread t;
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    int64_t started;

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    key_of(queue, sizeof(queue), "redisson_lock_queue:", fx->name);
    key_of(deadlines, sizeof(deadlines), "redisson_lock_timeout:", fx->name);
    snprintf(score, sizeof(score), "%" PRId64, dlock_clock_wall(clk) + slack);
    assert_int_equal(dlock_fx_call(fx->c1, &r, "RPUSH", queue, 1, dead), 0);
    dlock_reply_free(r);
    assert_int_equal(dlock_fx_call(fx->c1, &r, "ZADD", deadlines, 2, score, dead), 0);
    dlock_reply_free(r);

    memset(&w, 0, sizeof(w));
    w.c = fx->c2;
    w.l = fair_lock(fx, w.c);
    w.log = &log;
    w.wait_ms = -1;
    w.lease_ms = fx->long_lease_ms;
    w.unlock = 1;
    started = dlock_fx_real_ms();
    dlock_fx_start(&t, waiter_main, &w);
    wait_queue_len(fx, 2);
    /* The unlock wakes the dead head, who never answers. */
    assert_int_equal(dlock_unlock(holder), 0);
    if (fx->is_mock) {
        dlock_fx_advance(fx, slack - 1000);
        dlock_fx_settle(fx);
        assert_false(dlock_fx_done(&t));
        assert_int_equal(queue_len(fx), 2);
        dlock_fx_advance(fx, 1000);
    }
    assert_int_equal(dlock_fx_join(fx, &t, 10000, holder), 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.unlock_rc, 0);
    if (!fx->is_mock) {
        printf("  [redis] waiter behind a dead one got the lock after %" PRId64
               " ms (slack %" PRId64 " ms)\n", dlock_fx_real_ms() - started, slack);
        assert_true(dlock_fx_real_ms() - started >= slack / 2);
    }
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(deadlines_len(fx), 0);
}

/* ---- counting wake-ups ---------------------------------------------------- */

typedef struct counter {
    pthread_mutex_t mutex;
    int n;
} counter;

static void count_message(void *arg, const char *channel, const char *message,
                          size_t len)
{
    counter *c = arg;

    (void)channel, (void)message, (void)len;
    pthread_mutex_lock(&c->mutex);
    c->n++;
    pthread_mutex_unlock(&c->mutex);
}

static int count_of(counter *c)
{
    int n;

    pthread_mutex_lock(&c->mutex);
    n = c->n;
    pthread_mutex_unlock(&c->mutex);
    return n;
}

/* An unlock wakes the first waiter only: no message reaches the others or
 * the shared channel. (The new holder then tells the next in line to watch
 * its lease: one more message, to one waiter.) */
static void unlock_wakes_only_the_head(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    dlock_backend *b = dlock_client_backend(fx->c2);
    dlock_subscription *subs[NWAIT + 1];
    counter counts[NWAIT + 1];
    waiter w[NWAIT];
    dlock_fx_thread t[NWAIT];
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    char channel[NWAIT + 1][256];
    int i, joined = 0, total = 0;
    int64_t give_up;

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    start_waiters(fx, w, t, &log, fx->long_lease_ms, 0);
    /* Every waiter's own channel, and the reentrant lock's shared one. */
    pthread_mutex_lock(&log.mutex);
    for (i = 0; i <= NWAIT; i++) {
        char base[200];
        key_of(base, sizeof(base), "redisson_lock__channel:", fx->name);
        if (i < NWAIT)
            snprintf(channel[i], sizeof(channel[i]), "%s:%s", base, w[i].owner);
        else
            snprintf(channel[i], sizeof(channel[i]), "%s", base);
        pthread_mutex_init(&counts[i].mutex, NULL);
        counts[i].n = 0;
    }
    pthread_mutex_unlock(&log.mutex);
    for (i = 0; i <= NWAIT; i++) {
        assert_int_equal(dlock_backend_subscribe(b, &subs[i], channel[i],
                                                 count_message, &counts[i]), 0);
    }
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_fx_wait_done(&t[0], 5000), 0);
    assert_int_equal(w[0].rc, 0);
    /* Messages travel asynchronously on Redis: wait for the two expected
     * ones, then a little longer for any unexpected one. */
    give_up = dlock_fx_real_ms() + 2000;
    while (count_of(&counts[0]) + count_of(&counts[1]) < 2 && dlock_fx_real_ms() < give_up)
        dlock_fx_sleep_real(1);
    dlock_fx_sleep_real(fx->is_mock ? 5 : 50);
    for (i = 0; i <= NWAIT; i++)
        total += count_of(&counts[i]);
    printf("  [%s] messages after one unlock: head %d, next %d, all %d\n",
           fx->backend, count_of(&counts[0]), count_of(&counts[1]), total);
    assert_int_equal(count_of(&counts[0]), 1);
    assert_int_equal(count_of(&counts[1]), 1);
    assert_int_equal(total, 2);
    for (i = 0; i <= NWAIT; i++)
        dlock_backend_unsubscribe(b, subs[i]);

    /* Let the rest through: each takes over from the previous by unlock. */
    for (i = 0; i < NWAIT; i++) {
        assert_int_equal(dlock_fx_wait_done(&t[i], 5000), 0);
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(dlock_unlock(w[i].l), DLOCK_ENOTOWNER); /* other thread's */
        assert_int_equal(dlock_unlock_as(w[i].l, w[i].owner), 0);
    }
    for (i = 0; i < NWAIT; i++)
        joined |= dlock_fx_join(fx, &t[i], 5000, holder);
    assert_int_equal(joined, 0);
    for (i = 0; i < NWAIT; i++)
        assert_int_equal(log.order[i], i);
    for (i = 0; i <= NWAIT; i++)
        pthread_mutex_destroy(&counts[i].mutex);
}

/* ---- FIFO under contention ------------------------------------------------ */

#define CONTEND_THREADS 4

typedef struct contend_log {
    pthread_mutex_t mutex;
    char (*owner)[DLOCK_OWNER_MAX];     /* who acquired, in order */
    char (*next_seen)[DLOCK_OWNER_MAX]; /* the queue's head while it held */
    int n, cap;
    int errors;
} contend_log;

typedef struct contender {
    dlock_fx *fx;
    dlock_rlock *l;
    dlock_client *c;
    contend_log *log;
    int iters;
} contender;

static void contender_main(void *arg)
{
    contender *ct = arg;
    char owner[DLOCK_OWNER_MAX], queue[160];
    int i;

    dlock_client_owner(ct->c, owner, sizeof(owner));
    key_of(queue, sizeof(queue), "redisson_lock_queue:", ct->fx->name);
    for (i = 0; i < ct->iters; i++) {
        dlock_reply *r = NULL;
        int slot, rc = dlock_lock(ct->l, 0);

        if (rc != 0) {
            pthread_mutex_lock(&ct->log->mutex);
            ct->log->errors++;
            pthread_mutex_unlock(&ct->log->mutex);
            return;
        }
        /* While we hold it, the queue only grows at its tail: its head now
         * is the one who must get the lock next. */
        rc = dlock_fx_call(ct->c, &r, "LINDEX", queue, 1, "0");
        pthread_mutex_lock(&ct->log->mutex);
        slot = ct->log->n++;
        snprintf(ct->log->owner[slot], DLOCK_OWNER_MAX, "%s", owner);
        snprintf(ct->log->next_seen[slot], DLOCK_OWNER_MAX, "%s",
                 rc == 0 && r->type == DLOCK_REPLY_BULK ? r->str : "");
        if (rc != 0)
            ct->log->errors++;
        pthread_mutex_unlock(&ct->log->mutex);
        dlock_reply_free(r);
        if (dlock_unlock(ct->l) != 0) {
            pthread_mutex_lock(&ct->log->mutex);
            ct->log->errors++;
            pthread_mutex_unlock(&ct->log->mutex);
        }
    }
}

static void fifo_under_contention(void **state)
{
    dlock_fx *fx = BEGIN(state);
    contender ct[CONTEND_THREADS];
    dlock_fx_thread t[CONTEND_THREADS];
    contend_log log;
    int i, joined = 0, violations = 0, handoffs = 0;
    int iters = fx->is_mock ? 500 : 200;

    memset(&log, 0, sizeof(log));
    pthread_mutex_init(&log.mutex, NULL);
    log.cap = CONTEND_THREADS * iters;
    log.owner = calloc((size_t)log.cap, sizeof(*log.owner));
    log.next_seen = calloc((size_t)log.cap, sizeof(*log.next_seen));
    assert_non_null(log.owner);
    assert_non_null(log.next_seen);
    for (i = 0; i < CONTEND_THREADS; i++) {
        ct[i].fx = fx;
        ct[i].c = i % 2 ? fx->c2 : fx->c1;
        ct[i].l = fair_lock(fx, ct[i].c);
        ct[i].log = &log;
        ct[i].iters = iters;
    }
    for (i = 0; i < CONTEND_THREADS; i++)
        dlock_fx_start(&t[i], contender_main, &ct[i]);
    for (i = 0; i < CONTEND_THREADS; i++)
        joined |= dlock_fx_join(fx, &t[i], 60000, ct[i].l);
    for (i = 0; i + 1 < log.n; i++) {
        if (log.next_seen[i][0] == '\0')
            continue;
        handoffs++;
        if (strcmp(log.next_seen[i], log.owner[i + 1]) != 0)
            violations++;
    }
    printf("  [%s] %d acquisitions by %d threads, %d queued hand-offs, %d FIFO violations\n",
           fx->backend, log.n, CONTEND_THREADS, handoffs, violations);
    free(log.owner);
    free(log.next_seen);
    pthread_mutex_destroy(&log.mutex);
    assert_int_equal(joined, 0);
    assert_int_equal(log.errors, 0);
    assert_int_equal(log.n, CONTEND_THREADS * iters);
    assert_true(handoffs > 0);
    assert_int_equal(violations, 0);
}

/* try_lock with wait 0 never joins the queue, and a free lock whose turn
 * belongs to a queued waiter is not taken from it. */
static void try_once_never_queues(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    dlock_rlock *other = fair_lock(fx, fx->c2);

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(other, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(deadlines_len(fx), 0);
    /* Re-entry by the holder never queues either. */
    assert_int_equal(dlock_try_lock(holder, 0, fx->long_lease_ms), 0);
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_unlock(holder), 0);
}

/* A call that fails changes nothing (issue 32): the scripts purge dead
 * waiters at the head of the queue, and used to do it before finding that
 * the name holds a key of another type, or a hold count that is not an
 * integer (planted by hand). Now they check first: the dead waiter is
 * still there after the error, and purged by the next call that works. */
static void failed_call_leaves_queue_alone(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = fair_lock(fx, fx->c1);
    char queue[200], zs[200], buf[64], before[1024], after[1024];
    const char *keys[] = {fx->name, queue, zs, NULL};
    int round;

    key_of(queue, sizeof(queue), "redisson_lock_queue:", fx->name);
    key_of(zs, sizeof(zs), "redisson_lock_timeout:", fx->name);
    for (round = 0; round < 2; round++) {
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
        if (round == 0)
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, fx->owner1, "x");
        else
            dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1, "precious", NULL);
        /* a waiter whose deadline passed long ago, first in line */
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", queue, 0, NULL, NULL);
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "rpush", queue, 1, "dead:1", NULL);
        dlock_fx_call_str(fx->c2, buf, sizeof(buf), "zadd", zs, 2, "1", "dead:1");
        dlock_fx_keys_dump(fx->c2, keys, before, sizeof(before));
        assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), DLOCK_EPROTO);
        printf("  [%s] %s\n", fx->backend, dlock_errmsg(l));
        assert_int_equal(dlock_try_lock(l, 1, fx->lease_ms), DLOCK_EPROTO);
        assert_int_equal(dlock_unlock(l), DLOCK_EPROTO);
        dlock_fx_keys_dump(fx->c2, keys, after, sizeof(after));
        assert_string_equal(after, before);
    }
    /* with the name free, the next attempt purges the dead waiter and gets
     * the lock */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
    assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), 0);
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(dlock_unlock(l), 0);
}

static const struct CMUnitTest fair_cases[] = {
    DLOCK_FX_CASE(fifo_on_lease_end),
    DLOCK_FX_CASE(fifo_on_unlock),
    DLOCK_FX_CASE(timed_out_waiter_leaves_queue),
    DLOCK_FX_CASE(dead_waiter_is_purged),
    DLOCK_FX_CASE(unlock_wakes_only_the_head),
    DLOCK_FX_CASE(fifo_under_contention),
    DLOCK_FX_CASE(try_once_never_queues),
    DLOCK_FX_CASE(failed_call_leaves_queue_alone),
};

int dlock_test_fair(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("fair", backend, fair_cases);
}
