/*
 * dlock mock — hash commands (reentrant, fair and read-write lock state).
 */
#include "store.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Sets field to value; 1 if the field is new, 0 if replaced, -1 on ENOMEM. */
static int hash_put(dlock__obj *o, const char *f, size_t flen, const char *v,
                    size_t vlen)
{
    dlock__dict_entry *e = dlock__dict_find(&o->u.hash, f, flen);
    dlock__mstr *m = dlock__mstr_new(v, vlen);

    if (m == NULL)
        return -1;
    if (e != NULL) {
        free(e->val);
        e->val = m;
        return 0;
    }
    if (dlock__dict_add(&o->u.hash, f, flen, m) == NULL) {
        free(m);
        return -1;
    }
    return 1;
}

/* The hash at argv[1], created when absent. *err is set on WRONGTYPE. */
static dlock__obj *hash_for_write(dlock__cmd *c, dlock_reply **err)
{
    dlock__obj *o;

    *err = NULL;
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0) {
        *err = dlock__reply_error(DLOCK__ERR_WRONGTYPE);
        return NULL;
    }
    if (o == NULL)
        o = dlock__key_create(c->st, c->argv[1], c->len[1], DLOCK__OBJ_HASH);
    return o;
}

static dlock_reply *hset_generic(dlock__cmd *c, int status_reply)
{
    dlock_reply *err;
    dlock__obj *o;
    long long added = 0;
    int i;

    if (c->argc % 2 != 0)
        return dlock__reply_errorf("ERR wrong number of arguments for '%s' command",
                                   status_reply ? "hmset" : "hset");
    o = hash_for_write(c, &err);
    if (o == NULL)
        return err;
    for (i = 2; i < c->argc; i += 2) {
        int rc = hash_put(o, c->argv[i], c->len[i], c->argv[i + 1], c->len[i + 1]);

        if (rc < 0) {
            dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
            return NULL;
        }
        added += rc;
    }
    return status_reply ? dlock__reply_ok() : dlock_reply_integer(added);
}

static dlock_reply *cmd_hset(dlock__cmd *c)
{
    return hset_generic(c, 0);
}

static dlock_reply *cmd_hmset(dlock__cmd *c)
{
    return hset_generic(c, 1);
}

static dlock_reply *cmd_hsetnx(dlock__cmd *c)
{
    dlock_reply *err;
    dlock__obj *o = hash_for_write(c, &err);
    int rc;

    if (o == NULL)
        return err;
    if (dlock__dict_find(&o->u.hash, c->argv[2], c->len[2]) != NULL)
        return dlock_reply_integer(0);
    rc = hash_put(o, c->argv[2], c->len[2], c->argv[3], c->len[3]);
    if (rc < 0) {
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        return NULL;
    }
    return dlock_reply_integer(1);
}

static dlock_reply *cmd_hget(dlock__cmd *c)
{
    dlock__dict_entry *e;
    dlock__obj *o;
    dlock__mstr *m;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL || (e = dlock__dict_find(&o->u.hash, c->argv[2], c->len[2])) == NULL)
        return dlock_reply_nil();
    m = e->val;
    return dlock__reply_bulk(m->buf, m->len);
}

