/*
 * Redis backend: the byte stream under a connection (see transport.h).
 *
 * Waiting. After connecting, the socket is left blocking with SO_RCVTIMEO
 * and SO_SNDTIMEO set to the command timeout (dlock__redis_transport_set_
 * timeout), so a read whose deadline is no sooner than that costs a single
 * recv() — the common case, as fast as before TLS existed. A read or write
 * whose deadline comes sooner, a read_now, the connect and the TLS
 * handshake use MSG_DONTWAIT and poll() instead. OpenSSL reaches the socket
 * only through the BIO below, which applies the same flags, so both kinds
 * of stream wait alike.
 *
 * TLS failures are told apart by where they happen: the certificate
 * verification result says "not trusted" or "not for this host name"; any
 * other failure of SSL_connect, and a TLS error or a close before the
 * server's first byte of data (TLS 1.3 servers reject a missing client
 * certificate only after the client's side of the handshake is done), is a
 * failed handshake.
 */
#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "dlock/errors.h"
#include "internal.h"

struct dlock__redis_tls {
    SSL_CTX *ctx;
    char *sni;    /* NULL: the URL's host */
    int insecure;
};

struct dlock__redis_transport {
    int fd;
    SSL *ssl;           /* NULL: a plain socket */
    int dontwait;       /* the BIO's recv/send use MSG_DONTWAIT */
    int last_errno;     /* of the BIO's last failed system call */
    short want;         /* POLLIN, or POLLOUT while TLS must write first */
    int got_data;       /* TLS: the server sent application data */
    int starved;        /* TLS: the last read wanted more from the socket */
    int64_t timeout_ms; /* SO_RCVTIMEO / SO_SNDTIMEO; 0 = none */
    char where[300];
};

/* ---- a BIO that never raises SIGPIPE --------------------------------- */

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

static int bio_write(BIO *b, const char *buf, int len)
{
    dlock__redis_transport *t = BIO_get_data(b);
    int flags = MSG_NOSIGNAL | (t->dontwait ? MSG_DONTWAIT : 0);
    ssize_t n;

    BIO_clear_retry_flags(b);
    do {
        n = send(t->fd, buf, (size_t)len, flags);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        t->last_errno = errno;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_write(b);
    }
    return (int)n;
}

static int bio_read(BIO *b, char *buf, int len)
{
    dlock__redis_transport *t = BIO_get_data(b);
    ssize_t n;

    BIO_clear_retry_flags(b);
    do {
        n = recv(t->fd, buf, (size_t)len, t->dontwait ? MSG_DONTWAIT : 0);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        t->last_errno = errno;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            BIO_set_retry_read(b);
    }
    return (int)n;
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static void bio_method_make(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
                                 "dlock socket");
    if (!m)
        return;
    if (!BIO_meth_set_write(m, bio_write) || !BIO_meth_set_read(m, bio_read) ||
        !BIO_meth_set_ctrl(m, bio_ctrl) || !BIO_meth_set_create(m, bio_create)) {
        BIO_meth_free(m);
        return;
    }
    bio_method = m;
}

/* ---- the TLS context -------------------------------------------------- */

/* The reason of the newest OpenSSL error of this thread, which is then
 * cleared (the queue is per thread and would otherwise leak into the next
 * call's diagnosis). */
static const char *ssl_reason(void)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;
    ERR_clear_error();
    return r ? r : "unknown error";
}

