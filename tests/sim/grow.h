/*
 * Simulator: the growing arrays (history, operations, holds, queues):
 * room for one more element, doubling; out of memory ends the program
 * (a simulator has nothing sensible to do without its history).
 */
#ifndef DLOCK_SIM_GROW_H
#define DLOCK_SIM_GROW_H

#include <stdlib.h>

/* p with room for element n (elements of size bytes, *cap of them):
 * p = sim_grow(p, &cap, n, sizeof(*p)). */
static inline void *sim_grow(void *p, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return p;
    *cap = *cap ? *cap * 2 : 256;
    if (!(p = realloc(p, *cap * size)))
        abort();
    return p;
}

#endif /* DLOCK_SIM_GROW_H */
