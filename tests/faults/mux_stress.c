/*
 * Multiplexed connections under server deaths (issue 15; `make faults`,
 * part "mux"): THREADS threads share one client whose calls all go over 1
 * multiplexed connection (then 2 with queue_max=8, so that calls are also
 * refused for a full queue), through a TCP proxy (tests/faults/proxy.c),
 * while the main thread kills the redis-server with SIGKILL (sometimes
 * after stopping it with SIGSTOP, so that calls are written and
 * unanswered, sometimes past the command timeout), only stalls it, cuts
 * every connection at the proxy, or black-holes the traffic for a while
 * (callers give up, their placeholders pile up), and restarts the server
 * on the same port.
 *
 * Each thread loops: try_lock (wait 300 ms; names shared by 4 threads, so
 * some calls wait through the subscriber; a quarter with lease 0, renewed
 * by the watchdog over the same connections) and unlock, then a raw EVAL
 * of "return ARGV[1]" with a value of its own (half with a 500 ms budget,
 * half bounded by the timeouts only) whose reply must be that value: a
 * reply handed to the wrong caller after a reconnect shows here. Asserted:
 * every call returns, with 0 or a clean code (lock: EBUSY, ETIMEDOUT,
 * ECONN; unlock: ENOTOWNER, ELOST, ECONN, ETIMEDOUT; eval: ECONN,
 * ETIMEDOUT; ESYNC too with sync_replicas), no call outlives its bound
 * (CALL_LIMIT_MS), no reply is misrouted, every thread stops when told,
 * and the client works again after the last restart. Printed: the counts
 * and the slowest call. The same with two replies per call (each script
 * followed by WAIT: a connection can die between them), multiplexed and
 * pooled; and on Redlocks over 3 servers (split calls on a multiplexed
 * connection to each) while one node at a time is killed. A quarter of
 * the holds get a new lease (dlock_extend) before their unlock.
 *
 * DLOCK_MUX_STRESS_MS (per run of faults; default 1500) and
 * DLOCK_MUX_STRESS_THREADS (default 32) make it longer or wider;
 * DLOCK_MUX_STRESS_TLS=1 runs it over rediss:// (client certificates),
 * without the proxy.
 */
#include "faults.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "dlock/sys/backend.h"
#include "../harness/redis_server.h"
#include "../harness/runner.h"

#define CMD_MS 1000
#define CONN_MS 1000
#define WAIT_MS 300
#define EVAL_BUDGET_MS 500
/* Far above any call's own bound (wait + slack + command and connect
 * timeouts, twice): a call this slow is stuck, not slow. */
#define CALL_LIMIT_MS 15000
#define JOIN_LIMIT_MS 30000
#define MAX_THREADS 256

static dlock_test_redis *srv;
static fault_proxy *proxy; /* NULL over TLS */
static int tls;

static const dlock_script s_echo = {"mux_stress_echo", "return ARGV[1]"};

typedef struct stats {
    long pairs, busy, timedout, conn, unlock_bad, evals, eval_failed, full;
    long esync, unclean, misrouted, slow;
    int64_t slowest_ms;
    char first_unclean[320];
} stats;

typedef struct worker {
    pthread_t t;
    dlock_client *c;
    int id, stop, done;
    unsigned seed;
    stats st;
} worker;

static int env_int(const char *name, int def, int lo, int hi)
{
    const char *s = getenv(name);
    int v = s && *s ? atoi(s) : def;
    return v < lo ? lo : v > hi ? hi : v;
}

static void note_time(worker *w, int64_t took)
{
    if (took > w->st.slowest_ms)
        w->st.slowest_ms = took;
    if (took > CALL_LIMIT_MS)
        w->st.slow++;
}

static void note_unclean(worker *w, const char *what, int rc, const char *err)
{
    if (w->st.unclean++ == 0)
        snprintf(w->st.first_unclean, sizeof w->st.first_unclean,
                 "%s: %s %s", what, dlock_errname(rc), err ? err : "");
}

