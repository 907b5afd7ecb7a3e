/*
 * dlock — a client's metrics in Prometheus's text exposition format,
 * version 0.0.4 (api/dlock/metrics.h): into a caller's buffer or to a
 * callback, line by line, from a snapshot (metrics.c) and the per-name
 * counters' table, which is read without a lock.
 */
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "objects/runtime/client.h"
#include "objects/runtime/metrics.h"

/* The longest line: a metric name and its suffix, the client and lock
 * labels escaped (each byte at most two), the other labels and a value. */
#define LINE_MAX_BYTES (2 * DLOCK_CLIENT_NAME_MAX + 2 * DLOCK_NAME_MAX + 256)
/* What a callback is given at most at once (whole lines). */
#define CHUNK_BYTES 8192

/* Where the lines go: buf (the whole lines that fit) or fn (in chunks). */
typedef struct sink {
    char *buf;
    size_t len, used;
    int full; /* a line did not fit: nothing more goes to buf */
    dlock_metrics_write_fn fn;
    void *arg;
    int stopped; /* fn said stop */
    size_t total; /* bytes of the whole text */
    char chunk[CHUNK_BYTES];
    size_t chunk_used;
    char line[LINE_MAX_BYTES];
    size_t n;
    char client[2 * DLOCK_CLIENT_NAME_MAX + 1]; /* the client's name, escaped */
} sink;

static void flush(sink *s)
{
    if (s->chunk_used > 0 && !s->stopped && s->fn(s->arg, s->chunk, s->chunk_used) != 0)
        s->stopped = 1;
    s->chunk_used = 0;
}

static void put(sink *s, const char *p, size_t n)
{
    /* LINE_MAX_BYTES holds every line this file makes: never cut */
    if (n > sizeof(s->line) - 1 - s->n)
        n = sizeof(s->line) - 1 - s->n;
    memcpy(s->line + s->n, p, n);
    s->n += n;
}

static void puts_(sink *s, const char *p)
{
    put(s, p, strlen(p));
}

static void putu(sink *s, uint64_t v)
{
    char num[24];

    put(s, num, (size_t)snprintf(num, sizeof(num), "%" PRIu64, v));
}

/* A label value, escaped: \ " and newline as \\ \" \n. Into out (room for
 * 2 * n + 1 bytes); returns its length. */
static size_t escape(char *out, const char *v, size_t n)
{
    size_t i, w = 0;

    for (i = 0; i < n; i++) {
        if (v[i] == '\\' || v[i] == '"' || v[i] == '\n') {
            out[w++] = '\\';
            out[w++] = v[i] == '\n' ? 'n' : v[i];
        } else {
            out[w++] = v[i];
        }
    }
    out[w] = '\0';
    return w;
}

/* ms as seconds, exactly ("0.001", "2.5", "60"). */
static void put_seconds(sink *s, uint64_t ms)
{
    char frac[8];
    int n;

    putu(s, ms / 1000);
    if (ms % 1000 == 0)
        return;
    n = snprintf(frac, sizeof(frac), ".%03u", (unsigned)(ms % 1000));
    while (frac[n - 1] == '0')
        n--;
    put(s, frac, (size_t)n);
}

/* Ends the line and sends it on. */
static void end_line(sink *s)
{
    s->line[s->n++] = '\n';
    s->total += s->n;
    if (s->fn) {
        if (s->chunk_used + s->n > sizeof(s->chunk))
            flush(s);
        memcpy(s->chunk + s->chunk_used, s->line, s->n);
        s->chunk_used += s->n;
    } else if (!s->full && s->used + s->n < s->len) {
        memcpy(s->buf + s->used, s->line, s->n);
        s->used += s->n;
    } else {
        s->full = 1;
    }
    s->n = 0;
}

static void family(sink *s, const char *name, const char *type, const char *help)
{
    puts_(s, "# HELP ");
    puts_(s, name);
    puts_(s, " ");
    puts_(s, help);
    end_line(s);
    puts_(s, "# TYPE ");
    puts_(s, name);
    puts_(s, " ");
    puts_(s, type);
    end_line(s);
}

/* name{client="..." then the caller's labels, if any. */
static void sample_start(sink *s, const char *name, const char *suffix)
{
    puts_(s, name);
    puts_(s, suffix);
    puts_(s, "{client=\"");
    puts_(s, s->client);
    puts_(s, "\"");
}

static void sample_end(sink *s, uint64_t v)
{
    puts_(s, "} ");
    putu(s, v);
    end_line(s);
}

static void counter(sink *s, const char *name, const char *help, uint64_t v)
{
    family(s, name, "counter", help);
    sample_start(s, name, "");
    sample_end(s, v);
}

