/*
 * A server that talks too much (issue 28 §1, api/dlock/redis.h "Reply
 * size"): a fake Redis on a loopback socket that answers PING and then
 * answers any other command with a 400 MB bulk reply, streamed fast or
 * trickled. Against multiplexed and pooled clients:
 *  - fast: the call fails with DLOCK_EPROTO ("reply larger than
 *    max_reply_bytes"), and the client drops the connection long before
 *    the reply's end (the server sees it closed);
 *  - trickled (never reaching the cap in time): try_lock(wait 200)
 *    returns within its budget although the command timeout is 30 s and
 *    bytes keep coming.
 * And the option's three spellings (field, URL, JSON) with their bounds.
 *
 * The fake server's threads only record; assertions run on the test's
 * thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"
#include "dlock/config.h"
#include "dlock/redis.h"
#include "dlock/log.h"
#include "../../harness/log_capture.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#include <hiredis/hiredis.h>

#define HUGE_REPLY 400000000LL /* what the fake server claims to send */
#define MAX_CONNS 16

/* FAST, TRICKLE: PING answered (CONFIG and INFO refused), any other
 * command a huge reply (above).
 * CLUSTER: a cluster node whose map (CLUSTER SLOTS) is itself, or itself
 * and `peer` (half the slots each; -1: 1001 nodes), and which answers
 * SSUBSCRIBE as Redis does and every script with
 * MOVED to `moved_to` (0: a new port each time, where nothing listens).
 * NOISY: a standalone server whose lock is always held (every script
 * answers a TTL of 100 s), which acknowledges SUBSCRIBE and then sprays
 * messages on the channel without end: half with an integer payload (no
 * PUBLISH sends one), half with a string (noise). */
enum { FAST, TRICKLE, CLUSTER, NOISY };

typedef struct fake_server {
    int lfd, port, mode;
    pthread_t acceptor;
    pthread_t conns[MAX_CONNS];
    int nconns;
    pthread_mutex_t mu;
    int stop;
    long long sent;     /* body bytes sent, all connections */
    int closed_by_peer; /* a stream ended because the client closed */
    int accepted;       /* connections accepted */
    int open;           /* connections open now */
    int auths;          /* AUTH commands received */
    int evals;          /* scripts received (CLUSTER) */
    int peer;           /* CLUSTER: the other node's port in the map; 0 none */
    int moved_to;       /* CLUSTER: where scripts are sent; 0: new ports */
    struct fake_server *map; /* CLUSTER: whose map to tell (NULL: own) */
    int subscribes;     /* NOISY: SUBSCRIBE commands received */
    long long sprayed;  /* NOISY: messages sent */
} fake_server;