static void lock_pair(worker *w, dlock_rlock *l)
{
    int64_t lease = w->id % 4 == 0 ? 0 : 2000;
    int64_t t0 = fault_now_ms();
    int rc = dlock_try_lock(l, WAIT_MS, lease);
    note_time(w, fault_now_ms() - t0);
    if (rc == DLOCK_EBUSY)
        w->st.busy++;
    else if (rc == DLOCK_ETIMEDOUT)
        w->st.timedout++;
    else if (rc == DLOCK_ECONN)
        w->st.conn++;
    else if (rc == DLOCK_ESYNC)
        w->st.esync++; /* sync_replicas without replicas: rolled back */
    else if (rc != 0)
        note_unclean(w, "try_lock", rc, NULL);
    if (rc != 0)
        return;
    if (w->id % 4 == 1) { /* a new lease for the hold, then the unlock */
        t0 = fault_now_ms();
        rc = dlock_extend(l, 3000);
        note_time(w, fault_now_ms() - t0);
        if (rc != 0 && rc != DLOCK_ELOST && rc != DLOCK_ECONN &&
            rc != DLOCK_ETIMEDOUT && rc != DLOCK_ESYNC)
            note_unclean(w, "extend", rc, NULL);
    }
    t0 = fault_now_ms();
    rc = dlock_unlock(l);
    note_time(w, fault_now_ms() - t0);
    if (rc == 0 || rc == DLOCK_ESYNC) /* ESYNC: released all the same */
        w->st.pairs++;
    else if (rc == DLOCK_ENOTOWNER || rc == DLOCK_ELOST || rc == DLOCK_ECONN ||
             rc == DLOCK_ETIMEDOUT)
        w->st.unlock_bad++; /* the server lost the lock with its data */
    else
        note_unclean(w, "unlock", rc, NULL);
}

static void echo_once(worker *w, long n)
{
    dlock_backend *b = dlock_client_backend(w->c);
    dlock_reply *r = NULL;
    char want[64], err[256] = "";
    const char *argv[1] = {want};
    int64_t t0 = fault_now_ms();
    int64_t deadline = n % 2 ? t0 + EVAL_BUDGET_MS : INT64_MAX;
    int rc;

    snprintf(want, sizeof want, "w%d-%ld", w->id, n);
    rc = dlock_backend_eval_until(b, &r, &s_echo, 0, 1, argv, NULL, deadline,
                                  err, sizeof err);
    note_time(w, fault_now_ms() - t0);
    w->st.evals++;
    if (rc == DLOCK_ESYNC) /* the reply comes all the same */
        w->st.esync++;
    if (rc == 0 || rc == DLOCK_ESYNC) {
        if (r->type != DLOCK_REPLY_BULK || r->len != strlen(want) ||
            memcmp(r->str, want, r->len) != 0)
            w->st.misrouted++;
    } else if (rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT) {
        w->st.eval_failed++;
        w->st.full += strstr(err, "request queue full") != NULL;
    } else {
        note_unclean(w, "eval", rc, err);
    }
    dlock_reply_free(r);
}

static void *worker_run(void *arg)
{
    worker *w = arg;
    dlock_rlock *l = NULL;
    char name[64];
    long n = 0;

    snprintf(name, sizeof name, "muxstress:%d", w->id / 4);
    if (dlock_reentrant_new(&l, w->c, name) != 0) {
        note_unclean(w, "reentrant_new", DLOCK_ENOMEM, NULL);
        goto out;
    }
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        lock_pair(w, l);
        echo_once(w, n++);
    }
out:
    dlock_rlock_free(l);
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* One fault, chosen at random: 1 when it killed the server, 0 for a
 * stall or a network fault. */
/* Stops the workers and waits for each: every thread must come back; a
 * stuck one is reported, and then the process cannot go on safely (its
 * client is still in use). */
static void stop_workers(worker *w, int nthreads, const char *what)
{
    int64_t t0 = fault_now_ms();
    int i, stuck = 0;

    for (i = 0; i < nthreads; i++)
        __atomic_store_n(&w[i].stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < nthreads; i++) {
        while (!__atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE) &&
               fault_now_ms() - t0 < JOIN_LIMIT_MS)
            fault_sleep_ms(10);
        if (!__atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE))
            stuck++;
    }
    if (stuck) {
        fprintf(stderr, "%s: %d of %d threads stuck for %d ms\n", what, stuck,
                nthreads, JOIN_LIMIT_MS);
        fail();
    }
}

