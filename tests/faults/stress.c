/*
 * Fault tests, item 4: stress across processes (see faults.h).
 *
 * For each lock type, procs helper processes (dlock_fault_helper stress)
 * run threads x iters acquisitions each against one throwaway
 * redis-server, every acquisition checking the invariant in the store
 * (tests/faults/helper.c). This process then checks what only the sum can
 * tell: the non-atomic counter equals the number of exclusive acquisitions
 * (a lost update is an overlap), nobody is left inside, and the semaphore
 * has all its permits back.
 */
#include "faults.h"

#include <dlock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../harness/cluster.h"
#include "../harness/redis_server.h"

#define MAX_PROCS 16
#define SEM_PERMITS 3
#define PROC_LIMIT_MS (900 * 1000) /* the helper's own alarm is the same */

typedef struct totals {
    long acq, xacq, viol, errors, maxconc;
} totals;

static const char *const TYPES[] = {"reentrant", "fair", "rwlock", "semaphore"};

/* The store-side checks after the run; adds what it finds to t. */
static int check_store(dlock_client *c, const char *type, const char *name,
                       totals *t)
{
    char key[256];
    dlock_bucket *counter = NULL;
    dlock_semaphore *inside = NULL, *sem = NULL;
    int64_t *n = NULL, in = -1, permits = -1;
    int rc;

    snprintf(key, sizeof key, "%s:counter", name);
    rc = dlock_bucket_new(&counter, c, key, dlock_codec_long());
    if (rc == 0)
        rc = dlock_bucket_get(counter, (void **)&n);
    if (rc == 0 && (n ? *n : 0) != t->xacq) {
        long lost = t->xacq - (long)(n ? *n : 0);
        fprintf(stderr, "stress %s: counter %lld, %ld exclusive "
                "acquisitions: %ld updates lost\n", type,
                (long long)(n ? *n : 0), t->xacq, lost);
        t->viol += lost < 0 ? -lost : lost;
    }
    dlock_bucket_value_free(counter, n);
    snprintf(key, sizeof key, "%s:inside", name);
    if (rc == 0)
        rc = dlock_semaphore_new(&inside, c, key);
    if (rc == 0)
        rc = dlock_semaphore_available_permits(inside, &in);
    if (rc == 0 && in != 0) {
        fprintf(stderr, "stress %s: %lld left inside\n", type, (long long)in);
        t->viol++;
    }
    if (rc == 0 && strcmp(type, "semaphore") == 0) {
        rc = dlock_semaphore_new(&sem, c, name);
        if (rc == 0)
            rc = dlock_semaphore_available_permits(sem, &permits);
        if (rc == 0 && permits != SEM_PERMITS) {
            fprintf(stderr, "stress semaphore: %lld permits back of %d\n",
                    (long long)permits, SEM_PERMITS);
            t->viol++;
        }
    }
    dlock_semaphore_free(sem);
    dlock_semaphore_free(inside);
    dlock_bucket_free(counter);
    if (rc != 0)
        fprintf(stderr, "stress %s: store check failed: %s\n", type,
                dlock_errname(rc));
    return rc;
}