typedef struct conn_arg {
    fake_server *s;
    int fd;
} conn_arg;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int stopping(fake_server *s)
{
    int stop;
    pthread_mutex_lock(&s->mu);
    stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* Sends all of buf, or -1 (the client closed, or the server stops). */
static int send_all(fake_server *s, int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            struct pollfd p = {fd, POLLOUT, 0};
            if (stopping(s))
                return -1;
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                poll(&p, 1, 50);
                continue;
            }
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The huge reply: fast (64 kB writes back to back) or trickled (512
 * bytes every 2 ms, about 250 kB/s: the default cap is not reached in the
 * time of a call). A trickle gives up after 10 s, so a client that does
 * not keep its budget fails the test instead of hanging it. */
static void stream(fake_server *s, int fd)
{
    static char body[65536];
    char head[32];
    long long left = HUGE_REPLY;
    int64_t end = now_ms() + 10000;
    size_t chunk = s->mode == FAST ? sizeof body : 512;

    memset(body, 'x', sizeof body);
    snprintf(head, sizeof head, "$%lld\r\n", HUGE_REPLY);
    if (send_all(s, fd, head, strlen(head)) != 0)
        return;
    while (left > 0 && !stopping(s)) {
        size_t n = (long long)chunk < left ? chunk : (size_t)left;
        if (s->mode == TRICKLE && now_ms() > end)
            return;
        if (send_all(s, fd, body, n) != 0) {
            pthread_mutex_lock(&s->mu);
            s->closed_by_peer = !s->stop;
            pthread_mutex_unlock(&s->mu);
            return;
        }
        left -= (long long)n;
        pthread_mutex_lock(&s->mu);
        s->sent += (long long)n;
        pthread_mutex_unlock(&s->mu);
        if (s->mode == TRICKLE)
            sleep_ms(2);
    }
}

static int is_cmd(const redisReply *cmd, const char *name)
{
    return cmd->type == REDIS_REPLY_ARRAY && cmd->elements > 0 &&
           cmd->element[0]->type == REDIS_REPLY_STRING &&
           strcasecmp(cmd->element[0]->str, name) == 0;
}

/* One map entry "slots lo..hi served at 127.0.0.1:port". */
static int slots_entry(char *out, size_t cap, int lo, int hi, int port)
{
    return snprintf(out, cap, "*3\r\n:%d\r\n:%d\r\n*2\r\n$9\r\n127.0.0.1\r\n:%d\r\n", lo,
                     hi, port);
}

/* A cluster node's answer to cmd (CLUSTER mode); -1: the client closed. */
static int answer_cluster(fake_server *s, int fd, const redisReply *cmd)
{
    const fake_server *m = s->map ? s->map : s;
    char out[512];
    int n, peer, to;

    if (m != s) {
        pthread_mutex_lock(&s->map->mu);
        peer = m->peer;
        pthread_mutex_unlock(&s->map->mu);
    }
    pthread_mutex_lock(&s->mu);
    if (m == s)
        peer = s->peer;
    to = s->moved_to;
    if (is_cmd(cmd, "AUTH"))
        s->auths++;
    if (is_cmd(cmd, "EVALSHA") || is_cmd(cmd, "EVAL"))
        s->evals++;
    if (!to)
        to = 20000 + s->evals % 20000; /* a new port each time */
    pthread_mutex_unlock(&s->mu);
    if (is_cmd(cmd, "AUTH") || is_cmd(cmd, "ASKING"))
        return send_all(s, fd, "+OK\r\n", 5);
    if (is_cmd(cmd, "PING"))
        return send_all(s, fd, "+PONG\r\n", 7);
    if (is_cmd(cmd, "CLUSTER") && peer == -1) {
        /* a map of 1001 masters, one slot each */
        int i;
        char entry[128];
        n = snprintf(out, sizeof out, "*1001\r\n");
        if (send_all(s, fd, out, (size_t)n) != 0)
            return -1;
        for (i = 0; i < 1001; i++) {
            n = slots_entry(entry, sizeof entry, i, i, 20000 + i);
            if (send_all(s, fd, entry, (size_t)n) != 0)
                return -1;
        }
        return 0;
    }
    if (is_cmd(cmd, "CLUSTER")) {
        n = snprintf(out, sizeof out, "*%d\r\n", peer ? 2 : 1);
        n += slots_entry(out + n, sizeof out - (size_t)n, 0, peer ? 8191 : 16383, m->port);
        if (peer)
            n += slots_entry(out + n, sizeof out - (size_t)n, 8192, 16383, peer);
        return send_all(s, fd, out, (size_t)n);
    }
    if (is_cmd(cmd, "EVALSHA") || is_cmd(cmd, "EVAL")) {
        n = snprintf(out, sizeof out, "-MOVED 1 127.0.0.1:%d\r\n", to);
        return send_all(s, fd, out, (size_t)n);
    }
    if ((is_cmd(cmd, "SSUBSCRIBE") || is_cmd(cmd, "SUNSUBSCRIBE")) && cmd->elements == 2) {
        n = snprintf(out, sizeof out, "*3\r\n$%zu\r\n%s\r\n$%zu\r\n%.200s\r\n:1\r\n",
                     strlen(cmd->element[0]->str), cmd->element[0]->str,
                     strlen(cmd->element[1]->str), cmd->element[1]->str);
        for (peer = 0; peer < n; peer++) /* the kind in lower case */
            if (out[peer] >= 'A' && out[peer] <= 'Z')
                out[peer] = (char)(out[peer] - 'A' + 'a');
        return send_all(s, fd, out, (size_t)n);
    }
    return send_all(s, fd, "-ERR not here\r\n", 15);
}

/* A NOISY server's answer to cmd; the channel it subscribed, into
 * chan (chan[0] '\0': none yet). -1: the client closed. */
static int answer_noisy(fake_server *s, int fd, const redisReply *cmd, char *chan,
                        size_t chanlen)
{
    char out[512];
    int n;

    if (is_cmd(cmd, "PING"))
        return send_all(s, fd, "+PONG\r\n", 7);
    if (is_cmd(cmd, "EVALSHA") || is_cmd(cmd, "EVAL")) {
        pthread_mutex_lock(&s->mu);
        s->evals++;
        pthread_mutex_unlock(&s->mu);
        return send_all(s, fd, ":100000\r\n", 9);
    }
    if ((is_cmd(cmd, "SUBSCRIBE") || is_cmd(cmd, "UNSUBSCRIBE")) && cmd->elements == 2 &&
        cmd->element[1]->len < chanlen) {
        int sub = is_cmd(cmd, "SUBSCRIBE");
        pthread_mutex_lock(&s->mu);
        s->subscribes += sub;
        pthread_mutex_unlock(&s->mu);
        snprintf(chan, chanlen, "%s", sub ? cmd->element[1]->str : "");
        n = snprintf(out, sizeof out, "*3\r\n$%d\r\n%s\r\n$%zu\r\n%s\r\n:%d\r\n",
                     sub ? 9 : 11, sub ? "subscribe" : "unsubscribe",
                     cmd->element[1]->len, cmd->element[1]->str, sub);
        return send_all(s, fd, out, (size_t)n);
    }
    return send_all(s, fd, "-ERR not here\r\n", 15);
}

/* NOISY: 20 messages on chan, every other one with an integer payload. */
static int spray(fake_server *s, int fd, const char *chan)
{
    char out[8192];
    size_t n = 0;
    int i;

    for (i = 0; i < 20; i++)
        n += (size_t)snprintf(out + n, sizeof out - n,
                              i % 2 ? "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n:5\r\n"
                                    : "*3\r\n$7\r\nmessage\r\n$%zu\r\n%s\r\n$5\r\nnoise\r\n",
                              strlen(chan), chan);
    if (send_all(s, fd, out, n) != 0)
        return -1;
    pthread_mutex_lock(&s->mu);
    s->sprayed += 20;
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Reads commands with hiredis's parser (RESP requests are arrays of bulk
 * strings) and answers each as the mode says. */
static void *conn_main(void *arg)
{
    conn_arg *a = arg;
    fake_server *s = a->s;
    int fd = a->fd, done = 0;
    redisReader *rd = redisReaderCreate();
    char buf[4096], chan[256] = "";

    free(a);
    while (rd && !done && !stopping(s)) {
        struct pollfd p = {fd, POLLIN, 0};
        void *cmd = NULL;
        ssize_t n;
        if (poll(&p, 1, chan[0] ? 1 : 50) <= 0) {
            if (chan[0])
                done = spray(s, fd, chan) != 0;
            continue;
        }
        n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0 || redisReaderFeed(rd, buf, (size_t)n) != REDIS_OK)
            break;
        while (!done && redisReaderGetReply(rd, &cmd) == REDIS_OK && cmd) {
            if (s->mode == CLUSTER)
                done = answer_cluster(s, fd, cmd) != 0;
            else if (s->mode == NOISY)
                done = answer_noisy(s, fd, cmd, chan, sizeof chan) != 0;
            else if (is_cmd(cmd, "PING"))
                done = send_all(s, fd, "+PONG\r\n", 7) != 0;
            /* the connect-time probe of a new connection (CONFIG GET,
             * INFO: issue 32 §4) is refused, as by a server that has no
             * such commands: the huge reply is the scripts' */
            else if (is_cmd(cmd, "CONFIG") || is_cmd(cmd, "INFO"))
                done = send_all(s, fd, "-ERR unknown command\r\n", 22) != 0;
            else {
                stream(s, fd);
                done = 1;
            }
            freeReplyObject(cmd);
            cmd = NULL;
        }
    }
    if (rd)
        redisReaderFree(rd);
    close(fd);
    pthread_mutex_lock(&s->mu);
    s->open--;
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *accept_main(void *arg)
{
    fake_server *s = arg;
    while (!stopping(s)) {
        struct pollfd p = {s->lfd, POLLIN, 0};
        conn_arg *a;
        int fd;
        if (poll(&p, 1, 50) <= 0)
            continue;
        fd = accept(s->lfd, NULL, NULL);
        if (fd < 0)
            continue;
        a = malloc(sizeof *a);
        pthread_mutex_lock(&s->mu);
        s->accepted++;
        if (!a || s->nconns == MAX_CONNS) {
            pthread_mutex_unlock(&s->mu);
            free(a);
            close(fd);
            continue;
        }
        a->s = s;
        a->fd = fd;
        if (pthread_create(&s->conns[s->nconns], NULL, conn_main, a) == 0) {
            s->nconns++;
            s->open++;
        } else {
            free(a);
            close(fd);
        }
        pthread_mutex_unlock(&s->mu);
    }
    return NULL;
}

static fake_server *fake_start(int mode)
{
    fake_server *s = calloc(1, sizeof *s);
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;

    assert_non_null(s);
    s->mode = mode;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = 0;
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(s->lfd, 16), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&sa, &len), 0);
    s->port = ntohs(sa.sin_port);
    assert_int_equal(pthread_create(&s->acceptor, NULL, accept_main, s), 0);
    return s;
}

