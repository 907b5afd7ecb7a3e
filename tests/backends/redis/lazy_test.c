/*
 * Lazy connection (issue 32 §3, api/dlock/redis.h "Lazy connection"): a
 * client made while its server is down, whose calls report DLOCK_ECONN
 * until the server comes up, and whose blocking dlock_lock waits through
 * it and gets the lock. For every kind of URL: redis:// (multiplexed and
 * pooled), unix://, rediss://, redis-sentinel:// (the sentinel down: the
 * discovery is what waits) and redis-cluster:// (a one-node cluster down:
 * the slot map is what waits); and the option's three spellings (the
 * options field, the URL parameter, the JSON field) with their bad values.
 *
 * Servers are the harness's (free loopback ports): started, killed (the
 * port stays reserved for them) and restarted. Helper threads only
 * record; assertions run on the test's thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "dlock/config.h"
#include "dlock/redis.h"
#include "../../harness/redis_client.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#define SECRET "lazyPassw0rdXyz"

static char errbuf[512];

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int open_client(dlock_client **out, const char *url, int lazy)
{
    dlock_redis_options o = dlock_test_redis_options(1000, 1000);

    o.lazy_connect = lazy;
    return dlock_test_client_open(out, url, &o, NULL, errbuf, sizeof errbuf);
}

/* ---- the lock taken through the server's start --------------------------- */

typedef struct locker {
    dlock_rlock *l;
    pthread_mutex_t mu;
    int done, rc, held, unlock_rc;
} locker;

/* Locks, and as the owner (this thread) reads that it holds it and
 * unlocks. */
