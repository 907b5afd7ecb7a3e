/*
 * dlock — the simple lock: a non-reentrant mutual-exclusion lock.
 *
 * Layout: a string at name holding the owner's id, set with SET NX PX, as
 * redis-py's Lock keeps it (a string holding the holder's token): a
 * redis-py lock and a dlock simple lock on one name exclude each other.
 * Waiters are woken on "dlock_simple_lock__channel:{name}" ("0" on release;
 * a redis-py holder publishes nothing, so a waiter then wakes when the
 * holder's lease runs out).
 *
 * Not reentrant: one hold per owner. An owner that already holds it and
 * asks again does not get a second hold; it fails at once rather than
 * deadlock on itself, as a PTHREAD_MUTEX_ERRORCHECK mutex does:
 * try_lock with wait 0 gives DLOCK_EBUSY, and a call that would wait
 * (dlock_lock, try_lock with a wait) gives DLOCK_EDEADLK; the hold is left
 * as it was. (redis-py's Lock, with a fresh token per acquisition, would
 * wait for its own lease to run out; Redisson has no non-reentrant lock.)
 * One unlock releases it; a second gives DLOCK_ENOTOWNER.
 *
 * A simple lock is a dlock_rlock: the whole API of api/dlock/lock.h works
 * on it (hold_count is 0 or 1; the state document has "type": "simple").
 * Guarded writes (api/dlock/bucket.h) need a hash lock: DLOCK_ENOTSUP.
 * dlock_object_delete and _expire (api/dlock/object.h) do not wake its
 * waiters, as for any lock type of your own: they look again when the
 * lease they saw runs out.
 *
 * It is built only on the public interfaces a lock type of your own uses
 * (api/dlock/sys/methods.h, api/dlock/sys/lock_type.h): objects/types/simple_lock.c
 * reads as an example.
 *
 * Thread-safety: a simple lock may be used by any number of threads at
 * once.
 */
#ifndef DLOCK_SIMPLE_LOCK_H
#define DLOCK_SIMPLE_LOCK_H

#include "export.h"

#include "types.h"

#include "client.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a handle for the simple lock called name (1..DLOCK_NAME_MAX
 * bytes). Does not touch the backend. The handle keeps c alive; free it with
 * dlock_rlock_free. 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_simple_lock_new(dlock_rlock **out, dlock_client *c, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SIMPLE_LOCK_H */
