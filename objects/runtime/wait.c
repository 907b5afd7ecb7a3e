/*
 * dlock — waiting for a lock: pub/sub wake-ups, no polling.
 *
 * A blocked acquirer joins its client's queue of the lock's channel
 * (wakes.h: one server subscription per channel and client, the waiters
 * in arrival order) and sleeps on the backend's clock until a message
 * chooses it, the holder's TTL runs out or the budget is spent. A message
 * wakes as few waiters as can use it (an unlock the first one, a read
 * unlock every one, a semaphore's count that many: dlock_wait_spec.wake),
 * so one release costs one attempt, not one per waiter. The attempt made
 * right after subscribing is what makes a release published before the
 * subscription impossible to miss. A wait on several backends (Redlock)
 * listens on each with its own subscriptions, woken by every message.
 *
 * A wait without a channel (the spin lock) polls instead: exponential
 * back-off with jitter between attempts, still bounded by the holder's TTL
 * and the budget, and woken by a cancel like any other wait.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock/sys/lock_type.h"

#include "core/fiber.h"

#include "objects/runtime/client.h"
#include "objects/runtime/metrics.h"
#include "objects/runtime/op.h"
#include "objects/runtime/base.h"
#include "objects/runtime/wakes.h"

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000
/* Polling defaults: Redisson's spin lock's (1 ms, doubling up to 128 ms). */
#define POLL_MIN_MS 1
#define POLL_MAX_MS 128
/* The floor between attempts that messages alone caused (issue 28
 * section 6), wakes.h's token bucket: a queued wait shares its channel's
 * (charged by refused attempts only, so hand-offs go at full speed); a
 * wait on several backends keeps one of its own, charged by every
 * message-caused attempt: DLOCK__FLOOR_BURST at once, then one per
 * DLOCK__FLOOR_MS, messages meanwhile coalesced into the next allowed
 * attempt. Wake-ups of the holder's TTL, a back-off or the deadline are
 * not floored. On the real-time clock only (a virtual clock moves when its
 * test says; a test there drives its own messages). */

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

/* The channel subscriptions of one wait: one on l's client's backend, or
 * with a spec listing backends, one per listed backend, made best
 * effort (see api/dlock/sys/methods.h). */
typedef struct listen_set {
    const dlock_wait_spec *spec;
    dlock_backend *own;
    dlock_subscription *one;
    dlock_subscription **many; /* spec->nbackends, NULL: not (yet) */
    int listening;             /* subscribed at least once (or tried all) */
} listen_set;

/* The backends a spec listens on one by one (0: l's client's, queued). */
static size_t spec_backends(const dlock_wait_spec *spec)
{
    return spec->nbackends;
}

static size_t listen_count(const listen_set *ls)
{
    return spec_backends(ls->spec);
}

/* Subscribes what is missing. 0, or (single backend only) the failure,
 * recorded on l. */
static int listen_more(dlock_rlock *l, listen_set *ls, dlock_signal *sig,
                       int64_t cap)
{
    char detail[512];
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

/* One attempt, judged on its own (a shortfall noted before, an earlier
 * refused attempt's, is not this one's), and counted in the client's
 * metrics when refused. */
static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    int rc;

    dlock__op_clear_note(op);
    rc = spec->attempt(l, op, spec, lease_ms, retry_ms);
    if (rc == DLOCK_EBUSY)
        DLOCK__COUNT_NAMED(l->client, busy, l->name, l->name_len);
    return rc;
}

/* An acquisition the backend could not sync to enough replicas would not
 * survive a failover: it is undone, and the caller told why. */
/* Not inlined (nor wait_end): their buffers would widen the frame the
 * attempts run under, and a loop's fiber keeps every stack page it
 * touched resident while it waits. */
