/*
 * dlock mock — sorted-set commands (fair-lock deadlines, expirable permits).
 */
#include "store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the structure --------------------------------------------------------- */

void dlock__zset_clear(dlock__zset *z)
{
    dlock__dict_clear(&z->members); /* frees the elements */
    free(z->sorted);
    z->sorted = NULL;
    z->len = z->cap = 0;
}

/* Redis's order: by score, then by member bytes. */
static int zcmp(double score, const char *m, size_t mlen, const dlock__zelem *e)
{
    size_t n = mlen < e->mlen ? mlen : e->mlen;
    int c;

    if (score < e->score)
        return -1;
    if (score > e->score)
        return 1;
    c = n != 0 ? memcmp(m, e->member, n) : 0;
    if (c != 0)
        return c;
    return mlen < e->mlen ? -1 : mlen > e->mlen ? 1 : 0;
}

/* First position whose element is not below (score, member). */
static size_t lower_bound(const dlock__zset *z, double score, const char *m,
                          size_t mlen)
{
    size_t lo = 0, hi = z->len;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (zcmp(score, m, mlen, z->sorted[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t rank_of(const dlock__zset *z, const dlock__zelem *e)
{
    return lower_bound(z, e->score, e->member, e->mlen);
}

static void sorted_remove(dlock__zset *z, size_t i)
{
    memmove(&z->sorted[i], &z->sorted[i + 1], (z->len - i - 1) * sizeof(*z->sorted));
    z->len--;
}

static int sorted_insert(dlock__zset *z, dlock__zelem *e)
{
    size_t i;

    if (z->len == z->cap) {
        size_t cap = z->cap ? z->cap * 2 : 4;
        dlock__zelem **p;

        if (cap > (size_t)-1 / sizeof(*p))
            return -1;
        p = realloc(z->sorted, cap * sizeof(*p));
        if (p == NULL)
            return -1;
        z->sorted = p;
        z->cap = cap;
    }
    i = lower_bound(z, e->score, e->member, e->mlen);
    memmove(&z->sorted[i + 1], &z->sorted[i], (z->len - i) * sizeof(*z->sorted));
    z->sorted[i] = e;
    z->len++;
    return 0;
}

static dlock__zelem *zfind(const dlock__zset *z, const char *m, size_t mlen)
{
    dlock__dict_entry *de = dlock__dict_find(&z->members, m, mlen);

    return de != NULL ? de->val : NULL;
}

/* The score as a Redis sorted set keeps it: Redis's small sets (listpack)
 * store scores as text that reads back -0 as 0, so ZSCORE and WITHSCORES
 * never show "-0" (only the reply of the ZADD INCR / ZINCRBY that computed
 * it does). Found by the differential test. */
static double stored_score(double score)
{
    return score == 0 ? 0.0 : score;
}

/* 0 or -1 (ENOMEM, nothing changed). */
static int zinsert(dlock__zset *z, const char *m, size_t mlen, double score)
{
    dlock__zelem *e = malloc(sizeof(*e));
    dlock__dict_entry *de;

    if (e == NULL)
        return -1;
    e->score = stored_score(score);
    de = dlock__dict_add(&z->members, m, mlen, e);
    if (de == NULL) {
        free(e);
        return -1;
    }
    e->member = de->key;
    e->mlen = de->klen;
    if (sorted_insert(z, e) != 0) {
        dlock__dict_remove(&z->members, de);
        return -1;
    }
    return 0;
}

static void zrescore(dlock__zset *z, dlock__zelem *e, double score)
{
    sorted_remove(z, rank_of(z, e));
    e->score = stored_score(score);
    /* Cannot fail: the array just gave a slot back. */
    (void)sorted_insert(z, e);
}

static void zdelete(dlock__zset *z, dlock__zelem *e)
{
    sorted_remove(z, rank_of(z, e));
    dlock__dict_delete(&z->members, e->member, e->mlen);
}

/* ---- score ranges ------------------------------------------------------------ */

typedef struct zrange_spec {
    double min, max;
    int minex, maxex;
} zrange_spec;

/* Range bounds are laxer than scores in Redis (a bare strtod): leading
 * spaces pass, and an empty bound means 0. */
static int parse_bound(const char *s, size_t len, double *v, int *ex)
{
    char buf[128], *end;

    *ex = 0;
    if (len > 0 && s[0] == '(') {
        *ex = 1;
        s++;
        len--;
    }
    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    *v = strtod(buf, &end);
    return *end == '\0' && !isnan(*v);
}

static int parse_range(dlock__cmd *c, int imin, int imax, zrange_spec *r)
{
    return parse_bound(c->argv[imin], c->len[imin], &r->min, &r->minex) &&
           parse_bound(c->argv[imax], c->len[imax], &r->max, &r->maxex);
}

static int above_min(double s, const zrange_spec *r)
{
    return r->minex ? s > r->min : s >= r->min;
}

static int below_max(double s, const zrange_spec *r)
{
    return r->maxex ? s < r->max : s <= r->max;
}

/* [*from, *to) of the elements inside r. */
static void score_span(const dlock__zset *z, const zrange_spec *r, size_t *from,
                       size_t *to)
{
    size_t lo = 0, hi = z->len;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (above_min(z->sorted[mid]->score, r))
            hi = mid;
        else
            lo = mid + 1;
    }
    *from = lo;
    hi = z->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (below_max(z->sorted[mid]->score, r))
            lo = mid + 1;
        else
            hi = mid;
    }
    *to = lo;
}

/* ---- commands ------------------------------------------------------------------ */

enum { ZADD_NX = 1, ZADD_XX = 2, ZADD_GT = 4, ZADD_LT = 8, ZADD_CH = 16, ZADD_INCR = 32 };

/* ZADD, and ZINCRBY, which Redis runs as ZADD with INCR preset (so an
 * option word in its increment's place is a syntax error, not a float
 * error). */
static dlock_reply *zadd_generic(dlock__cmd *c, int flags)
{
    int i, first, npairs, created = 0;
    long long added = 0, changed = 0;
    double *scores, stack_scores[8];
    dlock__obj *o;
    dlock_reply *r = NULL;
    int processed = 0; /* INCR: 1 once the element was touched */
    double incr_result = 0;

    for (i = 2; i < c->argc; i++) {
        if (dlock__arg_is(c, i, "nx"))
            flags |= ZADD_NX;
        else if (dlock__arg_is(c, i, "xx"))
            flags |= ZADD_XX;
        else if (dlock__arg_is(c, i, "gt"))
            flags |= ZADD_GT;
        else if (dlock__arg_is(c, i, "lt"))
            flags |= ZADD_LT;
        else if (dlock__arg_is(c, i, "ch"))
            flags |= ZADD_CH;
        else if (dlock__arg_is(c, i, "incr"))
            flags |= ZADD_INCR;
        else
            break;
    }
    first = i;
    if ((c->argc - first) % 2 != 0 || c->argc == first)
        return dlock__reply_error(DLOCK__ERR_SYNTAX);
    npairs = (c->argc - first) / 2;
    if ((flags & ZADD_NX) && (flags & ZADD_XX))
        return dlock__reply_error(
            "ERR XX and NX options at the same time are not compatible");
    if (((flags & ZADD_GT) && (flags & ZADD_NX)) || ((flags & ZADD_LT) && (flags & ZADD_NX)) ||
        ((flags & ZADD_GT) && (flags & ZADD_LT)))
        return dlock__reply_error(
            "ERR GT, LT, and/or NX options at the same time are not compatible");
    if ((flags & ZADD_INCR) && npairs > 1)
        return dlock__reply_error(
            "ERR INCR option supports a single increment-element pair");

    scores = npairs <= 8 ? stack_scores : malloc((size_t)npairs * sizeof(*scores));
    if (scores == NULL)
        return NULL;
    /* All scores are checked before anything changes, as in Redis. */
    for (i = 0; i < npairs; i++) {
        int a = first + 2 * i;

        if (!dlock__parse_double(c->argv[a], c->len[a], &scores[i])) {
            r = dlock__reply_error(DLOCK__ERR_NOTFLOAT);
            goto out;
        }
    }
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0) {
        r = dlock__reply_error(DLOCK__ERR_WRONGTYPE);
        goto out;
    }
    if (o == NULL) {
        if (flags & ZADD_XX) {
            r = (flags & ZADD_INCR) ? dlock_reply_nil() : dlock_reply_integer(0);
            goto out;
        }
        o = dlock__key_create(c->st, c->argv[1], c->len[1], DLOCK__OBJ_ZSET);
        if (o == NULL)
            goto out;
        created = 1;
    }
    for (i = 0; i < npairs; i++) {
        const char *m = c->argv[first + 2 * i + 1];
        size_t mlen = c->len[first + 2 * i + 1];
        dlock__zelem *e = zfind(&o->u.zset, m, mlen);
        double score = scores[i];

        if (e != NULL) {
            if (flags & ZADD_NX)
                continue;
            if (flags & ZADD_INCR) {
                score += e->score;
                if (isnan(score)) {
                    r = dlock__reply_error("ERR resulting score is not a number (NaN)");
                    goto out;
                }
            }
            if (((flags & ZADD_GT) && score <= e->score) ||
                ((flags & ZADD_LT) && score >= e->score))
                continue;
            processed = 1;
            incr_result = score;
            if (score != e->score) {
                zrescore(&o->u.zset, e, score);
                changed++;
            }
        } else {
            if (flags & ZADD_XX)
                continue;
            if (zinsert(&o->u.zset, m, mlen, score) != 0)
                goto out;
            processed = 1;
            incr_result = score;
            added++;
        }
    }
    if (flags & ZADD_INCR)
        r = processed ? dlock__reply_double(c->st, incr_result) : dlock_reply_nil();
    else
        r = dlock_reply_integer((flags & ZADD_CH) ? added + changed : added);
out:
    if (created)
        dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    if (scores != stack_scores)
        free(scores);
    return r;
}

static dlock_reply *cmd_zadd(dlock__cmd *c)
{
    return zadd_generic(c, 0);
}

static dlock_reply *cmd_zincrby(dlock__cmd *c)
{
    return zadd_generic(c, ZADD_INCR);
}

static dlock_reply *cmd_zrem(dlock__cmd *c)
{
    long long n = 0;
    dlock__obj *o;
    int i;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_integer(0);
    for (i = 2; i < c->argc; i++) {
        dlock__zelem *e = zfind(&o->u.zset, c->argv[i], c->len[i]);

        if (e != NULL) {
            zdelete(&o->u.zset, e);
            n++;
        }
    }
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return dlock_reply_integer(n);
}

static dlock_reply *cmd_zscore(dlock__cmd *c)
{
    dlock__obj *o;
    dlock__zelem *e;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL || (e = zfind(&o->u.zset, c->argv[2], c->len[2])) == NULL)
        return dlock_reply_nil();
    return dlock__reply_double(c->st, e->score);
}

