/*
 * The Redis backend on Redis Cluster (redis-cluster:// URLs), against a
 * throwaway cluster of 3 masters with a replica each (tests/harness/
 * cluster.h): URL errors, a seed that is no cluster node, routing by slot
 * over all masters from one seed, the JSON path, MOVED after a slot moved
 * under a held lock (unlock and watchdog renewals follow the key), ASK
 * while the slot migrates, a waiter woken across a slot move, sharded
 * pub/sub both ways, the watchdog's one renewal call per master (with the
 * per-slot fallback where the server refuses it, a lost lock in such a
 * call, slots moving under it), CLUSTER FAILOVER and kill -9 of a master
 * with holders on that shard and on others. The conformance suite runs on the same
 * cluster as the "redis-cluster" row (tests/main.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"
#include "dlock/config.h"
#include "dlock/redis.h"
#include "dlock/sys/backend.h"
#include "../../harness/asserts.h"
#include "../../harness/cluster.h"
#include "../../harness/fixture.h"
#include "../../harness/inbox.h"
#include "../../harness/redis_client.h"
#include "../../harness/runner.h"

#define SECRET "clusterPassw0rdXyz"

static dlock_test_cluster cl;
static int cl_up;
static char errbuf[512];

/* For tests/main.c: the cluster stays up after the group for the
 * conformance row. */
int dlock_test_redis_cluster_start(void);
void dlock_test_redis_cluster_stop(void);
const char *dlock_test_cluster_seed_url(void);
int dlock_test_redis_cluster_spread(void);
/* For tests/backends/redis/async_topology_test.c: the cluster itself, to
 * move slots (NULL when it is not up). */
dlock_test_cluster *dlock_test_redis_cluster_get(void);

/* rc must be 0; else the lock's detail is printed first. */
#define expect_ok(rc, l)                                                      \
    do {                                                                      \
        int rc_ = (rc);                                                       \
        if (rc_ != 0)                                                         \
            fprintf(stderr, "  [cluster] %s: %s\n", dlock_errname(rc_),       \
                    dlock_errmsg(l));                                         \
        assert_int_equal(rc_, 0);                                             \
    } while (0)

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static dlock_redis_options fast_options(void)
{
    return dlock_test_redis_options(500, 2000);
}

/* A client on the cluster; watchdog_ms 0: the default lease. */
static dlock_client *client_on(const char *url, int64_t watchdog_ms)
{
    dlock_redis_options o = fast_options();
    dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    int rc;

    if (watchdog_ms > 0)
        co.watchdog_timeout_ms = watchdog_ms;
    rc = dlock_test_client_open(&c, url, &o, &co, errbuf, sizeof errbuf);
    if (rc != 0)
        fprintf(stderr, "cluster client: %s %s\n", dlock_errname(rc), errbuf);
    assert_int_equal(rc, 0);
    return c;
}

/* A name of shard's slots ("cluster:<what>:<n>"). */
static const char *name_on(int shard, const char *what, int k, char *buf, size_t len)
{
    char prefix[64];
    const char *n;
    snprintf(prefix, sizeof prefix, "cluster:%s:", what);
    n = dlock_test_cluster_name(&cl, shard, prefix, k, buf, len);
    assert_non_null(n);
    return n;
}

/* Whether key exists on node (asked on that node itself). */
static int exists_on(int node, const char *key)
{
    char out[64];
    const char *argv[] = {"EXISTS", key, NULL};
    if (dlock_test_cluster_command(&cl, node, out, sizeof out, argv) != 0)
        return -1;
    return atoi(out);
}

/* CLUSTER COUNTKEYSINSLOT on node (no ASKING needed, unlike a read of the
 * key on a node still importing the slot). */
static int keys_in_slot(int node, unsigned slot)
{
    char out[64], s[16];
    const char *argv[] = {"CLUSTER", "COUNTKEYSINSLOT", s, NULL};
    snprintf(s, sizeof s, "%u", slot);
    if (dlock_test_cluster_command(&cl, node, out, sizeof out, argv) != 0)
        return -1;
    return atoi(out);
}

static int master_of(const char *key)
{
    return dlock_test_cluster_slot_master(&cl, dlock_test_cluster_slot(key));
}

/* ---- URLs and seeds ------------------------------------------------------- */

