/*
 * dlock — the fair lock: strict FIFO hand-off.
 *
 * Redisson-compatible layout: the lock hash at name (as the reentrant lock),
 * a wait queue "redisson_lock_queue:{name}" (list of owner ids) and the
 * waiters' deadlines "redisson_lock_timeout:{name}" (sorted set, absolute
 * wall-clock ms). Each waiter is woken on its own channel
 * "redisson_lock__channel:{name}:<owner>", so an unlock wakes only the first
 * in line.
 *
 * Semantics:
 *  - the lock goes to waiters in arrival order, across clients and processes;
 *    re-entry by the holder never queues; try_lock with wait 0 never queues;
 *  - a waiter's deadline is the moment it is presumed dead: every attempt of a
 *    live waiter moves it to now + slack (slack = the try_lock wait when > 0
 *    and at most DLOCK_TIME_MAX_MS, else the client's fair_wait_slack_ms), and a live waiter attempts at
 *    least every slack/2. A waiter first in line whose deadline passed is
 *    purged by the next operation, so a dead waiter blocks the queue for at
 *    most its slack; a waiter that gives up (its wait ran out) leaves the queue
 *    at once, so nobody behind it waits for it;
 *  - an unlock after the lease expired returns DLOCK_ELOST.
 *
 * Clock skew: deadlines are written with the writing client's wall clock
 * (the backend clock's wall_ms; the mock's virtual clock on the mock). A
 * client whose clock runs ahead by d purges other waiters d early; keep the
 * clocks of the clients sharing a fair lock within slack/2 of each other, or a
 * live waiter may be purged and re-queued at the tail.
 */
#ifndef DLOCK_FAIR_H
#define DLOCK_FAIR_H

#include "types.h"

#include "client.h"
#include "rlock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a handle for the fair lock called name (1..DLOCK_NAME_MAX bytes).
 * Does not touch the backend. The handle keeps c alive.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
int dlock_fair_new(dlock_rlock **out, dlock_client *c, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_FAIR_H */
