/*
 * dlock — the permit-expirable semaphore (Redisson's
 * RPermitExpirableSemaphore layout, honest release answers). See
 * api/dlock/permit_semaphore.h for the semantics; the scripts are
 * permit_*.lua.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uuid/uuid.h>

#include "core/json_doc.h"
#include "dlock/permit_semaphore.h"
#include "objects/runtime/client.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/base.h"
#include "objects/types/methods.h"
#include "objects/types/names.h"
#include "objects/types/semaphore.h"
#include "objects/types/type.h"
#include "scripts.h"

struct dlock_permit_semaphore {
    dlock_object_base o; /* channel: "redisson_sc:{name}" */
    char *timeout;   /* "{name}:timeout" */
    char *expired;   /* "{name}:expired" */
};

#define BASE(p) (&(p)->o.base)
#define NKEYS 3
#define NCOMMON 4 /* now, keep, max, channel */

/* Statuses of permit_check.luainc's permit_status (and -2 for a repeat). */
#define ST_TAKEN 1
#define ST_FREE 0
#define ST_EXPIRED (-1)
#define ST_REPEATED (-2)

/* The KEYS and common ARGV of every permit script; bufs holds the numbers. */
typedef struct call_args {
    char now[DLOCK__I64_SIZE], keep[DLOCK__I64_SIZE], max[DLOCK__I64_SIZE];
} call_args;

static void common_args(dlock_permit_semaphore *p, call_args *a, const char **argv)
{
    argv[0] = p->o.base.name;
    argv[1] = p->timeout;
    argv[2] = p->expired;
    argv[3] = dlock__i64(a->now, dlock_clock_wall(p->o.base.client->clock));
    argv[4] = dlock__i64(a->keep, DLOCK_PERMIT_EXPIRED_KEEP_MS);
    argv[5] = dlock__i64(a->max, DLOCK_PERMIT_EXPIRED_MAX);
    argv[6] = p->o.channel;
}

static void destroy(dlock_rlock *l)
{
    dlock_permit_semaphore *p = (dlock_permit_semaphore *)l;

    free(p->timeout);
    free(p->expired);
    dlock_object_base_destroy(l);
}

static int state(dlock_rlock *l, struct json_t **out);

/* Every lock slot NULL: never handed out as a lock (object.h); the state
 * slot serves dlock_permit_semaphore_state. */
static const dlock_rlock_methods permit_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION, .type = "permit_semaphore", .destroy = destroy, .state = state,
};
static const dlock__key_form permit_forms[] = {
    {DLOCK__KEY_PERMIT_EXPIRIES, DLOCK__FORM_AT_END,
     "a permit semaphore's permit expiries, {N}:timeout"},
    {DLOCK__KEY_PERMIT_EXPIRED, DLOCK__FORM_AT_END, "a permit semaphore's expired permits, {N}:expired"},
};
/* Its permits' set beside the name. */
static const dlock__kind permit_kind = {
    .name = "permit_semaphore", .what = "permit-expiring semaphore", .rank = 30,
    .at = DLOCK__AT_STRING | DLOCK__AT_NONE,
    .marks = {{"", DLOCK__KEY_PERMIT_EXPIRIES}}, .nmarks = 1,
};
const dlock__type dlock__type_permit_semaphore = {
    .name = "permit_semaphore", .tables = {&permit_methods},
    .forms = permit_forms, .nforms = 2,
    .keys = {{"", DLOCK__KEY_PERMIT_EXPIRIES}, {"", DLOCK__KEY_PERMIT_EXPIRED}},
    .nkeys = 2,
    .kind = &permit_kind,
};

int dlock_permit_semaphore_new(dlock_permit_semaphore **out, dlock_client *c,
                               const char *name)
{
    dlock_object_base *o = NULL;
    dlock_permit_semaphore *p;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock_object_base_new(&o, sizeof(*p), &permit_methods, c, name,
                           "redisson_sc:", "");
    if (rc != 0)
        return rc;
    p = (dlock_permit_semaphore *)o;
    p->timeout = dlock_rlock_key(&o->base, "", DLOCK__KEY_PERMIT_EXPIRIES);
    p->expired = dlock_rlock_key(&o->base, "", DLOCK__KEY_PERMIT_EXPIRED);
    if (!p->timeout || !p->expired) {
        dlock_rlock_free(&o->base);
        return DLOCK_ENOMEM;
    }
    *out = p;
    return 0;
}