__attribute__((noinline)) static int roll_back(dlock_rlock *l, dlock_op *op,
                                               const dlock_wait_spec *spec,
                     const char *why)
{
    char detail[512];
    int rc, outer;

    snprintf(detail, sizeof detail, "%s", why);
    /* judged: the undo's own shortfall adds nothing, and a release must
     * reach the hold bookkeeping as done */
    outer = dlock__op_judge_begin(op);
    if (spec->undo)
        rc = spec->undo(l, op, spec);
    else if (l->methods->release)
        rc = l->methods->release(l, op);
    else
        rc = DLOCK_ENOTSUP;
    dlock__op_judge_end(op, outer, NULL, 0);
    if (rc != 0)
        return dlock_rlock_fail(l, DLOCK_ESYNC,
                                "\"%.64s\" was acquired but not synced (%s), "
                                "and undoing it failed: %s",
                                l->name, detail, dlock_strerror(rc));
    return dlock_rlock_fail(l, DLOCK_ESYNC,
                            "\"%.64s\" was acquired but not synced, so "
                            "released again: %s",
                            l->name, detail);
}

/* An xorshift64* generator per wait, seeded from the clock and the wait's
 * address: jitter needs no quality, only that waiters started together do
 * not poll in step. On another clock than the real one (the virtual clock
 * of a test or of the simulator, tests/sim/) from that clock's time and
 * the owner id instead, which tell two waiters apart as well: there a run
 * must not depend on real time or addresses, so that a seed replays the
 * same schedule. */
static uint64_t jitter_seed(const void *w, dlock_clock *clk, const char *owner)
{
    struct timespec ts;
    uint64_t h;
    const char *p;

    if (clk != dlock_clock_realtime()) {
        h = (uint64_t)dlock_clock_now(clk) * 0x9e3779b97f4a7c15ULL;
        for (p = owner ? owner : ""; *p; p++)
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
        return h | 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)(uintptr_t)w ^ (uint64_t)ts.tv_nsec ^
            ((uint64_t)ts.tv_sec << 32)) | 1;
}

static uint64_t jitter_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 2685821657736338717ULL;
}

/* The pause before the next poll: half the step plus a random part of the
 * other half ("equal jitter"); the step doubles up to max. */
static int64_t poll_pause(uint64_t *rng, int64_t *step, int64_t max)
{
    int64_t s = *step, half = s / 2;
    int64_t pause = half + (int64_t)(jitter_next(rng) % (uint64_t)(s - half + 1));

    *step = min64(s * 2, max);
    return pause > 0 ? pause : 1;
}

/* The polling bounds of a wait without a channel: the spec's (> 0), else
 * the defaults. */
static void poll_bounds(const dlock_wait_spec *spec, int64_t *min_ms, int64_t *max_ms)
{
    *min_ms = spec->poll_min_ms > 0 ? spec->poll_min_ms : POLL_MIN_MS;
    *max_ms = spec->poll_max_ms > 0 ? spec->poll_max_ms : POLL_MAX_MS;
    if (*max_ms < *min_ms)
        *max_ms = *min_ms;
}

/* ---- the wait as a state machine -------------------------------------------
 *
 * One acquisition's wait, written once for every lock type: attempt ->
 * (refused) subscribe -> attempt -> sleep until a message, the retry time
 * or the deadline -> attempt ... -> the lock, or give up (a timeout, a
 * cancel, an error) and undo what an unsynced grant left. wait_step runs
 * the machine until it must sleep and says until when; whoever drives it
 * sleeps on the wait's signal (a message or a cancel raises it early) and
 * steps again. dlock_rlock_wait is the blocking driver, on the caller's
 * own thread. All the state is here and in the op: none in the thread. */

enum phase {
    P_FIRST,   /* the first attempt */
    P_TOP,     /* checks (cancel, deadline), then the next sleep */
    P_LISTEN,  /* subscribe what is missing */
    P_ATTEMPT, /* look again */
    P_DONE,
};

/* wait_step's answer when the machine has ended (else: sleep until). */
#define WAIT_DONE INT64_MIN

