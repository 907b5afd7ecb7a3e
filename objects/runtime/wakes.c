/*
 * dlock — the client's wake queues (see wakes.h).
 *
 * Why a queue: with every waiter listening on its own, one unlock woke
 * them all; one won and the others were refused, each a script call for
 * nothing (1 000 waiters: 999 refused scripts per release). Redisson's
 * LockPubSub wakes one waiter per unlock message; so do these queues, for
 * the blocking callers and the loop's operations alike (both sleep on a
 * dlock_signal).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"
#include "dlock/sys/methods.h"

#include "objects/runtime/op.h"
#include "objects/runtime/wakes.h"

/* An entry's state. */
#define E_PENDING 0  /* will attempt (joined, woken, deferred, backing off) */
#define E_INFLIGHT 1 /* its attempt is under way */
#define E_ASLEEP 2   /* waits for a message or its own timer */

/* hand_out's budget for "every waiter". */
#define ALL INT64_MAX

/* A channel's queue. Its own mutex guards the entries and everything
 * below it; the table's guards refs and the bucket chain: a release of
 * 10 000 locks at once wakes 10 000 threads, which must not all queue on
 * one mutex (nor the subscriber's thread behind them). */
typedef struct dlock__wake_chan {
    pthread_mutex_t mu;
    size_t refs;               /* joined waiters (the table's mutex) */
    dlock_backend *backend;
    int wake;                  /* DLOCK_WAKE_*: EVERY once waiters disagree */
    dlock_subscription *sub;   /* NULL: not (yet) subscribed */
    int subscribing;           /* a waiter is subscribing it */
    dlock__wake_entry *head, *tail;
    size_t n, npending, ninflight;
    int64_t tat;               /* the floor's bucket */
    uint64_t messages;         /* how many have come: a refused waiter
                                * hands a count wake on only to those
                                * that have not tried since the last */
    struct dlock__wake_chan *next; /* in its bucket */
    /* Its name, in the same allocation (a channel per lock name: a loop
     * with 100 000 waits on as many locks keeps as many). */
    char channel[];
} wake_chan;

int64_t dlock__floor_allowed(int64_t tat)
{
    return tat - (int64_t)(DLOCK__FLOOR_BURST - 1) * DLOCK__FLOOR_MS;
}

void dlock__floor_charge(int64_t *tat, int64_t now)
{
    *tat = dlock__add_sat(*tat > now ? *tat : now, DLOCK__FLOOR_MS);
}

/* ---- the table --------------------------------------------------------- */

int dlock__wakes_init(dlock__wakes *t)
{
    memset(t, 0, sizeof(*t));
    return pthread_mutex_init(&t->mutex, NULL) == 0 ? 0 : DLOCK_ENOMEM;
}

void dlock__wakes_fini(dlock__wakes *t)
{
    free(t->buckets);
    pthread_mutex_destroy(&t->mutex);
}

static size_t hash(const dlock_backend *b, const char *channel)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(uintptr_t)b;

    for (; *channel; channel++)
        h = (h ^ (unsigned char)*channel) * 1099511628211ULL;
    return (size_t)(h ^ (h >> 29));
}

static wake_chan **slot(dlock__wakes *t, const dlock_backend *b, const char *channel)
{
    wake_chan **p = &t->buckets[hash(b, channel) & (t->nbuckets - 1)];

    while (*p && ((*p)->backend != b || strcmp((*p)->channel, channel) != 0))
        p = &(*p)->next;
    return p;
}

/* Doubles the buckets when there are more channels than buckets: the
 * table follows the number of locks being waited for. 0 or ENOMEM. */
static int grow(dlock__wakes *t)
{
    size_t n = t->nbuckets ? t->nbuckets * 2 : 16, i;
    wake_chan **nb, *ch;

    if (t->nbuckets && t->count < t->nbuckets)
        return 0;
    if (!(nb = calloc(n, sizeof(*nb))))
        return t->nbuckets ? 0 : DLOCK_ENOMEM; /* longer chains will do */
    for (i = 0; i < t->nbuckets; i++)
        while ((ch = t->buckets[i]) != NULL) {
            size_t h = hash(ch->backend, ch->channel) & (n - 1);
            t->buckets[i] = ch->next;
            ch->next = nb[h];
            nb[h] = ch;
        }
    free(t->buckets);
    t->buckets = nb;
    t->nbuckets = n;
    return 0;
}

/* ---- who is woken ---------------------------------------------------------- */

static void set_state(wake_chan *ch, dlock__wake_entry *e, int state)
{
    ch->npending -= e->state == E_PENDING;
    ch->ninflight -= e->state == E_INFLIGHT;
    e->state = state;
    ch->npending += state == E_PENDING;
    ch->ninflight += state == E_INFLIGHT;
}

