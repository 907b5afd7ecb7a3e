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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/rwlock.h"
#include "internal.h"
#include "scripts.h"

/* What differs between the halves. */
typedef struct rw_kind {
    const char *half; /* "read" | "write": the state script's view */
    const dlock_script *acquire, *release, *renew, *force_unlock;
} rw_kind;

typedef struct rwhalf {
    dlock_rlock base;
    const rw_kind *kind;
    char *channel; /* shared by both halves: one publish wakes every waiter */
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
    char lease[24];
    const char *argv[3];
    dlock_reply *r;
    int rc;

    snprintf(lease, sizeof(lease), "%" PRId64,
             lease_ms > 0 ? lease_ms : l->client->opts.watchdog_timeout_ms);
    argv[0] = l->name;
    argv[1] = lease;
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
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, k->acquire, r);
    /* The holder's TTL bounds the sleep: an expiring lease sends no
     * message. -1 (no expiry): only a message ends the wait. */
    *retry_ms = r->integer >= 0 ? (r->integer > 0 ? r->integer : 1) : -1;
    dlock_reply_free(r);
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is %s by another owner",
                            l->name, k == &read_kind ? "write-locked" : "read- or write-locked");
}

static int acquire(dlock_rlock *l, const char *owner, int64_t wait_ms,
                   int64_t lease_ms)
{
    dlock_wait_spec spec = {1, NULL, attempt, NULL, NULL};

    spec.channel = ((rwhalf *)l)->channel;
    return dlock_rlock_wait(l, &spec, owner, wait_ms, lease_ms);
}

static int release(dlock_rlock *l, const char *owner)
{
    char lease[24];
    const char *argv[4];

    /* Only the write half re-applies a lease (a read hold keeps its own);
     * the read script ignores it. */
    snprintf(lease, sizeof(lease), "%" PRId64, dlock__hold_lease(l, owner));
    argv[0] = l->name;
    argv[1] = ((rwhalf *)l)->channel;
    argv[2] = owner;
    argv[3] = lease;
    return dlock_rlock_eval_release(l, owner, kind_of(l)->release, 2, 2, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const dlock_script *s = kind_of(l)->force_unlock;
    const char *argv[2];
    dlock_reply *r;
    int rc;

    argv[0] = l->name;
    argv[1] = ((rwhalf *)l)->channel;
    rc = dlock_rlock_eval(l, &r, s, 2, 0, argv);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, s, r);
    *existed = r->integer == 1;
    dlock_reply_free(r);
    return 0;
}

/* That half's {locked, the owner's hold count, remaining time}, in one
 * read. */
static int state(dlock_rlock *l, const char *owner, int64_t st[3])
{
    const dlock_script *s = &dlock__script_rwlock_state;
    const char *argv[3];
    dlock_reply *r;
    size_t i;
    int rc;

    argv[0] = l->name;
    argv[1] = owner ? owner : "";
    argv[2] = kind_of(l)->half;
    rc = dlock_rlock_eval(l, &r, s, 1, 2, argv);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 3)
        return dlock__unexpected_reply(l, s, r);
    for (i = 0; i < 3; i++) {
        if (r->elems[i]->type != DLOCK_REPLY_INTEGER)
            return dlock__unexpected_reply(l, s, r);
        st[i] = r->elems[i]->integer;
    }
    dlock_reply_free(r);
    return 0;
}

static int is_locked(dlock_rlock *l, int *out)
{
    int64_t st[3];
    int rc = state(l, NULL, st);

    if (rc == 0)
        *out = st[0] != 0;
    return rc;
}

static int is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t st[3];
    int rc = state(l, owner, st);

    if (rc == 0)
        *out = st[1] > 0;
    return rc;
}

static int hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    int64_t st[3];
    int rc = state(l, owner, st);

    if (rc == 0)
        *out = st[1];
    return rc;
}

static int remain_ttl(dlock_rlock *l, int64_t *out)
{
    int64_t st[3];
    int rc = state(l, NULL, st);

    if (rc == 0)
        *out = st[2];
    return rc;
}

static void destroy(dlock_rlock *l)
{
    free(((rwhalf *)l)->channel);
    free(l);
}

/* A writer's hold shows as the field "<owner>:write" of the hash: a guarded
 * write (api/dlock/bucket.h) can check it in the same script. Read holds
 * cannot guard a write (they are shared by design). */
static int write_guard_field(dlock_rlock *l, const char *owner, char *buf, size_t len)
{
    (void)l;
    return (size_t)snprintf(buf, len, "%s:write", owner) < len ? 0 : DLOCK_EINVAL;
}

static const dlock_rlock_methods read_methods = {
    2, "rwlock_read", acquire, release, force_unlock, is_locked,
    is_held, hold_count, remain_ttl, destroy, NULL, NULL,
};

static const dlock_rlock_methods write_methods = {
    2, "rwlock_write", acquire, release, force_unlock, is_locked,
    is_held, hold_count, remain_ttl, destroy, NULL, write_guard_field,
};

static int rw_new(dlock_rlock **out, dlock_client *c, const char *name,
                  const dlock_rlock_methods *m, const rw_kind *k)
{
    rwhalf *h;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    h = calloc(1, sizeof(*h));
    if (!h)
        return DLOCK_ENOMEM;
    rc = dlock_rlock_init(&h->base, m, c, name);
    if (rc != 0) {
        free(h);
        return rc;
    }
    h->kind = k;
    h->channel = dlock_rlock_key(&h->base, "redisson_rwlock:", "");
    if (!h->channel) {
        dlock_rlock_free(&h->base);
        return DLOCK_ENOMEM;
    }
    *out = &h->base;
    return 0;
}

int dlock_rwlock_read_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return rw_new(out, c, name, &read_methods, &read_kind);
}

int dlock_rwlock_write_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return rw_new(out, c, name, &write_methods, &write_kind);
}
