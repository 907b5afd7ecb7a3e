/*
 * The conformance fixture: every lock case is written once, against this
 * struct, and runs on every backend.
 *
 * A cmocka group picks the backend: its group setup
 * (dlock_fx_group_mock / dlock_fx_group_redis) stores a static descriptor in
 * the group state, which cmocka hands to each test's setup (dlock_fx_setup)
 * because the tests have no initial state of their own. dlock_fx_setup
 * replaces it with a fresh dlock_fx; dlock_fx_teardown frees it all, so a
 * leak in a case shows up under ASan.
 *
 * Two clients on the same store/server stand for two processes. Times are
 * chosen per backend: on the mock they are virtual (a 30 s watchdog costs
 * nothing because the clock only moves when a case advances it); on Redis
 * they are real and short (ms), so the suite stays fast.
 *
 * Threads: cmocka assertions must run on the test's own thread. Helper
 * threads only record what they saw; the case joins them (dlock_fx_join,
 * which never leaves a thread behind) and asserts afterwards.
 */
#ifndef DLOCK_TEST_FIXTURE_H
#define DLOCK_TEST_FIXTURE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock.h"

/* Defined in tests/main.c: what the watchdog alarm reports if the run hangs,
 * and a way out when a helper thread cannot be released (the run cannot go
 * on safely with a thread stuck inside the library). */
