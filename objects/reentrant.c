/*
 * dlock — the reentrant lock (Redisson's RLock layout).
 *
 * Hash at the name, one field per owner holding the hold count; channel
 * "redisson_lock__channel:{name}", message "0" on release. One script call
 * per attempt and per unlock.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlock/reentrant.h"
#include "internal.h"
#include "scripts.h"

typedef struct reentrant {
    dlock_rlock base;
    char *channel;
} reentrant;

#define RELEASE_MESSAGE "0"

static int64_t effective_lease(dlock_rlock *l, int64_t lease_ms)
{
    return lease_ms > 0 ? lease_ms : l->client->opts.watchdog_timeout_ms;
}

static int attempt(dlock_rlock *l, const dlock_wait_spec *spec,
                   const char *owner, int64_t lease_ms, int64_t *retry_ms)
{
    const dlock_script *s = &dlock__script_reentrant_acquire;
    char lease[24];
    const char *argv[3];
    dlock_reply *r;
    int rc;

    snprintf(lease, sizeof(lease), "%" PRId64, effective_lease(l, lease_ms));
    argv[0] = l->name;
    argv[1] = lease;
    argv[2] = owner;
    rc = dlock_rlock_eval_acquire(l, &r, owner, lease_ms, &dlock__script_hash_renew,
                                  s, 1, 2, argv);
    if (rc != 0 || !r)
        return rc;
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, s, r);
    /* The holder's TTL: sleep at most that long; without expiry (-1) only
     * a release message can end the wait. */
    *retry_ms = r->integer >= 0 ? (r->integer > 0 ? r->integer : 1) : -1;
    dlock_reply_free(r);
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is held by another owner",
                            l->name);
}

static int acquire(dlock_rlock *l, const char *owner, int64_t wait_ms,
                   int64_t lease_ms)
{
    dlock_wait_spec spec = {1, NULL, attempt, NULL, NULL};

    spec.channel = ((reentrant *)l)->channel;
    return dlock_rlock_wait(l, &spec, owner, wait_ms, lease_ms);
}

static int release(dlock_rlock *l, const char *owner)
{
    const dlock_script *s = &dlock__script_reentrant_release;
    char lease[24];
    const char *argv[5];

    snprintf(lease, sizeof(lease), "%" PRId64, dlock__hold_lease(l, owner));
    argv[0] = l->name;
    argv[1] = ((reentrant *)l)->channel;
    argv[2] = RELEASE_MESSAGE;
    argv[3] = lease;
    argv[4] = owner;
    return dlock_rlock_eval_release(l, owner, s, 2, 3, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const dlock_script *s = &dlock__script_hash_force_unlock;
    const char *argv[3];
    int64_t existed_now;
    int rc;

    argv[0] = l->name;
    argv[1] = ((reentrant *)l)->channel;
    argv[2] = RELEASE_MESSAGE;
    rc = dlock_rlock_eval_integer(l, &existed_now, s, 2, 1, argv);
    if (rc == 0)
        *existed = existed_now == 1;
    return rc;
}

static void destroy(dlock_rlock *l)
{
    free(((reentrant *)l)->channel);
    free(l);
}

static const dlock_rlock_methods reentrant_methods = {
    2, "reentrant", acquire, release, force_unlock, dlock__hash_is_locked,
    dlock__hash_is_held, dlock__hash_hold_count, dlock__hash_remain_ttl, destroy,
    dlock__hash_state_plain, dlock__hash_guard_field,
};

int dlock_reentrant_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    reentrant *r;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    r = calloc(1, sizeof(*r));
    if (!r)
        return DLOCK_ENOMEM;
    rc = dlock_rlock_init(&r->base, &reentrant_methods, c, name);
    if (rc != 0) {
        free(r);
        return rc;
    }
    r->channel = dlock_rlock_key(&r->base, "redisson_lock__channel:", "");
    if (!r->channel) {
        dlock_rlock_free(&r->base);
        return DLOCK_ENOMEM;
    }
    *out = &r->base;
    return 0;
}
