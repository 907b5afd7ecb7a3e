/*
 * Split calls (api/dlock/sys/backend.h, version 5: eval_send and
 * eval_receive) on a real redis-server, multiplexed and pooled: the reply
 * of each call reaches its own receive, in any order; NOSCRIPT is handled
 * in the receive; the send's deadline bounds the receive and the late
 * reply reaches nobody, while a reply that came in time is taken by a
 * receive that comes after the deadline; a call sent but not yet received holds up no other
 * caller on its shared connection; a refused connection fails the send;
 * the dispatchers' answers for the mock and for bad arguments.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "dlock/mock.h"
#include "dlock/redis.h"
#include "dlock/sys/backend.h"
#include "../../harness/redis_client.h"
#include "../../harness/redis_group.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

static dlock_test_redis *srv;

static const dlock_script s_echo = {"split_echo", "return ARGV[1]"};
static const dlock_script s_incr = {"split_incr",
                                    "return redis.call('INCR', KEYS[1])"};

static dlock_backend *open_backend(const char *url, int multiplex)
{
    dlock_redis_options o = dlock_test_redis_options(2000, 10000);
    dlock_backend *b = NULL;
    char err[256];
    int rc;

    o.multiplex = multiplex;
    o.connections = 1;
    rc = dlock_redis_backend_new(&b, url, &o, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "backend: %s\n", err);
    assert_int_equal(rc, 0);
    return b;
}

static dlock_pending *send_echo(dlock_backend *b, const char *what,
                                int64_t deadline)
{
    const char *argv[1] = {what};
    dlock_pending *p = NULL;
    char err[256];
    int rc = dlock_backend_eval_send(b, &p, &s_echo, 0, 1, argv, NULL, deadline,
                                     err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "send: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(p);
    return p;
}

static void receive_echo(dlock_backend *b, dlock_pending *p, const char *want)
{
    dlock_reply *r = NULL;
    char err[256];
    int rc = dlock_backend_eval_receive(b, p, &r, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "receive: %s\n", err);
    assert_int_equal(rc, 0);
    assert_int_equal(r->type, DLOCK_REPLY_BULK);
    assert_string_equal(r->str, want);
    dlock_reply_free(r);
}

/* ---- every reply to its own receive ------------------------------------ */

static void own_replies(int multiplex)
{
    dlock_backend *b[3];
    dlock_pending *p[3][2];
    char want[3][2][32];
    int i, k;

    for (i = 0; i < 3; i++)
        b[i] = open_backend(dlock_test_redis_url(srv), multiplex);
    assert_int_equal(dlock_backend_can_split(b[0]), 1);
    /* Two calls in flight on each of three backends (arguments gone
     * before the receives: the sends copied them), received backwards. */
    for (i = 0; i < 3; i++)
        for (k = 0; k < 2; k++) {
            char arg[32];
            snprintf(want[i][k], sizeof want[i][k], "b%d-call%d", i, k);
            memcpy(arg, want[i][k], sizeof arg);
            p[i][k] = send_echo(b[i], arg, INT64_MAX);
            memset(arg, 'x', sizeof arg - 1);
        }
    for (i = 2; i >= 0; i--)
        for (k = 1; k >= 0; k--)
            receive_echo(b[i], p[i][k], want[i][k]);
    for (i = 0; i < 3; i++)
        dlock_backend_free(b[i]);
}

static void test_own_replies_multiplexed(void **state)
{
    (void)state;
    own_replies(1);
}

static void test_own_replies_pooled(void **state)
{
    (void)state;
    own_replies(0);
}

/* ---- NOSCRIPT ---------------------------------------------------------- */

