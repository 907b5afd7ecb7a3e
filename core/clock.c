/*
 * dlock — wake-up signals, the real-time clock and the clock dispatchers.
 *
 * Every wait in dlock is a dlock_signal plus a deadline handed to a clock, so
 * the real-time clock below and the virtual clock of the mock backend are
 * interchangeable. Conditions wait on CLOCK_MONOTONIC so that a wall-clock
 * step (NTP, an operator) never stretches or cuts a time budget.
 */
#include "dlock/sys/clock.h"

#include "dlock/errors.h"

#include "background.h"
#include "fiber.h"
#include "wait.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

/* ---- background threads (background.h) ------------------------------------- */

static __thread int thread_is_background;

void dlock__thread_mark_background(void)
{
    thread_is_background = 1;
}

int dlock__thread_is_background(void)
{
    return thread_is_background;
}

int dlock_clock_thread_is_background(void)
{
    return thread_is_background;
}

/* ---- signals -------------------------------------------------------------- */

int dlock_signal_init(dlock_signal *s)
{
    pthread_condattr_t attr;

    if (s == NULL)
        return DLOCK_EINVAL;
    s->raised = 0;
    s->notify = NULL;
    s->notify_arg = NULL;
    if (pthread_mutex_init(&s->mutex, NULL) != 0)
        return DLOCK_ENOMEM;
    if (pthread_condattr_init(&attr) != 0)
        goto fail_mutex;
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&s->cond, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        goto fail_mutex;
    }
    pthread_condattr_destroy(&attr);
    return 0;

fail_mutex:
    pthread_mutex_destroy(&s->mutex);
    return DLOCK_ENOMEM;
}

void dlock_signal_destroy(dlock_signal *s)
{
    if (s == NULL)
        return;
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mutex);
}

void dlock_signal_raise(dlock_signal *s)
{
    void (*notify)(void *);
    void *arg;

    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mutex);
    s->raised = 1;
    /* Broadcast rather than signal: nothing forbids two threads waiting on
     * one flag, and only one of them consumes it anyway. */
    pthread_cond_broadcast(&s->cond);
    notify = s->notify;
    arg = s->notify_arg;
    pthread_mutex_unlock(&s->mutex);
    /* Outside the flag's mutex: the listener takes its own locks. */
    if (notify)
        notify(arg);
}

void dlock_signal_set_notify(dlock_signal *s, void (*fn)(void *arg), void *arg)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mutex);
    s->notify = fn;
    s->notify_arg = arg;
    pthread_mutex_unlock(&s->mutex);
}

/* ---- the real-time clock ---------------------------------------------------- */

static int64_t timespec_ms(const struct timespec *ts)
{
    return (int64_t)ts->tv_sec * 1000 + ts->tv_nsec / 1000000;
}

static int64_t rt_now_ms(dlock_clock *c)
{
    struct timespec ts;

    (void)c;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return timespec_ms(&ts);
}

static int64_t rt_wall_ms(dlock_clock *c)
{
    struct timespec ts;

    (void)c;
    clock_gettime(CLOCK_REALTIME, &ts);
    return timespec_ms(&ts);
}

static int rt_sleep_until(dlock_clock *c, dlock_signal *s, int64_t deadline_ms)
{
    int rc = 0;

    if (s == NULL)
        return DLOCK_EINVAL;
    pthread_mutex_lock(&s->mutex);
    while (!s->raised) {
        /* the signal's condition and rt_now_ms are both CLOCK_MONOTONIC */
        if (dlock__wait_cond(&s->cond, &s->mutex, deadline_ms) == DLOCK_ETIMEDOUT &&
            !s->raised) {
            rc = DLOCK_ETIMEDOUT;
            break;
        }
    }
    if (s->raised) {
        s->raised = 0;
        rc = 0;
    }
    pthread_mutex_unlock(&s->mutex);
    return rc;
}

static void rt_noop(dlock_clock *c)
{
    (void)c;
}

static const dlock_clock_methods rt_methods = {
    1,
    rt_now_ms,
    rt_wall_ms,
    rt_sleep_until,
    NULL, /* done: nothing to track */
    rt_noop,
    rt_noop,
    NULL, /* busy: nothing to track */
};

static dlock_clock rt_clock = {&rt_methods};

dlock_clock *dlock_clock_realtime(void)
{
    return &rt_clock;
}

/* ---- dispatchers -------------------------------------------------------------- */

int64_t dlock_clock_now(dlock_clock *c)
{
    if (c == NULL || c->methods == NULL || c->methods->now_ms == NULL)
        return 0;
    return c->methods->now_ms(c);
}

int64_t dlock_clock_wall(dlock_clock *c)
{
    if (c == NULL || c->methods == NULL || c->methods->wall_ms == NULL)
        return 0;
    return c->methods->wall_ms(c);
}

int dlock_clock_sleep_until(dlock_clock *c, dlock_signal *s, int64_t deadline_ms)
{
    if (c == NULL || c->methods == NULL || c->methods->sleep_until == NULL ||
        s == NULL)
        return DLOCK_EINVAL;
    /* An operation of a dlock_loop (api/dlock/async.h) sleeps in the
     * loop's timers, on the same clock, and its thread runs the others. */
    if (dlock__fiber_current())
        return dlock__fiber_sleep(s, deadline_ms);
    return c->methods->sleep_until(c, s, deadline_ms);
}

void dlock_clock_done(dlock_clock *c, dlock_signal *s)
{
    if (c == NULL || c->methods == NULL || c->methods->done == NULL ||
        s == NULL)
        return;
    c->methods->done(c, s);
}

void dlock_clock_busy(dlock_clock *c, dlock_signal *s)
{
    if (c == NULL || c->methods == NULL || c->methods->busy == NULL ||
        s == NULL)
        return;
    c->methods->busy(c, s);
}
