/*
 * dlock — what the plain semaphore (semaphore.c) shares with the other
 * counted objects: the check of a permit count or delta against
 * DLOCK_PERMITS_MAX (api/dlock/semaphore.h).
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_TYPES_SEMAPHORE_H
#define DLOCK_OBJECTS_TYPES_SEMAPHORE_H

#include <stdint.h>

#include "dlock/sys/methods.h"

/* Checks a permit count or delta: |n| <= DLOCK_PERMITS_MAX, and n >= 0 unless
 * negative_ok. 0 or DLOCK_EINVAL (recorded, naming what). */
int dlock__object_count_arg(dlock_rlock *b, int64_t n, int negative_ok,
                            const char *what);

#endif /* DLOCK_OBJECTS_TYPES_SEMAPHORE_H */