static void cluster_url_errors(void **state)
{
    dlock_redis_options o = fast_options();
    (void)state;
    dlock_fx_expect_open_fails("cluster", "redis-cluster://127.0.0.1:7000/1", &o,
                               DLOCK_EINVAL, "only database 0", SECRET, errbuf,
                               sizeof errbuf);
    dlock_fx_expect_open_fails("cluster", "redis-cluster://a,,b", &o, DLOCK_EINVAL,
                               "empty seed node host", SECRET, errbuf, sizeof errbuf);
    dlock_fx_expect_open_fails("cluster", "redis-cluster://a:0", &o, DLOCK_EINVAL,
                               "bad port", SECRET, errbuf, sizeof errbuf);
    dlock_fx_expect_open_fails("cluster", "redis-cluster://a?sentinelMasterId=m", &o,
                               DLOCK_EINVAL, "needs a redis-sentinel://", SECRET,
                               errbuf, sizeof errbuf);
    dlock_fx_expect_open_fails("cluster", "redis-cluster://a?cacert=/x", &o,
                               DLOCK_EINVAL, "needs a rediss:// URL", SECRET, errbuf,
                               sizeof errbuf);
    dlock_fx_expect_open_fails("cluster", "redis-cluster://a?bogus=1", &o, DLOCK_EINVAL,
                               "unknown parameter 'bogus'", SECRET, errbuf, sizeof errbuf);
    /* with a password in the URL, nothing of it is quoted */
    dlock_fx_expect_open_fails("cluster", "redis-cluster://u:" SECRET "@a?bogus=1", &o,
                               DLOCK_EINVAL, "unknown parameter (expected", SECRET,
                               errbuf, sizeof errbuf);
    /* nothing listens there: the seed is named */
    dlock_fx_expect_open_fails("cluster", "redis-cluster://127.0.0.1:1", &o,
                               DLOCK_ECONN, "127.0.0.1:1", SECRET, errbuf,
                               sizeof errbuf);
}

/* A name with a '{' but no non-empty {tag} hashes whole, and so do its
 * auxiliary keys (no braces added), each to its own slot: refused on a
 * cluster, fine on one server. A complete tag is fine on both. */
static void cluster_name_without_tag(void **state)
{
    static const char *const bad[] = {"a}{", "open{", "{}empty"};
    dlock_client *c = client_on(cl.url, 0);
    dlock_rlock *l = NULL;
    dlock_semaphore *s = NULL;
    size_t i;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(dlock_reentrant_new(&l, c, bad[i]), DLOCK_EINVAL);
        assert_null(l);
        assert_int_equal(dlock_semaphore_new(&s, c, bad[i]), DLOCK_EINVAL);
    }
    assert_int_equal(dlock_reentrant_new(&l, c, "x{tag}y"), 0);
    expect_ok(dlock_try_lock(l, 0, 5000), l);
    expect_ok(dlock_unlock(l), l);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

static void cluster_seed_not_a_cluster(void **state)
{
    dlock_redis_options o = fast_options();
    dlock_test_redis *r = NULL;
    char url[128];
    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", dlock_test_redis_port(r));
    dlock_fx_expect_open_fails("cluster", url, &o, DLOCK_EPROTO, "not a cluster node",
                               SECRET, errbuf, sizeof errbuf);
    dlock_test_redis_stop(r);
}

/* ---- routing -------------------------------------------------------------- */

/* One seed (a replica's port even) finds every master; each lock's hash
 * lives on the master of its slot, for names on all three shards. */
static void cluster_routes_by_slot(void **state)
{
    char url[128], name[64];
    dlock_client *c;
    int shard, k;
    (void)state;
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d",
             dlock_test_cluster_port(&cl, cl.nnodes - 1));
    c = client_on(url, 0);
    for (shard = 0; shard < cl.masters; shard++)
        for (k = 0; k < 3; k++) {
            dlock_rlock *l = NULL;
            int64_t count = 0;
            name_on(shard, "route", k, name, sizeof name);
            assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
            expect_ok(dlock_try_lock(l, 0, 10000), l);
            expect_ok(dlock_try_lock(l, 0, 10000), l);
            expect_ok(dlock_hold_count(l, &count), l);
            assert_int_equal(count, 2);
            assert_int_equal(exists_on(dlock_test_cluster_shard_master(&cl, shard), name), 1);
            expect_ok(dlock_unlock(l), l);
            expect_ok(dlock_unlock(l), l);
            assert_int_equal(exists_on(dlock_test_cluster_shard_master(&cl, shard), name), 0);
            dlock_rlock_free(l);
        }
    dlock_client_free(c);
}

static void cluster_json(void **state)
{
    char json[1024], err[512];
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    (void)state;
    snprintf(json, sizeof json, "{\"url\": \"%s\", \"connect_timeout_ms\": 500}", cl.url);
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "cluster:json"), 0);
    expect_ok(dlock_try_lock(l, 0, 5000), l);
    expect_ok(dlock_unlock(l), l);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

