/*
 * dlock — the client's metrics (api/dlock/metrics.h): relaxed atomic
 * additions where things happen (base.c, holds.c, wait.c, watchdog.c),
 * the per-name counters' table, and the snapshot an application reads.
 * The Prometheus exposition of it all is report/prometheus.c.
 */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
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

/* ---- per-name counters ---------------------------------------------------- */

int dlock__names_init(dlock__names *t, size_t max)
{
    size_t n = 1;

    memset(t, 0, sizeof(*t));
    if (max == 0)
        return 0;
    while (n < 2 * max)
        n <<= 1;
    t->slots = calloc(n, sizeof(*t->slots));
    t->other = calloc(1, sizeof(*t->other) + 1);
    if (!t->slots || !t->other || pthread_mutex_init(&t->mutex, NULL) != 0) {
        free(t->slots);
        free(t->other);
        memset(t, 0, sizeof(*t));
        return DLOCK_ENOMEM;
    }
    t->mask = n - 1;
    t->max = max;
    return 0;
}

void dlock__names_fini(dlock__names *t)
{
    size_t i;

    if (t->max == 0)
        return;
    for (i = 0; i <= t->mask; i++)
        free(t->slots[i]);
    free(t->slots);
    free(t->other);
    pthread_mutex_destroy(&t->mutex);
    memset(t, 0, sizeof(*t));
}

/* FNV-1a of a lock name: the table's hash (off the path of a client
 * without per-name counters). */
static size_t hash_name(const char *name, size_t len)
{
    uint64_t h = 1469598103934665603ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)name[i];
        h *= 1099511628211ULL;
    }
    return (size_t)h;
}

/* The entry of name, or NULL and *at = the free slot where it would go. The
 * table is never more than half full, so the probe ends. */
static dlock__name_count *find(dlock__names *t, const char *name, size_t len, size_t *at)
{
    size_t i = hash_name(name, len) & t->mask;
    dlock__name_count *e;

    while ((e = __atomic_load_n(&t->slots[i], __ATOMIC_ACQUIRE)) != NULL) {
        if (e->len == len && memcmp(e->name, name, len) == 0)
            return e;
        i = (i + 1) & t->mask;
    }
    *at = i;
    return NULL;
}

dlock__name_count *dlock__names_get(dlock__names *t, const char *name, size_t len)
{
    dlock__name_count *e;
    size_t at;

    e = find(t, name, len, &at);
    if (e)
        return e;
    /* A full table takes no lock: every new name is "other" from now on. A
     * name that is not UTF-8 could not be a label value. */
    if (__atomic_load_n(&t->count, __ATOMIC_RELAXED) >= t->max ||
        dlock__utf8_check(name, len) != len)
        return t->other;
    pthread_mutex_lock(&t->mutex);
    e = find(t, name, len, &at); /* another thread may have added it */
    if (!e && t->count < t->max) {
        e = malloc(sizeof(*e) + len + 1);
        if (e) {
            e->acquisitions = e->busy = e->lost = 0;
            e->len = len;
            memcpy(e->name, name, len);
            e->name[len] = '\0';
            __atomic_store_n(&t->slots[at], e, __ATOMIC_RELEASE);
            __atomic_store_n(&t->count, t->count + 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&t->mutex);
    return e ? e : t->other; /* out of memory: counted, as "other" */
}

/* ---- the snapshot ---------------------------------------------------------- */

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

    if (!c || !out || out->version != DLOCK_METRICS_VERSION)
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
    out->unsynced_no_replica = dlock_backend_unsynced(c->backend, DLOCK_UNSYNCED_NO_REPLICA);
    out->unsynced_refused = dlock_backend_unsynced(c->backend, DLOCK_UNSYNCED_REFUSED);
    out->messages_ignored = dlock_backend_ignored_messages(c->backend);
    return 0;
}