static void fake_stop(fake_server *s)
{
    int i;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->acceptor, NULL);
    for (i = 0; i < s->nconns; i++)
        pthread_join(s->conns[i], NULL);
    close(s->lfd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static char errbuf[512];

/* A client of the fake server, with the command timeout given. */
static dlock_client *open_client(fake_server *s, const char *query, int64_t command_timeout_ms)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    char url[256];

    o.command_timeout_ms = command_timeout_ms;
    o.connect_timeout_ms = 2000;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?%s", s->port, query);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), 0);
    assert_int_equal(dlock_client_new(&c, b, NULL), 0);
    return c;
}

/* A fast huge reply over a 1 MiB cap: DLOCK_EPROTO naming the cap, and
 * the connection dropped after a few MB at most (the cap, the socket
 * buffers), not 400 MB. */
static void huge_reply_refused(const char *query)
{
    fake_server *s = fake_start(FAST);
    dlock_client *c = open_client(s, query, 30000);
    dlock_rlock *l = NULL;
    int64_t t0;
    int rc, k, closed = 0;
    long long sent = 0;

    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:huge"), 0);
    t0 = now_ms();
    rc = dlock_try_lock(l, 200, 10000);
    if (rc != DLOCK_EPROTO)
        fail_msg("try_lock: %d (%s), sent %lld", rc, dlock_errmsg(l), s->sent);
    assert_non_null(strstr(dlock_errmsg(l), "reply larger than max_reply_bytes (1048576 bytes); "
                                            "connection dropped"));
    assert_true(now_ms() - t0 < 10000);
    /* the client closed its end: the server's stream ends with an error */
    for (k = 0; k < 500 && !closed; k++) {
        pthread_mutex_lock(&s->mu);
        closed = s->closed_by_peer;
        sent = s->sent;
        pthread_mutex_unlock(&s->mu);
        if (!closed)
            sleep_ms(10);
    }
    assert_true(closed);
    assert_true(sent < 64LL * 1024 * 1024);
    dlock_rlock_free(l);
    dlock_client_free(c);
    fake_stop(s);
}