static dlock_reply *cmd_zcard(dlock__cmd *c)
{
    dlock__obj *o;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    return dlock_reply_integer(o != NULL ? (long long)o->u.zset.len : 0);
}

static dlock_reply *rank_generic(dlock__cmd *c, int rev)
{
    dlock__obj *o;
    dlock__zelem *e;
    size_t rank;

    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL || (e = zfind(&o->u.zset, c->argv[2], c->len[2])) == NULL)
        return dlock_reply_nil();
    rank = rank_of(&o->u.zset, e);
    return dlock_reply_integer((long long)(rev ? o->u.zset.len - 1 - rank : rank));
}

static dlock_reply *cmd_zrank(dlock__cmd *c)
{
    return rank_generic(c, 0);
}

static dlock_reply *cmd_zrevrank(dlock__cmd *c)
{
    return rank_generic(c, 1);
}

static dlock_reply *cmd_zcount(dlock__cmd *c)
{
    zrange_spec r;
    size_t from, to;
    dlock__obj *o;

    if (!parse_range(c, 2, 3, &r))
        return dlock__reply_error("ERR min or max is not a float");
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_integer(0);
    score_span(&o->u.zset, &r, &from, &to);
    return dlock_reply_integer(to > from ? (long long)(to - from) : 0);
}