void dlock_permit_semaphore_free(dlock_permit_semaphore *p)
{
    if (p)
        dlock_rlock_free(BASE(p));
}

const char *dlock_permit_semaphore_name(const dlock_permit_semaphore *p)
{
    return p ? p->o.base.name : NULL;
}

const char *dlock_permit_semaphore_errmsg(dlock_permit_semaphore *p)
{
    return p ? dlock_errmsg(BASE(p)) : "permit semaphore object is NULL";
}

void dlock_permit_ids_free(char **ids)
{
    free(ids); /* one block: the pointers and the strings behind them */
}

static int enter(dlock_permit_semaphore *p)
{
    return p ? dlock__object_check(BASE(p)) : DLOCK_EINVAL;
}

static int lease_arg(dlock_permit_semaphore *p, int64_t lease_ms)
{
    if (lease_ms == DLOCK_PERMIT_PERMANENT)
        return 0;
    return dlock__time_arg(BASE(p), "lease (or DLOCK_PERMIT_PERMANENT)", lease_ms, 1);
}

/* ---- ids ------------------------------------------------------------------- */

/* Redisson's layout: the sorted sets hold each id as its 16 raw bytes
 * (ID_BYTES); callers see the 32-digit lower-case hex form. The raw form may
 * hold any byte, NUL included, so every script call that carries ids passes
 * lengths (dlock__rlock_eval_bin). */
#define ID_BYTES (DLOCK_PERMIT_ID_LEN / 2)

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* A permit id is exactly what acquire makes: 32 lower-case hex digits.
 * raw (ID_BYTES) receives the bytes it stands for. */
static int id_arg(dlock_permit_semaphore *p, char *raw, const char *id, size_t index)
{
    size_t i;

    if (!id)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "permit id #%zu is NULL", index);
    for (i = 0; i < DLOCK_PERMIT_ID_LEN; i++)
        if (!id[i] || hex_digit(id[i]) < 0)
            break;
    if (i != DLOCK_PERMIT_ID_LEN || id[i] != '\0')
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL,
                                "\"%.40s\" (#%zu) is not a permit id "
                                "(32 lower-case hex digits)",
                                id, index);
    for (i = 0; i < ID_BYTES; i++)
        raw[i] = (char)(hex_digit(id[2 * i]) << 4 | hex_digit(id[2 * i + 1]));
    return 0;
}

/* Runs sc with the common KEYS/ARGV and nargs more arguments in argv, the
 * arguments from first_id on being raw ids, then the publish command (the
 * last ARGV entry: publish.luainc). argv has NKEYS + NCOMMON + nargs + 1
 * slots, the common ones and the last filled here. */
static int eval_ids(dlock_permit_semaphore *p, dlock_op *op, dlock_reply **out,
                    const dlock_script *sc, const char **argv, size_t nargs,
                    size_t first_id)
{
    size_t total = NKEYS + NCOMMON + nargs + 1, i;
    size_t *len = malloc(total * sizeof(*len));
    call_args a;
    int rc;

    *out = NULL;
    if (!len)
        return dlock_rlock_fail(BASE(p), DLOCK_ENOMEM, "out of memory");
    common_args(p, &a, argv); /* a fresh "now" for every call */
    argv[total - 1] = dlock__publish_cmd(BASE(p));
    for (i = 0; i < total; i++)
        len[i] = i >= NKEYS + NCOMMON + first_id && i < total - 1 ? ID_BYTES
                                                                 : strlen(argv[i]);
    rc = dlock__rlock_eval_bin(BASE(p), op, out, sc, NKEYS, NCOMMON + nargs + 1, argv, len);
    free(len);
    return rc;
}

