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
 * Then (issue 28 section 5) a scripted server (SCRIPTED below) whose
 * every kind of answer (garbage, huge, trickled byte by byte, stalled,
 * MOVED/ASK sprays, Sentinel answers naming another master, pub/sub
 * messages of every type on the lock's channel) is run against every kind
 * of connection (pooled, multiplexed, the subscriber, Sentinel discovery,
 * the cluster router), checking: no crash, the heap bounded by the cap,
 * every budget kept, no lock reported held that the server did not grant.
 *
 * The fake server's threads only record; assertions run on the test's
 * thread.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <malloc.h>
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
#define TRICKLED_REPLY 32000000LL /* ... when it trickles: under the default cap */
#define MAX_CONNS 256 /* a subscriber made to reconnect opens many */

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
enum { FAST, TRICKLE, CLUSTER, NOISY, SCRIPTED };

/* SCRIPTED (issue 28 section 5): a server that answers each kind of
 * command from its script: the text to send and how to send it. In a
 * text, %C stands for the channel the connection subscribed (as a bulk
 * string), %K for the kind of subscription ("subscribe" or "ssubscribe"),
 * %P for the peer's port and %M for the server's own. */
enum {
    WHOLE,    /* at once */
    BYTEWISE, /* one byte every 2 ms */
    STALL,    /* never: the command is read and not answered */
    FLOOD     /* the text, then a 400 MB bulk string, fast */
};

typedef struct answer {
    const char *text; /* NULL: what Redis would say (below) */
    int how;
} answer;

typedef struct script {
    answer eval;       /* EVAL, EVALSHA; Redis: ":100000" (held, TTL 100 s) */
    answer subscribe;  /* (S)SUBSCRIBE; Redis: the confirmation */
    answer noise;      /* after a confirmation, sent again and again (text
                        * NULL: none) */
    answer sentinel;   /* SENTINEL; "Redis": the peer is the master */
    answer role;       /* ROLE; Redis: a master without replicas */
    answer slots;      /* CLUSTER SLOTS; Redis: every slot here */
} script;

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
    int subscribes;     /* NOISY, SCRIPTED: SUBSCRIBE commands received */
    long long sprayed;  /* NOISY, SCRIPTED: messages sent */
    script sc;          /* SCRIPTED: the answers (set before clients come) */
    int roles;          /* SCRIPTED: ROLE commands received */
} fake_server;

typedef struct conn_arg {
    fake_server *s;
    int fd;
} conn_arg;

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
static char body[65536]; /* all 'x': filled once, before any stream */
static pthread_once_t body_once = PTHREAD_ONCE_INIT;

static void body_fill(void)
{
    memset(body, 'x', sizeof body);
}