static dlock_reply *cmd_hmget(dlock__cmd *c)
{
    dlock_reply *r;
    dlock__obj *o;
    int i;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    r = dlock_reply_array((size_t)c->argc - 2);
    if (r == NULL)
        return NULL;
    for (i = 2; i < c->argc; i++) {
        dlock__dict_entry *e =
            o != NULL ? dlock__dict_find(&o->u.hash, c->argv[i], c->len[i]) : NULL;
        dlock__mstr *m = e != NULL ? e->val : NULL;

        r->elems[i - 2] = m != NULL ? dlock__reply_bulk(m->buf, m->len) : dlock_reply_nil();
        if (r->elems[i - 2] == NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    }
    return r;
}

static dlock_reply *cmd_hdel(dlock__cmd *c)
{
    dlock__obj *o;
    long long n = 0;
    int i;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_integer(0);
    for (i = 2; i < c->argc; i++)
        n += dlock__dict_delete(&o->u.hash, c->argv[i], c->len[i]);
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return dlock_reply_integer(n);
}

static dlock_reply *cmd_hexists(dlock__cmd *c)
{
    dlock__obj *o;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    return dlock_reply_integer(
        o != NULL && dlock__dict_find(&o->u.hash, c->argv[2], c->len[2]) != NULL);
}

static dlock_reply *cmd_hlen(dlock__cmd *c)
{
    dlock__obj *o;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    return dlock_reply_integer(o != NULL ? (long long)o->u.hash.size : 0);
}

enum { WANT_KEYS = 1, WANT_VALS = 2 };

static dlock_reply *hash_dump(dlock__cmd *c, int want)
{
    dlock__dict_entry *e;
    dlock_reply *r;
    dlock__obj *o;
    size_t per = (want & WANT_KEYS ? 1 : 0) + (want & WANT_VALS ? 1 : 0), i = 0;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_HASH, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    r = dlock_reply_array(o != NULL ? o->u.hash.size * per : 0);
    if (r == NULL || o == NULL)
        return r;
    for (e = o->u.hash.head; e != NULL; e = e->next) {
        dlock__mstr *m = e->val;

        if (want & WANT_KEYS) {
            if ((r->elems[i++] = dlock__reply_bulk(e->key, e->klen)) == NULL)
                goto oom;
        }
        if (want & WANT_VALS) {
            if ((r->elems[i++] = dlock__reply_bulk(m->buf, m->len)) == NULL)
                goto oom;
        }
    }
    return r;
oom:
    dlock_reply_free(r);
    return NULL;
}

static dlock_reply *cmd_hgetall(dlock__cmd *c)
{
    return hash_dump(c, WANT_KEYS | WANT_VALS);
}

static dlock_reply *cmd_hkeys(dlock__cmd *c)
{
    return hash_dump(c, WANT_KEYS);
}

static dlock_reply *cmd_hvals(dlock__cmd *c)
{
    return hash_dump(c, WANT_VALS);
}

static dlock_reply *cmd_hincrby(dlock__cmd *c)
{
    dlock__dict_entry *e;
    dlock_reply *err;
    dlock__obj *o;
    long long by, v = 0;
    char buf[32];
    int n;

    if (!dlock__parse_ll(c->argv[3], c->len[3], &by))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    o = hash_for_write(c, &err);
    if (o == NULL)
        return err;
    e = dlock__dict_find(&o->u.hash, c->argv[2], c->len[2]);
    if (e != NULL) {
        dlock__mstr *m = e->val;

        if (!dlock__parse_ll(m->buf, m->len, &v))
            return dlock__reply_error("ERR hash value is not an integer");
    }
    if ((by > 0 && v > LLONG_MAX - by) || (by < 0 && v < LLONG_MIN - by)) {
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        return dlock__reply_error(DLOCK__ERR_OVERFLOW);
    }
    v += by;
    n = snprintf(buf, sizeof(buf), "%lld", v);
    if (hash_put(o, c->argv[2], c->len[2], buf, (size_t)n) < 0) {
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        return NULL;
    }
    return dlock_reply_integer(v);
}

static dlock_reply *cmd_hincrbyfloat(dlock__cmd *c)
{
    dlock__dict_entry *e;
    dlock_reply *err;
    dlock__obj *o;
    long double by, v = 0;
    char buf[5 * 1024]; /* "%.17Lf" of a large double: Redis's own bound */
    size_t n;

    if (!dlock__parse_ld(c->argv[3], c->len[3], &by))
        return dlock__reply_error(DLOCK__ERR_NOTFLOAT);
    if (isnan(by) || isinf(by))
        return dlock__reply_error("ERR value is NaN or Infinity");
    o = hash_for_write(c, &err);
    if (o == NULL)
        return err;
    e = dlock__dict_find(&o->u.hash, c->argv[2], c->len[2]);
    if (e != NULL) {
        dlock__mstr *m = e->val;

        if (!dlock__parse_ld(m->buf, m->len, &v))
            return dlock__reply_error("ERR hash value is not a float");
    }
    v += by;
    if (isnan(v) || isinf(v)) {
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        return dlock__reply_error(DLOCK__ERR_NANINF);
    }
    n = dlock__format_ld(buf, sizeof(buf), v);
    if (hash_put(o, c->argv[2], c->len[2], buf, n) < 0) {
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        return NULL;
    }
    return dlock__reply_bulk(buf, n);
}

const dlock__cmd_def dlock__cmds_hash[] = {
    {"hdel", -3, cmd_hdel},
    {"hexists", 3, cmd_hexists},
    {"hget", 3, cmd_hget},
    {"hgetall", 2, cmd_hgetall},
    {"hincrby", 4, cmd_hincrby},
    {"hincrbyfloat", 4, cmd_hincrbyfloat},
    {"hkeys", 2, cmd_hkeys},
    {"hlen", 2, cmd_hlen},
    {"hmget", -3, cmd_hmget},
    {"hmset", -4, cmd_hmset},
    {"hset", -4, cmd_hset},
    {"hsetnx", 4, cmd_hsetnx},
    {"hvals", 2, cmd_hvals},
};
const size_t dlock__ncmds_hash = sizeof(dlock__cmds_hash) / sizeof(dlock__cmds_hash[0]);
