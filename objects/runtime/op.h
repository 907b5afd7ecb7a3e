/*
 * dlock — the operation context (op.c): struct dlock_op, its deadline and
 * cap, judged regions and failure notes.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_OP_H
#define DLOCK_OBJECTS_RUNTIME_OP_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/methods.h"

/* op.c: one call of the generic API, from its start to its answer: what
 * every step of it needs and no thread may keep for it (api/dlock/sys/
 * methods.h: dlock_op). Lives with its starter (the blocking caller's
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
    /* The call's last acquisition attempt got no answer (a transport
     * error): its script may have run and taken the hold, and the next
     * attempt tells the script so (dlock__acquire_retry_arg). */
    int unsure;
};

/* What an asynchronous operation carries into the blocking form that runs
 * it on a fiber (objects/async/loop.c makes it the fiber's data word): what
 * belongs to the operation, not to the object it works on, which other
 * operations share and change while this one has yielded. */
typedef struct dlock__carried {
    /* When its starter was called, on the client's clock: a wait's budget
     * counts from there, however long the operation waited for the loop
     * (taken by its first wait: INT64_MIN then). */
    int64_t start_ms;
    /* Its last failure's detail, as recorded on any object while it ran
     * (DLOCK_ERRMSG_MAX bytes, allocated at the first; NULL: none). */
    char *detail;
    /* A wait that parks without its fiber (wait.c, "Parked waits"): the
     * operation allows it for its object's wait (park_obj: its body is one
     * acquisition of that object whose code goes straight to its
     * callback; NULL: not), the wait's spec allows it (movable), and
     * while one is parked, its record and what the loop sleeps on
     * (park_sig, park_wake). */
    const void *park_obj;
    struct dlock__parked *parked;
    struct dlock_signal *park_sig;
    int64_t park_wake;
} dlock__carried;

/* What dlock_rlock_wait returns up to the operation's body when its wait
 * parked without its fiber (never seen outside the library): the body
 * returns, the fiber ends, and the loop runs the body again on a fiber
 * when the wait is woken (the wait then goes on from its record). */
#define DLOCK__PARKED (-1000)

/* The context carried by the fiber running on this thread; NULL outside
 * one (a blocking caller). */
dlock__carried *dlock__carried_here(void);
/* When a wait of wait_ms (> 0) that starts now on clk began: its
 * operation's start when the running fiber carries one not yet taken
 * (taken now), else now. A wait of 0 (one attempt) and a wait for ever
 * take nothing: the attempt is made whenever it runs. */
int64_t dlock__op_wait_start(dlock_clock *clk, int64_t wait_ms);

/* An op for owner: no deadline, no cap, not judged, no failure. */
void dlock__op_init(dlock_op *op, const char *owner);
/* Notes how an acquisition attempt's script call of op (may be NULL)
 * ended, rc its code: a transport error leaves op unsure (see unsure). */
void dlock__op_attempt_end(dlock_op *op, int rc);
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

/* a + b, saturated at INT64_MIN / INT64_MAX instead of overflowing. */
int64_t dlock__add_sat(int64_t a, int64_t b);

#endif /* DLOCK_OBJECTS_RUNTIME_OP_H */
