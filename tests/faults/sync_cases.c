/*
 * Replica-synced writes under failover (issues 11 and 32 §7): is a lock
 * lost when the master dies before its replicas have the grant? Against a
 * master, two replicas and three sentinels (tests/harness/sentinels.h).
 *
 * Each run makes the window in which asynchronous replication loses a
 * grant, for certain: both replicas are pointed at the master through a
 * test proxy (tests/faults/proxy.c), and the proxies are paused (a black
 * hole: the replicas' links stay open, nothing passes) before the
 * acquisition. A watcher resumes them as soon as a client of the master
 * blocks in WAIT, which only a synced acquisition does. The holder takes a
 * fresh lock name with a long fixed lease; the master is killed with
 * SIGKILL as soon as the acquisition returns, the proxies drop what they
 * held, the sentinels promote a replica, and a second client asks: if it
 * gets the lock, the grant was lost (a double grant).
 *  - no sync: the acquisition returns while the links are paused, so no
 *    replica has the grant: every run loses the lock (asserted: the
 *    window is certain, not luck);
 *  - sync_replicas=2 (both replicas): the acquisition's WAIT resumes the
 *    links and returns once both replicas acknowledged, so no run loses
 *    it and the holder holds it on the new master (asserted).
 * A run in which a sentinel re-pointed a replica at the master directly
 * before the kill (it does so 3 s or more after seeing it replicate
 * through the proxy) proved nothing: it is void, said so, and done again.
 * Runs alternate, DLOCK_SYNC_FAILOVER_RUNS of each (default 10), and end
 * with the figure, as a line and as a JSON line.
 *
 * Between runs the set is healed (dlock_test_sentinels_heal): what the run
 * killed is started again and made a replica, and the next run starts
 * only once no sentinel is still failing over and both replicas are in
 * step with the master. The bounds are those of a loaded 2-core machine:
 * a sentinel that misses its timer by 2 s goes into TILT for 30 s.
 */
#include "faults.h"

#include <dlock.h>
#include <dlock/redis.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/runner.h"
#include "../harness/sentinels.h"

#define FAILOVER_LIMIT_MS 60000 /* the vote, or a TILT (30 s) before it */
#define HEAL_LIMIT_MS 90000
#define LEASE_MS 60000
#define SYNC_REPLICAS (DLOCK_TEST_NDATA - 1)
#define SYNC_TIMEOUT_MS 5000

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

static void replica_of(dlock_test_redis *r, int port)
{
    char out[256], p[16];
    const char *argv[] = {"REPLICAOF", "127.0.0.1", p, NULL};
    snprintf(p, sizeof p, "%d", port);
    assert_int_equal(dlock_test_redis_command(r, out, sizeof out, argv), 0);
    assert_int_equal(strncmp(out, "OK", 2), 0); /* or "OK Already connected..." */
}

/* 1 when r's ROLE says it replicates from 127.0.0.1:port (connected, if
 * asked), 0 otherwise. */
static int replicates_from(dlock_test_redis *r, int port, int connected)
{
    char out[512], want[64];
    const char *role[] = {"ROLE", NULL};
    snprintf(want, sizeof want, "slave\n127.0.0.1\n%d\n%s", port,
             connected ? "connected\n" : "");
    return dlock_test_redis_command(r, out, sizeof out, role) == 0 &&
           strncmp(out, want, strlen(want)) == 0;
}

/* The replicas' links to the master m, one proxy each (NULL for m). */
typedef struct links {
    fault_proxy *proxy[DLOCK_TEST_NDATA];
} links;

static void links_set(links *l, fault_proxy_mode mode)
{
    int i;
    for (i = 0; i < DLOCK_TEST_NDATA; i++)
        if (l->proxy[i])
            fault_proxy_set(l->proxy[i], mode, 0);
}

static void links_stop(links *l)
{
    int i;
    for (i = 0; i < DLOCK_TEST_NDATA; i++) {
        fault_proxy_stop(l->proxy[i]);
        l->proxy[i] = NULL;
    }
}

/* Points every replica of m at it through a proxy of its own and waits
 * until both replicate through it, in step (a partial resync: the same
 * master). */
