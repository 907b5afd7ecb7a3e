/*
 * dlock — the simple lock (api/dlock/simple_lock.h), made the way a lock
 * type of your own is: only through the public interfaces
 * (api/dlock/sys/methods.h, api/dlock/sys/lock_type.h) and its own scripts
 * (objects/scripts/simple_*.lua, embedded as every built-in type's are).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dlock/codec.h"
#include "dlock/simple_lock.h"
#include "dlock/sys/lock_type.h"
#include "scripts.h"

/* The command the release scripts publish with, their last ARGV entry:
 * "publish", or "spublish" on Redis Cluster (a type of your own asks the
 * backend the same way). */
static const char *publish_cmd(dlock_rlock *l)
{
    return dlock_backend_publish_command(dlock_client_backend(l->client));
}

/* One acquisition's own state, for its attempts. */
typedef struct simple_call {
    int64_t wait_ms;
    /* its last attempt got no answer (a transport error): the script may
     * have run and set the key, so finding this owner the holder on the
     * next attempt is that grant, not a second acquisition */
    int unsure;
} simple_call;

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = dlock_op_owner(op);
    const dlock_script *s = &dlock__script_simple_acquire;
    simple_call *call = spec->arg;
    int64_t ttl, self;
    char lease[24];
    const char *argv[4];
    dlock_reply *r;
    int rc;

    snprintf(lease, sizeof(lease), "%" PRId64, dlock_rlock_lease(l, lease_ms));
    argv[0] = l->name;
    argv[1] = lease;
    argv[2] = owner;
    /* not when the owner held it before this call (then asking again is
     * the caller's deadlock, told as such) */
    argv[3] = call->unsure && dlock_hold_lease(l, owner) == 0 ? "1" : "0";
    rc = dlock_rlock_eval_acquire(l, op, &r, lease_ms, &dlock__script_simple_renew,
                                  s, 1, 3, argv);
    call->unsure = rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT;
    if (rc != 0 || !r)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 2 ||
        r->elems[0]->type != DLOCK_REPLY_INTEGER ||
        r->elems[1]->type != DLOCK_REPLY_INTEGER) {
        dlock_reply_free(r);
        return dlock_rlock_fail(l, DLOCK_EPROTO, "script %s: unexpected reply", s->name);
    }
    ttl = r->elems[0]->integer;
    self = r->elems[1]->integer;
    dlock_reply_free(r);
    if (self && call->wait_ms != 0)
        return dlock_rlock_fail(l, DLOCK_EDEADLK, "\"%.64s\" is already held by this "
                                "owner, and a simple lock is not reentrant", l->name);
    if (self)
        return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is already held by this "
                                "owner (not reentrant)", l->name);
    *retry_ms = dlock_retry_after(ttl);
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is held by another owner",
                            l->name);
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    dlock_wait_spec spec = DLOCK_WAIT_SPEC_INIT;
    simple_call call = {wait_ms, 0};

    /* its release publishes "0" as Redisson's locks do: one waiter */
    spec.channel = ((dlock_object_base *)l)->channel;
    spec.attempt = attempt;
    spec.arg = &call;
    spec.wake = DLOCK_WAKE_LOCK;
    /* arg: every call's own wait_ms, the same each time */
    spec.movable = 1;
    return dlock_rlock_wait(l, op, &spec, wait_ms, lease_ms);
}

