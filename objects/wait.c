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

/* The loop of dlock_rlock_wait after a first attempt that did not get the
 * lock (rc: DLOCK_EBUSY, or a transport error), with the budget already
 * set for the calling thread. */
/* One attempt, counted in the client's metrics when refused. */
static int attempt(dlock_rlock *l, const dlock_wait_spec *spec, const char *owner,
                   int64_t lease_ms, int64_t *retry_ms)
{
    int rc = spec->attempt(l, spec, owner, lease_ms, retry_ms);

    if (rc == DLOCK_EBUSY)
        DLOCK__COUNT(l->client, busy, 1);
    return rc;
}

static int wait_loop(dlock_rlock *l, const dlock_wait_spec *spec,
                     const char *owner, int64_t wait_ms, int64_t lease_ms,
                     int64_t deadline, int64_t cap, int rc, int64_t retry_ms,
                     int64_t sent, dlock__waiter *waiter)
{
    dlock_backend *b = l->client->backend;
    dlock_clock *clk = l->client->clock;
    int64_t step = BACKOFF_MIN_MS;
    dlock_subscription *sub = NULL;
    dlock_signal sig;

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
        } else if (sub) {
            /* The holder's TTL bounds the sleep: an expired lease sends no
             * message. It counts from before the attempt was sent: time
             * spent on the way must not push our wake-up past it. */
            int64_t wake = retry_ms >= 0 ? min64(deadline, dlock__add_sat(sent, retry_ms))
                                         : deadline;
            step = BACKOFF_MIN_MS;
            if (wake > now)
                dlock_clock_sleep_until(clk, &sig, wake);
        }
        if (!sub) {
            char detail[160];
            int src = dlock_backend_subscribe_until(b, &sub, spec->channel,
                                                    on_message, &sig, cap,
                                                    detail, sizeof(detail));
            if (src != 0) {
                sub = NULL;
                rc = dlock_rlock_fail(l, src, "subscribing to \"%.64s\": %s",
                                      spec->channel,
                                      detail[0] ? detail : dlock_strerror(src));
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
        rc = attempt(l, spec, owner, lease_ms, &retry_ms);
        if (rc == 0 || (rc != DLOCK_EBUSY && !is_transport_error(rc)))
            break;
    }
    /* The budget ran out: after a refusal it is a timeout; after a
     * transport error that error, whose detail is recorded. */
    if (rc == DLOCK_EBUSY)
        rc = dlock_rlock_fail(l, DLOCK_ETIMEDOUT, "waited %lld ms for \"%.64s\"",
                              (long long)wait_ms, l->name);
    if (sub)
        dlock_backend_unsubscribe(b, sub);
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

    rc = attempt(l, spec, owner, lease_ms, &retry_ms);
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
