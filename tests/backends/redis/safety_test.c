/*
 * A server that may evict lock keys or lose fencing tokens (issue 32 §4):
 * what the Redis backend reads at connect time (maxmemory-policy,
 * appendonly, RDB save points), the one warning per backend it logs, and
 * dlock_client_server_safety, which reports it. Also that the README's
 * "Deploying" section quotes the ACL line the redis-acl conformance row
 * applies (tests/harness/acl_user.txt), so that they cannot drift apart.
 *
 * Servers are the harness's throwaway ones (no persistence unless a case
 * asks for AOF). Assertions run on the test's thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "../../harness/acl_user.h"
#include "../../harness/log_capture.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#define WARNING "can evict"

static dlock_client *open_client(const char *url, int lazy)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    char err[256] = "";

    o.lazy_connect = lazy;
    o.reconnect_min_ms = 10;
    o.reconnect_max_ms = 50;
    if (dlock_redis_backend_new(&b, url, &o, err, sizeof err) != 0) {
        fprintf(stderr, "cannot connect to %s: %s\n", url, err);
        return NULL;
    }
    if (dlock_client_new(&c, b, NULL) != 0) {
        dlock_backend_free(b);
        return NULL;
    }
    return c;
}

static dlock_server_safety safety_of(dlock_client *c)
{
    dlock_server_safety s = DLOCK_SERVER_SAFETY_INIT;
    assert_int_equal(dlock_client_server_safety(c, &s), 0);
    return s;
}

/* A few lock operations (each on a connection already set up). */
static void use(dlock_client *c, const char *name)
{
    dlock_rlock *l = NULL;
    int64_t token = 0;
    int i;

    assert_int_equal(dlock_fenced_new(&l, c, name), 0);
    for (i = 0; i < 5; i++) {
        assert_int_equal(dlock_fenced_lock(l, &token, 10000), 0);
        assert_int_equal(dlock_unlock(l), 0);
    }
    assert_true(token >= 5);
    dlock_rlock_free(l);
}

/* Drops the server's connections of c (kill: CLIENT KILL and its
 * filter), then locks name once a call gets through on a new connection
 * (whose connect-time probe reads the server again). */
static void lock_after_kill(dlock_test_redis *r, dlock_client *c, const char **kill,
                            const char *name)
{
    char out[4096];
    int i, rc = -1;

    assert_int_equal(dlock_test_redis_command(r, out, sizeof out, kill), 0);
    for (i = 0; i < 100 && rc != 0; i++) {
        dlock_rlock *l = NULL;
        assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
        rc = dlock_try_lock(l, 0, 10000);
        if (rc == 0)
            assert_int_equal(dlock_unlock(l), 0);
        else
            dlock_test_sleep_ms(20);
        dlock_rlock_free(l);
    }
    assert_int_equal(rc, 0);
}

static void capture(void)
{
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_WARN), 0);
}

/* allkeys-lru and no persistence: one warning per backend (not per
 * connection, not per reconnect), and the state says which keys go. */
