/*
 * The conformance cases of the client's lifecycle (issue 16, items 1, 3 and
 * 7): the last reference dropped inside on_lost, fork() children while other
 * threads lock, and cancelling blocked waits (dlock_client_cancel_waits,
 * dlock_client_free). Each case runs on every backend:
 * dlock_test_lifecycle("mock") and dlock_test_lifecycle("redis").
 *
 * Helper threads record what they see; assertions run on the test thread
 * after the helper has been joined. Objects a case makes outside the fixture
 * are kept for its teardown (dlock_fx_keep), so a failing assertion leaks
 * nothing.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* How long (real ms) a released helper thread may take to come back. */
#define JOIN_MS 5000

/* Frees for dlock_fx_keep. */
static void free_sem(void *o) { dlock_semaphore_free(o); }
static void free_latch(void *o) { dlock_latch_free(o); }
static void free_lock(void *o) { dlock_rlock_free(o); }
static void free_client(void *o) { dlock_client_free(o); }

/* A third client on the fixture's store or server, with opts (NULL:
 * the fixture's watchdog timeout, no on_lost). Not kept: the caller frees
 * it (or keeps it). */
static dlock_client *extra_client(dlock_fx *fx, dlock_client_options *opts)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    char err[256] = "";

    if (!opts) {
        o.watchdog_timeout_ms = fx->watchdog_ms;
        opts = &o;
    }
    if (fx->is_mock)
        assert_int_equal(dlock_mock_backend_new(&b, fx->store), 0);
    else
        assert_int_equal(dlock_redis_backend_new(&b, dlock_fx_redis_url(), NULL,
                                                 err, sizeof(err)), 0);
    if (dlock_client_new(&c, b, opts) != 0) {
        dlock_backend_free(b);
        fail_msg("extra client");
    }
    return c;
}

/* The threads of this process (entries of /proc/self/task) called name
 * (their comm), or all of them for NULL. A thread that ends meanwhile is
 * not counted. */
