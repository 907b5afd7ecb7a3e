/*
 * The conformance cases of the count-down latch (api/dlock/latch.h): every
 * awaiter released at zero, a timed await that ends exactly at its wait,
 * try-set, count, delete and the messages on the latch's channel, bad input.
 * Each case is written once against the fixture (tests/harness/fixture.h)
 * and runs on every backend: dlock_test_latch("mock"),
 * dlock_test_latch("redis"), ...
 *
 * The cases that put every object of the semaphore file under one name (a
 * key of another type, objects outliving their client, a fork() child)
 * take the latch along: they are in tests/conformance/semaphore_cases.c.
 *
 * On the mock, timed waits run on the virtual clock: nothing sleeps, and
 * waits end exactly when they should. On Redis the times are real and the
 * bounds are loose. Helper threads record what they see; assertions run on
 * the test thread after the helper has been joined.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/recorder.h"
#include "../harness/runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

static void free_latch(void *o) { dlock_latch_free(o); }

/* A latch on c, freed by the case's teardown. */
static dlock_latch *latch(dlock_fx *fx, dlock_client *c, const char *name)
{
    dlock_latch *l = NULL;
    assert_int_equal(dlock_latch_new(&l, c, name), 0);
    return dlock_fx_keep(fx, l, free_latch);
}

static int64_t latch_count(dlock_latch *l)
{
    int64_t v = -999;
    assert_int_equal(dlock_latch_count(l, &v), 0);
    return v;
}

/* ---- a helper thread that awaits ----------------------------------------- */

typedef struct awaiter {
    dlock_fx *fx;
    dlock_latch *latch;
    int64_t wait_ms; /* < 0: dlock_latch_await, else dlock_latch_await_for */
    int rc;
    int64_t start_v, end_v, start_real, end_real;
    dlock_fx_thread t;
} awaiter;

static void await_main(void *arg)
{
    awaiter *a = arg;

    a->start_v = dlock_fx_now(a->fx);
    a->start_real = dlock_fx_real_ms();
    a->rc = a->wait_ms < 0 ? dlock_latch_await(a->latch)
                           : dlock_latch_await_for(a->latch, a->wait_ms);
    a->end_real = dlock_fx_real_ms();
    a->end_v = dlock_fx_now(a->fx);
}

static void await_start(awaiter *a, dlock_fx *fx, dlock_latch *l, int64_t wait_ms)
{
    *a = (awaiter){.fx = fx, .latch = l, .wait_ms = wait_ms, .rc = 1};
    dlock_fx_start(&a->t, await_main, a);
}

/* Joins a, waiting up to real_ms of real time: 0, or -1 when the latch had
 * to be opened (deleted) to free it. */
static int await_join(dlock_fx *fx, awaiter *a, int64_t real_ms)
{
    int late = dlock_fx_wait_done(&a->t, real_ms) != 0;

    if (late) {
        fprintf(stderr, "  [%s] awaiter still blocked after %" PRId64 " ms: opening the latch\n",
                fx->backend, real_ms);
        dlock_latch_delete(a->latch, NULL);
    }
    dlock_fx_join(fx, &a->t, 10000, NULL);
    return late ? -1 : 0;
}

/* ---- the cases ----------------------------------------------------------- */

#define AWAITERS 5

static void latch_releases_every_awaiter(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_latch *a = latch(fx, fx->c1, fx->name), *b = latch(fx, fx->c2, fx->name);
    awaiter w[AWAITERS];
    int i, set = -1, blocked, waiting = 0, joined = 0, base;
    int64_t v0;

    assert_int_equal(dlock_latch_try_set_count(a, &set, 2), 0);
    assert_int_equal(set, 1);
    base = dlock_fx_settle(fx);
    for (i = 0; i < AWAITERS; i++)
        await_start(&w[i], fx, i % 2 ? b : a, i == 0 ? 2 * fx->long_lease_ms : -1);
    blocked = dlock_fx_wait_blocked_n(fx, base, AWAITERS, 300);
    assert_int_equal(dlock_latch_count_down(b), 0);
    assert_int_equal(latch_count(a), 1);
    for (i = 0; i < AWAITERS; i++)
        waiting += dlock_fx_still_waiting(fx, &w[i].t);
    v0 = dlock_fx_now(fx);
    assert_int_equal(dlock_latch_count_down(a), 0);
    for (i = 0; i < AWAITERS; i++)
        joined |= await_join(fx, &w[i], 10000);

    assert_int_equal(blocked, 0);
    assert_int_equal(waiting, AWAITERS);
    assert_int_equal(joined, 0);
    for (i = 0; i < AWAITERS; i++) {
        assert_int_equal(w[i].rc, 0);
        if (fx->is_mock)
            assert_int_equal(w[i].end_v, v0);
    }
    assert_int_equal(latch_count(b), 0);
    assert_int_equal(dlock_fx_call_int(fx->c2, "exists", fx->name, 0, NULL), 0);
    /* open: awaiting returns at once */
    assert_int_equal(dlock_latch_await(a), 0);
    assert_int_equal(dlock_latch_await_for(b, 0), 0);
}

