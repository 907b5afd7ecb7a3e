/*
 * The test program behind `make check`: the mock store's and the Redis
 * backend's own tests (plain and TLS), then every conformance case on the
 * mock, on a throwaway redis-server over TCP and on another over TLS, each
 * started and stopped by this program.
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
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/redis_server.h"
#include "harness/runner.h"

int dlock_test_total, dlock_test_failed;

/* The suites (tests/backends/mock/, tests/backends/redis/,
 * tests/conformance/). Each returns its number of failures and adds its
 * cases to the two counters above through DLOCK_RUN_GROUP. */
int dlock_test_mock_store(void);
int dlock_test_mock_clock(void);
int dlock_test_redis_backend(void);
int dlock_test_redis_mux(void);
int dlock_test_redis_split(void);
int dlock_test_redis_tls(void);
int dlock_test_redis_sentinel(void);
int dlock_test_redis_cluster(void); /* tests/backends/redis/cluster_test.c */
int dlock_test_redis_sync(void);
int dlock_test_redis_cluster_harness(void); /* tests/harness/cluster.h on a real cluster */
int dlock_test_redis_sentinel_start(void);
void dlock_test_redis_sentinel_stop(void);
const char *dlock_test_sentinel_url(void);
int dlock_test_differential(void);
int dlock_test_bad_input(void);
int dlock_test_conformance(const char *backend);
int dlock_test_conformance_count(void);
int dlock_test_semaphore(const char *backend);
int dlock_test_latch(const char *backend);
int dlock_test_fair(const char *backend);
int dlock_test_rwlock(const char *backend);
int dlock_test_values(const char *backend);
int dlock_test_bounds(const char *backend);
int dlock_test_lifecycle(const char *backend);
int dlock_test_interop(const char *backend);
int dlock_test_redisson_parity(const char *backend);
int dlock_test_spin(const char *backend);
int dlock_test_simple(const char *backend);
int dlock_test_sample(const char *sample, const char *url); /* tests/sample_test.c */
int dlock_test_lease_control(const char *backend);
int dlock_test_redis_log_hook(void);
int dlock_test_faults(void); /* tests/faults/: its own servers, helpers */
int dlock_test_cli(void);    /* tests/cli_test.c: the dlock tool, as a shell runs it */
int dlock_test_redlock(void); /* tests/redlock_test.c: its own servers */
int dlock_test_composite_conformance(void); /* tests/conformance/composite_types.c */
int dlock_test_cluster_slots(void); /* tests/cluster_slots_test.c */

/* Default: generous for a sanitizer build on a slow 2-core machine, far
 * below a CI job's own timeout. DLOCK_TEST_TIMEOUT (seconds) overrides. */
#define DEFAULT_TIMEOUT_S 900

static dlock_test_redis *server;
static char phase[512] = "starting";

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
 * one of them: the suites' names as given to run_suite() below, "mock" for
 * the conformance groups on the mock, and the Redis rows ("redis",
 * "redis-tls", "redis-sentinel", "redis-cluster"). Unset: everything
 * (make check). */
static int wanted(const char *part)
{
    return dlock_test_wanted("DLOCK_TEST_ONLY", part);
}

enum { ON_TCP, ON_TLS, ON_SENTINEL, ON_CLUSTER };

/* The lock type the trimmed rows run (TLS, Sentinel, pooled). */
static const dlock_fx_lock_type reentrant_type = {"reentrant", dlock_reentrant_new};

/* tests/backends/redis/cluster_test.c: its cluster, kept up for the row. */
int dlock_test_redis_cluster_start(void);
void dlock_test_redis_cluster_stop(void);
const char *dlock_test_cluster_seed_url(void);
int dlock_test_redis_cluster_spread(void);

/* Every conformance group on a throwaway redis-server: plain TCP, or TLS
 * (the fixture then connects with the server's rediss:// URL), or through
 * the sentinels of tests/backends/redis/sentinel_test.c (redis-sentinel://). */
