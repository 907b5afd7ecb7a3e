/*
 * dlock — asynchronous operations: lock without parking a thread.
 *
 * A dlock_loop drives the asynchronous operations of one client. An
 * operation is started with an _async starter, named after its blocking
 * form and taking the blocking form's arguments (those of the _as form
 * where there is one); it returns at once, and its dlock_done_fn is called
 * once, later, on the loop's thread, with the result. Blocking and
 * asynchronous calls share the client, its connections (the multiplexed
 * connection carries both) and the code of every operation: an
 * asynchronous operation runs the blocking form's logic on a fiber of the
 * loop's thread, and where the blocking form would park its thread (a
 * wait for a release, a reply not yet read) the fiber steps aside and the
 * loop runs the others. A wait costs no thread: it sleeps in the loop's
 * timer list and wakes on the lock's pub/sub message, as a blocking wait
 * does. A round trip to a server costs no blocked thread either: the
 * operation waits for its reply on its socket, which the loop watches, so
 * a slow or stalled server holds up that operation (within its budget),
 * never the loop; so does a new subscription, whose confirmation the
 * operation waits for asleep. Memory: an operation holds a fiber (a
 * 256 kB stack, reserved, with a guard page) only while it runs a step (an
 * attempt, a round trip); the loop's fibers are a pool of at most 1 024,
 * for which further operations queue. A pending wait whose lock type's
 * wait spec is movable (api/dlock/sys/methods.h: dlock_wait_spec.movable;
 * the reentrant, fair, fenced, simple and spin locks, either read-write
 * half, the semaphore lock, a semaphore's acquire and a latch's await,
 * with a wait other than 0) holds no fiber while it sleeps: its state is
 * a heap record of a few hundred bytes, with its operation and the lock's
 * channel subscription about 1.5 kB, and no memory mapping, so a loop's
 * thread keeps a million of them. The others (Redlock, MultiLock, the
 * permit-expirable semaphore's acquire) keep their fiber, two memory
 * mappings each, while they wait (vm.max_map_count, 65 530 by default,
 * bounds a process to about 30 000 of those). A loop's cap
 * (dlock_loop_set_max_in_flight) refuses more at the starter, with
 * DLOCK_EAGAIN. (Still done on the loop's thread: a host
 * name's DNS lookup when a connection is opened; give the servers as IP
 * addresses where that matters.)
 *
 * Three ways to run a loop:
 *  - your loop (hook mode): dlock_loop_new(&lp, client, &hooks). dlock
 *    asks for what it needs through the hooks (one file descriptor to
 *    watch for readability, the same for the loop's life: an epoll set
 *    holding the sockets its operations wait on; one one-shot timer; a
 *    wake-up from any thread) and your loop calls
 *    dlock_loop_on_fd, dlock_loop_on_timer and dlock_loop_on_wakeup back,
 *    on its thread. dlock starts no thread for the loop. The adapters
 *    <dlock/adapters/libuv.h>, <dlock/adapters/libevent.h> and
 *    <dlock/adapters/libev.h> fill the hooks for those libraries.
 *  - poll mode: dlock_loop_new(&lp, client, NULL); poll dlock_loop_fd(lp)
 *    for readability with dlock_loop_timeout_ms(lp), and call
 *    dlock_loop_run(lp, 0); or let dlock_loop_run(lp, max_wait_ms) wait
 *    itself. On the mock with its virtual clock, a single-threaded test
 *    drives everything with dlock_vclock_advance and dlock_loop_run(lp, 0).
 *  - dlock's own thread: dlock_loop_new_thread(&lp, client). Callbacks run
 *    on that thread.
 *
 * Threads: starters and dlock_op_cancel may be called from any thread (a
 * starter called off the loop's thread wakes the loop). The loop's own
 * functions (dlock_loop_run, dlock_loop_on_*, dlock_loop_free) are called
 * by one thread at a time, the loop's. Callbacks run on the loop's thread,
 * never inside a starter and never under a lock of the library; a callback
 * may start, cancel and unlock other operations, and free the object it
 * got (after its last operation). A blocking dlock call made from inside a
 * callback (dlock_lock, dlock_unlock, any call that talks to the server)
 * returns DLOCK_EDEADLK: the loop cannot answer it while it waits.
 *
 * Owner ids: an acquisition (dlock_lock_async, dlock_fenced_lock_async)
 * started with owner NULL acts for a new owner id of its own, minted by
 * the starter as dlock_client_owner_new mints one and given in its
 * result (r->owner): two acquisitions started with the defaults never
 * share a hold, whichever threads start them (the calling thread's id
 * would be every request's on a loop's thread, and 200 requests would
 * all "hold" one reentrant lock at once). The calls that act for an
 * existing hold (dlock_unlock_async, dlock_extend_async,
 * dlock_is_held_async, dlock_hold_count_async) take that owner id and
 * refuse NULL (DLOCK_EINVAL). The request-handler pattern: copy r->owner
 * in the acquisition's callback and unlock with it; or mint one owner per
 * request (dlock_client_owner_new) and pass it to every call of the
 * request, on any thread (the blocking _as forms take it too), which also
 * lets the request re-enter its own hold. An explicit owner id is used as
 * given, as by the _as forms.
 *
 * Objects (the lock handles, semaphores, latches) are the application's,
 * and a pending operation keeps its object alive: freeing an object
 * (dlock_rlock_free, dlock_semaphore_free, ...) while operations on it are
 * pending, from any thread or from a callback, returns at once and leaves
 * it to them: its waits end with DLOCK_ECANCELED ("the object was freed
 * during the wait"; a grant that raced the free is released again, as at
 * dlock_loop_free), its other operations (unlocks, releases, reads)
 * complete, and the object is freed on the loop's thread after the last
 * of their callbacks has run. Do not start operations on it after the
 * free. The client must still outlive the loop.
 */
