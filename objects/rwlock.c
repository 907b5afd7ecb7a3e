/*
 * dlock — the read-write lock (Redisson's RReadWriteLock layout, honest
 * answers). See api/dlock/rwlock.h for the semantics; the scripts are
 * rwlock_*.lua, sharing rwlock_common.luainc.
 *
 * The two halves are two lock objects of one C type, told apart by their
 * kind (scripts and names); each has its own holds in the client's registry,
 * so the watchdog renews read and write holds with their own scripts, and
 * an unlock of one half never touches the other's local state.
 */
#include <stdio.h>
#include <string.h>

#include "dlock/rwlock.h"
#include "object.h"
#include "scripts.h"

/* What differs between the halves. */
typedef struct rw_kind {
    const char *half; /* "read" | "write": the state script's view */
    const dlock_script *acquire, *release, *renew, *force_unlock;
} rw_kind;

typedef struct rwhalf {
    dlock__object o; /* channel: "redisson_rwlock:{name}", shared by both
                      * halves: one publish wakes every waiter */
    const rw_kind *kind;
} rwhalf;

/* The write acquire script's reply when the owner holds a read lock. */
#define UPGRADE_REPLY "upgrade"

static const rw_kind read_kind = {
    "read", &dlock__script_rwlock_read_acquire, &dlock__script_rwlock_read_release,
    &dlock__script_rwlock_read_renew, &dlock__script_rwlock_read_force_unlock,
};

static const rw_kind write_kind = {
    "write", &dlock__script_rwlock_write_acquire, &dlock__script_rwlock_write_release,
    &dlock__script_rwlock_write_renew, &dlock__script_rwlock_write_force_unlock,
};

static const rw_kind *kind_of(dlock_rlock *l)
{
    return ((rwhalf *)l)->kind;
}

static int attempt(dlock_rlock *l, const dlock_wait_spec *spec,
                   const char *owner, int64_t lease_ms, int64_t *retry_ms)
{
    const rw_kind *k = kind_of(l);
    char lease[DLOCK__I64_SIZE];
    const char *argv[3];
    dlock_reply *r;
    int rc;

    (void)spec;
    argv[0] = l->name;
    argv[1] = dlock__lease_arg(l, lease, lease_ms);
    argv[2] = owner;
    rc = dlock_rlock_eval_acquire(l, &r, owner, lease_ms, k->renew, k->acquire,
                                  1, 2, argv);
    if (rc != 0 || !r)
        return rc;
    if (r->type == DLOCK_REPLY_BULK && strcmp(r->str, UPGRADE_REPLY) == 0) {
        /* Not DLOCK_EBUSY: the wait loop ends at once, for lock() too. */
        dlock_reply_free(r);
        return dlock_rlock_fail(l, DLOCK_EDEADLK,
                                "\"%.64s\": the owner holds the read lock; the write "
                                "lock would wait for it forever (unlock it first)",
                                l->name);
    }
    if ((rc = dlock__attempt_refused(l, k->acquire, r, retry_ms)) != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is %s by another owner",
                            l->name, k == &read_kind ? "write-locked" : "read- or write-locked");
}

static int acquire(dlock_rlock *l, const char *owner, int64_t wait_ms,
                   int64_t lease_ms)
{
    return dlock__object_wait(l, attempt, NULL, owner, wait_ms, lease_ms);
}

static int release(dlock_rlock *l, const char *owner)
{
    char lease[DLOCK__I64_SIZE];
    const char *argv[4];

    argv[0] = l->name;
    argv[1] = ((rwhalf *)l)->o.channel;
    argv[2] = owner;
    /* Only the write half re-applies a lease (a read hold keeps its own);
     * the read script ignores it. */
    argv[3] = dlock__i64(lease, dlock__hold_lease(l, owner));
    return dlock_rlock_eval_release(l, owner, kind_of(l)->release, 2, 2, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const char *argv[2];
    int64_t existed_now;
    int rc;

    argv[0] = l->name;
    argv[1] = ((rwhalf *)l)->o.channel;
    rc = dlock_rlock_eval_integer(l, &existed_now, kind_of(l)->force_unlock, 2, 0, argv);
    if (rc == 0)
        *existed = existed_now == 1;
    return rc;
}

/* That half's state triple. */
static int triple(dlock_rlock *l, const char *owner, int64_t st[3])
{
    const char *argv[3];

    argv[0] = l->name;
    argv[1] = owner;
    argv[2] = kind_of(l)->half;
    return dlock__eval_triple(l, st, &dlock__script_rwlock_state, 1, 2, argv);
}

/* A writer's hold shows as the field "<owner>:write" of the hash: a guarded
 * write (api/dlock/bucket.h) can check it in the same script. Read holds
 * cannot guard a write (they are shared by design). */
static int write_guard_field(dlock_rlock *l, const char *owner, char *buf, size_t len)
{
    (void)l;
    return (size_t)snprintf(buf, len, "%s:write", owner) < len ? 0 : DLOCK_EINVAL;
}

static const dlock__lock_methods read_methods = {
    {2, "rwlock_read", acquire, release, force_unlock, dlock__triple_is_locked,
     dlock__triple_is_held, dlock__triple_hold_count, dlock__triple_remain_ttl,
     dlock__object_destroy, NULL, NULL},
    triple,
};

static const dlock__lock_methods write_methods = {
    {2, "rwlock_write", acquire, release, force_unlock, dlock__triple_is_locked,
     dlock__triple_is_held, dlock__triple_hold_count, dlock__triple_remain_ttl,
     dlock__object_destroy, NULL, write_guard_field},
    triple,
};

static int rw_new(dlock_rlock **out, dlock_client *c, const char *name,
                  const dlock__lock_methods *m, const rw_kind *k)
{
    dlock__object *o = NULL;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    rc = dlock__object_new(&o, sizeof(rwhalf), &m->m, c, name, "redisson_rwlock:", "");
    if (o)
        ((rwhalf *)o)->kind = k;
    *out = o ? &o->base : NULL;
    return rc;
}

int dlock_rwlock_read_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return rw_new(out, c, name, &read_methods, &read_kind);
}

int dlock_rwlock_write_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return rw_new(out, c, name, &write_methods, &write_kind);
}
