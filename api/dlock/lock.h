/*
 * dlock — the generic lock functions.
 *
 * Every lock object (reentrant, and the types to come) is a dlock_rlock *;
 * these functions dispatch through its method table. A slot a type does not
 * support gives DLOCK_ENOTSUP.
 *
 * Times are milliseconds. lease_ms = 0 means "held until unlocked": the
 * client's watchdog keeps renewing a watchdog_timeout lease; else the lease
 * is 1..DLOCK_TIME_MAX_MS (api/dlock/times.h; above: DLOCK_EINVAL, nothing
 * sent). wait_ms is any value >= 0; a wait above DLOCK_TIME_MAX_MS has no
 * time limit in effect (it never ends in DLOCK_ETIMEDOUT).
 *
 * Budgets: a call with a wait (try_lock, and the semaphore and latch waits)
 * returns within wait_ms plus the client's budget_slack_ms (default 50;
 * api/dlock/client.h), whatever the server or the network does: every round
 * trip it makes is cut off there (a reply that comes later is dropped with
 * its connection, never handed to another call). Within its budget it
 * retries transport failures with back-off, as dlock_lock does without
 * limit. When the budget ends it returns DLOCK_ETIMEDOUT (the lock stayed
 * busy, or a reply was too slow) or DLOCK_ECONN (the backend could not be
 * reached). A wait of 0 makes one attempt, itself cut off after
 * budget_slack_ms. A call without a budget (unlock, the reads) is bounded
 * by the backend's own timeouts (api/dlock/redis.h: the command timeout,
 * plus the connect timeout when it needs a new connection).
 *
 * A server that refuses service for now (BUSY running a long script,
 * LOADING, MASTERDOWN, READONLY after a failover) is unavailable, not
 * wrong: DLOCK_ECONN, retried like a lost connection. DLOCK_EPROTO is kept
 * for replies that waiting will not change (WRONGTYPE, OOM, a script
 * error).
 *
 * Owners: the plain functions act for the calling thread's owner id; the
 * *_as functions take an explicit owner id (from dlock_client_owner, or any
 * string of 1..DLOCK_OWNER_MAX - 1 bytes) so that one thread may lock and
 * another unlock. A type whose layout stores owner ids beside names of its
 * own refuses the ids that would collide with them: DLOCK_EINVAL, nothing
 * sent (the read-write lock: "mode" and ids ending in ":write",
 * api/dlock/rwlock.h; a MultiLock: what any member refuses). The other
 * built-in types reserve none.
 *
 * Errors: besides the codes named per function, every call may return
 * DLOCK_EINVAL (bad argument; nothing changed), DLOCK_ECONN / DLOCK_ETIMEDOUT
 * (backend unreachable or slow), DLOCK_EPROTO (e.g. a key of another type is
 * stored under the lock's name) and DLOCK_EFORKED. dlock_errmsg() then tells
 * the detail.
 *
 * A call that waits may also return DLOCK_ECANCELED: its client's
 * dlock_client_cancel_waits or dlock_client_free ended the wait
 * (api/dlock/client.h).
 *
 * Thread-safety: a lock object may be used by any number of threads at once.
 */
#ifndef DLOCK_LOCK_H
#define DLOCK_LOCK_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Longest lock name in bytes (without NUL). Any bytes but NUL are allowed,
 * but for the reserved names below. */
#define DLOCK_NAME_MAX 1024

/* Reserved names. The keys of one object are never the keys of another,
 * whatever the names and types: the layout is Redisson's (derived keys
 * "P{N}" and "{N}S", or "PN" and "NS" when N already holds a '{'), so a
 * name that is itself one of those derived keys is refused by every
 * constructor (locks, semaphores, latch, bucket) with DLOCK_EINVAL before
 * anything is sent, and dlock_client_errmsg says which form it has:
 *   - it holds a '{' and starts with redisson_lock_queue:,
 *     redisson_lock_timeout:, dlock_lock_alive: (a fair lock's) or
 *     redisson_lock_token: (a fenced lock's);
 *   - it holds a '{' and ends with :holders (a semaphore lock's),
 *     :timeout or :expired (a permit semaphore's);
 *   - it holds :lease: (a semaphore lock's leases) or :rwlock_timeout:
 *     (a read-write lock's read markers) anywhere: owner ids follow them,
 *     and an owner id may hold any byte;
 *   - it starts with dlock_owner: (the clients' descriptions).
 * And "{x}" (a '{' first, a '}' last, no other '{') derives the same keys
 * as "x": the types that keep derived keys (fair, fenced, read-write lock,
 * semaphore lock, permit semaphore) refuse it, and "x" is the name to use
 * (same keys, same cluster slot). A name without any '{' is never refused:
 * no derived key lacks one. */

