/*
 * Fault tests: a TCP proxy on the loopback (see faults.h).
 *
 * One thread, one poll() over the listening socket, a wake-up pipe and both
 * ends of every connection. Bytes read from one end are queued as chunks
 * stamped with the time they may leave (now, or now + delay); a chunk is
 * written when it is due and the other end is writable.
 *
 * A black hole is a partition as TCP lives it: bytes sent meanwhile are not
 * lost but held (TCP would retransmit them) and flow when it heals; the
 * peer hears nothing until then. Connections opened during the black hole
 * get no server behind them (their handshake hangs) and are closed when it
 * heals.
 */
#include "faults.h"
#include "../harness/redis_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_CONNS 64
#define CHUNK 16384

typedef struct chunk {
    struct chunk *next;
    int64_t due;
    size_t len, off;
    char data[];
} chunk;

/* One direction: bytes read from `from` go to `to`. */
typedef struct lane {
    chunk *head, *tail;
} lane;

typedef struct conn {
    int cfd, sfd; /* client side, server side; -1 = slot free */
    lane up;      /* client -> server */
    lane down;    /* server -> client */
} conn;

struct fault_proxy {
    pthread_t thread;
    pthread_mutex_t mu;
    int lfd, wake[2], target, port, stopping;
    fault_proxy_mode mode;
    int delay_ms;
    int drop_pending; /* DROP was set: close the open connections */
    int nconns;
    conn conns[MAX_CONNS];
    char url[64];
};

static void lane_clear(lane *l)
{
    while (l->head) {
        chunk *c = l->head;
        l->head = c->next;
        free(c);
    }
    l->tail = NULL;
}

static void conn_close(fault_proxy *p, conn *c)
{
    if (c->cfd < 0)
        return;
    close(c->cfd);
    if (c->sfd >= 0)
        close(c->sfd);
    c->cfd = c->sfd = -1;
    lane_clear(&c->up);
    lane_clear(&c->down);
    p->nconns--;
}

static int set_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int connect_target(int port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* Blocking connect: on the loopback it is answered at once (accepted
     * or refused). */
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_nonblock(fd);
    return fd;
}

