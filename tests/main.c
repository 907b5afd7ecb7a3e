/*
 * The test program behind `make check`: the backends' own tests and the
 * other suites, then every conformance group on the mock, on a throwaway
 * redis-server over TCP, over TLS, pooled, through Sentinel and on a Redis
 * Cluster, each started and stopped by this program, then the fast fault
 * cases. What runs, and where a suite's file is: tests/suites.h.
 *
 * Last line: "N passed, N failed"; the exit status is non-zero on any
 * failure. A watchdog alarm turns a hang into a failure that names the phase
 * (CI would otherwise sit until its own timeout).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/acl_user.h"
#include "harness/fixture.h"
#include "harness/redis_server.h"
#include "harness/runner.h"
#include "suites.h"

int dlock_test_total, dlock_test_failed;

/* The suites and conformance groups (tests/suites.h). Each returns its
 * number of failures and adds its cases to the two counters above through
 * DLOCK_RUN_GROUP. */
DLOCK_TEST_SUITES(DLOCK_TEST_DECLARE_SUITE)
DLOCK_TEST_SUITES_MATRIX(DLOCK_TEST_DECLARE_SUITE)
DLOCK_TEST_SUITES_LAST(DLOCK_TEST_DECLARE_SUITE)
DLOCK_TEST_GROUPS(DLOCK_TEST_DECLARE_GROUP)

/* What the rows use beyond the groups. */
int dlock_test_conformance_count(void);        /* tests/conformance/reentrant_cases.c */
int dlock_test_sample(const char *sample, const char *url); /* tests/sample_test.c */
int dlock_test_redis_sentinel_start(void);     /* tests/backends/redis/sentinel_test.c */
void dlock_test_redis_sentinel_stop(void);
const char *dlock_test_sentinel_url(void);
int dlock_test_redis_cluster_start(void);      /* tests/backends/redis/cluster_test.c: */
void dlock_test_redis_cluster_stop(void);      /* its cluster, kept up for the row */
const char *dlock_test_cluster_seed_url(void);
int dlock_test_redis_cluster_spread(void);

/* Default: twice what a plain build takes on a slow 2-core machine, far
 * below a CI job's own timeout (make asan and make tsan raise it).
 * DLOCK_TEST_TIMEOUT (seconds) overrides. */
#define DEFAULT_TIMEOUT_S 1800

static dlock_test_redis *server;
static char phase[512] = "starting";

/* Where the run's time goes: each part's and each row's wall time,
 * printed slowest first before the last line (make check's time is what a
 * newcomer waits for). */
#define MAX_TIMED 128
static struct timed {
    char what[64];
    double s;
} timed[MAX_TIMED];
static int ntimed;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void record_time(const char *what, double since)
{
    if (ntimed < MAX_TIMED) {
        snprintf(timed[ntimed].what, sizeof timed[ntimed].what, "%s", what);
        timed[ntimed++].s = now_s() - since;
    }
}

static int slower_first(const void *a, const void *b)
{
    double d = ((const struct timed *)b)->s - ((const struct timed *)a)->s;
    return (d > 0) - (d < 0);
}

static void print_times(double total)
{
    int i;

    qsort(timed, (size_t)ntimed, sizeof timed[0], slower_first);
    printf("time per part (slowest first; %.0f s in all):\n", total);
    for (i = 0; i < ntimed; i++)
        printf("  %7.1f s  %s\n", timed[i].s, timed[i].what);
}

void dlock_test_set_phase(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(phase, sizeof(phase), fmt, ap);
    va_end(ap);
}

static void stop_server(void)
{
    dlock_test_redis *s = server;
    server = NULL;
    if (s)
        dlock_test_redis_stop(s);
    dlock_test_redis_sentinel_stop();
}

void dlock_test_fatal(const char *msg)
{
    fprintf(stderr, "\nFATAL during %s: %s\n", phase, msg);
    fprintf(stdout, "%d passed, %d failed\n",
            dlock_test_total - dlock_test_failed - 1, dlock_test_failed + 1);
    fflush(NULL);
    stop_server();
    _exit(2);
}

static void write_str(const char *s)
{
    ssize_t r = write(STDERR_FILENO, s, strlen(s));
    (void)r;
}

