/*
 * The bad-input matrix: every public function of api/dlock/ fed NULL,
 * empty, oversized and odd names, negative and overflowing times, zero and
 * negative counts, unknown URL schemes, a port where something that is not
 * Redis answers, and a key of the wrong type under each object's name.
 * Each call must give its documented error (and nothing may crash or leak:
 * the suite runs under ASan/UBSan in `make asan`, and once by hand under
 * valgrind).
 *
 * Most of it runs on the mock (a private store on a virtual clock: no time
 * passes, nothing sleeps); the network cases start their own listeners.
 * Odd but valid names are also taken end to end on a throwaway redis-server,
 * since there they cross the wire and the Lua conversion for real.
 *
 * EXPECT counts every call tried (bad_inputs), so the report can say how
 * many bad inputs ran.
 */
#include <arpa/inet.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dlock.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/methods.h" /* dlock_rlock_check_owner */
#include "harness/redis_server.h"
#include "harness/runner.h"

static unsigned long bad_inputs;

#define EXPECT(call, code)                                                     \
    do {                                                                       \
        int rc_ = (call);                                                      \
        bad_inputs++;                                                          \
        if (rc_ != (code))                                                     \
            fprintf(stderr, "%s:%d: %s -> %s, expected %s\n", __FILE__,        \
                    __LINE__, #call, dlock_errname(rc_), dlock_errname(code)); \
        assert_int_equal(rc_, (code));                                         \
    } while (0)

/* ---- fixtures ---------------------------------------------------------- */

typedef struct world {
    dlock_vclock *clk;
    dlock_mock_store *store;
    dlock_client *c;
} world;

static void world_open(world *w)
{
    dlock_backend *b = NULL;
    memset(w, 0, sizeof *w);
    assert_int_equal(dlock_vclock_new(&w->clk, 0), 0);
    assert_int_equal(dlock_mock_store_new(&w->store, dlock_vclock_clock(w->clk)),
                     0);
    assert_int_equal(dlock_mock_backend_new(&b, w->store), 0);
    assert_int_equal(dlock_client_new(&w->c, b, NULL), 0);
}

static void world_close(world *w)
{
    dlock_client_free(w->c);
    dlock_mock_store_free(w->store);
    dlock_vclock_free(w->clk);
}

/* A name of n bytes of 'a'. The caller frees. */
static char *long_name(size_t n)
{
    char *s = malloc(n + 1);
    assert_non_null(s);
    memset(s, 'a', n);
    s[n] = '\0';
    return s;
}

/* Names that are odd but valid: each must work end to end. */
static const char *const odd_names[] = {
    "{", "}", "{}", "{a}b", "a{b}c", "{{x}}", "a}b{c", "with space",
    " ", "line\nbreak", "\r\n", "tab\there", "\xff\xfe\x80", "caf\xc3",
    "%s%n", "'quote\"", "redisson_lock__channel:{x}", "a:write", "*", "\\"};

/* Every constructor that makes a dlock_rlock. */
typedef int (*rlock_ctor)(dlock_rlock **, dlock_client *, const char *);
static const struct {
    const char *type;
    rlock_ctor make;
} ctors[] = {
    {"reentrant", dlock_reentrant_new},
    {"fair", dlock_fair_new},
    {"fenced", dlock_fenced_new},
    {"rwlock read", dlock_rwlock_read_new},
    {"rwlock write", dlock_rwlock_write_new},
    {"semaphore lock", dlock_semaphore_lock_new},
};
#define NCTORS (sizeof ctors / sizeof ctors[0])

/* Makes lock type i under name, ready to be taken: the semaphore lock
 * needs a permit in its count first (absent = 0 permits: lock blocks). */
static int make_lock(dlock_client *c, size_t i, const char *name,
                     dlock_rlock **out)
{
    if (strcmp(ctors[i].type, "semaphore lock") == 0) {
        dlock_semaphore *s = NULL;
        assert_int_equal(dlock_semaphore_new(&s, c, name), 0);
        assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 1), 0);
        dlock_semaphore_free(s);
    }
    return ctors[i].make(out, c, name);
}

/* ---- errors ------------------------------------------------------------ */

static void test_error_strings(void **state)
{
    const int codes[] = {0, -1, -12, -13, 1, 100, -100, INT_MIN, INT_MAX};
    size_t i;
    (void)state;
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        bad_inputs += 2;
        assert_non_null(dlock_strerror(codes[i]));
        assert_non_null(dlock_errname(codes[i]));
    }
    assert_string_equal(dlock_errname(INT_MIN), "UNKNOWN");
    assert_string_equal(dlock_strerror(INT_MAX), "unknown error");
    assert_string_equal(dlock_errname(DLOCK_EAUTH), "EAUTH");
}

/* ---- client ------------------------------------------------------------ */

static void test_client_args(void **state)
{
    world w;
    dlock_backend *b = NULL;
    dlock_client *c = (dlock_client *)1;
    dlock_client_options o;
    char buf[DLOCK_OWNER_MAX], err[256];
    const char *bad_urls[] = {"", "mock", "MOCK", "mock:x", "ftp://h",
                              "http://127.0.0.1:1", "rediss://h?nope=1", "redis:/h",
                              "unix:", "\xff://", "redis ://h", "://",
                              /* the client's own parameter, in any scheme */
                              "mock:?fair_waiter_timeout_ms=-1",
                              "mock:?fair_waiter_timeout_ms=",
                              "mock:?fair_waiter_timeout_ms=5s",
                              "mock:?fair_waiter_timeout_ms=1000000000001",
                              "mock:?fair_waiter_timeout_ms=1&fair_waiter_timeout_ms=1",
                              "redis://:secret@127.0.0.1:1?fair_waiter_timeout_ms=x",
                              "mock:?client_name=",
                              "mock:?client_name=a%00b",
                              "mock:?client_name=a%zz",
                              "mock:?client_name=%ff",
                              "mock:?client_name=a&client_name=a",
                              "mock:?metrics_names_max=-1",
                              "mock:?metrics_names_max=10001",
                              "redis://:secret@127.0.0.1:1?client_name=%"};
    size_t i;
    (void)state;
    world_open(&w);
    EXPECT(dlock_client_new(NULL, NULL, NULL), DLOCK_EINVAL);
    EXPECT(dlock_client_new(&c, NULL, NULL), DLOCK_EINVAL);
    assert_null(c);
    /* Bad options: the caller keeps its backend, so it frees it. */
    assert_int_equal(dlock_mock_backend_new(&b, w.store), 0);
#define BAD_OPT(field, value)                                                  \
    do {                                                                       \
        dlock_client_options d_ = DLOCK_CLIENT_OPTIONS_INIT;                   \
        o = d_;                                                                \
        o.field = value;                                                       \
        EXPECT(dlock_client_new(&c, b, &o), DLOCK_EINVAL);                     \
        assert_null(c);                                                        \
    } while (0)
    BAD_OPT(version, 0);
    BAD_OPT(version, -1);
    BAD_OPT(version, DLOCK_CLIENT_OPTIONS_VERSION + 1); /* newer headers */
    BAD_OPT(watchdog_timeout_ms, 0);
    BAD_OPT(watchdog_timeout_ms, 2);
    BAD_OPT(watchdog_timeout_ms, -30000);
    BAD_OPT(watchdog_timeout_ms, INT64_MIN);
    BAD_OPT(max_hold_ms, -1);
    BAD_OPT(max_hold_ms, INT64_MIN);
    BAD_OPT(fair_wait_slack_ms, 0);
    BAD_OPT(fair_wait_slack_ms, INT64_MIN);
    /* Above DLOCK_TIME_MAX_MS: watchdog leases would leave PEXPIRE's range. */
    BAD_OPT(watchdog_timeout_ms, INT64_MAX);
    BAD_OPT(watchdog_timeout_ms, DLOCK_TIME_MAX_MS + 1);
    BAD_OPT(max_hold_ms, INT64_MAX);
    BAD_OPT(fair_wait_slack_ms, INT64_MAX);
    BAD_OPT(fair_waiter_timeout_ms, -1);
    BAD_OPT(fair_waiter_timeout_ms, INT64_MIN);
    BAD_OPT(fair_waiter_timeout_ms, DLOCK_TIME_MAX_MS + 1);
    BAD_OPT(client_name, "");
    BAD_OPT(client_name, "\xff");
    BAD_OPT(metrics_names_max, -1);
    BAD_OPT(metrics_names_max, INT64_MIN);
    BAD_OPT(metrics_names_max, DLOCK_METRICS_NAMES_MAX + 1);
    BAD_OPT(loop_slice_ms, -1);
    BAD_OPT(loop_slice_ms, DLOCK_TIME_MAX_MS + 1);
#undef BAD_OPT
    /* A backend whose table is of a version this library does not know
     * (built against newer headers): refused, the backend still the
     * caller's and untouched. */
    {
        const dlock_backend_methods *real = b->methods;
        dlock_backend_methods newer = *real;

        newer.version = DLOCK_BACKEND_VERSION + 1;
        b->methods = &newer;
        EXPECT(dlock_client_new(&c, b, NULL), DLOCK_EINVAL);
        assert_null(c);
        newer.version = 0;
        EXPECT(dlock_client_new(&c, b, NULL), DLOCK_EINVAL);
        assert_null(c);
        assert_ptr_equal(b->methods, &newer);
        b->methods = real;
    }
    dlock_backend_free(b);

    EXPECT(dlock_client_connect(NULL, "mock:", NULL, err, sizeof err),
           DLOCK_EINVAL);
    EXPECT(dlock_client_connect(&c, NULL, NULL, err, sizeof err), DLOCK_EINVAL);
    EXPECT(dlock_client_connect(&c, NULL, NULL, NULL, 0), DLOCK_EINVAL);
    for (i = 0; i < sizeof bad_urls / sizeof bad_urls[0]; i++) {
        err[0] = '\0';
        EXPECT(dlock_client_connect(&c, bad_urls[i], NULL, err, sizeof err),
               DLOCK_EINVAL);
        assert_null(c);
        assert_true(err[0] != '\0');
    }
    /* A 1-byte errbuf still gets its NUL. */
    err[0] = 'x';
    EXPECT(dlock_client_connect(&c, "ftp://h", NULL, err, 1), DLOCK_EINVAL);
    assert_int_equal(err[0], '\0');

    EXPECT(dlock_client_owner(NULL, buf, sizeof buf), DLOCK_EINVAL);
    EXPECT(dlock_client_owner(w.c, NULL, sizeof buf), DLOCK_EINVAL);
    EXPECT(dlock_client_owner(w.c, buf, 0), DLOCK_EINVAL);
    EXPECT(dlock_client_owner(w.c, buf, 10), DLOCK_EINVAL);
    EXPECT(dlock_client_owner(w.c, buf, sizeof buf), 0);
    dlock_client_free(NULL);
    world_close(&w);
}