static void accept_one(fault_proxy *p, fault_proxy_mode mode)
{
    int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK), i;
    int one = 1;
    if (fd < 0)
        return;
    if (mode == FAULT_DROP || p->nconns >= MAX_CONNS) {
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    for (i = 0; i < MAX_CONNS; i++)
        if (p->conns[i].cfd < 0)
            break;
    p->conns[i].cfd = fd;
    /* Black hole: no server behind it at all (a handshake must hang too). */
    p->conns[i].sfd = mode == FAULT_BLACKHOLE ? -1 : connect_target(p->target);
    if (mode != FAULT_BLACKHOLE && p->conns[i].sfd < 0) {
        close(fd);
        p->conns[i].cfd = -1;
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->nconns++;
    pthread_mutex_unlock(&p->mu);
}

/* Reads what is there from fd into l. -1 when the end closed or failed. */
static int pump_in(int fd, lane *l, fault_proxy_mode mode, int delay_ms,
                   int64_t now)
{
    for (;;) {
        chunk *c = malloc(sizeof *c + CHUNK);
        ssize_t n;
        if (!c)
            return -1;
        n = read(fd, c->data, CHUNK);
        if (n <= 0) {
            int again = n < 0 && (errno == EAGAIN || errno == EINTR);
            free(c);
            return again ? 0 : -1;
        }
        c->next = NULL;
        c->len = (size_t)n;
        c->off = 0;
        c->due = now + (mode == FAULT_DELAY ? delay_ms : 0);
        if (l->tail)
            l->tail->next = c;
        else
            l->head = c;
        l->tail = c;
    }
}

/* Writes the due chunks of l to fd. -1 when the end failed. */
static int pump_out(int fd, lane *l, int64_t now)
{
    while (l->head && l->head->due <= now) {
        chunk *c = l->head;
        ssize_t n = send(fd, c->data + c->off, c->len - c->off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0)
            return errno == EAGAIN || errno == EINTR ? 0 : -1;
        c->off += (size_t)n;
        if (c->off < c->len)
            return 0;
        l->head = c->next;
        if (!l->head)
            l->tail = NULL;
        free(c);
    }
    return 0;
}

/* POLLOUT when l's first chunk may be written now; otherwise lowers
 * *timeout to when it may. Nothing leaves during a black hole. */
static short lane_events(const lane *l, fault_proxy_mode mode, int64_t now,
                         int *timeout)
{
    if (!l->head || mode == FAULT_BLACKHOLE)
        return 0;
    if (l->head->due <= now)
        return POLLOUT;
    if (l->head->due - now < *timeout)
        *timeout = (int)(l->head->due - now);
    return 0;
}

static void *run(void *arg)
{
    fault_proxy *p = arg;
    struct pollfd fds[2 + 2 * MAX_CONNS];
    int who[2 + 2 * MAX_CONNS];

    for (;;) {
        fault_proxy_mode mode;
        int delay_ms, nfds = 0, i, timeout = 100;
        int64_t now = fault_now_ms();

        pthread_mutex_lock(&p->mu);
        if (p->stopping) {
            pthread_mutex_unlock(&p->mu);
            break;
        }
        mode = p->mode;
        delay_ms = p->delay_ms;
        if (p->drop_pending) {
            for (i = 0; i < MAX_CONNS; i++)
                conn_close(p, &p->conns[i]);
            p->drop_pending = 0;
        }
        /* Connections accepted during a black hole have no server behind
         * them; once it heals they end, and the client opens new ones. */
        if (mode != FAULT_BLACKHOLE)
            for (i = 0; i < MAX_CONNS; i++)
                if (p->conns[i].cfd >= 0 && p->conns[i].sfd < 0)
                    conn_close(p, &p->conns[i]);
        pthread_mutex_unlock(&p->mu);

        fds[nfds].fd = p->wake[0];
        fds[nfds].events = POLLIN;
        who[nfds++] = -1;
        fds[nfds].fd = p->lfd;
        fds[nfds].events = POLLIN;
        who[nfds++] = -2;
        for (i = 0; i < MAX_CONNS; i++) {
            conn *c = &p->conns[i];
            if (c->cfd < 0)
                continue;
            /* Read both ends always; ask for writability only when a
             * chunk may leave, and wake up when the next one will. */
            fds[nfds].fd = c->cfd;
            fds[nfds].events = POLLIN | lane_events(&c->down, mode, now,
                                                    &timeout);
            who[nfds++] = i;
            if (c->sfd >= 0) {
                fds[nfds].fd = c->sfd;
                fds[nfds].events = POLLIN | lane_events(&c->up, mode, now,
                                                        &timeout);
                who[nfds++] = i;
            }
        }
        for (i = 0; i < nfds; i++)
            fds[i].revents = 0;
        if (poll(fds, (nfds_t)nfds, timeout < 1 ? 1 : timeout) < 0 &&
            errno != EINTR)
            break;
        now = fault_now_ms();
        /* Again: a mode set while we slept applies to the bytes that woke
         * us (fault_proxy_set pokes the pipe after setting it). */
        pthread_mutex_lock(&p->mu);
        mode = p->mode;
        delay_ms = p->delay_ms;
        pthread_mutex_unlock(&p->mu);
        if (fds[0].revents) {
            char buf[64];
            while (read(p->wake[0], buf, sizeof buf) > 0)
                ;
        }
        if (fds[1].revents)
            accept_one(p, mode);
        for (i = 2; i < nfds; i++) {
            conn *c = &p->conns[who[i]];
            int is_client, bad = 0;
            if (c->cfd < 0 || !fds[i].revents)
                continue;
            is_client = fds[i].fd == c->cfd;
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                bad = pump_in(fds[i].fd, is_client ? &c->up : &c->down,
                              mode, delay_ms, now) != 0;
            if (!bad && (fds[i].revents & POLLOUT) && mode != FAULT_BLACKHOLE)
                bad = pump_out(fds[i].fd, is_client ? &c->down : &c->up,
                               now) != 0;
            if (bad) {
                pthread_mutex_lock(&p->mu);
                conn_close(p, c);
                pthread_mutex_unlock(&p->mu);
            }
        }
    }
    return NULL;
}

int fault_proxy_start(fault_proxy **out, int target_port)
{
    fault_proxy *p = calloc(1, sizeof *p);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int i, one = 1;

    *out = NULL;
    if (!p)
        return -1;
    for (i = 0; i < MAX_CONNS; i++)
        p->conns[i].cfd = p->conns[i].sfd = -1;
    p->target = target_port;
    p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (p->lfd < 0)
        goto fail_mem;
    setsockopt(p->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(p->lfd, 64) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&a, &len) != 0)
        goto fail_sock;
    p->port = ntohs(a.sin_port);
    snprintf(p->url, sizeof p->url, "redis://127.0.0.1:%d", p->port);
    if (pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        goto fail_sock;
    pthread_mutex_init(&p->mu, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        pthread_mutex_destroy(&p->mu);
        close(p->wake[0]);
        close(p->wake[1]);
        goto fail_sock;
    }
    *out = p;
    return 0;
fail_sock:
    close(p->lfd);
fail_mem:
    free(p);
    return -1;
}

int fault_proxy_port(fault_proxy *p)
{
    return p ? p->port : -1;
}

const char *fault_proxy_url(fault_proxy *p)
{
    return p ? p->url : NULL;
}

static void poke(fault_proxy *p)
{
    ssize_t r = write(p->wake[1], "x", 1);
    (void)r;
}

void fault_proxy_set(fault_proxy *p, fault_proxy_mode mode, int delay_ms)
{
    int64_t deadline = fault_now_ms() + 2000;
    pthread_mutex_lock(&p->mu);
    p->mode = mode;
    p->delay_ms = delay_ms;
    if (mode == FAULT_DROP)
        p->drop_pending = 1;
    pthread_mutex_unlock(&p->mu);
    poke(p);
    /* DROP is synchronous so that a case's next call meets closed sockets,
     * not a race with the proxy thread. */
    while (mode == FAULT_DROP && fault_now_ms() < deadline) {
        int pending;
        pthread_mutex_lock(&p->mu);
        pending = p->drop_pending;
        pthread_mutex_unlock(&p->mu);
        if (!pending)
            break;
        fault_sleep_ms(1);
    }
}

int fault_proxy_connections(fault_proxy *p)
{
    int n;
    pthread_mutex_lock(&p->mu);
    n = p->nconns;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void fault_proxy_stop(fault_proxy *p)
{
    int i;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_mutex_unlock(&p->mu);
    poke(p);
    pthread_join(p->thread, NULL);
    for (i = 0; i < MAX_CONNS; i++)
        conn_close(p, &p->conns[i]);
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int fault_proxied_redis_start(dlock_test_redis **srv, fault_proxy **proxy,
                              const char *const *args)
{
    *proxy = NULL;
    if (dlock_test_redis_start(srv, args) != 0)
        return -1;
    if (fault_proxy_start(proxy, dlock_test_redis_port(*srv)) != 0) {
        dlock_test_redis_stop(*srv);
        *srv = NULL;
        return -1;
    }
    return 0;
}

void fault_proxied_redis_stop(dlock_test_redis **srv, fault_proxy **proxy)
{
    fault_proxy_stop(*proxy);
    *proxy = NULL;
    dlock_test_redis_stop(*srv);
    *srv = NULL;
}
