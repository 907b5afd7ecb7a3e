/*
 * The loop adapters (api/dlock/adapters/): a dlock_loop attached to a real
 * libuv, libevent and libev loop, the libraries Debian ships. On each: a
 * wait woken by a release (dlock's file descriptor watched by the
 * library), a timed wait ended by the library's timer, an unlock, and a
 * clean free. The store is the mock on the real-time clock (the adapters
 * use the library's timers, which run in real time). A build without
 * libevent's development files (DLOCK_TEST_NO_LIBEVENT, set by the
 * Makefile: make check-aarch64, whose arm64 libevent-dev does not
 * co-install with the host's) says so and leaves its case out.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dlock.h"
#include "dlock/adapters/libev.h"
#ifndef DLOCK_TEST_NO_LIBEVENT
#include "dlock/adapters/libevent.h"
#endif
#include "dlock/adapters/libuv.h"
#include "harness/fixture.h"
#include "harness/runner.h"

/* How long one case may take in real time before it fails. */
#define CASE_REAL_MS 5000
/* The timed wait, in ms. */
#define TIMED_MS 150

typedef dlock_fx_calls calls;
#define done dlock_fx_count_call

/* What every adapter's case does, with the library's "run once" turn. */
typedef struct adapter_case {
    void (*turn)(void *ctx); /* one turn of the library's loop, bounded */
    void *ctx;
} adapter_case;

static int run_until(adapter_case *ac, const calls *c, int n)
{
    int64_t end = dlock_fx_real_ms() + CASE_REAL_MS;

    while (c->n < n && dlock_fx_real_ms() < end)
        ac->turn(ac->ctx);
    return c->n;
}

static void exercise(dlock_loop *lp, dlock_client *c, adapter_case *ac, const char *name)
{
    dlock_rlock *l = NULL;
    calls waiter = {0, 1}, timed = {0, 1}, unlock = {0, 1};
    int64_t start;
    int held = 0;

    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    assert_int_equal(dlock_lock_as(l, "holder", 0), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "waiter", DLOCK_WAIT_FOREVER, 0, done,
                                      &waiter), 0);
    start = dlock_fx_real_ms();
    assert_int_equal(dlock_lock_async(lp, NULL, l, "timed", TIMED_MS, 0, done, &timed), 0);
    assert_int_equal(run_until(ac, &timed, 1), 1);
    assert_int_equal(timed.rc, DLOCK_ETIMEDOUT);
    assert_true(dlock_fx_real_ms() - start >= TIMED_MS);
    assert_int_equal(waiter.n, 0);
    /* the release, from this thread between turns: its message wakes the
     * loop through dlock's file descriptor */
    assert_int_equal(dlock_unlock_as(l, "holder"), 0);
    assert_int_equal(run_until(ac, &waiter, 1), 1);
    assert_int_equal(waiter.rc, 0);
    assert_int_equal(dlock_is_held_as(l, "waiter", &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "waiter", done, &unlock), 0);
    assert_int_equal(run_until(ac, &unlock, 1), 1);
    assert_int_equal(unlock.rc, 0);
    assert_int_equal(dlock_loop_pending(lp), 0);
    dlock_rlock_free(l);
}

static dlock_client *mock_client(void)
{
    dlock_client *c = NULL;

    assert_int_equal(dlock_client_connect(&c, "mock:", NULL, NULL, 0), 0);
    return c;
}

/* ---- libuv ---------------------------------------------------------------- */

static void uv_tick(uv_timer_t *t) { (void)t; }

static void uv_turn(void *ctx)
{
    uv_run((uv_loop_t *)ctx, UV_RUN_ONCE);
}

static void test_libuv(void **state)
{
    uv_loop_t loop;
    uv_timer_t tick; /* bounds each turn */
    dlock_client *c = mock_client();
    dlock_loop *lp = NULL;
    adapter_case ac = {uv_turn, &loop};

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    uv_timer_init(&loop, &tick);
    uv_timer_start(&tick, uv_tick, 50, 50);
    assert_int_equal(dlock_loop_new_libuv(&lp, c, &loop), 0);
    exercise(lp, c, &ac, "adapter-libuv");
    dlock_loop_free(lp);
    uv_close((uv_handle_t *)&tick, NULL);
    uv_run(&loop, UV_RUN_DEFAULT); /* the handles' closes */
    assert_int_equal(uv_loop_close(&loop), 0);
    dlock_client_free(c);
}