static void links_open(links *l, int m)
{
    int64_t t0 = fault_now_ms();
    int i, ok = 0;
    memset(l, 0, sizeof *l);
    for (i = 0; i < DLOCK_TEST_NDATA; i++) {
        if (i == m)
            continue;
        assert_int_equal(fault_proxy_start(&l->proxy[i],
                                           dlock_test_redis_port(set.data[m])), 0);
        replica_of(set.data[i], fault_proxy_port(l->proxy[i]));
    }
    while (!ok && fault_now_ms() - t0 < HEAL_LIMIT_MS) {
        ok = dlock_test_master_in_step(set.data[m], DLOCK_TEST_NDATA - 1) == 0;
        for (i = 0; i < DLOCK_TEST_NDATA && ok; i++)
            if (i != m && !replicates_from(set.data[i], fault_proxy_port(l->proxy[i]), 1))
                ok = 0;
        if (!ok)
            fault_sleep_ms(50);
    }
    if (!ok) {
        dlock_test_sentinels_describe(&set);
        fail_msg("the replicas did not replicate through the proxies");
    }
}

/* Resumes the links once a client of the master blocks (in WAIT: the
 * only blocking command of the runs), until told to stop. */
typedef struct watcher {
    pthread_t thread;
    dlock_test_redis *master;
    links *links;
    int stop, resumed;
} watcher;

static void *watch(void *arg)
{
    watcher *w = arg;
    const char *info[] = {"INFO", "clients", NULL};
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        char out[2048];
        const char *b;
        if (dlock_test_redis_command(w->master, out, sizeof out, info) == 0 &&
            (b = strstr(out, "blocked_clients:")) != NULL &&
            atoi(b + strlen("blocked_clients:")) > 0) {
            links_set(w->links, FAULT_PASS);
            w->resumed = 1;
            break;
        }
        fault_sleep_ms(5);
    }
    return NULL;
}

/* One run. Returns 1 when a second client got the lock after the
 * failover (the grant was lost), 0 when it was still held, -1 when the
 * run is void (a sentinel re-pointed a replica at the master before the
 * kill); *holder_held: the first client holds it on the new master. */
static int one_run(dlock_client *holder, dlock_client *other, const char *name,
                   int sync, int *holder_held, int64_t *heal_ms, int64_t *failover_ms)
{
    dlock_rlock *h = NULL, *o = NULL;
    links l;
    watcher w;
    int64_t t0;
    int m, i, now_m = -1, rc, lost = -1, repointed = 0;

    assert_int_equal(dlock_reentrant_new(&h, holder, name), 0);
    assert_int_equal(dlock_reentrant_new(&o, other, name), 0);
    t0 = fault_now_ms();
    if (dlock_test_sentinels_heal(&set, HEAL_LIMIT_MS) != 0) {
        dlock_test_sentinels_describe(&set);
        fail_msg("the sentinel set did not heal within %d s", HEAL_LIMIT_MS / 1000);
    }
    *heal_ms = fault_now_ms() - t0;
    m = dlock_test_sentinels_master(&set);
    assert_true(m >= 0);
    links_open(&l, m);
    /* the window: no replica gets anything from here on, until a WAIT */
    links_set(&l, FAULT_BLACKHOLE);
    memset(&w, 0, sizeof w);
    w.master = set.data[m];
    w.links = &l;
    assert_int_equal(pthread_create(&w.thread, NULL, watch, &w), 0);

    for (t0 = fault_now_ms(); (rc = dlock_try_lock(h, 1000, LEASE_MS)) != 0;) {
        if (rc != DLOCK_ECONN || fault_now_ms() - t0 > FAILOVER_LIMIT_MS)
            break;
    }
    __atomic_store_n(&w.stop, 1, __ATOMIC_RELEASE);
    pthread_join(w.thread, NULL);
    if (rc != 0) {
        links_stop(&l);
        fail_msg("acquisition before the kill: %s: %s", dlock_errname(rc),
                 dlock_errmsg(h));
    }
    assert_int_equal(dlock_test_redis_signal(set.data[m], SIGKILL), 0);
    links_set(&l, FAULT_DROP); /* what they held never arrives */
    /* links resumed only for a WAIT: never without sync, always with it */
    assert_int_equal(w.resumed, sync);
    for (i = 0; i < DLOCK_TEST_NDATA; i++)
        if (i != m && !replicates_from(set.data[i], fault_proxy_port(l.proxy[i]), 0))
            repointed = 1;

    t0 = fault_now_ms();
    while (fault_now_ms() - t0 < FAILOVER_LIMIT_MS) {
        now_m = dlock_test_sentinels_master(&set);
        if (now_m >= 0 && now_m != m)
            break;
        fault_sleep_ms(50);
    }
    if (now_m < 0 || now_m == m) {
        links_stop(&l);
        dlock_test_sentinels_describe(&set);
        fail_msg("no failover within %d s", FAILOVER_LIMIT_MS / 1000);
    }
    *failover_ms = fault_now_ms() - t0;
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
    links_stop(&l);
    assert_true(lost >= 0);
    *holder_held = 0;
    for (t0 = fault_now_ms(); fault_now_ms() - t0 < 5000;) {
        if (dlock_is_held(h, holder_held) == 0)
            break;
        fault_sleep_ms(50);
    }
    /* cleared by the unsynced client: the holder's unlock would wait
     * (sync_timeout_ms) for a replica the run killed */
    if (!lost) {
        int existed = 0;
        assert_int_equal(dlock_force_unlock(o, &existed), 0);
        assert_int_equal(existed, 1);
    }
    dlock_rlock_free(h);
    dlock_rlock_free(o);

    /* back as a replica of the new master at once (the heal would do it,
     * the sentinels too but after their INFO period) */
    assert_int_equal(dlock_test_redis_restart(set.data[m]), 0);
    replica_of(set.data[m], dlock_test_redis_port(set.data[now_m]));
    return repointed ? -1 : lost;
}