static void stream(fake_server *s, int fd, int trickle)
{
    char head[32];
    /* a trickle announces what the default cap (64 MiB) takes, so that
     * only its time can end the call; a flood, more than any cap */
    long long left = trickle ? TRICKLED_REPLY : HUGE_REPLY;
    int64_t end = dlock_test_now_ms() + 10000;
    size_t chunk = trickle ? 512 : sizeof body;

    pthread_once(&body_once, body_fill);
    snprintf(head, sizeof head, "$%lld\r\n", left);
    if (send_all(s, fd, head, strlen(head)) != 0)
        return;
    while (left > 0 && !stopping(s)) {
        size_t n = (long long)chunk < left ? chunk : (size_t)left;
        if (trickle && dlock_test_now_ms() > end)
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
        if (trickle)
            dlock_test_sleep_ms(2);
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
    if (is_cmd(cmd, "CLUSTER") && peer < 0) {
        /* a map of -peer masters (-1: 1001), one slot each, where nothing
         * listens */
        int i, masters = peer == -1 ? 1001 : -peer;
        char entry[128];
        n = snprintf(out, sizeof out, "*%d\r\n", masters);
        if (send_all(s, fd, out, (size_t)n) != 0)
            return -1;
        for (i = 0; i < masters; i++) {
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

/* SCRIPTED: a connection's subscription (chan[0] '\0': none). */
typedef struct sub_state {
    char chan[256];
    char kind[16]; /* "subscribe" or "ssubscribe" */
} sub_state;

static size_t bulk(char *out, size_t cap, const char *str)
{
    int n = snprintf(out, cap, "$%zu\r\n%s\r\n", strlen(str), str);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* text with %C, %K and %S (the message kind of the subscription:
 * "message" or "smessage") replaced, into out. */
static size_t expand(const char *text, const sub_state *st, char *out, size_t cap)
{
    size_t n = 0;
    int sharded = st->kind[0] == 's' && st->kind[1] == 's';

    for (; *text && n + 300 < cap; text++) {
        if (text[0] == '%' && (text[1] == 'C' || text[1] == 'K' || text[1] == 'S')) {
            const char *v = text[1] == 'C' ? st->chan
                            : text[1] == 'K' ? st->kind
                                             : sharded ? "smessage" : "message";
            n += bulk(out + n, cap - n, v);
            text++;
            continue;
        }
        out[n++] = *text;
    }
    out[n] = '\0';
    return n;
}

/* Sends text as `how` says. -1: the client closed, or the connection is
 * to be closed (after a flood). */
static int send_as(fake_server *s, int fd, const char *text, size_t len, int how)
{
    size_t i;

    switch (how) {
    case STALL:
        return 0;
    case FLOOD:
        if (send_all(s, fd, text, len) == 0) /* what comes before the bulk */
            stream(s, fd, 0);
        return -1;
    case BYTEWISE:
        for (i = 0; i < len; i++) {
            if (stopping(s) || send_all(s, fd, text + i, 1) != 0)
                return -1;
            dlock_test_sleep_ms(2);
        }
        return 0;
    default:
        return send_all(s, fd, text, len);
    }
}

static int send_answer(fake_server *s, int fd, const answer *a, const char *redis,
                       const sub_state *st)
{
    char out[8192];
    size_t n = expand(a->text ? a->text : redis, st, out, sizeof out);
    return send_as(s, fd, out, n, a->how);
}

/* SCRIPTED: the script's noise on st's channel: 10 messages at once, or
 * one byte by byte, or a flood (then -1: the connection ends). */
static int spray_scripted(fake_server *s, int fd, answer noise, const sub_state *st)
{
    char one[1024], out[10240];
    size_t n = expand(noise.text, st, one, sizeof one), k = 0;
    int i, sent = noise.how == WHOLE ? 10 : 1;

    for (i = 0; i < sent; i++, k += n)
        memcpy(out + k, one, n);
    pthread_mutex_lock(&s->mu);
    s->sprayed += sent; /* counted as begun: a slow one takes a while */
    pthread_mutex_unlock(&s->mu);
    return send_as(s, fd, out, k, noise.how);
}

/* A SCRIPTED server's answer to cmd. -1: the client closed. */
static int answer_scripted(fake_server *s, int fd, const redisReply *cmd, sub_state *st)
{
    const script *sc = &s->sc;
    answer noise;
    char self[256];
    int n;

    if (is_cmd(cmd, "PING"))
        return send_all(s, fd, "+PONG\r\n", 7);
    if (is_cmd(cmd, "AUTH") || is_cmd(cmd, "SELECT") || is_cmd(cmd, "ASKING")) {
        pthread_mutex_lock(&s->mu);
        s->auths += is_cmd(cmd, "AUTH");
        pthread_mutex_unlock(&s->mu);
        return send_all(s, fd, "+OK\r\n", 5);
    }
    if (is_cmd(cmd, "EVALSHA") || is_cmd(cmd, "EVAL")) {
        pthread_mutex_lock(&s->mu);
        s->evals++;
        pthread_mutex_unlock(&s->mu);
        return send_answer(s, fd, &sc->eval, ":100000\r\n", st);
    }
    if (is_cmd(cmd, "ROLE")) {
        pthread_mutex_lock(&s->mu);
        s->roles++;
        pthread_mutex_unlock(&s->mu);
        return send_answer(s, fd, &sc->role, "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n", st);
    }
    if (is_cmd(cmd, "SENTINEL"))
        return send_answer(s, fd, &sc->sentinel, "*-1\r\n", st);
    if (is_cmd(cmd, "CLUSTER")) {
        n = snprintf(self, sizeof self, "*1\r\n");
        slots_entry(self + n, sizeof self - (size_t)n, 0, 16383, s->port);
        return send_answer(s, fd, &sc->slots, self, st);
    }
    if ((is_cmd(cmd, "SUBSCRIBE") || is_cmd(cmd, "SSUBSCRIBE")) && cmd->elements == 2 &&
        cmd->element[1]->len < sizeof st->chan) {
        pthread_mutex_lock(&s->mu);
        s->subscribes++;
        pthread_mutex_unlock(&s->mu);
        snprintf(st->kind, sizeof st->kind, "%s",
                 is_cmd(cmd, "SSUBSCRIBE") ? "ssubscribe" : "subscribe");
        snprintf(st->chan, sizeof st->chan, "%s", cmd->element[1]->str);
        if (send_answer(s, fd, &sc->subscribe, "*3\r\n%K%C:1\r\n", st) != 0)
            return -1;
        pthread_mutex_lock(&s->mu);
        noise = sc->noise;
        pthread_mutex_unlock(&s->mu);
        /* the noise starts at once (and goes on while the line is idle) */
        return noise.text ? spray_scripted(s, fd, noise, st) : 0;
    }
    if ((is_cmd(cmd, "UNSUBSCRIBE") || is_cmd(cmd, "SUNSUBSCRIBE")) && cmd->elements == 2 &&
        cmd->element[1]->len < sizeof st->chan) {
        sub_state un;
        snprintf(un.kind, sizeof un.kind, "%s",
                 is_cmd(cmd, "SUNSUBSCRIBE") ? "sunsubscribe" : "unsubscribe");
        snprintf(un.chan, sizeof un.chan, "%s", cmd->element[1]->str);
        st->chan[0] = '\0';
        n = (int)expand("*3\r\n%K%C:0\r\n", &un, self, sizeof self);
        return send_all(s, fd, self, (size_t)n);
    }
    if (is_cmd(cmd, "CONFIG") || is_cmd(cmd, "INFO"))
        return send_all(s, fd, "-ERR unknown command\r\n", 22);
    return send_all(s, fd, "-ERR not here\r\n", 15);
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
    sub_state st = {"", ""};

    free(a);
    while (rd && !done && !stopping(s)) {
        struct pollfd p = {fd, POLLIN, 0};
        void *cmd = NULL;
        ssize_t n;
        answer noise;
        int noisy;
        pthread_mutex_lock(&s->mu);
        noise = s->sc.noise;
        pthread_mutex_unlock(&s->mu);
        noisy = st.chan[0] && noise.text;
        if (poll(&p, 1, chan[0] ? 1 : noisy ? 2 : 10) <= 0) {
            if (chan[0])
                done = spray(s, fd, chan) != 0;
            else if (noisy)
                done = spray_scripted(s, fd, noise, &st) != 0;
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
            else if (s->mode == SCRIPTED)
                done = answer_scripted(s, fd, cmd, &st) != 0;
            else if (is_cmd(cmd, "PING"))
                done = send_all(s, fd, "+PONG\r\n", 7) != 0;
            /* the connect-time probe of a new connection (CONFIG GET,
             * INFO: issue 32 §4) is refused, as by a server that has no
             * such commands: the huge reply is the scripts' */
            else if (is_cmd(cmd, "CONFIG") || is_cmd(cmd, "INFO"))
                done = send_all(s, fd, "-ERR unknown command\r\n", 22) != 0;
            else {
                stream(s, fd, s->mode == TRICKLE);
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
        if (poll(&p, 1, 10) <= 0)
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
    t0 = dlock_test_now_ms();
    /* a wait long enough for a loaded machine to read up to the cap (the
     * budget with a flood is stream_once's) */
    rc = dlock_try_lock(l, 2000, 10000);
    if (rc != DLOCK_EPROTO)
        fail_msg("try_lock: %d (%s), sent %lld", rc, dlock_errmsg(l), s->sent);
    assert_non_null(strstr(dlock_errmsg(l), "reply larger than max_reply_bytes (1048576 bytes); "
                                            "connection dropped"));
    assert_true(dlock_test_now_ms() - t0 < 10000);
    /* the client closed its end: the server's stream ends with an error */
    for (k = 0; k < 500 && !closed; k++) {
        pthread_mutex_lock(&s->mu);
        closed = s->closed_by_peer;
        sent = s->sent;
        pthread_mutex_unlock(&s->mu);
        if (!closed)
            dlock_test_sleep_ms(10);
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
 * its header, which announces more than the cap, or its deadline). */
static void stream_once(int mode, const char *query, int64_t command_timeout_ms)
{
    fake_server *s = fake_start(mode);
    dlock_client *c = open_client(s, query, command_timeout_ms);
    dlock_rlock *l = NULL;
    int64_t t0, took;
    int rc;
    long long sent;

    assert_int_equal(dlock_reentrant_new(&l, c, "hostile:trickle"), 0);
    t0 = dlock_test_now_ms();
    rc = dlock_try_lock(l, 200, 10000);
    took = dlock_test_now_ms() - t0;
    pthread_mutex_lock(&s->mu);
    sent = s->sent;
    pthread_mutex_unlock(&s->mu);
    /* a flood announces more than the default cap (64 MiB): refused at
     * its header */
    if (rc != DLOCK_ETIMEDOUT && rc != DLOCK_ECONN && (mode == TRICKLE || rc != DLOCK_EPROTO))
        fail_msg("%s, command timeout %lld: try_lock gave %d (%s)", query,
                 (long long)command_timeout_ms, rc, dlock_errmsg(l));
    if (took >= 2000)
        fail_msg("%s, command timeout %lld: try_lock(wait 200) took %lld ms", query,
                 (long long)command_timeout_ms, (long long)took);
    /* the trickle was streaming: this is what was cut (the flood's header
     * was enough) */
    assert_true(sent > 0 || mode == FAST);
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

    assert_int_equal(o.version, DLOCK_REDIS_OPTIONS_VERSION);
    assert_int_equal(o.cluster_max_nodes, DLOCK_REDIS_CLUSTER_NODES_DEFAULT);
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
    expect_bad("redis-cluster://127.0.0.1:1?cluster_max_nodes=0", NULL,
               "'cluster_max_nodes' must be an integer 1..1000");
    expect_bad("redis-cluster://127.0.0.1:1?cluster_max_nodes=1001", NULL,
               "'cluster_max_nodes' must be an integer 1..1000");
    expect_bad("redis-cluster://127.0.0.1:1?cluster_max_nodes=1&cluster_max_nodes=1", NULL,
               "'cluster_max_nodes' given twice");
    o.max_reply_bytes = 4095;
    expect_bad("redis://127.0.0.1:1", &o, "max_reply_bytes must be 4096..1073741824");
    o.max_reply_bytes = 0;
    expect_bad("redis://127.0.0.1:1", &o, "max_reply_bytes must be");
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    o.cluster_max_nodes = 0;
    expect_bad("redis-cluster://127.0.0.1:1", &o, "cluster_max_nodes must be 1..1000");
    o.cluster_max_nodes = 1001;
    expect_bad("redis-cluster://127.0.0.1:1", &o, "cluster_max_nodes must be 1..1000");
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
    assert_int_equal(dlock_client_from_json_string(&c, "{\"url\": \"mock:\", \"cluster_max_nodes\": 0}",
                                            errbuf, sizeof errbuf),
                     DLOCK_EINVAL);
    assert_non_null(strstr(errbuf, "cluster_max_nodes"));

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
    /* a struct of a version this library does not know: refused before
     * anything is read or opened */
    o = (dlock_redis_options)DLOCK_REDIS_OPTIONS_INIT;
    o.version = DLOCK_REDIS_OPTIONS_VERSION + 1;
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", s->port);
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), DLOCK_EINVAL);
    assert_null(b);
    assert_non_null(strstr(errbuf, "version must be"));
    o.version = 0;
    assert_int_equal(dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf), DLOCK_EINVAL);
    assert_null(b);
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

/* The cluster cases' calls are single attempts (wait 0): the slack lets
 * one round trip take up to 2 s on a loaded machine. */
static dlock_client *one_attempt_client(const char *url)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;

    o.budget_slack_ms = 2000;
    assert_int_equal(dlock_client_connect(&c, url, &o, errbuf, sizeof errbuf), 0);
    return c;
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
    c = one_attempt_client(url);
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
    c = one_attempt_client(url);
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
        dlock_test_sleep_ms(10);
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

/* A client of node, whose map names -peer masters (-1: 1001), refused
 * with the default cap named. */
static void map_refused(fake_server *node, int peer)
{
    dlock_client *c = NULL;
    char url[256];

    node->peer = peer;
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", node->port);
    assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), DLOCK_EPROTO);
    assert_null(c);
    assert_non_null(strstr(errbuf, "CLUSTER SLOTS names more than 128 nodes (refused: "
                                   "cluster_max_nodes=128)"));
}

/* A map that names more nodes than a cluster may have is refused. */
static void cluster_too_many_nodes(void **state)
{
    fake_server *node = fake_start(CLUSTER);
    (void)state;

    map_refused(node, -1);
    fake_stop(node);
}

/* A seed's map naming 300 masters: refused by the default cap (128), so
 * that no connection is opened (nor AUTH sent) to any of them, with the
 * setting named; cluster_max_nodes raises it (URL parameter, JSON key) or
 * lowers it. Before: the client followed every node of a map of up to
 * 1000. */
static void cluster_node_cap(void **state)
{
    fake_server *node = fake_start(CLUSTER);
    dlock_client *c = NULL;
    char url[256], json[256];
    int rc;
    (void)state;

    map_refused(node, -300);
    snprintf(json, sizeof json,
             "{\"url\": \"redis-cluster://127.0.0.1:%d\", \"cluster_max_nodes\": 5}",
             node->port);
    assert_int_equal(dlock_client_from_json_string(&c, json, errbuf, sizeof errbuf),
                     DLOCK_EPROTO);
    assert_non_null(strstr(errbuf, "names more than 5 nodes (refused: cluster_max_nodes=5)"));
    /* raised: the map is followed (its nodes do not listen: whatever
     * follows, it is not the cap) */
    snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d?cluster_max_nodes=300&lazy_connect=1",
             node->port);
    assert_int_equal(dlock_client_connect(&c, url, NULL, errbuf, sizeof errbuf), 0);
    {
        dlock_rlock *l = NULL;
        assert_int_equal(dlock_reentrant_new(&l, c, "hostile:cap"), 0);
        rc = dlock_try_lock(l, 0, 1000);
        assert_int_not_equal(rc, 0);
        assert_null(strstr(dlock_errmsg(l), "cluster_max_nodes"));
        dlock_rlock_free(l);
    }
    dlock_client_free(c);
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
    t0 = dlock_test_now_ms();
    assert_int_equal(dlock_try_lock(l, 2000, 10000), DLOCK_ETIMEDOUT);
    took = dlock_test_now_ms() - t0;
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
 * holds, while a third waits 2 s for it (with one thread, or several). */
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

/* A wait of 2 s on "name" by each of n threads of one client. */
typedef struct noise_waiter {
    dlock_rlock *l;
    int rc;
} noise_waiter;

static void *noise_wait_main(void *arg)
{
    noise_waiter *w = arg;

    w->rc = dlock_try_lock(w->l, 2000, 10000);
    return NULL;
}

/* With n waiters of one client, the floor is the channel's, not each
 * waiter's (issue 39 section 1): the client's refused attempts stay
 * within one floor plus 3 for each waiter beyond the first (its first two
 * attempts, and one for attempts that passed the floor together: it is
 * charged as their refusals come back). Before: one floor per waiter. */
static void noise_on_server(const char *name, int n)
{
    dlock_test_redis *srv = NULL;
    dlock_client *holder = NULL, *waiter = NULL;
    dlock_rlock *hl = NULL;
    dlock_metrics m0 = DLOCK_METRICS_INIT, m1 = DLOCK_METRICS_INIT;
    noise_waiter w[8];
    pthread_t th[8], pub;
    publisher p;
    char channel[96];
    int64_t t0, took;
    long long delivered;
    uint64_t calls;
    int i;

    assert_true(n >= 1 && n <= 8);
    assert_int_equal(dlock_test_redis_start(&srv, NULL), 0);
    assert_int_equal(dlock_client_connect(&holder, dlock_test_redis_url(srv), NULL, errbuf,
                                          sizeof errbuf), 0);
    assert_int_equal(dlock_client_connect(&waiter, dlock_test_redis_url(srv), NULL, errbuf,
                                          sizeof errbuf), 0);
    assert_int_equal(dlock_reentrant_new(&hl, holder, name), 0);
    for (i = 0; i < n; i++)
        assert_int_equal(dlock_reentrant_new(&w[i].l, waiter, name), 0);
    assert_int_equal(dlock_lock(hl, 60000), 0);
    memset(&p, 0, sizeof p);
    p.port = dlock_test_redis_port(srv);
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    p.channel = channel;
    pthread_mutex_init(&p.mu, NULL);
    assert_int_equal(pthread_create(&pub, NULL, publish_main, &p), 0);
    assert_int_equal(dlock_client_metrics(waiter, &m0), 0);
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_INFO), 0);
    t0 = dlock_test_now_ms();
    for (i = 0; i < n; i++)
        assert_int_equal(pthread_create(&th[i], NULL, noise_wait_main, &w[i]), 0);
    for (i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    took = dlock_test_now_ms() - t0;
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    delivered = p.delivered;
    pthread_mutex_unlock(&p.mu);
    pthread_join(pub, NULL);
    assert_int_equal(dlock_client_metrics(waiter, &m1), 0);
    calls = m1.busy - m0.busy; /* every attempt of the waits was refused */
    print_message("  pub/sub noise, %d waiter(s) (redis-server): %lld messages delivered in "
                  "%lld ms: %llu script calls, %d resubscribes\n", n, delivered,
                  (long long)took, (unsigned long long)calls,
                  dlock_test_log_count("restored after a reconnect", NULL));
    for (i = 0; i < n; i++)
        assert_int_equal(w[i].rc, DLOCK_ETIMEDOUT);
    if (delivered < 200)
        fail_msg("only %lld messages delivered: no noise to judge", delivered);
    if (calls > (uint64_t)(took / 25 + 8 + 3 * (n - 1)))
        fail_msg("%llu script calls in %lld ms from %d waiter(s): above one per 25 ms "
                 "floor + 8 + 3 per waiter beyond the first", (unsigned long long)calls,
                 (long long)took, n);
    assert_int_equal(dlock_test_log_count("restored after a reconnect", NULL), 0);
    assert_int_equal(m1.messages_ignored, 0); /* strings are not ignored */
    assert_int_equal(dlock_unlock(hl), 0);
    pthread_mutex_destroy(&p.mu);
    for (i = 0; i < n; i++)
        dlock_rlock_free(w[i].l);
    dlock_rlock_free(hl);
    dlock_client_free(waiter);
    dlock_client_free(holder);
    dlock_test_redis_stop(srv);
}

static void pubsub_noise_redis(void **state)
{
    (void)state;
    noise_on_server("noise", 1);
}

static void pubsub_noise_many_waiters_redis(void **state)
{
    (void)state;
    noise_on_server("noise-many", 8);
}

/* ---- The scripted server against every kind of connection --------------
 *
 * Issue 28 section 5: each kind of hostile answer (garbage, huge,
 * trickled byte by byte, stalled, MOVED/ASK sprays, Sentinel answers
 * naming another master, pub/sub messages of every type on the lock's
 * channel) against each kind of connection (pooled, multiplexed, the
 * subscriber, Sentinel discovery, the cluster router). Each case checks:
 * no crash; the heap never grows past a bound set by the cap
 * (max_reply_bytes=1 MiB here: a connection may hold about twice it;
 * 8 MiB allowed, where an uncapped 400 MB reply takes hundreds); the
 * call returns within its budget (wait + the default budget_slack_ms of
 * 50, plus 2 s for a loaded machine); no lock reported held (the scripted
 * server never grants one: no acquisition in the client's metrics). */

#ifndef CAP_QUERY /* -DCAP_QUERY=... to check the check */
#define CAP_QUERY "max_reply_bytes=1048576"
#endif
#define HEAP_BOUND ((size_t)8 * 1024 * 1024)
#define LOADED_MS 2000 /* allowance for a shared, loaded machine */

enum { K_POOL, K_MUX, K_SENTINEL, K_CLUSTER, NKINDS };
static const char *const kind_name[NKINDS] = {"pooled", "multiplexed", "sentinel",
                                              "cluster"};

/* The heap in use (malloc'd and mmap'd), sampled every ms on a thread
 * while a call runs: its peak above what it was before. */
typedef struct heap_watch {
    pthread_t th;
    pthread_mutex_t mu;
    int stop;
    size_t base, peak;
} heap_watch;

static size_t heap_grew; /* the most any call grew the heap, since reset */

static size_t heap_now(void)
{
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static void *heap_main(void *arg)
{
    heap_watch *h = arg;
    for (;;) {
        size_t now = heap_now();
        int stop;
        pthread_mutex_lock(&h->mu);
        if (now > h->peak)
            h->peak = now;
        stop = h->stop;
        pthread_mutex_unlock(&h->mu);
        if (stop)
            return NULL;
        dlock_test_sleep_ms(1);
    }
}

static void heap_start(heap_watch *h)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->mu, NULL);
    h->base = h->peak = heap_now();
    assert_int_equal(pthread_create(&h->th, NULL, heap_main, h), 0);
}

/* Stops the sampling; fails the test when the peak passed the bound. */
static void heap_check(heap_watch *h, const char *what)
{
    pthread_mutex_lock(&h->mu);
    h->stop = 1;
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->th, NULL);
    pthread_mutex_destroy(&h->mu);
    if (h->peak > h->base && h->peak - h->base > heap_grew)
        heap_grew = h->peak - h->base;
    if (h->peak > h->base && h->peak - h->base > HEAP_BOUND)
        fail_msg("%s: the heap grew by %zu bytes (bound %zu)", what, h->peak - h->base,
                 HEAP_BOUND);
}

/* A data server running a script, a sentinel naming it (K_SENTINEL), a
 * client of the kind over them, and a lock. */
typedef struct rig {
    int kind;
    fake_server *data, *sentinel;
    dlock_client *c;
    dlock_rlock *l;
    char named[128]; /* the sentinel's answer */
} rig;

/* Starts the servers (data's script sc; a sentinel whose script is
 * watch, or (NULL) Redis's, except that SENTINEL is answered with the
 * data server's address unless watch->sentinel.text says otherwise);
 * then makes the client over them with
 * `extra` query parameters, within its bound (connect and command
 * timeouts of 1 s and 2 s, one sentinel asked: LOADED_MS more allowed;
 * a stalled discovery read is a command timeout), the heap
 * watched. Returns what making it returned (the rig is usable on 0). */
static int rig_open(rig *r, int kind, const script *sc, const script *watch,
                    const char *extra)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;
    dlock_backend *b = NULL;
    char url[512], what[128];
    heap_watch h;
    int64_t t0, took;
    int rc;

    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->data = fake_start(SCRIPTED);
    r->data->sc = *sc;
    if (kind == K_SENTINEL) {
        r->sentinel = fake_start(SCRIPTED);
        snprintf(r->named, sizeof r->named, "*2\r\n$9\r\n127.0.0.1\r\n$%d\r\n%d\r\n",
                 r->data->port >= 10000 ? 5 : 4, r->data->port);
        if (watch)
            r->sentinel->sc = *watch;
        if (!r->sentinel->sc.sentinel.text)
            r->sentinel->sc.sentinel.text = r->named;
        snprintf(url, sizeof url,
                 "redis-sentinel://:" SECRET "@127.0.0.1:%d?sentinelMasterId=m&" CAP_QUERY "%s",
                 r->sentinel->port, extra);
    } else if (kind == K_CLUSTER) {
        snprintf(url, sizeof url, "redis-cluster://:" SECRET "@127.0.0.1:%d?" CAP_QUERY "%s",
                 r->data->port, extra);
    } else {
        snprintf(url, sizeof url, "redis://:" SECRET "@127.0.0.1:%d?multiplex=%d&" CAP_QUERY "%s",
                 r->data->port, kind == K_MUX, extra);
    }
    o.connect_timeout_ms = 1000;
    o.command_timeout_ms = 2000;
    errbuf[0] = '\0';
    snprintf(what, sizeof what, "%s: making the client", kind_name[kind]);
    heap_start(&h);
    t0 = dlock_test_now_ms();
    rc = dlock_redis_backend_new(&b, url, &o, errbuf, sizeof errbuf);
    took = dlock_test_now_ms() - t0;
    heap_check(&h, what);
    if (took > 3000 + LOADED_MS)
        fail_msg("%s: took %lld ms (%d, %s)", what, (long long)took, rc, errbuf);
    assert_null(strstr(errbuf, SECRET));
    if (rc != 0) {
        assert_null(b);
        return rc;
    }
    assert_int_equal(dlock_client_new(&r->c, b, NULL), 0);
    assert_int_equal(dlock_reentrant_new(&r->l, r->c, "hostile:script"), 0);
    return 0;
}

static void rig_close(rig *r)
{
    dlock_metrics m = DLOCK_METRICS_INIT;

    if (r->c) {
        /* nothing was granted, so nothing may have been acquired */
        assert_int_equal(dlock_client_metrics(r->c, &m), 0);
        assert_int_equal(m.acquisitions, 0);
    }
    dlock_rlock_free(r->l);
    dlock_client_free(r->c);
    if (r->sentinel)
        fake_stop(r->sentinel);
    fake_stop(r->data);
}

/* One try_lock(wait) through the rig: fails (the server granted
 * nothing), with a failure a hostile server may cause, within its budget,
 * the heap bounded. Returns the code. */
static int rig_call(rig *r, int64_t wait_ms, const char *what)
{
    char label[256];
    heap_watch h;
    int64_t t0, took;
    int rc;

    snprintf(label, sizeof label, "%s, %s", kind_name[r->kind], what);
    heap_start(&h);
    t0 = dlock_test_now_ms();
    rc = dlock_try_lock(r->l, wait_ms, 10000);
    took = dlock_test_now_ms() - t0;
    heap_check(&h, label);
    if (rc == 0)
        fail_msg("%s: try_lock reported the lock held; the server granted nothing", label);
    /* DLOCK_EINVAL: a lazy sentinel client whose sentinels know no
     * master of that name (api/dlock/redis.h) */
    if (rc != DLOCK_EBUSY && rc != DLOCK_ETIMEDOUT && rc != DLOCK_ECONN && rc != DLOCK_EPROTO &&
        (rc != DLOCK_EINVAL || r->kind != K_SENTINEL ||
         !strstr(dlock_errmsg(r->l), "no sentinel knows a master named")))
        fail_msg("%s: try_lock gave %d (%s)", label, rc, dlock_errmsg(r->l));
    if (took > wait_ms + 50 + LOADED_MS)
        fail_msg("%s: try_lock(wait %lld) took %lld ms (%d, %s)", label, (long long)wait_ms,
                 (long long)took, rc, dlock_errmsg(r->l));
    assert_null(strstr(dlock_errmsg(r->l), SECRET));
    return rc;
}

/* A table of hostile answers: each a name, the answer, and a flag whose
 * meaning is the table's. */
typedef struct hostile_case {
    const char *name;
    answer a;
    int flag;
} hostile_case;

/* Runs fn on each case of the table against kind, and says how long that
 * took and how much the heap grew at most. */
static void run_cases(int kind, const hostile_case *cases, size_t n, const char *what,
                      void (*fn)(int kind, const hostile_case *c))
{
    int64_t t0 = dlock_test_now_ms();
    size_t i;

    heap_grew = 0;
    for (i = 0; i < n; i++)
        fn(kind, &cases[i]);
    print_message("  %s (%s): %zu answers in %lld ms, heap grew %zu kB at most\n", what,
                  kind_name[kind], n, (long long)(dlock_test_now_ms() - t0), heap_grew / 1024);
}

#define RUN_CASES(kind, table, what, fn)                                                 \
    run_cases(kind, table, sizeof table / sizeof table[0], what, fn)

/* What the scripts get: every kind against every kind of connection. */
static const hostile_case eval_answers[] = {
    {"garbage (unknown type byte)", {"!garbage\r\n", WHOLE}, 0},
    {"garbage (binary)", {"\x01\x02\xff\xfe\r\n", WHOLE}, 0},
    {"garbage (negative bulk length)", {"$-2\r\n", WHOLE}, 0},
    {"garbage (negative array length)", {"*-2\r\n", WHOLE}, 0},
    {"garbage (overflowing length)", {"*2305843009213693952\r\n", WHOLE}, 0},
    {"wrong type (status)", {"+OK\r\n", WHOLE}, 0},
    {"wrong type (array)", {"*2\r\n$1\r\nx\r\n:1\r\n", WHOLE}, 0},
    {"error", {"-ERR boom\r\n", WHOLE}, 0},
    {"huge (400 MB bulk)", {"", FLOOD}, 0},
    {"huge (a 1 GB bulk's header alone)", {"$1000000000\r\n", WHOLE}, 0},
    {"huge (array claiming 2^31 elements)", {"*2147483648\r\n", WHOLE}, 0},
    {"trickled (busy, byte by byte)", {NULL, BYTEWISE}, 0},
    {"trickled (garbage, byte by byte)", {"*1\r\n!x\r\n", BYTEWISE}, 0},
    {"stalled", {NULL, STALL}, 0},
    {"MOVED spray", {"-MOVED 1 127.0.0.1:1\r\n", WHOLE}, 0},
    {"ASK spray", {"-ASK 1 127.0.0.1:1\r\n", WHOLE}, 0},
};

static void eval_case(int kind, const hostile_case *c)
{
    script sc;
    rig r;
    int k;

    memset(&sc, 0, sizeof sc);
    sc.eval = c->a;
    assert_int_equal(rig_open(&r, kind, &sc, NULL, ""), 0);
    /* twice: the second call on whatever the first left behind */
    for (k = 0; k < 2; k++)
        rig_call(&r, 200, c->name);
    assert_true(field(r.data, &r.data->evals) > 0);
    rig_close(&r);
}

/* The kinds, for the tests' initial states (CASE_ON below). */
static const int kinds[NKINDS] = {K_POOL, K_MUX, K_SENTINEL, K_CLUSTER};

/* A bulk header announcing more than max_reply_bytes (1 GB against the
 * 1 MiB cap), and no body: refused at the header, on every connection
 * kind, with the cap named, not waited on until the call's time runs out
 * (before: DLOCK_ETIMEDOUT at the end of the budget). The scripts' reply
 * (the pooled and multiplexed connections, Sentinel's and the cluster's)
 * fails the call; the subscriber's confirmation drops its connection,
 * which it logs. */
#define HUGE_HEADER "$1000000000\r\n"

static void bulk_header_refused(void **state)
{
    const int *kind = *state;
    script sc;
    rig r;
    int rc;

    memset(&sc, 0, sizeof sc);
    sc.eval.text = HUGE_HEADER;
    sc.eval.how = WHOLE;
    assert_int_equal(rig_open(&r, *kind, &sc, NULL, ""), 0);
    /* a budget far beyond the command timeout (2 s): a call that waits for
     * the body ends with DLOCK_ETIMEDOUT */
    rc = dlock_try_lock(r.l, 30000, 10000);
    if (rc != DLOCK_EPROTO || !strstr(dlock_errmsg(r.l), "reply larger than max_reply_bytes"))
        fail_msg("%s: try_lock gave %s (%s), not the header refused", kind_name[*kind],
                 dlock_errname(rc), dlock_errmsg(r.l));
    rig_close(&r);

    memset(&sc, 0, sizeof sc);
    sc.subscribe.text = HUGE_HEADER;
    sc.subscribe.how = WHOLE;
    assert_int_equal(rig_open(&r, *kind, &sc, NULL, ""), 0);
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_INFO), 0);
    rc = dlock_try_lock(r.l, 1500, 10000);
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    if (rc == 0 || dlock_test_log_count("larger than max_reply_bytes", NULL) == 0)
        fail_msg("%s: subscriber: try_lock gave %s (%s), and no refusal logged",
                 kind_name[*kind], dlock_errname(rc), dlock_errmsg(r.l));
    rig_close(&r);
}

