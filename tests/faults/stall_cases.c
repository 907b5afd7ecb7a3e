/*
 * Fault cases (issue 16, items 4 and 5): a stalled, black-holed, slow or
 * refusing server.
 *
 *  - Budgets: every call with a time budget returns within budget +
 *    budget_slack_ms (50) however the server misbehaves, although the
 *    command timeout (2000 ms, the default) is far longer; a call without a
 *    budget (unlock) returns within its command timeout. A reply that comes
 *    after its caller gave up is never read by the next caller.
 *  - Transient refusals (BUSY, READONLY): an unbounded dlock_lock keeps
 *    trying and gets the lock once the server serves again; a bounded call
 *    ends with DLOCK_ECONN, never DLOCK_EPROTO.
 *
 * Times are real. A measured time is asserted against the contract plus
 * SCHED_MS for scheduling on a loaded 2-core machine (sanitizer builds
 * included), which is still far below the command timeout an overrun would
 * show; every time is printed.
 */
#include "faults.h"

#include <dlock.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/redis_server.h"
#include "../harness/runner.h"

#define SLACK_MS 50   /* DLOCK_CLIENT_OPTIONS_INIT's budget_slack_ms */
#define SCHED_MS 200
#define CMD_MS 2000   /* the default command timeout: what an overrun shows */
#define SHORT_CMD_MS 500

static dlock_test_redis *srv;
static fault_proxy *proxy;

static void note(const char *what, const char *rc, long long ms)
{
    printf("    [stall] %s: %s after %lld ms\n", what, rc, ms);
}

static dlock_client *client_at(const char *url, int64_t cmd_ms, int pool)
{
    return fault_client_new(url, cmd_ms, cmd_ms, pool, 30000);
}

static int group_start(void **state)
{
    static const char *const args[] = {"--busy-reply-threshold", "100", NULL};
    (void)state;
    return fault_proxied_redis_start(&srv, &proxy, args);
}

static int group_stop(void **state)
{
    (void)state;
    fault_proxied_redis_stop(&srv, &proxy);
    return 0;
}

/* ---- budgets ------------------------------------------------------------- */

/* The objects one round of calls uses, on a client through url (the
 * proxy or the server itself), with the locks held by another client
 * talking to the server directly, so that budgeted calls have to wait. */
typedef struct scene {
    dlock_client *c, *holder;
    dlock_rlock *re, *fair, *re_h, *fair_h;
    dlock_semaphore *sem;
    dlock_latch *latch;
    char name[64];
} scene;

static void scene_open(scene *s, const char *url, const char *tag)
{
    int set = 0;

    memset(s, 0, sizeof *s);
    s->c = client_at(url, CMD_MS, 4);
    s->holder = client_at(dlock_test_redis_url(srv), CMD_MS, 2);
    snprintf(s->name, sizeof s->name, "stall:%s", tag);
    assert_int_equal(dlock_reentrant_new(&s->re, s->c, s->name), 0);
    assert_int_equal(dlock_reentrant_new(&s->re_h, s->holder, s->name), 0);
    strcat(s->name, ":fair");
    assert_int_equal(dlock_fair_new(&s->fair, s->c, s->name), 0);
    assert_int_equal(dlock_fair_new(&s->fair_h, s->holder, s->name), 0);
    strcat(s->name, ":sem");
    assert_int_equal(dlock_semaphore_new(&s->sem, s->c, s->name), 0);
    strcat(s->name, ":latch");
    assert_int_equal(dlock_latch_new(&s->latch, s->c, s->name), 0);
    assert_int_equal(dlock_try_lock(s->re_h, 0, 30000), 0);
    assert_int_equal(dlock_try_lock(s->fair_h, 0, 30000), 0);
    /* No permits, and a count that never reaches zero: both waits wait.
     * Every object's connection is warm before the fault. */
    assert_int_equal(dlock_latch_try_set_count(s->latch, &set, 1), 0);
    assert_int_equal(dlock_try_lock(s->re, 0, 1000), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock(s->fair, 0, 1000), DLOCK_EBUSY);
    assert_int_equal(dlock_semaphore_try_acquire(s->sem, 1, 0), DLOCK_EBUSY);
}

static void scene_close(scene *s)
{
    dlock_force_unlock(s->re_h, NULL);
    dlock_force_unlock(s->fair_h, NULL);
    dlock_rlock_free(s->re);
    dlock_rlock_free(s->fair);
    dlock_rlock_free(s->re_h);
    dlock_rlock_free(s->fair_h);
    dlock_semaphore_free(s->sem);
    dlock_latch_free(s->latch);
    dlock_client_free(s->c);
    dlock_client_free(s->holder);
}

