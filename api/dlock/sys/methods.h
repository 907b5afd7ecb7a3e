/*
 * dlock — the RLock interface (for people who write a lock type).
 *
 * A lock type is a few Lua scripts plus a method table. The instance struct
 * starts with a pointer to the table; the table starts with a version field
 * and only ever grows at its end. A slot a type does not support is NULL and
 * the generic function (api/dlock/lock.h) returns DLOCK_ENOTSUP.
 *
 * The generic functions validate their arguments before dispatching, so a
 * slot is always called with: l non-NULL, owner a non-empty NUL-terminated
 * id shorter than DLOCK_OWNER_MAX that the type's check_owner slot took,
 * wait_ms >= 0 or DLOCK_WAIT_FOREVER, lease_ms 0..DLOCK_TIME_MAX_MS, out
 * non-NULL. The built-in scripts check their arguments again (times, the
 * reserved owner ids) and what they read (a key of another type, a count
 * that is not an integer) before their first write, and refuse with an
 * error reply (DLOCK_EPROTO from dlock_rlock_eval), so a caller that
 * bypasses the C checks, or a value planted by someone else, gets an
 * error and the store as it was, never a half-written lock. Do the same in
 * your own scripts: Redis does not roll back a script that fails half
 * way.
 *
 * The services below (eval with error mapping, the wait loop, hold tracking
 * and the watchdog) are what the built-in types are made of; the rest of
 * their parts (the object base with its channel, leases, the hash renewal
 * script, the state document) are in api/dlock/sys/lock_type.h. *
 * Names (kept from 1.0 on). Every object of the library -- every lock, and
 * the semaphore, permit semaphore, latch and bucket too -- is one instance
 * that starts with `struct dlock_rlock` (the base: its method table,
 * client, name and last failure) and has one method table,
 * `dlock_rlock_methods`. A type that is not a lock fills only version,
 * type, destroy and state, and the generic lock calls refuse it with
 * DLOCK_ENOTSUP. That one pointer has three names, one per reader:
 *   dlock_rlock *      the lock interface (Redisson's RLock): what
 *                      dlock_lock and the other calls of api/dlock/lock.h
 *                      take, and what every lock type's constructor gives;
 *   dlock_object *     the object view (Redisson's RObject,
 *                      api/dlock/object.h): opaque, got from a typed
 *                      accessor, so that delete and expire take any handle
 *                      while the compiler still refuses a semaphore where a
 *                      lock is wanted;
 *   dlock_object_base  not a handle: the struct a type woken by pub/sub
 *                      embeds first (the base and its channel,
 *                      api/dlock/sys/lock_type.h).
 * The base keeps its RLock name: a table or a type written against it
 * outside the library stays source-compatible, and the version field
 * lets the table grow.
 */
#ifndef DLOCK_SYS_METHODS_H
#define DLOCK_SYS_METHODS_H

#include "../export.h"

#include "../types.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "../client.h"
#include "../errors.h"
#include "../lock.h"
#include "../times.h"
#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif


struct json_t; /* Jansson's json_t (api/dlock/codec.h) */

/* ---- operations ----------------------------------------------------------- */

/* One call of the generic API (dlock_lock, dlock_try_lock, dlock_unlock
 * and their _as forms), from its start to its answer: it carries the
 * owner id, the deadline of its wait and the cap of its round trips, the
 * replica-sync verdict of its writes and its failure detail, so that no
 * step keeps any of them in the thread that runs it. The library makes it
 * and owns it; a lock type's slots receive it and hand it on, unchanged,
 * to every service below that takes one (dlock_rlock_eval*,
 * dlock_rlock_wait), so that each round trip made for the call is cut off
 * with it and judged with it. Valid until the slot returns. */
typedef struct dlock_op dlock_op;

/* The owner id the operation acts for (NUL-terminated, 1..DLOCK_OWNER_MAX
 * - 1 bytes): the calling thread's, or the one given to an _as call.
 * Never blocks. NULL for NULL. */
DLOCK_API const char *dlock_op_owner(const dlock_op *op);