#ifndef DLOCK_ASYNC_H
#define DLOCK_ASYNC_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "latch.h"
#include "permit_semaphore.h"
#include "lock.h"
#include "semaphore.h"
#include "times.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dlock_loop dlock_loop;

/* Names one operation of a loop from its start to its callback (0 is
 * never an operation's). */
typedef uint64_t dlock_op_id;

/* An operation's answer, valid for the duration of its callback. */
typedef struct dlock_result {
    int rc;             /* 0 or a DLOCK_E* code, as the blocking form's */
    const char *detail; /* one line: "" on success, else the detail this
                         * operation recorded (what the object's errmsg
                         * said right after its failure; other operations
                         * on the object do not change it), or the code's
                         * own text when it recorded none */
    /* The blocking form's out-parameter, when it has one: the fencing
     * token (dlock_fenced_lock_async), whether it existed
     * (dlock_force_unlock_async), the boolean of is_locked / is_held, the
     * count of hold_count, the TTL of remain_ttl, the number of permit ids
     * (dlock_permit_semaphore_acquire_async). 0 otherwise. */
    int64_t value;
    /* dlock_permit_semaphore_acquire_async: the ids (value of them, then
     * NULL), freed with dlock_permit_ids_free once the callback returns,
     * unless the callback takes them with dlock_result_take_permit_ids. */
    char **permit_ids;
    /* The owner id the operation acted for (the one minted for an
     * acquisition started with owner NULL), valid for the duration of
     * the callback (copy it: DLOCK_OWNER_MAX bytes); NULL for the
     * operations that act for nobody (force_unlock, is_locked,
     * remain_ttl, semaphores, latches). */
    const char *owner;
} dlock_result;

/* Called once per started operation, on the loop's thread. */
typedef void (*dlock_done_fn)(void *arg, dlock_op_id op, const dlock_result *r);

/* From inside a callback: the permit ids of r, now the caller's (free them
 * with dlock_permit_ids_free); NULL when r has none or they were taken. */
DLOCK_API char **dlock_result_take_permit_ids(const dlock_result *r);

/* ---- the loop ------------------------------------------------------------- */

/* What dlock_loop_on_fd's events and the watch hooks mean. */
#define DLOCK_LOOP_READ 1
#define DLOCK_LOOP_WRITE 2

