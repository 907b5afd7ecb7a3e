/*
 * dlock_fault_helper: the other process of the fault and stress tests.
 *
 * The test programs fork+exec it (tests/faults/child.c) so that it is a
 * real separate client: its own UUID, watchdog thread, connections. It
 * talks over stdin/stdout, one line per command and per answer.
 *
 *   dlock_fault_helper hold URL TYPE NAME WATCHDOG_MS LEASE_MS
 *       TYPE: reentrant | fair | fenced. Acquires the lock (waiting up to
 *       10 s) and prints "LOCKED <token>" (token 0 unless fenced) or
 *       "ERR <code> <detail>". Then answers commands:
 *         unlock       -> "RC <code>"
 *         setg <value> -> "RC <code>": a guarded write of <value> into the
 *                         bucket "<NAME>:data" (string codec), with the
 *                         token of the acquisition when fenced
 *         quit / EOF   -> exits 0
 *
 *   dlock_fault_helper stress URL TYPE NAME THREADS ITERS PERMITS
 *       TYPE: reentrant | fair | rwlock | semaphore. THREADS threads each
 *       do ITERS acquisitions and check the invariant in the store (keys
 *       "<NAME>:gauge", "<NAME>:counter", "<NAME>:inside"; see
 *       stress_body). Prints "RESULT <acq> <exclusive acq> <violations>
 *       <errors> <max concurrent>".
 *
 * <code> is dlock_errname()'s ("OK", "ELOST", ...). The whole run is
 * bounded by an alarm: a helper that hangs dies and its parent notices.
 */
#include <dlock.h>

#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HELPER_LIMIT_S 900
#define STRESS_WAIT_MS 60000 /* one acquisition may wait this long */
#define MAX_THREADS 64
#define MAX_REPORTED 5

static dlock_client *connect_client(const char *url, int64_t watchdog_ms)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char err[256] = "";
    int rc;
    if (watchdog_ms > 0)
        o.watchdog_timeout_ms = watchdog_ms;
    rc = dlock_client_connect(&c, url, &o, err, sizeof err);
    if (rc != 0) {
        printf("ERR %s %s\n", dlock_errname(rc), err);
        fflush(stdout);
        return NULL;
    }
    return c;
}

/* ---- hold --------------------------------------------------------------- */

static int hold(int argc, char **argv)
{
    const char *url, *type, *name;
    dlock_client *c;
    dlock_rlock *l = NULL;
    dlock_bucket *b = NULL;
    char line[256], bname[512];
    int64_t token = 0, lease;
    int rc;

    if (argc != 7)
        return 2;
    url = argv[2];
    type = argv[3];
    name = argv[4];
    lease = atoll(argv[6]);
    c = connect_client(url, atoll(argv[5]));
    if (!c)
        return 1;
    if (strcmp(type, "fair") == 0)
        rc = dlock_fair_new(&l, c, name);
    else if (strcmp(type, "fenced") == 0)
        rc = dlock_fenced_new(&l, c, name);
    else
        rc = dlock_reentrant_new(&l, c, name);
    snprintf(bname, sizeof bname, "%s:data", name);
    if (rc == 0)
        rc = dlock_bucket_new(&b, c, bname, dlock_codec_string());
    if (rc == 0)
        rc = strcmp(type, "fenced") == 0
                 ? dlock_fenced_try_lock(l, &token, 10000, lease)
                 : dlock_try_lock(l, 10000, lease);
    if (rc != 0)
        printf("ERR %s %s\n", dlock_errname(rc), l ? dlock_errmsg(l) : "");
    else
        printf("LOCKED %" PRId64 "\n", token);
    fflush(stdout);

    while (rc == 0 && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (strcmp(line, "unlock") == 0) {
            int u = dlock_unlock(l);
            printf("RC %s\n", dlock_errname(u));
        } else if (strncmp(line, "setg ", 5) == 0) {
            dlock_guard g = DLOCK_GUARD_INIT;
            int w;
            g.lock = l;
            g.token = token;
            w = dlock_bucket_set_guarded(b, &g, line + 5, 0);
            printf("RC %s\n", dlock_errname(w));
        } else if (strcmp(line, "quit") == 0) {
            break;
        } else {
            printf("RC EINVAL\n");
        }
        fflush(stdout);
    }
    dlock_bucket_free(b);
    dlock_rlock_free(l);
    dlock_client_free(c);
    return rc == 0 ? 0 : 1;
}

/* ---- stress ------------------------------------------------------------- */

typedef enum { T_REENTRANT, T_FAIR, T_RWLOCK, T_SEMAPHORE } stress_type;