static void wake(wake_chan *ch, dlock__wake_entry *e)
{
    set_state(ch, e, E_PENDING);
    e->wakes = 1;
    dlock_signal_raise(e->sig);
}

/* Gives k wakes (ALL: every waiter) on ch, not to skip: first to the
 * waiters about to attempt (each absorbs one: it sees what the message
 * announced), then to attempts under way that have none (they look once
 * more if refused), then to sleepers in arrival order. */
static void hand_out(wake_chan *ch, int64_t k, const dlock__wake_entry *skip)
{
    dlock__wake_entry *e;
    size_t seen;

    if (k == ALL) {
        for (e = ch->head; e; e = e->next)
            if (e->state == E_ASLEEP)
                wake(ch, e);
            else
                e->wakes = 1;
        return;
    }
    for (e = ch->head, seen = 0; e && k > 0 && seen < ch->npending; e = e->next)
        if (e->state == E_PENDING) {
            e->wakes = 1;
            seen++;
            k--;
        }
    for (e = ch->head, seen = 0; e && k > 0 && seen < ch->ninflight; e = e->next)
        if (e->state == E_INFLIGHT) {
            seen++;
            if (!e->wakes) {
                e->wakes = 1;
                k--;
            }
        }
    for (e = ch->head; e && k > 0; e = e->next)
        if (e->state == E_ASLEEP && e != skip &&
            (skip == NULL || e->tried != ch->messages)) {
            wake(ch, e);
            k--;
        }
}

/* How many waiters a message wakes under rule wake. */
static int64_t budget(int wake, const char *msg, size_t len)
{
    char buf[24];
    char *end;
    long long n;

    /* empty: the backend reconnected, messages may have been lost */
    if (len == 0 || wake == DLOCK_WAKE_EVERY)
        return ALL;
    if (wake == DLOCK_WAKE_LOCK)
        return len == 1 && msg[0] == '1' ? ALL : 1;
    if (len >= sizeof(buf))
        return ALL;
    memcpy(buf, msg, len);
    buf[len] = '\0';
    n = strtoll(buf, &end, 10);
    if (end == buf || *end != '\0')
        return ALL;
    return n > 0 ? (int64_t)n : 0;
}

static void on_message(void *arg, const char *channel, const char *message, size_t len)
{
    wake_chan *ch = arg;

    (void)channel;
    pthread_mutex_lock(&ch->mu);
    ch->messages++;
    hand_out(ch, budget(ch->wake, message, len), NULL);
    pthread_mutex_unlock(&ch->mu);
}

/* ---- a waiter's way through ------------------------------------------------ */

int dlock__wake_join(dlock__wakes *t, dlock__wake_entry *e, dlock_backend *b,
                     const char *channel, int wake, dlock_signal *sig)
{
    wake_chan **p, *ch;
    int rc = 0;

    pthread_mutex_lock(&t->mutex);
    if (!t->nbuckets && (rc = grow(t)) != 0)
        goto out;
    p = slot(t, b, channel);
    if (!(ch = *p)) {
        size_t n = strlen(channel) + 1;

        if (!(ch = calloc(1, sizeof(*ch) + n)) || pthread_mutex_init(&ch->mu, NULL) != 0) {
            free(ch);
            rc = DLOCK_ENOMEM;
            goto out;
        }
        memcpy(ch->channel, channel, n);
        ch->backend = b;
        ch->wake = wake;
        *p = ch;
        t->count++;
        (void)grow(t);
    }
    ch->refs++;
out:
    pthread_mutex_unlock(&t->mutex);
    if (rc != 0)
        return rc;
    pthread_mutex_lock(&ch->mu);
    if (ch->wake != wake)
        ch->wake = DLOCK_WAKE_EVERY; /* two rules on one channel: the safe one */
    e->chan = ch;
    e->sig = sig;
    e->tried = ch->messages; /* its first attempts come after them */
    e->state = E_PENDING;
    e->prev = ch->tail;
    e->next = NULL;
    if (ch->tail)
        ch->tail->next = e;
    else
        ch->head = e;
    ch->tail = e;
    ch->n++;
    ch->npending++;
    pthread_mutex_unlock(&ch->mu);
    return 0;
}