enum { C_TRY_RE, C_TRY_FAIR, C_TRY0_RE, C_SEM, C_LATCH, NCALLS };

static const char *const call_names[NCALLS] = {
    "try_lock(wait) reentrant", "try_lock(wait) fair", "try_lock(wait 0)",
    "semaphore try_acquire(wait)", "latch await_for(wait)",
};

static int call(scene *s, int which, int64_t wait_ms)
{
    switch (which) {
    case C_TRY_RE:
        return dlock_try_lock(s->re, wait_ms, 1000);
    case C_TRY_FAIR:
        return dlock_try_lock(s->fair, wait_ms, 1000);
    case C_TRY0_RE:
        return dlock_try_lock(s->re, 0, 1000);
    case C_SEM:
        return dlock_semaphore_try_acquire(s->sem, 1, wait_ms);
    default:
        return dlock_latch_await_for(s->latch, wait_ms);
    }
}

/* Every budgeted call, under the fault set up by the caller: each returns
 * within its budget + slack (+ scheduling), with a budget or transport
 * code. */
static void budgeted_calls(scene *s, const char *fault, int64_t wait_ms,
                           int expect_timeout_only)
{
    int which;

    for (which = 0; which < NCALLS; which++) {
        int64_t budget = which == C_TRY0_RE ? 0 : wait_ms, t0, dt;
        char what[128];
        int rc;

        t0 = fault_now_ms();
        rc = call(s, which, budget);
        dt = fault_now_ms() - t0;
        snprintf(what, sizeof what, "%s, %s %lld", fault, call_names[which],
                 (long long)budget);
        note(what, dlock_errname(rc), dt);
        if (expect_timeout_only)
            assert_int_equal(rc, DLOCK_ETIMEDOUT);
        else
            assert_true(rc == DLOCK_ETIMEDOUT || rc == DLOCK_ECONN);
        assert_true(dt <= budget + SLACK_MS + SCHED_MS);
    }
}

/* One call of f(l), timed and printed: its code, *dt its duration. */
static int timed(int (*f)(dlock_rlock *), dlock_rlock *l, const char *what,
                 int64_t *dt)
{
    int64_t t0 = fault_now_ms();
    int rc = f(l);
    *dt = fault_now_ms() - t0;
    note(what, dlock_errname(rc), *dt);
    return rc;
}

/* The server stops answering (SIGSTOP): its connections stay open, the
 * replies never come. A call without a budget takes the command timeout. */
static void test_budget_stalled_server(void **state)
{
    scene s;
    int64_t dt;
    int rc;
    (void)state;

    scene_open(&s, dlock_test_redis_url(srv), "sigstop");
    assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
    budgeted_calls(&s, "stalled server", 300, 1);
    rc = timed(dlock_unlock, s.re, "stalled server, unlock (no budget)", &dt);
    assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);
    assert_int_equal(rc, DLOCK_ETIMEDOUT);
    assert_true(dt <= CMD_MS + SLACK_MS + SCHED_MS);
    scene_close(&s);
}

/* A network partition: nothing crosses, connections stay open. */
static void test_budget_blackhole(void **state)
{
    scene s;
    dlock_client *c;
    dlock_rlock *l;
    int64_t dt;
    int rc;
    (void)state;

    scene_open(&s, fault_proxy_url(proxy), "blackhole");
    c = client_at(fault_proxy_url(proxy), SHORT_CMD_MS, 2);
    assert_int_equal(dlock_reentrant_new(&l, c, "stall:blackhole:own"), 0);
    assert_int_equal(dlock_try_lock(l, 0, 5000), 0);
    fault_proxy_set(proxy, FAULT_BLACKHOLE, 0);
    budgeted_calls(&s, "black hole", 300, 0);
    rc = timed(dlock_unlock, l, "black hole, unlock (no budget, command timeout 500)",
               &dt);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    assert_true(rc == DLOCK_ETIMEDOUT || rc == DLOCK_ECONN);
    assert_true(dt <= SHORT_CMD_MS + SLACK_MS + SCHED_MS);
    dlock_force_unlock(l, NULL);
    dlock_rlock_free(l);
    dlock_client_free(c);
    scene_close(&s);
}

/* 300 ms per round trip (150 ms each way): a short budget ends within
 * itself + slack instead of after the round trip it started; a budget
 * that covers round trips gets the lock. */
