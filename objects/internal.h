/*
 * dlock — what the object system's files share and nobody outside objects/
 * sees: the client's innards, the hold registry and the watchdog.
 */
#ifndef DLOCK_OBJECTS_INTERNAL_H
#define DLOCK_OBJECTS_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlock/client.h"
#include "dlock/metrics.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"
#include "dlock/sys/lock_type.h"
#include "dlock/sys/rlock.h"

/* watchdog.c: one hold the watchdog renews in a period, copied out of the
 * registry (no registry lock is held while it is renewed). */
typedef struct dlock__renewal dlock__renewal;

/* A lock type's own renewal, for holds that are not one key on the
 * client's own backend (a Redlock's: a key on each of its nodes). The
 * watchdog calls it on its thread, once a period, with every renewable
 * hold of lock object l (n >= 1, all with this fn), instead of the batched
 * renewal script, and lease_ms the client's watchdog timeout. l stays
 * alive meanwhile (freeing its handle waits: dlock__holds_forget_lock).
 * It sets each hold's renewed (DLOCK__RENEWED, _GONE or _FAILED, the
 * default); the watchdog does the rest (metrics, log, lost marking and
 * on_lost, all after fn returns), as for a script's answers. */
typedef void (*dlock__renew_fn)(dlock_rlock *l, dlock__renewal *holds, size_t n,
                                int64_t lease_ms);

#define DLOCK__RENEWED 1     /* renewed: the hold is still held */
#define DLOCK__RENEW_GONE 0  /* no longer held: lost, if it was settled */
#define DLOCK__RENEW_FAILED (-1) /* could not tell: retried next period */

struct dlock__renewal {
    uint64_t id;       /* the hold's (ids are never reused) */
    uint64_t changes;  /* the hold's change count when collected */
    int settled;       /* held, and no call changing it, when collected */
    dlock_rlock *lock; /* compared, never dereferenced outside the
                        * registry's mutex, but by its own fn */
    const dlock_script *script;
    dlock__renew_fn fn; /* NULL: script, batched */
    unsigned slot;      /* dlock_backend_key_slot of name (script only) */
    char *name;
    char owner[DLOCK_OWNER_MAX];
    int renewed;        /* the answer: DLOCK__RENEWED, ... */
};

/* One hold: owner holds lock object l (made through this client). */
typedef struct dlock__hold {
    struct dlock__hold *next_bucket;
    struct dlock__hold *prev, *next; /* all holds, for the watchdog */
    /* The holds of the same lock object, so that freeing a handle costs
     * its own holds, not all of the client's. The first of a chain (no
     * lock_prev) is the one the per-lock index finds, through
     * next_lock_bucket. */
    struct dlock__hold *lock_prev, *lock_next, *next_lock_bucket;
    dlock_rlock *lock;               /* borrowed; entries go before l */
    char owner[DLOCK_OWNER_MAX];
    uint64_t id;                     /* tells a reused slot from the old */
    int64_t count;                   /* local acquisitions not yet released */
    int acquiring;                   /* acquisition attempts under way */
    int releasing;                   /* releases under way */
    uint64_t changes;                /* acquisitions and releases begun */
    int64_t lease_ms;                /* of the latest acquisition */
    const dlock_script *renew;       /* non-NULL while the watchdog renews */
    dlock__renew_fn renew_fn;        /* with renew: the type's own renewal
                                      * (NULL: renew, batched) */
    /* renew was set by a lease-0 attempt still unanswered, on a hold that
     * was not watchdog-renewed: a refusal (a non-reentrant type's holder
     * asking again) sets it back, so a refused call changes no lease */
    int renew_tentative;
    int64_t renew_since_ms;          /* for max_hold_ms */
    int64_t held_since_ms;           /* when count went from 0 to 1 */
    int lost;                        /* reported lost (counted once) */
    int64_t token;                   /* of the latest acquisition, for a
                                      * type that keeps its fencing token
                                      * here (a Redlock); else 0 */
} dlock__hold;

