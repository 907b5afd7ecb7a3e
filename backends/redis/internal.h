/*
 * Redis backend (private): what the backend's files share — the
 * configuration, error details, and time helpers for bounded waits.
 */
#ifndef DLOCK_REDIS_INTERNAL_H
#define DLOCK_REDIS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "core/wait.h"
#include "dlock/errors.h"
#include "url.h"

struct dlock__redis_tls;

/* Everything needed to open a connection; immutable once the backend is
 * built, so every thread reads it without locking. Timeouts of 0 mean "no
 * limit" (as for SO_RCVTIMEO). */
typedef struct dlock__redis_config {
    dlock__redis_url url;        /* url.tls: the URL's and options' merged */
    struct dlock__redis_tls *tls; /* rediss://: the TLS context; else NULL */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    int pool_size;
    int multiplex;               /* 1: calls share a mux (mux.h) */
    int connections;             /* multiplexed: connections per node */
    int queue_max;               /* multiplexed: calls queued or in flight
                                    per connection (mux.h) */
    int64_t reconnect_min_ms;
    int64_t reconnect_max_ms;
    /* Replica-synced writes (api/dlock/redis.h): 0 off, N, or -1 all
     * connected replicas; the URL's and options' merged. */
    int sync_replicas;
    int64_t sync_timeout_ms;
    uint64_t *reconnects; /* the backend's count (atomic); copies share it */
    /* The backend's "a server can evict lock keys or send fencing tokens
     * back" warning, logged once (atomic; copies share it: safety.h). */
    int *safety_warned;
    /* pub/sub messages the subscribers ignored (a payload that is not a
     * string); the backend's count (atomic), shared by copies like
     * reconnects */
    uint64_t *ignored_messages;
    /* 1: the constructor does no I/O; the topology or the cluster connects
     * on first use (api/dlock/redis.h, lazy connection). */
    int lazy_connect;
    /* The largest reply a connection accepts (api/dlock/redis.h, reply
     * size; conn.c counts). */
    size_t max_reply_bytes;
    /* The most nodes a Cluster client follows from one slot map
     * (api/dlock/redis.h, cluster_max_nodes). */
    int cluster_max_nodes;
} dlock__redis_config;

/* The one-line detail of a failure, truncated to errlen; errbuf may be NULL. */
void dlock__redis_errf(char *errbuf, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The back-off before connect attempt number failures+1 (failures >= 1):
 * min, 2*min, 4*min ... capped at max. */
int64_t dlock__redis_backoff_ms(const dlock__redis_config *cfg, int failures);

static inline int64_t dlock__redis_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* now + ms, or INT64_MAX when ms is 0 ("no limit"). */
static inline int64_t dlock__redis_deadline(int64_t ms)
{
    if (ms <= 0)
        return INT64_MAX;
    return dlock__redis_now_ms() + ms;
}

/* Self-pipes (O_NONBLOCK; a thread poll()s the read end with its socket):
 * one byte wakes the thread; a full pipe already holds a wake-up, so
 * nothing is lost. */
static inline void dlock__redis_pipe_poke(int fd)
{
    char b = 1;
    ssize_t n;
    do {
        n = write(fd, &b, 1);
    } while (n < 0 && errno == EINTR);
}

/* Empties the read end after a wake-up. */
static inline void dlock__redis_pipe_drain(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0)
        ;
}

#endif /* DLOCK_REDIS_INTERNAL_H */