static void run_conformance_on_redis(const char *name, int kind)
{
    const char *url;
    int rc, tls = kind == ON_TLS;

    if (!wanted(name))
        return;
    dlock_test_set_phase("starting redis-server for the conformance suite on %s", name);
    if (kind == ON_SENTINEL)
        rc = dlock_test_redis_sentinel_start();
    else if (kind == ON_CLUSTER)
        rc = dlock_test_redis_cluster_start();
    else
        rc = tls ? dlock_test_redis_start_tls(&server, "yes", 0, NULL)
                 : dlock_test_redis_start(&server, NULL);
    if (rc != 0 || (kind != ON_SENTINEL && kind != ON_CLUSTER && !server)) {
        int n = dlock_test_conformance_count();
        fprintf(stderr, "cannot start redis-server (%d): the %d conformance "
                "cases on %s count as failed\n", rc, n, name);
        dlock_test_total += n;
        dlock_test_failed += n;
        return;
    }
    url = kind == ON_SENTINEL   ? dlock_test_sentinel_url()
          : kind == ON_CLUSTER  ? dlock_test_cluster_seed_url()
          : tls                 ? dlock_test_redis_tls_url(server)
                                : dlock_test_redis_url(server);
    dlock_fx_set_redis_url(url);
    printf("conformance on %s at %s\n", name, url);
    dlock_test_set_phase("conformance on %s", name);
    /* Every group through Sentinel, or over TLS, adds about 1.5-2 min each
     * to make check, and neither changes lock semantics (the plain and
     * cluster rows run every group): they run the reentrant lock's generic
     * cases (waits and wake-ups included); DLOCK_TEST_SENTINEL_FULL=1 and
     * DLOCK_TEST_TLS_FULL=1 run every group (all pass). */
    if ((kind == ON_SENTINEL && !getenv("DLOCK_TEST_SENTINEL_FULL")) ||
        (kind == ON_TLS && !getenv("DLOCK_TEST_TLS_FULL"))) {
        dlock_test_conformance_type(&reentrant_type, name, NULL);
        dlock_fx_set_redis_url(NULL);
        stop_server();
        return;
    }
    dlock_test_conformance(name);
    dlock_test_semaphore(name);
    dlock_test_latch(name);
    dlock_test_set_phase("fair lock on %s", name);
    dlock_test_fair(name);
    dlock_test_set_phase("read-write lock on %s", name);
    dlock_test_rwlock(name);
    dlock_test_set_phase("values on %s", name);
    dlock_test_values(name);
    dlock_test_set_phase("bounds on %s", name);
    dlock_test_bounds(name);
    dlock_test_set_phase("lifecycle on %s", name);
    dlock_test_lifecycle(name);
    dlock_test_set_phase("interop on %s", name);
    dlock_test_interop(name);
    dlock_test_set_phase("parity on %s", name);
    dlock_test_redisson_parity(name);
    /* The spin and simple locks (the generic cases and their own) on plain
     * TCP only: what they add is lock semantics, which the transport does
     * not change, and make check's time is counted. */
    if (kind == ON_TCP) {
        dlock_test_set_phase("spin lock on %s", name);
        dlock_test_spin(name);
        dlock_test_set_phase("simple lock on %s", name);
        dlock_test_simple(name);
        dlock_test_set_phase("samples/custom_lock on %s", name);
        dlock_test_sample("custom_lock", url);
    }
    dlock_test_set_phase("observe on %s", name);
    dlock_test_lease_control(name);
    dlock_fx_set_redis_url(NULL);
    if (kind == ON_CLUSTER) {
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

/* The reentrant lock's conformance cases (that lock type only: ~18 s)
 * once more with the connection mode that is not the default (pooled:
 * multiplex=0 in the URL), so both modes run real lock traffic, waits and
 * wake-ups included. */
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
    dlock_fx_set_redis_url(NULL);
    stop_server();
}

/* Adds a suite's failures when it returned failures without counting them
 * (e.g. it could not start at all). */
static void run_suite(const char *name, int (*fn)(void))
{
    int before = dlock_test_failed, rc;

    if (!wanted(name))
        return;
    dlock_test_set_phase("%s", name);
    rc = fn();
    if (rc > 0 && dlock_test_failed == before) {
        dlock_test_total += rc;
        dlock_test_failed += rc;
    } else if (rc < 0 && dlock_test_failed == before) {
        dlock_test_total += 1;
        dlock_test_failed += 1;
    }
}

/* Every conformance group on the mock backend. */
static void run_conformance_on_mock(void)
{
    dlock_test_set_phase("conformance on mock");
    dlock_test_conformance("mock");
    dlock_test_semaphore("mock");
    dlock_test_latch("mock");
    dlock_test_set_phase("fair lock on mock");
    dlock_test_fair("mock");
    dlock_test_set_phase("read-write lock on mock");
    dlock_test_rwlock("mock");
    dlock_test_set_phase("values on mock");
    dlock_test_values("mock");
    dlock_test_bounds("mock");
    dlock_test_set_phase("lifecycle on mock");
    dlock_test_lifecycle("mock");
    dlock_test_set_phase("interop on mock");
    dlock_test_interop("mock");
    dlock_test_set_phase("parity on mock");
    dlock_test_redisson_parity("mock");
    dlock_test_set_phase("spin lock on mock");
    dlock_test_spin("mock");
    dlock_test_set_phase("simple lock on mock");
    dlock_test_simple("mock");
    dlock_test_set_phase("observe on mock");
    dlock_test_lease_control("mock");
}

int main(void)
{
    const char *env = getenv("DLOCK_TEST_TIMEOUT");
    unsigned timeout = env && atoi(env) > 0 ? (unsigned)atoi(env) : DEFAULT_TIMEOUT_S;

    /* Tests kill and restart servers on purpose; a write to a dead socket
     * must come back as an error, not end the run. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm(timeout);
    atexit(stop_server);
    setvbuf(stdout, NULL, _IOLBF, 0);

    run_suite("mock store tests", dlock_test_mock_store);
    run_suite("mock clock tests", dlock_test_mock_clock);
    run_suite("redis backend tests", dlock_test_redis_backend);
    run_suite("redis mux tests", dlock_test_redis_mux);
    run_suite("redis split call tests", dlock_test_redis_split);
    run_suite("redis TLS tests", dlock_test_redis_tls);
    run_suite("redis Sentinel tests", dlock_test_redis_sentinel);
    run_suite("redis Cluster tests", dlock_test_redis_cluster);
    run_suite("redis sync tests", dlock_test_redis_sync);
    run_suite("redis cluster harness tests", dlock_test_redis_cluster_harness);
    run_suite("observability redis tests", dlock_test_redis_log_hook);
    run_suite("differential test of the mock", dlock_test_differential);
    run_suite("bad-input matrix", dlock_test_bad_input);
    run_suite("cli tests", dlock_test_cli);
    run_suite("redlock tests", dlock_test_redlock);
    run_suite("redlock conformance", dlock_test_composite_conformance);
    run_suite("cluster slot tests", dlock_test_cluster_slots);

    if (wanted("mock"))
        run_conformance_on_mock();

    run_conformance_on_redis("redis", ON_TCP);
    /* Once more over TLS (rediss://, client certificates required, no
     * plain port): the reentrant lock's cases, pub/sub wake-ups
     * included (DLOCK_TEST_TLS_FULL=1: every case). */
    run_conformance_on_redis("redis-tls", ON_TLS);
    run_reentrant_pooled();
    /* And through Sentinel (redis-sentinel://, the master found by asking
     * three sentinels; the Sentinel tests' set, stopped after). */
    run_conformance_on_redis("redis-sentinel", ON_SENTINEL);
    /* And on a Redis Cluster of 3 masters with a replica each (the
     * Cluster tests' cluster, stopped after): routing by slot, sharded
     * pub/sub wake-ups. */
    run_conformance_on_redis("redis-cluster", ON_CLUSTER);
    run_suite("fault tests", dlock_test_faults);
    alarm(0);

    printf("%d passed, %d failed\n", dlock_test_total - dlock_test_failed,
           dlock_test_failed);
    return dlock_test_failed == 0 ? 0 : 1;
}