typedef struct dlock__holds {
    pthread_mutex_t mutex;
    dlock__hold **buckets;      /* by (lock object, owner) */
    dlock__hold **lock_buckets; /* by lock object: the first of its chain */
    size_t nbuckets, count;     /* both tables have nbuckets */
    dlock__hold head; /* sentinel of the all-holds list */
    uint64_t next_id;
    /* The lock object whose renew_fn the watchdog is running (NULL: none);
     * forgetting its holds waits on renewed until it is done. */
    dlock_rlock *renewing;
    pthread_cond_t renewed;
} dlock__holds;

/* A call blocked in dlock_rlock_wait, registered with its client so that
 * dlock_client_cancel_waits can wake it. Lives on the waiter's stack. */
typedef struct dlock__waiter {
    dlock_signal *sig; /* NULL until registered */
    uint64_t gen;      /* the client's cancel generation when the call began */
    struct dlock__waiter *prev, *next;
} dlock__waiter;

/* op.c: one call of the generic API, from its start to its answer: what
 * every step of it needs and no thread may keep for it (api/dlock/sys/
 * rlock.h: dlock_op). Lives with its starter (the blocking caller's
 * stack); every script call made for it gets it. */
struct dlock_op {
    const char *owner;    /* the owner id the call acts for (borrowed) */
    /* When the call's wait ends (dlock_rlock_wait sets it; INT64_MAX: no
     * limit), and when every round trip made for it must end: the wait's
     * deadline plus the client's budget_slack_ms, or a nearer one a step
     * sets (a Redlock's node timeout). INT64_MAX: the backend's own
     * timeouts only. On the backend's clock. */
    int64_t deadline_ms;
    int64_t cap_ms;
    /* Replica sync (api/dlock/redis.h: sync_replicas): inside a judged
     * region (an acquisition's attempts, a release) a script that ran but
     * could not be synced succeeds with its reply, and the shortfall is
     * noted here for the caller above to judge. */
    int judging;
    int unsynced;
    char sync_detail[200];
    /* The call's last failure recorded by its script calls and its wait:
     * the code, and its detail (as dlock_errmsg shows it on the lock
     * object) into detail (detail_len bytes) when the op's starter gave a
     * buffer (NULL: the lock object's detail is the one read; a blocking
     * caller reads it there). */
    int code;
    char *detail;
    size_t detail_len;
};

/* An op for owner: no deadline, no cap, not judged, no failure. */
void dlock__op_init(dlock_op *op, const char *owner);
/* The cap of op's round trips; INT64_MAX for NULL. */
int64_t dlock__op_cap(const dlock_op *op);
/* Narrows op's cap to cap_ms when nearer; returns the cap to restore with
 * dlock__op_cap_restore (nested steps keep the nearer deadline). */
int64_t dlock__op_cap_within(dlock_op *op, int64_t cap_ms);
void dlock__op_cap_restore(dlock_op *op, int64_t outer);
/* A step of parent's run apart from it (a Redlock's node, possibly on
 * another thread): parent's owner and judging, its own notes, cap_ms
 * within parent's cap. parent may be NULL (owner then NULL). Merge its
 * sync note back with dlock__op_merge on parent's thread. */
void dlock__op_child(dlock_op *child, const dlock_op *parent, int64_t cap_ms);
void dlock__op_merge(dlock_op *parent, const dlock_op *child);
/* A region whose writes the caller judges (see judging above): begin
 * returns the outer state and clears notes; end restores it and says
 * whether a shortfall was noted (its detail into detail, len bytes;
 * detail may be NULL). */
int dlock__op_judge_begin(dlock_op *op);
int dlock__op_judge_end(dlock_op *op, int outer, char *detail, size_t len);
/* Forgets a note (before each attempt: an earlier refused attempt's
 * shortfall is not this one's). */
void dlock__op_clear_note(dlock_op *op);
/* In a judged region of op: notes detail and returns 1 (the eval hands
 * its reply on as a success); else 0. op may be NULL. */
