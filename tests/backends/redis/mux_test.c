/*
 * The multiplexed Redis connection (backends/redis/mux.h): many threads'
 * calls on one or two shared connections get their own replies; a caller
 * whose budget ends leaves without its late reply reaching anyone; a burst
 * of replies larger than one parse reaches every caller; the
 * queue is bounded (queue_max) and a full one refuses at once; a lost
 * server fails every pending caller at once and the next call reconnects;
 * a call whose connection dies between its replies frees them once (mux
 * and pool alike); NOSCRIPT, AUTH and SELECT work through it; its options
 * are checked.
 * Against throwaway redis-servers (tests/harness/redis_server.h), through
 * the public API and the backend vtable only.
 */
#include <errno.h>
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
#include "../../harness/redis_client.h"
#include "../../harness/redis_group.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

static dlock_test_redis *srv;

static const dlock_script s_echo = {"mux_echo", "return ARGV[1]"};
static const dlock_script s_incr = {"mux_incr",
                                    "return redis.call('INCR', KEYS[1])"};
static const dlock_script s_set = {
    "mux_set", "return redis.call('SET', KEYS[1], ARGV[1])"};
static const dlock_script s_get = {"mux_get",
                                   "return redis.call('GET', KEYS[1])"};

static dlock_redis_options mux_options(int connections)
{
    dlock_redis_options o = dlock_test_redis_options(2000, 10000);
    o.multiplex = 1;
    o.connections = connections;
    return o;
}

static dlock_backend *open_mux(const char *url, int connections)
{
    dlock_redis_options o = mux_options(connections);
    dlock_backend *b = NULL;
    char err[256];
    int rc = dlock_redis_backend_new(&b, url, &o, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "backend: %s\n", err);
    assert_int_equal(rc, 0);
    return b;
}

/* ARGV[1] back, by deadline (0: none). */
static int echo(dlock_backend *b, const char *what, int64_t deadline,
                dlock_reply **out, char *err, size_t errlen)
{
    const char *argv[1] = {what};
    return dlock_backend_eval_until(b, out, &s_echo, 0, 1, argv, NULL,
                                    deadline ? deadline : INT64_MAX, err,
                                    errlen);
}

/* n echoes "<prefix>-<i>" in turn, each answered with its own payload. */
static void expect_own_echoes(dlock_backend *b, const char *prefix, int n)
{
    dlock_reply *r = NULL;
    char err[256];
    int i;
    for (i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof want, "%s-%d", prefix, i);
        assert_int_equal(echo(b, want, 0, &r, err, sizeof err), 0);
        assert_int_equal(r->type, DLOCK_REPLY_BULK);
        assert_string_equal(r->str, want);
        dlock_reply_free(r);
    }
}

/* ---- many threads, each checking its own replies ---------------------- */

#define NTHREADS 16
#define NCALLS 300

typedef struct caller {
    dlock_backend *b;
    int id;
    int wrong, failed;
    int64_t deadline; /* 0: none */
    int rc;
    char reply[64];
} caller;

static void *many_run(void *arg)
{
    caller *c = arg;
    int i;
    for (i = 0; i < NCALLS; i++) {
        char want[64], err[256];
        dlock_reply *r = NULL;
        snprintf(want, sizeof want, "t%d-call%d", c->id, i);
        if (echo(c->b, want, 0, &r, err, sizeof err) != 0) {
            c->failed++;
            continue;
        }
        if (r->type != DLOCK_REPLY_BULK || r->len != strlen(want) ||
            memcmp(r->str, want, r->len) != 0)
            c->wrong++;
        dlock_reply_free(r);
    }
    return NULL;
}

/* NTHREADS threads x NCALLS echoes on connections shared connections of
 * url: every caller gets its own reply, none fails. */
static void many_threads_at(const char *url, int connections)
{
    dlock_backend *b = open_mux(url, connections);
    pthread_t t[NTHREADS];
    caller c[NTHREADS];
    int i;

    for (i = 0; i < NTHREADS; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].b = b;
        c[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, many_run, &c[i]), 0);
    }
    for (i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < NTHREADS; i++) {
        assert_int_equal(c[i].failed, 0);
        assert_int_equal(c[i].wrong, 0);
    }
    dlock_backend_free(b);
}

