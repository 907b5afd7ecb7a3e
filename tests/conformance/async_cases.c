/*
 * The conformance cases of the asynchronous API (api/dlock/async.h): one
 * callback per started operation, on the loop's thread and never inside
 * the starter; waits woken by a release, timed out, cancelled (leaving no
 * queue entry behind) and ended by dlock_loop_free; blocking calls refused
 * inside callbacks; every mode of running a loop (poll, hooks, its own
 * thread); semaphores, latches, fencing tokens; many waits at once.
 * Each case runs on every backend. On the mock, a single thread drives
 * everything in poll mode on the virtual clock (dlock_fx_advance, then
 * dlock_loop_run(lp, 0)): nothing sleeps. On Redis the loop waits in real
 * time, with loose bounds.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include "objects/async/loop.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* How long a Redis case waits for a callback it expects (real ms). */
#define REDIS_WAIT_MS 5000
/* The lease of a lock held elsewhere for a whole case (a holder whose
 * watchdog is not the case's subject): a lease of its own, not the
 * fixture's watchdog lease (300 ms on Redis, renewed every 100 ms), which
 * a loaded machine lets lapse mid-case (then a waiter is granted early and
 * the holder's unlock says DLOCK_ELOST). */
#define HOLDER_LEASE_MS 60000

/* What callbacks record. */
typedef struct seen {
    int calls;
    int rc;
    int64_t value;
    dlock_op_id op;
    pthread_t thread;
    char detail[256];
    char owner[DLOCK_OWNER_MAX]; /* r->owner ("" for NULL) */
    /* set by the case around a starter: a callback inside it is a bug */
    int in_starter, called_in_starter;
    /* a blocking call made from inside the callback */
    dlock_rlock *probe;
    int probe_rc;
    char **ids;
} seen;

static void on_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    seen *s = arg;

    s->calls++;
    s->rc = r->rc;
    s->value = r->value;
    s->op = op;
    s->thread = pthread_self();
    snprintf(s->detail, sizeof(s->detail), "%s", r->detail ? r->detail : "(null)");
    snprintf(s->owner, sizeof(s->owner), "%s", r->owner ? r->owner : "");
    if (s->in_starter)
        s->called_in_starter = 1;
    if (s->probe) {
        int b = 0;

        s->probe_rc = dlock_is_locked(s->probe, &b);
    }
    if (r->permit_ids)
        s->ids = dlock_result_take_permit_ids(r);
}

static void free_loop(void *lp)
{
    dlock_loop_free(lp);
}

/* A poll-mode loop on c, freed by teardown (unless the case frees it). */
static dlock_loop *loop(dlock_fx *fx, dlock_client *c)
{
    dlock_loop *lp = NULL;

    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    assert_non_null(lp);
    return dlock_fx_keep(fx, lp, free_loop);
}

/* On the mock: runs lp until nothing is due (a run does one slice and
 * leaves the rest, with dlock_loop_timeout_ms 0, for the next). */
static void run_due_all(dlock_loop *lp)
{
    do
        assert_true(dlock_loop_run(lp, 0) >= 0);
    while (dlock_loop_timeout_ms(lp) == 0);
}

/* Runs lp until s has n calls: on the mock without waiting (everything due
 * runs at once), on Redis up to REDIS_WAIT_MS of real time. */
static void run_until(dlock_fx *fx, dlock_loop *lp, const seen *s, int n)
{
    int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;

    if (fx->is_mock) {
        run_due_all(lp);
        return;
    }
    do
        assert_true(dlock_loop_run(lp, 20) >= 0);
    while (s->calls < n && dlock_fx_real_ms() < end);
}

/* Runs lp for a while and checks nothing was called back meanwhile. */
static void run_idle(dlock_fx *fx, dlock_loop *lp, const seen *s, int calls)
{
    int64_t end = dlock_fx_real_ms() + (fx->is_mock ? 0 : 200);

    do {
        int n = dlock_loop_run(lp, fx->is_mock ? 0 : 20);

        if (n != 0)
            print_message("unexpected callback(s): %d; the watched one: %d calls, "
                          "rc %s, \"%s\"\n", n, s->calls, dlock_errname(s->rc), s->detail);
        assert_int_equal(n, 0);
    } while (dlock_fx_real_ms() < end);
    assert_int_equal(s->calls, calls);
}

static int held_by(dlock_rlock *l, const char *owner)
{
    int b = -1;

    assert_int_equal(dlock_is_held_as(l, owner, &b), 0);
    return b;
}

/* ---- cases ---------------------------------------------------------------- */

/* Lock and unlock: one callback each, on the loop's thread, never inside
 * the starter; owner NULL is a new owner id of the acquisition's own
 * (r->owner), not the starting thread's, and the unlock takes it. */
static void async_lock_unlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_loop *lp = loop(fx, fx->c1);
    seen a = {0}, b = {0};
    dlock_op_id op = 0;

    a.in_starter = 1;
    assert_int_equal(dlock_lock_async(lp, &op, l, NULL, DLOCK_WAIT_FOREVER, 0, on_done, &a),
                     0);
    a.in_starter = 0;
    assert_true(op != 0);
    assert_int_equal(a.calls, 0);
    assert_int_equal(dlock_loop_pending(lp), 1);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.called_in_starter, 0);
    assert_int_equal(a.rc, 0);
    assert_true(a.op == op);
    assert_true(pthread_equal(a.thread, pthread_self()));
    assert_true(a.owner[0] != '\0');
    assert_int_not_equal(strcmp(a.owner, fx->owner1), 0);
    assert_int_equal(strncmp(a.owner, dlock_client_id(fx->c1), 36), 0);
    assert_int_equal(a.owner[36], ':');
    assert_int_equal(held_by(l, a.owner), 1);
    assert_int_equal(held_by(l, fx->owner1), 0);
    assert_int_equal(dlock_loop_pending(lp), 0);

    /* the calls that act for a hold name it: NULL is refused at once */
    assert_int_equal(dlock_unlock_async(lp, NULL, l, NULL, on_done, &b), DLOCK_EINVAL);
    assert_int_equal(dlock_extend_async(lp, NULL, l, NULL, 0, on_done, &b), DLOCK_EINVAL);
    assert_int_equal(dlock_is_held_async(lp, NULL, l, NULL, on_done, &b), DLOCK_EINVAL);
    assert_int_equal(dlock_hold_count_async(lp, NULL, l, NULL, on_done, &b), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_errmsg(l), "dlock_result.owner"));
    assert_int_equal(dlock_loop_pending(lp), 0);
    b.in_starter = 1;
    assert_int_equal(dlock_unlock_async(lp, NULL, l, a.owner, on_done, &b), 0);
    b.in_starter = 0;
    run_until(fx, lp, &b, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(b.called_in_starter, 0);
    assert_int_equal(b.rc, 0);
    assert_string_equal(b.owner, a.owner);
    assert_int_equal(held_by(l, a.owner), 0);
    /* a second unlock: not the owner, with the blocking form's detail */
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_unlock_async(lp, NULL, l, a.owner, on_done, &b), 0);
    run_until(fx, lp, &b, 1);
    assert_int_equal(b.rc, DLOCK_ENOTOWNER);
    assert_true(b.detail[0] != '\0');
    run_idle(fx, lp, &b, 1);
}

/* A wait for a lock held elsewhere sleeps in the loop and is woken by the
 * holder's release (pub/sub), as a blocking wait is. */
static void async_wait_woken_by_release(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = loop(fx, fx->c1);
    seen a = {0};

    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, "waiter-1", DLOCK_WAIT_FOREVER, 0,
                                      on_done, &a), 0);
    run_idle(fx, lp, &a, 0);
    assert_int_equal(dlock_unlock(l2), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, 0);
    assert_int_equal(held_by(l1, "waiter-1"), 1);
    assert_int_equal(dlock_unlock_as(l1, "waiter-1"), 0);
}

/* A lease-0 hold taken asynchronously is the watchdog's, as a blocking
 * one is: still held after several watchdog periods; and when it is lost
 * (deleted behind the owner's back), on_lost is called. */