static int threads_named(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], comm[64] = "";
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        if (!name) {
            n++;
            continue;
        }
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        if ((f = fopen(path, "r")) == NULL)
            continue;
        if (fgets(comm, sizeof(comm), f))
            comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
        if (strcmp(comm, name) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static int thread_count(void)
{
    return threads_named(NULL);
}

/* Waits (real time, up to real_ms) for n threads named name (a thread names
 * itself once it runs, which on a loaded machine may take a while); the
 * count at the end. */
static int wait_threads_named(const char *name, int n, int64_t real_ms)
{
    int64_t end = dlock_fx_real_ms() + real_ms;
    int now = threads_named(name);

    while (now != n && dlock_fx_real_ms() < end) {
        dlock_fx_sleep_real(5);
        now = threads_named(name);
    }
    return now;
}

/* Waits (real time, up to real_ms) for the thread count to come down to n. */
static int wait_threads(int n, int64_t real_ms)
{
    int64_t end = dlock_fx_real_ms() + real_ms;
    int now = thread_count();

    while (now > n && dlock_fx_real_ms() < end) {
        dlock_fx_sleep_real(5);
        now = thread_count();
    }
    return now;
}

/* ==== item 1: on_lost drops the last reference ============================= */

typedef struct lost_state {
    dlock_client *c;
    dlock_rlock *handle; /* freed by the callback */
    int free_client;     /* the callback frees c too */
    int calls;           /* atomic */
    char name[DLOCK_NAME_MAX + 1];
} lost_state;

/* The application dropped the client already (or does it here, with
 * free_client): freeing the lost lock's handle drops the last reference,
 * and the client must outlive this call. */
static void free_on_lost(void *arg, const char *name, const char *owner)
{
    lost_state *s = arg;

    (void)owner;
    snprintf(s->name, sizeof(s->name), "%s", name);
    dlock_rlock_free(s->handle);
    s->handle = NULL;
    if (s->free_client)
        dlock_client_free(s->c);
    __atomic_add_fetch(&s->calls, 1, __ATOMIC_RELEASE);
}

/* The case of both tests below: c, with on_lost, holds fx->name with
 * lease 0 (watchdog-renewed) through ls->handle and nothing else; with
 * free_first the application frees c right away (the handle keeps it
 * alive). Then c2 force-unlocks, the next renewal finds the lock gone and
 * calls on_lost, which drops the last reference: no crash, and the client
 * (its watchdog thread, its backend) goes away once the callback returns. */
static void lost_case(dlock_fx *fx, int free_first)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    lost_state ls;
    int threads_before, sleepers_before = dlock_fx_settle(fx), existed = 0;
    int64_t end;

    memset(&ls, 0, sizeof(ls));
    threads_before = thread_count();
    assert_true(threads_before > 0);
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    opts.on_lost = free_on_lost;
    opts.on_lost_arg = &ls;
    ls.c = extra_client(fx, &opts);
    ls.free_client = !free_first;
    assert_int_equal(dlock_reentrant_new(&ls.handle, ls.c, fx->name), 0);
    assert_int_equal(dlock_lock(ls.handle, 0), 0);
    if (free_first)
        dlock_client_free(ls.c);

    assert_int_equal(dlock_force_unlock(l2, &existed), 0);
    assert_int_equal(existed, 1);
    if (fx->is_mock) {
        /* one watchdog period (30 s / 3) on the virtual clock */
        dlock_fx_advance(fx, fx->watchdog_ms / 3);
    } else {
        end = dlock_fx_real_ms() + 20 * fx->watchdog_ms;
        while (__atomic_load_n(&ls.calls, __ATOMIC_ACQUIRE) == 0 &&
               dlock_fx_real_ms() < end)
            dlock_fx_sleep_real(5);
    }
    assert_int_equal(__atomic_load_n(&ls.calls, __ATOMIC_ACQUIRE), 1);
    assert_null(ls.handle);
    assert_string_equal(ls.name, fx->name);
    /* The watchdog (and any backend thread) ended after the callback. */
    assert_int_equal(wait_threads(threads_before, 5000), threads_before);
    if (fx->is_mock)
        assert_int_equal(dlock_fx_settle(fx), sleepers_before);
    /* nothing else changed: the other client still works */
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* Issue 16, item 1: the reproduction (client freed first, handle freed in
 * on_lost). */
static void lost_callback_frees_last_handle(void **state)
{
    lost_case(BEGIN(state), 1);
}

/* dlock_client_free itself in on_lost (allowed now): the application's
 * reference goes last, on the watchdog thread. */
static void lost_callback_frees_client(void **state)
{
    lost_case(BEGIN(state), 0);
}

/* ==== item 3: fork() while other threads lock ============================== */

#define FORK_THREADS 4
#define FORK_CHILDREN 150
#define CHILD_EXIT_MS 3000

typedef struct churn {
    dlock_client *c;
    dlock_rlock *l; /* this thread's lock */
    char name[160];
    int stop;       /* atomic */
    int errors;
    int rounds;
} churn;

/* Everything that takes the locks a child could meet: the hold registry
 * (lock/unlock, a handle made and freed), the client's reference count, and
 * the shared failure-detail locks (a refused unlock records its detail,
 * dlock_errmsg reads it). */
static void churn_main(void *arg)
{
    churn *ch = arg;

    while (!__atomic_load_n(&ch->stop, __ATOMIC_ACQUIRE)) {
        dlock_rlock *tmp = NULL;

        if (dlock_try_lock(ch->l, 0, 600000) != 0 || dlock_unlock(ch->l) != 0)
            ch->errors++;
        if (dlock_unlock(ch->l) != DLOCK_ENOTOWNER)
            ch->errors++;
        (void)dlock_errmsg(ch->l);
        if (dlock_reentrant_new(&tmp, ch->c, ch->name) != 0 ||
            dlock_try_lock(tmp, 0, 600000) != 0 || dlock_unlock(tmp) != 0)
            ch->errors++;
        dlock_rlock_free(tmp);
        ch->rounds++;
    }
}

/* In the child: only the forking thread exists; every lock another thread
 * held at the fork stays held forever. Exit status 0 when every call gave
 * the answer it should. */
static void child_main(dlock_client *c, dlock_rlock *mine, dlock_rlock *busy)
{
    int ok = 1;

    ok &= dlock_lock(busy, 0) == DLOCK_EFORKED;
    ok &= strstr(dlock_errmsg(busy), "fork") != NULL;
    ok &= dlock_try_lock(mine, 0, 1000) == DLOCK_EFORKED;
    ok &= dlock_client_cancel_waits(c) == DLOCK_EFORKED;
    dlock_rlock_free(mine);
    dlock_client_free(c);
    _exit(ok ? 0 : 1);
}

/* Waits up to ms for pid; kills it if it has not exited. 0 exited with
 * status 0, 1 exited otherwise, 2 hung (killed). */
static int reap(pid_t pid, int64_t ms)
{
    int64_t end = dlock_fx_real_ms() + ms;
    int status = 0;

    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
        if (r < 0)
            return 1;
        if (dlock_fx_real_ms() >= end)
            break;
        dlock_fx_sleep_real(1);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return 2;
}

/* A fork() child calls dlock_rlock_free, dlock_client_free and a lock call
 * while four parent threads lock, unlock, fail and make and free handles on
 * the same client: every child exits, at once. */
static void fork_while_threads_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    churn ch[FORK_THREADS];
    dlock_fx_thread th[FORK_THREADS];
    int i, hung = 0, bad = 0;

    memset(ch, 0, sizeof(ch));
    for (i = 0; i < FORK_THREADS; i++) {
        ch[i].c = fx->c1;
        snprintf(ch[i].name, sizeof(ch[i].name), "%s:t%d", fx->name, i);
        ch[i].l = dlock_fx_lock(fx, fx->c1, ch[i].name);
        dlock_fx_start(&th[i], churn_main, &ch[i]);
    }
    for (i = 0; i < FORK_CHILDREN; i++) {
        dlock_rlock *mine = NULL;
        pid_t pid;

        assert_int_equal(dlock_reentrant_new(&mine, fx->c1, fx->name), 0);
        fflush(NULL);
        pid = fork();
        if (pid == 0)
            child_main(fx->c1, mine, ch[i % FORK_THREADS].l);
        assert_true(pid > 0);
        switch (reap(pid, CHILD_EXIT_MS)) {
        case 1: bad++; break;
        case 2: hung++; break;
        }
        /* the child's free was its own copy's: the parent's handle works */
        if (dlock_try_lock(mine, 0, fx->long_lease_ms) != 0 || dlock_unlock(mine) != 0)
            bad++;
        dlock_rlock_free(mine);
    }
    for (i = 0; i < FORK_THREADS; i++)
        __atomic_store_n(&ch[i].stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < FORK_THREADS; i++)
        assert_int_equal(dlock_fx_join(fx, &th[i], JOIN_MS, NULL), 0);
    if (hung || bad)
        fprintf(stderr, "  [%s] %d of %d children hung, %d answered wrong\n",
                fx->backend, hung, FORK_CHILDREN, bad);
    assert_int_equal(hung, 0);
    assert_int_equal(bad, 0);
    for (i = 0; i < FORK_THREADS; i++) {
        assert_int_equal(ch[i].errors, 0);
        assert_true(ch[i].rounds > 0);
    }
}