typedef struct wait_state {
    dlock_rlock *l;
    dlock_op *op;
    const dlock_wait_spec *spec;
    dlock_clock *clk;
    int64_t wait_ms, lease_ms;
    int64_t outer_cap, outer_deadline; /* op's, restored at the end */
    int outer_judging;
    enum phase phase;
    int rc;
    int refused;        /* the first attempt was refused or lost */
    int looping;        /* the loop's resources are set up */
    int64_t retry_ms;   /* the last refusal's retry time */
    int64_t sent;       /* when the last attempt was sent */
    int64_t slept_until; /* the sleep just ended was planned until then
                          * (0: no sleep: the wake-up is the plan's) */
    int64_t msg_tat;    /* several backends: the floor's bucket (GCRA
                         * theoretical arrival time; 0: full) */
    int64_t step;       /* back-off after a transport error */
    int poll;           /* no channel: poll (the spin lock's way) */
    int several;        /* several backends: listens with ls */
    int queued;         /* one backend: in the client's queue (entry) */
    int again;          /* queued: a message came during the refused
                         * attempt: look again without sleeping */
    /* One of the three ways a wait hears of a change (a parked record
     * keeps only the largest). */
    union {
        dlock__wake_entry entry; /* queued */
        listen_set ls;           /* several */
        struct {
            int64_t step, max;
            uint64_t rng;
        } poll;                  /* poll */
    } u;
    dlock_signal sig;
    dlock__waiter waiter;
} wait_state;

/* The spec's DLOCK_WAKE_* (an unknown rule: every waiter at every
 * message). */
static int wake_rule(const dlock_wait_spec *spec)
{
    if (spec->wake < DLOCK_WAKE_EVERY || spec->wake > DLOCK_WAKE_COUNT)
        return DLOCK_WAKE_EVERY;
    return spec->wake;
}

/* Sets the wait up for op: its deadline and cap (every round trip made
 * for it ends by cap: a reply later than that is abandoned, the backend
 * drops its connection), a judged region for the attempts, and the
 * cancel generation. */
static void wait_begin(wait_state *w, dlock_rlock *l, dlock_op *op,
                       const dlock_wait_spec *spec, int64_t wait_ms,
                       int64_t lease_ms)
{
    int forever = wait_ms == DLOCK_WAIT_FOREVER;
    int64_t start;

    memset(w, 0, sizeof(*w));
    w->l = l;
    w->op = op;
    w->spec = spec;
    w->clk = l->client->clock;
    w->wait_ms = wait_ms;
    w->lease_ms = lease_ms;
    w->retry_ms = -1;
    /* The budget counts from the call's start: an asynchronous one's
     * starter, however long it waited for the loop. */
    start = dlock__op_wait_start(w->clk, wait_ms);
    w->sent = dlock_clock_now(w->clk);
    w->outer_deadline = op->deadline_ms;
    op->deadline_ms = forever ? INT64_MAX : dlock__add_sat(start, wait_ms);
    w->outer_cap = dlock__op_cap_within(
        op, forever ? INT64_MAX
                    : dlock__add_sat(op->deadline_ms, l->client->opts.budget_slack_ms));
    w->waiter = dlock__waiter_begin(l->client); /* cancel_waits */
    w->outer_judging = dlock__op_judge_begin(op); /* the attempts are judged */
    w->phase = P_FIRST;
}

/* What the loop needs beyond the first attempt: the signal it sleeps on,
 * registered for cancels. 0, or DLOCK_ENOMEM (recorded). */
