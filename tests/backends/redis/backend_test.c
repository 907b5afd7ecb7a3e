/*
 * The Redis backend's own tests: URLs, connecting and authenticating,
 * scripts and replies, pub/sub, reconnection, and concurrency, against
 * throwaway redis-servers (tests/harness/redis_server.h).
 *
 * Only the public API and the backend vtable dispatchers are used (and
 * the transport's self-connect check, declared where it is used). Helper
 * threads record what they see; assertions run on the test's own thread.
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
#include "dlock/redis.h"
#include "dlock/sys/backend.h"
#include "../../harness/redis_client.h"
#include "../../harness/redis_group.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#define SECRET "hunter2xyz"

static dlock_test_redis *srv; /* the group's server */
static char errbuf[512];

/* ---- scripts ----------------------------------------------------------- */

static const dlock_script s_basic = {
    "test_basic", "return {1, 'a', redis.call('SET', KEYS[1], ARGV[1])}"};
static const dlock_script s_get = {"test_get",
                                   "return redis.call('GET', KEYS[1])"};
static const dlock_script s_incr = {"test_incr",
                                    "return redis.call('INCR', KEYS[1])"};
static const dlock_script s_publish = {
    "test_publish", "return redis.call('PUBLISH', KEYS[1], ARGV[1])"};
static const dlock_script s_wrongtype = {
    "test_wrongtype", "redis.call('SET', KEYS[1], 'x')\n"
                      "return redis.call('HSET', KEYS[1], 'f', 'v')"};
static const dlock_script s_syntax = {"test_syntax", "return ("};
static const dlock_script s_types = {
    "test_types",
    "return {false, -42, {ok='FINE'}, {err='MYERR boom'}, {}, {1, {2, {3}}}}"};
static const dlock_script s_echo = {"test_echo", "return ARGV[1]"};
static const dlock_script s_nil = {"test_nil", "return false"};

/* ---- helpers ----------------------------------------------------------- */

static dlock_redis_options fast_options(void)
{
    dlock_redis_options o = dlock_test_redis_options(1000, 1000);
    o.pool_size = 4;
    return o;
}

static int open_backend(dlock_backend **out, const char *url)
{
    dlock_redis_options o = fast_options();
    errbuf[0] = '\0';
    return dlock_redis_backend_new(out, url, &o, errbuf, sizeof errbuf);
}

static int eval1(dlock_backend *b, dlock_reply **out, const dlock_script *s,
                 const char *key, const char *arg)
{
    const char *argv[2];
    size_t n = 0;
    if (key)
        argv[n++] = key;
    if (arg)
        argv[n++] = arg;
    errbuf[0] = '\0';
    return dlock_backend_eval(b, out, s, key ? 1 : 0, arg ? 1 : 0, argv, NULL,
                              errbuf, sizeof errbuf);
}

static void server_cmd(dlock_test_redis *r, char *out, size_t outlen,
                       const char *a0, const char *a1, const char *a2,
                       const char *a3)
{
    const char *argv[5] = {a0, a1, a2, a3, NULL};
    assert_int_equal(dlock_test_redis_command(r, out, outlen, argv), 0);
}

/* A port nothing listens on: bound, never listening, so connects are
 * refused; the caller closes fd after the test. */
