/*
 * dlock mock — list commands (the fair lock's queue of waiters).
 */
#include "store.h"

#include <stdlib.h>
#include <string.h>

/* ---- the deque ----------------------------------------------------------- */

static dlock__mstr **slot(dlock__list *l, size_t i)
{
    return &l->items[(l->start + i) & (l->cap - 1)];
}

void dlock__list_clear(dlock__list *l)
{
    size_t i;

    for (i = 0; i < l->len; i++)
        free(*slot(l, i));
    free(l->items);
    memset(l, 0, sizeof(*l));
}

static int reserve_one(dlock__list *l)
{
    size_t cap, i;
    dlock__mstr **items;

    if (l->len < l->cap)
        return 0;
    cap = l->cap ? l->cap * 2 : 4;
    if (cap > (size_t)-1 / sizeof(*items))
        return -1;
    items = malloc(cap * sizeof(*items));
    if (items == NULL)
        return -1;
    for (i = 0; i < l->len; i++)
        items[i] = *slot(l, i);
    free(l->items);
    l->items = items;
    l->cap = cap;
    l->start = 0;
    return 0;
}

static int push(dlock__list *l, dlock__mstr *m, int front)
{
    if (reserve_one(l) != 0)
        return -1;
    if (front) {
        l->start = (l->start + l->cap - 1) & (l->cap - 1);
        l->items[l->start] = m;
    } else {
        *slot(l, l->len) = m;
    }
    l->len++;
    return 0;
}

/* Detaches element i and closes the gap, moving the shorter side. */
static dlock__mstr *remove_at(dlock__list *l, size_t i)
{
    dlock__mstr *m = *slot(l, i);
    size_t k;

    if (i < l->len / 2) {
        for (k = i; k > 0; k--)
            *slot(l, k) = *slot(l, k - 1);
        l->start = (l->start + 1) & (l->cap - 1);
    } else {
        for (k = i; k + 1 < l->len; k++)
            *slot(l, k) = *slot(l, k + 1);
    }
    l->len--;
    return m;
}

/* Redis's index normalisation: negative counts from the end. */
static int norm_index(long long idx, size_t len, size_t *out)
{
    if (idx < 0)
        idx += (long long)len;
    if (idx < 0 || (unsigned long long)idx >= len)
        return 0;
    *out = (size_t)idx;
    return 1;
}

/* ---- commands -------------------------------------------------------------- */

static dlock_reply *push_generic(dlock__cmd *c, int front)
{
    dlock__obj *o;
    int i, created = 0;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL) {
        o = dlock__key_create(c->st, c->argv[1], c->len[1], DLOCK__OBJ_LIST);
        if (o == NULL)
            return NULL;
        created = 1;
    }
    for (i = 2; i < c->argc; i++) {
        dlock__mstr *m = dlock__mstr_new(c->argv[i], c->len[i]);

        if (m == NULL || push(&o->u.list, m, front) != 0) {
            free(m);
            if (created)
                dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
            return NULL;
        }
    }
    return dlock_reply_integer((long long)o->u.list.len);
}

static dlock_reply *cmd_lpush(dlock__cmd *c)
{
    return push_generic(c, 1);
}

static dlock_reply *cmd_rpush(dlock__cmd *c)
{
    return push_generic(c, 0);
}

static dlock_reply *pop_generic(dlock__cmd *c, int front)
{
    dlock__obj *o;
    dlock_reply *r;
    long long count = 1;
    size_t i, n;

    if (c->argc > 3)
        return dlock__reply_errorf("ERR wrong number of arguments for '%s' command",
                                   front ? "lpop" : "rpop");
    if (c->argc == 3 && (!dlock__parse_ll(c->argv[2], c->len[2], &count) || count < 0))
        return dlock__reply_error("ERR value is out of range, must be positive");
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_nil();
    if (c->argc == 2) {
        dlock__mstr *m = remove_at(&o->u.list, front ? 0 : o->u.list.len - 1);

        r = dlock__reply_bulk(m->buf, m->len);
        if (r == NULL) {
            /* Put it back: an out-of-memory reply must not lose data. */
            if (push(&o->u.list, m, front) != 0)
                free(m);
            return NULL;
        }
        free(m);
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
        return r;
    }
    n = (unsigned long long)count < o->u.list.len ? (size_t)count : o->u.list.len;
    r = dlock_reply_array(n);
    if (r == NULL)
        return NULL;
    for (i = 0; i < n; i++) {
        dlock__mstr *m = *slot(&o->u.list, front ? i : o->u.list.len - 1 - i);

        if ((r->elems[i] = dlock__reply_bulk(m->buf, m->len)) == NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    }
    for (i = 0; i < n; i++)
        free(remove_at(&o->u.list, front ? 0 : o->u.list.len - 1));
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return r;
}

static dlock_reply *cmd_lpop(dlock__cmd *c)
{
    return pop_generic(c, 1);
}

static dlock_reply *cmd_rpop(dlock__cmd *c)
{
    return pop_generic(c, 0);
}

static dlock_reply *cmd_llen(dlock__cmd *c)
{
    dlock__obj *o;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    return dlock_reply_integer(o != NULL ? (long long)o->u.list.len : 0);
}

static dlock_reply *cmd_lindex(dlock__cmd *c)
{
    dlock__obj *o;
    long long idx;
    size_t i;
    dlock__mstr *m;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_nil();
    if (!dlock__parse_ll(c->argv[2], c->len[2], &idx))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (!norm_index(idx, o->u.list.len, &i))
        return dlock_reply_nil();
    m = *slot(&o->u.list, i);
    return dlock__reply_bulk(m->buf, m->len);
}

/* Clamps [start, stop] like LRANGE/LTRIM; 0 when the range is empty. */
static int clamp_range(long long start, long long stop, size_t len, size_t *from,
                       size_t *to)
{
    long long n = (long long)len;

    if (start < 0)
        start += n;
    if (stop < 0)
        stop += n;
    if (start < 0)
        start = 0;
    if (start > stop || start >= n)
        return 0;
    if (stop >= n)
        stop = n - 1;
    *from = (size_t)start;
    *to = (size_t)stop;
    return 1;
}

static dlock_reply *cmd_lrange(dlock__cmd *c)
{
    long long start, stop;
    size_t from, to, i;
    dlock__obj *o;
    dlock_reply *r;

    if (!dlock__parse_ll(c->argv[2], c->len[2], &start) ||
        !dlock__parse_ll(c->argv[3], c->len[3], &stop))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL || !clamp_range(start, stop, o->u.list.len, &from, &to))
        return dlock_reply_array(0);
    r = dlock_reply_array(to - from + 1);
    if (r == NULL)
        return NULL;
    for (i = from; i <= to; i++) {
        dlock__mstr *m = *slot(&o->u.list, i);

        if ((r->elems[i - from] = dlock__reply_bulk(m->buf, m->len)) == NULL) {
            dlock_reply_free(r);
            return NULL;
        }
    }
    return r;
}