static void script_answers(void **state)
{
    const int *kind = *state;
    RUN_CASES(*kind, eval_answers, "script answers", eval_case);
}

/* What the subscriber gets for its SUBSCRIBE (SSUBSCRIBE in a cluster),
 * the scripts answering "held": the wait fails within its budget. */
static const hostile_case subscribe_answers[] = {
    {"garbage", {"!garbage\r\n", WHOLE}, 0},
    {"confirmation of another channel", {"*3\r\n%K$5\r\nother\r\n:1\r\n", WHOLE}, 0},
    {"confirmation of the wrong kind", {"*3\r\n$11\r\nunsubscribe\r\n%C:1\r\n", WHOLE}, 0},
    {"confirmation with wrong arity", {"*2\r\n%K%C", WHOLE}, 0},
    {"a message instead", {"*3\r\n%S%C$1\r\n0\r\n", WHOLE}, 0},
    {"error", {"-ERR no\r\n", WHOLE}, 0},
    {"MOVED", {"-MOVED 1 127.0.0.1:1\r\n", WHOLE}, 0},
    {"huge (400 MB bulk)", {"", FLOOD}, 0},
    {"huge (a 1 GB bulk's header alone)", {"$1000000000\r\n", WHOLE}, 0},
    {"trickled (the confirmation, byte by byte)", {NULL, BYTEWISE}, 0},
    {"stalled", {NULL, STALL}, 0},
};