static void test_budget_slow_link(void **state)
{
    scene s;
    int64_t t0, dt;
    int rc;
    (void)state;

    scene_open(&s, fault_proxy_url(proxy), "slow");
    fault_proxy_set(proxy, FAULT_DELAY, 150);
    budgeted_calls(&s, "300 ms round trips", 10, 1);
    /* Free the reentrant lock: a 1 s budget covers an attempt. */
    assert_int_equal(dlock_unlock(s.re_h), 0);
    t0 = fault_now_ms();
    rc = dlock_try_lock(s.re, 1000, 1000);
    dt = fault_now_ms() - t0;
    note("300 ms round trips, try_lock(wait 1000) on a free lock",
         dlock_errname(rc), dt);
    assert_int_equal(rc, 0);
    assert_true(dt <= 1000 + SLACK_MS + SCHED_MS);
    assert_int_equal(dlock_unlock(s.re), 0);
    fault_proxy_set(proxy, FAULT_PASS, 0);
    scene_close(&s);
}

/* A reply abandoned by a caller whose budget ended is never handed to the
 * next call on the same (single) connection: with one pooled connection,
 * a stale acquire reply read by the next call would make its answer wrong
 * (or its reply of the wrong shape). */
static void test_budget_late_reply_discarded(void **state)
{
    dlock_client *c = client_at(fault_proxy_url(proxy), CMD_MS, 1);
    dlock_rlock *l, *m;
    int i, rc, held = -1, locked = -1;
    int64_t count = -1;
    (void)state;

    assert_int_equal(dlock_reentrant_new(&l, c, "stall:late:L"), 0);
    assert_int_equal(dlock_reentrant_new(&m, c, "stall:late:M"), 0);
    assert_int_equal(dlock_is_locked(l, &locked), 0);
    fault_proxy_set(proxy, FAULT_DELAY, 100);
    for (i = 0; i < 3; i++) {
        rc = dlock_try_lock(l, 10, 5000);
        assert_int_equal(rc, DLOCK_ETIMEDOUT);
    }
    fault_proxy_set(proxy, FAULT_PASS, 0);
    fault_sleep_ms(300); /* the late replies have arrived by now */
    /* M was never locked; L may have been, if the server ran an abandoned
     * attempt: each read must answer about its own key, with a reply of
     * its own shape. */
    assert_int_equal(dlock_is_held(m, &held), 0);
    assert_int_equal(held, 0);
    assert_int_equal(dlock_hold_count(m, &count), 0);
    assert_int_equal(count, 0);
    assert_int_equal(dlock_is_locked(l, &locked), 0);
    assert_true(locked == 0 || locked == 1);
    assert_int_equal(dlock_force_unlock(l, NULL), 0);
    assert_int_equal(dlock_try_lock(m, 0, 1000), 0);
    assert_int_equal(dlock_hold_count(m, &count), 0);
    assert_int_equal(count, 1);
    assert_int_equal(dlock_unlock(m), 0);
    dlock_rlock_free(l);
    dlock_rlock_free(m);
    dlock_client_free(c);
}

/* ---- transient refusals --------------------------------------------------- */

typedef struct locker {
    dlock_rlock *l;
    int rc; /* 1 while running: atomic access */
    int64_t done_ms;
} locker;

static void *locker_run(void *arg)
{
    locker *k = arg;
    int rc = dlock_lock(k->l, 5000);
    k->done_ms = fault_now_ms();
    __atomic_store_n(&k->rc, rc, __ATOMIC_RELEASE);
    return NULL;
}

static int locker_rc(locker *k)
{
    return __atomic_load_n(&k->rc, __ATOMIC_ACQUIRE);
}

/* Waits up to ms for the locker to finish; its code (1: still running). */
static int locker_wait(locker *k, int64_t ms)
{
    int64_t end = fault_now_ms() + ms;
    while (locker_rc(k) == 1 && fault_now_ms() < end)
        fault_sleep_ms(10);
    return locker_rc(k);
}

static int command(const char *a0, const char *a1, const char *a2,
                   const char *a3, char *out, size_t outlen)
{
    const char *argv[5] = {a0, a1, a2, a3, NULL};
    return dlock_test_redis_command(srv, out, outlen, argv);
}

/* A try_lock against a server refusing with word: DLOCK_ECONN saying why,
 * after retrying for its whole wait (not at the first refusal). */