/* The connect-time check of eviction and persistence (issue 32 §4,
 * dlock_client_server_safety) covers every master: before a call, only
 * the nodes the map was read from are known; after a lock on each shard,
 * every master is, each with the harness's settings (noeviction, no
 * persistence). */
static void cluster_server_safety_every_master(void **state)
{
    dlock_client *c = client_on(cl.url, 600);
    dlock_server_safety s = DLOCK_SERVER_SAFETY_INIT;
    char name[64];
    int shard;
    (void)state;
    for (shard = 0; shard < cl.masters; shard++) {
        dlock_rlock *l = NULL;
        name_on(shard, "safety", 0, name, sizeof name);
        assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
        expect_ok(dlock_try_lock(l, 0, 5000), l);
        expect_ok(dlock_unlock(l), l);
        dlock_rlock_free(l);
    }
    assert_int_equal(dlock_client_server_safety(c, &s), 0);
    assert_int_equal(s.servers, cl.masters);
    assert_string_equal(s.maxmemory_policy, "noeviction");
    assert_int_equal(s.locks_evictable, 0);
    assert_int_equal(s.tokens_can_go_back, 1);
    dlock_client_free(c);
}

/* ---- slot moves ------------------------------------------------------------- */

/* A lock held with the watchdog (lease 600 ms, renewed every 200 ms) while
 * its slot moves to another shard: renewals follow MOVED (still held well
 * past the lease), and so does the unlock. */
static void cluster_moved_under_hold(void **state)
{
    char name[64];
    dlock_client *c = client_on(cl.url, 600);
    dlock_rlock *l = NULL;
    unsigned slot;
    int held = 0, to;
    (void)state;
    name_on(0, "moved", 0, name, sizeof name);
    slot = dlock_test_cluster_slot(name);
    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    expect_ok(dlock_lock(l, 0), l);
    assert_int_equal(dlock_test_cluster_move_slot(&cl, slot, 1), 0);
    to = dlock_test_cluster_shard_master(&cl, 1);
    assert_int_equal(master_of(name), to);
    assert_int_equal(exists_on(to, name), 1);
    usleep(1500 * 1000); /* 2.5 leases: only renewals keep it */
    expect_ok(dlock_is_held(l, &held), l);
    assert_int_equal(held, 1);
    expect_ok(dlock_unlock(l), l);
    assert_int_equal(exists_on(to, name), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);
    /* back where it was, for the cases after */
    assert_int_equal(dlock_test_cluster_move_slot(&cl, slot, 0), 0);
}

typedef struct unlocker {
    dlock_rlock *l;
    char owner[DLOCK_OWNER_MAX]; /* the test thread's: it holds the lock */
    int rc;
} unlocker;

static void *unlock_now(void *arg)
{
    unlocker *u = arg;
    u->rc = dlock_unlock_as(u->l, u->owner);
    return NULL;
}

/* While the slot migrates and the key already moved, the source answers
 * ASK: a read is sent again with ASKING to the target. The unlock names
 * two keys (the lock and its channel), which the target cannot serve
 * until the slot is final (TRYAGAIN): it is repeated with back-off and
 * succeeds once the move finishes, within its time. */
static void cluster_ask_during_migration(void **state)
{
    char name[64];
    dlock_client *c = client_on(cl.url, 0);
    dlock_rlock *l = NULL;
    unlocker u;
    pthread_t th;
    unsigned slot;
    int locked = -1;
    (void)state;
    name_on(0, "ask", 0, name, sizeof name);
    slot = dlock_test_cluster_slot(name);
    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    expect_ok(dlock_try_lock(l, 0, 30000), l);
    assert_int_equal(dlock_test_cluster_move_slot_begin(&cl, slot, 2), 0);
    assert_true(dlock_test_cluster_move_slot_keys(&cl) >= 1);
    assert_int_equal(keys_in_slot(dlock_test_cluster_shard_master(&cl, 0), slot), 0);
    assert_int_equal(keys_in_slot(dlock_test_cluster_shard_master(&cl, 2), slot), 1);
    expect_ok(dlock_is_locked(l, &locked), l);
    assert_int_equal(locked, 1);
    u.l = l;
    u.rc = -1;
    assert_int_equal(dlock_client_owner(c, u.owner, sizeof u.owner), 0);
    assert_int_equal(pthread_create(&th, NULL, unlock_now, &u), 0);
    usleep(100 * 1000);
    assert_int_equal(dlock_test_cluster_move_slot_finish(&cl), 0);
    pthread_join(th, NULL);
    expect_ok(u.rc, l);
    expect_ok(dlock_is_locked(l, &locked), l);
    assert_int_equal(locked, 0);
    dlock_rlock_free(l);
    dlock_client_free(c);
    assert_int_equal(dlock_test_cluster_move_slot(&cl, slot, 0), 0);
}