/* Waits (try_lock, wait 50 ms) until the data server has seen a
 * SUBSCRIBE, and (noise) sent noise: on a loaded machine the first wait
 * may end before its subscription is made. Every call is checked
 * (rig_call). */
static void wait_subscribed(rig *r, const hostile_case *c, int noise)
{
    int k;

    for (k = 0; k < 40; k++) {
        long long sprayed;
        int subs;
        rig_call(r, 50, c->name);
        pthread_mutex_lock(&r->data->mu);
        subs = r->data->subscribes;
        sprayed = r->data->sprayed;
        pthread_mutex_unlock(&r->data->mu);
        if (subs > 0 && (!noise || sprayed > 0))
            break;
    }
    if (k == 40)
        fail_msg("%s, %s: no SUBSCRIBE%s in 40 waits", kind_name[r->kind], c->name,
                 noise ? " and noise" : "");
}

static void subscribe_case(int kind, const hostile_case *c)
{
    script sc;
    rig r;

    memset(&sc, 0, sizeof sc);
    sc.subscribe = c->a;
    assert_int_equal(rig_open(&r, kind, &sc, NULL, ""), 0);
    wait_subscribed(&r, c, 0);
    rig_close(&r);
}

/* Pub/sub messages of every type on the lock's channel, sprayed while a
 * wait runs (%S: the kind of message the subscription gets, message or
 * smessage). The flag (keep): the subscriber must keep its subscription
 * (its connection never dropped under a waiter): the message is of the right kind and ignored, or of a
 * kind not asked for; else the stream no longer matches what was sent
 * and the subscriber may reconnect (with back-off) and resubscribe. */
