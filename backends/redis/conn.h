/*
 * Redis backend (private): one connection — a byte stream (transport.h:
 * TCP, unix socket or TLS) with hiredis's reply parser (redisReader) on top.
 * Open it (connect, handshake: AUTH, SELECT, a Redis check), write commands
 * in RESP, read replies, and turn failures into dlock codes.
 *
 * hiredis is only the parser (redisReaderCreate/Feed/GetReply, the API
 * common to hiredis 0.14 and 1.x): the socket, TLS, timeouts and writes are
 * ours, so no write raises SIGPIPE (transport.h) and every wait is bounded
 * by a deadline.
 *
 * A connection is not thread-safe; each one has a single user at a time
 * (a pool borrower, the subscriber thread, or a mux's writer and reader,
 * which serialize their calls into it: mux.h).
 */
#ifndef DLOCK_REDIS_CONN_H
#define DLOCK_REDIS_CONN_H

#include <hiredis/hiredis.h>

#include "internal.h"
#include "transport.h"

typedef struct dlock__redis_conn {
    dlock__redis_transport *t;
    redisReader *reader;
    int broken; /* a failure left the stream out of step: never reuse */
    /* The reply cap (api/dlock/redis.h, "Reply size"): the reader's value
     * functions are hiredis's own, wrapped to count what they allocate
     * (reader->fn points to fn, reader->privdata to this connection). */
    redisReplyObjectFunctions fn;
    const redisReplyObjectFunctions *hiredis_fn;
    size_t max_reply;   /* cfg->max_reply_bytes */
    uint64_t fed;       /* bytes given to the reader in all */
    uint64_t reply_at;  /* fed when the reply being parsed began */
    size_t reply_mem;   /* memory of the values parsed of it so far */
    int over;           /* the last DLOCK_EPROTO was the cap */
    /* What a read takes from the stream before the reader parses it
     * (DLOCK__REDIS_READ_CHUNK bytes, made at the first read; NULL: not
     * yet). One reader at a time per connection. Not on the reader's
     * stack: a loop's fiber that reads a reply would keep a page of its
     * stack resident for it as long as it lives (a pending wait). */
    char *rbuf;
} dlock__redis_conn;

/* Commands in RESP form, ready to send; several make a pipeline. */
typedef struct dlock__redis_cmdbuf {
    char *data;
    size_t len, cap;
} dlock__redis_cmdbuf;

/* Appends one command. argvlen may be NULL (NUL-terminated arguments).
 * 0 or DLOCK_ENOMEM. */
int dlock__redis_cmdbuf_add(dlock__redis_cmdbuf *b, int argc,
                            const char *const *argv, const size_t *argvlen);
/* Appends len bytes of commands already formatted (another cmdbuf's).
 * 0 or DLOCK_ENOMEM. */
int dlock__redis_cmdbuf_append(dlock__redis_cmdbuf *b, const char *data,
                               size_t len);
void dlock__redis_cmdbuf_reset(dlock__redis_cmdbuf *b); /* keeps memory */
void dlock__redis_cmdbuf_free(dlock__redis_cmdbuf *b);

/* A connection without a stream: its reader only, with the reply cap
 * max_reply, for the fuzz targets (tests/fuzz/) to read what a server
 * sends exactly as a connection does: bytes in with
 * dlock__redis_conn_parse (0 or DLOCK_ENOMEM), replies out with
 * dlock__redis_conn_next; dlock__redis_conn_free frees it. 0 or
 * DLOCK_ENOMEM. (dlock__redis_connect makes its connections with it.) */
int dlock__redis_conn_parser_new(dlock__redis_conn **out, size_t max_reply);
int dlock__redis_conn_parse(dlock__redis_conn *c, const char *buf, size_t n);

/* Opens a connection and prepares it: connect (and the TLS handshake, for
 * rediss://) within budget_ms (0 = no limit), then AUTH (if the URL has a
 * password), SELECT (if db != 0) and PING pipelined in one round trip. The
 * PING reply proves a Redis server is talking. probe (NULL: none) adds the
 * commands of safety.h to that round trip and fills *probe with what the
 * server said (probe->from_info set on entry: this server refused CONFIG
 * before, ask INFO only); a refused probe command never fails the
 * connect. Returns 0, DLOCK_ECONN
 * (refused, unreachable, closed, TLS handshake or certificate refused),
 * DLOCK_ETIMEDOUT, DLOCK_EAUTH, DLOCK_EPROTO (not Redis, or SELECT refused)
 * or DLOCK_ENOMEM; errbuf gets the detail, never the password. Blocks for
 * at most budget_ms (the handshake included), or, with no budget, the
 * connect plus the command timeout. */
