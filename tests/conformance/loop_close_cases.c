/*
 * Closing a loop without blocking (dlock_loop_close, as uv_close) and
 * dlock_loop_free from inside one of the loop's callbacks (deferred, as
 * hiredis's redisAsyncFree), in poll mode and on a loop thread
 * (api/dlock/async.h). On the mock the loop runs on the virtual clock
 * without waiting; on Redis in real time, with loose bounds.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* How long a case waits for what it expects (real ms). */
#define WAIT_MS 10000
/* A lock held elsewhere for the whole case. */
#define HOLDER_LEASE_MS 60000

static int held_by_none(dlock_rlock *l)
{
    int b = -1;

    assert_int_equal(dlock_is_locked(l, &b), 0);
    return b == 0;
}

typedef struct closing {
    pthread_mutex_t mu;
    int calls, rc;        /* the wait's callback */
    int closed;           /* on_closed's calls */
    int closed_after_cb;  /* the wait's callback came first */
    int in_close;         /* set around dlock_loop_close */
    int closed_in_close;  /* on_closed ran inside it: a bug */
    dlock_loop *lp;       /* the loop a callback frees (free_in_cb) */
    int free_in_cb;
} closing;

static void on_wait(void *arg, dlock_op_id op, const dlock_result *r)
{
    closing *c = arg;

    (void)op;
    pthread_mutex_lock(&c->mu);
    c->calls++;
    c->rc = r->rc;
    pthread_mutex_unlock(&c->mu);
    if (c->free_in_cb)
        dlock_loop_free(c->lp); /* deferred: the loop is in use here */
}

static void on_closed(void *arg)
{
    closing *c = arg;

    pthread_mutex_lock(&c->mu);
    c->closed++;
    c->closed_after_cb = c->calls == 2;
    c->closed_in_close = c->in_close;
    pthread_mutex_unlock(&c->mu);
}

static int closed_count(closing *c)
{
    int n;

    pthread_mutex_lock(&c->mu);
    n = c->closed;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void closing_init(closing *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->mu, NULL);
}

/* l2 takes the lock for the case; l1 waits for it on lp twice, the first
 * wait for first_ms, the second forever, called back into c. */
static void two_waits(dlock_loop *lp, dlock_rlock *l1, dlock_rlock *l2, closing *c,
                      int64_t first_ms)
{
    assert_int_equal(dlock_lock(l2, HOLDER_LEASE_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, "w1", first_ms, 0, on_wait, c), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l1, "w2", DLOCK_WAIT_FOREVER, 0, on_wait, c),
                     0);
}

/* Runs the poll-mode lp until *flag is set (lp may be gone then). */
static void run_until_set(dlock_fx *fx, dlock_loop *lp, const int *flag)
{
    int64_t end = dlock_fx_real_ms() + WAIT_MS;

    while (*flag == 0 && dlock_fx_real_ms() < end)
        assert_true(dlock_loop_run(lp, fx->is_mock ? 0 : 20) >= 0);
}

/* The lock is free again once l2 lets go: no wait of l1 kept it. */
static void release_holder(dlock_rlock *l1, dlock_rlock *l2)
{
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(held_by_none(l1), 1);
}

/* A poll-mode loop with two waits for a lock held elsewhere: the close
 * returns at once without calling back, a second close is refused, and
 * the following runs end both waits (DLOCK_ECANCELED), then free the
 * loop and call on_closed once. */
static void loop_close_poll_mode(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = NULL;
    closing c;

    closing_init(&c);
    assert_int_equal(dlock_loop_new(&lp, fx->c1, NULL), 0);
    two_waits(lp, l1, l2, &c, DLOCK_WAIT_FOREVER);
    assert_true(dlock_loop_run(lp, 0) >= 0);
    c.in_close = 1;
    assert_int_equal(dlock_loop_close(lp, on_closed, &c), 0);
    c.in_close = 0;
    assert_int_equal(c.closed, 0);
    assert_int_equal(c.calls, 0);
    assert_int_equal(dlock_loop_close(lp, on_closed, &c), DLOCK_EINVAL);
    run_until_set(fx, lp, &c.closed); /* lp is gone */
    assert_int_equal(c.closed, 1);
    assert_int_equal(c.closed_in_close, 0);
    assert_int_equal(c.calls, 2);
    assert_int_equal(c.rc, DLOCK_ECANCELED);
    assert_int_equal(c.closed_after_cb, 1);
    release_holder(l1, l2);
    /* a loop with nothing pending closes at its next run */
    closing_init(&c);
    assert_int_equal(dlock_loop_new(&lp, fx->c1, NULL), 0);
    assert_int_equal(dlock_loop_close(lp, on_closed, &c), 0);
    assert_int_equal(c.closed, 0);
    assert_true(dlock_loop_run(lp, 0) >= 0);
    assert_int_equal(c.closed, 1);
    assert_int_equal(dlock_loop_close(NULL, NULL, NULL), DLOCK_EINVAL);
}

/* A loop thread closes itself: on_closed comes from it once the waits
 * ended, with no join by the application. */
static void loop_close_own_thread(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = NULL;
    closing c;
    int64_t end;

    closing_init(&c);
    assert_int_equal(dlock_loop_new_thread(&lp, fx->c1), 0);
    two_waits(lp, l1, l2, &c, DLOCK_WAIT_FOREVER);
    assert_int_equal(dlock_loop_close(lp, on_closed, &c), 0);
    end = dlock_fx_real_ms() + WAIT_MS;
    while (closed_count(&c) == 0 && dlock_fx_real_ms() < end)
        dlock_fx_sleep_real(5);
    assert_int_equal(closed_count(&c), 1);
    pthread_mutex_lock(&c.mu);
    assert_int_equal(c.calls, 2);
    assert_int_equal(c.rc, DLOCK_ECANCELED);
    assert_int_equal(c.closed_after_cb, 1);
    pthread_mutex_unlock(&c.mu);
    release_holder(l1, l2);
}

/* dlock_loop_free from a callback is deferred: the run that called back
 * ends the other wait and frees the loop before it returns (before the
 * change it did nothing, and the other wait stayed pending). */
static void loop_free_in_callback(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_loop *lp = NULL;
    closing c;

    closing_init(&c);
    assert_int_equal(dlock_loop_new(&lp, fx->c1, NULL), 0);
    c.lp = lp;
    c.free_in_cb = 1;
    /* the first to be called back times out at once; the other waits */
    two_waits(lp, l1, l2, &c, 0);
    run_until_set(fx, lp, &c.calls); /* the run that called back freed lp */
    assert_int_equal(c.calls, 2);
    assert_int_equal(c.rc, DLOCK_ECANCELED);
    release_holder(l1, l2);
}

static const struct CMUnitTest loop_close_cases[] = {
    DLOCK_FX_CASE(loop_close_poll_mode),
    DLOCK_FX_CASE(loop_close_own_thread),
    DLOCK_FX_CASE(loop_free_in_callback),
};

int dlock_test_loop_close(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("loop close", backend, loop_close_cases);
}
