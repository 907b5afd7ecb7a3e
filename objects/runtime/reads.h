/*
 * dlock — the state-triple reads (reads.c) that answer is_locked, is_held,
 * hold_count and remain_ttl for a lock type.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_READS_H
#define DLOCK_OBJECTS_RUNTIME_READS_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/backend.h"
#include "dlock/sys/methods.h"
#include "objects/runtime/base.h"

/* reads.c: every lock type answers is_locked, is_held, hold_count and
 * remain_ttl from one read of its "state triple": {locked (> 0), owner's
 * hold count, remaining ms (-2 not locked, -1 no expiry)}. A type's read
 * fills st (owner "" when the read is not about an owner) and returns 0 or
 * a code. */
typedef int (*dlock__triple_fn)(dlock_rlock *l, const char *owner, int64_t st[3]);

/* The method table of a type that puts the dlock__triple_* readers in its
 * slots: the public table first (l->methods points at it), then the read
 * those readers call. */
typedef struct dlock__lock_methods {
    dlock_rlock_methods m;
    dlock__triple_fn triple;
} dlock__lock_methods;

/* The read slots of such a table (designated initializers). */
#define DLOCK__TRIPLE_READ_SLOTS                                              \
    .is_locked = dlock__triple_is_locked, .is_held = dlock__triple_is_held,   \
    .hold_count = dlock__triple_hold_count,                                   \
    .remain_ttl = dlock__triple_remain_ttl

/* Runs a script replying an array of three integers into st. 0 or a code
 * (DLOCK_EPROTO for any other reply). */
int dlock__eval_triple(dlock_rlock *l, int64_t st[3], const dlock_script *s,
                       size_t nkeys, size_t nargs, const char *const *argv);
/* The same answer for a call in two halves (dlock__rlock_eval_send). */
int dlock__receive_triple(dlock_rlock *l, dlock__eval_half *h, int64_t st[3]);
int dlock__triple_is_locked(dlock_rlock *l, int *out);
int dlock__triple_is_held(dlock_rlock *l, const char *owner, int *out);
int dlock__triple_hold_count(dlock_rlock *l, const char *owner, int64_t *out);
int dlock__triple_remain_ttl(dlock_rlock *l, int64_t *out);

#endif /* DLOCK_OBJECTS_RUNTIME_READS_H */