static int loop_begin(wait_state *w)
{
    w->step = BACKOFF_MIN_MS;
    w->poll = w->spec->channel == NULL;
    w->several = !w->poll && spec_backends(w->spec) > 0;
    if (w->poll) {
        poll_bounds(w->spec, &w->u.poll.step, &w->u.poll.max);
        w->u.poll.rng = jitter_seed(w, w->clk, w->op ? w->op->owner : NULL);
    } else if (w->several) {
        w->u.ls.spec = w->spec;
        w->u.ls.own = w->l->client->backend;
    }
    if (dlock_signal_init(&w->sig) != 0)
        return dlock_rlock_fail(w->l, DLOCK_ENOMEM, "out of memory while waiting");
    dlock__waiter_add(w->l->client, &w->waiter, &w->sig);
    w->looping = 1;
    if (!w->poll && !w->several) {
        dlock_client *c = w->l->client;

        if (dlock__wake_join(&c->wakes, &w->u.entry, c->backend, w->spec->channel,
                             wake_rule(w->spec), &w->sig) != 0)
            return dlock_rlock_fail(w->l, DLOCK_ENOMEM, "out of memory while waiting");
        w->queued = 1;
    }
    return 0;
}

/* Whether the wait hears its channel's messages. */
static int listening(const wait_state *w)
{
    return w->queued ? w->u.entry.listening : w->several && w->u.ls.listening;
}

/* Subscribes the queue's channel, or learns that another waiter did:
 * 1 listening, 0 wait for that one (its end raises the signal), or the
 * failure (recorded on l). */
__attribute__((noinline)) static int listen_queue(wait_state *w)
{
    char detail[160];
    int rc = dlock__wake_listen(&w->l->client->wakes, &w->u.entry, dlock__op_cap(w->op),
                                detail, sizeof(detail));

    if (rc >= 0)
        return rc;
    return dlock_rlock_fail(w->l, rc, "subscribing to \"%.64s\": %s", w->spec->channel,
                            detail[0] ? detail : dlock_strerror(rc));
}

/* The client's dlock_client_cancel_waits, or (an operation of a
 * dlock_loop) its dlock_op_cancel. */
static int canceled(const wait_state *w)
{
    return dlock__waiter_canceled(w->l->client, &w->waiter) || dlock__fiber_canceled();
}

/* Runs the machine until it must sleep: returns until when (on w->clk;
 * a message or a cancel may end the sleep early), or WAIT_DONE. */
