/*
 * dlock — object lifetime on every object (api/dlock/object.h). One set of
 * scripts (object_*.lua, sharing object_keys.luainc) serves every type: this
 * file tells them which keys an object has and how its waiters are woken,
 * from its type's descriptor (type.h).
 *
 * Every handle type starts with its dlock_rlock base (the locks are one; the
 * semaphores, the latch and the bucket are built on it), so the object view
 * of a handle is that base, seen through the opaque dlock_object.
 *
 * And looking at objects from outside, for tools (dlock(1)'s status and
 * list): the names there are (dlock_client_scan, object_scan.lua and
 * object_masters.lua); what is stored under one is kinds.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/object.h"
#include "dlock/reentrant.h"
#include "objects/runtime/object.h"
#include "objects/runtime/base.h"
#include "objects/types/methods.h"
#include "objects/types/names.h"
#include "objects/types/type.h"
#include "scripts.h"

/* Latest wall-clock ms expire_at takes: the year 2286, as the scripts'
 * wall_max (time_check.luainc). */
#define WALL_MAX_MS ((int64_t)10000000000000LL)

#define BASE(o) ((dlock_rlock *)(o))

dlock_object *dlock_rlock_object(dlock_rlock *l) { return (dlock_object *)l; }
dlock_object *dlock_semaphore_object(dlock_semaphore *s) { return (dlock_object *)s; }
dlock_object *dlock_permit_semaphore_object(dlock_permit_semaphore *p)
{
    return (dlock_object *)p;
}
dlock_object *dlock_latch_object(dlock_latch *l) { return (dlock_object *)l; }
dlock_object *dlock_bucket_object(dlock_bucket *b) { return (dlock_object *)b; }

const char *dlock_object_errmsg(dlock_object *o)
{
    return o ? dlock_errmsg(BASE(o)) : "object is NULL";
}

/* An object's keys and waiters, as object_keys.luainc takes them. */
typedef struct layout {
    const char *argv[16]; /* KEYS, then ARGV[1..5], the call's own, the
                           * publish command */
    size_t nkeys;
    char *owned[DLOCK__TYPE_MAX_KEYS + 1]; /* the fixed keys, then the
                                            * derived keys' prefix */
} layout;

static void layout_free(layout *lay)
{
    size_t i;

    for (i = 0; i < DLOCK__TYPE_MAX_KEYS + 1; i++)
        free(lay->owned[i]);
}

/* Fills lay for l and the call (one of DLOCK__WAKE_ON_*), from its type's
 * descriptor (type.h; a type of someone else's: the key at its name, no
 * waiters told): 0 or DLOCK_ENOMEM. */
static int layout_of(dlock_rlock *l, layout *lay, int call)
{
    static const dlock__type none = {NULL};
    const dlock__type *t = dlock__type_of(l->methods);
    static const char *const counts[] = {"1", "2", "3", "4"};
    size_t n, i;

    memset(lay, 0, sizeof(*lay));
    if (!t)
        t = &none;
    /* Locks made of locks keep no keys of their own: act on their
     * members' objects. */
    if (t->no_keys)
        return dlock_rlock_fail(l, DLOCK_ENOTSUP, "%s locks have no keys of their own: "
                                "use their members' objects", l->methods->type);
    lay->argv[0] = l->name;
    for (i = 0; i < t->nkeys; i++)
        if (!(lay->owned[i] = dlock_rlock_key(l, t->keys[i].prefix, t->keys[i].suffix)))
            goto nomem;
    for (i = 0; i < t->nkeys; i++)
        lay->argv[1 + i] = lay->owned[i];
    n = 1 + t->nkeys;
    lay->nkeys = n;
    if (t->family) {
        lay->owned[DLOCK__TYPE_MAX_KEYS] = dlock_rlock_key(l, t->derived.prefix, t->derived.suffix);
        if (!lay->owned[DLOCK__TYPE_MAX_KEYS])
            goto nomem;
        lay->argv[lay->nkeys++] = lay->owned[DLOCK__TYPE_MAX_KEYS];
    }
    lay->argv[lay->nkeys] = counts[n - 1];
    lay->argv[lay->nkeys + 1] = t->family ? t->family : "";
    /* Only the built-in types built on dlock_object_base have a channel. */
    lay->argv[lay->nkeys + 2] = (t->wakes & call) ? ((dlock_object_base *)l)->channel : "";
    lay->argv[lay->nkeys + 3] = t->message ? t->message : "0";
    lay->argv[lay->nkeys + 4] = t->per_waiter ? "1" : "0";
    return 0;

nomem:
    layout_free(lay);
    return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory");
}

/* One lifetime call: the checks, the layout, the script (with extra
 * arguments after ARGV[5], then the publish command: the last ARGV entry
 * of every object_* script), its integer reply in *out. */
