/*
 * dlock — what the lock types kept as a hash with a field per owner share
 * (the reentrant lock's layout): hash_lock.c's triple read, guard field and
 * extend, and reentrant.c's attempt, release and force_unlock slots.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_TYPES_HASH_LOCK_H
#define DLOCK_OBJECTS_TYPES_HASH_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/lock_type.h"
#include "dlock/sys/methods.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"

/* hash_lock.c: what locks kept as a hash with a field per owner share: the
 * triple read, and the guard_field slot (the owner's own field). */
int dlock__hash_triple(dlock_rlock *l, const char *owner, int64_t st[3]);
/* Its first half (the second: dlock__receive_triple). */
void dlock__hash_triple_send(dlock_rlock *l, dlock__eval_half *h,
                             const char *owner);
int dlock__hash_guard_field(dlock_rlock *l, const char *owner, char *buf, size_t len);
/* The extend slot of those locks: hash_renew.lua for one owner. */
int dlock__hash_extend(dlock_rlock *l, const char *owner, int64_t lease_ms);

/* reentrant.c: the acquisition attempt (a dlock_attempt_fn), release and
 * force_unlock slots of the reentrant lock, for every hash lock that keeps
 * its layout and its channel (the fenced lock, the spin lock); l is a
 * dlock_object_base (api/dlock/sys/lock_type.h). */
int dlock__reentrant_attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                             int64_t lease_ms, int64_t *retry_ms);
int dlock__reentrant_release(dlock_rlock *l, dlock_op *op);
/* The release's first half (dlock__rlock_release_send; the second is
 * dlock__rlock_release_receive). */
void dlock__reentrant_release_send(dlock_rlock *l, dlock_op *op,
                                   dlock__eval_half *h);
int dlock__reentrant_force_unlock(dlock_rlock *l, int *existed);
/* The whole table (a dlock__lock_methods) of such a lock: its type name and
 * its acquire, destroy and state slots; the rest is the reentrant lock's
 * layout (its release and force unlock, the triple read (its table then
 * ends with dlock__hash_triple), the owner's own field as the guard
 * field, hash_renew.lua as extend). */
#define DLOCK__HASH_LOCK_TABLE(type_, acquire_, destroy_, state_)            \
    {{.version = DLOCK_RLOCK_METHODS_VERSION,                                 \
      .type = (type_),                                                        \
      .acquire = (acquire_),                                                  \
      .release = dlock__reentrant_release,                                    \
      .force_unlock = dlock__reentrant_force_unlock,                          \
      DLOCK__TRIPLE_READ_SLOTS,                                               \
      .destroy = (destroy_),                                                  \
      .state = (state_),                                                      \
      .guard_field = dlock__hash_guard_field,                                 \
      .extend = dlock__hash_extend},                                          \
     dlock__hash_triple}

#endif /* DLOCK_OBJECTS_TYPES_HASH_LOCK_H */
