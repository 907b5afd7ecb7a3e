/*
 * dlock — the semaphore, and the semaphore as a lock.
 *
 * Redisson-compatible layout: the number of available permits is a string
 * integer at name (absent = 0). It may go negative (add_permits with a
 * negative delta). Every change that makes permits available publishes the
 * new count on "redisson_sc:{name}", where blocked acquirers wait.
 *
 * The plain semaphore does not record who took a permit: a process that dies
 * holding permits never gives them back (the permit leak of Redisson's
 * RSemaphore). Use the permit-expirable semaphore
 * (api/dlock/permit_semaphore.h) or the semaphore as a lock (below) when a
 * dead holder's permit must come back.
 *
 * Counts: a permit count or delta is at most DLOCK_PERMITS_MAX in absolute
 * value (the scripts compute in Lua numbers, exact to 2^53), and no call
 * takes the stored count beyond that range (DLOCK_EPROTO, nothing changed).
 *
 * Waking: a blocked acquire(n) is woken by every count message and tries
 * again; it succeeds when at least n permits are available at its attempt.
 * There is no reservation and no queue: a waiter that needs many permits can
 * be overtaken, for as long as that keeps happening, by waiters that need few
 * (they fit into a count it cannot use). This is the non-fair behaviour of
 * Redisson and of java.util.concurrent.Semaphore; it keeps every permit in
 * use. A caller that must not starve a large request pauses the small ones
 * (e.g. drain_permits, then release what it does not need) or serialises
 * requests behind a fair lock (api/dlock/fair.h).
 *
 * Errors: every call may also return DLOCK_EINVAL (NULL object, a negative
 * count where none is allowed; nothing changed), DLOCK_ECONN /
 * DLOCK_ETIMEDOUT (backend unreachable or slow), DLOCK_EPROTO (e.g. another
 * type of value, or a string that is not an integer INCRBY takes ("7",
 * "-3"; not "007" or "1.5"), is stored under the name: nothing is changed)
 * and DLOCK_EFORKED. dlock_semaphore_errmsg() then
 * tells the detail.
 *
 * A call that waits may also return DLOCK_ECANCELED: its client's
 * dlock_client_cancel_waits or dlock_client_free ended the wait
 * (api/dlock/client.h).
 *
 * Thread-safety: a semaphore object may be used by any number of threads at
 * once.
 */
#ifndef DLOCK_SEMAPHORE_H
#define DLOCK_SEMAPHORE_H

#include "export.h"

#include "types.h"

#include <stdint.h>

#include "client.h"
#include "errors.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest permit count or delta in absolute value: 2^53 - 1. */
#define DLOCK_PERMITS_MAX ((int64_t)9007199254740991LL)

typedef struct dlock_semaphore dlock_semaphore;

/* Creates a handle for the semaphore called name (1..DLOCK_NAME_MAX bytes).
 * Does not touch the backend. The handle keeps c alive.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_semaphore_new(dlock_semaphore **out, dlock_client *c, const char *name);

/* Releases local resources only (never the remote count). NULL is a no-op. */
DLOCK_API void dlock_semaphore_free(dlock_semaphore *s);

/* The semaphore's name (borrowed); NULL for NULL. */
DLOCK_API const char *dlock_semaphore_name(const dlock_semaphore *s);

/* The detail of the last failure of a call on s (by any thread), or "". A
 * per-thread copy, valid until the thread's next call of this function. */
DLOCK_API const char *dlock_semaphore_errmsg(dlock_semaphore *s);

/* Sets the count to permits (>= 0) if the semaphore does not exist yet.
 * *out (may be NULL): 1 set, 0 it existed (unchanged). One round trip. */
DLOCK_API int dlock_semaphore_try_set_permits(dlock_semaphore *s, int *out, int64_t permits);

/* As above, and the count disappears ttl_ms (1..DLOCK_TIME_MAX_MS) later (then the semaphore
 * no longer exists: 0 permits, and it can be set again). */
DLOCK_API int dlock_semaphore_try_set_permits_ttl(dlock_semaphore *s, int *out,
                                                  int64_t permits, int64_t ttl_ms);

/* Takes permits (>= 0), blocking until that many are available. 0 permits
 * succeed at once without a round trip. While the backend is unreachable it
 * keeps retrying (with back-off). 0 or an error. */
DLOCK_API int dlock_semaphore_acquire(dlock_semaphore *s, int64_t permits);

/* Takes permits, waiting up to wait_ms (>= 0; 0 = one attempt; above
 * DLOCK_TIME_MAX_MS, no time limit in effect). 0 when taken, DLOCK_EBUSY
 * when wait_ms is 0 and too few are available, DLOCK_ETIMEDOUT when the
 * wait ran out. */
DLOCK_API int dlock_semaphore_try_acquire(dlock_semaphore *s, int64_t permits, int64_t wait_ms);

