/*
 * Redis backend (private): one connection — open it (connect, timeouts,
 * AUTH, SELECT, a Redis check), write commands, read replies, and turn
 * hiredis failures into dlock codes.
 *
 * Commands are formatted here and written with send(MSG_NOSIGNAL) rather
 * than through hiredis's output buffer: hiredis writes with write(), and a
 * write to a connection the server has closed would raise SIGPIPE and kill
 * an application that has not ignored it. hiredis only reads.
 *
 * A redisContext is not thread-safe; each one has a single user at a time
 * (a pool borrower, or the subscriber thread).
 */
#ifndef DLOCK_REDIS_CONN_H
#define DLOCK_REDIS_CONN_H

#include <hiredis/hiredis.h>

#include "internal.h"

/* Commands in RESP form, ready to send; several make a pipeline. */
typedef struct dlock__redis_cmdbuf {
    char *data;
    size_t len, cap;
} dlock__redis_cmdbuf;

/* Appends one command. argvlen may be NULL (NUL-terminated arguments).
 * 0 or DLOCK_ENOMEM. */
int dlock__redis_cmdbuf_add(dlock__redis_cmdbuf *b, int argc,
                            const char *const *argv, const size_t *argvlen);
void dlock__redis_cmdbuf_reset(dlock__redis_cmdbuf *b); /* keeps memory */
void dlock__redis_cmdbuf_free(dlock__redis_cmdbuf *b);

/* Opens a connection and prepares it: connect within budget_ms (0 = no
 * limit), command timeout on the socket, then AUTH (if the URL has a
 * password), SELECT (if db != 0) and PING pipelined in one round trip. The
 * PING reply proves a Redis server is talking. Returns 0, DLOCK_ECONN
 * (refused, unreachable, closed), DLOCK_ETIMEDOUT, DLOCK_EAUTH, DLOCK_EPROTO
 * (not Redis, or SELECT refused) or DLOCK_ENOMEM; errbuf gets the detail,
 * never the password. Blocks for at most budget_ms (the handshake included),
 * or, with no budget, the connect plus the command timeout. */
int dlock__redis_connect(redisContext **out, const dlock__redis_config *cfg,
                         int64_t budget_ms, char *errbuf, size_t errlen);

/* Writes b whole on c. 0, DLOCK_ETIMEDOUT (send timeout) or DLOCK_ECONN;
 * after a failure c must be discarded. */
int dlock__redis_send(redisContext *c, const dlock__redis_cmdbuf *b,
                      const dlock__redis_config *cfg, char *errbuf,
                      size_t errlen);

/* Reads the next reply (blocking, bounded by the command timeout and by
 * deadline_ms, monotonic; INT64_MAX: the command timeout only). On failure
 * returns DLOCK_ETIMEDOUT, DLOCK_ECONN, DLOCK_EPROTO or DLOCK_ENOMEM, and c
 * must be discarded: a reply still due on it belongs to this call. */
int dlock__redis_read(redisContext *c, redisReply **out,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen);

/* Whether an error reply is the server refusing service for now (LOADING,
 * BUSY, MASTERDOWN, READONLY, TRYAGAIN, CLUSTERDOWN, too many clients):
 * waiting, or another connection, may help. The one classification of
 * such replies, for the handshake and for commands alike. */
int dlock__redis_unavailable(const char *msg, size_t len);

/* The code and detail for a hiredis failure on c (c->err set); saved_errno
 * is errno right after the failing call. */
int dlock__redis_ctx_error(redisContext *c, int saved_errno,
                           const dlock__redis_config *cfg, char *errbuf,
                           size_t errlen);

/* True if an idle connection has something to read: the server closed it
 * (restart, idle timeout, CLIENT KILL) or sent something unasked. Either way
 * it cannot carry a command. One poll(), no network round trip. */
int dlock__redis_conn_stale(redisContext *c);

#endif /* DLOCK_REDIS_CONN_H */
