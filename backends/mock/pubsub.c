/*
 * dlock mock — in-process pub/sub.
 *
 * A delivery pins each listener it is about to call (busy count) under the
 * registry mutex, then calls it without the mutex, so callbacks of
 * different publishers may run at once and a callback may take whatever
 * locks it needs (a signal's mutex). Unsubscribe unlinks the listener, then
 * waits until no delivery has it pinned: after that nothing can reach it.
 */
#include "pubsub.h"

#include <stdlib.h>
#include <string.h>

#include "dict.h"
#include "core/wait.h"

typedef struct ps_channel {
    dlock_subscription *head; /* listeners, newest first */
} ps_channel;

struct dlock_subscription {
    dlock__pubsub *ps;
    dlock__dict_entry *chan; /* its channel's entry in ps->channels */
    dlock_message_fn fn;
    void *arg;
    dlock_subscription *prev, *next;
    int busy;    /* deliveries holding it */
    int removed; /* unsubscribe has started: call no more */
};

struct dlock__pubsub {
    pthread_mutex_t mutex;
    pthread_cond_t idle; /* a pinned listener was released */
    dlock__dict channels; /* name -> ps_channel * */
};

/* Listeners pinned by one delivery without allocating: the usual case is one
 * or two per channel (one per client waiting on an object). */
#define PS_STACK_PINS 16

int dlock__pubsub_new(dlock__pubsub **out)
{
    dlock__pubsub *ps = calloc(1, sizeof(*ps));

    *out = NULL;
    if (ps == NULL)
        return DLOCK_ENOMEM;
    if (pthread_mutex_init(&ps->mutex, NULL) != 0) {
        free(ps);
        return DLOCK_ENOMEM;
    }
    if (pthread_cond_init(&ps->idle, NULL) != 0) {
        pthread_mutex_destroy(&ps->mutex);
        free(ps);
        return DLOCK_ENOMEM;
    }
    dlock__dict_init(&ps->channels, free);
    *out = ps;
    return 0;
}

void dlock__pubsub_free(dlock__pubsub *ps)
{
    dlock__dict_entry *e;

    if (ps == NULL)
        return;
    /* Subscriptions left behind break the backend contract; free them
     * rather than leak them. */
    for (e = ps->channels.head; e != NULL; e = e->next) {
        ps_channel *ch = e->val;
        dlock_subscription *s = ch->head, *next;

        while (s != NULL) {
            next = s->next;
            free(s);
            s = next;
        }
    }
    dlock__dict_clear(&ps->channels);
    pthread_cond_destroy(&ps->idle);
    pthread_mutex_destroy(&ps->mutex);
    free(ps);
}

int dlock__pubsub_subscribe(dlock__pubsub *ps, dlock_subscription **out,
                            const char *channel, dlock_message_fn fn, void *arg)
{
    dlock_subscription *s;
    dlock__dict_entry *e;
    ps_channel *ch;
    size_t clen = strlen(channel);

    *out = NULL;
    s = calloc(1, sizeof(*s));
    if (s == NULL)
        return DLOCK_ENOMEM;
    s->ps = ps;
    s->fn = fn;
    s->arg = arg;
    pthread_mutex_lock(&ps->mutex);
    e = dlock__dict_find(&ps->channels, channel, clen);
    if (e == NULL) {
        ch = calloc(1, sizeof(*ch));
        e = ch != NULL ? dlock__dict_add(&ps->channels, channel, clen, ch) : NULL;
        if (e == NULL) {
            pthread_mutex_unlock(&ps->mutex);
            free(ch);
            free(s);
            return DLOCK_ENOMEM;
        }
    }
    ch = e->val;
    s->chan = e;
    s->next = ch->head;
    if (ch->head != NULL)
        ch->head->prev = s;
    ch->head = s;
    pthread_mutex_unlock(&ps->mutex);
    *out = s;
    return 0;
}

void dlock__pubsub_unsubscribe(dlock_subscription *s)
{
    dlock__pubsub *ps;
    ps_channel *ch;

    if (s == NULL)
        return;
    ps = s->ps;
    pthread_mutex_lock(&ps->mutex);
    ch = s->chan->val;
    s->removed = 1;
    if (s->prev != NULL)
        s->prev->next = s->next;
    else
        ch->head = s->next;
    if (s->next != NULL)
        s->next->prev = s->prev;
    if (ch->head == NULL)
        dlock__dict_remove(&ps->channels, s->chan);
    while (s->busy > 0)
        dlock__wait_pin(&ps->idle, &ps->mutex);
    pthread_mutex_unlock(&ps->mutex);
    free(s);
}

size_t dlock__pubsub_receivers(dlock__pubsub *ps, const char *channel,
                               size_t clen)
{
    dlock__dict_entry *e;
    dlock_subscription *s;
    size_t n = 0;

    pthread_mutex_lock(&ps->mutex);
    e = dlock__dict_find(&ps->channels, channel, clen);
    if (e != NULL)
        for (s = ((ps_channel *)e->val)->head; s != NULL; s = s->next)
            n++;
    pthread_mutex_unlock(&ps->mutex);
    return n;
}

void dlock__pubsub_deliver(dlock__pubsub *ps, const char *channel, size_t clen,
                           const char *msg, size_t mlen)
{
    dlock_subscription *stack_pins[PS_STACK_PINS];
    dlock_subscription **pins = stack_pins;
    dlock_subscription *s;
    dlock__dict_entry *e;
    size_t n = 0, i;

    pthread_mutex_lock(&ps->mutex);
    e = dlock__dict_find(&ps->channels, channel, clen);
    if (e == NULL) {
        pthread_mutex_unlock(&ps->mutex);
        return;
    }
    for (s = ((ps_channel *)e->val)->head; s != NULL; s = s->next)
        n++;
    if (n > PS_STACK_PINS)
        pins = malloc(n * sizeof(*pins));
    if (pins == NULL) {
        /* Out of memory: deliver with the mutex held instead of dropping
         * the message. Callbacks only raise signals, so this cannot
         * deadlock; it only serialises deliveries. */
        for (s = ((ps_channel *)e->val)->head; s != NULL; s = s->next)
            s->fn(s->arg, channel, msg, mlen);
        pthread_mutex_unlock(&ps->mutex);
        return;
    }
    n = 0;
    for (s = ((ps_channel *)e->val)->head; s != NULL; s = s->next) {
        s->busy++;
        pins[n++] = s;
    }
    pthread_mutex_unlock(&ps->mutex);

    for (i = 0; i < n; i++) {
        int removed;

        s = pins[i];
        pthread_mutex_lock(&ps->mutex);
        removed = s->removed;
        pthread_mutex_unlock(&ps->mutex);
        /* Its unsubscribe has begun (and waits for us): the owner is
         * tearing down, so the message is no longer wanted. */
        if (!removed)
            s->fn(s->arg, channel, msg, mlen);
        pthread_mutex_lock(&ps->mutex);
        if (--s->busy == 0 && s->removed)
            pthread_cond_broadcast(&ps->idle);
        pthread_mutex_unlock(&ps->mutex);
    }
    if (pins != stack_pins)
        free(pins);
}
