/*
 * The socket wait a backend written outside the library waits with
 * (dlock_backend_wait_fd, api/dlock/sys/backend.h; core/wait.c): on a
 * plain thread it blocks, in an asynchronous operation's fiber it parks the
 * operation and the loop goes on. The fiber case is a backend in front of
 * the mock whose script call first waits for a pipe, as an out-of-tree
 * backend waits for its socket; and the same for a call handed to a helper
 * thread (dlock__wait_offload: a host name's lookup).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlock/async.h"
#include "dlock/client.h"
#include "dlock/reentrant.h"
#include "dlock/sys/backend.h"
#include "core/wait.h"
#include "../harness/runner.h"
#include "../harness/wrap_backend.h"

/* Long enough never to end a case on a loaded machine: a wait that
 * blocked the loop's thread would hold dlock_loop_run this long. */
#define FAR_MS 30000

static int64_t now_ms(void)
{
    return dlock_clock_now(dlock_clock_realtime());
}

/* A plain thread: the deadline ends the wait, a byte makes the read end
 * ready, a past deadline is one look, bad arguments are refused. */
static void test_plain_thread(void **state)
{
    int p[2];

    assert_int_equal(pipe(p), 0);
    assert_int_equal(dlock_backend_wait_fd(p[0], DLOCK_WAIT_READ, now_ms() + 20), 0);
    assert_int_equal(dlock_backend_wait_fd(p[0], DLOCK_WAIT_READ, 0), 0);
    assert_int_equal(dlock_backend_wait_fd(p[1], DLOCK_WAIT_WRITE, now_ms() + FAR_MS), 1);
    assert_int_equal(write(p[1], "x", 1), 1);
    assert_int_equal(dlock_backend_wait_fd(p[0], DLOCK_WAIT_READ, now_ms() + FAR_MS), 1);
    assert_int_equal(dlock_backend_wait_fd(p[0], DLOCK_WAIT_READ, 0), 1);
    assert_int_equal(dlock_backend_wait_fd(-1, DLOCK_WAIT_READ, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_wait_fd(p[0], 0, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_wait_fd(p[0], 4, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_wait_fd(p[0], DLOCK_WAIT_READ | DLOCK_WAIT_WRITE, 0),
                     DLOCK_EINVAL);
    close(p[0]);
    close(p[1]);
}

/* The mock behind a script call that first waits for fd to be readable
 * (once), as a backend waits for its socket. Real time: the deadline is
 * on the real-time clock, which the loop must measure it by. */
typedef struct fd_backend {
    dlock_test_wrap w; /* first */
    int fd;
    int waited; /* the wait's return, once it returned; -100 before */
    int offload; /* instead: a call on a helper (blocked until go) */
    int go, ran, dropped;
    int64_t offload_ms; /* its deadline, from the call */
} fd_backend;

/* What a slow lookup does: blocks its thread until told. */
static void blocked_call(void *arg)
{
    fd_backend *f = arg;

    while (!__atomic_load_n(&f->go, __ATOMIC_SEQ_CST))
        usleep(1000);
    __atomic_store_n(&f->ran, 1, __ATOMIC_SEQ_CST);
}

static void dropped_call(void *arg)
{
    __atomic_store_n(&((fd_backend *)arg)->dropped, 1, __ATOMIC_SEQ_CST);
}

static int wait_once(fd_backend *f)
{
    if (f->offload)
        return dlock__wait_offload(blocked_call, f, dropped_call,
                                   now_ms() + f->offload_ms);
    return dlock_backend_wait_fd(f->fd, DLOCK_WAIT_READ, now_ms() + FAR_MS);
}

static int fdb_eval_until(dlock_backend *b, dlock_reply **out, const dlock_script *s,
                          size_t nkeys, size_t nargs, const char *const *argv,
                          const size_t *argvlen, int64_t deadline_ms, char *errbuf,
                          size_t errlen)
{
    fd_backend *f = (fd_backend *)b;

    if (__atomic_load_n(&f->waited, __ATOMIC_SEQ_CST) == -100)
        __atomic_store_n(&f->waited, wait_once(f), __ATOMIC_SEQ_CST);
    return dlock_test_wrap_eval_until(b, out, s, nkeys, nargs, argv, argvlen,
                                      deadline_ms, errbuf, errlen);
}

static dlock_clock *fdb_clock(dlock_backend *b)
{
    return dlock_clock_realtime();
}

static const dlock_backend_methods fd_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "fd-wait",
    .eval = dlock_test_wrap_eval_by_until,
    .subscribe = dlock_test_wrap_subscribe,
    .unsubscribe = dlock_test_wrap_unsubscribe,
    .clock = fdb_clock,
    .free = dlock_test_wrap_free,
    .eval_until = fdb_eval_until,
    .subscribe_until = dlock_test_wrap_subscribe_until,
    .reconnects = dlock_test_wrap_reconnects,
    .publish_command = dlock_test_wrap_publish_command,
    .key_slot = dlock_test_wrap_key_slot,
};

typedef struct done_rec {
    int calls;
    int rc;
} done_rec;

static void on_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    done_rec *d = arg;

    d->calls++;
    d->rc = r->rc;
}

/* An operation on a loop whose backend first waits as f says (the pipe,
 * or a blocked call on a helper) stays pending while dlock_loop_run keeps
 * returning (the loop's thread is not held for the wait's 30 s), and ends
 * once the byte is written or the call told to go; what the backend saw
 * (its wait's return in waited) is copied to *seen. */
static void run_parked(fd_backend *seen, int offload, int64_t offload_ms)
{
    fd_backend *f = calloc(1, sizeof *f);
    dlock_backend *inner = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    dlock_loop *lp = NULL;
    done_rec d = {0, -1};
    int p[2], i;
    int64_t until;

    assert_non_null(f);
    assert_int_equal(pipe(p), 0);
    assert_int_equal(dlock_backend_open(&inner, "mock:", NULL, NULL, 0), 0);
    f->w.base.methods = &fd_methods;
    f->w.inner = inner;
    f->fd = p[0];
    f->waited = -100;
    f->offload = offload;
    f->offload_ms = offload_ms;
    assert_int_equal(dlock_client_new(&c, &f->w.base, NULL), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "wait-fd"), 0);
    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "a", 0, 0, on_done, &d), 0);
    for (i = 0; i < 5; i++)
        assert_true(dlock_loop_run(lp, 10) >= 0);
    assert_int_equal(d.calls, 0);
    assert_int_equal(__atomic_load_n(&f->waited, __ATOMIC_SEQ_CST), -100);
    if (offload)
        __atomic_store_n(&f->go, 1, __ATOMIC_SEQ_CST);
    else
        assert_int_equal(write(p[1], "x", 1), 1);
    until = now_ms() + FAR_MS;
    while (d.calls == 0 && now_ms() < until)
        assert_true(dlock_loop_run(lp, 100) >= 0);
    assert_int_equal(d.calls, 1);
    assert_int_equal(d.rc, 0);
    assert_int_equal(dlock_unlock_as(l, "a"), 0);
    *seen = *f;
    dlock_loop_free(lp);
    dlock_rlock_free(l);
    dlock_client_free(c);
    close(p[0]);
    close(p[1]);
}

