/*
 * dlock — the logging hook (api/dlock/log.h, core/log.h).
 *
 * The level is read with one atomic load, so an unwanted message costs no
 * lock and no formatting. A read-write lock is held (shared) around the
 * callback: dlock_set_log takes it exclusively, which is what lets it
 * promise that the old callback is no longer running when it returns.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dlock/errors.h"

#define LINE_MAX_BYTES 512

static pthread_rwlock_t hook_lock = PTHREAD_RWLOCK_INITIALIZER;
static dlock_log_fn hook_fn;   /* under hook_lock */
static void *hook_arg;         /* under hook_lock */
static int hook_level;         /* atomic: 0 while no hook */

int dlock_set_log(dlock_log_fn fn, void *arg, int level)
{
    if (level < 0 || level > DLOCK_LOG_DEBUG)
        return DLOCK_EINVAL;
    pthread_rwlock_wrlock(&hook_lock);
    hook_fn = fn;
    hook_arg = arg;
    __atomic_store_n(&hook_level, fn ? level : 0, __ATOMIC_RELEASE);
    pthread_rwlock_unlock(&hook_lock);
    return 0;
}

const char *dlock_log_level_name(int level)
{
    static const char *const names[] = {"?", "error", "warn", "info", "debug"};

    return level >= DLOCK_LOG_ERROR && level <= DLOCK_LOG_DEBUG ? names[level]
                                                                : names[0];
}

void dlock__log(int level, const char *fmt, ...)
{
    char line[LINE_MAX_BYTES];
    va_list ap;
    size_t i;
    int n;

    if (level > __atomic_load_n(&hook_level, __ATOMIC_ACQUIRE))
        return;
    n = snprintf(line, sizeof(line), "dlock: ");
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One line, whatever a lock name or a server's error text holds. */
    for (i = 0; line[i]; i++)
        if (line[i] == '\n' || line[i] == '\r')
            line[i] = ' ';
    pthread_rwlock_rdlock(&hook_lock);
    if (hook_fn && level <= hook_level)
        hook_fn(hook_arg, level, line);
    pthread_rwlock_unlock(&hook_lock);
}
