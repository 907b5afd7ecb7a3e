/*
 * dlock — the client's figures (metrics.c): the counters every call adds
 * to and the watchdog's push.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_METRICS_H
#define DLOCK_OBJECTS_RUNTIME_METRICS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/metrics.h"

/* metrics.c: the client's figures (api/dlock/metrics.h), every field
 * updated with relaxed atomic additions. */
typedef struct dlock__metrics {
    uint64_t acquisitions, busy, renewals, renewal_failures, lost;
    dlock_histogram wait_ms, hold_ms;
} dlock__metrics;

/* The counters of one lock name (metrics_names_max, api/dlock/client.h),
 * or of the "other" bucket. Relaxed atomic additions. */
typedef struct dlock__name_count {
    uint64_t acquisitions, busy, lost;
    size_t len;
    char name[]; /* len bytes and a NUL; empty for the bucket */
} dlock__name_count;

/* The client's per-name counters: a hash table of fixed size (twice the
 * cap, a power of two, open addressing) whose slots go from NULL to an
 * entry once and never change again until the client is freed. Lookups
 * read the slots without a lock (acquire loads); a name seen for the
 * first time while fewer than max names are known is added under mutex,
 * which is taken at most max times plus races, never once the table is
 * full. max == 0: off, nothing allocated. */
typedef struct dlock__names {
    size_t max;   /* the cap; 0: off */
    size_t mask;  /* slots - 1 */
    dlock__name_count **slots;
    size_t count; /* entries in slots; written under mutex, read atomically */
    pthread_mutex_t mutex;
    dlock__name_count *other;
} dlock__names;

/* 0, DLOCK_ENOMEM. max 0: nothing to free. */
int dlock__names_init(dlock__names *t, size_t max);
void dlock__names_fini(dlock__names *t);
/* The counters of name[0..len) (the "other" bucket when the table is full
 * or the name is not UTF-8). t must be on. Never blocks but on the first
 * sighting of a name while the table is not full. */
dlock__name_count *dlock__names_get(dlock__names *t, const char *name, size_t len);

/* Adds n to a counter of c's metrics. */
#define DLOCK__COUNT(c, field, n) \
    ((void)__atomic_add_fetch(&(c)->metrics.field, (uint64_t)(n), __ATOMIC_RELAXED))
/* Adds 1 to a counter of c's metrics and, when per-name counters are on,
 * to the same counter of the lock name (len bytes). Off, it costs a test
 * of a field that never changes. */
#define DLOCK__COUNT_NAMED(c, field, name, len)                                         \
    do {                                                                              \
        DLOCK__COUNT(c, field, 1);                                                    \
        if ((c)->names.max)                                                           \
            (void)__atomic_add_fetch(&dlock__names_get(&(c)->names, name, len)->field, \
                                     (uint64_t)1, __ATOMIC_RELAXED);                  \
    } while (0)
/* One observation of ms (negative: 0) in h. */
void dlock__metrics_observe(dlock_histogram *h, int64_t ms);
/* The watchdog's push of c's figures, if the application asked for it. */
void dlock__metrics_push(dlock_client *c);

#endif /* DLOCK_OBJECTS_RUNTIME_METRICS_H */