static int same(const dlock__mstr *m, const char *s, size_t len)
{
    return m->len == len && (len == 0 || memcmp(m->buf, s, len) == 0);
}

static dlock_reply *cmd_lrem(dlock__cmd *c)
{
    long long count;
    unsigned long long removed = 0, limit;
    dlock__obj *o;
    dlock__list *l;
    size_t i;

    if (!dlock__parse_ll(c->argv[2], c->len[2], &count))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_integer(0);
    l = &o->u.list;
    /* |count| without overflowing on LLONG_MIN; 0 means all. */
    limit = count < 0 ? 0ULL - (unsigned long long)count : (unsigned long long)count;
    if (count >= 0) {
        for (i = 0; i < l->len && (limit == 0 || removed < limit);) {
            if (same(*slot(l, i), c->argv[3], c->len[3])) {
                free(remove_at(l, i));
                removed++;
            } else {
                i++;
            }
        }
    } else {
        for (i = l->len; i > 0 && removed < limit; i--) {
            if (same(*slot(l, i - 1), c->argv[3], c->len[3])) {
                free(remove_at(l, i - 1));
                removed++;
            }
        }
    }
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return dlock_reply_integer((long long)removed);
}

static dlock_reply *cmd_lset(dlock__cmd *c)
{
    long long idx;
    dlock__obj *o;
    dlock__mstr *m;
    size_t i;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock__reply_error("ERR no such key");
    if (!dlock__parse_ll(c->argv[2], c->len[2], &idx))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (!norm_index(idx, o->u.list.len, &i))
        return dlock__reply_error("ERR index out of range");
    m = dlock__mstr_new(c->argv[3], c->len[3]);
    if (m == NULL)
        return NULL;
    free(*slot(&o->u.list, i));
    *slot(&o->u.list, i) = m;
    return dlock__reply_ok();
}

static dlock_reply *cmd_ltrim(dlock__cmd *c)
{
    long long start, stop;
    size_t from = 0, to = 0, keep;
    dlock__obj *o;
    dlock__list *l;

    if (!dlock__parse_ll(c->argv[2], c->len[2], &start) ||
        !dlock__parse_ll(c->argv[3], c->len[3], &stop))
        return dlock__reply_error(DLOCK__ERR_NOTINT);
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_LIST, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock__reply_ok();
    l = &o->u.list;
    keep = clamp_range(start, stop, l->len, &from, &to) ? to - from + 1 : 0;
    while (l->len > 0 && l->len > keep + from)
        free(remove_at(l, l->len - 1));
    while (from-- > 0 && l->len > 0)
        free(remove_at(l, 0));
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return dlock__reply_ok();
}

const dlock__cmd_def dlock__cmds_list[] = {
    {"lindex", 3, cmd_lindex},
    {"llen", 2, cmd_llen},
    {"lpop", -2, cmd_lpop},
    {"lpush", -3, cmd_lpush},
    {"lrange", 4, cmd_lrange},
    {"lrem", 4, cmd_lrem},
    {"lset", 4, cmd_lset},
    {"ltrim", 4, cmd_ltrim},
    {"rpop", -2, cmd_rpop},
    {"rpush", -3, cmd_rpush},
};
const size_t dlock__ncmds_list = sizeof(dlock__cmds_list) / sizeof(dlock__cmds_list[0]);