static int run(dlock_object *o, int64_t *out, const dlock_script *s, int call,
               size_t nextra, const char *const *extra)
{
    dlock_rlock *l = BASE(o);
    layout lay;
    size_t i;
    int rc;

    if ((rc = dlock__object_check(l)) != 0 || (rc = layout_of(l, &lay, call)) != 0)
        return rc;
    for (i = 0; i < nextra; i++)
        lay.argv[lay.nkeys + 5 + i] = extra[i];
    lay.argv[lay.nkeys + 5 + nextra] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_integer(l, NULL, out, s, lay.nkeys, 5 + nextra + 1, lay.argv);
    layout_free(&lay);
    return rc;
}

/* The calls with an int answer (1/0) in *out, which may be NULL. */
static int run_flag(dlock_object *o, int *out, const dlock_script *s, int call,
                    size_t nextra, const char *const *extra)
{
    int64_t v = 0;
    int rc;

    if (out)
        *out = 0;
    if (!o)
        return DLOCK_EINVAL;
    rc = run(o, &v, s, call, nextra, extra);
    if (rc == 0 && out)
        *out = v != 0;
    return rc;
}

int dlock_object_delete(dlock_object *o, int *out)
{
    return run_flag(o, out, &dlock__script_object_delete, DLOCK__WAKE_ON_DELETE, 0, NULL);
}

int dlock_object_exists(dlock_object *o, int *out)
{
    if (!out)
        return o ? dlock_rlock_fail(BASE(o), DLOCK_EINVAL, "out is NULL") : DLOCK_EINVAL;
    return run_flag(o, out, &dlock__script_object_exists, 0, 0, NULL);
}

static int expire_call(dlock_object *o, int *out, int64_t when, const char *mode)
{
    char buf[DLOCK__I64_SIZE];
    const char *extra[2];

    extra[0] = dlock__i64(buf, when);
    extra[1] = mode;
    return run_flag(o, out, &dlock__script_object_expire, DLOCK__WAKE_ON_EXPIRE, 2, extra);
}

int dlock_object_expire(dlock_object *o, int *out, int64_t ms)
{
    if (out)
        *out = 0;
    if (!o)
        return DLOCK_EINVAL;
    if (dlock__time_arg(BASE(o), "expiry", ms, 0) != 0)
        return DLOCK_EINVAL;
    return expire_call(o, out, ms, "in");
}

int dlock_object_expire_at(dlock_object *o, int *out, int64_t unix_ms)
{
    if (out)
        *out = 0;
    if (!o)
        return DLOCK_EINVAL;
    if (unix_ms < 0 || unix_ms > WALL_MAX_MS)
        return dlock_rlock_fail(BASE(o), DLOCK_EINVAL,
                                "expiry time must be 0..10^13 unix ms (got %" PRId64 ")",
                                unix_ms);
    return expire_call(o, out, unix_ms, "at");
}

int dlock_object_clear_expire(dlock_object *o, int *out)
{
    return run_flag(o, out, &dlock__script_object_clear_expire, 0, 0, NULL);
}

int dlock_object_remain_ttl(dlock_object *o, int64_t *out)
{
    if (out)
        *out = -2;
    if (!o)
        return DLOCK_EINVAL;
    if (!out)
        return dlock_rlock_fail(BASE(o), DLOCK_EINVAL, "out is NULL");
    return run(o, out, &dlock__script_object_remain_ttl, 0, 0, NULL);
}

/* ---- what there is ------------------------------------------------------ */

void dlock_names_free(char **names)
{
    size_t i;

    if (!names)
        return;
    for (i = 0; names[i]; i++)
        free(names[i]);
    free(names);
}

/* The step's reply {cursor, name...}: *cursor, and the names appended to
 * the list (*names, *n, *cap). 0 or -1 (a bad reply, or out of memory). */
