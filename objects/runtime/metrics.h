/*
 * dlock — the client's figures (metrics.c): the counters every call adds
 * to and the watchdog's push.
 * Private to objects/; included by runtime/ client.h, holds.c, metrics.c,
 * rlock.c, wait.c, watchdog.c.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_METRICS_H
#define DLOCK_OBJECTS_RUNTIME_METRICS_H

#include <stdint.h>

#include "dlock/client.h"
#include "dlock/metrics.h"

/* metrics.c: the client's figures (api/dlock/metrics.h), every field
 * updated with relaxed atomic additions. */
typedef struct dlock__metrics {
    uint64_t acquisitions, busy, renewals, renewal_failures, lost;
    dlock_histogram wait_ms, hold_ms;
} dlock__metrics;

/* Adds n to a counter of c's metrics. */
#define DLOCK__COUNT(c, field, n) \
    ((void)__atomic_add_fetch(&(c)->metrics.field, (uint64_t)(n), __ATOMIC_RELAXED))
/* One observation of ms (negative: 0) in h. */
void dlock__metrics_observe(dlock_histogram *h, int64_t ms);
/* The watchdog's push of c's figures, if the application asked for it. */
void dlock__metrics_push(dlock_client *c);

#endif /* DLOCK_OBJECTS_RUNTIME_METRICS_H */