static void async_watchdog_renews(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *other = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = loop(fx, fx->c1);
    int64_t ttl = -1;
    char owner[DLOCK_OWNER_MAX];
    seen a = {0};

    assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, 0, 0, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, 0);
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(held_by(l, a.owner), 1);
    assert_int_equal(dlock_remain_ttl(l, &ttl), 0);
    assert_true(ttl > 0 && ttl <= fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
    assert_int_equal(dlock_force_unlock(other, NULL), 0);
    assert_int_equal(dlock_fx_wait_lost(fx, 1, 4 * fx->watchdog_ms), 1);
    snprintf(owner, sizeof owner, "%s", a.owner);
    memset(&a, 0, sizeof(a));
    assert_int_equal(dlock_unlock_async(lp, NULL, l, owner, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, DLOCK_ELOST); /* as a blocking unlock says */
}

/* A timed wait ends with DLOCK_ETIMEDOUT at its wait (exactly, on the
 * virtual clock), leaving the lock to its holder. */
static void async_try_lock_times_out(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = loop(fx, fx->c1);
    int64_t wait = fx->is_mock ? 5000 : 300, start;
    seen a = {0};

    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    start = fx->is_mock ? dlock_fx_now(fx) : dlock_fx_real_ms();
    assert_int_equal(dlock_lock_async(lp, NULL, l1, NULL, wait, 0, on_done, &a), 0);
    assert_int_equal(dlock_loop_run(lp, 0), 0);
    if (fx->is_mock) {
        assert_int_equal(dlock_loop_timeout_ms(lp), wait);
        dlock_fx_advance(fx, wait - 1);
        run_idle(fx, lp, &a, 0);
        dlock_fx_advance(fx, 1);
    }
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, DLOCK_ETIMEDOUT);
    if (fx->is_mock)
        assert_int_equal(dlock_fx_now(fx) - start, wait);
    else
        assert_true(dlock_fx_real_ms() - start >= wait);
    assert_int_equal(held_by(l2, fx->owner2), 1);
    /* wait 0: one attempt */
    memset(&a, 0, sizeof(a));
    assert_int_equal(dlock_lock_async(lp, NULL, l1, NULL, 0, 0, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* A cancelled wait ends with DLOCK_ECANCELED and leaves nothing behind: on
 * a fair lock, no queue place blocks the next acquirer. Cancelling what is
 * done, or an unknown id, is refused. */
static void async_cancel_leaves_nothing(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *f1 = NULL, *f2 = NULL;
    dlock_loop *lp = loop(fx, fx->c1);
    seen a = {0};
    dlock_op_id op = 0;

    assert_int_equal(dlock_fair_new(&f1, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, f1, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_fair_new(&f2, fx->c2, fx->name), 0);
    dlock_fx_keep(fx, f2, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(f2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, &op, f1, "queued", DLOCK_WAIT_FOREVER, 0,
                                      on_done, &a), 0);
    run_idle(fx, lp, &a, 0);
    assert_int_equal(dlock_op_cancel(lp, op), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, DLOCK_ECANCELED);
    assert_int_equal(dlock_op_cancel(lp, op), DLOCK_EINVAL);
    assert_int_equal(dlock_op_cancel(lp, 987654), DLOCK_EINVAL);
    assert_int_equal(dlock_op_cancel(NULL, op), DLOCK_EINVAL);
    /* the queue is empty: after the release, another owner gets it at once */
    assert_int_equal(dlock_unlock(f2), 0);
    assert_int_equal(dlock_try_lock_as(f2, "next", 0, 0), 0);
    assert_int_equal(dlock_unlock_as(f2, "next"), 0);
    run_idle(fx, lp, &a, 1);
}

/* Inside a callback a blocking call is DLOCK_EDEADLK; starting another
 * operation works. */
static void chain_unlock(void *arg, dlock_op_id op, const dlock_result *r);

typedef struct chain {
    dlock_loop *lp;
    dlock_rlock *l;
    seen first, second;
    int start_rc;
} chain;

static void chain_lock(void *arg, dlock_op_id op, const dlock_result *r)
{
    chain *c = arg;

    on_done(&c->first, op, r);
    c->start_rc = dlock_unlock_async(c->lp, NULL, c->l, "chained", chain_unlock, c);
}

static void chain_unlock(void *arg, dlock_op_id op, const dlock_result *r)
{
    chain *c = arg;

    on_done(&c->second, op, r);
}

static void async_callback_rules(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_loop *lp = loop(fx, fx->c1);
    chain c = {0};
    seen a = {0};

    a.probe = l;
    a.probe_rc = 1;
    assert_int_equal(dlock_is_locked_async(lp, NULL, l, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.value, 0);
    assert_int_equal(a.probe_rc, DLOCK_EDEADLK);
    assert_non_null(strstr(dlock_errmsg(l), "callback"));

    c.lp = lp;
    c.l = l;
    assert_int_equal(dlock_lock_async(lp, NULL, l, "chained", 0, 0, chain_lock, &c), 0);
    run_until(fx, lp, &c.second, 1);
    assert_int_equal(c.first.rc, 0);
    assert_int_equal(c.start_rc, 0);
    assert_int_equal(c.second.calls, 1);
    assert_int_equal(c.second.rc, 0);
    assert_int_equal(held_by(l, "chained"), 0);
    /* outside callbacks, blocking calls work again */
    assert_int_equal(dlock_try_lock(l, 0, 0), 0);
    assert_int_equal(dlock_unlock(l), 0);
}

/* dlock_loop_free ends pending waits with DLOCK_ECANCELED, their callbacks
 * run inside it, and nothing stays queued or held. */
static void async_free_ends_waits(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = NULL;
    seen a = {0};

    assert_int_equal(dlock_loop_new(&lp, fx->c1, NULL), 0);
    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, "w", DLOCK_WAIT_FOREVER, 0, on_done, &a),
                     0);
    run_idle(fx, lp, &a, 0);
    dlock_loop_free(lp);
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, DLOCK_ECANCELED);
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(held_by(l1, "w"), 0);
    /* a loop freed with nothing pending, and NULL */
    assert_int_equal(dlock_loop_new(&lp, fx->c1, NULL), 0);
    dlock_loop_free(lp);
    dlock_loop_free(NULL);
}

/* Starters refuse bad arguments at once and never call back. */
static void async_bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_loop *lp = loop(fx, fx->c1), *nl = (dlock_loop *)&nl;
    dlock_loop_hooks hooks = {0};
    char big[DLOCK_OWNER_MAX + 8];
    seen a = {0};

    assert_int_equal(dlock_loop_new(NULL, fx->c1, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_loop_new(&nl, NULL, NULL), DLOCK_EINVAL);
    assert_null(nl);
    assert_int_equal(dlock_loop_new(&nl, fx->c1, &hooks), DLOCK_EINVAL); /* version 0 */
    assert_null(nl);
    assert_int_equal(dlock_lock_async(NULL, NULL, l, NULL, 0, 0, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_async(lp, NULL, NULL, NULL, 0, 0, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, 0, 0, NULL, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, -5, 0, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, 0, -1, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "", 0, 0, on_done, &a), DLOCK_EINVAL);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(dlock_lock_async(lp, NULL, l, big, 0, 0, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, big, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_extend_async(lp, NULL, l, NULL, -1, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_acquire_async(lp, NULL, NULL, 1, 0, on_done, &a),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_release_async(lp, NULL, NULL, "x", on_done, &a),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_latch_await_async(lp, NULL, NULL, 0, on_done, &a), DLOCK_EINVAL);
    assert_int_equal(dlock_loop_run(NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_loop_fd(NULL), -1);
    assert_int_equal(dlock_loop_timeout_ms(NULL), -1);
    assert_int_equal(dlock_loop_pending(lp), 0);
    assert_int_equal(dlock_loop_timeout_ms(lp), -1);
    run_idle(fx, lp, &a, 0);
    assert_int_equal(held_by(l, fx->owner1), 0);
}

/* Semaphores, permit semaphores, latches and fencing tokens. */
static void free_sem(void *s) { dlock_semaphore_free(s); }
static void free_permits(void *p) { dlock_permit_semaphore_free(p); }
static void free_latch(void *l) { dlock_latch_free(l); }

static void async_other_objects(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_loop *lp = loop(fx, fx->c1);
    dlock_semaphore *s = NULL;
    dlock_permit_semaphore *p = NULL;
    dlock_latch *la = NULL;
    dlock_rlock *f = NULL;
    char name[160];
    seen a = {0}, b = {0}, c = {0};
    int set = 0;
    int64_t first;

    snprintf(name, sizeof(name), "%s:sem", fx->name);
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, name), 0);
    dlock_fx_keep(fx, s, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 1), 0);
    assert_int_equal(dlock_semaphore_acquire_async(lp, NULL, s, 1, DLOCK_WAIT_FOREVER,
                                                   on_done, &a), 0);
    assert_int_equal(dlock_semaphore_acquire_async(lp, NULL, s, 1, DLOCK_WAIT_FOREVER,
                                                   on_done, &b), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, 0);
    run_idle(fx, lp, &b, 0);
    assert_int_equal(dlock_semaphore_release_async(lp, NULL, s, 1, on_done, &c), 0);
    run_until(fx, lp, &b, 1);
    assert_int_equal(c.rc, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(dlock_semaphore_release(s, 1), 0);

    snprintf(name, sizeof(name), "%s:permits", fx->name);
    assert_int_equal(dlock_permit_semaphore_new(&p, fx->c1, name), 0);
    dlock_fx_keep(fx, p, free_permits);
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, &set, 2), 0);
    memset(&a, 0, sizeof(a));
    assert_int_equal(dlock_permit_semaphore_acquire_async(lp, NULL, p, 2, 0,
                                                          fx->long_lease_ms, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.value, 2);
    assert_non_null(a.ids);
    assert_non_null(a.ids[0]);
    assert_non_null(a.ids[1]);
    assert_null(a.ids[2]);
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_permit_semaphore_release_async(lp, NULL, p, a.ids[0], on_done, &b),
                     0);
    run_until(fx, lp, &b, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(dlock_permit_semaphore_release(p, a.ids[1]), 0);
    dlock_permit_ids_free(a.ids);
    /* A permit semaphore's wait keeps its fiber (its ids are drawn per
     * call and a retry resends them): pending while both permits are
     * taken, granted by one release. */
    memset(&a, 0, sizeof(a));
    assert_int_equal(dlock_permit_semaphore_acquire_async(lp, NULL, p, 2, 0,
                                                          fx->long_lease_ms, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, 0);
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_permit_semaphore_acquire_async(lp, NULL, p, 1, DLOCK_WAIT_FOREVER,
                                                          fx->long_lease_ms, on_done, &b), 0);
    run_idle(fx, lp, &b, 0);
    assert_int_equal(dlock_permit_semaphore_release(p, a.ids[0]), 0);
    run_until(fx, lp, &b, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.value, 1);
    assert_non_null(b.ids);
    assert_int_equal(dlock_permit_semaphore_release(p, a.ids[1]), 0);
    assert_int_equal(dlock_permit_semaphore_release(p, b.ids[0]), 0);
    dlock_permit_ids_free(a.ids);
    dlock_permit_ids_free(b.ids);

    snprintf(name, sizeof(name), "%s:latch", fx->name);
    assert_int_equal(dlock_latch_new(&la, fx->c1, name), 0);
    dlock_fx_keep(fx, la, free_latch);
    assert_int_equal(dlock_latch_try_set_count(la, &set, 1), 0);
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_latch_await_async(lp, NULL, la, DLOCK_WAIT_FOREVER, on_done, &a), 0);
    run_idle(fx, lp, &a, 0);
    assert_int_equal(dlock_latch_count_down_async(lp, NULL, la, on_done, &b), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(a.rc, 0);

    snprintf(name, sizeof(name), "%s:fenced", fx->name);
    assert_int_equal(dlock_fenced_new(&f, fx->c1, name), 0);
    dlock_fx_keep(fx, f, (void (*)(void *))dlock_rlock_free);
    memset(&a, 0, sizeof(a));
    assert_int_equal(dlock_fenced_lock_async(lp, NULL, f, NULL, 0, 0, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_int_equal(a.rc, 0);
    assert_true(a.value > 0);
    first = a.value;
    assert_int_equal(dlock_unlock_as(f, a.owner), 0);
    memset(&a, 0, sizeof(a));
    assert_int_equal(dlock_fenced_lock_async(lp, NULL, f, NULL, 0, 0, on_done, &a), 0);
    run_until(fx, lp, &a, 1);
    assert_true(a.value > first);
    /* the reads */
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_hold_count_async(lp, NULL, f, a.owner, on_done, &b), 0);
    run_until(fx, lp, &b, 1);
    assert_int_equal(b.value, 1);
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_remain_ttl_async(lp, NULL, f, on_done, &b), 0);
    run_until(fx, lp, &b, 1);
    assert_true(b.value > 0);
    memset(&b, 0, sizeof(b));
    assert_int_equal(dlock_force_unlock_async(lp, NULL, f, on_done, &b), 0);
    run_until(fx, lp, &b, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.value, 1);
}

/* Many waits on one loop thread, all woken when their holders release. */
#define MANY 64

/* The case's locks, freed together by teardown. */
typedef struct many_locks {
    dlock_rlock *mine[MANY], *theirs[MANY];
    /* their callbacks' records: with the locks, not on the test's stack,
     * and the loop is made after them (so freed first at teardown): a
     * failed assertion leaves nothing pending that points at freed memory */
    seen s[MANY];
} many_locks;

static void free_many(void *arg)
{
    many_locks *m = arg;
    int i;

    for (i = 0; i < MANY; i++) {
        dlock_rlock_free(m->mine[i]);
        dlock_rlock_free(m->theirs[i]);
    }
    free(m);
}

static void async_many_waits(void **state)
{
    dlock_fx *fx = BEGIN(state);
    many_locks *m = calloc(1, sizeof(*m));
    dlock_loop *lp;
    seen *s;
    int i, total;
    int64_t end;

    assert_non_null(m);
    dlock_fx_keep(fx, m, free_many);
    lp = loop(fx, fx->c1);
    s = m->s;
    for (i = 0; i < MANY; i++) {
        char name[160];

        snprintf(name, sizeof(name), "%s:%d", fx->name, i);
        assert_int_equal(dlock_reentrant_new(&m->mine[i], fx->c1, name), 0);
        assert_int_equal(dlock_reentrant_new(&m->theirs[i], fx->c2, name), 0);
        assert_int_equal(dlock_lock(m->theirs[i], HOLDER_LEASE_MS), 0);
        assert_int_equal(dlock_lock_async(lp, NULL, m->mine[i], NULL, DLOCK_WAIT_FOREVER, 0,
                                          on_done, &s[i]), 0);
    }
    run_idle(fx, lp, &s[0], 0);
    assert_int_equal(dlock_loop_pending(lp), MANY);
    for (i = 0; i < MANY; i++)
        assert_int_equal(dlock_unlock(m->theirs[i]), 0);
    end = dlock_fx_real_ms() + REDIS_WAIT_MS;
    do {
        assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 20) >= 0);
    } while (dlock_loop_pending(lp) > 0 && dlock_fx_real_ms() < end);
    for (i = 0, total = 0; i < MANY; i++) {
        total += s[i].calls;
        assert_int_equal(s[i].rc, 0);
        assert_int_equal(held_by(m->mine[i], s[i].owner), 1);
        assert_int_equal(dlock_unlock_as(m->mine[i], s[i].owner), 0);
    }
    assert_int_equal(total, MANY);
}

/* Acquisitions of one reentrant lock started together on one loop with
 * the defaults (owner NULL, lease 0, no wait limit): one holds it at a
 * time. A holder keeps the lock from its grant's callback until the case
 * starts its unlock, after the run that granted it; at most one is ever
 * inside. Before, every acquisition had the starting thread's owner id:
 * the first run granted them all (a reentrant hold each) and all were
 * inside at once. */
#define CONCURRENT 16

typedef struct cs_req {
    struct cs *cs;
    int granted, released, unlocked;
    char owner[DLOCK_OWNER_MAX];
} cs_req;

typedef struct cs {
    cs_req req[CONCURRENT];
    int inside, max_inside, grants, unlocks, bad;
} cs;

static void cs_locked(void *arg, dlock_op_id op, const dlock_result *r)
{
    cs_req *q = arg;

    (void)op;
    if (r->rc != 0 || !r->owner) {
        q->cs->bad++;
        return;
    }
    q->granted = 1;
    snprintf(q->owner, sizeof q->owner, "%s", r->owner);
    q->cs->grants++;
    if (++q->cs->inside > q->cs->max_inside)
        q->cs->max_inside = q->cs->inside;
}

static void cs_unlocked(void *arg, dlock_op_id op, const dlock_result *r)
{
    cs_req *q = arg;

    (void)op;
    q->unlocked = 1;
    q->cs->unlocks++;
    if (r->rc != 0)
        q->cs->bad++;
}

/* Runs lp until the first n requests of c have let go (or until end, or
 * a failure): after each run, what it granted leaves the critical
 * section, then lets go. */
static void cs_drain(dlock_fx *fx, dlock_loop *lp, dlock_rlock *l, cs *c, int n, int64_t end)
{
    int i;

    while (c->unlocks < n && c->bad == 0 && dlock_fx_real_ms() < end) {
        if (fx->is_mock)
            run_due_all(lp);
        else
            assert_true(dlock_loop_run(lp, 20) >= 0);
        for (i = 0; i < n; i++) {
            cs_req *q = &c->req[i];

            if (!q->granted || q->released)
                continue;
            q->released = 1;
            c->inside--;
            assert_int_equal(dlock_unlock_async(lp, NULL, l, q->owner, cs_unlocked, q), 0);
        }
    }
}

static void async_defaults_never_share_a_hold(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = NULL;
    /* kept before the loop, which teardown frees first */
    cs *c = dlock_fx_keep(fx, calloc(1, sizeof(cs)), free);
    dlock_loop *lp;
    int64_t end = dlock_fx_real_ms() + 4 * REDIS_WAIT_MS;
    int i, j;

    assert_non_null(c);
    assert_int_equal(dlock_reentrant_new(&l, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    lp = loop(fx, fx->c1);
    for (i = 0; i < CONCURRENT; i++) {
        c->req[i].cs = c;
        assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, DLOCK_WAIT_FOREVER, 0,
                                          cs_locked, &c->req[i]), 0);
    }
    cs_drain(fx, lp, l, c, CONCURRENT, end);
    if (c->max_inside != 1)
        print_message("max inside the critical section: %d of %d\n", c->max_inside,
                      CONCURRENT);
    assert_int_equal(c->bad, 0);
    assert_int_equal(c->grants, CONCURRENT);
    assert_int_equal(c->unlocks, CONCURRENT);
    assert_int_equal(c->max_inside, 1);
    /* every acquisition had an owner id of its own */
    for (i = 0; i < CONCURRENT; i++)
        for (j = i + 1; j < CONCURRENT; j++)
            assert_int_not_equal(strcmp(c->req[i].owner, c->req[j].owner), 0);
    assert_int_equal(dlock_loop_pending(lp), 0);
}

/* Back-pressure: with the loop's cap lowered to CAP, a holder's lock and
 * CAP waits behind it fill the loop; the next starter (an acquisition, a
 * read) is refused at once with DLOCK_EAGAIN and starts nothing, while
 * the holder's unlock still starts and runs, and the first waiter is
 * granted; as each waiter lets go the next is granted, to the last. The
 * issue's wedge at a small scale: before, every starter said 0, the
 * excess failed later in callbacks (DLOCK_ENOMEM, the holder's unlock
 * among them) and the waits were never granted. */
#define CAP 8

static void async_cap_refuses_at_once(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = NULL;
    cs *c = dlock_fx_keep(fx, calloc(1, sizeof(cs)), free);
    seen *h = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    seen *u = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    seen *late = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    dlock_loop *lp;
    int64_t end = dlock_fx_real_ms() + 4 * REDIS_WAIT_MS;
    int i;

    assert_non_null(c);
    assert_int_equal(dlock_reentrant_new(&l, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    lp = loop(fx, fx->c1);
    assert_true(dlock_loop_max_in_flight(lp) >= 256); /* the default */
    assert_int_equal(dlock_loop_set_max_in_flight(NULL, CAP), DLOCK_EINVAL);
    assert_int_equal(dlock_loop_set_max_in_flight(lp, CAP), 0);
    assert_int_equal(dlock_loop_max_in_flight(lp), CAP);

    /* the holder, then CAP waits behind it: the loop is full */
    assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, DLOCK_WAIT_FOREVER, HOLDER_LEASE_MS,
                                      on_done, h), 0);
    run_until(fx, lp, h, 1);
    assert_int_equal(h->rc, 0);
    for (i = 0; i < CAP; i++) {
        c->req[i].cs = c;
        assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, DLOCK_WAIT_FOREVER, 0,
                                          cs_locked, &c->req[i]), 0);
    }
    run_idle(fx, lp, h, 1);
    assert_int_equal(c->grants, 0);
    assert_int_equal(dlock_loop_pending(lp), CAP);

    /* one more is refused now, not in a callback later */
    assert_int_equal(dlock_lock_async(lp, NULL, l, NULL, DLOCK_WAIT_FOREVER, 0, on_done, late),
                     DLOCK_EAGAIN);
    assert_int_equal(dlock_is_locked_async(lp, NULL, l, on_done, late), DLOCK_EAGAIN);
    assert_int_equal(dlock_loop_pending(lp), CAP);

    /* the holder can still let go, and the first waiter gets it */
    assert_int_equal(dlock_unlock_async(lp, NULL, l, h->owner, on_done, u), 0);
    assert_int_equal(dlock_loop_pending(lp), CAP + 1);
    while (c->grants == 0 && dlock_fx_real_ms() < end)
        if (fx->is_mock)
            run_due_all(lp);
        else
            assert_true(dlock_loop_run(lp, 20) >= 0);
    assert_int_equal(u->calls, 1);
    assert_int_equal(u->rc, 0);
    assert_int_equal(c->grants, 1);
    /* a callback came: there is room again */
    assert_int_equal(dlock_is_locked_async(lp, NULL, l, on_done, late), 0);

    /* the rest, one after the other */
    cs_drain(fx, lp, l, c, CAP, end);
    assert_int_equal(c->bad, 0);
    assert_int_equal(c->grants, CAP);
    assert_int_equal(c->unlocks, CAP);
    assert_int_equal(c->max_inside, 1);
    run_until(fx, lp, late, 1);
    assert_int_equal(late->calls, 1);
    assert_int_equal(dlock_loop_pending(lp), 0);
    assert_int_equal(dlock_loop_set_max_in_flight(lp, 0), 0);
    assert_true(dlock_loop_max_in_flight(lp) >= 256);
}