typedef struct waiter {
    dlock_rlock *l;
    int rc;
    int64_t done_ms;
} waiter;

static void *wait_for_lock(void *arg)
{
    waiter *w = arg;
    w->rc = dlock_try_lock(w->l, 20000, 5000);
    w->done_ms = now_ms();
    if (w->rc == 0)
        dlock_unlock(w->l);
    return NULL;
}

/* A waiter subscribed on the slot's master; the slot moves, then the
 * holder unlocks there: the waiter's subscription followed the slot, so the
 * release wakes it (far before its 20 s wait or the 30 s lease). */
static void cluster_waiter_follows_move(void **state)
{
    char name[64];
    dlock_client *holder = client_on(cl.url, 0), *other = client_on(cl.url, 0);
    dlock_rlock *l = NULL;
    waiter w = {NULL, -1, 0};
    pthread_t th;
    unsigned slot;
    int64_t t0;
    (void)state;
    name_on(1, "wake", 0, name, sizeof name);
    slot = dlock_test_cluster_slot(name);
    assert_int_equal(dlock_reentrant_new(&l, holder, name), 0);
    assert_int_equal(dlock_reentrant_new(&w.l, other, name), 0);
    expect_ok(dlock_try_lock(l, 0, 30000), l);
    assert_int_equal(pthread_create(&th, NULL, wait_for_lock, &w), 0);
    usleep(300 * 1000); /* subscribed and asleep */
    assert_int_equal(dlock_test_cluster_move_slot(&cl, slot, 2), 0);
    usleep(300 * 1000);
    t0 = now_ms();
    expect_ok(dlock_unlock(l), l);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    printf("  [cluster] waiter woken %lld ms after the unlock on the slot's new master\n",
           (long long)(w.done_ms - t0));
    dlock_rlock_free(l);
    dlock_rlock_free(w.l);
    dlock_client_free(holder);
    dlock_client_free(other);
    assert_int_equal(dlock_test_cluster_move_slot(&cl, slot, 1), 0);
}

/* Sharded pub/sub both ways: what another client SPUBLISHes on the
 * channel's master reaches a dlock subscriber, and a dlock unlock
 * SPUBLISHes (a subscriber of the channel counts it). */
static void cluster_sharded_pubsub(void **state)
{
    char name[64], channel[96], out[64];
    dlock_redis_options o = fast_options();
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL;
    dlock_test_inbox in;
    int m;
    (void)state;
    memset(&in, 0, sizeof in);
    pthread_mutex_init(&in.mu, NULL);
    name_on(2, "pubsub", 0, name, sizeof name);
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    assert_int_equal(dlock_redis_backend_new(&b, cl.url, &o, errbuf, sizeof errbuf), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, channel, dlock_test_inbox_on_message,
                                             &in),
                     0);
    m = master_of(channel);
    {
        const char *argv[] = {"SPUBLISH", channel, "0", NULL};
        assert_int_equal(dlock_test_cluster_command(&cl, m, out, sizeof out, argv), 0);
        assert_string_equal(out, "1"); /* one shard subscriber: ours */
    }
    assert_int_equal(dlock_test_inbox_wait(&in, 1, 0, 5000), 1);
    {
        /* an unlock of that lock by dlock reaches the same subscriber */
        dlock_client *c = client_on(cl.url, 0);
        dlock_rlock *l = NULL;
        assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
        expect_ok(dlock_try_lock(l, 0, 5000), l);
        expect_ok(dlock_unlock(l), l);
        assert_int_equal(dlock_test_inbox_wait(&in, 2, 0, 5000), 2);
        dlock_rlock_free(l);
        dlock_client_free(c);
    }
    dlock_backend_unsubscribe(b, sub);
    dlock_backend_free(b);
    pthread_mutex_destroy(&in.mu);
}

/* ---- the watchdog: one call per master ------------------------------------ */

/* The test hook of backends/redis/cross.h: the shebang's flag word (NULL:
 * allow-cross-slot-keys); a word the server does not know makes it refuse
 * every script over several slots. */
void dlock__redis_cross_test_flag(const char *word);

#define WD_LOCKS 40   /* in WD_LOCKS distinct slots of shard 0 */
#define WD_LEASE 900  /* watchdog timeout: renewed every 300 ms */