static void on_alarm(int sig)
{
    (void)sig;
    /* A second alarm with the default action ends us if stopping the
     * server hangs too. */
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    write_str("\nTIMEOUT: the test run hung during: ");
    write_str(phase);
    write_str("\n");
    /* Not async-signal-safe, but we are leaving anyway; an orphaned
     * redis-server would outlive the run. */
    stop_server();
    _exit(3);
}

/* DLOCK_TEST_ONLY=name[,name...] runs only the named parts, for working on
 * one of them: the suites' parts (tests/suites.h), "mock" for the
 * conformance groups on the mock, and the Redis rows ("redis",
 * "redis-tls", "redis-pool", "redis-acl", "redis-sentinel",
 * "redis-cluster"). DLOCK_TEST_GROUP=what[,what...] narrows the rows to
 * the named conformance groups (tests/suites.h: "async", "fair lock", ...).
 * DLOCK_TEST_CASE=pattern (make check CASE=pattern) runs only the cases
 * whose name matches the glob (harness/runner.h), wherever they are.
 *
 * Without DLOCK_TEST_ONLY, DLOCK_TEST_SCOPE picks a half: "quick" (make
 * check: the suites of DLOCK_TEST_SUITES, and every conformance group on
 * the mock and on a plain redis-server: every lock type on both
 * backends, in minutes) or "matrix" (make check-matrix: the rest, i.e.
 * the topologies' suites, the fault cases and the TLS, pooled, ACL,
 * Sentinel and Cluster rows); unset: both (make check-all). */
enum scope { QUICK = 1, MATRIX = 2 };

static int in_scope(enum scope half)
{
    const char *scope = getenv("DLOCK_TEST_SCOPE");

    if ((getenv("DLOCK_TEST_ONLY") && *getenv("DLOCK_TEST_ONLY")) || !scope || !*scope)
        return 1;
    return strcmp(scope, half == QUICK ? "quick" : "matrix") == 0;
}

static int wanted_in(const char *part, enum scope half)
{
    return in_scope(half) && dlock_test_wanted("DLOCK_TEST_ONLY", part);
}

/* The Redis rows' half. */
static int wanted(const char *part)
{
    return wanted_in(part, strcmp(part, "redis") == 0 ? QUICK : MATRIX);
}

/* The lock type the trimmed rows run (TLS, Sentinel, pooled). */
static const dlock_fx_lock_type reentrant_type = {"reentrant", dlock_reentrant_new};

/* The conformance groups of tests/suites.h and the rows they run on. */
static const struct group {
    int (*fn)(const char *backend);
    const char *what;
    int rows;
} groups[] = {
#define GROUP_ENTRY(fn, what, rows) {fn, what, rows},
    DLOCK_TEST_GROUPS(GROUP_ENTRY)
#undef GROUP_ENTRY
};

/* The conformance groups of row (a ROW_ bit) on backend, in the list's
 * order; with also, only those whose rows have that bit too. */
static void run_groups(const char *backend, int row, int also)
{
    size_t i;

    for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++) {
        if (!(groups[i].rows & row) || (groups[i].rows & also) != also ||
            !dlock_test_wanted("DLOCK_TEST_GROUP", groups[i].what))
            continue;
        {
            double t0 = now_s();
            char what[64];
            dlock_test_set_phase("%s on %s", groups[i].what, backend);
            groups[i].fn(backend);
            snprintf(what, sizeof what, "%s on %s", groups[i].what, backend);
            record_time(what, t0);
        }
    }
}

/* Every conformance group of row on a throwaway redis-server: plain TCP, or
 * TLS (the fixture then connects with the server's rediss:// URL), or
 * through the sentinels of tests/backends/redis/sentinel_test.c
 * (redis-sentinel://), or on the cluster of
 * tests/backends/redis/cluster_test.c (redis-cluster://). */
