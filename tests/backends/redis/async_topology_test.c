/*
 * The asynchronous API while the topology changes under a pending wait
 * (issue 27: "Sentinel (a failover mid-wait) and Cluster (a slot move
 * mid-wait) all work"), on the Sentinel set of sentinel_test.c and the
 * cluster of cluster_test.c (started here when their suites did not run).
 * Each loop runs in poll mode on the test's thread, polling
 * dlock_loop_fd as an application would.
 *  - Sentinel: waits are pending on locks another client holds (30 s
 *    leases) when SENTINEL FAILOVER moves the master. Once both clients
 *    follow the switch, the old master stops (SIGSTOP, as a failed one):
 *    a subscription or an attempt left there is lost. The holder then
 *    unlocks on the new master and the long wait (a 20 s budget) must be
 *    granted there: only a wake-up that followed the switch grants it
 *    within its budget. A chain of short waits (1 s each, the next started
 *    from the callback of the last, from before the failover until after
 *    the grant) covers the switch: each ends with DLOCK_ETIMEDOUT, no
 *    earlier than its wait_ms and within wait_ms + budget_slack_ms +
 *    LOAD_MS.
 *  - Cluster: a wait is pending while its lock's slot migrates to another
 *    master (the loop runs between the move's steps, and nothing may
 *    grant it meanwhile); the holder then unlocks there, and the wait is
 *    granted on the slot's new owner (its sharded subscription followed
 *    the slot); dlock_unlock_async then releases it there. And, mid-
 *    migration, asynchronous calls follow ASK (a read) and repeat
 *    TRYAGAIN (an unlock) until the move is final, then the waiter is
 *    granted on the new owner.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "dlock/redis.h"
#include "../../harness/cluster.h"
#include "../../harness/fixture.h"
#include "../../harness/redis_client.h"
#include "../../harness/runner.h"
#include "../../harness/sentinels.h"

/* sentinel_test.c and cluster_test.c: their sets, kept up for the rows. */
int dlock_test_redis_sentinel_start(void);
dlock_test_sentinels *dlock_test_redis_sentinel_get(void);
int dlock_test_redis_cluster_start(void);
dlock_test_cluster *dlock_test_redis_cluster_get(void);

/* The holders' leases: longer than any wait's budget, so that only a
 * release (and its message) can grant a waiter. */
#define HOLD_MS 30000
/* The wait that must be granted, and the short ones that must time out. */
#define LONG_WAIT_MS 20000
#define SHORT_WAIT_MS 1000
#define SLACK_MS 50
/* What a loaded machine may add to a callback's time (real ms). */
#define LOAD_MS 5000
/* How long a step waits for something it expects (real ms). */
#define STEP_MS 20000

/* A callback's answer. */
typedef struct outcome {
    int n, rc;
    int64_t value;
    int64_t at_ms; /* real time of the (last) call */
    char detail[256];
    char owner[DLOCK_OWNER_MAX]; /* r->owner ("" for NULL) */
} outcome;

static void on_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    outcome *o = arg;

    (void)op;
    o->n++;
    o->rc = r->rc;
    o->value = r->value;
    o->at_ms = dlock_fx_real_ms();
    snprintf(o->detail, sizeof o->detail, "%s", r->detail ? r->detail : "(null)");
    snprintf(o->owner, sizeof o->owner, "%s", r->owner ? r->owner : "");
}

/* A client on url whose calls give up within seconds, not minutes (and
 * whose cluster calls repeat a refusal, TRYAGAIN while a slot migrates,
 * for the command timeout: longer than a move takes to finish). */
static dlock_client *client_on(const char *url)
{
    dlock_redis_options o = dlock_test_redis_options(500, 10000);
    dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char err[512];
    int rc;

    co.budget_slack_ms = SLACK_MS;
    rc = dlock_test_client_open(&c, url, &o, &co, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "  [async topology] %s: %s %s\n", url, dlock_errname(rc), err);
    assert_int_equal(rc, 0);
    return c;
}