static int closed_port(int *fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    *fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(*fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* Messages received by a listener. */
typedef struct inbox {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;   /* non-empty messages */
    int empties; /* the backend's "look again" after a reconnect */
    char channel[128];
    char last[128];
    size_t last_len;
    int running; /* inside the callback right now */
    int slow;    /* sleep inside the callback */
} inbox;

static void inbox_init(inbox *in)
{
    memset(in, 0, sizeof *in);
    pthread_mutex_init(&in->mu, NULL);
    pthread_cond_init(&in->cv, NULL);
}

static void inbox_destroy(inbox *in)
{
    pthread_cond_destroy(&in->cv);
    pthread_mutex_destroy(&in->mu);
}

static void on_message(void *arg, const char *channel, const char *msg,
                       size_t len)
{
    inbox *in = arg;
    int slow;
    pthread_mutex_lock(&in->mu);
    in->running = 1;
    slow = in->slow;
    pthread_mutex_unlock(&in->mu);
    if (slow)
        dlock_test_sleep_ms(2);
    pthread_mutex_lock(&in->mu);
    if (len == 0) {
        in->empties++;
    } else {
        in->count++;
        snprintf(in->channel, sizeof in->channel, "%s", channel);
        in->last_len = len < sizeof in->last ? len : sizeof in->last - 1;
        memcpy(in->last, msg, in->last_len);
        in->last[in->last_len] = '\0';
    }
    in->running = 0;
    pthread_cond_broadcast(&in->cv);
    pthread_mutex_unlock(&in->mu);
}

/* Waits until in->count >= n (empties = 0) or in->empties >= n
 * (empties = 1). Returns the value reached. */
static int inbox_wait(inbox *in, int n, int empties, int timeout_ms)
{
    struct timespec ts;
    int v;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&in->mu);
    while ((empties ? in->empties : in->count) < n)
        if (pthread_cond_timedwait(&in->cv, &in->mu, &ts) != 0)
            break;
    v = empties ? in->empties : in->count;
    pthread_mutex_unlock(&in->mu);
    return v;
}

static int inbox_count(inbox *in)
{
    int v;
    pthread_mutex_lock(&in->mu);
    v = in->count;
    pthread_mutex_unlock(&in->mu);
    return v;
}

static long long publish(dlock_backend *b, const char *channel,
                         const char *msg)
{
    dlock_reply *r = NULL;
    long long n;
    assert_int_equal(eval1(b, &r, &s_publish, channel, msg), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    n = r->integer;
    dlock_reply_free(r);
    return n;
}

static int numsub(dlock_test_redis *r, const char *channel)
{
    char out[256];
    const char *nl;
    server_cmd(r, out, sizeof out, "PUBSUB", "NUMSUB", channel, NULL);
    nl = strchr(out, '\n');
    assert_non_null(nl);
    return atoi(nl + 1);
}

/* ---- URLs and options -------------------------------------------------- */

static void expect_bad_url(const char *url, const char *needle)
{
    dlock_backend *b = (dlock_backend *)1;
    int rc = open_backend(&b, url);
    if (rc != DLOCK_EINVAL || !strstr(errbuf, needle) || strstr(errbuf, SECRET))
        fprintf(stderr, "url '%s': rc %d, detail '%s'\n", url ? url : "(null)",
                rc, errbuf);
    assert_int_equal(rc, DLOCK_EINVAL);
    assert_null(b);
    assert_non_null(strstr(errbuf, needle));
    assert_null(strstr(errbuf, SECRET));
}

static void test_url_bad(void **state)
{
    char longpath[200];
    (void)state;
    expect_bad_url(NULL, "NULL");
    expect_bad_url("", "empty");
    expect_bad_url("localhost:6379", "scheme");
    expect_bad_url("http://localhost", "unknown scheme 'http'");
    expect_bad_url("https://localhost", "unknown scheme 'https'");
    /* With a password in it, nothing of the URL is quoted (a raw '&' or
     * '@' in a secret moves its rest into the names); without, the bad
     * name is. */
    expect_bad_url("rediss://:" SECRET "@h?foo=" SECRET, "unknown parameter (expected");
    expect_bad_url("rediss://h?foo=1", "unknown parameter 'foo'");
    expect_bad_url("rediss://h?cacert", "'cacert' has no value");
    expect_bad_url("rediss://h?cacert=", "'cacert' is empty");
    expect_bad_url("rediss://h?sni=a&sni=b", "'sni' given twice");
    expect_bad_url("rediss://h?insecure=2", "'insecure' must be 0 or 1");
    expect_bad_url("rediss://h?insecure=1&insecure=0", "given twice");
    expect_bad_url("rediss://h?cacert=%zz", "percent-encoding in 'cacert'");
    expect_bad_url("rediss://h?cert=/nonexistent/c.crt", "both cert and key");
    expect_bad_url("rediss://h?key=/nonexistent/c.key", "both cert and key");
    expect_bad_url("rediss://h?cacert=/nonexistent/ca.crt", "cannot read cacert");
    expect_bad_url("rediss://h?db=1", "unknown parameter 'db'");
    expect_bad_url("redis://:" SECRET "@h?cacert=/x", "needs a rediss:// URL");
    expect_bad_url("unix:///tmp/s?cacert=/x", "unknown parameter 'cacert'");
    expect_bad_url(":" SECRET "://x@h", "scheme");
    expect_bad_url("redis://", "empty host");
    expect_bad_url("redis://:" SECRET "@", "empty host");
    expect_bad_url("redis://:" SECRET "@:6379", "empty host");
    expect_bad_url("redis://h:0", "port");
    expect_bad_url("redis://h:65536", "port");
    expect_bad_url("redis://h:12ab", "bad port (expected 1..65535)");
    /* the '@' and host forgotten: the password is the port, not quoted */
    expect_bad_url("redis://default:" SECRET, "bad port");
    expect_bad_url("redis://h:", "port");
    expect_bad_url("redis://h:-1", "port");
    expect_bad_url("redis://:" SECRET "@h:99999", "port");
    expect_bad_url("redis://h/x", "database");
    expect_bad_url("redis://h/1/2", "database");
    expect_bad_url("redis://h/-1", "database");
    expect_bad_url("redis://h/99999999999", "database");
    expect_bad_url("redis://h?db=1", "the database goes in the path");
    expect_bad_url("redis://h:6379?x", "parameter 'x' has no value");
    expect_bad_url("redis://h#frag", "unexpected");
    expect_bad_url("redis://a b", "host");
    expect_bad_url("redis://[::1", "'['");
    expect_bad_url("redis://[::1]x", "unexpected");
    expect_bad_url("redis://" SECRET "@h", "credentials");
    expect_bad_url("redis://:" SECRET "%zz@h", "percent-encoding in the password");
    expect_bad_url("redis://:" SECRET "%4@h", "password");
    expect_bad_url("redis://:" SECRET "%00@h", "password");
    expect_bad_url("redis://us%g0er:" SECRET "@h", "user name");
    expect_bad_url("unix://", "empty socket path");
    expect_bad_url("unix://relative/sock", "absolute");
    expect_bad_url("unix://:" SECRET "@/tmp/s", "absolute");
    expect_bad_url("unix:///tmp/s?db=x", "database");
    expect_bad_url("unix:///tmp/s?db=", "database");
    expect_bad_url("unix:///tmp/s?db=1&db=2", "twice");
    expect_bad_url("unix:///tmp/s?password=" SECRET, "unknown parameter (only");
    expect_bad_url("redis-sentinel://h?sentinelMasterId=m&sentinel_password=" SECRET
                   "&" SECRET, "parameter has no value");
    expect_bad_url("redis-sentinel://h?sentinelMasterId=m&sentinel_password=a:b@" SECRET
                   "?sentinelMasterId=m", "percent-encode it: %40");
    memset(longpath, 'a', sizeof longpath - 1);
    longpath[0] = '/';
    longpath[sizeof longpath - 1] = '\0';
    {
        char url[256];
        snprintf(url, sizeof url, "unix://%s", longpath);
        expect_bad_url(url, "too long");
    }
}

/* Well-formed URLs reach the connect stage: against a port where nothing
 * listens they fail with ECONN, not EINVAL. */
static void test_url_good(void **state)
{
    const char *forms[] = {
        "redis://127.0.0.1:%d",
        "REDIS://127.0.0.1:%d/",
        "redis://127.0.0.1:%d/15",
        "redis://:" SECRET "@127.0.0.1:%d/0",
        "redis://alice:" SECRET "@127.0.0.1:%d",
        "redis://al%%69ce:p%%40ss%%3Aw%%2Frd@127.0.0.1:%d",
        "redis://alice:@127.0.0.1:%d",
        "redis://:@127.0.0.1:%d",
        "redis://[::1]:%d",
        "redis://localhost:%d/3",
        "rediss://127.0.0.1:%d?insecure=1",
        "rediss://:" SECRET "@localhost:%d/2?sni=redis.example&insecure=0",
    };
    size_t i;
    int fd, port = closed_port(&fd);
    dlock_backend *b = NULL;
    (void)state;
    for (i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char url[256];
        int rc;
        snprintf(url, sizeof url, forms[i], port);
        rc = open_backend(&b, url);
        if (rc != DLOCK_ECONN)
            fprintf(stderr, "url '%s': rc %d '%s'\n", url, rc, errbuf);
        assert_int_equal(rc, DLOCK_ECONN);
        assert_null(b);
        assert_null(strstr(errbuf, SECRET));
        assert_null(strstr(errbuf, "p@ss"));
    }
    assert_int_equal(open_backend(&b, "unix:///nonexistent/dlock.sock?db=2"),
                     DLOCK_ECONN);
    assert_non_null(strstr(errbuf, "/nonexistent/dlock.sock"));
    close(fd);
}

static void test_options(void **state)
{
    dlock_redis_options o;
    dlock_backend *b = (dlock_backend *)1;
    (void)state;
    assert_int_equal(dlock_redis_backend_new(NULL, dlock_test_redis_url(srv),
                                             NULL, errbuf, sizeof errbuf),
                     DLOCK_EINVAL);
#define BAD(field, value, needle)                                            \
    do {                                                                     \
        o = fast_options();                                                  \
        o.field = value;                                                     \
        b = (dlock_backend *)1;                                              \
        assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), \
                                                 &o, errbuf, sizeof errbuf), \
                         DLOCK_EINVAL);                                      \
        assert_null(b);                                                      \
        assert_non_null(strstr(errbuf, needle));                             \
    } while (0)
    BAD(connect_timeout_ms, -1, "connect_timeout_ms");
    BAD(command_timeout_ms, -5, "command_timeout_ms");
    BAD(pool_size, 0, "pool_size");
    BAD(pool_size, -3, "pool_size");
    BAD(reconnect_min_ms, -1, "reconnect_min_ms");
    BAD(reconnect_max_ms, 1, "reconnect_max_ms");
    BAD(version, 0, "version");
#undef BAD
    /* NULL options = defaults; a NULL errbuf is fine. */
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv),
                                             NULL, NULL, 0), 0);
    assert_string_equal(b->methods->name, "redis");
    assert_non_null(dlock_backend_clock(b));
    dlock_backend_free(b);
    dlock_backend_free(NULL);
}

/* Timeouts of 0 mean no limit: everything still works. */
static void test_no_timeouts(void **state)
{
    dlock_backend *b = NULL;
    dlock_redis_options o = fast_options();
    dlock_subscription *sub = NULL;
    dlock_reply *r = NULL;
    inbox in;
    (void)state;
    inbox_init(&in);
    o.connect_timeout_ms = 0;
    o.command_timeout_ms = 0;
    o.reconnect_min_ms = 0;
    o.reconnect_max_ms = 0;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             errbuf, sizeof errbuf), 0);
    assert_int_equal(eval1(b, &r, &s_incr, "notimeout:n", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    dlock_reply_free(r);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:notimeout",
                                             on_message, &in), 0);
    assert_int_equal(publish(b, "ps:notimeout", "m"), 1);
    assert_int_equal(inbox_wait(&in, 1, 0, 2000), 1);
    dlock_backend_unsubscribe(b, sub);
    dlock_backend_free(b);
    inbox_destroy(&in);
}

