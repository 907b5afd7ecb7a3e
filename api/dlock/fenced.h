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
 * A fenced lock is a dlock_rlock: the whole API of api/dlock/lock.h works
 * on it, with the reentrant lock's semantics (the plain dlock_lock and
 * dlock_try_lock acquire a token too, readable with dlock_fenced_token).
 * The calls below add the token; they take a lock made by dlock_fenced_new
 * (any other lock: DLOCK_EINVAL).
 *
 * When the guarantee holds. "Strictly greater than every token handed out
 * before" rests on the counter never losing an increment, which the store,
 * not dlock, decides. On Redis it holds exactly while all of these do:
 *  - no eviction of the counter: maxmemory-policy noeviction, or a
 *    volatile-* policy (it evicts only keys with a TTL, and the counter
 *    has none; but then a held lock, whose hash has its lease as TTL, can
 *    be evicted and taken by another owner: the tokens still go up, which
 *    is what lets the guarded writes refuse the old holder). An allkeys-*
 *    policy can evict the counter: tokens start again from 1.
 *  - no restart that loses writes: appendonly yes (AOF) with appendfsync
 *    always keeps every increment; everysec (Redis's default) can lose
 *    the last second's on a crash of the machine (not of the process). RDB
 *    snapshots alone lose every increment since the last snapshot on a
 *    crash, kill -9 or power cut; no persistence loses them all.
 *  - no failover to a replica that had not received the last increments:
 *    replication is asynchronous, so a promoted replica can be behind,
 *    unless the backend waits for replicas (sync_replicas,
 *    api/dlock/redis.h: -1 or N, each acquisition acknowledged before it
 *    returns; a DLOCK_ESYNC acquisition is rolled back).
 *  - nobody deletes or resets the counter (DEL, FLUSHALL, a restore from
 *    an older backup).
 * The Redis backend reads the policy and the persistence settings when it
 * connects (and after a reconnect or failover), logs one warning per
 * backend when tokens can go back, and reports what it found:
 * dlock_client_server_safety (api/dlock/client.h), whose
 * tokens_can_go_back says "allkeys-* or unknown policy, or neither AOF nor
 * RDB save points". The README's "Deploying" section sets a server up for
 * it. On the mock the counter lives as long as its store.
 *
 * Owner ids: the hash holds owner ids only and the counter is a key of its
 * own: no id is reserved.
 *
 * Errors: as in api/dlock/lock.h; a counter or a hold count that is not an
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
#include "lock.h"

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