/* rc must be 0; else the lock's detail is printed first. */
#define expect_ok(rc, l)                                                      \
    do {                                                                      \
        int rc_ = (rc);                                                       \
        if (rc_ != 0)                                                         \
            fprintf(stderr, "  [async topology] %s: %s\n", dlock_errname(rc_), \
                    dlock_errmsg(l));                                         \
        assert_int_equal(rc_, 0);                                             \
    } while (0)

/* Runs lp in poll mode until until(arg) holds or ms of real time passed
 * (until NULL: for ms); returns whether it held. */
static int drive(dlock_loop *lp, int64_t ms, int (*until)(void *), void *arg)
{
    int64_t end = dlock_fx_real_ms() + ms;

    for (;;) {
        struct pollfd p = {dlock_loop_fd(lp), POLLIN, 0};
        int64_t t = dlock_loop_timeout_ms(lp);

        if (until && until(arg))
            return 1;
        if (dlock_fx_real_ms() >= end)
            return 0;
        poll(&p, 1, t < 0 || t > 20 ? 20 : (int)t);
        assert_true(dlock_loop_run(lp, 0) >= 0);
    }
}

static int called(void *arg)
{
    return ((outcome *)arg)->n > 0;
}

/* Drives lp until o's callback came (within ms of real time); it must have
 * come once and succeeded (else what failed is printed first). */
static void expect_done_ok(dlock_loop *lp, int64_t ms, outcome *o, const char *what)
{
    assert_true(drive(lp, ms, called, o));
    if (o->rc != 0)
        fprintf(stderr, "  [async topology] %s: %s (%s)\n", what, dlock_errname(o->rc),
                o->detail);
    assert_int_equal(o->n, 1);
    assert_int_equal(o->rc, 0);
}

/* owner holds l (asked through lp: a blocking call on the
 * loop's thread would wait for the loop's operations in flight on the
 * same connection, which only that thread runs). */
static void expect_held(dlock_loop *lp, dlock_rlock *l, const char *owner)
{
    outcome held = {0};

    assert_int_equal(dlock_is_held_async(lp, NULL, l, owner, on_done, &held), 0);
    assert_true(drive(lp, STEP_MS, called, &held));
    assert_int_equal(held.rc, 0);
    assert_int_equal(held.value, 1);
}

/* ---- Sentinel: a failover mid-wait ---------------------------------------- */

/* The short waits, one after the other. */
typedef struct chain {
    dlock_loop *lp;
    dlock_rlock *l;
    int stop;            /* start no more */
    int started, ended;  /* waits */
    int bad;             /* waits that did not end as they must */
    int64_t started_ms;  /* the pending one's start */
    int64_t longest_ms;  /* the longest one, start to callback */
} chain;

static void chain_next(chain *ch);

static void chain_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    chain *ch = arg;
    int64_t took = dlock_fx_real_ms() - ch->started_ms;

    (void)op;
    ch->ended++;
    if (took > ch->longest_ms)
        ch->longest_ms = took;
    if (r->rc != DLOCK_ETIMEDOUT || took < SHORT_WAIT_MS - 5 ||
        took > SHORT_WAIT_MS + SLACK_MS + LOAD_MS) {
        fprintf(stderr, "  [async topology] short wait %d: %s after %lld ms (%s)\n",
                ch->ended, dlock_errname(r->rc), (long long)took, r->detail);
        ch->bad++;
    }
    if (!ch->stop)
        chain_next(ch);
}

static void chain_next(chain *ch)
{
    ch->started_ms = dlock_fx_real_ms();
    if (dlock_lock_async(ch->lp, NULL, ch->l, NULL, SHORT_WAIT_MS, HOLD_MS, chain_done,
                         ch) != 0) {
        ch->bad++;
        return;
    }
    ch->started++;
}

/* What the driver watches during the failover. */
typedef struct failover_watch {
    dlock_test_sentinels *set;
    int before, after;   /* the master's index in set->data */
    chain *ch;
    dlock_client *holder, *waiter;
    int pending_at_switch; /* a short wait was pending when it was seen */
} failover_watch;

static int switched(void *arg)
{
    failover_watch *w = arg;
    int m = dlock_test_sentinels_master(w->set);

    if (m < 0 || m == w->before)
        return 0;
    w->after = m;
    w->pending_at_switch = w->ch->started > w->ch->ended;
    return 1;
}

