/*
 * dlock — the reads shared by every lock kept as a hash with one field per
 * owner (reentrant, fair, fenced): one script call answers is_locked,
 * is_held, hold_count and remain_ttl; and the guard field of a guarded
 * write (the owner's field itself).
 */
#include <string.h>

#include "internal.h"
#include "scripts.h"

int dlock__unexpected_reply(dlock_rlock *l, const dlock_script *s, dlock_reply *r)
{
    int type = r ? (int)r->type : -1;

    dlock_reply_free(r);
    return dlock_rlock_fail(l, DLOCK_EPROTO, "script %s: unexpected reply type %d",
                            s->name, type);
}

/* exists, the owner's hold count and the PTTL, in one read. */
static int state(dlock_rlock *l, const char *owner, int64_t st[3])
{
    const dlock_script *s = &dlock__script_hash_state;
    const char *argv[2];
    dlock_reply *r;
    size_t i;
    int rc;

    argv[0] = l->name;
    argv[1] = owner ? owner : "";
    rc = dlock_rlock_eval(l, &r, s, 1, 1, argv);
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

int dlock__hash_is_locked(dlock_rlock *l, int *out)
{
    int64_t st[3];
    int rc = state(l, NULL, st);

    if (rc == 0)
        *out = st[0] != 0;
    return rc;
}

int dlock__hash_is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t st[3];
    int rc = state(l, owner, st);

    if (rc == 0)
        *out = st[1] > 0;
    return rc;
}

int dlock__hash_hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    int64_t st[3];
    int rc = state(l, owner, st);

    if (rc == 0)
        *out = st[1];
    return rc;
}

int dlock__hash_remain_ttl(dlock_rlock *l, int64_t *out)
{
    int64_t st[3];
    int rc = state(l, NULL, st);

    if (rc == 0)
        *out = st[2];
    return rc;
}

int dlock__hash_guard_field(dlock_rlock *l, const char *owner, char *buf, size_t len)
{
    size_t n = strlen(owner);

    (void)l;
    if (n + 1 > len)
        return DLOCK_EINVAL;
    memcpy(buf, owner, n + 1);
    return 0;
}