/* For an acquisition attempt's script of a counting (reentrant) type: the
 * hold count dlock_op_owner(op) would have on the store now had an earlier
 * attempt of this same call taken the lock without its answer coming back
 * (that round trip ended DLOCK_ECONN or DLOCK_ETIMEDOUT: the script may have
 * run): the owner's holds of l known to this client, plus one. 0 when the
 * call made no such attempt. Pass it to the script; a script that finds the
 * owner's count equal to a positive value grants again without counting
 * (the earlier attempt's hold is this one), so that one unlock frees a
 * retried acquisition (the conformance kit's
 * retry_after_lost_reply_counts_once checks it; the built-in types'
 * scripts do it). Never blocks. 0 for NULL. */
DLOCK_API int64_t dlock_op_retry_expect(dlock_rlock *l, const dlock_op *op);

/* The method table's version this header describes. Every slot below is
 * part of version 1. A later version of the library only appends slots
 * (a table of an older version is shorter: the library never reads past
 * what its version promises); dlock_rlock_init refuses a table whose
 * version is not one it knows. */
#define DLOCK_RLOCK_METHODS_VERSION 1
/* For a table filled at run time: `dlock_rlock_methods m =
 * DLOCK_RLOCK_METHODS_INIT;` then set its slots. A constant table names
 * its slots: `{.version = DLOCK_RLOCK_METHODS_VERSION, .type = "mine",
 * .acquire = ..., ...}` (every slot not named is NULL: not supported). */
#define DLOCK_RLOCK_METHODS_INIT {DLOCK_RLOCK_METHODS_VERSION, NULL, NULL, NULL, \
                                  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, \
                                  NULL, NULL}

typedef struct dlock_rlock_methods {
    int version;      /* DLOCK_RLOCK_METHODS_VERSION (see there) */
    const char *type; /* "reentrant" */

    /* Acquire for dlock_op_owner(op), waiting up to wait_ms
     * (DLOCK_WAIT_FOREVER: no limit); every round trip with op. Blocks.
     * 0, DLOCK_EBUSY, DLOCK_ETIMEDOUT, DLOCK_EDEADLK or an error. */
    int (*acquire)(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms);
    /* One hold of dlock_op_owner(op) released, its round trip with op.
     * One round trip. 0, DLOCK_ENOTOWNER, DLOCK_ELOST or an error. */
    int (*release)(dlock_rlock *l, dlock_op *op);
    /* Delete whoever holds it, wake waiters; *existed set (never NULL). */
    int (*force_unlock)(dlock_rlock *l, int *existed);
    /* Reads: one round trip each, no side effects. */
    int (*is_locked)(dlock_rlock *l, int *out);
    int (*is_held)(dlock_rlock *l, const char *owner, int *out);
    int (*hold_count)(dlock_rlock *l, const char *owner, int64_t *out);
    int (*remain_ttl)(dlock_rlock *l, int64_t *out);
    /* Frees what the type allocated beyond struct dlock_rlock, including
     * the instance itself (it knows the size). Called by dlock_rlock_free
     * after dlock_rlock_fini. May be NULL when the instance is a plain
     * malloc'ed struct dlock_rlock. */
    void (*destroy)(dlock_rlock *l);

    /* The lock's state as a JSON object (api/dlock/lock.h,
     * dlock_rlock_state, documents the common fields): *out is a new
     * reference, the caller's. One round trip, no side effects. May be NULL
     * (DLOCK_ENOTSUP). Build it with Jansson, or in objects/ with
     * core/json_doc.h. */
    int (*state)(dlock_rlock *l, struct json_t **out);

    /* For guarded writes (api/dlock/bucket.h): writes into buf (len bytes)
     * the field of the hash stored at the lock's name whose presence proves
     * that owner holds l, so that one script can check the hold and write
     * atomically. Never blocks. 0, or DLOCK_EINVAL (buf too small). May be
     * NULL: the type cannot prove a hold by one hash field (DLOCK_ENOTSUP). */
    int (*guard_field)(dlock_rlock *l, const char *owner, char *buf, size_t len);

    /* dlock_extend (api/dlock/lock.h): if owner holds l now, its remaining
     * lease becomes lease_ms (0: the client's watchdog timeout, and the
     * watchdog renews the hold from now on; > 0: that lease, and the
     * watchdog stops renewing it). One round trip. 0, or DLOCK_ENOTOWNER
     * when owner does not hold l (nothing changed; the generic function
     * tells DLOCK_ELOST from it). A type whose watchdog renewal script
     * sets the lease of one owner's hold implements it with
     * dlock_rlock_extend_by_renewal. May be NULL:
     * DLOCK_ENOTSUP (a type without leases). */
    int (*extend)(dlock_rlock *l, const char *owner, int64_t lease_ms);

    /* Refuses the owner ids the type's layout reserves: ids that would
     * collide with names of its own stored beside them (a fixed field of
     * the hash that also holds one field per owner, a field or key built
     * from another owner's id). 0, or DLOCK_EINVAL with the detail recorded
     * on l (dlock_rlock_fail): say which rule the id breaks. Never blocks,
     * sends nothing. dlock_rlock_check_owner calls it, after the length
     * check, for every explicit owner id before anything is sent (the
     * generic *_as functions, a guarded write's owner, a MultiLock's
     * members); the calling thread's own id, "<client-uuid>:<thread-id>",
     * must always pass. A composite type checks its members here
     * (dlock_rlock_check_owner on each). May be NULL:
     * every id of 1..DLOCK_OWNER_MAX - 1 bytes. */
    int (*check_owner)(dlock_rlock *l, const char *owner);
} dlock_rlock_methods;

