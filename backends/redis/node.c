/*
 * Redis backend: one server address and its connections (see node.h).
 */
#include "node.h"

#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"

int dlock__redis_node_new(dlock__redis_node **out,
                          const dlock__redis_config *base, const char *host,
                          int port)
{
    dlock__redis_node *n = calloc(1, sizeof *n);
    *out = NULL;
    if (!n)
        return DLOCK_ENOMEM;
    /* A shallow copy: the strings stay base's, except the host. */
    n->cfg = *base;
    if (host) {
        n->host = strdup(host);
        if (!n->host) {
            free(n);
            return DLOCK_ENOMEM;
        }
        n->cfg.url.host = n->host;
        n->cfg.url.port = port;
        n->cfg.url.is_unix = 0;
        n->cfg.url.path = NULL;
        dlock__redis_url_where(n->cfg.url.where, sizeof n->cfg.url.where,
                               host, port);
    }
    /* Multiplexed, the pool only opens the mux's connections (and the
     * one that checks the URL at creation, which the mux then takes). */
    if (n->cfg.multiplex)
        n->cfg.pool_size = n->cfg.connections;
    if (dlock__redis_pool_new(&n->pool, &n->cfg) != 0 ||
        (n->cfg.multiplex &&
         dlock__redis_mux_new(&n->mux, &n->cfg, n->pool,
                              n->cfg.connections) != 0)) {
        dlock__redis_pool_free(n->pool);
        free(n->host);
        free(n);
        return DLOCK_ENOMEM;
    }
    *out = n;
    return 0;
}

void dlock__redis_node_free(dlock__redis_node *n)
{
    if (!n)
        return;
    dlock__redis_mux_free(n->mux);
    dlock__redis_pool_free(n->pool);
    free(n->host);
    free(n);
}

int dlock__redis_node_send(dlock__redis_node *n, const dlock__redis_cmdbuf *b,
                           int nreplies, int64_t deadline_ms,
                           dlock__redis_ticket *t, char *errbuf, size_t errlen)
{
    t->node = n;
    t->nreplies = nreplies;
    t->deadline_ms = deadline_ms;
    t->req = NULL;
    t->conn = NULL;
    if (n->mux)
        return dlock__redis_mux_submit(n->mux, b, nreplies, &t->req,
                                       deadline_ms, errbuf, errlen);
    return dlock__redis_pool_send(n->pool, b, &t->conn, deadline_ms, errbuf,
                                  errlen);
}

int dlock__redis_node_receive(dlock__redis_ticket *t, redisReply **replies,
                              char *errbuf, size_t errlen)
{
    dlock__redis_node *n = t->node;

    if (n->mux)
        return dlock__redis_mux_wait(n->mux, t->req, replies, t->deadline_ms,
                                     errbuf, errlen);
    return dlock__redis_pool_receive(n->pool, t->conn, t->nreplies, replies,
                                     t->deadline_ms, errbuf, errlen);
}

int dlock__redis_node_call(dlock__redis_node *n, const dlock__redis_cmdbuf *b,
                           int nreplies, redisReply **replies,
                           int64_t deadline_ms, char *errbuf, size_t errlen)
{
    dlock__redis_ticket t;
    int rc = dlock__redis_node_send(n, b, nreplies, deadline_ms, &t, errbuf,
                                    errlen);

    return rc != 0 ? rc : dlock__redis_node_receive(&t, replies, errbuf, errlen);
}

int dlock__redis_node_is(const dlock__redis_node *n, const char *host,
                         int port)
{
    return n->cfg.url.host && n->cfg.url.port == port &&
           strcmp(n->cfg.url.host, host) == 0;
}
