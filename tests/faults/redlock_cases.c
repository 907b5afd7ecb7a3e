/*
 * Redlock under server faults (issue 13), `make faults` only (they kill,
 * stop and restart servers and wait for real leases): five redis-servers on
 * free loopback ports, one Redlock over all five.
 *
 *  - 2 of 5 killed: a majority is left, the lock is acquired and released;
 *  - 3 of 5 killed: DLOCK_ECONN or DLOCK_ETIMEDOUT, the detail names the
 *    nodes that failed, nothing is left held on the two live ones;
 *  - one server SIGSTOPped: the per-node timeout bounds the acquisition
 *    (measured and printed, not asserted);
 *  - a node restarted empty while a lease-0 lock is held: the holder keeps
 *    its majority and the renewal sets the key there again.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/redis_server.h"
#include "../harness/runner.h"
#include "dlock.h"
#include "faults.h"

#define N 5

static dlock_test_redis *servers[N];
static int lost;

static void on_lost(void *arg, const char *name, const char *owner)
{
    (void)arg, (void)name, (void)owner;
    __atomic_add_fetch(&lost, 1, __ATOMIC_SEQ_CST);
}

typedef struct env {
    dlock_client *c[N];
    dlock_rlock *l;
    char name[64];
} env;

static int setup(void **state)
{
    static unsigned counter;
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    env *e = calloc(1, sizeof(*e));
    char err[256];
    int i;

    if (!e)
        return -1;
    *state = e;
    o.watchdog_timeout_ms = 900;
    o.on_lost = on_lost;
    __atomic_store_n(&lost, 0, __ATOMIC_SEQ_CST);
    for (i = 0; i < N; i++) {
        if (dlock_test_redis_signal(servers[i], SIGCONT) != 0 &&
            dlock_test_redis_restart(servers[i]) != 0)
            return -1;
        if (dlock_client_connect(&e->c[i], dlock_test_redis_url(servers[i]), &o, err,
                                 sizeof(err)) != 0) {
            fprintf(stderr, "redlock faults: %s\n", err);
            return -1;
        }
    }
    snprintf(e->name, sizeof(e->name), "dlock-test:redlock-fault:%u:%ld", ++counter,
             (long)getpid());
    return dlock_redlock_new(&e->l, e->c, N, e->name) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    env *e = *state;
    int i;

    for (i = 0; i < N; i++)
        dlock_test_redis_signal(servers[i], SIGCONT);
    if (!e)
        return 0;
    dlock_rlock_free(e->l);
    for (i = 0; i < N; i++)
        dlock_client_free(e->c[i]);
    free(e);
    return 0;
}

static long long exists(int i, const char *key)
{
    const char *argv[] = {"EXISTS", key, NULL};
    char out[32];

    if (dlock_test_redis_command(servers[i], out, sizeof(out), argv) != 0)
        return -1;
    return atoll(out);
}

static void two_of_five_killed_still_acquires(void **state)
{
    env *e = *state;
    int64_t t0;
    int rc;

    assert_int_equal(dlock_test_redis_kill(servers[3]), 0);
    assert_int_equal(dlock_test_redis_kill(servers[4]), 0);
    t0 = fault_now_ms();
    rc = dlock_try_lock(e->l, 3000, 10000);
    printf("  redlock, 2 of 5 servers killed: try_lock %s in %lld ms\n",
           dlock_errname(rc), (long long)(fault_now_ms() - t0));
    assert_int_equal(rc, 0);
    assert_int_equal(exists(0, e->name), 1);
    assert_int_equal(dlock_unlock(e->l), 0);
    assert_int_equal(exists(0, e->name), 0);
}

static void three_of_five_killed_fails(void **state)
{
    env *e = *state;
    const char *msg;
    int64_t t0;
    int rc, i;

    for (i = 2; i < N; i++)
        assert_int_equal(dlock_test_redis_kill(servers[i]), 0);
    t0 = fault_now_ms();
    rc = dlock_try_lock(e->l, 500, 10000);
    msg = dlock_errmsg(e->l);
    printf("  redlock, 3 of 5 servers killed: try_lock(500) %s in %lld ms: %s\n",
           dlock_errname(rc), (long long)(fault_now_ms() - t0), msg);
    assert_true(rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT);
    assert_non_null(strstr(msg, "node 2"));
    assert_non_null(strstr(msg, "node 3"));
    assert_non_null(strstr(msg, "node 4"));
    /* nothing left behind on the live ones */
    assert_int_equal(exists(0, e->name), 0);
    assert_int_equal(exists(1, e->name), 0);
    /* wait 0 as well */
    rc = dlock_try_lock(e->l, 0, 10000);
    assert_true(rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT);
    assert_int_equal(exists(0, e->name), 0);
}