static void test_noscript_in_receive(void **state)
{
    const char *flush[3] = {"SCRIPT", "FLUSH", NULL};
    const char *argv[1] = {"split:noscript"};
    char out[64], err[256];
    int multiplex;
    (void)state;

    for (multiplex = 0; multiplex <= 1; multiplex++) {
        dlock_backend *b = open_backend(dlock_test_redis_url(srv), multiplex);
        dlock_pending *p = NULL;
        dlock_reply *r = NULL;
        long long first;

        assert_int_equal(dlock_backend_eval(b, &r, &s_incr, 1, 0, argv, NULL,
                                            err, sizeof err), 0);
        first = r->integer;
        dlock_reply_free(r);
        /* The server forgets the script: the EVALSHA sent is refused and
         * the receive repeats it as EVAL. It ran once. */
        assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, flush), 0);
        assert_int_equal(dlock_backend_eval_send(b, &p, &s_incr, 1, 0, argv, NULL,
                                                 INT64_MAX, err, sizeof err), 0);
        assert_int_equal(dlock_backend_eval_receive(b, p, &r, err, sizeof err), 0);
        assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
        assert_int_equal(r->integer, first + 1);
        dlock_reply_free(r);
        dlock_backend_free(b);
    }
}

/* ---- the deadline ------------------------------------------------------ */

static void test_deadline_bounds_receive(void **state)
{
    dlock_backend *b = open_backend(dlock_test_redis_url(srv), 1);
    dlock_pending *p;
    dlock_reply *r = NULL;
    char err[256];
    (void)state;

    receive_echo(b, send_echo(b, "warm", INT64_MAX), "warm");
    assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
    p = send_echo(b, "late", dlock_test_now_ms() + 200);
    assert_int_equal(dlock_backend_eval_receive(b, p, &r, err, sizeof err),
                     DLOCK_ETIMEDOUT);
    assert_null(r);
    assert_non_null(strstr(err, "budget"));
    assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);
    /* The late reply comes first on the connection and reaches nobody. */
    receive_echo(b, send_echo(b, "next", INT64_MAX), "next");
    dlock_backend_free(b);
}

/* A receive that comes after the deadline still takes a reply that came
 * in time (a Redlock reads the other nodes first). */
static void test_late_receive_takes_arrived_reply(void **state)
{
    int multiplex;
    (void)state;

    for (multiplex = 0; multiplex <= 1; multiplex++) {
        dlock_backend *b = open_backend(dlock_test_redis_url(srv), multiplex);
        dlock_pending *p;
        struct timespec ts = {0, 150 * 1000000L};

        receive_echo(b, send_echo(b, "warm", INT64_MAX), "warm");
        p = send_echo(b, "arrived", dlock_test_now_ms() + 50);
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
        receive_echo(b, p, "arrived");
        dlock_backend_free(b);
    }
}

/* ---- a call sent but not received holds nobody up ----------------------- */

#define NOTHERS 4
#define OTHER_CALLS 50

typedef struct other {
    dlock_backend *b;
    int id, ok, wrong, failed;
} other;

static void *other_run(void *arg)
{
    other *o = arg;
    int i;

    for (i = 0; i < OTHER_CALLS; i++) {
        const char *argv[1];
        char want[32], err[256];
        dlock_reply *r = NULL;
        snprintf(want, sizeof want, "t%d-%d", o->id, i);
        argv[0] = want;
        if (dlock_backend_eval_until(o->b, &r, &s_echo, 0, 1, argv, NULL,
                                     INT64_MAX, err, sizeof err) != 0)
            o->failed++;
        else if (r->type != DLOCK_REPLY_BULK || strcmp(r->str, want) != 0)
            o->wrong++;
        else
            o->ok++;
        dlock_reply_free(r);
    }
    return NULL;
}

