/*
 * Redis backend (private): one server address and its connections.
 *
 * A node is an address with the configuration to reach it (the backend's
 * configuration, credentials, database, timeouts and TLS context, with this
 * node's host and port) and its connections: pooled (each call borrows
 * one, pool.h) or multiplexed (calls share cfg.connections of them,
 * mux.h; the pool then only opens them, with its back-off). A call goes
 * through dlock__redis_node_call either way. A topology (topology.h) owns
 * its nodes and decides which one a call goes to.
 *
 * The subscriber connection is the topology's, not a node's: with Sentinel
 * the subscriber must move to each new master with its subscriptions (the
 * handles waiters hold), so it follows the topology's master from node to
 * node; a cluster topology will keep one per shard.
 *
 * Thread-safety: a node is immutable once built, apart from its pool and
 * mux (both thread-safe). Nodes live until their topology is freed, so a
 * caller may keep using a node the topology has since moved away from.
 */
#ifndef DLOCK_REDIS_NODE_H
#define DLOCK_REDIS_NODE_H

#include "internal.h"
#include "mux.h"
#include "pool.h"

typedef struct dlock__redis_node {
    dlock__redis_config cfg;  /* base's, with this node's address */
    dlock__redis_pool *pool;
    dlock__redis_mux *mux;    /* NULL: pooled */
    char *host;               /* owned; NULL: base's own address */
    struct dlock__redis_node *next; /* the topology's list */
} dlock__redis_node;

/* A node at host:port with base's credentials, database, timeouts and TLS
 * (base is borrowed and must outlive the node); host NULL: base's own
 * address (a standalone server or unix socket). 0 or DLOCK_ENOMEM. */
int dlock__redis_node_new(dlock__redis_node **out,
                          const dlock__redis_config *base, const char *host,
                          int port);

/* Closes its connections; no call may be running. NULL ok. */
void dlock__redis_node_free(dlock__redis_node *n);

/* Whether n is at host:port. */
int dlock__redis_node_is(const dlock__redis_node *n, const char *host,
                         int port);

/* One request on n: the nreplies commands in b, their replies together
 * (pooled: on a borrowed connection; multiplexed: through the mux). The
 * contract of dlock__redis_pool_call and dlock__redis_mux_call, which are
 * the same. */
int dlock__redis_node_call(dlock__redis_node *n, const dlock__redis_cmdbuf *b,
                           int nreplies, redisReply **replies,
                           int64_t deadline_ms, char *errbuf, size_t errlen);

/* The call above in two halves (dlock__redis_mux_submit/_wait,
 * dlock__redis_pool_send/_receive): _send writes b (or queues it) without
 * waiting for a reply; on 0, _receive must follow exactly once, and b must
 * stay valid until it returns. _send's failure leaves nothing to receive.
 * The ticket is the caller's (a struct it keeps between the halves). */
typedef struct dlock__redis_ticket {
    dlock__redis_node *node;
    int nreplies;
    int64_t deadline_ms;
    dlock__redis_mux_req *req; /* multiplexed */
    dlock__redis_conn *conn;   /* pooled */
} dlock__redis_ticket;
int dlock__redis_node_send(dlock__redis_node *n, const dlock__redis_cmdbuf *b,
                           int nreplies, int64_t deadline_ms,
                           dlock__redis_ticket *t, char *errbuf, size_t errlen);
int dlock__redis_node_receive(dlock__redis_ticket *t, redisReply **replies,
                              char *errbuf, size_t errlen);

#endif /* DLOCK_REDIS_NODE_H */