static dlock_reply *cmd_zremrangebyscore(dlock__cmd *c)
{
    zrange_spec r;
    size_t from, to, i;
    dlock__obj *o;
    dlock__zset *z;

    if (!parse_range(c, 2, 3, &r))
        return dlock__reply_error("ERR min or max is not a float");
    if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
        return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
    if (o == NULL)
        return dlock_reply_integer(0);
    z = &o->u.zset;
    score_span(z, &r, &from, &to);
    if (to <= from)
        return dlock_reply_integer(0);
    for (i = from; i < to; i++)
        dlock__dict_delete(&z->members, z->sorted[i]->member, z->sorted[i]->mlen);
    memmove(&z->sorted[from], &z->sorted[to], (z->len - to) * sizeof(*z->sorted));
    z->len -= to - from;
    dlock__key_delete_if_empty(c->st, c->argv[1], c->len[1], o);
    return dlock_reply_integer((long long)(to - from));
}

/* The common ZRANGE engine: positions [from, to) of the sorted array, walked
 * backwards when rev, after skipping offset and keeping at most count
 * (count < 0: all). */
static dlock_reply *emit_range(const dlock_mock_store *st, const dlock__zset *z,
                               size_t from, size_t to, int rev,
                               long long offset, long long count, int withscores)
{
    size_t n = to > from ? to - from : 0, k, per = withscores ? 2 : 1, j = 0;
    dlock_reply *r;

    if (offset < 0)
        n = 0;
    else if ((unsigned long long)offset >= n)
        n = 0;
    else
        n -= (size_t)offset;
    if (count >= 0 && (unsigned long long)count < n)
        n = (size_t)count;
    r = dlock_reply_array(n * per);
    if (r == NULL)
        return NULL;
    for (k = 0; k < n; k++) {
        size_t pos = rev ? to - 1 - (size_t)offset - k : from + (size_t)offset + k;
        const dlock__zelem *e = z->sorted[pos];

        if ((r->elems[j++] = dlock__reply_bulk(e->member, e->mlen)) == NULL)
            goto oom;
        if (withscores && (r->elems[j++] = dlock__reply_double(st, e->score)) == NULL)
            goto oom;
    }
    return r;
oom:
    dlock_reply_free(r);
    return NULL;
}

