/*
 * dlock — waiting for a lock: pub/sub wake-ups, no polling.
 *
 * A blocked acquirer subscribes to the lock's channel (the backend shares one
 * server subscription per channel among all listeners of a client) and
 * sleeps on the backend's clock until a message arrives, the holder's TTL
 * runs out or the budget is spent. The attempt made right after subscribing
 * is what makes a release published before the subscription impossible to
 * miss.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000

static void on_message(void *arg, const char *channel, const char *message,
                       size_t len)
{
    (void)channel, (void)message, (void)len;
    dlock_signal_raise(arg);
}

static int is_transport_error(int rc)
{
    return rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Sleeps the back-off after a transport error, never past deadline. */
static void back_off(dlock_clock *clk, dlock_signal *sig, int64_t *step,
                     int64_t deadline)
{
    dlock_clock_sleep_until(clk, sig, min64(dlock__add_sat(dlock_clock_now(clk), *step),
                                            deadline));
    *step = min64(*step * 2, BACKOFF_MAX_MS);
}

/* The channel subscriptions of one wait: one on l's client's backend, or
 * with a version-2 spec listing backends, one per listed backend, made best
 * effort (see api/dlock/sys/rlock.h). */
typedef struct listen_set {
    const dlock_wait_spec *spec;
    dlock_backend *own;
    dlock_subscription *one;
    dlock_subscription **many; /* spec->nbackends, NULL: not (yet) */
    int listening;             /* subscribed at least once (or tried all) */
} listen_set;

static size_t listen_count(const listen_set *ls)
{
    return ls->spec->version >= 2 ? ls->spec->nbackends : 0;
}

/* Subscribes what is missing. 0, or (single backend only) the failure,
 * recorded on l. */
static int listen_more(dlock_rlock *l, listen_set *ls, dlock_signal *sig,
                       int64_t cap)
{
    char detail[160];
    size_t i, n = listen_count(ls);
    int src;

    if (n == 0) {
        src = dlock_backend_subscribe_until(ls->own, &ls->one, ls->spec->channel,
                                            on_message, sig, cap, detail,
                                            sizeof(detail));
        if (src != 0) {
            ls->one = NULL;
            return dlock_rlock_fail(l, src, "subscribing to \"%.64s\": %s",
                                    ls->spec->channel,
                                    detail[0] ? detail : dlock_strerror(src));
        }
        ls->listening = 1;
        return 0;
    }
    if (!ls->many && !(ls->many = calloc(n, sizeof(*ls->many))))
        return 0; /* no wake-ups: the attempts' retry times bound the sleeps */
    for (i = 0; i < n; i++) {
        dlock_backend *b = ls->spec->backends[i];
        int64_t until;

        if (ls->many[i] || !b)
            continue;
        until = min64(cap, dlock__add_sat(dlock_clock_now(dlock_backend_clock(b)),
                                          ls->spec->subscribe_timeout_ms));
        if (dlock_backend_subscribe_until(b, &ls->many[i], ls->spec->channel,
                                          on_message, sig, until, detail,
                                          sizeof(detail)) != 0)
            ls->many[i] = NULL;
    }
    ls->listening = 1;
    return 0;
}

static int listen_complete(const listen_set *ls)
{
    size_t i, n = listen_count(ls);

    if (n == 0)
        return ls->one != NULL;
    if (!ls->many)
        return ls->listening;
    for (i = 0; i < n; i++)
        if (!ls->many[i] && ls->spec->backends[i])
            return 0;
    return 1;
}

static void listen_end(listen_set *ls)
{
    size_t i, n = listen_count(ls);

    if (ls->one)
        dlock_backend_unsubscribe(ls->own, ls->one);
    for (i = 0; ls->many && i < n; i++)
        if (ls->many[i])
            dlock_backend_unsubscribe(ls->spec->backends[i], ls->many[i]);
    free(ls->many);
}

/* The loop of dlock_rlock_wait after a first attempt that did not get the
 * lock (rc: DLOCK_EBUSY, or a transport error), with the budget already
 * set for the calling thread. */