/* ---- connecting -------------------------------------------------------- */

static void test_closed_port(void **state)
{
    char url[64];
    int fd, port = closed_port(&fd);
    dlock_backend *b = NULL;
    int64_t t0 = dlock_test_now_ms();
    (void)state;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    assert_int_equal(open_backend(&b, url), DLOCK_ECONN);
    assert_true(dlock_test_now_ms() - t0 < 1000);
    assert_non_null(strstr(errbuf, "127.0.0.1"));
    close(fd);
}

/* backends/redis/transport.h: what the transport's connect looks at. */
int dlock__redis_self_connected(int fd);

/* A connection to itself (bound to a free loopback port, then connected to
 * that same port: the "simultaneous open" that a connect to a port nobody
 * listens on gives when the kernel picks that very port as its own) is told
 * apart from a connection to a server; the transport takes the first for a
 * refused connect instead of talking to itself. */
static void test_self_connect_told_apart(void **state)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int self = socket(AF_INET, SOCK_STREAM, 0), to_server = socket(AF_INET, SOCK_STREAM, 0);
    char buf[8];

    (void)state;
    assert_true(self >= 0 && to_server >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(self, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(self, (struct sockaddr *)&a, &len), 0);
    assert_int_equal(connect(self, (struct sockaddr *)&a, sizeof a), 0);
    /* what it sends comes back to it: a server would have answered */
    assert_int_equal(send(self, "PING", 4, MSG_NOSIGNAL), 4);
    assert_int_equal(recv(self, buf, sizeof buf, 0), 4);
    assert_int_equal(dlock__redis_self_connected(self), 1);

    a.sin_port = htons((unsigned short)dlock_test_redis_port(srv));
    assert_int_equal(connect(to_server, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(dlock__redis_self_connected(to_server), 0);
    close(self);
    close(to_server);
}

typedef struct fake_server {
    int listen_fd;
    int port;
    const char *greeting;
    pthread_t thread;
} fake_server;

/* Answers the first client with text that is not RESP, then lets it go. */
static void *fake_run(void *arg)
{
    fake_server *f = arg;
    char buf[256];
    struct pollfd p = {f->listen_fd, POLLIN, 0};
    int c = poll(&p, 1, 5000) == 1 ? accept(f->listen_fd, NULL, NULL) : -1;
    if (c >= 0) {
        ssize_t n = recv(c, buf, sizeof buf, 0);
        (void)n;
        n = send(c, f->greeting, strlen(f->greeting), MSG_NOSIGNAL);
        (void)n;
        while (recv(c, buf, sizeof buf, 0) > 0)
            ;
        close(c);
    }
    return NULL;
}

static void fake_listen(fake_server *f)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    f->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(f->listen_fd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(f->listen_fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(f->listen_fd, 8), 0);
    assert_int_equal(getsockname(f->listen_fd, (struct sockaddr *)&a, &len), 0);
    f->port = ntohs(a.sin_port);
}

static void test_not_redis(void **state)
{
    fake_server f;
    dlock_backend *b = NULL;
    char url[64];
    (void)state;
    fake_listen(&f);
    f.greeting = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    assert_int_equal(pthread_create(&f.thread, NULL, fake_run, &f), 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    assert_int_equal(open_backend(&b, url), DLOCK_EPROTO);
    assert_null(b);
    assert_non_null(strstr(errbuf, "protocol"));
    pthread_join(f.thread, NULL);
    close(f.listen_fd);
}

/* A server that accepts (the kernel's backlog does) but never answers. */
static void test_silent_server_times_out(void **state)
{
    fake_server f;
    dlock_backend *b = NULL;
    dlock_redis_options o = fast_options();
    char url[64];
    int64_t t0;
    int rc;
    (void)state;
    fake_listen(&f);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", f.port);
    o.connect_timeout_ms = 300; /* the handshake counts as connecting */
    o.command_timeout_ms = 200;
    t0 = dlock_test_now_ms();
    rc = dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf);
    assert_int_equal(rc, DLOCK_ETIMEDOUT);
    assert_true(dlock_test_now_ms() - t0 < 1500);
    assert_null(b);
    close(f.listen_fd);
}

static void test_wrong_password(void **state)
{
    const char *args[] = {"--requirepass", "p@ss:w/rd" SECRET, NULL};
    dlock_test_redis *r = NULL;
    dlock_backend *b = NULL;
    dlock_reply *reply = NULL;
    char url[256];
    int port;
    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    port = dlock_test_redis_port(r);

    snprintf(url, sizeof url, "redis://:wrong" SECRET "@127.0.0.1:%d", port);
    assert_int_equal(open_backend(&b, url), DLOCK_EAUTH);
    assert_null(b);
    assert_null(strstr(errbuf, SECRET));
    assert_non_null(strstr(errbuf, "auth"));

    /* No password at all: NOAUTH. */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    assert_int_equal(open_backend(&b, url), DLOCK_EAUTH);
    assert_non_null(strstr(errbuf, "NOAUTH"));

    /* Percent-encoded special characters. */
    snprintf(url, sizeof url,
             "redis://:p%%40ss%%3aw%%2Frd" SECRET "@127.0.0.1:%d/1", port);
    assert_int_equal(open_backend(&b, url), 0);
    assert_int_equal(eval1(b, &reply, &s_basic, "pw:key", "v"), 0);
    assert_int_equal(reply->type, DLOCK_REPLY_ARRAY);
    dlock_reply_free(reply);
    dlock_backend_free(b);
    dlock_test_redis_stop(r);
}

static void test_acl_user(void **state)
{
    const char *args[] = {"--user", "alice", "on", ">pw" SECRET, "~*", "&*",
                          "+@all", NULL};
    dlock_test_redis *r = NULL;
    dlock_backend *b = NULL;
    dlock_reply *reply = NULL;
    char url[256];
    int port;
    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    port = dlock_test_redis_port(r);

    snprintf(url, sizeof url, "redis://alice:pw" SECRET "@127.0.0.1:%d", port);
    assert_int_equal(open_backend(&b, url), 0);
    assert_int_equal(eval1(b, &reply, &s_incr, "acl:counter", NULL), 0);
    assert_int_equal(reply->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(reply->integer, 1);
    dlock_reply_free(reply);
    dlock_backend_free(b);

    snprintf(url, sizeof url, "redis://alice:bad" SECRET "@127.0.0.1:%d", port);
    assert_int_equal(open_backend(&b, url), DLOCK_EAUTH);
    assert_null(strstr(errbuf, SECRET));
    snprintf(url, sizeof url, "redis://bob:pw" SECRET "@127.0.0.1:%d", port);
    assert_int_equal(open_backend(&b, url), DLOCK_EAUTH);
    assert_null(strstr(errbuf, SECRET));
    dlock_test_redis_stop(r);
}

/* ---- AUTH and ACL, end to end ------------------------------------------- */

typedef struct auth_waiter {
    dlock_rlock *lock;
    int rc;
    int64_t waited_ms;
} auth_waiter;

static void *auth_waiter_run(void *arg)
{
    auth_waiter *w = arg;
    int64_t t0 = dlock_test_now_ms();
    w->rc = dlock_try_lock(w->lock, 10000, 30000);
    w->waited_ms = dlock_test_now_ms() - t0;
    if (w->rc == 0)
        w->rc = dlock_unlock(w->lock);
    return NULL;
}

/* No credentials and wrong ones fail with DLOCK_EAUTH and a message free
 * of the password; the right ones lock and unlock, and a waiter on a
 * second client is woken by the unlock's message on the authenticated
 * subscriber connection (far sooner than the 30 s lease would end). */
static void auth_end_to_end(const char *good_url, const char *const *bad_urls,
                            const char *password)
{
    dlock_client *c1 = NULL, *c2 = NULL;
    dlock_rlock *l1 = NULL, *l2 = NULL;
    auth_waiter w;
    pthread_t t;
    char err[512];
    size_t i;

    for (i = 0; bad_urls[i]; i++) {
        dlock_client *c = (dlock_client *)1;
        err[0] = '\0';
        assert_int_equal(dlock_client_connect(&c, bad_urls[i], NULL, err,
                                              sizeof err), DLOCK_EAUTH);
        assert_null(c);
        assert_true(strlen(err) > 0);
        assert_null(strstr(err, password));
        assert_null(strstr(err, SECRET));
    }
    assert_int_equal(dlock_client_connect(&c1, good_url, NULL, err, sizeof err), 0);
    assert_int_equal(dlock_client_connect(&c2, good_url, NULL, err, sizeof err), 0);
    assert_int_equal(dlock_reentrant_new(&l1, c1, "auth:lock"), 0);
    assert_int_equal(dlock_reentrant_new(&l2, c2, "auth:lock"), 0);
    assert_int_equal(dlock_try_lock(l1, 0, 30000), 0);
    memset(&w, 0, sizeof w);
    w.lock = l2;
    assert_int_equal(pthread_create(&t, NULL, auth_waiter_run, &w), 0);
    dlock_test_sleep_ms(300); /* the waiter subscribes and blocks */
    assert_int_equal(dlock_unlock(l1), 0);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 0);
    assert_true(w.waited_ms >= 250 && w.waited_ms < 5000);
    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
    dlock_client_free(c1);
    dlock_client_free(c2);
}

/* Writes text to a fresh file under /tmp; its path into path. */
static void write_file(char *path, size_t len, const char *text)
{
    FILE *f;
    int fd;

    snprintf(path, len, "/tmp/dlock-pwfile-XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    assert_int_equal(fputs(text, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
}

/* password_file=PATH (api/dlock/redis.h, issue 28 section 7): the
 * password read from a file, a final newline dropped, an ACL user beside
 * it; every refusal says why without the path or the file's text. */
static void test_password_file(void **state)
{
    const char *args[] = {"--requirepass", "pw" SECRET, NULL};
    dlock_test_redis *r = NULL;
    dlock_backend *b = NULL;
    dlock_reply *reply = NULL;
    char url[512], good[64], crlf[64], empty[64], lines[64], nul[64];
    int port, i;
    static const struct {
        const char *file_kind; /* which file, or the case */
        const char *want;      /* in errbuf */
    } bad[] = {
        {"both", "a password in the user information and password_file"},
        {"missing", "cannot read its password_file (No such file or directory)"},
        {"dir", "cannot read its password_file (not a regular file)"},
        {"empty", "its password_file is empty"},
        {"lines", "holds more than one line"},
        {"wrong", "auth"},
    };
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    port = dlock_test_redis_port(r);
    write_file(good, sizeof good, "pw" SECRET "\n");
    write_file(crlf, sizeof crlf, "pw" SECRET "\r\n");
    write_file(empty, sizeof empty, "\n");
    write_file(lines, sizeof lines, "pw" SECRET "\nmore" SECRET "\n");
    write_file(nul, sizeof nul, "bad" SECRET);

    /* plain, CRLF, an ACL user with an empty password in the URL, the
     * path percent-encoded */
    for (i = 0; i < 3; i++) {
        snprintf(url, sizeof url, i == 2 ? "redis://default:@127.0.0.1:%d?password_file=%s"
                                         : "redis://127.0.0.1:%d/1?password_file=%s",
                 port, i == 1 ? crlf : good);
        if (open_backend(&b, url) != 0)
            fail_msg("%s: %s", url, errbuf);
        assert_int_equal(eval1(b, &reply, &s_basic, "pwfile:key", "v"), 0);
        dlock_reply_free(reply);
        dlock_backend_free(b);
        b = NULL;
    }
    for (i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        const char *k = bad[i].file_kind;
        const char *path = strcmp(k, "both") == 0    ? good
                           : strcmp(k, "missing") == 0 ? "/tmp/dlock-no-such-pwfile"
                           : strcmp(k, "dir") == 0     ? "/tmp"
                           : strcmp(k, "empty") == 0   ? empty
                           : strcmp(k, "lines") == 0   ? lines
                                                       : nul;
        snprintf(url, sizeof url, strcmp(k, "both") == 0
                                      ? "redis://:pw" SECRET "@127.0.0.1:%d?password_file=%s"
                                      : "redis://127.0.0.1:%d?password_file=%s",
                 port, path);
        assert_int_equal(open_backend(&b, url),
                         strcmp(k, "wrong") == 0 ? DLOCK_EAUTH : DLOCK_EINVAL);
        assert_null(b);
        if (!strstr(errbuf, bad[i].want))
            fail_msg("%s: '%s' lacks '%s'", k, errbuf, bad[i].want);
        assert_null(strstr(errbuf, SECRET));
        assert_null(strstr(errbuf, "dlock-"));
    }
    /* the JSON configuration's url takes it too */
    {
        char json[600], err[256];
        dlock_client *c = NULL;
        snprintf(json, sizeof json, "{\"url\": \"redis://127.0.0.1:%d?password_file=%s\"}",
                 port, good);
        if (dlock_client_from_json_string(&c, json, err, sizeof err) != 0)
            fail_msg("json: %s", err);
        dlock_client_free(c);
    }
    unlink(good);
    unlink(crlf);
    unlink(empty);
    unlink(lines);
    unlink(nul);
    dlock_test_redis_stop(r);
}

static void test_auth_requirepass_end_to_end(void **state)
{
    const char *args[] = {"--requirepass", "pw" SECRET, NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char good[128], none[128], wrong[128], user[128], out[64];
    const char *bad[4];
    int rc;
    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    snprintf(good, sizeof good, "redis://:pw" SECRET "@127.0.0.1:%d",
             dlock_test_redis_port(r));
    snprintf(none, sizeof none, "redis://127.0.0.1:%d", dlock_test_redis_port(r));
    snprintf(wrong, sizeof wrong, "redis://:bad" SECRET "@127.0.0.1:%d",
             dlock_test_redis_port(r));
    snprintf(user, sizeof user, "redis://default:bad" SECRET "@127.0.0.1:%d",
             dlock_test_redis_port(r));
    bad[0] = none;
    bad[1] = wrong;
    bad[2] = user;
    bad[3] = NULL;
    auth_end_to_end(good, bad, "pw" SECRET);

    /* The password changes under a running client: its reconnections fail,
     * and neither the code's detail nor the lock's errmsg shows a password. */
    assert_int_equal(dlock_client_connect(&c, good, NULL, NULL, 0), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "auth:changed"), 0);
    {
        const char *set[] = {"CONFIG", "SET", "requirepass", "new" SECRET, NULL};
        const char *kill[] = {"CLIENT", "KILL", "TYPE", "normal", NULL};
        /* Kill first: the harness still authenticates with the old
         * password, and the pool's connections must be gone before the
         * change so that the next call reconnects. */
        assert_int_equal(dlock_test_redis_command(r, out, sizeof out, kill), 0);
        assert_int_equal(dlock_test_redis_command(r, out, sizeof out, set), 0);
        assert_string_equal(out, "OK");
    }
    rc = dlock_try_lock(l, 0, 1000);
    if (rc == DLOCK_ECONN) /* the kill was seen first; the retry re-AUTHs */
        rc = dlock_try_lock(l, 0, 1000);
    if (rc != DLOCK_EAUTH && rc != DLOCK_ECONN)
        fprintf(stderr, "after the password change: %s '%s'\n",
                dlock_errname(rc), dlock_errmsg(l));
    assert_true(rc == DLOCK_EAUTH || rc == DLOCK_ECONN);
    assert_true(strlen(dlock_errmsg(l)) > 0);
    assert_null(strstr(dlock_errmsg(l), SECRET));
    dlock_rlock_free(l);
    dlock_client_free(c);
    dlock_test_redis_stop(r);
}

static void test_auth_acl_end_to_end(void **state)
{
    const char *args[] = {"--user", "alice", "on", ">pw" SECRET, "~*", "&*",
                          "+@all", "--user", "default", "off", NULL};
    dlock_test_redis *r = NULL;
    char good[128], none[128], wrong[128], nouser[128], pwonly[128];
    const char *bad[5];
    int port;
    (void)state;
    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    port = dlock_test_redis_port(r);
    snprintf(good, sizeof good, "redis://alice:pw" SECRET "@127.0.0.1:%d", port);
    snprintf(none, sizeof none, "redis://127.0.0.1:%d", port);
    snprintf(wrong, sizeof wrong, "redis://alice:bad" SECRET "@127.0.0.1:%d", port);
    snprintf(nouser, sizeof nouser, "redis://bob:pw" SECRET "@127.0.0.1:%d", port);
    /* The right password without the user: AUTH as "default", who is off. */
    snprintf(pwonly, sizeof pwonly, "redis://:pw" SECRET "@127.0.0.1:%d", port);
    bad[0] = none;
    bad[1] = wrong;
    bad[2] = nouser;
    bad[3] = pwonly;
    bad[4] = NULL;
    auth_end_to_end(good, bad, "pw" SECRET);
    dlock_test_redis_stop(r);
}

static void test_select_db(void **state)
{
    dlock_backend *b3 = NULL, *b0 = NULL, *bu = NULL;
    dlock_reply *r = NULL;
    char url[256];
    (void)state;
    snprintf(url, sizeof url, "%s/3", dlock_test_redis_url(srv));
    assert_int_equal(open_backend(&b3, url), 0);
    assert_int_equal(open_backend(&b0, dlock_test_redis_url(srv)), 0);
    assert_int_equal(eval1(b3, &r, &s_basic, "db:key", "three"), 0);
    dlock_reply_free(r);
    assert_int_equal(eval1(b0, &r, &s_get, "db:key", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_NIL);
    dlock_reply_free(r);

    /* The same database over the unix socket. */
    snprintf(url, sizeof url, "unix://%s?db=3", dlock_test_redis_socket(srv));
    assert_int_equal(open_backend(&bu, url), 0);
    assert_int_equal(eval1(bu, &r, &s_get, "db:key", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_BULK);
    assert_string_equal(r->str, "three");
    dlock_reply_free(r);
    dlock_backend_free(bu);
    dlock_backend_free(b3);
    dlock_backend_free(b0);

    snprintf(url, sizeof url, "%s/999", dlock_test_redis_url(srv));
    assert_int_equal(open_backend(&b3, url), DLOCK_EPROTO);
    assert_non_null(strstr(errbuf, "SELECT"));
}

/* ---- scripts ----------------------------------------------------------- */

static void test_eval_basic(void **state)
{
    dlock_backend *b = NULL;
    dlock_reply *r = NULL;
    (void)state;
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(eval1(b, &r, &s_basic, "basic:key", "value"), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ARRAY);
    assert_int_equal(r->n, 3);
    assert_int_equal(r->elems[0]->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(r->elems[0]->integer, 1);
    assert_int_equal(r->elems[1]->type, DLOCK_REPLY_BULK);
    assert_string_equal(r->elems[1]->str, "a");
    assert_int_equal(r->elems[1]->len, 1);
    assert_int_equal(r->elems[2]->type, DLOCK_REPLY_STATUS);
    assert_string_equal(r->elems[2]->str, "OK");
    dlock_reply_free(r);
    /* Second call: the cached SHA1 path. */
    assert_int_equal(eval1(b, &r, &s_get, "basic:key", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_BULK);
    assert_string_equal(r->str, "value");
    dlock_reply_free(r);
    dlock_backend_free(b);
}

static void test_reply_types(void **state)
{
    dlock_backend *b = NULL;
    dlock_reply *r = NULL, *e;
    const char *argv[1];
    size_t len[1];
    char bin[5] = {'a', '\0', 'b', '\r', '\n'};
    (void)state;
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);

    assert_int_equal(eval1(b, &r, &s_types, NULL, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ARRAY);
    assert_int_equal(r->n, 6);
    assert_int_equal(r->elems[0]->type, DLOCK_REPLY_NIL);
    assert_int_equal(r->elems[1]->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(r->elems[1]->integer, -42);
    assert_int_equal(r->elems[2]->type, DLOCK_REPLY_STATUS);
    assert_string_equal(r->elems[2]->str, "FINE");
    assert_int_equal(r->elems[3]->type, DLOCK_REPLY_ERROR);
    assert_string_equal(r->elems[3]->str, "MYERR boom");
    assert_int_equal(r->elems[4]->type, DLOCK_REPLY_ARRAY);
    assert_int_equal(r->elems[4]->n, 0);
    e = r->elems[5];
    assert_int_equal(e->type, DLOCK_REPLY_ARRAY);
    assert_int_equal(e->elems[1]->elems[1]->elems[0]->integer, 3);
    dlock_reply_free(r);

    assert_int_equal(eval1(b, &r, &s_nil, NULL, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_NIL);
    dlock_reply_free(r);

    /* Binary-safe arguments through argvlen. */
    argv[0] = bin;
    len[0] = sizeof bin;
    assert_int_equal(dlock_backend_eval(b, &r, &s_echo, 0, 1, argv, len,
                                        errbuf, sizeof errbuf), 0);
    assert_int_equal(r->type, DLOCK_REPLY_BULK);
    assert_int_equal(r->len, sizeof bin);
    assert_memory_equal(r->str, bin, sizeof bin);
    assert_int_equal(r->str[r->len], '\0');
    dlock_reply_free(r);

    /* Many arguments (beyond the small inline vector). */
    {
        const char *many[40];
        int i;
        for (i = 0; i < 40; i++)
            many[i] = "x";
        assert_int_equal(dlock_backend_eval(b, &r, &s_echo, 20, 20, many, NULL,
                                            errbuf, sizeof errbuf), 0);
        assert_string_equal(r->str, "x");
        dlock_reply_free(r);
    }
    dlock_backend_free(b);
}

static void test_noscript_reload(void **state)
{
    dlock_backend *b = NULL;
    dlock_reply *r = NULL;
    char out[256];
    (void)state;
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(eval1(b, &r, &s_incr, "noscript:n", NULL), 0);
    assert_int_equal(r->integer, 1);
    dlock_reply_free(r);
    server_cmd(srv, out, sizeof out, "SCRIPT", "FLUSH", NULL, NULL);
    assert_string_equal(out, "OK");
    /* EVALSHA gets NOSCRIPT; the backend loads and runs it once. */
    assert_int_equal(eval1(b, &r, &s_incr, "noscript:n", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(r->integer, 2);
    dlock_reply_free(r);
    assert_int_equal(eval1(b, &r, &s_incr, "noscript:n", NULL), 0);
    assert_int_equal(r->integer, 3);
    dlock_reply_free(r);
    dlock_backend_free(b);
}

static void test_script_errors(void **state)
{
    dlock_backend *b = NULL;
    dlock_reply *r = NULL;
    const char *argv[1] = {NULL};
    (void)state;
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(eval1(b, &r, &s_wrongtype, "wrongtype:key", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    assert_non_null(strstr(r->str, "WRONGTYPE"));
    dlock_reply_free(r);

    assert_int_equal(eval1(b, &r, &s_syntax, NULL, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    dlock_reply_free(r);

    /* The connection is still good. */
    assert_int_equal(eval1(b, &r, &s_get, "wrongtype:key", NULL), 0);
    assert_string_equal(r->str, "x");
    dlock_reply_free(r);

    r = (dlock_reply *)1;
    assert_int_equal(dlock_backend_eval(b, &r, NULL, 0, 0, NULL, NULL, errbuf,
                                        sizeof errbuf), DLOCK_EINVAL);
    assert_null(r);
    assert_int_equal(dlock_backend_eval(b, &r, &s_get, 1, 0, NULL, NULL, errbuf,
                                        sizeof errbuf), DLOCK_EINVAL);
    assert_int_equal(dlock_backend_eval(b, &r, &s_get, 1, 0, argv, NULL, errbuf,
                                        sizeof errbuf), DLOCK_EINVAL);
    assert_non_null(strstr(errbuf, "NULL"));
    dlock_backend_free(b);
}

/* A connection the server dropped while idle in the pool is replaced, not
 * handed to a caller. */
static void test_idle_connection_killed(void **state)
{
    dlock_backend *b = NULL;
    dlock_reply *r = NULL;
    char out[64];
    int i;
    (void)state;
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(eval1(b, &r, &s_incr, "killed:n", NULL), 0);
    dlock_reply_free(r);
    server_cmd(srv, out, sizeof out, "CLIENT", "KILL", "TYPE", "normal");
    for (i = 0; i < 3; i++) {
        assert_int_equal(eval1(b, &r, &s_incr, "killed:n", NULL), 0);
        dlock_reply_free(r);
    }
    dlock_backend_free(b);
}

/* No reply within the command timeout: DLOCK_ETIMEDOUT on time, and the
 * connection (whose reply is still due) is not reused: the server is
 * stalled for 500 ms (SIGSTOP: the same on every server) with the
 * connection and its script in place, so that what times out is the call. */
static void test_command_timeout(void **state)
{
    dlock_backend *b = NULL;
    dlock_redis_options o = fast_options();
    dlock_reply *r = NULL;
    dlock_test_stall *stall = NULL;
    int64_t t0, took;
    int rc;
    (void)state;
    o.command_timeout_ms = 150;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             errbuf, sizeof errbuf), 0);
    assert_int_equal(eval1(b, &r, &s_incr, "timeout:n", NULL), 0);
    dlock_reply_free(r);
    r = NULL;
    assert_int_equal(dlock_test_redis_stall(&stall, srv, 500), 0);
    t0 = dlock_test_now_ms();
    rc = eval1(b, &r, &s_echo, NULL, "stale");
    took = dlock_test_now_ms() - t0;
    assert_int_equal(rc, DLOCK_ETIMEDOUT);
    assert_null(r);
    assert_non_null(strstr(errbuf, "150 ms"));
    assert_true(took >= 140 && took < 450);
    /* The server answers again, "stale" first on the old connection. */
    assert_int_equal(dlock_test_stall_join(stall), 0);
    assert_int_equal(eval1(b, &r, &s_incr, "timeout:n", NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(r->integer, 2);
    dlock_reply_free(r);
    dlock_backend_free(b);
}

typedef struct slow_call {
    dlock_backend *b;
    int rc;
    char value[16];
} slow_call;

/* A call the stalled server answers late, holding its connection. */
static void *slow_run(void *arg)
{
    slow_call *c = arg;
    const char *argv[1] = {"late"};
    dlock_reply *r = NULL;
    c->rc = dlock_backend_eval(c->b, &r, &s_echo, 0, 1, argv, NULL, NULL, 0);
    if (c->rc == 0 && r->type == DLOCK_REPLY_BULK)
        snprintf(c->value, sizeof c->value, "%s", r->str);
    dlock_reply_free(r);
    return NULL;
}

/* Every connection lent out: a caller waits, within the connect timeout.
 * The pool's one connection is made, then lent to a call that the server
 * (stalled for 400 ms) answers late. */
static void test_pool_wait_timeout(void **state)
{
    dlock_backend *b = NULL;
    dlock_redis_options o = fast_options();
    dlock_reply *r = NULL;
    dlock_test_stall *stall = NULL;
    slow_call c;
    pthread_t t;
    int64_t t0, took;
    int rc;
    (void)state;
    o.multiplex = 0; /* the pool's own wait */
    o.pool_size = 1;
    o.connect_timeout_ms = 100;
    o.command_timeout_ms = 3000;
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             errbuf, sizeof errbuf), 0);
    assert_int_equal(eval1(b, &r, &s_get, "pool:key", NULL), 0);
    dlock_reply_free(r);
    r = NULL;
    memset(&c, 0, sizeof c);
    c.b = b;
    c.rc = 1;
    assert_int_equal(dlock_test_redis_stall(&stall, srv, 400), 0);
    assert_int_equal(pthread_create(&t, NULL, slow_run, &c), 0);
    dlock_test_sleep_ms(100);
    t0 = dlock_test_now_ms();
    rc = eval1(b, &r, &s_get, "pool:key", NULL);
    took = dlock_test_now_ms() - t0;
    assert_int_equal(rc, DLOCK_ETIMEDOUT);
    assert_non_null(strstr(errbuf, "busy"));
    assert_true(took >= 90 && took < 290);
    pthread_join(t, NULL);
    assert_int_equal(dlock_test_stall_join(stall), 0);
    assert_int_equal(c.rc, 0);
    assert_string_equal(c.value, "late");
    /* The connection came back to the pool. */
    assert_int_equal(eval1(b, &r, &s_get, "pool:key", NULL), 0);
    dlock_reply_free(r);
    dlock_backend_free(b);
}

typedef struct worker {
    dlock_backend *b;
    int ok, failed, last_rc;
    char detail[256];
} worker;

static void *worker_run(void *arg)
{
    static const char *argv[1] = {"concurrency:n"};
    worker *w = arg;
    int i;
    for (i = 0; i < 500; i++) {
        dlock_reply *r = NULL;
        int rc = dlock_backend_eval(w->b, &r, &s_incr, 1, 0, argv, NULL,
                                    w->detail, sizeof w->detail);
        if (rc == 0 && r->type == DLOCK_REPLY_INTEGER) {
            w->ok++;
        } else {
            w->failed++;
            w->last_rc = rc;
        }
        dlock_reply_free(r);
    }
    return NULL;
}

static void run_workers(int pool_size)
{
    dlock_backend *b = NULL;
    dlock_redis_options o = fast_options();
    worker w[8];
    pthread_t t[8];
    dlock_reply *r = NULL;
    char out[64];
    int i;
    o.pool_size = pool_size;
    o.connect_timeout_ms = 5000; /* sanitizers slow everything down */
    o.command_timeout_ms = 5000;
    server_cmd(srv, out, sizeof out, "DEL", "concurrency:n", NULL, NULL);
    assert_int_equal(dlock_redis_backend_new(&b, dlock_test_redis_url(srv), &o,
                                             errbuf, sizeof errbuf), 0);
    for (i = 0; i < 8; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].b = b;
        assert_int_equal(pthread_create(&t[i], NULL, worker_run, &w[i]), 0);
    }
    for (i = 0; i < 8; i++)
        pthread_join(t[i], NULL);
    for (i = 0; i < 8; i++) {
        if (w[i].failed)
            fprintf(stderr, "worker %d: %d failed, last %d '%s'\n", i,
                    w[i].failed, w[i].last_rc, w[i].detail);
        assert_int_equal(w[i].ok, 500);
    }
    assert_int_equal(eval1(b, &r, &s_get, "concurrency:n", NULL), 0);
    assert_string_equal(r->str, "4000");
    dlock_reply_free(r);
    dlock_backend_free(b);
}

static void test_concurrency_pool4(void **state)
{
    (void)state;
    run_workers(4);
}

static void test_concurrency_pool1(void **state)
{
    (void)state;
    run_workers(1);
}

/* ---- pub/sub ----------------------------------------------------------- */

static void test_pubsub_basic(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL;
    inbox in;
    (void)state;
    inbox_init(&in);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:basic", on_message,
                                             &in), 0);
    assert_non_null(sub);
    /* subscribe returned, so the server already counts the subscriber. */
    assert_int_equal(publish(b, "ps:basic", "hello"), 1);
    assert_int_equal(inbox_wait(&in, 1, 0, 2000), 1);
    assert_string_equal(in.channel, "ps:basic");
    assert_string_equal(in.last, "hello");
    dlock_backend_unsubscribe(b, sub);
    dlock_backend_unsubscribe(b, NULL);
    dlock_backend_free(b);
    inbox_destroy(&in);
}

static void test_pubsub_bad_args(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *sub = (dlock_subscription *)1;
    inbox in;
    (void)state;
    inbox_init(&in);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, NULL, on_message, &in),
                     DLOCK_EINVAL);
    assert_null(sub);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "", on_message, &in),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "x", NULL, &in),
                     DLOCK_EINVAL);
    dlock_backend_free(b);
    inbox_destroy(&in);
}

static void test_pubsub_refcount(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *s1 = NULL, *s2 = NULL;
    inbox a, c;
    int i;
    (void)state;
    inbox_init(&a);
    inbox_init(&c);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(dlock_backend_subscribe(b, &s1, "ps:ref", on_message, &a),
                     0);
    assert_int_equal(dlock_backend_subscribe(b, &s2, "ps:ref", on_message, &c),
                     0);
    /* One server subscription for two listeners. */
    assert_int_equal(numsub(srv, "ps:ref"), 1);
    assert_int_equal(publish(b, "ps:ref", "one"), 1);
    assert_int_equal(inbox_wait(&a, 1, 0, 2000), 1);
    assert_int_equal(inbox_wait(&c, 1, 0, 2000), 1);

    dlock_backend_unsubscribe(b, s1);
    assert_int_equal(numsub(srv, "ps:ref"), 1);
    assert_int_equal(publish(b, "ps:ref", "two"), 1);
    assert_int_equal(inbox_wait(&c, 2, 0, 2000), 2);
    assert_string_equal(c.last, "two");
    assert_int_equal(inbox_count(&a), 1);

    dlock_backend_unsubscribe(b, s2);
    /* UNSUBSCRIBE is not waited for; the server catches up quickly. */
    for (i = 0; i < 200 && numsub(srv, "ps:ref") != 0; i++)
        dlock_test_sleep_ms(5);
    assert_int_equal(numsub(srv, "ps:ref"), 0);
    dlock_backend_free(b);
    inbox_destroy(&a);
    inbox_destroy(&c);
}

/* Unsubscribe, subscribe again at once, many times: each subscribe is
 * confirmed by its own acknowledgement, so the message right after is
 * never missed. */
static void test_pubsub_flapping(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL;
    inbox in;
    int i;
    (void)state;
    inbox_init(&in);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    for (i = 0; i < 50; i++) {
        assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:flap",
                                                 on_message, &in), 0);
        assert_int_equal(publish(b, "ps:flap", "m"), 1);
        assert_int_equal(inbox_wait(&in, i + 1, 0, 2000), i + 1);
        dlock_backend_unsubscribe(b, sub);
    }
    dlock_backend_free(b);
    inbox_destroy(&in);
}

static void test_pubsub_many_channels(void **state)
{
    enum { N = 300 };
    dlock_backend *b = NULL;
    dlock_subscription **subs = calloc(N, sizeof *subs);
    inbox in;
    char name[64];
    int i;
    (void)state;
    assert_non_null(subs);
    inbox_init(&in);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    for (i = 0; i < N; i++) {
        snprintf(name, sizeof name, "ps:many:%d", i);
        assert_int_equal(dlock_backend_subscribe(b, &subs[i], name, on_message,
                                                 &in), 0);
    }
    for (i = 0; i < N; i++) {
        snprintf(name, sizeof name, "ps:many:%d", i);
        assert_int_equal(publish(b, name, "x"), 1);
    }
    assert_int_equal(inbox_wait(&in, N, 0, 5000), N);
    for (i = 0; i < N; i++)
        dlock_backend_unsubscribe(b, subs[i]);
    dlock_backend_free(b);
    inbox_destroy(&in);
    free(subs);
}

typedef struct publisher {
    dlock_backend *b;
    const char *channel;
    int stop; /* under mu */
    pthread_mutex_t mu;
} publisher;

static void *publisher_run(void *arg)
{
    publisher *p = arg;
    for (;;) {
        const char *argv[2] = {p->channel, "tick"};
        dlock_reply *r = NULL;
        int stop;
        pthread_mutex_lock(&p->mu);
        stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        if (dlock_backend_eval(p->b, &r, &s_publish, 1, 1, argv, NULL, NULL,
                               0) == 0)
            dlock_reply_free(r);
    }
    return NULL;
}

/* When unsubscribe returns, the callback is not running and never runs
 * again for that listener, even with messages streaming in. */
static void test_pubsub_unsubscribe_quiesces(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL, *keep = NULL;
    publisher p;
    pthread_t t;
    inbox in, other;
    int round;
    (void)state;
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    inbox_init(&other);
    assert_int_equal(dlock_backend_subscribe(b, &keep, "ps:quiesce",
                                             on_message, &other), 0);
    memset(&p, 0, sizeof p);
    p.b = b;
    p.channel = "ps:quiesce";
    pthread_mutex_init(&p.mu, NULL);
    assert_int_equal(pthread_create(&t, NULL, publisher_run, &p), 0);
    for (round = 0; round < 10; round++) {
        int running, before;
        inbox_init(&in);
        in.slow = 1;
        assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:quiesce",
                                                 on_message, &in), 0);
        assert_true(inbox_wait(&in, 2, 0, 2000) >= 2);
        dlock_backend_unsubscribe(b, sub);
        pthread_mutex_lock(&in.mu);
        running = in.running;
        before = in.count;
        pthread_mutex_unlock(&in.mu);
        assert_int_equal(running, 0);
        dlock_test_sleep_ms(20);
        assert_int_equal(inbox_count(&in), before);
        inbox_destroy(&in);
    }
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_mutex_unlock(&p.mu);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&p.mu);
    dlock_backend_unsubscribe(b, keep);
    dlock_backend_free(b);
    inbox_destroy(&other);
}

