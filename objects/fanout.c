/*
 * dlock — one step on several lock objects at once (fanout.h).
 *
 * One short-lived thread per node and round: a round is one script call
 * per node (about a network round trip), and creating and joining a thread
 * costs some tens of microseconds, so a pool would save little and would
 * need threads parked for every Redlock handle in the process.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "fanout.h"
#include "internal.h"

#define STACK_SLOTS 16

typedef struct slot {
    dlock__fanout_fn fn;
    void *ctx;
    size_t i;
    int64_t deadline; /* the caller's budget */
    pthread_t th;
    int started;
} slot;

static void run(slot *s)
{
    int64_t outer = dlock__budget_enter(s->deadline);

    s->fn(s->ctx, s->i);
    dlock__budget_leave(outer);
}

static void *slot_main(void *arg)
{
    run(arg);
    return NULL;
}

void dlock__fanout(size_t n, dlock__fanout_fn fn, void *ctx)
{
    slot stack[STACK_SLOTS], *slots = n <= STACK_SLOTS ? stack : calloc(n, sizeof(*slots));
    int64_t deadline = dlock__budget_deadline();
    size_t i;

    if (!slots) {
        /* out of memory: one after the other, still within the budget */
        for (i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    for (i = 0; i < n; i++) {
        slots[i].fn = fn;
        slots[i].ctx = ctx;
        slots[i].i = i;
        slots[i].deadline = deadline;
        slots[i].started = i > 0 &&
                           pthread_create(&slots[i].th, NULL, slot_main, &slots[i]) == 0;
    }
    for (i = 0; i < n; i++)
        if (!slots[i].started)
            run(&slots[i]);
    for (i = 0; i < n; i++)
        if (slots[i].started)
            pthread_join(slots[i].th, NULL);
    if (slots != stack)
        free(slots);
}
