/*
 * dlock — the Redis backend (hiredis).
 *
 * URLs:
 *   redis://[[user]:password@]host[:port][/db]     (port 6379, db 0 default)
 *   unix:///path/to/socket[?db=N]
 * A password with '@', ':' or '/' is percent-encoded in the URL (%40 ...).
 *
 * The backend keeps a pool of connections (no lock is held across network
 * I/O), runs scripts with EVALSHA (SCRIPT LOAD on NOSCRIPT), and has one
 * subscriber connection with its own thread; subscriptions are restored after
 * a reconnect. A lost connection is re-established on next use, with
 * back-off; no call blocks past its command timeout (plus connect timeout).
 *
 * Thread-safety: a backend may be shared by any number of threads.
 * Passwords never appear in error messages.
 */
#ifndef DLOCK_REDIS_H
#define DLOCK_REDIS_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "times.h"
#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Timeouts of 0 mean no limit. Every duration is 0..DLOCK_TIME_MAX_MS
 * (api/dlock/times.h). The connect timeout also bounds the
 * connection handshake (AUTH, SELECT) and the wait for a free pooled
 * connection; the command timeout bounds one round trip. */
typedef struct dlock_redis_options {
    int version;                 /* 1 */
    int64_t connect_timeout_ms;  /* default 2000 */
    int64_t command_timeout_ms;  /* default 2000 */
    int pool_size;               /* connections kept open; default 8 */
    int64_t reconnect_min_ms;    /* first back-off step; default 50 */
    int64_t reconnect_max_ms;    /* back-off cap; default 2000 */
} dlock_redis_options;

#define DLOCK_REDIS_OPTIONS_INIT {1, 2000, 2000, 8, 50, 2000}

/* Creates the backend and connects once to check the URL, the credentials
 * and the database (so a wrong password fails here, with DLOCK_EAUTH).
 * opts may be NULL (defaults). Blocks for at most the connect timeout plus
 * the command timeout.
 * Returns 0, DLOCK_EINVAL (bad URL or options; errbuf says which part),
 * DLOCK_ECONN, DLOCK_ETIMEDOUT, DLOCK_EAUTH, DLOCK_EPROTO (not a Redis server,
 * or SELECT refused), DLOCK_ENOMEM. errbuf (may be NULL) receives a one-line
 * detail. */
DLOCK_API int dlock_redis_backend_new(dlock_backend **out, const char *url,
                                      const dlock_redis_options *opts, char *errbuf,
                                      size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_REDIS_H */
