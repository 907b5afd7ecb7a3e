/*
 * dlock — writes the backend could not sync to enough replicas
 * (DLOCK_ESYNC, api/dlock/redis.h: sync_replicas).
 *
 * The backend reports DLOCK_ESYNC together with the script's reply: the
 * script ran. The round trip happens deep inside a lock type's attempt or
 * release function, whose public signatures (api/dlock/sys/rlock.h) carry
 * no such outcome, so dlock__rlock_eval_bin hands the reply on as a
 * success and notes the shortfall for the calling thread; the call at the
 * top decides: the wait loop rolls a fresh acquisition back, an unlock or
 * another change keeps its effect and returns DLOCK_ESYNC.
 */
#include <stdio.h>

#include "internal.h"

static __thread int noted;
static __thread char noted_detail[200];

void dlock__sync_note(const char *detail)
{
    noted = 1;
    snprintf(noted_detail, sizeof noted_detail, "%s", detail);
}

void dlock__sync_begin(void)
{
    noted = 0;
}

int dlock__sync_take(char *detail, size_t len)
{
    int was = noted;

    if (was && detail && len > 0)
        snprintf(detail, len, "%s", noted_detail);
    noted = 0;
    return was;
}

int dlock__sync_end(dlock_rlock *l, int rc)
{
    char detail[200];

    if (!dlock__sync_take(detail, sizeof detail) || rc != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_ESYNC, "\"%.64s\": done, but not synced: %s",
                            l->name, detail);
}
