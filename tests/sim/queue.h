/*
 * Simulator: a queue of things due at a virtual time (a binary heap on
 * (due, order of arrival)), so that equal times keep the order they were
 * scheduled in and a run never depends on how the heap breaks ties.
 */
#ifndef DLOCK_SIM_QUEUE_H
#define DLOCK_SIM_QUEUE_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_item {
    int64_t due;
    uint64_t seq; /* set by sim_queue_push */
    int kind;
    int a, b;
    int64_t x;
    void *p;
} sim_item;

typedef struct sim_queue {
    sim_item *q;
    size_t n, cap;
    uint64_t seq;
} sim_queue;

void sim_queue_push(sim_queue *q, sim_item it);
sim_item sim_queue_pop(sim_queue *q); /* q->n > 0 */
static inline int64_t sim_queue_next(const sim_queue *q)
{
    return q->n ? q->q[0].due : INT64_MAX;
}
/* Removes the items keep says no to, passing each to drop (may be NULL). */
void sim_queue_filter(sim_queue *q, int (*keep)(const sim_item *, void *), void *arg,
                      void (*drop)(sim_item *));
void sim_queue_fini(sim_queue *q, void (*drop)(sim_item *));

#endif /* DLOCK_SIM_QUEUE_H */