int dlock__op_judged(dlock_op *op, const char *detail);
/* Records code and the detail of l's last failure on op too (op may be
 * NULL); returns code. */
int dlock__op_note_failure(dlock_op *op, const dlock_rlock *l, int code);
/* Runs a release slot in a judged region of op: its code, or DLOCK_ESYNC
 * (recorded on l) when it released without enough replicas. */
int dlock__op_release(dlock_rlock *l, dlock_op *op);

/* metrics.c: the client's figures (api/dlock/metrics.h), every field
 * updated with relaxed atomic additions. */
typedef struct dlock__metrics {
    uint64_t acquisitions, busy, renewals, renewal_failures, lost;
    dlock_histogram wait_ms, hold_ms;
} dlock__metrics;

/* Adds n to a counter of c's metrics. */
#define DLOCK__COUNT(c, field, n) \
    ((void)__atomic_add_fetch(&(c)->metrics.field, (uint64_t)(n), __ATOMIC_RELAXED))
/* One observation of ms (negative: 0) in h. */
void dlock__metrics_observe(dlock_histogram *h, int64_t ms);
/* The watchdog's push of c's figures, if the application asked for it. */
void dlock__metrics_push(dlock_client *c);

struct dlock_client {
    dlock_backend *backend;
    dlock_clock *clock; /* the backend's */
    char id[37];
    pid_t pid;
    dlock_client_options opts;

    /* Atomic, not under a mutex: a fork() child drops references (its
     * frees) and must not take a mutex a parent thread may have held at
     * the fork. */
    int refs;

    dlock__holds holds;

    /* Blocked waits (dlock__waiter), for dlock_client_cancel_waits. */
    pthread_mutex_t waits_mutex;
    dlock__waiter waits; /* sentinel */
    uint64_t cancel_gen; /* atomic; bumped by every cancel */

    /* the watchdog */
    pthread_t wd_thread;
    int wd_started;
    int wd_stop;     /* under holds.mutex */
    int wd_orphaned; /* under holds.mutex: the last reference went on the
                      * watchdog thread itself, which tears the client down */
    dlock_signal wd_signal;

    dlock__metrics metrics;
    dlock_metrics_fn metrics_push; /* under holds.mutex */
    void *metrics_push_arg;
};

/* client.c */
void dlock__client_ref(dlock_client *c);
void dlock__client_unref(dlock_client *c);
/* The end of a client whose last reference went on its own watchdog thread
 * (in on_lost): called by that thread once the callback has returned and it
 * will not touch c again. Detaches the thread and frees everything. */
void dlock__client_destroy_on_watchdog(dlock_client *c);

/* client.c: cancellable waits (dlock_client_cancel_waits). begin returns a
 * waiter holding the cancel generation at the start of a call (a cancel
 * from then on ends it);
 * add registers the signal the call sleeps on, so that a cancel raises it;
 * canceled says whether a cancel came since begin; end unregisters (before
 * the signal is destroyed). */
dlock__waiter dlock__waiter_begin(dlock_client *c);
void dlock__waiter_add(dlock_client *c, dlock__waiter *w, dlock_signal *sig);
int dlock__waiter_canceled(dlock_client *c, const dlock__waiter *w);
void dlock__waiter_end(dlock_client *c, dlock__waiter *w);
/* DLOCK_EFORKED when called in a fork() child of the client's process. */
int dlock__client_check(const dlock_client *c);
/* The calling thread's owner id into buf (DLOCK_OWNER_MAX bytes). */
void dlock__client_owner(const dlock_client *c, char *buf);
/* dlock_client_connect with the backend's own options (NULL: defaults;
 * see dlock_backend_open), for clients made from a configuration. */
int dlock__client_connect(dlock_client **out, const char *url,
                          const void *backend_opts,
                          const dlock_client_options *opts, char *errbuf,
                          size_t errlen);

