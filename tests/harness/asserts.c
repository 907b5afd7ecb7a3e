/*
 * Reads that fail the test unless they succeed (see asserts.h).
 */
#include "asserts.h"
#include "fixture.h"
#include "runner.h"

#include <stdio.h>
#include <string.h>

#include "dlock/sys/backend.h"

int dlock_fx_is_locked(dlock_rlock *l)
{
    int v = -1;
    assert_int_equal(dlock_is_locked(l, &v), 0);
    return v;
}

int dlock_fx_is_held(dlock_rlock *l)
{
    int v = -1;
    assert_int_equal(dlock_is_held(l, &v), 0);
    return v;
}

int dlock_fx_is_held_as(dlock_rlock *l, const char *owner)
{
    int v = -1;
    assert_int_equal(dlock_is_held_as(l, owner, &v), 0);
    return v;
}

int64_t dlock_fx_hold_count(dlock_rlock *l)
{
    int64_t v = -1;
    assert_int_equal(dlock_hold_count(l, &v), 0);
    return v;
}

int64_t dlock_fx_hold_count_as(dlock_rlock *l, const char *owner)
{
    int64_t v = -1;
    assert_int_equal(dlock_hold_count_as(l, owner, &v), 0);
    return v;
}

int64_t dlock_fx_remain_ttl(dlock_rlock *l)
{
    /* -3: no TTL reply ever says that */
    int64_t v = -3;
    assert_int_equal(dlock_remain_ttl(l, &v), 0);
    return v;
}

void dlock_fx_call_str(dlock_client *c, char *buf, size_t len, const char *cmd,
                       const char *key, int nargs, const char *a1, const char *a2)
{
    dlock_reply *r = NULL;

    assert_int_equal(dlock_fx_call(c, &r, cmd, key, nargs, a1, a2), 0);
    assert_non_null(r);
    if (r->type == DLOCK_REPLY_INTEGER)
        snprintf(buf, len, "%lld", r->integer);
    else if (r->type == DLOCK_REPLY_NIL)
        snprintf(buf, len, "%s", "");
    else if (r->type == DLOCK_REPLY_ERROR)
        snprintf(buf, len, "ERR:%s", r->str);
    else
        snprintf(buf, len, "%s", r->str ? r->str : "");
    dlock_reply_free(r);
}

long long dlock_fx_call_int(dlock_client *c, const char *cmd, const char *key,
                            int nargs, const char *a1)
{
    dlock_reply *r = NULL;
    long long v;

    assert_int_equal(dlock_fx_call(c, &r, cmd, key, nargs, a1, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    v = r->integer;
    dlock_reply_free(r);
    return v;
}

void dlock_fx_expect_open_fails(const char *tag, const char *url,
                                const dlock_redis_options *o, int code,
                                const char *needle, const char *secret,
                                char *errbuf, size_t errlen)
{
    dlock_backend *b = (dlock_backend *)1;
    int rc;
    errbuf[0] = '\0';
    rc = dlock_redis_backend_new(&b, url, o, errbuf, errlen);
    printf("  [%s] %s\n", tag, errbuf);
    if (rc != code || !strstr(errbuf, needle))
        fprintf(stderr, "url '%s': %s '%s' (expected %s with '%s')\n", url,
                dlock_errname(rc), errbuf, dlock_errname(code), needle);
    assert_int_equal(rc, code);
    assert_null(b);
    assert_non_null(strstr(errbuf, needle));
    assert_null(strstr(errbuf, secret));
    /* one line */
    assert_null(strchr(errbuf, '\n'));
}

long long dlock_fx_incr(dlock_backend *b, const char *key, char *errbuf, size_t errlen)
{
    static const dlock_script incr = {"fx_incr", "return redis.call('INCR', KEYS[1])"};
    dlock_reply *r = NULL;
    const char *argv[1];
    long long v;
    argv[0] = key;
    errbuf[0] = '\0';
    if (dlock_backend_eval(b, &r, &incr, 1, 0, argv, NULL, errbuf, errlen) != 0)
        return -1;
    v = r->type == DLOCK_REPLY_INTEGER ? r->integer : -1;
    dlock_reply_free(r);
    return v;
}
