/*
 * Redlock and MultiLock (issue 13): the cases of api/dlock/redlock.h and
 * api/dlock/multilock.h on several independent "servers": on the mock, one
 * mock store per server, all on one virtual clock; on Redis, five
 * redis-servers started here on free loopback ports.
 *
 * Two sets of clients (a[i], b[i]: one per server) stand for two processes.
 * Helper threads only record; the case asserts after joining them.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dlock.h"
#include "dlock/sys/methods.h"
#include "../harness/redis_server.h"
#include "../harness/runner.h"
#include "../harness/failing_backend.h"

void dlock_test_set_phase(const char *fmt, ...);

#define NSERVERS 5

static dlock_test_redis *servers[NSERVERS];

typedef struct env {
    int mock;
    size_t n; /* Redlock nodes: 3 on the mock, 5 on Redis */
    dlock_vclock *vc;
    dlock_mock_store *stores[NSERVERS];
    dlock_client *a[NSERVERS], *b[NSERVERS];
    char name[96];
    pthread_mutex_t mutex;
    int lost;
    char lost_thread[32]; /* the name of the thread that called on_lost */
} env;

static unsigned counter;

static void on_lost(void *arg, const char *name, const char *owner)
{
    env *e = arg;

    (void)name, (void)owner;
    pthread_mutex_lock(&e->mutex);
    e->lost++;
    pthread_getname_np(pthread_self(), e->lost_thread, sizeof(e->lost_thread));
    pthread_mutex_unlock(&e->mutex);
}

static int lost_count(env *e)
{
    int n;

    pthread_mutex_lock(&e->mutex);
    n = e->lost;
    pthread_mutex_unlock(&e->mutex);
    return n;
}

static int make_client(env *e, size_t i, dlock_client **out)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    char err[256];
    dlock_backend *b;

    o.on_lost = on_lost;
    o.on_lost_arg = e;
    if (e->mock) {
        o.watchdog_timeout_ms = 30000;
        if (dlock_mock_backend_new(&b, e->stores[i]) != 0)
            return -1;
        if (dlock_client_new(out, b, &o) != 0) {
            dlock_backend_free(b);
            return -1;
        }
        return 0;
    }
    o.watchdog_timeout_ms = 600;
    o.budget_slack_ms = 500; /* a loaded 2-core machine */
    return dlock_client_connect(out, dlock_test_redis_url(servers[i]), &o, err,
                                sizeof(err)) == 0 ? 0 : -1;
}

static int setup(void **state, int mock)
{
    env *e = calloc(1, sizeof(*e));
    size_t i, nservers = mock ? 3 : NSERVERS;

    if (!e)
        return -1;
    *state = e;
    pthread_mutex_init(&e->mutex, NULL);
    e->mock = mock;
    e->n = nservers;
    snprintf(e->name, sizeof(e->name), "dlock-test:redlock:%u:%ld", ++counter,
             (long)getpid());
    if (mock && dlock_vclock_new(&e->vc, 1000000) != 0)
        return -1;
    for (i = 0; i < nservers; i++) {
        if (mock && dlock_mock_store_new(&e->stores[i], dlock_vclock_clock(e->vc)) != 0)
            return -1;
        if (make_client(e, i, &e->a[i]) != 0 || make_client(e, i, &e->b[i]) != 0)
            return -1;
    }
    return 0;
}

static int setup_mock(void **state)
{
    return setup(state, 1);
}

static int setup_redis(void **state)
{
    return setup(state, 0);
}

static int teardown(void **state)
{
    env *e = *state;
    size_t i;

    if (!e)
        return 0;
    /* a case that failed with servers down leaves none down for the next */
    for (i = 0; !e->mock && i < NSERVERS; i++)
        if (dlock_test_redis_signal(servers[i], SIGCONT) != 0)
            dlock_test_redis_restart(servers[i]);
    for (i = 0; i < NSERVERS; i++) {
        dlock_client_free(e->a[i]);
        dlock_client_free(e->b[i]);
    }
    for (i = 0; i < NSERVERS; i++)
        dlock_mock_store_free(e->stores[i]);
    dlock_vclock_free(e->vc);
    pthread_mutex_destroy(&e->mutex);
    free(e);
    return 0;
}

static void advance(env *e, int64_t ms)
{
    if (e->mock) {
        dlock_vclock_advance(e->vc, ms);
    } else {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

/* A command on server i outside any lock (the "server's own view"). */
static long long server_int(env *e, size_t i, const char *cmd, const char *key)
{
    long long v = -99;

    if (e->mock) {
        const char *argv[2] = {cmd, key};
        dlock_reply *r = NULL;
        if (dlock_mock_store_command(e->stores[i], &r, 2, argv, NULL) == 0 &&
            r->type == DLOCK_REPLY_INTEGER)
            v = r->integer;
        dlock_reply_free(r);
    } else {
        const char *argv[3] = {cmd, key, NULL};
        char out[64];
        if (dlock_test_redis_command(servers[i], out, sizeof(out), argv) == 0)
            v = atoll(out);
    }
    return v;
}

static dlock_rlock *redlock(dlock_client **cs, size_t n, const char *name)
{
    dlock_rlock *l = NULL;

    assert_int_equal(dlock_redlock_new(&l, cs, n, name), 0);
    return l;
}

/* ---- asynchronously ----------------------------------------------------------- */

typedef struct async_probe {
    dlock_rlock *l;
    int calls, rc, probe_rc;
} async_probe;

/* A callback that also tries the Redlock with the blocking API: refused
 * (DLOCK_EDEADLK) before any node is asked, whatever thread a node's
 * round trip would have run on. */
static void on_async(void *arg, dlock_op_id op, const dlock_result *r)
{
    async_probe *p = arg;

    (void)op;
    p->calls++;
    p->rc = r->rc;
    if (p->l)
        p->probe_rc = dlock_try_lock(p->l, 0, 60000);
}

static void run_async(env *e, dlock_loop *lp, const async_probe *p, int calls)
{
    int i;

    for (i = 0; i < 500 && p->calls < calls; i++)
        assert_true(dlock_loop_run(lp, e->mock ? 0 : 10) >= 0);
    assert_int_equal(p->calls, calls);
}

/* A Redlock taken and released through a loop, every node's step in
 * flight at once; a blocking call on it from inside a callback is
 * DLOCK_EDEADLK and leaves no node locked. */
static void redlock_async_and_refused_in_callback(void **state)
{
    env *e = *state;
    dlock_rlock *l = redlock(e->a, e->n, e->name);
    dlock_loop *lp = NULL;
    async_probe got = {0}, probe = {0}, freed = {0};
    char token_key[160];
    size_t i;

    snprintf(token_key, sizeof token_key, "redisson_lock_token:{%s}", e->name);
    assert_int_equal(dlock_loop_new(&lp, e->a[0], NULL), 0);
    /* first, so that any node's step would leave its token counter */
    probe.l = l;
    probe.probe_rc = 1;
    assert_int_equal(dlock_is_locked_async(lp, NULL, l, on_async, &probe), 0);
    run_async(e, lp, &probe, 1);
    assert_int_equal(probe.rc, 0);
    assert_int_equal(probe.probe_rc, DLOCK_EDEADLK);
    for (i = 0; i < e->n; i++) {
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
        assert_int_equal(server_int(e, i, "EXISTS", token_key), 0);
    }

    assert_int_equal(dlock_lock_async(lp, NULL, l, "async-owner", 0, 60000, on_async, &got), 0);
    run_async(e, lp, &got, 1);
    assert_int_equal(got.rc, 0);
    for (i = 0; i < e->n; i++) {
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 1);
        assert_int_equal(server_int(e, i, "EXISTS", token_key), 1);
    }
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "async-owner", on_async, &freed), 0);
    run_async(e, lp, &freed, 1);
    assert_int_equal(freed.rc, 0);
    for (i = 0; i < e->n; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
    dlock_loop_free(lp);
    dlock_rlock_free(l);
}

