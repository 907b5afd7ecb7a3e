/*
 * dlock — the watchdog: one thread per client that keeps lease-0 locks alive.
 *
 * Every watchdog_timeout/3 it renews every watchdog-renewed hold, grouped by
 * the lock type's renewal script and by the node serving the lock's name
 * (dlock_backend_key_node; 0 for every key on one node, so there the
 * grouping is by script alone), up to BATCH holds per script call. A
 * script call may declare keys of one hash slot only (dlock_backend_key_slot:
 * Redis Cluster), so a batch over several slots of one node goes through
 * dlock_backend_eval_node (Redis 7 and Valkey run it as one call); where
 * the backend cannot (an older server, a slot moving: DLOCK_ENOTSUP), the
 * batch is split into one call per slot, as every batch was before: with
 * 10 000 held locks over the 16384 slots of 3 masters, about 100 calls per
 * period instead of about 7 500. A renewal repeated by that split is
 * harmless, and each hold's answer comes from one call either way. A hold
 * the script reports as no longer held stops being renewed and is reported
 * through on_lost (the lock object's, else the client's), the log hook and
 * the metrics; the hold stays in the registry so that the owner's unlock
 * answers DLOCK_ELOST. A hold past max_hold_ms is reported the same way
 * when its renewal stops. Errors (backend down) never stop the thread: they
 * are logged and counted, and the next period simply tries again.
 *
 * Holds that are not one key on this client's backend carry their type's
 * own renewal (dlock__renew_fn): a Redlock's hold is a key on each of its
 * nodes, each on its own client, and is kept by the Redlock handle's own
 * client (its first node's: see objects/types/redlock.c). For those, "batch"
 * means every renewable hold of one lock object, in one call of its
 * renew_fn per period (a Redlock renews them all on every node at once,
 * so that a stalled node costs the period one node budget, not one per
 * hold); the function says per hold renewed, gone or could not tell, and
 * the rest (metrics, log, lost marking, on_lost) is the same as for a
 * script's answers. The lock object is pinned meanwhile
 * (dlock__holds_pin): freeing its handle waits for the call to end.
 *
 * Periods count from their starts: a slow one (a stalled Redlock node is
 * given up to half a lease) does not push the next one later still.
 *
 * No registry lock is held during a script call or a renew_fn: the work
 * list is copied out first, and results are applied only to holds that are
 * still the same (same id, no change since).
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

#include "objects/runtime/watchdog.h"
#include "objects/runtime/client.h"
#include "objects/runtime/holds.h"
#include "objects/runtime/metrics.h"
#include "core/background.h"
#include "core/log.h"
#include "core/thread_name.h"

#define BATCH 100

int dlock__watchdog_threadless;

/* A script's answer the watchdog does not count either way. */
#define RENEW_NONE 2

typedef dlock__renewal renewal;

static int stopping(dlock_client *c)
{
    int stop;

    pthread_mutex_lock(&c->holds.mutex);
    stop = c->wd_stop;
    pthread_mutex_unlock(&c->holds.mutex);
    return stop;
}

/* A hold whose renewal max_hold_ms ended: reported after the registry's
 * mutex is released (the callback may call anything). */
typedef struct capped {
    char *name;
    char owner[DLOCK_OWNER_MAX];
    dlock_lost_fn fn;
    void *arg;
} capped;

/* Copies the renewable holds out of the registry; drops holds past
 * max_hold_ms from renewal (their lease then runs out on its own) into
 * *capped_out for the report. */
static renewal *collect(dlock_client *c, size_t *n_out, capped **capped_out,
                        size_t *ncapped_out)
{
    dlock__holds *h = &c->holds;
    int64_t now = dlock_clock_now(c->clock);
    renewal *list = NULL;
    capped *caps = NULL;
    size_t n = 0, ncaps = 0;
    dlock__hold *e;

    pthread_mutex_lock(&h->mutex);
    if (h->count > 0) {
        list = calloc(h->count, sizeof(*list));
        caps = calloc(h->count, sizeof(*caps));
    }
    for (e = h->head.next; list && caps && e != &h->head; e = e->next) {
        if (!e->renew)
            continue;
        if (c->opts.max_hold_ms > 0 && now - e->renew_since_ms >= c->opts.max_hold_ms) {
            e->renew = NULL;
            e->renew_fn = NULL;
            caps[ncaps].name = strdup(e->lock->name);
            if (!caps[ncaps].name)
                continue; /* renewal stops all the same; not reported */
            memcpy(caps[ncaps].owner, e->owner, sizeof(e->owner));
            dlock__lost_callback(e->lock, &caps[ncaps].fn, &caps[ncaps].arg);
            ncaps++;
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
        list[n].fn = e->renew_fn;
        list[n].renewed = DLOCK__RENEW_FAILED;
        memcpy(list[n].owner, e->owner, sizeof(e->owner));
        n++;
    }
    pthread_mutex_unlock(&h->mutex);
    if (!list || !caps) {
        free(list);
        free(caps);
        list = NULL;
        caps = NULL;
        n = ncaps = 0;
    }
    *n_out = n;
    *capped_out = caps;
    *ncapped_out = ncaps;
    return list;
}

/* Reports (and frees) the holds max_hold_ms took off renewal. */
static void report_capped(dlock_client *c, capped *caps, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        dlock__log(DLOCK_LOG_WARN, "lock \"%.128s\" of %s: renewal stopped at "
                   "max_hold_ms (%lld ms); the lease runs out", caps[i].name,
                   caps[i].owner, (long long)c->opts.max_hold_ms);
        if (caps[i].fn && !stopping(c))
            caps[i].fn(caps[i].arg, caps[i].name, caps[i].owner);
        free(caps[i].name);
    }
    free(caps);
}