/* Whether a table fills a slot (of version 1: every slot today; a slot a
 * later version appends will be tested with its version too). */
#define DLOCK_RLOCK_HAS_SLOT(m, slot) ((m)->slot != NULL)

/* The base every object embeds first (see "Names" above). */
struct dlock_rlock {
    const dlock_rlock_methods *methods;
    dlock_client *client; /* a reference, dropped by dlock_rlock_fini */
    char *name;           /* owned */
    size_t name_len;
    /* The detail of the last failure: allocated at the first failure (most
     * handles never fail, and a handle should cost little), guarded by one
     * of a few locks shared by all objects. Read it with dlock_errmsg. */
    char *errmsg;
    /* dlock_rlock_set_on_lost's callback (NULL: the client's), read and
     * written under the client's hold registry lock; zeroed by
     * dlock_rlock_init. */
    dlock_lost_fn on_lost;
    void *on_lost_arg;
};

/* Longest failure detail kept, including the NUL. */
#define DLOCK_ERRMSG_MAX 1024

/* Fills the base: validates name (1..DLOCK_NAME_MAX bytes), copies it,
 * takes a reference on c. 0, DLOCK_EINVAL (errmsg-less: the instance does
 * not exist yet), DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_rlock_init(dlock_rlock *l, const dlock_rlock_methods *m,
                               dlock_client *c, const char *name);
/* Undoes dlock_rlock_init (and forgets l's holds in the client). */
DLOCK_API void dlock_rlock_fini(dlock_rlock *l);

/* Records code and a printf-style detail as l's last failure; returns code
 * so that `return dlock_rlock_fail(l, DLOCK_EINVAL, "...")` reads well. */