int dlock__wake_listen(dlock__wakes *t, dlock__wake_entry *e, int64_t cap,
                       char *detail, size_t len)
{
    wake_chan *ch = e->chan;
    dlock_subscription *sub = NULL;
    dlock__wake_entry *o;
    int rc;

    (void)t;
    pthread_mutex_lock(&ch->mu);
    if (ch->sub)
        e->listening = 1;
    if (e->listening || ch->subscribing) {
        rc = e->listening;
        pthread_mutex_unlock(&ch->mu);
        return rc;
    }
    ch->subscribing = 1;
    pthread_mutex_unlock(&ch->mu);
    /* One subscription for the channel's waiters, whoever makes it: the
     * backend confirms it before returning, so each waiter's attempt
     * after this (or after being told) cannot miss a release. */
    detail[0] = '\0';
    rc = dlock_backend_subscribe_until(ch->backend, &sub, ch->channel, on_message, ch,
                                       cap, detail, len);
    pthread_mutex_lock(&ch->mu);
    ch->subscribing = 0;
    if (rc == 0) {
        ch->sub = sub;
        e->listening = 1;
    }
    /* the others waiting for it look again (and one of them subscribes
     * when this one failed) */
    for (o = ch->head; o; o = o->next)
        if (o != e && !o->listening)
            dlock_signal_raise(o->sig);
    pthread_mutex_unlock(&ch->mu);
    return rc == 0 ? 1 : rc;
}

int dlock__wake_begin(dlock__wakes *t, dlock__wake_entry *e, int64_t now, int timer,
                      int floor, int64_t *until)
{
    wake_chan *ch = e->chan;
    int rc = DLOCK__WAKE_GO;

    (void)t;
    pthread_mutex_lock(&ch->mu);
    if (e->state == E_ASLEEP) {
        /* no message chose it: its own timer, or a stale raise */
        if (timer)
            set_state(ch, e, E_INFLIGHT);
        else
            rc = DLOCK__WAKE_SLEEP;
    } else if (e->wakes || e->held) {
        if (floor && now < dlock__floor_allowed(ch->tat)) {
            *until = dlock__floor_allowed(ch->tat);
            rc = DLOCK__WAKE_DEFER;
        } else {
            e->held = 1;
            e->wakes = 0;
            set_state(ch, e, E_INFLIGHT);
        }
    } else {
        set_state(ch, e, E_INFLIGHT); /* the attempt after subscribing */
    }
    pthread_mutex_unlock(&ch->mu);
    return rc;
}

int dlock__wake_refused(dlock__wakes *t, dlock__wake_entry *e, int64_t now)
{
    wake_chan *ch = e->chan;
    int again;

    (void)t;
    pthread_mutex_lock(&ch->mu);
    if (e->held)
        dlock__floor_charge(&ch->tat, now);
    again = e->wakes != 0;
    if (again) {
        set_state(ch, e, E_PENDING);
    } else {
        set_state(ch, e, E_ASLEEP);
        /* A lock's refusal means a holder, whose release will publish:
         * the next would be refused too. Permits are different: this
         * one may have wanted more than the next does. But each waiter
         * tries once per message: handed on to those that tried since
         * it came, the wake would go round them for as long as they wait
         * (all wanting more than there is), a script call per turn. */
        if (e->held && ch->wake == DLOCK_WAKE_COUNT) {
            e->tried = ch->messages;
            hand_out(ch, 1, e);
        }
    }
    e->held = 0;
    pthread_mutex_unlock(&ch->mu);
    return again;
}

void dlock__wake_retry(dlock__wakes *t, dlock__wake_entry *e)
{
    (void)t;
    pthread_mutex_lock(&e->chan->mu);
    set_state(e->chan, e, E_PENDING);
    pthread_mutex_unlock(&e->chan->mu);
}

void dlock__wake_leave(dlock__wakes *t, dlock__wake_entry *e, int granted)
{
    wake_chan *ch = e->chan, *gone = NULL;
    int64_t pass;

    if (!ch)
        return;
    pthread_mutex_lock(&ch->mu);
    set_state(ch, e, -1);
    if (e->prev)
        e->prev->next = e->next;
    else
        ch->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        ch->tail = e->prev;
    ch->n--;
    /* A grant spends the wake; a lock's grant also makes any message
     * that came meanwhile moot for the others (they would be refused:
     * this one holds it now, and publishes when it lets go). */
    if (granted)
        pass = ch->wake == DLOCK_WAKE_COUNT ? e->wakes : 0;
    else
        pass = (int64_t)e->wakes + e->held;
    hand_out(ch, pass, NULL);
    pthread_mutex_unlock(&ch->mu);
    e->chan = NULL;
    pthread_mutex_lock(&t->mutex);
    if (--ch->refs == 0) {
        wake_chan **p = slot(t, ch->backend, ch->channel);
        if (*p == ch) {
            *p = ch->next;
            t->count--;
        }
        gone = ch;
    }
    pthread_mutex_unlock(&t->mutex);
    if (gone) {
        /* no waiter left, none can join (out of the table): outside the
         * mutexes, as the unsubscribe waits for a running on_message */
        if (gone->sub)
            dlock_backend_unsubscribe(gone->backend, gone->sub);
        pthread_mutex_destroy(&gone->mu);
        free(gone);
    }
}
