/*
 * dlock — what one type asks of another: the fenced lock's token key
 * (bucket.c's guarded set, redlock.c's fenced members). What the rest of
 * objects/ knows of every type is its descriptor (type.h).
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_TYPES_METHODS_H
#define DLOCK_OBJECTS_TYPES_METHODS_H

#include "dlock/sys/methods.h"

/* fenced.c: the token counter's key if l is a fenced lock, else NULL. */
const char *dlock__fenced_token_key(const dlock_rlock *l);

#endif /* DLOCK_OBJECTS_TYPES_METHODS_H */
