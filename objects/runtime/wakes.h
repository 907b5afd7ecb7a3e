/*
 * dlock — the client's wake queues (wakes.c): per channel, the client's
 * waiters in arrival order, one server subscription for them all, and the
 * rule that says whom a message wakes (dlock_wait_spec.wake).
 * Private to objects/.
 *
 * A message wakes as few waiters as can use it: an unlock the first
 * sleeper, a semaphore's count that many. The others sleep on; a woken
 * waiter that leaves without having made its attempt (timeout, cancel,
 * error) hands the wake to the next. What a message asks for is first
 * given to the waiters that will look anyway (about to attempt: they see
 * the state after the message), then to those whose attempt is under way
 * (it may have been sent before the release: it looks once more after its
 * refusal), and only then to sleepers, in arrival order.
 *
 * The floor against a noisy channel is the channel's, not each waiter's:
 * a message-caused attempt that was refused charges a token bucket
 * (GCRA: a burst of DLOCK__FLOOR_BURST, then one per DLOCK__FLOOR_MS), and
 * the next message-caused attempt waits while the bucket is empty; a
 * granted one charges nothing, so hand-offs are never slowed. (Charged
 * as refusals come back, the bucket lets attempts that pass it together
 * all go: a burst of at most one per waiter, after which the debt is
 * paid at one per DLOCK__FLOOR_MS.) Attempts a waiter's own timer makes
 * (the holder's TTL, its budget) are not floored, nor queued behind
 * anyone.
 *
 * Threads: every function may be called from any thread or fiber; no
 * mutex is held across a round trip. The table's mutex guards the table;
 * each channel has its own for its queue (waiters of different locks
 * never contend). The message callback runs on the backend's delivery
 * thread and raises waiters' signals under the channel's mutex (a leaving
 * waiter takes it too, so a signal is never raised after its wait
 * ended).
 */
#ifndef DLOCK_OBJECTS_RUNTIME_WAKES_H
#define DLOCK_OBJECTS_RUNTIME_WAKES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"

/* The floor: after DLOCK__FLOOR_BURST refused message-caused attempts in
 * a row, one per DLOCK__FLOOR_MS (messages meanwhile are coalesced into
 * the next allowed attempt). On the real-time clock only: on a virtual
 * clock time moves when its test says, and a deferred attempt would wait
 * for an advance nobody makes. */
#define DLOCK__FLOOR_MS 25
#define DLOCK__FLOOR_BURST 4

/* A bucket is a theoretical arrival time (0: full). When the next floored
 * attempt may go; and the charge of one refused attempt at now. */
int64_t dlock__floor_allowed(int64_t tat);
void dlock__floor_charge(int64_t *tat, int64_t now);

struct dlock__wake_chan;

/* One waiter's place in its channel's queue. Lives in the wait's state
 * (the waiter's stack or its fiber's); every field is under the channel's
 * mutex. */
typedef struct dlock__wake_entry {
    struct dlock__wake_chan *chan; /* NULL: not queued */
    struct dlock__wake_entry *prev, *next;
    dlock_signal *sig;
    int state;     /* asleep, pending (will attempt), in flight */
    int wakes;     /* a wake given and not yet spent by an attempt */
    int held;      /* the attempt under way (or retried) spends a wake */
    int listening; /* the channel's subscription was confirmed */
    uint64_t tried; /* the channel's message count at its last refused
                     * attempt that spent a wake */
} dlock__wake_entry;

/* A client's queues: a hash table of channels with waiters. */
typedef struct dlock__wakes {
    pthread_mutex_t mutex;
    struct dlock__wake_chan **buckets;
    size_t nbuckets, count;
} dlock__wakes;

/* 0 or DLOCK_ENOMEM. */
int dlock__wakes_init(dlock__wakes *t);
/* Every waiter must have left. */
void dlock__wakes_fini(dlock__wakes *t);

/* Queues e (zeroed by the caller) at the end of channel's queue on
 * backend b, pending, raised through sig; wake is the spec's
 * DLOCK_WAKE_*. 0 or DLOCK_ENOMEM. */
int dlock__wake_join(dlock__wakes *t, dlock__wake_entry *e, dlock_backend *b,
                     const char *channel, int wake, dlock_signal *sig);
/* Whether e's channel is subscribed: 1 yes; 0 another waiter is
 * subscribing it (sleep on the signal: it is raised when that ends); or
 * this call subscribed it and failed (a code, the detail in detail). May
 * block for the subscription's round trip, until cap. */
int dlock__wake_listen(dlock__wakes *t, dlock__wake_entry *e, int64_t cap,
                       char *detail, size_t len);

/* What dlock__wake_begin says. */
#define DLOCK__WAKE_GO 0    /* attempt now */
#define DLOCK__WAKE_SLEEP 1 /* nothing woke e: sleep again */
#define DLOCK__WAKE_DEFER 2 /* over the floor: sleep until *until, then ask again */

/* Before an attempt of e at now: timer says whether e's own timer (or a
 * back-off) ended its sleep; floor whether the floor applies (the
 * real-time clock). */
int dlock__wake_begin(dlock__wakes *t, dlock__wake_entry *e, int64_t now, int timer,
                      int floor, int64_t *until);
/* After a refused attempt: 1 when a message came meanwhile that e must
 * look again for (attempt again; it is pending), 0 when e sleeps (and,
 * with DLOCK_WAKE_COUNT, a wake it held went on to the next). */
int dlock__wake_refused(dlock__wakes *t, dlock__wake_entry *e, int64_t now);
/* After an attempt that ended in a transport error: e tries again after
 * its back-off, with the wake it held. */
void dlock__wake_retry(dlock__wakes *t, dlock__wake_entry *e);
/* Takes e out of its queue (no-op when not queued). granted: it got the
 * lock (its wake is spent); else a wake it held goes on to the next.
 * The last waiter of a channel unsubscribes it (may block briefly). */
void dlock__wake_leave(dlock__wakes *t, dlock__wake_entry *e, int granted);

#endif /* DLOCK_OBJECTS_RUNTIME_WAKES_H */
