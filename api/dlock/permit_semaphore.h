/*
 * dlock — the permit-expirable semaphore: every permit taken has an id and a
 * lease, and a permit whose lease ran out goes back to the count, so a holder
 * that dies never leaks it.
 *
 * Redisson-compatible layout: the available count is a string integer at
 * name (as the plain semaphore's), the permits taken are a sorted set
 * "{name}:timeout" of permit ids scored by the wall-clock ms at which their
 * lease ends. Expired permits are reclaimed (removed from the set, added back
 * to the count) by the next writing operation of any handle on name; reads
 * count them as available without writing. Waiters are woken on
 * "redisson_sc:{name}" (message: the new count), and also wake on their own
 * when the first lease in the set ends (a permanent permit's never does:
 * only a release or a count change wakes its waiters).
 *
 * Permit ids are 32 lower-case hex digits (16 random bytes from libuuid);
 * as in Redisson, the sorted sets hold the 16 raw bytes an id stands for, so
 * a permit taken by either library can be released by the other with its
 * hex id. To tell "this permit expired" from "this permit was released or never
 * existed", the ids of expired permits are remembered for a while in a sorted
 * set "{name}:expired" (scored by expiry; kept for DLOCK_PERMIT_EXPIRED_KEEP_MS
 * and at most DLOCK_PERMIT_EXPIRED_MAX ids; older ones count as unknown).
 *
 * Release answers (single id or a list):
 *   0                  released;
 *   DLOCK_ELOST        the permit's lease ran out (it went back to the count);
 *   DLOCK_ENOTOWNER    the id is not taken: already released, or never issued
 *                      (or expired longer ago than the memory above);
 *   DLOCK_EINVAL       not a permit id (not 32 lower-case hex digits), or the
 *                      same id twice in one list.
 * A list is all or nothing: when one id fails, nothing is released.
 *
 * Clocks: lease ends are written with the calling client's wall clock (the
 * backend clock's wall_ms: the virtual clock on the mock), and compared with
 * the wall clock of whichever client runs the next operation. Keep the
 * clocks of the clients sharing a semaphore close: a client whose clock runs
 * ahead by d ends other clients' leases d early.
 *
 * Counts: as the plain semaphore's (DLOCK_PERMITS_MAX); one call takes or
 * releases at most DLOCK_PERMITS_PER_CALL ids.
 *
 * Errors: every call may also return DLOCK_EINVAL (nothing changed),
 * DLOCK_ECONN / DLOCK_ETIMEDOUT, DLOCK_EPROTO (another type of value under
 * name or its sets, a count that is not an integer, a change that would
 * take the count past +-(2^53 - 1): nothing changed, not even the
 * reclaiming of expired permits) and DLOCK_EFORKED;
 * dlock_permit_semaphore_errmsg() tells the detail.
 *
 * A call that waits may also return DLOCK_ECANCELED: its client's
 * dlock_client_cancel_waits or dlock_client_free ended the wait
 * (api/dlock/client.h).
 *
 * Thread-safety: an object may be used by any number of threads at once.
 */
#ifndef DLOCK_PERMIT_SEMAPHORE_H
#define DLOCK_PERMIT_SEMAPHORE_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "errors.h"
#include "semaphore.h" /* DLOCK_PERMITS_MAX */