/* ---- lock constructors and the generic lock calls ---------------------- */

/* A lock type whose wait spec, or whose table, is of a version this
 * library does not know (built against newer headers): refused before
 * any attempt runs. */
static int newer_spec_attempts;

static int newer_spec_attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                              int64_t lease_ms, int64_t *retry_ms)
{
    (void)l, (void)op, (void)spec, (void)lease_ms, (void)retry_ms;
    newer_spec_attempts++;
    return 0;
}

static int newer_spec_acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                              int64_t lease_ms)
{
    dlock_wait_spec spec = DLOCK_WAIT_SPEC_INIT;

    spec.attempt = newer_spec_attempt;
    spec.version = DLOCK_WAIT_SPEC_VERSION + 1;
    return dlock_rlock_wait(l, op, &spec, wait_ms, lease_ms);
}

static const dlock_rlock_methods newer_spec_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION, .type = "newer-spec",
    .acquire = newer_spec_acquire};
static const dlock_rlock_methods newer_table_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION + 1, .type = "newer-table",
    .acquire = newer_spec_acquire};

static void test_newer_versions(void **state)
{
    world w;
    dlock_rlock *l = calloc(1, sizeof(*l));
    (void)state;

    assert_non_null(l);
    world_open(&w);
    EXPECT(dlock_rlock_init(l, &newer_table_methods, w.c, "newer"), DLOCK_EINVAL);
    assert_null(l->methods);
    assert_int_equal(dlock_rlock_init(l, &newer_spec_methods, w.c, "newer"), 0);
    EXPECT(dlock_lock(l, 1000), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_errmsg(l), "wait spec of version"));
    EXPECT(dlock_try_lock(l, 0, 1000), DLOCK_EINVAL);
    assert_int_equal(newer_spec_attempts, 0);
    dlock_rlock_free(l);
    world_close(&w);
}

static void test_rlock_names(void **state)
{
    world w;
    dlock_rlock *l = (dlock_rlock *)1;
    char *toolong = long_name(DLOCK_NAME_MAX + 1), *max = long_name(DLOCK_NAME_MAX);
    size_t i, j;
    (void)state;
    world_open(&w);
    for (i = 0; i < NCTORS; i++) {
        EXPECT(ctors[i].make(NULL, w.c, "n"), DLOCK_EINVAL);
        EXPECT(ctors[i].make(&l, NULL, "n"), DLOCK_EINVAL);
        assert_null(l);
        EXPECT(ctors[i].make(&l, w.c, NULL), DLOCK_EINVAL);
        EXPECT(ctors[i].make(&l, w.c, ""), DLOCK_EINVAL);
        EXPECT(ctors[i].make(&l, w.c, toolong), DLOCK_EINVAL);
        assert_null(l);
        /* The longest name, and every odd name, lock and unlock. The
         * semaphore lock needs a permit first. */
        for (j = 0; j <= sizeof odd_names / sizeof odd_names[0]; j++) {
            const char *name = j == 0 ? max : odd_names[j - 1];
            int locked = 0;
            EXPECT(make_lock(w.c, i, name, &l), 0);
            assert_string_equal(dlock_rlock_name(l), name);
            EXPECT(dlock_try_lock(l, 0, 1000), 0);
            EXPECT(dlock_is_locked(l, &locked), 0);
            assert_true(locked);
            EXPECT(dlock_unlock(l), 0);
            EXPECT(dlock_is_locked(l, &locked), 0);
            assert_false(locked);
            dlock_rlock_free(l);
        }
    }
    dlock_rlock_free(NULL);
    free(toolong);
    free(max);
    world_close(&w);
}

