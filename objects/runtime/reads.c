/*
 * dlock — the four reads of every lock type (is_locked, is_held, hold_count,
 * remain_ttl), each one round trip of the type's state triple read (see
 * reads.h): the types differ only in the script that answers it.
 */
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"

/* A read's three integers (rc, r: how the eval went). */
static int triple_of(dlock_rlock *l, const dlock_script *s, int rc,
                     dlock_reply *r, int64_t st[3])
{
    size_t i;

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

int dlock__eval_triple(dlock_rlock *l, int64_t st[3], const dlock_script *s,
                       size_t nkeys, size_t nargs, const char *const *argv)
{
    dlock_reply *r;
    int rc = dlock_rlock_eval(l, NULL, &r, s, nkeys, nargs, argv);

    return triple_of(l, s, rc, r, st);
}

int dlock__receive_triple(dlock_rlock *l, dlock__eval_half *h, int64_t st[3])
{
    const dlock_script *s = h->script;
    dlock_reply *r;
    int rc = dlock__rlock_eval_receive(l, h, &r);

    return triple_of(l, s, rc, r, st);
}

/* Only tables that are a dlock__lock_methods name the readers below. */
static int triple(dlock_rlock *l, const char *owner, int64_t st[3])
{
    return ((const dlock__lock_methods *)l->methods)->triple(l, owner, st);
}

int dlock__triple_is_locked(dlock_rlock *l, int *out)
{
    int64_t st[3];
    int rc = triple(l, "", st);

    if (rc == 0)
        *out = st[0] > 0;
    return rc;
}

int dlock__triple_is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t st[3];
    int rc = triple(l, owner, st);

    if (rc == 0)
        *out = st[1] > 0;
    return rc;
}

int dlock__triple_hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    int64_t st[3];
    int rc = triple(l, owner, st);

    if (rc == 0)
        *out = st[1];
    return rc;
}

int dlock__triple_remain_ttl(dlock_rlock *l, int64_t *out)
{
    int64_t st[3];
    int rc = triple(l, "", st);

    if (rc == 0)
        *out = st[2];
    return rc;
}
