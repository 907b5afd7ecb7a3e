/*
 * Replica-synced writes under failover (issue 11): does a lock survive a
 * kill -9 of the master right after its acquisition returned? Against a
 * master, two replicas and three sentinels (tests/harness/sentinels.h).
 *
 * Each run takes a fresh lock name with a long fixed lease, kills the
 * master with SIGKILL as soon as the acquisition returns, waits until the
 * sentinels name another master, and then asks as a second client: if it
 * gets the lock, the grant did not reach the promoted replica (a double
 * grant). With sync_replicas=1 the acquisition only returned once a
 * replica had it: 0 double grants is asserted, and the holder is asserted
 * to hold it on the new master. The same runs without the option print how
 * often the lock was lost (not asserted: it depends on timing). Runs
 * alternate between the two, DLOCK_SYNC_FAILOVER_RUNS each (default 10).
 */
#include "faults.h"

#include <dlock.h>
#include <dlock/redis.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/runner.h"
#include "../harness/sentinels.h"

#define FAILOVER_LIMIT_MS 20000
#define LEASE_MS 60000

static dlock_test_sentinels set;

static int set_start(void **state)
{
    (void)state;
    return dlock_test_sentinels_start(&set, "dlock-sync") == 0 ? 0 : -1;
}

static int set_stop(void **state)
{
    (void)state;
    dlock_test_sentinels_stop(&set);
    return 0;
}

static void replica_of(dlock_test_redis *r, int master)
{
    char out[256], port[16];
    const char *argv[] = {"REPLICAOF", "127.0.0.1", port, NULL};
    snprintf(port, sizeof port, "%d", dlock_test_redis_port(set.data[master]));
    assert_int_equal(dlock_test_redis_command(r, out, sizeof out, argv), 0);
}

/* Enough for the next failover (lighter than dlock_test_sentinels_
 * wait_ready, which also waits for the sentinels' own replica lists): the
 * sentinels agree on a master, and every other data node is its replica,
 * connected and in step at the master's offset. A replica still in its
 * first sync could be promoted without the grant the others acknowledged.
 * -1 after timeout_ms. */