/* Two releases of one Redlock in flight on one loop: each holds the
 * Redlock's release exclusion across its nodes' round trips, in which its
 * fiber yields (Redis: a reply is awaited in the loop). The second waits
 * for it by yielding too: were it to block the loop's thread, the first
 * could never be resumed to end it. Both are called back: the holder's
 * release done, the other refused. */
static void redlock_two_releases_on_one_loop(void **state)
{
    env *e = *state;
    dlock_rlock *l = redlock(e->a, e->n, e->name);
    dlock_loop *lp = NULL;
    async_probe got = {0}, mine = {0}, other = {0}, both = {0};
    size_t i;

    assert_int_equal(dlock_loop_new(&lp, e->a[0], NULL), 0);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "holder", 0, 60000, on_async, &got), 0);
    run_async(e, lp, &got, 1);
    assert_int_equal(got.rc, 0);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "holder", on_async, &mine), 0);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "someone-else", on_async, &other), 0);
    for (i = 0; i < 500 && mine.calls + other.calls < 2; i++)
        assert_true(dlock_loop_run(lp, e->mock ? 0 : 10) >= 0);
    both.calls = mine.calls + other.calls;
    run_async(e, lp, &both, 2);
    assert_int_equal(mine.calls, 1);
    assert_int_equal(other.calls, 1);
    assert_int_equal(mine.rc, 0);
    assert_int_not_equal(other.rc, 0);
    for (i = 0; i < e->n; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
    dlock_loop_free(lp);
    dlock_rlock_free(l);
}

/* ---- Redlock --------------------------------------------------------------- */

static void redlock_bad_input(void **state)
{
    env *e = *state;
    dlock_client *dup[3] = {e->a[0], e->a[1], e->a[0]};
    dlock_client *nul[2] = {e->a[0], NULL};
    dlock_rlock *l = (dlock_rlock *)1;
    int64_t t;

    assert_int_equal(dlock_redlock_new(&l, e->a, 0, e->name), DLOCK_EINVAL);
    assert_null(l);
    assert_int_equal(dlock_redlock_new(&l, dup, 3, e->name), DLOCK_EINVAL);
    assert_int_equal(dlock_redlock_new(&l, nul, 2, e->name), DLOCK_EINVAL);
    assert_int_equal(dlock_redlock_new(&l, e->a, 3, ""), DLOCK_EINVAL);
    assert_int_equal(dlock_redlock_new(NULL, e->a, 3, e->name), DLOCK_EINVAL);
    l = redlock(e->a, e->n, e->name);
    assert_int_equal(dlock_redlock_set_node_timeout(l, 0), DLOCK_EINVAL);
    /* no keys of its own: the lifetime calls refuse, nothing sent */
    assert_int_equal(dlock_object_delete(dlock_rlock_object(l), NULL), DLOCK_ENOTSUP);
    assert_int_equal(dlock_redlock_token(l, &t), DLOCK_ENOTOWNER);
    dlock_rlock_free(l);
}