/* One lock type: starts the helpers, collects their RESULT lines. */
static int run_type(const char *url, dlock_client *c, const char *type,
                    int procs, int threads, int iters, totals *t)
{
    fault_child kids[MAX_PROCS];
    char name[64], th[16], it[16], pm[16], line[256];
    const char *argv[9];
    int i, started = 0, rc = 0;

    memset(t, 0, sizeof *t);
    snprintf(name, sizeof name, "stress:%s", type);
    snprintf(th, sizeof th, "%d", threads);
    snprintf(it, sizeof it, "%d", iters);
    snprintf(pm, sizeof pm, "%d", SEM_PERMITS);
    if (strcmp(type, "semaphore") == 0) {
        dlock_semaphore *s = NULL;
        int set = 0;
        if (dlock_semaphore_new(&s, c, name) != 0 ||
            dlock_semaphore_try_set_permits(s, &set, SEM_PERMITS) != 0 ||
            !set) {
            dlock_semaphore_free(s);
            fprintf(stderr, "stress: cannot set the semaphore's permits\n");
            return -1;
        }
        dlock_semaphore_free(s);
    }
    argv[0] = "dlock_fault_helper";
    argv[1] = "stress";
    argv[2] = url;
    argv[3] = type;
    argv[4] = name;
    argv[5] = th;
    argv[6] = it;
    argv[7] = pm;
    argv[8] = NULL;
    for (i = 0; i < procs; i++) {
        if (fault_child_spawn(&kids[i], argv) != 0) {
            fprintf(stderr, "stress: cannot start helper %d\n", i);
            rc = -1;
            break;
        }
        started++;
    }
    for (i = 0; i < started; i++) {
        long a, x, v, e, m;
        if (fault_child_read_line(&kids[i], line, sizeof line,
                                  PROC_LIMIT_MS) != 0 ||
            sscanf(line, "RESULT %ld %ld %ld %ld %ld", &a, &x, &v, &e,
                   &m) != 5) {
            fprintf(stderr, "stress %s: helper %d gave no result\n", type, i);
            t->errors += (long)threads * iters;
            rc = -1;
            continue;
        }
        t->acq += a;
        t->xacq += x;
        t->viol += v;
        t->errors += e;
        if (m > t->maxconc)
            t->maxconc = m;
    }
    for (i = 0; i < started; i++) {
        int st = 0;
        if (fault_child_wait(&kids[i], &st, 10000) != 0 || st != 0) {
            fault_child_kill(&kids[i]);
            rc = -1;
        }
    }
    if (rc == 0 && check_store(c, type, name, t) != 0)
        rc = -1;
    return rc;
}

/* On a cluster: which shard each type's keys land on (the lock name and
 * the checking objects), so that the run shows it covered every master. */
static void print_shards(dlock_test_cluster *cl)
{
    static const char *const suffixes[] = {"", ":gauge", ":counter", ":inside"};
    int seen[8] = {0}, n = 0, s;
    size_t k, j;

    for (k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++)
        for (j = 0; j < sizeof suffixes / sizeof suffixes[0]; j++) {
            char key[96];
            snprintf(key, sizeof key, "stress:%s%s", TYPES[k], suffixes[j]);
            s = cl->slot_shard[dlock_test_cluster_slot(key)];
            if (s >= 0 && s < 8 && !seen[s]++)
                n++;
        }
    printf("stress on the cluster: the names' keys fall on %d of %d masters\n", n,
           cl->masters);
}

int fault_stress_run(int procs, int threads, int iters)
{
    return fault_stress_run_on(0, procs, threads, iters);
}

int fault_stress_run_on(int cluster, int procs, int threads, int iters)
{
    dlock_test_redis *srv = NULL;
    dlock_test_cluster cl;
    dlock_client *c = NULL;
    const char *url;
    char err[256];
    long bad = 0;
    size_t k;

    memset(&cl, 0, sizeof cl);
    if (procs < 1 || procs > MAX_PROCS)
        return -1;
    if (cluster ? dlock_test_cluster_start(&cl, 3, 1) != 0
                : dlock_test_redis_start(&srv, NULL) != 0)
        return -1;
    url = cluster ? dlock_test_cluster_url(&cl) : dlock_test_redis_url(srv);
    if (cluster)
        print_shards(&cl);
    if (dlock_client_connect(&c, url, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "stress: %s\n", err);
        dlock_test_redis_stop(srv);
        dlock_test_cluster_stop(&cl);
        return -1;
    }
    for (k = 0; k < sizeof TYPES / sizeof TYPES[0]; k++) {
        totals t;
        int64_t t0 = fault_now_ms();
        int rc = run_type(url, c, TYPES[k], procs, threads, iters, &t);
        double secs = (double)(fault_now_ms() - t0) / 1000.0;
        printf("stress %-9s %d procs x %d threads x %d: acquisitions %ld "
               "(exclusive %ld), violations %ld, errors %ld, max inside "
               "together %ld, %.1f s (%.0f acq/s)%s\n",
               TYPES[k], procs, threads, iters, t.acq, t.xacq, t.viol,
               t.errors, t.maxconc, secs, secs > 0 ? t.acq / secs : 0.0,
               rc != 0 ? "  [RUN FAILED]" : "");
        fflush(stdout);
        bad += t.viol + t.errors + (rc != 0);
        if (t.acq != (long)procs * threads * iters)
            bad++;
    }
    dlock_client_free(c);
    fault_child_kill_all();
    dlock_test_redis_stop(srv);
    dlock_test_cluster_stop(&cl);
    return bad > 0x7fffffff ? 0x7fffffff : (int)bad;
}