static void histogram(sink *s, const char *name, const char *help, const dlock_histogram *h)
{
    static const int64_t bounds[DLOCK_METRICS_BUCKETS - 1] = DLOCK_METRICS_BOUNDS_MS;
    uint64_t cumulative = 0;
    size_t i;

    family(s, name, "histogram", help);
    for (i = 0; i < DLOCK_METRICS_BUCKETS; i++) {
        cumulative += h->buckets[i];
        sample_start(s, name, "_bucket");
        puts_(s, ",le=\"");
        if (i < DLOCK_METRICS_BUCKETS - 1)
            put_seconds(s, (uint64_t)bounds[i]);
        else
            puts_(s, "+Inf");
        puts_(s, "\"");
        sample_end(s, cumulative);
    }
    /* the sum's decimals say exactly what the milliseconds say */
    sample_start(s, name, "_sum");
    puts_(s, "} ");
    put_seconds(s, h->sum_ms);
    end_line(s);
    sample_start(s, name, "_count");
    sample_end(s, h->count);
}

/* One per-name counter: a series per name counted so far, then "other". */
static void per_name(sink *s, const dlock__names *t, const char *name, const char *help,
                     size_t field)
{
    char lock[2 * DLOCK_NAME_MAX + 1];
    size_t i;

    family(s, name, "counter", help);
    for (i = 0; i <= t->mask; i++) {
        const dlock__name_count *e = __atomic_load_n(&t->slots[i], __ATOMIC_ACQUIRE);
        if (!e)
            continue;
        sample_start(s, name, "");
        puts_(s, ",lock=\"");
        put(s, lock, escape(lock, e->name, e->len));
        puts_(s, "\"");
        sample_end(s, __atomic_load_n((const uint64_t *)((const char *)e + field),
                                      __ATOMIC_RELAXED));
    }
    sample_start(s, name, "");
    puts_(s, ",lock=\"other\",overflow=\"true\"");
    sample_end(s, __atomic_load_n((const uint64_t *)((const char *)t->other + field),
                                  __ATOMIC_RELAXED));
}

static void render(dlock_client *c, sink *s)
{
    dlock_metrics m = DLOCK_METRICS_INIT;

    escape(s->client, c->name, strlen(c->name));
    dlock_client_metrics(c, &m); /* c and &m are valid: it cannot fail */
    counter(s, "dlock_acquisitions_total", "Locks acquired (re-entries included).",
            m.acquisitions);
    counter(s, "dlock_busy_attempts_total",
            "Acquisition attempts refused: held by another owner.", m.busy);
    counter(s, "dlock_renewals_total", "Holds renewed by the watchdog.", m.renewals);
    counter(s, "dlock_renewal_failures_total",
            "Holds the watchdog failed to renew (retried).", m.renewal_failures);
    counter(s, "dlock_lost_locks_total", "Holds found lost (lease ran out, taken away).",
            m.lost);
    counter(s, "dlock_reconnects_total", "Backend connections re-established.",
            m.reconnects);
    counter(s, "dlock_unsynced_no_replica_total",
            "Writes that went without WAIT: no replica connected.", m.unsynced_no_replica);
    counter(s, "dlock_unsynced_refused_total",
            "Writes that went without WAIT: the server refused WAIT.", m.unsynced_refused);
    counter(s, "dlock_messages_ignored_total",
            "Pub/sub messages ignored: a payload no lock publishes.", m.messages_ignored);
    histogram(s, "dlock_wait_seconds", "Time spent acquiring, per acquisition.", &m.wait_ms);
    histogram(s, "dlock_hold_seconds", "Time from acquisition to release, per hold.",
              &m.hold_ms);
    if (c->names.max == 0)
        return;
    per_name(s, &c->names, "dlock_lock_acquisitions_total",
             "Locks acquired, per lock name (re-entries included).",
             offsetof(dlock__name_count, acquisitions));
    per_name(s, &c->names, "dlock_lock_busy_attempts_total",
             "Acquisition attempts refused: held by another owner, per lock name.",
             offsetof(dlock__name_count, busy));
    per_name(s, &c->names, "dlock_lock_lost_total",
             "Holds found lost (lease ran out, taken away), per lock name.",
             offsetof(dlock__name_count, lost));
}

int dlock_client_metrics_prometheus(dlock_client *c, char *buf, size_t len)
{
    sink s;

    if (!c || (!buf && len > 0))
        return DLOCK_EINVAL;
    memset(&s, 0, offsetof(sink, chunk));
    s.buf = buf;
    s.len = len;
    s.n = 0;
    render(c, &s);
    if (len > 0)
        buf[s.used] = '\0';
    /* at most DLOCK_METRICS_NAMES_MAX x 3 lines of LINE_MAX_BYTES: far
     * below INT_MAX */
    return s.total > INT_MAX ? INT_MAX : (int)s.total;
}

int dlock_client_metrics_prometheus_write(dlock_client *c, dlock_metrics_write_fn fn,
                                          void *arg)
{
    sink s;

    if (!c || !fn)
        return DLOCK_EINVAL;
    memset(&s, 0, offsetof(sink, chunk));
    s.fn = fn;
    s.arg = arg;
    s.chunk_used = 0;
    s.n = 0;
    render(c, &s);
    flush(&s);
    return s.stopped ? DLOCK_ECANCELED : 0;
}