static void print_figure(int runs, int lost_sync, int lost_plain, int held_sync,
                         int voids, int64_t worst_heal_ms, int64_t elapsed_ms)
{
    json_t *j;
    char *text;
    printf("FIGURE sync failover (replica links paused before the grant, kill -9 "
           "of the master as the acquisition returned, %d runs each, %.0f s): "
           "no sync: lost %d of %d; sync_replicas=%d: lost %d of %d "
           "(holder held it in %d; %d void runs done again; longest heal %.1f s)\n",
           runs, (double)elapsed_ms / 1000.0, lost_plain, runs, SYNC_REPLICAS,
           lost_sync, runs, held_sync, voids, (double)worst_heal_ms / 1000.0);
    j = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I}", "figure",
                  "sync_failover", "runs", runs, "sync_replicas", SYNC_REPLICAS,
                  "lost_no_sync", lost_plain, "lost_sync", lost_sync,
                  "held_sync", held_sync, "void_runs", voids,
                  "worst_heal_ms", (json_int_t)worst_heal_ms,
                  "elapsed_ms", (json_int_t)elapsed_ms);
    text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    assert_non_null(text);
    printf("%s\n", text);
    free(text);
    json_decref(j);
}

static void test_sync_failover(void **state)
{
    const char *env = getenv("DLOCK_SYNC_FAILOVER_RUNS");
    int runs = env && atoi(env) > 0 ? atoi(env) : 10;
    char url[600], name[64];
    dlock_client *synced, *unsynced, *other;
    int attempt, done[2] = {0, 0}, lost_sync = 0, lost_plain = 0, held_sync = 0;
    int voids = 0;
    int64_t t0 = fault_now_ms(), worst_heal_ms = 0;
    (void)state;

    snprintf(url, sizeof url, "%s&sync_replicas=%d&sync_timeout_ms=%d", set.url,
             SYNC_REPLICAS, SYNC_TIMEOUT_MS);
    synced = fault_client_new(url, 2 * SYNC_TIMEOUT_MS, 500, 2, 30000);
    unsynced = fault_client_new(set.url, 500, 500, 2, 30000);
    other = fault_client_new(set.url, 500, 500, 2, 30000);
    for (attempt = 0; done[0] < runs || done[1] < runs; attempt++) {
        int sync = done[1] < runs && (attempt % 2 == 0 || done[0] >= runs);
        int held = 0, lost;
        int64_t heal_ms = 0, failover_ms = 0;
        snprintf(name, sizeof name, "sync:failover:%d", attempt);
        lost = one_run(sync ? synced : unsynced, other, name, sync, &held, &heal_ms,
                       &failover_ms);
        if (heal_ms > worst_heal_ms)
            worst_heal_ms = heal_ms;
        printf("    [sync] run %d (%s): healed in %.1f s, failover in %.1f s: lock %s "
               "after the failover%s (%.1f s)\n",
               attempt + 1, sync ? "sync" : "no sync", (double)heal_ms / 1000.0,
               (double)failover_ms / 1000.0,
               lost < 0 ? "VOID (a replica was re-pointed at the master)"
                        : lost ? "LOST" : "kept",
               held ? ", holder holds it" : "",
               (double)(fault_now_ms() - t0) / 1000.0);
        if (lost < 0) {
            if (++voids > runs)
                fail_msg("%d void runs: sentinels re-point the proxied replicas "
                         "too soon for the experiment", voids);
            continue;
        }
        done[sync]++;
        if (sync) {
            lost_sync += lost;
            held_sync += held;
        } else {
            lost_plain += lost;
        }
    }
    print_figure(runs, lost_sync, lost_plain, held_sync, voids, worst_heal_ms,
                 fault_now_ms() - t0);
    assert_int_equal(lost_sync, 0);
    assert_int_equal(held_sync, runs);
    assert_int_equal(lost_plain, runs);
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