/* The hooks of your loop, in the style of hiredis's adapters and libcurl's
 * SOCKETFUNCTION / TIMERFUNCTION. Every hook is called on the loop's thread
 * (from a starter, a dlock_loop_on_* call or dlock_loop_free), except
 * wakeup, which may be called from any thread and must be safe there.
 * Hooks never call back into dlock; they only arrange for your loop to.
 *  - add_read / del_read, add_write / del_write: watch fd (or stop) for
 *    readability / writability; when it is ready, call
 *    dlock_loop_on_fd(lp, fd, DLOCK_LOOP_READ or _WRITE).
 *  - schedule_timer: arm the one timer to fire once in ms milliseconds
 *    (0: as soon as possible), replacing the previous one; ms < 0 disarms
 *    it. When it fires, call dlock_loop_on_timer(lp).
 *  - wakeup: make your loop call dlock_loop_on_wakeup(lp) soon (libuv's
 *    uv_async_send, libev's ev_async_send). May be NULL: dlock's own file
 *    descriptor (the one add_read is asked to watch, at dlock_loop_new,
 *    whether or not there is a wakeup hook) then carries wake-ups too.
 *  - cleanup: called once by dlock_loop_free after the last other hook.
 *    May be NULL.
 * The struct is copied by dlock_loop_new. */
#define DLOCK_LOOP_HOOKS_VERSION 1
typedef struct dlock_loop_hooks {
    int version; /* DLOCK_LOOP_HOOKS_VERSION */
    void *data;  /* passed to every hook */
    void (*add_read)(void *data, int fd);
    void (*del_read)(void *data, int fd);
    void (*add_write)(void *data, int fd);
    void (*del_write)(void *data, int fd);
    void (*schedule_timer)(void *data, int64_t ms);
    void (*wakeup)(void *data);
    void (*cleanup)(void *data);
} dlock_loop_hooks;

/* A loop for client c (borrowed: it must outlive the loop). hooks NULL:
 * poll mode; else hook mode (add_read, del_read and schedule_timer are
 * required; add_write and del_write may be NULL). 0 and *out, or
 * DLOCK_EINVAL (c NULL, a required hook missing, a version this header
 * does not know), DLOCK_ENOMEM, DLOCK_EFORKED. Never blocks. */
DLOCK_API int dlock_loop_new(dlock_loop **out, dlock_client *c,
                             const dlock_loop_hooks *hooks);

/* A loop run by a thread of its own, started here. 0, or as
 * dlock_loop_new. */
DLOCK_API int dlock_loop_new_thread(dlock_loop **out, dlock_client *c);

/* Completes every pending operation, then frees lp: waits end with
 * DLOCK_ECANCELED (an acquisition granted meanwhile is released again
 * first), other operations (unlocks) finish, bounded by the client's
 * command timeout. Their callbacks run here (on the caller's thread, which
 * must be the loop's, or any thread for dlock_loop_new_thread's, whose
 * thread it joins). So it may block the caller up to the command timeout
 * (a stalled server): dlock_loop_close does not. NULL ok; a loop already
 * closing (dlock_loop_close) is left to finish.
 * From inside one of lp's callbacks it is deferred, as hiredis's
 * redisAsyncFree: it cancels the waits and returns at once, and the dlock
 * call that ran the callback (dlock_loop_run, an on_* call) completes the
 * free before it returns (blocking as above); a dlock_loop_new_thread
 * loop's thread frees it once its work is done. lp must not be used after
 * the callback returns. */
DLOCK_API void dlock_loop_free(dlock_loop *lp);

/* Closes lp without blocking, as uv_close: the waits end with
 * DLOCK_ECANCELED (a wait started afterwards, from a callback, too),
 * other operations (unlocks) go on to their end; the application keeps
 * running the loop as before (dlock_loop_run, the on_* calls; a
 * dlock_loop_new_thread loop runs itself), and once nothing is pending,
 * at the end of one of those calls (on the loop's thread), lp is freed
 * (hook mode: schedule_timer(-1), del_read and cleanup called) and then
 * on_closed(arg) is called (NULL: none), never from inside this call.
 * From then on lp must not be used: do not call dlock_loop_free on it.
 * Any thread, and from inside lp's callbacks. 0, or DLOCK_EINVAL (lp
 * NULL, closing or being freed already). */
DLOCK_API int dlock_loop_close(dlock_loop *lp, void (*on_closed)(void *arg), void *arg);