/* ==== item 7: cancelling blocked waits ===================================== */

enum wait_kind { W_LOCK, W_TRY_LOCK, W_SEM, W_LATCH };

typedef struct waiter {
    enum wait_kind kind;
    dlock_rlock *l;
    dlock_semaphore *s;
    dlock_latch *a;
    int64_t wait_ms;
    int rc;
    char msg[256];
    int unlock_after; /* release what was acquired */
} waiter;

static void wait_main(void *arg)
{
    waiter *w = arg;

    switch (w->kind) {
    case W_LOCK:
        w->rc = dlock_lock(w->l, 600000);
        snprintf(w->msg, sizeof(w->msg), "%s", dlock_errmsg(w->l));
        if (w->rc == 0 && w->unlock_after)
            dlock_unlock(w->l);
        break;
    case W_TRY_LOCK:
        w->rc = dlock_try_lock(w->l, w->wait_ms, 600000);
        snprintf(w->msg, sizeof(w->msg), "%s", dlock_errmsg(w->l));
        if (w->rc == 0 && w->unlock_after)
            dlock_unlock(w->l);
        break;
    case W_SEM:
        w->rc = dlock_semaphore_acquire(w->s, 1);
        snprintf(w->msg, sizeof(w->msg), "%s", dlock_semaphore_errmsg(w->s));
        break;
    case W_LATCH:
        w->rc = dlock_latch_await(w->a);
        snprintf(w->msg, sizeof(w->msg), "%s", dlock_latch_errmsg(w->a));
        break;
    }
}