static void *locker_main(void *arg)
{
    locker *k = arg;
    int rc = dlock_lock(k->l, 30000), held = -1, unlock_rc = -1;

    if (rc == 0) {
        dlock_is_held(k->l, &held);
        unlock_rc = dlock_unlock(k->l);
    }
    pthread_mutex_lock(&k->mu);
    k->rc = rc;
    k->held = held;
    k->unlock_rc = unlock_rc;
    k->done = 1;
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

static int locker_done(locker *k)
{
    int d;

    pthread_mutex_lock(&k->mu);
    d = k->done;
    pthread_mutex_unlock(&k->mu);
    return d;
}

/* c was made lazily while its server is down: a call fails with
 * DLOCK_ECONN (detail holding needle), a dlock_lock on a thread blocks
 * until start(arg) brings the server up, then has the lock. */
static void lock_through_start(dlock_client *c, const char *name, const char *needle,
                               int (*start)(void *), void *arg)
{
    locker k;
    pthread_t t;
    long waited = 0;
    int locked = -1;

    memset(&k, 0, sizeof k);
    pthread_mutex_init(&k.mu, NULL);
    assert_int_equal(dlock_reentrant_new(&k.l, c, name), 0);
    assert_int_equal(dlock_try_lock(k.l, 0, 30000), DLOCK_ECONN);
    if (!strstr(dlock_errmsg(k.l), needle))
        fprintf(stderr, "  detail [%s] lacks [%s]\n", dlock_errmsg(k.l), needle);
    assert_non_null(strstr(dlock_errmsg(k.l), needle));
    assert_null(strstr(dlock_errmsg(k.l), SECRET));
    assert_int_equal(pthread_create(&t, NULL, locker_main, &k), 0);
    /* it waits for as long as the server is down (no timing bound: it
     * must not have ended, whatever the load) */
    sleep_ms(400);
    assert_false(locker_done(&k));
    assert_int_equal(start(arg), 0);
    while (!locker_done(&k) && waited < 60000) {
        sleep_ms(20);
        waited += 20;
    }
    if (!locker_done(&k))
        dlock_client_cancel_waits(c); /* fails the case below, no hang */
    pthread_join(t, NULL);
    if (k.rc != 0)
        fprintf(stderr, "  dlock_lock: %s (%s)\n", dlock_errname(k.rc), dlock_errmsg(k.l));
    assert_int_equal(k.rc, 0);
    assert_int_equal(k.held, 1);
    assert_int_equal(k.unlock_rc, 0);
    assert_int_equal(dlock_is_locked(k.l, &locked), 0);
    assert_int_equal(locked, 0);
    dlock_rlock_free(k.l);
    pthread_mutex_destroy(&k.mu);
}

static int restart_server(void *arg)
{
    return dlock_test_redis_restart(arg);
}

/* ---- the option: field, URL parameter, JSON field --------------------------- */

static void expect_bad(const char *url, const dlock_redis_options *o, const char *needle)
{
    dlock_backend *b = (dlock_backend *)1;
    int rc;

    errbuf[0] = '\0';
    rc = dlock_redis_backend_new(&b, url, o, errbuf, sizeof errbuf);
    if (rc != DLOCK_EINVAL || !strstr(errbuf, needle))
        fprintf(stderr, "  url '%s': %s '%s'\n", url, dlock_errname(rc), errbuf);
    assert_int_equal(rc, DLOCK_EINVAL);
    assert_null(b);
    assert_non_null(strstr(errbuf, needle));
    assert_null(strstr(errbuf, SECRET));
}

static void expect_json(const char *json, int code, const char *needle)
{
    dlock_client *c = (dlock_client *)1, *set[2] = {NULL, NULL};
    size_t n = 9;
    int rc;

    errbuf[0] = '\0';
    rc = strstr(json, "\"urls\"")
             ? dlock_client_set_from_json_string(set, 2, &n, json, errbuf, sizeof errbuf)
             : dlock_client_from_json_string(&c, json, errbuf, sizeof errbuf);
    if (rc != code || (needle && !strstr(errbuf, needle)))
        fprintf(stderr, "  json %s: %s '%s'\n", json, dlock_errname(rc), errbuf);
    assert_int_equal(rc, code);
    if (needle)
        assert_non_null(strstr(errbuf, needle));
    if (strstr(json, "\"urls\"")) {
        assert_int_equal(n, code == 0 ? 1 : 0);
        dlock_client_free(set[0]);
    } else {
        if (code != 0)
            assert_null(c);
        dlock_client_free(code == 0 ? c : NULL);
    }
}

static void lazy_option_forms(void **state)
{
    dlock_redis_options o = dlock_test_redis_options(1000, 1000);
    dlock_backend *b = NULL;
    char url[256], json[512];
    int port = dlock_test_free_port(); /* nothing listens there */
    (void)state;

    assert_true(port > 0);
    /* the URL: 0 or 1, once */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?lazy_connect=2", port);
    expect_bad(url, NULL, "'lazy_connect' must be 0 (connect when the backend is made) or 1");
    snprintf(url, sizeof url, "redis://:" SECRET "@127.0.0.1:%d?lazy_connect=yes", port);
    expect_bad(url, NULL, "'lazy_connect' must be 0");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?lazy_connect=", port);
    expect_bad(url, NULL, "'lazy_connect' must be 0");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?lazy_connect=01", port);
    expect_bad(url, NULL, "'lazy_connect' must be 0");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?lazy_connect=1&lazy_connect=1", port);
    expect_bad(url, NULL, "'lazy_connect' given twice");
    expect_bad("unix:///nonexistent/dlock-lazy.sock?lazy_connect=true", NULL,
               "'lazy_connect' must be 0");
    expect_bad("redis://127.0.0.1?lazy=1", NULL, "lazy_connect"); /* listed as known */
    /* the field: 0 or 1 */
    o.lazy_connect = 2;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    expect_bad(url, &o, "lazy_connect must be 0 or 1");

    /* eager (the default) fails at once; lazy makes it, by field or URL */
    o = dlock_test_redis_options(1000, 1000);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), DLOCK_ECONN);
    assert_null(b);
    o.lazy_connect = 1;
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), 0);
    dlock_backend_free(b);
    /* the URL's parameter wins over the field, both ways */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?lazy_connect=0", port);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), DLOCK_ECONN);
    o.lazy_connect = 0;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?lazy_connect=1", port);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), 0);
    dlock_backend_free(b);
    /* a struct of a version this library does not know: refused before
     * any connection is tried */
    o.version = DLOCK_REDIS_OPTIONS_VERSION + 1;
    o.lazy_connect = 1;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), DLOCK_EINVAL);
    assert_null(b);
    o.version = DLOCK_REDIS_OPTIONS_VERSION;
    /* through dlock_client_connect, every scheme: the URL */
    {
        dlock_client *c = NULL;
        assert_int_equal(dlock_client_connect(&c, "unix:///nonexistent/dlock-lazy.sock"
                                                  "?lazy_connect=1&db=3",
                                              NULL, errbuf, sizeof errbuf), 0);
        dlock_client_free(c);
        snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d?sentinelMasterId=m"
                                  "&lazy_connect=1", port);
        assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), 0);
        dlock_client_free(c);
        snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d?lazy_connect=1", port);
        assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), 0);
        dlock_client_free(c);
    }

    /* JSON: a flag, off for one client, on for a set unless turned off */
    snprintf(json, sizeof json, "{\"url\": \"redis://127.0.0.1:%d\", \"lazy_connect\": 2}",
             port);
    expect_json(json, DLOCK_EINVAL, "field \"lazy_connect\": out of range (0..1)");
    snprintf(json, sizeof json,
             "{\"url\": \"redis://127.0.0.1:%d\",\n \"lazy_connect\": \"yes\"}", port);
    expect_json(json, DLOCK_EINVAL, "2:2: field \"lazy_connect\": expected true, false, 0 or 1");
    snprintf(json, sizeof json, "{\"url\": \"redis://127.0.0.1:%d\"}", port);
    expect_json(json, DLOCK_ECONN, "cannot connect");
    snprintf(json, sizeof json, "{\"url\": \"redis://127.0.0.1:%d\", \"lazy_connect\": true}",
             port);
    expect_json(json, 0, NULL);
    snprintf(json, sizeof json, "{\"url\": \"redis://127.0.0.1:%d\", \"lazy_connect\": 1}",
             port);
    expect_json(json, 0, NULL);
    snprintf(json, sizeof json, "{\"urls\": [\"redis://127.0.0.1:%d\"]}", port);
    expect_json(json, 0, NULL);
    snprintf(json, sizeof json,
             "{\"urls\": [\"redis://127.0.0.1:%d\"], \"lazy_connect\": false}", port);
    expect_json(json, DLOCK_ECONN, "urls[0]: ");
    snprintf(json, sizeof json,
             "{\"urls\": [\"redis://127.0.0.1:%d?lazy_connect=0\"]}", port);
    expect_json(json, DLOCK_ECONN, "urls[0]: ");
    /* "mock:" takes the field, unused */
    expect_json("{\"url\": \"mock:\", \"lazy_connect\": true}", 0, NULL);
}

