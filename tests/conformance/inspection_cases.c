/*
 * The conformance cases of looking at objects from outside (issue 29,
 * section 3, the library side of dlock(1)'s status and list): what is
 * stored under a name (dlock_object_kind), listing names
 * (dlock_client_scan), a client's description of itself (describe_owner,
 * dlock_client_describe, dlock_client_owner_info), clearing a fair lock's
 * dead waiters (dlock_fair_clear_dead) and a semaphore release bounded by
 * a limit (dlock_semaphore_release_within). Each case runs on the mock and
 * on Redis: dlock_test_inspection("mock") and ("redis").
 *
 * Raw data another program could have left (a queue of waiters, a list) is
 * written with a small script through the client's backend, the same on
 * both.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

static void free_sem(void *o) { dlock_semaphore_free(o); }
static void free_psem(void *o) { dlock_permit_semaphore_free(o); }
static void free_bucket(void *o) { dlock_bucket_free(o); }
static void free_client(void *o) { dlock_client_free(o); }

/* Runs Lua source on c's backend with keys/args (NUL-terminated strings). */
static void raw(dlock_client *c, const char *source, size_t nkeys, size_t nargs,
                const char *const *argv)
{
    dlock_script s = {"inspection_raw", source};
    dlock_reply *r = NULL;
    char err[256] = "";

    assert_int_equal(dlock_backend_eval(dlock_client_backend(c), &r, &s, nkeys, nargs, argv,
                                        NULL, err, sizeof err), 0);
    assert_int_not_equal(r->type, DLOCK_REPLY_ERROR);
    dlock_reply_free(r);
}

static const char *kind_of(dlock_fx *fx, const char *name)
{
    dlock_rlock *l = dlock_fx_lock(fx, fx->c1, name);
    const char *kind = NULL;

    assert_int_equal(dlock_object_kind(dlock_rlock_object(l), &kind), 0);
    return kind;
}

/* "<fx->name>-<suffix>" */
static const char *sub(dlock_fx *fx, char *buf, size_t len, const char *suffix)
{
    snprintf(buf, len, "%s-%s", fx->name, suffix);
    return buf;
}

