/*
 * dlock — running one step on several lock objects at once (the nodes of a
 * Redlock), so that a round costs the slowest node's round trip, not the
 * sum of them.
 */
#ifndef DLOCK_OBJECTS_FANOUT_H
#define DLOCK_OBJECTS_FANOUT_H

#include <stddef.h>

/* Calls fn(ctx, i) for every i in [0, n) concurrently and returns when all
 * have returned: index 0 on the calling thread, the others on threads of
 * their own (one per index per call; a thread that cannot be created runs
 * its index on the calling thread afterwards). Each call runs under the
 * calling thread's time budget (objects/budget.c), so a budgeted caller's
 * round trips stay within its deadline whichever thread makes them. */
typedef void (*dlock__fanout_fn)(void *ctx, size_t i);
void dlock__fanout(size_t n, dlock__fanout_fn fn, void *ctx);

#endif /* DLOCK_OBJECTS_FANOUT_H */
