/*
 * dlock mock — string commands (semaphore and latch counters live here).
 */
#include "store.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static dlock_reply *cmd_get(dlock__cmd *c)
{
    dlock__obj *o;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_STRING, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_nil();
    return dlock__reply_bulk(o->u.str->buf, o->u.str->len);
}

static dlock_reply *cmd_getdel(dlock__cmd *c)
{
    dlock_reply *r = cmd_get(c);

    if (r != NULL && r->type == DLOCK_REPLY_BULK)
        dlock__key_delete(c->st, c->argv[1], c->len[1]);
    return r;
}

static dlock_reply *cmd_mget(dlock__cmd *c)
{
    dlock_reply *r = dlock_reply_array((size_t)c->argc - 1);
    int i;

    if (r == NULL)
        return NULL;
    for (i = 1; i < c->argc; i++) {
        dlock__obj *o = dlock__key_lookup(c->st, c->argv[i], c->len[i]);

        /* MGET answers nil for keys of another type instead of failing. */
        if (o != NULL && o->type == DLOCK__OBJ_STRING)
            r->elems[i - 1] = dlock__reply_bulk(o->u.str->buf, o->u.str->len);
        else
            r->elems[i - 1] = dlock_reply_nil();
        if (r->elems[i - 1] == NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    }
    return r;
}

enum {
    SET_NX = 1,
    SET_XX = 2,
    SET_EX = 4,
    SET_PX = 8,
    SET_EXAT = 16,
    SET_PXAT = 32,
    SET_KEEPTTL = 64,
    SET_GET = 128
};
#define SET_ANY_TTL (SET_EX | SET_PX | SET_EXAT | SET_PXAT | SET_KEEPTTL)

static dlock_reply *cmd_set(dlock__cmd *c)
{
    dlock_mock_store *st = c->st;
    int flags = 0, i, ttl_arg = 0;
    long long t = 0;
    int64_t expire = -1;
    dlock__obj *o;
    dlock_reply *old = NULL;

    /* Same acceptance rules as Redis 7.0: a TTL option may repeat itself
     * but not combine with another one. */
    for (i = 3; i < c->argc; i++) {
        int has_next = i + 1 < c->argc;

        if (dlock__arg_is(c, i, "nx") && !(flags & SET_XX))
            flags |= SET_NX;
        else if (dlock__arg_is(c, i, "xx") && !(flags & SET_NX))
            flags |= SET_XX;
        else if (dlock__arg_is(c, i, "get"))
            flags |= SET_GET;
        else if (dlock__arg_is(c, i, "keepttl") && !(flags & (SET_ANY_TTL & ~SET_KEEPTTL)))
            flags |= SET_KEEPTTL;
        else if (dlock__arg_is(c, i, "ex") && has_next && !(flags & (SET_ANY_TTL & ~SET_EX)))
            flags |= SET_EX, ttl_arg = ++i;
        else if (dlock__arg_is(c, i, "px") && has_next && !(flags & (SET_ANY_TTL & ~SET_PX)))
            flags |= SET_PX, ttl_arg = ++i;
        else if (dlock__arg_is(c, i, "exat") && has_next && !(flags & (SET_ANY_TTL & ~SET_EXAT)))
            flags |= SET_EXAT, ttl_arg = ++i;
        else if (dlock__arg_is(c, i, "pxat") && has_next && !(flags & (SET_ANY_TTL & ~SET_PXAT)))
            flags |= SET_PXAT, ttl_arg = ++i;
        else
            return dlock__reply_error(DLOCK__ERR_SYNTAX);
    }
    if (ttl_arg != 0) {
        long long unit = (flags & (SET_EX | SET_EXAT)) ? 1000 : 1;

        if (!dlock__parse_ll(c->argv[ttl_arg], c->len[ttl_arg], &t))
            return dlock__reply_error(DLOCK__ERR_NOTINT);
        if (t <= 0 || t > LLONG_MAX / unit)
            return dlock__reply_error("ERR invalid expire time in 'set' command");
        t *= unit;
        if (((flags & (SET_EXAT | SET_PXAT)) ? dlock__expire_at(st, t, &expire)
                                             : dlock__expire_after(st, t, &expire)) != 0)
            return dlock__reply_error("ERR invalid expire time in 'set' command");
    }

    o = dlock__key_lookup(st, c->argv[1], c->len[1]);
    if (flags & SET_GET) {
        if (o != NULL && o->type != DLOCK__OBJ_STRING)
            return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
        old = o != NULL ? dlock__reply_bulk(o->u.str->buf, o->u.str->len)
                        : dlock_reply_nil();
        if (old == NULL)
            return NULL;
    }
    if (((flags & SET_NX) && o != NULL) || ((flags & SET_XX) && o == NULL))
        return old != NULL ? old : dlock_reply_nil();
    if (dlock__key_set_string(st, c->argv[1], c->len[1], c->argv[2], c->len[2],
                              (flags & SET_KEEPTTL) != 0) != 0) {
        dlock_reply_free(old);
        return NULL;
    }
    if (ttl_arg != 0) {
        if (expire <= st->now) {
            /* EXAT/PXAT in the past: set, then gone at once. */
            dlock__key_delete(st, c->argv[1], c->len[1]);
        } else {
            o = dlock__key_lookup(st, c->argv[1], c->len[1]);
            if (o != NULL)
                o->expire = expire;
        }
    }
    return old != NULL ? old : dlock__reply_ok();
}

/* SETEX key seconds value, PSETEX key milliseconds value. */
static dlock_reply *setex_generic(dlock__cmd *c, long long unit, const char *name)
{
    long long t;
    int64_t expire;
    dlock__obj *o;

    if (!dlock__parse_ll(c->argv[2], c->len[2], &t))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (t <= 0 || t > LLONG_MAX / unit || dlock__expire_after(c->st, t * unit, &expire) != 0)
        return dlock__reply_errorf("ERR invalid expire time in '%s' command", name);
    if (dlock__key_set_string(c->st, c->argv[1], c->len[1], c->argv[3], c->len[3], 0) != 0)
        return NULL;
    if ((o = dlock__key_lookup(c->st, c->argv[1], c->len[1])) != NULL)
        o->expire = expire;
    return dlock__reply_ok();
}

static dlock_reply *cmd_setex(dlock__cmd *c)
{
    return setex_generic(c, 1000, "setex");
}

static dlock_reply *cmd_psetex(dlock__cmd *c)
{
    return setex_generic(c, 1, "psetex");
}

/* GETSET: the old value; the new one has no TTL, as SET without KEEPTTL. */
static dlock_reply *cmd_getset(dlock__cmd *c)
{
    dlock_reply *r = cmd_get(c);

    if (r == NULL || r->type == DLOCK_REPLY_ERROR)
        return r;
    if (dlock__key_set_string(c->st, c->argv[1], c->len[1], c->argv[2], c->len[2], 0) != 0) {
        dlock_reply_free(r);
        return NULL;
    }
    return r;
}

static dlock_reply *cmd_strlen(dlock__cmd *c)
{
    dlock__obj *o;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_STRING, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    return dlock_reply_integer(o != NULL ? (long long)o->u.str->len : 0);
}

static dlock_reply *cmd_setnx(dlock__cmd *c)
{
    if (dlock__key_lookup(c->st, c->argv[1], c->len[1]) != NULL)
        return dlock_reply_integer(0);
    if (dlock__key_set_string(c->st, c->argv[1], c->len[1], c->argv[2], c->len[2],
                              0) != 0)
        return NULL;
    return dlock_reply_integer(1);
}

static dlock_reply *incr_generic(dlock__cmd *c, long long by)
{
    dlock__obj *o;
    long long v = 0;
    char buf[32];
    int n;
    dlock__mstr *m;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_STRING, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o != NULL && !dlock__parse_ll(o->u.str->buf, o->u.str->len, &v))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if ((by > 0 && v > LLONG_MAX - by) || (by < 0 && v < LLONG_MIN - by))
        return dlock__reply_error(DLOCK__ERR_OVERFLOW);
    v += by;
    n = snprintf(buf, sizeof(buf), "%lld", v);
    if (o == NULL) {
        if (dlock__key_set_string(c->st, c->argv[1], c->len[1], buf, (size_t)n, 0) != 0)
            return NULL;
    } else {
        /* In place, so the key keeps its TTL, as INCR does in Redis. */
        m = dlock__mstr_new(buf, (size_t)n);
        if (m == NULL)
            return NULL;
        free(o->u.str);
        o->u.str = m;
    }
    return dlock_reply_integer(v);
}

