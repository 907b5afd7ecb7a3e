/*
 * dlock — fibers (fiber.c): a function run on its own stack, in steps, on
 * the thread that resumes it.
 *
 * What lets the asynchronous API (api/dlock/async.h) run each operation
 * with the same code as the blocking one: the operation runs in a fiber on
 * the loop's thread, and where the blocking code would park the thread (a
 * wait's sleep, a reply not yet read) the fiber yields instead, and the
 * loop resumes it when there is news. Stacks are mapped with a guard page
 * below them (an overflow faults instead of corrupting), and reused.
 * Sanitizers are told about every switch (ASan's and TSan's fiber calls),
 * Valgrind about every stack; debuggers unwind through the switch
 * (fiber.c says how far on each platform).
 *
 * Private to the library: core/ below objects/. A fiber is resumed by one
 * thread at a time; it may be resumed by another thread later. Never
 * blocks (a resume runs the fiber until it yields or ends).
 */
#ifndef DLOCK_CORE_FIBER_H
#define DLOCK_CORE_FIBER_H

#include <stddef.h>
#include <stdint.h>

typedef struct dlock__fiber dlock__fiber;
typedef void (*dlock__fiber_fn)(void *arg);

/* The usable stack of a fiber: enough for every path of the library (a
 * Lua script of the mock, an OpenSSL write, a formatted detail). */
#define DLOCK__FIBER_STACK (256 * 1024)

/* A fiber that will run fn(arg) at its first resume. 0 or DLOCK_ENOMEM. */
int dlock__fiber_new(dlock__fiber **out, dlock__fiber_fn fn, void *arg);
/* Runs f until it yields (returns 0) or fn returns (returns 1; then only
 * dlock__fiber_free may be called on it). Not from inside a fiber. */
int dlock__fiber_resume(dlock__fiber *f);
/* From inside a fiber: back to its resumer; returns at the next resume. */
void dlock__fiber_yield(void);
/* Which switch this build has ("x86-64 assembly", "ucontext"; fiber.c's
 * header says when each is used), for the tests and their reports. */
const char *dlock__fiber_switch_name(void);
/* Whether an unwinder (a debugger's backtrace, backtrace(3)) taken in a
 * fiber goes on past the fiber's first frame into its resumer's frames
 * (1), or ends at the fiber's first frame (0: the ucontext path). */
int dlock__fiber_unwinds_to_resumer(void);
/* The fiber running on this thread, or NULL outside one. */
dlock__fiber *dlock__fiber_current(void);
/* A word the fiber's owner keeps with it (NULL at first). */
void *dlock__fiber_data(const dlock__fiber *f);
void dlock__fiber_set_data(dlock__fiber *f, void *data);
/* Frees a fiber that finished or never started (its stack goes back to the
 * pool). NULL ok. */
void dlock__fiber_free(dlock__fiber *f);

/* ---- what a fiber yields for (read by its resumer) ---------------------- */

#define DLOCK__FIBER_TURN 1  /* resume me after the others ready now */
#define DLOCK__FIBER_SLEEP 2 /* resume me when sig is raised or at wake_ms */
#define DLOCK__FIBER_IO 3    /* resume me when fd is ready or at wake_ms */

/* The readiness a DLOCK__FIBER_IO wait is for. */
#define DLOCK__FIBER_READ 1
#define DLOCK__FIBER_WRITE 2

struct dlock_signal;

/* In a fiber: yields until sig is raised (0; the flag consumed) or the
 * clock of the fiber's resumer reaches wake_ms (DLOCK_ETIMEDOUT), or the
 * fiber is cancelled (0). What dlock_clock_sleep_until does in a fiber. */
int dlock__fiber_sleep(struct dlock_signal *sig, int64_t wake_ms);
/* In a fiber: yields until fd is ready for events (DLOCK__FIBER_READ or
 * _WRITE; 1) or the resumer's clock reaches wake_ms (DLOCK_ETIMEDOUT).
 * The resumer may also resume it early (0): then the caller looks at fd
 * again. fd -1: a timed nap. A cancel does not end it (a round trip runs to its end, by
 * its own deadline). What a backend's socket wait does in a fiber, so
 * that the loop's thread never blocks on the network. */
int dlock__fiber_wait_fd(int fd, int events, int64_t wake_ms);
/* The same, also ended (0) when sig is raised (its flag consumed): for a
 * caller that waits for its socket and may be told meanwhile that another
 * reader did the work. */
int dlock__fiber_wait_fd_or(struct dlock_signal *sig, int fd, int events,
                            int64_t wake_ms);
/* In a fiber: yields so that the fibers ready now run first (they send
 * their requests before this one waits for its reply). */
void dlock__fiber_turn(void);
/* Around a request that the running fiber sends and then, after a turn,
 * waits for (one script call): a backend may then leave it queued instead
 * of writing it at once, and write it with the requests other fibers
 * queue meanwhile when the first of them waits (one write for the batch).
 * Not around the sends of a call on several nodes, whose receives come
 * one after the other: each must be written at once. */
void dlock__fiber_batch(int on);
/* Whether the running fiber is inside dlock__fiber_batch(1) (0 outside a
 * fiber). */
int dlock__fiber_batching(void);
/* For the resumer: what f yielded for (DLOCK__FIBER_*), with the sleep's
 * (or the socket wait's) signal and time; and the answer its wait
 * returns. */
int dlock__fiber_want(const dlock__fiber *f, struct dlock_signal **sig, int64_t *wake_ms);
void dlock__fiber_answer(dlock__fiber *f, int rc);
/* For the resumer of a DLOCK__FIBER_IO wait: its fd and events. */
void dlock__fiber_want_io(const dlock__fiber *f, int *fd, int *events);
/* The cancel flag of f (an int its resumer sets, read atomically), and
 * whether the fiber running on this thread has been cancelled (0 outside
 * a fiber). */
void dlock__fiber_set_cancel(dlock__fiber *f, const int *flag);
int dlock__fiber_canceled(void);

/* ---- the loop's callbacks ------------------------------------------------- */

/* The loop marks its thread while it runs an application's callback: a
 * blocking call made there (outside a fiber) is refused with
 * DLOCK_EDEADLK by the backend dispatchers (core/backend.c). */
void dlock__callback_enter(void);
void dlock__callback_leave(void);
/* Whether this thread is inside a callback and not in a fiber. */
int dlock__blocking_refused(void);
/* What such a refusal says. */
#define DLOCK__REFUSED_DETAIL \
    "a blocking call from inside a dlock_loop callback (use its _async form)"

/* Whether this thread is inside a callback (in a fiber or not). */
int dlock__in_callback(void);

#endif /* DLOCK_CORE_FIBER_H */
