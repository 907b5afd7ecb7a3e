/*
 * dlock — the semaphore (Redisson's RSemaphore layout). See
 * api/dlock/semaphore.h for the semantics; the scripts are semaphore_*.lua.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlock/semaphore.h"
#include "objects/types/semaphore.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/base.h"
#include "objects/types/type.h"
#include "scripts.h"

struct dlock_semaphore {
    dlock_object_base o; /* channel: "redisson_sc:{name}" */
};

#define BASE(s) (&(s)->o.base)

/* {"type", "name", "permits", "ttl_ms"}: the count is all there is. */
static int state(dlock_rlock *b, struct json_t **out)
{
    return dlock__count_state(b, out, "permits", 1);
}

/* Every lock slot NULL: never handed out as a lock (object.h); the state
 * slot serves dlock_semaphore_state. */
static const dlock_rlock_methods semaphore_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION, .type = "semaphore", .destroy = dlock_object_base_destroy,
    .state = state,
};
/* An integer string alone: a semaphore's permits or a latch's count
 * (stored alike: the data cannot tell). */
const dlock__kind dlock__kind_counter = {
    .name = "counter", .what = "semaphore or latch count", .rank = 70,
    .at = DLOCK__AT_STRING, .pattern = "^%-?%d+$",
};
const dlock__type dlock__type_semaphore = {
    .name = "semaphore", .tables = {&semaphore_methods}, .kind = &dlock__kind_counter,
};

int dlock_semaphore_new(dlock_semaphore **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    rc = dlock_object_base_new(&o, sizeof(dlock_semaphore), &semaphore_methods, c,
                           name, "redisson_sc:", "");
    *out = (dlock_semaphore *)o;
    return rc;
}

void dlock_semaphore_free(dlock_semaphore *s)
{
    if (s)
        dlock_rlock_free(BASE(s));
}

const char *dlock_semaphore_name(const dlock_semaphore *s)
{
    return s ? s->o.base.name : NULL;
}

const char *dlock_semaphore_errmsg(dlock_semaphore *s)
{
    return s ? dlock_errmsg(BASE(s)) : "semaphore object is NULL";
}

/* semaphore.h: a permit count or delta's check, for every counted object. */
int dlock__object_count_arg(dlock_rlock *b, int64_t n, int negative_ok,
                            const char *what)
{
    if (n < 0 && !negative_ok)
        return dlock_rlock_fail(b, DLOCK_EINVAL, "%s must be >= 0 (got %" PRId64 ")",
                                what, n);
    if (n > DLOCK_PERMITS_MAX || n < -DLOCK_PERMITS_MAX)
        return dlock_rlock_fail(b, DLOCK_EINVAL, "%s is out of range (|%s| <= 2^53 - 1)",
                                what, what);
    return 0;
}

/* NULL, fork and count checks shared by every call. */
static int enter(dlock_semaphore *s, int64_t n, int negative_ok, const char *what)
{
    int rc;

    if (!s)
        return DLOCK_EINVAL;
    rc = dlock__object_check(BASE(s));
    if (rc == 0 && what)
        rc = dlock__object_count_arg(BASE(s), n, negative_ok, what);
    return rc;
}

static int try_set(dlock_semaphore *s, int *out, int64_t permits, int64_t ttl_ms)
{
    char n[DLOCK__I64_SIZE], ttl[DLOCK__I64_SIZE];
    const char *argv[5];
    int64_t set;
    int rc;

    argv[0] = s->o.base.name;
    argv[1] = dlock__i64(n, permits);
    argv[2] = dlock__i64(ttl, ttl_ms);
    argv[3] = s->o.channel;
    argv[4] = dlock__publish_cmd(BASE(s));
    rc = dlock_rlock_eval_integer(BASE(s), NULL, &set, &dlock__script_semaphore_try_set,
                                  1, 4, argv);
    if (rc == 0 && out)
        *out = set == 1;
    return rc;
}

int dlock_semaphore_try_set_permits(dlock_semaphore *s, int *out, int64_t permits)
{
    int rc = enter(s, permits, 0, "permits");

    return rc != 0 ? rc : try_set(s, out, permits, 0);
}

int dlock_semaphore_try_set_permits_ttl(dlock_semaphore *s, int *out,
                                        int64_t permits, int64_t ttl_ms)
{
    int rc = enter(s, permits, 0, "permits");

    if (rc != 0)
        return rc;
    if ((rc = dlock__time_arg(BASE(s), "ttl", ttl_ms, 1)) != 0)
        return rc;
    return try_set(s, out, permits, ttl_ms);
}

/* ---- acquiring ------------------------------------------------------------- */

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = op->owner;
    const dlock_script *sc = &dlock__script_semaphore_acquire;
    const char *argv[2];
    dlock_reply *r;
    long long avail;
    int rc;

    (void)owner, (void)lease_ms;
    argv[0] = l->name;
    argv[1] = spec->arg; /* the permits wanted, in decimal */
    rc = dlock_rlock_eval(l, op, &r, sc, 1, 1, argv);
    if (rc != 0)
        return rc;
    if (r->type == DLOCK_REPLY_NIL) {
        dlock_reply_free(r);
        return 0;
    }
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, sc, r);
    avail = r->integer;
    dlock_reply_free(r);
    /* Permits only come back through releases, which publish: no timer. */
    *retry_ms = -1;
    return dlock_rlock_fail(l, DLOCK_EBUSY,
                            "\"%.64s\": %lld permit(s) available, %s wanted",
                            l->name, avail, argv[1]);
}

