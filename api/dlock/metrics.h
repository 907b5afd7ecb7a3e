/*
 * dlock — per-client metrics.
 *
 * Every client counts what its lock objects do, from its creation on:
 * acquisitions and how long they waited, how long holds lasted, attempts
 * refused because someone else held the lock (contention), watchdog
 * renewals and their failures, locks lost, and reconnects of its backend.
 * Counting costs a few relaxed atomic additions per call (no lock); read
 * the figures whenever you like, e.g. for a Prometheus scrape
 * (samples/metrics_prometheus.c).
 *
 * What counts:
 *  - acquisitions: lock/try_lock calls (any lock type, dlock_rlock API)
 *    that got the lock, re-entries included; wait_ms: the time each of
 *    them spent in the call (on the backend's clock: the virtual clock on
 *    a mock made with one).
 *  - hold_ms: one observation per hold that ended (the owner's count went
 *    back to 0 through an unlock, one answering DLOCK_ELOST included),
 *    from its first acquisition on.
 *  - busy: acquisition attempts refused because another owner held the
 *    lock (a try_lock with wait 0 that failed counts one; a waiting call
 *    one per look).
 *  - renewals / renewal_failures: holds the watchdog renewed, and holds it
 *    could not renew because the backend call failed (retried next
 *    period).
 *  - lost: holds found lost (by the watchdog, dlock_extend or an unlock
 *    answering DLOCK_ELOST), each counted once.
 *  - reconnects: times the backend connected again after failing to
 *    connect (the Redis backend's command connections; its pub/sub
 *    connection's restores are logged, not counted). 0 on the mock and on
 *    a backend without the counter (api/dlock/sys/backend.h).
 *  - unsynced_no_replica, unsynced_refused (version 2): writes (lock,
 *    unlock, renewal... calls of scripts that write) that the Redis
 *    backend's sync_replicas (api/dlock/redis.h) asked to sync but that
 *    went without WAIT: because sync_replicas = -1 found no replica
 *    connected to the master, or because the server refused WAIT (unknown
 *    command, NOPERM), which turns sync off for the backend's lifetime
 *    (the refused call counts). Each cause is also logged once per
 *    backend, at DLOCK_LOG_WARN (api/dlock/log.h). 0 on the mock.
 *  - messages_ignored (version 3): pub/sub messages the backend ignored
 *    instead of waking waiters, because their payload is not what PUBLISH
 *    sends (the Redis backend: a reply that is not a string, from a broken
 *    or hostile server); the subscription is kept. 0 on the mock.
 * Counters only grow (unsigned 64-bit, wrapping).
 */
#ifndef DLOCK_METRICS_H
#define DLOCK_METRICS_H

#include "export.h"

#include "types.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Histogram buckets: upper bounds in ms, inclusive; the last bucket
 * (index DLOCK_METRICS_BUCKETS - 1) holds everything above. */
#define DLOCK_METRICS_BUCKETS 16
#define DLOCK_METRICS_BOUNDS_MS \
    {1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000}

typedef struct dlock_histogram {
    uint64_t count;  /* observations */
    uint64_t sum_ms; /* their total */
    uint64_t buckets[DLOCK_METRICS_BUCKETS]; /* per bucket, not cumulative */
} dlock_histogram;

typedef struct dlock_metrics {
    int version; /* set by the caller: 3 (1: a struct ending at hold_ms,
                  * 2: at unsynced_refused) */
    uint64_t acquisitions;
    uint64_t busy;
    uint64_t renewals;
    uint64_t renewal_failures;
    uint64_t lost;
    uint64_t reconnects;
    dlock_histogram wait_ms;
    dlock_histogram hold_ms;
    /* ---- version 2 ---- */
    uint64_t unsynced_no_replica;
    uint64_t unsynced_refused;
    /* ---- version 3 ---- */
    uint64_t messages_ignored;
} dlock_metrics;

#define DLOCK_METRICS_INIT {3, 0, 0, 0, 0, 0, 0, {0, 0, {0}}, {0, 0, {0}}, 0, 0, 0}

/* Fills *out (whose version the caller set, as with DLOCK_METRICS_INIT)
 * with c's figures so far. The figures are read one by one, without
 * stopping the client: a snapshot taken while locks change hands may be a
 * few events apart between fields. Never blocks.
 * 0, DLOCK_EINVAL (NULL, or a version this library does not know). */
DLOCK_API int dlock_client_metrics(dlock_client *c, dlock_metrics *out);

/* Pushed figures: fn(arg, m) with a snapshot as above (m valid during the
 * call only), called on the client's watchdog thread once per watchdog
 * period (watchdog_timeout_ms / 3, on the backend's clock), after that
 * period's renewals. The same rules as on_lost (api/dlock/client.h): keep
 * it short, it delays renewals. NULL stops the pushes; a push under way
 * finishes with the old fn. Never blocks on the network.
 * 0, DLOCK_EINVAL (c NULL), DLOCK_EFORKED. */
typedef void (*dlock_metrics_fn)(void *arg, const dlock_metrics *m);
DLOCK_API int dlock_client_set_metrics_push(dlock_client *c, dlock_metrics_fn fn,
                                            void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_METRICS_H */