static int wait_loop(dlock_rlock *l, const dlock_wait_spec *spec,
                     const char *owner, int64_t wait_ms, int64_t lease_ms,
                     int64_t deadline, int64_t cap, int rc, int64_t retry_ms,
                     int64_t sent, dlock__waiter *waiter)
{
    dlock_clock *clk = l->client->clock;
    int64_t step = BACKOFF_MIN_MS;
    listen_set ls;
    dlock_signal sig;

    memset(&ls, 0, sizeof(ls));
    ls.spec = spec;
    ls.own = l->client->backend;
    if (dlock_signal_init(&sig) != 0)
        return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory while waiting");
    dlock__waiter_add(l->client, waiter, &sig);
    for (;;) {
        int64_t now = dlock_clock_now(clk);

        /* Every wake-up and back-off comes back here: a cancel raised the
         * signal, or came during a round trip. */
        if (dlock__waiter_canceled(l->client, waiter)) {
            rc = dlock_rlock_fail(l, DLOCK_ECANCELED, "wait for \"%.64s\" canceled",
                                  l->name);
            break;
        }
        /* The budget is checked before every step (sleep, subscribe,
         * attempt), so that no step starts once it is spent. */
        if (now >= deadline)
            break;
        if (is_transport_error(rc)) {
            back_off(clk, &sig, &step, deadline);
        } else if (ls.listening) {
            /* The holder's TTL bounds the sleep: an expired lease sends no
             * message. It counts from before the attempt was sent: time
             * spent on the way must not push our wake-up past it. */
            int64_t wake = retry_ms >= 0 ? min64(deadline, dlock__add_sat(sent, retry_ms))
                                         : deadline;
            step = BACKOFF_MIN_MS;
            if (wake > now)
                dlock_clock_sleep_until(clk, &sig, wake);
        }
        if (!listen_complete(&ls)) {
            int src = listen_more(l, &ls, &sig, cap);
            if (src != 0) {
                rc = src;
                if (!is_transport_error(src))
                    break;
                continue;
            }
        }
        if (dlock_clock_now(clk) >= deadline ||
            dlock__waiter_canceled(l->client, waiter))
            continue; /* ends the loop at its top */
        /* After subscribing, after a wake-up or a back-off: look again (the
         * attempt right after subscribing is what makes a release published
         * before the subscription impossible to miss). */
        sent = dlock_clock_now(clk);
        rc = spec->attempt(l, spec, owner, lease_ms, &retry_ms);
        if (rc == 0 || (rc != DLOCK_EBUSY && !is_transport_error(rc)))
            break;
    }
    /* The budget ran out: after a refusal it is a timeout; after a
     * transport error that error, whose detail is recorded. */
    if (rc == DLOCK_EBUSY)
        rc = dlock_rlock_fail(l, DLOCK_ETIMEDOUT, "waited %lld ms for \"%.64s\"",
                              (long long)wait_ms, l->name);
    listen_end(&ls);
    dlock__waiter_end(l->client, waiter);
    dlock_clock_done(clk, &sig);
    dlock_signal_destroy(&sig);
    return rc;
}

int dlock_rlock_wait(dlock_rlock *l, const dlock_wait_spec *spec,
                     const char *owner, int64_t wait_ms, int64_t lease_ms)
{
    dlock_clock *clk = l->client->clock;
    int forever = wait_ms == DLOCK_WAIT_FOREVER;
    int64_t start = dlock_clock_now(clk), retry_ms = -1;
    int64_t deadline = forever ? INT64_MAX : dlock__add_sat(start, wait_ms);
    /* Every round trip made for this call ends by cap: a reply later than
     * that is abandoned (the backend drops its connection). */
    int64_t cap = forever ? INT64_MAX
                          : dlock__add_sat(deadline, l->client->opts.budget_slack_ms);
    int64_t outer = dlock__budget_enter(cap);
    dlock__waiter waiter = dlock__waiter_begin(l->client); /* cancel_waits */
    int rc, refused;

    rc = spec->attempt(l, spec, owner, lease_ms, &retry_ms);
    refused = rc == DLOCK_EBUSY || is_transport_error(rc);
    /* A wait of 0 gets its one attempt; a longer one looks again after a
     * refusal, and after a transport error too (with back-off), while its
     * budget lasts. */
    if (wait_ms != 0 && refused)
        rc = wait_loop(l, spec, owner, wait_ms, lease_ms, deadline, cap, rc,
                       retry_ms, start, &waiter);
    /* An attempt refused, or whose reply was lost, may have left traces
     * (a queue place): the give-up clears them, within the same cap. */
    if (rc != 0 && refused && spec->give_up)
        spec->give_up(l, spec, owner);
    dlock__budget_leave(outer);
    return rc;
}

int64_t dlock__retry_after(int64_t ttl_ms)
{
    /* -1: the lock does not expire, only a release message ends the wait;
     * 0: it expires now, look again at once (a little later) */
    return ttl_ms >= 0 ? (ttl_ms > 0 ? ttl_ms : 1) : -1;
}

int dlock__attempt_refused(dlock_rlock *l, const dlock_script *s, dlock_reply *r,
                           int64_t *retry_ms)
{
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, s, r);
    /* The holder's TTL bounds the sleep: an expiring lease sends no
     * message. */
    *retry_ms = dlock__retry_after(r->integer);
    dlock_reply_free(r);
    return 0;
}