typedef struct wd_set {
    dlock_client *c;
    dlock_rlock *l[WD_LOCKS];
    char name[WD_LOCKS][64];
    pthread_mutex_t mu;
    int lost;              /* on_lost calls; mu */
    char lost_name[64];    /* the last one's; mu */
} wd_set;

static void wd_on_lost(void *arg, const char *name, const char *owner)
{
    wd_set *w = arg;
    (void)owner;
    pthread_mutex_lock(&w->mu);
    w->lost++;
    snprintf(w->lost_name, sizeof w->lost_name, "%s", name);
    pthread_mutex_unlock(&w->mu);
}

/* Script calls (EVALSHA and EVAL) node ran so far (INFO commandstats). */
static long long script_calls(int node)
{
    enum { INFO_MAX = 1 << 16 };
    const char *argv[] = {"INFO", "commandstats", NULL};
    const char *names[] = {"cmdstat_evalsha:calls=", "cmdstat_eval:calls="};
    char *out = malloc(INFO_MAX);
    long long n = 0;
    size_t i;
    assert_non_null(out);
    assert_int_equal(dlock_test_cluster_command(&cl, node, out, INFO_MAX, argv), 0);
    for (i = 0; i < 2; i++) {
        const char *p = strstr(out, names[i]);
        if (p)
            n += atoll(p + strlen(names[i]));
    }
    free(out);
    return n;
}

/* WD_LOCKS watchdog locks in as many slots of shard 0, each slot once. */
static void wd_take(wd_set *w, const char *what)
{
    int i, k = 0, j;
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->mu, NULL);
    w->c = client_on(cl.url, WD_LEASE);
    for (i = 0; i < WD_LOCKS; i++) {
        int fresh;
        do {
            name_on(0, what, k++, w->name[i], sizeof w->name[i]);
            fresh = 1;
            for (j = 0; j < i; j++)
                if (dlock_test_cluster_slot(w->name[j]) ==
                    dlock_test_cluster_slot(w->name[i]))
                    fresh = 0;
        } while (!fresh);
        assert_int_equal(dlock_reentrant_new(&w->l[i], w->c, w->name[i]), 0);
        assert_int_equal(dlock_rlock_set_on_lost(w->l[i], wd_on_lost, w), 0);
        expect_ok(dlock_lock(w->l[i], 0), w->l[i]);
    }
}

/* Every lock but skip (-1: none) still held. */
static void wd_check_held(wd_set *w, int skip)
{
    int i, held;
    for (i = 0; i < WD_LOCKS; i++) {
        if (i == skip)
            continue;
        held = 0;
        expect_ok(dlock_is_held(w->l[i], &held), w->l[i]);
        assert_int_equal(held, 1);
    }
}

static void wd_release(wd_set *w, int skip)
{
    int i;
    for (i = 0; i < WD_LOCKS; i++) {
        if (i != skip)
            expect_ok(dlock_unlock(w->l[i]), w->l[i]);
        dlock_rlock_free(w->l[i]);
    }
    dlock_client_free(w->c);
    pthread_mutex_destroy(&w->mu);
}

/* Locks in 40 slots of one master are renewed by one script call per
 * period there (the allow-cross-slot-keys flag of Redis 7 / Valkey), not
 * one per slot: over 2.5 leases (about 7 periods) that master runs far
 * fewer calls than one period's 40 per-slot ones, and every lock is still
 * held, though only renewals kept it. */
static void cluster_watchdog_one_call_per_master(void **state)
{
    wd_set w;
    int master = dlock_test_cluster_shard_master(&cl, 0);
    long long before, calls;
    (void)state;
    wd_take(&w, "wdnode");
    before = script_calls(master);
    usleep(WD_LEASE * 5 / 2 * 1000);
    calls = script_calls(master) - before;
    wd_check_held(&w, -1);
    if (calls >= WD_LOCKS)
        fprintf(stderr, "  [cluster] %lld script calls on shard 0's master\n", calls);
    assert_true(calls >= 1);
    assert_true(calls < WD_LOCKS);
    pthread_mutex_lock(&w.mu);
    assert_int_equal(w.lost, 0);
    pthread_mutex_unlock(&w.mu);
    wd_release(&w, -1);
}

/* A server that refuses the flag (forced here with a flag word it does not
 * know): the first renewal of that master is refused, the node is
 * remembered, and its holds are renewed per slot from then on (at least
 * one call per slot over the window), all still held past 2.5 leases. */
