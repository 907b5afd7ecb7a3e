/*
 * dlock — the spin lock (api/dlock/spin_lock.h): the reentrant lock's hash,
 * scripts and slots, with a wait that polls instead of subscribing (a
 * dlock_wait_spec without a channel, api/dlock/sys/methods.h). Sharing the
 * slots, not copying them, is what keeps the two layouts one.
 */
#include "dlock/spin_lock.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/reads.h"
#include "objects/types/hash_lock.h"
#include "objects/types/methods.h"
#include "objects/types/type.h"

typedef struct spin {
    dlock_object_base o; /* channel: "redisson_lock__channel:{name}", where
                      * unlock publishes for the reentrant lock's waiters */
    int64_t initial_delay_ms, max_delay_ms;
} spin;

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    spin *s = (spin *)l;
    dlock_wait_spec spec = DLOCK_WAIT_SPEC_INIT;

    spec.attempt = dlock__reentrant_attempt; /* no channel: it polls */
    spec.poll_min_ms = s->initial_delay_ms;
    spec.poll_max_ms = s->max_delay_ms;
    spec.movable = 1;
    return dlock_rlock_wait(l, op, &spec, wait_ms, lease_ms);
}

static const dlock__lock_methods spin_methods =
    DLOCK__HASH_LOCK_TABLE("spin", acquire, dlock_object_base_destroy,
                           dlock__hash_state_plain);
const dlock__type dlock__type_spin_lock = {
    .name = "spin", .tables = {&spin_methods.m},
    .wakes = DLOCK__WAKE_ON_DELETE | DLOCK__WAKE_ON_EXPIRE, .message = "0",
    .kind = &dlock__kind_reentrant, .shares_kind = 1, /* the same hash */
};

int dlock_spin_lock_new(dlock_rlock **out, dlock_client *c, const char *name,
                        const dlock_spin_options *opts)
{
    dlock_spin_options def = DLOCK_SPIN_OPTIONS_INIT;
    dlock_object_base *o = NULL;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (!opts)
        opts = &def;
    /* errmsg-less, as every constructor's: there is no handle yet */
    if (opts->version < 1 || opts->initial_delay_ms < 1 ||
        opts->initial_delay_ms > DLOCK_TIME_MAX_MS || opts->max_delay_ms < 1 ||
        opts->max_delay_ms > DLOCK_TIME_MAX_MS ||
        opts->max_delay_ms < opts->initial_delay_ms)
        return DLOCK_EINVAL;
    rc = dlock_object_base_new(&o, sizeof(spin), &spin_methods.m, c, name,
                           "redisson_lock__channel:", "");
    if (rc != 0)
        return rc;
    ((spin *)o)->initial_delay_ms = opts->initial_delay_ms;
    ((spin *)o)->max_delay_ms = opts->max_delay_ms;
    *out = &o->base;
    return 0;
}
