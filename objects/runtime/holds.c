/*
 * dlock — the hold registry: what this client believes each (lock object,
 * owner) holds. It tells an expired lease (DLOCK_ELOST) from never having
 * held (DLOCK_ENOTOWNER), and it is the watchdog's work list.
 *
 * A hash table keyed by (lock object, owner), a second one keyed by the lock
 * object alone that leads to a chain of that object's holds (freeing a handle
 * forgets its holds without looking at anyone else's), and a list of all
 * holds that the watchdog walks. One mutex; never held across network I/O.
 *
 * Every lock type's holds are here, the composite ones too: a Redlock
 * registers its holds with its own (first) client, and keeps its fencing
 * token with them; its nodes' holds are the nodes' own, in their
 * clients' registries. A lease-0 hold names how it is renewed: a script
 * the watchdog batches, or (renew_fn) the type's own renewal, which the
 * watchdog calls with the object pinned (dlock__holds_pin: freeing its
 * handle waits for the call to end).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/sys/lock_type.h"

#include "objects/runtime/holds.h"
#include "objects/runtime/client.h"
#include "objects/runtime/metrics.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/wait.h"

#define INITIAL_BUCKETS 64
/* The old buckets a growth moves per insertion: done long before the
 * next growth (which comes after as many insertions as old buckets). */
#define MOVE_PER_INSERT 8

/* hash_lock: the per-lock index's key, and the start of the (lock, owner)
 * key. Both are on every lock call's path (several lookups per call), so
 * they mix a word at a time (multiply and xor-shift) rather than a byte. */
static uint64_t mix64(uint64_t h)
{
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    h ^= h >> 32;
    return h;
}

static uint64_t hash_lock(const dlock_rlock *l)
{
    return mix64((uint64_t)(uintptr_t)l * 0x9e3779b97f4a7c15ULL);
}