static void cluster_watchdog_flag_refused(void **state)
{
    wd_set w;
    int master = dlock_test_cluster_shard_master(&cl, 0);
    long long before, calls;
    (void)state;
    dlock__redis_cross_test_flag("dlock-test-unknown-flag");
    wd_take(&w, "wdrefused");
    before = script_calls(master);
    usleep(WD_LEASE * 5 / 2 * 1000);
    calls = script_calls(master) - before;
    wd_check_held(&w, -1);
    pthread_mutex_lock(&w.mu);
    assert_int_equal(w.lost, 0);
    pthread_mutex_unlock(&w.mu);
    wd_release(&w, -1);
    if (calls < WD_LOCKS)
        fprintf(stderr, "  [cluster] %lld script calls on shard 0's master\n", calls);
    assert_true(calls >= WD_LOCKS);
}

/* A lock deleted behind its holder's back among 40 renewed in one call:
 * the watchdog reports exactly that one lost (on_lost, and its unlock says
 * DLOCK_ELOST); the others stay held. */
static void cluster_watchdog_lost_in_batch(void **state)
{
    wd_set w;
    char out[64];
    const int victim = WD_LOCKS / 2;
    const char *argv[] = {"DEL", NULL, NULL};
    int64_t deadline;
    int lost;
    (void)state;
    wd_take(&w, "wdlost");
    argv[1] = w.name[victim];
    assert_int_equal(dlock_test_cluster_command(&cl, master_of(w.name[victim]),
                                                out, sizeof out, argv), 0);
    assert_string_equal(out, "1");
    deadline = now_ms() + 10000;
    do {
        usleep(50 * 1000);
        pthread_mutex_lock(&w.mu);
        lost = w.lost;
        pthread_mutex_unlock(&w.mu);
    } while (lost == 0 && now_ms() < deadline);
    usleep(WD_LEASE * 1000); /* three more periods: no other report */
    pthread_mutex_lock(&w.mu);
    assert_int_equal(w.lost, 1);
    assert_string_equal(w.lost_name, w.name[victim]);
    pthread_mutex_unlock(&w.mu);
    wd_check_held(&w, victim);
    assert_int_equal(dlock_unlock(w.l[victim]), DLOCK_ELOST);
    wd_release(&w, victim);
}

/* One of the batch's slots moves to shard 1 while held, and another
 * migrates (ASK) for a while: the batch falls back to calls per slot where
 * a key is not served, and every lock stays held, none reported lost. */
static void cluster_watchdog_batch_across_move(void **state)
{
    wd_set w;
    unsigned moved, migrating;
    (void)state;
    wd_take(&w, "wdmove");
    moved = dlock_test_cluster_slot(w.name[3]);
    migrating = dlock_test_cluster_slot(w.name[WD_LOCKS - 1]);
    assert_int_equal(dlock_test_cluster_move_slot(&cl, moved, 1), 0);
    usleep(WD_LEASE * 3 / 2 * 1000);
    wd_check_held(&w, -1);
    assert_int_equal(dlock_test_cluster_move_slot_begin(&cl, migrating, 2), 0);
    assert_true(dlock_test_cluster_move_slot_keys(&cl) >= 1);
    usleep(WD_LEASE * 3 / 2 * 1000);
    assert_int_equal(dlock_test_cluster_move_slot_finish(&cl), 0);
    wd_check_held(&w, -1);
    pthread_mutex_lock(&w.mu);
    assert_int_equal(w.lost, 0);
    pthread_mutex_unlock(&w.mu);
    wd_release(&w, -1);
    assert_int_equal(dlock_test_cluster_move_slot(&cl, moved, 0), 0);
    assert_int_equal(dlock_test_cluster_move_slot(&cl, migrating, 0), 0);
}

/* ---- failover --------------------------------------------------------------- */

/* Holders on every shard (watchdog, 900 ms lease); CLUSTER FAILOVER of
 * shard 0: the holder there keeps its lock (renewals reach the new master)
 * and unlocks; the others are not disturbed. */
static void cluster_failover_holders(void **state)
{
    char name[3][64];
    dlock_client *c = client_on(cl.url, 900);
    dlock_rlock *l[3];
    int s, held;
    (void)state;
    for (s = 0; s < 3; s++) {
        name_on(s, "failover", 0, name[s], sizeof name[s]);
        assert_int_equal(dlock_reentrant_new(&l[s], c, name[s]), 0);
        expect_ok(dlock_lock(l[s], 0), l[s]);
    }
    assert_true(dlock_test_cluster_failover(&cl, 0) >= 0);
    usleep(1500 * 1000);
    for (s = 0; s < 3; s++) {
        held = 0;
        expect_ok(dlock_is_held(l[s], &held), l[s]);
        assert_int_equal(held, 1);
        expect_ok(dlock_unlock(l[s]), l[s]);
        dlock_rlock_free(l[s]);
    }
    dlock_client_free(c);
}

