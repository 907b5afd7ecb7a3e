/*
 * dlock — zeroed allocation for the per-call path.
 *
 * glibc's calloc never takes a chunk from the thread's cache (tcache): every
 * call walks the arena's bins under its lock, where malloc of a recently
 * freed size is a few instructions. The records made and freed on every
 * lock call (hold records, replies, multiplexed requests) therefore use
 * malloc and clear what they got. Everything else keeps calloc.
 *
 * GCC turns "malloc, then memset to 0" back into calloc; the empty asm
 * hides where the pointer came from, so the pair stays as written.
 */
#ifndef DLOCK_CORE_ALLOC_H
#define DLOCK_CORE_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* n bytes, zeroed, from malloc; NULL when out of memory. Free with free(). */
static inline void *dlock__zalloc(size_t n)
{
    void *p = malloc(n);

#if defined(__GNUC__)
    __asm__ volatile("" : "+r"(p));
#endif
    if (p != NULL)
        memset(p, 0, n);
    return p;
}

/* count elements of size bytes, zeroed; NULL on overflow or out of memory. */
static inline void *dlock__zalloc_array(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        return NULL;
    return dlock__zalloc(count * size);
}

#endif /* DLOCK_CORE_ALLOC_H */