static void count_closed(void *arg)
{
    ++*(int *)arg;
}

/* dlock_loop_close on a libuv loop: uv_run alone (no dlock call by the
 * application) ends the wait, frees the dlock loop, which closes the
 * adapter's handles, and calls on_closed: the uv loop then closes. */
static void test_libuv_close(void **state)
{
    uv_loop_t loop;
    dlock_client *c = mock_client();
    dlock_loop *lp = NULL;
    dlock_rlock *l = NULL;
    calls waiter = {0, 1};
    int closed = 0;
    int64_t end = dlock_fx_real_ms() + CASE_REAL_MS;

    (void)state;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(dlock_loop_new_libuv(&lp, c, &loop), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "adapter-libuv-close"), 0);
    assert_int_equal(dlock_lock_as(l, "holder", 0), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "waiter", DLOCK_WAIT_FOREVER, 0, done,
                                      &waiter), 0);
    assert_int_equal(dlock_loop_close(lp, count_closed, &closed), 0);
    assert_int_equal(closed, 0);
    while (!closed && dlock_fx_real_ms() < end)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(closed, 1);
    assert_int_equal(waiter.n, 1);
    assert_int_equal(waiter.rc, DLOCK_ECANCELED);
    uv_run(&loop, UV_RUN_DEFAULT); /* the handles' closes */
    assert_int_equal(uv_loop_close(&loop), 0);
    assert_int_equal(dlock_unlock_as(l, "holder"), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

/* ---- libevent ------------------------------------------------------------- */

#ifdef DLOCK_TEST_NO_LIBEVENT
static void test_libevent(void **state)
{
    (void)state;
    print_message("libevent: not built (no libevent development files)\n");
}
#else
static void event_turn(void *ctx)
{
    struct timeval tv = {0, 50000};

    event_base_loopexit((struct event_base *)ctx, &tv);
    event_base_loop((struct event_base *)ctx, EVLOOP_ONCE);
}

static void test_libevent(void **state)
{
    struct event_base *base = event_base_new();
    dlock_client *c = mock_client();
    dlock_loop *lp = NULL;
    adapter_case ac = {event_turn, base};

    (void)state;
    assert_non_null(base);
    assert_int_equal(dlock_loop_new_libevent(&lp, c, base), 0);
    exercise(lp, c, &ac, "adapter-libevent");
    dlock_loop_free(lp);
    event_base_free(base);
    dlock_client_free(c);
}
#endif

/* ---- libev ---------------------------------------------------------------- */

static void ev_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop, (void)w, (void)revents;
}

static void ev_turn(void *ctx)
{
    ev_run((struct ev_loop *)ctx, EVRUN_ONCE);
}

static void test_libev(void **state)
{
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    ev_timer tick;
    dlock_client *c = mock_client();
    dlock_loop *lp = NULL;
    adapter_case ac = {ev_turn, loop};

    (void)state;
    assert_non_null(loop);
    ev_timer_init(&tick, ev_tick, 0.05, 0.05);
    ev_timer_start(loop, &tick);
    assert_int_equal(dlock_loop_new_libev(&lp, c, loop), 0);
    exercise(lp, c, &ac, "adapter-libev");
    dlock_loop_free(lp);
    ev_timer_stop(loop, &tick);
    ev_loop_destroy(loop);
    dlock_client_free(c);
}

int dlock_test_async_adapters(void);
int dlock_test_async_adapters(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_libuv),
        cmocka_unit_test(test_libuv_close),
        cmocka_unit_test(test_libevent),
        cmocka_unit_test(test_libev),
    };
    return DLOCK_RUN_GROUP("async adapters", tests, NULL, NULL);
}