static void test_allkeys_lru_warns_once(void **state)
{
    const char *args[] = {"--maxmemory-policy", "allkeys-lru", NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c, *c2;
    dlock_server_safety s;
    const char *kill[] = {"CLIENT", "KILL", "TYPE", "normal", NULL};

    (void)state;
    capture();
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    c = open_client(dlock_test_redis_url(r), 0);
    assert_non_null(c);
    /* read at connect, before any lock operation */
    s = safety_of(c);
    assert_int_equal(s.servers, 1);
    assert_string_equal(s.maxmemory_policy, "allkeys-lru");
    assert_int_equal(s.evicts, DLOCK_EVICTS_ALL);
    assert_int_equal(s.locks_evictable, 1);
    assert_int_equal(s.tokens_can_go_back, 1);
    assert_int_equal(s.from_info, 0);
    assert_int_equal(s.aof, 0);
    assert_int_equal(s.rdb, 0); /* the harness's --save "" */
    assert_non_null(strstr(s.server, "127.0.0.1:"));
    use(c, "dlock-safety:allkeys");
    /* every connection dropped: the next one reads again, no new line */
    lock_after_kill(r, c, kill, "dlock-safety:again");
    assert_int_equal(dlock_test_log_count("warn", WARNING), 1);
    assert_int_equal(dlock_test_log_count("allkeys-lru", "tokens go back"), 1);
    /* a second backend: its own line */
    c2 = open_client(dlock_test_redis_url(r), 0);
    assert_non_null(c2);
    assert_int_equal(dlock_test_log_count("warn", WARNING), 2);
    dlock_client_free(c2);
    dlock_client_free(c);
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    dlock_test_redis_stop(r);
}

/* noeviction and appendonly yes: nothing to say. */
static void test_noeviction_aof_no_warning(void **state)
{
    const char *args[] = {"--maxmemory-policy", "noeviction", "--appendonly", "yes",
                          NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c;
    dlock_server_safety s;

    (void)state;
    capture();
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    c = open_client(dlock_test_redis_url(r), 0);
    assert_non_null(c);
    use(c, "dlock-safety:safe");
    s = safety_of(c);
    assert_int_equal(s.servers, 1);
    assert_string_equal(s.maxmemory_policy, "noeviction");
    assert_int_equal(s.evicts, DLOCK_EVICTS_NONE);
    assert_int_equal(s.aof, 1);
    assert_int_equal(s.locks_evictable, 0);
    assert_int_equal(s.tokens_can_go_back, 0);
    assert_int_equal(dlock_test_log_count("", NULL), 0);
    dlock_client_free(c);
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    dlock_test_redis_stop(r);
}

/* The README's ACL user has no CONFIG: the policy comes from INFO memory,
 * RDB save points are unknown, and after the first refusal the server is
 * not asked CONFIG again (one ACL LOG entry, not one per connect). */
static void test_acl_user_falls_back_to_info(void **state)
{
    const char *args[] = {"--maxmemory-policy", "volatile-lru", NULL};
    const char *acl_log[] = {"ACL", "LOG", NULL};
    const char *kill[] = {"CLIENT", "KILL", "USER", "dlock", NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c;
    dlock_server_safety s;
    char url[256], out[4096];

    (void)state;
    capture();
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    assert_int_equal(dlock_test_acl_apply(r, url, sizeof url), 0);
    c = open_client(url, 0);
    assert_non_null(c);
    use(c, "dlock-safety:acl");
    s = safety_of(c);
    assert_int_equal(s.servers, 1);
    assert_int_equal(s.from_info, 1);
    assert_string_equal(s.maxmemory_policy, "volatile-lru");
    assert_int_equal(s.evicts, DLOCK_EVICTS_VOLATILE);
    assert_int_equal(s.locks_evictable, 1);
    assert_int_equal(s.aof, 0);
    assert_int_equal(s.rdb, -1);
    assert_int_equal(s.tokens_can_go_back, 1);
    assert_int_equal(dlock_test_log_count("warn", "volatile-lru"), 1);
    assert_int_equal(dlock_test_log_count("RDB save points unknown", NULL), 1);
    /* reconnect: read again, INFO only */
    lock_after_kill(r, c, kill, "dlock-safety:acl2");
    assert_int_equal(dlock_client_server_safety(c, &s), 0);
    assert_string_equal(s.maxmemory_policy, "volatile-lru");
    /* ACL LOG: one entry for config|get (count 2: maxmemory-policy and
     * save, both in the first probe), none from the reconnect's probe */
    assert_int_equal(dlock_test_redis_command(r, out, sizeof out, acl_log), 0);
    assert_non_null(strstr(out, "config|get"));
    assert_non_null(strstr(out, "count\n2\n"));
    assert_int_equal(dlock_test_log_count("warn", WARNING), 1);
    dlock_client_free(c);
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    dlock_test_redis_stop(r);
}

/* lazy_connect: nothing known until the first call sets a connection up. */
static void test_lazy_reads_at_first_call(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_client *c;
    dlock_server_safety s;
    char url[256];

    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
    snprintf(url, sizeof url, "%s", dlock_test_redis_url(r));
    c = open_client(url, 1);
    assert_non_null(c);
    s = safety_of(c);
    assert_int_equal(s.servers, 0);
    assert_int_equal(s.evicts, DLOCK_EVICTS_UNKNOWN);
    assert_string_equal(s.maxmemory_policy, "");
    use(c, "dlock-safety:lazy");
    s = safety_of(c);
    assert_int_equal(s.servers, 1);
    assert_string_equal(s.maxmemory_policy, "noeviction");
    assert_int_equal(s.locks_evictable, 0);
    /* no persistence: tokens go back at a restart */
    assert_int_equal(s.tokens_can_go_back, 1);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
}

/* Bad input, and a backend that cannot tell (the mock). */
static void test_bad_input_and_mock(void **state)
{
    dlock_client *c = NULL;
    dlock_server_safety s = DLOCK_SERVER_SAFETY_INIT;

    (void)state;
    assert_int_equal(dlock_client_connect(&c, "mock:", NULL, NULL, 0), 0);
    assert_int_equal(dlock_client_server_safety(c, &s), DLOCK_ENOTSUP);
    assert_int_equal(dlock_client_server_safety(NULL, &s), DLOCK_EINVAL);
    assert_int_equal(dlock_client_server_safety(c, NULL), DLOCK_EINVAL);
    s.version = 2;
    assert_int_equal(dlock_client_server_safety(c, &s), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_server_safety(NULL, &s), DLOCK_EINVAL);
    dlock_client_free(c);
}

/* The README quotes the exact line the redis-acl row applies. */
static void test_readme_quotes_acl_line(void **state)
{
    char line[4096], *readme;
    FILE *f;
    long n;

    (void)state;
    assert_int_equal(dlock_test_acl_line(line, sizeof line), 0);
    assert_true(strlen(line) > 20);
    f = fopen("README.md", "r");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    readme = malloc((size_t)n + 1);
    assert_non_null(readme);
    assert_int_equal(fread(readme, 1, (size_t)n, f), (size_t)n);
    readme[n] = '\0';
    fclose(f);
    /* a line of its own, in the Deploying section */
    {
        char *deploying = strstr(readme, "\n## Deploying");
        char *at = deploying ? strstr(deploying, line) : NULL;
        int whole = at && at[-1] == '\n' && at[strlen(line)] == '\n';
        free(readme);
        assert_non_null(deploying);
        assert_true(whole);
    }
}

int dlock_test_redis_safety(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allkeys_lru_warns_once),
        cmocka_unit_test(test_noeviction_aof_no_warning),
        cmocka_unit_test(test_acl_user_falls_back_to_info),
        cmocka_unit_test(test_lazy_reads_at_first_call),
        cmocka_unit_test(test_bad_input_and_mock),
        cmocka_unit_test(test_readme_quotes_acl_line),
    };
    return DLOCK_RUN_GROUP("redis_safety", tests, NULL, NULL);
}