/* Lifetimes: freeing an object while operations on it are pending is
 * allowed and safe: the object lives until their callbacks have run; its
 * waits end with DLOCK_ECANCELED, its other operations complete. Before,
 * the parked wait read the freed handle (AddressSanitizer:
 * heap-use-after-free in wait.c's canceled()). */
static void async_free_keeps_object_alive(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_rlock *l1 = NULL;
    dlock_semaphore *sem = NULL;
    char name[160];
    /* kept before the loop, which teardown frees first */
    seen *a = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    seen *r = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    seen *s = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    dlock_loop *lp = loop(fx, fx->c1);

    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_reentrant_new(&l1, fx->c1, fx->name), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, NULL, DLOCK_WAIT_FOREVER, 0, on_done, a),
                     0);
    snprintf(name, sizeof name, "%s:sem", fx->name);
    assert_int_equal(dlock_semaphore_new(&sem, fx->c1, name), 0);
    assert_int_equal(dlock_semaphore_acquire_async(lp, NULL, sem, 1, DLOCK_WAIT_FOREVER,
                                                   on_done, s), 0);
    run_idle(fx, lp, a, 0); /* both waits parked */
    assert_int_equal(s->calls, 0);
    assert_int_equal(dlock_is_locked_async(lp, NULL, l1, on_done, r), 0);
    /* freed with a parked wait and a read in flight */
    dlock_rlock_free(l1);
    dlock_semaphore_free(sem);
    run_until(fx, lp, a, 1);
    run_until(fx, lp, r, 1);
    run_until(fx, lp, s, 1);
    assert_int_equal(a->calls, 1);
    assert_int_equal(a->rc, DLOCK_ECANCELED);
    assert_non_null(strstr(a->detail, "freed"));
    assert_int_equal(r->calls, 1);
    assert_int_equal(r->rc, 0);
    assert_int_equal(r->value, 1);
    assert_int_equal(s->calls, 1);
    assert_int_equal(s->rc, DLOCK_ECANCELED);
    assert_int_equal(dlock_loop_pending(lp), 0);
    /* the holder's lock is untouched; the wait left nothing behind */
    assert_int_equal(held_by(l2, fx->owner2), 1);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* A wait's budget counts from its starter, not from when the loop first
 * ran it: a loop busy for most of the budget (here: not run at all for
 * LATE ms) does not stretch the wait. Before, the callback came LATE ms
 * after the budget. */
