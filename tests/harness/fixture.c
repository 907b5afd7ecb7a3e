/*
 * The conformance fixture (see fixture.h).
 */
#include "fixture.h"
#include "runner.h"

#include "dlock/sys/backend.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static const dlock_fx_backend fx_mock = {"mock"};
static const dlock_fx_backend fx_redis = {"redis"};
static dlock_fx_backend fx_wrapped; /* kind: the wrapper's, or NULL */
static int (*fx_wrap)(dlock_backend **out, dlock_backend *inner);
static const char *fx_redis_url;
static unsigned fx_counter;

void dlock_fx_set_redis_url(const char *url) { fx_redis_url = url; }
static const char *fx_admin_url;
void dlock_fx_set_redis_admin_url(const char *url) { fx_admin_url = url; }

static void fx_free_client(void *c) { dlock_client_free(c); }

dlock_client *dlock_fx_inspector(dlock_fx *fx)
{
    dlock_client *c = NULL;
    char err[256] = "";

    if (fx->is_mock || !fx_admin_url)
        return fx->c1;
    if (fx->inspector)
        return fx->inspector;
    if (dlock_client_connect(&c, fx_admin_url, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "fixture: inspector: %s\n", err);
        fail();
    }
    fx->inspector = dlock_fx_keep(fx, c, fx_free_client);
    return c;
}
const char *dlock_fx_redis_url(void) { return fx_redis_url; }

int dlock_fx_group_mock(void **state)
{
    *state = (void *)&fx_mock;
    return 0;
}

void dlock_fx_set_mock_wrapper(const char *kind,
                               int (*wrap)(dlock_backend **out, dlock_backend *inner))
{
    fx_wrapped.kind = kind;
    fx_wrap = kind ? wrap : NULL;
}

static int fx_group_wrapped(void **state)
{
    *state = (void *)&fx_wrapped;
    return 0;
}

static int fx_is_wrapped(const char *kind)
{
    return fx_wrapped.kind && strcmp(kind, fx_wrapped.kind) == 0;
}

static const char *const *fx_skips;

void dlock_fx_set_skips(const char *const *names)
{
    fx_skips = names;
}

static const char *const *fx_conformance_skips;

void dlock_fx_set_conformance_skips(const char *const *names)
{
    fx_conformance_skips = names;
}

const char *const *dlock_fx_conformance_skips(void)
{
    return fx_conformance_skips;
}

int dlock_fx_skipped(const char *case_name)
{
    size_t i;

    for (i = 0; fx_skips && fx_skips[i]; i++)
        if (strcmp(fx_skips[i], case_name) == 0)
            return 1;
    return 0;
}

int dlock_fx_run_cases(const char *name, const struct CMUnitTest *tests, size_t n,
                       dlock_fx_group_fn setup)
{
    struct CMUnitTest *run = malloc((n ? n : 1) * sizeof(*run));
    size_t i, k = 0;
    int failed;

    if (!run)
        return dlock_test_count(1, 1);
    for (i = 0; i < n; i++)
        if (!dlock_fx_skipped(tests[i].name) && dlock_test_case_wanted(tests[i].name))
            run[k++] = tests[i];
    if (k == 0) {
        free(run);
        return 0;
    }
    failed = dlock_test_count((int)k, _cmocka_run_group_tests(name, run, k, setup, NULL));
    free(run);
    return failed;
}

dlock_fx_group_fn dlock_fx_group_for(const char *backend)
{
    if (strcmp(backend, "mock") == 0)
        return dlock_fx_group_mock;
    return fx_is_wrapped(backend) ? fx_group_wrapped : dlock_fx_group_redis;
}

int dlock_fx_group_redis(void **state)
{
    if (!fx_redis_url) {
        fprintf(stderr, "redis group: no server URL\n");
        return -1;
    }
    *state = (void *)&fx_redis;
    return 0;
}

/* ---- time ------------------------------------------------------------- */

void dlock_fx_count_call(void *arg, dlock_op_id op, const dlock_result *r)
{
    dlock_fx_calls *c = arg;

    (void)op;
    c->n++;
    c->rc = r->rc;
}

