/*
 * dlock — the head every built-in object shares: the RLock base and a
 * wake-up channel. The lock types use it as it is. The objects that are not
 * locks (the semaphore, the permit-expirable semaphore, the latch) are built
 * on the same base (api/dlock/sys/rlock.h) for its name, client reference,
 * script calls, wait loop and per-object error detail, with a method table
 * whose lock slots are all NULL: such an object is never handed out as a
 * dlock_rlock *, so the generic lock functions never see it. The semaphore
 * as a lock is a real lock type on the same head (for the shared channel).
 */
#ifndef DLOCK_OBJECTS_OBJECT_H
#define DLOCK_OBJECTS_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "objects/internal.h"

/* Room for any int64 in decimal, with sign and NUL. */
#define DLOCK__I64_SIZE 24

/* Writes v in decimal into buf (DLOCK__I64_SIZE bytes) and returns buf. */
char *dlock__i64(char *buf, int64_t v);

/* The head of every object: the base, then its wake-up channel. It is the
 * public object base (api/dlock/sys/lock_type.h), which a user's lock type
 * builds on too; the internal names below are the public functions. */
typedef dlock_object_base dlock__object;

/* dlock_object_base_new, _destroy and _wait. */
#define dlock__object_new dlock_object_base_new
#define dlock__object_destroy dlock_object_base_destroy

/* The check at the top of every call: 0, or DLOCK_EFORKED (recorded). The
 * object itself must have been checked for NULL. */
int dlock__object_check(dlock_rlock *b);

/* Checks a permit count or delta: |n| <= DLOCK_PERMITS_MAX, and n >= 0 unless
 * negative_ok. 0 or DLOCK_EINVAL (recorded, naming what). */
int dlock__object_count_arg(dlock_rlock *b, int64_t n, int negative_ok,
                            const char *what);

/* The command the scripts publish wake-up messages with on l's backend
 * (dlock_backend_publish_command: "publish", or "spublish" on Redis
 * Cluster): the last ARGV entry of every script that publishes
 * (objects/scripts/publish.luainc). Never blocks. */
const char *dlock__publish_cmd(const dlock_rlock *l);

/* dlock_wait_spec's undo slot. */
typedef int (*dlock__undo_fn)(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec);

/* dlock_rlock_wait for op on the object's channel, with attempt and undo
 * (NULL: the release slot; see dlock_wait_spec) and arg for them: the
 * acquire slot of most types. */
int dlock__object_wait(dlock_rlock *b, dlock_op *op, dlock_attempt_fn attempt,
                       dlock__undo_fn undo, void *arg, int64_t wait_ms,
                       int64_t lease_ms);

/* The lease an acquisition script sets, in decimal into buf
 * (DLOCK__I64_SIZE bytes): lease_ms, or with 0 (the watchdog renews the
 * hold) the watchdog's timeout. Returns buf. */
char *dlock__lease_arg(dlock_rlock *b, char *buf, int64_t lease_ms);

/* inspect.c: the public state calls of the objects that are not locks
 * (dlock_semaphore_state and the like): dlock_rlock_state and
 * dlock_rlock_state_text with the checks of those objects' own calls
 * instead of the lock entry checks. b may be NULL (DLOCK_EINVAL). */
struct json_t;
int dlock__object_state(dlock_rlock *b, struct json_t **out);
int dlock__object_state_text(dlock_rlock *b, char **out);

/* inspect.c: the state slot of an object kept as one integer at its name
 * (semaphore_inspect.lua): {"type", "name", field: the integer (0 when
 * absent), and with with_ttl "ttl_ms": its remaining time (-2 absent, -1 no
 * expiry)}. */
int dlock__count_state(dlock_rlock *b, struct json_t **out, const char *field,
                       int with_ttl);

#endif /* DLOCK_OBJECTS_OBJECT_H */