static int release(dlock_rlock *l, dlock_op *op)
{
    const char *owner = dlock_op_owner(op);
    const char *argv[4];

    argv[0] = l->name;
    argv[1] = ((dlock_object_base *)l)->channel;
    argv[2] = owner;
    argv[3] = publish_cmd(l);
    return dlock_rlock_eval_release(l, op, &dlock__script_simple_release, 2, 2, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const char *argv[3];
    int64_t n;
    int rc;

    argv[0] = l->name;
    argv[1] = ((dlock_object_base *)l)->channel;
    argv[2] = publish_cmd(l);
    rc = dlock_rlock_eval_integer(l, NULL, &n, &dlock__script_simple_force_unlock, 2, 1, argv);
    if (rc == 0)
        *existed = n == 1;
    return rc;
}

/* The one read (simple_read.lua): *ttl (-2 not held) and the holder's id,
 * whose reply is the caller's (*holder points into it). */
static int read_lock(dlock_rlock *l, dlock_reply **r, int64_t *ttl,
                     const dlock_reply **holder)
{
    const dlock_script *s = &dlock__script_simple_read;
    const char *argv[1];
    int rc;

    argv[0] = l->name;
    rc = dlock_rlock_eval(l, NULL, r, s, 1, 0, argv);
    if (rc != 0)
        return rc;
    if ((*r)->type != DLOCK_REPLY_ARRAY || (*r)->n != 2 ||
        (*r)->elems[0]->type != DLOCK_REPLY_INTEGER ||
        (*r)->elems[1]->type != DLOCK_REPLY_BULK) {
        dlock_reply_free(*r);
        *r = NULL;
        return dlock_rlock_fail(l, DLOCK_EPROTO, "script %s: unexpected reply", s->name);
    }
    *ttl = (*r)->elems[0]->integer;
    *holder = (*r)->elems[1];
    return 0;
}

/* What the reads answer, from one read: ttl, and whether owner ("" for
 * none) holds it. */
static int read_for(dlock_rlock *l, const char *owner, int64_t *ttl, int *mine)
{
    const dlock_reply *holder;
    dlock_reply *r;
    int rc = read_lock(l, &r, ttl, &holder);

    if (rc != 0)
        return rc;
    *mine = *ttl != -2 && owner[0] != '\0' && holder->len == strlen(owner) &&
            memcmp(holder->str, owner, holder->len) == 0;
    dlock_reply_free(r);
    return 0;
}

static int is_locked(dlock_rlock *l, int *out)
{
    int64_t ttl;
    int mine, rc = read_for(l, "", &ttl, &mine);

    if (rc == 0)
        *out = ttl != -2;
    return rc;
}

static int is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t ttl;

    return read_for(l, owner, &ttl, out);
}

static int hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    int64_t ttl;
    int mine, rc = read_for(l, owner, &ttl, &mine);

    if (rc == 0)
        *out = mine;
    return rc;
}

static int remain_ttl(dlock_rlock *l, int64_t *out)
{
    int mine;

    return read_for(l, "", out, &mine);
}

static int state(dlock_rlock *l, struct json_t **out)
{
    const dlock_reply *holder;
    struct json_t *doc;
    dlock_reply *r;
    int64_t ttl;
    int rc = read_lock(l, &r, &ttl, &holder);

    if (rc != 0)
        return rc;
    doc = dlock_state_new(l, ttl);
    rc = doc ? 0 : DLOCK_ENOMEM;
    if (rc == 0 && ttl != -2)
        rc = dlock_state_add_holder(doc, holder->str, holder->len, 1, ttl);
    dlock_reply_free(r);
    if (rc != 0) {
        dlock_codec_value_free(dlock_codec_json(), doc);
        return dlock_rlock_fail(l, rc, "out of memory building the state of \"%.64s\"",
                                l->name);
    }
    *out = doc;
    return 0;
}

/* Its renewal script sets the lease of the one owner's hold: dlock_extend
 * is that script for one name. */
static int extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return dlock_rlock_extend_by_renewal(l, owner, lease_ms, &dlock__script_simple_renew);
}

static const dlock_rlock_methods simple_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION,
    .type = "simple",
    .acquire = acquire,
    .release = release,
    .force_unlock = force_unlock,
    .is_locked = is_locked,
    .is_held = is_held,
    .hold_count = hold_count,
    .remain_ttl = remain_ttl,
    .destroy = dlock_object_base_destroy,
    .state = state,
    .extend = extend,
};

int dlock_simple_lock_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    rc = dlock_object_base_new(&o, sizeof(*o), &simple_methods, c, name,
                               "dlock_simple_lock__channel:", "");
    *out = o ? &o->base : NULL;
    return rc;
}
