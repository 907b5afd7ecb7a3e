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

/* Sleeps the back-off after a transport error in an unbounded lock(). */
static void back_off(dlock_clock *clk, dlock_signal *sig, int64_t *step)
{
    dlock_clock_sleep_until(clk, sig, dlock_clock_now(clk) + *step);
    *step = min64(*step * 2, BACKOFF_MAX_MS);
}

int dlock_rlock_wait(dlock_rlock *l, const dlock_wait_spec *spec,
                     const char *owner, int64_t wait_ms, int64_t lease_ms)
{
    dlock_backend *b = l->client->backend;
    dlock_clock *clk = l->client->clock;
    int forever = wait_ms == DLOCK_WAIT_FOREVER;
    int64_t deadline, retry_ms = -1, step = BACKOFF_MIN_MS;
    dlock_subscription *sub = NULL;
    dlock_signal sig;
    dlock__waiter waiter = dlock__waiter_begin(l->client); /* cancel_waits */
    int rc;

    deadline = forever ? INT64_MAX : dlock_clock_now(clk) + wait_ms;
    rc = spec->attempt(l, spec, owner, lease_ms, &retry_ms);
    if (rc != DLOCK_EBUSY && !(forever && is_transport_error(rc)))
        return rc;
    if (wait_ms == 0 || dlock_signal_init(&sig) != 0) {
        if (wait_ms != 0)
            rc = dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory while waiting");
        if (spec->give_up)
            spec->give_up(l, spec, owner);
        return rc;
    }
    dlock__waiter_add(l->client, &waiter, &sig);

    for (;;) {
        int64_t now, wake, sent;

        /* Every wake-up (and back-off) comes back here: a cancel raised
         * the signal, or came during a round trip. */
        if (dlock__waiter_canceled(l->client, &waiter)) {
            rc = dlock_rlock_fail(l, DLOCK_ECANCELED, "wait for \"%.64s\" canceled",
                                  l->name);
            break;
        }

        if (!sub) {
            int src = dlock_backend_subscribe(b, &sub, spec->channel, on_message, &sig);
            if (src != 0) {
                sub = NULL;
                rc = dlock_rlock_fail(l, src, "subscribing to \"%.64s\": %s",
                                      spec->channel, dlock_strerror(src));
                if (!(forever && is_transport_error(src)))
                    break;
                back_off(clk, &sig, &step);
                continue;
            }
        }
        /* After subscribing, or after a wake-up: look again. The TTL the
         * attempt returns counts from before it was sent: time spent on the
         * way must not push our wake-up past the holder's expiry. */
        sent = dlock_clock_now(clk);
        rc = spec->attempt(l, spec, owner, lease_ms, &retry_ms);
        if (rc == 0)
            break;
        if (rc != DLOCK_EBUSY) {
            if (!(forever && is_transport_error(rc)))
                break;
            back_off(clk, &sig, &step);
            continue;
        }
        step = BACKOFF_MIN_MS;
        now = dlock_clock_now(clk);
        if (now >= deadline) {
            rc = dlock_rlock_fail(l, DLOCK_ETIMEDOUT,
                                  "waited %lld ms for \"%.64s\"",
                                  (long long)wait_ms, l->name);
            break;
        }
        /* The holder's TTL bounds the sleep: an expired lease sends no
         * message. */
        wake = retry_ms >= 0 ? min64(deadline, sent + retry_ms) : deadline;
        if (wake > now)
            dlock_clock_sleep_until(clk, &sig, wake);
    }

    if (sub)
        dlock_backend_unsubscribe(b, sub);
    dlock__waiter_end(l->client, &waiter);
    dlock_clock_done(clk, &sig);
    dlock_signal_destroy(&sig);
    if (rc != 0 && spec->give_up)
        spec->give_up(l, spec, owner);
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