static void stopped_server_bounded_by_node_timeout(void **state)
{
    env *e = *state;
    int64_t t0, took, unlock_took;
    int rc, i;

    assert_int_equal(dlock_redlock_set_node_timeout(e->l, 100), 0);
    /* warm connections first, so that the figure is the stall alone */
    assert_int_equal(dlock_try_lock(e->l, 2000, 10000), 0);
    assert_int_equal(dlock_unlock(e->l), 0);
    assert_int_equal(dlock_test_redis_signal(servers[4], SIGSTOP), 0);
    for (i = 0; i < 3; i++) {
        t0 = fault_now_ms();
        rc = dlock_try_lock(e->l, 5000, 10000);
        took = fault_now_ms() - t0;
        assert_int_equal(rc, 0);
        t0 = fault_now_ms();
        assert_int_equal(dlock_unlock(e->l), 0);
        unlock_took = fault_now_ms() - t0;
        printf("  redlock, 1 of 5 servers SIGSTOPped, node timeout 100 ms: "
               "acquired in %lld ms, unlock %lld ms (backend command timeout)\n",
               (long long)took, (long long)unlock_took);
    }
    assert_int_equal(dlock_test_redis_signal(servers[4], SIGCONT), 0);
}

static void restarted_node_reestablished(void **state)
{
    env *e = *state;
    int held = 0, k;

    assert_int_equal(dlock_lock(e->l, 0), 0);
    assert_int_equal(exists(0, e->name), 1);
    assert_int_equal(dlock_test_redis_restart(servers[0]), 0); /* empty */
    assert_int_equal(exists(0, e->name), 0);
    for (k = 0; k < 60 && exists(0, e->name) != 1; k++)
        fault_sleep_ms(100);
    printf("  redlock, node restarted empty while held: key back after ~%d ms\n",
           k * 100);
    assert_int_equal(exists(0, e->name), 1);
    fault_sleep_ms(1000); /* past a whole lease */
    assert_int_equal(dlock_is_held(e->l, &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(__atomic_load_n(&lost, __ATOMIC_SEQ_CST), 0);
    assert_int_equal(dlock_unlock(e->l), 0);
    for (k = 0; k < N; k++)
        assert_int_equal(exists(k, e->name), 0);
}

/* Uncontended lock+unlock pairs per second, same run: a single-node
 * reentrant lock, Redlock over 3 and 5 nodes, MultiLock of 3 members on 3
 * servers. Printed, not asserted. */
static double pairs_per_s(dlock_rlock *l, int64_t ms)
{
    int64_t t0 = fault_now_ms(), t;
    long pairs = 0;

    do {
        assert_int_equal(dlock_lock(l, 30000), 0);
        assert_int_equal(dlock_unlock(l), 0);
        pairs++;
    } while ((t = fault_now_ms() - t0) < ms);
    return pairs * 1000.0 / (double)t;
}

static void redlock_throughput(void **state)
{
    env *e = *state;
    dlock_rlock *single = NULL, *r3 = NULL, *members[3], *m3 = NULL;
    double one, three, five, multi;
    char name[96];
    int i;

    assert_int_equal(dlock_reentrant_new(&single, e->c[0], e->name), 0);
    assert_int_equal(dlock_redlock_new(&r3, e->c, 3, e->name), 0);
    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "%s:m%d", e->name, i);
        assert_int_equal(dlock_reentrant_new(&members[i], e->c[i], name), 0);
    }
    assert_int_equal(dlock_multilock_new(&m3, members, 3), 0);
    pairs_per_s(e->l, 300); /* warm every connection */
    one = pairs_per_s(single, 2000);
    three = pairs_per_s(r3, 2000);
    five = pairs_per_s(e->l, 2000);
    multi = pairs_per_s(m3, 2000);
    printf("  uncontended lock+unlock pairs/s (2 s each, loopback, loaded 2-core box): "
           "single node %.0f, Redlock n=3 %.0f (%.2f), n=5 %.0f (%.2f), "
           "MultiLock of 3 %.0f (%.2f)\n", one, three, three / one, five, five / one,
           multi, multi / one);
    assert_true(one > 0 && three > 0 && five > 0 && multi > 0);
    dlock_rlock_free(m3);
    for (i = 0; i < 3; i++)
        dlock_rlock_free(members[i]);
    dlock_rlock_free(r3);
    dlock_rlock_free(single);
}

int dlock_test_faults_redlock(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test_setup_teardown(two_of_five_killed_still_acquires, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(three_of_five_killed_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(stopped_server_bounded_by_node_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(restarted_node_reestablished, setup, teardown),
        cmocka_unit_test_setup_teardown(redlock_throughput, setup, teardown),
    };
    int i, up = 1, failed;

    for (i = 0; i < N; i++)
        up &= dlock_test_redis_start(&servers[i], NULL) == 0;
    if (!up) {
        fprintf(stderr, "redlock faults: cannot start %d redis-servers\n", N);
        failed = dlock_test_count(5, 5);
    } else {
        failed = DLOCK_RUN_GROUP("redlock faults (5 servers)", cases, NULL, NULL);
    }
    for (i = 0; i < N; i++) {
        dlock_test_redis_stop(servers[i]);
        servers[i] = NULL;
    }
    return failed;
}
