/*
 * dlock — what a lock type of your own is made of, beyond the method table
 * (api/dlock/sys/methods.h): the pieces the built-in types use, public so that
 * a type written outside the library (samples/custom_lock.c) builds on the
 * same ones instead of copies.
 *
 *  - the object base: the RLock base plus a wake-up channel, and the wait
 *    loop on that channel;
 *  - leases: the client's watchdog timeout (what a lease-0 acquisition
 *    sets), the lease to keep on a partial release;
 *  - refusals: the retry time of a wait from the holder's TTL;
 *  - the hash renewal script: the watchdog's batch renewal for locks kept
 *    as a hash with one field per owner (Redisson's layout), so that the
 *    lease-0 holds of such a type are renewed without a script of its own;
 *  - the state document (dlock_rlock_state) with the fields every lock
 *    type reports.
 *
 * Nothing here blocks unless said so; none of it takes ownership of what it
 * is given unless said so.
 */
#ifndef DLOCK_SYS_LOCK_TYPE_H
#define DLOCK_SYS_LOCK_TYPE_H

#include "../export.h"

#include "../types.h"

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "methods.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the object base ---------------------------------------------------- */

/* The head of a lock type that wakes its waiters through pub/sub: the base
 * first (so a dlock_object_base * is a dlock_rlock *), then the channel. */
typedef struct dlock_object_base {
    dlock_rlock base;
    char *channel; /* owned: "prefix{name}suffix" (dlock_rlock_key) */
} dlock_object_base;

/* Allocates size bytes zeroed (the type's struct, which starts with a
 * dlock_object_base; size >= sizeof(dlock_object_base)), fills the base
 * with dlock_rlock_init and builds the channel from prefix and suffix
 * (dlock_rlock_key: "prefix{name}suffix"). *out is the caller's, freed by
 * dlock_rlock_free (the table's destroy slot must end with
 * dlock_object_base_destroy). Does not touch the backend. 0, DLOCK_EINVAL,
 * DLOCK_ENOMEM, DLOCK_EFORKED; on failure *out = NULL and nothing is left. */
DLOCK_API int dlock_object_base_new(dlock_object_base **out, size_t size,
                                    const dlock_rlock_methods *m, dlock_client *c,
                                    const char *name, const char *prefix,
                                    const char *suffix);

/* Frees the channel and the instance: the destroy slot of a type with
 * nothing else allocated, the last step of the others'. */
DLOCK_API void dlock_object_base_destroy(dlock_rlock *l);

/* dlock_rlock_wait for op on l's channel (l is a dlock_object_base) with
 * attempt, arg for it, and no give_up: the acquire slot of most types.
 * Every message wakes every waiter (DLOCK_WAKE_EVERY: the type's messages
 * are its own); a type whose unlock publishes as Redisson's locks do
 * builds its dlock_wait_spec with DLOCK_WAKE_LOCK instead (one waiter per
 * unlock). Blocks as dlock_rlock_wait. */
DLOCK_API int dlock_object_base_wait(dlock_rlock *l, dlock_op *op,
                                     dlock_attempt_fn attempt, void *arg,
                                     int64_t wait_ms, int64_t lease_ms);

/* ---- leases ------------------------------------------------------------- */

/* The client's watchdog timeout in ms (dlock_client_options): the lease of
 * a lease-0 hold, renewed every third of it. 0 for NULL. */
DLOCK_API int64_t dlock_client_watchdog_timeout(const dlock_client *c);

/* The lease an acquisition script must set for lease_ms: lease_ms, or with
 * 0 (the watchdog renews the hold) l's client's watchdog timeout. */
DLOCK_API int64_t dlock_rlock_lease(const dlock_rlock *l, int64_t lease_ms);

/* The lease a release that leaves owner holding l must keep at least: the
 * watchdog timeout for a watchdog-renewed hold, else the latest
 * acquisition's lease; 0 when this client knows of no hold (keep the TTL).
 * Takes the client's hold registry lock briefly. */
DLOCK_API int64_t dlock_hold_lease(dlock_rlock *l, const char *owner);

/* ---- refusals ----------------------------------------------------------- */

/* The retry_ms of a dlock_attempt_fn for a holder's TTL as PTTL reads it:
 * -1 (no expiry) stays -1 (wait for a message only), 0 becomes 1 (it
 * expires now: look again at once), else the TTL. */
DLOCK_API int64_t dlock_retry_after(int64_t ttl_ms);

/* The end of an attempt whose script refused with the holder's TTL (an
 * integer reply): sets *retry_ms with dlock_retry_after and frees r. 0, or
 * DLOCK_EPROTO (recorded on l, r freed) for any other reply. */
DLOCK_API int dlock_rlock_refused(dlock_rlock *l, const dlock_script *s, dlock_reply *r,
                                  int64_t *retry_ms);

/* ---- the hash renewal script -------------------------------------------- */

/* The renewal script (api/dlock/sys/methods.h) of locks kept as a hash at
 * their name with one field per owner (Redisson's layout: the reentrant,
 * fair, fenced and spin locks): a key is renewed when it has the owner's
 * field. Pass it to dlock_rlock_eval_acquire or dlock_hold_acquire_begin
 * when your type keeps that layout. Static: never freed. */
DLOCK_API const dlock_script *dlock_script_hash_renew(void);

/* ---- the state document ------------------------------------------------- */

struct json_t; /* Jansson's json_t (api/dlock/codec.h) */

/* A new state document (api/dlock/lock.h, dlock_rlock_state) with the
 * fields every lock type reports: "type" (the method table's), "name",
 * "locked" (ttl_ms != -2), "ttl_ms" and an empty "holders" array. Add the
 * holders with dlock_state_add_holder and your type's extras with Jansson.
 * A new reference, the caller's (the state slot hands it to its caller);
 * NULL when out of memory or l is NULL. */
DLOCK_API struct json_t *dlock_state_new(const dlock_rlock *l, int64_t ttl_ms);

/* Appends {"owner": owner (n bytes; bytes that are not UTF-8 become
 * U+FFFD), "holds": holds, "ttl_ms": ttl_ms} to doc's "holders". 0,
 * DLOCK_EINVAL (doc or owner NULL, or doc has no "holders" array, as one
 * made by dlock_state_new has), DLOCK_ENOMEM. Never blocks. */
DLOCK_API int dlock_state_add_holder(struct json_t *doc, const char *owner, size_t n,
                                     int64_t holds, int64_t ttl_ms);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SYS_LOCK_TYPE_H */