static int chain_idle(void *arg)
{
    chain *ch = arg;

    return ch->started == ch->ended;
}

/* Whether key exists on data node r (asked there). */
static int exists_on_node(dlock_test_redis *r, const char *key)
{
    char out[64];
    const char *argv[] = {"EXISTS", key, NULL};

    if (dlock_test_redis_command(r, out, sizeof out, argv) != 0)
        return -1;
    return atoi(out);
}

/* Whether the lock called name on data node r has c's owner id (the
 * test's thread's) among its holders. */
static int owner_on_node(dlock_test_redis *r, const char *name, const char *owner)
{
    char out[64];
    const char *argv[] = {"HEXISTS", name, owner, NULL};

    return dlock_test_redis_command(r, out, sizeof out, argv) == 0 && atoi(out) == 1;
}

/* Whether c's calls go to node i of the set (the master its backend
 * reports). */
static int client_on_node(dlock_client *c, dlock_test_sentinels *set, int i)
{
    dlock_server_safety f = DLOCK_SERVER_SAFETY_INIT;
    char where[64];

    snprintf(where, sizeof where, "127.0.0.1:%d", dlock_test_redis_port(set->data[i]));
    return dlock_client_server_safety(c, &f) == 0 && strcmp(f.server, where) == 0;
}

static int followed(void *arg)
{
    failover_watch *w = arg;

    return client_on_node(w->holder, w->set, w->after) &&
           client_on_node(w->waiter, w->set, w->after);
}

/* REPLICAOF the new master, on the old one. */
static int demote(dlock_test_sentinels *set, int old, int now)
{
    char out[64], port[16];
    const char *argv[] = {"REPLICAOF", "127.0.0.1", port, NULL};

    snprintf(port, sizeof port, "%d", dlock_test_redis_port(set->data[now]));
    if (dlock_test_redis_command(set->data[old], out, sizeof out, argv) != 0)
        return -1;
    return strcmp(out, "OK") == 0 ? 0 : -1;
}

/* Waits until every running replica of the set has key (so that the
 * failover keeps it). */
static int replicated(dlock_test_sentinels *set, int master, const char *key)
{
    int64_t end = dlock_fx_real_ms() + STEP_MS;
    int i, all;

    do {
        for (all = 1, i = 0; i < DLOCK_TEST_NDATA; i++)
            if (i != master && exists_on_node(set->data[i], key) != 1)
                all = 0;
        if (all)
            return 1;
        dlock_fx_sleep_real(20);
    } while (dlock_fx_real_ms() < end);
    return 0;
}

/* The data node the case stopped (SIGSTOP), if any. */
static dlock_test_redis *stopped;

/* After the Sentinel case, even a failed one: the node it stopped runs
 * again. */
static int sentinel_resume(void **state)
{
    dlock_test_redis *r = stopped;

    (void)state;
    stopped = NULL;
    return r ? dlock_test_redis_signal(r, SIGCONT) : 0;
}