static int fault_once(unsigned *seed)
{
    int kind = (int)(rand_r(seed) % (proxy ? 6 : 4));
    if (kind >= 4) { /* every connection cut, or a black hole */
        fault_proxy_set(proxy, kind == 4 ? FAULT_DROP : FAULT_BLACKHOLE, 0);
        fault_sleep_ms(kind == 4 ? 20 + rand_r(seed) % 200
                                 : 100 + rand_r(seed) % (2 * CMD_MS));
        fault_proxy_set(proxy, FAULT_PASS, 0);
        return 0;
    }
    if (kind == 3) { /* a stall alone, shorter than the command timeout */
        assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
        fault_sleep_ms(100 + rand_r(seed) % 600);
        assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);
        return 0;
    }
    if (kind >= 1) /* calls written and unanswered, then the kill; kind 2
                    * stalls past the command timeout first */
    {
        assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
        fault_sleep_ms(kind == 1 ? 50 + rand_r(seed) % 400
                                 : CMD_MS + 100 + rand_r(seed) % 400);
    }
    assert_int_equal(dlock_test_redis_signal(srv, SIGKILL), 0);
    fault_sleep_ms(rand_r(seed) % 300);
    assert_int_equal(dlock_test_redis_restart(srv), 0);
    return 1;
}

/* query: the URL's parameters (after '?'); threads: 0 for the default. */
static void stress(const char *query, int64_t cmd_ms, int threads)
{
    int nthreads = threads ? threads
                           : env_int("DLOCK_MUX_STRESS_THREADS", 32, 1,
                                     MAX_THREADS);
    int run_ms = env_int("DLOCK_MUX_STRESS_MS", 1500, 100, 3600 * 1000);
    static worker w[MAX_THREADS];
    stats tot;
    char url[1024];
    dlock_client *c;
    dlock_rlock *l = NULL;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)strlen(query);
    int64_t end, t0;
    int synced = strstr(query, "sync_replicas") != NULL;
    int i, kills = 0, stalls = 0, rc;

    snprintf(url, sizeof url, "%s%c%s",
             tls ? dlock_test_redis_tls_url(srv) : fault_proxy_url(proxy),
             tls ? '&' : '?', query);
    c = fault_client_new(url, cmd_ms, CONN_MS, 4, 3000);
    memset(w, 0, sizeof w);
    for (i = 0; i < nthreads; i++) {
        w[i].c = c;
        w[i].id = i;
        assert_int_equal(pthread_create(&w[i].t, NULL, worker_run, &w[i]), 0);
    }
    end = fault_now_ms() + run_ms;
    while (fault_now_ms() < end) {
        fault_sleep_ms(150 + rand_r(&seed) % 350);
        if (fault_once(&seed))
            kills++;
        else
            stalls++;
    }
    fault_sleep_ms(200); /* a moment of calls on the last server */
    stop_workers(w, nthreads, "mux stress");
    memset(&tot, 0, sizeof tot);
    for (i = 0; i < nthreads; i++) {
        stats *s = &w[i].st;
        pthread_join(w[i].t, NULL);
        tot.pairs += s->pairs;
        tot.busy += s->busy;
        tot.timedout += s->timedout;
        tot.conn += s->conn;
        tot.unlock_bad += s->unlock_bad;
        tot.evals += s->evals;
        tot.eval_failed += s->eval_failed;
        tot.esync += s->esync;
        tot.full += s->full;
        tot.unclean += s->unclean;
        tot.misrouted += s->misrouted;
        tot.slow += s->slow;
        if (s->slowest_ms > tot.slowest_ms)
            tot.slowest_ms = s->slowest_ms;
        if (s->unclean && !tot.first_unclean[0])
            memcpy(tot.first_unclean, s->first_unclean,
                   sizeof tot.first_unclean);
    }

    /* Back to normal on the last server (with sync_replicas and no
     * replica, normal is an ESYNC: the script ran, WAIT answered). */
    assert_int_equal(dlock_reentrant_new(&l, c, "muxstress:after"), 0);
    t0 = fault_now_ms();
    do {
        rc = dlock_try_lock(l, 1000, 2000);
        if (synced && rc == DLOCK_ESYNC)
            break;
        if (rc != 0)
            fault_sleep_ms(50);
    } while (rc != 0 && fault_now_ms() - t0 < 10000);
    assert_int_equal(rc, synced ? DLOCK_ESYNC : 0);
    if (rc == 0)
        assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);

    printf("mux stress: %s%s, %d threads, %d ms, "
           "%d kills -9 + restarts, %d stalls/cuts/black holes: %ld lock+unlock pairs (%ld unlocks after "
           "the lock was lost), try_lock EBUSY %ld ETIMEDOUT %ld ECONN %ld; "
           "%ld evals (%ld ECONN/ETIMEDOUT, %ld of them for a full queue), "
           "%ld ESYNC, %ld misrouted; slowest call "
           "%lld ms, %ld over %d ms; %ld unclean%s%s\n",
           tls ? "TLS, " : "", query, nthreads, run_ms, kills, stalls, tot.pairs,
           tot.unlock_bad, tot.busy, tot.timedout, tot.conn, tot.evals,
           tot.eval_failed, tot.full, tot.esync, tot.misrouted, (long long)tot.slowest_ms,
           tot.slow, CALL_LIMIT_MS, tot.unclean,
           tot.unclean ? ", first: " : "", tot.first_unclean);
    assert_int_equal(tot.unclean, 0);
    assert_int_equal(tot.misrouted, 0);
    assert_int_equal(tot.slow, 0);
    /* Calls went through. With sync and no replica, every acquisition
     * is an ESYNC (rolled back) and so few calls fit between the faults
     * that none may: there the check above after the last restart (an
     * ESYNC: both replies came) is the one. */
    if (!synced) {
        assert_true(tot.pairs > 0);
        assert_true(tot.evals - tot.eval_failed > 0);
    }
}

