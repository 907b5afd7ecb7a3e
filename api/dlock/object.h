/*
 * dlock — object lifetime on every object (Redisson's RObject / RExpirable):
 * delete, exists, expire, expire_at, clear_expire, remain_ttl.
 *
 * Every handle type gives its object view with an accessor below; the view
 * is the handle itself seen as an object (no allocation, nothing to free),
 * valid as long as the handle. (Why a view and not a base type of its own:
 * api/dlock/sys/methods.h, "Names".) The accessors are typed, so a handle of one
 * type cannot be passed as another; NULL gives NULL, and the calls below
 * refuse a NULL object with DLOCK_EINVAL.
 *
 * Each call is one round trip and one script, and covers all of the
 * object's keys (the types' headers document the layouts):
 *   reentrant lock   the hash
 *   spin lock        the hash (the reentrant lock's layout)
 *   simple lock      the string (its waiters are not woken by delete and
 *                    expire: they look again when the lease they saw ends)
 *   fenced lock      the hash, NOT the token counter: dlock deliberately
 *                    differs from Redisson here, as tokens must never go back
 *                    (a restarted counter would hand out tokens lower than
 *                    ones a storage service has already seen)
 *   fair lock        the hash, the wait queue and the waiters' deadlines
 *   read-write lock  (either half) the hash and every read hold's marker
 *                    (found from the hash's fields, no KEYS/SCAN)
 *   semaphore        the count
 *   semaphore as a lock  the count, the holders' hash and their leases
 *   permit-expirable semaphore  the count, the taken permits and the
 *                    expired ids
 *   latch, bucket    the one key
 *   a lock type of your own (api/dlock/sys/methods.h)  the key at its name
 *
 * Thread-safety: as the handle's own calls. Errors: as in api/dlock/lock.h
 * (DLOCK_EINVAL bad argument, nothing sent; DLOCK_ECONN, DLOCK_ETIMEDOUT,
 * DLOCK_EPROTO, DLOCK_EFORKED); the detail is dlock_object_errmsg's.
 */
#ifndef DLOCK_OBJECT_H
#define DLOCK_OBJECT_H

#include "types.h"
#include "export.h"

#include <stdint.h>

#include "bucket.h"
#include "latch.h"
#include "permit_semaphore.h"
#include "lock.h"
#include "semaphore.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_object dlock_object;

/* The object view of a handle (borrowed; NULL for NULL). */
DLOCK_API dlock_object *dlock_rlock_object(dlock_rlock *l);
DLOCK_API dlock_object *dlock_semaphore_object(dlock_semaphore *s);
DLOCK_API dlock_object *dlock_permit_semaphore_object(dlock_permit_semaphore *p);
DLOCK_API dlock_object *dlock_latch_object(dlock_latch *l);
DLOCK_API dlock_object *dlock_bucket_object(dlock_bucket *b);

/* Deletes every key of the object. The waiters of the reentrant, fair,
 * fenced and read-write locks and of the latch are woken, as force_unlock
 * and dlock_latch_delete do (they retry, and find it free or open); a
 * semaphore's are not (with its count gone there is nothing to take).
 * *out (may be NULL): 1 some key existed, 0 none did. */
DLOCK_API int dlock_object_delete(dlock_object *o, int *out);

/* *out: 1 when any key of the object exists, else 0 (Redisson looks at the
 * name only; dlock at every key, so that a semaphore with permits taken but
 * no count stored still exists). */
DLOCK_API int dlock_object_exists(dlock_object *o, int *out);

/* Every key of the object expires ms (0..DLOCK_TIME_MAX_MS) from now; the
 * waiters of the reentrant, fair, fenced and read-write locks are woken so
 * that they re-read the time left. *out (may be
 * NULL): 1 some key existed, 0 none (nothing to expire). This overrides
 * leases: a hold renewed later (watchdog, re-entry) sets its own again. A
 * latch whose count expires opens without a message (as in Redisson):
 * awaiters see it at their next check. */
DLOCK_API int dlock_object_expire(dlock_object *o, int *out, int64_t ms);

/* As dlock_object_expire, at unix_ms (wall-clock ms since the epoch,
 * 0..10^13, the year 2286; one in the past deletes). */
DLOCK_API int dlock_object_expire_at(dlock_object *o, int *out, int64_t unix_ms);

/* No key of the object expires any more (leases included, as Redisson's
 * clearExpire). *out (may be NULL): 1 some key had an expiry, 0 none. */
DLOCK_API int dlock_object_clear_expire(dlock_object *o, int *out);

/* *out: how long until no key of the object is left: -2 none exists, -1
 * some key never expires, else the longest remaining time in ms (Redisson
 * reads the name's TTL only). */