enum { RANGE_RANK, RANGE_SCORE };

/* ZRANGE key start stop [BYSCORE] [REV] [LIMIT offset count] [WITHSCORES],
 * and the older commands expressed through it. opt_from is the first
 * argument after the two bounds. */
static dlock_reply *range_generic(dlock__cmd *c, int by, int rev, int opt_from,
                                  int allow_by_opts)
{
    int withscores = 0, has_limit = 0, i, imin, imax;
    long long offset = 0, count = -1;
    dlock__obj *o;
    dlock__zset *z;

    for (i = opt_from; i < c->argc; i++) {
        if (dlock__arg_is(c, i, "withscores")) {
            withscores = 1;
        } else if (dlock__arg_is(c, i, "limit") && i + 2 < c->argc) {
            if (!dlock__parse_ll(c->argv[i + 1], c->len[i + 1], &offset) ||
                !dlock__parse_ll(c->argv[i + 2], c->len[i + 2], &count))
                return dlock__reply_error(DLOCK__ERR_NOTINT);
            has_limit = 1;
            i += 2;
        } else if (allow_by_opts && by == RANGE_RANK && dlock__arg_is(c, i, "byscore")) {
            by = RANGE_SCORE;
        } else if (allow_by_opts && !rev && dlock__arg_is(c, i, "rev")) {
            rev = 1;
        } else {
            return dlock__reply_error(DLOCK__ERR_SYNTAX);
        }
    }
    if (has_limit && by == RANGE_RANK)
        return dlock__reply_error("ERR syntax error, LIMIT is only supported in "
                                  "combination with either BYSCORE or BYLEX");

    /* Reversed score ranges name the maximum first. */
    imin = rev && by == RANGE_SCORE ? 3 : 2;
    imax = rev && by == RANGE_SCORE ? 2 : 3;
    if (by == RANGE_SCORE) {
        zrange_spec r;
        size_t from, to;

        if (!parse_range(c, imin, imax, &r))
            return dlock__reply_error("ERR min or max is not a float");
        if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
            return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
        if (o == NULL)
            return dlock_reply_array(0);
        score_span(&o->u.zset, &r, &from, &to);
        return emit_range(c->st, &o->u.zset, from, to, rev, offset, count, withscores);
    } else {
        long long start, stop, n;

        if (!dlock__parse_ll(c->argv[2], c->len[2], &start) ||
            !dlock__parse_ll(c->argv[3], c->len[3], &stop))
            return dlock__reply_error(DLOCK__ERR_NOTINT);
        if (dlock__key_lookup_typed(c, 1, DLOCK__OBJ_ZSET, &o) != 0)
            return dlock__reply_error(DLOCK__ERR_WRONGTYPE);
        if (o == NULL)
            return dlock_reply_array(0);
        z = &o->u.zset;
        n = (long long)z->len;
        if (start < 0)
            start += n;
        if (stop < 0)
            stop += n;
        if (start < 0)
            start = 0;
        if (start > stop || start >= n)
            return dlock_reply_array(0);
        if (stop >= n)
            stop = n - 1;
        /* Ranks count from the end when reversed. */
        if (rev)
            return emit_range(c->st, z, (size_t)(n - 1 - stop), (size_t)(n - start), 1, 0, -1,
                              withscores);
        return emit_range(c->st, z, (size_t)start, (size_t)stop + 1, 0, 0, -1, withscores);
    }
}

