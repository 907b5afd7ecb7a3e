/*
 * Redis backend: the byte stream under a connection (see transport.h) — a
 * TCP or unix socket: connecting, reading and writing by deadlines, and the
 * dispatch of each read and write to the plain socket or to the TLS session
 * over it (tls.c, which holds everything OpenSSL; tls.h is the seam).
 *
 * Waiting. After connecting, the socket is left blocking with SO_RCVTIMEO
 * and SO_SNDTIMEO set to the command timeout (dlock__redis_transport_set_
 * timeout), so a read whose deadline is no sooner than that costs a single
 * recv() — the common case, as fast as before TLS existed. A read or write
 * whose deadline comes sooner, a read_now, the connect and the TLS
 * handshake use MSG_DONTWAIT and poll() instead. OpenSSL reaches the socket
 * only through tls.c's BIO, which sends and receives with the functions
 * below and the same flags, so both kinds of stream wait alike; tls.c never
 * waits itself.
 */
#include "transport.h"

#include "core/fiber.h"
#include "core/wait.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "dlock/errors.h"
#include "internal.h"
#include "tls.h"

struct dlock__redis_transport {
    dlock__redis_sock s;          /* the socket, shared with tls (tls.h) */
    dlock__redis_tls_stream *tls; /* NULL: a plain socket */
    int64_t timeout_ms;           /* SO_RCVTIMEO / SO_SNDTIMEO; 0 = none */
};

/* ---- the socket (tls.h) ------------------------------------------------- */

ssize_t dlock__redis_sock_send(const dlock__redis_sock *s, const void *buf,
                               size_t len)
{
    int flags = MSG_NOSIGNAL | (s->dontwait ? MSG_DONTWAIT : 0);
    ssize_t n;

    do {
        n = send(s->fd, buf, len, flags);
    } while (n < 0 && errno == EINTR);
    return n;
}

ssize_t dlock__redis_sock_recv(int fd, void *buf, size_t cap, int flags)
{
    ssize_t n;

    do {
        n = recv(fd, buf, cap, flags);
    } while (n < 0 && errno == EINTR);
    return n;
}

int dlock__redis_sock_again(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK;
}

int dlock__redis_sock_lost(const dlock__redis_sock *s, const char *why,
                           char *errbuf, size_t errlen)
{
    if (!why)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: the server closed the connection",
                          s->where);
    else
        dlock__redis_errf(errbuf, errlen, "redis %s: connection lost: %s",
                          s->where, why);
    return DLOCK_ECONN;
}

/* ---- waiting ------------------------------------------------------------ */

/* Waits for events on fd until deadline_ms: 0, DLOCK_ETIMEDOUT or
 * DLOCK_ECONN (poll failed; detail written). */
static int wait_fd(const dlock__redis_transport *t, short events, int64_t deadline_ms,
                   char *errbuf, size_t errlen)
{
    int n = dlock__wait_fd(t->s.fd, events, deadline_ms);

    if (n > 0)
        return 0;
    if (n == 0)
        return DLOCK_ETIMEDOUT;
    dlock__redis_errf(errbuf, errlen, "redis %s: poll: %s", t->s.where,
                      strerror(errno));
    return DLOCK_ECONN;
}

/* Whether an operation due by deadline_ms must poll (its deadline comes
 * before the socket's own timeout would fire, or it runs in a loop's fiber,
 * which must not block the loop's thread) rather than block. */
static int must_poll(const dlock__redis_transport *t, int64_t deadline_ms)
{
    if (dlock__fiber_current())
        return 1;
    if (deadline_ms == INT64_MAX)
        return 0;
    return t->timeout_ms <= 0 ||
           deadline_ms < dlock__redis_now_ms() + t->timeout_ms;
}
/* ---- connecting --------------------------------------------------------- */

static int set_blocking(int fd, int blocking)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0)
        return -1;
    fl = blocking ? (fl & ~O_NONBLOCK) : (fl | O_NONBLOCK);
    return fcntl(fd, F_SETFL, fl);
}

int dlock__redis_self_connected(int fd)
{
    struct sockaddr_storage me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;

    if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || ml != pl ||
        me.ss_family != peer.ss_family)
        return 0;
    if (me.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const void *)&me, *b = (const void *)&peer;
        return a->sin_port == b->sin_port && a->sin_addr.s_addr == b->sin_addr.s_addr;
    }
    if (me.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const void *)&me, *b = (const void *)&peer;
        return a->sin6_port == b->sin6_port &&
               memcmp(&a->sin6_addr, &b->sin6_addr, sizeof a->sin6_addr) == 0;
    }
    return 0;
}

/* One non-blocking connect to addr by deadline_ms: the socket, or -1 with
 * *err = errno (ETIMEDOUT when the deadline passed; ECONNREFUSED for a
 * connection to itself, dlock__redis_self_connected). */
