/*
 * dlock — the hold registry (holds.c): what each client believes its owners
 * hold, for the watchdog's renewals, lost holds and the hold counts.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_HOLDS_H
#define DLOCK_OBJECTS_RUNTIME_HOLDS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/methods.h"

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
    unsigned node;      /* dlock_backend_key_node of name (script only) */
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
    /* A growth's old arrays (old_n buckets, 0: none), whose buckets below
     * moved are empty: the rest move a few per insertion (holds.c). */
    dlock__hold **old_buckets, **old_lock_buckets;
    size_t old_n, moved;
    dlock__hold head; /* sentinel of the all-holds list */
    uint64_t next_id;
    /* The lock object whose renew_fn the watchdog is running (NULL: none);
     * forgetting its holds waits on renewed until it is done. */
    dlock_rlock *renewing;
    pthread_cond_t renewed;
} dlock__holds;

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
/* The holds owner believes it has of l (a lost hold: 0), as an
 * acquisition's retry tells its script (dlock__acquire_retry_arg). */
int64_t dlock__hold_count_local(dlock_rlock *l, const char *owner);
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
/* Forget every hold made through l (its handle is going away); waits
 * while the watchdog runs l's renew_fn. */
void dlock__holds_forget_lock(dlock__holds *h, dlock_rlock *l);
/* The watchdog's side of that: before running the renew_fn of list's
 * lock object, pins it (returns 0, pinning nothing, when none of list's
 * holds is in the registry any more: the handle may be gone); after,
 * unpins it. */
int dlock__holds_pin(dlock__holds *h, const dlock__renewal *list, size_t n);
void dlock__holds_unpin(dlock__holds *h);

#endif /* DLOCK_OBJECTS_RUNTIME_HOLDS_H */
