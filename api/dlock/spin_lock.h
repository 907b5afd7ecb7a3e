/*
 * dlock — the spin lock: the reentrant lock without pub/sub.
 *
 * Redisson's RedissonSpinLock: the very same layout as the reentrant lock
 * (api/dlock/reentrant.h; a hash at name, one field per owner = hold
 * count), so spin, reentrant and Redisson RLock handles on one name exclude
 * each other and share holds. Only the waiting differs: a blocked acquirer
 * subscribes to nothing and polls instead, with exponential back-off and
 * jitter between attempts (by default about 1 ms doubling up to 128 ms,
 * Redisson's defaults), never sleeping past the holder's lease or its own
 * budget. Unlock still publishes on "redisson_lock__channel:{name}", so
 * reentrant-lock waiters on the same name wake as usual.
 *
 * Why: thousands of short locks a second through pub/sub cost a
 * subscription per waiting client and a message per release, which on a
 * Redis Cluster goes to every node; polling costs round trips instead.
 * Prefer it for many short holds; prefer the reentrant lock for long waits.
 *
 * A spin lock is a dlock_rlock: the whole API of api/dlock/lock.h works on
 * it, with the reentrant lock's semantics (re-entry, leases, the watchdog,
 * DLOCK_ELOST, the state document with "type": "spin").
 *
 * Thread-safety: a spin lock may be used by any number of threads at once.
 */
#ifndef DLOCK_SPIN_LOCK_H
#define DLOCK_SPIN_LOCK_H

#include "export.h"

#include "types.h"

#include <stdint.h>

#include "client.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_spin_options {
    int version;              /* 1 */
    /* The back-off between attempts: the first pause is about
     * initial_delay_ms, each next one doubles up to max_delay_ms (a pause is
     * half its step plus a random part of the other half).
     * 1..DLOCK_TIME_MAX_MS each, max_delay_ms >= initial_delay_ms. */
    int64_t initial_delay_ms;
    int64_t max_delay_ms;
} dlock_spin_options;

#define DLOCK_SPIN_OPTIONS_INIT {1, 1, 128}

/* Creates a handle for the spin lock called name (1..DLOCK_NAME_MAX bytes).
 * opts may be NULL (the defaults); it is copied. Does not touch the
 * backend. The handle keeps c alive; free it with dlock_rlock_free.
 * 0, DLOCK_EINVAL (bad name or option), DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_spin_lock_new(dlock_rlock **out, dlock_client *c, const char *name,
                                  const dlock_spin_options *opts);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SPIN_LOCK_H */