/* ---- standalone: redis:// (multiplexed, pooled) and rediss:// --------------- */

static void lazy_standalone(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    char url[300];
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
    assert_int_equal(dlock_test_redis_kill(r), 0);
    assert_int_equal(open_client(&c, dlock_test_redis_url(r), 0), DLOCK_ECONN);
    assert_null(c);
    assert_int_equal(open_client(&c, dlock_test_redis_url(r), 1), 0);
    lock_through_start(c, "lazy:standalone", "cannot connect", restart_server, r);
    dlock_client_free(c);

    /* pooled connections, the lazy flag from the URL */
    assert_int_equal(dlock_test_redis_kill(r), 0);
    snprintf(url, sizeof url, "%s?multiplex=0&lazy_connect=1", dlock_test_redis_url(r));
    assert_int_equal(open_client(&c, url, 0), 0);
    lock_through_start(c, "lazy:pooled", "cannot connect", restart_server, r);
    dlock_client_free(c);

    /* the unix socket */
    assert_int_equal(dlock_test_redis_kill(r), 0);
    snprintf(url, sizeof url, "unix://%s?lazy_connect=1", dlock_test_redis_socket(r));
    assert_int_equal(open_client(&c, url, 0), 0);
    lock_through_start(c, "lazy:unix", dlock_test_redis_socket(r), restart_server, r);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
}

/* A wrong password is told by the calls of a lazy client (not at its
 * creation), as DLOCK_EAUTH, without the password. */
static void lazy_wrong_password(void **state)
{
    const char *const args[] = {"--requirepass", "right" SECRET, NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char url[300];
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    snprintf(url, sizeof url, "redis://:wrong" SECRET "@127.0.0.1:%d",
             dlock_test_redis_port(r));
    assert_int_equal(open_client(&c, url, 1), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "lazy:auth"), 0);
    assert_int_equal(dlock_try_lock(l, 0, 10000), DLOCK_EAUTH);
    assert_null(strstr(dlock_errmsg(l), SECRET));
    dlock_rlock_free(l);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
}

static void lazy_tls(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    char url[700];
    (void)state;

    assert_int_equal(dlock_test_redis_start_tls(&r, "yes", 0, NULL), 0);
    assert_int_equal(dlock_test_redis_kill(r), 0);
    assert_int_equal(open_client(&c, dlock_test_redis_tls_url(r), 0), DLOCK_ECONN);
    snprintf(url, sizeof url, "%s&lazy_connect=1", dlock_test_redis_tls_url(r));
    assert_int_equal(open_client(&c, url, 0), 0);
    lock_through_start(c, "lazy:tls", "cannot connect", restart_server, r);
    dlock_client_free(c);
    /* the TLS files are still read at creation: a bad one is DLOCK_EINVAL */
    expect_bad("rediss://127.0.0.1:1?lazy_connect=1&cacert=/nonexistent/ca.crt", NULL,
               "cacert");
    dlock_test_redis_stop(r);
}

