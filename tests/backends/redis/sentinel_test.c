/*
 * The Redis backend under Sentinel (redis-sentinel:// URLs), against a
 * throwaway master, two replicas and three sentinels
 * (tests/harness/sentinels.h): URL and option parsing, discovery with
 * sentinels down or stalled, all of them down, a wrong master name, the
 * sentinels' own credentials, the client and JSON paths, and following a
 * failover (SENTINEL FAILOVER: the switch is announced on +switch-master,
 * the subscriber moves and tells waiters to look again). The kill -9
 * failover cases and the failover figure are in tests/faults/
 * (`make faults`); the conformance suite runs through the sentinel URL in
 * tests/main.c.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "dlock/config.h"
#include "dlock/redis.h"
#include "dlock/sys/backend.h"
#include "../../harness/asserts.h"
#include "../../harness/inbox.h"
#include "../../harness/redis_client.h"
#include "../../harness/runner.h"
#include "../../harness/sentinels.h"

#define SECRET "sentinelPassw0rdXyz"

static dlock_test_sentinels set;
static int set_up;
static char errbuf[512];

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}


/* For tests/main.c: the set stays up after the group for the conformance
 * suite through the sentinel URL. */
int dlock_test_redis_sentinel_start(void);
void dlock_test_redis_sentinel_stop(void);
const char *dlock_test_sentinel_url(void);
/* For tests/backends/redis/async_topology_test.c: the set itself, to fail
 * it over (NULL when it is not up). */
dlock_test_sentinels *dlock_test_redis_sentinel_get(void);

const char *dlock_test_sentinel_url(void)
{
    return set_up ? set.url : NULL;
}

dlock_test_sentinels *dlock_test_redis_sentinel_get(void)
{
    return set_up ? &set : NULL;
}

static dlock_redis_options fast_options(void)
{
    dlock_redis_options o = dlock_test_redis_options(500, 500);
    o.pool_size = 2;
    return o;
}

static int open_with(dlock_backend **out, const char *url, const dlock_redis_options *o)
{
    dlock_redis_options d = fast_options();
    errbuf[0] = '\0';
    *out = NULL;
    return dlock_redis_backend_new(out, url, o ? o : &d, errbuf, sizeof errbuf);
}

static long long incr(dlock_backend *b, const char *key)
{
    return dlock_fx_incr(b, key, errbuf, sizeof errbuf);
}

/* A port nothing listens on (a stopped sentinel, as far as a client can
 * tell): the last one of a server stopped for good. */
static int dead_port(void)
{
    static int port;
    if (!port) {
        dlock_test_redis *r;
        if (dlock_test_redis_start(&r, NULL) == 0) {
            port = dlock_test_redis_port(r);
            dlock_test_redis_stop(r);
        }
    }
    return port;
}

static void expect_fails(const char *url, const dlock_redis_options *o, int code,
                         const char *needle)
{
    dlock_redis_options d = fast_options();
    dlock_fx_expect_open_fails("sentinel", url, o ? o : &d, code, needle, SECRET, errbuf,
                               sizeof errbuf);
}

static void master_port_ran(const char *key, long long want)
{
    char out[64];
    const char *argv[] = {"GET", key, NULL};
    int m = dlock_test_sentinels_master(&set);
    assert_true(m >= 0);
    assert_int_equal(dlock_test_redis_command(set.data[m], out, sizeof out, argv), 0);
    assert_int_equal(atoll(out), want);
}

/* ---- parsing ---------------------------------------------------------------- */

static void sentinel_url_errors(void **state)
{
    (void)state;
    expect_fails("redis-sentinel://127.0.0.1:1", NULL, DLOCK_EINVAL, "sentinelMasterId");
    expect_fails("redis-sentinel://127.0.0.1?sentinel_user=u", NULL, DLOCK_EINVAL,
                 "sentinelMasterId");
    expect_fails("redis-sentinel://a,,b?sentinelMasterId=m", NULL, DLOCK_EINVAL,
                 "empty sentinel host");
    expect_fails("redis-sentinel://a/1,b?sentinelMasterId=m", NULL, DLOCK_EINVAL,
                 "bad");
    expect_fails("redis-sentinel://a:0?sentinelMasterId=m", NULL, DLOCK_EINVAL, "bad port");
    expect_fails("redis-sentinel://a?sentinelMasterId=m&sentinelMasterId=n", NULL,
                 DLOCK_EINVAL, "given twice");
    expect_fails("redis-sentinel://a?sentinelMasterId=", NULL, DLOCK_EINVAL, "is empty");
    expect_fails("redis-sentinel://a?sentinelMasterId=m&cacert=/x", NULL, DLOCK_EINVAL,
                 "needs a rediss:// URL");
    expect_fails("redis-sentinel://a?sentinelMasterId=m&bogus=1", NULL, DLOCK_EINVAL,
                 "unknown parameter 'bogus'");
    expect_fails("redis://a?sentinel_password=" SECRET, NULL, DLOCK_EINVAL,
                 "needs a redis-sentinel://");
    expect_fails("redis-sentinel://u:" SECRET "@?sentinelMasterId=m", NULL, DLOCK_EINVAL,
                 "empty sentinel host");
}

