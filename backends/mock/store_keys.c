/*
 * dlock mock — commands on keys of any type, expiry, and PUBLISH.
 */
#include "store.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dlock_reply *cmd_del(dlock__cmd *c)
{
    long long n = 0;
    int i;

    for (i = 1; i < c->argc; i++)
        n += dlock__key_delete(c->st, c->argv[i], c->len[i]);
    return dlock_reply_integer(n);
}

static dlock_reply *cmd_exists(dlock__cmd *c)
{
    long long n = 0;
    int i;

    /* A key named twice counts twice, as in Redis. */
    for (i = 1; i < c->argc; i++)
        n += dlock__key_lookup(c->st, c->argv[i], c->len[i]) != NULL;
    return dlock_reply_integer(n);
}

static dlock_reply *cmd_type(dlock__cmd *c)
{
    static const char *const names[] = {"string", "hash", "list", "zset", "set"};
    dlock__obj *o = dlock__key_lookup(c->st, c->argv[1], c->len[1]);
    const char *t = o != NULL ? names[o->type] : "none";

    return dlock_reply_string(DLOCK_REPLY_STATUS, t, strlen(t));
}

enum { EXP_NX = 1, EXP_XX = 2, EXP_GT = 4, EXP_LT = 8 };

/* EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: unit_ms is 1 or 1000; absolute says
 * whether the argument is a Unix time (converted to the clock's now line
 * through the clock's wall time) or a duration. */
static dlock_reply *expire_generic(dlock__cmd *c, long long unit_ms, int absolute)
{
    dlock_mock_store *st = c->st;
    long long t;
    int64_t when;
    int flags = 0, i;
    dlock__obj *o;

    /* Options first, then the number: Redis's order of complaints. */
    for (i = 3; i < c->argc; i++) {
        if (dlock__arg_is(c, i, "nx"))
            flags |= EXP_NX;
        else if (dlock__arg_is(c, i, "xx"))
            flags |= EXP_XX;
        else if (dlock__arg_is(c, i, "gt"))
            flags |= EXP_GT;
        else if (dlock__arg_is(c, i, "lt"))
            flags |= EXP_LT;
        else
            return dlock__reply_errorf("ERR Unsupported option %.*s",
                                       (int)(c->len[i] > 128 ? 128 : c->len[i]),
                                       c->argv[i]);
    }
    if ((flags & EXP_NX) && (flags & (EXP_XX | EXP_GT | EXP_LT)))
        return dlock__reply_error(
            "ERR NX and XX, GT or LT options at the same time are not compatible");
    if ((flags & EXP_GT) && (flags & EXP_LT))
        return dlock__reply_error(
            "ERR GT and LT options at the same time are not compatible");
    if (!dlock__parse_ll(c->argv[2], c->len[2], &t))
        return dlock__reply_error(DLOCK__ERR_NOTINT);

    if (t > LLONG_MAX / unit_ms || t < LLONG_MIN / unit_ms)
        goto invalid;
    t *= unit_ms;
    if ((absolute ? dlock__expire_at(st, t, &when) : dlock__expire_after(st, t, &when)) != 0)
        goto invalid;

    o = dlock__key_lookup(st, c->argv[1], c->len[1]);
    if (o == NULL)
        return dlock_reply_integer(0);
    /* No expiry counts as an infinite one for GT and LT. */
    if ((flags & EXP_NX) && o->expire >= 0)
        return dlock_reply_integer(0);
    if ((flags & EXP_XX) && o->expire < 0)
        return dlock_reply_integer(0);
    if ((flags & EXP_GT) && (o->expire < 0 || when <= o->expire))
        return dlock_reply_integer(0);
    if ((flags & EXP_LT) && o->expire >= 0 && when >= o->expire)
        return dlock_reply_integer(0);
    if (when <= st->now)
        dlock__key_delete(st, c->argv[1], c->len[1]);
    else
        o->expire = when;
    return dlock_reply_integer(1);

invalid:
    return dlock__reply_errorf("ERR invalid expire time in '%s' command",
                               unit_ms == 1 ? (absolute ? "pexpireat" : "pexpire")
                                            : (absolute ? "expireat" : "expire"));
}

static dlock_reply *cmd_pexpire(dlock__cmd *c)
{
    return expire_generic(c, 1, 0);
}

static dlock_reply *cmd_expire(dlock__cmd *c)
{
    return expire_generic(c, 1000, 0);
}

static dlock_reply *cmd_pexpireat(dlock__cmd *c)
{
    return expire_generic(c, 1, 1);
}

static dlock_reply *cmd_expireat(dlock__cmd *c)
{
    return expire_generic(c, 1000, 1);
}

static dlock_reply *ttl_generic(dlock__cmd *c, int seconds)
{
    dlock__obj *o = dlock__key_lookup(c->st, c->argv[1], c->len[1]);
    long long ms;

    if (o == NULL)
        return dlock_reply_integer(-2);
    if (o->expire < 0)
        return dlock_reply_integer(-1);
    ms = (long long)(o->expire - c->st->now);
    return dlock_reply_integer(seconds ? (ms + 500) / 1000 : ms);
}

static dlock_reply *cmd_pttl(dlock__cmd *c)
{
    return ttl_generic(c, 0);
}

static dlock_reply *cmd_ttl(dlock__cmd *c)
{
    return ttl_generic(c, 1);
}

static dlock_reply *cmd_persist(dlock__cmd *c)
{
    dlock__obj *o = dlock__key_lookup(c->st, c->argv[1], c->len[1]);

    if (o == NULL || o->expire < 0)
        return dlock_reply_integer(0);
    o->expire = -1;
    return dlock_reply_integer(1);
}

