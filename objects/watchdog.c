/*
 * dlock — the watchdog: one thread per client that keeps lease-0 locks alive.
 *
 * Every watchdog_timeout/3 it renews every watchdog-renewed hold, grouped by
 * the lock type's renewal script, up to BATCH holds per script call. A hold
 * the script reports as no longer held stops being renewed and is reported
 * through on_lost; the hold stays in the registry so that the owner's unlock
 * answers DLOCK_ELOST. Errors (backend down) never stop the thread: the next
 * period simply tries again.
 *
 * No registry lock is held during a script call: the work list is copied out
 * first, and results are applied only to holds that are still the same
 * (same id).
 *
 * on_lost may drop the client's last reference (the application had freed
 * the client and frees the lost lock's handle in the callback). The thread
 * then cannot be joined by anyone: it is "orphaned", stops after the
 * callback returns, and tears the client down itself, detached
 * (dlock__client_destroy_on_watchdog).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "../backends/common/background.h"
#include "../backends/common/thread_name.h"

#define BATCH 100

typedef struct renewal {
    uint64_t id;
    uint64_t changes;   /* the hold's change count when collected */
    int settled;        /* held, and no call changing it, when collected */
    dlock_rlock *lock; /* compared, never dereferenced outside the mutex */
    const dlock_script *script;
    char *name;
    char owner[DLOCK_OWNER_MAX];
} renewal;

/* Copies the renewable holds out of the registry; drops holds past
 * max_hold_ms from renewal (their lease then runs out on its own). */
static renewal *collect(dlock_client *c, size_t *n_out)
{
    dlock__holds *h = &c->holds;
    int64_t now = dlock_clock_now(c->clock);
    renewal *list = NULL;
    size_t n = 0;
    dlock__hold *e;

    pthread_mutex_lock(&h->mutex);
    if (h->count > 0)
        list = calloc(h->count, sizeof(*list));
    for (e = h->head.next; list && e != &h->head; e = e->next) {
        if (!e->renew)
            continue;
        if (c->opts.max_hold_ms > 0 && now - e->renew_since_ms >= c->opts.max_hold_ms) {
            e->renew = NULL;
            continue;
        }
        list[n].name = strdup(e->lock->name);
        if (!list[n].name)
            continue; /* retried next period */
        list[n].id = e->id;
        list[n].changes = e->changes;
        list[n].settled = e->count > 0 && e->acquiring == 0 && e->releasing == 0;
        list[n].lock = e->lock;
        list[n].script = e->renew;
        memcpy(list[n].owner, e->owner, sizeof(e->owner));
        n++;
    }
    pthread_mutex_unlock(&h->mutex);
    *n_out = n;
    return list;
}

/* The backend says the hold is gone: stop renewing it and keep it for
 * DLOCK_ELOST. Returns 1 when that is news to report. A "gone" is believed
 * only for a hold that was held and quiet when collected and has not changed
 * since: an acquisition or a release in flight (or begun since) explains a
 * missing lock, and that call answers for itself. */
static int mark_lost(dlock_client *c, const renewal *r)
{
    dlock__holds *h = &c->holds;
    dlock__hold *e;
    int found = 0;

    if (!r->settled)
        return 0;
    pthread_mutex_lock(&h->mutex);
    for (e = h->head.next; e != &h->head; e = e->next) {
        if (e->id != r->id)
            continue;
        if (e->changes == r->changes && e->acquiring == 0 && e->releasing == 0) {
            found = e->renew != NULL;
            e->renew = NULL;
        }
        break;
    }
    pthread_mutex_unlock(&h->mutex);
    return found;
}

/* One script call for list[0..n), all with the same script. */
static void renew_batch(dlock_client *c, renewal *list, size_t n)
{
    const char *argv[2 * BATCH + 1];
    char lease[32];
    dlock_reply *reply = NULL;
    size_t i;
    int rc;

    snprintf(lease, sizeof(lease), "%" PRId64, c->opts.watchdog_timeout_ms);
    for (i = 0; i < n; i++) {
        argv[i] = list[i].name;
        argv[n + 1 + i] = list[i].owner;
    }
    argv[n] = lease;
    rc = dlock_backend_eval(c->backend, &reply, list[0].script, n, n + 1, argv,
                            NULL, NULL, 0);
    if (rc != 0 || reply->type != DLOCK_REPLY_ARRAY || reply->n != n) {
        dlock_reply_free(reply);
        return; /* backend trouble: try again next period */
    }
    for (i = 0; i < n; i++) {
        const dlock_reply *r = reply->elems[i];
        if (r->type == DLOCK_REPLY_INTEGER && r->integer == 0 &&
            mark_lost(c, &list[i]) && c->opts.on_lost)
            c->opts.on_lost(c->opts.on_lost_arg, list[i].name, list[i].owner);
    }
    dlock_reply_free(reply);
}