/* eval_ids for scripts that reply an integer. */
static int eval_ids_integer(dlock_permit_semaphore *p, dlock_op *op, int64_t *out,
                            const dlock_script *sc, const char **argv, size_t nargs,
                            size_t first_id)
{
    dlock_reply *r;
    int rc = eval_ids(p, op, &r, sc, argv, nargs, first_id);

    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(BASE(p), sc, r);
    *out = r->integer;
    dlock_reply_free(r);
    return 0;
}

/* ---- acquiring ------------------------------------------------------------- */

/* One acquire call: the script's arguments, raw ids included, built once;
 * the ids are only visible to others once the script has granted them. */
typedef struct permit_wait {
    dlock_permit_semaphore *p;
    const char **argv;
    size_t nargs; /* after the common ones: the lease and the ids */
    char lease[DLOCK__I64_SIZE];
    char **ids; /* the same ids in hex, n of them */
    size_t n;
} permit_wait;

static int release_ids(dlock_permit_semaphore *p, dlock_op *op, size_t *bad,
                       const char *const *ids, size_t n);

/* An acquisition not synced to enough replicas: its permits go back. */
static int undo(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec)
{
    permit_wait *w = spec->arg;
    size_t bad;

    (void)l;
    return release_ids(w->p, op, &bad, (const char *const *)w->ids, w->n);
}

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const dlock_script *sc = &dlock__script_permit_acquire;
    permit_wait *w = spec->arg;
    dlock_reply *r;
    int rc;

    (void)lease_ms;
    rc = eval_ids(w->p, op, &r, sc, w->argv, w->nargs, 1); /* lease, then the ids */
    if (rc != 0)
        return rc;
    if (r->type == DLOCK_REPLY_NIL) {
        dlock_reply_free(r);
        return 0;
    }
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, sc, r);
    /* Look again when the first lease ends: expiries send no message. */
    *retry_ms = r->integer >= 0 ? (r->integer > 0 ? r->integer : 1) : -1;
    dlock_reply_free(r);
    return dlock_rlock_fail(l, DLOCK_EBUSY, "too few permits of \"%.64s\" are free",
                            l->name);
}

/* n ids in one block: n + 1 pointers, then the hex strings; raw (n *
 * ID_BYTES) receives the bytes each stands for. */
static char **make_ids(size_t n, unsigned char *raw)
{
    char **ids = malloc((n + 1) * sizeof(char *) + n * DLOCK_PERMIT_ID_SIZE);
    char *text;
    size_t i, j;

    if (!ids)
        return NULL;
    text = (char *)(ids + n + 1);
    for (i = 0; i < n; i++) {
        static const char hex[] = "0123456789abcdef";
        unsigned char *u = raw + i * ID_BYTES;

        uuid_generate_random(u); /* a uuid_t is 16 bytes: ID_BYTES */
        ids[i] = text + i * DLOCK_PERMIT_ID_SIZE;
        for (j = 0; j < ID_BYTES; j++) {
            ids[i][2 * j] = hex[u[j] >> 4];
            ids[i][2 * j + 1] = hex[u[j] & 15];
        }
        ids[i][DLOCK_PERMIT_ID_LEN] = '\0';
    }
    ids[n] = NULL;
    return ids;
}

