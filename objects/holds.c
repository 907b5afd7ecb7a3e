/*
 * dlock — the hold registry: what this client believes each (lock object,
 * owner) holds. It tells an expired lease (DLOCK_ELOST) from never having
 * held (DLOCK_ENOTOWNER), and it is the watchdog's work list.
 *
 * A hash table keyed by (lock object, owner) plus a list of all holds that the
 * watchdog walks. One mutex; never held across network I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define INITIAL_BUCKETS 64

static size_t hash_key(const dlock_rlock *l, const char *owner)
{
    /* FNV-1a over the pointer value and the owner id. */
    uint64_t h = 1469598103934665603ULL;
    uintptr_t p = (uintptr_t)l;
    size_t i;

    for (i = 0; i < sizeof(p); i++) {
        h ^= (p >> (8 * i)) & 0xff;
        h *= 1099511628211ULL;
    }
    for (; *owner; owner++) {
        h ^= (unsigned char)*owner;
        h *= 1099511628211ULL;
    }
    return (size_t)h;
}

int dlock__holds_init(dlock__holds *h)
{
    memset(h, 0, sizeof(*h));
    h->buckets = calloc(INITIAL_BUCKETS, sizeof(*h->buckets));
    if (!h->buckets)
        return DLOCK_ENOMEM;
    if (pthread_mutex_init(&h->mutex, NULL) != 0) {
        free(h->buckets);
        return DLOCK_ENOMEM;
    }
    h->nbuckets = INITIAL_BUCKETS;
    h->head.next = h->head.prev = &h->head;
    h->next_id = 1;
    return 0;
}

void dlock__holds_fini(dlock__holds *h)
{
    dlock__hold *e = h->head.next;

    while (e != &h->head) {
        dlock__hold *next = e->next;
        free(e);
        e = next;
    }
    free(h->buckets);
    pthread_mutex_destroy(&h->mutex);
}

static dlock__hold **find_slot(dlock__holds *h, const dlock_rlock *l,
                               const char *owner)
{
    dlock__hold **slot = &h->buckets[hash_key(l, owner) % h->nbuckets];

    while (*slot && ((*slot)->lock != l || strcmp((*slot)->owner, owner) != 0))
        slot = &(*slot)->next_bucket;
    return slot;
}

static void grow(dlock__holds *h)
{
    size_t n = h->nbuckets * 2, i;
    dlock__hold **b = calloc(n, sizeof(*b));
    dlock__hold *e;

    if (!b)
        return; /* a fuller table still works */
    for (e = h->head.next; e != &h->head; e = e->next) {
        i = hash_key(e->lock, e->owner) % n;
        e->next_bucket = b[i];
        b[i] = e;
    }
    free(h->buckets);
    h->buckets = b;
    h->nbuckets = n;
}

static void remove_hold(dlock__holds *h, dlock__hold **slot)
{
    dlock__hold *e = *slot;

    *slot = e->next_bucket;
    e->prev->next = e->next;
    e->next->prev = e->prev;
    h->count--;
    free(e);
}

/* Finds owner's hold of l, creating it when create is set (NULL when out of
 * memory or absent). Under h->mutex. */
static dlock__hold **lookup(dlock__holds *h, dlock_rlock *l, const char *owner,
                            int create)
{
    dlock__hold **slot = find_slot(h, l, owner), *e;

    if (*slot || !create)
        return slot;
    if (h->count >= h->nbuckets) {
        grow(h);
        slot = find_slot(h, l, owner);
    }
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->lock = l;
    snprintf(e->owner, sizeof(e->owner), "%s", owner);
    e->id = h->next_id++;
    *slot = e;
    e->next = &h->head;
    e->prev = h->head.prev;
    h->head.prev->next = e;
    h->head.prev = e;
    h->count++;
    return slot;
}

/* A hold nobody holds and no call is changing is forgotten. */
static void settle(dlock__holds *h, dlock__hold **slot)
{
    dlock__hold *e = *slot;

    if (e->count <= 0)
        e->renew = NULL;
    if (e->count <= 0 && e->acquiring == 0 && e->releasing == 0)
        remove_hold(h, slot);
}

