/*
 * Redis backend (private): a multiplexed connection — many caller threads
 * share a few connections to one node, as with Lettuce or ioredis.
 *
 * A call is a request: a cmdbuf holding k commands and the k replies it
 * expects, returned together (EVALSHA = 1; SCRIPT LOAD + EVAL = 2; a
 * script followed by WAIT = 2). The mux has `connections` lanes (one
 * connection each) and spreads calls over them in turn. On a lane:
 *
 * - Writing: there is no I/O thread. The caller that finds nobody writing
 *   becomes the writer: it takes every request queued so far (its own and
 *   those that arrived while the previous write was in flight), copies them
 *   into one buffer and writes it in one go; what queued meanwhile goes in
 *   its next write (a few in a row). Requests enter the in-flight list, in
 *   write order, before the write, so replies always find them.
 * - Reading: the caller that finds nobody reading (and has a request in
 *   flight) becomes the reader: it reads, parses (hiredis's reader, conn.c)
 *   and hands each reply to the oldest request in flight, waking its
 *   caller, until its own request is complete; then it passes the role to
 *   the oldest caller still waiting. On plain TCP it waits in recv() itself
 *   (no poll()) when the command timeout ends its wait. At one thread per
 *   call this is the pool's own round trip and system calls (one write,
 *   one read, no hand-off).
 * - Budgets: a caller waits for its replies until its own deadline (and at
 *   most the command timeout). A caller whose budget runs out leaves: a
 *   request not yet written is dropped; one in flight stays in the list as
 *   a placeholder whose late replies are read and freed, never handed to
 *   another caller. When the command timeout (not a caller's budget) ends
 *   the wait, the server is taken as gone: the lane breaks.
 * - Losing the connection (I/O error, protocol error, command timeout):
 *   the lane breaks, every caller queued or in flight on it gets
 *   DLOCK_ECONN at once, and the next call opens a new connection.
 *   Connections come from the node's pool (pool.h), so the pool's
 *   handshake (AUTH, SELECT, TLS), stale check and back-off/fail-fast
 *   apply unchanged.
 * - Bounds: at most cfg->queue_max requests (the URL's queue_max,
 *   default DLOCK__REDIS_MUX_QUEUE_MAX) queued or in flight per lane,
 *   placeholders included; a call beyond that fails at once with
 *   DLOCK_ECONN and a detail saying the queue is full and naming the node
 *   and the limit (the wait loops retry it like a lost connection, after
 *   backing off). A lane full of placeholders alone has no caller left to
 *   read their replies: the next call drops that connection and opens a
 *   new one instead of being refused.
 *
 * Locks: a lane's mutex guards its lists and roles and is never held
 * across network I/O or parsing; callers whose calls ended are woken after
 * it is released (woken under it, they would only block on it again). A
 * second mutex per TLS connection serializes the writer's and the reader's
 * calls into the transport (an OpenSSL stream must not be read and written
 * by two threads at once); a plain socket is read and written at once.
 * Thread-safety:
 * every function may be called from any thread, except _free.
 */
#ifndef DLOCK_REDIS_MUX_H
#define DLOCK_REDIS_MUX_H

#include <hiredis/hiredis.h>

#include "conn.h"
#include "internal.h"
#include "pool.h"

/* The default queue_max. */
#define DLOCK__REDIS_MUX_QUEUE_MAX 65536

typedef struct dlock__redis_mux dlock__redis_mux;

/* A mux of nconn lanes over connections lent by pool (pool_size must be at
 * least nconn); cfg and pool are borrowed and must outlive it. 0 or
 * DLOCK_ENOMEM. */
int dlock__redis_mux_new(dlock__redis_mux **out, const dlock__redis_config *cfg,
                         dlock__redis_pool *pool, int nconn);

/* Gives the connections back to the pool. No call may be running. NULL ok. */
void dlock__redis_mux_free(dlock__redis_mux *m);

/* Sends the nreplies commands in b and waits for their replies, by
 * deadline_ms (monotonic; INT64_MAX: the timeouts only) and within the
 * command timeout (plus the connect timeout when a connection must be
 * opened). On 0, replies[0..nreplies-1] are set (the caller frees each
 * with freeReplyObject); otherwise none is. Returns 0, DLOCK_ETIMEDOUT,
 * DLOCK_ECONN, DLOCK_EPROTO, DLOCK_ENOMEM or what opening a connection
 * returns (DLOCK_EAUTH...); errbuf gets the detail. */
int dlock__redis_mux_call(dlock__redis_mux *m, const dlock__redis_cmdbuf *b,
                          int nreplies, redisReply **replies,
                          int64_t deadline_ms, char *errbuf, size_t errlen);

/* The call above in two halves, for a caller with calls on several nodes
 * (a Redlock's attempt): _submit queues the request and writes it when
 * nobody else is writing on its lane, without waiting for a reply; _wait
 * then does the rest of dlock__redis_mux_call (the writing if it is still
 * queued, the reading, the budget) and frees the request. b must stay
 * valid until _wait returns. A submitted request whose caller is not yet
 * in _wait is never given a role by others' hand-offs, but its replies are
 * read and kept for it by whoever reads. _submit: 0 and *out (then _wait
 * must be called exactly once, by deadline_ms or later: it returns at
 * once when the call is already over), or a failure already known (no
 * connection could be opened, the queue is full, out of memory: what
 * dlock__redis_mux_call would return) and *out = NULL. */
typedef struct dlock__redis_mux_req dlock__redis_mux_req;
int dlock__redis_mux_submit(dlock__redis_mux *m, const dlock__redis_cmdbuf *b,
                            int nreplies, dlock__redis_mux_req **out,
                            int64_t deadline_ms, char *errbuf, size_t errlen);
int dlock__redis_mux_wait(dlock__redis_mux *m, dlock__redis_mux_req *r,
                          redisReply **replies, int64_t deadline_ms,
                          char *errbuf, size_t errlen);

#endif /* DLOCK_REDIS_MUX_H */
