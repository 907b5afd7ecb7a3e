/*
 * metrics_prometheus — a client's metrics in the Prometheus text format.
 *
 *   metrics_prometheus                         on the in-process mock
 *   metrics_prometheus redis://127.0.0.1:6379  on a Redis server
 *
 * Two threads take turns on one lock (so there is contention), then the
 * client's figures (api/dlock/metrics.h) are printed as a scrape would
 * receive them: counters with a _total suffix, the wait and hold times as
 * histograms in seconds with cumulative buckets. A real exporter serves
 * the same text on GET /metrics; dlock_client_metrics never blocks, so it
 * can be called from the HTTP handler directly. Warnings from the
 * library (the log hook, api/dlock/log.h) go to stderr.
 */
#include <dlock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void check(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "%s: %s (%s)\n", what, dlock_errname(rc), dlock_strerror(rc));
        exit(1);
    }
}

static void to_stderr(void *arg, int level, const char *msg)
{
    (void)arg;
    fprintf(stderr, "[%s] %s\n", dlock_log_level_name(level), msg);
}

static void *worker(void *arg)
{
    struct timespec hold = {0, 2000000}; /* 2 ms of "work" under the lock */
    dlock_rlock *l = arg;
    int i;

    for (i = 0; i < 25; i++) {
        /* a first look without waiting (refused while the other thread
         * holds it: counted as busy), then a blocking lock */
        if (dlock_try_lock(l, 0, 5000) != 0 && dlock_lock(l, 5000) != 0)
            continue;
        nanosleep(&hold, NULL);
        dlock_unlock(l);
    }
    return NULL;
}

static void counter(const char *id, const char *name, const char *help, uint64_t v)
{
    printf("# HELP dlock_%s_total %s\n# TYPE dlock_%s_total counter\n", name, help,
           name);
    printf("dlock_%s_total{client=\"%s\"} %" PRIu64 "\n", name, id, v);
}

static void histogram(const char *id, const char *name, const char *help,
                      const dlock_histogram *h)
{
    static const int64_t bounds[DLOCK_METRICS_BUCKETS - 1] = DLOCK_METRICS_BOUNDS_MS;
    uint64_t cumulative = 0;
    int i;

    printf("# HELP dlock_%s_seconds %s\n# TYPE dlock_%s_seconds histogram\n", name,
           help, name);
    for (i = 0; i < DLOCK_METRICS_BUCKETS - 1; i++) {
        cumulative += h->buckets[i];
        printf("dlock_%s_seconds_bucket{client=\"%s\",le=\"%g\"} %" PRIu64 "\n", name,
               id, (double)bounds[i] / 1000.0, cumulative);
    }
    cumulative += h->buckets[DLOCK_METRICS_BUCKETS - 1];
    printf("dlock_%s_seconds_bucket{client=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name,
           id, cumulative);
    printf("dlock_%s_seconds_sum{client=\"%s\"} %g\n", name, id,
           (double)h->sum_ms / 1000.0);
    printf("dlock_%s_seconds_count{client=\"%s\"} %" PRIu64 "\n", name, id, h->count);
}

/* The exposition of one client. */
static void expose(dlock_client *c)
{
    dlock_metrics m = DLOCK_METRICS_INIT;
    const char *id = dlock_client_id(c);

    check(dlock_client_metrics(c, &m), "client_metrics");
    counter(id, "acquisitions", "Locks acquired (re-entries included).", m.acquisitions);
    counter(id, "busy_attempts", "Acquisition attempts refused: held by another owner.",
            m.busy);
    counter(id, "renewals", "Holds renewed by the watchdog.", m.renewals);
    counter(id, "renewal_failures", "Holds the watchdog failed to renew (retried).",
            m.renewal_failures);
    counter(id, "lost_locks", "Holds found lost (lease ran out, taken away).", m.lost);
    counter(id, "reconnects", "Backend connections re-established.", m.reconnects);
    histogram(id, "wait", "Time spent acquiring, per acquisition.", &m.wait_ms);
    histogram(id, "hold", "Time from acquisition to release, per hold.", &m.hold_ms);
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "mock:";
    dlock_client *client = NULL;
    dlock_rlock *lock = NULL;
    pthread_t a, b;
    char err[256] = "";
    int rc;

    check(dlock_set_log(to_stderr, NULL, DLOCK_LOG_WARN), "set_log");
    rc = dlock_client_connect(&client, url, NULL, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "connect %s: %s: %s\n", url, dlock_errname(rc), err);
        return 1;
    }
    check(dlock_reentrant_new(&lock, client, "metrics:sample"), "reentrant_new");
    pthread_create(&a, NULL, worker, lock);
    pthread_create(&b, NULL, worker, lock);
    pthread_join(a, NULL);
    pthread_join(b, NULL);

    expose(client);

    dlock_rlock_free(lock);
    dlock_client_free(client);
    dlock_set_log(NULL, NULL, 0);
    return 0;
}