/* Poll mode: a file descriptor that is readable while the loop has work
 * (a started or woken operation, a reply arrived on a socket an operation
 * waits on); -1 for NULL. The same fd for the loop's life (an epoll set on
 * Linux). Owned by the loop. */
DLOCK_API int dlock_loop_fd(dlock_loop *lp);

/* How long the loop may sleep before dlock_loop_run is due: 0 (work now),
 * the milliseconds to its next timer, or -1 (no timer: only dlock_loop_fd
 * ends the sleep). Time is the client's backend's clock (on the virtual
 * clock: virtual milliseconds). Never blocks. */
DLOCK_API int64_t dlock_loop_timeout_ms(dlock_loop *lp);

/* Poll mode (and hook mode, where it does what the on_* calls do): runs
 * what is due; when nothing was, waits up to max_wait_ms real
 * milliseconds (0: not at all; on the virtual clock it never waits) for
 * work and runs it. Returns how many callbacks it ran (>= 0), or
 * DLOCK_EINVAL (lp NULL, a dlock_loop_new_thread loop, called from inside
 * a callback).
 * One call (this one, or an on_* call) runs one slice: it stops starting
 * operations' steps and calling callbacks once the client's loop_slice_ms
 * (api/dlock/client.h; 2 ms by default) of real time has passed, and
 * leaves what is left for the next call, with dlock_loop_fd readable and
 * dlock_loop_timeout_ms 0 until then, so that your loop's own timers and
 * sockets get their turn between two slices (as a libuv or hiredis
 * callback leaves the rest of a read for the next turn). A test that
 * wants everything due done calls it again while dlock_loop_timeout_ms
 * says 0. */
DLOCK_API int dlock_loop_run(dlock_loop *lp, int64_t max_wait_ms);

/* Hook mode: what your loop calls when a watched fd is ready, when the
 * timer fires, when a wake-up arrives. On the loop's thread. */
DLOCK_API void dlock_loop_on_fd(dlock_loop *lp, int fd, int events);
DLOCK_API void dlock_loop_on_timer(dlock_loop *lp);
DLOCK_API void dlock_loop_on_wakeup(dlock_loop *lp);

/* How many operations were started and have not had their callback yet. */
DLOCK_API size_t dlock_loop_pending(dlock_loop *lp);

/* Back-pressure: the cap on lp's operations in flight that take
 * something (the acquisitions, the reads: every starter below but those
 * that let go). At the cap, such a starter returns DLOCK_EAGAIN at once
 * and starts nothing; it may be called again after a callback. Those that
 * let go (dlock_unlock_async, dlock_extend_async,
 * dlock_force_unlock_async, dlock_semaphore_release_async,
 * dlock_permit_semaphore_release_async, dlock_latch_count_down_async)
 * are never refused for the cap, and when no fiber can be had for one it
 * runs on one of the few the loop reserved at dlock_loop_new; cancelling
 * (dlock_op_cancel) needs nothing: so a holder can always let go, however
 * many waits are queued behind it. Default: 1 048 576 (an operation
 * takes a fiber of the loop's pool only while it runs a step; see the
 * memory paragraph above for the waits that keep theirs). max 0 restores
 * the default; a cap lowered
 * below what is in flight refuses new starts until enough have finished.
 * Any thread. 0, or DLOCK_EINVAL (lp NULL). Never blocks. */
DLOCK_API int dlock_loop_set_max_in_flight(dlock_loop *lp, size_t max);
/* The cap in force (0 for NULL). */
DLOCK_API size_t dlock_loop_max_in_flight(dlock_loop *lp);

/* Cancels op, from any thread: a wait ends with DLOCK_ECANCELED and leaves
 * nothing behind (no queue entry, no subscription); when the grant won the
 * race the callback says 0 and the owner holds the lock. Any other
 * operation (an unlock, a read) is never cancelled: it completes. 0 when
 * op was pending (its callback is still to come), DLOCK_EINVAL when lp is
 * NULL or op is not a pending operation of lp (done, or never started).
 * Never blocks for long. */
DLOCK_API int dlock_op_cancel(dlock_loop *lp, dlock_op_id op);

