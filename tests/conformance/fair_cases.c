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
#include "../harness/failing_backend.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"

#include <jansson.h>

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
    return dlock_fx_list_len(fx->c1, key);
}

static long long deadlines_len(dlock_fx *fx)
{
    char key[160];

    key_of(key, sizeof(key), "redisson_lock_timeout:", fx->name);
    return dlock_fx_call_int(fx->c1, "ZCARD", key, 0, NULL);
}

/* The dlock waiters' liveness (api/dlock/fair.h). */
static long long alive_len(dlock_fx *fx)
{
    char key[160];

    key_of(key, sizeof(key), "dlock_lock_alive:", fx->name);
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
    int64_t got_real_ms; /* real time of the acquisition */
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
    w->got_real_ms = dlock_fx_real_ms();
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
    /* Real time: waiter 0 must still be queued when waiter 1 queues behind
     * it; 150 ms was not enough for a sanitizer build on a loaded machine. */
    int64_t wait_ms = fx->is_mock ? 5000 : 1000;
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


/* ---- dead dlock waiters (issue 32) ----------------------------------------- */

static void free_client(void *o) { dlock_client_free(o); }

/* A client of its own on the fixture's store or server, behind a failing
 * backend (*fb, owned by the client), with the fixture's times and the
 * given waiter timeout. Setting *fb to DLOCK_TEST_FAIL_ALL kills its
 * waiters as far as the store can tell: they never renew anything again,
 * as a process killed with kill -9 would. Kept for teardown. */
static dlock_client *mortal_client(dlock_fx *fx, int64_t waiter_timeout_ms,
                                   dlock_test_failing **fb)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;

    o.fair_waiter_timeout_ms = waiter_timeout_ms;
    return dlock_fx_failing_client(fx, &o, fb);
}

/* The waiter timeout of the cases: the default on the mock's virtual
 * clock; a shorter one on Redis, where it is real time. */
#define DEAD_AFTER_MS(fx) ((fx)->is_mock ? 5000 : 1000)

/* Queues a waiter of a mortal client behind the holder (*t, *w) and kills
 * it: returns the time of its last renewal (the clock's; on the mock the
 * clock does not move meanwhile). */
static int64_t queue_and_kill(dlock_fx *fx, dlock_test_failing **fb, waiter *w,
                              dlock_fx_thread *t, order_log *log)
{
    int64_t renewed;
    long long alive, before;

    memset(w, 0, sizeof(*w));
    w->c = mortal_client(fx, DEAD_AFTER_MS(fx), fb);
    w->l = fair_lock(fx, w->c);
    w->log = log;
    w->wait_ms = fx->is_mock ? 3600000 : 120000;
    w->lease_ms = fx->long_lease_ms;
    before = queue_len(fx);
    dlock_fx_start(t, waiter_main, w);
    wait_queue_len(fx, before + 1);
    renewed = dlock_fx_now(fx);
    alive = alive_len(fx);
    dlock_test_failing_set(*fb, DLOCK_TEST_FAIL_ALL);
    if (alive != 1) {
        dlock_client_cancel_waits(w->c);
        dlock_fx_join(fx, t, 10000, NULL);
        fail_msg("%lld liveness entries for one dlock waiter", alive);
    }
    return renewed;
}

/* Ends the dead waiter's call (it is still trying, or gave up on its own
 * errors) and joins it. */
static int bury(dlock_fx *fx, dlock_client *c, dlock_fx_thread *t)
{
    dlock_client_cancel_waits(c);
    return dlock_fx_join(fx, t, 10000, NULL);
}

/* A dlock waiter that dies in the queue (its client stops reaching the
 * store: it renews nothing any more) stops blocking it once its liveness
 * ends, fair_waiter_timeout_ms after its last renewal, long before its
 * deadline W (5 min) would have it purged. On the mock the hand-off comes
 * exactly then, not a millisecond before; on Redis the time from its death
 * to the next waiter's acquisition is printed. */
