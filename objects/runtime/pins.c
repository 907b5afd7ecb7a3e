/*
 * dlock — the pin table (pins.h): one entry per pinned object, in a hash
 * of a few buckets under one lock. An entry is made by an object's first
 * pin and goes with its last, so a process that never starts an
 * asynchronous operation pays one atomic load per dlock_rlock_free.
 */
#include "objects/runtime/pins.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "dlock/errors.h"

#define BUCKETS 1024

typedef struct dlock__pin_entry {
    dlock_rlock *obj;
    dlock__pin *pins;
    int freed;
    struct dlock__pin_entry *next; /* in its bucket */
} pin_entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pin_entry *buckets[BUCKETS];
static size_t entries; /* read without the lock by dlock__pin_defer_free */

static pin_entry **slot(const dlock_rlock *obj)
{
    pin_entry **e = &buckets[((uintptr_t)obj >> 4) % BUCKETS];

    while (*e && (*e)->obj != obj)
        e = &(*e)->next;
    return e;
}

int dlock__pin_add(dlock__pin *p, dlock_rlock *obj, void (*on_free)(dlock__pin *p))
{
    pin_entry **e, *fresh = malloc(sizeof(*fresh));

    pthread_mutex_lock(&mu);
    e = slot(obj);
    if (!*e) {
        if (!fresh) {
            pthread_mutex_unlock(&mu);
            return DLOCK_ENOMEM;
        }
        fresh->obj = obj;
        fresh->pins = NULL;
        fresh->freed = 0;
        fresh->next = NULL;
        *e = fresh;
        fresh = NULL;
        __atomic_add_fetch(&entries, 1, __ATOMIC_RELAXED);
    }
    p->entry = *e;
    p->on_free = on_free;
    p->prev = NULL;
    p->next = (*e)->pins;
    if (p->next)
        p->next->prev = p;
    (*e)->pins = p;
    pthread_mutex_unlock(&mu);
    free(fresh);
    return 0;
}

dlock_rlock *dlock__pin_remove(dlock__pin *p)
{
    pin_entry *e = p->entry, **s;
    dlock_rlock *obj = NULL;

    if (!e)
        return NULL;
    pthread_mutex_lock(&mu);
    if (p->prev)
        p->prev->next = p->next;
    else
        e->pins = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->entry = NULL;
    if (!e->pins) {
        s = slot(e->obj);
        *s = e->next;
        __atomic_sub_fetch(&entries, 1, __ATOMIC_RELAXED);
        if (e->freed)
            obj = e->obj;
    } else {
        e = NULL;
    }
    pthread_mutex_unlock(&mu);
    free(e);
    return obj;
}

int dlock__pin_defer_free(dlock_rlock *obj)
{
    pin_entry *e;
    dlock__pin *p;

    if (__atomic_load_n(&entries, __ATOMIC_RELAXED) == 0)
        return 0;
    pthread_mutex_lock(&mu);
    e = *slot(obj);
    if (e && !e->freed) {
        e->freed = 1;
        for (p = e->pins; p; p = p->next) {
            __atomic_store_n(&p->freed, 1, __ATOMIC_RELEASE);
            if (p->on_free)
                p->on_free(p);
        }
    }
    pthread_mutex_unlock(&mu);
    return e != NULL;
}

int dlock__pin_freed(const dlock__pin *p)
{
    return __atomic_load_n(&p->freed, __ATOMIC_ACQUIRE);
}