static dlock_reply *cmd_publish(dlock__cmd *c)
{
    long long n = dlock__store_publish(c->st, c->argv[1], c->len[1], c->argv[2],
                                       c->len[2]);

    return n < 0 ? NULL : dlock_reply_integer(n);
}

static dlock_reply *cmd_ping(dlock__cmd *c)
{
    if (c->argc == 2)
        return dlock__reply_bulk(c->argv[1], c->len[1]);
    return dlock_reply_string(DLOCK_REPLY_STATUS, "PONG", 4);
}

/* The store's clock, read once per command or script (a script sees one
 * instant, as the keyspace does): on a virtual clock, virtual time. */
static dlock_reply *cmd_time(dlock__cmd *c)
{
    long long wall = (long long)c->st->wall, sec = wall / 1000, ms = wall % 1000;
    dlock_reply *r = dlock_reply_array(2);
    char buf[2][32];
    int n[2], i;

    if (ms < 0) /* a clock before 1970: floor, as gettimeofday's fields */
        sec--, ms += 1000;
    if (r == NULL)
        return NULL;
    n[0] = snprintf(buf[0], sizeof(buf[0]), "%lld", sec);
    n[1] = snprintf(buf[1], sizeof(buf[1]), "%lld", ms * 1000);
    for (i = 0; i < 2; i++)
        if ((r->elems[i] = dlock__reply_bulk(buf[i], (size_t)n[i])) == NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    return r;
}

static dlock_reply *cmd_dbsize(dlock__cmd *c)
{
    return dlock_reply_integer((long long)dlock__key_purge_expired(c->st));
}

/* SCAN cursor [MATCH pattern] [COUNT n]: the whole keyspace in one step
 * (cursor "0" back), which Redis's guarantees allow (COUNT is a hint): no
 * key is missed or repeated whatever the store does between calls. MATCH is
 * Redis's glob, as fnmatch(3) reads it without flags ('*', '?', [...],
 * backslash escapes). */
static dlock_reply *cmd_scan(dlock__cmd *c)
{
    const dlock__dict_entry *e;
    char *pattern = NULL;
    long long cur, count;
    dlock_reply *r, *keys;
    size_t n = 0;
    int i;

    if (!dlock__parse_ll(c->argv[1], c->len[1], &cur) || cur < 0)
        return dlock__reply_error("ERR invalid cursor");
    for (i = 2; i < c->argc; i += 2) {
        if (i + 1 >= c->argc)
            goto syntax;
        if (dlock__arg_is(c, i, "match")) {
            free(pattern);
            if ((pattern = malloc(c->len[i + 1] + 1)) == NULL)
                return NULL;
            memcpy(pattern, c->argv[i + 1], c->len[i + 1]);
            pattern[c->len[i + 1]] = '\0';
        } else if (dlock__arg_is(c, i, "count")) {
            if (!dlock__parse_ll(c->argv[i + 1], c->len[i + 1], &count))
                goto notint;
            if (count < 1)
                goto syntax;
        } else {
            goto syntax;
        }
    }
    dlock__key_purge_expired(c->st);
    for (e = c->st->keys.head; e; e = e->next)
        n += !pattern || fnmatch(pattern, e->key, 0) == 0;
    r = dlock_reply_array(2);
    keys = dlock_reply_array(n);
    if (!r || !keys)
        goto nomem;
    r->elems[1] = keys;
    if ((r->elems[0] = dlock__reply_bulk("0", 1)) == NULL)
        goto nomem;
    n = 0;
    for (e = c->st->keys.head; e; e = e->next)
        if (!pattern || fnmatch(pattern, e->key, 0) == 0)
            if ((keys->elems[n++] = dlock__reply_bulk(e->key, e->klen)) == NULL)
                goto nomem;
    free(pattern);
    return r;

nomem:
    if (r)
        dlock_reply_free(r);
    else if (keys)
        dlock_reply_free(keys);
    free(pattern);
    return NULL;
notint:
    free(pattern);
    return dlock__reply_error(DLOCK__ERR_NOTINT);
syntax:
    free(pattern);
    return dlock__reply_error(DLOCK__ERR_SYNTAX);
}

static dlock_reply *cmd_flushall(dlock__cmd *c)
{
    if (c->argc > 2 ||
        (c->argc == 2 && !dlock__arg_is(c, 1, "sync") && !dlock__arg_is(c, 1, "async")))
        return dlock__reply_error(DLOCK__ERR_SYNTAX);
    dlock__dict_clear(&c->st->keys);
    return dlock__reply_ok();
}

const dlock__cmd_def dlock__cmds_keys[] = {
    {"dbsize", 1, cmd_dbsize},
    {"del", -2, cmd_del},
    {"exists", -2, cmd_exists},
    {"expire", -3, cmd_expire},
    {"expireat", -3, cmd_expireat},
    {"flushall", -1, cmd_flushall},
    {"flushdb", -1, cmd_flushall},
    {"persist", 2, cmd_persist},
    {"pexpire", -3, cmd_pexpire},
    {"pexpireat", -3, cmd_pexpireat},
    {"ping", -1, cmd_ping},
    {"pttl", 2, cmd_pttl},
    {"publish", 3, cmd_publish},
    {"scan", -2, cmd_scan},
    /* Sharded pub/sub is plain pub/sub on one node: a script given
     * "spublish" (api/dlock/sys/backend.h: publish_command) reaches the
     * same subscribers. */
    {"spublish", 3, cmd_publish},
    {"time", 1, cmd_time},
    {"ttl", 2, cmd_ttl},
    {"type", 2, cmd_type},
    {"unlink", -2, cmd_del},
};
const size_t dlock__ncmds_keys = sizeof(dlock__cmds_keys) / sizeof(dlock__cmds_keys[0]);