static void test_many_threads_one_connection(void **state)
{
    (void)state;
    many_threads_at(dlock_test_redis_url(srv), 1);
}

static void test_many_threads_two_connections(void **state)
{
    (void)state;
    many_threads_at(dlock_test_redis_url(srv), 2);
}

/* The same over TLS (rediss://, client certificates required): the batched
 * writes and the one reader go through OpenSSL records, which may split or
 * join replies differently from TCP segments; every reply still reaches its
 * own caller. */
static void test_many_threads_tls(void **state)
{
    dlock_test_redis *tls = NULL;
    (void)state;
    assert_int_equal(dlock_test_redis_start_tls(&tls, "yes", 0, NULL), 0);
    many_threads_at(dlock_test_redis_tls_url(tls), 1);
    dlock_test_redis_stop(tls);
}

/* ---- a caller whose budget ends --------------------------------------- */

static void *one_call(void *arg)
{
    caller *c = arg;
    char want[64], err[256];
    dlock_reply *r = NULL;
    snprintf(want, sizeof want, "late-%d", c->id);
    c->rc = echo(c->b, want, c->deadline, &r, err, sizeof err);
    if (c->rc == 0)
        snprintf(c->reply, sizeof c->reply, "%.*s", (int)r->len, r->str);
    dlock_reply_free(r);
    return NULL;
}

static void test_budget_ends_late_reply_discarded(void **state)
{
    dlock_backend *b = open_mux(dlock_test_redis_url(srv), 1);
    dlock_reply *r = NULL;
    char err[256];
    pthread_t t[4];
    caller c[4];
    int64_t t0, took;
    int i;
    (void)state;

    /* Warm: the script is loaded, the connection open. */
    assert_int_equal(echo(b, "warm", 0, &r, err, sizeof err), 0);
    dlock_reply_free(r);

    assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
    t0 = dlock_test_now_ms();
    for (i = 0; i < 4; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].b = b;
        c[i].id = i;
        c[i].deadline = t0 + 200;
        assert_int_equal(pthread_create(&t[i], NULL, one_call, &c[i]), 0);
    }
    for (i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    took = dlock_test_now_ms() - t0;
    /* Each left on its own budget, well before the 10 s command timeout. */
    for (i = 0; i < 4; i++)
        assert_int_equal(c[i].rc, DLOCK_ETIMEDOUT);
    assert_true(took < 5000);
    assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);

    /* The four late replies come first on the connection: the next
     * callers get their own, in order, nothing else. */
    expect_own_echoes(b, "after", 5);
    dlock_backend_free(b);
}

/* ---- replies in one burst ---------------------------------------------- */

/* More than the reader parses per look (64, mux.c), so a reader whose own
 * reply comes early leaves the rest read but unparsed. */
#define BURST 200

/* BURST callers queue on one connection to a stalled server; resumed, it
 * answers them all at once, so most replies come in one read. Every caller
 * gets its own reply, none waits for the 10 s command timeout: a reader
 * that leaves replies read but not yet parsed has the next reader parse
 * them before it waits on the socket. */
static void test_replies_in_one_burst(void **state)
{
    dlock_backend *b = open_mux(dlock_test_redis_url(srv), 1);
    dlock_reply *r = NULL;
    pthread_t *t = calloc(BURST, sizeof *t);
    caller *c = calloc(BURST, sizeof *c);
    char err[256];
    int i;
    (void)state;

    assert_non_null(t);
    assert_non_null(c);
    assert_int_equal(echo(b, "warm", 0, &r, err, sizeof err), 0);
    dlock_reply_free(r);
    assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
    for (i = 0; i < BURST; i++) {
        c[i].b = b;
        c[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, one_call, &c[i]), 0);
    }
    /* Let them queue (those not written yet go in the first write). */
    dlock_test_sleep_ms(300);
    assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);
    for (i = 0; i < BURST; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < BURST; i++) {
        char want[64];
        snprintf(want, sizeof want, "late-%d", i);
        assert_int_equal(c[i].rc, 0);
        assert_string_equal(c[i].reply, want);
    }
    free(t);
    free(c);
    dlock_backend_free(b);
}