typedef struct reentrant_cb {
    dlock_backend *b;
    dlock_subscription *self;
    pthread_mutex_t mu;
    int calls, sub_rc, done;
} reentrant_cb;

/* Calls back into the backend, which the contract forbids: it must not
 * deadlock or crash. Subscribing to a new channel from the delivery thread
 * could only deadlock; removing itself is tolerated. */
static void on_message_reentrant(void *arg, const char *channel,
                                 const char *msg, size_t len)
{
    reentrant_cb *r = arg;
    dlock_subscription *other = NULL;
    int rc;
    (void)channel;
    (void)msg;
    (void)len;
    rc = dlock_backend_subscribe(r->b, &other, "ps:reentrant:other",
                                 on_message_reentrant, r);
    if (other)
        dlock_backend_unsubscribe(r->b, other);
    dlock_backend_unsubscribe(r->b, r->self);
    pthread_mutex_lock(&r->mu);
    r->calls++;
    r->sub_rc = rc;
    r->done = 1;
    pthread_mutex_unlock(&r->mu);
}

static void test_pubsub_reentrant_callback(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL;
    reentrant_cb r;
    int i, done = 0;
    (void)state;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    r.b = b;
    assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:reentrant",
                                             on_message_reentrant, &r), 0);
    r.self = sub;
    publish(b, "ps:reentrant", "1");
    for (i = 0; i < 400 && !done; i++) {
        dlock_test_sleep_ms(5);
        pthread_mutex_lock(&r.mu);
        done = r.done;
        pthread_mutex_unlock(&r.mu);
    }
    assert_true(done);
    publish(b, "ps:reentrant", "2");
    dlock_test_sleep_ms(50);
    pthread_mutex_lock(&r.mu);
    assert_int_equal(r.calls, 1);
    assert_int_equal(r.sub_rc, DLOCK_EDEADLK);
    pthread_mutex_unlock(&r.mu);
    dlock_backend_free(b);
    pthread_mutex_destroy(&r.mu);
}

