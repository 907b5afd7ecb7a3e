/*
 * dlock — the head every built-in object shares (see object.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "dlock/semaphore.h"
#include "object.h"

char *dlock__i64(char *buf, int64_t v)
{
    snprintf(buf, DLOCK__I64_SIZE, "%" PRId64, v);
    return buf;
}

int dlock__object_new(dlock__object **out, size_t size, const dlock_rlock_methods *m,
                      dlock_client *c, const char *name, const char *prefix,
                      const char *suffix)
{
    dlock_rlock *l;
    dlock__object *o;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock__rlock_new(&l, size, m, c, name);
    if (rc != 0)
        return rc;
    o = (dlock__object *)l;
    o->channel = dlock_rlock_key(&o->base, prefix, suffix);
    if (!o->channel) {
        dlock_rlock_free(&o->base); /* the type's destroy copes with NULLs */
        return DLOCK_ENOMEM;
    }
    *out = o;
    return 0;
}

void dlock__object_destroy(dlock_rlock *b)
{
    free(((dlock__object *)b)->channel);
    free(b);
}

int dlock__object_check(dlock_rlock *b)
{
    int rc = dlock__client_check(b->client);

    if (rc != 0)
        return dlock_rlock_fail(b, rc, "object used in a fork() child");
    return 0;
}

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

int dlock__object_wait(dlock_rlock *b, dlock_attempt_fn attempt, void *arg,
                       const char *owner, int64_t wait_ms, int64_t lease_ms)
{
    dlock_wait_spec spec = {1, NULL, NULL, NULL, NULL, NULL, 0, 0};

    spec.channel = ((dlock__object *)b)->channel;
    spec.attempt = attempt;
    spec.arg = arg;
    return dlock_rlock_wait(b, &spec, owner, wait_ms, lease_ms);
}

char *dlock__lease_arg(dlock_rlock *b, char *buf, int64_t lease_ms)
{
    return dlock__i64(buf, lease_ms > 0 ? lease_ms : b->client->opts.watchdog_timeout_ms);
}
