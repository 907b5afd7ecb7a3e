/*
 * dlock — the logging hook.
 *
 * By default dlock prints nothing, ever. An application that wants to know
 * what happens behind its calls installs one process-wide callback: it then
 * hears about renewal failures, lost locks, renewals stopped by max_hold_ms,
 * connection failures and reconnects, Sentinel failovers and rediscovery,
 * pub/sub subscriptions restored after a reconnect, and each field a
 * Redisson YAML configuration gives that dlock ignores (DLOCK_LOG_INFO,
 * on the thread reading it: api/dlock/config.h).
 *
 * Messages are one line without a trailing newline, start with "dlock: ",
 * and never contain a password or other credential (URLs are shown as
 * host:port or socket path). Owner ids and lock names do appear.
 *
 * Threads: the callback runs on whatever thread noticed the event: the
 * client's watchdog ("dlock-watchdog"), the Redis subscriber ("dlock-sub"),
 * the Sentinel watcher, or an application thread inside a dlock call (a
 * failed connect, a reconnect). Calls from several threads may overlap.
 * No library mutex is held during the callback except the hook's own
 * read lock, so it must not call dlock_set_log (that would deadlock); any
 * other dlock call is allowed but delays the thread it runs on (the
 * watchdog's renewals, a caller's time budget): record or queue the line
 * and return.
 */
#ifndef DLOCK_LOG_H
#define DLOCK_LOG_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Severities, most severe first; a hook set with level L receives the
 * messages of severity <= L. */
#define DLOCK_LOG_ERROR 1 /* the library cannot do what it promised */
#define DLOCK_LOG_WARN 2  /* a lock lost, a renewal or a connect failed */
#define DLOCK_LOG_INFO 3  /* reconnected, failover followed, restored */
#define DLOCK_LOG_DEBUG 4 /* routine detail */

/* msg is valid during the call only. */
typedef void (*dlock_log_fn)(void *arg, int level, const char *msg);

/* Installs fn (NULL: no logging, the default) with arg, for messages of
 * severity <= level (DLOCK_LOG_ERROR..DLOCK_LOG_DEBUG; 0 = none). Process
 * wide. Once it returns, the previous callback is not running and will not
 * be called again, so its arg may be freed. Never call it from the
 * callback. 0, or DLOCK_EINVAL (level out of range; nothing changed). */
DLOCK_API int dlock_set_log(dlock_log_fn fn, void *arg, int level);

/* "error", "warn", "info", "debug", or "?" for anything else. */
DLOCK_API const char *dlock_log_level_name(int level);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_LOG_H */