#define LATE_MS 600

static void async_budget_from_starter(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    /* kept before the loop, which teardown frees first (it may still
     * call back after a failed assertion) */
    seen *a = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    dlock_loop *lp = loop(fx, fx->c1);
    int64_t wait = 1000, t0;
    char want[64];

    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    t0 = dlock_fx_real_ms();
    assert_int_equal(dlock_lock_async(lp, NULL, l1, NULL, wait, 0, on_done, a), 0);
    dlock_fx_advance(fx, LATE_MS); /* the loop is busy elsewhere */
    if (fx->is_mock) {
        run_idle(fx, lp, a, 0); /* the first attempt: refused */
        dlock_fx_advance(fx, wait - LATE_MS);
        run_until(fx, lp, a, 1);
    } else {
        run_until(fx, lp, a, 1);
        /* within the budget and its slack, never the budget after the
         * loop's first run (LATE_MS + wait) */
        assert_true(dlock_fx_real_ms() - t0 < LATE_MS + wait);
    }
    assert_int_equal(a->calls, 1);
    assert_int_equal(a->rc, DLOCK_ETIMEDOUT);
    snprintf(want, sizeof want, "waited %lld ms", (long long)wait);
    assert_non_null(strstr(a->detail, want));
    assert_int_equal(dlock_unlock(l2), 0);
}