/* An encrypted key must fail to load, not prompt on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)u;
    return 0;
}

static int readable_file(const char *what, const char *path, char *errbuf,
                         size_t errlen)
{
    if (access(path, R_OK) == 0)
        return 0;
    dlock__redis_errf(errbuf, errlen, "TLS: cannot read %s '%.200s': %s", what,
                      path, strerror(errno));
    return DLOCK_EINVAL;
}

void dlock__redis_tls_free(dlock__redis_tls *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t->sni);
    free(t);
}

int dlock__redis_tls_new(dlock__redis_tls **out,
                         const dlock__redis_tls_params *p, char *errbuf,
                         size_t errlen)
{
    dlock__redis_tls *t;
    int rc = DLOCK_EINVAL;

    *out = NULL;
    if ((p->cert != NULL) != (p->key != NULL)) {
        dlock__redis_errf(errbuf, errlen,
                          "TLS: a client certificate needs both cert and key");
        return DLOCK_EINVAL;
    }
    pthread_once(&bio_once, bio_method_make);
    t = calloc(1, sizeof *t);
    if (!t || !bio_method || (p->sni && !(t->sni = strdup(p->sni)))) {
        free(t);
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    t->insecure = p->insecure == 1;
    ERR_clear_error();
    t->ctx = SSL_CTX_new(TLS_client_method());
    if (!t->ctx) {
        dlock__redis_errf(errbuf, errlen, "TLS: cannot create a context: %s",
                          ssl_reason());
        rc = DLOCK_ENOMEM;
        goto fail;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE);
    /* One recv() per reply instead of one per record header and body. */
    SSL_CTX_set_read_ahead(t->ctx, 1);
    SSL_CTX_set_default_passwd_cb(t->ctx, no_passphrase);
    SSL_CTX_set_verify(t->ctx, t->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER,
                       NULL);

    if (p->cacert && readable_file("cacert", p->cacert, errbuf, errlen) != 0)
        goto fail;
    if (p->cacert || p->cacertdir) {
        if (SSL_CTX_load_verify_locations(t->ctx, p->cacert, p->cacertdir) != 1) {
            dlock__redis_errf(errbuf, errlen,
                              "TLS: cannot load the CA certificates of %s: %s",
                              p->cacert ? "cacert" : "cacertdir", ssl_reason());
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        dlock__redis_errf(errbuf, errlen,
                          "TLS: cannot load the system's CA certificates: %s",
                          ssl_reason());
        goto fail;
    }
    if (p->cert) {
        if (readable_file("cert", p->cert, errbuf, errlen) != 0 ||
            readable_file("key", p->key, errbuf, errlen) != 0)
            goto fail;
        if (SSL_CTX_use_certificate_chain_file(t->ctx, p->cert) != 1) {
            dlock__redis_errf(errbuf, errlen,
                              "TLS: cannot load the client certificate (cert): "
                              "%s", ssl_reason());
            goto fail;
        }
        /* The key's content is never quoted, only OpenSSL's reason. */
        if (SSL_CTX_use_PrivateKey_file(t->ctx, p->key, SSL_FILETYPE_PEM) != 1 ||
            SSL_CTX_check_private_key(t->ctx) != 1) {
            dlock__redis_errf(errbuf, errlen,
                              "TLS: cannot use the private key (key): %s",
                              ssl_reason());
            goto fail;
        }
    }
    *out = t;
    return 0;

fail:
    ERR_clear_error();
    dlock__redis_tls_free(t);
    return rc;
}

/* ---- waiting ------------------------------------------------------------ */

/* Waits for events on fd until deadline_ms: 0, DLOCK_ETIMEDOUT or
 * DLOCK_ECONN (poll failed; detail written). */
static int wait_fd(const dlock__redis_transport *t, short events, int64_t deadline_ms,
                   char *errbuf, size_t errlen)
{
    for (;;) {
        int64_t left = deadline_ms == INT64_MAX
                           ? -1 : deadline_ms - dlock__redis_now_ms();
        struct pollfd p;
        int n;

        /* Past the deadline, one look without waiting: what has already
         * come is taken (a caller that read other nodes' replies first
         * finds this one waiting). */
        if (deadline_ms != INT64_MAX && left < 0)
            left = 0;
        p.fd = t->fd;
        p.events = events;
        p.revents = 0;
        n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0)
            return 0;
        if (n == 0 && deadline_ms != INT64_MAX &&
            dlock__redis_now_ms() >= deadline_ms)
            return DLOCK_ETIMEDOUT;
        if (n < 0 && errno != EINTR) {
            dlock__redis_errf(errbuf, errlen, "redis %s: poll: %s", t->where,
                              strerror(errno));
            return DLOCK_ECONN;
        }
    }
}

/* Whether an operation due by deadline_ms must poll (its deadline comes
 * before the socket's own timeout would fire) rather than block. */
static int must_poll(const dlock__redis_transport *t, int64_t deadline_ms)
{
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

/* One non-blocking connect to addr by deadline_ms: the socket, or -1 with
 * *err = errno (ETIMEDOUT when the deadline passed). */
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
        for (;;) {
            int64_t left = deadline_ms == INT64_MAX
                               ? -1 : deadline_ms - dlock__redis_now_ms();
            struct pollfd p;
            socklen_t elen = sizeof e;
            int n;
            if (deadline_ms != INT64_MAX && left <= 0) {
                close(fd);
                *err = ETIMEDOUT;
                return -1;
            }
            p.fd = fd;
            p.events = POLLOUT;
            p.revents = 0;
            n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 ||
                getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0) {
                *err = errno;
                close(fd);
                return -1;
            }
            if (n == 0)
                continue;
            if (e != 0) {
                close(fd);
                *err = e;
                return -1;
            }
            break;
        }
    }
    if (family != AF_UNIX) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (set_blocking(fd, 1) != 0) {
        *err = errno;
        close(fd);
        return -1;
    }
    return fd;
}

