/*
 * Fault cases under Sentinel (issue 11): kill -9 of the master behind a
 * redis-sentinel:// URL, against a master, two replicas and three sentinels
 * (tests/harness/sentinels.h), and the failover figure. `make faults` only:
 * each failover takes seconds (down-after-milliseconds 1000, then the vote).
 *
 * Each case kills the current master, lets Sentinel promote a replica,
 * restarts the killed server (Sentinel turns it into a replica of the new
 * master) and waits until the set is ready for the next failover.
 */
#include "faults.h"

#include <dlock.h>
#include <dlock/redis.h>
#include <dlock/sys/backend.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/runner.h"
#include "../harness/sentinels.h"

#define MARGIN_MS 500
#define FAILOVER_LIMIT_MS 20000
#define FIGURE_RUNS 5

static dlock_test_sentinels set;

static int set_start(void **state)
{
    (void)state;
    return dlock_test_sentinels_start(&set, "dlock-faults") == 0 ? 0 : -1;
}

static int set_stop(void **state)
{
    (void)state;
    dlock_test_sentinels_stop(&set);
    return 0;
}

/* Kills the master with SIGKILL; returns its index (-1 on failure). */
static int kill_master(void)
{
    int m = dlock_test_sentinels_master(&set);
    if (m < 0 || dlock_test_redis_signal(set.data[m], SIGKILL) != 0)
        return -1;
    return m;
}

/* Brings the killed server back (as a replica) and waits for the set,
 * healing it (tests/harness/sentinels.h) within a loaded machine's bound. */
static void heal(int m)
{
    assert_int_equal(dlock_test_redis_restart(set.data[m]), 0);
    if (dlock_test_sentinels_heal(&set, 90000) != 0) {
        dlock_test_sentinels_describe(&set);
        fail_msg("the sentinel set did not get ready again");
    }
}

/* ---- kill -9 of the master with a holder, a waiter and budgets ---------- */

typedef struct waiter_arg {
    dlock_rlock *l;
    int rc;
    int64_t acquired_ms;
} waiter_arg;

static void *waiter(void *p)
{
    waiter_arg *a = p;
    a->rc = dlock_lock(a->l, 0); /* for ever: retries ECONN */
    __atomic_store_n(&a->acquired_ms, fault_now_ms(), __ATOMIC_RELEASE);
    if (a->rc == 0)
        dlock_unlock(a->l);
    return NULL;
}

typedef struct budget_arg {
    dlock_rlock *l;
    volatile int stop;
    int calls, over;
    int64_t worst_ms; /* time taken minus the budget, worst case */
    int last_rc;
} budget_arg;

#define BUDGET_MS 300

static void *budgeted(void *p)
{
    budget_arg *a = p;
    while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
        int64_t t0 = fault_now_ms(), dt;
        a->last_rc = dlock_try_lock(a->l, BUDGET_MS, 1000);
        dt = fault_now_ms() - t0 - BUDGET_MS;
        if (a->last_rc == 0)
            dlock_unlock(a->l);
        a->calls++;
        if (dt > a->worst_ms)
            a->worst_ms = dt;
        if (dt > MARGIN_MS)
            a->over++;
        fault_sleep_ms(20);
    }
    return NULL;
}