static int acquire(dlock_permit_semaphore *p, char ***out, int64_t permits,
                   int64_t wait_ms, int64_t lease_ms)
{
    permit_wait w;
    dlock_op op;
    unsigned char raw[DLOCK_PERMITS_PER_CALL * ID_BYTES];
    char **ids;
    size_t n, i;
    int rc;

    if (!out)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "out is NULL");
    *out = NULL;
    if (permits < 0 || permits > DLOCK_PERMITS_PER_CALL)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL,
                                "permits must be 0..%d (got %" PRId64 ")",
                                DLOCK_PERMITS_PER_CALL, permits);
    if ((rc = lease_arg(p, lease_ms)) != 0)
        return rc;
    n = (size_t)permits;
    ids = make_ids(n, raw);
    if (!ids)
        return dlock_rlock_fail(BASE(p), DLOCK_ENOMEM, "out of memory");
    if (n == 0) {
        *out = ids;
        return 0;
    }
    w.p = p;
    w.nargs = 1 + n; /* after the common ones */
    w.argv = malloc((NKEYS + NCOMMON + w.nargs + 1) * sizeof(*w.argv));
    if (!w.argv) {
        free(ids);
        return dlock_rlock_fail(BASE(p), DLOCK_ENOMEM, "out of memory");
    }
    w.argv[NKEYS + NCOMMON] = dlock__i64(w.lease, lease_ms);
    for (i = 0; i < n; i++)
        w.argv[NKEYS + NCOMMON + 1 + i] = (const char *)raw + i * ID_BYTES;
    w.ids = ids;
    w.n = n;
    dlock__op_init(&op, ""); /* permits have ids, no owner */
    /* Not movable: a call's permit ids are drawn at random, and an attempt
     * retried after a lost reply must send the same ones (its permits may
     * have been taken under them), so the ids (up to
     * DLOCK_PERMITS_PER_CALL, in w's own allocations) would have to be
     * kept between calls; the wait keeps its frame instead. */
    rc = dlock__object_wait(BASE(p), &op, DLOCK_WAKE_COUNT, 0, attempt, undo, &w, wait_ms,
                            0);
    free(w.argv);
    if (rc != 0) {
        free(ids);
        return rc;
    }
    *out = ids;
    return 0;
}

int dlock_permit_semaphore_acquire(dlock_permit_semaphore *p, char ***out,
                                   int64_t permits, int64_t lease_ms)
{
    int rc = enter(p);

    return rc != 0 ? rc : acquire(p, out, permits, DLOCK_WAIT_FOREVER, lease_ms);
}

int dlock_permit_semaphore_try_acquire(dlock_permit_semaphore *p, char ***out,
                                       int64_t permits, int64_t wait_ms,
                                       int64_t lease_ms)
{
    int rc = enter(p);

    if (rc != 0)
        return rc;
    if (wait_ms < 0) {
        if (out)
            *out = NULL;
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "wait must be >= 0 ms");
    }
    return acquire(p, out, permits, wait_ms, lease_ms);
}

/* ---- releasing --------------------------------------------------------------- */

/* The code of a status, recorded for the id at index. */
static int status_code(dlock_permit_semaphore *p, long long st, const char *id,
                       size_t index)
{
    switch (st) {
    case ST_TAKEN:
        return 0;
    case ST_EXPIRED:
        return dlock_rlock_fail(BASE(p), DLOCK_ELOST,
                                "permit %s (#%zu) of \"%.64s\": its lease ran out",
                                id, index, p->o.base.name);
    case ST_FREE:
        return dlock_rlock_fail(BASE(p), DLOCK_ENOTOWNER,
                                "permit %s (#%zu) of \"%.64s\" is not taken (already "
                                "released, or never issued)", id, index, p->o.base.name);
    case ST_REPEATED:
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL,
                                "permit %s (#%zu) is listed twice", id, index);
    default:
        return dlock_rlock_fail(BASE(p), DLOCK_EPROTO,
                                "script permit_release: unexpected status %lld", st);
    }
}

/* Runs permit_release on ids. *bad = index of the first id not released
 * (n when all were), and its code is returned; 0 when all were released. */
static int release_ids(dlock_permit_semaphore *p, dlock_op *op, size_t *bad,
                       const char *const *ids, size_t n)
{
    const dlock_script *sc = &dlock__script_permit_release;
    char raw[DLOCK_PERMITS_PER_CALL * ID_BYTES];
    const char **argv;
    dlock_reply *r;
    size_t i;
    int rc;

    *bad = n;
    if (n > DLOCK_PERMITS_PER_CALL)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "at most %d ids per call",
                                DLOCK_PERMITS_PER_CALL);
    if (n > 0 && !ids)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "ids is NULL");
    for (i = 0; i < n; i++) {
        rc = id_arg(p, raw + i * ID_BYTES, ids[i], i);
        if (rc != 0) {
            *bad = i;
            return rc;
        }
    }
    if (n == 0)
        return 0; /* releasing nothing is a no-op */
    argv = malloc((NKEYS + NCOMMON + n + 1) * sizeof(*argv));
    if (!argv)
        return dlock_rlock_fail(BASE(p), DLOCK_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        argv[NKEYS + NCOMMON + i] = raw + i * ID_BYTES;
    rc = eval_ids(p, op, &r, sc, argv, n, 0);
    free(argv);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != n)
        return dlock__unexpected_reply(BASE(p), sc, r);
    for (i = 0; i < n; i++)
        if (r->elems[i]->type != DLOCK_REPLY_INTEGER)
            return dlock__unexpected_reply(BASE(p), sc, r);
    /* Bad input (a repeated id) is reported before any "not taken". */
    for (i = 0; i < n && *bad == n; i++)
        if (r->elems[i]->integer == ST_REPEATED)
            *bad = i;
    for (i = 0; i < n && *bad == n; i++)
        if (r->elems[i]->integer != ST_TAKEN)
            *bad = i;
    rc = *bad < n ? status_code(p, r->elems[*bad]->integer, ids[*bad], *bad) : 0;
    dlock_reply_free(r);
    return rc;
}