/* Gives back permits (>= 0): adds them to the count (creating it if absent)
 * and wakes waiters. The semaphore cannot check that the caller took them.
 * 0 permits: nothing is sent. One round trip. */
DLOCK_API int dlock_semaphore_release(dlock_semaphore *s, int64_t permits);

/* As release, but only if the semaphore exists; *out (may be NULL): 1
 * released, 0 it did not exist (nothing created). */
DLOCK_API int dlock_semaphore_release_if_exists(dlock_semaphore *s, int *out, int64_t permits);

/* Releases permits unless that would take the available count above limit
 * (0..DLOCK_PERMITS_MAX): *out 1 released (waiters woken), 0 refused and
 * nothing changed. One atomic step, for a caller that knows how many
 * permits the semaphore was given (dlock(1) records what `set` gave): a
 * release without a matching acquire then cannot create permits. */
DLOCK_API int dlock_semaphore_release_within(dlock_semaphore *s, int *out, int64_t permits,
                                             int64_t limit);

/* Adds delta (negative allowed: the count may go below zero, and acquirers
 * then wait until releases bring it back above their need). Creates the
 * count if absent. Wakes waiters when permits become available. */
DLOCK_API int dlock_semaphore_add_permits(dlock_semaphore *s, int64_t delta);

/* Takes every available permit; *out (may be NULL) = how many (0 when the
 * count is 0 or negative, which is left as it is). Keeps the count's TTL. */
DLOCK_API int dlock_semaphore_drain_permits(dlock_semaphore *s, int64_t *out);

/* The available permits (0 when absent, may be negative). One read. */
DLOCK_API int dlock_semaphore_available_permits(dlock_semaphore *s, int64_t *out);

/* ---- introspection ------------------------------------------------------ */

struct json_t; /* Jansson's json_t (api/dlock/codec.h) */

/*
 * The semaphore's state as stored, as a JSON object (as dlock_rlock_state in
 * api/dlock/lock.h, which tells the ownership of *out and the text form):
 *   "type":    "semaphore"
 *   "name":    its name
 *   "permits": the available permits (0 when absent, may be negative)
 *   "ttl_ms":  the count's remaining time (-2 absent, -1 no expiry)
 * One round trip, no side effects. 0 or an error; *out is NULL on failure.
 */
DLOCK_API int dlock_semaphore_state(dlock_semaphore *s, struct json_t **out);
DLOCK_API int dlock_semaphore_state_text(dlock_semaphore *s, char **out);

/* ---- the semaphore as a lock ------------------------------------------- */

/*
 * A lock handle (api/dlock/lock.h) on the semaphore called name: at most
 * "permits" owners hold it at once, and a holder whose process dies gets its
 * permit back when its lease ends, so no permit is ever leaked.
 *
 *  - lock / try_lock: the owner takes one permit of the semaphore's count
 *    with a lease (1..DLOCK_TIME_MAX_MS, or 0: the client's watchdog renews
 *    it until unlock). Re-entrant: the holder locking again takes no
 *    further permit, it adds a hold (hold_count); each lock needs its
 *    unlock. Blocked owners wait on the semaphore's channel, and also wake
 *    when the first holder's lease runs out.
 *  - unlock: one hold less; at zero the permit goes back to the count and
 *    waiters are woken. DLOCK_ENOTOWNER if the owner holds no permit,
 *    DLOCK_ELOST if it held one through this handle and the lease ran out
 *    (the permit was then already given back).
 *  - force_unlock: every holder's permit goes back; *existed = there was a
 *    holder.
 *  - is_locked: at least one owner holds a permit through a lock.
 *    is_held / hold_count: per owner. remain_ttl: the longest lease left
 *    among the holders (-2 none).
 *
 * Data (compatible with the plain semaphore): the count at name is the
 * semaphore's, so set it with dlock_semaphore_try_set_permits on a
 * dlock_semaphore of the same name (absent = 0 permits: lock blocks), and
 * plain acquire/release on that name share the permits with the lock. The
 * holders are a hash "{name}:holders" (owner -> hold count), and each
 * holder's lease is a key "{name}:lease:<owner>" whose expiry (on the
 * server's clock, as for every lock lease) ends the hold. The next operation
 * of any semaphore lock handle on name gives the permits of ended holds back
 * to the count. A plain semaphore handle sees the count as stored: until that
 * next operation it does not count an ended hold's permit as available.
 * The holders hash holds owner ids only, and "{name}:lease:" starts no other
 * key of the semaphore: no owner id is reserved. A call that fails (a key of
 * another type, a count or hold count that is not an integer) changes
 * nothing, not even the giving back of ended holds.
 *
 * Each operation visits every holder (one EXISTS per holder): fine for the
 * usual handful of permits, slow for thousands of holders.
 */
DLOCK_API int dlock_semaphore_lock_new(dlock_rlock **out, dlock_client *c, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SEMAPHORE_H */