static int connect_one(int family, const struct sockaddr *addr, socklen_t alen,
                       int64_t deadline_ms, int *err)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *err = errno;
        return -1;
    }
    if (connect(fd, addr, alen) != 0) {
        int e = errno;
        if (e != EINPROGRESS && e != EAGAIN && e != EINTR) {
            close(fd);
            *err = e;
            return -1;
        }
        socklen_t elen = sizeof e;
        int n = deadline_ms != INT64_MAX && dlock__redis_now_ms() >= deadline_ms
                    ? 0
                    : dlock__wait_fd(fd, POLLOUT, deadline_ms);
        if (n == 0) {
            close(fd);
            *err = ETIMEDOUT;
            return -1;
        }
        if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0) {
            *err = errno;
            close(fd);
            return -1;
        }
        if (e != 0) {
            close(fd);
            *err = e;
            return -1;
        }
    }
    if (family != AF_UNIX) {
        int one = 1;

        if (dlock__redis_self_connected(fd)) {
            close(fd);
            *err = ECONNREFUSED;
            return -1;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (set_blocking(fd, 1) != 0) {
        *err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

/* A host name's lookup, which may block for seconds (a slow resolver):
 * in a loop's fiber it runs on a helper thread (dlock__wait_offload),
 * which owns it if the connect's deadline passes first, so it holds its
 * own copy of what getaddrinfo reads. */
typedef struct lookup {
    char port[16];
    struct addrinfo *res;
    int g, err; /* getaddrinfo's result, and errno after it */
    char host[]; /* the URL's, copied */
} lookup;

static void lookup_run(void *arg)
{
    lookup *k = arg;
    struct addrinfo hints;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    k->g = getaddrinfo(k->host, k->port, &hints, &k->res);
    k->err = errno;
}

/* Whether host is an address literal: getaddrinfo then answers without
 * asking anyone, and no helper thread is worth starting. */
static int numeric_host(const char *host)
{
    unsigned char a[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1;
}

static void lookup_free(void *arg)
{
    lookup *k = arg;

    if (k->g == 0 && k->res)
        freeaddrinfo(k->res);
    free(k);
}

static int open_socket(dlock__redis_transport *t, const dlock__redis_url *u,
                       int64_t deadline_ms, char *errbuf, size_t errlen)
{
    struct addrinfo *res = NULL, *ai;
    size_t hlen;
    lookup *k;
    int err = 0, g;

    if (u->is_unix) {
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        snprintf(a.sun_path, sizeof a.sun_path, "%s", u->path);
        t->s.fd = connect_one(AF_UNIX, (struct sockaddr *)&a, sizeof a,
                            deadline_ms, &err);
    } else {
        hlen = strlen(u->host);
        k = malloc(sizeof *k + hlen + 1);
        if (!k) {
            dlock__redis_errf(errbuf, errlen, "redis %s: cannot connect: out of memory",
                              t->s.where);
            return DLOCK_ENOMEM;
        }
        memcpy(k->host, u->host, hlen + 1);
        snprintf(k->port, sizeof k->port, "%d", u->port);
        k->res = NULL;
        k->g = EAI_AGAIN;
        k->err = 0;
        if (numeric_host(k->host))
            lookup_run(k);
        else if (dlock__wait_offload(lookup_run, k, lookup_free, deadline_ms) != 0) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: cannot connect: the host's lookup did not "
                              "end in time",
                              t->s.where);
            return DLOCK_ETIMEDOUT;
        }
        g = k->g;
        res = k->res;
        if (g != 0) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: cannot connect: cannot resolve the "
                              "host: %s",
                              t->s.where,
                              g == EAI_SYSTEM ? strerror(k->err) : gai_strerror(g));
            free(k);
            return g == EAI_MEMORY ? DLOCK_ENOMEM : DLOCK_ECONN;
        }
        free(k);
        for (ai = res; ai; ai = ai->ai_next) {
            t->s.fd = connect_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen,
                                deadline_ms, &err);
            if (t->s.fd >= 0 || err == ETIMEDOUT)
                break;
        }
        freeaddrinfo(res);
    }
    if (t->s.fd >= 0)
        return 0;
    if (err == ETIMEDOUT) {
        dlock__redis_errf(errbuf, errlen, "redis %s: connect timed out",
                          t->s.where);
        return DLOCK_ETIMEDOUT;
    }
    dlock__redis_errf(errbuf, errlen, "redis %s: cannot connect: %s", t->s.where,
                      strerror(err));
    return DLOCK_ECONN;
}

/* The TLS handshake over the connected socket, by deadline_ms: tls.c
 * takes each step, the waits between them are made here. */