static void redlock_acquire_reenter_unlock(void **state)
{
    env *e = *state;
    dlock_rlock *l1 = redlock(e->a, e->n, e->name);
    dlock_rlock *l2 = redlock(e->b, e->n, e->name);
    int64_t count = 0, ttl = 0, t1 = 0, t2 = 0;
    int held = -1;
    size_t i;

    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_lock(l1, 60000), 0);
    assert_int_equal(dlock_redlock_token(l1, &t1), 0);
    assert_true(t1 > 0);
    /* held on every node, by one owner */
    for (i = 0; i < e->n; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 1);
    assert_int_equal(dlock_is_held(l1, &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_try_lock(l1, 0, 60000), 0); /* re-entry */
    assert_int_equal(dlock_hold_count(l1, &count), 0);
    assert_int_equal(count, 2);
    assert_int_equal(dlock_remain_ttl(l2, &ttl), 0);
    assert_true(ttl > 30000 && ttl <= 60000);
    assert_int_equal(dlock_try_lock(l2, 0, 60000), DLOCK_EBUSY);
    assert_true(strstr(dlock_errmsg(l2), "held by another owner") != NULL);
    assert_int_equal(dlock_unlock(l2), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_is_locked(l2, &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_is_locked(l2, &held), 0);
    assert_int_equal(held, 0);
    for (i = 0; i < e->n; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
    /* a later acquisition, by another process, gets a larger token */
    assert_int_equal(dlock_try_lock(l2, 0, 60000), 0);
    assert_int_equal(dlock_redlock_token(l2, &t2), 0);
    assert_true(t2 > t1);
    assert_int_equal(dlock_unlock(l2), 0);
    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
}

/* A majority is enough, and the token still grows when the majority is
 * made of other nodes. */
static void redlock_majority_and_token(void **state)
{
    env *e = *state;
    dlock_rlock *l1 = redlock(e->a, e->n, e->name);
    dlock_rlock *l2 = redlock(e->b, e->n, e->name);
    dlock_rlock *other = NULL;
    int64_t t1 = 0, t2 = 0;

    /* someone else holds it on node 0 only: a minority */
    assert_int_equal(dlock_reentrant_new(&other, e->b[0], e->name), 0);
    assert_int_equal(dlock_lock_as(other, "intruder:1", 60000), 0);
    assert_int_equal(dlock_try_lock(l1, 0, 60000), 0);
    assert_int_equal(dlock_redlock_token(l1, &t1), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_unlock_as(other, "intruder:1"), 0);
    /* now node n-1 is taken: another majority */
    dlock_rlock_free(other);
    assert_int_equal(dlock_reentrant_new(&other, e->b[e->n - 1], e->name), 0);
    assert_int_equal(dlock_lock_as(other, "intruder:1", 60000), 0);
    assert_int_equal(dlock_try_lock(l2, 0, 60000), 0);
    assert_int_equal(dlock_redlock_token(l2, &t2), 0);
    assert_true(t2 > t1);
    assert_int_equal(dlock_unlock(l2), 0);
    /* a majority held by someone else: busy, and nothing left behind */
    assert_int_equal(dlock_unlock_as(other, "intruder:1"), 0);
    dlock_rlock_free(other);
    {
        size_t i;
        dlock_rlock *o2[NSERVERS] = {NULL};
        for (i = 0; i < e->n / 2 + 1; i++) {
            assert_int_equal(dlock_reentrant_new(&o2[i], e->b[i], e->name), 0);
            assert_int_equal(dlock_lock_as(o2[i], "intruder:1", 60000), 0);
        }
        assert_int_equal(dlock_try_lock(l1, 0, 60000), DLOCK_EBUSY);
        for (i = e->n / 2 + 1; i < e->n; i++)
            assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
        for (i = 0; i < e->n / 2 + 1; i++) {
            assert_int_equal(dlock_unlock_as(o2[i], "intruder:1"), 0);
            dlock_rlock_free(o2[i]);
        }
    }
    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
}

typedef struct waiter {
    dlock_rlock *l;
    int64_t wait_ms;
    int rc, unlock_rc, done;
    pthread_mutex_t *mutex;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    int rc = dlock_try_lock(w->l, w->wait_ms, 60000);
    int urc = rc == 0 ? dlock_unlock(w->l) : 1;

    pthread_mutex_lock(w->mutex);
    w->rc = rc;
    w->unlock_rc = urc;
    w->done = 1;
    pthread_mutex_unlock(w->mutex);
    return NULL;
}

static int waiter_done(waiter *w)
{
    int d;

    pthread_mutex_lock(w->mutex);
    d = w->done;
    pthread_mutex_unlock(w->mutex);
    return d;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A waiter is woken by the release message, even when node 0 (the
 * handle's own client) sends none: the key there was gone already, so
 * only the other nodes publish. On the mock the clock never moves: only a
 * message can wake the waiter before the holder's lease. */
static void redlock_waiter_woken_by_any_node(void **state)
{
    env *e = *state;
    dlock_rlock *l1 = redlock(e->a, e->n, e->name);
    dlock_rlock *l2 = redlock(e->b, e->n, e->name);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    waiter w = {l2, 30000, 1, 1, 0, &m};
    pthread_t th;
    int i;

    assert_int_equal(dlock_lock(l1, 600000), 0);
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &w), 0);
    if (e->mock)
        dlock_vclock_wait_sleepers(e->vc, dlock_vclock_sleepers(e->vc) + 1, 5000);
    sleep_ms(e->mock ? 20 : 300);
    assert_int_equal(waiter_done(&w), 0);
    assert_int_equal(server_int(e, 0, "DEL", e->name), 1);
    assert_int_equal(dlock_unlock(l1), 0);
    for (i = 0; i < 500 && !waiter_done(&w); i++)
        sleep_ms(20);
    if (!waiter_done(&w))
        advance(e, 700000); /* free it, then fail */
    pthread_join(th, NULL);
    assert_int_equal(i < 500, 1);
    assert_int_equal(w.rc, 0);
    assert_int_equal(w.unlock_rc, 0);
    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
}

/* Lease 0: renewed on every node; a node that lost the key while the
 * majority kept it gets it back; fewer than a majority: lost. */
static void redlock_watchdog(void **state)
{
    env *e = *state;
    dlock_rlock *l1 = redlock(e->a, e->n, e->name);
    int64_t wd = e->mock ? 30000 : 600;
    size_t i;
    int held = 0, k;

    assert_int_equal(dlock_lock(l1, 0), 0);
    advance(e, 3 * wd);
    assert_int_equal(dlock_is_held(l1, &held), 0);
    assert_int_equal(held, 1);
    /* node 0 "restarted empty" */
    assert_int_equal(server_int(e, 0, "DEL", e->name), 1);
    for (k = 0; k < 20 && server_int(e, 0, "EXISTS", e->name) != 1; k++)
        advance(e, wd / 3);
    assert_int_equal(server_int(e, 0, "EXISTS", e->name), 1);
    assert_int_equal(lost_count(e), 0);
    /* a majority loses it (on Redis the deletes are separate commands: a
     * renewal between two of them repairs the first, so delete again
     * until it is reported) */
    for (k = 0; k < 20 && lost_count(e) == 0; k++) {
        for (i = 0; i < e->n / 2 + 1; i++)
            server_int(e, i, "DEL", e->name);
        advance(e, wd / 3);
    }
    assert_int_equal(lost_count(e), 1);
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    dlock_rlock_free(l1);
}

static void redlock_force_unlock_and_lease(void **state)
{
    env *e = *state;
    dlock_rlock *l1 = redlock(e->a, e->n, e->name);
    dlock_rlock *l2 = redlock(e->b, e->n, e->name);
    int existed = 0;
    int64_t lease = e->mock ? 10000 : 300;

    assert_int_equal(dlock_lock(l1, lease), 0);
    assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    /* the lease ends on every node: another owner gets in */
    assert_int_equal(dlock_lock(l1, lease), 0);
    advance(e, lease + (e->mock ? 1 : 100));
    assert_int_equal(dlock_try_lock(l2, 0, lease), 0);
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l2), 0);
    /* A reentrant hold taken away: one unlock reports it lost and ends
     * every count of it, as a single lock does. */
    assert_int_equal(dlock_lock(l1, lease * 10), 0);
    assert_int_equal(dlock_lock(l1, lease * 10), 0);
    assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
}

/* The threads of this process now (/proc/self/status), -1 unknown. */
static int threads_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    int n = -1;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

void dlock__fanout(size_t n, void (*fn)(void *ctx, size_t i), void *ctx);
static void no_step(void *ctx, size_t i);

/* A lease-0 Redlock hold is kept by its own (first) client's watchdog, the
 * one that renews that client's every lock: no thread of its own, counted
 * in that client's metrics (not the other nodes' clients'), and a loss is
 * reported on the watchdog thread, to the handle's own on_lost. */