int dlock_hold_acquire_begin(dlock_rlock *l, const char *owner,
                             int64_t lease_ms, const dlock_script *renew)
{
    dlock__holds *h;
    dlock__hold **slot;

    if (!l || !owner)
        return DLOCK_EINVAL;
    h = &l->client->holds;
    pthread_mutex_lock(&h->mutex);
    slot = lookup(h, l, owner, 1);
    if (!slot) {
        pthread_mutex_unlock(&h->mutex);
        return DLOCK_ENOMEM;
    }
    (*slot)->acquiring++;
    (*slot)->changes++;
    if (lease_ms == 0 && renew && !(*slot)->renew) {
        (*slot)->renew = renew;
        (*slot)->renew_since_ms = dlock_clock_now(l->client->clock);
    }
    pthread_mutex_unlock(&h->mutex);
    return 0;
}

void dlock_hold_acquire_end(dlock_rlock *l, const char *owner, int64_t lease_ms,
                            int acquired)
{
    dlock__holds *h;
    dlock__hold **slot;

    if (!l || !owner)
        return;
    h = &l->client->holds;
    pthread_mutex_lock(&h->mutex);
    slot = lookup(h, l, owner, 0);
    if (*slot) {
        (*slot)->acquiring--;
        if (acquired) {
            (*slot)->count++;
            (*slot)->lease_ms = lease_ms;
        }
        settle(h, slot);
    }
    pthread_mutex_unlock(&h->mutex);
}

void dlock_hold_release_begin(dlock_rlock *l, const char *owner)
{
    dlock__holds *h;
    dlock__hold **slot;

    if (!l || !owner)
        return;
    h = &l->client->holds;
    pthread_mutex_lock(&h->mutex);
    slot = lookup(h, l, owner, 0);
    if (*slot) {
        (*slot)->releasing++;
        (*slot)->changes++;
    }
    pthread_mutex_unlock(&h->mutex);
}

/* Ends a release; returns whether the hold was believed held before. */
static int release_end(dlock_rlock *l, const char *owner, int how)
{
    dlock__holds *h = &l->client->holds;
    dlock__hold **slot;
    int held = 0;

    pthread_mutex_lock(&h->mutex);
    slot = lookup(h, l, owner, 0);
    if (*slot) {
        dlock__hold *e = *slot;
        held = e->count > 0;
        if (e->releasing > 0)
            e->releasing--;
        if (how == DLOCK_HOLD_ALL)
            e->count = 0;
        else if (how == DLOCK_HOLD_ONE)
            e->count--;
        settle(h, slot);
    }
    pthread_mutex_unlock(&h->mutex);
    return held;
}

void dlock_hold_release_end(dlock_rlock *l, const char *owner, int how)
{
    if (l && owner)
        release_end(l, owner, how);
}

int dlock_hold_missing(dlock_rlock *l, const char *owner)
{
    if (!l || !owner)
        return DLOCK_EINVAL;
    return release_end(l, owner, DLOCK_HOLD_ALL) ? DLOCK_ELOST : DLOCK_ENOTOWNER;
}

int64_t dlock__hold_lease(dlock_rlock *l, const char *owner)
{
    dlock__holds *h = &l->client->holds;
    dlock__hold **slot;
    int64_t lease = 0;

    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot)
        lease = (*slot)->renew ? l->client->opts.watchdog_timeout_ms
                               : (*slot)->lease_ms;
    pthread_mutex_unlock(&h->mutex);
    return lease;
}

void dlock__holds_forget_lock(dlock__holds *h, dlock_rlock *l)
{
    dlock__hold *e, *next;

    pthread_mutex_lock(&h->mutex);
    for (e = h->head.next; e != &h->head; e = next) {
        next = e->next;
        if (e->lock == l)
            remove_hold(h, find_slot(h, l, e->owner));
    }
    pthread_mutex_unlock(&h->mutex);
}
