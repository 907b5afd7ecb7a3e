/*
 * dlock — the built-in types' method tables, by which lifetime.c tells
 * the built-in types apart, the fenced lock's token key (lifetime.c,
 * bucket.c's guarded set) and the fair lock's liveness key (lifetime.c).
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_TYPES_METHODS_H
#define DLOCK_OBJECTS_TYPES_METHODS_H

#include "dlock/sys/methods.h"

/* The built-in types' method tables, so that lifetime.c knows a type by
 * its table (a user's type may carry any type name). */
extern const dlock_rlock_methods *const dlock__methods_reentrant;
extern const dlock_rlock_methods *const dlock__methods_spin;
extern const dlock_rlock_methods *const dlock__methods_fair;
extern const dlock_rlock_methods *const dlock__methods_fenced;
extern const dlock_rlock_methods *const dlock__methods_rwlock_read;
extern const dlock_rlock_methods *const dlock__methods_rwlock_write;
extern const dlock_rlock_methods *const dlock__methods_semaphore_lock;
extern const dlock_rlock_methods *const dlock__methods_permit_semaphore;
extern const dlock_rlock_methods *const dlock__methods_latch;
extern const dlock_rlock_methods *const dlock__methods_redlock;
extern const dlock_rlock_methods *const dlock__methods_multilock;

/* fenced.c: the token counter's key if l is a fenced lock, else NULL. */
const char *dlock__fenced_token_key(const dlock_rlock *l);

/* fair.c: the dlock waiters' liveness key ("dlock_lock_alive:{name}") if l
 * is a fair lock, else NULL. */
const char *dlock__fair_alive_key(const dlock_rlock *l);

#endif /* DLOCK_OBJECTS_TYPES_METHODS_H */