static size_t hash_key(const dlock_rlock *l, const char *owner)
{
    uint64_t h = hash_lock(l), w;
    size_t n = strlen(owner), i;

    for (i = 0; i + 8 <= n; i += 8) {
        memcpy(&w, owner + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, owner + i, n - i);
    h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    return (size_t)mix64(h ^ n); /* n: a tail and its zero padding differ */
}

int dlock__holds_init(dlock__holds *h)
{
    memset(h, 0, sizeof(*h));
    h->buckets = calloc(INITIAL_BUCKETS, sizeof(*h->buckets));
    h->lock_buckets = calloc(INITIAL_BUCKETS, sizeof(*h->lock_buckets));
    if (!h->buckets || !h->lock_buckets || pthread_mutex_init(&h->mutex, NULL) != 0) {
        free(h->buckets);
        free(h->lock_buckets);
        return DLOCK_ENOMEM;
    }
    if (pthread_cond_init(&h->renewed, NULL) != 0) {
        pthread_mutex_destroy(&h->mutex);
        free(h->buckets);
        free(h->lock_buckets);
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
    free(h->lock_buckets);
    free(h->old_buckets);
    free(h->old_lock_buckets);
    pthread_cond_destroy(&h->renewed);
    pthread_mutex_destroy(&h->mutex);
}

/* The slot of (l, owner) in the bucket array b of n buckets: the entry's,
 * or the chain's end. */
static dlock__hold **find_in(dlock__hold **b, size_t n, const dlock_rlock *l,
                             const char *owner)
{
    dlock__hold **slot = &b[hash_key(l, owner) % n];

    while (*slot && ((*slot)->lock != l || strcmp((*slot)->owner, owner) != 0))
        slot = &(*slot)->next_bucket;
    return slot;
}

/* The slot of (l, owner): in the old arrays while a growth moves entries
 * (when it is still there), else in the current ones. */
static dlock__hold **find_slot(dlock__holds *h, const dlock_rlock *l,
                               const char *owner)
{
    if (h->old_n) {
        dlock__hold **slot = find_in(h->old_buckets, h->old_n, l, owner);

        if (*slot)
            return slot;
    }
    return find_in(h->buckets, h->nbuckets, l, owner);
}

static dlock__hold **find_chain_in(dlock__hold **lb, size_t n, const dlock_rlock *l)
{
    dlock__hold **slot = &lb[hash_lock(l) % n];

    while (*slot && (*slot)->lock != l)
        slot = &(*slot)->next_lock_bucket;
    return slot;
}

/* The per-lock index's slot of l's chain (*slot NULL when l has no
 * holds), old arrays first as find_slot. */
static dlock__hold **find_chain(dlock__holds *h, const dlock_rlock *l)
{
    if (h->old_n) {
        dlock__hold **slot = find_chain_in(h->old_lock_buckets, h->old_n, l);

        if (*slot)
            return slot;
    }
    return find_chain_in(h->lock_buckets, h->nbuckets, l);
}

/* Moves the entries of up to n old buckets (both indexes) to the current
 * arrays; the old arrays go once empty. A growth costs each later
 * insertion a few buckets' moves, never one call the whole table. */
static void move_some(dlock__holds *h, size_t n)
{
    while (h->old_n && n-- > 0) {
        size_t i = h->moved++;
        dlock__hold *e, *next;

        for (e = h->old_buckets[i]; e; e = next) {
            dlock__hold **b = &h->buckets[hash_key(e->lock, e->owner) % h->nbuckets];

            next = e->next_bucket;
            e->next_bucket = *b;
            *b = e;
        }
        for (e = h->old_lock_buckets[i]; e; e = next) {
            dlock__hold **b = &h->lock_buckets[hash_lock(e->lock) % h->nbuckets];

            next = e->next_lock_bucket;
            e->next_lock_bucket = *b;
            *b = e;
        }
        h->old_buckets[i] = h->old_lock_buckets[i] = NULL;
        if (h->moved == h->old_n) {
            free(h->old_buckets);
            free(h->old_lock_buckets);
            h->old_buckets = h->old_lock_buckets = NULL;
            h->old_n = h->moved = 0;
        }
    }
}

/* Doubles the arrays; the entries move over the next insertions
 * (move_some). */
static void grow(dlock__holds *h)
{
    size_t n = h->nbuckets * 2;
    dlock__hold **b, **lb;

    move_some(h, SIZE_MAX); /* a growth still moving: ended first */
    b = calloc(n, sizeof(*b));
    lb = calloc(n, sizeof(*lb));
    if (!b || !lb) {
        free(b);
        free(lb);
        return; /* a fuller table still works */
    }
    h->old_buckets = h->buckets;
    h->old_lock_buckets = h->lock_buckets;
    h->old_n = h->nbuckets;
    h->moved = 0;
    h->buckets = b;
    h->lock_buckets = lb;
    h->nbuckets = n;
}

/* Adds e to its lock's chain: right after the first, or as the first. */
static void chain_add(dlock__holds *h, dlock__hold *e)
{
    dlock__hold **slot = find_chain(h, e->lock), *first = *slot;

    if (first) {
        e->lock_prev = first;
        e->lock_next = first->lock_next;
        if (e->lock_next)
            e->lock_next->lock_prev = e;
        first->lock_next = e;
    } else {
        e->lock_prev = e->lock_next = NULL;
        e->next_lock_bucket = NULL;
        *slot = e;
    }
}

/* Takes e out of its lock's chain; the next one becomes the first. */
static void chain_remove(dlock__holds *h, dlock__hold *e)
{
    dlock__hold **slot, *next = e->lock_next;

    if (e->lock_prev) {
        e->lock_prev->lock_next = next;
        if (next)
            next->lock_prev = e->lock_prev;
        return;
    }
    slot = find_chain(h, e->lock);
    if (next) {
        next->lock_prev = NULL;
        next->next_lock_bucket = e->next_lock_bucket;
        *slot = next;
    } else {
        *slot = e->next_lock_bucket;
    }
}

static void remove_hold(dlock__holds *h, dlock__hold **slot)
{
    dlock__hold *e = *slot;

    *slot = e->next_bucket;
    chain_remove(h, e);
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
    dlock__hold **slot, *e;

    /* Before any slot is taken: moving entries relinks chains. */
    if (create)
        move_some(h, MOVE_PER_INSERT);
    slot = find_slot(h, l, owner);
    if (*slot || !create)
        return slot;
    if (h->count >= h->nbuckets) {
        grow(h);
        slot = find_slot(h, l, owner);
    }
    e = dlock__zalloc(sizeof(*e));
    if (!e)
        return NULL;
    e->lock = l;
    /* e is zeroed: a copy of at most sizeof - 1 bytes stays terminated */
    memcpy(e->owner, owner, strnlen(owner, sizeof(e->owner) - 1));
    e->id = h->next_id++;
    *slot = e;
    chain_add(h, e);
    e->next = &h->head;
    e->prev = h->head.prev;
    h->head.prev->next = e;
    h->head.prev = e;
    h->count++;
    return slot;
}

/* The watchdog renews e with renew (and renew_fn) from now on. */
static void renew_on(dlock_client *c, dlock__hold *e, const dlock_script *renew,
                     dlock__renew_fn renew_fn)
{
    if (!e->renew)
        e->renew_since_ms = dlock_clock_now(c->clock);
    e->renew = renew;
    e->renew_fn = renew_fn;
}

static void renew_off(dlock__hold *e)
{
    e->renew = NULL;
    e->renew_fn = NULL;
}

/* A hold nobody holds and no call is changing is forgotten. */
static void settle(dlock__holds *h, dlock__hold **slot)
{
    dlock__hold *e = *slot;

    if (e->count <= 0)
        renew_off(e);
    if (e->count <= 0 && e->acquiring == 0 && e->releasing == 0)
        remove_hold(h, slot);
}

int dlock__hold_acquire_begin(dlock_rlock *l, const char *owner, int64_t lease_ms,
                              const dlock_script *renew, dlock__renew_fn renew_fn)
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
        renew_on(l->client, *slot, renew, renew_fn);
        (*slot)->renew_tentative = 1;
    }
    pthread_mutex_unlock(&h->mutex);
    return 0;
}