DLOCK_API int dlock_rlock_fail(dlock_rlock *l, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Whether owner is an id l takes: 1..DLOCK_OWNER_MAX - 1 bytes (NUL
 * excluded) and not one its type reserves (the check_owner slot). 0, or
 * DLOCK_EINVAL with the detail recorded on l. Never blocks, sends nothing.
 * What the generic functions check every explicit owner id with. */
DLOCK_API int dlock_rlock_check_owner(dlock_rlock *l, const char *owner);

/* Builds "prefix{name}suffix", or "prefix" name "suffix" when name already
 * contains '{' (Redisson's rule). Returns a malloc'ed string or NULL. */
DLOCK_API char *dlock_rlock_key(const dlock_rlock *l, const char *prefix,
                                const char *suffix);

/* Runs script on the client's backend for op (NULL: a call outside an
 * operation, e.g. a read: no cap, nothing judged). A transport failure
 * and an error reply (e.g. WRONGTYPE: DLOCK_EPROTO) become l's last
 * failure (and op's) and a code; on success *out is the caller's. Blocks
 * for one round trip, cut off at op's cap.
 * Replica sync (api/dlock/redis.h: sync_replicas): a script that ran but
 * whose writes too few replicas acknowledged is DLOCK_ESYNC (its change is
 * made, *out = NULL) -- except inside an acquisition attempt of
 * dlock_rlock_wait and a release slot called by dlock_unlock(_as): there
 * it succeeds with the reply, and the caller above judges (the wait rolls
 * the acquisition back through the spec's undo, the unlock reports
 * DLOCK_ESYNC once the hold bookkeeping is done), so a lock type's attempt
 * and release functions need nothing of their own for it. */
DLOCK_API int dlock_rlock_eval(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                               const dlock_script *script, size_t nkeys, size_t nargs,
                               const char *const *argv);

/* Runs a script whose reply must be an integer (anything else:
 * DLOCK_EPROTO) and stores it in *out. */
DLOCK_API int dlock_rlock_eval_integer(dlock_rlock *l, dlock_op *op, int64_t *out,
                                       const dlock_script *script, size_t nkeys,
                                       size_t nargs, const char *const *argv);

/* Runs an acquisition script whose reply is nil when op's owner got the
 * lock, bracketed by dlock_hold_acquire_begin/_end (see below). Returns 0
 * with *out = NULL when acquired, 0 with *out = the reply (the caller's)
 * when not, or an error code. */
DLOCK_API int dlock_rlock_eval_acquire(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                                       int64_t lease_ms,
                                       const dlock_script *renew,
                                       const dlock_script *script, size_t nkeys,
                                       size_t nargs, const char *const *argv);

/* Runs a release script whose reply is nil (op's owner does not hold it),
 * 0 (one hold less, still held) or 1 (released), bracketed by
 * dlock_hold_release_begin/_end. Returns 0, DLOCK_ENOTOWNER, DLOCK_ELOST or
 * an error code. */
DLOCK_API int dlock_rlock_eval_release(dlock_rlock *l, dlock_op *op,
                                       const dlock_script *script, size_t nkeys,
                                       size_t nargs, const char *const *argv);

/* The extend slot for a type whose renewal script (the watchdog contract
 * below) sets the lease of owner's hold: runs renew for l's name and owner
 * with lease_ms (0: the watchdog timeout) and updates the client's hold
 * registry (watchdog renewal on for lease 0, off otherwise). 0,
 * DLOCK_ENOTOWNER, or an error. */
DLOCK_API int dlock_rlock_extend_by_renewal(dlock_rlock *l, const char *owner,
                                            int64_t lease_ms,
                                            const dlock_script *renew);

/* ---- waiting ----------------------------------------------------------- */

typedef struct dlock_wait_spec dlock_wait_spec;

/* One acquisition attempt for dlock_op_owner(op), its round trips with
 * op. Returns 0 when acquired; DLOCK_EBUSY with *retry_ms = how long until
 * a retry makes sense (the holder's TTL; -1 when unknown: wait for a
 * message only; 0: retry at once); or another error, which ends the wait. */
typedef int (*dlock_attempt_fn)(dlock_rlock *l, dlock_op *op,
                                const dlock_wait_spec *spec, int64_t lease_ms,
                                int64_t *retry_ms);

/* The wait spec's version this header describes: every field below is
 * part of version 1 (a later version only appends fields; dlock_rlock_wait
 * refuses a spec of a version it does not know). */
#define DLOCK_WAIT_SPEC_VERSION 1
/* `dlock_wait_spec spec = DLOCK_WAIT_SPEC_INIT;` then set its fields. */
#define DLOCK_WAIT_SPEC_INIT {DLOCK_WAIT_SPEC_VERSION, NULL, NULL, NULL, NULL, \
                              NULL, 0, 0, NULL, 0, 0, DLOCK_WAKE_EVERY, 0, 0}

/* What one message on a wait's channel wakes among the client's waiters of
 * that channel (dlock_wait_spec.wake). The waiters of a channel queue per
 * client in arrival order; a woken waiter that leaves without attempting
 * (timeout, cancel, error) hands its wake to the next. */
