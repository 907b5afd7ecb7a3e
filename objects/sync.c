/*
 * dlock — writes the backend could not sync to enough replicas
 * (DLOCK_ESYNC, api/dlock/redis.h: sync_replicas).
 *
 * The backend reports DLOCK_ESYNC together with the script's reply: the
 * script ran. Most calls just return DLOCK_ESYNC (the change is made;
 * dlock__rlock_eval_bin records the detail). Two kinds of call must see
 * the reply and judge themselves, and open a judged region for the
 * calling thread: an acquisition (the wait loop rolls it back, and the
 * hold bookkeeping must first learn that it succeeded) and a release of a
 * lock (the hold bookkeeping must learn that it was released). Inside the
 * region dlock__rlock_eval_bin passes the reply on as a success and notes
 * the shortfall here.
 */
#include <stdio.h>

#include "internal.h"

static __thread int judging;
static __thread int noted;
static __thread char noted_detail[200];

int dlock__sync_judged(const char *detail)
{
    if (!judging)
        return 0;
    noted = 1;
    snprintf(noted_detail, sizeof noted_detail, "%s", detail);
    return 1;
}

int dlock__sync_enter(void)
{
    int outer = judging;

    judging = 1;
    noted = 0;
    return outer;
}

void dlock__sync_clear(void)
{
    noted = 0;
}

int dlock__sync_leave(int outer, char *detail, size_t len)
{
    int was = noted;

    if (was && detail && len > 0)
        snprintf(detail, len, "%s", noted_detail);
    noted = 0;
    judging = outer;
    return was;
}

int dlock__sync_release(dlock_rlock *l, int (*release)(dlock_rlock *, const char *),
                        const char *owner)
{
    char detail[200];
    int outer = dlock__sync_enter();
    int rc = release(l, owner);

    if (!dlock__sync_leave(outer, detail, sizeof detail) || rc != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_ESYNC, "\"%.64s\": released, but not synced: %s",
                            l->name, detail);
}
