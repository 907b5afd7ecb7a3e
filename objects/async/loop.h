/*
 * dlock — the asynchronous loop's private parts (loop.c), shared with the
 * starters (starters.c).
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_ASYNC_LOOP_H
#define DLOCK_OBJECTS_ASYNC_LOOP_H

#include <stdint.h>

#include "dlock/async.h"
#include "dlock/sys/methods.h"

#include "core/fiber.h"
#include "objects/runtime/op.h"
#include "objects/runtime/pins.h"

/* One started operation, from its starter to its callback. */
typedef struct dlock__aop dlock__aop;

/* What the operation does, on its fiber, with its fields: set rc (and
 * value, ids); the detail of a failure is the one it recorded itself
 * (carried: allocated only then, most operations succeed and a pending
 * wait should cost little). */
typedef void (*dlock__aop_body)(dlock__aop *o);

struct dlock__aop {
    dlock_op_id id;
    dlock_loop *lp;
    dlock__aop_body body;
    /* Its start time and failure detail, for the blocking form on its
     * fiber (the fiber's data). */
    dlock__carried carried;
    /* A wait, cancelled by dlock_op_cancel, and undone when the loop is
     * freed while it ran (undo: NULL when a grant leaves nothing to undo). */
    int is_wait;
    void (*undo)(dlock__aop *o);
    /* It lets go of something (an unlock, an extend, a force unlock, a
     * release, a count-down): outside the loop's cap, and run on one of
     * the loop's reserved fibers when no fiber of its own can be had, so
     * that a holder can always let go. */
    int releases;
    dlock_done_fn fn;
    void *arg;
    void *obj;
    int64_t wait_ms, lease_ms, n;
    char *text; /* a copied id argument (a permit id), owned */

    dlock_result res;
    char *detail; /* a failure's, owned (NULL: none; set_detail) */

    /* loop.c's */
    dlock__fiber *fiber;
    struct dlock__worker *worker; /* the reserved fiber it runs on, or NULL */
    int begun;           /* its fiber was resumed once */
    int capped;          /* counted in the loop's cap */
    dlock__pin pin;      /* keeps obj alive until the callback has run */
    int state;
    int canceled;        /* read by the fiber (dlock__fiber_canceled) */
    dlock_signal *sig;   /* the signal it sleeps on, while parked */
    int io;              /* parked for a socket (DLOCK__FIBER_IO) */
    int io_fd;           /* that socket (-1: a timed nap alone) */
    int io_watched;      /* io_fd is armed in the loop's epoll set */
    int io_ready;        /* the set reported io_fd ready */
    dlock__aop *io_next; /* in the loop's list of socket waits */
    int64_t wake_ms;
    int64_t budget_end_ms; /* a wait's start + wait_ms (INT64_MAX: none) */
    size_t heap_i;       /* its place in the timer heap, or (size_t)-1 */
    dlock__aop *next;    /* in one of the loop's FIFOs */
    dlock__aop *hnext;   /* in the id table */
    char owner[];        /* the owner id it acts for ("" for none) */
};

/* A new operation of lp for owner (copied; NULL: none), zeroed, the id
 * not yet given. NULL: out of memory. */
dlock__aop *dlock__aop_new(dlock_loop *lp, const char *owner);
/* Admits o (the loop's cap: decided here, never later in a callback),
 * gives it its id, counts it pending and hands it to the loop (woken):
 * from here on, the loop owns it and serves it (a fiber of the pool when
 * it runs, or a reserved one); 0. Refused: DLOCK_EAGAIN (at the cap) or
 * DLOCK_ENOMEM, o discarded. */
int dlock__aop_start(dlock__aop *o, dlock_op_id *id);
/* Frees an operation that was never started. */
void dlock__aop_discard(dlock__aop *o);
/* How a starter takes its operation's fiber (dlock__fiber_new): a test
 * replaces it to see what a process out of stacks or mappings gets. */
extern int (*dlock__loop_fiber_new)(dlock__fiber **out, dlock__fiber_fn fn, void *arg);
/* The fibers lp's operations run on now (its pool, the reserved ones
 * apart): a parked wait holds none. The loop's thread's. */
size_t dlock__loop_fibers_in_use(dlock_loop *lp);
/* The most of them there were at once. */
size_t dlock__loop_fibers_peak(dlock_loop *lp);
/* The pool's cap (0: the default, 1 024); more operations queue for a
 * fiber. For the tests. */
void dlock__loop_set_fiber_cap(dlock_loop *lp, size_t cap);
/* Makes poll-mode loop lp run its client's watchdog (a client made while
 * dlock__watchdog_threadless was set: no watchdog thread) every
 * watchdog_timeout/3 of the client's clock, as loop work: its next time
 * counts in dlock_loop_timeout_ms (not in dlock_loop_pending), each
 * round runs at the start of a run, on_lost callbacks on the loop's
 * thread. For a deterministic single-threaded run (the simulator); not
 * public API. 0, or DLOCK_EINVAL (not poll mode, a client with its
 * thread, a period of 0). */
int dlock__loop_drive_watchdog(dlock_loop *lp);
/* The client of a loop. */
dlock_client *dlock__loop_client(const dlock_loop *lp);
/* Whether the loop is being freed (a grant is then undone). */
int dlock__loop_freeing(const dlock_loop *lp);

#endif /* DLOCK_OBJECTS_ASYNC_LOOP_H */
