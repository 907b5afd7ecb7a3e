/*
 * dlock — the reentrant lock (Redisson's RLock layout).
 *
 * Hash at the name, one field per owner holding the hold count; channel
 * "redisson_lock__channel:{name}", message "0" on release. One script call
 * per attempt and per unlock.
 */
#include "dlock/reentrant.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"
#include "objects/types/hash_lock.h"
#include "objects/types/methods.h"
#include "objects/types/type.h"
#include "scripts.h"

#define RELEASE_MESSAGE "0"

int dlock__reentrant_attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                             int64_t lease_ms, int64_t *retry_ms)
{
    const dlock_script *s = &dlock__script_reentrant_acquire;
    char lease[DLOCK__I64_SIZE], retry[DLOCK__I64_SIZE];
    const char *argv[4];
    dlock_reply *r;
    int rc;

    (void)spec;
    argv[0] = l->name;
    argv[1] = dlock__lease_arg(l, lease, lease_ms);
    argv[2] = op->owner;
    argv[3] = dlock__acquire_retry_arg(l, op, retry);
    rc = dlock_rlock_eval_acquire(l, op, &r, lease_ms, &dlock__script_hash_renew,
                                  s, 1, 3, argv);
    if (rc != 0 || !r)
        return rc;
    if ((rc = dlock_rlock_refused(l, s, r, retry_ms)) != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is held by another owner",
                            l->name);
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms, int64_t lease_ms)
{
    return dlock__object_wait(l, op, DLOCK_WAKE_LOCK, 1, dlock__reentrant_attempt, NULL, NULL,
                              wait_ms, lease_ms);
}

/* The release script's arguments (lease: its buffer). */
static void release_argv(dlock_rlock *l, const char *owner, const char *argv[6],
                         char lease[DLOCK__I64_SIZE])
{
    argv[0] = l->name;
    argv[1] = ((dlock_object_base *)l)->channel;
    argv[2] = RELEASE_MESSAGE;
    argv[3] = dlock__i64(lease, dlock_hold_lease(l, owner));
    argv[4] = owner;
    argv[5] = dlock__publish_cmd(l);
}

void dlock__reentrant_release_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h)
{
    char lease[DLOCK__I64_SIZE];
    const char *argv[6];

    release_argv(l, op->owner, argv, lease);
    dlock__rlock_release_send(l, op, h, &dlock__script_reentrant_release, 2, 4, argv);
}

int dlock__reentrant_release(dlock_rlock *l, dlock_op *op)
{
    char lease[DLOCK__I64_SIZE];
    const char *argv[6];

    release_argv(l, op->owner, argv, lease);
    return dlock_rlock_eval_release(l, op, &dlock__script_reentrant_release, 2, 4, argv);
}

int dlock__reentrant_force_unlock(dlock_rlock *l, int *existed)
{
    const char *argv[4];
    int64_t existed_now;
    int rc;

    argv[0] = l->name;
    argv[1] = ((dlock_object_base *)l)->channel;
    argv[2] = RELEASE_MESSAGE;
    argv[3] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_integer(l, NULL, &existed_now, &dlock__script_hash_force_unlock,
                                  2, 2, argv);
    if (rc == 0)
        *existed = existed_now == 1;
    return rc;
}

static const dlock__lock_methods reentrant_methods =
    DLOCK__HASH_LOCK_TABLE("reentrant", acquire, dlock_object_base_destroy,
                           dlock__hash_state_plain);
/* A hash of owners, nothing else of a type ranked before it. */
const dlock__kind dlock__kind_reentrant = {
    .name = "reentrant", .what = "reentrant lock", .rank = 60, .at = DLOCK__AT_HASH,
};
const dlock__type dlock__type_reentrant = {
    .name = "reentrant", .tables = {&reentrant_methods.m},
    .wakes = DLOCK__WAKE_ON_DELETE | DLOCK__WAKE_ON_EXPIRE, .message = "0",
    .kind = &dlock__kind_reentrant, .locks = {{"reentrant", dlock_reentrant_new}},
};

int dlock_reentrant_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    rc = dlock_object_base_new(&o, sizeof(*o), &reentrant_methods.m, c, name,
                           "redisson_lock__channel:", "");
    *out = o ? &o->base : NULL;
    return rc;
}
