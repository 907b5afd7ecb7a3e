/*
 * dlock — running one step on several lock objects at once (the nodes of a
 * Redlock), so that a round costs the slowest node's round trip, not the
 * sum of them.
 *
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_FANOUT_H
#define DLOCK_OBJECTS_RUNTIME_FANOUT_H

#include <stddef.h>

/* Calls fn(ctx, i) for every i in [0, n) concurrently and returns when all
 * have returned: index 0 on the calling thread, the others on parked
 * worker threads of a process-wide pool (woken per call; an index no
 * worker can be had for runs on the calling thread afterwards). Nothing
 * of the calling thread goes with a call: what a step's round trips need
 * (the owner, their cap) is in ctx, in an op per index
 * (dlock__op_child), so they keep the caller's deadline whichever thread
 * makes them. */
typedef void (*dlock__fanout_fn)(void *ctx, size_t i);
void dlock__fanout(size_t n, dlock__fanout_fn fn, void *ctx);

/* A step in two halves: send(ctx, i) starts node i's round trip without
 * waiting for its reply, receive(ctx, i) completes it (dlock__rlock_eval_send
 * and _receive). split != 0 (every node's backend can split calls,
 * dlock__rlock_can_split): every send, then every receive, in index order
 * on the calling thread, so the round trips overlap without a thread per
 * node. split == 0: dlock__fanout of a step running both halves. */
void dlock__fanout_halves(size_t n, int split, dlock__fanout_fn send,
                          dlock__fanout_fn receive, void *ctx);

/* A handle that steps through dlock__fanout keeps the pool's workers alive
 * between its steps with one retain, and gives it back with one release
 * when freed; the last release joins every worker (may block for a worker
 * finishing its wake-up, never for a round trip: no step runs then). */
void dlock__fanout_retain(void);
void dlock__fanout_release(void);
/* The pool's workers now (for the tests: 0 in a fork() child). */
size_t dlock__fanout_workers(void);

#endif /* DLOCK_OBJECTS_RUNTIME_FANOUT_H */