int dlock_hold_acquire_begin(dlock_rlock *l, const char *owner,
                             int64_t lease_ms, const dlock_script *renew)
{
    return dlock__hold_acquire_begin(l, owner, lease_ms, renew, NULL);
}

void dlock__hold_acquire_end(dlock_rlock *l, const char *owner, int64_t lease_ms,
                             int acquired, int64_t token)
{
    dlock__holds *h;
    dlock__hold **slot;

    if (!l || !owner)
        return;
    h = &l->client->holds;
    pthread_mutex_lock(&h->mutex);
    slot = lookup(h, l, owner, 0);
    if (*slot) {
        dlock__hold *e = *slot;
        e->acquiring--;
        if (acquired) {
            if (e->lost) /* a fresh hold after a lost one */
                e->count = 0;
            if (e->count++ == 0)
                e->held_since_ms = dlock_clock_now(l->client->clock);
            e->lease_ms = lease_ms;
            e->lost = 0;
            e->token = token;
            if (lease_ms == 0)
                e->renew_tentative = 0;
        } else if (e->renew_tentative && e->acquiring == 0) {
            /* the refused attempt was the one that started renewal */
            renew_off(e);
            e->renew_tentative = 0;
        }
        settle(h, slot);
    }
    pthread_mutex_unlock(&h->mutex);
}