int64_t dlock_fx_real_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dlock_fx_sleep_real(int64_t ms)
{
    struct timespec ts;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void dlock_fx_advance(dlock_fx *fx, int64_t ms)
{
    if (fx->is_mock) {
        int rc = dlock_vclock_advance(fx->vclock, ms);
        assert_int_equal(rc, 0);
    } else {
        dlock_fx_sleep_real(ms);
    }
}

int64_t dlock_fx_now(dlock_fx *fx)
{
    if (fx->is_mock)
        return dlock_vclock_now(fx->vclock);
    return dlock_fx_real_ms();
}

int dlock_fx_settle(dlock_fx *fx)
{
    int64_t deadline, stable_since;
    int last;

    if (!fx->is_mock)
        return 0;
    deadline = dlock_fx_real_ms() + 3000;
    last = dlock_vclock_sleepers(fx->vclock);
    stable_since = dlock_fx_real_ms();
    while (dlock_fx_real_ms() < deadline) {
        int now_sleeping;
        dlock_fx_sleep_real(2);
        now_sleeping = dlock_vclock_sleepers(fx->vclock);
        if (now_sleeping != last) {
            last = now_sleeping;
            stable_since = dlock_fx_real_ms();
        } else if (dlock_fx_real_ms() - stable_since >= 30) {
            break;
        }
    }
    return last;
}

int dlock_fx_wait_blocked_n(dlock_fx *fx, int base, int n, int64_t redis_real_ms)
{
    if (!fx->is_mock) {
        dlock_fx_sleep_real(redis_real_ms);
        return 0;
    }
    if (dlock_vclock_wait_sleepers(fx->vclock, base + n, 5000) != 0)
        return -1;
    /* A thread may sleep briefly on its way (e.g. a back-off); only a count
     * that stays put means everyone is parked. */
    return dlock_fx_settle(fx) >= base + n ? 0 : -1;
}

int dlock_fx_wait_blocked(dlock_fx *fx, int base, int64_t redis_real_ms)
{
    return dlock_fx_wait_blocked_n(fx, base, 1, redis_real_ms);
}

int dlock_fx_still_waiting(dlock_fx *fx, dlock_fx_thread *t)
{
    if (fx->is_mock)
        dlock_fx_settle(fx);
    else
        dlock_fx_sleep_real(250);
    return !dlock_fx_done(t);
}

/* ---- lost-lock callbacks ------------------------------------------------ */

static void fx_on_lost(void *arg, const char *name, const char *owner)
{
    struct dlock_fx_tag *tag = arg;
    dlock_fx *fx = tag->fx;

    pthread_mutex_lock(&fx->lost_mutex);
    fx->lost_count++;
    fx->lost_client = tag->client;
    snprintf(fx->lost_name, sizeof(fx->lost_name), "%s", name ? name : "(null)");
    snprintf(fx->lost_owner, sizeof(fx->lost_owner), "%s", owner ? owner : "(null)");
    pthread_mutex_unlock(&fx->lost_mutex);
}

int dlock_fx_lost_count(dlock_fx *fx)
{
    int n;
    pthread_mutex_lock(&fx->lost_mutex);
    n = fx->lost_count;
    pthread_mutex_unlock(&fx->lost_mutex);
    return n;
}

int dlock_fx_lost_last(dlock_fx *fx, char *name, size_t name_len, char *owner,
                       size_t owner_len, int *client)
{
    int n;
    pthread_mutex_lock(&fx->lost_mutex);
    n = fx->lost_count;
    snprintf(name, name_len, "%s", fx->lost_name);
    snprintf(owner, owner_len, "%s", fx->lost_owner);
    *client = fx->lost_client;
    pthread_mutex_unlock(&fx->lost_mutex);
    return n;
}

int dlock_fx_wait_lost(dlock_fx *fx, int n, int64_t max_ms)
{
    int64_t step = fx->is_mock ? fx->watchdog_ms / 3 : 10;
    int64_t spent = 0;

    while (dlock_fx_lost_count(fx) < n && spent < max_ms) {
        dlock_fx_advance(fx, step);
        spent += step;
    }
    return dlock_fx_lost_count(fx);
}

/* ---- setup and teardown -------------------------------------------------- */

int dlock_fx_backend_new(dlock_fx *fx, dlock_backend **out)
{
    char err[256] = "";
    int rc;

    *out = NULL;
    if (fx->is_mock) {
        rc = dlock_mock_backend_new(out, fx->store);
        if (rc == 0 && fx_is_wrapped(fx->backend))
            rc = fx_wrap(out, *out);
    } else
        rc = dlock_redis_backend_new(out, fx_redis_url, NULL, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "fixture: %s backend: %s %s\n", fx->backend,
                dlock_errname(rc), err);
    return rc;
}

static int fx_client(dlock_fx *fx, int idx, dlock_client **out)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    int rc;

    rc = dlock_fx_backend_new(fx, &b);
    if (rc != 0)
        return rc;
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    /* The conformance cases are about lock semantics, not budget precision
     * (tests/faults/stall_cases.c checks that with the default slack): a
     * try_lock(wait 0) must not time out because a sanitizer build on a
     * loaded machine took more than 50 ms for one round trip. */
    opts.budget_slack_ms = 2000;
    opts.on_lost = fx_on_lost;
    fx->tags[idx].fx = fx;
    fx->tags[idx].client = idx + 1;
    opts.on_lost_arg = &fx->tags[idx];
    rc = dlock_client_new(out, b, &opts);
    if (rc != 0) {
        fprintf(stderr, "fixture: client: %s\n", dlock_errname(rc));
        dlock_backend_free(b); /* a failed client_new leaves it to us */
    }
    return rc;
}