static void sentinel_failover_mid_wait(void **state)
{
    dlock_test_sentinels *set = dlock_test_redis_sentinel_get();
    const char *failover[] = {"SENTINEL", "FAILOVER", NULL, NULL};
    const char *granted_name = "async-topology:sentinel:granted";
    const char *timed_name = "async-topology:sentinel:timed";
    dlock_client *holder, *waiter;
    dlock_rlock *hg = NULL, *ht = NULL, *wg = NULL, *wt = NULL;
    dlock_loop *lp = NULL;
    outcome got = {0}, unlocked = {0};
    failover_watch watch;
    chain ch;
    char out[256], owner[DLOCK_OWNER_MAX];
    int64_t t_failover, t_unlock;

    (void)state;
    assert_non_null(set);
    assert_int_equal(dlock_test_sentinels_wait_ready(set, STEP_MS), 0);
    holder = client_on(set->url);
    waiter = client_on(set->url);
    assert_int_equal(dlock_reentrant_new(&hg, holder, granted_name), 0);
    assert_int_equal(dlock_reentrant_new(&ht, holder, timed_name), 0);
    assert_int_equal(dlock_reentrant_new(&wg, waiter, granted_name), 0);
    assert_int_equal(dlock_reentrant_new(&wt, waiter, timed_name), 0);
    assert_int_equal(dlock_loop_new(&lp, waiter, NULL), 0);
    memset(&watch, 0, sizeof watch);
    memset(&ch, 0, sizeof ch);
    watch.set = set;
    watch.ch = &ch;
    watch.holder = holder;
    watch.waiter = waiter;
    watch.before = dlock_test_sentinels_master(set);
    assert_true(watch.before >= 0);

    expect_ok(dlock_try_lock(hg, STEP_MS, HOLD_MS), hg);
    expect_ok(dlock_try_lock(ht, STEP_MS, HOLD_MS), ht);
    assert_true(replicated(set, watch.before, granted_name));
    assert_true(replicated(set, watch.before, timed_name));

    /* Both waits subscribed and asleep before the failover. */
    assert_int_equal(dlock_lock_async(lp, NULL, wg, NULL, LONG_WAIT_MS, 0, on_done, &got), 0);
    ch.lp = lp;
    ch.l = wt;
    chain_next(&ch);
    assert_int_equal(ch.started, 1);
    drive(lp, 300, NULL, NULL);
    assert_int_equal(got.n, 0);

    failover[2] = set->name;
    assert_int_equal(dlock_test_redis_command(set->sentinel[0], out, sizeof out, failover), 0);
    assert_string_equal(out, "OK");
    t_failover = dlock_fx_real_ms();
    assert_true(drive(lp, STEP_MS, switched, &watch));
    printf("  [async topology] master %d -> %d after %lld ms; %d short wait(s) ended "
           "meanwhile\n", watch.before, watch.after,
           (long long)(dlock_fx_real_ms() - t_failover), ch.ended);
    assert_int_equal(watch.pending_at_switch, 1);
    /* Both clients follow (+switch-master). The old master, which SENTINEL
     * FAILOVER leaves a master until a sentinel's next look at it (~10 s:
     * until then it takes writes that its resync then drops), is
     * unreachable from now on (SIGSTOP), as a failed master would be: a
     * wake-up or an attempt left there is lost. */
    assert_true(drive(lp, STEP_MS, followed, &watch));
    printf("  [async topology] clients followed %lld ms after the failover\n",
           (long long)(dlock_fx_real_ms() - t_failover));
    assert_int_equal(dlock_test_redis_signal(set->data[watch.before], SIGSTOP), 0);
    stopped = set->data[watch.before];
    /* The holder still holds it (30 s lease): no grant yet. */
    assert_int_equal(got.n, 0);
    assert_int_equal(dlock_client_owner(holder, owner, sizeof owner), 0);
    assert_true(owner_on_node(set->data[watch.after], granted_name, owner));

    /* The holder releases on the new master; the wait is granted there. */
    expect_ok(dlock_unlock(hg), hg);
    t_unlock = dlock_fx_real_ms();
    expect_done_ok(lp, LONG_WAIT_MS + SLACK_MS + LOAD_MS, &got, "the wait");
    printf("  [async topology] wait granted %lld ms after the unlock on the new master\n",
           (long long)(got.at_ms - t_unlock));
    expect_held(lp, wg, got.owner);
    assert_true(owner_on_node(set->data[watch.after], granted_name, got.owner));
    assert_int_equal(dlock_unlock_async(lp, NULL, wg, got.owner, on_done, &unlocked), 0);
    expect_done_ok(lp, STEP_MS, &unlocked, "the unlock");
    assert_int_equal(exists_on_node(set->data[watch.after], granted_name), 0);

    /* The short waits: the last one ends, and every one ended in time. */
    ch.stop = 1;
    assert_true(drive(lp, SHORT_WAIT_MS + SLACK_MS + LOAD_MS, chain_idle, &ch));
    printf("  [async topology] %d short waits across the failover, longest %lld ms\n",
           ch.ended, (long long)ch.longest_ms);
    assert_true(ch.ended >= 2);
    assert_int_equal(ch.bad, 0);
    assert_int_equal(dlock_loop_pending(lp), 0);

    expect_ok(dlock_unlock(ht), ht);
    dlock_loop_free(lp);
    dlock_rlock_free(hg);
    dlock_rlock_free(ht);
    dlock_rlock_free(wg);
    dlock_rlock_free(wt);
    dlock_client_free(holder);
    dlock_client_free(waiter);
    /* The old master back, as the new one's replica (what the sentinels
     * would make it), for whatever runs through the sentinels next. */
    assert_int_equal(sentinel_resume(NULL), 0);
    assert_int_equal(demote(set, watch.before, watch.after), 0);
    assert_int_equal(dlock_test_sentinels_wait_ready(set, STEP_MS), 0);
}

