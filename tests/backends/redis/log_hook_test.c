/*
 * The log hook on a real Redis only: it hears a failed connect and the
 * reconnect after the harness restarts its redis-server, a subscription
 * restored meanwhile, and the client's reconnect counter follows; with no
 * hook nothing is called. The conformance side (extend, on_lost, the
 * renewal and lost-lock lines, exact metrics) is
 * tests/conformance/lease_control_cases.c.
 */
#include "../../harness/log_capture.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "dlock.h"


static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

typedef struct waiter {
    dlock_rlock *l;
    int rc, done; /* done: atomic */
} waiter;

static void *wait_lock(void *arg)
{
    waiter *w = arg;

    w->rc = dlock_lock(w->l, 60000);
    if (w->rc == 0)
        w->rc = dlock_unlock(w->l);
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* A lock held by another client makes a waiter subscribe; the server is
 * restarted under both; the hook hears the failed connects, the reconnect
 * and the restored subscription, the counter counts the reconnect, and no
 * line carries the password. */
static void test_log_hook_sees_reconnect(void **state)
{
    const char *const args[] = {"--requirepass", "s3cret-pw", NULL};
    dlock_redis_options ro = DLOCK_REDIS_OPTIONS_INIT;
    dlock_metrics m = DLOCK_METRICS_INIT;
    dlock_test_redis *r = NULL;
    dlock_backend *b = NULL;
    dlock_client *c = NULL, *c2 = NULL;
    dlock_rlock *l = NULL, *held = NULL;
    waiter w = {NULL, -1, 0};
    pthread_t th;
    char url[512], err[256] = "";
    int rc, i;

    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    snprintf(url, sizeof(url), "redis://:s3cret-pw@%s:%d", "127.0.0.1",
             dlock_test_redis_port(r));
    ro.reconnect_min_ms = 10;
    ro.reconnect_max_ms = 50;
    assert_int_equal(dlock_redis_backend_new(&b, url, &ro, err, sizeof(err)), 0);
    assert_int_equal(dlock_client_new(&c, b, NULL), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "observe:reconnect"), 0);
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_INFO), 0);

    assert_int_equal(dlock_lock(l, 60000), 0);
    assert_int_equal(dlock_unlock(l), 0);
    /* a waiter subscribed on the lock's channel while c2 holds it */
    assert_int_equal(dlock_client_connect(&c2, url, NULL, err, sizeof(err)), 0);
    assert_int_equal(dlock_reentrant_new(&held, c2, "observe:reconnect"), 0);
    assert_int_equal(dlock_lock(held, 60000), 0);
    w.l = l;
    assert_int_equal(pthread_create(&th, NULL, wait_lock, &w), 0);
    sleep_ms(300);
    assert_int_equal(dlock_test_redis_kill(r), 0);
    rc = dlock_try_lock(l, 0, 60000);
    assert_true(rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT);
    /* down: the next connect attempt (after the stale one) fails, and says so */
    for (i = 0; i < 100 && dlock_test_log_count("connect failed", NULL) == 0; i++) {
        sleep_ms(20);
        (void)dlock_try_lock(l, 0, 60000);
    }
    assert_true(dlock_test_log_count("warn", "connect failed") >= 1);
    assert_int_equal(dlock_test_redis_restart(r), 0);
    for (i = 0; i < 150; i++) {
        rc = dlock_try_lock(l, 0, 60000);
        if (rc == 0)
            break;
        sleep_ms(20);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(dlock_unlock(l), 0);
    /* the new server has no lock: the restored subscription's "look
     * again" lets the waiter in */
    for (i = 0; i < 500 && !__atomic_load_n(&w.done, __ATOMIC_ACQUIRE); i++)
        sleep_ms(20);
    if (!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE))
        dlock_client_cancel_waits(c);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    assert_true(dlock_test_log_count("info", "restored after a reconnect") >= 1);
    assert_true(dlock_test_log_count("info", "reconnected") >= 1);
    assert_int_equal(dlock_test_log_count("s3cret-pw", NULL), 0);
    assert_int_equal(dlock_client_metrics(c, &m), 0);
    assert_true(m.reconnects >= 1);

    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    dlock_rlock_free(held);
    dlock_client_free(c2);
    dlock_rlock_free(l);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
}

/* With no hook (the default) and after it is removed, nothing is called. */
static void test_no_hook_no_calls(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char err[256] = "";
    int i;

    (void)state;
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_DEBUG), 0);
    assert_int_equal(dlock_set_log(NULL, NULL, DLOCK_LOG_DEBUG), 0);
    dlock_test_log_reset();
    assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
    assert_int_equal(dlock_client_connect(&c, dlock_test_redis_url(r), NULL, err,
                                          sizeof(err)), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "observe:quiet"), 0);
    assert_int_equal(dlock_test_redis_kill(r), 0);
    for (i = 0; i < 3; i++)
        assert_int_not_equal(dlock_try_lock(l, 0, 1000), 0);
    assert_int_equal(dlock_test_redis_restart(r), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
    assert_int_equal(dlock_test_log_count("", NULL), 0);
    assert_string_equal(dlock_log_level_name(DLOCK_LOG_WARN), "warn");
    assert_string_equal(dlock_log_level_name(9), "?");
}

int dlock_test_redis_log_hook(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_hook_sees_reconnect),
        cmocka_unit_test(test_no_hook_no_calls),
    };
    return DLOCK_RUN_GROUP("redis_log_hook", tests, NULL, NULL);
}
