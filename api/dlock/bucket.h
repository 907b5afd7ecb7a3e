/*
 * dlock — the bucket: one value stored under a name, through a codec
 * (api/dlock/codec.h), with guarded writes that only land while a lock is
 * held.
 *
 * Layout: a plain string at name holding the codec's bytes (what Redisson's
 * RBucket stores with the same codec: a LongCodec or StringCodec bucket is
 * shared with Java as it is). A value of another kind under the name (a
 * hash, a list...) is never overwritten: every call returns DLOCK_EPROTO and
 * changes nothing.
 *
 * Values: `const void *value` is the codec's value type (a `const char *`
 * for the string codec, `const int64_t *` for the long codec, ...). Values
 * read back are new, the caller's, freed with dlock_bucket_value_free (or
 * dlock_codec_value_free with the bucket's codec). An absent value reads as
 * *out == NULL with a return of 0.
 *
 * TTL: every write takes ttl_ms: 1..DLOCK_TIME_MAX_MS (api/dlock/times.h),
 * the value disappears that many ms later (on the store's clock: the
 * virtual clock on the mock); 0, it never expires. A write replaces the TTL as well as the value.
 *
 * Guarded writes (dlock_bucket_set_guarded): the store checks that the lock
 * is held by the writer and writes, in one atomic script. A holder whose
 * lease ran out (a GC pause, a slow disk, a partition) and who does not know
 * it yet cannot overwrite what the next holder wrote: its write is refused.
 * With a fenced lock (api/dlock/fenced.h) the write can also require its
 * fencing token to be the current one.
 *
 * Errors: every call may also return DLOCK_EINVAL (NULL object or value,
 * a TTL out of range: nothing changed), DLOCK_ECONN / DLOCK_ETIMEDOUT (backend
 * unreachable or slow), DLOCK_EPROTO (another kind of value under the name,
 * or stored bytes that the codec cannot decode: nothing changed) and
 * DLOCK_EFORKED. dlock_bucket_errmsg() tells the detail (for a value that
 * does not decode, the codec's: e.g. the JSON line and column).
 *
 * Thread-safety: a bucket object may be used by any number of threads at
 * once.
 */
#ifndef DLOCK_BUCKET_H
#define DLOCK_BUCKET_H

#include "export.h"

#include "types.h"

#include <stdint.h>

#include "client.h"
#include "codec.h"
#include "errors.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_bucket dlock_bucket;

/* Creates a handle for the bucket called name (1..DLOCK_NAME_MAX bytes) that
 * stores values with codec (borrowed: it must outlive the bucket; the
 * built-in codecs always do). Does not touch the backend. Keeps c alive.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_bucket_new(dlock_bucket **out, dlock_client *c, const char *name,
                               const dlock_codec *codec);

/* Releases local resources only (never the stored value). NULL is a no-op. */
DLOCK_API void dlock_bucket_free(dlock_bucket *b);

/* The name / the codec (borrowed); NULL for NULL. */
DLOCK_API const char *dlock_bucket_name(const dlock_bucket *b);
DLOCK_API const dlock_codec *dlock_bucket_codec(const dlock_bucket *b);

/* The detail of the last failure of a call on b (by any thread), or "". A
 * per-thread copy, valid until the thread's next call of this function. */
DLOCK_API const char *dlock_bucket_errmsg(dlock_bucket *b);

/* Frees a value read from b. NULL is a no-op. */
DLOCK_API void dlock_bucket_value_free(dlock_bucket *b, void *value);

/* Reads the value: *out = a new value, or NULL when there is none. One read. */
DLOCK_API int dlock_bucket_get(dlock_bucket *b, void **out);

/* Stores value. One round trip. */
DLOCK_API int dlock_bucket_set(dlock_bucket *b, const void *value, int64_t ttl_ms);

/* Stores value only if the bucket holds none. *out (may be NULL): 1 stored,
 * 0 a value was there (unchanged). */
DLOCK_API int dlock_bucket_set_if_absent(dlock_bucket *b, int *out, const void *value,
                                         int64_t ttl_ms);

/* Replaces the value only if it is expect (NULL: only if the bucket holds
 * none), with update (NULL: delete the value). The comparison is of the
 * stored bytes with expect's encoding: the built-in codecs give one encoding
 * per value, but a value another program wrote in another form (e.g. JSON
 * with spaces, or "+5" for the long codec) compares unequal. *out (may be
 * NULL): 1 replaced, 0 the bucket did not hold expect (unchanged). Atomic:
 * of any number of concurrent compare_and_set calls expecting the same
 * value, exactly one succeeds. */
DLOCK_API int dlock_bucket_compare_and_set(dlock_bucket *b, int *out, const void *expect,
                                           const void *update, int64_t ttl_ms);

/* Reads and deletes the value in one step: *out = the value it held, or
 * NULL when there was none. When the stored bytes do not decode, the value
 * is deleted all the same and the call returns DLOCK_EPROTO. */
DLOCK_API int dlock_bucket_get_and_delete(dlock_bucket *b, void **out);

/* Deletes the value. *out (may be NULL): 1 there was one, 0 there was none. */
DLOCK_API int dlock_bucket_delete(dlock_bucket *b, int *out);

/* The value's remaining time to live: -2 no value, -1 no expiry, else ms.
 * One read. */
DLOCK_API int dlock_bucket_remain_ttl(dlock_bucket *b, int64_t *out);

/* ---- guarded writes ----------------------------------------------------- */

/* What a guarded write requires. */
typedef struct dlock_guard {
    int version;       /* 1 */
    dlock_rlock *lock; /* the lock that must be held: a reentrant, fair or
                        * fenced lock (any type with a guard field) */
    const char *owner; /* the holder: NULL = the calling thread's owner id */
    int64_t token;     /* 0: no token check; > 0: a fenced lock's token,
                        * which must be the current one */
} dlock_guard;

#define DLOCK_GUARD_INIT {1, NULL, NULL, 0}

/* Stores value if, at the moment of the write, guard->lock is held by
 * guard->owner (and, with a token, the token is the lock's current one):
 * checked and written in one atomic step on the store.
 *   0               stored;
 *   DLOCK_ENOTOWNER the owner does not hold the lock (it never did, it
 *                   unlocked, or its lease ran out): nothing stored;
 *   DLOCK_ELOST     the token is stale: a later acquisition has handed out
 *                   a greater token (another owner took the lock after this
 *                   hold ended, or this owner re-entered: use the newest
 *                   token, dlock_fenced_token): nothing stored;
 *   DLOCK_EINVAL    a token for a lock that is not fenced, a negative
 *                   token, a token that was never handed out, or an owner
 *                   id the lock refuses (too long, or reserved by its
 *                   layout: api/dlock/rwlock.h), nothing sent;
 *   DLOCK_ENOTSUP   the lock's type cannot guard a write (e.g. the read
 *                   half of a read-write lock).
 * The check reads the lock as stored, not the lock object's local view: any
 * handle on the same lock name (of the same type) may be given. */
DLOCK_API int dlock_bucket_set_guarded(dlock_bucket *b, const dlock_guard *guard,
                                       const void *value, int64_t ttl_ms);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_BUCKET_H */