static void latch_await_times_out(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_latch *a = latch(fx, fx->c1, fx->name), *b = latch(fx, fx->c2, fx->name);
    const int64_t wait = fx->is_mock ? 5000 : 150;
    int blocked = 0, early = 0, joined, base;
    awaiter w;

    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    assert_int_equal(dlock_latch_await_for(b, 0), DLOCK_ETIMEDOUT);
    assert_true(strlen(dlock_latch_errmsg(b)) > 0);
    base = dlock_fx_settle(fx);
    await_start(&w, fx, b, wait);
    if (fx->is_mock) {
        blocked = dlock_fx_wait_blocked(fx, base, 0);
        dlock_fx_advance(fx, wait - 1);
        early = dlock_fx_done(&w.t);
        dlock_fx_advance(fx, 1);
    }
    joined = await_join(fx, &w, fx->is_mock ? 5000 : wait + 5000);

    assert_int_equal(blocked, 0);
    assert_int_equal(early, 0);
    assert_int_equal(joined, 0);
    assert_int_equal(w.rc, DLOCK_ETIMEDOUT);
    if (fx->is_mock)
        assert_int_equal(w.end_v - w.start_v, wait);
    else
        assert_true(w.end_real - w.start_real >= wait - 1);
    assert_int_equal(latch_count(a), 1);
}

/* Try-set, count, delete and the messages: "1" for a new count, "0" at zero. */
static void latch_set_count_delete(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_latch *a = latch(fx, fx->c1, fx->name);
    char channel[200], buf[64];
    recorder rec;
    int set = -1, existed = -1, n;

    /* the channel: the name in braces unless it has some (the key rule) */
    snprintf(channel, sizeof(channel),
             strchr(fx->name, '{') ? "redisson_countdownlatch__channel__%s"
                                   : "redisson_countdownlatch__channel__{%s}",
             fx->name);
    recorder_start(&rec, fx->c2, channel);
    assert_int_equal(latch_count(a), 0);
    assert_int_equal(dlock_latch_count_down(a), 0); /* open: nothing happens */
    assert_int_equal(dlock_fx_call_int(fx->c1, "exists", fx->name, 0, NULL), 0);
    assert_int_equal(dlock_latch_try_set_count(a, &set, 3), 0);        /* "1" */
    assert_int_equal(set, 1);
    assert_int_equal(dlock_latch_try_set_count(a, &set, 5), 0);
    assert_int_equal(set, 0);
    assert_int_equal(latch_count(a), 3);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "3");
    assert_int_equal(dlock_latch_count_down(a), 0);
    assert_int_equal(latch_count(a), 2);
    assert_int_equal(dlock_latch_delete(a, &existed), 0);              /* "0" */
    assert_int_equal(existed, 1);
    assert_int_equal(latch_count(a), 0);
    assert_int_equal(dlock_latch_delete(a, &existed), 0);
    assert_int_equal(existed, 0);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);        /* "1" */
    assert_int_equal(dlock_latch_count_down(a), 0);                    /* "0" */
    assert_int_equal(dlock_fx_call_int(fx->c1, "exists", fx->name, 0, NULL), 0);
    n = recorder_count(&rec, 4);
    recorder_stop(&rec);
    assert_int_equal(n, 4);
    assert_string_equal(rec.msgs[0], "1");
    assert_string_equal(rec.msgs[1], "0");
    assert_string_equal(rec.msgs[2], "1");
    assert_string_equal(rec.msgs[3], "0");
}

static void latch_bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_latch *a = latch(fx, fx->c1, fx->name), *n = (dlock_latch *)&n;
    int64_t v;

    assert_int_equal(dlock_latch_new(NULL, fx->c1, "x"), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_new(&n, NULL, "x"), DLOCK_EINVAL);
    assert_null(n);
    dlock_latch_free(NULL);
    assert_null(dlock_latch_name(NULL));
    assert_string_equal(dlock_latch_name(a), fx->name);
    assert_non_null(dlock_latch_errmsg(NULL));
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, INT64_MAX), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_await_for(a, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_count(a, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_count(NULL, &v), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_count_down(NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_await(NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_delete(NULL, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_fx_call_int(fx->c1, "exists", fx->name, 0, NULL), 0);
}

/* ---- the group ----------------------------------------------------------- */

static const struct CMUnitTest latch_cases[] = {
    DLOCK_FX_CASE(latch_releases_every_awaiter),
    DLOCK_FX_CASE(latch_await_times_out),
    DLOCK_FX_CASE(latch_set_count_delete),
    DLOCK_FX_CASE(latch_bad_input),
};

/* Runs every case on backend ("mock", or a Redis row whose server URL main
 * has set). Returns the number of failures. */
int dlock_test_latch(const char *backend);
int dlock_test_latch(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("latch", backend, latch_cases);
}
