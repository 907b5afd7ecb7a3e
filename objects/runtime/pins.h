/*
 * dlock — objects kept alive by the asynchronous operations in flight on
 * them (pins.c). An operation pins its object from its starter to the end
 * of its callback; dlock_rlock_free of a pinned object only marks it
 * (the pins are told, so that the loop can end its waits) and the last
 * pin to go frees it. Every object is keyed by its dlock_rlock base, the
 * first member of every object type. Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_PINS_H
#define DLOCK_OBJECTS_RUNTIME_PINS_H

#include "dlock/sys/methods.h"

typedef struct dlock__pin dlock__pin;
struct dlock__pin {
    struct dlock__pin_entry *entry; /* its object's (pins.c) */
    dlock__pin *prev, *next;        /* the object's other pins */
    /* Called once when the object is freed while pinned, under the pin
     * table's lock (so never take it from here; a loop's mutex is fine:
     * the table's lock is never taken under one). */
    void (*on_free)(dlock__pin *p);
    int freed; /* the object was freed meanwhile (read atomically) */
};

/* Pins obj with p (the caller's, zeroed). 0, or DLOCK_ENOMEM (nothing
 * pinned). Any thread. */
int dlock__pin_add(dlock__pin *p, dlock_rlock *obj, void (*on_free)(dlock__pin *p));
/* Unpins p; the object it pinned when it must now be freed
 * (dlock_rlock_free was called while pinned and p was the last pin),
 * else NULL. Any thread. */
dlock_rlock *dlock__pin_remove(dlock__pin *p);
/* For dlock_rlock_free: 1 when obj is pinned (then it is marked freed,
 * its pins told, and the last pin's owner frees it), 0 when it may be
 * freed now. */
int dlock__pin_defer_free(dlock_rlock *obj);
/* Whether the object p pins was freed while pinned. */
int dlock__pin_freed(const dlock__pin *p);

#endif /* DLOCK_OBJECTS_RUNTIME_PINS_H */