/* kill -9 of shard 1's master: its replica takes over; a holder on shard
 * 0 keeps unlocking normally; on shard 1 the holder's unlock ends its hold
 * (0, or DLOCK_ELOST if the grant had not reached the replica) and the
 * waiter there gets the lock within a bounded time (the waits retry
 * ECONN/CLUSTERDOWN, and its subscription moves to the new master); then
 * a lock can be taken and released there again. */
static void cluster_kill_master(void **state)
{
    char n0[64], n1[64], n2[64];
    dlock_client *c = client_on(cl.url, 0), *other = client_on(cl.url, 0);
    dlock_rlock *a = NULL, *b = NULL, *h = NULL;
    waiter w = {NULL, -1, 0};
    pthread_t th;
    int killed, rc;
    int64_t t0;
    (void)state;
    name_on(0, "kill", 0, n0, sizeof n0);
    name_on(1, "kill", 0, n1, sizeof n1);
    name_on(1, "kill", 1, n2, sizeof n2);
    assert_int_equal(dlock_reentrant_new(&a, c, n0), 0);
    assert_int_equal(dlock_reentrant_new(&b, c, n1), 0);
    assert_int_equal(dlock_reentrant_new(&h, c, n2), 0);
    assert_int_equal(dlock_reentrant_new(&w.l, other, n2), 0);
    expect_ok(dlock_try_lock(a, 0, 30000), a);
    expect_ok(dlock_try_lock(h, 0, 30000), h);
    assert_int_equal(pthread_create(&th, NULL, wait_for_lock, &w), 0);
    usleep(300 * 1000); /* the waiter subscribed and asleep */
    killed = dlock_test_cluster_kill_master(&cl, 1);
    assert_true(killed >= 0);
    expect_ok(dlock_unlock(a), a);
    t0 = now_ms();
    rc = dlock_unlock(h);
    if (rc != 0 && rc != DLOCK_ELOST)
        expect_ok(rc, h);
    pthread_join(th, NULL);
    assert_int_equal(w.rc, 0);
    printf("  [cluster] after the failover: holder's unlock %s, waiter on that shard "
           "got the lock %lld ms later\n",
           rc == 0 ? "ok" : dlock_errname(rc), (long long)(w.done_ms - t0));
    t0 = now_ms();
    rc = dlock_try_lock(b, 10000, 5000);
    expect_ok(rc, b);
    printf("  [cluster] lock on the failed-over shard taken after %lld ms\n",
           (long long)(now_ms() - t0));
    expect_ok(dlock_unlock(b), b);
    dlock_rlock_free(a);
    dlock_rlock_free(b);
    dlock_rlock_free(h);
    dlock_rlock_free(w.l);
    dlock_client_free(c);
    dlock_client_free(other);
    assert_int_equal(dlock_test_cluster_restart_node(&cl, killed), 0);
}

/* ---- TLS ------------------------------------------------------------------- */

/* rediss-cluster:// on a TLS cluster of its own with a password (3
 * masters; clients, bus and redirections on TLS ports, client
 * certificates required): a wrong password is DLOCK_EAUTH at once and
 * never shown; with the right one, locks on every shard and a waiter woken
 * over TLS sharded pub/sub. */
static void cluster_tls(void **state)
{
    static const char *const args[] = {"--requirepass", SECRET, NULL};
    dlock_redis_options o = fast_options();
    dlock_test_cluster tc;
    dlock_client *c, *other;
    dlock_rlock *l = NULL;
    waiter w = {NULL, -1, 0};
    pthread_t th;
    char name[64], prefix[] = "cluster:tls:", url[1024];
    const char *rest;
    int shard;
    (void)state;
    memset(&tc, 0, sizeof tc);
    assert_int_equal(dlock_test_cluster_start_tls(&tc, 3, 0, args), 0);
    assert_non_null(rest = strstr(tc.url, "rediss-cluster://"));
    rest += strlen("rediss-cluster://");
    snprintf(url, sizeof url, "rediss-cluster://:wrong%s@%s", SECRET, rest);
    dlock_fx_expect_open_fails("cluster", url, &o, DLOCK_EAUTH, "", SECRET, errbuf,
                               sizeof errbuf);
    snprintf(url, sizeof url, "rediss-cluster://:%s@%s", SECRET, rest);
    c = client_on(url, 0);
    other = client_on(url, 0);
    for (shard = 0; shard < 3; shard++) {
        assert_non_null(dlock_test_cluster_name(&tc, shard, prefix, 0, name, sizeof name));
        assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
        expect_ok(dlock_try_lock(l, 0, 30000), l);
        assert_int_equal(dlock_reentrant_new(&w.l, other, name), 0);
        w.rc = -1;
        assert_int_equal(pthread_create(&th, NULL, wait_for_lock, &w), 0);
        usleep(200 * 1000);
        expect_ok(dlock_unlock(l), l);
        pthread_join(th, NULL);
        assert_int_equal(w.rc, 0);
        dlock_rlock_free(l);
        dlock_rlock_free(w.l);
    }
    dlock_client_free(c);
    dlock_client_free(other);
    dlock_test_cluster_stop(&tc);
}

