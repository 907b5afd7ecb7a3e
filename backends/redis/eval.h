/*
 * Redis backend (private): the eval engine — how a script call runs on one
 * node: the SHA cache, the NOSCRIPT reload, WAIT for replica sync, and the
 * Cluster redirections it reports (cluster.c follows them).
 *
 * eval sends EVALSHA with the script's SHA1, computed here (cached by the
 * struct's address but checked against the source, so the cache is keyed
 * by content): one round trip. When the server does not have the script
 * (first use, restart, SCRIPT FLUSH, failover) it answers NOSCRIPT and the
 * call is repeated as EVAL of the source, which caches it there.
 *
 * Replica sync (sync_replicas, api/dlock/redis.h): a script that writes is
 * followed by "WAIT n timeout" in the same write; too few acknowledgements
 * make the call DLOCK_ESYNC with the script's reply still handed out. The
 * WAIT helpers (sync_wanted, sync_append, sync_check) are the only part
 * that knows about it.
 */
#ifndef DLOCK_REDIS_EVAL_H
#define DLOCK_REDIS_EVAL_H

#include <hiredis/hiredis.h>

#include "dlock/sys/backend.h"
#include "internal.h"
#include "node.h"

typedef struct dlock__redis_scripts dlock__redis_scripts;

/* Redis Cluster's redirection of one call (cluster.h routes by it). */
enum { DLOCK__REDIS_MOVED = 1, DLOCK__REDIS_ASK = 2 };
typedef struct dlock__redis_redirect {
    int asking;     /* in: send ASKING first (the retry of an ASK) */
    int kind;       /* out: 0, DLOCK__REDIS_MOVED or DLOCK__REDIS_ASK */
    int slot;       /* out: the slot named */
    char host[256]; /* out: where it is served */
    int port;
    int refused;    /* out: the server refused to run it for now
                     * (dlock__redis_unavailable): safe to repeat */
} dlock__redis_redirect;

/* 0 or DLOCK_ENOMEM. */
int dlock__redis_scripts_new(dlock__redis_scripts **out);
void dlock__redis_scripts_free(dlock__redis_scripts *s);
/* The writes sent without the replica sync asked for, by cause (a
 * DLOCK_UNSYNCED_*, api/dlock/sys/backend.h; 0 for another): the
 * backend's unsynced slot. Any thread. */
uint64_t dlock__redis_scripts_unsynced(dlock__redis_scripts *s, int cause);

/* The backend's eval_until slot (api/dlock/sys/backend.h), on node's
 * connections (pooled or multiplexed: dlock__redis_node_call); deadline_ms is monotonic (INT64_MAX: the configured
 * timeouts only). DLOCK_EINVAL for NULL or too many arguments. A reply the
 * server gives instead of running the script because it refuses service
 * for now (dlock__redis_unavailable: LOADING, BUSY, READONLY...) is
 * DLOCK_ECONN, not a script error. DLOCK_ESYNC: the script ran, *out holds
 * its reply, but fewer replicas than sync_replicas acknowledged it (or the
 * server refused WAIT: sync is off from then on); errbuf says which.
 * redir: NULL outside a cluster; else redir->asking is read, and a MOVED
 * or ASK reply fills it and returns DLOCK_ECONN (the script did not run)
 * with the redirection in errbuf, for the cluster to follow. */
int dlock__redis_eval(dlock__redis_node *node, dlock__redis_scripts *cache,
                      dlock_reply **out,
                      const dlock_script *script, size_t nkeys, size_t nargs,
                      const char *const *argv, const size_t *argvlen,
                      int64_t deadline_ms, dlock__redis_redirect *redir,
                      char *errbuf, size_t errlen);

/* dlock__redis_eval without redirections, in two halves (the backend's
 * eval_send/eval_receive slots): _send checks and writes the call (its
 * arguments copied) and returns without waiting for the reply: 0 and
 * *out, or a failure as dlock__redis_eval's (*out = NULL, nothing to
 * receive). _receive waits for the reply until _send's deadline_ms (a
 * NOSCRIPT answer costs one more round trip, as in dlock__redis_eval),
 * returns what dlock__redis_eval would have, sets *node to the node the
 * call went to, and frees the call. script
 * must stay valid until then. */
typedef struct dlock__redis_evalcall dlock__redis_evalcall;
int dlock__redis_eval_send(dlock__redis_node *node, dlock__redis_scripts *cache,
                           dlock__redis_evalcall **out,
                           const dlock_script *script, size_t nkeys,
                           size_t nargs, const char *const *argv,
                           const size_t *argvlen, int64_t deadline_ms,
                           char *errbuf, size_t errlen);
int dlock__redis_eval_receive(dlock__redis_evalcall *ec,
                              dlock__redis_node **node, dlock_reply **out,
                              char *errbuf, size_t errlen);

/* A deep copy of r as a dlock_reply. 0, DLOCK_ENOMEM, or DLOCK_EPROTO for a
 * reply type or nesting this backend does not know. */
int dlock__redis_reply_convert(dlock_reply **out, const redisReply *r);

#endif /* DLOCK_REDIS_EVAL_H */