/* holds.c */
/* dlock_hold_acquire_begin, with renew_fn (NULL: renew is a batched
 * script) for a type that renews its holds itself (dlock__renew_fn). */
int dlock__hold_acquire_begin(dlock_rlock *l, const char *owner, int64_t lease_ms,
                              const dlock_script *renew, dlock__renew_fn renew_fn);
/* dlock_hold_acquire_end, keeping token with an acquired hold. An
 * acquisition after the hold was lost starts a fresh hold (count 1). */
void dlock__hold_acquire_end(dlock_rlock *l, const char *owner, int64_t lease_ms,
                             int acquired, int64_t token);
/* Ends a release (dlock_hold_release_begin) of owner's hold of l: how as
 * for dlock_hold_release_end (DLOCK_HOLD_ONE never takes a hold below 0;
 * a lost hold's release, unless DLOCK_HOLD_FAILED, ends it whole), missing
 * when the backend said owner does not hold l (the hold is over: reported
 * lost, at unlock, if that is news). Returns whether the hold was
 * believed held (lost ones included); *lost (may be NULL) whether it had
 * been found lost before. */
int dlock__hold_release_end(dlock_rlock *l, const char *owner, int how,
                            int missing, int *lost);
/* Stamps owner's hold of l as changed (a call that is neither an
 * acquisition nor a release, such as a Redlock's extension): a renewal
 * collected before no longer answers for it (dlock__hold_current). */
void dlock__hold_stamp(dlock_rlock *l, const char *owner);
/* Whether w's hold is still the one collected, held and renewed, with no
 * call changing it since: what a renew_fn checks before a step that
 * acts on the hold (a Redlock setting a key again). */
int dlock__hold_current(dlock_rlock *l, const dlock__renewal *w);
/* The token of owner's hold of l (dlock__hold_acquire_end): 0, or
 * DLOCK_ENOTOWNER when not held (or lost). */
int dlock__hold_token(dlock_rlock *l, const char *owner, int64_t *out);
/* Marks owner's hold of l (when it matches id/changes, see watchdog.c;
 * id 0: any, by dlock_extend) lost: no more renewal, kept for DLOCK_ELOST.
 * Returns 1 when it was believed held and this is news (counted in the
 * metrics, logged), and then the callback to call (*fn may be NULL). */
int dlock__hold_lost(dlock_client *c, const dlock_rlock *l, const char *name,
                     const char *owner, uint64_t id, uint64_t changes,
                     dlock_lost_fn *fn, void **arg);
/* dlock_extend's end: owner's hold of l now has lease_ms (0: renewed by
 * the watchdog with renew and renew_fn from now on). */
void dlock__hold_extended(dlock_rlock *l, const char *owner, int64_t lease_ms,
                          const dlock_script *renew, dlock__renew_fn renew_fn);
/* The callback for the holds of l: l's own, else the client's. Under the
 * registry's mutex. */
void dlock__lost_callback(const dlock_rlock *l, dlock_lost_fn *fn, void **arg);

int dlock__holds_init(dlock__holds *h);
void dlock__holds_fini(dlock__holds *h);
/* dlock_hold_lease (api/dlock/sys/lock_type.h) under its internal name. */
#define dlock__hold_lease dlock_hold_lease
/* Forget every hold made through l (its handle is going away); waits
 * while the watchdog runs l's renew_fn. */
void dlock__holds_forget_lock(dlock__holds *h, dlock_rlock *l);
/* The watchdog's side of that: before running the renew_fn of list's
 * lock object, pins it (returns 0, pinning nothing, when none of list's
 * holds is in the registry any more: the handle may be gone); after,
 * unpins it. */
int dlock__holds_pin(dlock__holds *h, const dlock__renewal *list, size_t n);
void dlock__holds_unpin(dlock__holds *h);

/* a + b, saturated at INT64_MIN / INT64_MAX instead of overflowing. */
int64_t dlock__add_sat(int64_t a, int64_t b);