static dlock_reply *cmd_zrange(dlock__cmd *c)
{
    return range_generic(c, RANGE_RANK, 0, 4, 1);
}

static dlock_reply *cmd_zrevrange(dlock__cmd *c)
{
    return range_generic(c, RANGE_RANK, 1, 4, 0);
}

static dlock_reply *cmd_zrangebyscore(dlock__cmd *c)
{
    return range_generic(c, RANGE_SCORE, 0, 4, 0);
}

static dlock_reply *cmd_zrevrangebyscore(dlock__cmd *c)
{
    return range_generic(c, RANGE_SCORE, 1, 4, 0);
}

const dlock__cmd_def dlock__cmds_zset[] = {
    {"zadd", -4, cmd_zadd},
    {"zcard", 2, cmd_zcard},
    {"zcount", 4, cmd_zcount},
    {"zincrby", 4, cmd_zincrby},
    {"zrange", -4, cmd_zrange},
    {"zrangebyscore", -4, cmd_zrangebyscore},
    {"zrank", 3, cmd_zrank},
    {"zrem", -3, cmd_zrem},
    {"zremrangebyscore", 4, cmd_zremrangebyscore},
    {"zrevrange", -4, cmd_zrevrange},
    {"zrevrangebyscore", -4, cmd_zrevrangebyscore},
    {"zrevrank", 3, cmd_zrevrank},
    {"zscore", 3, cmd_zscore},
};
const size_t dlock__ncmds_zset = sizeof(dlock__cmds_zset) / sizeof(dlock__cmds_zset[0]);