/* ---- the group -------------------------------------------------------------- */

/* After each case, even a failed one: a slot move left half done is
 * finished, so the cases after find a settled cluster. */
static int settle(void **state)
{
    (void)state;
    if (cl_up && cl.moving_slot >= 0)
        return dlock_test_cluster_move_slot_finish(&cl);
    return 0;
}

/* The real flag again, even after a failed case. */
static int settle_flag(void **state)
{
    dlock__redis_cross_test_flag(NULL);
    return settle(state);
}

static int group_setup(void **state)
{
    (void)state;
    return dlock_test_redis_cluster_start();
}

int dlock_test_redis_cluster_start(void)
{
    if (cl_up)
        return 0;
    if (dlock_test_cluster_start(&cl, 3, 1) != 0)
        return -1;
    cl_up = 1;
    return 0;
}

void dlock_test_redis_cluster_stop(void)
{
    if (cl_up)
        dlock_test_cluster_stop(&cl);
    cl_up = 0;
}

const char *dlock_test_cluster_seed_url(void)
{
    return cl_up ? cl.url : NULL;
}

dlock_test_cluster *dlock_test_redis_cluster_get(void)
{
    return cl_up ? &cl : NULL;
}

/* How many shards ran scripts (INFO commandstats: evalsha or eval calls
 * on any node of the shard, which a failover during the row may have
 * moved between its nodes), for the conformance row: its names spread
 * over every master. */
int dlock_test_redis_cluster_spread(void)
{
    /* Room for every command a node has seen (a line of ~80 bytes each,
     * in no fixed order: a 4 KiB buffer cut the list, and with it the
     * EVALSHA line, on some runs). */
    enum { INFO_MAX = 1 << 16 };
    char *out = malloc(INFO_MAX);
    int s, i, n = 0;

    if (!out)
        return 0;
    for (s = 0; s < cl.masters; s++)
        for (i = 0; i < cl.nnodes; i++) {
            const char *argv[] = {"INFO", "commandstats", NULL};
            if (cl.shard[i] == s && cl.up[i] &&
                dlock_test_cluster_command(&cl, i, out, INFO_MAX, argv) == 0 &&
                (strstr(out, "cmdstat_evalsha:calls=") || strstr(out, "cmdstat_eval:calls="))) {
                n++;
                break;
            }
        }
    free(out);
    return n;
}

int dlock_test_redis_cluster(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(cluster_url_errors, settle),
        cmocka_unit_test_teardown(cluster_seed_not_a_cluster, settle),
        cmocka_unit_test_teardown(cluster_name_without_tag, settle),
        cmocka_unit_test_teardown(cluster_routes_by_slot, settle),
        cmocka_unit_test_teardown(cluster_json, settle),
        cmocka_unit_test_teardown(cluster_server_safety_every_master, settle),
        cmocka_unit_test_teardown(cluster_moved_under_hold, settle),
        cmocka_unit_test_teardown(cluster_ask_during_migration, settle),
        cmocka_unit_test_teardown(cluster_waiter_follows_move, settle),
        cmocka_unit_test_teardown(cluster_watchdog_one_call_per_master, settle),
        cmocka_unit_test_teardown(cluster_watchdog_flag_refused, settle_flag),
        cmocka_unit_test_teardown(cluster_watchdog_lost_in_batch, settle),
        cmocka_unit_test_teardown(cluster_watchdog_batch_across_move, settle),
        cmocka_unit_test_teardown(cluster_sharded_pubsub, settle),
        cmocka_unit_test_teardown(cluster_failover_holders, settle),
        cmocka_unit_test_teardown(cluster_kill_master, settle),
        cmocka_unit_test_teardown(cluster_tls, settle),
    };
    return DLOCK_RUN_GROUP("redis_cluster", tests, group_setup, NULL);
}
