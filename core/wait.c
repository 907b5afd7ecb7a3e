/*
 * dlock — the waiting service (wait.h): every wait of the library, on a
 * fiber (the fiber yields) or on a plain thread (the thread blocks).
 *
 * This file is the only one of the library that calls pthread_cond_*wait,
 * poll or nanosleep on behalf of objects/ and backends/ (the check in
 * tests/check_waits.sh says which others may, and why).
 */
#include "wait.h"

#include "dlock/errors.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"

#include "fiber.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* A single timed wait never aims further than this: the timespec stays far
 * from overflow for absurd deadlines, and the callers loop anyway. */
#define MAX_WAIT_MS (24LL * 3600 * 1000)

/* How long a fiber naps when nobody can tell it (no signal): short, as the
 * blocking thread it replaces would have been woken at once. */
#define FIBER_NAP_MS 1

/* A plain thread's look at a signal between polls (dlock__wait_fd_or). */
#define SIGNAL_LOOK_MS 10

int64_t dlock__wait_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int dlock__wait_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    int rc;

    if (pthread_condattr_init(&a) != 0)
        return -1;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc == 0 ? 0 : -1;
}

/* A poll(2) timeout for deadline_ms: -1 none, 0 past, capped. */
static int poll_ms(int64_t deadline_ms)
{
    int64_t left;

    if (deadline_ms == INT64_MAX)
        return -1;
    left = deadline_ms - dlock__wait_now_ms();
    if (left < 0)
        return 0;
    return left > MAX_WAIT_MS ? (int)MAX_WAIT_MS : (int)left;
}

static int past(int64_t deadline_ms)
{
    return deadline_ms != INT64_MAX && dlock__wait_now_ms() >= deadline_ms;
}

/* The fiber's nap until the earlier of now + FIBER_NAP_MS and deadline. */
static void fiber_nap(int64_t deadline_ms)
{
    int64_t nap = dlock__wait_now_ms() + FIBER_NAP_MS;

    dlock__fiber_wait_fd(-1, DLOCK__FIBER_READ, nap < deadline_ms ? nap : deadline_ms);
}

static int thread_cond_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    struct timespec ts;
    int64_t now, until;

    if (deadline_ms == INT64_MAX) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    now = dlock__wait_now_ms();
    if (now >= deadline_ms)
        return DLOCK_ETIMEDOUT;
    until = deadline_ms - now > MAX_WAIT_MS ? now + MAX_WAIT_MS : deadline_ms;
    ts.tv_sec = (time_t)(until / 1000);
    ts.tv_nsec = (long)(until % 1000) * 1000000L;
    pthread_cond_timedwait(cv, mu, &ts);
    return past(deadline_ms) ? DLOCK_ETIMEDOUT : 0;
}

int dlock__wait_cond_or(pthread_cond_t *cv, pthread_mutex_t *mu,
                        struct dlock_signal *sig, int64_t deadline_ms)
{
    if (!dlock__fiber_current())
        return thread_cond_wait(cv, mu, deadline_ms);
    if (past(deadline_ms))
        return DLOCK_ETIMEDOUT;
    pthread_mutex_unlock(mu);
    if (sig)
        dlock__fiber_sleep(sig, deadline_ms);
    else
        fiber_nap(deadline_ms);
    pthread_mutex_lock(mu);
    return past(deadline_ms) ? DLOCK_ETIMEDOUT : 0;
}

int dlock__wait_cond(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    return dlock__wait_cond_or(cv, mu, NULL, deadline_ms);
}

void dlock__wait_pin(pthread_cond_t *cv, pthread_mutex_t *mu)
{
    pthread_cond_wait(cv, mu);
}

/* poll(2) of fd for up to timeout_ms: 1 ready, 0 not (a signal's EINTR
 * too: the callers look again), -1 failed. */
static int poll_one(int fd, short events, int timeout_ms)
{
    struct pollfd p;
    int n;

    p.fd = fd;
    p.events = events;
    p.revents = 0;
    n = poll(&p, 1, timeout_ms);
    if (n < 0)
        return errno == EINTR ? 0 : -1;
    return n > 0;
}

/* In a fiber: the loop may resume it early (the fd's readiness is then
 * unknown), so after an early resume, or past the deadline, the fiber
 * looks itself. Callers come here when the socket would block, so the
 * fiber parks at once. */
static int fiber_wait_fd(int fd, short events, int64_t deadline_ms)
{
    int ev = (events & POLLOUT) ? DLOCK__FIBER_WRITE : DLOCK__FIBER_READ;

    for (;;) {
        int r = past(deadline_ms) ? DLOCK_ETIMEDOUT
                                  : dlock__fiber_wait_fd(fd, ev, deadline_ms);
        int n;

        if (r == 1)
            return 1;
        n = poll_one(fd, events, 0);
        if (n != 0)
            return n;
        /* Past the deadline: that look was the last. */
        if (r == DLOCK_ETIMEDOUT)
            return 0;
    }
}

int dlock__wait_fd(int fd, short events, int64_t deadline_ms)
{
    if (dlock__fiber_current())
        return fiber_wait_fd(fd, events, deadline_ms);
    for (;;) {
        int n = poll_one(fd, events, poll_ms(deadline_ms));

        if (n != 0)
            return n;
        if (past(deadline_ms))
            return 0;
    }
}