/* Each operation's detail is its own: N fair waits on one lock time out
 * in the same run, and (on Redis) each one's give-up round trip lets the
 * others run and write the object's shared detail before its callback:
 * before, every callback but the last named another wait. */
#define FAIR_WAITS 8

static void async_details_are_their_own(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *f1 = NULL, *f2 = NULL;
    seen *s = dlock_fx_keep(fx, calloc(FAIR_WAITS, sizeof(seen)), free); /* as above */
    dlock_loop *lp = loop(fx, fx->c1);
    int64_t base = 1000, step = 10;
    int i, total = 0;

    assert_int_equal(dlock_fair_new(&f1, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, f1, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_fair_new(&f2, fx->c2, fx->name), 0);
    dlock_fx_keep(fx, f2, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(f2, HOLDER_LEASE_MS), 0);
    for (i = 0; i < FAIR_WAITS; i++) {
        char owner[32];

        snprintf(owner, sizeof owner, "waiter-%d", i);
        assert_int_equal(dlock_lock_async(lp, NULL, f1, owner, base + i * step, 0, on_done,
                                          &s[i]), 0);
    }
    /* Every wait makes its first attempt and sleeps; then the loop is not
     * run until every budget has run out, so that all end in one run. */
    run_idle(fx, lp, &s[0], 0);
    dlock_fx_advance(fx, base + FAIR_WAITS * step);
    if (fx->is_mock) {
        run_due_all(lp);
    } else {
        int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;

        while (dlock_loop_pending(lp) > 0 && dlock_fx_real_ms() < end)
            assert_true(dlock_loop_run(lp, 20) >= 0);
    }
    for (i = 0; i < FAIR_WAITS; i++) {
        char want[64];

        total += s[i].calls;
        assert_int_equal(s[i].rc, DLOCK_ETIMEDOUT);
        snprintf(want, sizeof want, "waited %lld ms", (long long)(base + i * step));
        if (!strstr(s[i].detail, want))
            print_message("wait %d: \"%s\", not its own (%s)\n", i, s[i].detail, want);
        assert_non_null(strstr(s[i].detail, want));
    }
    assert_int_equal(total, FAIR_WAITS);
    assert_int_equal(dlock_unlock(f2), 0);
}

/* One run does one slice (the client's loop_slice_ms, 2 ms by default)
 * and leaves the rest with the loop's fd readable: thousands of operations
 * due at once do not hold the application's loop up until all are done. On
 * the mock they are all due at once (no round trip waits on a socket), and
 * far more than a slice's worth. */
#define SLICED 5000

static void async_run_is_a_slice(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, fx->name);
    /* kept before the loop, which teardown frees first (it may still
     * call back after a failed assertion) */
    seen *s = dlock_fx_keep(fx, calloc(1, sizeof(seen)), free);
    dlock_loop *lp = loop(fx, fx->c1);
    /* On Redis, where round trips spread the operations over many runs
     * anyway, fewer: it checks only that they all end (a sanitizer build
     * on a loaded machine once took more than 5 s for 500). */
    int i, n, many = fx->is_mock ? SLICED : SLICED / 100;

    for (i = 0; i < many; i++)
        assert_int_equal(dlock_is_locked_async(lp, NULL, l, on_done, s), 0);
    if (fx->is_mock) {
        struct pollfd p = {dlock_loop_fd(lp), POLLIN, 0};

        n = dlock_loop_run(lp, 0);
        assert_true(n > 0 && n < SLICED);
        assert_int_equal(s->calls, n);
        assert_int_equal(dlock_loop_pending(lp), (size_t)(SLICED - n));
        /* the rest is due now, and the fd says so */
        assert_int_equal(dlock_loop_timeout_ms(lp), 0);
        assert_int_equal(poll(&p, 1, 0), 1);
        run_due_all(lp);
        p.revents = 0;
        assert_int_equal(poll(&p, 1, 0), 0);
    } else {
        run_until(fx, lp, s, many);
    }
    assert_int_equal(s->calls, many);
    assert_int_equal(s->rc, 0);
    assert_int_equal(dlock_loop_pending(lp), 0);
}

/* A wait whose budget ended is called back before the work that became
 * ready meanwhile: its timer, due in the same run as a crowd of new
 * operations (far more than one slice can take), goes first, and so does
 * its callback. Before, due timers queued behind every ready and new
 * operation: the wait was called back after all 2 000 on the mock, after
 * 191 of 500 on Redis; now after none. */
#define CROWD 2000

typedef struct crowd {
    int calls, failed;
    int before_wait; /* the crowd's callbacks before the wait's (-1: none) */
    seen wait;
} crowd;

static void crowd_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    crowd *c = arg;

    (void)op;
    c->calls++;
    c->failed += r->rc != 0;
}

static void crowd_wait_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    crowd *c = arg;

    c->before_wait = c->calls;
    on_done(&c->wait, op, r);
}

static void async_spent_budgets_go_first(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    /* kept before the loop, which teardown frees first (it may still
     * call back after a failed assertion) */
    crowd *c = dlock_fx_keep(fx, calloc(1, sizeof(crowd)), free);
    dlock_loop *lp = loop(fx, fx->c1);
    /* On Redis each start and reply costs more: fewer still fill many
     * slices. */
    int i, many = fx->is_mock ? CROWD : CROWD / 4;
    int64_t wait = fx->is_mock ? 1000 : 300, end;

    c->before_wait = -1;
    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, NULL, wait, 0, crowd_wait_done, c), 0);
    run_idle(fx, lp, &c->wait, 0); /* its first attempt: refused, it sleeps */
    dlock_fx_advance(fx, wait);    /* its budget is spent */
    for (i = 0; i < many; i++)
        assert_int_equal(dlock_is_locked_async(lp, NULL, l1, crowd_done, c), 0);
    end = dlock_fx_real_ms() + 4 * REDIS_WAIT_MS;
    while (dlock_loop_pending(lp) > 0 && dlock_fx_real_ms() < end)
        assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 20) >= 0);
    assert_int_equal(c->wait.calls, 1);
    assert_int_equal(c->wait.rc, DLOCK_ETIMEDOUT);
    assert_int_equal(c->calls, many);
    assert_int_equal(c->failed, 0);
    if (c->before_wait >= many / 10)
        print_message("the timed-out wait was called back after %d of %d new operations\n",
                      c->before_wait, many);
    assert_true(c->before_wait >= 0 && c->before_wait < many / 10);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* ---- hook mode and the loop's own thread ----------------------------------------- */

