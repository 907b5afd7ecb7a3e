/*
 * Redis backend (private): Redis Cluster — which node serves a key, and
 * sharded pub/sub.
 *
 * Routing: a slot map (16384 entries, each a master node; slot.h) read
 * from CLUSTER SLOTS. A script call goes to the master of its first key's
 * slot (every key of a dlock script carries the name's hash tag, so all
 * share that slot); a call without keys goes to any master. Reads go to
 * masters too: no stale replica reads.
 * - MOVED: the slot's entry is updated at once, the call is repeated at
 *   the node named, and the whole map is refreshed in the background.
 * - ASK (a slot being migrated, the key already moved): the call is
 *   repeated once at the node named, preceded by ASKING; the map stays.
 * - Either one names a node the map does not know: the call waits (within
 *   its deadline) for the thread to read the map again from the nodes it
 *   knows, and follows only if the new map names the node; else
 *   DLOCK_ECONN, detail "redis cluster: redirected (MOVED) to host:port,
 *   a node the slot map does not name: not followed". No connection is
 *   made to such an address, so it never receives the credentials.
 * - TRYAGAIN, CLUSTERDOWN and other refusals that ran nothing (LOADING,
 *   MASTERDOWN...), and a node that cannot be connected to (a master that
 *   failed before the map knew: nothing was sent), are repeated with
 *   back-off (10 ms doubling to 200 ms)
 *   while the map is refreshed, within the caller's deadline, or the
 *   command timeout when the caller gave none; then DLOCK_ECONN.
 * - A lost connection: DLOCK_ECONN at once (the script may have run: only
 *   the caller can tell whether to try again; the waiting objects do, in
 *   their budget), and the map is refreshed.
 * At most 16 redirections per call (then DLOCK_EPROTO: the cluster's
 * nodes disagree).
 *
 * The map is refreshed by a thread of the cluster: on a redirection, a
 * failed call or a lost subscriber connection (at most every 50 ms), and
 * every 5 s. It asks the known masters, then the seed nodes, in turn;
 * the first answer wins. Nodes (node.h: an address and its connections)
 * are the masters the map names (at most 1000: a larger map is refused)
 * and the seeds while the thread needs them; after each reading, the
 * nodes the map no longer names are dropped: their connections are
 * closed when the last call or subscription still using one lets go.
 *
 * Pub/sub: sharded (SSUBSCRIBE on the master of the channel's slot; the
 * scripts SPUBLISH, api/dlock/sys/backend.h publish_command), one
 * subscriber connection per master that has listeners. A subscription is
 * a handle of the cluster's, which follows its slot: when the slot moves
 * (the server's "sunsubscribe", a MOVED to SSUBSCRIBE) or its master
 * changes (failover, seen by the map), the thread subscribes it at the
 * slot's new master, drops the old one and calls the listener once with
 * the empty "look again" message.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef DLOCK_REDIS_CLUSTER_H
#define DLOCK_REDIS_CLUSTER_H

#include "dlock/sys/backend.h"
#include "eval.h"
#include "internal.h"

typedef struct dlock__redis_cluster dlock__redis_cluster;

/* Reads the slot map from the seed nodes of cfg (borrowed; it must outlive
 * the cluster), each tried once, each step bounded by the connect and
 * command timeouts, then starts the thread. With cfg->lazy_connect, no
 * I/O: the thread reads the map from its first pass on, and until then
 * calls go to a seed node (any_node). 0, DLOCK_ECONN (no seed
 * reachable; the detail names the last error), DLOCK_EAUTH, DLOCK_EPROTO
 * (a seed is not a cluster node: the detail says so), DLOCK_ENOMEM. */
int dlock__redis_cluster_new(dlock__redis_cluster **out,
                             const dlock__redis_config *cfg, char *errbuf,
                             size_t errlen);

/* Joins the thread, frees the subscribers and every node. Every
 * subscription must have been removed. NULL ok. */
void dlock__redis_cluster_free(dlock__redis_cluster *c);

/* The backend's eval_until slot, routed as above (scripts: the backend's
 * SHA cache). Blocks for the round trips of the call and its
 * redirections, within deadline_ms (monotonic; INT64_MAX: the configured
 * timeouts). */
int dlock__redis_cluster_eval(dlock__redis_cluster *c,
                              dlock__redis_scripts *scripts, dlock_reply **out,
                              const dlock_script *script, size_t nkeys,
                              size_t nargs, const char *const *argv,
                              const size_t *argvlen, int64_t deadline_ms,
                              char *errbuf, size_t errlen);

/* The backend's key_node slot (api/dlock/sys/backend.h): the id of the
 * master the map names for key's slot, or the slot itself when the map
 * names none or that master refused a script over several slots. Never
 * blocks on I/O. */
unsigned dlock__redis_cluster_key_node(dlock__redis_cluster *c, const char *key,
                                       size_t len);

/* The backend's eval_node slot: the call as cross.h's derived script,
 * with its first key declared, routed (and redirected) as
 * dlock__redis_cluster_eval. DLOCK_ENOTSUP, nothing handed out: the
 * slot's master refused such a script (now, remembered: the node's keys
 * get their own slots from key_node, and no more calls of this kind go
 * there), the prelude found a key the node does not serve, or the node
 * answered with another error (the plain calls per slot may not meet it). */
int dlock__redis_cluster_eval_node(dlock__redis_cluster *c,
                                   dlock__redis_scripts *scripts,
                                   dlock_reply **out, const dlock_script *script,
                                   size_t nkeys, size_t nargs,
                                   const char *const *argv, const size_t *argvlen,
                                   int64_t deadline_ms, char *errbuf,
                                   size_t errlen);

/* The backend's subscribe_until and unsubscribe slots (subscriber.h's
 * contract), sharded. */
int dlock__redis_cluster_subscribe(dlock__redis_cluster *c,
                                   dlock_subscription **out,
                                   const char *channel, dlock_message_fn fn,
                                   void *arg, int64_t deadline_ms,
                                   char *errbuf, size_t errlen);
void dlock__redis_cluster_unsubscribe(dlock__redis_cluster *c,
                                      dlock_subscription *sub);

/* The backend's server_safety slot: the probed facts (safety.h) of every
 * master of the slot map, merged into out. Never blocks on I/O. */
void dlock__redis_cluster_safety(dlock__redis_cluster *c,
                                 dlock_server_safety *out);

#endif /* DLOCK_REDIS_CLUSTER_H */
