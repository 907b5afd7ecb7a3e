/*
 * dlock — the waiting service (wait.c): the one place where the library
 * parks its caller.
 *
 * A wait is for a condition (a pthread condition variable and its mutex,
 * optionally with a dlock_signal its waker also raises), for a socket (fd
 * + events), or for a deadline. In a loop's fiber (core/fiber.h) the fiber
 * yields and the loop's thread goes on with the other operations; on a
 * plain thread the thread blocks. So every site of objects/ and backends/
 * gets the rule "a fiber never blocks its thread" by calling here, and
 * `make check` (tests/check_waits.sh) refuses a direct blocking call
 * (pthread_cond_*wait, poll, epoll_wait, select, nanosleep, usleep, sleep)
 * anywhere else in the library but its commented allow-list.
 *
 * Deadlines are milliseconds on CLOCK_MONOTONIC (dlock__wait_now_ms);
 * INT64_MAX: no deadline. Private to the library (core/), with one public
 * face: dlock_backend_wait_fd (api/dlock/sys/backend.h).
 */
#ifndef DLOCK_CORE_WAIT_H
#define DLOCK_CORE_WAIT_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>

struct dlock_signal;

/* Now on CLOCK_MONOTONIC, in ms. Never blocks. */
int64_t dlock__wait_now_ms(void);

/* Initialises cv to time its waits on CLOCK_MONOTONIC (what
 * dlock__wait_cond's deadlines are). 0 or -1. */
int dlock__wait_cond_init(pthread_cond_t *cv);

/* With mu held: waits until cv is signalled, or deadline_ms passes, and
 * returns with mu held again (0, or DLOCK_ETIMEDOUT once the deadline is
 * past). As pthread_cond_wait, it may return early: the caller looks at
 * its condition again. In a fiber the thread never waits on cv: mu is
 * released, the fiber naps a millisecond (yielding) and retakes mu; a
 * waker that can raise a signal instead lets the fiber sleep until told
 * (dlock__wait_cond_or). */
int dlock__wait_cond(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t deadline_ms);
/* The same, and in a fiber it sleeps on sig (its flag consumed) until the
 * waker raises it or deadline_ms passes; sig NULL: the nap above. A plain
 * thread waits on cv only: the waker signals both. */
int dlock__wait_cond_or(pthread_cond_t *cv, pthread_mutex_t *mu,
                        struct dlock_signal *sig, int64_t deadline_ms);

/* With mu held: waits until cv is signalled, blocking the thread even in
 * a fiber, as a mutex would. Only for a wait that another thread's short
 * critical section ends (a pin while a delivery calls a listener, a
 * renewal in progress): the caller may hold other locks across it, which
 * a fiber must not carry into a yield (another fiber of the thread would
 * then wait for them forever). */
void dlock__wait_pin(pthread_cond_t *cv, pthread_mutex_t *mu);

/* Waits until fd is ready for events (POLLIN and/or POLLOUT): 1; or
 * deadline_ms passes: 0 (past the deadline it looks once without
 * waiting, so what has already come is taken; deadline_ms 0 is such a
 * look and never parks); or poll fails: -1 (errno).
 * fd is borrowed; it must stay open for the call. In a fiber the fiber
 * waits in the loop's poller (the thread goes on). */
int dlock__wait_fd(int fd, short events, int64_t deadline_ms);
/* The same, and also ended (0) when sig is raised (its flag consumed):
 * for a caller that another reader may tell that its work was done. On a
 * plain thread sig is looked at between polls of at most 10 ms. */
int dlock__wait_fd_or(struct dlock_signal *sig, int fd, short events,
                      int64_t deadline_ms);
/* poll(2) of several fds until deadline_ms: what poll returns (revents
 * set), 0 past the deadline. For the library's own threads (a subscriber,
 * a topology watcher); a fiber looks without waiting and naps a
 * millisecond between looks. */
int dlock__wait_fds(struct pollfd *p, nfds_t n, int64_t deadline_ms);

/* Waits ms (a fiber naps, resumed early: naps on). */
void dlock__wait_nap(int64_t ms);

/* Runs fn(arg), a call that blocks and has no wait of its own to hand
 * over (a host name's lookup: getaddrinfo). On a plain thread it is
 * called here (0). In a fiber it runs on a helper thread while the fiber
 * waits for it until deadline_ms: 0 once it returned (arg is the
 * caller's again), or DLOCK_ETIMEDOUT: the caller leaves arg to the
 * helper, which calls drop(arg) once fn returns (arg must then hold
 * everything fn reads). When no thread can be started, fn runs here. */
int dlock__wait_offload(void (*fn)(void *arg), void *arg, void (*drop)(void *arg),
                        int64_t deadline_ms);

#endif /* DLOCK_CORE_WAIT_H */