/* A loop of the test's own, on poll(): the hooks record what dlock asks. */
typedef struct mini_loop {
    int read_fd;     /* the fd dlock asked to watch, or -1 */
    int64_t timer;   /* ms asked for, or -1 */
    int timer_calls, cleanups;
} mini_loop;

static void ml_add_read(void *d, int fd) { ((mini_loop *)d)->read_fd = fd; }
static void ml_del_read(void *d, int fd) { (void)fd; ((mini_loop *)d)->read_fd = -1; }
static void ml_timer(void *d, int64_t ms)
{
    ((mini_loop *)d)->timer = ms;
    ((mini_loop *)d)->timer_calls++;
}
static void ml_cleanup(void *d) { ((mini_loop *)d)->cleanups++; }

/* One turn of the test's loop: poll the watched fd (up to wait_ms real
 * ms), then call dlock back as a real loop would. */
static void ml_turn(dlock_loop *lp, mini_loop *ml, int wait_ms)
{
    struct pollfd p = {ml->read_fd, POLLIN, 0};

    if (poll(&p, 1, wait_ms) > 0)
        dlock_loop_on_fd(lp, ml->read_fd, DLOCK_LOOP_READ);
    if (ml->timer == 0) {
        ml->timer = -1;
        dlock_loop_on_timer(lp);
    }
}

static void async_hook_mode(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    mini_loop ml = {-1, -1, 0, 0};
    dlock_loop_hooks hooks = {DLOCK_LOOP_HOOKS_VERSION, &ml, ml_add_read, ml_del_read,
                              NULL, NULL, ml_timer, NULL, ml_cleanup};
    dlock_loop *lp = NULL;
    int64_t wait = fx->is_mock ? 4000 : 300, end;
    seen a = {0};

    assert_int_equal(dlock_loop_new(&lp, fx->c1, &hooks), 0);
    assert_true(ml.read_fd >= 0); /* no wakeup hook: dlock's own fd */
    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, NULL, wait, 0, on_done, &a), 0);
    /* Turns until the attempt's reply is in and the wait sleeps (on Redis
     * the attempt's round trip is itself a wait on the socket, through
     * the watched fd, with the call's deadline as its timer). */
    end = dlock_fx_real_ms() + REDIS_WAIT_MS;
    do
        ml_turn(lp, &ml, 1000);
    while (!fx->is_mock && !(ml.timer > 0 && ml.timer <= wait) &&
           a.calls == 0 && dlock_fx_real_ms() < end);
    assert_int_equal(a.calls, 0);
    /* the wait asked for its timer */
    assert_true(ml.timer_calls >= 1);
    assert_true(ml.timer > 0 && ml.timer <= wait);
    if (fx->is_mock) {
        dlock_fx_advance(fx, wait);
        dlock_loop_on_timer(lp);
    } else {
        end = dlock_fx_real_ms() + REDIS_WAIT_MS;
        while (a.calls == 0 && dlock_fx_real_ms() < end) {
            ml_turn(lp, &ml, 20);
            if (ml.timer >= 0 && ml.timer <= wait) {
                dlock_fx_sleep_real(ml.timer);
                ml.timer = -1;
                dlock_loop_on_timer(lp);
            }
        }
    }
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_unlock(l2), 0);
    dlock_loop_free(lp);
    assert_int_equal(ml.read_fd, -1);
    assert_int_equal(ml.cleanups, 1);
}

/* dlock's own thread: callbacks on that thread. */
typedef struct threaded {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    seen s;
} threaded;

static void on_done_threaded(void *arg, dlock_op_id op, const dlock_result *r)
{
    threaded *t = arg;

    pthread_mutex_lock(&t->mu);
    on_done(&t->s, op, r);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static int threaded_wait(threaded *t, int calls)
{
    int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;
    int got;

    pthread_mutex_lock(&t->mu);
    while (t->s.calls < calls && dlock_fx_real_ms() < end) {
        pthread_mutex_unlock(&t->mu);
        dlock_fx_sleep_real(5);
        pthread_mutex_lock(&t->mu);
    }
    got = t->s.calls;
    pthread_mutex_unlock(&t->mu);
    return got;
}

static void free_threaded(void *p)
{
    threaded *t = p;

    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The record and the loop live with the case (kept): a failed assertion
 * leaves through teardown, which frees the loop (its thread may still
 * call back into the record) before the record. */
static void async_own_thread(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    threaded *t = calloc(1, sizeof(*t));
    dlock_loop *lp = NULL;

    assert_non_null(t);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    dlock_fx_keep(fx, t, free_threaded);
    assert_int_equal(dlock_loop_new_thread(&lp, fx->c1), 0);
    dlock_fx_keep(fx, lp, free_loop);
    assert_int_equal(dlock_loop_run(lp, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, "t", DLOCK_WAIT_FOREVER, 0,
                                      on_done_threaded, t), 0);
    dlock_fx_sleep_real(fx->is_mock ? 20 : 100);
    assert_int_equal(threaded_wait(t, 0), 0);
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(threaded_wait(t, 1), 1);
    assert_int_equal(t->s.rc, 0);
    assert_false(pthread_equal(t->s.thread, pthread_self()));
    assert_int_equal(held_by(l1, "t"), 1);
    assert_int_equal(dlock_unlock_as(l1, "t"), 0);
    dlock_fx_unkeep(fx, lp);
    dlock_loop_free(lp);
}

/* ---- the group ----------------------------------------------------------- */

/* ---- waits without a stack (objects/runtime/wait.c, "Parked waits") ------------ */

/* Runs lp until nothing is pending (Redis: up to REDIS_WAIT_MS). */
static void run_empty(dlock_fx *fx, dlock_loop *lp)
{
    int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;

    do
        assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 20) >= 0);
    while (dlock_loop_pending(lp) > 0 && dlock_fx_real_ms() < end);
}

static int spin_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return dlock_spin_lock_new(out, c, name, NULL);
}

/* The lock types whose waits park (their wait specs are movable). */
static int (*const parked_make[])(dlock_rlock **, dlock_client *, const char *) = {
    dlock_reentrant_new, dlock_rwlock_write_new, dlock_rwlock_read_new,
    dlock_semaphore_lock_new, dlock_fair_new, dlock_fenced_new, dlock_simple_lock_new,
    spin_new};

#define PARKED_KINDS ((int)(sizeof parked_make / sizeof parked_make[0]))
#define KIND_READ 2
#define KIND_SEMAPHORE_LOCK 3
#define KIND_SPIN 7

/* A lock of kind k on c named name (kept by the case). */
static dlock_rlock *parked_lock(dlock_fx *fx, dlock_client *c, int k, const char *name)
{
    dlock_rlock *l = NULL;

    assert_int_equal(parked_make[k](&l, c, name), 0);
    return dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
}

/* What a kind's waiter waits for: a read half for a writer. */
static int holder_kind(int k)
{
    return k == KIND_READ ? 1 : k;
}

/* Sets up name for kind k: a semaphore lock gets one permit. */
static void parked_prepare(dlock_fx *fx, int k, const char *name)
{
    dlock_semaphore *sem = NULL;
    int set = 0;

    if (k != KIND_SEMAPHORE_LOCK)
        return;
    assert_int_equal(dlock_semaphore_new(&sem, fx->c2, name), 0);
    assert_int_equal(dlock_semaphore_try_set_permits(sem, &set, 1), 0);
    dlock_semaphore_free(sem);
    assert_int_equal(set, 1);
}

/* A spin lock polls: on the virtual clock, its next look comes when the
 * clock passes its pause (128 ms at most). */
static void let_pollers_look(dlock_fx *fx)
{
    if (fx->is_mock)
        dlock_fx_advance(fx, 200);
}

#define PARKED_OBJECTS 2 /* a semaphore's acquire and a latch's await */

/* Runs lp until at most most fibers are in use (a loaded machine's first
 * attempts may still be under way), up to REDIS_WAIT_MS. */