static int next_ready(int timeout_ms)
{
    const char *role[] = {"ROLE", NULL};
    int64_t t0 = fault_now_ms();
    while (fault_now_ms() - t0 < timeout_ms) {
        char out[1024];
        int m = dlock_test_sentinels_master(&set), i, agree = 1;
        for (i = 0; i < DLOCK_TEST_NSENTINELS && m >= 0; i++) {
            char a[256];
            const char *q[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", set.name, NULL};
            char want[32];
            snprintf(want, sizeof want, "\n%d", dlock_test_redis_port(set.data[m]));
            if (dlock_test_redis_command(set.sentinel[i], a, sizeof a, q) != 0 ||
                !strstr(a, want))
                agree = 0;
        }
        /* ROLE of a master: "master", offset, then ip, port, offset per
         * connected replica */
        if (m >= 0 && agree &&
            dlock_test_redis_command(set.data[m], out, sizeof out, role) == 0 &&
            strncmp(out, "master\n", 7) == 0) {
            char *line[16];
            int n = 0;
            char *p = out;
            while (n < 16 && (line[n] = strsep(&p, "\n")) != NULL)
                n++;
            if (n == 2 + 3 * (DLOCK_TEST_NDATA - 1)) {
                int synced = 1;
                for (i = 0; i < DLOCK_TEST_NDATA - 1; i++)
                    if (strcmp(line[4 + 3 * i], line[1]) != 0)
                        synced = 0;
                if (synced)
                    return 0;
            }
        }
        fault_sleep_ms(100);
    }
    return -1;
}

/* One run: 1 when a second client got the lock after the failover (the
 * grant was lost), 0 when it was still held; *holder_held: the first
 * client still holds it on the new master. */
static int one_run(dlock_client *holder, dlock_client *other, const char *name,
                   int *holder_held)
{
    dlock_rlock *h = NULL, *o = NULL;
    int64_t t0;
    int m, now_m = -1, rc, lost = -1;

    if (next_ready(30000) != 0)
        fail_msg("no master with a replica to fail over to");
    assert_int_equal(dlock_reentrant_new(&h, holder, name), 0);
    assert_int_equal(dlock_reentrant_new(&o, other, name), 0);
    /* retried through the previous run's healing */
    for (t0 = fault_now_ms(); (rc = dlock_try_lock(h, 1000, LEASE_MS)) != 0;) {
        if (rc != DLOCK_ECONN || fault_now_ms() - t0 > FAILOVER_LIMIT_MS)
            fail_msg("acquisition before the kill: %s: %s", dlock_errname(rc),
                     dlock_errmsg(h));
    }
    m = dlock_test_sentinels_master(&set);
    assert_true(m >= 0);
    assert_int_equal(dlock_test_redis_signal(set.data[m], SIGKILL), 0);

    t0 = fault_now_ms();
    while (fault_now_ms() - t0 < FAILOVER_LIMIT_MS) {
        now_m = dlock_test_sentinels_master(&set);
        if (now_m >= 0 && now_m != m)
            break;
        fault_sleep_ms(50);
    }
    assert_true(now_m >= 0 && now_m != m);
    /* the second client's verdict, once the clients reach the new master */
    while (lost < 0 && fault_now_ms() - t0 < FAILOVER_LIMIT_MS) {
        rc = dlock_try_lock(o, 0, 1000);
        if (rc == 0) {
            lost = 1;
            dlock_unlock(o);
        } else if (rc == DLOCK_EBUSY) {
            lost = 0;
        } else {
            fault_sleep_ms(50);
        }
    }
    assert_true(lost >= 0);
    *holder_held = 0;
    for (t0 = fault_now_ms(); fault_now_ms() - t0 < 5000;) {
        if (dlock_is_held(h, holder_held) == 0)
            break;
        fault_sleep_ms(50);
    }
    if (!lost)
        dlock_unlock(h); /* ESYNC is fine: the replicas are catching up */
    dlock_rlock_free(h);
    dlock_rlock_free(o);

    /* back as a replica of the new master at once: the sentinels would
     * take ~10 s (their INFO period) to do it themselves */
    assert_int_equal(dlock_test_redis_restart(set.data[m]), 0);
    replica_of(set.data[m], now_m);
    return lost;
}

static void test_sync_failover(void **state)
{
    const char *env = getenv("DLOCK_SYNC_FAILOVER_RUNS");
    int runs = env && atoi(env) > 0 ? atoi(env) : 10;
    char url[600], name[64];
    dlock_client *synced, *unsynced, *other;
    int run, lost_sync = 0, lost_plain = 0, held_sync = 0;
    int64_t t0 = fault_now_ms();
    (void)state;

    snprintf(url, sizeof url, "%s&sync_replicas=1&sync_timeout_ms=400", set.url);
    synced = fault_client_new(url, 500, 500, 2, 30000);
    unsynced = fault_client_new(set.url, 500, 500, 2, 30000);
    other = fault_client_new(set.url, 500, 500, 2, 30000);
    for (run = 0; run < 2 * runs; run++) {
        int sync = run % 2 == 0, held = 0, lost;
        snprintf(name, sizeof name, "sync:failover:%d", run);
        lost = one_run(sync ? synced : unsynced, other, name, &held);
        if (sync) {
            lost_sync += lost;
            held_sync += held;
        } else {
            lost_plain += lost;
        }
        printf("    [sync] run %d (%s): lock %s after the failover%s (%.1f s)\n",
               run + 1, sync ? "sync_replicas=1" : "no sync", lost ? "LOST" : "kept",
               held ? ", holder holds it" : "",
               (double)(fault_now_ms() - t0) / 1000.0);
    }
    printf("FIGURE sync failover (kill -9 of the master right after the "
           "acquisition returned, %d runs each, %.0f s): sync_replicas=1: %d of %d "
           "locks lost (double grants); no sync: %d of %d lost\n",
           runs, (double)(fault_now_ms() - t0) / 1000.0, lost_sync, runs,
           lost_plain, runs);
    assert_int_equal(lost_sync, 0);
    assert_int_equal(held_sync, runs);
    dlock_client_free(synced);
    dlock_client_free(unsynced);
    dlock_client_free(other);
}

int dlock_test_faults_sync(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_failover),
    };
    return DLOCK_RUN_GROUP("faults (slow): sync_replicas under failover", tests,
                           set_start, set_stop);
}
