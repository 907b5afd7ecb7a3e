/*
 * dlock — the reentrant lock.
 *
 * Redisson-compatible layout: a hash at name with one field per owner
 * ("<uuid>:<tid>" = hold count); waiters are woken on
 * "redisson_lock__channel:{name}". Use it through api/dlock/lock.h.
 */
#ifndef DLOCK_REENTRANT_H
#define DLOCK_REENTRANT_H

#include "export.h"

#include "types.h"

#include "client.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates a handle for the reentrant lock called name (1..DLOCK_NAME_MAX
 * bytes, no NUL). Does not touch the backend. The handle keeps c alive.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_reentrant_new(dlock_rlock **out, dlock_client *c, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_REENTRANT_H */