static void run_until_parked(dlock_fx *fx, dlock_loop *lp, size_t most)
{
    int64_t end = dlock_fx_real_ms() + REDIS_WAIT_MS;

    while (dlock__loop_fibers_in_use(lp) > most && dlock_fx_real_ms() < end)
        assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 20) >= 0);
}

/* A wait for every lock type whose wait spec is movable (reentrant,
 * either read-write half, semaphore lock, fair, fenced, simple, spin),
 * and a semaphore's acquire and a latch's await, held up elsewhere,
 * sleeps with no fiber of the loop (before: one stack per wait);
 * released, each is granted, called back once, and the loop's fibers
 * are all back. */
static void async_parked_waits_hold_no_fiber(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *mine[PARKED_KINDS], *theirs[PARKED_KINDS];
    /* the callbacks' records outlive this frame when an assertion fails
     * (the teardown frees the loop, which calls them back, first) */
    seen *s = dlock_fx_keep(fx, calloc(PARKED_KINDS + PARKED_OBJECTS, sizeof(seen)), free);
    dlock_loop *lp = loop(fx, fx->c1);
    dlock_semaphore *sem = NULL, *sem2 = NULL;
    dlock_latch *latch = NULL, *latch2 = NULL;
    char name[160];
    int k, set = 0;

    assert_non_null(s);
    for (k = 0; k < PARKED_KINDS; k++) {
        snprintf(name, sizeof name, "%s:%d", fx->name, k);
        parked_prepare(fx, k, name);
        mine[k] = parked_lock(fx, fx->c1, k, name);
        theirs[k] = parked_lock(fx, fx->c2, holder_kind(k), name);
        assert_int_equal(dlock_lock(theirs[k], HOLDER_LEASE_MS), 0);
        assert_int_equal(dlock_lock_async(lp, NULL, mine[k], NULL, DLOCK_WAIT_FOREVER, 0,
                                          on_done, &s[k]), 0);
    }
    /* a semaphore with no permit, a latch that counts one */
    snprintf(name, sizeof name, "%s:sem", fx->name);
    assert_int_equal(dlock_semaphore_new(&sem, fx->c1, name), 0);
    dlock_fx_keep(fx, sem, (void (*)(void *))dlock_semaphore_free);
    assert_int_equal(dlock_semaphore_new(&sem2, fx->c2, name), 0);
    dlock_fx_keep(fx, sem2, (void (*)(void *))dlock_semaphore_free);
    assert_int_equal(dlock_semaphore_try_set_permits(sem2, &set, 0), 0);
    assert_int_equal(dlock_semaphore_acquire_async(lp, NULL, sem, 1, DLOCK_WAIT_FOREVER,
                                                   on_done, &s[PARKED_KINDS]), 0);
    snprintf(name, sizeof name, "%s:latch", fx->name);
    assert_int_equal(dlock_latch_new(&latch, fx->c1, name), 0);
    dlock_fx_keep(fx, latch, (void (*)(void *))dlock_latch_free);
    assert_int_equal(dlock_latch_new(&latch2, fx->c2, name), 0);
    dlock_fx_keep(fx, latch2, (void (*)(void *))dlock_latch_free);
    assert_int_equal(dlock_latch_try_set_count(latch2, &set, 1), 0);
    assert_int_equal(set, 1);
    assert_int_equal(dlock_latch_await_async(lp, NULL, latch, DLOCK_WAIT_FOREVER, on_done,
                                             &s[PARKED_KINDS + 1]), 0);
    if (fx->is_mock)
        run_due_all(lp); /* every start run (a run is one slice) */
    run_idle(fx, lp, &s[0], 0);
    for (k = 0; k < PARKED_KINDS + PARKED_OBJECTS; k++)
        assert_int_equal(s[k].calls, 0);
    assert_int_equal(dlock_loop_pending(lp), PARKED_KINDS + PARKED_OBJECTS);
    /* the spin lock's poll may be in flight on a real clock (a fiber
     * while it runs); on the virtual clock nothing runs now */
    run_until_parked(fx, lp, fx->is_mock ? 0 : 1);
    assert_true(dlock__loop_fibers_in_use(lp) <= (fx->is_mock ? 0u : 1u));
    for (k = 0; k < PARKED_KINDS; k++)
        assert_int_equal(dlock_unlock(theirs[k]), 0);
    assert_int_equal(dlock_semaphore_release(sem2, 1), 0);
    assert_int_equal(dlock_latch_count_down(latch2), 0);
    let_pollers_look(fx);
    run_empty(fx, lp);
    for (k = 0; k < PARKED_KINDS + PARKED_OBJECTS; k++) {
        if (s[k].calls != 1 || s[k].rc != 0)
            print_message("wait %d: %d call(s), %s (%s)\n", k, s[k].calls,
                          dlock_errname(s[k].rc), s[k].detail);
        assert_int_equal(s[k].calls, 1);
        assert_int_equal(s[k].rc, 0);
        if (k >= PARKED_KINDS)
            continue;
        assert_int_equal(held_by(mine[k], s[k].owner), 1);
        assert_int_equal(dlock_unlock_as(mine[k], s[k].owner), 0);
    }
    assert_int_equal(dlock_semaphore_release(sem, 1), 0);
    assert_int_equal(dlock__loop_fibers_in_use(lp), 0);
    run_idle(fx, lp, &s[0], 1);
}

/* Parked waits of lock type k end as waits with a stack did: a cancel
 * (DLOCK_ECANCELED), the budget (DLOCK_ETIMEDOUT at its end), the
 * object's free (DLOCK_ECANCELED, freed after the callback); once each,
 * no fiber held meanwhile, and nothing left held. */
static void parked_wait_ends(dlock_fx *fx, int k)
{
    dlock_rlock *theirs, *a, *b, *c = NULL;
    /* the callbacks' records outlive this frame when an assertion fails
     * (the teardown frees the loop, which calls them back, first) */
    seen *abc = dlock_fx_keep(fx, calloc(3, sizeof(seen)), free);
    dlock_loop *lp = loop(fx, fx->c1);
    int64_t wait = fx->is_mock ? 5000 : 1500;
    seen *sa, *sb, *sc;
    dlock_op_id op = 0;
    int locked = -1;
    char name[160];

    assert_non_null(abc);
    sa = &abc[0];
    sb = &abc[1];
    sc = &abc[2];
    snprintf(name, sizeof name, "%s:%d", fx->name, k);
    parked_prepare(fx, k, name);
    theirs = parked_lock(fx, fx->c2, holder_kind(k), name);
    a = parked_lock(fx, fx->c1, k, name);
    b = parked_lock(fx, fx->c1, k, name);
    assert_int_equal(parked_make[k](&c, fx->c1, name), 0);
    assert_int_equal(dlock_lock(theirs, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, &op, a, NULL, DLOCK_WAIT_FOREVER, 0, on_done, sa),
                     0);
    assert_int_equal(dlock_lock_async(lp, NULL, b, NULL, wait, 0, on_done, sb), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, c, NULL, DLOCK_WAIT_FOREVER, 0, on_done, sc),
                     0);
    if (fx->is_mock)
        run_due_all(lp); /* every start run (a run is one slice) */
    run_idle(fx, lp, sa, 0);
    run_until_parked(fx, lp, 0);
    assert_int_equal(dlock_loop_pending(lp), 3);
    assert_int_equal(dlock__loop_fibers_in_use(lp), 0);

    assert_int_equal(dlock_op_cancel(lp, op), 0);
    dlock_rlock_free(c); /* pending: freed after its callback */
    run_until(fx, lp, sa, 1);
    run_until(fx, lp, sc, 1);
    assert_int_equal(sa->calls, 1);
    assert_int_equal(sa->rc, DLOCK_ECANCELED);
    assert_int_equal(sc->calls, 1);
    assert_int_equal(sc->rc, DLOCK_ECANCELED);
    if (!strstr(sc->detail, "freed"))
        print_message("kind %d: the freed object's wait said: \"%s\"\n", k, sc->detail);
    assert_non_null(strstr(sc->detail, "freed"));
    assert_int_equal(sb->calls, 0);
    /* (a wake a leaving waiter hands on may have b look once, on a fiber) */
    run_until_parked(fx, lp, 0);
    assert_int_equal(dlock__loop_fibers_in_use(lp), 0);
    if (fx->is_mock)
        dlock_fx_advance(fx, wait);
    run_until(fx, lp, sb, 1);
    assert_int_equal(sb->calls, 1);
    assert_int_equal(sb->rc, DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_loop_pending(lp), 0);
    run_idle(fx, lp, sb, 1);
    assert_int_equal(sa->calls + sc->calls, 2);
    assert_int_equal(held_by(theirs, fx->owner2), 1);
    assert_int_equal(dlock_unlock(theirs), 0);
    assert_int_equal(dlock_is_locked(theirs, &locked), 0);
    assert_int_equal(locked, 0);
    /* the next kind's run has room for its own */
    dlock_fx_unkeep(fx, lp);
    dlock_loop_free(lp);
    dlock_fx_unkeep(fx, abc);
    free(abc);
    dlock_fx_unkeep(fx, a);
    dlock_rlock_free(a);
    dlock_fx_unkeep(fx, b);
    dlock_rlock_free(b);
    dlock_fx_unkeep(fx, theirs);
    dlock_rlock_free(theirs);
}