/* The answers of list[0..n) (each hold's renewed): counted, and a hold
 * found gone is believed only if it was held and quiet when collected and
 * has not changed since (dlock__hold_lost): an acquisition or a release in
 * flight (or begun since) explains a missing lock, and that call answers
 * for itself. */
static void apply(dlock_client *c, renewal *list, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        dlock_lost_fn fn;
        void *arg;

        if (list[i].renewed == DLOCK__RENEWED)
            DLOCK__COUNT(c, renewals, 1);
        else if (list[i].renewed == DLOCK__RENEW_FAILED)
            DLOCK__COUNT(c, renewal_failures, 1);
        else if (list[i].renewed == DLOCK__RENEW_GONE && list[i].settled &&
                 dlock__hold_lost(c, list[i].lock, list[i].name, list[i].owner,
                                  list[i].id, list[i].changes, &fn, &arg) == 2 && fn)
            fn(arg, list[i].name, list[i].owner);
    }
}

/* One script call for list[0..n), all with the same script and node
 * (across: in several slots, through eval_node), else the same slot.
 * DLOCK_ENOTSUP (nothing counted or logged): eval_node could not run it. */
static int renew_batch(dlock_client *c, renewal *list, size_t n, int across)
{
    const char *argv[2 * BATCH + 1];
    char lease[32], detail[160] = "";
    dlock_reply *reply = NULL;
    size_t i;
    int rc;

    snprintf(lease, sizeof(lease), "%" PRId64, c->opts.watchdog_timeout_ms);
    for (i = 0; i < n; i++) {
        argv[i] = list[i].name;
        argv[n + 1 + i] = list[i].owner;
    }
    argv[n] = lease;
    rc = across ? dlock_backend_eval_node(c->backend, &reply, list[0].script, n,
                                          n + 1, argv, NULL, INT64_MAX, detail,
                                          sizeof(detail))
                : dlock_backend_eval(c->backend, &reply, list[0].script, n, n + 1,
                                     argv, NULL, detail, sizeof(detail));
    if (rc == DLOCK_ENOTSUP)
        return rc;
    /* Renewed, though not on enough replicas: the locks are held, not
     * lost; the next period's renewal is synced again. */
    if (rc == DLOCK_ESYNC)
        rc = 0;
    if (rc != 0 || reply->type != DLOCK_REPLY_ARRAY || reply->n != n) {
        /* backend trouble: try again next period (every renewed stays
         * DLOCK__RENEW_FAILED) */
        dlock__log(DLOCK_LOG_WARN, "renewal of %zu lock(s) (script %s, first "
                   "\"%.64s\") failed: %s; retrying in %lld ms", n,
                   list[0].script->name, list[0].name,
                   rc != 0 ? (detail[0] ? detail : dlock_strerror(rc))
                           : reply->type == DLOCK_REPLY_ERROR && reply->str
                                 ? reply->str : "unexpected reply",
                   (long long)(c->opts.watchdog_timeout_ms / 3));
        dlock_reply_free(reply);
        return rc;
    }
    for (i = 0; i < n; i++) {
        const dlock_reply *r = reply->elems[i];
        int known = r->type == DLOCK_REPLY_INTEGER && (r->integer == 0 || r->integer == 1);

        list[i].renewed = known ? (int)r->integer : RENEW_NONE;
    }
    dlock_reply_free(reply);
    return 0;
}

/* The script holds list[0..n) of one node, sorted by slot: one call, or
 * one per slot where the backend cannot run it over several. */
static void renew_node(dlock_client *c, renewal *list, size_t n)
{
    size_t i, j;

    if (list[0].slot != list[n - 1].slot &&
        renew_batch(c, list, n, 1) != DLOCK_ENOTSUP)
        return;
    for (i = 0; i < n; i = j) {
        for (j = i + 1; j < n && list[j].slot == list[i].slot; j++)
            ;
        renew_batch(c, list + i, j - i, 0);
    }
}

