/*
 * dlock mock — set commands (for scripts of user-made lock types: holders,
 * tokens, members of a group).
 *
 * Members are the keys of a dict with no values; replies list them in
 * insertion order (Redis's order is an encoding detail: callers that
 * compare replies sort them). SPOP takes the oldest member rather than a
 * random one: Redis promises no order, and a deterministic mock is easier to
 * test against.
 */
#include "store.h"

#include <stdlib.h>

/* The set at argv[i]: 0 (*out NULL when absent) or a WRONGTYPE reply. */
static dlock_reply *set_lookup(dlock__cmd *c, int i, dlock__obj **out)
{
    if (dlock__key_lookup_typed(c, i, DLOCK__OBJ_SET, out) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    return NULL;
}

static int set_has(const dlock__obj *o, const char *m, size_t len)
{
    return o != NULL && dlock__dict_find(&o->u.set, m, len) != NULL;
}

static dlock_reply *cmd_sadd(dlock__cmd *c)
{
    dlock_reply *err;
    dlock__obj *o;
    long long added = 0;
    int i;

    if ((err = set_lookup(c, 1, &o)) != NULL)
        return err;
    if (o == NULL &&
        (o = dlock__key_create(c->st, c->argv[1], c->len[1], DLOCK__OBJ_SET)) == NULL)
        return NULL;
    for (i = 2; i < c->argc; i++) {
        if (set_has(o, c->argv[i], c->len[i]))
            continue;
        if (dlock__dict_add(&o->u.set, c->argv[i], c->len[i], NULL) == NULL) {
            dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
            return NULL;
        }
        added++;
    }
    return dlock_reply_integer(added);
}

static dlock_reply *cmd_srem(dlock__cmd *c)
{
    dlock_reply *err;
    dlock__obj *o;
    long long n = 0;
    int i;

    if ((err = set_lookup(c, 1, &o)) != NULL)
        return err;
    if (o == NULL)
        return dlock_reply_integer(0);
    for (i = 2; i < c->argc; i++)
        n += dlock__dict_delete(&o->u.set, c->argv[i], c->len[i]);
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return dlock_reply_integer(n);
}

static dlock_reply *cmd_sismember(dlock__cmd *c)
{
    dlock_reply *err;
    dlock__obj *o;

    if ((err = set_lookup(c, 1, &o)) != NULL)
        return err;
    return dlock_reply_integer(set_has(o, c->argv[2], c->len[2]));
}

static dlock_reply *cmd_smismember(dlock__cmd *c)
{
    dlock_reply *err, *r;
    dlock__obj *o;
    int i;

    if ((err = set_lookup(c, 1, &o)) != NULL)
        return err;
    if ((r = dlock_reply_array((size_t)c->argc - 2)) == NULL)
        return NULL;
    for (i = 2; i < c->argc; i++)
        if ((r->elems[i - 2] = dlock_reply_integer(set_has(o, c->argv[i], c->len[i]))) ==
            NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    return r;
}

static dlock_reply *cmd_scard(dlock__cmd *c)
{
    dlock_reply *err;
    dlock__obj *o;

    if ((err = set_lookup(c, 1, &o)) != NULL)
        return err;
    return dlock_reply_integer(o != NULL ? (long long)o->u.set.size : 0);
}

enum { OP_INTER, OP_UNION, OP_DIFF };

/* Whether a member of the first set belongs in an intersection or a
 * difference with the others. */
static int keep_member(dlock__obj *const *sets, int n, int op,
                       const dlock__dict_entry *e)
{
    int k;

    for (k = 1; k < n; k++) {
        int has = set_has(sets[k], e->key, e->klen);

        if (op == OP_INTER && !has)
            return 0;
        if (op == OP_DIFF && has)
            return 0;
    }
    return 1;
}

/* SINTER, SUNION, SDIFF, SINTERCARD: every key is checked for its type
 * first, as Redis does, so a WRONGTYPE anywhere fails the whole command. */
static dlock_reply *set_algebra(dlock__cmd *c, int first, int nkeys, int op,
                                long long limit, int count_only)
{
    dlock__obj *stack_sets[8], **sets = stack_sets;
    dlock__dict seen; /* union: members already listed */
    dlock__dict_entry *e;
    dlock_reply *r = NULL, *err = NULL;
    size_t cap = 0, n = 0;
    int k;

    if (nkeys > 8 && (sets = malloc((size_t)nkeys * sizeof(*sets))) == NULL)
        return NULL;
    for (k = 0; k < nkeys; k++)
        if ((err = set_lookup(c, first + k, &sets[k])) != NULL)
            goto done;
    dlock__dict_init(&seen, NULL);
    for (k = 0; k < nkeys; k++)
        cap += sets[k] != NULL ? sets[k]->u.set.size : 0;
    if (op != OP_UNION)
        cap = sets[0] != NULL ? sets[0]->u.set.size : 0;
    if (!count_only && (r = dlock_reply_array(cap)) == NULL)
        goto done_seen;
    for (k = 0; k < (op == OP_UNION ? nkeys : 1); k++) {
        if (sets[k] == NULL)
            continue;
        for (e = sets[k]->u.set.head; e != NULL; e = e->next) {
            if (limit > 0 && (long long)n >= limit)
                break;
            if (op == OP_UNION) {
                if (dlock__dict_find(&seen, e->key, e->klen) != NULL)
                    continue;
                if (dlock__dict_add(&seen, e->key, e->klen, NULL) == NULL)
                    goto oom;
            } else if (!keep_member(sets, nkeys, op, e)) {
                continue;
            }
            if (!count_only && (r->elems[n] = dlock__reply_bulk(e->key, e->klen)) == NULL)
                goto oom;
            n++;
        }
    }
    if (count_only)
        r = dlock_reply_integer((long long)n);
    else
        r->n = n; /* the slots past n were never filled */
    goto done_seen;
oom:
    dlock_reply_free(r);
    r = NULL;
done_seen:
    dlock__dict_clear(&seen);
done:
    if (sets != stack_sets)
        free(sets);
    return err != NULL ? err : r;
}

static dlock_reply *cmd_smembers(dlock__cmd *c)
{
    return set_algebra(c, 1, 1, OP_UNION, 0, 0);
}

static dlock_reply *cmd_sinter(dlock__cmd *c)
{
    return set_algebra(c, 1, c->argc - 1, OP_INTER, 0, 0);
}

static dlock_reply *cmd_sunion(dlock__cmd *c)
{
    return set_algebra(c, 1, c->argc - 1, OP_UNION, 0, 0);
}

static dlock_reply *cmd_sdiff(dlock__cmd *c)
{
    return set_algebra(c, 1, c->argc - 1, OP_DIFF, 0, 0);
}

/* SINTERCARD numkeys key [key ...] [LIMIT limit] (Redis 7.0). */
static dlock_reply *cmd_sintercard(dlock__cmd *c)
{
    long long nkeys, limit = 0;
    int i;

    if (!dlock__parse_ll(c->argv[1], c->len[1], &nkeys) || nkeys <= 0)
        return dlock__reply_error("ERR numkeys should be greater than 0");
    if (nkeys > c->argc - 2)
        return dlock__reply_error(
            "ERR Number of keys can't be greater than number of args");
    for (i = 2 + (int)nkeys; i < c->argc; i += 2) {
        if (dlock__arg_is(c, i, "limit") && i + 1 < c->argc) {
            if (!dlock__parse_ll(c->argv[i + 1], c->len[i + 1], &limit) || limit < 0)
                return dlock__reply_error("ERR LIMIT can't be negative");
        } else {
            return dlock__reply_error(DLOCK__ERR_SYNTAX);
        }
    }
    return set_algebra(c, 2, (int)nkeys, OP_INTER, limit, 1);
}

static dlock_reply *cmd_smove(dlock__cmd *c)
{
    dlock_reply *err;
    dlock__obj *src, *dst;

    /* Redis's order: a missing source answers 0 before any type check. */
    if (dlock__key_lookup(c->st, c->argv[1], c->len[1]) == NULL)
        return dlock_reply_integer(0);
    if ((err = set_lookup(c, 1, &src)) != NULL || (err = set_lookup(c, 2, &dst)) != NULL)
        return err;
    if (!set_has(src, c->argv[3], c->len[3]))
        return dlock_reply_integer(0);
    if (src == dst)
        return dlock_reply_integer(1);
    if (dst == NULL &&
        (dst = dlock__key_create(c->st, c->argv[2], c->len[2], DLOCK__OBJ_SET)) == NULL)
        return NULL;
    if (!set_has(dst, c->argv[3], c->len[3]) &&
        dlock__dict_add(&dst->u.set, c->argv[3], c->len[3], NULL) == NULL) {
        dlock__key_delete_if_empty(c->st, c->argv[2], c->len[2], dst);
        return NULL;
    }
    dlock__dict_delete(&src->u.set, c->argv[3], c->len[3]);
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], src);
    return dlock_reply_integer(1);
}