int dlock_permit_semaphore_release(dlock_permit_semaphore *p, const char *id)
{
    size_t bad;
    int rc = enter(p);

    return rc != 0 ? rc : release_ids(p, NULL, &bad, &id, 1);
}

int dlock_permit_semaphore_release_all(dlock_permit_semaphore *p, size_t *out,
                                       const char *const *ids, size_t n)
{
    size_t bad = 0;
    int rc = enter(p);

    if (rc == 0)
        rc = release_ids(p, NULL, &bad, ids, n);
    if (out && p)
        *out = bad;
    return rc;
}

/* "Not taken" becomes *out = 0; bad input and failures stay errors. */
static int try_release(dlock_permit_semaphore *p, int *out, const char *const *ids,
                       size_t n)
{
    size_t bad;
    int rc = enter(p);

    if (rc == 0)
        rc = release_ids(p, NULL, &bad, ids, n);
    if (rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER) {
        if (out)
            *out = 0;
        return 0;
    }
    if (rc == 0 && out)
        *out = 1;
    return rc;
}

int dlock_permit_semaphore_try_release(dlock_permit_semaphore *p, int *out,
                                       const char *id)
{
    return try_release(p, out, &id, 1);
}

int dlock_permit_semaphore_try_release_all(dlock_permit_semaphore *p, int *out,
                                           const char *const *ids, size_t n)
{
    return try_release(p, out, ids, n);
}

/* ---- leases ------------------------------------------------------------------ */

int dlock_permit_semaphore_update_lease(dlock_permit_semaphore *p, const char *id,
                                        int64_t lease_ms)
{
    char lease[DLOCK__I64_SIZE], raw[ID_BYTES];
    const char *argv[NKEYS + NCOMMON + 3];
    int64_t st;
    int rc = enter(p);

    if (rc != 0 || (rc = lease_arg(p, lease_ms)) != 0 ||
        (rc = id_arg(p, raw, id, 0)) != 0)
        return rc;
    argv[NKEYS + NCOMMON] = dlock__i64(lease, lease_ms);
    argv[NKEYS + NCOMMON + 1] = raw;
    rc = eval_ids_integer(p, NULL, &st, &dlock__script_permit_update_lease, argv, 2, 1);
    return rc != 0 ? rc : status_code(p, st, id, 0);
}

int dlock_permit_semaphore_lease_of(dlock_permit_semaphore *p, int64_t *out,
                                    const char *id)
{
    const char *argv[NKEYS + NCOMMON + 2];
    char raw[ID_BYTES];
    int rc = enter(p);

    if (rc != 0 || (rc = id_arg(p, raw, id, 0)) != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "out is NULL");
    argv[NKEYS + NCOMMON] = raw;
    return eval_ids_integer(p, NULL, out, &dlock__script_permit_lease, argv, 1, 0);
}

/* ---- counts -------------------------------------------------------------------- */

enum { ST_AVAILABLE, ST_ACQUIRED, ST_TOTAL };

