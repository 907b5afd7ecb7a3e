/*
 * Redis backend (private): the connection pool.
 *
 * Up to pool_size connections. A borrower has its connection to itself; the
 * mutex guards the free list and counters only and is never held across
 * network I/O (connect, send, read).
 *
 * When every connection is lent out, a borrower waits on a condition
 * variable; one on a loop's fiber sleeps instead (core/fiber.h), so the
 * loop's thread goes on running the fibers that will return theirs.
 * Acquiring — waiting for a free connection and/or opening a new
 * one — takes at most connect_timeout_ms in all, so that a call's total
 * stays within the bound api/dlock/redis.h promises: the connect timeout
 * plus the command timeout.
 *
 * A connection that failed (I/O error, timeout, protocol error) is
 * closed, never returned to the free list. Idle connections are checked
 * with a zero-timeout poll() before being lent, so those the server closed
 * meanwhile (restart, idle timeout) are replaced instead of failing a call.
 *
 * Reconnection: new connections are opened on demand. After a failed
 * connect, further attempts wait min, 2*min, 4*min ... (capped at max); while
 * that back-off runs, and while one attempt is already probing a server
 * known to be down, callers fail fast with DLOCK_ECONN and a detail saying
 * so (DLOCK_EAUTH if the last attempt failed on credentials) instead of
 * piling up connect timeouts.
 */
#ifndef DLOCK_REDIS_POOL_H
#define DLOCK_REDIS_POOL_H

#include "conn.h"
#include "internal.h"

typedef struct dlock__redis_pool dlock__redis_pool;

/* cfg is borrowed and must outlive the pool. 0 or DLOCK_ENOMEM. */
int dlock__redis_pool_new(dlock__redis_pool **out,
                          const dlock__redis_config *cfg);

/* Closes every idle connection. Every borrowed one must have been returned. */
void dlock__redis_pool_free(dlock__redis_pool *p);

/* Lends a ready connection (connected, authenticated, db selected), within
 * the connect timeout and by deadline_ms (monotonic; INT64_MAX: the connect
 * timeout only). Returns 0, DLOCK_ETIMEDOUT (none free in time), or what
 * dlock__redis_connect returns; errbuf gets the detail. */
int dlock__redis_pool_acquire(dlock__redis_pool *p, dlock__redis_conn **out,
                              int64_t deadline_ms, char *errbuf, size_t errlen);

/* Gives c back; broken != 0 (or c->broken set) closes it instead. */
void dlock__redis_pool_release(dlock__redis_pool *p, dlock__redis_conn *c,
                               int broken);

/* One round trip on a borrowed connection: sends the nreplies commands in
 * b and reads their replies, by deadline_ms (monotonic; INT64_MAX: the
 * timeouts only). On 0, replies[0..nreplies-1] are set (freeReplyObject
 * each); otherwise none is. After a failed round trip the connection is
 * closed, never reused. Returns 0 or what acquire, send and read return. */
int dlock__redis_pool_call(dlock__redis_pool *p, const dlock__redis_cmdbuf *b,
                           int nreplies, redisReply **replies,
                           int64_t deadline_ms, char *errbuf, size_t errlen);

/* The round trip above in two halves (a caller with calls on several
 * nodes sends them all, then reads): _send borrows a connection and writes
 * b (0 and *out, or a failure, *out = NULL, nothing borrowed); _receive
 * reads the nreplies replies from it and gives it back (closed on a
 * failure), as _call does. */
int dlock__redis_pool_send(dlock__redis_pool *p, const dlock__redis_cmdbuf *b,
                           dlock__redis_conn **out, int64_t deadline_ms,
                           char *errbuf, size_t errlen);
int dlock__redis_pool_receive(dlock__redis_pool *p, dlock__redis_conn *c,
                              int nreplies, redisReply **replies,
                              int64_t deadline_ms, char *errbuf, size_t errlen);

/* The server's answers to the last probe (safety.h): what the pool's
 * connects asked, on the first connection to the server and on the first
 * after it had none open or failed to connect. Returns out->known (0:
 * not asked yet). Never blocks on I/O. */
struct dlock__redis_facts;
int dlock__redis_pool_facts(dlock__redis_pool *p, struct dlock__redis_facts *out);

#endif /* DLOCK_REDIS_POOL_H */