/* Starts w and waits until it sleeps (mock) or has had time to (redis). */
static void start_blocked(dlock_fx *fx, dlock_fx_thread *t, waiter *w)
{
    int base = dlock_fx_settle(fx);

    w->rc = 1;
    dlock_fx_start(t, wait_main, w);
    assert_int_equal(dlock_fx_wait_blocked(fx, base, 200), 0);
    assert_false(dlock_fx_done(t));
}

/* dlock_client_cancel_waits ends a dlock_lock blocked without a budget, and
 * only the waits of that client; later calls wait normally. */
static void cancel_waits_ends_blocked_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    waiter w1 = {W_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    waiter w2 = {W_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    waiter w3 = {W_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    dlock_fx_thread t1, t2, t3;

    w1.l = dlock_fx_lock(fx, fx->c1, fx->name);
    w2.l = dlock_fx_lock(fx, fx->c2, fx->name); /* another client's waiter */
    w3.l = w1.l;
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    start_blocked(fx, &t1, &w1);
    start_blocked(fx, &t2, &w2);

    assert_int_equal(dlock_client_cancel_waits(fx->c1), 0);
    assert_int_equal(dlock_fx_join(fx, &t1, JOIN_MS, holder), 0);
    assert_int_equal(w1.rc, DLOCK_ECANCELED);
    assert_non_null(strstr(w1.msg, "canceled"));
    /* c2's waiter is still blocked */
    assert_int_equal(dlock_fx_wait_done(&t2, 50), -1);
    /* a call started after the cancel waits normally */
    start_blocked(fx, &t3, &w3);
    assert_int_equal(dlock_fx_wait_done(&t3, 50), -1);
    assert_int_equal(dlock_fx_is_held(holder), 1);

    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_fx_join(fx, &t2, JOIN_MS, holder), 0);
    assert_int_equal(dlock_fx_join(fx, &t3, JOIN_MS, holder), 0);
    assert_int_equal(w2.rc, 0);
    assert_int_equal(w3.rc, 0);
    assert_int_equal(dlock_fx_is_locked(holder), 0);
}

/* dlock_client_free while a thread is blocked on the client: the call
 * returns DLOCK_ECANCELED, and the handle (which keeps the client alive)
 * still works afterwards. */
static void client_free_ends_blocked_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_client *c = extra_client(fx, NULL);
    waiter w = {W_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    dlock_fx_thread t;

    dlock_fx_keep(fx, c, free_client);
    assert_int_equal(dlock_reentrant_new(&w.l, c, fx->name), 0);
    dlock_fx_keep(fx, w.l, free_lock);
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    start_blocked(fx, &t, &w);

    dlock_fx_unkeep(fx, c);
    dlock_client_free(c);
    assert_int_equal(dlock_fx_join(fx, &t, JOIN_MS, holder), 0);
    assert_int_equal(w.rc, DLOCK_ECANCELED);

    /* the handle outlives the client reference, and waits normally */
    assert_int_equal(dlock_try_lock(w.l, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_try_lock(w.l, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(w.l), 0);
}

/* The semaphore's acquire, the latch's await and a try_lock with a long
 * budget are cancelled alike; afterwards the objects work as before. */
static void cancel_waits_ends_semaphore_latch_try_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    dlock_semaphore *s = NULL;
    dlock_latch *a = NULL;
    char sname[160], aname[160];
    waiter ws = {W_SEM, NULL, NULL, NULL, 0, 1, "", 0};
    waiter wa = {W_LATCH, NULL, NULL, NULL, 0, 1, "", 0};
    waiter wt = {W_TRY_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    dlock_fx_thread ts, ta, tt;

    snprintf(sname, sizeof(sname), "%s:sem", fx->name);
    snprintf(aname, sizeof(aname), "%s:latch", fx->name);
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, sname), 0);
    dlock_fx_keep(fx, s, free_sem);
    assert_int_equal(dlock_latch_new(&a, fx->c1, aname), 0);
    dlock_fx_keep(fx, a, free_latch);
    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 0), 0);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    ws.s = s;
    wa.a = a;
    wt.l = dlock_fx_lock(fx, fx->c1, fx->name);
    wt.wait_ms = fx->long_lease_ms;
    start_blocked(fx, &ts, &ws);
    start_blocked(fx, &ta, &wa);
    start_blocked(fx, &tt, &wt);

    assert_int_equal(dlock_client_cancel_waits(fx->c1), 0);
    assert_int_equal(dlock_fx_join(fx, &ts, JOIN_MS, NULL), 0);
    assert_int_equal(dlock_fx_join(fx, &ta, JOIN_MS, NULL), 0);
    assert_int_equal(dlock_fx_join(fx, &tt, JOIN_MS, holder), 0);
    assert_int_equal(ws.rc, DLOCK_ECANCELED);
    assert_int_equal(wa.rc, DLOCK_ECANCELED);
    assert_int_equal(wt.rc, DLOCK_ECANCELED);

    /* nothing was taken, and the objects wait normally again */
    assert_int_equal(dlock_semaphore_release(s, 1), 0);
    assert_int_equal(dlock_semaphore_try_acquire(s, 1, 0), 0);
    assert_int_equal(dlock_latch_count_down(a), 0);
    assert_int_equal(dlock_latch_await(a), 0);
    assert_int_equal(dlock_try_lock(wt.l, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_lock(wt.l, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(wt.l), 0);
}

/* Bad input, and a cancel with nobody waiting changes nothing later. */
static void cancel_waits_bad_input_and_no_waiters(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c2, fx->name);
    waiter w = {W_TRY_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    dlock_fx_thread t;

    assert_int_equal(dlock_client_cancel_waits(NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_client_cancel_waits(fx->c1), 0);
    assert_int_equal(dlock_client_cancel_waits(fx->c1), 0);
    assert_string_equal(dlock_errname(DLOCK_ECANCELED), "ECANCELED");

    /* a bounded wait after the cancels runs out as usual */
    w.l = dlock_fx_lock(fx, fx->c1, fx->name);
    w.wait_ms = fx->is_mock ? fx->lease_ms : 1000;
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    start_blocked(fx, &t, &w);
    if (fx->is_mock)
        dlock_fx_advance(fx, w.wait_ms);
    assert_int_equal(dlock_fx_join(fx, &t, JOIN_MS + w.wait_ms, holder), 0);
    assert_int_equal(w.rc, DLOCK_ETIMEDOUT);
}

/* ==== issue 14: the library's threads are named =========================== */

/* Every client's watchdog thread is "dlock-watchdog"; the Redis backend's
 * subscriber thread (started by its first subscription: here a waiter's) is
 * "dlock-sub". The mock starts no thread of its own (messages are delivered
 * on the publishing thread), so no "dlock-sub" there. */
static void library_threads_are_named(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = dlock_fx_lock(fx, fx->c1, fx->name);
    waiter w = {W_LOCK, NULL, NULL, NULL, 0, 1, "", 1};
    dlock_fx_thread t;
    dlock_client *c3;
    int watchdogs = threads_named("dlock-watchdog");
    int subs = threads_named("dlock-sub");
    int subs_seen, unlocked;

    assert_true(watchdogs >= 2); /* c1's and c2's */
    c3 = dlock_fx_keep(fx, extra_client(fx, NULL), free_client);
    assert_int_equal(wait_threads_named("dlock-watchdog", watchdogs + 1, JOIN_MS),
                     watchdogs + 1);

    w.l = dlock_fx_lock(fx, c3, fx->name);
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    start_blocked(fx, &t, &w);
    /* Counted while the waiter waits; asserted once it is joined. */
    if (fx->is_mock)
        subs_seen = threads_named("dlock-sub");
    else
        subs_seen = wait_threads_named("dlock-sub", subs + 1, JOIN_MS);
    unlocked = dlock_unlock(holder);
    assert_int_equal(dlock_fx_join(fx, &t, JOIN_MS, holder), 0);
    assert_int_equal(unlocked, 0);
    assert_int_equal(w.rc, 0);
    assert_int_equal(subs_seen, fx->is_mock ? 0 : subs + 1);
}

/* ---- the backend registry (api/dlock/sys/backend.h) ---------------------- */

/* A user's scheme "fxwrap": opens a backend on the fixture's store or server
 * (the arg), as a custom backend's constructor would; counts its calls. */
typedef struct wrap_arg {
    dlock_fx *fx;
    int opened;
} wrap_arg;

static int open_wrapped(void *arg, dlock_backend **out, const char *url,
                        const void *options, char *errbuf, size_t errlen)
{
    wrap_arg *w = arg;

    (void)options;
    w->opened++;
    if (strcmp(url, "fxwrap://here") != 0) {
        snprintf(errbuf, errlen, "fxwrap: only fxwrap://here");
        return DLOCK_EINVAL;
    }
    if (w->fx->is_mock)
        return dlock_mock_backend_new(out, w->fx->store);
    return dlock_backend_open(out, dlock_fx_redis_url(), NULL, errbuf, errlen);
}

static void unregister_wrap(void *o)
{
    (void)o;
    dlock_backend_register("fxwrap", NULL, NULL);
}

static void registered_scheme_reaches_its_backend(void **state)
{
    dlock_fx *fx = BEGIN(state);
    static wrap_arg w;
    dlock_client *c = NULL;
    dlock_rlock *mine, *theirs;
    char err[256] = "";
    int locked = -1;

    w.fx = fx;
    w.opened = 0;
    /* Before: unknown, and the message names only the scheme and lists
     * the registered ones. */
    assert_int_equal(dlock_client_connect(&c, "fxwrap://here", NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "unknown URL scheme \"fxwrap\""));
    assert_non_null(strstr(err, "redis:"));
    assert_non_null(strstr(err, "mock:"));

    assert_int_equal(dlock_backend_register("fxwrap", open_wrapped, &w), 0);
    dlock_fx_keep(fx, &w, unregister_wrap);
    /* taken, and malformed schemes */
    assert_int_equal(dlock_backend_register("fxwrap", open_wrapped, &w), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_register("redis", open_wrapped, &w), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_register("", open_wrapped, &w), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_register(NULL, open_wrapped, &w), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_register("Up", open_wrapped, &w), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_register("a:b", open_wrapped, &w), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_register("nosuch", NULL, NULL), DLOCK_EINVAL);

    /* The constructor's own refusal comes back with its detail. */
    assert_int_equal(dlock_client_connect(&c, "fxwrap://elsewhere", NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_string_equal(err, "fxwrap: only fxwrap://here");

    /* A client made from the URL shares the fixture's locks. */
    assert_int_equal(dlock_client_connect(&c, "fxwrap://here", NULL, err, sizeof err), 0);
    dlock_fx_keep(fx, c, free_client);
    assert_int_equal(w.opened, 2);
    mine = dlock_fx_lock(fx, c, fx->name);
    theirs = dlock_fx_lock(fx, fx->c1, fx->name);
    assert_int_equal(dlock_lock(mine, fx->long_lease_ms), 0);
    assert_int_equal(dlock_is_locked(theirs, &locked), 0);
    assert_int_equal(locked, 1);
    assert_int_equal(dlock_try_lock(theirs, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(mine), 0);
}

/* ---- the suite ----------------------------------------------------------- */

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest lifecycle_cases[] = {
    CASE(lost_callback_frees_last_handle),
    CASE(lost_callback_frees_client),
    CASE(fork_while_threads_lock),
    CASE(cancel_waits_ends_blocked_lock),
    CASE(client_free_ends_blocked_lock),
    CASE(cancel_waits_ends_semaphore_latch_try_lock),
    CASE(cancel_waits_bad_input_and_no_waiters),
    CASE(library_threads_are_named),
    CASE(registered_scheme_reaches_its_backend),
};

int dlock_test_lifecycle(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("lifecycle", backend, lifecycle_cases);
}
