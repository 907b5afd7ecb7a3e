/*
 * dlock — the client's metrics (api/dlock/metrics.h): relaxed atomic
 * additions where things happen (rlock.c, holds.c, wait.c, watchdog.c),
 * and the snapshot an application reads.
 */
#include <string.h>

#include "objects/runtime/metrics.h"
#include "objects/runtime/client.h"

static const int64_t bounds[DLOCK_METRICS_BUCKETS - 1] = DLOCK_METRICS_BOUNDS_MS;

void dlock__metrics_observe(dlock_histogram *h, int64_t ms)
{
    size_t i = 0;

    if (ms < 0)
        ms = 0;
    while (i < DLOCK_METRICS_BUCKETS - 1 && ms > bounds[i])
        i++;
    __atomic_add_fetch(&h->buckets[i], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&h->sum_ms, (uint64_t)ms, __ATOMIC_RELAXED);
    __atomic_add_fetch(&h->count, 1, __ATOMIC_RELAXED);
}

static uint64_t get(const uint64_t *v)
{
    return __atomic_load_n(v, __ATOMIC_RELAXED);
}

static void copy_histogram(dlock_histogram *to, const dlock_histogram *from)
{
    size_t i;

    for (i = 0; i < DLOCK_METRICS_BUCKETS; i++)
        to->buckets[i] = get(&from->buckets[i]);
    to->sum_ms = get(&from->sum_ms);
    to->count = get(&from->count);
}

int dlock_client_set_metrics_push(dlock_client *c, dlock_metrics_fn fn, void *arg)
{
    if (!c)
        return DLOCK_EINVAL;
    if (dlock__client_check(c) != 0)
        return DLOCK_EFORKED;
    pthread_mutex_lock(&c->holds.mutex);
    c->metrics_push = fn;
    c->metrics_push_arg = arg;
    pthread_mutex_unlock(&c->holds.mutex);
    return 0;
}

void dlock__metrics_push(dlock_client *c)
{
    dlock_metrics m = DLOCK_METRICS_INIT;
    dlock_metrics_fn fn;
    void *arg;

    pthread_mutex_lock(&c->holds.mutex);
    fn = c->metrics_push;
    arg = c->metrics_push_arg;
    pthread_mutex_unlock(&c->holds.mutex);
    if (fn && dlock_client_metrics(c, &m) == 0)
        fn(arg, &m);
}

int dlock_client_metrics(dlock_client *c, dlock_metrics *out)
{
    const dlock__metrics *m;

    if (!c || !out || out->version < 1 || out->version > 3)
        return DLOCK_EINVAL;
    m = &c->metrics;
    out->acquisitions = get(&m->acquisitions);
    out->busy = get(&m->busy);
    out->renewals = get(&m->renewals);
    out->renewal_failures = get(&m->renewal_failures);
    out->lost = get(&m->lost);
    out->reconnects = dlock_backend_reconnects(c->backend);
    copy_histogram(&out->wait_ms, &m->wait_ms);
    copy_histogram(&out->hold_ms, &m->hold_ms);
    if (out->version >= 2) {
        out->unsynced_no_replica = dlock_backend_unsynced(c->backend, DLOCK_UNSYNCED_NO_REPLICA);
        out->unsynced_refused = dlock_backend_unsynced(c->backend, DLOCK_UNSYNCED_REFUSED);
    }
    if (out->version >= 3)
        out->messages_ignored = dlock_backend_ignored_messages(c->backend);
    return 0;
}
