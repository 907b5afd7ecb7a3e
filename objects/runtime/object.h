/*
 * dlock — the head every built-in object shares: the RLock base and a
 * wake-up channel. The lock types use it as it is. The objects that are not
 * locks (the semaphore, the permit-expirable semaphore, the latch) are built
 * on the same base (api/dlock/sys/methods.h) for its name, client reference,
 * script calls, wait loop and per-object error detail, with a method table
 * whose lock slots are all NULL: such an object is never handed out as a
 * dlock_rlock *, so the generic lock functions never see it. The semaphore
 * as a lock is a real lock type on the same head (for the shared channel).
 *
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_OBJECT_H
#define DLOCK_OBJECTS_RUNTIME_OBJECT_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/lock_type.h"
#include "dlock/sys/methods.h"

/* Room for any int64 in decimal, with sign and NUL. */
#define DLOCK__I64_SIZE 24

/* Writes v in decimal into buf (DLOCK__I64_SIZE bytes) and returns buf. */
char *dlock__i64(char *buf, int64_t v);

/* The check at the top of every call: 0, or DLOCK_EFORKED (recorded). The
 * object itself must have been checked for NULL. */
int dlock__object_check(dlock_rlock *b);

/* The command the scripts publish wake-up messages with on l's backend
 * (dlock_backend_publish_command: "publish", or "spublish" on Redis
 * Cluster): the last ARGV entry of every script that publishes
 * (objects/scripts/publish.luainc). Never blocks. */
const char *dlock__publish_cmd(const dlock_rlock *l);

/* dlock_wait_spec's undo slot. */
typedef int (*dlock__undo_fn)(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec);

/* dlock_rlock_wait for op on the object's channel, waking as wake says
 * (DLOCK_WAKE_*: what the type's scripts publish), with attempt and undo
 * (NULL: the release slot; see dlock_wait_spec) and arg for them: the
 * acquire slot of most types. movable: the spec's (the caller returns
 * the code as it is, and arg holds nothing the wait must keep between
 * calls: arg_size 0). */
int dlock__object_wait(dlock_rlock *b, dlock_op *op, int wake, int movable,
                       dlock_attempt_fn attempt, dlock__undo_fn undo, void *arg,
                       int64_t wait_ms, int64_t lease_ms);

/* The lease an acquisition script sets, in decimal into buf
 * (DLOCK__I64_SIZE bytes): lease_ms, or with 0 (the watchdog renews the
 * hold) the watchdog's timeout. Returns buf. */
char *dlock__lease_arg(dlock_rlock *b, char *buf, int64_t lease_ms);

/* The retry argument of a reentrant acquisition script, in decimal into
 * buf (DLOCK__I64_SIZE bytes): "0" for an attempt after a definite answer
 * (or the first); after an attempt of op that got no answer (op->unsure:
 * a lost or late reply; its script may have run), the hold count owner's
 * field has when that attempt took the hold: the script then grants
 * without counting the hold twice (one unlock must free what one
 * acquisition took). It costs no round trip: the count is the client's
 * own. Returns buf. */
char *dlock__acquire_retry_arg(dlock_rlock *b, const dlock_op *op, char *buf);

#endif /* DLOCK_OBJECTS_RUNTIME_OBJECT_H */