/* ---- starters ----------------------------------------------------------------
 *
 * Each returns 0, sets *op (may be NULL) and calls fn exactly once later;
 * or returns an error (DLOCK_EINVAL for a bad argument, DLOCK_EAGAIN at
 * the loop's cap (dlock_loop_set_max_in_flight), DLOCK_ENOMEM when the
 * operation's memory cannot be had, DLOCK_EFORKED), with nothing
 * started, and never calls fn: what cannot be served is refused here,
 * never by a later DLOCK_ENOMEM callback. Arguments are
 * checked as the blocking form checks them, before anything starts, and
 * copied (owner ids, permit ids): none needs to outlive the starter. */

/* dlock_lock_as / dlock_try_lock_as: wait_ms DLOCK_WAIT_FOREVER (lock), 0
 * (one attempt) or > 0 (try_lock's wait).
 * Budgets (every starter with a wait_ms): a wait's budget counts from the
 * starter's call, on the client's clock, not from when the loop gets to
 * the operation: a loop busy with thousands of others does not stretch
 * it (the callback comes within wait_ms plus the client's
 * budget_slack_ms, the first attempt included, or says DLOCK_ETIMEDOUT).
 * A wait of 0 is one attempt, made whenever the loop runs it. */
DLOCK_API int dlock_lock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                               const char *owner, int64_t wait_ms, int64_t lease_ms,
                               dlock_done_fn fn, void *arg);
DLOCK_API int dlock_unlock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                 const char *owner, dlock_done_fn fn, void *arg);
DLOCK_API int dlock_extend_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                 const char *owner, int64_t lease_ms, dlock_done_fn fn,
                                 void *arg);
/* value: 1 when it existed. */
DLOCK_API int dlock_force_unlock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                       dlock_done_fn fn, void *arg);
/* dlock_fenced_try_lock_as (wait_ms as dlock_lock_async's); value: the
 * token. l: a fenced lock (api/dlock/fenced.h). */
DLOCK_API int dlock_fenced_lock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                      const char *owner, int64_t wait_ms,
                                      int64_t lease_ms, dlock_done_fn fn, void *arg);
/* The reads; value: the answer. */
DLOCK_API int dlock_is_locked_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                    dlock_done_fn fn, void *arg);
DLOCK_API int dlock_is_held_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                  const char *owner, dlock_done_fn fn, void *arg);
DLOCK_API int dlock_hold_count_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                     const char *owner, dlock_done_fn fn, void *arg);
DLOCK_API int dlock_remain_ttl_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                                     dlock_done_fn fn, void *arg);

/* dlock_semaphore_try_acquire (wait_ms as dlock_lock_async's) and
 * dlock_semaphore_release. */
DLOCK_API int dlock_semaphore_acquire_async(dlock_loop *lp, dlock_op_id *op,
                                            dlock_semaphore *s, int64_t permits,
                                            int64_t wait_ms, dlock_done_fn fn,
                                            void *arg);
DLOCK_API int dlock_semaphore_release_async(dlock_loop *lp, dlock_op_id *op,
                                            dlock_semaphore *s, int64_t permits,
                                            dlock_done_fn fn, void *arg);
/* dlock_permit_semaphore_try_acquire (wait_ms as dlock_lock_async's):
 * r->permit_ids and r->value; and dlock_permit_semaphore_release. */
DLOCK_API int dlock_permit_semaphore_acquire_async(dlock_loop *lp, dlock_op_id *op,
                                                   dlock_permit_semaphore *p,
                                                   int64_t permits, int64_t wait_ms,
                                                   int64_t lease_ms, dlock_done_fn fn,
                                                   void *arg);
DLOCK_API int dlock_permit_semaphore_release_async(dlock_loop *lp, dlock_op_id *op,
                                                   dlock_permit_semaphore *p,
                                                   const char *id, dlock_done_fn fn,
                                                   void *arg);
/* dlock_latch_await_for (wait_ms as dlock_lock_async's) and
 * dlock_latch_count_down. */
DLOCK_API int dlock_latch_await_async(dlock_loop *lp, dlock_op_id *op, dlock_latch *l,
                                      int64_t wait_ms, dlock_done_fn fn, void *arg);
DLOCK_API int dlock_latch_count_down_async(dlock_loop *lp, dlock_op_id *op,
                                           dlock_latch *l, dlock_done_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_ASYNC_H */
