/*
 * dlock — the shared base of the objects that are not locks (see object.h).
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
    dlock__object *o;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    o = calloc(1, size);
    if (!o)
        return DLOCK_ENOMEM;
    rc = dlock_rlock_init(&o->base, m, c, name);
    if (rc != 0) {
        free(o);
        return rc;
    }
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

int dlock__object_eval_int(dlock_rlock *b, int64_t *out, const dlock_script *s,
                           size_t nkeys, size_t nargs, const char *const *argv)
{
    dlock_reply *r;
    int rc = dlock_rlock_eval(b, &r, s, nkeys, nargs, argv);

    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(b, s, r);
    *out = r->integer;
    dlock_reply_free(r);
    return 0;
}