/* watchdog.c */
int dlock__watchdog_start(dlock_client *c);
/* Stops and joins the watchdog (never called on the watchdog thread). */
void dlock__watchdog_stop(dlock_client *c);
/* Whether the calling thread is c's watchdog (i.e. inside on_lost). */
int dlock__watchdog_is_current(const dlock_client *c);
/* From the watchdog thread: the last reference is gone; stop after the
 * current callback and call dlock__client_destroy_on_watchdog. */
void dlock__watchdog_orphan(dlock_client *c);

/* rlock.c: the checks every generic call makes before dispatching (see
 * api/dlock/sys/rlock.h): l usable, not in a fork() child, the owner
 * resolved into who (DLOCK__OWNER_SELF: the calling thread's; _GIVEN: owner,
 * which must be a proper id), out non-NULL (DLOCK__NO_OUT when the call has
 * none) and has_slot. 0 or the code, recorded as l's last failure. */
#define DLOCK__OWNER_SELF 0
#define DLOCK__OWNER_GIVEN 1
#define DLOCK__NO_OUT ((const void *)1)
int dlock__rlock_enter(dlock_rlock *l, int mode, const char *owner, char *who,
                       const void *out, const char *slot_name, int has_slot);
/* rlock.c: allocates size bytes (a type's struct, which starts with a
 * dlock_rlock) zeroed, and fills the base with dlock_rlock_init. 0 or its
 * errors, DLOCK_ENOMEM; on failure *out = NULL and nothing is left. */
int dlock__rlock_new(dlock_rlock **out, size_t size, const dlock_rlock_methods *m,
                     dlock_client *c, const char *name);
/* rlock.c: lease 0..DLOCK_TIME_MAX_MS; wait >= 0 (any: a longer wait than
 * DLOCK_TIME_MAX_MS saturates in the wait loop) or DLOCK_WAIT_FOREVER. 0 or
 * DLOCK_EINVAL. */
int dlock__rlock_check_times(dlock_rlock *l, int64_t wait_ms, int64_t lease_ms);
/* rlock.c: a duration argument called what: min_ms..DLOCK_TIME_MAX_MS
 * (api/dlock/times.h). 0 or DLOCK_EINVAL, recorded on l with the range. */
int dlock__time_arg(dlock_rlock *l, const char *what, int64_t ms, int64_t min_ms);
/* rlock.c: records the detail of a failed eval on l. */
int dlock__eval_fail(dlock_rlock *l, int code, const dlock_script *s,
                     const char *detail);
/* rlock.c: dlock_rlock_eval with binary-safe arguments (argvlen as in the
 * backend's eval; NULL = NUL-terminated strings), for stored values. */
int dlock__rlock_eval_bin(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                          const dlock_script *script, size_t nkeys, size_t nargs,
                          const char *const *argv, const size_t *argvlen);
/* rlock.c: dlock_rlock_eval in two halves, for a caller with calls on
 * several backends (a Redlock's nodes: objects/runtime/fanout.h): _send starts the
 * call for op (its cap; op may be NULL) (on a backend that cannot split
 * calls, dlock__rlock_can_split = 0, it makes the whole call); _receive
 * completes it with dlock_rlock_eval's result (a failure recorded on l as
 * dlock_rlock_eval's is, by whichever half saw it). h is the caller's;
 * every _send is followed by one _receive. */
typedef struct dlock__eval_half {
    const dlock_script *script;
    dlock_op *op;     /* the send's */
    dlock_pending *p; /* in flight; NULL: over (rc, r) */
    int rc;
    dlock_reply *r;
} dlock__eval_half;
int dlock__rlock_can_split(dlock_rlock *l);
void dlock__rlock_eval_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h,
                            const dlock_script *script, size_t nkeys,
                            size_t nargs, const char *const *argv);
int dlock__rlock_eval_receive(dlock_rlock *l, dlock__eval_half *h,
                              dlock_reply **out);
/* The receive of a call answered with an integer (dlock_rlock_eval_integer's
 * second half). */