void dlock_hold_acquire_end(dlock_rlock *l, const char *owner, int64_t lease_ms,
                            int acquired)
{
    dlock__hold_acquire_end(l, owner, lease_ms, acquired, 0);
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

/* The counting and the log line of a hold found lost (once per hold). */
static void report_lost(dlock_client *c, const char *name, const char *owner,
                        const char *how)
{
    DLOCK__COUNT_NAMED(c, lost, name, strlen(name));
    dlock__log(DLOCK_LOG_WARN, "lock \"%.128s\" lost by %s (%s)", name, owner, how);
}

int dlock__hold_release_end(dlock_rlock *l, const char *owner, int how,
                            int missing, int *lost)
{
    dlock_client *c = l->client;
    dlock__holds *h = &c->holds;
    dlock__hold **slot;
    int held = 0, news = 0, was_lost = 0;

    pthread_mutex_lock(&h->mutex);
    slot = lookup(h, l, owner, 0);
    if (*slot) {
        dlock__hold *e = *slot;
        held = e->count > 0;
        was_lost = e->lost;
        news = missing && held && !e->lost;
        if (e->releasing > 0)
            e->releasing--;
        if (missing || (e->lost && how != DLOCK_HOLD_FAILED))
            how = DLOCK_HOLD_ALL;
        if (how == DLOCK_HOLD_ALL)
            e->count = 0;
        else if (how == DLOCK_HOLD_ONE && e->count > 0)
            e->count--;
        if (held && e->count <= 0)
            dlock__metrics_observe(&c->metrics.hold_ms,
                                   dlock_clock_now(c->clock) - e->held_since_ms);
        settle(h, slot);
    }
    pthread_mutex_unlock(&h->mutex);
    if (news)
        report_lost(c, l->name, owner, "found at unlock");
    if (lost)
        *lost = was_lost;
    return held;
}

/* Whether e is still the hold collected as (id, changes), with no
 * acquisition or release under way: only then does a renewal's answer
 * speak for it. */
static int unchanged(const dlock__hold *e, uint64_t id, uint64_t changes)
{
    return e->id == id && e->changes == changes && e->acquiring == 0 &&
           e->releasing == 0;
}

int dlock__hold_lost(dlock_client *c, const dlock_rlock *l, const char *name,
                     const char *owner, uint64_t id, uint64_t changes,
                     dlock_lost_fn *fn, void **arg)
{
    dlock__holds *h = &c->holds;
    dlock__hold **slot;
    int found = 0;

    *fn = NULL;
    *arg = NULL;
    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot && id == 0) {
        /* dlock_extend: the caller's own call, nothing else in flight
         * that it does not know of */
        found = (*slot)->count > 0 ? 1 + !(*slot)->lost : 0;
    } else if (*slot && unchanged(*slot, id, changes)) {
        found = (*slot)->renew != NULL ? 1 + !(*slot)->lost : 0;
    }
    if (found) {
        renew_off(*slot);
        (*slot)->lost = 1;
        if (found == 2)
            dlock__lost_callback((*slot)->lock, fn, arg);
    }
    pthread_mutex_unlock(&h->mutex);
    if (found == 2)
        report_lost(c, name, owner, id == 0 ? "found by extend" : "found by the watchdog");
    return found;
}

void dlock__hold_extended(dlock_rlock *l, const char *owner, int64_t lease_ms,
                          const dlock_script *renew, dlock__renew_fn renew_fn)
{
    dlock__holds *h = &l->client->holds;
    dlock__hold **slot;

    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot && lease_ms == 0) {
        renew_on(l->client, *slot, renew, renew_fn);
    } else if (*slot) {
        renew_off(*slot);
        (*slot)->lease_ms = lease_ms;
    }
    pthread_mutex_unlock(&h->mutex);
}

void dlock__hold_stamp(dlock_rlock *l, const char *owner)
{
    dlock__holds *h = &l->client->holds;
    dlock__hold **slot;

    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot)
        (*slot)->changes++;
    pthread_mutex_unlock(&h->mutex);
}

int dlock__hold_current(dlock_rlock *l, const dlock__renewal *w)
{
    dlock__holds *h = &l->client->holds;
    dlock__hold **slot;
    int same;

    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, w->owner);
    same = *slot && unchanged(*slot, w->id, w->changes) && (*slot)->renew &&
           (*slot)->count > 0;
    pthread_mutex_unlock(&h->mutex);
    return same;
}

