/*
 * dlock — per-client metrics.
 *
 * Every client counts what its lock objects do, from its creation on:
 * acquisitions and how long they waited, how long holds lasted, attempts
 * refused because someone else held the lock (contention), watchdog
 * renewals and their failures, locks lost, and reconnects of its backend.
 * Counting costs a few relaxed atomic additions per call (no lock); read
 * the figures whenever you like (dlock_client_metrics), or have them
 * rendered for a Prometheus scrape (dlock_client_metrics_prometheus,
 * below; samples/metrics_prometheus.c serves them over HTTP).
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
 *  - unsynced_no_replica, unsynced_refused: writes (lock,
 *    unlock, renewal... calls of scripts that write) that the Redis
 *    backend's sync_replicas (api/dlock/redis.h) asked to sync but that
 *    went without WAIT: because sync_replicas = -1 found no replica
 *    connected to the master, or because the server refused WAIT (unknown
 *    command, NOPERM), which turns sync off for the backend's lifetime
 *    (the refused call counts). Each cause is also logged once per
 *    backend, at DLOCK_LOG_WARN (api/dlock/log.h). 0 on the mock.
 *  - messages_ignored: pub/sub messages the backend ignored
 *    instead of waking waiters, because their payload is not what PUBLISH
 *    sends (the Redis backend: a reply that is not a string, from a broken
 *    or hostile server); the subscription is kept. 0 on the mock.
 * Counters only grow (unsigned 64-bit, wrapping).
 */
#ifndef DLOCK_METRICS_H
#define DLOCK_METRICS_H

#include "export.h"

#include "types.h"

#include <stddef.h>
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
    int version; /* set by the caller: DLOCK_METRICS_VERSION (1); fields
                  * are only ever appended, and the library fills those
                  * of the version the caller set */
    uint64_t acquisitions;
    uint64_t busy;
    uint64_t renewals;
    uint64_t renewal_failures;
    uint64_t lost;
    uint64_t reconnects;
    dlock_histogram wait_ms;
    dlock_histogram hold_ms;
    uint64_t unsynced_no_replica;
    uint64_t unsynced_refused;
    uint64_t messages_ignored;
} dlock_metrics;

/* The struct's version this header describes: every field above. */
#define DLOCK_METRICS_VERSION 1
#define DLOCK_METRICS_INIT {DLOCK_METRICS_VERSION, 0, 0, 0, 0, 0, 0, {0, 0, {0}}, {0, 0, {0}}, 0, 0, 0}

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

/* ---- Prometheus ----------------------------------------------------------
 *
 * c's metrics in Prometheus's text exposition format, version 0.0.4 (serve
 * it with "Content-Type: text/plain; version=0.0.4; charset=utf-8"): every
 * family a "# HELP" and a "# TYPE" line, then its samples, one per line,
 * each line ending in '\n'. Every sample carries the label
 * client="<dlock_client_name(c)>" (the client_name option,
 * api/dlock/client.h), escaped as the format says (backslash, double
 * quote and newline as \\, \" and \n). The families:
 *
 *   dlock_acquisitions_total              counter   acquisitions
 *   dlock_busy_attempts_total             counter   busy
 *   dlock_renewals_total                  counter   renewals
 *   dlock_renewal_failures_total          counter   renewal_failures
 *   dlock_lost_locks_total                counter   lost
 *   dlock_reconnects_total                counter   reconnects
 *   dlock_unsynced_no_replica_total       counter   unsynced_no_replica
 *   dlock_unsynced_refused_total          counter   unsynced_refused
 *   dlock_wait_seconds                    histogram wait_ms, in seconds:
 *   dlock_hold_seconds                    histogram hold_ms  _bucket{le=...}
 *                                                   (cumulative, the bounds
 *                                                   of DLOCK_METRICS_BOUNDS_MS
 *                                                   and "+Inf"), _sum, _count
 *
 * and, with per-name counters on (metrics_names_max > 0), with the label
 * lock="<name>" as well:
 *
 *   dlock_lock_acquisitions_total         counter   acquisitions of the name
 *   dlock_lock_busy_attempts_total        counter   busy, of the name
 *   dlock_lock_lost_total                 counter   lost, of the name
 *
 * one series per name counted so far (at most metrics_names_max), and one
 * for the "other" bucket, always there, labelled
 * {client="...",lock="other",overflow="true"}: the extra label keeps it
 * apart from a lock that is really called "other".
 *
 * Where this differs from Prometheus's own client libraries: no
 * timestamps, no _created series, no process_* or go_* families, and the
 * histogram buckets are dlock's fixed ones (DLOCK_METRICS_BOUNDS_MS).
 *
 * The values are a snapshot as dlock_client_metrics takes it (fields read
 * one by one, without stopping the client). No timestamps. One client per
 * exposition: to expose several in one scrape, give them different
 * client_names and serve them from different paths (two renderings
 * concatenated would repeat the HELP and TYPE lines, which the format
 * forbids).
 *
 * Thread-safety: either call may run on any thread, at any time, any
 * number at once, while the client's locks are in use; they take no lock
 * of the library and never block (the callback's own work aside). */

/* Renders into buf, the caller's (len bytes; nothing is written past
 * buf[len - 1]), as snprintf does: returns the length of the whole text in
 * bytes (without the NUL). When that is >= len, the text did not fit: buf
 * then holds the whole lines that fit (maybe none), NUL-terminated, never a
 * cut line; call again with a larger buffer (a little larger than asked:
 * the next rendering may be longer, with a new lock name). buf NULL and len
 * 0 ask for the length only. Never allocates.
 * Negative on failure: DLOCK_EINVAL (c NULL, buf NULL with len > 0). */
DLOCK_API int dlock_client_metrics_prometheus(dlock_client *c, char *buf, size_t len);

/* Called with the text in pieces, in order: each piece whole lines (len
 * bytes, not NUL-terminated, valid during the call only; at most a few
 * kilobytes). Return 0 to go on, anything else to stop. */
typedef int (*dlock_metrics_write_fn)(void *arg, const char *data, size_t len);

/* Renders as above, to fn(arg, ...): fn runs on the calling thread, before
 * this returns, under no lock of the library (it may call any dlock
 * function, on this client too; it must not free c). Never allocates.
 * 0 when every piece was written; DLOCK_ECANCELED when fn returned
 * non-zero (nothing more is written); DLOCK_EINVAL (c or fn NULL). */
DLOCK_API int dlock_client_metrics_prometheus_write(dlock_client *c,
                                                    dlock_metrics_write_fn fn, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_METRICS_H */
