/*
 * The asynchronous API's round trips on Redis go through the loop, not
 * through the loop's thread (issue 27): an operation waiting for a reply
 * parks on its socket, which the loop's one file descriptor (an epoll set)
 * reports ready. What that buys, on a real redis-server:
 *  - a stalled server (SIGSTOP) does not stall the loop: dlock_loop_run
 *    returns at once with the operation still pending, for the
 *    multiplexed and the pooled connection alike; when the server
 *    resumes, the reply wakes the loop through dlock_loop_fd long before
 *    the call's own deadline, and the lock is granted;
 *  - operations beyond a small pool's connections, on one loop, wait for
 *    a connection without blocking the loop's thread;
 *  - a thread's blocking call beside a parked operation, on the same
 *    multiplexed connection, does not wait for the loop to run;
 *  - a real loop library (libuv, through its adapter) drives waits and
 *    grants whose replies arrive on sockets.
 */
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "dlock.h"
#include "dlock/adapters/libuv.h"
#include "dlock/redis.h"
#include "../../harness/fixture.h"
#include "../../harness/redis_group.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

/* The stall, and the limits it must stay far from. */
#define STALL_MS 1500
#define CALL_BUDGET_MS 60000
/* How long a case waits for a callback before it fails. */
#define CASE_REAL_MS 10000

static dlock_test_redis *srv;

typedef dlock_fx_calls calls;
#define done dlock_fx_count_call

static dlock_client *client(int multiplex)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    char err[256];

    o.multiplex = multiplex;
    o.command_timeout_ms = CALL_BUDGET_MS;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o, err,
                                             sizeof err), 0);
    assert_int_equal(dlock_client_new(&c, b, NULL), 0);
    return c;
}

/* Runs lp (poll mode) until c has n calls or CASE_REAL_MS pass, waiting in
 * poll() on dlock_loop_fd as an application would. */
static void run_until(dlock_loop *lp, const calls *c, int n)
{
    int64_t end = dlock_fx_real_ms() + CASE_REAL_MS;

    while (c->n < n && dlock_fx_real_ms() < end) {
        struct pollfd p = {dlock_loop_fd(lp), POLLIN, 0};
        int64_t t = dlock_loop_timeout_ms(lp);

        poll(&p, 1, t < 0 || t > 100 ? 100 : (int)t);
        dlock_loop_run(lp, 0);
    }
}

static void stalled_server(int multiplex, const char *name)
{
    dlock_client *c = client(multiplex);
    dlock_rlock *l = NULL;
    dlock_loop *lp = NULL;
    dlock_test_stall *stall = NULL;
    calls got = {0, -1}, unlocked = {0, -1};
    int64_t resumed, i;
    int held = 0;

    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    /* One round trip first: the connection is open before the stall. */
    assert_int_equal(dlock_lock_async(lp, NULL, l, "a", CALL_BUDGET_MS, 0, done, &got), 0);
    run_until(lp, &got, 1);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.rc, 0);
    assert_int_equal(dlock_unlock_as(l, "a"), 0);

    got.n = 0;
    assert_int_equal(dlock_test_redis_stall(&stall, srv, STALL_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "b", CALL_BUDGET_MS, 0, done, &got),
                     0);
    /* The loop's thread is free while the server says nothing: each run
     * returns with the operation still waiting for its reply. */
    for (i = 0; i < 5; i++) {
        dlock_loop_run(lp, 0);
        assert_int_equal(got.n, 0);
        assert_int_equal(dlock_loop_pending(lp), 1);
    }
    assert_int_equal(dlock_test_stall_join(stall), 0);
    resumed = dlock_fx_real_ms();
    run_until(lp, &got, 1);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.rc, 0);
    /* Woken by the reply on the loop's fd, not by the call's deadline. */
    assert_true(dlock_fx_real_ms() - resumed < CASE_REAL_MS);
    assert_int_equal(dlock_is_held_as(l, "b", &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "b", done, &unlocked), 0);
    run_until(lp, &unlocked, 1);
    assert_int_equal(unlocked.rc, 0);
    dlock_loop_free(lp);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

static void test_stalled_server_multiplexed(void **state)
{
    (void)state;
    stalled_server(1, "async-io:stall:mux");
}

static void test_stalled_server_pooled(void **state)
{
    (void)state;
    stalled_server(0, "async-io:stall:pool");
}

