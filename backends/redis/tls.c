/*
 * Redis backend: TLS (OpenSSL) over a transport's socket (see tls.h) — the
 * context (trust store, client certificate, verification), SNI and the
 * server's host-name check, the handshake, TLS reads and writes and the
 * close. Every call is one attempt: transport.c does the waiting.
 *
 * TLS failures are told apart by where they happen: the certificate
 * verification result says "not trusted" or "not for this host name"; any
 * other failure of SSL_connect, and a TLS error or a close before the
 * server's first byte of data (TLS 1.3 servers reject a missing client
 * certificate only after the client's side of the handshake is done), is a
 * failed handshake.
 */
#include "tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

struct dlock__redis_tls_stream {
    SSL *ssl;
    dlock__redis_sock *s; /* the transport's socket */
    const char *name;     /* checked against the certificate (handshake) */
    int got_data;         /* the server sent application data */
    int starved;          /* the last read wanted more from the socket */
};

/* ---- a BIO that never raises SIGPIPE --------------------------------- */

static BIO_METHOD *bio_method;
static pthread_once_t bio_once = PTHREAD_ONCE_INIT;

/* After the BIO's send or recv returned n: the errno of a failure is kept
 * for the diagnosis, and "would block" is flagged for a retry (retry is
 * BIO_FLAGS_READ or BIO_FLAGS_WRITE). */
static int bio_result(BIO *b, ssize_t n, int retry)
{
    dlock__redis_sock *s = BIO_get_data(b);

    if (n < 0) {
        s->last_errno = errno;
        if (dlock__redis_sock_again(errno))
            BIO_set_flags(b, retry | BIO_FLAGS_SHOULD_RETRY);
    }
    return (int)n;
}

static int bio_write(BIO *b, const char *buf, int len)
{
    const dlock__redis_sock *s = BIO_get_data(b);

    BIO_clear_retry_flags(b);
    return bio_result(b, dlock__redis_sock_send(s, buf, (size_t)len),
                      BIO_FLAGS_WRITE);
}

static int bio_read(BIO *b, char *buf, int len)
{
    const dlock__redis_sock *s = BIO_get_data(b);

    BIO_clear_retry_flags(b);
    return bio_result(b, dlock__redis_sock_recv(s->fd, buf, (size_t)len,
                                                s->dontwait ? MSG_DONTWAIT : 0),
                      BIO_FLAGS_READ);
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

/* ---- a session: setup, handshake, close ---------------------------------- */

static int is_ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* The detail of a failed SSL_connect. */
static int handshake_failed(const dlock__redis_tls_stream *st, int ssl_err,
                            char *errbuf, size_t errlen)
{
    long v = SSL_get_verify_result(st->ssl);

    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS: the server's certificate does not "
                          "match the host name '%.100s' (connect by a name it "
                          "lists, or set sni=)",
                          st->s->where, st->name);
    } else if (v != X509_V_OK) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS: the server's certificate is not "
                          "trusted: %s (check cacert/cacertdir)",
                          st->s->where, X509_verify_cert_error_string(v));
    } else if (ssl_err == SSL_ERROR_SYSCALL) {
        ERR_clear_error();
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS handshake failed: %s", st->s->where,
                          st->s->last_errno ? strerror(st->s->last_errno)
                                            : "the server closed the connection");
    } else {
        /* An alert is the server saying no (TLS 1.2 servers refuse a
         * missing client certificate here); garbage means no TLS at all. */
        const char *why = ssl_reason();
        dlock__redis_errf(errbuf, errlen, "redis %s: TLS handshake failed: %s%s",
                          st->s->where, why,
                          strstr(why, "alert")
                              ? " (does the server require a client "
                                "certificate? cert=, key=)"
                              : " (is it a TLS port?)");
    }
    return DLOCK_ECONN;
}

void dlock__redis_tls_stream_free(dlock__redis_tls_stream *st)
{
    if (!st)
        return;
    if (st->ssl) {
        /* Best effort, never waited for: the socket may be dead. */
        st->s->dontwait = 1;
        ERR_clear_error();
        SSL_shutdown(st->ssl);
        ERR_clear_error();
        SSL_free(st->ssl);
    }
    free(st);
}