static int open_socket(dlock__redis_transport *t, const dlock__redis_url *u,
                       int64_t deadline_ms, char *errbuf, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int err = 0, g;

    if (u->is_unix) {
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        snprintf(a.sun_path, sizeof a.sun_path, "%s", u->path);
        t->fd = connect_one(AF_UNIX, (struct sockaddr *)&a, sizeof a,
                            deadline_ms, &err);
    } else {
        memset(&hints, 0, sizeof hints);
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        snprintf(port, sizeof port, "%d", u->port);
        g = getaddrinfo(u->host, port, &hints, &res);
        if (g != 0) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: cannot connect: cannot resolve the "
                              "host: %s",
                              t->where,
                              g == EAI_SYSTEM ? strerror(errno) : gai_strerror(g));
            return g == EAI_MEMORY ? DLOCK_ENOMEM : DLOCK_ECONN;
        }
        for (ai = res; ai; ai = ai->ai_next) {
            t->fd = connect_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen,
                                deadline_ms, &err);
            if (t->fd >= 0 || err == ETIMEDOUT)
                break;
        }
        freeaddrinfo(res);
    }
    if (t->fd >= 0)
        return 0;
    if (err == ETIMEDOUT) {
        dlock__redis_errf(errbuf, errlen, "redis %s: connect timed out",
                          t->where);
        return DLOCK_ETIMEDOUT;
    }
    dlock__redis_errf(errbuf, errlen, "redis %s: cannot connect: %s", t->where,
                      strerror(err));
    return DLOCK_ECONN;
}

static int is_ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* The detail of a failed SSL_connect. */
static int handshake_failed(dlock__redis_transport *t, const char *name,
                            int ssl_err, char *errbuf, size_t errlen)
{
    long v = SSL_get_verify_result(t->ssl);

    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS: the server's certificate does not "
                          "match the host name '%.100s' (connect by a name it "
                          "lists, or set sni=)",
                          t->where, name);
    } else if (v != X509_V_OK) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS: the server's certificate is not "
                          "trusted: %s (check cacert/cacertdir)",
                          t->where, X509_verify_cert_error_string(v));
    } else if (ssl_err == SSL_ERROR_SYSCALL) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS handshake failed: %s", t->where,
                          t->last_errno ? strerror(t->last_errno)
                                        : "the server closed the connection");
    } else {
        /* An alert is the server saying no (TLS 1.2 servers refuse a
         * missing client certificate here); garbage means no TLS at all. */
        const char *why = ssl_reason();
        dlock__redis_errf(errbuf, errlen, "redis %s: TLS handshake failed: %s%s",
                          t->where, why,
                          strstr(why, "alert")
                              ? " (does the server require a client "
                                "certificate? cert=, key=)"
                              : " (is it a TLS port?)");
    }
    return DLOCK_ECONN;
}

static int open_tls(dlock__redis_transport *t, const dlock__redis_url *u,
                    const dlock__redis_tls *tls, int64_t deadline_ms,
                    char *errbuf, size_t errlen)
{
    const char *name = tls->sni ? tls->sni : u->host;
    int ip = is_ip_literal(name);
    BIO *bio;

    ERR_clear_error();
    t->ssl = SSL_new(tls->ctx);
    bio = t->ssl ? BIO_new(bio_method) : NULL;
    if (!bio) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", t->where);
        return DLOCK_ENOMEM;
    }
    BIO_set_data(bio, t);
    SSL_set_bio(t->ssl, bio, bio);
    if (!ip && SSL_set_tlsext_host_name(t->ssl, name) != 1)
        goto oom;
    if (!tls->insecure) {
        if (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name) != 1
               : SSL_set1_host(t->ssl, name) != 1)
            goto oom;
    }
    t->dontwait = 1;
    for (;;) {
        int r, e, rc;
        ERR_clear_error();
        t->last_errno = 0;
        r = SSL_connect(t->ssl);
        if (r == 1)
            break;
        e = SSL_get_error(t->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return handshake_failed(t, name, e, errbuf, errlen);
        rc = wait_fd(t, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ms,
                     errbuf, errlen);
        if (rc == DLOCK_ETIMEDOUT)
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: connect timed out in the TLS "
                              "handshake",
                              t->where);
        if (rc != 0)
            return rc;
    }
    t->dontwait = 0;
    return 0;