static void redlock_renewed_by_client_watchdog(void **state)
{
    env *e = *state;
    dlock_rlock *l = redlock(e->a, e->n, e->name);
    dlock_metrics m0 = DLOCK_METRICS_INIT, m1 = DLOCK_METRICS_INIT;
    int64_t wd = e->mock ? 30000 : 600;
    int held = 0, before, k;
    size_t i;
    env mine; /* the handle's own on_lost records here */

    memset(&mine, 0, sizeof(mine));
    pthread_mutex_init(&mine.mutex, NULL);
    assert_int_equal(dlock_rlock_set_on_lost(l, on_lost, &mine), 0);
    /* the fan-out pool's workers, which a step on the mock uses, exist */
    dlock__fanout(e->n, no_step, NULL);
    before = threads_now();
    assert_true(before > 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    advance(e, 3 * wd);
    assert_int_equal(dlock_is_held(l, &held), 0);
    assert_int_equal(held, 1);
    assert_true(threads_now() <= before); /* no renewal thread */
    assert_int_equal(dlock_client_metrics(e->a[0], &m0), 0);
    assert_int_equal(dlock_client_metrics(e->a[1], &m1), 0);
    assert_true(m0.renewals >= 2);
    assert_int_equal(m1.renewals, 0);

    /* a majority loses it: the watchdog reports it, to this handle */
    for (k = 0; k < 20 && lost_count(&mine) == 0; k++) {
        for (i = 0; i < e->n / 2 + 1; i++)
            server_int(e, i, "DEL", e->name);
        advance(e, wd / 3);
    }
    assert_int_equal(lost_count(&mine), 1);
    assert_string_equal(mine.lost_thread, "dlock-watchdog");
    assert_int_equal(lost_count(e), 0); /* not the client's on_lost */
    assert_int_equal(dlock_client_metrics(e->a[0], &m0), 0);
    assert_int_equal(m0.lost, 1);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l), DLOCK_ENOTOWNER);
    dlock_rlock_free(l);
    pthread_mutex_destroy(&mine.mutex);
}

/* ---- dlock_extend ---------------------------------------------------------- */

static long long pttl(env *e, size_t i, const char *key)
{
    return server_int(e, i, "PTTL", key);
}

/* The new lease on every node (longer, then shorter: set, not kept), the
 * hold count and token unchanged; a non-holder changes nothing; lease 0
 * hands the hold to the watchdog; a lease that the drift leaves no
 * validity in fails as an acquisition would. */
static void redlock_extend_every_node(void **state)
{
    env *e = *state;
    dlock_rlock *l1 = redlock(e->a, e->n, e->name);
    dlock_rlock *l2 = redlock(e->b, e->n, e->name);
    long long before[NSERVERS], p;
    int64_t wd = e->mock ? 30000 : 600, ttl = 0, count = 0, t1 = 0, t2 = 0;
    int held = 0;
    size_t i;

    assert_int_equal(dlock_lock(l1, 60000), 0);
    assert_int_equal(dlock_lock(l1, 60000), 0);
    assert_int_equal(dlock_redlock_token(l1, &t1), 0);
    advance(e, e->mock ? 1000 : 0);
    assert_int_equal(dlock_extend(l1, 120000), 0);
    for (i = 0; i < e->n; i++) {
        p = pttl(e, i, e->name);
        assert_true(p > 60000 && p <= 120000);
        if (e->mock)
            assert_int_equal(p, 120000);
    }
    assert_int_equal(dlock_remain_ttl(l2, &ttl), 0);
    assert_true(ttl > 60000 && ttl <= 120000);
    assert_int_equal(dlock_hold_count(l1, &count), 0);
    assert_int_equal(count, 2);
    assert_int_equal(dlock_redlock_token(l1, &t2), 0);
    assert_int_equal(t2, t1);
    assert_int_equal(dlock_extend(l1, 5000), 0);
    for (i = 0; i < e->n; i++) {
        before[i] = pttl(e, i, e->name);
        assert_true(before[i] > 0 && before[i] <= 5000);
    }

    /* by a non-holder: not held, nothing changed */
    assert_int_equal(dlock_extend(l2, 120000), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_extend_as(l1, "someone-else:1", 120000), DLOCK_ENOTOWNER);
    for (i = 0; i < e->n; i++) {
        p = pttl(e, i, e->name);
        assert_true(p > 0 && p <= before[i]);
    }
    assert_int_equal(dlock_unlock(l1), 0); /* one hold left */

    /* lease 0: renewed past the 5 s lease (and past the watchdog's) */
    assert_int_equal(dlock_extend(l1, 0), 0);
    for (i = 0; i < e->n; i++)
        assert_true(pttl(e, i, e->name) <= wd);
    advance(e, e->mock ? 3 * wd : wd + wd / 2);
    assert_int_equal(dlock_is_held(l1, &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(lost_count(e), 0);

    /* 2 ms: the drift (1 % + 2 ms) leaves no validity: DLOCK_ETIMEDOUT,
     * and off the watchdog, so the nodes' 2 ms run out (after one
     * watchdog lease at most: a renewal already in flight may still
     * apply it once, as lock.h says of dlock_extend) */
    assert_int_equal(dlock_extend(l1, 2), DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_errmsg(l1), "no validity"));
    advance(e, wd + (e->mock ? 3 : 200));
    for (i = 0; i < e->n; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
    assert_int_equal(dlock_unlock(l1), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(lost_count(e), 0);
    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
}

/* The nodes of the down cases: on the mock, new clients behind failing
 * backends (plugs[i], failing every script while "down", as a client of a
 * killed server does); on Redis, the env's clients of the real servers
 * (borrowed), whose servers are killed. */
typedef struct nodes {
    dlock_client *c[NSERVERS];
    dlock_test_failing *plugs[NSERVERS];
} nodes;

static void nodes_make(env *e, nodes *nd)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    size_t i;

    memset(nd, 0, sizeof(*nd));
    o.on_lost = on_lost;
    o.on_lost_arg = e;
    o.watchdog_timeout_ms = 30000;
    for (i = 0; i < e->n; i++) {
        if (!e->mock) {
            nd->c[i] = e->a[i];
            continue;
        }
        dlock_backend *b = NULL;
        assert_int_equal(dlock_mock_backend_new(&b, e->stores[i]), 0);
        assert_non_null(nd->plugs[i] = dlock_test_failing_new(b));
        assert_int_equal(dlock_client_new(&nd->c[i], &nd->plugs[i]->w.base, &o), 0);
    }
}

static void node_down(env *e, nodes *nd, size_t i)
{
    if (e->mock)
        dlock_test_failing_set(nd->plugs[i], DLOCK_TEST_FAIL_ALL);
    else
        assert_int_equal(dlock_test_redis_kill(servers[i]), 0);
}

/* Back without its data, as a server restarted without persistence. */
static void node_back_empty(env *e, nodes *nd, size_t i)
{
    if (e->mock) {
        server_int(e, i, "DEL", e->name);
        dlock_test_failing_set(nd->plugs[i], DLOCK_TEST_FAIL_NONE);
    } else {
        assert_int_equal(dlock_test_redis_restart(servers[i]), 0);
    }
}

/* A minority down does not stop an extension; a majority down is a
 * transport error that names the nodes, and the hold is not called lost
 * (nothing says it is: the nodes that did not answer may still hold it);
 * those nodes back empty: fewer than a majority hold it, DLOCK_ELOST. */
static void redlock_extend_nodes_down(void **state)
{
    env *e = *state;
    size_t quorum = e->n / 2 + 1, i;
    dlock_rlock *l = NULL;
    char node[32];
    int64_t t = 0;
    long long p;
    nodes nd;
    int rc, k;

    nodes_make(e, &nd);
    assert_int_equal(dlock_redlock_new(&l, nd.c, e->n, e->name), 0);
    for (i = 0; e->mock && i < e->n; i++)
        dlock_client_free(nd.c[i]); /* the Redlock keeps them */
    assert_int_equal(dlock_lock(l, 60000), 0);
    for (i = quorum; i < e->n; i++)
        node_down(e, &nd, i);
    assert_int_equal(dlock_extend(l, 120000), 0);
    for (i = 0; i < quorum; i++) {
        p = pttl(e, i, e->name);
        assert_true(p > 60000 && p <= 120000);
    }

    node_down(e, &nd, quorum - 1);
    rc = dlock_extend(l, 90000);
    assert_true(rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT);
    for (i = quorum - 1; i < e->n; i++) {
        snprintf(node, sizeof(node), "node %zu", i);
        assert_non_null(strstr(dlock_errmsg(l), node));
    }
    assert_int_equal(dlock_redlock_token(l, &t), 0);
    assert_int_equal(lost_count(e), 0);

    for (i = quorum - 1; i < e->n; i++)
        node_back_empty(e, &nd, i);
    /* Redis: the clients wait out their reconnect back-off first (a
     * transport error changes nothing, so asking again is harmless) */
    for (k = 0; (rc = dlock_extend(l, 90000)) != DLOCK_ELOST && !e->mock && k < 40; k++)
        sleep_ms(50);
    assert_int_equal(rc, DLOCK_ELOST);
    assert_non_null(strstr(dlock_errmsg(l), "lease ran out"));
    assert_int_equal(lost_count(e), 0); /* this call's answer is the report */
    assert_int_equal(dlock_redlock_token(l, &t), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock(l), DLOCK_ELOST);
    assert_int_equal(dlock_unlock(l), DLOCK_ENOTOWNER);
    for (i = 0; i < e->n; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 0);
    dlock_rlock_free(l);
}

/* ---- MultiLock ------------------------------------------------------------- */

typedef struct racer {
    dlock_rlock *l;
    char owner[32];
    int rc;
} racer;

static void *racer_main(void *arg)
{
    racer *r = arg;

    r->rc = dlock_try_lock_as(r->l, r->owner, 0, 60000);
    return NULL;
}

static void multilock_members(env *e, dlock_client **cs, dlock_rlock **members,
                              const char *suffix)
{
    char name[128];
    size_t i;

    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "%s%s:%zu", e->name, suffix, i);
        assert_int_equal(dlock_reentrant_new(&members[i], cs[i], name), 0);
    }
}