static int open_tls(dlock__redis_transport *t, const dlock__redis_url *u,
                    const dlock__redis_tls *tls, int64_t deadline_ms,
                    char *errbuf, size_t errlen)
{
    int rc = dlock__redis_tls_stream_new(&t->tls, tls, &t->s, u->host, errbuf,
                                         errlen);
    if (rc != 0)
        return rc;
    t->s.dontwait = 1;
    for (;;) {
        short wait;
        rc = dlock__redis_tls_handshake(t->tls, &wait, errbuf, errlen);
        if (rc != 0)
            return rc;
        if (!wait)
            break;
        rc = wait_fd(t, wait, deadline_ms, errbuf, errlen);
        if (rc == DLOCK_ETIMEDOUT)
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: connect timed out in the TLS "
                              "handshake",
                              t->s.where);
        if (rc != 0)
            return rc;
    }
    t->s.dontwait = 0;
    return 0;
}

int dlock__redis_transport_open(dlock__redis_transport **out,
                                const dlock__redis_url *u,
                                const dlock__redis_tls *tls,
                                int64_t deadline_ms, char *errbuf,
                                size_t errlen)
{
    dlock__redis_transport *t = calloc(1, sizeof *t);
    int rc;

    *out = NULL;
    if (!t) {
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", u->where);
        return DLOCK_ENOMEM;
    }
    t->s.fd = -1;
    t->s.want = POLLIN;
    snprintf(t->s.where, sizeof t->s.where, "%s", u->where);
    rc = open_socket(t, u, deadline_ms, errbuf, errlen);
    if (rc == 0 && tls && !u->is_unix)
        rc = open_tls(t, u, tls, deadline_ms, errbuf, errlen);
    if (rc != 0) {
        dlock__redis_transport_close(t);
        return rc;
    }
    *out = t;
    return 0;
}