#ifdef __cplusplus
extern "C" {
#endif

/* A permit id's length in characters, and the buffer size it needs. */
#define DLOCK_PERMIT_ID_LEN 32
#define DLOCK_PERMIT_ID_SIZE 33

/* Most ids one acquire or release call handles. */
#define DLOCK_PERMITS_PER_CALL 1024

/* How long, and how many, expired ids are remembered (see above). */
#define DLOCK_PERMIT_EXPIRED_KEEP_MS ((int64_t)24 * 3600 * 1000)
#define DLOCK_PERMIT_EXPIRED_MAX 1024

/* The lease of a permit that never expires (Redisson's acquire() without a
 * lease): stored with Redisson's score for "never" (922337203685477), so a
 * Java client sees it as permanent too; reclaiming never touches it, and
 * lease_of reports it as -1. Give it back with release. */
#define DLOCK_PERMIT_PERMANENT ((int64_t)-1)

typedef struct dlock_permit_semaphore dlock_permit_semaphore;

/* Creates a handle for the permit-expirable semaphore called name
 * (1..DLOCK_NAME_MAX bytes). Does not touch the backend. Keeps c alive.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_permit_semaphore_new(dlock_permit_semaphore **out, dlock_client *c,
                                         const char *name);

/* Releases local resources only. NULL is a no-op. */
DLOCK_API void dlock_permit_semaphore_free(dlock_permit_semaphore *p);

/* The name (borrowed); NULL for NULL. */
DLOCK_API const char *dlock_permit_semaphore_name(const dlock_permit_semaphore *p);

/* The detail of the last failure of a call on p (per-thread copy). */
DLOCK_API const char *dlock_permit_semaphore_errmsg(dlock_permit_semaphore *p);

/* Frees an id array returned by acquire/try_acquire. NULL is a no-op. */
DLOCK_API void dlock_permit_ids_free(char **ids);

/* Takes permits (0..DLOCK_PERMITS_PER_CALL), each with its own id and a
 * lease of lease_ms (1..DLOCK_TIME_MAX_MS, or DLOCK_PERMIT_PERMANENT; extend
 * or change it with update_lease), blocking until that many are available. On success *out is
 * a NULL-terminated array of `permits` ids, allocated as one block that the
 * caller owns and frees with dlock_permit_ids_free (0 permits: an empty
 * array, at once, without a round trip). On failure *out is NULL. While the
 * backend is unreachable it keeps retrying. */
DLOCK_API int dlock_permit_semaphore_acquire(dlock_permit_semaphore *p, char ***out,
                                             int64_t permits, int64_t lease_ms);

/* As acquire, waiting up to wait_ms (>= 0; 0 = one attempt; above
 * DLOCK_TIME_MAX_MS, no time limit in effect): DLOCK_EBUSY
 * when wait_ms is 0 and too few are available, DLOCK_ETIMEDOUT when the
 * wait ran out. */
DLOCK_API int dlock_permit_semaphore_try_acquire(dlock_permit_semaphore *p, char ***out,
                                                 int64_t permits, int64_t wait_ms,
                                                 int64_t lease_ms);

/* Releases one permit: 0, DLOCK_ELOST, DLOCK_ENOTOWNER, DLOCK_EINVAL (see
 * above). Wakes waiters. */
DLOCK_API int dlock_permit_semaphore_release(dlock_permit_semaphore *p, const char *id);

/* Releases n ids (0..DLOCK_PERMITS_PER_CALL; 0 is a no-op), all or
 * nothing. On failure nothing was released, and the code and *out (may be
 * NULL) are those of the first repeated or malformed id (DLOCK_EINVAL) if
 * any, else of the first id not taken; on success *out = n. */
DLOCK_API int dlock_permit_semaphore_release_all(dlock_permit_semaphore *p, size_t *out,
                                                 const char *const *ids, size_t n);

/* As release / release_all, but "not taken" (expired, released, unknown) is
 * an answer rather than an error: *out = 1 released, 0 nothing released.
 * A malformed id is still DLOCK_EINVAL. */
DLOCK_API int dlock_permit_semaphore_try_release(dlock_permit_semaphore *p, int *out,
                                                 const char *id);
DLOCK_API int dlock_permit_semaphore_try_release_all(dlock_permit_semaphore *p, int *out,
                                                     const char *const *ids, size_t n);

/* Sets the permit's lease to lease_ms (1..DLOCK_TIME_MAX_MS) from now, or
 * makes it permanent (DLOCK_PERMIT_PERMANENT): 0, or the release answers
 * (DLOCK_ELOST when it already expired). */
DLOCK_API int dlock_permit_semaphore_update_lease(dlock_permit_semaphore *p, const char *id,
                                                  int64_t lease_ms);

/* The permit's lease left in ms; -1 when it is permanent; -2 when it is not
 * taken (expired, released, unknown). One read. */
DLOCK_API int dlock_permit_semaphore_lease_of(dlock_permit_semaphore *p, int64_t *out,
                                              const char *id);

/* One read each: available (may be negative), acquired (taken, lease not
 * ended) and total (available + acquired). */
DLOCK_API int dlock_permit_semaphore_available_permits(dlock_permit_semaphore *p, int64_t *out);
DLOCK_API int dlock_permit_semaphore_acquired_permits(dlock_permit_semaphore *p, int64_t *out);
DLOCK_API int dlock_permit_semaphore_total_permits(dlock_permit_semaphore *p, int64_t *out);

/* Makes the total permits (>= 0) what is asked: available = permits -
 * acquired (negative when more are taken than that: releases then bring it
 * back). Wakes waiters when permits become available. */
DLOCK_API int dlock_permit_semaphore_set_permits(dlock_permit_semaphore *p, int64_t permits);

/* As set_permits, only if the semaphore's count does not exist yet;
 * *out (may be NULL): 1 set, 0 it existed (unchanged). */
DLOCK_API int dlock_permit_semaphore_try_set_permits(dlock_permit_semaphore *p, int *out,
                                                     int64_t permits);

/* Adds delta to the available (and so the total) permits; negative allowed.
 * Wakes waiters when permits become available. */
DLOCK_API int dlock_permit_semaphore_add_permits(dlock_permit_semaphore *p, int64_t delta);

/* ---- introspection ------------------------------------------------------ */

struct json_t; /* Jansson's json_t (api/dlock/codec.h) */

/*
 * The semaphore's state as stored, as a JSON object (as dlock_rlock_state in
 * api/dlock/lock.h, which tells the ownership of *out and the text form):
 *   "type":      "permit_semaphore"
 *   "name":      its name
 *   "available", "acquired", "total": as the count reads above give them
 *   "permits":   the permits taken whose lease runs, the first to end first:
 *                [{"id": permit id, "ttl_ms": its lease left, -1 for a
 *                permanent permit (listed last)}, ...]
 * One round trip, no side effects (permits whose lease ended count as
 * available and are not listed). 0 or an error; *out is NULL on failure.
 */
DLOCK_API int dlock_permit_semaphore_state(dlock_permit_semaphore *p, struct json_t **out);
DLOCK_API int dlock_permit_semaphore_state_text(dlock_permit_semaphore *p, char **out);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_PERMIT_SEMAPHORE_H */