static void huge_reply_refused_mux(void **state)
{
    (void)state;
    huge_reply_refused("max_reply_bytes=1048576");
}

static void huge_reply_refused_pool(void **state)
{
    (void)state;
    huge_reply_refused("multiplex=0&max_reply_bytes=1048576");
}

/* A trickled reply that never completes nor reaches the (default) cap in
 * time: try_lock(wait 200) returns within its budget (200 + the default
 * budget_slack_ms of 50; 2 s allowed for a loaded machine), not after the
 * stream's end (10 s); with a long command timeout (30 s: the call's
 * budget ends each read) and a short one (100 ms: it does). And the 400 MB
 * flood with the default cap: the budget kept as well (the call ends at
 * its deadline, or at the cap if the bytes come fast enough). */
static void stream_once(int mode, const char *query, int64_t command_timeout_ms)
{
    fake_server *s = fake_start(mode);
    dlock_client *c = open_client(s, query, command_timeout_ms);
    dlock_rlock *l = NULL;
    int64_t t0, took;
    int rc;
    long long sent;

    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:trickle"), 0);
    t0 = now_ms();
    rc = dlock_try_lock(l, 200, 10000);
    took = now_ms() - t0;
    pthread_mutex_lock(&s->mu);
    sent = s->sent;
    pthread_mutex_unlock(&s->mu);
    /* a flood may reach the default cap (64 MiB) within the budget */
    if (rc != DLOCK_ETIMEDOUT && rc != DLOCK_ECONN && (mode == TRICKLE || rc != DLOCK_EPROTO))
        fail_msg("%s, command timeout %lld: try_lock gave %d (%s)", query,
                 (long long)command_timeout_ms, rc, dlock_errmsg(l));
    if (took >= 2000)
        fail_msg("%s, command timeout %lld: try_lock(wait 200) took %lld ms", query,
                 (long long)command_timeout_ms, (long long)took);
    assert_true(sent > 0); /* the server was streaming: this is what was cut */
    dlock_rlock_free(l);
    dlock_client_free(c);
    fake_stop(s);
}