int dlock__redis_transport_set_timeout(dlock__redis_transport *t, int64_t ms)
{
    struct timeval tv;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    if (setsockopt(t->s.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(t->s.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        return -1;
    t->timeout_ms = ms;
    return 0;
}

void dlock__redis_transport_close(dlock__redis_transport *t)
{
    if (!t)
        return;
    dlock__redis_tls_stream_free(t->tls);
    if (t->s.fd >= 0)
        close(t->s.fd);
    free(t);
}

/* ---- I/O ------------------------------------------------------------------ */

/* One attempt to write: >= 0 bytes written (0: would block, t->s.want
 * says for what), or a negative code. */
static int write_once(dlock__redis_transport *t, const char *buf, size_t len,
                      size_t *done, char *errbuf, size_t errlen)
{
    ssize_t n;

    if (t->tls)
        return dlock__redis_tls_write(t->tls, buf, len, done, errbuf, errlen);
    *done = 0;
    n = dlock__redis_sock_send(&t->s, buf, len);
    if (n >= 0) {
        *done = (size_t)n;
        return 0;
    }
    if (dlock__redis_sock_again(errno)) {
        t->s.want = POLLOUT;
        return 0;
    }
    return dlock__redis_sock_lost(&t->s, strerror(errno), errbuf, errlen);
}

int dlock__redis_transport_write(dlock__redis_transport *t, const char *buf,
                                 size_t len, int64_t deadline_ms, char *errbuf,
                                 size_t errlen)
{
    size_t off = 0;

    t->s.dontwait = must_poll(t, deadline_ms);
    while (off < len) {
        size_t n;
        int rc = write_once(t, buf + off, len - off, &n, errbuf, errlen);
        if (rc != 0)
            return rc;
        off += n;
        if (n > 0)
            continue;
        /* Would block: the socket's own timeout fired (too soon, if the
         * deadline is further: poll on), or poll() is the way to wait. */
        if (!t->s.dontwait) {
            if (deadline_ms == INT64_MAX ||
                dlock__redis_now_ms() >= deadline_ms)
                return DLOCK_ETIMEDOUT;
            t->s.dontwait = 1;
        }
        rc = wait_fd(t, t->s.want, deadline_ms, errbuf, errlen);
        if (rc != 0)
            return rc;
    }
    t->s.want = POLLIN;
    return 0;
}

/* One recv() on a plain socket: 0 with *got bytes (0: it would block, or
 * the socket's timeout fired), or DLOCK_ECONN. Touches nothing of t but
 * the socket. */
static int recv_plain(const dlock__redis_transport *t, char *buf, size_t cap,
                      int flags, size_t *got, char *errbuf, size_t errlen)
{
    ssize_t n;

    *got = 0;
    n = dlock__redis_sock_recv(t->s.fd, buf, cap, flags);
    if (n > 0) {
        *got = (size_t)n;
        return 0;
    }
    if (n < 0 && dlock__redis_sock_again(errno))
        return 0;
    return dlock__redis_sock_lost(&t->s, n < 0 ? strerror(errno) : NULL,
                                  errbuf, errlen);
}

/* One attempt to read: 0 with *got (0: would block), or a negative code. */
static int read_once(dlock__redis_transport *t, char *buf, size_t cap,
                     size_t *got, char *errbuf, size_t errlen)
{
    if (t->tls)
        return dlock__redis_tls_read(t->tls, buf, cap, got, errbuf, errlen);
    return recv_plain(t, buf, cap, t->s.dontwait ? MSG_DONTWAIT : 0, got,
                      errbuf, errlen);
}

int dlock__redis_transport_read_now(dlock__redis_transport *t, char *buf,
                                    size_t cap, size_t *got, char *errbuf,
                                    size_t errlen)
{
    t->s.dontwait = 1;
    return read_once(t, buf, cap, got, errbuf, errlen);
}

int dlock__redis_transport_read(dlock__redis_transport *t, char *buf,
                                size_t cap, size_t *got, int64_t deadline_ms,
                                char *errbuf, size_t errlen)
{
    t->s.dontwait = must_poll(t, deadline_ms);
    for (;;) {
        int rc;
        /* Polling first: the reply to a command just sent is rarely there
         * yet, and decrypted bytes already buffered skip the wait. */
        if (t->s.dontwait && !dlock__redis_transport_pending(t)) {
            rc = wait_fd(t, t->s.want, deadline_ms, errbuf, errlen);
            if (rc != 0)
                return rc;
        }
        rc = read_once(t, buf, cap, got, errbuf, errlen);
        if (rc != 0 || *got > 0)
            return rc;
        if (!t->s.dontwait) {
            /* A blocking read came back empty: either the socket's timeout
             * fired (too soon, if the deadline is further: poll on), or TLS
             * consumed a record that carried no data. */
            if (t->tls && t->s.last_errno == 0)
                continue;
            if (deadline_ms == INT64_MAX ||
                dlock__redis_now_ms() >= deadline_ms)
                return DLOCK_ETIMEDOUT;
            t->s.dontwait = 1;
        }
    }
}

int dlock__redis_transport_fd(const dlock__redis_transport *t)
{
    return t->s.fd;
}

int dlock__redis_transport_read_shared(const dlock__redis_transport *t,
                                       char *buf, size_t cap, size_t *got,
                                       int64_t deadline_ms, char *errbuf,
                                       size_t errlen)
{
    int flags = 0;

    *got = 0;
    if (t->tls)
        return DLOCK_ENOTSUP;
    if (dlock__fiber_current()) {
        /* what has come is taken without a wait (many replies in flight:
         * often), else the fiber parks */
        int rc = recv_plain(t, buf, cap, MSG_DONTWAIT, got, errbuf, errlen);
        if (rc != 0 || *got > 0 || deadline_ms <= dlock__redis_now_ms())
            return rc; /* (a deadline already past: that one look) */
        rc = wait_fd(t, POLLIN, deadline_ms, errbuf, errlen);
        if (rc == DLOCK_ETIMEDOUT)
            return 0;
        if (rc != 0)
            return rc;
        flags = MSG_DONTWAIT;
    } else if (deadline_ms != INT64_MAX &&
               (t->timeout_ms <= 0 ||
                deadline_ms + DLOCK__REDIS_SHARED_SLACK_MS <
                    dlock__redis_now_ms() + t->timeout_ms)) {
        int rc = wait_fd(t, POLLIN, deadline_ms, errbuf, errlen);
        if (rc == DLOCK_ETIMEDOUT)
            return 0;
        if (rc != 0)
            return rc;
        flags = MSG_DONTWAIT;
    }
    return recv_plain(t, buf, cap, flags, got, errbuf, errlen);
}

int dlock__redis_transport_tls(const dlock__redis_transport *t)
{
    return t->tls != NULL;
}

short dlock__redis_transport_events(const dlock__redis_transport *t)
{
    return t->s.want;
}

int dlock__redis_transport_pending(const dlock__redis_transport *t)
{
    return t->tls && dlock__redis_tls_pending(t->tls);
}

int dlock__redis_transport_stale(dlock__redis_transport *t)
{
    int n;

    /* Anything buffered at all, even part of a record, was not asked for. */
    if (t->tls && dlock__redis_tls_buffered(t->tls))
        return 1;
    n = dlock__wait_fd(t->s.fd, POLLIN, 0); /* a look, no wait */
    if (n == 0)
        return 0;
    if (n < 0 || !t->tls)
        return 1;
    /* Readable TLS: a session ticket is fine, data or a close is not. */
    t->s.dontwait = 1;
    if (dlock__redis_tls_stale(t->tls))
        return 1;
    t->s.dontwait = 0;
    return 0;
}