int dlock__rlock_receive_integer(dlock_rlock *l, dlock__eval_half *h,
                                 int64_t *out);
/* rlock.c: dlock_rlock_eval_release in the same two halves. */
void dlock__rlock_release_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h,
                               const dlock_script *script, size_t nkeys,
                               size_t nargs, const char *const *argv);
int dlock__rlock_release_receive(dlock_rlock *l, dlock__eval_half *h);

/* rlock.c: frees r and records "unexpected reply" for script s:
 * DLOCK_EPROTO. */
int dlock__unexpected_reply(dlock_rlock *l, const dlock_script *s, dlock_reply *r);

/* wait.c: dlock_rlock_refused and dlock_retry_after
 * (api/dlock/sys/lock_type.h) under their internal names. */
#define dlock__attempt_refused dlock_rlock_refused
#define dlock__retry_after dlock_retry_after

/* reads.c: every lock type answers is_locked, is_held, hold_count and
 * remain_ttl from one read of its "state triple": {locked (> 0), owner's
 * hold count, remaining ms (-2 not locked, -1 no expiry)}. A type's read
 * fills st (owner "" when the read is not about an owner) and returns 0 or
 * a code. */
typedef int (*dlock__triple_fn)(dlock_rlock *l, const char *owner, int64_t st[3]);

/* The method table of a type that puts the dlock__triple_* readers in its
 * slots: the public table first (l->methods points at it), then the read
 * those readers call. */
typedef struct dlock__lock_methods {
    dlock_rlock_methods m;
    dlock__triple_fn triple;
} dlock__lock_methods;

/* The read slots of such a table (designated initializers). */
#define DLOCK__TRIPLE_READ_SLOTS                                              \
    .is_locked = dlock__triple_is_locked, .is_held = dlock__triple_is_held,   \
    .hold_count = dlock__triple_hold_count,                                   \
    .remain_ttl = dlock__triple_remain_ttl

/* Runs a script replying an array of three integers into st. 0 or a code
 * (DLOCK_EPROTO for any other reply). */
int dlock__eval_triple(dlock_rlock *l, int64_t st[3], const dlock_script *s,
                       size_t nkeys, size_t nargs, const char *const *argv);
/* The same answer for a call in two halves (dlock__rlock_eval_send). */
int dlock__receive_triple(dlock_rlock *l, dlock__eval_half *h, int64_t st[3]);
int dlock__triple_is_locked(dlock_rlock *l, int *out);
int dlock__triple_is_held(dlock_rlock *l, const char *owner, int *out);
int dlock__triple_hold_count(dlock_rlock *l, const char *owner, int64_t *out);
int dlock__triple_remain_ttl(dlock_rlock *l, int64_t *out);

/* hash_lock.c: what locks kept as a hash with a field per owner share: the
 * triple read, and the guard_field slot (the owner's own field). */
int dlock__hash_triple(dlock_rlock *l, const char *owner, int64_t st[3]);
/* Its first half (the second: dlock__receive_triple). */
void dlock__hash_triple_send(dlock_rlock *l, dlock__eval_half *h,
                             const char *owner);
int dlock__hash_guard_field(dlock_rlock *l, const char *owner, char *buf, size_t len);
/* The extend slot of those locks: hash_renew.lua for one owner. */
int dlock__hash_extend(dlock_rlock *l, const char *owner, int64_t lease_ms);

/* reentrant.c: the acquisition attempt (a dlock_attempt_fn), release and
 * force_unlock slots of the reentrant lock, for every hash lock that keeps
 * its layout and its channel (the fenced lock, the spin lock); l is a
 * dlock__object (object.h). */
int dlock__reentrant_attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                             int64_t lease_ms, int64_t *retry_ms);
int dlock__reentrant_release(dlock_rlock *l, dlock_op *op);
/* The release's first half (dlock__rlock_release_send; the second is
 * dlock__rlock_release_receive). */
void dlock__reentrant_release_send(dlock_rlock *l, dlock_op *op,
                                   dlock__eval_half *h);
