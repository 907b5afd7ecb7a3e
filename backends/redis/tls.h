/*
 * Redis backend (private): TLS over a transport's socket — the seam
 * between transport.c and tls.c, as hiredis keeps ssl.c apart from net.c.
 *
 * transport.c owns the socket and every wait: it connects, polls until
 * deadlines, and picks the plain or the TLS path of each read and write.
 * tls.c owns everything OpenSSL (the context, certificate and host-name
 * verification, SNI, the handshake, TLS reads and writes, the close) and
 * never waits: each call below is one attempt, and when OpenSSL would block
 * it says what to wait for and returns, for transport.c to poll and call
 * again. Only tls.c includes OpenSSL's headers; files above the transport
 * include transport.h, not this one, and cannot tell the kinds apart.
 *
 * OpenSSL reaches the socket only through a BIO of tls.c's own, which sends
 * and receives with the transport's dlock__redis_sock_send/_recv: the same
 * flags as a plain stream (MSG_NOSIGNAL; MSG_DONTWAIT when the transport
 * polls), so both kinds wait alike and neither raises SIGPIPE.
 *
 * Like the transport, a stream has one user at a time.
 */
#ifndef DLOCK_REDIS_TLS_H
#define DLOCK_REDIS_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "transport.h"

/* ---- given by transport.c ---------------------------------------------- */

/* The socket under a stream: the transport's, shared with the TLS stream
 * on it (its BIO reads fd and dontwait and sets last_errno; its reads and
 * writes set want). */
typedef struct dlock__redis_sock {
    int fd;
    int dontwait;   /* recv/send use MSG_DONTWAIT (the transport polls) */
    int last_errno; /* TLS: of the BIO's last failed system call */
    short want;     /* POLLIN, or POLLOUT while TLS must write first */
    char where[300];
} dlock__redis_sock;

/* send() of s's socket with MSG_NOSIGNAL, and MSG_DONTWAIT when
 * s->dontwait; repeated on EINTR. Returns as send() (errno set). */
ssize_t dlock__redis_sock_send(const dlock__redis_sock *s, const void *buf,
                               size_t len);
/* recv() of fd with flags, repeated on EINTR. Returns as recv(). */
ssize_t dlock__redis_sock_recv(int fd, void *buf, size_t cap, int flags);
/* Whether errno e means "would block" (or a socket timeout fired). */
int dlock__redis_sock_again(int e);
/* The detail of a lost stream: "the server closed the connection" (why
 * NULL) or "connection lost: <why>". Returns DLOCK_ECONN. */
int dlock__redis_sock_lost(const dlock__redis_sock *s, const char *why,
                           char *errbuf, size_t errlen);

/* ---- given by tls.c ---------------------------------------------------- */

/* One TLS session (an SSL object) over a transport's socket. */
typedef struct dlock__redis_tls_stream dlock__redis_tls_stream;

/* A session over s (connected, not yet handshaken) in tls's context: SNI
 * and the name checked against the certificate are tls's sni if set, else
 * host (an IP host is checked as an IP address and sends no SNI). s must
 * outlive the stream, host the handshake. 0 or DLOCK_ENOMEM (detail
 * written, *out NULL). */
int dlock__redis_tls_stream_new(dlock__redis_tls_stream **out,
                                const dlock__redis_tls *tls,
                                dlock__redis_sock *s, const char *host,
                                char *errbuf, size_t errlen);

/* One step of the handshake: 0 with *wait = 0 (done) or the poll events
 * to wait for before the next step (POLLIN or POLLOUT); DLOCK_ECONN when
 * it failed, the detail telling an untrusted certificate, a host-name
 * mismatch and a refused or non-TLS handshake apart. */
int dlock__redis_tls_handshake(dlock__redis_tls_stream *st, short *wait,
                               char *errbuf, size_t errlen);

/* One SSL_write: 0 with *done bytes (0: it would block, s->want says for
 * what), or DLOCK_ECONN. */
int dlock__redis_tls_write(dlock__redis_tls_stream *st, const char *buf,
                           size_t len, size_t *done, char *errbuf,
                           size_t errlen);

/* One SSL_read: 0 with *got bytes (0: it would block, s->want says for
 * what, or a record carried no data), or DLOCK_ECONN (a close, a reset, a
 * TLS error; before the server's first byte of data, a refused
 * handshake). */
int dlock__redis_tls_read(dlock__redis_tls_stream *st, char *buf, size_t cap,
                          size_t *got, char *errbuf, size_t errlen);

/* Whether a read may return data while the socket is quiet (see
 * dlock__redis_transport_pending). */
int dlock__redis_tls_pending(const dlock__redis_tls_stream *st);

/* Whether anything at all is buffered, even part of a record. */
int dlock__redis_tls_buffered(const dlock__redis_tls_stream *st);

/* For an idle stream whose socket is readable: 1 if data or a close came,
 * 0 if only a protocol record (a session ticket), now consumed. */
int dlock__redis_tls_stale(dlock__redis_tls_stream *st);

/* Attempts a close_notify, never waiting for it, and frees. NULL ok. */
void dlock__redis_tls_stream_free(dlock__redis_tls_stream *st);

#endif /* DLOCK_REDIS_TLS_H */