typedef struct stress {
    stress_type type;
    dlock_rlock *lock;   /* reentrant, fair, semaphore-as-lock, write half */
    dlock_rlock *read;   /* rwlock: the read half */
    dlock_bucket *gauge; /* who is inside exclusively (0 = nobody) */
    dlock_bucket *counter;
    dlock_semaphore *inside; /* how many are inside shared (atomic) */
    int64_t permits;
    int iters;
    time_t deadline;
    pthread_mutex_t mu;
    long acq, xacq, viol, errors, maxconc;
} stress;

typedef struct worker {
    stress *s;
    int64_t id; /* non-zero, unique across processes */
    long acq, xacq, viol, errors, maxconc;
} worker;

static pthread_mutex_t report_mu = PTHREAD_MUTEX_INITIALIZER;
static int reported;

static void report(const char *what, int rc, const char *detail)
{
    pthread_mutex_lock(&report_mu);
    if (reported++ < MAX_REPORTED)
        fprintf(stderr, "helper %d: %s: %s %s\n", (int)getpid(), what,
                dlock_errname(rc), detail ? detail : "");
    pthread_mutex_unlock(&report_mu);
}

#define CHECK_RC(w, what, rc, detail)                                           \
    do {                                                                       \
        if ((rc) != 0) {                                                       \
            (w)->errors++;                                                     \
            report(what, rc, detail);                                          \
        }                                                                      \
    } while (0)

/* Exclusive section: the gauge must read 0 on entry and still hold our id
 * on exit, and the counter's increment is a get and a set, two separate
 * scripts: only mutual exclusion keeps it from losing updates. */
static void exclusive_body(worker *w)
{
    stress *s = w->s;
    int64_t *g = NULL, *n = NULL, next, zero = 0;
    int rc, swapped = 0;

    rc = dlock_bucket_get(s->gauge, (void **)&g);
    CHECK_RC(w, "gauge get", rc, dlock_bucket_errmsg(s->gauge));
    if (rc == 0 && g && *g != 0) {
        w->viol++;
        report("violation: gauge busy on entry", 0, NULL);
    }
    dlock_bucket_value_free(s->gauge, g);
    rc = dlock_bucket_set(s->gauge, &w->id, 0);
    CHECK_RC(w, "gauge set", rc, dlock_bucket_errmsg(s->gauge));
    if (s->type == T_RWLOCK) {
        int64_t readers = 0;
        rc = dlock_semaphore_available_permits(s->inside, &readers);
        CHECK_RC(w, "readers", rc, dlock_semaphore_errmsg(s->inside));
        if (rc == 0 && readers != 0) {
            w->viol++;
            report("violation: readers inside with a writer", 0, NULL);
        }
    }
    rc = dlock_bucket_get(s->counter, (void **)&n);
    CHECK_RC(w, "counter get", rc, dlock_bucket_errmsg(s->counter));
    next = (n ? *n : 0) + 1;
    dlock_bucket_value_free(s->counter, n);
    rc = dlock_bucket_set(s->counter, &next, 0);
    CHECK_RC(w, "counter set", rc, dlock_bucket_errmsg(s->counter));
    rc = dlock_bucket_compare_and_set(s->gauge, &swapped, &w->id, &zero, 0);
    CHECK_RC(w, "gauge clear", rc, dlock_bucket_errmsg(s->gauge));
    if (rc == 0 && !swapped) {
        w->viol++;
        report("violation: gauge changed inside", 0, NULL);
    }
}

/* Shared section (readers, semaphore holders): count ourselves in
 * atomically, look at how many are inside, and (readers) that no writer
 * is. */
static void shared_body(worker *w)
{
    stress *s = w->s;
    int64_t inside = 0, *g = NULL;
    int rc;

    rc = dlock_semaphore_add_permits(s->inside, 1);
    CHECK_RC(w, "inside +1", rc, dlock_semaphore_errmsg(s->inside));
    if (rc != 0)
        return;
    rc = dlock_semaphore_available_permits(s->inside, &inside);
    CHECK_RC(w, "inside", rc, dlock_semaphore_errmsg(s->inside));
    if (rc == 0 && inside > w->maxconc)
        w->maxconc = inside;
    if (rc == 0 && s->type == T_SEMAPHORE && inside > s->permits) {
        w->viol++;
        report("violation: more holders than permits", 0, NULL);
    }
    if (s->type == T_RWLOCK) {
        rc = dlock_bucket_get(s->gauge, (void **)&g);
        CHECK_RC(w, "gauge get", rc, dlock_bucket_errmsg(s->gauge));
        if (rc == 0 && g && *g != 0) {
            w->viol++;
            report("violation: writer inside with a reader", 0, NULL);
        }
        dlock_bucket_value_free(s->gauge, g);
    }
    rc = dlock_semaphore_add_permits(s->inside, -1);
    CHECK_RC(w, "inside -1", rc, dlock_semaphore_errmsg(s->inside));
}

