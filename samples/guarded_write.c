/*
 * guarded_write — a lock alone cannot protect a value from a holder whose
 * lease ran out; a guarded write can.
 *
 *   guarded_write                         on the mock, on a virtual clock
 *   guarded_write redis://127.0.0.1:6379  on a Redis server (real time)
 *
 * Two workers (two clients: two processes, as far as the store can tell)
 * update an account balance kept in a JSON bucket, under a fenced lock.
 * Worker A takes the lock and then stalls (a GC pause, a swapped-out page,
 * a slow disk) for longer than its lease. Worker B takes the lock, writes
 * its balance and carries on. A wakes up, still believing it holds the lock,
 * and writes: the store refuses, because A's fencing token is stale and A
 * no longer holds the lock. B's balance stands.
 *
 * On the mock the stall is a jump of the virtual clock: no waiting.
 */
#include <dlock.h>
#include <jansson.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LEASE_MS 3000

static void check(int rc, const char *what, const char *detail)
{
    if (rc == 0)
        return;
    fprintf(stderr, "%s: %s (%s)%s%s\n", what, dlock_errname(rc), dlock_strerror(rc),
            detail ? ": " : "", detail ? detail : "");
    exit(1);
}

/* Stalls for ms: instantly on the virtual clock, really on Redis. */
static void stall(dlock_vclock *clock, int64_t ms)
{
    struct timespec ts;

    if (clock) {
        dlock_vclock_advance(clock, ms);
        return;
    }
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* A worker: its client, its handle on the lock, its handle on the bucket. */
typedef struct worker {
    const char *name;
    dlock_client *client;
    dlock_rlock *lock;
    dlock_bucket *balance;
    int64_t token;
} worker;

static void worker_open(worker *w, const char *name, dlock_client *c)
{
    w->name = name;
    w->client = c;
    check(dlock_fenced_new(&w->lock, c, "accounts:42:lock"), "fenced_new", NULL);
    check(dlock_bucket_new(&w->balance, c, "accounts:42:balance", dlock_codec_json()),
          "bucket_new", NULL);
}

static void worker_close(worker *w)
{
    dlock_bucket_free(w->balance);
    dlock_rlock_free(w->lock);
    dlock_client_free(w->client);
}

/* Writes {"balance": amount, "by": name}, only while w holds the lock with
 * its current token. */
static int write_balance(worker *w, int amount)
{
    dlock_guard guard = DLOCK_GUARD_INIT;
    json_t *doc = json_pack("{s:i, s:s}", "balance", amount, "by", w->name);
    int rc;

    guard.lock = w->lock;
    guard.token = w->token;
    rc = dlock_bucket_set_guarded(w->balance, &guard, doc, 0);
    json_decref(doc);
    printf("  %s writes balance %d with token %" PRId64 ": %s\n", w->name, amount,
           w->token, rc == 0 ? "written" : dlock_errname(rc));
    if (rc != 0)
        printf("    (%s)\n", dlock_bucket_errmsg(w->balance));
    return rc;
}

static void show_balance(worker *w)
{
    json_t *doc = NULL;
    char *text;

    check(dlock_bucket_get(w->balance, (void **)&doc), "bucket_get",
          dlock_bucket_errmsg(w->balance));
    text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    printf("  stored: %s\n", text ? text : "(nothing)");
    free(text);
    json_decref(doc);
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : NULL;
    dlock_vclock *clock = NULL;
    dlock_mock_store *store = NULL;
    dlock_client *ca = NULL, *cb = NULL;
    worker a, b;
    char err[256] = "", *state = NULL;
    int rc;

    if (!url) {
        /* Two clients on one store, on a clock the program moves. */
        dlock_backend *ba = NULL, *bb = NULL;
        check(dlock_vclock_new(&clock, 0), "vclock_new", NULL);
        check(dlock_mock_store_new(&store, dlock_vclock_clock(clock)), "store_new", NULL);
        check(dlock_mock_backend_new(&ba, store), "backend_new", NULL);
        check(dlock_mock_backend_new(&bb, store), "backend_new", NULL);
        check(dlock_client_new(&ca, ba, NULL), "client_new", NULL);
        check(dlock_client_new(&cb, bb, NULL), "client_new", NULL);
        printf("mock backend, virtual clock\n");
    } else {
        check(dlock_client_connect(&ca, url, NULL, err, sizeof(err)), "connect", err);
        check(dlock_client_connect(&cb, url, NULL, err, sizeof(err)), "connect", err);
        printf("redis backend at %s\n", url);
    }
    worker_open(&a, "worker-A", ca);
    worker_open(&b, "worker-B", cb);
    check(dlock_bucket_delete(a.balance, NULL), "bucket_delete", NULL);

    printf("1. A takes the lock (lease %d ms) and writes\n", LEASE_MS);
    check(dlock_fenced_lock(a.lock, &a.token, LEASE_MS), "fenced_lock",
          dlock_errmsg(a.lock));
    check(write_balance(&a, 100), "write", NULL);

    printf("2. A stalls for %d ms; its lease runs out without A knowing\n",
           LEASE_MS + 500);
    stall(clock, LEASE_MS + 500);

    printf("3. B takes the lock and writes\n");
    check(dlock_fenced_lock(b.lock, &b.token, LEASE_MS), "fenced_lock",
          dlock_errmsg(b.lock));
    check(write_balance(&b, 250), "write", NULL);
    check(dlock_rlock_state_text(b.lock, &state), "state", dlock_errmsg(b.lock));
    printf("  the lock now: %s\n", state);
    free(state);

    printf("4. A wakes up and writes what it computed before the stall\n");
    rc = write_balance(&a, 90);
    if (rc == 0) {
        fprintf(stderr, "A's stale write landed: this must not happen\n");
        return 1;
    }
    show_balance(&b);

    printf("5. A's unlock tells it what happened: %s\n", dlock_errname(dlock_unlock(a.lock)));
    check(dlock_unlock(b.lock), "unlock", dlock_errmsg(b.lock));
    check(dlock_bucket_delete(b.balance, NULL), "bucket_delete", NULL);

    worker_close(&a);
    worker_close(&b);
    dlock_mock_store_free(store);
    dlock_vclock_free(clock);
    return 0;
}