static const hostile_case noises[] = {
    {"message, string payload", {"*3\r\n%S%C$1\r\n0\r\n", WHOLE}, 1},
    {"message, integer payload", {"*3\r\n%S%C:5\r\n", WHOLE}, 1},
    {"message, array payload", {"*3\r\n%S%C*2\r\n:1\r\n$1\r\nx\r\n", WHOLE}, 1},
    {"message, nil payload", {"*3\r\n%S%C$-1\r\n", WHOLE}, 1},
    {"message, integer channel", {"*3\r\n%S:7\r\n$1\r\n0\r\n", WHOLE}, 1},
    {"message, 2 elements", {"*2\r\n%S%C", WHOLE}, 1},
    {"message, 4 elements", {"*4\r\n%S%C$1\r\n0\r\n$1\r\n0\r\n", WHOLE}, 1},
    {"message (unsharded)", {"*3\r\n$7\r\nmessage\r\n%C$1\r\n0\r\n", WHOLE}, 1},
    {"smessage", {"*3\r\n$8\r\nsmessage\r\n%C$1\r\n0\r\n", WHOLE}, 1},
    {"pmessage", {"*4\r\n$8\r\npmessage\r\n$1\r\n*\r\n%C$1\r\n0\r\n", WHOLE}, 1},
    {"pmessage, 3 elements", {"*3\r\n$8\r\npmessage\r\n$1\r\n*\r\n%C", WHOLE}, 1},
    {"unknown kind", {"*3\r\n$5\r\nhello\r\n%C$1\r\n0\r\n", WHOLE}, 1},
    {"subscribe confirmation out of place", {"*3\r\n%K%C:2\r\n", WHOLE}, 0},
    {"subscribe confirmation, other channel", {"*3\r\n%K$5\r\nother\r\n:2\r\n", WHOLE}, 0},
    {"unsubscribe out of place", {"*3\r\n$11\r\nunsubscribe\r\n%C:0\r\n", WHOLE}, 0},
    {"sunsubscribe out of place", {"*3\r\n$12\r\nsunsubscribe\r\n%C:0\r\n", WHOLE}, 0},
    {"kind not a string", {"*3\r\n:1\r\n%C$1\r\n0\r\n", WHOLE}, 0},
    {"not an array (status)", {"+hello\r\n", WHOLE}, 0},
    {"not an array (integer)", {":42\r\n", WHOLE}, 0},
    {"empty array", {"*0\r\n", WHOLE}, 0},
    {"nested arrays", {"*1\r\n*1\r\n*1\r\n*0\r\n", WHOLE}, 0},
    {"garbage", {"!garbage\r\n", WHOLE}, 0},
    {"message, byte by byte", {"*3\r\n%S%C$1\r\n0\r\n", BYTEWISE}, 1},
    {"huge message (400 MB bulk)", {"*3\r\n%S%C", FLOOD}, 0},
};