/* ---- discovery -------------------------------------------------------------- */

static void sentinel_discovery(void **state)
{
    dlock_backend *b;
    long long v;
    (void)state;
    if (open_with(&b, set.url, NULL) != 0)
        fprintf(stderr, "%s: %s\n", set.url, errbuf);
    assert_non_null(b);
    v = incr(b, "sentinel:discovery");
    assert_true(v > 0);
    /* it ran on the master the sentinels name */
    master_port_ran("sentinel:discovery", v);
    dlock_backend_free(b);
}

static void sentinel_some_down(void **state)
{
    char url[600];
    dlock_backend *b;
    dlock_redis_options o = fast_options();
    int dead = dead_port();
    (void)state;
    assert_true(dead > 0);
    /* one down, then two down (refused), before the live one */
    snprintf(url, sizeof url, "redis-sentinel://127.0.0.1:%d,127.0.0.1:%d?sentinelMasterId=%s",
             dead, dlock_test_redis_port(set.sentinel[1]), set.name);
    assert_int_equal(open_with(&b, url, NULL), 0);
    assert_true(incr(b, "sentinel:some-down") > 0);
    dlock_backend_free(b);
    snprintf(url, sizeof url,
             "redis-sentinel://127.0.0.1:%d,localhost:%d,127.0.0.1:%d?sentinelMasterId=%s",
             dead, dead, dlock_test_redis_port(set.sentinel[2]), set.name);
    assert_int_equal(open_with(&b, url, NULL), 0);
    assert_true(incr(b, "sentinel:some-down") > 0);
    dlock_backend_free(b);
    /* a stalled sentinel (SIGSTOP: connects, never answers) costs its
     * timeouts, then the next one answers */
    o.connect_timeout_ms = 300;
    o.command_timeout_ms = 300;
    assert_int_equal(dlock_test_redis_signal(set.sentinel[0], SIGSTOP), 0);
    assert_int_equal(open_with(&b, set.url, &o), 0);
    assert_true(incr(b, "sentinel:some-down") > 0);
    dlock_backend_free(b);
    assert_int_equal(dlock_test_redis_signal(set.sentinel[0], SIGCONT), 0);
}

static void sentinel_all_down(void **state)
{
    char url[600];
    int dead = dead_port();
    (void)state;
    snprintf(url, sizeof url,
             "redis-sentinel://:" SECRET "@127.0.0.1:%d,127.0.0.1:%d,localhost:%d"
             "?sentinelMasterId=%s&sentinel_password=" SECRET,
             dead, dead, dead, set.name);
    expect_fails(url, NULL, DLOCK_ECONN, "no sentinel of");
    assert_non_null(strstr(errbuf, "reachable"));
}

static void sentinel_tls_scheme(void **state)
{
    char url[600];
    dlock_redis_options o = fast_options();
    (void)state;
    /* rediss-sentinel:// speaks TLS to the sentinels too: these plain ones
     * never complete a handshake */
    o.connect_timeout_ms = 300;
    snprintf(url, sizeof url, "rediss-sentinel://127.0.0.1:%d?sentinelMasterId=%s&insecure=1",
             dlock_test_redis_port(set.sentinel[0]), set.name);
    expect_fails(url, &o, DLOCK_ECONN, "TLS");
    /* the TLS parameters are read (an unreadable CA file is named) */
    snprintf(url, sizeof url,
             "rediss-sentinel://127.0.0.1:%d?sentinelMasterId=%s&cacert=/nonexistent/ca.crt",
             dlock_test_redis_port(set.sentinel[0]), set.name);
    expect_fails(url, &o, DLOCK_EINVAL, "cacert");
}

static void sentinel_wrong_master_name(void **state)
{
    char url[600];
    (void)state;
    snprintf(url, sizeof url, "%.*s?sentinelMasterId=no-such-master",
             (int)(strchr(set.url, '?') - set.url), set.url);
    expect_fails(url, NULL, DLOCK_EINVAL, "no sentinel knows a master named 'no-such-master'");
}

static void sentinel_credentials(void **state)
{
    char url[600];
    dlock_redis_options o = fast_options();
    dlock_backend *b;
    (void)state;
    /* The sentinels have no password: sending one proves it goes to them
     * (and only the data nodes' credentials go to the master). */
    o.sentinel_password = SECRET;
    expect_fails(set.url, &o, DLOCK_EAUTH, "AUTH");
    snprintf(url, sizeof url, "%s&sentinel_user=someone&sentinel_password=" SECRET, set.url);
    expect_fails(url, NULL, DLOCK_EAUTH, "AUTH");
    /* the data nodes' password goes to the master, not to the sentinels */
    snprintf(url, sizeof url, "redis-sentinel://:%s@%s", SECRET,
             set.url + strlen("redis-sentinel://"));
    expect_fails(url, NULL, DLOCK_EAUTH, "AUTH");
    assert_null(strstr(errbuf, "sentinel "));
    /* a struct of a version this library does not know: refused, no
     * sentinel asked */
    o.version = DLOCK_REDIS_OPTIONS_VERSION + 1;
    assert_int_equal(open_with(&b, set.url, &o), DLOCK_EINVAL);
    assert_null(b);
}

