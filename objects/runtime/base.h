/*
 * dlock — the generic calls' checks and the script calls of base.c
 * beyond api/dlock/sys/methods.h: entry checks, argument checks, binary and
 * two-half evals, unexpected replies.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_BASE_H
#define DLOCK_OBJECTS_RUNTIME_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/backend.h"
#include "dlock/sys/methods.h"

/* base.c: the checks every generic call makes before dispatching (see
 * api/dlock/sys/methods.h): l usable, not in a fork() child, the owner
 * resolved into who (DLOCK__OWNER_SELF: the calling thread's; _GIVEN: owner,
 * which must be a proper id), out non-NULL (DLOCK__NO_OUT when the call has
 * none) and has_slot. 0 or the code, recorded as l's last failure. */
#define DLOCK__OWNER_SELF 0
#define DLOCK__OWNER_GIVEN 1
#define DLOCK__NO_OUT ((const void *)1)
int dlock__rlock_enter(dlock_rlock *l, int mode, const char *owner, char *who,
                       const void *out, const char *slot_name, int has_slot);
/* base.c: allocates size bytes (a type's struct, which starts with a
 * dlock_rlock) zeroed, and fills the base with dlock_rlock_init. 0 or its
 * errors, DLOCK_ENOMEM; on failure *out = NULL and nothing is left. */
int dlock__rlock_new(dlock_rlock **out, size_t size, const dlock_rlock_methods *m,
                     dlock_client *c, const char *name);
/* base.c: lease 0..DLOCK_TIME_MAX_MS; wait >= 0 (any: a longer wait than
 * DLOCK_TIME_MAX_MS saturates in the wait loop) or DLOCK_WAIT_FOREVER. 0 or
 * DLOCK_EINVAL. */
int dlock__rlock_check_times(dlock_rlock *l, int64_t wait_ms, int64_t lease_ms);
/* base.c: a duration argument called what: min_ms..DLOCK_TIME_MAX_MS
 * (api/dlock/times.h). 0 or DLOCK_EINVAL, recorded on l with the range. */
int dlock__time_arg(dlock_rlock *l, const char *what, int64_t ms, int64_t min_ms);
/* base.c: records the detail of a failed eval on l. */
int dlock__eval_fail(dlock_rlock *l, int code, const dlock_script *s,
                     const char *detail);
/* base.c: dlock_rlock_eval with binary-safe arguments (argvlen as in the
 * backend's eval; NULL = NUL-terminated strings), for stored values. */
int dlock__rlock_eval_bin(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                          const dlock_script *script, size_t nkeys, size_t nargs,
                          const char *const *argv, const size_t *argvlen);
/* base.c: dlock_rlock_eval in two halves, for a caller with calls on
 * several backends (a Redlock's nodes: fanout.h): _send starts the
 * call for op (its cap; op may be NULL) (on a backend that cannot split
 * calls, dlock__rlock_can_split = 0, it makes the whole call); _receive
 * completes it with dlock_rlock_eval's result (a failure recorded on l as
 * dlock_rlock_eval's is, by whichever half saw it). h is the caller's;
 * every _send is followed by one _receive. */
typedef struct dlock__eval_half {
    const dlock_script *script;
    dlock_op *op;     /* the send's */
    dlock_pending *p; /* in flight; NULL: over (rc, r) */
    int rc;
    dlock_reply *r;
} dlock__eval_half;
int dlock__rlock_can_split(dlock_rlock *l);
void dlock__rlock_eval_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h,
                            const dlock_script *script, size_t nkeys,
                            size_t nargs, const char *const *argv);
int dlock__rlock_eval_receive(dlock_rlock *l, dlock__eval_half *h,
                              dlock_reply **out);
/* The receive of a call answered with an integer (dlock_rlock_eval_integer's
 * second half). */
int dlock__rlock_receive_integer(dlock_rlock *l, dlock__eval_half *h,
                                 int64_t *out);
/* base.c: dlock_rlock_eval_release in the same two halves. */
void dlock__rlock_release_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h,
                               const dlock_script *script, size_t nkeys,
                               size_t nargs, const char *const *argv);
int dlock__rlock_release_receive(dlock_rlock *l, dlock__eval_half *h);

/* base.c: frees r and records "unexpected reply" for script s:
 * DLOCK_EPROTO. */
int dlock__unexpected_reply(dlock_rlock *l, const dlock_script *s, dlock_reply *r);

#endif /* DLOCK_OBJECTS_RUNTIME_BASE_H */