static void noise_case(int kind, const hostile_case *c)
{
    script sc;
    rig r;
    int restored;

    memset(&sc, 0, sizeof sc);
    sc.noise = c->a;
    assert_int_equal(rig_open(&r, kind, &sc, NULL, ""), 0);
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_INFO), 0);
    wait_subscribed(&r, c, 1);
    rig_call(&r, 150, c->name); /* a wait in the noise from its start */
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    /* kept: the subscriber never reconnected under a waiter (the
     * subscriber logs each subscription it restores after one) */
    restored = dlock_test_log_count("restored after a reconnect", NULL);
    if (c->flag && restored > 0)
        fail_msg("%s, %s: %d subscriptions restored: the subscription was not kept",
                 kind_name[kind], c->name, restored);
    rig_close(&r);
}

static void subscriber(void **state)
{
    const int *kind = *state;
    RUN_CASES(*kind, subscribe_answers, "subscribe answers", subscribe_case);
    RUN_CASES(*kind, noises, "pub/sub noises", noise_case);
}

/* What a discovery read gets (SENTINEL GET-MASTER-ADDR-BY-NAME, CLUSTER
 * SLOTS): made at once, the client fails within its bound or works (the
 * flag, ok: 1, the answer is a good one, slowly; -1: either, an empty map
 * being what a cluster whose slots are not yet assigned answers); made
 * lazily, its calls fail within their budgets until then, and after. */