static void test_sent_call_holds_nobody_up(void **state)
{
    dlock_backend *b = open_backend(dlock_test_redis_url(srv), 1);
    pthread_t t[NOTHERS];
    other o[NOTHERS];
    dlock_pending *p;
    int i;
    (void)state;

    receive_echo(b, send_echo(b, "warm", INT64_MAX), "warm");
    /* In flight on the one shared connection, its caller busy elsewhere:
     * the other callers read past its reply (keeping it) and never wait
     * for this thread to come and read. */
    p = send_echo(b, "mine", INT64_MAX);
    for (i = 0; i < NOTHERS; i++) {
        memset(&o[i], 0, sizeof o[i]);
        o[i].b = b;
        o[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, other_run, &o[i]), 0);
    }
    for (i = 0; i < NOTHERS; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(o[i].failed, 0);
        assert_int_equal(o[i].wrong, 0);
        assert_int_equal(o[i].ok, OTHER_CALLS);
    }
    receive_echo(b, p, "mine");
    dlock_backend_free(b);
}

/* ---- failures and the dispatchers -------------------------------------- */

static void test_refused_connection_fails_send(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_backend *b;
    dlock_pending *p = (dlock_pending *)&p;
    const char *argv[1] = {"x"};
    char err[256] = "";
    int multiplex;
    (void)state;

    for (multiplex = 0; multiplex <= 1; multiplex++) {
        assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
        b = open_backend(dlock_test_redis_url(r), multiplex);
        assert_int_equal(dlock_test_redis_signal(r, SIGKILL), 0);
        dlock_test_redis_stop(r);
        assert_int_equal(dlock_backend_eval_send(b, &p, &s_echo, 0, 1, argv, NULL,
                                                 dlock_test_now_ms() + 2000, err, sizeof err),
                         DLOCK_ECONN);
        assert_null(p);
        assert_true(err[0] != '\0');
        dlock_backend_free(b);
        p = (dlock_pending *)&p;
    }
}

static void test_dispatchers(void **state)
{
    dlock_mock_store *store = NULL;
    dlock_backend *mock = NULL, *b = open_backend(dlock_test_redis_url(srv), 1);
    dlock_pending *p = (dlock_pending *)&p;
    const char *argv[1] = {"x"};
    dlock_reply *r = NULL;
    (void)state;

    assert_int_equal(dlock_mock_store_new(&store, NULL), 0);
    assert_int_equal(dlock_mock_backend_new(&mock, store), 0);
    /* The mock never waits on a network: it has no split calls. */
    assert_int_equal(dlock_backend_can_split(mock), 0);
    assert_int_equal(dlock_backend_can_split(NULL), 0);
    assert_int_equal(dlock_backend_eval_send(mock, &p, &s_echo, 0, 1, argv, NULL,
                                             INT64_MAX, NULL, 0),
                     DLOCK_ENOTSUP);
    assert_null(p);
    /* Bad arguments: nothing sent. */
    assert_int_equal(dlock_backend_eval_send(b, NULL, &s_echo, 0, 1, argv, NULL,
                                             INT64_MAX, NULL, 0),
                     DLOCK_EINVAL);
    p = (dlock_pending *)&p;
    assert_int_equal(dlock_backend_eval_send(b, &p, NULL, 0, 1, argv, NULL,
                                             INT64_MAX, NULL, 0),
                     DLOCK_EINVAL);
    assert_null(p);
    assert_int_equal(dlock_backend_eval_send(b, &p, &s_echo, 0, 1, NULL, NULL,
                                             INT64_MAX, NULL, 0),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_backend_eval_receive(b, NULL, &r, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_eval_receive(mock, (dlock_pending *)&p, &r,
                                                NULL, 0),
                     DLOCK_EINVAL);
    dlock_backend_free(b);
    dlock_backend_free(mock);
    dlock_mock_store_free(store);
}

int dlock_test_redis_split(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_replies_multiplexed),
        cmocka_unit_test(test_own_replies_pooled),
        cmocka_unit_test(test_noscript_in_receive),
        cmocka_unit_test(test_deadline_bounds_receive),
        cmocka_unit_test(test_late_receive_takes_arrived_reply),
        cmocka_unit_test(test_sent_call_holds_nobody_up),
        cmocka_unit_test(test_refused_connection_fails_send),
        cmocka_unit_test(test_dispatchers),
    };
    return DLOCK_RUN_REDIS_GROUP("redis_split", tests, &srv);
}