static int64_t wait_step(wait_state *w)
{
    for (;;) {
        int64_t now = dlock_clock_now(w->clk);
        int64_t deadline = w->op->deadline_ms;

        switch (w->phase) {
        case P_FIRST:
            w->rc = attempt(w->l, w->op, w->spec, w->lease_ms, &w->retry_ms);
            w->refused = w->rc == DLOCK_EBUSY || is_transport_error(w->rc);
            /* A wait of 0 gets its one attempt; a longer one looks again
             * after a refusal, and after a transport error too (with
             * back-off), while its budget lasts. */
            if (w->wait_ms == 0 || !w->refused) {
                w->phase = P_DONE;
                return WAIT_DONE;
            }
            if (loop_begin(w) != 0) {
                w->rc = DLOCK_ENOMEM;
                w->phase = P_DONE;
                return WAIT_DONE;
            }
            w->phase = P_TOP; /* with the first attempt's rc */
            break;
        case P_TOP: {
            int64_t wake = now;

            /* Every wake-up and back-off comes back here: a cancel raised
             * the signal, or came during a round trip. */
            if (canceled(w)) {
                w->rc = dlock_rlock_fail(w->l, DLOCK_ECANCELED,
                                         "wait for \"%.64s\" canceled", w->l->name);
                w->phase = P_DONE;
                break;
            }
            /* The budget is checked before every step (sleep, subscribe,
             * attempt), so that no step starts once it is spent. */
            if (now >= deadline) {
                w->phase = P_DONE;
                break;
            }
            w->phase = P_LISTEN;
            if (is_transport_error(w->rc)) {
                wake = min64(dlock__add_sat(now, w->step), deadline);
                w->step = min64(w->step * 2, BACKOFF_MAX_MS);
                return wake;
            }
            if (listening(w) || w->poll) {
                if (w->again) {
                    w->again = 0; /* straight to the attempt */
                    break;
                }
                /* The holder's TTL bounds the sleep: an expired lease
                 * sends no message. It counts from before the attempt was
                 * sent: time spent on the way must not push our wake-up
                 * past it. */
                wake = w->retry_ms >= 0
                           ? min64(deadline, dlock__add_sat(w->sent, w->retry_ms))
                           : deadline;
                if (w->poll)
                    wake = min64(wake, dlock__add_sat(now, poll_pause(&w->u.poll.rng,
                                                                      &w->u.poll.step,
                                                                      w->u.poll.max)));
                w->step = BACKOFF_MIN_MS;
                if (wake > now) {
                    w->slept_until = wake;
                    return wake;
                }
            }
            break;
        }
        case P_LISTEN:
            w->phase = P_ATTEMPT;
            if (w->queued && !w->u.entry.listening) {
                int src = listen_queue(w);

                if (src == 0) {
                    /* another waiter is subscribing the channel */
                    w->phase = P_TOP;
                    return deadline;
                }
                if (src < 0) {
                    w->rc = src;
                    w->phase = is_transport_error(src) ? P_TOP : P_DONE;
                }
            } else if (w->several && !listen_complete(&w->u.ls)) {
                int src = listen_more(w->l, &w->u.ls, &w->sig, dlock__op_cap(w->op));
                if (src != 0) {
                    w->rc = src;
                    w->phase = is_transport_error(src) ? P_TOP : P_DONE;
                }
            }
            break;
        case P_ATTEMPT: {
            /* woken before the sleep's planned end: by a message (or a
             * cancel, which the top sees) */
            int early = w->slept_until > 0 && now < w->slept_until;

            int floor = w->clk == dlock_clock_realtime();

            w->phase = P_TOP;
            if (now >= deadline || canceled(w))
                break; /* ends the wait at the top */
            if (w->queued) {
                int64_t until = 0;

                switch (dlock__wake_begin(&w->l->client->wakes, &w->u.entry, now, !early,
                                          floor, &until)) {
                case DLOCK__WAKE_SLEEP:
                    /* a raise no message of ours made (a stale one) */
                    w->phase = P_ATTEMPT;
                    return w->slept_until;
                case DLOCK__WAKE_DEFER:
                    /* the channel is over the floor: the wake waits for
                     * the bucket (messages meanwhile are coalesced) */
                    w->phase = P_ATTEMPT;
                    return min64(until, deadline);
                }
            } else if (early && floor) {
                int64_t allowed = dlock__floor_allowed(w->msg_tat);
                if (now < allowed) {
                    /* over the floor: coalesced into the attempt when
                     * the bucket allows one (messages until then only
                     * wake this to sleep again) */
                    w->phase = P_ATTEMPT;
                    return min64(allowed, w->slept_until);
                }
                dlock__floor_charge(&w->msg_tat, now);
            }
            w->slept_until = 0;
            /* After subscribing, after a wake-up or a back-off: look again
             * (the attempt right after subscribing is what makes a release
             * published before the subscription impossible to miss). */
            w->sent = now;
            w->rc = attempt(w->l, w->op, w->spec, w->lease_ms, &w->retry_ms);
            if (w->queued && w->rc == DLOCK_EBUSY)
                w->again = dlock__wake_refused(&w->l->client->wakes, &w->u.entry,
                                               dlock_clock_now(w->clk));
            else if (w->queued && is_transport_error(w->rc))
                dlock__wake_retry(&w->l->client->wakes, &w->u.entry);
            if (w->rc == 0 || (w->rc != DLOCK_EBUSY && !is_transport_error(w->rc)))
                w->phase = P_DONE;
            break;
        }
        case P_DONE:
            return WAIT_DONE;
        }
    }
}

/* Ends the wait: a refusal whose budget ran out is a timeout (after a
 * transport error that error, whose detail is recorded); the give-up
 * clears an abandoned attempt's traces (a queue place) within the same
 * cap; an unsynced grant is rolled back outside it (a spent budget must
 * not keep the undo from being sent: the backend's own timeouts bound
 * it). Restores op and returns the wait's code. */