/* Consumes sig's flag: whether it was raised. */
static int take_signal(struct dlock_signal *sig)
{
    int raised;

    pthread_mutex_lock(&sig->mutex);
    raised = sig->raised;
    sig->raised = 0;
    pthread_mutex_unlock(&sig->mutex);
    return raised;
}

int dlock__wait_fd_or(struct dlock_signal *sig, int fd, short events,
                      int64_t deadline_ms)
{
    if (dlock__fiber_current()) {
        int ev = (events & POLLOUT) ? DLOCK__FIBER_WRITE : DLOCK__FIBER_READ;
        return dlock__fiber_wait_fd_or(sig, fd, ev, deadline_ms) == 1;
    }
    for (;;) {
        int64_t slice = dlock__wait_now_ms() + SIGNAL_LOOK_MS;
        int n;

        if (take_signal(sig))
            return 0;
        n = dlock__wait_fd(fd, events, slice < deadline_ms ? slice : deadline_ms);
        if (n != 0)
            return n;
        if (past(deadline_ms))
            return 0;
    }
}

int dlock__wait_fds(struct pollfd *p, nfds_t n, int64_t deadline_ms)
{
    int fiber = dlock__fiber_current() != NULL;

    for (;;) {
        int r = poll(p, n, fiber ? 0 : poll_ms(deadline_ms));

        if (r > 0 || (r < 0 && errno != EINTR))
            return r;
        if (r == 0 && past(deadline_ms))
            return 0;
        if (fiber && r == 0)
            fiber_nap(deadline_ms);
    }
}

/* A call run on a helper thread for a fiber (dlock__wait_offload); freed
 * by whichever of the two sides looks last. */
typedef struct offload {
    void (*fn)(void *arg);
    void (*drop)(void *arg);
    void *arg;
    int pipefd[2]; /* the helper writes a byte when fn returned */
    pthread_mutex_t mu;
    int done, abandoned;
} offload;

static void offload_free(offload *o)
{
    close(o->pipefd[0]);
    close(o->pipefd[1]);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

static void *offload_main(void *p)
{
    offload *o = p;
    char b = 1;
    int abandoned;

    o->fn(o->arg);
    pthread_mutex_lock(&o->mu);
    o->done = 1;
    abandoned = o->abandoned;
    if (!abandoned && write(o->pipefd[1], &b, 1) < 0) {
        /* a full or closed pipe: the fiber looks at done anyway */
    }
    pthread_mutex_unlock(&o->mu);
    if (abandoned) {
        o->drop(o->arg);
        offload_free(o);
    }
    return NULL;
}

int dlock__wait_offload(void (*fn)(void *arg), void *arg, void (*drop)(void *arg),
                        int64_t deadline_ms)
{
    offload *o;
    pthread_attr_t a;
    pthread_t t;
    int started, done;

    if (!dlock__fiber_current() || !(o = calloc(1, sizeof *o))) {
        fn(arg);
        return 0;
    }
    o->fn = fn;
    o->drop = drop;
    o->arg = arg;
    if (pipe2(o->pipefd, O_CLOEXEC | O_NONBLOCK) != 0) {
        free(o);
        fn(arg);
        return 0;
    }
    pthread_mutex_init(&o->mu, NULL);
    started = pthread_attr_init(&a) == 0;
    if (started) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        started = pthread_create(&t, &a, offload_main, o) == 0;
        pthread_attr_destroy(&a);
    }
    if (!started) {
        offload_free(o);
        fn(arg);
        return 0;
    }
    for (;;) {
        int gave_up = 0;

        pthread_mutex_lock(&o->mu);
        done = o->done;
        if (!done && past(deadline_ms))
            o->abandoned = gave_up = 1;
        pthread_mutex_unlock(&o->mu);
        /* gave up: o is the helper's now (not to be read again) */
        if (done || gave_up)
            break;
        dlock__wait_fd(o->pipefd[0], POLLIN, deadline_ms);
    }
    if (!done)
        return DLOCK_ETIMEDOUT; /* the helper frees o */
    offload_free(o);
    return 0;
}

int dlock_backend_wait_fd(int fd, int events, int64_t deadline_ms)
{
    int n;

    /* one at a time: a fiber is parked in the loop's poller for one */
    if (fd < 0 || (events != DLOCK_WAIT_READ && events != DLOCK_WAIT_WRITE))
        return DLOCK_EINVAL;
    n = dlock__wait_fd(fd, events == DLOCK_WAIT_READ ? POLLIN : POLLOUT, deadline_ms);
    return n < 0 ? DLOCK_ECONN : n;
}

int dlock_backend_wait_cond(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms)
{
    if (cv == NULL || mu == NULL)
        return DLOCK_EINVAL;
    return dlock__wait_cond(cv, mu, deadline_ms);
}

void dlock__wait_nap(int64_t ms)
{
    int64_t until = dlock__wait_now_ms() + ms;

    if (!dlock__fiber_current()) {
        struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        return;
    }
    /* resumed early: nap on */
    while (dlock__wait_now_ms() < until)
        dlock__fiber_wait_fd(-1, DLOCK__FIBER_READ, until);
}