static void free_members(dlock_rlock **members, dlock_rlock **others)
{
    size_t i;

    for (i = 0; i < 3; i++) {
        dlock_rlock_free(members[i]);
        dlock_rlock_free(others[i]);
    }
}

/* 10 threads try_lock(0) one MultiLock over 3 servers: one wins. */
static void multilock_one_winner(void **state)
{
    env *e = *state;
    dlock_rlock *members[3], *m = NULL;
    racer rs[10];
    pthread_t th[10];
    int i, wins = 0, winner = -1, held = 0;

    multilock_members(e, e->a, members, "");
    assert_int_equal(dlock_multilock_new(&m, members, 3), 0);
    for (i = 0; i < 10; i++) {
        rs[i].l = m;
        rs[i].rc = 1;
        snprintf(rs[i].owner, sizeof(rs[i].owner), "racer:%d", i);
        assert_int_equal(pthread_create(&th[i], NULL, racer_main, &rs[i]), 0);
    }
    for (i = 0; i < 10; i++)
        pthread_join(th[i], NULL);
    for (i = 0; i < 10; i++) {
        if (rs[i].rc == 0) {
            wins++;
            winner = i;
        } else {
            assert_int_equal(rs[i].rc, DLOCK_EBUSY);
        }
    }
    assert_int_equal(wins, 1);
    assert_int_equal(dlock_is_held_as(m, rs[winner].owner, &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_unlock_as(m, rs[winner].owner), 0);
    assert_int_equal(dlock_is_locked(m, &held), 0);
    assert_int_equal(held, 0);
    dlock_rlock_free(m);
    for (i = 0; i < 3; i++)
        dlock_rlock_free(members[i]);
}

/* A member held by someone else fails the whole acquisition and leaves
 * nothing held; once free, all are taken; unlock releases all. */
static void multilock_all_or_none(void **state)
{
    env *e = *state;
    dlock_rlock *members[3], *others[3], *m = NULL;
    int64_t count = 0, ttl = 0;
    char owner[DLOCK_OWNER_MAX];
    int held = 0, i;

    multilock_members(e, e->a, members, "");
    multilock_members(e, e->b, others, "");
    assert_int_equal(dlock_multilock_new(&m, members, 3), 0);
    assert_int_equal(dlock_lock(others[2], 60000), 0);
    assert_int_equal(dlock_try_lock(m, 0, 60000), DLOCK_EBUSY);
    assert_true(strstr(dlock_errmsg(m), "member 2") != NULL);
    for (i = 0; i < 2; i++) {
        assert_int_equal(dlock_is_locked(members[i], &held), 0);
        assert_int_equal(held, 0);
    }
    assert_int_equal(dlock_try_lock(m, e->mock ? 0 : 200, 60000),
                     e->mock ? DLOCK_EBUSY : DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_unlock(others[2]), 0);
    assert_int_equal(dlock_try_lock(m, 0, 60000), 0);
    assert_int_equal(dlock_try_lock(m, 0, 30000), 0);
    assert_int_equal(dlock_hold_count(m, &count), 0);
    assert_int_equal(count, 2);
    assert_int_equal(dlock_remain_ttl(m, &ttl), 0);
    assert_true(ttl > 30000 && ttl <= 60000);
    /* held on every member under the MultiLock's owner id (the thread's
     * id on the first member's client) */
    assert_int_equal(dlock_client_owner(e->a[0], owner, sizeof(owner)), 0);
    for (i = 0; i < 3; i++) {
        assert_int_equal(dlock_is_held_as(members[i], owner, &held), 0);
        assert_int_equal(held, 1);
    }
    assert_int_equal(dlock_unlock(m), 0);
    assert_int_equal(dlock_unlock(m), 0);
    assert_int_equal(dlock_unlock(m), DLOCK_ENOTOWNER);
    for (i = 0; i < 3; i++) {
        assert_int_equal(dlock_is_locked(members[i], &held), 0);
        assert_int_equal(held, 0);
    }
    /* a Redlock can be a member */
    {
        dlock_rlock *rl = redlock(e->a, e->n, e->name), *two[2] = {members[0], NULL}, *mm;
        two[1] = rl;
        assert_int_equal(dlock_multilock_new(&mm, two, 2), 0);
        assert_int_equal(dlock_lock(mm, 60000), 0);
        assert_int_equal(dlock_is_held(rl, &held), 0);
        assert_int_equal(held, 1);
        assert_int_equal(dlock_unlock(mm), 0);
        dlock_rlock_free(mm);
        dlock_rlock_free(rl);
    }
    dlock_rlock_free(m);
    free_members(members, others);
}

/* Every member moves; a non-holder changes nothing; a member
 * force-unlocked behind the MultiLock's back: DLOCK_ELOST and nothing
 * extended, the other members still held until the unlock, which releases
 * them and says DLOCK_ELOST too; a Redlock member is extended on its
 * nodes; a member type without extend: DLOCK_ENOTSUP, nothing changed. */
static void multilock_extend(void **state)
{
    env *e = *state;
    dlock_rlock *members[3], *others[3], *m = NULL, *m2 = NULL, *mixed = NULL;
    dlock_rlock *rl, *old = NULL, *two[2];
    static dlock_rlock_methods noext; /* the simple lock without extend */
    char keys[3][128], owner[DLOCK_OWNER_MAX];
    long long before[3], p;
    int64_t ttl = 0;
    int existed = 0, held = 0;
    size_t i;

    assert_int_equal(dlock_client_owner(e->a[0], owner, sizeof(owner)), 0);
    multilock_members(e, e->a, members, "");
    multilock_members(e, e->b, others, "");
    for (i = 0; i < 3; i++)
        snprintf(keys[i], sizeof(keys[i]), "%s:%zu", e->name, i);
    assert_int_equal(dlock_multilock_new(&m, members, 3), 0);
    assert_int_equal(dlock_multilock_new(&m2, others, 3), 0);
    assert_int_equal(dlock_lock(m, 60000), 0);
    advance(e, e->mock ? 1000 : 0);
    assert_int_equal(dlock_extend(m, 120000), 0);
    for (i = 0; i < 3; i++) {
        p = pttl(e, i, keys[i]);
        assert_true(p > 60000 && p <= 120000);
    }
    assert_int_equal(dlock_remain_ttl(m, &ttl), 0);
    assert_true(ttl > 60000 && ttl <= 120000);

    /* a non-holder: not held, nothing changed */
    for (i = 0; i < 3; i++)
        before[i] = pttl(e, i, keys[i]);
    assert_int_equal(dlock_extend(m2, 180000), DLOCK_ENOTOWNER);
    for (i = 0; i < 3; i++) {
        p = pttl(e, i, keys[i]);
        assert_true(p > 60000 && p <= before[i]);
    }

    /* member 1 released behind its back */
    assert_int_equal(dlock_force_unlock(others[1], &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_extend(m, 180000), DLOCK_ELOST);
    assert_non_null(strstr(dlock_errmsg(m), "member 1"));
    for (i = 0; i < 3; i += 2) {
        p = pttl(e, i, keys[i]);
        assert_true(p > 60000 && p <= before[i]);
        assert_int_equal(dlock_is_held_as(members[i], owner, &held), 0);
        assert_int_equal(held, 1);
    }
    assert_int_equal(dlock_unlock(m), DLOCK_ELOST);
    for (i = 0; i < 3; i++)
        assert_int_equal(server_int(e, i, "EXISTS", keys[i]), 0);
    assert_int_equal(dlock_unlock(m), DLOCK_ENOTOWNER);

    /* a Redlock member: its nodes move too */
    rl = redlock(e->a, e->n, e->name);
    two[0] = members[2];
    two[1] = rl;
    assert_int_equal(dlock_multilock_new(&mixed, two, 2), 0);
    assert_int_equal(dlock_lock(mixed, 60000), 0);
    advance(e, e->mock ? 1000 : 0);
    assert_int_equal(dlock_extend(mixed, 120000), 0);
    for (i = 0; i < e->n; i++) {
        p = pttl(e, i, e->name);
        assert_true(p > 60000 && p <= 120000);
    }
    assert_int_equal(dlock_unlock(mixed), 0);
    dlock_rlock_free(mixed);
    dlock_rlock_free(rl);

    /* a member without the slot: refused before anything is sent */
    assert_int_equal(dlock_simple_lock_new(&old, e->a[1], keys[1]), 0);
    noext = *old->methods;
    noext.extend = NULL;
    old->methods = &noext;
    two[0] = members[0];
    two[1] = old;
    assert_int_equal(dlock_multilock_new(&mixed, two, 2), 0);
    assert_int_equal(dlock_lock(mixed, 60000), 0);
    before[0] = pttl(e, 0, keys[0]);
    assert_int_equal(dlock_extend(mixed, 120000), DLOCK_ENOTSUP);
    assert_non_null(strstr(dlock_errmsg(mixed), "member 1"));
    p = pttl(e, 0, keys[0]);
    assert_true(p > 0 && p <= before[0]);
    assert_int_equal(dlock_unlock(mixed), 0);
    dlock_rlock_free(mixed);
    dlock_rlock_free(old);

    dlock_rlock_free(m);
    dlock_rlock_free(m2);
    free_members(members, others);
}

static void multilock_bad_input(void **state)
{
    env *e = *state;
    dlock_rlock *members[3], *m = (dlock_rlock *)1, *withnull[2];

    multilock_members(e, e->a, members, "");
    withnull[0] = members[0];
    withnull[1] = NULL;
    assert_int_equal(dlock_multilock_new(&m, members, 0), DLOCK_EINVAL);
    assert_null(m);
    assert_int_equal(dlock_multilock_new(&m, withnull, 2), DLOCK_EINVAL);
    assert_int_equal(dlock_multilock_new(&m, NULL, 2), DLOCK_EINVAL);
    assert_int_equal(dlock_multilock_new(NULL, members, 3), DLOCK_EINVAL);
    for (int i = 0; i < 3; i++)
        dlock_rlock_free(members[i]);
}

/* on_lost may free the lost Redlock's handle (on the first client's
 * watchdog thread, which then ends the client the handle kept alive). */
static void free_on_lost(void *arg, const char *name, const char *owner)
{
    dlock_rlock *l = __atomic_exchange_n((dlock_rlock **)arg, NULL, __ATOMIC_SEQ_CST);

    (void)name, (void)owner;
    dlock_rlock_free(l);
}

static void redlock_freed_in_on_lost(void **state)
{
    env *e = *state;
    static dlock_rlock *victim;
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *cs[NSERVERS] = {NULL};
    dlock_rlock *l = NULL;
    int64_t wd = e->mock ? 30000 : 600;
    char err[256];
    size_t i;
    int k;

    o.on_lost = free_on_lost;
    o.on_lost_arg = &victim;
    o.watchdog_timeout_ms = wd;
    for (i = 0; i < e->n; i++) {
        dlock_backend *b = NULL;
        if (e->mock) {
            assert_int_equal(dlock_mock_backend_new(&b, e->stores[i]), 0);
            assert_int_equal(dlock_client_new(&cs[i], b, &o), 0);
        } else {
            assert_int_equal(dlock_client_connect(&cs[i], dlock_test_redis_url(servers[i]),
                                                  &o, err, sizeof(err)), 0);
        }
    }
    assert_int_equal(dlock_redlock_new(&l, cs, e->n, e->name), 0);
    for (i = 0; i < e->n; i++)
        dlock_client_free(cs[i]);
    __atomic_store_n(&victim, l, __ATOMIC_SEQ_CST);
    assert_int_equal(dlock_lock(l, 0), 0);
    for (k = 0; k < 20 && __atomic_load_n(&victim, __ATOMIC_SEQ_CST); k++) {
        for (i = 0; i < e->n; i++)
            server_int(e, i, "DEL", e->name);
        advance(e, wd / 3);
    }
    assert_null(__atomic_load_n(&victim, __ATOMIC_SEQ_CST));
    if (e->mock) /* let the orphaned thread see its end */
        dlock_vclock_advance(e->vc, wd);
    sleep_ms(50);
}

/* A client set from JSON ("urls", api/dlock/config.h) makes a Redlock. */
static void redlock_from_json_client_set(void **state)
{
    env *e = *state;
    dlock_client *cs[NSERVERS] = {NULL};
    dlock_rlock *l = NULL;
    char json[1024], err[256];
    size_t n = 99, i, len;

    if (e->mock) {
        snprintf(json, sizeof(json), "{\"urls\": [\"mock:\", \"mock:\", \"mock:\"], "
                 "\"watchdog_timeout_ms\": 3000}");
    } else {
        len = (size_t)snprintf(json, sizeof(json), "{\"command_timeout_ms\": 1000, \"urls\": [");
        for (i = 0; i < NSERVERS; i++)
            len += (size_t)snprintf(json + len, sizeof(json) - len, "%s\"%s\"",
                                    i ? ", " : "", dlock_test_redis_url(servers[i]));
        snprintf(json + len, sizeof(json) - len, "]}");
    }
    assert_int_equal(dlock_client_set_from_json_string(cs, NSERVERS, &n, json, err,
                                                       sizeof(err)), 0);
    assert_int_equal(n, e->mock ? 3 : NSERVERS);
    assert_int_equal(dlock_redlock_new(&l, cs, n, e->name), 0);
    for (i = 0; i < n; i++)
        dlock_client_free(cs[i]); /* the Redlock keeps them */
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);

    /* bad sets: all or nothing, with the field named */
    assert_int_equal(dlock_client_set_from_json_string(cs, 2, &n, json, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_null(cs[0]);
    assert_int_equal(n, 0);
    assert_int_equal(dlock_client_set_from_json_string(cs, NSERVERS, &n, "{\"urls\": []}",
                                                       err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "urls"));
    assert_int_equal(dlock_client_set_from_json_string(
                         cs, NSERVERS, &n, "{\"url\": \"mock:\", \"urls\": [\"mock:\"]}", err,
                         sizeof(err)), DLOCK_EINVAL);
    assert_int_equal(dlock_client_set_from_json_string(
                         cs, NSERVERS, &n, "{\"urls\": [\"mock:\", \"nope://x\"]}", err,
                         sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "urls[1]"));
    assert_null(cs[0]);
    assert_int_equal(dlock_client_from_json_string(cs, "{\"urls\": [\"mock:\"]}", err,
                                                   sizeof(err)), DLOCK_EINVAL);
    assert_int_equal(dlock_client_set_from_json_string(NULL, 3, &n, json, err, sizeof(err)),
                     DLOCK_EINVAL);
}

/* A client set's JSON over servers[from..from+count) (URLs only: the
 * options are the set's defaults, lazy connection included, unless
 * extra adds fields). */
static void set_json(char *json, size_t len, size_t from, size_t count, const char *extra)
{
    size_t i, used = (size_t)snprintf(json, len, "{%s\"command_timeout_ms\": 1000, "
                                      "\"reconnect_max_ms\": 200, \"urls\": [",
                                      extra);
    for (i = 0; i < count; i++)
        used += (size_t)snprintf(json + used, len - used, "%s\"%s\"", i ? ", " : "",
                                 dlock_test_redis_url(servers[from + i]));
    snprintf(json + used, len - used, "]}");
}

/* Issue 32 §3: a Redlock starts while a minority of its nodes is down
 * (its client set connects lazily by default), acquires with the
 * majority, and uses a node once it is up: with the first nodes down
 * later, the majority is made with the nodes that were down at start.
 * Over 2 nodes with 1 down: made, but no majority until it comes back.
 * Redis only: the mock has no connection to defer. */
static void redlock_set_starts_with_nodes_down(void **state)
{
    env *e = *state;
    dlock_client *cs[NSERVERS] = {NULL};
    dlock_rlock *l = NULL, *l2 = NULL;
    char json[1024], err[256];
    int64_t token = 0;
    size_t n = 0, i;
    int rc;

    assert_int_equal(dlock_test_redis_kill(servers[3]), 0);
    assert_int_equal(dlock_test_redis_kill(servers[4]), 0);
    /* eager, as before: the set cannot be made */
    set_json(json, sizeof json, 0, NSERVERS, "\"lazy_connect\": false, ");
    assert_int_equal(dlock_client_set_from_json_string(cs, NSERVERS, &n, json, err,
                                                       sizeof(err)), DLOCK_ECONN);
    assert_non_null(strstr(err, "urls[3]: "));
    assert_null(cs[0]);

    set_json(json, sizeof json, 0, NSERVERS, "");
    rc = dlock_client_set_from_json_string(cs, NSERVERS, &n, json, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "  client set: %s (%s)\n", dlock_errname(rc), err);
    assert_int_equal(rc, 0);
    assert_int_equal(n, NSERVERS);
    assert_int_equal(dlock_redlock_new(&l, cs, n, e->name), 0);
    for (i = 0; i < n; i++)
        dlock_client_free(cs[i]); /* the Redlock keeps them */
    assert_int_equal(dlock_try_lock(l, 10000, 60000), 0); /* nodes 0, 1, 2 */
    assert_int_equal(dlock_redlock_token(l, &token), 0);
    assert_true(token >= 1);
    assert_int_equal(server_int(e, 2, "EXISTS", e->name), 1);
    assert_int_equal(dlock_unlock(l), 0);

    /* 3 and 4 come up, 0 and 1 go down: 2, 3, 4 make the majority */
    assert_int_equal(dlock_test_redis_restart(servers[3]), 0);
    assert_int_equal(dlock_test_redis_restart(servers[4]), 0);
    assert_int_equal(dlock_test_redis_kill(servers[0]), 0);
    assert_int_equal(dlock_test_redis_kill(servers[1]), 0);
    rc = dlock_try_lock(l, 20000, 60000);
    if (rc != 0)
        fprintf(stderr, "  try_lock: %s (%s)\n", dlock_errname(rc), dlock_errmsg(l));
    assert_int_equal(rc, 0);
    for (i = 2; i < NSERVERS; i++)
        assert_int_equal(server_int(e, i, "EXISTS", e->name), 1);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    assert_int_equal(dlock_test_redis_restart(servers[0]), 0);
    assert_int_equal(dlock_test_redis_restart(servers[1]), 0);

    /* two nodes, one down: made; a majority (both) only once it is up */
    assert_int_equal(dlock_test_redis_kill(servers[4]), 0);
    set_json(json, sizeof json, 3, 2, "");
    assert_int_equal(dlock_client_set_from_json_string(cs, NSERVERS, &n, json, err,
                                                       sizeof(err)), 0);
    assert_int_equal(n, 2);
    assert_int_equal(dlock_redlock_new(&l2, cs, n, e->name), 0);
    dlock_client_free(cs[0]);
    dlock_client_free(cs[1]);
    rc = dlock_try_lock(l2, 0, 60000);
    assert_true(rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT);
    assert_non_null(strstr(dlock_errmsg(l2), "node 1"));
    assert_int_equal(server_int(e, 3, "EXISTS", e->name), 0); /* undone */
    assert_int_equal(dlock_test_redis_restart(servers[4]), 0);
    assert_int_equal(dlock_try_lock(l2, 20000, 60000), 0);
    assert_int_equal(server_int(e, 4, "EXISTS", e->name), 1);
    assert_int_equal(dlock_unlock(l2), 0);
    dlock_rlock_free(l2);
}

/* The fan-out's parked workers are the parent's: a fork() child that makes
 * its own clients and Redlock fans out on workers of its own (handing a
 * step to a parent's worker, which does not exist in the child, would hang
 * the child; the parent gives up on it after 20 s). ThreadSanitizer cannot
 * start threads in the child of a threaded process ("dup thread with used
 * id"), so under it the child checks that it has forgotten the parent's
 * workers instead. */
#if defined(__SANITIZE_THREAD__)
#define DLOCK_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DLOCK_TEST_TSAN 1
#endif
#endif
size_t dlock__fanout_workers(void);

static void no_step(void *ctx, size_t i)
{
    (void)ctx;
    (void)i;
}

static int child_lock_unlock(env *e)
{
    dlock_client *cs[NSERVERS] = {NULL};
    dlock_rlock *l = NULL;
    char name[sizeof(e->name) + 16];
    size_t i;
    int rc = 1;

#ifdef DLOCK_TEST_TSAN
    return dlock__fanout_workers() == 0 ? 0 : 3;
#endif
    snprintf(name, sizeof(name), "%s:child", e->name);
    for (i = 0; i < e->n; i++)
        if (make_client(e, i, &cs[i]) != 0)
            return 2;
    if (dlock_redlock_new(&l, cs, e->n, name) == 0 && dlock_lock(l, 60000) == 0 &&
        dlock_unlock(l) == 0)
        rc = 0;
    dlock_rlock_free(l);
    for (i = 0; i < e->n; i++)
        dlock_client_free(cs[i]);
    return rc;
}

static void redlock_fork_child_fans_out(void **state)
{
    env *e = *state;
    dlock_rlock *l = redlock(e->a, e->n, e->name);
    int status = -1, waited = 0;
    pid_t pid, got;

    assert_int_equal(dlock_lock(l, 60000), 0);
    assert_int_equal(dlock_unlock(l), 0);
    /* A Redis Redlock's attempts need no worker (split calls), its reads
     * and renewals do: a step now gives the pool its workers. */
    dlock__fanout(e->n, no_step, NULL);
    assert_true(dlock__fanout_workers() >= e->n - 1);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(child_lock_unlock(e));
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && waited < 2000) {
        sleep_ms(10);
        waited++;
    }
    if (got == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    assert_int_equal(got, pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* and the parent's pool still works */
    assert_int_equal(dlock_lock(l, 60000), 0);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
}

#define CASE(f, s) cmocka_unit_test_setup_teardown(f, s, teardown)
#define CASES(s)                                                       \
    {                                                                  \
        CASE(redlock_bad_input, s), CASE(redlock_acquire_reenter_unlock, s), \
        CASE(redlock_majority_and_token, s),                           \
        CASE(redlock_waiter_woken_by_any_node, s), CASE(redlock_watchdog, s), \
        CASE(redlock_force_unlock_and_lease, s), CASE(multilock_one_winner, s), \
        CASE(multilock_all_or_none, s), CASE(multilock_bad_input, s),  \
        CASE(redlock_from_json_client_set, s),                         \
        CASE(redlock_freed_in_on_lost, s),                             \
        CASE(redlock_fork_child_fans_out, s),                          \
        CASE(redlock_extend_every_node, s), CASE(redlock_extend_nodes_down, s), \
        CASE(multilock_extend, s),                                     \
        CASE(redlock_renewed_by_client_watchdog, s),                   \
        CASE(redlock_async_and_refused_in_callback, s),                \
        CASE(redlock_two_releases_on_one_loop, s),                     \
    }

int dlock_test_redlock(void);
int dlock_test_redlock(void)
{
    const struct CMUnitTest mock_cases[] = CASES(setup_mock);
    const struct CMUnitTest redis_cases[] = CASES(setup_redis);
    const struct CMUnitTest redis_only[] = {
        CASE(redlock_set_starts_with_nodes_down, setup_redis),
    };
    int failed = 0, i, up = 1;

    dlock_test_set_phase("redlock on mock");
    failed += DLOCK_RUN_GROUP("redlock and multilock on mock (3 stores)", mock_cases,
                              NULL, NULL);
    dlock_test_set_phase("redlock: starting %d redis-servers", NSERVERS);
    for (i = 0; i < NSERVERS; i++)
        up &= dlock_test_redis_start(&servers[i], NULL) == 0;
    if (up) {
        dlock_test_set_phase("redlock on redis");
        failed += DLOCK_RUN_GROUP("redlock and multilock on redis (5 servers)",
                                  redis_cases, NULL, NULL);
        failed += DLOCK_RUN_GROUP("redlock on redis, nodes down at start", redis_only,
                                  NULL, NULL);
    } else {
        fprintf(stderr, "cannot start %d redis-servers\n", NSERVERS);
        failed += dlock_test_count((int)(sizeof(redis_cases) / sizeof(redis_cases[0])),
                                   (int)(sizeof(redis_cases) / sizeof(redis_cases[0])));
        failed += dlock_test_count((int)(sizeof(redis_only) / sizeof(redis_only[0])),
                                   (int)(sizeof(redis_only) / sizeof(redis_only[0])));
    }
    for (i = 0; i < NSERVERS; i++) {
        dlock_test_redis_stop(servers[i]);
        servers[i] = NULL;
    }
    return failed;
}