int dlock_fx_setup(void **state)
{
    const dlock_fx_backend *kind = *state;
    dlock_fx *fx;

    if (!kind)
        return -1;
    fx = calloc(1, sizeof(*fx));
    if (!fx)
        return -1;
    *state = fx;
    pthread_mutex_init(&fx->lost_mutex, NULL);
    fx->backend = kind->kind;
    fx->is_mock = strcmp(kind->kind, "mock") == 0 || fx_is_wrapped(kind->kind);
    if (fx->is_mock) {
        /* Virtual time: long, realistic values cost nothing. */
        fx->watchdog_ms = 30000;
        fx->lease_ms = 10000;
        fx->long_lease_ms = 600000;
        /* Not 0: a clock that starts at 0 could hide "0 means unset" bugs. */
        if (dlock_vclock_new(&fx->vclock, 1000000) != 0 ||
            dlock_mock_store_new(&fx->store, dlock_vclock_clock(fx->vclock)) != 0)
            goto fail;
    } else {
        /* Real time: short enough that waiting out a few watchdog periods
         * costs a second or two, long enough for loaded CI machines (a
         * renewal every third of it: 300 ms lapsed when the renewing thread
         * waited over 200 ms for a CPU at load average 5-20). */
        fx->watchdog_ms = 500;
        fx->lease_ms = 200;
        fx->long_lease_ms = 60000;
    }
    if (fx_client(fx, 0, &fx->c1) != 0 || fx_client(fx, 1, &fx->c2) != 0)
        goto fail;
    if (dlock_client_owner(fx->c1, fx->owner1, sizeof(fx->owner1)) != 0 ||
        dlock_client_owner(fx->c2, fx->owner2, sizeof(fx->owner2)) != 0)
        goto fail;
    snprintf(fx->name, sizeof(fx->name), "dlock-test:%s:%u:%ld", fx->backend,
             ++fx_counter, (long)getpid());
    /* Let the watchdogs reach their first sleep, so that sleeper counts
     * taken by the cases mean what they say. */
    dlock_fx_settle(fx);
    return 0;
fail:
    /* cmocka skips the teardown of a failed setup: clean up here. */
    dlock_fx_teardown(state);
    return -1;
}

/* The helper threads started and not yet joined, kept here rather than in
 * their dlock_fx_thread: a case that fails between dlock_fx_start and
 * dlock_fx_join leaves cmocka's longjmp behind it, and with it the
 * dlock_fx_thread and the thread's argument on a stack that the teardown is
 * about to reuse. The teardown looks here (never at that stack) and ends
 * the run rather than free what such a thread may still be using. */
#define FX_MAX_RUNNING 64
static pthread_t fx_running[FX_MAX_RUNNING];
static int fx_nrunning;

static void fx_running_add(pthread_t th)
{
    if (fx_nrunning == FX_MAX_RUNNING)
        dlock_test_fatal("more helper threads than the fixture can track");
    fx_running[fx_nrunning++] = th;
}

static void fx_running_remove(pthread_t th)
{
    int i;

    for (i = 0; i < fx_nrunning; i++)
        if (pthread_equal(fx_running[i], th)) {
            fx_running[i] = fx_running[--fx_nrunning];
            return;
        }
}

int dlock_fx_teardown(void **state)
{
    dlock_fx *fx = *state;
    size_t i;

    if (!fx)
        return 0;
    if (fx_nrunning > 0)
        dlock_test_fatal("the case ended (a failed assertion?) between "
                         "dlock_fx_start and dlock_fx_join: its helper thread "
                         "still runs on the case's stack, so neither the "
                         "teardown nor the next case can run safely");
    /* Kept objects and handles first: they keep the clients alive, and a
     * client's watchdog (which may call fx_on_lost) must be gone before fx
     * is. */
    for (i = fx->nkept; i > 0; i--)
        if (fx->kept[i - 1].obj)
            fx->kept[i - 1].free_fn(fx->kept[i - 1].obj);
    for (i = fx->nlocks; i > 0; i--)
        dlock_rlock_free(fx->locks[i - 1]);
    dlock_client_free(fx->c1);
    dlock_client_free(fx->c2);
    dlock_mock_store_free(fx->store);
    dlock_vclock_free(fx->vclock);
    pthread_mutex_destroy(&fx->lost_mutex);
    free(fx);
    *state = NULL;
    return 0;
}

