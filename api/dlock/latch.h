/*
 * dlock — the count-down latch: awaiters block until the count reaches zero.
 *
 * Redisson-compatible layout: the count is a string integer at name (absent
 * = 0: the latch is open). Messages on
 * "redisson_countdownlatch__channel__{name}" -- always with these braces,
 * even for a name that holds braces of its own ("{app}latch" gives
 * "redisson_countdownlatch__channel__{{app}latch}"), as Redisson does: the
 * one exception to the rule that braces are not added twice. Messages:
 * "1" when a count is set, "0" when it reaches zero (or the latch is
 * deleted); the count is deleted when it reaches zero, so the latch can be
 * set again.
 *
 * Every awaiter is released at zero: each one looks at the count again on
 * the "0" message, so none is left behind whichever client it runs on. (An
 * awaiter whose look comes after the latch was already set again waits for
 * the new count, as in Redisson: reuse a name only once its awaiters are
 * through.)
 *
 * Errors: every call may also return DLOCK_EINVAL (nothing changed),
 * DLOCK_ECONN / DLOCK_ETIMEDOUT (backend unreachable or slow; for await, a
 * timeout is also the normal "not yet" answer), DLOCK_EPROTO (another type of
 * value, or a string that is not an integer, under name: nothing changed) and
 * DLOCK_EFORKED; dlock_latch_errmsg() tells the detail.
 *
 * A call that waits may also return DLOCK_ECANCELED: its client's
 * dlock_client_cancel_waits or dlock_client_free ended the wait
 * (api/dlock/client.h).
 *
 * Thread-safety: a latch object may be used by any number of threads at once.
 */
#ifndef DLOCK_LATCH_H
#define DLOCK_LATCH_H

#include "export.h"

#include "types.h"

#include <stdint.h>

#include "client.h"
#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_latch dlock_latch;

/* Creates a handle for the latch called name (1..DLOCK_NAME_MAX bytes). Does
 * not touch the backend. Keeps c alive. 0, DLOCK_EINVAL, DLOCK_ENOMEM,
 * DLOCK_EFORKED. */
DLOCK_API int dlock_latch_new(dlock_latch **out, dlock_client *c, const char *name);

/* Releases local resources only. NULL is a no-op. */
DLOCK_API void dlock_latch_free(dlock_latch *l);

/* The name (borrowed); NULL for NULL. */
DLOCK_API const char *dlock_latch_name(const dlock_latch *l);

/* The detail of the last failure of a call on l (per-thread copy). */
DLOCK_API const char *dlock_latch_errmsg(dlock_latch *l);

/* Sets the count (>= 1; a count of 0 is an open latch, which is no latch)
 * if the latch is open (no count stored). *out (may be NULL): 1 set, 0 a
 * count was already there (unchanged). */
DLOCK_API int dlock_latch_try_set_count(dlock_latch *l, int *out, int64_t count);

/* One count less; at zero the count is deleted and every awaiter released.
 * On an open latch: nothing happens. One round trip. */
DLOCK_API int dlock_latch_count_down(dlock_latch *l);

/* The count (0 when open). One read. */
DLOCK_API int dlock_latch_count(dlock_latch *l, int64_t *out);

/* Blocks until the count is zero (at once if it is). While the backend is
 * unreachable it keeps retrying. 0 or an error. */
DLOCK_API int dlock_latch_await(dlock_latch *l);

/* Waits up to timeout_ms (>= 0; 0 = one look; above DLOCK_TIME_MAX_MS, no
 * time limit in effect) for the count to reach zero: 0, or DLOCK_ETIMEDOUT
 * when it did not. */
DLOCK_API int dlock_latch_await_for(dlock_latch *l, int64_t timeout_ms);

/* Deletes the count, releasing every awaiter. *out (may be NULL): 1 a count
 * was there, 0 the latch was open. */
DLOCK_API int dlock_latch_delete(dlock_latch *l, int *out);

/* ---- introspection ------------------------------------------------------ */

struct json_t; /* Jansson's json_t (api/dlock/codec.h) */

/*
 * The latch's state as stored, as a JSON object (as dlock_rlock_state in
 * api/dlock/lock.h, which tells the ownership of *out and the text form):
 *   "type":  "latch"
 *   "name":  its name
 *   "count": the count (0: open)
 * One round trip, no side effects. 0 or an error; *out is NULL on failure.
 */
DLOCK_API int dlock_latch_state(dlock_latch *l, struct json_t **out);
DLOCK_API int dlock_latch_state_text(dlock_latch *l, char **out);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_LATCH_H */