static void trickle_within_budget(const char *query)
{
    stream_once(TRICKLE, query, 30000);
    stream_once(TRICKLE, query, 100);
    stream_once(FAST, query, 30000);
}

static void trickle_within_budget_mux(void **state)
{
    (void)state;
    trickle_within_budget("multiplex=1");
}

static void trickle_within_budget_pool(void **state)
{
    (void)state;
    trickle_within_budget("multiplex=0");
}

/* ---- the option's spellings --------------------------------------------- */

static void expect_bad(const char *url, const dlock_redis_options *o, const char *want)
{
    dlock_backend *b = NULL;
    errbuf[0] = '\0';
    assert_int_equal(dlock_redis_backend_new(&b, url, o, errbuf, sizeof errbuf), DLOCK_EINVAL);
    assert_null(b);
    if (!strstr(errbuf, want))
        fail_msg("'%s': got '%s', want '%s'", url, errbuf, want);
}

/* A client made from url and o (or from json) whose first call gets the
 * fake's huge reply refused with want in its detail. */
static void expect_capped(const char *url, const dlock_redis_options *o, const char *json,
                          const char *want)
{
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    int rc;

    if (json) {
        assert_int_equal(dlock_client_from_json_string(&c, json, errbuf, sizeof errbuf), 0);
    } else {
        assert_int_equal(dlock_redis_backend_new(&b, url, o, errbuf, sizeof errbuf), 0);
        assert_int_equal(dlock_client_new(&c, b, NULL), 0);
    }
    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:forms"), 0);
    rc = dlock_try_lock(l, 2000, 10000);
    if (rc != DLOCK_EPROTO || !strstr(dlock_errmsg(l), want))
        fail_msg("try_lock: %d (%s), want '%s'", rc, dlock_errmsg(l), want);
    dlock_rlock_free(l);
    dlock_client_free(c);
}

static void option_forms(void **state)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;
    fake_server *s;
    char url[256], json[512];
    (void)state;

    assert_int_equal(o.version, 6);
    assert_true(o.max_reply_bytes == DLOCK_REDIS_MAX_REPLY_DEFAULT);
    expect_bad("redis://127.0.0.1:1?max_reply_bytes=4095", NULL,
               "'max_reply_bytes' must be an integer 4096..1073741824");
    expect_bad("redis://127.0.0.1:1?max_reply_bytes=1073741825", NULL,
               "'max_reply_bytes' must be an integer 4096..1073741824");
    expect_bad("redis://127.0.0.1:1?max_reply_bytes=1m", NULL, "'max_reply_bytes' must be");
    expect_bad("redis://127.0.0.1:1?max_reply_bytes=4096&max_reply_bytes=4096", NULL,
               "'max_reply_bytes' given twice");
    expect_bad("unix:///nonexistent/dlock.sock?max_reply_bytes=0", NULL,
               "'max_reply_bytes' must be");
    expect_bad("redis://127.0.0.1:1?max_reply=1", NULL, "max_reply_bytes"); /* listed */
    o.max_reply_bytes = 4095;
    expect_bad("redis://127.0.0.1:1", &o, "max_reply_bytes must be 4096..1073741824");
    o.max_reply_bytes = 0;
    expect_bad("redis://127.0.0.1:1", &o, "max_reply_bytes must be");
    /* JSON: an integer in range */
    assert_int_equal(dlock_client_from_json_string(&c, "{\"url\": \"mock:\", \"max_reply_bytes\": 100}",
                                            errbuf, sizeof errbuf),
                     DLOCK_EINVAL);
    assert_non_null(strstr(errbuf, "max_reply_bytes"));
    assert_int_equal(dlock_client_from_json_string(&c, "{\"url\": \"mock:\", \"max_reply_bytes\": \"64\"}",
                                            errbuf, sizeof errbuf),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_client_from_json_string(&c, "{\"url\": \"mock:\", \"max_reply_bytes\": 8192}",
                                            errbuf, sizeof errbuf),
                     0);
    dlock_client_free(c);

    /* Each spelling takes effect: a small cap refuses the fake's reply
     * with its own number in the detail. The URL wins over the field. */
    s = fake_start(FAST);
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    o.max_reply_bytes = 65536;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", s->port);
    expect_capped(url, &o, NULL, "max_reply_bytes (65536 bytes)");
    snprintf(url, sizeof url, "redis://127.0.0.1:%d?max_reply_bytes=32768", s->port);
    expect_capped(url, &o, NULL, "max_reply_bytes (32768 bytes)");
    snprintf(json, sizeof json,
             "{\"url\": \"redis://127.0.0.1:%d\", \"max_reply_bytes\": 16384}", s->port);
    expect_capped(NULL, NULL, json, "max_reply_bytes (16384 bytes)");
    /* a version-5 struct ends before the field: not read (1 would be
     * refused), the default applies */
    o.version = 5;
    o.max_reply_bytes = 1;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", s->port);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), 0);
    dlock_backend_free(b);
    fake_stop(s);
}