/* SPOP key [count]: the oldest members (see the top of the file). */
static dlock_reply *cmd_spop(dlock__cmd *c)
{
    dlock_reply *err, *r;
    dlock__dict_entry *e;
    dlock__obj *o;
    long long count = 1;
    size_t i, n;

    if (c->argc > 3)
        return dlock__reply_error(DLOCK__ERR_SYNTAX);
    if (c->argc == 3 && (!dlock__parse_ll(c->argv[2], c->len[2], &count) || count < 0))
        return dlock__reply_error("ERR value is out of range, must be positive");
    if ((err = set_lookup(c, 1, &o)) != NULL)
        return err;
    if (c->argc == 2) {
        if (o == NULL)
            return dlock_reply_nil();
        r = dlock__reply_bulk(o->u.set.head->key, o->u.set.head->klen);
        if (r != NULL) {
            dlock__dict_remove(&o->u.set, o->u.set.head);
            dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        }
        return r;
    }
    n = o == NULL ? 0 : (size_t)count < o->u.set.size ? (size_t)count : o->u.set.size;
    if ((r = dlock_reply_array(n)) == NULL)
        return NULL;
    /* The whole reply first, so that running out of memory takes nothing. */
    e = o != NULL ? o->u.set.head : NULL;
    for (i = 0; i < n; i++, e = e->next)
        if ((r->elems[i] = dlock__reply_bulk(e->key, e->klen)) == NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    for (i = 0; i < n; i++)
        dlock__dict_remove(&o->u.set, o->u.set.head);
    if (o != NULL)
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return r;
}

const dlock__cmd_def dlock__cmds_set[] = {
    {"sadd", -3, cmd_sadd},
    {"scard", 2, cmd_scard},
    {"sdiff", -2, cmd_sdiff},
    {"sinter", -2, cmd_sinter},
    {"sintercard", -3, cmd_sintercard},
    {"sismember", 3, cmd_sismember},
    {"smembers", 2, cmd_smembers},
    {"smismember", -3, cmd_smismember},
    {"smove", 4, cmd_smove},
    {"spop", -2, cmd_spop},
    {"srem", -3, cmd_srem},
    {"sunion", -2, cmd_sunion},
};
const size_t dlock__ncmds_set = sizeof(dlock__cmds_set) / sizeof(dlock__cmds_set[0]);