void dlock_test_set_phase(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
void dlock_test_fatal(const char *msg);

/* The group state: which backend a group runs on. */
typedef struct dlock_fx_backend {
    const char *kind; /* "mock" | "redis" */
} dlock_fx_backend;

/* The Redis group's server (set by main before running the Redis group). */
void dlock_fx_set_redis_url(const char *url);
const char *dlock_fx_redis_url(void);

/* A Redis row whose clients log in as a user of few rights (the redis-acl
 * row: the README's ACL user) gives the URL of an unrestricted login here,
 * for what only the cases do: inspecting the store with commands the
 * library never sends (KEYS...). NULL: none (the clients' own URL). */
void dlock_fx_set_redis_admin_url(const char *url);

/* cmocka group setups: *state = the backend descriptor. */
int dlock_fx_group_mock(void **state);
int dlock_fx_group_redis(void **state);

/* A mock of a suite's own: groups run on backend `kind` are mock groups
 * (virtual clock, fx->is_mock) whose clients' backends wrap(out, inner)
 * wraps (taking inner over, also on failure), e.g. the Redis Cluster slot
 * check (tests/harness/slot_check.h). One at a time; NULL kind: none. */
void dlock_fx_set_mock_wrapper(const char *kind,
                               int (*wrap)(dlock_backend **out, dlock_backend *inner));

/* The group setup for backend: "mock", the wrapped mock's kind, or else a
 * Redis server at dlock_fx_redis_url(). */
typedef int (*dlock_fx_group_fn)(void **state);
dlock_fx_group_fn dlock_fx_group_for(const char *backend);

/* Case names the groups started from now on leave out (NULL-terminated;
 * NULL: none): for a row that repeats other rows' cases to check something
 * else and has no use for some (the cluster slot row: the stress cases add
 * time, not scripts). */
void dlock_fx_set_skips(const char *const *names);
int dlock_fx_skipped(const char *case_name);
/* Runs tests[0..n) but the skipped ones as the cmocka group name with
 * setup. Returns the group's failures, counted in the run's totals. */
struct CMUnitTest;
int dlock_fx_run_cases(const char *name, const struct CMUnitTest *tests, size_t n,
                       dlock_fx_group_fn setup);

#define DLOCK_FX_MAX_LOCKS 32

typedef struct dlock_fx {
    const char *backend;     /* "mock" | "redis" */
    int is_mock;
    dlock_vclock *vclock;    /* mock: the virtual clock; redis: NULL */
    dlock_mock_store *store; /* mock only */
    dlock_client *c1, *c2;   /* two clients = two processes on one store */
    dlock_client *inspector; /* dlock_fx_inspector's, or NULL (kept) */
    int64_t watchdog_ms;     /* the clients' watchdog timeout */
    int64_t lease_ms;        /* a short lease, for expiry cases */
    int64_t long_lease_ms;   /* a lease no case outlives */
    char name[96];           /* a lock name unique to this test */
    char owner1[DLOCK_OWNER_MAX]; /* the test thread's owner id on c1 */
    char owner2[DLOCK_OWNER_MAX]; /* ... and on c2 */

    /* lost-lock callbacks of c1 and c2 */
    pthread_mutex_t lost_mutex;
    int lost_count;
    int lost_client; /* 1 or 2: whose callback fired last */
    char lost_name[DLOCK_NAME_MAX + 1];
    char lost_owner[DLOCK_OWNER_MAX];
    struct dlock_fx_tag {
        struct dlock_fx *fx;
        int client;
    } tags[2];

    dlock_rlock *locks[DLOCK_FX_MAX_LOCKS]; /* freed by teardown */
    size_t nlocks;

    /* other objects freed by teardown (dlock_fx_keep) */
    struct dlock_fx_kept {
        void *obj;
        void (*free_fn)(void *);
    } kept[DLOCK_FX_MAX_LOCKS];
    size_t nkept;
} dlock_fx;

int dlock_fx_setup(void **state);
int dlock_fx_teardown(void **state);

/* Runs the conformance group tests, named "conformance/<what> on
 * <backend>", on that backend: "mock", or any other name for a Redis server
 * at dlock_fx_redis_url() ("redis", "redis-tls"). Returns the group's
 * failures, counted in the run's totals. */
struct CMUnitTest;
int dlock_fx_run_group(const char *what, const char *backend,
                       const struct CMUnitTest *tests, size_t n);
#define DLOCK_FX_RUN_GROUP(what, backend, tests) \
    dlock_fx_run_group(what, backend, tests, sizeof(tests) / sizeof((tests)[0]))

/* A conformance case with the fixture's setup and teardown. */
#define DLOCK_FX_CASE(f) \
    cmocka_unit_test_setup_teardown(f, dlock_fx_setup, dlock_fx_teardown)

/* First line of every case: the fixture, a unique fx->name built from
 * case_name, and the phase the hang alarm reports. */
dlock_fx *dlock_fx_begin(void **state, const char *case_name);

/* The lock type the generic cases run on: the reentrant lock's cases run
 * again, unchanged, for every type that promises the same RLock contract. */
typedef struct dlock_fx_lock_type {
    const char *name; /* "reentrant", "fair", ... */
    int (*make)(dlock_rlock **out, dlock_client *c, const char *name);
} dlock_fx_lock_type;

/* Selects the type for the groups run next (default: reentrant). */
void dlock_fx_use_lock_type(const dlock_fx_lock_type *type);
const dlock_fx_lock_type *dlock_fx_lock_type_current(void);

/* Runs the reentrant lock's cases (tests/conformance/reentrant_cases.c) on
 * type, on backend ("mock", or "redis" at dlock_fx_redis_url()), except
 * those named in skip (NULL, or NULL-terminated; "mock:name" skips on the
 * mock only; the caller says why each cannot apply). Returns the failures. Also what the conformance kit runs
 * (tests/kit/). */
int dlock_test_conformance_type(const dlock_fx_lock_type *type, const char *backend,
                                const char *const *skip);
/* The skips the conformance group (dlock_test_conformance: the generic
 * cases on each type that promises them) passes to
 * dlock_test_conformance_type, NULL by default: for a run whose wrapper
 * cannot apply a case to those types (the cluster slot check). */
void dlock_fx_set_conformance_skips(const char *const *names);
const char *const *dlock_fx_conformance_skips(void);

/* A lock handle of the current type on client c, freed by teardown. Fails
 * the test if it cannot be made. */
dlock_rlock *dlock_fx_lock(dlock_fx *fx, dlock_client *c, const char *name);

/* A backend on the fixture's store or server, as its clients have (on a
 * wrapped mock row, wrapped the same way): for a case that puts a backend
 * of its own in front of it. 0, or the constructor's code (reported on
 * stderr). */
int dlock_fx_backend_new(dlock_fx *fx, dlock_backend **out);

/* Has teardown free obj with free_fn (the last kept first, before the
 * fixture's locks and clients): for the objects a case makes beyond
 * dlock_fx_lock (other object types, clients of its own), so that a failing
 * assertion leaks nothing. Fails the test when full. Returns obj. */
void *dlock_fx_keep(dlock_fx *fx, void *obj, void (*free_fn)(void *));
/* Forgets a kept obj (the case freed it itself), freeing its room. */
void dlock_fx_unkeep(dlock_fx *fx, void *obj);

/* Lets ms pass: mock, dlock_vclock_advance (instant, renewals and expiries
 * happen on the way); redis, a real sleep. */
void dlock_fx_advance(dlock_fx *fx, int64_t ms);

/* Now on the backend's clock (virtual on the mock). */
int64_t dlock_fx_now(dlock_fx *fx);
/* Real monotonic time in ms, for latency measurements. */
int64_t dlock_fx_real_ms(void);
/* An asynchronous operation's callbacks, counted: pass dlock_fx_count_call
 * as the dlock_done_fn and a dlock_fx_calls as its argument (n: how many
 * calls, rc: the last one's r->rc). */
typedef struct dlock_fx_calls {
    int n;
    int rc;
} dlock_fx_calls;
void dlock_fx_count_call(void *arg, dlock_op_id op, const dlock_result *r);
void dlock_fx_sleep_real(int64_t ms);

/* Mock: waits until the number of threads asleep on the virtual clock stops
 * changing (for ~30 ms of real time) and returns it. Redis: returns 0. */
int dlock_fx_settle(dlock_fx *fx);

/* Lost-lock record. */
int dlock_fx_lost_count(dlock_fx *fx);
/* Copies the last callback's arguments; returns the count. */
int dlock_fx_lost_last(dlock_fx *fx, char *name, size_t name_len, char *owner,
                       size_t owner_len, int *client);
/* Mock: advances the clock by up to max_ms in watchdog periods until the
 * count reaches n; redis: sleeps. Returns the count. */
int dlock_fx_wait_lost(dlock_fx *fx, int n, int64_t max_ms);

/* ---- direct access to the store (separate script calls) --------------- */

/* A client for inspecting the store with commands beyond the library's
 * own (KEYS...): c1, or on a row with an admin URL
 * (dlock_fx_set_redis_admin_url) a client logged in with it, made on
 * first use and freed by teardown. Fails the test if it cannot be made. */
dlock_client *dlock_fx_inspector(dlock_fx *fx);

/* Runs one command on the key through a script on c's backend:
 * redis.call(cmd, key, args...). The reply is the caller's. 0 or a code. */
int dlock_fx_call(dlock_client *c, dlock_reply **out, const char *cmd,
                  const char *key, int nargs, ...);
/* The integer in key (0 when absent); two separate scripts for get and set,
 * so that only the lock around them can make get+set atomic. */
int dlock_fx_counter_get(dlock_client *c, const char *key, long long *out);
int dlock_fx_counter_set(dlock_client *c, const char *key, long long v);

/* ---- helper threads ----------------------------------------------------- */

typedef struct dlock_fx_thread {
    pthread_t th;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int started, done;
    void (*fn)(void *arg);
    void *arg;
} dlock_fx_thread;

/* Starts fn(arg) on a new thread. Fails the test if it cannot. */
void dlock_fx_start(dlock_fx_thread *t, void (*fn)(void *), void *arg);
/* Whether fn has returned. Never blocks. */
int dlock_fx_done(dlock_fx_thread *t);
/* Waits up to real_ms of real time for fn to return: 0, or -1. */
int dlock_fx_wait_done(dlock_fx_thread *t, int64_t real_ms);
/* Waits up to real_ms for fn to return, then joins. If it has not returned,
 * frees it the hard way (force_unlock of rescue, if any, and on the mock
 * big clock advances) before joining, and returns -1 so the case can fail;
 * 0 when it returned in time. Never leaves the thread running. */
int dlock_fx_join(dlock_fx *fx, dlock_fx_thread *t, int64_t real_ms,
                  dlock_rlock *rescue);

/* Mock: after dlock_fx_start of a thread that is going to block on the
 * clock, waits until base + 1 threads sleep on the clock and the count has
 * settled (base = dlock_fx_settle() before the start). Returns 0 or -1.
 * Redis: sleeps real_ms (the thread has blocked by then) and returns 0. */
int dlock_fx_wait_blocked(dlock_fx *fx, int base, int64_t redis_real_ms);
/* The same for n threads started after base was taken. */
int dlock_fx_wait_blocked_n(dlock_fx *fx, int base, int n, int64_t redis_real_ms);

/* Whether t is still waiting once whatever the case just did has had its
 * effect: mock, the clock's sleepers have settled again; redis, after 250 ms
 * of real time. */
int dlock_fx_still_waiting(dlock_fx *fx, dlock_fx_thread *t);

/* ---- a helper process -------------------------------------------------- */

/* Runs fn(arg, codes) in a fork() child, which leaves n return codes in
 * codes; the parent gets them back in codes. Fails the test unless the child
 * ran to the end and sent all of them. */
void dlock_fx_run_in_child(void (*fn)(void *arg, int *codes), void *arg, int *codes,
                           size_t n);

#endif /* DLOCK_TEST_FIXTURE_H */