/* ---- freeing the client while the server is down ---------------------- */

typedef struct blocker {
    pthread_t t;
    dlock_rlock *l;
    int *stop;
    int done;
    long acquired, canceled, other;
} blocker;

/* dlock_lock (no budget: it retries for as long as the server is down)
 * and unlock, until told to stop; frees its lock object, which may take
 * the client's last reference and tear the client down on this thread. */
static void *blocker_run(void *arg)
{
    blocker *k = arg;
    while (!__atomic_load_n(k->stop, __ATOMIC_ACQUIRE)) {
        int rc = dlock_lock(k->l, 2000);
        if (rc == 0) {
            k->acquired++;
            dlock_unlock(k->l);
        } else if (rc == DLOCK_ECANCELED) {
            k->canceled++;
        } else {
            k->other++;
        }
    }
    dlock_rlock_free(k->l);
    __atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* THREADS threads blocked in dlock_lock on one multiplexed connection (4
 * per name: some wait through the subscriber, some are in a round trip)
 * when the server is killed, stalled, or stalled and then killed; the
 * application frees the client meanwhile (which cancels the waits), the
 * server comes back, and every thread ends, the last one tearing the
 * client down (mux, pool, subscriber) on its own thread. */
static void test_mux_free_while_down(void **state)
{
    int nthreads = env_int("DLOCK_MUX_STRESS_THREADS", 32, 1, MAX_THREADS);
    static blocker k[MAX_THREADS];
    int round, i;
    (void)state;

    for (round = 0; round < 3; round++) {
        char url[1024], name[64];
        dlock_client *c;
        int stop = 0, stuck = 0;
        long acquired = 0, canceled = 0, other = 0;
        int64_t t0;

        snprintf(url, sizeof url, "%s",
                 tls ? dlock_test_redis_tls_url(srv) : dlock_test_redis_url(srv));
        c = fault_client_new(url, CMD_MS, CONN_MS, 4, 3000);
        memset(k, 0, sizeof k);
        for (i = 0; i < nthreads; i++) {
            snprintf(name, sizeof name, "muxfree:%d:%d", round, i / 4);
            assert_int_equal(dlock_reentrant_new(&k[i].l, c, name), 0);
            k[i].stop = &stop;
            assert_int_equal(pthread_create(&k[i].t, NULL, blocker_run, &k[i]),
                             0);
        }
        fault_sleep_ms(300);
        if (round >= 1)
            assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
        if (round != 1)
            assert_int_equal(dlock_test_redis_signal(srv, SIGKILL), 0);
        fault_sleep_ms(200);
        __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
        dlock_client_free(c);
        fault_sleep_ms(100);
        if (round == 1)
            assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);
        else
            assert_int_equal(dlock_test_redis_restart(srv), 0);
        t0 = fault_now_ms();
        for (i = 0; i < nthreads; i++) {
            while (!__atomic_load_n(&k[i].done, __ATOMIC_ACQUIRE) &&
                   fault_now_ms() - t0 < JOIN_LIMIT_MS)
                fault_sleep_ms(10);
            if (!__atomic_load_n(&k[i].done, __ATOMIC_ACQUIRE))
                stuck++;
        }
        if (stuck) {
            fprintf(stderr, "mux free: %d of %d threads stuck for %d ms\n",
                    stuck, nthreads, JOIN_LIMIT_MS);
            fail();
        }
        for (i = 0; i < nthreads; i++) {
            pthread_join(k[i].t, NULL);
            acquired += k[i].acquired;
            canceled += k[i].canceled;
            other += k[i].other;
        }
        printf("mux free while %s: %d threads, %ld acquisitions, %ld "
               "canceled, %ld other\n",
               round == 0 ? "killed" : round == 1 ? "stalled"
                                                 : "stalled and killed",
               nthreads, acquired, canceled, other);
        assert_int_equal(other, 0);
        assert_true(acquired > 0);
    }
}