int dlock_fx_run_group(const char *what, const char *backend,
                       const struct CMUnitTest *tests, size_t n)
{
    char name[96];

    snprintf(name, sizeof(name), "conformance/%s on %s", what, backend);
    return dlock_fx_run_cases(name, tests, n, dlock_fx_group_for(backend));
}

dlock_fx *dlock_fx_begin(void **state, const char *case_name)
{
    dlock_fx *fx = *state;
    char base[96];

    assert_non_null(fx);
    dlock_test_set_phase("conformance on %s: %s", fx->backend, case_name);
    memcpy(base, fx->name, sizeof(base));
    snprintf(fx->name, sizeof(fx->name), "%.40s:%.48s", base, case_name);
    return fx;
}

static const dlock_fx_lock_type fx_reentrant = {"reentrant", dlock_reentrant_new};
static const dlock_fx_lock_type *fx_type = &fx_reentrant;

void dlock_fx_use_lock_type(const dlock_fx_lock_type *type)
{
    fx_type = type ? type : &fx_reentrant;
}

const dlock_fx_lock_type *dlock_fx_lock_type_current(void)
{
    return fx_type;
}

dlock_rlock *dlock_fx_lock(dlock_fx *fx, dlock_client *c, const char *name)
{
    dlock_rlock *l = NULL;
    int rc;

    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    rc = fx_type->make(&l, c, name);
    assert_int_equal(rc, 0);
    assert_non_null(l);
    fx->locks[fx->nlocks++] = l;
    return l;
}

void *dlock_fx_keep(dlock_fx *fx, void *obj, void (*free_fn)(void *))
{
    assert_non_null(obj);
    assert_true(fx->nkept < DLOCK_FX_MAX_LOCKS);
    fx->kept[fx->nkept].obj = obj;
    fx->kept[fx->nkept].free_fn = free_fn;
    fx->nkept++;
    return obj;
}

void dlock_fx_unkeep(dlock_fx *fx, void *obj)
{
    size_t i;

    /* its room is free again (the others keep their order) */
    for (i = 0; i < fx->nkept; i++)
        if (fx->kept[i].obj == obj) {
            memmove(&fx->kept[i], &fx->kept[i + 1], (fx->nkept - i - 1) * sizeof(fx->kept[0]));
            fx->nkept--;
            break;
        }
}

/* ---- direct access to the store ------------------------------------------ */

/* Static: backends may key per-script state (the server's SHA1) by address. */
static const dlock_script fx_call_script = {
    "test_call", "return redis.call(ARGV[1], KEYS[1], unpack(ARGV, 2))\n"};
static const dlock_script fx_get_script = {
    "test_counter_get", "return redis.call('get', KEYS[1])\n"};
static const dlock_script fx_set_script = {
    "test_counter_set", "return redis.call('set', KEYS[1], ARGV[1])\n"};

int dlock_fx_call(dlock_client *c, dlock_reply **out, const char *cmd,
                  const char *key, int nargs, ...)
{
    const char *argv[16];
    char err[256] = "";
    va_list ap;
    int i, rc;

    if (nargs > 13)
        return DLOCK_EINVAL;
    argv[0] = key;
    argv[1] = cmd;
    va_start(ap, nargs);
    for (i = 0; i < nargs; i++)
        argv[2 + i] = va_arg(ap, const char *);
    va_end(ap);
    rc = dlock_backend_eval(dlock_client_backend(c), out, &fx_call_script, 1,
                            (size_t)nargs + 1, argv, NULL, err, sizeof(err));
    if (rc != 0)
        fprintf(stderr, "fixture: %s %s: %s %s\n", cmd, key, dlock_errname(rc), err);
    return rc;
}

