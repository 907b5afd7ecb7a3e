/*
 * dlock — the clock interface (for backend writers and tests).
 *
 * A clock tells time and puts threads to sleep. Every wait in dlock (a blocked
 * acquirer, the watchdog) sleeps through its backend's clock, so a virtual
 * clock can drive leases, timed waits and watchdog renewals without real time
 * passing.
 *
 * Two clocks ship with dlock:
 *  - the real-time clock (dlock_clock_realtime()): a process-wide singleton;
 *  - the virtual clock (api/dlock/mock.h: dlock_vclock_new), advanced by the
 *    test that owns it.
 *
 * Waking is done through a dlock_signal: a sticky "something happened,
 * look again" flag with its own mutex and condition variable. Whoever has
 * news (a pub/sub message, the virtual clock passing a deadline) calls
 * dlock_signal_raise(); the sleeper consumes the flag when it wakes.
 */
#ifndef DLOCK_SYS_CLOCK_H
#define DLOCK_SYS_CLOCK_H

#include "../export.h"

#include "../types.h"

#include <pthread.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif


/* A wake-up flag. Initialise with dlock_signal_init, destroy with
 * dlock_signal_destroy. The struct is public so that it can live on the
 * sleeper's stack; touch its fields only through the functions below. */
typedef struct dlock_signal {
    pthread_mutex_t mutex;
    pthread_cond_t cond;  /* uses CLOCK_MONOTONIC */
    int raised;
    /* dlock_signal_set_notify's */
    void (*notify)(void *arg);
    void *notify_arg;
} dlock_signal;

/* 0 or DLOCK_ENOMEM. */
DLOCK_API int dlock_signal_init(dlock_signal *s);
DLOCK_API void dlock_signal_destroy(dlock_signal *s);
/* Sets the flag and wakes the sleeper. Never blocks for long (takes the
 * signal's mutex briefly); safe from any thread, including backend threads. */
DLOCK_API void dlock_signal_raise(dlock_signal *s);
/* Has every later raise of s also call fn(arg), on the raising thread,
 * after the flag is set and outside the signal's mutex (fn NULL: no
 * more). What a sleeper that is not a thread (an operation of a dlock_loop,
 * api/dlock/async.h) is woken by. fn must be quick and must not raise s. */
DLOCK_API void dlock_signal_set_notify(dlock_signal *s, void (*fn)(void *arg), void *arg);

typedef struct dlock_clock_methods {
    int version; /* 1 */

    /* Milliseconds on a steady time line, for time budgets. Never blocks. */
    int64_t (*now_ms)(dlock_clock *c);

    /* Milliseconds since the Unix epoch, for times written into the store
     * (e.g. fair-lock deadlines). On the virtual clock it moves with now_ms.
     * Never blocks. */
    int64_t (*wall_ms)(dlock_clock *c);

    /* Blocks until s is raised (returns 0 and clears the flag) or now_ms()
     * reaches deadline_ms (returns DLOCK_ETIMEDOUT). deadline_ms = INT64_MAX
     * waits for the signal only. The signal is borrowed for the duration of
     * the call. On the virtual clock the deadline passes only when the test
     * advances the clock. */
    int (*sleep_until)(dlock_clock *c, dlock_signal *s, int64_t deadline_ms);

    /* Called by the owner of a signal once it will no longer sleep on it (for
     * the virtual clock's bookkeeping: an advance waits for the threads it
     * woke to go back to sleep or to be done). May be NULL. Never blocks. */
    void (*done)(dlock_clock *c, dlock_signal *s);

    /* Reference counting; the real-time clock ignores both. */
    void (*ref)(dlock_clock *c);
    void (*unref)(dlock_clock *c);

    /* Declares that the thread owning s is running and will soon sleep on the
     * clock (or call done): called by whoever starts such a thread, before
     * starting it, so that a virtual-clock advance waits for the thread to
     * reach its first sleep instead of racing past it. May be NULL. Never
     * blocks. */
    void (*busy)(dlock_clock *c, dlock_signal *s);
} dlock_clock_methods;

struct dlock_clock {
    const dlock_clock_methods *methods;
};

/* The process-wide real-time clock (CLOCK_MONOTONIC for now_ms,
 * CLOCK_REALTIME for wall_ms). Never freed. */
DLOCK_API dlock_clock *dlock_clock_realtime(void);

/* Convenience dispatchers. */
DLOCK_API int64_t dlock_clock_now(dlock_clock *c);
DLOCK_API int64_t dlock_clock_wall(dlock_clock *c);
DLOCK_API int dlock_clock_sleep_until(dlock_clock *c, dlock_signal *s, int64_t deadline_ms);
DLOCK_API void dlock_clock_done(dlock_clock *c, dlock_signal *s);
DLOCK_API void dlock_clock_busy(dlock_clock *c, dlock_signal *s);

/* Whether the calling thread is one of dlock's own long-lived threads (a
 * client's watchdog) rather than an application's: for a clock written
 * outside libdlock that counts the application's sleepers apart (the
 * mock's virtual clock, in libdlock-mock: dlock_vclock_waiters). 1 or 0;
 * any thread, never blocks. */
DLOCK_API int dlock_clock_thread_is_background(void);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SYS_CLOCK_H */