/* Every waiter, at every message. */
#define DLOCK_WAKE_EVERY 0
/* Redisson's LockPubSub: the message "1" (a write unlock: every reader may
 * enter) wakes every waiter, any other (an unlock, "0") the first one. A
 * woken waiter that is refused keeps its place and sleeps again: the
 * holder that refused it publishes when it lets go (or its TTL, which the
 * attempt returned, wakes the waiter). */
#define DLOCK_WAKE_LOCK 1
/* A count of permits (Redisson's semaphore channels): the message, a
 * decimal number n, wakes up to n waiters (none for n <= 0; every one for
 * what is not a number); a woken waiter that is refused (it wanted more
 * permits than were left) hands its wake to the next, which may want
 * fewer. */
#define DLOCK_WAKE_COUNT 2

struct dlock_wait_spec {
    int version;                 /* DLOCK_WAIT_SPEC_VERSION (see there) */
    /* The wake-up channel (owned by the caller). NULL: no pub/sub at all;
     * the loop polls, with exponential back-off and jitter between
     * attempts (poll_min_ms, poll_max_ms), still bounded by the retry time
     * and the budget (the spin lock's way). */
    const char *channel;
    dlock_attempt_fn attempt;
    /* Called once when the wait ends without the lock after an attempt
     * that was refused (DLOCK_EBUSY) or whose reply was lost (DLOCK_ECONN,
     * DLOCK_ETIMEDOUT): budget spent, wait 0, or an error; e.g. to leave a
     * queue. Its round trips share the call's cap (see dlock_rlock_wait).
     * May be NULL. */
    void (*give_up)(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec);
    void *arg;                   /* for attempt and give_up */
    /* A lock made of locks on several backends (api/dlock/redlock.h) is
     * woken by a release message on any of them: with nbackends > 0 the
     * wait subscribes to channel on each of backends[0..nbackends) (NULL
     * entries skipped; borrowed) instead of l's client's backend. Best
     * effort: a backend that does not confirm within subscribe_timeout_ms
     * (down, stalled) is skipped and tried again after the next wake-up,
     * and is never an error of the wait, so its messages may be missed:
     * the attempt's *retry_ms must then bound the sleep. */
    dlock_backend *const *backends;
    size_t nbackends;
    int64_t subscribe_timeout_ms;
    /* Undoes an attempt that succeeded (0) but whose writes the backend
     * could not sync to enough replicas (DLOCK_ESYNC, api/dlock/redis.h:
     * sync_replicas): dlock_rlock_wait then calls it once, after the
     * call's budget, and returns DLOCK_ESYNC. NULL: the lock's release
     * slot (one hold of owner less: right for every lock whose attempt
     * takes one hold). Returns 0 or a code (the detail names it). */
    int (*undo)(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec);
    /* Polling (channel NULL): the first pause is about poll_min_ms, each
     * next one doubles up to poll_max_ms; a pause is half its step plus a
     * random part of the other half, so that waiters started together
     * spread out. <= 0: 1 and 128 ms, Redisson's
     * spin lock's defaults. */
    int64_t poll_min_ms;
    int64_t poll_max_ms;
    /* Whom a message on channel wakes: DLOCK_WAKE_EVERY (0),
     * DLOCK_WAKE_LOCK or DLOCK_WAKE_COUNT (see there).
     * Waits on several backends (nbackends > 0) wake at every message. */
    int wake;
    /* Whether the wait may go on away from the frame of the acquire slot
     * that began it (0: no, it keeps its caller's stack while it sleeps).
     * An asynchronous acquisition (api/dlock/async.h) whose movable wait
     * must sleep then sleeps as a small heap record, without a stack:
     * dlock_rlock_wait returns a code the library keeps to itself, which
     * the slot must return as it is, at once (freeing only what it
     * allocated for the spec); when the wait is woken, the slot is called
     * again with the same arguments and must come to the same
     * dlock_rlock_wait call with an equal spec (the same channel text,
     * functions, wake and poll bounds), having sent nothing on the way;
     * the wait goes on from where it was, and the slot gets its final
     * code as a blocking call would. arg may point into the slot's frame:
     * each call's arg is the one the attempts get (see arg_size). Ignored
     * with nbackends > 0 (such a wait keeps its frame). */
    int movable;
    /* With movable: how many bytes at arg the wait keeps from one call of
     * the slot to the next (state the attempts change, such as a queue
     * place already taken): copied into each call's arg before the wait
     * goes on, so that the call that gets the final code finds the last
     * ones there. 0: none (each call's arg is as its slot built it). */
    size_t arg_size;
};