static int add(dlock_semaphore *s, dlock_op *op, int *out, int64_t delta,
               int only_if_exists, const char *limit);

/* An acquisition not synced to enough replicas: the permits go back. */
static int undo(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec)
{
    return add((dlock_semaphore *)l, op, NULL, strtoll(spec->arg, NULL, 10), 0, NULL);
}

static int acquire(dlock_semaphore *s, int64_t permits, int64_t wait_ms)
{
    char n[DLOCK__I64_SIZE];
    dlock_op op;

    if (permits == 0)
        return 0;
    /* no owner: the plain semaphore does not record who holds permits */
    dlock__op_init(&op, "");
    /* movable: every call writes the same count into its own n */
    return dlock__object_wait(BASE(s), &op, DLOCK_WAKE_COUNT, 1, attempt, undo,
                              dlock__i64(n, permits), wait_ms, 0);
}

int dlock_semaphore_acquire(dlock_semaphore *s, int64_t permits)
{
    int rc = enter(s, permits, 0, "permits");

    return rc != 0 ? rc : acquire(s, permits, DLOCK_WAIT_FOREVER);
}

int dlock_semaphore_try_acquire(dlock_semaphore *s, int64_t permits, int64_t wait_ms)
{
    int rc = enter(s, permits, 0, "permits");

    if (rc != 0)
        return rc;
    if (wait_ms < 0)
        return dlock_rlock_fail(BASE(s), DLOCK_EINVAL, "wait must be >= 0 ms");
    return acquire(s, permits, wait_ms);
}

/* ---- releasing and changing the count ---------------------------------------- */

/* limit: the most the count may become, NULL none. */
static int add(dlock_semaphore *s, dlock_op *op, int *out, int64_t delta,
               int only_if_exists, const char *limit)
{
    char d[DLOCK__I64_SIZE];
    const char *argv[6];
    int64_t done;
    int rc;

    argv[0] = s->o.base.name;
    argv[1] = dlock__i64(d, delta);
    argv[2] = s->o.channel;
    argv[3] = only_if_exists ? "1" : "0";
    argv[4] = limit ? limit : "";
    argv[5] = dlock__publish_cmd(BASE(s));
    rc = dlock_rlock_eval_integer(BASE(s), op, &done, &dlock__script_semaphore_add, 1, 5,
                                  argv);
    if (rc == 0 && out)
        *out = done == 1;
    return rc;
}

int dlock_semaphore_release(dlock_semaphore *s, int64_t permits)
{
    int rc = enter(s, permits, 0, "permits");

    if (rc != 0 || permits == 0)
        return rc;
    return add(s, NULL, NULL, permits, 0, NULL);
}

int dlock_semaphore_release_within(dlock_semaphore *s, int *out, int64_t permits,
                                   int64_t limit)
{
    char l[DLOCK__I64_SIZE];
    int rc = enter(s, permits, 0, "permits");

    if (out)
        *out = 0;
    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(BASE(s), DLOCK_EINVAL, "out is NULL");
    if (limit < 0 || limit > DLOCK_PERMITS_MAX)
        return dlock_rlock_fail(BASE(s), DLOCK_EINVAL,
                                "limit must be 0..2^53 - 1 (got %" PRId64 ")", limit);
    return add(s, NULL, out, permits, 0, dlock__i64(l, limit));
}

int dlock_semaphore_release_if_exists(dlock_semaphore *s, int *out, int64_t permits)
{
    int rc = enter(s, permits, 0, "permits");

    if (rc != 0)
        return rc;
    /* 0 permits change nothing; a round trip only to answer "existed" */
    if (permits == 0 && !out)
        return 0;
    return add(s, NULL, out, permits, 1, NULL);
}

int dlock_semaphore_add_permits(dlock_semaphore *s, int64_t delta)
{
    int rc = enter(s, delta, 1, "delta");

    if (rc != 0 || delta == 0)
        return rc;
    return add(s, NULL, NULL, delta, 0, NULL);
}

int dlock_semaphore_drain_permits(dlock_semaphore *s, int64_t *out)
{
    const char *argv[1];
    int64_t drained;
    int rc = enter(s, 0, 0, NULL);

    if (rc != 0)
        return rc;
    argv[0] = s->o.base.name;
    rc = dlock_rlock_eval_integer(BASE(s), NULL, &drained, &dlock__script_semaphore_drain,
                                  1, 0, argv);
    if (rc == 0 && out)
        *out = drained;
    return rc;
}

int dlock_semaphore_available_permits(dlock_semaphore *s, int64_t *out)
{
    const char *argv[1];
    int rc = enter(s, 0, 0, NULL);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(BASE(s), DLOCK_EINVAL, "out is NULL");
    argv[0] = s->o.base.name;
    return dlock_rlock_eval_integer(BASE(s), NULL, out, &dlock__script_semaphore_get, 1, 0, argv);
}

int dlock_semaphore_state(dlock_semaphore *s, struct json_t **out)
{
    return dlock__object_state(s ? BASE(s) : NULL, out);
}

int dlock_semaphore_state_text(dlock_semaphore *s, char **out)
{
    return dlock__object_state_text(s ? BASE(s) : NULL, out);
}