static const hostile_case sentinel_answers[] = {
    {"garbage", {"!garbage\r\n", WHOLE}, 0},
    {"one element", {"*1\r\n$9\r\n127.0.0.1\r\n", WHOLE}, 0},
    {"integers", {"*2\r\n:1\r\n:2\r\n", WHOLE}, 0},
    {"port out of range", {"*2\r\n$9\r\n127.0.0.1\r\n$6\r\n999999\r\n", WHOLE}, 0},
    {"status", {"+OK\r\n", WHOLE}, 0},
    {"error", {"-ERR no\r\n", WHOLE}, 0},
    {"knows no such master", {"*-1\r\n", WHOLE}, 0},
    {"a master where nothing listens", {"*2\r\n$9\r\n127.0.0.1\r\n$1\r\n1\r\n", WHOLE}, 0},
    {"huge (400 MB bulk)", {"", FLOOD}, 0},
    {"stalled", {NULL, STALL}, 0},
    {"trickled (a good answer, byte by byte)", {NULL, BYTEWISE}, 1},
};

static const hostile_case slots_answers[] = {
    {"garbage", {"!garbage\r\n", WHOLE}, 0},
    {"not an array", {":1\r\n", WHOLE}, 0},
    {"entry not an array", {"*1\r\n:5\r\n", WHOLE}, 0},
    {"host an integer", {"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n:1\r\n:2\r\n", WHOLE}, 0},
    {"slots reversed", {"*1\r\n*3\r\n:16383\r\n:0\r\n*2\r\n$9\r\n127.0.0.1\r\n:1\r\n", WHOLE}, 0},
    {"slots out of range", {"*1\r\n*3\r\n:0\r\n:99999\r\n*2\r\n$9\r\n127.0.0.1\r\n:1\r\n", WHOLE}, 0},
    {"port out of range", {"*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:99999\r\n", WHOLE}, 0},
    {"empty map", {"*0\r\n", WHOLE}, -1},
    {"error", {"-ERR This instance has cluster support disabled\r\n", WHOLE}, 0},
    {"huge (400 MB bulk)", {"", FLOOD}, 0},
    {"huge (map claiming 2^31 entries)", {"*2147483648\r\n", WHOLE}, 0},
    {"stalled", {NULL, STALL}, 0},
    {"trickled (a good map, byte by byte)", {NULL, BYTEWISE}, 1},
};

/* A client over the rig's scripts, made at once (fails or, flag 1,
 * works; -1: either), then lazily (its calls fail within their budgets
 * whatever discovery found). */
static void discovery_check(int kind, const hostile_case *c, const script *sc,
                            const script *watch)
{
    rig r;
    int rc = rig_open(&r, kind, sc, watch, "");

    if (c->flag == 1 && rc != 0)
        fail_msg("%s, %s: made at once: %d (%s)", kind_name[kind], c->name, rc, errbuf);
    if (c->flag == 0 && rc == 0)
        fail_msg("%s, %s: made at once although discovery failed", kind_name[kind], c->name);
    if (rc != DLOCK_ECONN && rc != DLOCK_EPROTO && rc != DLOCK_EINVAL && rc != DLOCK_ETIMEDOUT &&
        rc != 0)
        fail_msg("%s, %s: made at once: %d (%s)", kind_name[kind], c->name, rc, errbuf);
    if (rc == 0)
        rig_call(&r, 200, c->name);
    rig_close(&r);

    assert_int_equal(rig_open(&r, kind, sc, watch, "&lazy_connect=1"), 0);
    rig_call(&r, 100, c->name);
    rig_call(&r, 100, c->name);
    rig_close(&r);
}

/* The answer to the discovery read: CLUSTER SLOTS, or the sentinel's. */
static void discovery_case(int kind, const hostile_case *c)
{
    script sc, watch;

    memset(&sc, 0, sizeof sc);
    memset(&watch, 0, sizeof watch);
    if (kind == K_CLUSTER)
        sc.slots = c->a;
    watch.sentinel = c->a;
    discovery_check(kind, c, &sc, kind == K_SENTINEL ? &watch : NULL);
}

/* What the master a sentinel names answers to ROLE (the confirmation
 * that it is one). */
static const hostile_case role_answers[] = {
    {"garbage", {"!garbage\r\n", WHOLE}, 0},
    {"a replica", {"*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$9\r\nconnected\r\n:0\r\n",
                   WHOLE}, 0},
    {"a sentinel", {"*2\r\n$8\r\nsentinel\r\n*1\r\n$1\r\nm\r\n", WHOLE}, 0},
    {"empty array", {"*0\r\n", WHOLE}, 0},
    {"role an integer", {"*1\r\n:1\r\n", WHOLE}, 0},
    {"error", {"-ERR unknown command 'ROLE'\r\n", WHOLE}, 0},
    {"huge (400 MB bulk)", {"", FLOOD}, 0},
    {"stalled", {NULL, STALL}, 0},
    {"trickled (master, byte by byte)", {NULL, BYTEWISE}, 1},
};

static void role_case(int kind, const hostile_case *c)
{
    script sc;

    memset(&sc, 0, sizeof sc);
    sc.role = c->a;
    discovery_check(kind, c, &sc, NULL);
}

/* Calls try_lock(wait 0) until n of them reached the master (the data
 * server counted their scripts), at most 10 n calls: each gets the
 * master's "held" (or, on a loaded machine, runs out of time first). */
static void calls_reach_master(rig *r, const char *what, int n)
{
    int k, evals0 = field(r->data, &r->data->evals);

    for (k = 0; k < 10 * n && field(r->data, &r->data->evals) < evals0 + n; k++) {
        int rc = rig_call(r, 0, what);
        if (rc != DLOCK_EBUSY && rc != DLOCK_ETIMEDOUT)
            fail_msg("%s: call %d: %d (%s)", what, k, rc, dlock_errmsg(r->l));
        dlock_test_sleep_ms(20); /* spread over the noise */
    }
    if (field(r->data, &r->data->evals) < evals0 + n)
        fail_msg("%s: %d of %d calls reached the master", what,
                 field(r->data, &r->data->evals) - evals0, k);
}