/* ---- a bounded queue --------------------------------------------------- */

#define QFULL_THREADS 12
#define QFULL_MAX 4
/* Long enough that all 12 have tried before the first 4 give up (and make
 * room), even on a loaded machine. */
#define QFULL_BUDGET_MS 1500

typedef struct qcaller {
    dlock_backend *b;
    pthread_barrier_t *go;
    int id, rc;
    int64_t took;
    char err[256];
} qcaller;

static void *qfull_run(void *arg)
{
    qcaller *c = arg;
    dlock_reply *r = NULL;
    char want[32];
    int64_t t0;
    snprintf(want, sizeof want, "q%d", c->id);
    pthread_barrier_wait(c->go);
    t0 = dlock_test_now_ms();
    c->rc = echo(c->b, want, t0 + QFULL_BUDGET_MS, &r, c->err, sizeof c->err);
    c->took = dlock_test_now_ms() - t0;
    dlock_reply_free(r);
    return NULL;
}

/* queue_max=4 on one connection to a stalled server: of 12 callers at
 * once, 4 enter (and end on their budget), the others are refused at
 * once with a detail naming the node and the limit; nobody succeeds or
 * hangs. Once the server resumes, the next call gets its own reply: the 4
 * placeholders left behind, which nobody is waiting to read, do not hold
 * the connection full. */
static void test_queue_full(void **state)
{
    dlock_backend *b;
    dlock_reply *r = NULL;
    pthread_barrier_t go;
    pthread_t t[QFULL_THREADS];
    qcaller c[QFULL_THREADS];
    char url[160], where[64], limit[32], err[256];
    int i, full = 0, timedout = 0;
    (void)state;

    snprintf(url, sizeof url, "%s?queue_max=%d", dlock_test_redis_url(srv),
             QFULL_MAX);
    snprintf(where, sizeof where, "redis 127.0.0.1:%d:",
             dlock_test_redis_port(srv));
    snprintf(limit, sizeof limit, "(%d calls", QFULL_MAX);
    b = open_mux(url, 1);
    assert_int_equal(echo(b, "warm", 0, &r, err, sizeof err), 0);
    dlock_reply_free(r);

    assert_int_equal(dlock_test_redis_signal(srv, SIGSTOP), 0);
    assert_int_equal(pthread_barrier_init(&go, NULL, QFULL_THREADS), 0);
    for (i = 0; i < QFULL_THREADS; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].b = b;
        c[i].go = &go;
        c[i].id = i;
        assert_int_equal(pthread_create(&t[i], NULL, qfull_run, &c[i]), 0);
    }
    for (i = 0; i < QFULL_THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&go);
    for (i = 0; i < QFULL_THREADS; i++) {
        if (c[i].rc == DLOCK_ECONN) {
            if (!strstr(c[i].err, "request queue full"))
                fprintf(stderr, "queue full: unexpected: %s\n", c[i].err);
            assert_non_null(strstr(c[i].err, "request queue full"));
            assert_non_null(strstr(c[i].err, where));
            assert_non_null(strstr(c[i].err, limit));
            assert_non_null(strstr(c[i].err, "queue_max"));
            /* Refused, not made to wait for its budget. */
            assert_true(c[i].took < QFULL_BUDGET_MS);
            full++;
        } else {
            assert_int_equal(c[i].rc, DLOCK_ETIMEDOUT);
            timedout++;
        }
    }
    assert_true(full >= QFULL_THREADS - QFULL_MAX);
    assert_true(timedout <= QFULL_MAX);
    assert_int_equal(dlock_test_redis_signal(srv, SIGCONT), 0);

    expect_own_echoes(b, "resumed", 3);
    dlock_backend_free(b);
}

/* ---- a lost server ---------------------------------------------------- */