static void refused_try_lock(dlock_rlock *l, int64_t wait_ms, const char *word)
{
    int64_t t0 = fault_now_ms(), dt;
    int rc = dlock_try_lock(l, wait_ms, 1000);
    char what[64];

    dt = fault_now_ms() - t0;
    snprintf(what, sizeof what, "%s server, try_lock(wait %lld)", word,
             (long long)wait_ms);
    note(what, dlock_errname(rc), dt);
    printf("    [stall] detail: %s\n", dlock_errmsg(l));
    assert_int_equal(rc, DLOCK_ECONN);
    assert_non_null(strstr(dlock_errmsg(l), word));
    assert_true(dt >= wait_ms - 50 && dt <= wait_ms + SLACK_MS + SCHED_MS);
}

static void *busy_script_run(void *arg)
{
    char out[256];
    (void)arg;
    /* Runs until SCRIPT KILL; the reply is the kill's error. */
    command("EVAL", "local i = 0 while true do i = i + 1 end", "0", NULL, out,
            sizeof out);
    return NULL;
}

/* An unbounded dlock_lock on l while the server refuses with word: it
 * keeps trying (still blocked after 300 ms) and gets the lock soon after
 * end(arg) makes the server serve again. The hold is then removed. */
static void lock_through_refusal(dlock_rlock *l, const char *word,
                                 void (*end)(void *), void *arg)
{
    locker k = {NULL, 1, 0};
    pthread_t lt;
    int64_t t_end;
    char what[96];
    int rc;

    k.l = l;
    assert_int_equal(pthread_create(&lt, NULL, locker_run, &k), 0);
    fault_sleep_ms(300);
    rc = locker_rc(&k);
    t_end = fault_now_ms();
    end(arg);
    assert_int_equal(rc, 1);
    assert_int_equal(locker_wait(&k, 5000), 0);
    pthread_join(lt, NULL);
    snprintf(what, sizeof what, "%s server, lock() acquired after it served again",
             word);
    note(what, "OK", k.done_ms - t_end);
    assert_true(k.done_ms - t_end <= 1000 + SCHED_MS);
    assert_int_equal(dlock_force_unlock(l, NULL), 0); /* the locker's hold */
}

static void end_busy(void *script_thread)
{
    char out[256];
    command("SCRIPT", "KILL", NULL, NULL, out, sizeof out);
    pthread_join(*(pthread_t *)script_thread, NULL);
}

static void end_readonly(void *arg)
{
    char out[256];
    (void)arg;
    command("REPLICAOF", "NO", "ONE", NULL, out, sizeof out);
}

/* A long script makes the server answer BUSY to everyone else. */
static void test_refusal_busy(void **state)
{
    dlock_client *c = client_at(dlock_test_redis_url(srv), CMD_MS, 2);
    dlock_rlock *l, *m;
    pthread_t script;
    int i;
    (void)state;

    assert_int_equal(dlock_reentrant_new(&l, c, "stall:busy:L"), 0);
    assert_int_equal(dlock_reentrant_new(&m, c, "stall:busy:M"), 0);
    assert_int_equal(dlock_is_locked(l, &i), 0);
    assert_int_equal(pthread_create(&script, NULL, busy_script_run, NULL), 0);
    fault_sleep_ms(300); /* past the 100 ms busy threshold */

    refused_try_lock(m, 300, "BUSY");

    lock_through_refusal(l, "BUSY", end_busy, &script);
    dlock_rlock_free(l);
    dlock_rlock_free(m);
    dlock_client_free(c);
}

/* A server turned into a replica (of a master that is not there) refuses
 * writes with READONLY, as a master demoted by a failover does. */
static void test_refusal_readonly(void **state)
{
    dlock_client *c = client_at(dlock_test_redis_url(srv), CMD_MS, 2);
    dlock_rlock *l;
    char out[256] = "";
    (void)state;

    assert_int_equal(dlock_reentrant_new(&l, c, "stall:readonly"), 0);
    assert_int_equal(command("REPLICAOF", "127.0.0.1", "1", NULL, out,
                             sizeof out), 0);
    refused_try_lock(l, 200, "READONLY");

    lock_through_refusal(l, "READONLY", end_readonly, NULL);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

int dlock_test_stalls(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(test_budget_stalled_server),
        cmocka_unit_test(test_budget_blackhole),
        cmocka_unit_test(test_budget_slow_link),
        cmocka_unit_test(test_budget_late_reply_discarded),
        cmocka_unit_test(test_refusal_busy),
        cmocka_unit_test(test_refusal_readonly),
    };
    return DLOCK_RUN_GROUP("faults: stalled, slow and refusing servers", cases,
                           group_start, group_stop);
}