static void run_conformance_on_redis(const char *name, int row)
{
    const char *url;
    char acl_url[256];
    int rc, tls = row == ROW_TLS;

    if (!wanted(name))
        return;
    dlock_test_set_phase("starting redis-server for the conformance suite on %s", name);
    if (row == ROW_SENTINEL)
        rc = dlock_test_redis_sentinel_start();
    else if (row == ROW_CLUSTER)
        rc = dlock_test_redis_cluster_start();
    else
        rc = tls ? dlock_test_redis_start_tls(&server, "yes", 0, NULL)
                 : dlock_test_redis_start(&server, NULL);
    /* The ACL row: the README's exact ACL SETUSER line, and the clients
     * log in as that user. */
    if (rc == 0 && row == ROW_ACL &&
        dlock_test_acl_apply(server, acl_url, sizeof acl_url) != 0)
        rc = -1;
    if (rc != 0 || (row != ROW_SENTINEL && row != ROW_CLUSTER && !server)) {
        int n = dlock_test_conformance_count();
        fprintf(stderr, "cannot start redis-server (%d): the %d conformance "
                "cases on %s count as failed\n", rc, n, name);
        dlock_test_total += n;
        dlock_test_failed += n;
        return;
    }
    url = row == ROW_SENTINEL   ? dlock_test_sentinel_url()
          : row == ROW_CLUSTER  ? dlock_test_cluster_seed_url()
          : tls                 ? dlock_test_redis_tls_url(server)
          : row == ROW_ACL      ? acl_url
                                : dlock_test_redis_url(server);
    dlock_fx_set_redis_url(url);
    dlock_fx_set_redis_admin_url(row == ROW_ACL ? dlock_test_redis_url(server) : NULL);
    printf("conformance on %s at %s\n", name,
           row == ROW_ACL ? dlock_test_redis_url(server) : url);
    dlock_test_set_phase("conformance on %s", name);
    /* Every group through Sentinel, or over TLS, adds about 1.5-2 min each
     * to make check, and neither changes lock semantics (the plain and
     * cluster rows run every group): they run the reentrant lock's generic
     * cases (waits and wake-ups included) and the groups marked
     * ROW_TRIMMED_TOO (the async group); DLOCK_TEST_SENTINEL_FULL=1 and
     * DLOCK_TEST_TLS_FULL=1 run every group (all pass). */
    if ((row == ROW_SENTINEL && !getenv("DLOCK_TEST_SENTINEL_FULL")) ||
        (row == ROW_TLS && !getenv("DLOCK_TEST_TLS_FULL"))) {
        dlock_test_conformance_type(&reentrant_type, name, NULL);
        run_groups(name, row, ROW_TRIMMED_TOO);
        dlock_fx_set_redis_url(NULL);
        stop_server();
        return;
    }
    run_groups(name, row, 0);
    dlock_fx_set_redis_url(NULL);
    if (row == ROW_CLUSTER) {
        /* The cases' names spread over the shards: every master ran
         * scripts. */
        int spread = dlock_test_redis_cluster_spread();
        printf("conformance on %s: scripts ran on %d of 3 shards\n", name, spread);
        dlock_test_total++;
        dlock_test_failed += spread != 3;
        dlock_test_set_phase("samples/cluster_lock on %s", name);
        dlock_test_sample("cluster_lock", url);
        dlock_test_redis_cluster_stop();
        return;
    }
    dlock_test_set_phase("stopping redis-server (%s)", name);
    stop_server();
}

/* The reentrant lock's conformance cases (that lock type only: ~18 s), the
 * wake-up group and the asynchronous groups once more with the connection
 * mode that is not the default (pooled: multiplex=0 in the URL), so both
 * modes run real lock traffic, waits and wake-ups included, and a loop's
 * operations queue for the pool's connections on their fibers. */
static void run_reentrant_pooled(void)
{
    char url[256];

    if (!wanted("redis-pool"))
        return;
    dlock_test_set_phase("starting redis-server for the pooled mode");
    if (dlock_test_redis_start(&server, NULL) != 0 || !server) {
        fprintf(stderr, "cannot start redis-server: redis-pool counts as "
                "one failure\n");
        dlock_test_total += 1;
        dlock_test_failed += 1;
        return;
    }
    snprintf(url, sizeof url, "%s?multiplex=0", dlock_test_redis_url(server));
    dlock_fx_set_redis_url(url);
    printf("conformance (reentrant lock) on redis-pool at %s\n", url);
    dlock_test_set_phase("conformance on redis-pool");
    dlock_test_conformance_type(&reentrant_type, "redis-pool", NULL);
    dlock_test_set_phase("wake on redis-pool");
    dlock_test_wake("redis-pool"); /* one subscription per channel, pooled */
    dlock_test_set_phase("async on redis-pool");
    dlock_test_async("redis-pool");
    dlock_test_set_phase("loop close on redis-pool");
    dlock_test_loop_close("redis-pool");
    dlock_fx_set_redis_url(NULL);
    stop_server();
}