DLOCK_API int dlock_object_remain_ttl(dlock_object *o, int64_t *out);

/*
 * What is stored under the object's name, whatever type the handle is of
 * (one read-only round trip; for tools that show any object, such as
 * dlock(1)'s status and list). *out is a static string:
 *   "none"             nothing of any type below
 *   "reentrant"        a hash of owners (a reentrant or spin lock; a fair
 *                      lock whose queue is empty looks the same)
 *   "fair"             a hash of owners with a queue, deadlines or
 *                      liveness set, or those alone
 *   "fenced"           a hash of owners and a token counter, or the counter
 *                      alone (a free fenced lock)
 *   "rwlock"           a hash with the field "mode" (the read-write lock)
 *   "semaphore_lock"   the semaphore as a lock (its holders' hash exists)
 *   "permit_semaphore" the permit-expirable semaphore (its permits' set)
 *   "counter"          an integer string alone: a semaphore's permits or a
 *                      latch's count (stored alike: the data cannot tell)
 *   "simple"           a string holding an owner id (the simple lock)
 *   "string"           another string (a bucket, another program's key)
 *   "other"            a key of another Redis type (list, set, zset)
 * 0 or the errors above (*out is "none" on failure). */
DLOCK_API int dlock_object_kind(dlock_object *o, const char **out);

/*
 * The kinds and the built-in lock types by name, for tools that act on any
 * object (dlock(1)). Each answers from the built-in types' descriptions,
 * with no round trip: they never block, take no lock, hold nothing, and
 * may be called from any thread. Every string they return is static.
 *
 * A lock type's name is the one dlock_lock_new (api/dlock/lock.h) takes:
 * "reentrant", "fair", "fenced", "rwlock_read", "rwlock_write",
 * "semaphore_lock", "simple" (the spin lock, Redlock and MultiLock are
 * made with their own constructors, which take more than a name).
 */
/* A kind in words ("read-write lock"); NULL for a kind not among those of
 * dlock_object_kind (or NULL). */
DLOCK_API const char *dlock_object_kind_what(const char *kind);
/* The i-th (from 0) lock type that acts on data of kind, in the order a
 * tool acts on them (a read-write lock: "rwlock_write", then
 * "rwlock_read"); NULL past the last, and for a kind no lock type stores
 * ("none", "counter", "string"...). */
DLOCK_API const char *dlock_object_kind_lock(const char *kind, size_t i);
/* The kind the data of the lock type called type is recognised as
 * ("rwlock_read": "rwlock"); NULL for an unknown type. */
DLOCK_API const char *dlock_lock_type_kind(const char *type);
/* 1 when a lock of the type called type may be taken on a name holding
 * kind: "none", its own kind, or a kind its data shares while it is
 * idle (a fair lock takes "reentrant": its hash with an empty queue; the
 * semaphore as a lock takes "counter"); else 0 (an unknown type or kind
 * too). */
DLOCK_API int dlock_lock_type_takes(const char *type, const char *kind);

/*
 * The names of the objects matching pattern (Redis's glob: '*', '?', [...],
 * backslash escapes), by SCAN to the end: on Redis Cluster on every master
 * (found with CLUSTER SLOTS), elsewhere on the one server. *out: a new
 * NULL-terminated array, sorted, each name once (free with
 * dlock_names_free); a name added or removed meanwhile may or may not be
 * in it (SCAN's rule). The auxiliary keys of the built-in types (queues,
 * deadlines, tokens, holders, leases, read-hold markers, owner
 * descriptions, the totals dlock(1) records for semaphores) are left out,
 * a key being taken for one when both its name and its Redis type are the
 * layout's (a lock named "dlock_owner:x" is listed; an owner description
 * is the hash "dlock_owner:{<client uuid>}"): only keys at object names
 * are listed, so an object with nothing stored
 * at its name (a free fenced lock's counter) is not. count: SCAN's COUNT
 * hint, keys looked at per round trip (1..1000000). 0, DLOCK_EINVAL (NULL
 * argument, bad count; err says which), or a backend's error with its
 * detail in err (may be NULL; errlen bytes). Blocks for one round trip per
 * step; the whole keyspace is walked, so this is for tools, not hot paths.
 */
DLOCK_API int dlock_client_scan(dlock_client *c, const char *pattern, int64_t count,
                                char ***out, char *err, size_t errlen);
/* Frees an array from dlock_client_scan; NULL is a no-op. */
DLOCK_API void dlock_names_free(char **names);

/* The detail of the last failure of a call on the object's handle. */
DLOCK_API const char *dlock_object_errmsg(dlock_object *o);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_OBJECT_H */