static void *stress_thread(void *arg)
{
    worker *w = arg;
    stress *s = w->s;
    int i;

    for (i = 0; i < s->iters; i++) {
        /* rwlock: one writer turn in four, staggered across threads. */
        int writer = s->type == T_RWLOCK ? (i + (int)w->id) % 4 == 0
                                         : s->type != T_SEMAPHORE;
        dlock_rlock *l = s->type == T_RWLOCK && !writer ? s->read : s->lock;
        int rc;

        if (time(NULL) > s->deadline) {
            w->errors++;
            report("time limit reached", DLOCK_ETIMEDOUT, NULL);
            break;
        }
        rc = dlock_try_lock(l, STRESS_WAIT_MS, 0);
        if (rc != 0) {
            w->errors++;
            report("lock", rc, dlock_errmsg(l));
            continue;
        }
        w->acq++;
        if (writer) {
            w->xacq++;
            exclusive_body(w);
        } else {
            shared_body(w);
        }
        rc = dlock_unlock(l);
        CHECK_RC(w, "unlock", rc, dlock_errmsg(l));
    }
    return NULL;
}

static int stress_main(int argc, char **argv)
{
    const char *url, *type, *name;
    char key[512];
    stress s;
    worker w[MAX_THREADS];
    pthread_t th[MAX_THREADS];
    dlock_client *c;
    int threads, i, rc = 0, started = 0;

    if (argc != 8)
        return 2;
    memset(&s, 0, sizeof s);
    url = argv[2];
    type = argv[3];
    name = argv[4];
    threads = atoi(argv[5]);
    s.iters = atoi(argv[6]);
    s.permits = atoll(argv[7]);
    s.deadline = time(NULL) + HELPER_LIMIT_S - 30;
    if (threads < 1 || threads > MAX_THREADS || s.iters < 0)
        return 2;
    if (strcmp(type, "reentrant") == 0)
        s.type = T_REENTRANT;
    else if (strcmp(type, "fair") == 0)
        s.type = T_FAIR;
    else if (strcmp(type, "rwlock") == 0)
        s.type = T_RWLOCK;
    else if (strcmp(type, "semaphore") == 0)
        s.type = T_SEMAPHORE;
    else
        return 2;
    c = connect_client(url, 0);
    if (!c)
        return 1;

    switch (s.type) {
    case T_REENTRANT: rc = dlock_reentrant_new(&s.lock, c, name); break;
    case T_FAIR: rc = dlock_fair_new(&s.lock, c, name); break;
    case T_RWLOCK:
        rc = dlock_rwlock_write_new(&s.lock, c, name);
        if (rc == 0)
            rc = dlock_rwlock_read_new(&s.read, c, name);
        break;
    case T_SEMAPHORE: rc = dlock_semaphore_lock_new(&s.lock, c, name); break;
    }
    snprintf(key, sizeof key, "%s:gauge", name);
    if (rc == 0)
        rc = dlock_bucket_new(&s.gauge, c, key, dlock_codec_long());
    snprintf(key, sizeof key, "%s:counter", name);
    if (rc == 0)
        rc = dlock_bucket_new(&s.counter, c, key, dlock_codec_long());
    snprintf(key, sizeof key, "%s:inside", name);
    if (rc == 0)
        rc = dlock_semaphore_new(&s.inside, c, key);
    if (rc != 0) {
        printf("ERR %s cannot create the objects\n", dlock_errname(rc));
        goto out;
    }

    for (i = 0; i < threads; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].s = &s;
        w[i].id = (int64_t)getpid() * 100 + i + 1;
        if (pthread_create(&th[i], NULL, stress_thread, &w[i]) != 0)
            break;
        started++;
    }
    for (i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        s.acq += w[i].acq;
        s.xacq += w[i].xacq;
        s.viol += w[i].viol;
        s.errors += w[i].errors;
        if (w[i].maxconc > s.maxconc)
            s.maxconc = w[i].maxconc;
    }
    if (started < threads)
        s.errors += (long)(threads - started) * s.iters;
    printf("RESULT %ld %ld %ld %ld %ld\n", s.acq, s.xacq, s.viol, s.errors,
           s.maxconc);
out:
    fflush(stdout);
    dlock_semaphore_free(s.inside);
    dlock_bucket_free(s.counter);
    dlock_bucket_free(s.gauge);
    dlock_rlock_free(s.read);
    dlock_rlock_free(s.lock);
    dlock_client_free(c);
    return rc == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    alarm(HELPER_LIMIT_S);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "hold") == 0)
        return hold(argc, argv);
    if (argc >= 2 && strcmp(argv[1], "stress") == 0)
        return stress_main(argc, argv);
    fprintf(stderr, "usage: %s hold|stress ...\n", argv[0]);
    return 2;
}