/* ---- Cluster redirections ------------------------------------------------ */

#define SECRET "hostileSecret42"

static int count_fds(void)
{
    char path[64];
    int fd, n = 0;
    for (fd = 0; fd < 4096; fd++) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (access(path, F_OK) == 0)
            n++;
    }
    return n;
}

static int field(fake_server *s, const int *f)
{
    int v;
    pthread_mutex_lock(&s->mu);
    v = *f;
    pthread_mutex_unlock(&s->mu);
    return v;
}

/* A node that answers every script with MOVED to an address its own map
 * does not name (a listening stranger, or a new port each time): no call
 * follows, no connection goes there (so neither do the credentials), and
 * the client's fds stay bounded over 40 calls. */
static void cluster_moved_spray(void **state)
{
    fake_server *node = fake_start(CLUSTER), *stranger = fake_start(CLUSTER);
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char url[256];
    int k, fds0, fds1, auths0;
    (void)state;

    snprintf(url, sizeof url, "redis-cluster://:" SECRET "@127.0.0.1:%d", node->port);
    assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:moved"), 0);
    assert_int_equal(dlock_try_lock(l, 0, 10000), DLOCK_ECONN); /* connections made */
    fds0 = count_fds();
    auths0 = field(node, &node->auths);
    for (k = 0; k < 40; k++) {
        int rc;
        pthread_mutex_lock(&node->mu);
        node->moved_to = k % 2 ? stranger->port : 0;
        pthread_mutex_unlock(&node->mu);
        rc = dlock_try_lock(l, 0, 10000);
        if (rc != DLOCK_ECONN ||
            !strstr(dlock_errmsg(l), "a node the slot map does not name: not followed"))
            fail_msg("call %d: %d (%s)", k, rc, dlock_errmsg(l));
        assert_null(strstr(dlock_errmsg(l), SECRET));
    }
    /* a wait that outlasts the map's reading: still not followed */
    k = dlock_try_lock(l, 300, 10000);
    if (k != DLOCK_ECONN || !strstr(dlock_errmsg(l), "does not name: not followed"))
        fail_msg("try_lock(wait 300): %d (%s)", k, dlock_errmsg(l));
    fds1 = count_fds();
    if (fds1 > fds0 + 4)
        fail_msg("fds grew from %d to %d over 40 redirected calls", fds0, fds1);
    assert_int_equal(field(stranger, &stranger->accepted), 0);
    assert_int_equal(field(stranger, &stranger->auths), 0);
    /* AUTH went to the node's own connections only, once each (the
     * calls', the map's, the wait's subscriber): no more were made */
    assert_int_equal(field(node, &node->auths), field(node, &node->accepted));
    assert_true(field(node, &node->accepted) <= auths0 + 1);
    assert_true(field(node, &node->evals) >= 40);
    dlock_rlock_free(l);
    dlock_client_free(c);
    fake_stop(stranger);
    fake_stop(node);
}

/* A node the map names is used; once the map no longer names it, its
 * connections are closed. */