static int scan_reply(const dlock_reply *r, uint64_t *cursor, char ***names, size_t *n,
                      size_t *cap)
{
    char *end;
    size_t i;

    if (r->type != DLOCK_REPLY_ARRAY || r->n < 1 || r->elems[0]->type != DLOCK_REPLY_BULK)
        return -1;
    for (i = 1; i < r->n; i++)
        if (r->elems[i]->type != DLOCK_REPLY_BULK)
            return -1;
    *cursor = strtoull(r->elems[0]->str, &end, 10);
    if (*end != '\0')
        return -1;
    for (i = 1; i < r->n; i++) {
        if (*n + 2 > *cap) {
            size_t grown = *cap ? *cap * 2 : 64;
            char **more = realloc(*names, grown * sizeof **names);
            if (!more)
                return -1;
            *names = more;
            *cap = grown;
        }
        if (!((*names)[*n] = strdup(r->elems[i]->str)))
            return -1;
        (*names)[++*n] = NULL;
    }
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A key of the group slot's node: "dlock-scan-N" with the first N whose
 * group falls in [lo, hi] (api/dlock/sys/backend.h: key_slot). */
static void routing_key(dlock_backend *b, char *key, size_t len, unsigned lo, unsigned hi)
{
    unsigned long i;
    unsigned slot;

    for (i = 0;; i++) {
        snprintf(key, len, "dlock-scan-%lu", i);
        slot = dlock_backend_key_slot(b, key, strlen(key));
        if ((slot >= lo && slot <= hi) || i > 10000000UL)
            return;
    }
}

/* Every SCAN step on one node (route: a key of that node, or NULL on a
 * single server), the names appended. 0 or the code, recorded on l. */
static int scan_node(dlock_rlock *l, const char *route, const char *pattern, const char *cnt,
                     char ***names, size_t *n, size_t *cap)
{
    char cur[32];
    const char *argv[4];
    dlock_reply *r;
    uint64_t cursor = 0;
    size_t k = 0;
    int rc;

    if (route)
        argv[k++] = route;
    argv[k] = cur;
    argv[k + 1] = pattern;
    argv[k + 2] = cnt;
    do {
        snprintf(cur, sizeof cur, "%" PRIu64, cursor);
        r = NULL;
        rc = dlock_rlock_eval(l, NULL, &r, &dlock__script_object_scan, k, 3, argv);
        if (rc != 0)
            return rc;
        if (scan_reply(r, &cursor, names, n, cap) != 0)
            return dlock__unexpected_reply(l, &dlock__script_object_scan, r);
        dlock_reply_free(r);
    } while (cursor != 0);
    return 0;
}

/* Every master (Redis Cluster: object_masters.lua's ranges, one routing
 * key per node id), or the one server. */
static int scan_all(dlock_rlock *l, const char *pattern, const char *cnt, char ***names,
                    size_t *n, size_t *cap)
{
    dlock_backend *b = dlock_client_backend(l->client);
    dlock_reply *m = NULL;
    char key[48];
    size_t i, j;
    int rc;

    rc = dlock_rlock_eval(l, NULL, &m, &dlock__script_object_masters, 0, 0, NULL);
    if (rc != 0)
        return rc;
    if (m->type != DLOCK_REPLY_ARRAY || m->n % 3 != 0)
        return dlock__unexpected_reply(l, &dlock__script_object_masters, m);
    for (i = 0; i < m->n; i++)
        if (m->elems[i]->type != (i % 3 == 2 ? DLOCK_REPLY_BULK : DLOCK_REPLY_INTEGER))
            return dlock__unexpected_reply(l, &dlock__script_object_masters, m);
    if (m->n == 0)
        rc = scan_node(l, NULL, pattern, cnt, names, n, cap);
    for (i = 0; i < m->n && rc == 0; i += 3) {
        for (j = 0; j < i; j += 3) /* a master of several ranges: once */
            if (strcmp(m->elems[j + 2]->str, m->elems[i + 2]->str) == 0)
                break;
        if (j < i)
            continue;
        routing_key(b, key, sizeof key, (unsigned)m->elems[i]->integer,
                    (unsigned)m->elems[i + 1]->integer);
        rc = scan_node(l, key, pattern, cnt, names, n, cap);
    }
    dlock_reply_free(m);
    return rc;
}

int dlock_client_scan(dlock_client *c, const char *pattern, int64_t count, char ***out,
                      char *err, size_t errlen)
{
    char cnt[DLOCK__I64_SIZE], **names = NULL;
    size_t n = 0, cap = 0, i, k;
    dlock_rlock *l = NULL;
    int rc;

    if (err && errlen)
        err[0] = '\0';
    if (out)
        *out = NULL;
    if (!c || !pattern || !out) {
        if (err && errlen)
            snprintf(err, errlen, "NULL argument");
        return DLOCK_EINVAL;
    }
    if (count < 1 || count > 1000000) {
        if (err && errlen)
            snprintf(err, errlen, "count must be 1..1000000 (got %" PRId64 ")", count);
        return DLOCK_EINVAL;
    }
    /* A handle only to run the scripts through the client's services (its
     * checks, the detail of a failure); no key of its own. */
    if ((rc = dlock_reentrant_new(&l, c, "dlock-scan")) != 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s", dlock_strerror(rc));
        return rc;
    }
    rc = scan_all(l, pattern, dlock__i64(cnt, count), &names, &n, &cap);
    if (rc == 0 && !names && !(names = calloc(1, sizeof *names)))
        rc = dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory");
    if (rc != 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s", dlock_errmsg(l));
        dlock_names_free(names);
        dlock_rlock_free(l);
        return rc;
    }
    /* Sorted, each name once (SCAN may return a key twice). */
    qsort(names, n, sizeof *names, cmp_names);
    for (i = k = 0; i < n; i++) {
        if (k > 0 && strcmp(names[i], names[k - 1]) == 0)
            free(names[i]);
        else
            names[k++] = names[i];
    }
    names[k] = NULL;
    *out = names;
    dlock_rlock_free(l);
    return 0;
}