static void timed_row(const char *what, void (*fn)(const char *, int), const char *name,
                      int row)
{
    double t0 = now_s();
    fn(name, row);
    if (wanted(name))
        record_time(what, t0);
}

/* Adds a suite's failures when it returned failures without counting them
 * (e.g. it could not start at all). */
static void run_suite(const char *name, int (*fn)(void), enum scope half)
{
    int before = dlock_test_failed, rc;
    double t0 = now_s();

    if (!wanted_in(name, half))
        return;
    dlock_test_set_phase("%s", name);
    rc = fn();
    record_time(name, t0);
    if (rc > 0 && dlock_test_failed == before) {
        dlock_test_total += rc;
        dlock_test_failed += rc;
    } else if (rc < 0 && dlock_test_failed == before) {
        dlock_test_total += 1;
        dlock_test_failed += 1;
    }
}

int main(void)
{
    const char *env = getenv("DLOCK_TEST_TIMEOUT");
    unsigned timeout = env && atoi(env) > 0 ? (unsigned)atoi(env) : DEFAULT_TIMEOUT_S;
    double t0 = now_s();

    /* Tests kill and restart servers on purpose; a write to a dead socket
     * must come back as an error, not end the run. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm(timeout);
    atexit(stop_server);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (getenv("DLOCK_TEST_CASE") && *getenv("DLOCK_TEST_CASE"))
        cmocka_set_test_filter(getenv("DLOCK_TEST_CASE"));

#define RUN_SUITE(fn, part) run_suite(part, fn, QUICK);
#define RUN_MATRIX_SUITE(fn, part) run_suite(part, fn, MATRIX);
    DLOCK_TEST_SUITES(RUN_SUITE)
    DLOCK_TEST_SUITES_MATRIX(RUN_MATRIX_SUITE)

    /* Every conformance group on the mock backend. */
    if (wanted_in("mock", QUICK)) {
        double t1 = now_s();
        run_groups("mock", ROW_MOCK, 0);
        record_time("row mock (all of it)", t1);
    }

    timed_row("row redis (all of it)", run_conformance_on_redis, "redis", ROW_REDIS);
    /* Once more over TLS (rediss://, client certificates required, no
     * plain port): the reentrant lock's cases, pub/sub wake-ups
     * included (DLOCK_TEST_TLS_FULL=1: every case). */
#ifndef DLOCK_TEST_NO_TLS /* make WITH_TLS=0: no TLS to test */
    timed_row("row redis-tls (all of it)", run_conformance_on_redis, "redis-tls", ROW_TLS);
#endif
    {
        double t1 = now_s();
        run_reentrant_pooled();
        if (wanted("redis-pool"))
            record_time("row redis-pool (all of it)", t1);
    }
    /* And every group once more as the README's least-privilege ACL user
     * (tests/harness/acl_user.txt: "Deploying"), so that a command the
     * library needs and the line lacks fails here with NOPERM. */
    timed_row("row redis-acl (all of it)", run_conformance_on_redis, "redis-acl", ROW_ACL);
    /* And through Sentinel (redis-sentinel://, the master found by asking
     * three sentinels; the Sentinel tests' set, stopped after). */
    timed_row("row redis-sentinel (all of it)", run_conformance_on_redis, "redis-sentinel", ROW_SENTINEL);
    /* And on a Redis Cluster of 3 masters with a replica each (the
     * Cluster tests' cluster, stopped after): routing by slot, sharded
     * pub/sub wake-ups. */
    timed_row("row redis-cluster (all of it)", run_conformance_on_redis, "redis-cluster", ROW_CLUSTER);
    DLOCK_TEST_SUITES_LAST(RUN_MATRIX_SUITE)
#undef RUN_SUITE
#undef RUN_MATRIX_SUITE
    alarm(0);

    print_times(now_s() - t0);
    if (dlock_test_total == 0 && getenv("DLOCK_TEST_CASE") && *getenv("DLOCK_TEST_CASE")) {
        /* A misspelt name must not pass for a green run. */
        printf("no case matches DLOCK_TEST_CASE=%s\n", getenv("DLOCK_TEST_CASE"));
        return 1;
    }
    printf("%d passed, %d failed\n", dlock_test_total - dlock_test_failed,
           dlock_test_failed);
    return dlock_test_failed == 0 ? 0 : 1;
}