/* A pool smaller than the operations in flight on one loop: a fiber that
 * finds every connection lent out sleeps instead of blocking the loop's
 * thread in the pool's condition variable, so the fibers holding the
 * connections get their replies and return them. Before, one run blocked
 * up to the connect timeout per waiting operation, and half of them ended
 * with DLOCK_ETIMEDOUT. */
#define POOL_SMALL 2
#define POOL_OPS 40

static void test_small_pool_many_ops(void **state)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l[POOL_OPS];
    dlock_loop *lp = NULL;
    calls got = {0, -1}, unlocked = {0, -1};
    int64_t end, longest = 0;
    char err[256];
    int i, failed = 0;

    (void)state;
    o.multiplex = 0;
    o.pool_size = POOL_SMALL;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o, err,
                                             sizeof err), 0);
    assert_int_equal(dlock_client_new(&c, b, NULL), 0);
    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    for (i = 0; i < POOL_OPS; i++) {
        char name[64];

        snprintf(name, sizeof name, "async-io:pool:%d", i);
        assert_int_equal(dlock_reentrant_new(&l[i], c, name), 0);
        assert_int_equal(dlock_lock_async(lp, NULL, l[i], "p", CALL_BUDGET_MS, 0, done, &got),
                         0);
    }
    end = dlock_fx_real_ms() + CASE_REAL_MS;
    while (got.n < POOL_OPS && dlock_fx_real_ms() < end) {
        struct pollfd p = {dlock_loop_fd(lp), POLLIN, 0};
        int64_t t = dlock_loop_timeout_ms(lp), t0;

        poll(&p, 1, t < 0 || t > 100 ? 100 : (int)t);
        t0 = dlock_fx_real_ms();
        dlock_loop_run(lp, 0);
        if (dlock_fx_real_ms() - t0 > longest)
            longest = dlock_fx_real_ms() - t0;
    }
    /* A run never waits for a connection (a wide bound: before, one run
     * took seconds) */
    print_message("%d of %d called back, the last with %s; longest run %lld ms\n", got.n,
                  POOL_OPS, dlock_errname(got.rc), (long long)longest);
    assert_int_equal(got.n, POOL_OPS);
    assert_true(longest < 1000);
    for (i = 0; i < POOL_OPS; i++) {
        int held = 0;

        assert_int_equal(dlock_is_held_as(l[i], "p", &held), 0);
        failed += !held;
        assert_int_equal(dlock_unlock_async(lp, NULL, l[i], "p", done, &unlocked), 0);
    }
    assert_int_equal(failed, 0);
    run_until(lp, &unlocked, POOL_OPS);
    assert_int_equal(unlocked.n, POOL_OPS);
    assert_int_equal(unlocked.rc, 0);
    dlock_loop_free(lp);
    for (i = 0; i < POOL_OPS; i++)
        dlock_rlock_free(l[i]);
    dlock_client_free(c);
}

/* A thread's blocking call on a client whose loop's fiber waits for a
 * reply is not held up by that loop: the fiber does not keep the
 * multiplexed connection's reader's role while it is parked, so the
 * thread reads (the fiber's reply too) without the loop being run. With
 * the role kept, the thread's call would wait for the loop until its own
 * budget ran out (DLOCK_ETIMEDOUT). */
static void test_thread_beside_parked_fiber(void **state)
{
    dlock_client *c = client(1);
    dlock_rlock *l = NULL, *l2 = NULL;
    dlock_loop *lp = NULL;
    dlock_test_stall *stall = NULL;
    calls got = {0, -1};
    int i, held = 0;

    (void)state;
    assert_int_equal(dlock_reentrant_new(&l, c, "async-io:beside:fiber"), 0);
    assert_int_equal(dlock_reentrant_new(&l2, c, "async-io:beside:thread"), 0);
    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    /* the connection open first */
    assert_int_equal(dlock_lock_async(lp, NULL, l, "a", CALL_BUDGET_MS, 0, done, &got), 0);
    run_until(lp, &got, 1);
    assert_int_equal(got.rc, 0);
    assert_int_equal(dlock_unlock_as(l, "a"), 0);

    got.n = 0;
    assert_int_equal(dlock_test_redis_stall(&stall, srv, STALL_MS), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "b", CALL_BUDGET_MS, 0, done, &got), 0);
    for (i = 0; i < 3; i++)
        dlock_loop_run(lp, 0);
    assert_int_equal(got.n, 0);
    assert_int_equal(dlock_loop_pending(lp), 1); /* sent, parked for its reply */
    /* The loop is not run again until the thread's call has returned. */
    assert_int_equal(dlock_try_lock_as(l2, "t", 5000, 60000), 0);
    assert_int_equal(dlock_test_stall_join(stall), 0);
    run_until(lp, &got, 1);
    assert_int_equal(got.n, 1);
    assert_int_equal(got.rc, 0);
    assert_int_equal(dlock_is_held_as(l, "b", &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_unlock_as(l, "b"), 0);
    assert_int_equal(dlock_unlock_as(l2, "t"), 0);
    dlock_loop_free(lp);
    dlock_rlock_free(l);
    dlock_rlock_free(l2);
    dlock_client_free(c);
}