/* The server drops the subscriber connection: the backend reconnects,
 * subscribes again, tells the listener to look again (an empty message),
 * and delivers what is published afterwards. */
static void test_pubsub_restored_after_kill(void **state)
{
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL;
    inbox in;
    char out[64];
    int i;
    (void)state;
    inbox_init(&in);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(srv)), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:restore", on_message,
                                             &in), 0);
    server_cmd(srv, out, sizeof out, "CLIENT", "KILL", "TYPE", "pubsub");
    assert_true(atoi(out) >= 1);
    assert_int_equal(inbox_wait(&in, 1, 1, 3000), 1);
    for (i = 0; i < 100 && numsub(srv, "ps:restore") != 1; i++)
        dlock_test_sleep_ms(5);
    assert_int_equal(publish(b, "ps:restore", "after"), 1);
    assert_int_equal(inbox_wait(&in, 1, 0, 2000), 1);
    assert_string_equal(in.last, "after");
    dlock_backend_unsubscribe(b, sub);
    dlock_backend_free(b);
    inbox_destroy(&in);
}

/* The whole server goes away and comes back on the same port. */
static void test_server_restart(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_backend *b = NULL;
    dlock_subscription *sub = NULL, *sub2 = NULL;
    dlock_reply *reply = NULL;
    inbox in, in2;
    int64_t t0;
    int rc, i;
    (void)state;
    inbox_init(&in);
    inbox_init(&in2);
    assert_int_equal(dlock_test_redis_start(&r, NULL), 0);
    assert_int_equal(open_backend(&b, dlock_test_redis_url(r)), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "ps:restart", on_message,
                                             &in), 0);
    assert_int_equal(eval1(b, &reply, &s_incr, "restart:n", NULL), 0);
    dlock_reply_free(reply);

    assert_int_equal(dlock_test_redis_kill(r), 0);
    /* Down: calls fail fast with ECONN, never hang. */
    t0 = dlock_test_now_ms();
    for (i = 0; i < 5; i++) {
        rc = eval1(b, &reply, &s_incr, "restart:n", NULL);
        assert_int_equal(rc, DLOCK_ECONN);
        assert_null(reply);
    }
    assert_true(dlock_test_now_ms() - t0 < 2000);
    /* Back-off: the detail says so. */
    for (i = 0; i < 20; i++) {
        rc = eval1(b, &reply, &s_incr, "restart:n", NULL);
        assert_int_equal(rc, DLOCK_ECONN);
        if (strstr(errbuf, "connection down"))
            break;
    }
    assert_non_null(strstr(errbuf, "connection down"));
    /* A new subscription cannot be confirmed while the server is down. */
    dlock_test_sleep_ms(50);
    t0 = dlock_test_now_ms();
    rc = dlock_backend_subscribe(b, &sub2, "ps:restart2", on_message, &in2);
    assert_true(rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT);
    assert_null(sub2);
    assert_true(dlock_test_now_ms() - t0 < 2500);

    assert_int_equal(dlock_test_redis_restart(r), 0);
    /* Back within a back-off step or two (max 200 ms). */
    t0 = dlock_test_now_ms();
    do {
        rc = eval1(b, &reply, &s_incr, "restart:n", NULL);
        if (rc != 0)
            dlock_test_sleep_ms(20);
    } while (rc != 0 && dlock_test_now_ms() - t0 < 3000);
    assert_int_equal(rc, 0);
    assert_int_equal(reply->integer, 1); /* no persistence: a new server */
    dlock_reply_free(reply);

    /* The subscription came back on its own, with a "look again". */
    assert_true(inbox_wait(&in, 1, 1, 3000) >= 1);
    for (i = 0; i < 100 && numsub(r, "ps:restart") != 1; i++)
        dlock_test_sleep_ms(5);
    assert_int_equal(publish(b, "ps:restart", "back"), 1);
    assert_int_equal(inbox_wait(&in, 1, 0, 2000), 1);
    assert_string_equal(in.last, "back");

    dlock_backend_unsubscribe(b, sub);
    dlock_backend_free(b);
    dlock_test_redis_stop(r);
    inbox_destroy(&in);
    inbox_destroy(&in2);
}