int dlock__hold_token(dlock_rlock *l, const char *owner, int64_t *out)
{
    dlock__holds *h = &l->client->holds;
    dlock__hold **slot;
    int rc = DLOCK_ENOTOWNER;

    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot && (*slot)->count > 0 && !(*slot)->lost) {
        *out = (*slot)->token;
        rc = 0;
    }
    pthread_mutex_unlock(&h->mutex);
    return rc;
}

void dlock__lost_callback(const dlock_rlock *l, dlock_lost_fn *fn, void **arg)
{
    if (l->on_lost) {
        *fn = l->on_lost;
        *arg = l->on_lost_arg;
    } else {
        *fn = l->client->opts.on_lost;
        *arg = l->client->opts.on_lost_arg;
    }
}

void dlock_hold_release_end(dlock_rlock *l, const char *owner, int how)
{
    if (l && owner)
        dlock__hold_release_end(l, owner, how, 0, NULL);
}

int dlock_hold_missing(dlock_rlock *l, const char *owner)
{
    if (!l || !owner)
        return DLOCK_EINVAL;
    return dlock__hold_release_end(l, owner, DLOCK_HOLD_ALL, 1, NULL) ? DLOCK_ELOST
                                                                       : DLOCK_ENOTOWNER;
}

int64_t dlock_hold_lease(dlock_rlock *l, const char *owner)
{
    dlock__holds *h;
    dlock__hold **slot;
    int64_t lease = 0;

    if (!l || !l->client || !owner)
        return 0;
    h = &l->client->holds;
    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot)
        lease = (*slot)->renew ? l->client->opts.watchdog_timeout_ms
                               : (*slot)->lease_ms;
    pthread_mutex_unlock(&h->mutex);
    return lease;
}

int64_t dlock__hold_count_local(dlock_rlock *l, const char *owner)
{
    dlock__holds *h;
    dlock__hold **slot;
    int64_t count = 0;

    if (!l || !l->client || !owner)
        return 0;
    h = &l->client->holds;
    pthread_mutex_lock(&h->mutex);
    slot = find_slot(h, l, owner);
    if (*slot && !(*slot)->lost && (*slot)->count > 0)
        count = (*slot)->count;
    pthread_mutex_unlock(&h->mutex);
    return count;
}

void dlock__holds_forget_lock(dlock__holds *h, dlock_rlock *l)
{
    dlock__hold **chain, *e;

    pthread_mutex_lock(&h->mutex);
    /* Never on the watchdog thread while l is pinned: it unpins before
     * calling anything of the application's (on_lost). */
    while (h->renewing == l)
        dlock__wait_pin(&h->renewed, &h->mutex);
    /* Always the first of the chain: removing it promotes the next. */
    while (*(chain = find_chain(h, l)) != NULL) {
        e = *chain;
        remove_hold(h, find_slot(h, l, e->owner));
    }
    pthread_mutex_unlock(&h->mutex);
}

int dlock__holds_pin(dlock__holds *h, const dlock__renewal *list, size_t n)
{
    dlock__hold **slot;
    size_t i;
    int alive = 0;

    pthread_mutex_lock(&h->mutex);
    /* A hold of the object still here with the id collected: the handle
     * has not been freed (that forgets its holds first), and until
     * unpinned it will not be. */
    for (i = 0; i < n && !alive; i++) {
        slot = find_slot(h, list[i].lock, list[i].owner);
        alive = *slot && (*slot)->id == list[i].id;
    }
    if (alive)
        h->renewing = list[0].lock;
    pthread_mutex_unlock(&h->mutex);
    return alive;
}

void dlock__holds_unpin(dlock__holds *h)
{
    pthread_mutex_lock(&h->mutex);
    h->renewing = NULL;
    pthread_cond_broadcast(&h->renewed);
    pthread_mutex_unlock(&h->mutex);
}