static void test_mux_stress_one_connection(void **state)
{
    (void)state;
    stress("connections=1", CMD_MS, 0);
}

static void test_mux_stress_two_connections(void **state)
{
    (void)state;
    stress("connections=2&queue_max=8", CMD_MS, 0);
}

/* Two replies per call (the script's, then WAIT's: sync_replicas=1 with
 * no replica), so that connections die between the two; multiplexed,
 * then pooled (4 connections). Redis answers such a WAIT on its next
 * timer tick (~100 ms) and runs nothing else of that connection's
 * meanwhile: on a shared connection the calls queue behind each other's
 * WAITs, hence 8 threads and a 3 s command timeout here. */
static void test_mux_stress_two_replies(void **state)
{
    (void)state;
    stress("connections=1&sync_replicas=1&sync_timeout_ms=20", 3000, 8);
    stress("multiplex=0&sync_replicas=1&sync_timeout_ms=20", 3000, 8);
}

/* ---- Redlock on multiplexed connections -------------------------------- */

#define RL_NODES 3

/* try_lock (a quarter with lease 0: the watchdog's split calls),
 * extend (a quarter), unlock, on a Redlock over RL_NODES clients. */
static dlock_client *rl_clients[RL_NODES];

static void *rl_worker_run(void *arg)
{
    worker *w = arg;
    dlock_rlock *l = NULL;
    char name[64];

    snprintf(name, sizeof name, "muxrl:%d", w->id / 4);
    if (dlock_redlock_new(&l, rl_clients, RL_NODES, name) != 0) {
        note_unclean(w, "redlock_new", DLOCK_ENOMEM, NULL);
        goto out;
    }
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
        lock_pair(w, l);
out:
    dlock_rlock_free(l);
    __atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* THREADS threads on Redlocks over 3 servers, one multiplexed connection
 * to each, every call a split one (submit on every node, then wait on
 * each), while one node at a time is killed -9 (or stalled first) and
 * restarted: every call returns, with a clean code, within its bound.
 * (No exclusion check: a node restarted empty can make a second majority,
 * Redlock's documented limit; tests/faults/redlock_stress.c checks
 * exclusion with one process per worker.) */
static void test_mux_stress_redlock(void **state)
{
    int nthreads = env_int("DLOCK_MUX_STRESS_THREADS", 32, 1, MAX_THREADS);
    int run_ms = env_int("DLOCK_MUX_STRESS_MS", 1500, 100, 3600 * 1000);
    static worker w[MAX_THREADS];
    dlock_test_redis *nodes[RL_NODES] = {NULL};
    unsigned seed = (unsigned)time(NULL);
    long pairs = 0, unclean = 0, slow = 0, conn = 0, timedout = 0;
    int64_t end, slowest = 0;
    int i, kills = 0;
    char first[320] = "";
    (void)state;

    for (i = 0; i < RL_NODES; i++) {
        char url[160];
        assert_int_equal(dlock_test_redis_start(&nodes[i], NULL), 0);
        snprintf(url, sizeof url, "%s?connections=1",
                 dlock_test_redis_url(nodes[i]));
        rl_clients[i] = fault_client_new(url, CMD_MS, CONN_MS, 4, 3000);
    }
    memset(w, 0, sizeof w);
    for (i = 0; i < nthreads; i++) {
        w[i].id = i;
        assert_int_equal(pthread_create(&w[i].t, NULL, rl_worker_run, &w[i]),
                         0);
    }
    end = fault_now_ms() + run_ms;
    while (fault_now_ms() < end) {
        dlock_test_redis *v = nodes[rand_r(&seed) % RL_NODES];
        fault_sleep_ms(150 + rand_r(&seed) % 350);
        if (rand_r(&seed) % 2) {
            assert_int_equal(dlock_test_redis_signal(v, SIGSTOP), 0);
            fault_sleep_ms(50 + rand_r(&seed) % (CMD_MS + 400));
        }
        assert_int_equal(dlock_test_redis_signal(v, SIGKILL), 0);
        fault_sleep_ms(rand_r(&seed) % 300);
        assert_int_equal(dlock_test_redis_restart(v), 0);
        kills++;
    }
    fault_sleep_ms(200);
    stop_workers(w, nthreads, "mux redlock");
    for (i = 0; i < nthreads; i++) {
        pthread_join(w[i].t, NULL);
        pairs += w[i].st.pairs;
        conn += w[i].st.conn;
        timedout += w[i].st.timedout;
        unclean += w[i].st.unclean;
        slow += w[i].st.slow;
        if (w[i].st.slowest_ms > slowest)
            slowest = w[i].st.slowest_ms;
        if (w[i].st.unclean && !first[0])
            memcpy(first, w[i].st.first_unclean, sizeof first);
    }
    for (i = 0; i < RL_NODES; i++) {
        dlock_client_free(rl_clients[i]);
        rl_clients[i] = NULL;
        dlock_test_redis_stop(nodes[i]);
    }
    printf("mux redlock: %d nodes, %d threads, %d ms, %d kills -9 + "
           "restarts: %ld lock+unlock pairs, try_lock ECONN %ld ETIMEDOUT "
           "%ld; slowest call %lld ms, %ld over %d ms; %ld unclean%s%s\n",
           RL_NODES, nthreads, run_ms, kills, pairs, conn, timedout,
           (long long)slowest, slow, CALL_LIMIT_MS, unclean,
           unclean ? ", first: " : "", first);
    assert_int_equal(unclean, 0);
    assert_int_equal(slow, 0);
    assert_true(pairs > 0);
}

static int group_setup(void **state)
{
    (void)state;
    tls = env_int("DLOCK_MUX_STRESS_TLS", 0, 0, 1);
    if (tls)
        return dlock_test_redis_start_tls(&srv, "yes", 0, NULL);
    return fault_proxied_redis_start(&srv, &proxy, NULL);
}

static int group_teardown(void **state)
{
    (void)state;
    fault_proxied_redis_stop(&srv, &proxy);
    return 0;
}

int dlock_test_faults_mux(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mux_stress_one_connection),
        cmocka_unit_test(test_mux_stress_two_connections),
        cmocka_unit_test(test_mux_stress_two_replies),
        cmocka_unit_test(test_mux_free_while_down),
        cmocka_unit_test(test_mux_stress_redlock),
    };
    return DLOCK_RUN_GROUP("faults (slow): multiplexed connections under "
                           "server kills",
                           tests, group_setup, group_teardown);
}