/* The holds of one lock object that renews them itself: its renew_fn, with
 * the object pinned. */
static void renew_by_fn(dlock_client *c, renewal *list, size_t n)
{
    size_t i, failed = 0;

    if (!dlock__holds_pin(&c->holds, list, n)) {
        for (i = 0; i < n; i++)
            list[i].renewed = RENEW_NONE; /* released, or the handle freed */
        return;
    }
    list[0].fn(list[0].lock, list, n, c->opts.watchdog_timeout_ms);
    dlock__holds_unpin(&c->holds);
    for (i = 0; i < n; i++)
        failed += list[i].renewed == DLOCK__RENEW_FAILED;
    if (failed > 0)
        dlock__log(DLOCK_LOG_WARN, "renewal of %zu of %zu hold(s) of \"%.64s\" "
                   "could not be confirmed; retrying in %lld ms", failed, n,
                   list[0].name, (long long)(c->opts.watchdog_timeout_ms / 3));
}

/* Script holds first, by script, node and slot (a batch is one script
 * call, or one per slot);
 * then the others by renew_fn and lock object (a batch is one call of the
 * object's renew_fn). */
static int by_batch(const void *a, const void *b)
{
    const renewal *p = a, *q = b;
    uintptr_t x = (uintptr_t)p->fn, y = (uintptr_t)q->fn;

    if (x == y && p->fn) {
        x = (uintptr_t)p->lock;
        y = (uintptr_t)q->lock;
    } else if (x == y) {
        x = (uintptr_t)p->script;
        y = (uintptr_t)q->script;
    }
    if (x != y)
        return x < y ? -1 : 1;
    if (p->node != q->node)
        return p->node < q->node ? -1 : 1;
    return p->slot < q->slot ? -1 : p->slot > q->slot;
}

/* Whether q goes in the batch that starts with p, of n so far. */
static int same_batch(const renewal *p, const renewal *q, size_t n)
{
    if (p->fn || q->fn)
        return p->fn == q->fn && p->lock == q->lock;
    return n < BATCH && p->script == q->script && p->node == q->node;
}

static void renew_all(dlock_client *c)
{
    size_t n, i, j, ncaps;
    capped *caps;
    renewal *list = collect(c, &n, &caps, &ncaps);

    if (!list)
        return;
    report_capped(c, caps, ncaps);
    for (i = 0; i < n; i++)
        if (!list[i].fn) {
            size_t len = strlen(list[i].name);
            list[i].slot = dlock_backend_key_slot(c->backend, list[i].name, len);
            list[i].node = dlock_backend_key_node(c->backend, list[i].name, len);
        }
    qsort(list, n, sizeof(*list), by_batch);
    /* An on_lost callback may have dropped the last reference (or another
     * thread is freeing the client): no point in the remaining batches. */
    for (i = 0; i < n && !stopping(c); i = j) {
        for (j = i + 1; j < n && same_batch(&list[i], &list[j], j - i); j++)
            ;
        if (list[i].fn)
            renew_by_fn(c, list + i, j - i);
        else
            renew_node(c, list + i, j - i);
        apply(c, list + i, j - i);
    }
    for (i = 0; i < n; i++)
        free(list[i].name);
    free(list);
}

void dlock__watchdog_round(dlock_client *c)
{
    renew_all(c);
}

static void *watchdog_main(void *arg)
{
    dlock_client *c = arg;
    int64_t period = c->opts.watchdog_timeout_ms / 3;
    int64_t next = dlock_clock_now(c->clock) + period;
    int orphaned, rc;

    /* The client's description (report/describe.c): at once, then with every
     * renewal round. */
    if (c->opts.describe_owner)
        next = dlock_clock_now(c->clock);

    /* Not a thread a test waits for: dlock_vclock_wait_waiters. */
    dlock__thread_mark_background();
    for (;;) {
        dlock_clock_sleep_until(c->clock, &c->wd_signal, next);
        if (stopping(c))
            break;
        if (dlock_clock_now(c->clock) < next)
            continue; /* raised for nothing but stopping */
        if (c->opts.describe_owner && (rc = dlock_client_describe(c)) != 0)
            dlock__log(DLOCK_LOG_WARN, "publishing the client's description failed: %s; "
                       "retrying in %lld ms", dlock_strerror(rc), (long long)period);
        renew_all(c);
        if (!stopping(c))
            dlock__metrics_push(c); /* may drop the last reference, as on_lost */
        if (stopping(c))
            break;
        next += period;
        if (next < dlock_clock_now(c->clock))
            next = dlock_clock_now(c->clock);
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
    if (dlock__watchdog_threadless)
        return 0; /* a loop drives it, or nothing renews (watchdog.h) */
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