/* Re-entry never shortens a hold, for every lock type (reentrant, fair,
 * fenced, both halves of the read-write lock, the semaphore as a lock): a
 * lock or try_lock by an owner that already holds the lock, and an unlock
 * that leaves it holds, keep the longer of the time left and the new lease
 * (lease 0: the watchdog's timeout, renewed as before). So a nested call
 * with a 1 s lease inside a 10 s hold leaves 10 s. Redisson differs (its
 * plain lock sets the new lease, its write lock adds them): dlock keeps the
 * longer one so that an inner call never hands the lock to someone else
 * while the outer code still holds it. */

/* Blocks until acquired. Re-entrant: the owner may lock again; each lock
 * needs its unlock. While the backend is unreachable it keeps retrying (with
 * back-off) for as long as it takes. 0 or an error. */
DLOCK_API int dlock_lock(dlock_rlock *l, int64_t lease_ms);
DLOCK_API int dlock_lock_as(dlock_rlock *l, const char *owner, int64_t lease_ms);

/* Waits up to wait_ms (0 = one attempt). 0 when acquired, DLOCK_EBUSY when
 * wait_ms is 0 and someone else holds it, DLOCK_ETIMEDOUT when the wait ran
 * out, DLOCK_EDEADLK when waiting could only deadlock. */
DLOCK_API int dlock_try_lock(dlock_rlock *l, int64_t wait_ms, int64_t lease_ms);
DLOCK_API int dlock_try_lock_as(dlock_rlock *l, const char *owner, int64_t wait_ms,
                                int64_t lease_ms);

/* Decrements the owner's hold count; at zero releases and wakes waiters.
 * 0, DLOCK_ENOTOWNER (the owner does not hold it), DLOCK_ELOST (the owner held
 * it through this lock object but the lease expired or was taken away). One round
 * trip. */
DLOCK_API int dlock_unlock(dlock_rlock *l);
DLOCK_API int dlock_unlock_as(dlock_rlock *l, const char *owner);

/* Lease control: while the owner holds l, its remaining lease becomes
 * lease_ms from now (shorter or longer than before), and the watchdog
 * stops renewing it; lease_ms 0 hands the hold to the watchdog instead
 * (the client's watchdog timeout, renewed until unlock or max_hold_ms).
 * The hold count is unchanged. One round trip.
 * 0; DLOCK_ELOST: the owner held l through this lock object but its lease
 * ran out or it was taken away (nothing is re-acquired; the next unlock
 * answers DLOCK_ELOST as well); DLOCK_ENOTOWNER: the owner does not hold
 * it and this lock object knows of no hold of its; DLOCK_ENOTSUP: the
 * type has no lease (latch, bucket, a user type without the slot);
 * DLOCK_EINVAL: lease_ms outside 0..DLOCK_TIME_MAX_MS. Nothing is changed
 * on failure. The read-write lock's shared hash is never shortened below
 * what its other holds need; the owner's own hold gets lease_ms. A
 * watchdog renewal already in flight when dlock_extend moves a hold off
 * the watchdog may still apply the watchdog's lease once. */
DLOCK_API int dlock_extend(dlock_rlock *l, int64_t lease_ms);
DLOCK_API int dlock_extend_as(dlock_rlock *l, const char *owner, int64_t lease_ms);

/* The lost-lock callback of this lock object: called (on the client's
 * watchdog thread, as the client's, api/dlock/client.h) instead of the
 * client's on_lost for the holds made through l that the watchdog finds
 * lost or stops renewing at max_hold_ms. NULL: back to the client's. arg
 * must stay valid until l is freed and a callback under way has returned
 * (a callback already picked when another thread frees l may still run
 * once). Never blocks on the network. 0, DLOCK_EINVAL (l NULL),
 * DLOCK_EFORKED. */
DLOCK_API int dlock_rlock_set_on_lost(dlock_rlock *l, dlock_lost_fn fn, void *arg);

/* Deletes the lock whoever holds it and wakes waiters. *existed (may be
 * NULL) tells whether it was held. */
DLOCK_API int dlock_force_unlock(dlock_rlock *l, int *existed);

/* One read each, no side effects. */
DLOCK_API int dlock_is_locked(dlock_rlock *l, int *out);
DLOCK_API int dlock_is_held(dlock_rlock *l, int *out);
DLOCK_API int dlock_is_held_as(dlock_rlock *l, const char *owner, int *out);
DLOCK_API int dlock_hold_count(dlock_rlock *l, int64_t *out);
DLOCK_API int dlock_hold_count_as(dlock_rlock *l, const char *owner, int64_t *out);
/* -2: not held, -1: held without expiry, else ms left. */
DLOCK_API int dlock_remain_ttl(dlock_rlock *l, int64_t *out);