int dlock__redis_tls_stream_new(dlock__redis_tls_stream **out,
                                const dlock__redis_tls *tls,
                                dlock__redis_sock *s, const char *host,
                                char *errbuf, size_t errlen)
{
    dlock__redis_tls_stream *st = calloc(1, sizeof *st);
    int ip;
    BIO *bio;

    *out = NULL;
    if (!st)
        goto oom;
    st->s = s;
    st->name = tls->sni ? tls->sni : host;
    ip = is_ip_literal(st->name);
    ERR_clear_error();
    st->ssl = SSL_new(tls->ctx);
    bio = st->ssl ? BIO_new(bio_method) : NULL;
    if (!bio)
        goto oom;
    BIO_set_data(bio, s);
    SSL_set_bio(st->ssl, bio, bio);
    if (!ip && SSL_set_tlsext_host_name(st->ssl, st->name) != 1)
        goto oom;
    if (!tls->insecure) {
        if (ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(st->ssl),
                                               st->name) != 1
               : SSL_set1_host(st->ssl, st->name) != 1)
            goto oom;
    }
    *out = st;
    return 0;

oom:
    dlock__redis_tls_stream_free(st);
    ERR_clear_error();
    dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", s->where);
    return DLOCK_ENOMEM;
}

int dlock__redis_tls_handshake(dlock__redis_tls_stream *st, short *wait,
                               char *errbuf, size_t errlen)
{
    int r, e;

    *wait = 0;
    ERR_clear_error();
    st->s->last_errno = 0;
    r = SSL_connect(st->ssl);
    if (r == 1)
        return 0;
    e = SSL_get_error(st->ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        return handshake_failed(st, e, errbuf, errlen);
    *wait = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
    return 0;
}

/* ---- I/O ------------------------------------------------------------------ */

/* The detail of a lost stream (see the top): before the server's first
 * byte of data, a refused handshake. */
static int stream_lost(const dlock__redis_tls_stream *st, int ssl_err,
                       int sys_err, char *errbuf, size_t errlen)
{
    const char *why;
    char reason[160];

    if (ssl_err == SSL_ERROR_SSL) {
        snprintf(reason, sizeof reason, "%s", ssl_reason());
        why = strstr(reason, "unexpected eof") ? NULL : reason;
    } else {
        ERR_clear_error();
        why = sys_err ? strerror(sys_err) : NULL;
    }
    if (!st->got_data) {
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: TLS handshake failed: the server refused "
                          "it: %s (does it require a client certificate? "
                          "cert=, key=)",
                          st->s->where, why ? why : "it closed the connection");
        return DLOCK_ECONN;
    }
    return dlock__redis_sock_lost(st->s, why, errbuf, errlen);
}

int dlock__redis_tls_write(dlock__redis_tls_stream *st, const char *buf,
                           size_t len, size_t *done, char *errbuf,
                           size_t errlen)
{
    int n, e;

    *done = 0;
    ERR_clear_error();
    st->s->last_errno = 0;
    n = SSL_write(st->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
    if (n > 0) {
        *done = (size_t)n;
        return 0;
    }
    e = SSL_get_error(st->ssl, n);
    if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) {
        st->s->want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 0;
    }
    return stream_lost(st, e, st->s->last_errno, errbuf, errlen);
}

int dlock__redis_tls_read(dlock__redis_tls_stream *st, char *buf, size_t cap,
                          size_t *got, char *errbuf, size_t errlen)
{
    int n, e;

    *got = 0;
    ERR_clear_error();
    st->s->last_errno = 0;
    n = SSL_read(st->ssl, buf, cap > INT32_MAX ? INT32_MAX : (int)cap);
    if (n > 0) {
        *got = (size_t)n;
        st->got_data = 1;
        st->starved = 0;
        st->s->want = POLLIN;
        return 0;
    }
    e = SSL_get_error(st->ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        st->starved = 1;
        st->s->want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        return 0;
    }
    if (e == SSL_ERROR_ZERO_RETURN)
        return stream_lost(st, 0, 0, errbuf, errlen);
    return stream_lost(st, e, st->s->last_errno, errbuf, errlen);
}

int dlock__redis_tls_pending(const dlock__redis_tls_stream *st)
{
    /* SSL_pending: decrypted bytes of the current record; SSL_has_pending
     * also counts raw bytes read ahead but not yet decrypted. Either way
     * the socket may be quiet while a read would return data — unless the
     * last read already wanted more (the read-ahead bytes are only part of
     * a record): then only the socket can help, and reporting them would
     * make a poll loop spin. */
    return SSL_pending(st->ssl) > 0 ||
           (!st->starved && SSL_has_pending(st->ssl));
}

int dlock__redis_tls_buffered(const dlock__redis_tls_stream *st)
{
    return SSL_pending(st->ssl) > 0 || SSL_has_pending(st->ssl);
}

int dlock__redis_tls_stale(dlock__redis_tls_stream *st)
{
    char c;
    int n;

    /* A session ticket is fine, data or a close is not. */
    ERR_clear_error();
    n = SSL_peek(st->ssl, &c, 1);
    if (n <= 0 && SSL_get_error(st->ssl, n) == SSL_ERROR_WANT_READ)
        return 0;
    ERR_clear_error();
    return 1;
}
