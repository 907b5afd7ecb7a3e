/*
 * dlock — which lock names are refused because their keys would be another
 * object's (names.c): the one table of every built-in type's derived keys.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_TYPES_NAMES_H
#define DLOCK_OBJECTS_TYPES_NAMES_H

#include <stddef.h>

#include "dlock/sys/methods.h"

/* The built-in types' derived keys (api/dlock/lock.h, "Reserved names"):
 * dlock_rlock_key(l, prefix, suffix) makes prefix + {N} + suffix. The
 * types build their keys from these, and names.c refuses the names of
 * their forms: one list. */
#define DLOCK__KEY_FAIR_QUEUE "redisson_lock_queue:"       /* prefix: fair */
#define DLOCK__KEY_FAIR_DEADLINES "redisson_lock_timeout:" /* prefix: fair */
#define DLOCK__KEY_FAIR_ALIVE "dlock_lock_alive:"          /* prefix: fair */
#define DLOCK__KEY_FENCED_TOKEN "redisson_lock_token:"     /* prefix: fenced */
#define DLOCK__KEY_OWNER "dlock_owner:"        /* prefix: a client's description */
#define DLOCK__KEY_HOLDERS ":holders"          /* suffix: semaphore lock */
#define DLOCK__KEY_LEASES ":lease:"            /* suffix + owner: semaphore lock */
#define DLOCK__KEY_PERMIT_EXPIRIES ":timeout"  /* suffix: permit semaphore */
#define DLOCK__KEY_PERMIT_EXPIRED ":expired"   /* suffix: permit semaphore */
/* the read-write lock's markers, "{N}:<owner>:rwlock_timeout:<k>", are made
 * by its scripts (rwlock_common.luainc) from "{N}" */
#define DLOCK__KEY_READ_MARKER ":rwlock_timeout:"

/* 0 when an object of type m (a built-in table or anyone's) may be called
 * name (n bytes); else DLOCK_EINVAL with the reason, naming the reserved
 * form the name matches, in why (len bytes, NUL-terminated). Never blocks;
 * reads nothing but its arguments. */
int dlock__name_check(const dlock_rlock_methods *m, const char *name, size_t n,
                      char *why, size_t len);

#endif /* DLOCK_OBJECTS_TYPES_NAMES_H */