static void kind_of_every_type(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char n[12][128], q[160], **ids = NULL;
    dlock_rlock *l;
    dlock_semaphore *s;
    dlock_permit_semaphore *p;
    dlock_bucket *b;
    int64_t token;
    int set;

    assert_string_equal(kind_of(fx, sub(fx, n[0], sizeof n[0], "none")), "none");

    assert_int_equal(dlock_reentrant_new(&l, fx->c1, sub(fx, n[1], sizeof n[1], "re")), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_string_equal(kind_of(fx, n[1]), "reentrant");
    assert_int_equal(dlock_unlock(l), 0);
    assert_string_equal(kind_of(fx, n[1]), "none");

    assert_int_equal(dlock_rwlock_read_new(&l, fx->c1, sub(fx, n[2], sizeof n[2], "rw")), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_string_equal(kind_of(fx, n[2]), "rwlock");
    assert_int_equal(dlock_unlock(l), 0);

    assert_int_equal(dlock_fenced_new(&l, fx->c1, sub(fx, n[3], sizeof n[3], "fen")), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_fenced_lock(l, &token, fx->long_lease_ms), 0);
    assert_string_equal(kind_of(fx, n[3]), "fenced");
    assert_int_equal(dlock_unlock(l), 0);
    assert_string_equal(kind_of(fx, n[3]), "fenced"); /* its counter stays */

    assert_int_equal(dlock_semaphore_new(&s, fx->c1, sub(fx, n[4], sizeof n[4], "sem")), 0);
    dlock_fx_keep(fx, s, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 2), 0);
    assert_string_equal(kind_of(fx, n[4]), "counter");
    assert_int_equal(dlock_semaphore_lock_new(&l, fx->c1, n[4]), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_string_equal(kind_of(fx, n[4]), "semaphore_lock");
    assert_int_equal(dlock_unlock(l), 0);

    assert_int_equal(dlock_permit_semaphore_new(&p, fx->c1, sub(fx, n[5], sizeof n[5], "ps")),
                     0);
    dlock_fx_keep(fx, p, free_psem);
    assert_int_equal(dlock_permit_semaphore_set_permits(p, 2), 0);
    assert_int_equal(dlock_permit_semaphore_try_acquire(p, &ids, 1, 0, fx->long_lease_ms), 0);
    assert_string_equal(kind_of(fx, n[5]), "permit_semaphore");
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), 0);
    dlock_permit_ids_free(ids);

    assert_int_equal(dlock_simple_lock_new(&l, fx->c1, sub(fx, n[6], sizeof n[6], "simple")),
                     0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_string_equal(kind_of(fx, n[6]), "simple");
    assert_int_equal(dlock_unlock(l), 0);

    assert_int_equal(dlock_bucket_new(&b, fx->c1, sub(fx, n[7], sizeof n[7], "bucket"),
                                      dlock_codec_string()), 0);
    dlock_fx_keep(fx, b, free_bucket);
    assert_int_equal(dlock_bucket_set(b, "hello", 0), 0);
    assert_string_equal(kind_of(fx, n[7]), "string");

    /* a fair lock's waiters alone (their queue), and a list */
    snprintf(q, sizeof q, "redisson_lock_queue:{%s}", sub(fx, n[8], sizeof n[8], "fair"));
    raw(fx->c1, "return redis.call('rpush', KEYS[1], 'w')", 1, 0, (const char *[]){q});
    assert_string_equal(kind_of(fx, n[8]), "fair");
    raw(fx->c1, "return redis.call('del', KEYS[1])", 1, 0, (const char *[]){q});
    raw(fx->c1, "return redis.call('rpush', KEYS[1], 'x')", 1, 0,
        (const char *[]){sub(fx, n[9], sizeof n[9], "list")});
    assert_string_equal(kind_of(fx, n[9]), "other");
    raw(fx->c1, "return redis.call('del', KEYS[1])", 1, 0, (const char *[]){n[9]});
}

static int has_name(char **names, size_t n, const char *name)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return 1;
    return 0;
}

static void scan_lists_objects_not_their_keys(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char n[3][128], pattern[160], err[256], **all = NULL, **step = NULL;
    size_t nall = 0, i;
    dlock_rlock *rw, *fair;
    dlock_semaphore *s;
    int set;

    assert_int_equal(dlock_rwlock_read_new(&rw, fx->c1, sub(fx, n[0], sizeof n[0], "rw")), 0);
    dlock_fx_keep(fx, rw, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(rw, fx->long_lease_ms), 0); /* + a read-hold marker */
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, sub(fx, n[1], sizeof n[1], "sem")), 0);
    dlock_fx_keep(fx, s, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 1), 0);
    assert_int_equal(dlock_fair_new(&fair, fx->c1, sub(fx, n[2], sizeof n[2], "fair")), 0);
    dlock_fx_keep(fx, fair, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_lock(fair, fx->long_lease_ms), 0);

    snprintf(pattern, sizeof pattern, "*%s*", fx->name);
    assert_int_equal(dlock_client_scan(fx->c1, pattern, 10, &all, err, sizeof err), 0);
    for (nall = 0; all[nall]; nall++)
        if (nall > 0) /* sorted, each once */
            assert_true(strcmp(all[nall - 1], all[nall]) < 0);
    assert_int_equal(nall, 3);
    for (i = 0; i < 3; i++)
        assert_true(has_name(all, nall, n[i]));
    dlock_names_free(all);
    /* a pattern matching none */
    snprintf(pattern, sizeof pattern, "%s-none*", fx->name);
    assert_int_equal(dlock_client_scan(fx->c1, pattern, 1000, &all, err, sizeof err), 0);
    assert_null(all[0]);
    dlock_names_free(all);

    /* bad input: nothing sent */
    assert_int_equal(dlock_client_scan(fx->c1, pattern, 0, &step, err, sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "count"));
    assert_null(step);
    assert_int_equal(dlock_client_scan(NULL, pattern, 10, &step, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_client_scan(fx->c1, NULL, 10, &step, NULL, 0), DLOCK_EINVAL);
    dlock_names_free(NULL);
    assert_int_equal(dlock_unlock(rw), 0);
    assert_int_equal(dlock_unlock(fair), 0);
}

