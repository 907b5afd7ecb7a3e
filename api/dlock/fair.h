/*
 * dlock — the fair lock: strict FIFO hand-off.
 *
 * Redisson-compatible layout: the lock hash at name (as the reentrant lock),
 * a wait queue "redisson_lock_queue:{name}" (list of owner ids) and the
 * waiters' deadlines "redisson_lock_timeout:{name}" (sorted set, absolute
 * wall-clock ms). Each waiter is woken on its own channel
 * "redisson_lock__channel:{name}:<owner>", so an unlock wakes only the first
 * in line. The hash, the queue and the deadlines hold owner ids and nothing
 * else, and each waiter's channel is the lock's plus ":<owner>": no owner id
 * is reserved (any of 1..DLOCK_OWNER_MAX - 1 bytes).
 *
 * A call that fails (a key of another type under one of the three names, a
 * hold count that is not an integer) changes nothing: dead waiters are
 * purged only by a call that gets past those checks.
 *
 * Semantics:
 *  - the lock goes to waiters in arrival order, across clients and processes;
 *    re-entry by the holder never queues; try_lock with wait 0 never queues;
 *  - a waiter's deadline is the moment it is presumed dead, and follows
 *    Redisson's rules, so that dlock and Redisson (Java) waiters can share a
 *    queue: a waiter joins with the deadline of the waiter in front of it (or
 *    the lock's expiry, when it is first) plus W; every acquisition from the
 *    queue moves every deadline W earlier; a waiter that gives up (its wait
 *    ran out) leaves at once and moves those behind it W earlier. W is the
 *    client's fair_wait_slack_ms whatever the call's own wait (Redisson's
 *    threadWaitTime; both default to 5 min): give every client sharing a fair
 *    lock, Java ones included, the same W;
 *  - a waiter first in line whose deadline passed is purged by the next
 *    operation, so a dead Java waiter blocks the queue for about W after the
 *    lease in front of it ends;
 *  - a dlock waiter is also presumed dead when it has not renewed its place
 *    for the client's fair_waiter_timeout_ms (L, default 5 s; 0: none, the
 *    deadline alone, as a Java waiter): each of its attempts writes "alive
 *    until now + L" into dlock's own sorted set "dlock_lock_alive:{name}"
 *    (Java clients neither read nor write it; it expires on its own and
 *    goes with the queue), at least every L/4. First in line with that
 *    passed, it is purged like a waiter whose deadline passed (the deadlines
 *    of the others stay as they are, as Redisson's purge leaves them), and
 *    the next in line, which looks again when it ends, takes the lock then:
 *    a dead dlock waiter (a process killed with kill -9, a lost network)
 *    stops blocking the queue at most L after its death, a Java waiter's
 *    rules and the queue's order unchanged. A stall of a live waiter longer
 *    than L (SIGSTOP) costs it the same as a purge by deadline (below). A
 *    purge that makes a new first in line while the lock is free wakes it;
 *    a forced unlock purges too, so it clears dead waiters first in line
 *    and wakes the first live one. A live dlock waiter looks again at least every
 *    second (every W/4 when that is shorter): it keeps its deadline at least W/2 ahead of the one it would get
 *    by joining now at its place (moving the waiters behind it along), so a
 *    holder that keeps the lock longer than W purges nobody; and if it finds
 *    itself purged anyway (a Java client whose clock runs ahead, or a
 *    different W), it goes back to the head of the queue -- the only place a
 *    live waiter is ever purged from -- within that second;
 *  - an unlock after the lease expired returns DLOCK_ELOST.
 *
 * Clock skew: deadlines are written with the writing client's wall clock
 * (the backend clock's wall_ms; the mock's virtual clock on the mock). A
 * client whose clock runs ahead by d purges other waiters d early; a dlock
 * waiter purged that way comes back to its place, but may have lost its turn
 * meanwhile: keep the clocks of the clients sharing a fair lock within W/2 of
 * each other.
 */
#ifndef DLOCK_FAIR_H
#define DLOCK_FAIR_H

#include "export.h"

#include "types.h"

#include "client.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a handle for the fair lock called name (1..DLOCK_NAME_MAX bytes).
 * Does not touch the backend. The handle keeps c alive.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_fair_new(dlock_rlock **out, dlock_client *c, const char *name);

/* Drops every waiter presumed dead (deadline passed, or a dlock waiter whose
 * liveness passed: the rules above) from the queue of the fair lock l,
 * wherever it stands in line, not only first (the purge every call makes);
 * the deadlines of the others stay as they are, and a new first in line is
 * woken when the lock is free. For an operator clearing a queue that
 * Java waiters killed with kill -9 block for up to W each. *out: how many
 * were dropped. One round trip. 0, DLOCK_EINVAL (NULL, not a fair lock),
 * or the errors of api/dlock/lock.h (DLOCK_EPROTO: a key of another type,
 * nothing changed). */
DLOCK_API int dlock_fair_clear_dead(dlock_rlock *l, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_FAIR_H */