__attribute__((noinline)) static int wait_end(wait_state *w)
{
    dlock_op *op = w->op;
    char why[200];
    int rc = w->rc, unsynced;

    if (w->looping) {
        /* first: a wake this wait held goes on to the next at once */
        if (w->queued)
            dlock__wake_leave(&w->l->client->wakes, &w->u.entry, rc == 0);
        if (rc == DLOCK_EBUSY)
            rc = dlock_rlock_fail(w->l, DLOCK_ETIMEDOUT, "waited %lld ms for \"%.64s\"",
                                  (long long)w->wait_ms, w->l->name);
        if (w->several)
            listen_end(&w->u.ls);
        dlock__waiter_end(w->l->client, &w->waiter);
        dlock_clock_done(w->clk, &w->sig);
        dlock_signal_destroy(&w->sig);
    }
    unsynced = dlock__op_judge_end(op, w->outer_judging, why, sizeof why);
    if (rc != 0 && w->refused && w->spec->give_up)
        w->spec->give_up(w->l, op, w->spec);
    dlock__op_cap_restore(op, w->outer_cap);
    op->deadline_ms = w->outer_deadline;
    if (rc == 0 && unsynced)
        rc = roll_back(w->l, op, w->spec, why);
    if (rc != 0)
        dlock__op_note_failure(op, w->l, rc);
    return rc;
}

/* ---- parked waits ------------------------------------------------------------------
 *
 * A wait of an asynchronous acquisition need not keep its fiber while it
 * sleeps: its state is all in its wait_state. When the operation allows
 * it for this object (dlock__carried.park_obj) and the spec says the wait
 * may move off the slot's frame (dlock_wait_spec.movable), the wait's
 * state moves into a heap record; whenever the machine must sleep,
 * dlock_rlock_wait returns DLOCK__PARKED up the body (every caller on the
 * way passes the code on unchanged), the fiber ends and the loop keeps
 * the record asleep on its signal and in its timer heap. Woken, the loop
 * runs the body again on a fiber; the same call reaches dlock_rlock_wait
 * with an equal spec, and the record steps on (an attempt, a
 * subscription) with that call's op and spec until it sleeps again or
 * ends. The record keeps only what the next call cannot give again: the
 * machine's state, the op's deadline and cap while the wait runs, and
 * the spec's arg_size bytes. So a pending wait costs its record, not a
 * stack, and not a copy of its op or spec. */

typedef struct dlock__parked dlock__parked;

struct dlock__parked {
    wait_state w;
    int64_t deadline_ms, cap_ms; /* the op's while the wait runs */
    size_t arg_size;
    unsigned char arg[];         /* the spec's kept bytes */
};

/* Whether the running operation's wait may park (see above). */
static dlock__carried *parkable(const dlock_rlock *l, const dlock_wait_spec *spec)
{
    dlock__carried *k = dlock__carried_here();

    if (!k || k->park_obj != l || !spec->movable)
        return NULL;
    /* a wait on several backends keeps its frame (methods.h) */
    if (spec->nbackends > 0)
        return NULL;
    return k;
}

/* The record takes the running call's op and spec (those of the call
 * that parked it are gone): the op gets the wait's deadline, cap and
 * judged region, the spec's arg the kept bytes. */
static void parked_adopt(dlock__parked *p, dlock_op *op, const dlock_wait_spec *spec)
{
    p->w.op = op;
    p->w.spec = spec;
    p->w.outer_deadline = op->deadline_ms;
    p->w.outer_cap = dlock__op_cap_within(op, p->cap_ms);
    p->w.outer_judging = dlock__op_judge_begin(op);
    op->deadline_ms = p->deadline_ms;
    if (p->arg_size > 0)
        memcpy(spec->arg, p->arg, p->arg_size);
}

/* The record lets go of the running call's op and spec (the call returns
 * DLOCK__PARKED): it keeps what the next call needs, and the op is as the
 * call gave it. */