static void test_sentinel_kill9_master(void **state)
{
    dlock_client *ca, *cb, *cc;
    dlock_rlock *la = NULL, *lb = NULL, *lc = NULL;
    waiter_arg wa;
    budget_arg ba;
    pthread_t tw, tb;
    int64_t t_kill, t_switch, ttl = 0, ttl_max = 0, t_unlock;
    int m, now_m = -1, held = 0, renewed = 0;
    (void)state;

    /* watchdog 6 s: renewals every 2 s, so the lease outlives a failover
     * (about 2-3 s here) only if renewals reach the new master */
    ca = fault_client_new(set.url, 500, 500, 4, 6000);
    cb = fault_client_new(set.url, 500, 500, 4, 6000);
    cc = fault_client_new(set.url, 500, 500, 4, 6000);
    assert_int_equal(dlock_reentrant_new(&la, ca, "sentinel:kill9"), 0);
    assert_int_equal(dlock_reentrant_new(&lb, cb, "sentinel:kill9"), 0);
    assert_int_equal(dlock_reentrant_new(&lc, cc, "sentinel:kill9"), 0);
    assert_int_equal(dlock_lock(la, 0), 0);
    memset(&wa, 0, sizeof wa);
    memset(&ba, 0, sizeof ba);
    wa.l = lb;
    ba.l = lc;
    assert_int_equal(pthread_create(&tw, NULL, waiter, &wa), 0);
    assert_int_equal(pthread_create(&tb, NULL, budgeted, &ba), 0);
    fault_sleep_ms(500); /* the waiter is subscribed; replicas have the lock */

    t_kill = fault_now_ms();
    m = kill_master();
    assert_true(m >= 0);
    while (fault_now_ms() - t_kill < FAILOVER_LIMIT_MS) {
        now_m = dlock_test_sentinels_master(&set);
        if (now_m >= 0 && now_m != m)
            break;
        fault_sleep_ms(50);
    }
    t_switch = fault_now_ms();
    printf("    [sentinel] master %d killed; sentinels name %d after %lld ms\n", m,
           now_m, (long long)(t_switch - t_kill));
    assert_true(now_m >= 0 && now_m != m);

    /* the holder still holds it on the new master, and its watchdog renews
     * there: the TTL climbs back up within a renewal period or two */
    while (fault_now_ms() - t_switch < 8000) {
        if (dlock_remain_ttl(la, &ttl) == 0 && dlock_is_held(la, &held) == 0 && held) {
            if (ttl_max > 0 && ttl > ttl_max)
                renewed = 1;
            if (ttl > ttl_max || ttl_max == 0)
                ttl_max = ttl;
            if (renewed)
                break;
        }
        fault_sleep_ms(100);
    }
    printf("    [sentinel] holder: held %d, renewed on the new master %d after %lld ms "
           "(ttl %lld)\n", held, renewed, (long long)(fault_now_ms() - t_switch),
           (long long)ttl);
    assert_true(held);
    assert_true(renewed);
    /* the waiter is still waiting */
    assert_int_equal(__atomic_load_n(&wa.acquired_ms, __ATOMIC_ACQUIRE), 0);

    t_unlock = fault_now_ms();
    assert_int_equal(dlock_unlock(la), 0);
    pthread_join(tw, NULL);
    printf("    [sentinel] waiter acquired %lld ms after the unlock (%s)\n",
           (long long)(wa.acquired_ms - t_unlock), dlock_errname(wa.rc));
    assert_int_equal(wa.rc, 0);
    assert_true(wa.acquired_ms - t_unlock < 5000);

    __atomic_store_n(&ba.stop, 1, __ATOMIC_RELEASE);
    pthread_join(tb, NULL);
    printf("    [sentinel] %d budgeted calls (%d ms each): worst %lld ms past the "
           "budget, %d over the %d ms margin; last %s\n", ba.calls, BUDGET_MS,
           (long long)ba.worst_ms, ba.over, MARGIN_MS, dlock_errname(ba.last_rc));
    assert_int_equal(ba.over, 0);
    assert_true(ba.last_rc == 0 || ba.last_rc == DLOCK_ETIMEDOUT ||
                ba.last_rc == DLOCK_EBUSY);

    dlock_rlock_free(la);
    dlock_rlock_free(lb);
    dlock_rlock_free(lc);
    dlock_client_free(ca);
    dlock_client_free(cb);
    dlock_client_free(cc);
    heal(m);
}

/* ---- the figure: kill -9 to the first acquisition --------------------- */

typedef struct switch_seen {
    pthread_mutex_t mu;
    int64_t at_ms;
} switch_seen;