/* ---- Cluster: a slot move mid-wait ------------------------------------------ */

static int cluster_exists_on(dlock_test_cluster *cl, int node, const char *key)
{
    char out[64];
    const char *argv[] = {"EXISTS", key, NULL};

    if (dlock_test_cluster_command(cl, node, out, sizeof out, argv) != 0)
        return -1;
    return atoi(out);
}

static void cluster_slot_move_mid_wait(void **state)
{
    dlock_test_cluster *cl = dlock_test_redis_cluster_get();
    dlock_client *holder, *waiter;
    dlock_rlock *h = NULL, *w = NULL;
    dlock_loop *lp = NULL;
    outcome got = {0}, unlocked = {0};
    char name[64];
    unsigned slot;
    int64_t t_unlock;
    int to;

    (void)state;
    assert_non_null(cl);
    assert_non_null(dlock_test_cluster_name(cl, 1, "async-topology:cluster:", 0, name,
                                            sizeof name));
    slot = dlock_test_cluster_slot(name);
    holder = client_on(cl->url);
    waiter = client_on(cl->url);
    assert_int_equal(dlock_reentrant_new(&h, holder, name), 0);
    assert_int_equal(dlock_reentrant_new(&w, waiter, name), 0);
    assert_int_equal(dlock_loop_new(&lp, waiter, NULL), 0);
    expect_ok(dlock_try_lock(h, STEP_MS, HOLD_MS), h);

    assert_int_equal(dlock_lock_async(lp, NULL, w, NULL, LONG_WAIT_MS, 0, on_done, &got), 0);
    drive(lp, 300, NULL, NULL);
    assert_int_equal(got.n, 0);
    /* The slot moves to shard 2, the loop running between the steps; the
     * lock is held all along. */
    assert_int_equal(dlock_test_cluster_move_slot_begin(cl, slot, 2), 0);
    drive(lp, 200, NULL, NULL);
    assert_true(dlock_test_cluster_move_slot_keys(cl) >= 1);
    drive(lp, 200, NULL, NULL);
    assert_int_equal(dlock_test_cluster_move_slot_finish(cl), 0);
    drive(lp, 300, NULL, NULL);
    assert_int_equal(got.n, 0);
    to = dlock_test_cluster_shard_master(cl, 2);
    assert_int_equal(dlock_test_cluster_slot_master(cl, slot), to);
    assert_int_equal(cluster_exists_on(cl, to, name), 1);

    /* Released on the new owner: the wait is granted there. */
    expect_ok(dlock_unlock(h), h);
    t_unlock = dlock_fx_real_ms();
    expect_done_ok(lp, LONG_WAIT_MS + SLACK_MS + LOAD_MS, &got, "the wait");
    printf("  [async topology] wait granted %lld ms after the unlock on the slot's new "
           "master\n", (long long)(got.at_ms - t_unlock));
    expect_held(lp, w, got.owner);
    assert_int_equal(cluster_exists_on(cl, to, name), 1);
    assert_int_equal(dlock_unlock_async(lp, NULL, w, got.owner, on_done, &unlocked), 0);
    expect_done_ok(lp, STEP_MS, &unlocked, "the unlock");
    assert_int_equal(cluster_exists_on(cl, to, name), 0);
    assert_int_equal(dlock_loop_pending(lp), 0);

    dlock_loop_free(lp);
    dlock_rlock_free(h);
    dlock_rlock_free(w);
    dlock_client_free(holder);
    dlock_client_free(waiter);
    /* Back where it was, for the cases and rows after. */
    assert_int_equal(dlock_test_cluster_move_slot(cl, slot, 1), 0);
}