static dlock_reply *cmd_incrbyfloat(dlock__cmd *c)
{
    long double v = 0, by;
    char buf[5 * 1024]; /* "%.17Lf" of a large double: Redis's own bound */
    size_t n;
    dlock__obj *o;
    dlock__mstr *m;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_STRING, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if ((o != NULL && !dlock__parse_ld(o->u.str->buf, o->u.str->len, &v)) ||
        !dlock__parse_ld(c->argv[2], c->len[2], &by))
        return dlock__reply_error(DLOCK__ERR_NOTFLOAT);
    v += by;
    if (isnan(v) || isinf(v))
        return dlock__reply_error(DLOCK__ERR_NANINF);
    n = dlock__format_ld(buf, sizeof(buf), v);
    if (o == NULL) {
        if (dlock__key_set_string(c->st, c->argv[1], c->len[1], buf, n, 0) != 0)
            return NULL;
    } else {
        /* In place: the key keeps its TTL, as in Redis. */
        if ((m = dlock__mstr_new(buf, n)) == NULL)
            return NULL;
        free(o->u.str);
        o->u.str = m;
    }
    return dlock__reply_bulk(buf, n);
}

static dlock_reply *cmd_incr(dlock__cmd *c)
{
    return incr_generic(c, 1);
}

static dlock_reply *cmd_decr(dlock__cmd *c)
{
    return incr_generic(c, -1);
}

static dlock_reply *cmd_incrby(dlock__cmd *c)
{
    long long by;

    if (!dlock__parse_ll(c->argv[2], c->len[2], &by))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    return incr_generic(c, by);
}

static dlock_reply *cmd_decrby(dlock__cmd *c)
{
    long long by;

    if (!dlock__parse_ll(c->argv[2], c->len[2], &by))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (by == LLONG_MIN)
        return dlock__reply_error("ERR decrement would overflow");
    return incr_generic(c, -by);
}

const dlock__cmd_def dlock__cmds_string[] = {
    {"decr", 2, cmd_decr},
    {"decrby", 3, cmd_decrby},
    {"get", 2, cmd_get},
    {"getdel", 2, cmd_getdel},
    {"getset", 3, cmd_getset},
    {"incr", 2, cmd_incr},
    {"incrby", 3, cmd_incrby},
    {"incrbyfloat", 3, cmd_incrbyfloat},
    {"mget", -2, cmd_mget},
    {"psetex", 4, cmd_psetex},
    {"set", -3, cmd_set},
    {"setex", 4, cmd_setex},
    {"setnx", 3, cmd_setnx},
    {"strlen", 2, cmd_strlen},
};
const size_t dlock__ncmds_string =
    sizeof(dlock__cmds_string) / sizeof(dlock__cmds_string[0]);