static void on_switch(void *arg, const char *channel, const char *msg, size_t len)
{
    switch_seen *s = arg;
    (void)channel;
    (void)msg;
    if (len == 0)
        return; /* a "look again" after a reconnect */
    pthread_mutex_lock(&s->mu);
    if (s->at_ms == 0)
        s->at_ms = fault_now_ms();
    pthread_mutex_unlock(&s->mu);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_sentinel_failover_figure(void **state)
{
    int64_t took[FIGURE_RUNS], sentinel_took[FIGURE_RUNS];
    dlock_client *c;
    dlock_rlock *l = NULL;
    int run;
    (void)state;

    c = fault_client_new(set.url, 500, 500, 4, 30000);
    assert_int_equal(dlock_reentrant_new(&l, c, "sentinel:figure"), 0);
    for (run = 0; run < FIGURE_RUNS; run++) {
        char url[64], err[256];
        dlock_backend *watch = NULL;
        dlock_subscription *sub = NULL;
        switch_seen seen;
        int64_t t0, t1 = 0;
        int m, s = run % DLOCK_TEST_NSENTINELS;

        /* Sentinel's own view: +switch-master on one sentinel */
        memset(&seen, 0, sizeof seen);
        pthread_mutex_init(&seen.mu, NULL);
        snprintf(url, sizeof url, "redis://127.0.0.1:%d",
                 dlock_test_redis_port(set.sentinel[s]));
        assert_int_equal(dlock_redis_backend_new(&watch, url, NULL, err, sizeof err), 0);
        assert_int_equal(dlock_backend_subscribe(watch, &sub, "+switch-master", on_switch,
                                                 &seen),
                         0);
        assert_int_equal(dlock_try_lock(l, 0, 1000), 0);
        assert_int_equal(dlock_unlock(l), 0);

        t0 = fault_now_ms();
        m = kill_master();
        assert_true(m >= 0);
        while (fault_now_ms() - t0 < FAILOVER_LIMIT_MS) {
            if (dlock_try_lock(l, 0, 1000) == 0) {
                t1 = fault_now_ms();
                dlock_unlock(l);
                break;
            }
            fault_sleep_ms(10);
        }
        assert_true(t1 > 0);
        for (int i = 0; i < 100; i++) {
            pthread_mutex_lock(&seen.mu);
            if (seen.at_ms) {
                pthread_mutex_unlock(&seen.mu);
                break;
            }
            pthread_mutex_unlock(&seen.mu);
            fault_sleep_ms(20);
        }
        took[run] = t1 - t0;
        sentinel_took[run] = seen.at_ms ? seen.at_ms - t0 : -1;
        printf("    [sentinel] run %d: first acquisition %lld ms after kill -9; "
               "+switch-master after %lld ms\n", run + 1, (long long)took[run],
               (long long)sentinel_took[run]);
        dlock_backend_unsubscribe(watch, sub);
        dlock_backend_free(watch);
        pthread_mutex_destroy(&seen.mu);
        heal(m);
    }
    qsort(took, FIGURE_RUNS, sizeof took[0], cmp64);
    qsort(sentinel_took, FIGURE_RUNS, sizeof sentinel_took[0], cmp64);
    printf("FIGURE sentinel failover (%d runs, down-after-milliseconds 1000): kill -9 "
           "-> first acquisition median %lld ms, max %lld ms; kill -9 -> "
           "+switch-master median %lld ms, max %lld ms\n", FIGURE_RUNS,
           (long long)took[FIGURE_RUNS / 2], (long long)took[FIGURE_RUNS - 1],
           (long long)sentinel_took[FIGURE_RUNS / 2],
           (long long)sentinel_took[FIGURE_RUNS - 1]);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

int dlock_test_faults_sentinel(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sentinel_kill9_master),
        cmocka_unit_test(test_sentinel_failover_figure),
    };
    return DLOCK_RUN_GROUP("faults (slow): sentinel failover", tests, set_start, set_stop);
}