/* A lock whose name looks like an auxiliary key's (an owner description,
 * a fair lock's queue) is an object all the same: listed, not hidden. */
static void scan_lists_locks_named_like_aux_keys(void **state)
{
    dlock_fx *fx = BEGIN(state);
    static const char *const prefixes[] = {"dlock_owner:", "redisson_lock_queue:"};
    char name[160], pattern[170], err[256], buf[64], **all = NULL;
    size_t i;

    for (i = 0; i < 2; i++) {
        /* a lock hash another client stored (dlock itself refuses the
         * reserved dlock_owner: form as a name): the scan lists it, by its
         * type, not hidden by its name's prefix */
        snprintf(name, sizeof name, "%s%s", prefixes[i], fx->name);
        dlock_fx_call_str(fx->c1, buf, sizeof(buf), "hset", name, 2, "other-owner:1", "1");
        assert_string_equal(buf, "1");
        snprintf(pattern, sizeof pattern, "%s*", name);
        assert_int_equal(dlock_client_scan(fx->c1, pattern, 10, &all, err, sizeof err), 0);
        assert_non_null(all[0]);
        assert_string_equal(all[0], name);
        assert_null(all[1]);
        dlock_names_free(all);
        dlock_fx_call_str(fx->c1, buf, sizeof(buf), "del", name, 0, NULL, NULL);
        assert_string_equal(buf, "1");
    }
}

static void owner_description(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    dlock_owner_info info;
    char owner[DLOCK_OWNER_MAX], host[256] = "";
    int found = -1;

    o.watchdog_timeout_ms = fx->watchdog_ms;
    o.describe_owner = 1;
    /* a bad option value is refused */
    o.describe_owner = 2;
    assert_int_equal(dlock_fx_backend_new(fx, &b), 0);
    assert_int_equal(dlock_client_new(&c, b, &o), DLOCK_EINVAL);
    o.describe_owner = 1;
    if (dlock_client_new(&c, b, &o) != 0) {
        dlock_backend_free(b);
        fail_msg("client");
    }
    dlock_fx_keep(fx, c, free_client);
    assert_int_equal(dlock_client_describe(c), 0);
    assert_int_equal(dlock_client_owner(c, owner, sizeof owner), 0);
    gethostname(host, sizeof host - 1);

    /* read by another client, by owner id or client id */
    assert_int_equal(dlock_client_owner_info(fx->c1, owner, &info, &found), 0);
    assert_int_equal(found, 1);
    assert_string_equal(info.host, host);
    assert_int_equal(info.pid, (long long)getpid());
    assert_true(info.program[0] != '\0');
    assert_true(info.started_ms > 0);
    assert_int_equal(dlock_client_owner_info(fx->c1, dlock_client_id(c), &info, &found), 0);
    assert_int_equal(found, 1);

    /* nobody described these */
    assert_int_equal(dlock_client_describe(fx->c2), 0); /* option off: nothing */
    assert_int_equal(dlock_client_owner_info(fx->c1, fx->owner2, &info, &found), 0);
    assert_int_equal(found, 0);
    assert_int_equal(dlock_client_owner_info(fx->c1, "not-a-dlock-owner", &info, &found), 0);
    assert_int_equal(found, 0);
    assert_int_equal(dlock_client_owner_info(fx->c1, NULL, &info, &found), DLOCK_EINVAL);
    assert_int_equal(dlock_client_owner_info(fx->c1, owner, NULL, &found), DLOCK_EINVAL);
    assert_int_equal(dlock_client_describe(NULL), DLOCK_EINVAL);
}