static void test_server_lost_fails_all_then_recovers(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_backend *b;
    dlock_reply *reply = NULL;
    char err[256];
    pthread_t t[8];
    caller c[8];
    int64_t t0;
    int i, rc;
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
    b = open_mux(dlock_test_redis_url(r), 1);
    assert_int_equal(echo(b, "warm", 0, &reply, err, sizeof err), 0);
    dlock_reply_free(reply);

    /* Eight callers pending on a stalled server (budgets of 30 s, command
     * timeout 10 s), then the server dies. */
    assert_int_equal(dlock_test_redis_signal(r, SIGSTOP), 0);
    for (i = 0; i < 8; i++) {
        memset(&c[i], 0, sizeof c[i]);
        c[i].b = b;
        c[i].id = i;
        c[i].deadline = dlock_test_now_ms() + 30000;
        assert_int_equal(pthread_create(&t[i], NULL, one_call, &c[i]), 0);
    }
    dlock_test_sleep_ms(200);
    t0 = dlock_test_now_ms();
    assert_int_equal(dlock_test_redis_signal(r, SIGKILL), 0);
    for (i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    /* All of them, at once: long before any timeout. */
    assert_true(dlock_test_now_ms() - t0 < 5000);
    for (i = 0; i < 8; i++)
        assert_int_equal(c[i].rc, DLOCK_ECONN);

    assert_int_equal(dlock_test_redis_restart(r), 0);
    t0 = dlock_test_now_ms();
    do {
        rc = echo(b, "back", 0, &reply, err, sizeof err);
        if (rc != 0)
            dlock_test_sleep_ms(20);
    } while (rc != 0 && dlock_test_now_ms() - t0 < 5000);
    assert_int_equal(rc, 0);
    assert_string_equal(reply->str, "back");
    dlock_reply_free(reply);
    dlock_backend_free(b);
    dlock_test_redis_stop(r);
}

/* ---- a connection lost between the replies of one call --------------- */

typedef struct two_replies {
    dlock_backend *b;
    int rc;
    dlock_reply *r;
    char err[256];
} two_replies;

static void *two_replies_run(void *arg)
{
    two_replies *t = arg;
    const char *argv[2] = {"mux:two", "v"};
    t->rc = dlock_backend_eval(t->b, &t->r, &s_set, 1, 1, argv, NULL, t->err,
                               sizeof t->err);
    return NULL;
}

/* One call, two replies (the script's, then WAIT's: sync_replicas=1 with
 * no replica, so WAIT blocks), and the server dies in between: the call
 * fails with DLOCK_ECONN and frees the reply it had, once, pooled and
 * multiplexed alike (node.h's contract: on failure no reply is left to
 * the caller; the pool used to free it and leave it in the caller's
 * array, which the script runner then freed again). */
static void test_lost_between_replies(void **state)
{
    int multiplex;
    (void)state;

    for (multiplex = 0; multiplex <= 1; multiplex++) {
        dlock_test_redis *r = NULL;
        dlock_backend *b = NULL;
        dlock_redis_options o = mux_options(1);
        two_replies t;
        pthread_t th;
        char url[160], err[256];

        assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
        snprintf(url, sizeof url,
                 "%s?multiplex=%d&sync_replicas=1&sync_timeout_ms=3000",
                 dlock_test_redis_url(r), multiplex);
        assert_int_equal(dlock_redis_backend_new(&b, url, &o, err, sizeof err),
                         0);
        memset(&t, 0, sizeof t);
        t.b = b;
        assert_int_equal(pthread_create(&th, NULL, two_replies_run, &t), 0);
        dlock_test_sleep_ms(300); /* the script's reply is in; WAIT's is pending */
        assert_int_equal(dlock_test_redis_signal(r, SIGKILL), 0);
        pthread_join(th, NULL);
        assert_int_equal(t.rc, DLOCK_ECONN);
        assert_null(t.r);
        dlock_backend_free(b);
        dlock_test_redis_stop(r);
    }
}

/* ---- scripts, AUTH and SELECT ---------------------------------------- */

static void test_noscript_after_flush(void **state)
{
    dlock_backend *b = open_mux(dlock_test_redis_url(srv), 1);
    const char *argv[1] = {"mux:noscript"};
    const char *flush[3] = {"SCRIPT", "FLUSH", NULL};
    dlock_reply *r = NULL;
    char out[64], err[256];
    (void)state;

    assert_int_equal(dlock_backend_eval(b, &r, &s_incr, 1, 0, argv, NULL, err,
                                        sizeof err), 0);
    assert_int_equal(r->integer, 1);
    dlock_reply_free(r);
    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, flush), 0);
    assert_int_equal(dlock_backend_eval(b, &r, &s_incr, 1, 0, argv, NULL, err,
                                        sizeof err), 0);
    assert_int_equal(r->integer, 2);
    dlock_reply_free(r);
    dlock_backend_free(b);
}