static void test_rlock_args(void **state)
{
    world w;
    dlock_rlock *l = NULL;
    char *owner_long = long_name(DLOCK_OWNER_MAX);
    const int64_t bad_times[] = {-1 - 1, -1000, INT64_MIN, INT64_MIN + 1};
    int64_t v;
    int b, existed;
    char *text = NULL;
    json_t *doc = NULL;
    size_t i, k;
    (void)state;
    world_open(&w);
    /* NULL lock: every generic call. */
    EXPECT(dlock_lock(NULL, 0), DLOCK_EINVAL);
    EXPECT(dlock_lock_as(NULL, "o", 0), DLOCK_EINVAL);
    EXPECT(dlock_try_lock(NULL, 0, 0), DLOCK_EINVAL);
    EXPECT(dlock_try_lock_as(NULL, "o", 0, 0), DLOCK_EINVAL);
    EXPECT(dlock_unlock(NULL), DLOCK_EINVAL);
    EXPECT(dlock_unlock_as(NULL, "o"), DLOCK_EINVAL);
    EXPECT(dlock_force_unlock(NULL, &existed), DLOCK_EINVAL);
    EXPECT(dlock_is_locked(NULL, &b), DLOCK_EINVAL);
    EXPECT(dlock_is_held(NULL, &b), DLOCK_EINVAL);
    EXPECT(dlock_is_held_as(NULL, "o", &b), DLOCK_EINVAL);
    EXPECT(dlock_hold_count(NULL, &v), DLOCK_EINVAL);
    EXPECT(dlock_hold_count_as(NULL, "o", &v), DLOCK_EINVAL);
    EXPECT(dlock_remain_ttl(NULL, &v), DLOCK_EINVAL);
    EXPECT(dlock_rlock_check_owner(NULL, "o"), DLOCK_EINVAL);
    EXPECT(dlock_rlock_state(NULL, &doc), DLOCK_EINVAL);
    EXPECT(dlock_rlock_state_text(NULL, &text), DLOCK_EINVAL);
    EXPECT(dlock_fenced_lock(NULL, &v, 0), DLOCK_EINVAL);
    EXPECT(dlock_fenced_token(NULL, &v), DLOCK_EINVAL);
    bad_inputs += 2;
    assert_non_null(dlock_errmsg(NULL));
    assert_null(dlock_rlock_name(NULL));

    for (i = 0; i < NCTORS; i++) {
        assert_int_equal(make_lock(w.c, i, "args", &l), 0);
        /* NULL outs and bad owners. */
        EXPECT(dlock_is_locked(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_is_held(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_hold_count(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_remain_ttl(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_rlock_state(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_rlock_state_text(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_lock_as(l, NULL, 0), DLOCK_EINVAL);
        EXPECT(dlock_lock_as(l, "", 0), DLOCK_EINVAL);
        EXPECT(dlock_lock_as(l, owner_long, 0), DLOCK_EINVAL);
        EXPECT(dlock_try_lock_as(l, NULL, 0, 0), DLOCK_EINVAL);
        EXPECT(dlock_unlock_as(l, ""), DLOCK_EINVAL);
        EXPECT(dlock_is_held_as(l, owner_long, &b), DLOCK_EINVAL);
        EXPECT(dlock_hold_count_as(l, NULL, &v), DLOCK_EINVAL);
        assert_true(strlen(dlock_errmsg(l)) > 0);
        EXPECT(dlock_rlock_check_owner(l, NULL), DLOCK_EINVAL);
        EXPECT(dlock_rlock_check_owner(l, ""), DLOCK_EINVAL);
        EXPECT(dlock_rlock_check_owner(l, owner_long), DLOCK_EINVAL);
        /* Owner ids a layout reserves (the read-write lock's field "mode"
         * and writers' fields "<owner>:write", api/dlock/rwlock.h): refused
         * by both halves with nothing sent; the other types take them. */
        {
            static const char *const reserved[] = {"mode", "w:write", ":write"};
            int rw = strncmp(ctors[i].type, "rwlock", 6) == 0;

            for (k = 0; k < sizeof reserved / sizeof reserved[0]; k++) {
                EXPECT(dlock_rlock_check_owner(l, reserved[k]), rw ? DLOCK_EINVAL : 0);
                EXPECT(dlock_try_lock_as(l, reserved[k], 0, 1000), rw ? DLOCK_EINVAL : 0);
                EXPECT(dlock_is_held_as(l, reserved[k], &b), rw ? DLOCK_EINVAL : 0);
                EXPECT(dlock_unlock_as(l, reserved[k]), rw ? DLOCK_EINVAL : 0);
            }
            EXPECT(dlock_is_locked(l, &b), 0);
            assert_int_equal(b, 0);
        }
        /* Negative and overflowing times. */
        for (k = 0; k < sizeof bad_times / sizeof bad_times[0]; k++) {
            EXPECT(dlock_lock(l, bad_times[k]), DLOCK_EINVAL);
            EXPECT(dlock_try_lock(l, bad_times[k], 1000), DLOCK_EINVAL);
            EXPECT(dlock_try_lock(l, 0, bad_times[k]), DLOCK_EINVAL);
            EXPECT(dlock_try_lock_as(l, "o", bad_times[k], 0), DLOCK_EINVAL);
        }
        /* Leases above DLOCK_TIME_MAX_MS (nothing is written: see
         * tests/conformance/bounds_cases.c). */
        EXPECT(dlock_try_lock(l, 0, INT64_MAX), DLOCK_EINVAL);
        EXPECT(dlock_try_lock(l, 0, DLOCK_TIME_MAX_MS + 1), DLOCK_EINVAL);
        EXPECT(dlock_lock(l, INT64_MAX / 2), DLOCK_EINVAL);
        /* -1 is "forever" inside the library only: never from try_lock. */
        EXPECT(dlock_try_lock(l, -1, 1000), DLOCK_EINVAL);
        /* An endless wait on a free lock returns at once. */
        EXPECT(dlock_try_lock(l, INT64_MAX, 1000), 0);
        EXPECT(dlock_unlock(l), 0);
        /* Unlocking what nobody holds. */
        EXPECT(dlock_unlock(l), DLOCK_ENOTOWNER);
        EXPECT(dlock_unlock_as(l, "nobody:1"), DLOCK_ENOTOWNER);
        EXPECT(dlock_force_unlock(l, NULL), 0);
        dlock_rlock_free(l);
        l = NULL;
    }
    /* The fenced calls refuse other lock types. */
    assert_int_equal(dlock_reentrant_new(&l, w.c, "notfenced"), 0);
    EXPECT(dlock_fenced_lock(l, &v, 1000), DLOCK_EINVAL);
    EXPECT(dlock_fenced_try_lock(l, &v, 0, 1000), DLOCK_EINVAL);
    EXPECT(dlock_fenced_token(l, &v), DLOCK_EINVAL);
    dlock_rlock_free(l);
    assert_int_equal(dlock_fenced_new(&l, w.c, "fenced"), 0);
    EXPECT(dlock_fenced_token(l, &v), DLOCK_ENOTOWNER);
    EXPECT(dlock_fenced_try_lock(l, &v, -5, 1000), DLOCK_EINVAL);
    EXPECT(dlock_fenced_lock_as(l, &v, "", 1000), DLOCK_EINVAL);
    EXPECT(dlock_fenced_try_lock_as(l, &v, "o", 0, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_fenced_token_as(l, &v, NULL), DLOCK_EINVAL);
    dlock_rlock_free(l);
    free(owner_long);
    world_close(&w);
}

/* ---- semaphores, latch, bucket ----------------------------------------- */

static void test_semaphore_args(void **state)
{
    world w;
    dlock_semaphore *s = (dlock_semaphore *)1;
    const int64_t neg[] = {-1, INT64_MIN, -DLOCK_PERMITS_MAX};
    const int64_t huge[] = {DLOCK_PERMITS_MAX + 1, INT64_MAX};
    int64_t v;
    int o;
    size_t k;
    char *toolong = long_name(DLOCK_NAME_MAX + 1);
    (void)state;
    world_open(&w);
    EXPECT(dlock_semaphore_new(NULL, w.c, "s"), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_new(&s, NULL, "s"), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_new(&s, w.c, NULL), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_new(&s, w.c, ""), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_new(&s, w.c, toolong), DLOCK_EINVAL);
    assert_null(s);
    EXPECT(dlock_semaphore_try_set_permits(NULL, &o, 1), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_acquire(NULL, 1), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_try_acquire(NULL, 1, 0), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_release(NULL, 1), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_release_if_exists(NULL, &o, 1), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_add_permits(NULL, 1), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_drain_permits(NULL, &v), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_available_permits(NULL, &v), DLOCK_EINVAL);
    bad_inputs += 2;
    assert_null(dlock_semaphore_name(NULL));
    assert_non_null(dlock_semaphore_errmsg(NULL));
    dlock_semaphore_free(NULL);

    assert_int_equal(dlock_semaphore_new(&s, w.c, "sem"), 0);
    for (k = 0; k < sizeof neg / sizeof neg[0]; k++) {
        EXPECT(dlock_semaphore_try_set_permits(s, &o, neg[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_try_set_permits_ttl(s, &o, 1, neg[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_acquire(s, neg[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_try_acquire(s, neg[k], 0), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_try_acquire(s, 1, neg[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_release(s, neg[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_release_if_exists(s, &o, neg[k]), DLOCK_EINVAL);
    }
    for (k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        EXPECT(dlock_semaphore_try_set_permits(s, &o, huge[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_release(s, huge[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_add_permits(s, huge[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_add_permits(s, -huge[k]), DLOCK_EINVAL);
        EXPECT(dlock_semaphore_try_acquire(s, huge[k], 0), DLOCK_EINVAL);
    }
    EXPECT(dlock_semaphore_add_permits(s, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_try_set_permits_ttl(s, &o, 1, 0), DLOCK_EINVAL);
    EXPECT(dlock_semaphore_try_set_permits_ttl(s, &o, 1, INT64_MAX), DLOCK_EINVAL);
    /* Zero permits: nothing to do, no round trip. */
    EXPECT(dlock_semaphore_acquire(s, 0), 0);
    EXPECT(dlock_semaphore_try_acquire(s, 0, 0), 0);
    EXPECT(dlock_semaphore_release(s, 0), 0);
    /* The stored count never leaves the documented range. */
    EXPECT(dlock_semaphore_add_permits(s, DLOCK_PERMITS_MAX), 0);
    EXPECT(dlock_semaphore_add_permits(s, 1), DLOCK_EPROTO);
    EXPECT(dlock_semaphore_available_permits(s, &v), 0);
    assert_true(v == DLOCK_PERMITS_MAX);
    EXPECT(dlock_semaphore_try_acquire(s, 2, 0), 0);
    EXPECT(dlock_semaphore_drain_permits(s, NULL), 0);
    dlock_semaphore_free(s);
    free(toolong);
    world_close(&w);
}

static void test_permit_semaphore_args(void **state)
{
    world w;
    dlock_permit_semaphore *p = (dlock_permit_semaphore *)1;
    char **ids = (char **)1;
    const char *bad_ids[] = {"", "x", "0123456789abcdef0123456789ABCDEF",
                             "0123456789abcdef0123456789abcde",
                             "0123456789abcdef0123456789abcdef0",
                             "0123456789abcdef0123456789abcdeg",
                             "0123456789abcdef\n123456789abcdef"};
    const char *dup[2] = {"0123456789abcdef0123456789abcdef",
                          "0123456789abcdef0123456789abcdef"};
    int64_t v;
    size_t n, k;
    int o;
    (void)state;
    world_open(&w);
    EXPECT(dlock_permit_semaphore_new(NULL, w.c, "p"), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_new(&p, NULL, "p"), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_new(&p, w.c, ""), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_new(&p, w.c, NULL), DLOCK_EINVAL);
    assert_null(p);
    EXPECT(dlock_permit_semaphore_acquire(NULL, &ids, 1, 1000), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_release(NULL, dup[0]), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_available_permits(NULL, &v), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_set_permits(NULL, 1), DLOCK_EINVAL);
    bad_inputs += 2;
    assert_null(dlock_permit_semaphore_name(NULL));
    assert_non_null(dlock_permit_semaphore_errmsg(NULL));
    dlock_permit_semaphore_free(NULL);
    dlock_permit_ids_free(NULL);

    assert_int_equal(dlock_permit_semaphore_new(&p, w.c, "psem"), 0);
    assert_int_equal(dlock_permit_semaphore_try_set_permits(p, &o, 2), 0);
    EXPECT(dlock_permit_semaphore_acquire(p, NULL, 1, 1000), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, -1, 1000), DLOCK_EINVAL);
    assert_null(ids);
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, DLOCK_PERMITS_PER_CALL + 1,
                                          1000), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, 1, 0), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, 1, -2), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, 1, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_try_acquire(p, &ids, 1, -1, 1000), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_try_acquire(p, &ids, INT64_MIN, 0, 1000),
           DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_release(p, NULL), DLOCK_EINVAL);
    for (k = 0; k < sizeof bad_ids / sizeof bad_ids[0]; k++) {
        EXPECT(dlock_permit_semaphore_release(p, bad_ids[k]), DLOCK_EINVAL);
        EXPECT(dlock_permit_semaphore_try_release(p, &o, bad_ids[k]), DLOCK_EINVAL);
        EXPECT(dlock_permit_semaphore_update_lease(p, bad_ids[k], 1000),
               DLOCK_EINVAL);
        EXPECT(dlock_permit_semaphore_lease_of(p, &v, bad_ids[k]), DLOCK_EINVAL);
    }
    EXPECT(dlock_permit_semaphore_release_all(p, &n, dup, 2), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_release_all(p, &n, NULL, 1), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_release_all(p, &n, dup,
                                              DLOCK_PERMITS_PER_CALL + 1),
           DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_release_all(p, &n, NULL, 0), 0);
    EXPECT(dlock_permit_semaphore_try_release_all(p, &o, dup, 2), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_release(p, dup[0]), DLOCK_ENOTOWNER);
    EXPECT(dlock_permit_semaphore_update_lease(p, dup[0], 0), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_update_lease(p, dup[0], INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_update_lease(p, dup[0], INT64_MAX), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, 1, INT64_MAX), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_set_permits(p, -1), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_set_permits(p, INT64_MAX), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_try_set_permits(p, &o, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_add_permits(p, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_available_permits(p, NULL), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_acquired_permits(p, NULL), DLOCK_EINVAL);
    EXPECT(dlock_permit_semaphore_total_permits(p, NULL), DLOCK_EINVAL);
    /* Zero permits: an empty array, at once. */
    EXPECT(dlock_permit_semaphore_acquire(p, &ids, 0, 1000), 0);
    assert_non_null(ids);
    assert_null(ids[0]);
    dlock_permit_ids_free(ids);
    dlock_permit_semaphore_free(p);
    world_close(&w);
}

static void test_latch_args(void **state)
{
    world w;
    dlock_latch *l = (dlock_latch *)1;
    int64_t v;
    int o;
    (void)state;
    world_open(&w);
    EXPECT(dlock_latch_new(NULL, w.c, "l"), DLOCK_EINVAL);
    EXPECT(dlock_latch_new(&l, NULL, "l"), DLOCK_EINVAL);
    EXPECT(dlock_latch_new(&l, w.c, ""), DLOCK_EINVAL);
    EXPECT(dlock_latch_new(&l, w.c, NULL), DLOCK_EINVAL);
    assert_null(l);
    EXPECT(dlock_latch_try_set_count(NULL, &o, 1), DLOCK_EINVAL);
    EXPECT(dlock_latch_count_down(NULL), DLOCK_EINVAL);
    EXPECT(dlock_latch_count(NULL, &v), DLOCK_EINVAL);
    EXPECT(dlock_latch_await(NULL), DLOCK_EINVAL);
    EXPECT(dlock_latch_await_for(NULL, 0), DLOCK_EINVAL);
    EXPECT(dlock_latch_delete(NULL, &o), DLOCK_EINVAL);
    bad_inputs += 2;
    assert_null(dlock_latch_name(NULL));
    assert_non_null(dlock_latch_errmsg(NULL));
    dlock_latch_free(NULL);
    assert_int_equal(dlock_latch_new(&l, w.c, "latch"), 0);
    EXPECT(dlock_latch_try_set_count(l, &o, 0), DLOCK_EINVAL);
    EXPECT(dlock_latch_try_set_count(l, &o, -1), DLOCK_EINVAL);
    EXPECT(dlock_latch_try_set_count(l, &o, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_latch_try_set_count(l, &o, INT64_MAX), DLOCK_EINVAL);
    EXPECT(dlock_latch_await_for(l, -1), DLOCK_EINVAL);
    EXPECT(dlock_latch_await_for(l, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_latch_count(l, NULL), DLOCK_EINVAL);
    /* An open latch: counting down does nothing, awaiting returns. */
    EXPECT(dlock_latch_count_down(l), 0);
    EXPECT(dlock_latch_await_for(l, INT64_MAX), 0);
    EXPECT(dlock_latch_delete(l, NULL), 0);
    dlock_latch_free(l);
    world_close(&w);
}

static void test_bucket_and_codecs(void **state)
{
    world w;
    dlock_bucket *b = (dlock_bucket *)1;
    dlock_guard g = DLOCK_GUARD_INIT;
    dlock_rlock *lock = NULL;
    const dlock_codec *codecs[4];
    void *val = (void *)1;
    char *enc = (char *)1;
    size_t len, i;
    int64_t v;
    int o;
    (void)state;
    world_open(&w);
    codecs[0] = dlock_codec_string();
    codecs[1] = dlock_codec_bytes();
    codecs[2] = dlock_codec_long();
    codecs[3] = dlock_codec_json();
    EXPECT(dlock_bucket_new(NULL, w.c, "b", codecs[0]), DLOCK_EINVAL);
    EXPECT(dlock_bucket_new(&b, NULL, "b", codecs[0]), DLOCK_EINVAL);
    EXPECT(dlock_bucket_new(&b, w.c, "", codecs[0]), DLOCK_EINVAL);
    EXPECT(dlock_bucket_new(&b, w.c, "b", NULL), DLOCK_EINVAL);
    assert_null(b);
    EXPECT(dlock_bucket_get(NULL, &val), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set(NULL, "x", 0), DLOCK_EINVAL);
    EXPECT(dlock_bucket_delete(NULL, &o), DLOCK_EINVAL);
    EXPECT(dlock_bucket_remain_ttl(NULL, &v), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set_guarded(NULL, &g, "x", 0), DLOCK_EINVAL);
    bad_inputs += 3;
    assert_null(dlock_bucket_name(NULL));
    assert_null(dlock_bucket_codec(NULL));
    assert_non_null(dlock_bucket_errmsg(NULL));
    dlock_bucket_free(NULL);

    assert_int_equal(dlock_bucket_new(&b, w.c, "bucket", codecs[0]), 0);
    EXPECT(dlock_bucket_set(b, NULL, 0), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set(b, "x", -1), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set(b, "x", INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set(b, "\xff\xfe", 0), DLOCK_EINVAL); /* not UTF-8 */
    EXPECT(dlock_bucket_set_if_absent(b, &o, NULL, 0), DLOCK_EINVAL);
    EXPECT(dlock_bucket_get(b, NULL), DLOCK_EINVAL);
    EXPECT(dlock_bucket_remain_ttl(b, NULL), DLOCK_EINVAL);
    EXPECT(dlock_bucket_compare_and_set(b, &o, NULL, "x", -5), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set_guarded(b, NULL, "x", 0), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL); /* no lock */
    assert_int_equal(dlock_reentrant_new(&lock, w.c, "guard"), 0);
    g.lock = lock;
    g.token = -1;
    EXPECT(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL);
    g.token = 5; /* a token for a lock that is not fenced */
    EXPECT(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL);
    g.token = 0;
    EXPECT(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_ENOTOWNER);
    g.version = 0;
    EXPECT(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL);
    dlock_rlock_free(lock);
    /* A huge TTL: above DLOCK_TIME_MAX_MS, refused before anything is sent. */
    EXPECT(dlock_bucket_set(b, "x", INT64_MAX), DLOCK_EINVAL);
    EXPECT(dlock_bucket_set(b, "x", DLOCK_TIME_MAX_MS + 1), DLOCK_EINVAL);
    dlock_bucket_free(b);

    /* Codecs: NULL everything, and bytes that do not decode. */
    EXPECT(dlock_codec_encode(NULL, &enc, &len, "x", NULL, 0), DLOCK_EINVAL);
    assert_null(enc);
    EXPECT(dlock_codec_decode(NULL, &val, "x", 1, NULL, 0), DLOCK_EINVAL);
    assert_null(val);
    bad_inputs++;
    assert_null(dlock_codec_name(NULL));
    dlock_codec_value_free(NULL, NULL);
    for (i = 0; i < 4; i++) {
        char err[128];
        EXPECT(dlock_codec_encode(codecs[i], NULL, &len, "x", err, sizeof err),
               DLOCK_EINVAL);
        EXPECT(dlock_codec_encode(codecs[i], &enc, &len, NULL, err, sizeof err),
               DLOCK_EINVAL);
        EXPECT(dlock_codec_decode(codecs[i], NULL, "x", 1, err, sizeof err),
               DLOCK_EINVAL);
        EXPECT(dlock_codec_decode(codecs[i], &val, NULL, 3, err, sizeof err),
               DLOCK_EINVAL);
        dlock_codec_value_free(codecs[i], NULL);
    }
    EXPECT(dlock_codec_decode(codecs[0], &val, "\xff", 1, NULL, 0), DLOCK_EPROTO);
    EXPECT(dlock_codec_decode(codecs[0], &val, "a\0b", 3, NULL, 0), DLOCK_EPROTO);
    EXPECT(dlock_codec_decode(codecs[2], &val, "", 0, NULL, 0), DLOCK_EPROTO);
    EXPECT(dlock_codec_decode(codecs[2], &val, "9223372036854775808", 19, NULL, 0),
           DLOCK_EPROTO);
    EXPECT(dlock_codec_decode(codecs[2], &val, " 1", 2, NULL, 0), DLOCK_EPROTO);
    EXPECT(dlock_codec_decode(codecs[3], &val, "{", 1, NULL, 0), DLOCK_EPROTO);
    EXPECT(dlock_codec_decode(codecs[3], &val, "", 0, NULL, 0), DLOCK_EPROTO);
    world_close(&w);
}

/* ---- the configuration --------------------------------------------------- */

static void test_config(void **state)
{
    const char *bad[] = {
        "", "{", "[]", "null", "1", "{}", "{\"url\": 5}", "{\"url\": null}",
        "{\"url\": \"ftp://h\"}", "{\"url\": \"\"}",
        "{\"url\": \"mock:\", \"nosuch\": 1}",
        "{\"url\": \"mock:\", \"pool_size\": 0}",
        "{\"url\": \"mock:\", \"pool_size\": 4097}",
        "{\"url\": \"mock:\", \"pool_size\": \"8\"}",
        "{\"url\": \"mock:\", \"pool_size\": 1.5}",
        "{\"url\": \"mock:\", \"connect_timeout_ms\": -1}",
        "{\"url\": \"mock:\", \"watchdog_timeout_ms\": 2}",
        "{\"url\": \"mock:\", \"watchdog_timeout_ms\": -9223372036854775808}",
        "{\"url\": \"mock:\", \"max_hold_ms\": 99999999999999999999999}",
        "{\"url\": \"mock:\", \"fair_wait_slack_ms\": 0}",
        "{\"url\": \"mock:\", \"fair_waiter_timeout_ms\": -1}",
        "{\"url\": \"mock:\", \"fair_waiter_timeout_ms\": 1000000000001}",
        "{\"url\": \"mock:\", \"client_name\": \"\"}",
        "{\"url\": \"mock:\", \"client_name\": 5}",
        "{\"url\": \"mock:\", \"metrics_names_max\": -1}",
        "{\"url\": \"mock:\", \"metrics_names_max\": 10001}",
        "{\"url\": \"mock:\", \"watchdog_timeout_ms\": 9223372036854775807}",
        "{\"url\": \"mock:\", \"max_hold_ms\": 1000000000001}",
        "{\"url\": \"mock:\", \"command_timeout_ms\": 9223372036854775807}",
        /* (with "mock:" the Redis-only fields are checked one by one, the
         * pair not: a redis:// URL is checked before connecting) */
        "{\"url\": \"redis://127.0.0.1:1\", \"reconnect_min_ms\": 10, "
        "\"reconnect_max_ms\": 5}",
        "{\"url\": \"mock:\", \"url\": \"mock:\"}",
        "{\"url\": \"mock:\"} trailing",
        "{\"url\": \"mock:\xff\"}",
        "\xef\xbb\xbf{\"url\": \"mock:\"",
    };
    dlock_client *c = (dlock_client *)1;
    char err[256];
    size_t i;
    (void)state;
    EXPECT(dlock_client_from_json_string(NULL, "{\"url\": \"mock:\"}", err,
                                         sizeof err), DLOCK_EINVAL);
    EXPECT(dlock_client_from_json_string(&c, NULL, err, sizeof err),
           DLOCK_EINVAL);
    assert_null(c);
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        if (dlock_client_from_json_string(&c, bad[i], err, sizeof err) == 0)
            fprintf(stderr, "accepted configuration: %s\n", bad[i]);
        EXPECT(dlock_client_from_json_string(&c, bad[i], err, sizeof err),
               DLOCK_EINVAL);
        assert_null(c);
        assert_true(err[0] != '\0');
    }
    EXPECT(dlock_client_from_json_file(&c, NULL, err, sizeof err), DLOCK_EINVAL);
    EXPECT(dlock_client_from_json_file(&c, "/nonexistent/dlock.json", err,
                                       sizeof err), DLOCK_EINVAL);
    EXPECT(dlock_client_from_json_file(&c, "/", err, sizeof err), DLOCK_EINVAL);
    EXPECT(dlock_client_from_json_file(&c, "", NULL, 0), DLOCK_EINVAL);
    EXPECT(dlock_client_from_json_string(&c, "{\"url\": \"mock:\"}", NULL, 0), 0);
    dlock_client_free(c);
}

/* ---- no secret in an error message --------------------------------------- */

/* A secret: two pieces around one byte that may move a URL's or a JSON
 * text's parts ('@' ends a user information, '&' a query value, '"' a JSON
 * string...), or a control character. Any 4 bytes in a row of the secret
 * in a detail are a leak; neither piece is a word a message could hold by
 * chance. */
#define PIECE_A "Qz7xKv3Wj"
#define PIECE_B "Tq5Lm2Pn"

static const char odd_bytes[] = "@/?#&%:=\"\\ ,;[]{}\t\n\r\x01\x1b\x7f\xff";

/* Whether msg holds 4 bytes in a row of secret. */
static int holds_piece(const char *msg, const char *secret)
{
    size_t i, n = strlen(secret), m = strlen(msg);

    for (i = 0; i + 4 <= n; i++)
        if (memmem(msg, m, secret + i, 4))
            return 1;
    return 0;
}

/* A failure whose detail is there, holds no piece of secret, and holds
 * want1 and want2 (when given): what is wrong, and where. */
static void expect_hidden(const char *input, int rc, const char *err,
                          const char *secret, const char *want1, const char *want2)
{
    bad_inputs++;
    if (rc == 0 || err[0] == '\0' || holds_piece(err, secret) ||
        (want1 && !strstr(err, want1)) || (want2 && !strstr(err, want2)))
        fprintf(stderr, "input '%s': %s, detail '%s' (secret '%s'; wanted '%s' and '%s')\n",
                input, dlock_errname(rc), err, secret, want1 ? want1 : "",
                want2 ? want2 : "");
    assert_int_not_equal(rc, 0);
    assert_true(err[0] != '\0');
    assert_false(holds_piece(err, secret));
    if (want1)
        assert_non_null(strstr(err, want1));
    if (want2)
        assert_non_null(strstr(err, want2));
}

static int url_try(const char *url, char *err, size_t errlen)
{
    dlock_client *c = NULL;
    int rc;

    err[0] = '\0';
    rc = dlock_client_connect(&c, url, NULL, err, errlen);
    dlock_client_free(c);
    return rc;
}

/* Through the client-set call, which takes "url" and "urls" alike. */
static int config_try(const char *json, char *err, size_t errlen)
{
    dlock_client *cs[4] = {NULL};
    size_t i, n = 0;
    int rc;

    err[0] = '\0';
    rc = dlock_client_set_from_json_string(cs, 4, &n, json, err, errlen);
    for (i = 0; i < n; i++)
        dlock_client_free(cs[i]);
    return rc;
}

/* s as the inside of a JSON string: '"', '\' and control bytes escaped. */
static void json_escape(char *out, size_t len, const char *s)
{
    size_t j = 0;

    for (; *s && j + 7 < len; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            j += (size_t)snprintf(out + j, len - j, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            j += (size_t)snprintf(out + j, len - j, "\\u%04x", ch);
        else
            out[j++] = (char)ch;
    }
    out[j] = '\0';
}

/* Each form (a format with one %s) with the secret PIECE_A, an odd byte,
 * PIECE_B in it, raw and (escape given) escaped, through try: each a
 * failure whose detail quotes none of the secret. */
static void each_odd_byte(const char *const *forms, size_t nforms,
                          int (*try)(const char *, char *, size_t),
                          void (*escape)(char *, size_t, const char *))
{
    char secret[64], esc[128], input[512], err[256];
    size_t i, k;

    for (i = 0; i < nforms; i++) {
        for (k = 0; k < sizeof odd_bytes - 1; k++) {
            snprintf(secret, sizeof secret, PIECE_A "%c" PIECE_B, odd_bytes[k]);
            snprintf(input, sizeof input, forms[i], secret);
            expect_hidden(input, try(input, err, sizeof err), err, secret, NULL, NULL);
            if (!escape)
                continue;
            escape(esc, sizeof esc, secret);
            snprintf(input, sizeof input, forms[i], esc);
            expect_hidden(input, try(input, err, sizeof err), err, secret, NULL, NULL);
        }
    }
}

/* Every place of a URL that holds a secret (the user information, the
 * sentinels' password; a "password" or "key" parameter, which is not one
 * but says what its value is), with every odd byte in the secret: the
 * URL is refused, or names 127.0.0.1:1 where nothing listens (or a socket
 * that is not there), and the detail quotes none of the secret. */
static void test_url_secrets_hidden(void **state)
{
    static const char *const forms[] = {
        "redis://:%s@127.0.0.1:1",
        "redis://alice:%s@127.0.0.1:1/0?multiplex=1",
        "rediss://:%s@127.0.0.1:1?insecure=1",
        "unix://:%s@/nonexistent/dlock.sock",
        "unix:///nonexistent/dlock.sock?db=0&password=%s",
        "redis://127.0.0.1:1?password=%s",
        "redis://127.0.0.1:1?multiplex=1&key=%s",
        "redis-sentinel://:%s@127.0.0.1:1?sentinelMasterId=m",
        "redis-sentinel://127.0.0.1:1?sentinelMasterId=m&sentinel_password=%s",
        "redis-sentinel://127.0.0.1:1?sentinel_password=%s&sentinelMasterId=m",
        "redis-sentinel://127.0.0.1:1,127.0.0.1:2?sentinelMasterId=m&sentinel_user=u"
        "&sentinel_password=%s&multiplex=0",
        "redis-cluster://:%s@127.0.0.1:1,127.0.0.1:2",
        "rediss-cluster://u:%s@127.0.0.1:1?insecure=1",
    };
    char url[512], err[256];
    (void)state;
    each_odd_byte(forms, sizeof forms / sizeof forms[0], url_try, NULL);
    /* The issue's: a raw '&' in the sentinels' password. The detail still
     * says what is wrong. */
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:1?sentinelMasterId=m"
             "&sentinel_password=dor3&horse");
    expect_hidden(url, url_try(url, err, sizeof err), err, "dor3&horse", "has no value",
                  NULL);
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:1?sentinelMasterId=m"
             "&sentinel_password=" PIECE_A "&" PIECE_B "=1");
    expect_hidden(url, url_try(url, err, sizeof err), err, PIECE_A "&" PIECE_B,
                  "unknown parameter", NULL);
    /* A raw '@' and ':' in a query value would make the rest the host:
     * refused, saying why. */
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:1?sentinelMasterId=m"
             "&sentinel_password=" PIECE_A ":x@" PIECE_B "?sentinelMasterId=m");
    expect_hidden(url, url_try(url, err, sizeof err), err, PIECE_A ":x@" PIECE_B,
                  "%40", NULL);
    snprintf(url, sizeof url, "redis://127.0.0.1:1?password=" PIECE_A ":x@" PIECE_B);
    expect_hidden(url, url_try(url, err, sizeof err), err, PIECE_A ":x@" PIECE_B, "%40",
                  NULL);
    /* The user information is never quoted, however odd the rest. */
    snprintf(url, sizeof url, "redis://" PIECE_A ":" PIECE_B "@bad host");
    expect_hidden(url, url_try(url, err, sizeof err), err, PIECE_A ":" PIECE_B,
                  "bad host", NULL);
    snprintf(url, sizeof url, "unix:///tmp/s?x:" PIECE_A "@" PIECE_B "=1");
    expect_hidden(url, url_try(url, err, sizeof err), err, PIECE_A "@" PIECE_B,
                  "unknown parameter", NULL);
    /* A password whose '@' was left out is then the port. */
    snprintf(url, sizeof url, "redis://default:" PIECE_A PIECE_B);
    expect_hidden(url, url_try(url, err, sizeof err), err, PIECE_A PIECE_B, "bad port",
                  NULL);
}

/* The same in a JSON configuration, raw (the text is then often not JSON:
 * a syntax error at a line and column) and escaped. */
static void test_config_secrets_hidden(void **state)
{
    static const char *const forms[] = {
        "{\"url\": \"redis://:%s@127.0.0.1:1\"}",
        "{\"url\": \"redis-sentinel://127.0.0.1:1?sentinelMasterId=m&sentinel_password=%s\"}",
        "{\"url\": \"redis-sentinel://127.0.0.1:1?sentinelMasterId=m\",\n"
        " \"sentinel_password\": \"%s\"}",
        "{\"sentinel_password\": \"%s\",\n"
        " \"url\": \"redis-sentinel://127.0.0.1:1?sentinelMasterId=m\"}",
        /* eager: a set is lazy by default, and then nothing fails */
        "{\"urls\": [\"mock:\", \"redis://u:%s@127.0.0.1:1/0\"], \"lazy_connect\": false}",
        "{\"url\": \"mock:\", \"pool_size\": \"%s\"}",
    };
    /* How the secret ends a broken text: an escape that is not one, a bad
     * \u, a byte that is not UTF-8, a quote and more, the end. */
    static const char *const breaks[] = {"\\q", "\\u12G4", "\xff", "\"x", "\"\"", ""};
    char secret[64], json[512], err[256];
    size_t i, k;
    (void)state;
    each_odd_byte(forms, sizeof forms / sizeof forms[0], config_try, json_escape);
    for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        for (k = 0; k < sizeof breaks / sizeof breaks[0]; k++) {
            snprintf(secret, sizeof secret, PIECE_A "%s" PIECE_B, breaks[k]);
            snprintf(json, sizeof json, forms[i], secret);
            expect_hidden(json, config_try(json, err, sizeof err), err, secret, "json:",
                          NULL);
        }
        /* cut short inside the secret */
        snprintf(json, sizeof json, forms[i], PIECE_A PIECE_B);
        json[strstr(json, PIECE_B) - json] = '\0';
        expect_hidden(json, config_try(json, err, sizeof err), err, PIECE_A PIECE_B,
                      "json:", "end of input");
    }
    /* The issue's: a broken escape in the url, a tab in sentinel_password.
     * The detail says what and where. */
    expect_hidden("url \\q", config_try("{\"url\": \"redis://:hunter2\\q@h\"}", err,
                                        sizeof err),
                  err, "hunter2\\q", "json:1:", "invalid escape");
    expect_hidden("sentinel_password tab",
                  config_try("{\"url\": \"redis-sentinel://h?sentinelMasterId=m\",\n"
                             " \"sentinel_password\": \"hunter2\tx\"}",
                             err, sizeof err),
                  err, "hunter2\tx", "json:2:", "control character");
    expect_hidden("after a quote",
                  config_try("{\"sentinel_password\": \"" PIECE_A "\"" PIECE_B "\"}", err,
                             sizeof err),
                  err, PIECE_A PIECE_B, "json:1:", NULL);
    /* A quote, a comma and a quote in a secret make a field of its rest:
     * not quoted either, but told (and the nearest field suggested). */
    expect_hidden("a field from a secret",
                  config_try("{\"url\": \"mock:\",\n \"sentinel_password\": \"" PIECE_A
                             "\", \"" PIECE_B "\": \"x\"}",
                             err, sizeof err),
                  err, PIECE_B, "json:2:", "unknown field");
    /* (the suggestion shares "pool" with the name, not "sise") */
    expect_hidden("a misspelt field",
                  config_try("{\"url\": \"mock:\", \"pool_sise\": 4}", err, sizeof err),
                  err, "_sise", "unknown field", "did you mean \"pool_size\"");
    expect_hidden("a number from a secret",
                  config_try("{\"url\": \"mock:\", \"pool_size\": 48151623}", err,
                             sizeof err),
                  err, "48151623", "\"pool_size\"", "out of range");
    expect_hidden("a field twice",
                  config_try("{\"url\": \"mock:\", \"url\": \"mock:\"}", err, sizeof err),
                  err, "mock:", "json:1:", "\"url\" given twice");
}

/* ---- the mock's own API -------------------------------------------------- */

static void test_mock_args(void **state)
{
    dlock_vclock *clk = (dlock_vclock *)1;
    dlock_mock_store *st = (dlock_mock_store *)1;
    dlock_backend *b = (dlock_backend *)1;
    dlock_reply *r = (dlock_reply *)1;
    const char *argv[2] = {"GET", NULL};
    (void)state;
    EXPECT(dlock_vclock_new(NULL, 0), DLOCK_EINVAL);
    EXPECT(dlock_vclock_new(&clk, -1), DLOCK_EINVAL);
    EXPECT(dlock_vclock_new(&clk, INT64_MIN), DLOCK_EINVAL);
    EXPECT(dlock_vclock_new(&clk, INT64_MAX / 2), 0);
    EXPECT(dlock_vclock_advance(clk, -1), DLOCK_EINVAL);
    EXPECT(dlock_vclock_advance(clk, INT64_MIN), DLOCK_EINVAL);
    /* Past the end of time: saturates or refuses, never wraps. */
    dlock_vclock_advance(clk, INT64_MAX);
    bad_inputs++;
    assert_true(dlock_vclock_now(clk) >= INT64_MAX / 2);
    /* Regression (UBSan): the wall clock saturates instead of wrapping. */
    assert_true(dlock_clock_wall(dlock_vclock_clock(clk)) >=
                dlock_vclock_now(clk));
    EXPECT(dlock_vclock_wait_sleepers(clk, 1, 0), DLOCK_ETIMEDOUT);
    EXPECT(dlock_mock_store_new(NULL, NULL), DLOCK_EINVAL);
    EXPECT(dlock_mock_store_new(&st, dlock_vclock_clock(clk)), 0);
    EXPECT(dlock_mock_store_command(NULL, &r, 1, argv, NULL), DLOCK_EINVAL);
    EXPECT(dlock_mock_store_command(st, NULL, 1, argv, NULL), DLOCK_EINVAL);
    EXPECT(dlock_mock_store_command(st, &r, 0, argv, NULL), DLOCK_EINVAL);
    EXPECT(dlock_mock_store_command(st, &r, -1, argv, NULL), DLOCK_EINVAL);
    EXPECT(dlock_mock_store_command(st, &r, 1, NULL, NULL), DLOCK_EINVAL);
    EXPECT(dlock_mock_store_command(st, &r, 2, argv, NULL), DLOCK_EINVAL);
    /* The arity error is a reply, not a failure. */
    EXPECT(dlock_mock_store_command(st, &r, 1, argv, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    dlock_reply_free(r);
    dlock_reply_free(NULL);
    EXPECT(dlock_mock_backend_new(NULL, st), DLOCK_EINVAL);
    EXPECT(dlock_mock_backend_new(&b, NULL), DLOCK_EINVAL);
    assert_null(b);
    dlock_mock_store_free(st);
    dlock_mock_store_free(NULL);
    dlock_vclock_free(clk);
    dlock_vclock_free(NULL);
    dlock_backend_free(NULL);
}

/* ---- a wrong-type key under each object's name --------------------------- */

static void put_list(dlock_mock_store *st, const char *key)
{
    const char *argv[3] = {"RPUSH", key, "intruder"};
    dlock_reply *r = NULL;
    assert_int_equal(dlock_mock_store_command(st, &r, 3, argv, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    dlock_reply_free(r);
}

static void put_string(dlock_mock_store *st, const char *key, const char *v)
{
    const char *argv[3] = {"SET", key, v};
    dlock_reply *r = NULL;
    assert_int_equal(dlock_mock_store_command(st, &r, 3, argv, NULL), 0);
    dlock_reply_free(r);
}

static void test_wrong_type(void **state)
{
    world w;
    dlock_rlock *l = NULL;
    dlock_semaphore *s = NULL;
    dlock_permit_semaphore *p = NULL;
    dlock_latch *la = NULL;
    dlock_bucket *b = NULL;
    char **ids = NULL;
    void *val = NULL;
    int64_t v = 7; /* also the value the bucket tries to write */
    int o;
    size_t i;
    (void)state;
    world_open(&w);
    put_list(w.store, "wt");
    for (i = 0; i < NCTORS; i++) {
        assert_int_equal(ctors[i].make(&l, w.c, "wt"), 0);
        EXPECT(dlock_try_lock(l, 0, 1000), DLOCK_EPROTO);
        assert_non_null(strstr(dlock_errmsg(l), "WRONGTYPE"));
        EXPECT(dlock_is_locked(l, &o), DLOCK_EPROTO);
        EXPECT(dlock_unlock(l), DLOCK_EPROTO);
        EXPECT(dlock_remain_ttl(l, &v), DLOCK_EPROTO);
        dlock_rlock_free(l);
    }
    assert_int_equal(dlock_semaphore_new(&s, w.c, "wt"), 0);
    EXPECT(dlock_semaphore_try_acquire(s, 1, 0), DLOCK_EPROTO);
    EXPECT(dlock_semaphore_release(s, 1), DLOCK_EPROTO);
    EXPECT(dlock_semaphore_available_permits(s, &v), DLOCK_EPROTO);
    dlock_semaphore_free(s);
    assert_int_equal(dlock_permit_semaphore_new(&p, w.c, "wt"), 0);
    EXPECT(dlock_permit_semaphore_try_acquire(p, &ids, 1, 0, 1000), DLOCK_EPROTO);
    EXPECT(dlock_permit_semaphore_available_permits(p, &v), DLOCK_EPROTO);
    dlock_permit_semaphore_free(p);
    assert_int_equal(dlock_latch_new(&la, w.c, "wt"), 0);
    EXPECT(dlock_latch_count_down(la), DLOCK_EPROTO);
    EXPECT(dlock_latch_count(la, &v), DLOCK_EPROTO);
    EXPECT(dlock_latch_try_set_count(la, &o, 2), DLOCK_EPROTO);
    dlock_latch_free(la);
    assert_int_equal(dlock_bucket_new(&b, w.c, "wt", dlock_codec_long()), 0);
    EXPECT(dlock_bucket_get(b, &val), DLOCK_EPROTO);
    EXPECT(dlock_bucket_set(b, &v, 0), DLOCK_EPROTO);
    dlock_bucket_free(b);

    /* A string that is not a count where a count belongs. */
    put_string(w.store, "notanumber", "abc");
    assert_int_equal(dlock_semaphore_new(&s, w.c, "notanumber"), 0);
    EXPECT(dlock_semaphore_release(s, 1), DLOCK_EPROTO);
    dlock_semaphore_free(s);
    assert_int_equal(dlock_latch_new(&la, w.c, "notanumber"), 0);
    EXPECT(dlock_latch_count_down(la), DLOCK_EPROTO);
    dlock_latch_free(la);
    /* Bytes the codec cannot decode. */
    assert_int_equal(dlock_bucket_new(&b, w.c, "notanumber", dlock_codec_json()),
                     0);
    EXPECT(dlock_bucket_get(b, &val), DLOCK_EPROTO);
    assert_null(val);
    dlock_bucket_free(b);
    /* A fenced lock whose token counter is not an integer. */
    put_string(w.store, "redisson_lock_token:{ft}", "x");
    assert_int_equal(dlock_fenced_new(&l, w.c, "ft"), 0);
    EXPECT(dlock_try_lock(l, 0, 1000), DLOCK_EPROTO);
    dlock_rlock_free(l);
    world_close(&w);
}

/* ---- the network ----------------------------------------------------------- */

typedef struct junk_server {
    int fd, port;
    const char *reply;
    size_t reply_len;
    pthread_t thread;
} junk_server;

/* Answers every connection (a backend may retry) with reply, then closes,
 * until the listening socket is shut down. */
static void *junk_run(void *arg)
{
    junk_server *j = arg;
    for (;;) {
        char buf[512];
        struct pollfd pf = {j->fd, POLLIN, 0};
        int c;
        if (poll(&pf, 1, 3000) != 1 || (pf.revents & POLLIN) == 0)
            break;
        c = accept(j->fd, NULL, NULL);
        if (c < 0)
            break;
        pf.fd = c;
        if (poll(&pf, 1, 1000) == 1 && recv(c, buf, sizeof buf, 0) > 0 &&
            j->reply_len > 0) {
            ssize_t n = send(c, j->reply, j->reply_len, MSG_NOSIGNAL);
            (void)n;
        }
        close(c);
    }
    return NULL;
}

static void junk_start(junk_server *j, const char *reply, size_t len)
{
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    j->fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(j->fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(j->fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(j->fd, 16), 0);
    assert_int_equal(getsockname(j->fd, (struct sockaddr *)&a, &alen), 0);
    j->port = ntohs(a.sin_port);
    j->reply = reply;
    j->reply_len = len;
    assert_int_equal(pthread_create(&j->thread, NULL, junk_run, j), 0);
}

static void junk_stop(junk_server *j)
{
    shutdown(j->fd, SHUT_RDWR);
    close(j->fd);
    pthread_join(j->thread, NULL);
}

static void test_not_redis_answers(void **state)
{
    static const char garbage[] = "\x00\xff\x13garbage\r\n\x7f";
    static const struct {
        const char *reply;
        size_t len;
    } answers[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi", 40},
        {garbage, sizeof garbage - 1},
        {"SSH-2.0-OpenSSH_9.2\r\n", 21},
        {"$-5\r\n", 5},
        {"*99999999999\r\n", 14},
        {"", 0}, /* closes without a word */
    };
    size_t i;
    (void)state;
    for (i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        junk_server j;
        dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
        dlock_backend *b = NULL;
        dlock_client *c = NULL;
        char url[96], json[160], err[256];
        int rc;
        o.connect_timeout_ms = 500;
        o.command_timeout_ms = 500;
        junk_start(&j, answers[i].reply, answers[i].len);
        snprintf(url, sizeof url, "redis://:topsecret@127.0.0.1:%d", j.port);
        rc = dlock_redis_backend_new(&b, url, &o, err, sizeof err);
        bad_inputs++;
        if (rc != DLOCK_EPROTO && rc != DLOCK_ECONN)
            fprintf(stderr, "answer %zu: %s '%s'\n", i, dlock_errname(rc), err);
        assert_true(rc == DLOCK_EPROTO || rc == DLOCK_ECONN);
        assert_null(b);
        assert_null(strstr(err, "topsecret"));
        rc = dlock_client_connect(&c, url, NULL, err, sizeof err);
        bad_inputs++;
        assert_true(rc == DLOCK_EPROTO || rc == DLOCK_ECONN);
        assert_null(c);
        snprintf(json, sizeof json,
                 "{\"url\": \"%s\", \"connect_timeout_ms\": 500}", url);
        rc = dlock_client_from_json_string(&c, json, err, sizeof err);
        bad_inputs++;
        assert_true(rc == DLOCK_EPROTO || rc == DLOCK_ECONN);
        assert_null(c);
        assert_null(strstr(err, "topsecret"));
        junk_stop(&j);
    }
}

/* Odd names cross the wire and Redis's Lua for real. */
static void test_odd_names_on_redis(void **state)
{
    dlock_test_redis *srv = NULL;
    dlock_client *c = NULL;
    char err[256];
    size_t i, j;
    (void)state;
    assert_int_equal(dlock_test_redis_start(&srv, NULL), 0);
    assert_int_equal(dlock_client_connect(&c, dlock_test_redis_url(srv), NULL,
                                          err, sizeof err), 0);
    for (i = 0; i < NCTORS; i++) {
        for (j = 0; j < sizeof odd_names / sizeof odd_names[0]; j++) {
            dlock_rlock *l = NULL;
            int64_t ttl;
            EXPECT(make_lock(c, i, odd_names[j], &l), 0);
            EXPECT(dlock_try_lock(l, 0, 5000), 0);
            EXPECT(dlock_remain_ttl(l, &ttl), 0);
            assert_true(ttl > 0 && ttl <= 5000);
            EXPECT(dlock_unlock(l), 0);
            EXPECT(dlock_remain_ttl(l, &ttl), 0);
            assert_int_equal(ttl, -2);
            dlock_rlock_free(l);
        }
    }
    dlock_client_free(c);
    dlock_test_redis_stop(srv);
}

static void test_report(void **state)
{
    (void)state;
    printf("bad-input matrix: %lu bad inputs tried, 0 crashes\n", bad_inputs);
}

int dlock_test_bad_input(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_strings),
        cmocka_unit_test(test_client_args),
        cmocka_unit_test(test_rlock_names),
        cmocka_unit_test(test_rlock_args),
        cmocka_unit_test(test_newer_versions),
        cmocka_unit_test(test_semaphore_args),
        cmocka_unit_test(test_permit_semaphore_args),
        cmocka_unit_test(test_latch_args),
        cmocka_unit_test(test_bucket_and_codecs),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_url_secrets_hidden),
        cmocka_unit_test(test_config_secrets_hidden),
        cmocka_unit_test(test_mock_args),
        cmocka_unit_test(test_wrong_type),
        cmocka_unit_test(test_not_redis_answers),
        cmocka_unit_test(test_odd_names_on_redis),
        cmocka_unit_test(test_report),
    };
    return DLOCK_RUN_GROUP("bad_input", tests, NULL, NULL);
}