static void cluster_node_left_map(void **state)
{
    fake_server *a = fake_start(CLUSTER), *b = fake_start(CLUSTER);
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char url[256];
    int k, rc;
    (void)state;

    pthread_mutex_lock(&a->mu);
    a->peer = b->port; /* the map: A 0..8191, B 8192..16383 */
    pthread_mutex_unlock(&a->mu);
    b->map = a;            /* one map, A's */
    b->moved_to = a->port; /* B sends everything to A, which the map names */
    a->moved_to = b->port; /* and A to B: both followed, up to the limit */
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", a->port);
    assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:left"), 0);
    rc = dlock_try_lock(l, 0, 10000);
    if (rc != DLOCK_EPROTO || !strstr(dlock_errmsg(l), "more than 16 redirections"))
        fail_msg("ping-pong: %d (%s)", rc, dlock_errmsg(l));
    assert_true(field(b, &b->evals) > 0);
    assert_true(field(b, &b->open) > 0);
    /* B leaves the map: the next reading (a redirection asks for one)
     * drops it and closes its connections */
    pthread_mutex_lock(&a->mu);
    a->peer = 0;
    a->moved_to = 0;
    pthread_mutex_unlock(&a->mu);
    for (k = 0; k < 1000 && field(b, &b->open) > 0; k++) {
        if (k % 50 == 0)
            (void)dlock_try_lock(l, 0, 10000);
        sleep_ms(10);
    }
    assert_int_equal(field(b, &b->open), 0);
    /* and a MOVED to it is no longer followed */
    pthread_mutex_lock(&a->mu);
    a->moved_to = b->port;
    pthread_mutex_unlock(&a->mu);
    k = field(b, &b->accepted);
    assert_int_equal(dlock_try_lock(l, 0, 10000), DLOCK_ECONN);
    assert_non_null(strstr(dlock_errmsg(l), "does not name"));
    assert_int_equal(field(b, &b->accepted), k);
    dlock_rlock_free(l);
    dlock_client_free(c);
    fake_stop(b);
    fake_stop(a);
}

/* A map that names more nodes than a cluster may have is refused. */
static void cluster_too_many_nodes(void **state)
{
    fake_server *node = fake_start(CLUSTER);
    dlock_client *c = NULL;
    char url[256];
    (void)state;

    node->peer = -1;
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", node->port);
    assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), DLOCK_EPROTO);
    assert_null(c);
    assert_non_null(strstr(errbuf, "CLUSTER SLOTS names more than 1000 nodes"));
    fake_stop(node);
}

/* Pub/sub noise (issue 28 section 6): a 2 s wait on a lock held for
 * good, while the server sprays messages on its channel, half of them
 * with a payload that is not a string. The subscription is kept (one
 * SUBSCRIBE), those messages are counted as ignored, and the string
 * noise costs at most one script call per 25 ms floor plus 8 (the first
 * attempt, the one after subscribing, the burst of 4 the floor allows,
 * and 2 to spare). Before: about 1 script call per message and a resubscribe per
 * integer payload. */
static void pubsub_noise_bounded(const char *query)
{
    fake_server *s = fake_start(NOISY);
    dlock_client *c = open_client(s, query, 5000);
    dlock_rlock *l = NULL;
    dlock_metrics m = DLOCK_METRICS_INIT;
    int64_t t0, took;
    int evals, subs;
    long long sprayed;

    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:noise"), 0);
    t0 = now_ms();
    assert_int_equal(dlock_try_lock(l, 2000, 10000), DLOCK_ETIMEDOUT);
    took = now_ms() - t0;
    evals = field(s, &s->evals);
    subs = field(s, &s->subscribes);
    pthread_mutex_lock(&s->mu);
    sprayed = s->sprayed;
    pthread_mutex_unlock(&s->mu);
    assert_int_equal(dlock_client_metrics(c, &m), 0);
    print_message("  pub/sub noise (%s): %lld messages in %lld ms: %d script calls, "
                  "%d SUBSCRIBE, %llu ignored\n", query, sprayed, (long long)took, evals,
                  subs, (unsigned long long)m.messages_ignored);
    if (sprayed < 200)
        fail_msg("the server sprayed only %lld messages: no noise to judge", sprayed);
    assert_int_equal(subs, 1); /* never resubscribed */
    assert_true(m.messages_ignored > 0);
    assert_true(m.messages_ignored <= (uint64_t)sprayed);
    if (evals > took / 25 + 8)
        fail_msg("%d script calls in %lld ms: above one per 25 ms floor + 8", evals,
                 (long long)took);
    assert_int_equal(m.busy, (uint64_t)evals); /* every attempt was refused */
    dlock_rlock_free(l);
    dlock_client_free(c);
    fake_stop(s);
}

static void pubsub_noise_bounded_mux(void **state)
{
    (void)state;
    pubsub_noise_bounded("multiplex=1");
}

static void pubsub_noise_bounded_pool(void **state)
{
    (void)state;
    pubsub_noise_bounded("multiplex=0");
}

/* The same noise from a real redis-server: a publisher sprays string
 * messages (PUBLISH, pipelined) on the channel of a lock another client
 * holds, while a third waits 2 s for it. */
typedef struct publisher {
    int port;
    const char *channel;
    pthread_mutex_t mu;
    int stop;
    long long delivered; /* the receivers PUBLISH reported, summed */
} publisher;