static void test_auth_and_select(void **state)
{
    static const char *const args[] = {"--requirepass", "muxsecret", NULL};
    dlock_test_redis *r = NULL;
    dlock_backend *b3, *b0;
    dlock_reply *reply = NULL;
    const char *setv[2] = {"mux:db", "three"};
    char url[128], err[256];
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    snprintf(url, sizeof url, "redis://:muxsecret@127.0.0.1:%d/3?multiplex=1",
             dlock_test_redis_port(r));
    b3 = open_mux(url, 2);
    snprintf(url, sizeof url, "redis://:muxsecret@127.0.0.1:%d/0?multiplex=1",
             dlock_test_redis_port(r));
    b0 = open_mux(url, 1);
    assert_int_equal(dlock_backend_eval(b3, &reply, &s_set, 1, 1, setv, NULL,
                                        err, sizeof err), 0);
    dlock_reply_free(reply);
    assert_int_equal(dlock_backend_eval(b3, &reply, &s_get, 1, 0, setv, NULL,
                                        err, sizeof err), 0);
    assert_string_equal(reply->str, "three");
    dlock_reply_free(reply);
    /* Another database: not there. */
    assert_int_equal(dlock_backend_eval(b0, &reply, &s_get, 1, 0, setv, NULL,
                                        err, sizeof err), 0);
    assert_int_equal(reply->type, DLOCK_REPLY_NIL);
    dlock_reply_free(reply);
    dlock_backend_free(b3);
    dlock_backend_free(b0);

    /* A wrong password still fails at creation, as pooled. */
    snprintf(url, sizeof url, "redis://:nope@127.0.0.1:%d?multiplex=1",
             dlock_test_redis_port(r));
    {
        dlock_redis_options o = mux_options(1);
        dlock_backend *b = NULL;
        assert_int_equal(dlock_redis_backend_new(&b, url, &o, err, sizeof err),
                         DLOCK_EAUTH);
        assert_null(b);
    }
    dlock_test_redis_stop(r);
}

/* ---- options ---------------------------------------------------------- */