/* ---- Sentinel: the sentinel down at start ----------------------------------- */

static void lazy_sentinel(void **state)
{
    dlock_test_redis *master = NULL, *sentinel = NULL;
    dlock_client *c = NULL;
    char url[300];
    (void)state;

    assert_int_equal(dlock_test_redis_start(&master, NULL), 0);
    assert_int_equal(dlock_test_sentinel_start(&sentinel, "dlock-lazy",
                                               dlock_test_redis_port(master), 1), 0);
    assert_int_equal(dlock_test_redis_kill(sentinel), 0);
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d?sentinelMasterId=dlock-lazy",
             dlock_test_redis_port(sentinel));
    assert_int_equal(open_client(&c, url, 0), DLOCK_ECONN);
    assert_non_null(strstr(errbuf, "no sentinel of 'dlock-lazy' reachable"));
    assert_int_equal(open_client(&c, url, 1), 0);
    lock_through_start(c, "lazy:sentinel", "no master of 'dlock-lazy' found yet",
                       restart_server, sentinel);
    dlock_client_free(c);

    /* a name no sentinel knows: once the sentinels said so, the calls say
     * DLOCK_EINVAL (a blocking lock does not wait for ever on it) */
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d?sentinelMasterId=nope",
             dlock_test_redis_port(sentinel));
    assert_int_equal(open_client(&c, url, 1), 0);
    {
        dlock_rlock *l = NULL;
        int rc, k;
        assert_int_equal(dlock_reentrant_new(&l, c, "lazy:sentinel"), 0);
        for (k = 0; (rc = dlock_lock(l, 10000)) == DLOCK_ECONN && k < 500; k++)
            sleep_ms(20); /* the watcher has not asked yet */
        assert_int_equal(rc, DLOCK_EINVAL);
        /* the attempt's detail (dlock_lock's may be its subscription's) */
        assert_int_equal(dlock_try_lock(l, 0, 10000), DLOCK_EINVAL);
        assert_non_null(strstr(dlock_errmsg(l), "no sentinel knows a master named 'nope'"));
        dlock_rlock_free(l);
    }
    dlock_client_free(c);
    dlock_test_redis_stop(sentinel);
    dlock_test_redis_stop(master);
}

/* ---- Cluster: a one-node cluster down at start ------------------------------- */

static int cluster_ok(dlock_test_redis *r)
{
    const char *const info[] = {"CLUSTER", "INFO", NULL};
    char out[2048];
    int k;

    for (k = 0; k < 1000; k++) {
        if (dlock_test_redis_command(r, out, sizeof out, info) == 0 &&
            strstr(out, "cluster_state:ok"))
            return 0;
        sleep_ms(20);
    }
    return -1;
}

/* The node comes back with its nodes.conf (its directory stays): it owns
 * every slot again. */
static int restart_cluster_node(void *arg)
{
    return dlock_test_redis_restart(arg) == 0 ? cluster_ok(arg) : -1;
}

static void lazy_cluster(void **state)
{
    const char *const args[] = {"--cluster-enabled", "yes", "--cluster-config-file",
                                "nodes.conf", NULL};
    const char *const addslots[] = {"CLUSTER", "ADDSLOTSRANGE", "0", "16383", NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    char url[300], out[256];
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    assert_int_equal(dlock_test_redis_command(r, out, sizeof out, addslots), 0);
    assert_string_equal(out, "OK");
    assert_int_equal(cluster_ok(r), 0);
    assert_int_equal(dlock_test_redis_kill(r), 0);
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", dlock_test_redis_port(r));
    assert_int_equal(open_client(&c, url, 0), DLOCK_ECONN);
    assert_int_equal(open_client(&c, url, 1), 0);
    lock_through_start(c, "lazy:cluster", "cannot connect", restart_cluster_node, r);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
}

int dlock_test_redis_lazy(void);
int dlock_test_redis_lazy(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lazy_option_forms),
        cmocka_unit_test(lazy_standalone),
        cmocka_unit_test(lazy_wrong_password),
        cmocka_unit_test(lazy_tls),
        cmocka_unit_test(lazy_sentinel),
        cmocka_unit_test(lazy_cluster),
    };
    return DLOCK_RUN_GROUP("redis_lazy_connect", tests, NULL, NULL);
}