oom:
    ERR_clear_error();
    dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", t->where);
    return DLOCK_ENOMEM;
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
    t->fd = -1;
    t->want = POLLIN;
    snprintf(t->where, sizeof t->where, "%s", u->where);
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
    if (setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0 ||
        setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) != 0)
        return -1;
    t->timeout_ms = ms;
    return 0;
}

void dlock__redis_transport_close(dlock__redis_transport *t)
{
    if (!t)
        return;
    if (t->ssl) {
        /* Best effort, never waited for: the socket may be dead. */
        t->dontwait = 1;
        ERR_clear_error();
        SSL_shutdown(t->ssl);
        ERR_clear_error();
        SSL_free(t->ssl);
    }
    if (t->fd >= 0)
        close(t->fd);
    free(t);
}

/* ---- I/O ------------------------------------------------------------------ */

static int is_again(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK;
}

/* The detail of a lost stream: EOF, a reset, a TLS error. TLS failures
 * before the server's first byte are the handshake's (see the top). */
static int stream_lost(const dlock__redis_transport *t, int ssl_err, int sys_err,
                       char *errbuf, size_t errlen)
{
    const char *why;
    char reason[160];

    if (t->ssl && ssl_err == SSL_ERROR_SSL) {
        snprintf(reason, sizeof reason, "%s", ssl_reason());
        why = strstr(reason, "unexpected eof") ? NULL : reason;
    } else {
        ERR_clear_error();
        why = sys_err ? strerror(sys_err) : NULL;
    }
    if (t->ssl && !t->got_data) {
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS handshake failed: the server refused "
                          "it: %s (does it require a client certificate? "
                          "cert=, key=)",
                          t->where, why ? why : "it closed the connection");
        return DLOCK_ECONN;
    }
    if (!why)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: the server closed the connection",
                          t->where);
    else
        dlock__redis_errf(errbuf, errlen, "redis %s: connection lost: %s",
                          t->where, why);
    return DLOCK_ECONN;
}

/* One attempt to write: >= 0 bytes written (0: would block, t->want says
 * for what), or a negative code. */
static int write_once(dlock__redis_transport *t, const char *buf, size_t len,
                      size_t *done, char *errbuf, size_t errlen)
{
    *done = 0;
    if (!t->ssl) {
        ssize_t n;
        int flags = MSG_NOSIGNAL | (t->dontwait ? MSG_DONTWAIT : 0);
        do {
            n = send(t->fd, buf, len, flags);
        } while (n < 0 && errno == EINTR);
        if (n >= 0) {
            *done = (size_t)n;
            return 0;
        }
        if (is_again(errno)) {
            t->want = POLLOUT;
            return 0;
        }
        return stream_lost(t, 0, errno, errbuf, errlen);
    } else {
        int n, e;
        ERR_clear_error();
        t->last_errno = 0;
        n = SSL_write(t->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
        if (n > 0) {
            *done = (size_t)n;
            return 0;
        }
        e = SSL_get_error(t->ssl, n);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
            t->want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
            return 0;
        }
        return stream_lost(t, e, t->last_errno, errbuf, errlen);
    }
}

int dlock__redis_transport_write(dlock__redis_transport *t, const char *buf,
                                 size_t len, int64_t deadline_ms, char *errbuf,
                                 size_t errlen)
{
    size_t off = 0;

    t->dontwait = must_poll(t, deadline_ms);
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
        if (!t->dontwait) {
            if (deadline_ms == INT64_MAX ||
                dlock__redis_now_ms() >= deadline_ms)
                return DLOCK_ETIMEDOUT;
            t->dontwait = 1;
        }
        rc = wait_fd(t, t->want, deadline_ms, errbuf, errlen);
        if (rc != 0)
            return rc;
    }
    t->want = POLLIN;
    return 0;
}

/* One attempt to read: 0 with *got (0: would block), or a negative code. */
/* One recv() on a plain socket: 0 with *got bytes (0: it would block, or
 * the socket's timeout fired), or DLOCK_ECONN. Touches nothing of t but
 * the socket. */
static int recv_plain(const dlock__redis_transport *t, char *buf, size_t cap,
                      int flags, size_t *got, char *errbuf, size_t errlen)
{
    ssize_t n;
    *got = 0;
    do {
        n = recv(t->fd, buf, cap, flags);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        *got = (size_t)n;
        return 0;
    }
    if (n < 0 && is_again(errno))
        return 0;
    return stream_lost(t, 0, n < 0 ? errno : 0, errbuf, errlen);
}