static void sentinel_client_and_json(void **state)
{
    char json[1024], err[512];
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    (void)state;
    assert_int_equal(dlock_client_connect(&c, set.url, NULL, err, sizeof err), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "sentinel:client"), 0);
    assert_int_equal(dlock_try_lock(l, 0, 5000), 0);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);

    snprintf(json, sizeof json, "{\"url\": \"%s\", \"sentinel_user\": \"u\",\n"
             " \"sentinel_password\": \"" SECRET "\", \"connect_timeout_ms\": 500}", set.url);
    c = NULL;
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err), DLOCK_EAUTH);
    assert_null(strstr(err, SECRET));
    snprintf(json, sizeof json, "{\"url\": \"%s\"}", set.url);
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err), 0);
    dlock_client_free(c);
    c = NULL;
    assert_int_equal(dlock_client_from_json_string(
                         &c, "{\"url\": \"redis-sentinel://h?sentinelMasterId=m\",\n"
                             " \"sentinel_user\": 5}", err, sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "2:2: field \"sentinel_user\""));
}

/* ---- following a failover ------------------------------------------------ */

static void sentinel_follows_failover(void **state)
{
    char out[256];
    const char *failover[] = {"SENTINEL", "FAILOVER", set.name, NULL};
    dlock_backend *b;
    dlock_subscription *sub = NULL;
    dlock_test_inbox in;
    dlock_server_safety safety = DLOCK_SERVER_SAFETY_INIT;
    char where[64];
    int before, after, i;
    int64_t t0;
    (void)state;
    memset(&in, 0, sizeof in);
    pthread_mutex_init(&in.mu, NULL);
    assert_int_equal(open_with(&b, set.url, NULL), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "sentinel:ch", dlock_test_inbox_on_message, &in), 0);
    before = dlock_test_sentinels_master(&set);
    /* the connect-time check (issue 32 §4) read the master's settings */
    assert_int_equal(dlock_backend_server_safety(b, &safety), 0);
    assert_int_equal(safety.servers, 1);
    snprintf(where, sizeof where, "127.0.0.1:%d", dlock_test_redis_port(set.data[before]));
    assert_string_equal(safety.server, where);
    assert_int_equal(dlock_test_redis_command(set.sentinel[0], out, sizeof out, failover), 0);
    assert_string_equal(out, "OK");
    /* the subscriber moves to the new master and says "look again" */
    t0 = now_ms();
    assert_int_equal(dlock_test_inbox_wait(&in, 1, 1, 10000), 1);
    printf("  [sentinel] look-again message after %lld ms\n", (long long)(now_ms() - t0));
    after = dlock_test_sentinels_master(&set);
    assert_true(after >= 0 && after != before);
    /* calls go to the new master (the old one is a replica now) */
    for (i = 0; i < 100; i++)
        if (incr(b, "sentinel:after-failover") > 0)
            break;
    assert_true(i < 100);
    master_port_ran("sentinel:after-failover", 1);
    /* ... and, after the failover, the new master's */
    safety.version = 1;
    assert_int_equal(dlock_backend_server_safety(b, &safety), 0);
    assert_int_equal(safety.servers, 1);
    snprintf(where, sizeof where, "127.0.0.1:%d", dlock_test_redis_port(set.data[after]));
    assert_string_equal(safety.server, where);
    assert_string_equal(safety.maxmemory_policy, "noeviction");
    dlock_backend_unsubscribe(b, sub);
    dlock_backend_free(b);
    pthread_mutex_destroy(&in.mu);
    assert_int_equal(dlock_test_sentinels_wait_ready(&set, 20000), 0);
}

/* ---- the group -------------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    return dlock_test_redis_sentinel_start();
}

int dlock_test_redis_sentinel_start(void)
{
    if (set_up)
        return 0;
    if (dlock_test_sentinels_start(&set, "dlock-master") != 0)
        return -1;
    set_up = 1;
    return 0;
}

void dlock_test_redis_sentinel_stop(void)
{
    if (set_up)
        dlock_test_sentinels_stop(&set);
    set_up = 0;
}

int dlock_test_redis_sentinel(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sentinel_url_errors),
        cmocka_unit_test(sentinel_discovery),
        cmocka_unit_test(sentinel_some_down),
        cmocka_unit_test(sentinel_all_down),
        cmocka_unit_test(sentinel_tls_scheme),
        cmocka_unit_test(sentinel_wrong_master_name),
        cmocka_unit_test(sentinel_credentials),
        cmocka_unit_test(sentinel_client_and_json),
        cmocka_unit_test(sentinel_follows_failover),
    };
    return DLOCK_RUN_GROUP("redis_sentinel", tests, group_setup, NULL);
}
