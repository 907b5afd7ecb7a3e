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

long long dlock_fx_list_len(dlock_client *c, const char *key)
{
    dlock_reply *r = NULL;
    long long v;

    assert_int_equal(dlock_fx_call(c, &r, "LRANGE", key, 2, "0", "-1"), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ARRAY);
    v = (long long)r->n;
    dlock_reply_free(r);
    return v;
}

/* Appends text (n bytes) to buf at *at; fails the test when it is full. */
static void dump_put(char *buf, size_t len, size_t *at, const char *text, size_t n)
{
    assert_true(*at + n < len);
    memcpy(buf + *at, text, n);
    *at += n;
    buf[*at] = '\0';
}

void dlock_fx_keys_dump(dlock_client *c, const char *const *keys, char *buf, size_t len)
{
    static const struct {
        const char *type, *cmd;
        int nargs;
        const char *a1, *a2, *a3;
    } reads[] = {
        {"string", "get", 0, NULL, NULL, NULL},
        {"hash", "hgetall", 0, NULL, NULL, NULL},
        {"list", "lrange", 2, "0", "-1", NULL},
        {"zset", "zrange", 3, "0", "-1", "withscores"},
        {"set", "smembers", 0, NULL, NULL, NULL},
    };
    size_t at = 0, i, k;

    assert_true(len > 0);
    buf[0] = '\0';
    for (; *keys; keys++) {
        char type[32], ttl[32];
        dlock_reply *r = NULL;

        dlock_fx_call_str(c, type, sizeof(type), "type", *keys, 0, NULL, NULL);
        dump_put(buf, len, &at, *keys, strlen(*keys));
        dump_put(buf, len, &at, "=", 1);
        dump_put(buf, len, &at, type, strlen(type));
        dump_put(buf, len, &at, "[", 1);
        for (i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
            if (strcmp(type, reads[i].type) != 0)
                continue;
            assert_int_equal(dlock_fx_call(c, &r, reads[i].cmd, *keys, reads[i].nargs,
                                           reads[i].a1, reads[i].a2, reads[i].a3), 0);
            assert_non_null(r);
            assert_true(r->type != DLOCK_REPLY_ERROR);
            if (r->type == DLOCK_REPLY_ARRAY) {
                for (k = 0; k < r->n; k++) {
                    const dlock_reply *e = r->elems[k];
                    char num[32];

                    if (k > 0)
                        dump_put(buf, len, &at, " ", 1);
                    if (e->type == DLOCK_REPLY_INTEGER) {
                        snprintf(num, sizeof(num), "%lld", e->integer);
                        dump_put(buf, len, &at, num, strlen(num));
                    } else if (e->str) {
                        dump_put(buf, len, &at, e->str, e->len);
                    }
                }
            } else if (r->str) {
                dump_put(buf, len, &at, r->str, r->len);
            }
            dlock_reply_free(r);
            r = NULL;
        }
        dlock_fx_call_str(c, ttl, sizeof(ttl), "pttl", *keys, 0, NULL, NULL);
        if (strcmp(ttl, "-1") != 0 && strcmp(ttl, "-2") != 0)
            snprintf(ttl, sizeof(ttl), "ttl");
        dump_put(buf, len, &at, "] ", 2);
        dump_put(buf, len, &at, ttl, strlen(ttl));
        dump_put(buf, len, &at, ";", 1);
    }
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