/* ---- the group --------------------------------------------------------- */

int dlock_test_redis_backend(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_bad),
        cmocka_unit_test(test_url_good),
        cmocka_unit_test(test_options),
        cmocka_unit_test(test_no_timeouts),
        cmocka_unit_test(test_closed_port),
        cmocka_unit_test(test_self_connect_told_apart),
        cmocka_unit_test(test_not_redis),
        cmocka_unit_test(test_silent_server_times_out),
        cmocka_unit_test(test_wrong_password),
        cmocka_unit_test(test_password_file),
        cmocka_unit_test(test_acl_user),
        cmocka_unit_test(test_auth_requirepass_end_to_end),
        cmocka_unit_test(test_auth_acl_end_to_end),
        cmocka_unit_test(test_select_db),
        cmocka_unit_test(test_eval_basic),
        cmocka_unit_test(test_reply_types),
        cmocka_unit_test(test_noscript_reload),
        cmocka_unit_test(test_script_errors),
        cmocka_unit_test(test_idle_connection_killed),
        cmocka_unit_test(test_command_timeout),
        cmocka_unit_test(test_pool_wait_timeout),
        cmocka_unit_test(test_concurrency_pool4),
        cmocka_unit_test(test_concurrency_pool1),
        cmocka_unit_test(test_pubsub_basic),
        cmocka_unit_test(test_pubsub_bad_args),
        cmocka_unit_test(test_pubsub_refcount),
        cmocka_unit_test(test_pubsub_flapping),
        cmocka_unit_test(test_pubsub_many_channels),
        cmocka_unit_test(test_pubsub_unsubscribe_quiesces),
        cmocka_unit_test(test_pubsub_reentrant_callback),
        cmocka_unit_test(test_pubsub_restored_after_kill),
        cmocka_unit_test(test_server_restart),
    };
    return DLOCK_RUN_REDIS_GROUP("redis_backend", tests, &srv);
}