static void fair_clear_dead_anywhere(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l, *re;
    char q[160], d[160];
    dlock_reply *r = NULL;
    dlock_script len = {"inspection_llen", "return redis.call('llen', KEYS[1])"};
    int64_t dropped = -1;

    assert_int_equal(dlock_fair_new(&l, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, l, (void (*)(void *))dlock_rlock_free);
    assert_int_equal(dlock_reentrant_new(&re, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, re, (void (*)(void *))dlock_rlock_free);
    snprintf(q, sizeof q, "redisson_lock_queue:{%s}", fx->name);
    snprintf(d, sizeof d, "redisson_lock_timeout:{%s}", fx->name);
    raw(fx->c1,
        "redis.call('rpush', KEYS[1], 'dead1', 'live', 'dead2') "
        "return redis.call('zadd', KEYS[2], 1, 'dead1', 99999999999999, 'live', 5, 'dead2')",
        2, 0, (const char *[]){q, d});
    assert_int_equal(dlock_fair_clear_dead(l, &dropped), 0);
    assert_int_equal(dropped, 2);
    assert_int_equal(dlock_backend_eval(dlock_client_backend(fx->c1), &r, &len, 1, 0,
                                        (const char *[]){q}, NULL, NULL, 0), 0);
    assert_int_equal(r->integer, 1);
    dlock_reply_free(r);
    assert_int_equal(dlock_fair_clear_dead(l, &dropped), 0);
    assert_int_equal(dropped, 0);
    raw(fx->c1, "redis.call('del', KEYS[2]) return redis.call('del', KEYS[1])", 2, 0,
        (const char *[]){q, d});
    assert_int_equal(dlock_fair_clear_dead(re, &dropped), DLOCK_EINVAL);
    assert_int_equal(dlock_fair_clear_dead(NULL, &dropped), DLOCK_EINVAL);
}

static void semaphore_release_within(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_semaphore *s;
    int64_t avail = -1;
    int set, done = -1;

    assert_int_equal(dlock_semaphore_new(&s, fx->c1, fx->name), 0);
    dlock_fx_keep(fx, s, free_sem);
    assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 2), 0);
    assert_int_equal(dlock_semaphore_try_acquire(s, 2, 0), 0);
    assert_int_equal(dlock_semaphore_release_within(s, &done, 1, 2), 0);
    assert_int_equal(done, 1);
    assert_int_equal(dlock_semaphore_release_within(s, &done, 5, 2), 0);
    assert_int_equal(done, 0);
    assert_int_equal(dlock_semaphore_available_permits(s, &avail), 0);
    assert_int_equal(avail, 1);
    assert_int_equal(dlock_semaphore_release_within(s, &done, 1, 2), 0);
    assert_int_equal(done, 1);
    assert_int_equal(dlock_semaphore_release_within(s, &done, 1, 2), 0);
    assert_int_equal(done, 0);
    assert_int_equal(dlock_semaphore_available_permits(s, &avail), 0);
    assert_int_equal(avail, 2);
    assert_int_equal(dlock_semaphore_release_within(s, NULL, 1, 2), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release_within(s, &done, 1, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_release_within(s, &done, -1, 2), DLOCK_EINVAL);
}

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest inspection_cases[] = {
    CASE(kind_of_every_type),
    CASE(scan_lists_objects_not_their_keys),
    CASE(scan_lists_locks_named_like_aux_keys),
    CASE(owner_description),
    CASE(fair_clear_dead_anywhere),
    CASE(semaphore_release_within),
};

int dlock_test_inspection(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("inspection", backend, inspection_cases);
}