/* The sentinel's +switch-master subscription (the backend's watcher)
 * gets a hostile answer, or hostile messages: the calls still go to the
 * master found (each gets its "held" answer), within their budgets. */
static void watcher_check(const hostile_case *c, const script *watch)
{
    script sc;
    rig r;
    int k;

    memset(&sc, 0, sizeof sc);
    assert_int_equal(rig_open(&r, K_SENTINEL, &sc, watch, ""), 0);
    for (k = 0; k < 150 && field(r.sentinel, &r.sentinel->subscribes) == 0; k++)
        dlock_test_sleep_ms(20);
    assert_true(field(r.sentinel, &r.sentinel->subscribes) > 0);
    dlock_test_sleep_ms(50); /* what the watcher got has been read */
    calls_reach_master(&r, c->name, 3);
    rig_close(&r);
}

static void watcher_subscribe_case(int kind, const hostile_case *c)
{
    script watch;

    (void)kind;
    memset(&watch, 0, sizeof watch);
    watch.subscribe = c->a;
    watcher_check(c, &watch);
}

static void watcher_noise_case(int kind, const hostile_case *c)
{
    script watch;

    (void)kind;
    memset(&watch, 0, sizeof watch);
    watch.noise = c->a;
    watcher_check(c, &watch);
}

static void discovery(void **state)
{
    const int *kind = *state;
    if (*kind == K_SENTINEL) {
        RUN_CASES(*kind, sentinel_answers, "sentinel answers", discovery_case);
        RUN_CASES(*kind, role_answers, "ROLE answers", role_case);
        RUN_CASES(*kind, subscribe_answers, "watcher subscribe answers", watcher_subscribe_case);
        RUN_CASES(*kind, noises, "watcher pub/sub noises", watcher_noise_case);
    } else
        RUN_CASES(*kind, slots_answers, "CLUSTER SLOTS answers", discovery_case);
}

/* Sentinel answers naming another master: the master named is a replica
 * (its ROLE says so): not used, made at once or lazily; no script goes
 * there. */
static void sentinel_names_replica(void **state)
{
    script sc;
    rig r;
    (void)state;

    memset(&sc, 0, sizeof sc);
    sc.role.text = "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n$9\r\nconnected\r\n:0\r\n";
    assert_int_equal(rig_open(&r, K_SENTINEL, &sc, NULL, ""), DLOCK_ECONN);
    assert_non_null(strstr(errbuf, "ROLE is slave"));
    assert_true(field(r.data, &r.data->roles) > 0);
    assert_int_equal(field(r.data, &r.data->evals), 0);
    rig_close(&r);
    assert_int_equal(rig_open(&r, K_SENTINEL, &sc, NULL, "&lazy_connect=1"), 0);
    assert_int_equal(rig_call(&r, 200, "names a replica"), DLOCK_ECONN);
    assert_int_equal(field(r.data, &r.data->evals), 0);
    rig_close(&r);
}

/* +switch-master messages sprayed by the sentinel while calls run: for
 * another master's name, for this one to a replica, and malformed ones.
 * The calls keep going to the master the sentinel named (each gets its
 * "held" answer: DLOCK_EBUSY), the replica gets no script. */
static void sentinel_switch_noise(void **state)
{
    static const char *const payloads[] = {
        "other 127.0.0.1 %d 127.0.0.1 %d", /* another master */
        "m 127.0.0.1 %d 127.0.0.1 %d",     /* this one, to a replica */
        "m 127.0.0.1 %d",                  /* too short */
        "m 127.0.0.1 %d 127.0.0.1 %d extra", /* too long */
        "m 127.0.0.1 %d 127.0.0.1 99999%d",  /* port out of range */
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof payloads / sizeof payloads[0]; i++) {
        script sc;
        fake_server *replica = fake_start(SCRIPTED);
        char payload[128], noise[256];
        rig r;
        int k;

        replica->sc.role.text = "*5\r\n$5\r\nslave\r\n$9\r\n127.0.0.1\r\n:1\r\n"
                                "$9\r\nconnected\r\n:0\r\n";
        memset(&sc, 0, sizeof sc);
        assert_int_equal(rig_open(&r, K_SENTINEL, &sc, NULL, ""), 0);
        snprintf(payload, sizeof payload, payloads[i], r.data->port, replica->port);
        snprintf(noise, sizeof noise, "*3\r\n$7\r\nmessage\r\n%%C$%zu\r\n%s\r\n",
                 strlen(payload), payload);
        /* the sentinel's watcher subscribes after the client is made:
         * the noise starts then */
        pthread_mutex_lock(&r.sentinel->mu);
        r.sentinel->sc.noise.text = noise;
        pthread_mutex_unlock(&r.sentinel->mu);
        for (k = 0; k < 100 && field(r.sentinel, &r.sentinel->subscribes) == 0; k++)
            dlock_test_sleep_ms(20);
        assert_true(field(r.sentinel, &r.sentinel->subscribes) > 0);
        calls_reach_master(&r, payload, 10);
        assert_int_equal(field(replica, &replica->evals), 0);
        pthread_mutex_lock(&r.sentinel->mu);
        r.sentinel->sc.noise.text = NULL;
        pthread_mutex_unlock(&r.sentinel->mu);
        rig_close(&r);
        fake_stop(replica);
    }
}

/* A test run on one kind of connection: test_kind is its name. */
#define CASE_ON(f, kind, kname)                                                          \
    {#f "_" kname, f, NULL, NULL, (void *)&kinds[kind]}

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
        cmocka_unit_test(cluster_node_cap),
        cmocka_unit_test(pubsub_noise_bounded_mux),
        cmocka_unit_test(pubsub_noise_bounded_pool),
        cmocka_unit_test(pubsub_noise_redis),
        cmocka_unit_test(pubsub_noise_many_waiters_redis),
        CASE_ON(script_answers, K_POOL, "pooled"),
        CASE_ON(script_answers, K_MUX, "multiplexed"),
        CASE_ON(script_answers, K_SENTINEL, "sentinel"),
        CASE_ON(script_answers, K_CLUSTER, "cluster"),
        CASE_ON(bulk_header_refused, K_POOL, "pooled"),
        CASE_ON(bulk_header_refused, K_MUX, "multiplexed"),
        CASE_ON(bulk_header_refused, K_SENTINEL, "sentinel"),
        CASE_ON(bulk_header_refused, K_CLUSTER, "cluster"),
        CASE_ON(subscriber, K_POOL, "pooled"),
        CASE_ON(subscriber, K_MUX, "multiplexed"),
        CASE_ON(subscriber, K_SENTINEL, "sentinel"),
        CASE_ON(subscriber, K_CLUSTER, "cluster"),
        CASE_ON(discovery, K_SENTINEL, "sentinel"),
        cmocka_unit_test(sentinel_names_replica),
        cmocka_unit_test(sentinel_switch_noise),
        CASE_ON(discovery, K_CLUSTER, "cluster"),
    };
    return DLOCK_RUN_GROUP("redis_hostile_server", tests, NULL, NULL);
}
