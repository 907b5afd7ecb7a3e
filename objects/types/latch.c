/*
 * dlock — the count-down latch (Redisson's RCountDownLatch layout). See
 * api/dlock/latch.h for the semantics; the scripts are latch_*.lua (and
 * semaphore_get.lua, which reads the count: the same layout).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/latch.h"
#include "objects/runtime/client.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/types/methods.h"
#include "objects/types/semaphore.h"
#include "objects/types/type.h"
#include "scripts.h"

struct dlock_latch {
    dlock_object_base o; /* channel: "redisson_countdownlatch__channel__{name}" */
};

#define BASE(l) (&(l)->o.base)

/* {"type", "name", "count"}: no TTL, the latch never sets one. */
static int state(dlock_rlock *b, struct json_t **out)
{
    return dlock__count_state(b, out, "count", 0);
}

/* Every lock slot NULL: never handed out as a lock (object.h); the state
 * slot serves dlock_latch_state. */
static const dlock_rlock_methods latch_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION, .type = "latch", .destroy = dlock_object_base_destroy,
    .state = state,
};
const dlock__type dlock__type_latch = {
    .name = "latch", .tables = {&latch_methods},
    .wakes = DLOCK__WAKE_ON_DELETE, .message = "0", /* awaiters re-read the count */
    .kind = &dlock__kind_counter, .shares_kind = 1, /* a semaphore's count */
};

#define CHANNEL_PREFIX "redisson_countdownlatch__channel__"

int dlock_latch_new(dlock_latch **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    dlock_backend *b;
    char *wrapped;
    size_t n;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock_object_base_new(&o, sizeof(dlock_latch), &latch_methods, c, name,
                           CHANNEL_PREFIX, "");
    if (rc != 0)
        return rc;
    /* The one exception to the brace rule (DESIGN §2): Redisson wraps the
     * latch name in braces even when it already holds some, so the channel
     * is made here rather than by dlock_rlock_key. On Redis Cluster such a
     * channel may hash to another slot than the name (the sharded publish
     * from the name's script would be refused): the brace rule's channel,
     * made above, stays then. */
    n = strlen(CHANNEL_PREFIX) + o->base.name_len + 3;
    wrapped = malloc(n);
    if (!wrapped) {
        dlock_rlock_free(&o->base);
        return DLOCK_ENOMEM;
    }
    snprintf(wrapped, n, "%s{%s}", CHANNEL_PREFIX, o->base.name);
    b = c->backend;
    if (dlock_backend_key_slot(b, wrapped, strlen(wrapped)) ==
        dlock_backend_key_slot(b, o->base.name, o->base.name_len)) {
        free(o->channel);
        o->channel = wrapped;
    } else {
        free(wrapped);
    }
    *out = (dlock_latch *)o;
    return 0;
}

void dlock_latch_free(dlock_latch *l)
{
    if (l)
        dlock_rlock_free(BASE(l));
}

const char *dlock_latch_name(const dlock_latch *l)
{
    return l ? l->o.base.name : NULL;
}

const char *dlock_latch_errmsg(dlock_latch *l)
{
    return l ? dlock_errmsg(BASE(l)) : "latch object is NULL";
}

static int enter(dlock_latch *l)
{
    return l ? dlock__object_check(BASE(l)) : DLOCK_EINVAL;
}

int dlock_latch_try_set_count(dlock_latch *l, int *out, int64_t count)
{
    char n[DLOCK__I64_SIZE];
    const char *argv[4];
    int64_t set;
    int rc = enter(l);

    if (rc != 0)
        return rc;
    if (count == 0)
        return dlock_rlock_fail(BASE(l), DLOCK_EINVAL,
                                "count must be >= 1 (a count of 0 is an open latch)");
    if ((rc = dlock__object_count_arg(BASE(l), count, 0, "count")) != 0)
        return rc;
    argv[0] = l->o.base.name;
    argv[1] = dlock__i64(n, count);
    argv[2] = l->o.channel;
    argv[3] = dlock__publish_cmd(BASE(l));
    rc = dlock_rlock_eval_integer(BASE(l), NULL, &set, &dlock__script_latch_try_set, 1, 3, argv);
    if (rc == 0 && out)
        *out = set == 1;
    return rc;
}