static int by_script(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const renewal *)a)->script;
    uintptr_t y = (uintptr_t)((const renewal *)b)->script;
    return x < y ? -1 : x > y;
}

static int stopping(dlock_client *c)
{
    int stop;

    pthread_mutex_lock(&c->holds.mutex);
    stop = c->wd_stop;
    pthread_mutex_unlock(&c->holds.mutex);
    return stop;
}

static void renew_all(dlock_client *c)
{
    size_t n, i, j;
    renewal *list = collect(c, &n);

    if (!list)
        return;
    qsort(list, n, sizeof(*list), by_script);
    /* An on_lost callback may have dropped the last reference (or another
     * thread is freeing the client): no point in the remaining batches. */
    for (i = 0; i < n && !stopping(c); i = j) {
        for (j = i + 1; j < n && j - i < BATCH && list[j].script == list[i].script; j++)
            ;
        renew_batch(c, list + i, j - i);
    }
    for (i = 0; i < n; i++)
        free(list[i].name);
    free(list);
}

static void *watchdog_main(void *arg)
{
    dlock_client *c = arg;
    int64_t period = c->opts.watchdog_timeout_ms / 3;
    int64_t next = dlock_clock_now(c->clock) + period;
    int orphaned;

    /* Not a thread a test waits for: dlock_vclock_wait_waiters. */
    dlock__thread_mark_background();
    for (;;) {
        dlock_clock_sleep_until(c->clock, &c->wd_signal, next);
        if (stopping(c))
            break;
        if (dlock_clock_now(c->clock) < next)
            continue; /* raised for nothing but stopping */
        renew_all(c);
        if (stopping(c))
            break;
        next = dlock_clock_now(c->clock) + period;
    }
    pthread_mutex_lock(&c->holds.mutex);
    orphaned = c->wd_orphaned;
    pthread_mutex_unlock(&c->holds.mutex);
    if (orphaned)
        dlock__client_destroy_on_watchdog(c); /* c is gone after this */
    else
        dlock_clock_done(c->clock, &c->wd_signal);
    return NULL;
}

int dlock__watchdog_start(dlock_client *c)
{
    if (dlock_signal_init(&c->wd_signal) != 0)
        return DLOCK_ENOMEM;
    /* Before the thread exists, so that a virtual-clock advance made right
     * after dlock_client_new waits for the watchdog's first sleep. */
    dlock_clock_busy(c->clock, &c->wd_signal);
    if (pthread_create(&c->wd_thread, NULL, watchdog_main, c) != 0) {
        dlock_clock_done(c->clock, &c->wd_signal);
        dlock_signal_destroy(&c->wd_signal);
        return DLOCK_ENOMEM;
    }
    dlock__thread_name(c->wd_thread, "dlock-watchdog");
    c->wd_started = 1;
    return 0;
}

void dlock__watchdog_stop(dlock_client *c)
{
    if (!c->wd_started)
        return;
    pthread_mutex_lock(&c->holds.mutex);
    c->wd_stop = 1;
    pthread_mutex_unlock(&c->holds.mutex);
    dlock_signal_raise(&c->wd_signal);
    pthread_join(c->wd_thread, NULL);
    dlock_signal_destroy(&c->wd_signal);
    c->wd_started = 0;
}

int dlock__watchdog_is_current(const dlock_client *c)
{
    return c->wd_started && pthread_equal(pthread_self(), c->wd_thread);
}

void dlock__watchdog_orphan(dlock_client *c)
{
    pthread_mutex_lock(&c->holds.mutex);
    c->wd_stop = 1;
    c->wd_orphaned = 1;
    pthread_mutex_unlock(&c->holds.mutex);
}