struct dlock__redis_facts;
int dlock__redis_connect(dlock__redis_conn **out,
                         const dlock__redis_config *cfg, int64_t budget_ms,
                         struct dlock__redis_facts *probe, char *errbuf,
                         size_t errlen);

/* Closes c. NULL is a no-op. */
void dlock__redis_conn_free(dlock__redis_conn *c);

/* Writes b whole on c, within the command timeout and by deadline_ms
 * (monotonic; INT64_MAX: the command timeout only). 0, DLOCK_ETIMEDOUT or
 * DLOCK_ECONN; after a failure c is marked broken. */
int dlock__redis_send(dlock__redis_conn *c, const dlock__redis_cmdbuf *b,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen);

/* Reads the next reply (blocking, bounded by the command timeout and by
 * deadline_ms, monotonic; INT64_MAX: the command timeout only). On failure
 * returns DLOCK_ETIMEDOUT, DLOCK_ECONN, DLOCK_EPROTO or DLOCK_ENOMEM, and c
 * is marked broken: a reply still due on it belongs to this call. */
int dlock__redis_read(dlock__redis_conn *c, redisReply **out,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen);

/* For a poll() loop (the subscriber): feeds the parser what the stream has
 * now, without waiting. 0 (possibly nothing read), DLOCK_ECONN or
 * DLOCK_ENOMEM; a failure marks c broken. The cap is checked by
 * dlock__redis_conn_next, which such a loop calls after each fill. */
int dlock__redis_conn_fill(dlock__redis_conn *c, char *errbuf, size_t errlen);

/* For the multiplexed connection's reader, which runs while a writer
 * writes: feeds the parser what comes by deadline_ms (plain TCP only, see
 * dlock__redis_transport_read_shared). *got: the bytes fed (0: nothing
 * came). 0, DLOCK_ECONN, DLOCK_ENOMEM or DLOCK_ENOTSUP (TLS); it leaves
 * c->broken alone (the writer may be setting it), the caller discards the
 * connection on a failure. */
int dlock__redis_conn_fill_shared(dlock__redis_conn *c, int64_t deadline_ms,
                                  size_t *got, char *errbuf, size_t errlen);

/* The next complete reply already read (*out NULL when there is none yet,
 * or *out set: the caller frees it with freeReplyObject). 0, or
 * DLOCK_EPROTO (c marked broken): not RESP, or the reply is over the cap
 * (its bytes so far, or a whole one read at once). The caller then drops
 * c (dlock__redis_conn_free frees what the reader buffered). */
int dlock__redis_conn_next(dlock__redis_conn *c, redisReply **out);

/* The detail of conn_next's DLOCK_EPROTO: "redis <where>: reply larger
 * than max_reply_bytes (N bytes); connection dropped" or "redis <where>:
 * protocol error (is it a Redis server?): <the parser's words>". */
void dlock__redis_conn_eproto(const dlock__redis_conn *c, const char *where,
                              char *errbuf, size_t errlen);

/* Whether an error reply is the server refusing service for now (LOADING,
 * BUSY, MASTERDOWN, READONLY, TRYAGAIN, CLUSTERDOWN, too many clients):
 * waiting, or another connection, may help. The one classification of
 * such replies, for the handshake and for commands alike. */
int dlock__redis_unavailable(const char *msg, size_t len);

/* Whether the detail of a DLOCK_ECONN or DLOCK_ETIMEDOUT says that no
 * connection could be made, so the request never left: the connect
 * failures' phrases of transport.c ("cannot connect", "connect timed
 * out") and the pool's fail-fast ones ("connection down, ..."). A lost
 * connection or a missing reply says nothing of the kind: the request may
 * have run. */
int dlock__redis_unsent(const char *detail);

/* True if an idle connection has something to read: the server closed it
 * (restart, idle timeout, CLIENT KILL) or sent something unasked. Either way
 * it cannot carry a command. One poll(), no network round trip. */
int dlock__redis_conn_stale(dlock__redis_conn *c);

#endif /* DLOCK_REDIS_CONN_H */
