/*
 * dlock — the library's side of the logging hook (api/dlock/log.h).
 *
 * Here, in core/, because both sides report through it: the objects (the
 * watchdog: renewal failures, lost locks) and the backends (reconnects,
 * failovers, restored subscriptions), and backends/ must not include
 * objects/. A call costs one atomic load when no hook wants the
 * level, so callers need no check of their own.
 */
#ifndef DLOCK_CORE_LOG_H
#define DLOCK_CORE_LOG_H

#include "dlock/log.h"

/* Formats one line ("dlock: " + fmt) and hands it to the hook, if one is
 * installed for level. Call with no mutex held that the callback could
 * need (any dlock call). */
void dlock__log(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif /* DLOCK_CORE_LOG_H */