/* ---- libuv over Redis ------------------------------------------------------ */

static void uv_tick(uv_timer_t *t) { (void)t; }

static void uv_until(uv_loop_t *loop, const calls *c, int n)
{
    int64_t end = dlock_fx_real_ms() + CASE_REAL_MS;

    while (c->n < n && dlock_fx_real_ms() < end)
        uv_run(loop, UV_RUN_ONCE);
}

static void test_libuv_over_redis(void **state)
{
    uv_loop_t loop;
    uv_timer_t tick; /* bounds each turn */
    dlock_client *c = client(1);
    dlock_rlock *l = NULL;
    dlock_loop *lp = NULL;
    calls waiter = {0, -1}, unlocked = {0, -1};
    int i, held = 0;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, uv_tick, 50, 50);
    assert_int_equal(dlock_loop_new_libuv(&lp, c, &loop), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "async-io:libuv"), 0);
    assert_int_equal(dlock_lock_as(l, "holder", 0), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "waiter", DLOCK_WAIT_FOREVER, 0, done,
                                      &waiter), 0);
    for (i = 0; i < 5; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(waiter.n, 0);
    assert_int_equal(dlock_unlock_as(l, "holder"), 0);
    uv_until(&loop, &waiter, 1);
    assert_int_equal(waiter.n, 1);
    assert_int_equal(waiter.rc, 0);
    assert_int_equal(dlock_is_held_as(l, "waiter", &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "waiter", done, &unlocked), 0);
    uv_until(&loop, &unlocked, 1);
    assert_int_equal(unlocked.n, 1);
    assert_int_equal(unlocked.rc, 0);
    assert_int_equal(dlock_loop_pending(lp), 0);
    dlock_loop_free(lp);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT); /* the handles' closes */
    assert_int_equal(uv_loop_close(&loop), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

/* A lazy client of a host name ("localhost"): its first connect runs in
 * the operation's fiber, whose lookup goes to a helper thread
 * (dlock__wait_offload) while the fiber parks; the operation gets its lock
 * on both connection modes. */
static void test_host_name_in_fiber(void **state)
{
    int multiplex;

    (void)state;
    for (multiplex = 0; multiplex <= 1; multiplex++) {
        dlock_client *c = NULL;
        dlock_rlock *l = NULL;
        dlock_loop *lp = NULL;
        calls got = {0, -1}, unlocked = {0, -1};
        char url[128], err[256];

        snprintf(url, sizeof url, "redis://localhost:%d?lazy_connect=1&multiplex=%d",
                 dlock_test_redis_port(srv), multiplex);
        assert_int_equal(dlock_client_connect(&c, url, NULL, err, sizeof err), 0);
        assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
        assert_int_equal(dlock_reentrant_new(&l, c, "async-io:host-name"), 0);
        assert_int_equal(dlock_lock_async(lp, NULL, l, "h", CALL_BUDGET_MS, 0, done, &got), 0);
        run_until(lp, &got, 1);
        if (got.rc != 0)
            print_message("multiplex=%d: %s\n", multiplex, dlock_errname(got.rc));
        assert_int_equal(got.n, 1);
        assert_int_equal(got.rc, 0);
        assert_int_equal(dlock_unlock_async(lp, NULL, l, "h", done, &unlocked), 0);
        run_until(lp, &unlocked, 1);
        assert_int_equal(unlocked.rc, 0);
        dlock_loop_free(lp);
        dlock_rlock_free(l);
        dlock_client_free(c);
    }
}

int dlock_test_redis_async_io(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stalled_server_multiplexed),
        cmocka_unit_test(test_stalled_server_pooled),
        cmocka_unit_test(test_small_pool_many_ops),
        cmocka_unit_test(test_thread_beside_parked_fiber),
        cmocka_unit_test(test_libuv_over_redis),
        cmocka_unit_test(test_host_name_in_fiber),
    };
    return DLOCK_RUN_REDIS_GROUP("redis_async_io", tests, &srv);
}