static int read_once(dlock__redis_transport *t, char *buf, size_t cap,
                     size_t *got, char *errbuf, size_t errlen)
{
    *got = 0;
    if (!t->ssl) {
        return recv_plain(t, buf, cap, t->dontwait ? MSG_DONTWAIT : 0, got,
                          errbuf, errlen);
    } else {
        int n, e;
        ERR_clear_error();
        t->last_errno = 0;
        n = SSL_read(t->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
        if (n > 0) {
            *got = (size_t)n;
            t->got_data = 1;
            t->starved = 0;
            t->want = POLLIN;
            return 0;
        }
        e = SSL_get_error(t->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            t->starved = 1;
            t->want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
            return 0;
        }
        if (e == SSL_ERROR_ZERO_RETURN)
            return stream_lost(t, 0, 0, errbuf, errlen);
        return stream_lost(t, e, t->last_errno, errbuf, errlen);
    }
}

int dlock__redis_transport_read_now(dlock__redis_transport *t, char *buf,
                                    size_t cap, size_t *got, char *errbuf,
                                    size_t errlen)
{
    t->dontwait = 1;
    return read_once(t, buf, cap, got, errbuf, errlen);
}

int dlock__redis_transport_read(dlock__redis_transport *t, char *buf,
                                size_t cap, size_t *got, int64_t deadline_ms,
                                char *errbuf, size_t errlen)
{
    t->dontwait = must_poll(t, deadline_ms);
    for (;;) {
        int rc;
        /* Polling first: the reply to a command just sent is rarely there
         * yet, and decrypted bytes already buffered skip the wait. */
        if (t->dontwait && !dlock__redis_transport_pending(t)) {
            rc = wait_fd(t, t->want, deadline_ms, errbuf, errlen);
            if (rc != 0)
                return rc;
        }
        rc = read_once(t, buf, cap, got, errbuf, errlen);
        if (rc != 0 || *got > 0)
            return rc;
        if (!t->dontwait) {
            /* A blocking read came back empty: either the socket's timeout
             * fired (too soon, if the deadline is further: poll on), or TLS
             * consumed a record that carried no data. */
            if (t->ssl && t->last_errno == 0)
                continue;
            if (deadline_ms == INT64_MAX ||
                dlock__redis_now_ms() >= deadline_ms)
                return DLOCK_ETIMEDOUT;
            t->dontwait = 1;
        }
    }
}

int dlock__redis_transport_fd(const dlock__redis_transport *t)
{
    return t->fd;
}

int dlock__redis_transport_read_shared(const dlock__redis_transport *t,
                                       char *buf, size_t cap, size_t *got,
                                       int64_t deadline_ms, char *errbuf,
                                       size_t errlen)
{
    int flags = 0;

    *got = 0;
    if (t->ssl)
        return DLOCK_ENOTSUP;
    if (deadline_ms != INT64_MAX &&
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
    return t->ssl != NULL;
}

short dlock__redis_transport_events(const dlock__redis_transport *t)
{
    return t->want;
}

int dlock__redis_transport_pending(const dlock__redis_transport *t)
{
    /* SSL_pending: decrypted bytes of the current record; SSL_has_pending
     * also counts raw bytes read ahead but not yet decrypted. Either way
     * the socket may be quiet while a read would return data — unless the
     * last read already wanted more (the read-ahead bytes are only part of
     * a record): then only the socket can help, and reporting them would
     * make a poll loop spin. */
    return t->ssl && (SSL_pending(t->ssl) > 0 ||
                      (!t->starved && SSL_has_pending(t->ssl)));
}

int dlock__redis_transport_stale(dlock__redis_transport *t)
{
    struct pollfd p;
    char c;
    int n;

    /* Anything buffered at all, even part of a record, was not asked for. */
    if (t->ssl && (SSL_pending(t->ssl) > 0 || SSL_has_pending(t->ssl)))
        return 1;
    p.fd = t->fd;
    p.events = POLLIN;
    p.revents = 0;
    do {
        n = poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    if (n == 0)
        return 0;
    if (n < 0 || !t->ssl)
        return 1;
    /* Readable TLS: a session ticket is fine, data or a close is not. */
    t->dontwait = 1;
    ERR_clear_error();
    n = SSL_peek(t->ssl, &c, 1);
    if (n <= 0 && SSL_get_error(t->ssl, n) == SSL_ERROR_WANT_READ) {
        t->dontwait = 0;
        return 0;
    }
    ERR_clear_error();
    return 1;
}
