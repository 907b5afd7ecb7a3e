/*
 * Redis backend (private): a byte stream to one server address — a TCP or
 * unix socket, or TLS (OpenSSL) over TCP. Nothing above this file knows
 * which: conn.c writes RESP into it and feeds hiredis's reader from it.
 * transport.c holds the sockets, the deadlines and the dispatch; tls.c
 * everything OpenSSL (the context below included), behind the private
 * seam tls.h that only the two of them include.
 *
 * Every socket is non-blocking; each blocking call waits with poll() until
 * its deadline (monotonic ms; INT64_MAX = no limit), so a connect, a TLS
 * handshake, a write and a read are all bounded the same way.
 *
 * No write raises SIGPIPE, whoever the caller is: plain sockets are written
 * with send(MSG_NOSIGNAL), and OpenSSL is given a BIO of our own (tls.c)
 * whose write is that same send (OpenSSL's socket BIO uses write(), which
 * would signal on a connection the server has closed). That needs no
 * signal mask and no process-wide SIG_IGN, so it holds in any thread of
 * any application.
 *
 * A transport has one user at a time (a pool borrower or the subscriber
 * thread); a dlock__redis_tls (the SSL_CTX: trust store, client
 * certificate) is shared by all transports of a backend, read-only after
 * creation, and safe to use from any thread.
 */
#ifndef DLOCK_REDIS_TRANSPORT_H
#define DLOCK_REDIS_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "url.h"

typedef struct dlock__redis_tls dlock__redis_tls;
typedef struct dlock__redis_transport dlock__redis_transport;

/* Builds the TLS context from p (merged URL + options): the trust store
 * (cacert / cacertdir, else the system's default paths), the client
 * certificate and key if given (both or neither), and verification of the
 * server's certificate unless p->insecure == 1. Loading happens here, once,
 * so an unreadable file is a clear DLOCK_EINVAL at backend creation (the
 * detail names the parameter and the path). 0, DLOCK_EINVAL or
 * DLOCK_ENOMEM. Defined in tls.c, as the context's free. */
int dlock__redis_tls_new(dlock__redis_tls **out,
                         const dlock__redis_tls_params *p, char *errbuf,
                         size_t errlen);
void dlock__redis_tls_free(dlock__redis_tls *t);

/* Connects to u's address (every address the host resolves to, in turn)
 * and, with tls non-NULL, runs the TLS handshake: SNI and the name checked
 * against the certificate are p->sni if set, else the URL's host (an IP
 * host is checked as an IP address and sends no SNI). All by deadline_ms.
 * Returns 0, DLOCK_ETIMEDOUT, DLOCK_ECONN or DLOCK_ENOMEM; the detail
 * ("redis <where>: ...") tells a refused or unreachable address, a failed
 * TLS handshake, an untrusted certificate and a host-name mismatch apart. */
int dlock__redis_transport_open(dlock__redis_transport **out,
                                const dlock__redis_url *u,
                                const dlock__redis_tls *tls,
                                int64_t deadline_ms, char *errbuf,
                                size_t errlen);

/* Whether the TCP socket fd is connected to itself (its own address is its
 * peer's): what a connect to a port nobody listens on gives, now and then,
 * when the kernel picks that very port as the connection's own (a TCP
 * "simultaneous open" on loopback). Such a connection keeps the server from
 * binding its port and answers every command with the command itself, so
 * the transport takes it for a refused connect. 1, or 0 (also when either
 * address cannot be read). */
int dlock__redis_self_connected(int fd);

/* Sets the socket's own send and receive timeout (SO_SNDTIMEO and
 * SO_RCVTIMEO; 0 = none): reads and writes whose deadline is no sooner
 * block in one system call bounded by it. 0 or -1 (errno). */
int dlock__redis_transport_set_timeout(dlock__redis_transport *t, int64_t ms);

/* Closes (a TLS close_notify is attempted, never waited for). NULL ok. */
void dlock__redis_transport_close(dlock__redis_transport *t);

/* Writes len bytes whole by deadline_ms (and within the socket's timeout):
 * 0, DLOCK_ETIMEDOUT (no detail written: the caller knows the context) or
 * DLOCK_ECONN. After a failure the stream is out of step: discard it. */
int dlock__redis_transport_write(dlock__redis_transport *t, const char *buf,
                                 size_t len, int64_t deadline_ms, char *errbuf,
                                 size_t errlen);

/* Reads what is available now, without waiting: 0 with *got bytes (0 when
 * nothing is ready; with TLS also when only a protocol record such as a
 * session ticket arrived), or DLOCK_ECONN (closed, reset, TLS error). */
int dlock__redis_transport_read_now(dlock__redis_transport *t, char *buf,
                                    size_t cap, size_t *got, char *errbuf,
                                    size_t errlen);

/* Reads at least one byte, waiting until deadline_ms (and within the
 * socket's timeout): 0 (*got > 0), DLOCK_ETIMEDOUT (no detail written) or
 * DLOCK_ECONN. */
int dlock__redis_transport_read(dlock__redis_transport *t, char *buf,
                                size_t cap, size_t *got, int64_t deadline_ms,
                                char *errbuf, size_t errlen);

/* For a reader that runs while another thread writes (the multiplexed
 * connection): reads at least one byte or waits until deadline_ms, touching
 * nothing of t but its socket. Plain TCP only (dlock__redis_transport_tls:
 * a TLS stream reads and writes through one SSL object; DLOCK_ENOTSUP).
 * The wait is a blocking recv() when the socket's own timeout ends it no
 * more than DLOCK__REDIS_SHARED_SLACK_MS after deadline_ms (one system call
 * instead of poll() + recv()), else (and always in a fiber)
 * dlock__wait_fd (core/wait.h). 0 with *got bytes (0: the wait
 * ended with nothing), DLOCK_ECONN or DLOCK_ENOTSUP. */
#define DLOCK__REDIS_SHARED_SLACK_MS 5
int dlock__redis_transport_read_shared(const dlock__redis_transport *t,
                                       char *buf, size_t cap, size_t *got,
                                       int64_t deadline_ms, char *errbuf,
                                       size_t errlen);
int dlock__redis_transport_tls(const dlock__redis_transport *t);


/* For a poll() loop of one's own (the subscriber): the socket, the events
 * to wait for before the next read_now (POLLIN, plus POLLOUT while TLS
 * waits to write), and whether bytes are already decrypted and buffered
 * (SSL_pending): then poll must not sleep, the socket may stay quiet while
 * read_now has data. */
int dlock__redis_transport_fd(const dlock__redis_transport *t);
short dlock__redis_transport_events(const dlock__redis_transport *t);
int dlock__redis_transport_pending(const dlock__redis_transport *t);

/* True if an idle stream has something to read or is closed: it cannot
 * carry a command in step. With TLS, a protocol record alone (a session
 * ticket) is consumed and does not count. One poll(), no round trip. */
int dlock__redis_transport_stale(dlock__redis_transport *t);

#endif /* DLOCK_REDIS_TRANSPORT_H */