static void *publish_main(void *arg)
{
    publisher *p = arg;
    redisContext *rc = redisConnect("127.0.0.1", p->port);
    int i, stop = 0;

    while (rc && !rc->err && !stop) {
        redisReply *r = NULL;
        long long got = 0;
        for (i = 0; i < 50; i++)
            redisAppendCommand(rc, "PUBLISH %s noise", p->channel);
        for (i = 0; i < 50; i++) {
            if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r)
                break;
            if (r->type == REDIS_REPLY_INTEGER)
                got += r->integer;
            freeReplyObject(r);
        }
        pthread_mutex_lock(&p->mu);
        p->delivered += got;
        stop = p->stop || i < 50;
        pthread_mutex_unlock(&p->mu);
    }
    if (rc)
        redisFree(rc);
    return NULL;
}

static void pubsub_noise_redis(void **state)
{
    dlock_test_redis *srv = NULL;
    dlock_client *holder = NULL, *waiter = NULL;
    dlock_rlock *hl = NULL, *wl = NULL;
    dlock_metrics m0 = DLOCK_METRICS_INIT, m1 = DLOCK_METRICS_INIT;
    publisher p;
    pthread_t th;
    int64_t t0, took;
    long long delivered;
    uint64_t calls;
    (void)state;

    assert_int_equal(dlock_test_redis_start(&srv, NULL), 0);
    assert_int_equal(dlock_client_connect(&holder, dlock_test_redis_url(srv), NULL, errbuf,
                                          sizeof errbuf), 0);
    assert_int_equal(dlock_client_connect(&waiter, dlock_test_redis_url(srv), NULL, errbuf,
                                          sizeof errbuf), 0);
    assert_int_equal(dlock_reentrant_new(&hl, holder, "noise"), 0);
    assert_int_equal(dlock_reentrant_new(&wl, waiter, "noise"), 0);
    assert_int_equal(dlock_lock(hl, 60000), 0);
    memset(&p, 0, sizeof p);
    p.port = dlock_test_redis_port(srv);
    p.channel = "redisson_lock__channel:{noise}";
    pthread_mutex_init(&p.mu, NULL);
    assert_int_equal(pthread_create(&th, NULL, publish_main, &p), 0);
    assert_int_equal(dlock_client_metrics(waiter, &m0), 0);
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_INFO), 0);
    t0 = now_ms();
    assert_int_equal(dlock_try_lock(wl, 2000, 10000), DLOCK_ETIMEDOUT);
    took = now_ms() - t0;
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    delivered = p.delivered;
    pthread_mutex_unlock(&p.mu);
    pthread_join(th, NULL);
    assert_int_equal(dlock_client_metrics(waiter, &m1), 0);
    calls = m1.busy - m0.busy; /* every attempt of the wait was refused */
    print_message("  pub/sub noise (redis-server): %lld messages delivered in %lld ms: "
                  "%llu script calls, %d resubscribes\n", delivered, (long long)took,
                  (unsigned long long)calls,
                  dlock_test_log_count("restored after a reconnect", NULL));
    if (delivered < 200)
        fail_msg("only %lld messages delivered: no noise to judge", delivered);
    if (calls > (uint64_t)(took / 25 + 8))
        fail_msg("%llu script calls in %lld ms: above one per 25 ms floor + 8",
                 (unsigned long long)calls, (long long)took);
    assert_int_equal(dlock_test_log_count("restored after a reconnect", NULL), 0);
    assert_int_equal(m1.messages_ignored, 0); /* strings are not ignored */
    assert_int_equal(dlock_unlock(hl), 0);
    pthread_mutex_destroy(&p.mu);
    dlock_rlock_free(wl);
    dlock_rlock_free(hl);
    dlock_client_free(waiter);
    dlock_client_free(holder);
    dlock_test_redis_stop(srv);
}

int dlock_test_redis_hostile(void);
int dlock_test_redis_hostile(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(option_forms),
        cmocka_unit_test(huge_reply_refused_mux),
        cmocka_unit_test(huge_reply_refused_pool),
        cmocka_unit_test(trickle_within_budget_mux),
        cmocka_unit_test(trickle_within_budget_pool),
        cmocka_unit_test(cluster_moved_spray),
        cmocka_unit_test(cluster_node_left_map),
        cmocka_unit_test(cluster_too_many_nodes),
        cmocka_unit_test(pubsub_noise_bounded_mux),
        cmocka_unit_test(pubsub_noise_bounded_pool),
        cmocka_unit_test(pubsub_noise_redis),
    };
    return DLOCK_RUN_GROUP("redis_hostile_server", tests, NULL, NULL);
}