static void test_in_fiber(void **state)
{
    fd_backend f;

    run_parked(&f, 0, 0);
    assert_int_equal(f.waited, 1);
}

/* A blocking call handed to a helper thread: the fiber parks until it
 * returns (0, and it ran), and the loop goes on meanwhile. */
static void test_offload_in_fiber(void **state)
{
    fd_backend f;

    run_parked(&f, 1, FAR_MS);
    assert_int_equal(f.waited, 0);
    assert_int_equal(f.ran, 1);
    assert_int_equal(f.dropped, 0);
}

/* Past the deadline the fiber goes on (DLOCK_ETIMEDOUT) and the helper,
 * once its call returns, drops what it was given. On a plain thread the
 * call runs on the caller's thread. */
static void test_offload_deadline(void **state)
{
    fd_backend *f = calloc(1, sizeof *f);
    int64_t until;

    assert_non_null(f);
    __atomic_store_n(&f->go, 1, __ATOMIC_SEQ_CST);
    assert_int_equal(dlock__wait_offload(blocked_call, f, dropped_call, 0), 0);
    assert_int_equal(f->ran, 1);
    f->ran = 0;
    f->go = 0;
    /* in a fiber, with a deadline 50 ms on; the call is held until the
     * operation ended, then let go */
    {
        fd_backend *g = f;
        dlock_backend *inner = NULL;
        dlock_client *c = NULL;
        dlock_rlock *l = NULL;
        dlock_loop *lp = NULL;
        done_rec d = {0, -1};

        assert_int_equal(dlock_backend_open(&inner, "mock:", NULL, NULL, 0), 0);
        g->w.base.methods = &fd_methods;
        g->w.inner = inner;
        g->fd = -1;
        g->waited = -100;
        g->offload = 1;
        g->offload_ms = 50;
        assert_int_equal(dlock_client_new(&c, &g->w.base, NULL), 0);
        assert_int_equal(dlock_reentrant_new(&l, c, "wait-offload"), 0);
        assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
        assert_int_equal(dlock_lock_async(lp, NULL, l, "a", 0, 0, on_done, &d), 0);
        until = now_ms() + FAR_MS;
        while (d.calls == 0 && now_ms() < until)
            assert_true(dlock_loop_run(lp, 100) >= 0);
        assert_int_equal(d.calls, 1);
        assert_int_equal(g->waited, DLOCK_ETIMEDOUT);
        assert_int_equal(__atomic_load_n(&g->dropped, __ATOMIC_SEQ_CST), 0);
        __atomic_store_n(&g->go, 1, __ATOMIC_SEQ_CST);
        until = now_ms() + FAR_MS;
        while (!__atomic_load_n(&g->dropped, __ATOMIC_SEQ_CST) && now_ms() < until)
            usleep(1000);
        assert_int_equal(__atomic_load_n(&g->dropped, __ATOMIC_SEQ_CST), 1);
        assert_int_equal(__atomic_load_n(&g->ran, __ATOMIC_SEQ_CST), 1);
        dlock_loop_free(lp);
        dlock_rlock_free(l);
        dlock_client_free(c); /* frees g (the wrapper) */
    }
}

int dlock_test_core_wait(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_thread),
        cmocka_unit_test(test_in_fiber),
        cmocka_unit_test(test_offload_in_fiber),
        cmocka_unit_test(test_offload_deadline),
    };
    return DLOCK_RUN_GROUP("core_wait", tests, NULL, NULL);
}
