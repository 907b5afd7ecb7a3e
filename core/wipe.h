/*
 * dlock — wiping secrets (passwords, and every string that may hold one:
 * URLs, configuration texts, command buffers) before their memory goes
 * back to the allocator, where a later allocation, a core dump or a swap
 * page could show it.
 */
#ifndef DLOCK_CORE_WIPE_H
#define DLOCK_CORE_WIPE_H

#include <stddef.h>

/* Zeroes p[0..n) with a store the compiler may not drop as dead (a plain
 * memset before free may be). NULL or n 0: nothing. */
void dlock__wipe(void *p, size_t n);

/* Wipes the string s (up to its NUL) and frees it; NULL is a no-op. */
void dlock__wipe_free(char *s);

#endif /* DLOCK_CORE_WIPE_H */