static void dead_dlock_waiter_goes_quickly(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    dlock_test_failing *fb = NULL;
    waiter dead, next;
    dlock_fx_thread td, tn;
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    int64_t renewed, died, early = 0;
    int joined = 0;

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    renewed = queue_and_kill(fx, &fb, &dead, &td, &log);
    died = dlock_fx_real_ms();

    memset(&next, 0, sizeof(next));
    next.c = fx->c2;
    next.l = fair_lock(fx, next.c);
    next.log = &log;
    next.index = 1;
    next.wait_ms = fx->is_mock ? 3600000 : 30000;
    next.lease_ms = fx->long_lease_ms;
    next.unlock = 1;
    dlock_fx_start(&tn, waiter_main, &next);
    wait_queue_len(fx, 2);
    /* The unlock wakes the dead head, who never answers. */
    assert_int_equal(dlock_unlock(holder), 0);
    if (fx->is_mock) {
        dlock_fx_advance(fx, renewed + DEAD_AFTER_MS(fx) - 1 - dlock_fx_now(fx));
        dlock_fx_settle(fx);
        early = dlock_fx_done(&tn);
        dlock_fx_advance(fx, 1);
    }
    joined |= dlock_fx_join(fx, &tn, 40000, NULL);
    joined |= bury(fx, dead.c, &td);
    if (fx->is_mock)
        printf("  [mock] next waiter got the lock %" PRId64 " ms (virtual) after the "
               "dead one's last renewal (waiter timeout %d ms)\n",
               dlock_fx_now(fx) - renewed, DEAD_AFTER_MS(fx));
    else if (next.rc == 0)
        printf("  [%s] next waiter got the lock %" PRId64 " ms after the waiter in "
               "front of it died (waiter timeout %d ms)\n",
               fx->backend, next.got_real_ms - died, DEAD_AFTER_MS(fx));
    assert_int_equal(joined, 0);
    assert_false(early);
    assert_int_equal(next.rc, 0);
    assert_int_equal(next.unlock_rc, 0);
    assert_int_not_equal(dead.rc, 0);
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(deadlines_len(fx), 0);
    assert_int_equal(alive_len(fx), 0);
}

/* The first in line in a lock's state is presumed dead once its liveness
 * has passed, and a forced unlock drops it (and wakes nobody else: there
 * is nobody else); the lock is then free for anyone. */
static void force_unlock_clears_dead_waiter(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = fair_lock(fx, fx->c1);
    dlock_rlock *other = fair_lock(fx, fx->c2);
    dlock_test_failing *fb = NULL;
    waiter dead;
    dlock_fx_thread td;
    order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
    int existed = 0, state_rc[2], force_rc, lock_rc, buried;
    long long queued_before, queued_after, deadlines_after, alive_after;
    int64_t remaining[2] = {0, 0};
    int k;

    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    queue_and_kill(fx, &fb, &dead, &td, &log);
    /* Findings are recorded, and asserted once the dead waiter's thread is
     * joined: a failed assertion must not leave it running. */
    for (k = 0; k < 2; k++) {
        json_t *doc = NULL;

        if (k == 1)
            dlock_fx_advance(fx, DEAD_AFTER_MS(fx) + (fx->is_mock ? 0 : 500));
        state_rc[k] = dlock_rlock_state(holder, &doc);
        if (state_rc[k] == 0) {
            json_t *row = json_array_get(json_object_get(doc, "queue"), 0);
            remaining[k] = json_integer_value(json_object_get(row, "remaining_ms"));
        }
        json_decref(doc);
    }
    queued_before = queue_len(fx); /* reads purge nothing */
    force_rc = dlock_force_unlock(other, &existed);
    queued_after = queue_len(fx);
    deadlines_after = deadlines_len(fx);
    alive_after = alive_len(fx);
    lock_rc = dlock_try_lock(other, 0, fx->long_lease_ms);
    if (lock_rc == 0)
        lock_rc = dlock_unlock(other);
    buried = bury(fx, dead.c, &td);
    printf("  [%s] dead waiter presumed dead in %" PRId64 " ms, then %" PRId64 " ms\n",
           fx->backend, remaining[0], remaining[1]);
    assert_int_equal(buried, 0);
    assert_int_equal(state_rc[0], 0);
    assert_int_equal(state_rc[1], 0);
    assert_true(remaining[0] > 0 && remaining[0] <= DEAD_AFTER_MS(fx));
    assert_true(remaining[1] <= 0);
    assert_int_equal(queued_before, 1);
    assert_int_equal(force_rc, 0);
    assert_true(existed);
    assert_int_equal(queued_after, 0);
    assert_int_equal(deadlines_after, 0);
    assert_int_equal(alive_after, 0);
    assert_int_equal(lock_rc, 0);
}