static void test_options_and_url(void **state)
{
    static const char *const bad[] = {
        "?multiplex=2", "?multiplex=", "?connections=0", "?connections=65",
        "?connections=x", "?multiplex=1&multiplex=0", "?queue_max=0",
        "?queue_max=1048577", "?queue_max=-1", "?queue_max=x", "?queue_max=",
        "?queue_max=4&queue_max=4", "?multiplex=0&queue_max=8",
        "?queue_max=8&multiplex=0",
    };
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_reply *r = NULL;
    char url[160], err[256];
    size_t i;
    (void)state;

    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(url, sizeof url, "%s%s", dlock_test_redis_url(srv), bad[i]);
        assert_int_equal(dlock_redis_backend_new(&b, url, NULL, err, sizeof err),
                         DLOCK_EINVAL);
        assert_null(b);
        assert_true(strstr(err, "multiplex") || strstr(err, "connections") ||
                    strstr(err, "queue_max"));
    }
    /* queue_max with a pool, wherever multiplex=0 comes from. */
    snprintf(url, sizeof url, "%s?queue_max=8", dlock_test_redis_url(srv));
    o.multiplex = 0;
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, err, sizeof err),
                     DLOCK_EINVAL);
    assert_null(b);
    assert_non_null(strstr(err, "'queue_max'"));
    assert_non_null(strstr(err, "multiplex is 0"));
    snprintf(url, sizeof url, "%s?multiplex=0&queue_max=8",
             dlock_test_redis_url(srv));
    assert_int_equal(dlock_redis_backend_new(&b, url, NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "multiplex is 0"));
    snprintf(url, sizeof url, "%s?queue_max=1048577", dlock_test_redis_url(srv));
    assert_int_equal(dlock_redis_backend_new(&b, url, NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "'queue_max' must be 1..1048576"));
    /* The bounds themselves are fine. */
    for (i = 0; i < 2; i++) {
        snprintf(url, sizeof url, "%s?queue_max=%s", dlock_test_redis_url(srv),
                 i == 0 ? "1" : "1048576");
        assert_int_equal(dlock_redis_backend_new(&b, url, NULL, err, sizeof err),
                         0);
        assert_int_equal(echo(b, "bound", 0, &r, err, sizeof err), 0);
        dlock_reply_free(r);
        dlock_backend_free(b);
        b = NULL;
    }
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    o.connections = 0;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             err, sizeof err), DLOCK_EINVAL);
    assert_non_null(strstr(err, "connections"));
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    o.multiplex = 2;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             err, sizeof err), DLOCK_EINVAL);
    assert_non_null(strstr(err, "multiplex"));

    /* A struct of a version this library does not know: refused, nothing
     * read past its version (garbage there does not matter). */
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    o.version = DLOCK_REDIS_OPTIONS_VERSION + 1;
    o.multiplex = 77;
    o.connections = -5;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             err, sizeof err), DLOCK_EINVAL);
    assert_null(b);
    assert_non_null(strstr(err, "version must be"));

    /* The URL wins over the options, both ways, on every scheme. */
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    snprintf(url, sizeof url, "%s?multiplex=0", dlock_test_redis_url(srv));
    o.multiplex = 1;
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, err, sizeof err), 0);
    assert_int_equal(echo(b, "pooled", 0, &r, err, sizeof err), 0);
    dlock_reply_free(r);
    dlock_backend_free(b);
    snprintf(url, sizeof url, "unix://%s?multiplex=1&connections=2",
             dlock_test_redis_socket(srv));
    o.multiplex = 0;
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, err, sizeof err), 0);
    assert_int_equal(echo(b, "unix", 0, &r, err, sizeof err), 0);
    assert_string_equal(r->str, "unix");
    dlock_reply_free(r);
    dlock_backend_free(b);
}

/* The JSON configuration's fields (api/dlock/config.h). */
static void test_json_config(void **state)
{
    static const char *const bad[] = {
        "\"multiplex\": 2", "\"multiplex\": \"yes\"", "\"connections\": 0",
        "\"connections\": 65", "\"connections\": \"2\"",
    };
    dlock_client *c = NULL;
    char json[512], err[256];
    size_t i;
    (void)state;

    snprintf(json, sizeof json,
             "{\"url\": \"%s\", \"multiplex\": true, \"connections\": 2}",
             dlock_test_redis_url(srv));
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err), 0);
    dlock_client_free(c);
    c = NULL;
    snprintf(json, sizeof json, "{\"url\": \"%s\", \"multiplex\": false}",
             dlock_test_redis_url(srv));
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err), 0);
    dlock_client_free(c);
    c = NULL;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(json, sizeof json, "{\"url\": \"%s\", %s}",
                 dlock_test_redis_url(srv), bad[i]);
        assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err),
                         DLOCK_EINVAL);
        assert_null(c);
        assert_true(strstr(err, "multiplex") || strstr(err, "connections"));
    }
}

int dlock_test_redis_mux(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads_one_connection),
        cmocka_unit_test(test_many_threads_two_connections),
        cmocka_unit_test(test_many_threads_tls),
        cmocka_unit_test(test_budget_ends_late_reply_discarded),
        cmocka_unit_test(test_replies_in_one_burst),
        cmocka_unit_test(test_queue_full),
        cmocka_unit_test(test_server_lost_fails_all_then_recovers),
        cmocka_unit_test(test_lost_between_replies),
        cmocka_unit_test(test_noscript_after_flush),
        cmocka_unit_test(test_auth_and_select),
        cmocka_unit_test(test_options_and_url),
        cmocka_unit_test(test_json_config),
    };
    return DLOCK_RUN_REDIS_GROUP("redis_mux", tests, &srv);
}