static int counts(dlock_permit_semaphore *p, int64_t *out, int which)
{
    const dlock_script *sc = &dlock__script_permit_state;
    const char *argv[NKEYS + NCOMMON];
    call_args a;
    dlock_reply *r;
    int rc = enter(p);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(BASE(p), DLOCK_EINVAL, "out is NULL");
    common_args(p, &a, argv);
    rc = dlock_rlock_eval(BASE(p), NULL, &r, sc, NKEYS, NCOMMON, argv);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 3 ||
        r->elems[which]->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(BASE(p), sc, r);
    *out = r->elems[which]->integer;
    dlock_reply_free(r);
    return 0;
}

int dlock_permit_semaphore_available_permits(dlock_permit_semaphore *p, int64_t *out)
{
    return counts(p, out, ST_AVAILABLE);
}

int dlock_permit_semaphore_acquired_permits(dlock_permit_semaphore *p, int64_t *out)
{
    return counts(p, out, ST_ACQUIRED);
}

int dlock_permit_semaphore_total_permits(dlock_permit_semaphore *p, int64_t *out)
{
    return counts(p, out, ST_TOTAL);
}

/* permit_set.lua in one of its modes. */
static int set(dlock_permit_semaphore *p, int *out, const char *mode, int64_t v,
               int negative_ok, const char *what)
{
    char val[DLOCK__I64_SIZE];
    const char *argv[NKEYS + NCOMMON + 3];
    call_args a;
    int64_t done;
    int rc = enter(p);

    if (rc != 0 || (rc = dlock__object_count_arg(BASE(p), v, negative_ok, what)) != 0)
        return rc;
    common_args(p, &a, argv);
    argv[NKEYS + NCOMMON] = mode;
    argv[NKEYS + NCOMMON + 1] = dlock__i64(val, v);
    argv[NKEYS + NCOMMON + 2] = dlock__publish_cmd(BASE(p));
    rc = dlock_rlock_eval_integer(BASE(p), NULL, &done, &dlock__script_permit_set, NKEYS,
                                  NCOMMON + 3, argv);
    if (rc == 0 && out)
        *out = done == 1;
    return rc;
}

int dlock_permit_semaphore_set_permits(dlock_permit_semaphore *p, int64_t permits)
{
    return set(p, NULL, "total", permits, 0, "permits");
}

int dlock_permit_semaphore_try_set_permits(dlock_permit_semaphore *p, int *out,
                                           int64_t permits)
{
    return set(p, out, "try", permits, 0, "permits");
}

int dlock_permit_semaphore_add_permits(dlock_permit_semaphore *p, int64_t delta)
{
    return set(p, NULL, "add", delta, 1, "delta");
}

/* ---- introspection ----------------------------------------------------------- */

/* The counts as the count reads give them, and the permits whose lease
 * runs; "now" is this client's wall clock, as for every other call. */
static int state(dlock_rlock *l, struct json_t **out)
{
    static const char *const permit_keys[] = {"id", "ttl_ms"};
    const dlock_script *sc = &dlock__script_permit_inspect;
    const char *argv[NKEYS + NCOMMON];
    call_args a;
    struct json_t *doc;
    dlock_reply *r;
    int bad, rc;

    common_args((dlock_permit_semaphore *)l, &a, argv);
    rc = dlock_rlock_eval(l, NULL, &r, sc, NKEYS, NCOMMON, argv);
    if (rc != 0)
        return rc;
    if (!dlock__reply_is(r, "iiia", 0) || !dlock__reply_is(r->elems[3], "bi", 1))
        return dlock__unexpected_reply(l, sc, r);
    doc = dlock__state_begin(l, &bad);
    bad |= dlock__json_set_int(doc, "available", r->elems[0]->integer);
    bad |= dlock__json_set_int(doc, "acquired", r->elems[1]->integer);
    bad |= dlock__json_set_int(doc, "total", r->elems[2]->integer);
    bad |= dlock__json_set(doc, "permits",
                           dlock__state_rows(r->elems[3], permit_keys, 2));
    dlock_reply_free(r);
    return dlock__state_end(l, doc, bad, out);
}

int dlock_permit_semaphore_state(dlock_permit_semaphore *p, struct json_t **out)
{
    return dlock__object_state(p ? BASE(p) : NULL, out);
}

int dlock_permit_semaphore_state_text(dlock_permit_semaphore *p, char **out)
{
    return dlock__object_state_text(p ? BASE(p) : NULL, out);
}