/* The acquire loop for op (the acquire slot's): attempt; if busy and
 * wait_ms allows, subscribe to the channel (shared per client), attempt
 * again (a release published before the subscription is not lost), then
 * sleep until a message wakes this waiter, the retry time or the budget,
 * and repeat (without a channel: sleep the back-off pause, or less, and
 * repeat). The client's waiters of one channel queue in arrival order and
 * a message wakes those spec->wake says (DLOCK_WAKE_*); blocking callers
 * and a dlock_loop's operations share the queue.
 * Transport errors (DLOCK_ECONN, DLOCK_ETIMEDOUT) are retried with
 * back-off while the budget lasts (for ever with DLOCK_WAIT_FOREVER). The
 * budget is checked before every step, and every round trip made with op
 * meanwhile (the attempts and give_up included) is cut off at wait_ms +
 * the client's budget_slack_ms (api/dlock/client.h): the call returns
 * within that.
 * Returns 0, DLOCK_EBUSY (wait_ms 0), DLOCK_ETIMEDOUT (the budget ran out
 * after a refusal, or a round trip did), DLOCK_ECONN (the budget ran out
 * while the backend was unreachable), DLOCK_ECANCELED (the client's
 * dlock_client_cancel_waits or dlock_client_free came after the call began;
 * checked after every wake-up), DLOCK_ESYNC (acquired, but the backend
 * could not sync it to enough replicas: undone again, see undo), or the
 * attempt's error. */
DLOCK_API int dlock_rlock_wait(dlock_rlock *l, dlock_op *op,
                               const dlock_wait_spec *spec, int64_t wait_ms,
                               int64_t lease_ms);

/* ---- holds and the watchdog -------------------------------------------- */

/* The renewal script of a lock type: KEYS = lock names (one per hold),
 * ARGV[1] = lease ms, ARGV[1 + i] = the owner of KEYS[i]. Replies an array
 * with 1 (renewed) or 0 (no longer held) per key. */

/* Every acquisition attempt and every release is bracketed, so that the
 * watchdog never mistakes a lock in the middle of changing hands for a lost
 * one: a hold is renewed from before the acquire script runs (a thread
 * stalled right after acquiring keeps its lock), and a lock found missing
 * while a release or an acquisition of that owner is under way is not
 * reported lost (that call answers for itself). */

/* Before an acquisition attempt of owner. With lease_ms 0 the client's
 * watchdog renews the hold with renew (from now until the last release, or
 * until the attempt turns out to have failed). Never blocks on the network.
 * 0 or DLOCK_ENOMEM (then do not send the attempt). */
DLOCK_API int dlock_hold_acquire_begin(dlock_rlock *l, const char *owner,
                                       int64_t lease_ms, const dlock_script *renew);
/* Ends it: acquired = the script granted one more hold. */
DLOCK_API void dlock_hold_acquire_end(dlock_rlock *l, const char *owner, int64_t lease_ms,
                                      int acquired);

/* Before sending a release of owner's hold of l. Ended by exactly one
 * dlock_hold_release_end or dlock_hold_missing. */
DLOCK_API void dlock_hold_release_begin(dlock_rlock *l, const char *owner);

/* how: DLOCK_HOLD_ALL the lock is no longer held by owner (the script said
 * so), DLOCK_HOLD_ONE one hold less, DLOCK_HOLD_FAILED the call failed and
 * nothing is known to have changed. */
#define DLOCK_HOLD_ONE 0
#define DLOCK_HOLD_ALL 1
#define DLOCK_HOLD_FAILED (-1)
DLOCK_API void dlock_hold_release_end(dlock_rlock *l, const char *owner, int how);

/* Ends a release after the backend said owner does not hold l: DLOCK_ELOST
 * if this lock object believed owner held it (and forgets the hold), else
 * DLOCK_ENOTOWNER. */
DLOCK_API int dlock_hold_missing(dlock_rlock *l, const char *owner);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SYS_METHODS_H */