int dlock_latch_count_down(dlock_latch *l)
{
    const char *argv[3];
    int64_t left;
    int rc = enter(l);

    if (rc != 0)
        return rc;
    argv[0] = l->o.base.name;
    argv[1] = l->o.channel;
    argv[2] = dlock__publish_cmd(BASE(l));
    return dlock_rlock_eval_integer(BASE(l), NULL, &left, &dlock__script_latch_count_down, 1, 2,
                                    argv);
}

int dlock_latch_count(dlock_latch *l, int64_t *out)
{
    const char *argv[1];
    int64_t v;
    int rc = enter(l);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(BASE(l), DLOCK_EINVAL, "out is NULL");
    argv[0] = l->o.base.name;
    rc = dlock_rlock_eval_integer(BASE(l), NULL, &v, &dlock__script_semaphore_get, 1, 0, argv);
    if (rc == 0)
        *out = v > 0 ? v : 0; /* a count stored at or below zero is an open latch */
    return rc;
}

static int attempt(dlock_rlock *b, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = op->owner;
    const char *argv[1];
    int64_t v;
    int rc;

    (void)spec, (void)owner, (void)lease_ms;
    argv[0] = b->name;
    rc = dlock_rlock_eval_integer(b, op, &v, &dlock__script_semaphore_get, 1, 0, argv);
    if (rc != 0 || v <= 0)
        return rc;
    /* only a message ("0" at zero) changes anything for an awaiter */
    *retry_ms = -1;
    return dlock_rlock_fail(b, DLOCK_EBUSY, "\"%.64s\" still counts %" PRId64,
                            b->name, v);
}

static int await(dlock_latch *l, int64_t timeout_ms)
{
    dlock_op op;
    int rc;

    dlock__op_init(&op, ""); /* a latch has no owner */
    /* zero lets every awaiter through */
    /* movable: what follows only renames the final code */
    rc = dlock__object_wait(BASE(l), &op, DLOCK_WAKE_EVERY, 1, attempt, NULL, NULL,
                            timeout_ms, 0);

    /* A latch has no holder: a single look that finds it closed is a
     * timeout of 0 ms, not "busy". */
    if (rc == DLOCK_EBUSY)
        rc = dlock_rlock_fail(BASE(l), DLOCK_ETIMEDOUT, "\"%.64s\" is not open yet",
                              l->o.base.name);
    return rc;
}

int dlock_latch_await(dlock_latch *l)
{
    int rc = enter(l);

    return rc != 0 ? rc : await(l, DLOCK_WAIT_FOREVER);
}

int dlock_latch_await_for(dlock_latch *l, int64_t timeout_ms)
{
    int rc = enter(l);

    if (rc != 0)
        return rc;
    if (timeout_ms < 0)
        return dlock_rlock_fail(BASE(l), DLOCK_EINVAL, "timeout must be >= 0 ms");
    return await(l, timeout_ms);
}

int dlock_latch_delete(dlock_latch *l, int *out)
{
    const char *argv[3];
    int64_t existed;
    int rc = enter(l);

    if (rc != 0)
        return rc;
    argv[0] = l->o.base.name;
    argv[1] = l->o.channel;
    argv[2] = dlock__publish_cmd(BASE(l));
    rc = dlock_rlock_eval_integer(BASE(l), NULL, &existed, &dlock__script_latch_delete, 1, 2,
                                  argv);
    if (rc == 0 && out)
        *out = existed == 1;
    return rc;
}

int dlock_latch_state(dlock_latch *l, struct json_t **out)
{
    return dlock__object_state(l ? BASE(l) : NULL, out);
}

int dlock_latch_state_text(dlock_latch *l, char **out)
{
    return dlock__object_state_text(l ? BASE(l) : NULL, out);
}