static void parked_leave(dlock__parked *p)
{
    dlock_op *op = p->w.op;

    p->deadline_ms = op->deadline_ms;
    p->cap_ms = op->cap_ms;
    if (p->arg_size > 0)
        memcpy(p->arg, p->w.spec->arg, p->arg_size);
    dlock__op_judge_end(op, p->w.outer_judging, NULL, 0);
    dlock__op_cap_restore(op, p->w.outer_cap);
    op->deadline_ms = p->w.outer_deadline;
    p->w.op = NULL;
    p->w.spec = NULL;
}

/* Steps k's parked wait until it must sleep (DLOCK__PARKED, with what to
 * sleep on in k) or ends (its code; the record freed). */
static int parked_step(dlock__carried *k)
{
    dlock__parked *p = k->parked;
    int64_t wake;
    int rc;

    while ((wake = wait_step(&p->w)) != WAIT_DONE) {
        if (wake <= dlock_clock_now(p->w.clk))
            continue;
        /* A refusal's detail is never the operation's: the wait ends with
         * its own (a timeout, a cancel), or with the lock. */
        if (p->w.rc == DLOCK_EBUSY) {
            free(k->detail);
            k->detail = NULL;
        }
        parked_leave(p);
        k->park_sig = &p->w.sig;
        k->park_wake = wake;
        return DLOCK__PARKED;
    }
    rc = wait_end(&p->w);
    k->parked = NULL;
    k->park_sig = NULL;
    free(p);
    return rc;
}

/* Begins a wait that may park: its record, then its first steps. */
static int parked_begin(dlock__carried *k, dlock_rlock *l, dlock_op *op,
                        const dlock_wait_spec *spec, int64_t wait_ms, int64_t lease_ms)
{
    size_t n = spec->arg ? spec->arg_size : 0;
    dlock__parked *p = malloc(sizeof(*p) + n);

    if (!p)
        return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory while waiting");
    p->arg_size = n;
    wait_begin(&p->w, l, op, spec, wait_ms, lease_ms);
    k->parked = p;
    return parked_step(k);
}

int dlock_rlock_wait(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                     int64_t wait_ms, int64_t lease_ms)
{
    wait_state w;
    int64_t wake;
    dlock__carried *k = dlock__carried_here();

    if (!spec || !spec->attempt)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "a wait spec without an attempt");
    if (spec->version < 1 || spec->version > DLOCK_WAIT_SPEC_VERSION)
        return dlock_rlock_fail(l, DLOCK_EINVAL,
                                "a wait spec of version %d (this library knows 1..%d)",
                                spec->version, DLOCK_WAIT_SPEC_VERSION);
    /* The body run again for its parked wait: the wait goes on. */
    if (k && k->parked && k->parked->w.l == l) {
        parked_adopt(k->parked, op, spec);
        return parked_step(k);
    }
    if ((k = parkable(l, spec)) != NULL)
        return parked_begin(k, l, op, spec, wait_ms, lease_ms);
    wait_begin(&w, l, op, spec, wait_ms, lease_ms);
    while ((wake = wait_step(&w)) != WAIT_DONE)
        dlock_clock_sleep_until(w.clk, &w.sig, wake);
    return wait_end(&w);
}

int64_t dlock_retry_after(int64_t ttl_ms)
{
    /* -1: the lock does not expire, only a release message ends the wait;
     * 0: it expires now, look again at once (a little later) */
    return ttl_ms >= 0 ? (ttl_ms > 0 ? ttl_ms : 1) : -1;
}

int dlock_rlock_refused(dlock_rlock *l, const dlock_script *s, dlock_reply *r,
                        int64_t *retry_ms)
{
    if (!r || r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, s, r);
    /* The holder's TTL bounds the sleep: an expiring lease sends no
     * message. */
    *retry_ms = dlock_retry_after(r->integer);
    dlock_reply_free(r);
    return 0;
}
