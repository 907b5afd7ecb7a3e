/*
 * dlock — what every lock kept as a hash with one field per owner
 * (reentrant, fair, fenced) shares: its state triple read (hash_lock.h), and
 * the guard field of a guarded write (the owner's field itself), its
 * extend slot (the watchdog's renewal script for one owner), and the
 * watchdog's renewal script, public for the types of users that keep this
 * layout (api/dlock/sys/lock_type.h).
 */
#include <string.h>

#include "objects/types/hash_lock.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"
#include "scripts.h"

void dlock__hash_triple_send(dlock_rlock *l, dlock__eval_half *h,
                             const char *owner)
{
    const char *argv[2] = {l->name, owner};

    dlock__rlock_eval_send(l, NULL, h, &dlock__script_hash_state, 1, 1, argv);
}

int dlock__hash_triple(dlock_rlock *l, const char *owner, int64_t st[3])
{
    const char *argv[2] = {l->name, owner};

    return dlock__eval_triple(l, st, &dlock__script_hash_state, 1, 1, argv);
}

int dlock__hash_extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return dlock_rlock_extend_by_renewal(l, owner, lease_ms, &dlock__script_hash_renew);
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

const dlock_script *dlock_script_hash_renew(void)
{
    return &dlock__script_hash_renew;
}
