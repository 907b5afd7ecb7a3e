/*
 * dlock — the fenced lock: the reentrant lock plus a fencing token.
 *
 * Every acquisition (the first, and each re-entry) increments a counter
 * stored beside the lock and hands its new value to the caller: a token
 * strictly greater than every token handed out before for this name, across
 * threads, clients and processes. Give the token to whatever the lock
 * protects; a bucket's guarded write (api/dlock/bucket.h) checks it in the
 * store, atomically, and refuses a stale one.
 *
 * Redisson-compatible layout: the reentrant lock's hash at name (field
 * "<owner>" = hold count, channel "redisson_lock__channel:{name}") and the
 * counter "redisson_lock_token:{name}", a string integer that never expires
 * and that unlock and force_unlock leave alone (tokens never go back). Do
 * not delete or reset it while the lock is in use.
 *
 * A fenced lock is a dlock_rlock: the whole API of api/dlock/rlock.h works
 * on it, with the reentrant lock's semantics (the plain dlock_lock and
 * dlock_try_lock acquire a token too, readable with dlock_fenced_token).
 * The calls below add the token; they take a lock made by dlock_fenced_new
 * (any other lock: DLOCK_EINVAL).
 *
 * Owner ids: the hash holds owner ids only and the counter is a key of its
 * own: no id is reserved.
 *
 * Errors: as in api/dlock/rlock.h; a counter or a hold count that is not an
 * integer gives DLOCK_EPROTO and changes nothing (no token is handed out).
 *
 * Thread-safety: a fenced lock may be used by any number of threads at once.
 */
#ifndef DLOCK_FENCED_H
#define DLOCK_FENCED_H

#include "export.h"

#include "types.h"

#include <stdint.h>

#include "client.h"
#include "rlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a handle for the fenced lock called name (1..DLOCK_NAME_MAX
 * bytes). Does not touch the backend. The handle keeps c alive; free it with
 * dlock_rlock_free. 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_fenced_new(dlock_rlock **out, dlock_client *c, const char *name);

/* dlock_lock / dlock_try_lock (and their _as forms) that also give the
 * token of this acquisition: *out (may be NULL) is set when the call
 * returns 0. Same answers as the plain calls. */
DLOCK_API int dlock_fenced_lock(dlock_rlock *l, int64_t *out, int64_t lease_ms);
DLOCK_API int dlock_fenced_lock_as(dlock_rlock *l, int64_t *out, const char *owner,
                                   int64_t lease_ms);
DLOCK_API int dlock_fenced_try_lock(dlock_rlock *l, int64_t *out, int64_t wait_ms,
                                    int64_t lease_ms);
DLOCK_API int dlock_fenced_try_lock_as(dlock_rlock *l, int64_t *out, const char *owner,
                                       int64_t wait_ms, int64_t lease_ms);

/* The current token: the one handed out by the latest acquisition, which,
 * while the owner holds the lock, is the owner's own latest. One read.
 * 0, DLOCK_ENOTOWNER (the owner does not hold the lock). */
DLOCK_API int dlock_fenced_token(dlock_rlock *l, int64_t *out);
DLOCK_API int dlock_fenced_token_as(dlock_rlock *l, int64_t *out, const char *owner);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_FENCED_H */