int dlock_fx_counter_get(dlock_client *c, const char *key, long long *out)
{
    const char *argv[1] = {key};
    dlock_reply *r = NULL;
    int rc = dlock_backend_eval(dlock_client_backend(c), &r, &fx_get_script, 1,
                                0, argv, NULL, NULL, 0);
    if (rc != 0)
        return rc;
    if (r->type == DLOCK_REPLY_NIL)
        *out = 0;
    else if (r->type == DLOCK_REPLY_BULK)
        *out = strtoll(r->str, NULL, 10);
    else
        rc = DLOCK_EPROTO;
    dlock_reply_free(r);
    return rc;
}

int dlock_fx_counter_set(dlock_client *c, const char *key, long long v)
{
    char num[32];
    const char *argv[2] = {key, num};
    dlock_reply *r = NULL;
    int rc;

    snprintf(num, sizeof(num), "%lld", v);
    rc = dlock_backend_eval(dlock_client_backend(c), &r, &fx_set_script, 1, 1,
                            argv, NULL, NULL, 0);
    if (rc == 0 && r->type == DLOCK_REPLY_ERROR)
        rc = DLOCK_EPROTO;
    dlock_reply_free(r);
    return rc;
}

/* ---- helper threads -------------------------------------------------------- */

static void *fx_thread_main(void *arg)
{
    dlock_fx_thread *t = arg;

    t->fn(t->arg);
    pthread_mutex_lock(&t->mutex);
    t->done = 1;
    pthread_cond_broadcast(&t->cond);
    pthread_mutex_unlock(&t->mutex);
    return NULL;
}

void dlock_fx_start(dlock_fx_thread *t, void (*fn)(void *), void *arg)
{
    pthread_condattr_t ca;

    t->fn = fn;
    t->arg = arg;
    t->done = 0;
    pthread_mutex_init(&t->mutex, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&t->cond, &ca);
    pthread_condattr_destroy(&ca);
    assert_int_equal(pthread_create(&t->th, NULL, fx_thread_main, t), 0);
    fx_running_add(t->th);
    t->started = 1;
}

int dlock_fx_done(dlock_fx_thread *t)
{
    int d;
    pthread_mutex_lock(&t->mutex);
    d = t->done;
    pthread_mutex_unlock(&t->mutex);
    return d;
}

int dlock_fx_wait_done(dlock_fx_thread *t, int64_t real_ms)
{
    struct timespec ts;
    int d;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(real_ms / 1000);
    ts.tv_nsec += (long)(real_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&t->mutex);
    while (!t->done && pthread_cond_timedwait(&t->cond, &t->mutex, &ts) == 0)
        ;
    d = t->done;
    pthread_mutex_unlock(&t->mutex);
    return d ? 0 : -1;
}

int dlock_fx_join(dlock_fx *fx, dlock_fx_thread *t, int64_t real_ms,
                  dlock_rlock *rescue)
{
    int in_time, tries;

    if (!t->started)
        return -1;
    in_time = dlock_fx_wait_done(t, real_ms) == 0;
    for (tries = 0; !in_time && !dlock_fx_done(t) && tries < 100; tries++) {
        /* The thread is stuck in the library: take the lock away and let
         * (virtual) time run out for every sleeper, until it comes back. */
        if (tries == 0)
            fprintf(stderr, "  [%s] helper thread still blocked after %lld ms: "
                    "releasing it by force\n", fx->backend, (long long)real_ms);
        if (rescue)
            dlock_force_unlock(rescue, NULL);
        if (fx->is_mock)
            dlock_vclock_advance(fx->vclock, fx->long_lease_ms * 4);
        dlock_fx_wait_done(t, 100);
    }
    if (!dlock_fx_done(t))
        dlock_test_fatal("a helper thread is stuck inside the library and "
                         "cannot be released");
    pthread_join(t->th, NULL);
    fx_running_remove(t->th);
    pthread_mutex_destroy(&t->mutex);
    pthread_cond_destroy(&t->cond);
    t->started = 0;
    return in_time ? 0 : -1;
}

/* ---- a helper process ---------------------------------------------------- */

void dlock_fx_run_in_child(void (*fn)(void *arg, int *codes), void *arg, int *codes,
                           size_t n)
{
    size_t size = n * sizeof(*codes);
    int fds[2], status = -1;
    ssize_t got = 0;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ssize_t put;

        close(fds[0]);
        fn(arg, codes);
        put = write(fds[1], codes, size);
        _exit(put == (ssize_t)size ? 0 : 1);
    }
    close(fds[1]);
    while (got < (ssize_t)size) {
        ssize_t r = read(fds[0], (char *)codes + got, size - (size_t)got);
        if (r <= 0)
            break;
        got += r;
    }
    close(fds[0]);
    waitpid(pid, &status, 0);
    assert_int_equal(got, size);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