/* The same client holds (owner "h") and waits (owner "w"), on one loop.
 * While the slot migrates, with the key already on the target: a read is
 * answered there (ASK); the holder's unlock names the lock and its
 * channel, which the target refuses until the slot is final (TRYAGAIN):
 * it waits for its next try on the loop's timers, not on the loop's
 * thread, so the read's callback comes while it is still pending; once
 * the move is final it succeeds, and the waiter is granted on the new
 * owner. */
static void cluster_ask_mid_migration(void **state)
{
    dlock_test_cluster *cl = dlock_test_redis_cluster_get();
    dlock_client *c;
    dlock_rlock *l = NULL;
    dlock_loop *lp = NULL;
    outcome got = {0}, unlocked = {0}, locked = {0}, released = {0};
    char name[64];
    const char *argv[] = {"HEXISTS", name, "w", NULL};
    char out[64];
    unsigned slot;
    int to;

    (void)state;
    assert_non_null(cl);
    assert_non_null(dlock_test_cluster_name(cl, 0, "async-topology:ask:", 0, name,
                                            sizeof name));
    slot = dlock_test_cluster_slot(name);
    c = client_on(cl->url);
    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    expect_ok(dlock_try_lock_as(l, "h", STEP_MS, HOLD_MS), l);
    assert_int_equal(dlock_lock_async(lp, NULL, l, "w", LONG_WAIT_MS, 0, on_done, &got), 0);
    drive(lp, 300, NULL, NULL);
    assert_int_equal(got.n, 0);

    assert_int_equal(dlock_test_cluster_move_slot_begin(cl, slot, 2), 0);
    assert_true(dlock_test_cluster_move_slot_keys(cl) >= 1);
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "h", on_done, &unlocked), 0);
    assert_int_equal(dlock_is_locked_async(lp, NULL, l, on_done, &locked), 0);
    assert_true(drive(lp, STEP_MS, called, &locked));
    assert_int_equal(locked.rc, 0);
    assert_int_equal(locked.value, 1);
    assert_int_equal(unlocked.n, 0);
    assert_int_equal(got.n, 0);

    assert_int_equal(dlock_test_cluster_move_slot_finish(cl), 0);
    to = dlock_test_cluster_shard_master(cl, 2);
    assert_int_equal(dlock_test_cluster_slot_master(cl, slot), to);
    expect_done_ok(lp, STEP_MS, &unlocked, "the unlock");
    expect_done_ok(lp, LONG_WAIT_MS + SLACK_MS + LOAD_MS, &got, "the wait");
    assert_int_equal(dlock_test_cluster_command(cl, to, out, sizeof out, argv), 0);
    assert_string_equal(out, "1");
    assert_int_equal(dlock_unlock_async(lp, NULL, l, "w", on_done, &released), 0);
    expect_done_ok(lp, STEP_MS, &released, "the release");
    assert_int_equal(cluster_exists_on(cl, to, name), 0);

    dlock_loop_free(lp);
    dlock_rlock_free(l);
    dlock_client_free(c);
    assert_int_equal(dlock_test_cluster_move_slot(cl, slot, 0), 0);
}

/* After a cluster case, even a failed one: a move left half done is
 * finished, so what runs next finds a settled cluster. */
static int cluster_settle(void **state)
{
    dlock_test_cluster *cl = dlock_test_redis_cluster_get();

    (void)state;
    if (cl && cl->moving_slot >= 0)
        return dlock_test_cluster_move_slot_finish(cl);
    return 0;
}

/* ---- the group -------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    if (dlock_test_redis_sentinel_start() != 0 || dlock_test_redis_cluster_start() != 0)
        return -1;
    return 0;
}

int dlock_test_redis_async_topology(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(sentinel_failover_mid_wait, sentinel_resume),
        cmocka_unit_test_teardown(cluster_slot_move_mid_wait, cluster_settle),
        cmocka_unit_test_teardown(cluster_ask_mid_migration, cluster_settle),
    };
    return DLOCK_RUN_GROUP("redis_async_topology", tests, group_setup, NULL);
}