/* The detail of the last failure of a call on l (by any thread), or "" if
 * none. The string is a per-thread copy, valid until the thread's next call
 * of dlock_errmsg. */
DLOCK_API const char *dlock_errmsg(dlock_rlock *l);

/* The lock's name (borrowed). */
DLOCK_API const char *dlock_rlock_name(const dlock_rlock *l);

/* Releases local resources only (never the remote lock; stops the watchdog
 * renewing holds made through this object). NULL is a no-op. With
 * asynchronous operations on l pending (api/dlock/async.h), returns at
 * once and leaves l to them: its waits end with DLOCK_ECANCELED, and l is
 * freed after the last of their callbacks. */
DLOCK_API void dlock_rlock_free(dlock_rlock *l);

/* A handle on the lock called name of the built-in lock type called type
 * ("reentrant", "fair", "fenced", "rwlock_read", "rwlock_write",
 * "semaphore_lock", "simple": the list and the kind lookups are in
 * api/dlock/object.h), as that type's own constructor makes it (the same
 * checks and errors; it does not touch the backend; the handle keeps c
 * alive; the caller frees it with dlock_rlock_free). An unknown type:
 * DLOCK_EINVAL, the reason in dlock_client_errmsg(c). For tools that take
 * a lock type by name; code that knows its type calls its constructor. */
DLOCK_API int dlock_lock_new(dlock_rlock **out, dlock_client *c, const char *type,
                             const char *name);

/* ---- introspection ------------------------------------------------------ */

struct json_t; /* Jansson's json_t (api/dlock/codec.h) */

/*
 * The lock's state as stored, as a JSON object: for debugging, logs and the
 * samples. One round trip, no side effects.
 *
 * Every lock type reports at least
 *   "type":    "reentrant", "fair", "fenced", ... (the method table's type)
 *   "name":    the lock's name
 *   "locked":  whether anyone holds it
 *   "ttl_ms":  the lock's remaining lease (-2 not held, -1 no expiry)
 *   "holders": [{"owner": id, "holds": hold count, "ttl_ms": that holder's
 *              remaining lease}, ...]
 * and its own extras:
 *   fenced:    "token": the latest fencing token handed out (0: none yet)
 *   fair:      "queue": the waiters in line, first first:
 *              [{"owner": id, "deadline_ms": when it is presumed dead (wall
 *              ms, as stored: the sooner of its deadline and, for a dlock
 *              waiter, the end of its liveness, api/dlock/fair.h),
 *              "remaining_ms": deadline minus this client's wall clock
 *              (<= 0: it is purged by the next call once first in line)},
 *              ...]
 *   rwlock_read, rwlock_write (api/dlock/rwlock.h): "locked", "ttl_ms" and
 *              "holders" are the half's, as its own reads answer them (read
 *              half: the readers and the longest live read hold; write half:
 *              the writer and the lock's TTL); the rest is the whole lock,
 *              the same from both halves:
 *              "mode":    "read", "write" or null (free);
 *              "readers": [{"owner", "holds": read hold count, "ttl_ms": the
 *                         longest lease among its read holds}, ...] by
 *                         owner id (an owner whose newest read hold ran out
 *                         holds nothing and is not listed);
 *              "writer":  {"owner", "holds": write hold count, "ttl_ms"} or
 *                         null. A writer that also reads (a downgrade) is in
 *                         both.
 *   semaphore (the semaphore as a lock, api/dlock/semaphore.h): "holders"
 *              with each holder's own lease, and "permits": the permits
 *              available to the next acquirer (those of holders whose lease
 *              ended included, which the stored count gets back at the
 *              next change).
 * Strings that are not UTF-8 (names and owner ids may hold any bytes) show
 * U+FFFD for each bad byte.
 *
 * dlock_rlock_state: *out is a new Jansson reference, the caller's
 * (json_decref, or dlock_codec_value_free(dlock_codec_json(), v)).
 * dlock_rlock_state_text: the same document as compact JSON text (the JSON
 * codec's encoding, keys sorted), malloc'ed, the caller's to free().
 * 0, DLOCK_ENOTSUP (the type reports no state), or an error as above; *out
 * is NULL on failure.
 */
DLOCK_API int dlock_rlock_state(dlock_rlock *l, struct json_t **out);
DLOCK_API int dlock_rlock_state_text(dlock_rlock *l, char **out);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_LOCK_H */
