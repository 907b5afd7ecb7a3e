/*
 * dlock — the head every built-in object shares (see object.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmt.h"

#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/client.h"
#include "objects/runtime/base.h"

char *dlock__i64(char *buf, int64_t v)
{
    dlock__fmt_i64(buf, v);
    return buf;
}

int dlock_object_base_new(dlock_object_base **out, size_t size,
                          const dlock_rlock_methods *m, dlock_client *c,
                          const char *name, const char *prefix, const char *suffix)
{
    dlock_rlock *l;
    dlock_object_base *o;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (size < sizeof(dlock_object_base) || !prefix || !suffix)
        return DLOCK_EINVAL;
    rc = dlock__rlock_new(&l, size, m, c, name);
    if (rc != 0)
        return rc;
    o = (dlock_object_base *)l;
    o->channel = dlock_rlock_key(&o->base, prefix, suffix);
    if (!o->channel) {
        dlock_rlock_free(&o->base); /* the type's destroy copes with NULLs */
        return DLOCK_ENOMEM;
    }
    /* Redis Cluster: a name holding a '{' without a non-empty {tag} keeps
     * its own slot while its auxiliary keys (no braces added: Redisson's
     * rule) hash elsewhere, so its scripts could never run. */
    if (dlock_backend_key_slot(c->backend, o->channel, strlen(o->channel)) !=
        dlock_backend_key_slot(c->backend, o->base.name, o->base.name_len)) {
        dlock_rlock_free(&o->base);
        return dlock__client_refuse(c, DLOCK_EINVAL, "the name \"%.64s\" has a '{' but no "
                                    "{hash tag}: its keys would span cluster slots", name);
    }
    *out = o;
    return 0;
}

void dlock_object_base_destroy(dlock_rlock *b)
{
    if (!b)
        return;
    free(((dlock_object_base *)b)->channel);
    free(b);
}

int dlock__object_check(dlock_rlock *b)
{
    int rc = dlock__client_check(b->client);

    if (rc != 0)
        return dlock_rlock_fail(b, rc, "object used in a fork() child");
    return 0;
}

int dlock__object_wait(dlock_rlock *b, dlock_op *op, int wake, int movable,
                       dlock_attempt_fn attempt, dlock__undo_fn undo, void *arg,
                       int64_t wait_ms, int64_t lease_ms)
{
    dlock_wait_spec spec = DLOCK_WAIT_SPEC_INIT;

    spec.channel = ((dlock_object_base *)b)->channel;
    spec.attempt = attempt;
    spec.undo = undo;
    spec.arg = arg;
    spec.wake = wake;
    spec.movable = movable;
    return dlock_rlock_wait(b, op, &spec, wait_ms, lease_ms);
}

/* The public form (api/dlock/sys/lock_type.h): a custom type's attempt
 * takes one hold, so the release slot undoes an unsynced one. What its
 * scripts publish is the type's own: every waiter is woken by every
 * message (a type that publishes as Redisson's locks do builds its spec
 * with DLOCK_WAKE_LOCK). */
int dlock_object_base_wait(dlock_rlock *b, dlock_op *op, dlock_attempt_fn attempt,
                           void *arg, int64_t wait_ms, int64_t lease_ms)
{
    return dlock__object_wait(b, op, DLOCK_WAKE_EVERY, 0, attempt, NULL, arg, wait_ms,
                              lease_ms);
}

int64_t dlock_rlock_lease(const dlock_rlock *l, int64_t lease_ms)
{
    return lease_ms > 0 ? lease_ms : dlock_client_watchdog_timeout(l ? l->client : NULL);
}

const char *dlock__publish_cmd(const dlock_rlock *l)
{
    return dlock_backend_publish_command(l->client->backend);
}

char *dlock__lease_arg(dlock_rlock *b, char *buf, int64_t lease_ms)
{
    return dlock__i64(buf, dlock_rlock_lease(b, lease_ms));
}

int64_t dlock_op_retry_expect(dlock_rlock *l, const dlock_op *op)
{
    return l && op && op->unsure ? dlock__hold_count_local(l, op->owner) + 1 : 0;
}

char *dlock__acquire_retry_arg(dlock_rlock *b, const dlock_op *op, char *buf)
{
    return dlock__i64(buf, dlock_op_retry_expect(b, op));
}