int dlock__reentrant_force_unlock(dlock_rlock *l, int *existed);
/* The slots from release to remain_ttl of a lock kept in the reentrant
 * lock's hash (its table then ends with dlock__hash_triple). */
#define DLOCK__HASH_LOCK_SLOTS                                                \
    .release = dlock__reentrant_release,                                      \
    .force_unlock = dlock__reentrant_force_unlock, DLOCK__TRIPLE_READ_SLOTS

/* inspect.c: what every state slot (api/dlock/sys/rlock.h) shares. A slot
 * runs one read-only script, checks the reply's shape, then builds the
 * document with these and core/json_doc.h (OR the results into bad, check
 * once at the end). */
struct json_t;
/* Whether r is an array of the kinds given, one letter per element: 'i'
 * integer, 'b' bulk string, 'a' array. With repeated, the pattern repeats
 * over the whole array (any multiple of its length, 0 included). */
int dlock__reply_is(const dlock_reply *r, const char *kinds, int repeated);
/* A new document holding "type" (the method table's) and "name"; *bad is
 * set when out of memory. */
struct json_t *dlock__state_begin(const dlock_rlock *l, int *bad);
/* The n elements r->elems[i..i+n) (bulk strings and integers) as an object
 * {keys[0]: the first, ...}; NULL when out of memory. */
struct json_t *dlock__state_row(const dlock_reply *r, size_t i,
                               const char *const *keys, size_t n);
/* Every run of n elements of r as such an object, in an array; NULL when
 * out of memory. */
struct json_t *dlock__state_rows(const dlock_reply *r, const char *const *keys,
                                 size_t n);
/* A holder {"owner", "holds", "ttl_ms"} from the triple at r->elems[i..i+2]
 * (dlock__reply_is(r, "bii", 1)), and every triple of r as holders. NULL
 * when out of memory. */
struct json_t *dlock__state_holder(const dlock_reply *r, size_t i);
struct json_t *dlock__state_holders(const dlock_reply *r);
/* The lock fields every lock type reports: "locked" (ttl != -2), "ttl_ms"
 * and "holders" from holders' triples. 0 or -1. */
int dlock__state_lock(struct json_t *doc, int64_t ttl, const dlock_reply *holders);
/* The end of a slot: *out = doc and 0, or with bad set frees doc and
 * records DLOCK_ENOMEM. */
int dlock__state_end(dlock_rlock *l, struct json_t *doc, int bad, struct json_t **out);

/* inspect.c: the state slot of locks kept as a hash with a field per owner.
 * token_key (fenced lock) adds the latest token; queue and deadlines (fair
 * lock) add the waiters. Either may be NULL. */
int dlock__hash_state(dlock_rlock *l, struct json_t **out, const char *token_key,
                      const char *queue, const char *deadlines);
/* The state slot of the reentrant lock (no extras). */
int dlock__hash_state_plain(dlock_rlock *l, struct json_t **out);

/* The built-in types' method tables, so that lifetime.c knows a type by
 * its table (a user's type may carry any type name). */
extern const dlock_rlock_methods *const dlock__methods_reentrant;
extern const dlock_rlock_methods *const dlock__methods_spin;
extern const dlock_rlock_methods *const dlock__methods_fair;
extern const dlock_rlock_methods *const dlock__methods_rwlock_read;
extern const dlock_rlock_methods *const dlock__methods_rwlock_write;
extern const dlock_rlock_methods *const dlock__methods_semaphore_lock;
extern const dlock_rlock_methods *const dlock__methods_permit_semaphore;
extern const dlock_rlock_methods *const dlock__methods_latch;
extern const dlock_rlock_methods *const dlock__methods_redlock;
extern const dlock_rlock_methods *const dlock__methods_multilock;

/* fenced.c: the token counter's key if l is a fenced lock, else NULL. */
const char *dlock__fenced_token_key(const dlock_rlock *l);

#endif /* DLOCK_OBJECTS_INTERNAL_H */