/* A waiter whose client has no waiter timeout (0) leaves no liveness and
 * keeps Redisson's rules alone, as a Java waiter does. And the timeout
 * comes from a URL's query parameter (in any scheme) and from the JSON
 * configuration: the liveness a waiter writes is that far ahead. */
static void waiter_timeout_settings(void **state)
{
    dlock_fx *fx = BEGIN(state);
    /* On the mock a store of its own ("mock:", on real time: nothing here
     * waits on the clock), where the case's client holds the lock too. */
    const char *base = fx->is_mock ? "mock:" : dlock_fx_redis_url();
    char url[512], json[700], queue[160], alive[160], err[256];
    int round;

    key_of(queue, sizeof(queue), "redisson_lock_queue:", fx->name);
    key_of(alive, sizeof(alive), "dlock_lock_alive:", fx->name);
    for (round = 0; round < 3; round++) {
        int64_t want = round == 2 ? 0 : 60000 + round;
        dlock_client *c = NULL;
        dlock_rlock *holder;
        waiter w;
        dlock_fx_thread t;
        order_log log = {PTHREAD_MUTEX_INITIALIZER, {0}, 0};
        int64_t give_up = dlock_fx_real_ms() + 10000, ahead = -1;
        long long queued = 0, alives = 0;
        dlock_reply *r = NULL;

        if (round == 1) {
            snprintf(json, sizeof(json),
                     "{\"url\": \"%s\", \"fair_waiter_timeout_ms\": %" PRId64 "}", base, want);
            assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof(err)), 0);
        } else {
            snprintf(url, sizeof(url), "%s%sfair_waiter_timeout_ms=%" PRId64, base,
                     strchr(base, '?') ? "&" : "?", want);
            assert_int_equal(dlock_client_connect(&c, url, NULL, err, sizeof(err)), 0);
        }
        dlock_fx_keep(fx, c, free_client);
        holder = fair_lock(fx, c);
        assert_int_equal(dlock_lock(holder, 600000), 0);
        memset(&w, 0, sizeof(w));
        w.c = c;
        w.l = fair_lock(fx, c);
        w.log = &log;
        w.wait_ms = 60000; /* ended by the cancel below */
        w.lease_ms = fx->long_lease_ms;
        dlock_fx_start(&t, waiter_main, &w);
        while (dlock_fx_real_ms() < give_up && !dlock_fx_done(&t) &&
               (queued = dlock_fx_list_len(c, queue)) == 0)
            dlock_fx_sleep_real(5);
        alives = dlock_fx_call_int(c, "ZCARD", alive, 0, NULL);
        if (dlock_fx_call(c, &r, "ZRANGE", alive, 3, "0", "0", "WITHSCORES") == 0 &&
            r->type == DLOCK_REPLY_ARRAY && r->n == 2)
            ahead = strtoll(r->elems[1]->str, NULL, 10) -
                    dlock_clock_wall(dlock_backend_clock(dlock_client_backend(c)));
        dlock_reply_free(r);
        dlock_client_cancel_waits(c);
        assert_int_equal(dlock_fx_join(fx, &t, 10000, NULL), 0);
        assert_int_equal(dlock_unlock(holder), 0);
        printf("  [%s] waiter timeout %" PRId64 " (%s): %lld in line, %lld alive, "
               "liveness %" PRId64 " ms ahead\n",
               fx->backend, want, round == 1 ? "JSON" : "URL", queued, alives, ahead);
        assert_int_equal(w.rc, DLOCK_ECANCELED);
        assert_int_equal(queued, 1);
        assert_int_equal(alives, want > 0 ? 1 : 0);
        if (want > 0)
            assert_true(ahead > want - 5000 && ahead <= want);
        assert_int_equal(dlock_fx_list_len(c, queue), 0);
        assert_int_equal(dlock_fx_call_int(c, "ZCARD", alive, 0, NULL), 0);
    }
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
    DLOCK_FX_CASE(dead_dlock_waiter_goes_quickly),
    DLOCK_FX_CASE(force_unlock_clears_dead_waiter),
    DLOCK_FX_CASE(waiter_timeout_settings),
};

int dlock_test_fair(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("fair", backend, fair_cases);
}