static void async_parked_wait_ends(void **state)
{
    dlock_fx *fx = BEGIN(state);
    int k;

    for (k = 0; k < PARKED_KINDS; k++)
        parked_wait_ends(fx, k);
}

#define FAIR_WAITERS 4

/* Fair waits that sleep without a fiber keep their places: queued in the
 * order they started, each is granted in that order, one release at a
 * time, and none before its turn. */
static void async_parked_fair_order(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *theirs = parked_lock(fx, fx->c2, 4, fx->name), *mine[FAIR_WAITERS];
    seen *s = dlock_fx_keep(fx, calloc(FAIR_WAITERS, sizeof(seen)), free);
    dlock_loop *lp = loop(fx, fx->c1);
    int i, j;

    assert_non_null(s);
    assert_int_equal(dlock_lock(theirs, HOLDER_LEASE_MS), 0);
    for (i = 0; i < FAIR_WAITERS; i++) {
        mine[i] = parked_lock(fx, fx->c1, 4, fx->name);
        assert_int_equal(dlock_lock_async(lp, NULL, mine[i], NULL, DLOCK_WAIT_FOREVER, 0,
                                          on_done, &s[i]), 0);
        /* its first attempt (its place) before the next starts: parked */
        if (fx->is_mock)
            run_due_all(lp);
        run_until_parked(fx, lp, 0);
        assert_int_equal(dlock__loop_fibers_in_use(lp), 0);
        assert_int_equal(s[i].calls, 0);
    }
    assert_int_equal(dlock__loop_fibers_in_use(lp), 0);
    assert_int_equal(dlock_unlock(theirs), 0);
    for (i = 0; i < FAIR_WAITERS; i++) {
        run_until(fx, lp, &s[i], 1);
        assert_int_equal(s[i].calls, 1);
        assert_int_equal(s[i].rc, 0);
        for (j = i + 1; j < FAIR_WAITERS; j++)
            assert_int_equal(s[j].calls, 0);
        assert_int_equal(held_by(mine[i], s[i].owner), 1);
        /* (a parked waiter refreshing its place looks on a fiber) */
        run_until_parked(fx, lp, 0);
        assert_int_equal(dlock__loop_fibers_in_use(lp), 0);
        assert_int_equal(dlock_unlock_as(mine[i], s[i].owner), 0);
    }
    run_idle(fx, lp, &s[0], 1);
}

#define QUEUED 24

/* The loop runs its operations on a pool of fibers with a cap: more
 * operations than that queue for one, and every one is served, once. */
static void async_fiber_cap_queues(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l[QUEUED];
    dlock_loop *lp = loop(fx, fx->c1);
    seen s[QUEUED], u[QUEUED];
    int i;

    memset(s, 0, sizeof s);
    memset(u, 0, sizeof u);
    dlock__loop_set_fiber_cap(lp, 2);
    for (i = 0; i < QUEUED; i++) {
        char name[160];

        snprintf(name, sizeof name, "%s:%d", fx->name, i);
        assert_int_equal(dlock_reentrant_new(&l[i], fx->c1, name), 0);
        dlock_fx_keep(fx, l[i], (void (*)(void *))dlock_rlock_free);
        assert_int_equal(dlock_lock_async(lp, NULL, l[i], NULL, 0, 0, on_done, &s[i]), 0);
    }
    run_empty(fx, lp);
    for (i = 0; i < QUEUED; i++) {
        assert_int_equal(s[i].calls, 1);
        assert_int_equal(s[i].rc, 0);
        assert_int_equal(dlock_unlock_async(lp, NULL, l[i], s[i].owner, on_done, &u[i]), 0);
    }
    run_empty(fx, lp);
    for (i = 0; i < QUEUED; i++) {
        assert_int_equal(u[i].calls, 1);
        assert_int_equal(u[i].rc, 0);
    }
    assert_true(dlock__loop_fibers_peak(lp) >= 1);
    assert_true(dlock__loop_fibers_peak(lp) <= 2);
    assert_int_equal(dlock__loop_fibers_in_use(lp), 0);
    run_idle(fx, lp, &s[0], 1);
}

static const struct CMUnitTest async_cases[] = {
    DLOCK_FX_CASE(async_lock_unlock),
    DLOCK_FX_CASE(async_wait_woken_by_release),
    DLOCK_FX_CASE(async_try_lock_times_out),
    DLOCK_FX_CASE(async_watchdog_renews),
    DLOCK_FX_CASE(async_cancel_leaves_nothing),
    DLOCK_FX_CASE(async_callback_rules),
    DLOCK_FX_CASE(async_free_ends_waits),
    DLOCK_FX_CASE(async_bad_input),
    DLOCK_FX_CASE(async_other_objects),
    DLOCK_FX_CASE(async_many_waits),
    DLOCK_FX_CASE(async_defaults_never_share_a_hold),
    DLOCK_FX_CASE(async_cap_refuses_at_once),
    DLOCK_FX_CASE(async_free_keeps_object_alive),
    DLOCK_FX_CASE(async_run_is_a_slice),
    DLOCK_FX_CASE(async_budget_from_starter),
    DLOCK_FX_CASE(async_details_are_their_own),
    DLOCK_FX_CASE(async_spent_budgets_go_first),
    DLOCK_FX_CASE(async_hook_mode),
    DLOCK_FX_CASE(async_own_thread),
    DLOCK_FX_CASE(async_parked_waits_hold_no_fiber),
    DLOCK_FX_CASE(async_parked_wait_ends),
    DLOCK_FX_CASE(async_parked_fair_order),
    DLOCK_FX_CASE(async_fiber_cap_queues),
};

/* The cases that take the lock type of the run (dlock_fx_lock), for the
 * composite types and a lock type of one's own (tests/conformance/
 * composite_types.c): the others make their objects themselves. */
static const struct CMUnitTest async_type_cases[] = {
    DLOCK_FX_CASE(async_lock_unlock),
    DLOCK_FX_CASE(async_wait_woken_by_release),
    DLOCK_FX_CASE(async_try_lock_times_out),
    DLOCK_FX_CASE(async_watchdog_renews),
    DLOCK_FX_CASE(async_callback_rules),
    DLOCK_FX_CASE(async_free_ends_waits),
    DLOCK_FX_CASE(async_hook_mode),
    DLOCK_FX_CASE(async_own_thread),
};

/* Runs the cases above on type, on backend, as the group
 * "async/<type>". Returns the failures. */
int dlock_test_async_type(const dlock_fx_lock_type *type, const char *backend);
int dlock_test_async_type(const dlock_fx_lock_type *type, const char *backend)
{
    char what[64];
    int failed;

    snprintf(what, sizeof(what), "async/%s", type->name);
    dlock_fx_use_lock_type(type);
    failed = DLOCK_FX_RUN_GROUP(what, backend, async_type_cases);
    dlock_fx_use_lock_type(NULL);
    return failed;
}

/* Runs every case on backend ("mock", or a Redis row whose server URL main
 * has set). Returns the number of failures. */
int dlock_test_async(const char *backend);
int dlock_test_async(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("async", backend, async_cases);
}
