/*
 * Test harness: a throwaway Redis Cluster on loopback.
 *
 * Every node is a redis_server.h process (free port, own directory with its
 * nodes.conf, no persistence, killed with the thread that started it), with
 * a node timeout of 1000 ms, replica validity factor 0 and no replica
 * migration, so that failovers on loopback are quick and land where a test
 * expects. The cluster is formed by `redis-cli --cluster create` (or
 * $DLOCK_REDIS_CLI); the harness talks to the nodes over the raw-socket
 * helper of redis_server.h (no hiredis).
 *
 * Shards and nodes. Shard s (0 <= s < masters) is the s-th master at start,
 * in slot order (shard 0 owns slot 0), with its replicas. A failover or a
 * kill changes which node of the shard is its master, never the shard a node
 * belongs to; dlock_test_cluster_move_slot moves a slot to another shard.
 * Node i: node[s] is shard s's master at start, node[masters + s * replicas
 * + j] its j-th replica.
 *
 * Every function that changes the cluster waits (bounded, 20 s) until it has
 * settled: every running node says cluster_state:ok, all running nodes show
 * the same slot owners and the same roles, none of them flags a running node
 * as failing, every slot has a running master and every running replica's
 * link to its master is up. On a timeout it says on stderr which of these
 * did not hold and returns -1. DLOCK_TEST_CLUSTER_TRACE=1 in the
 * environment prints each wait's progress on stderr.
 *
 * Not thread-safe: one thread drives a cluster, the one that started it
 * (the nodes die with that thread).
 */
#ifndef DLOCK_TEST_CLUSTER_H
#define DLOCK_TEST_CLUSTER_H

#include <stddef.h>

#include "redis_server.h"

#define DLOCK_TEST_CLUSTER_SLOTS 16384
#define DLOCK_TEST_CLUSTER_MAX_NODES 16

enum {
    DLOCK_TEST_NODE_DOWN = -1, /* not running, or no answer */
    DLOCK_TEST_NODE_REPLICA = 0,
    DLOCK_TEST_NODE_MASTER = 1
};

/* Read-only for tests, except through the functions below. */
typedef struct dlock_test_cluster {
    int masters, replicas, nnodes;
    dlock_test_redis *node[DLOCK_TEST_CLUSTER_MAX_NODES];
    int up[DLOCK_TEST_CLUSTER_MAX_NODES];     /* 1: running */
    int shard[DLOCK_TEST_CLUSTER_MAX_NODES];  /* shard of each node */
    char id[DLOCK_TEST_CLUSTER_MAX_NODES][41]; /* CLUSTER MYID */
    /* The shard owning each slot, as of the last time the cluster settled
     * (after start and after each function below). */
    signed char slot_shard[DLOCK_TEST_CLUSTER_SLOTS];
    /* The seed URL, the masters' ports at start in shard order, no
     * credentials: "redis-cluster://127.0.0.1:P1,127.0.0.1:P2,...", or
     * with TLS "rediss-cluster://127.0.0.1:T1,...?cacert=<pki>/ca.crt&
     * cert=<pki>/client.crt&key=<pki>/client.key" (about 360 bytes with 3
     * masters; start fails if it does not fit). */
    char url[512];
    int tls;        /* started by dlock_test_cluster_start_tls */
    char pki[256];  /* TLS: the directory of the CA and certificates */
    char password[128]; /* --requirepass of the extra arguments, or "" */
    char log[300];      /* redis-cli's output while creating */
    /* A slot move begun and not finished, or moving_slot = -1. */
    int moving_slot, move_from, move_to; /* node indexes */
} dlock_test_cluster;

/* Starts masters * (1 + replicas_per_master) nodes (3 <= masters, as
 * redis-cli wants; total at most DLOCK_TEST_CLUSTER_MAX_NODES), forms the
 * cluster and waits until it has settled with every replica attached.
 * 0, or -1 with the reason on stderr (whatever was started is stopped).
 * About 2 s for 3 + 3 nodes: a new master waits 2 s before it says ok. */
int dlock_test_cluster_start(dlock_test_cluster *c, int masters,
                             int replicas_per_master);

/* The same with extra redis-server arguments for every node (NULL-terminated,
 * appended last, so they override the harness's: e.g.
 * {"--cluster-require-full-coverage", "no", NULL}). With "--requirepass" P
 * the harness also gives the nodes --masterauth P and authenticates itself
 * and redis-cli with P. */
int dlock_test_cluster_start_args(dlock_test_cluster *c, int masters,
                                  int replicas_per_master,
                                  const char *const *extra_args);

/* The same over TLS (dlock_test_redis_start_tls: certificates in c->pki,
 * client certificates required): clients, the cluster bus and replication
 * all use TLS; TLS clients see the TLS ports (dlock_test_cluster_port) in
 * CLUSTER SLOTS and redirections; the url is rediss-cluster://. The harness
 * itself talks plain TCP to each node's plain port. */
int dlock_test_cluster_start_tls(dlock_test_cluster *c, int masters,
                                 int replicas_per_master,
                                 const char *const *extra_args);

/* Stops every node (SIGKILL: nothing to persist) and removes their
 * directories. Safe on a zeroed or already stopped struct. */
void dlock_test_cluster_stop(dlock_test_cluster *c);

/* The seed URL (c->url); a node's port for clients (its TLS port on a TLS
 * cluster; -1: no such node); its plain port, where the harness talks to
 * it. A TLS cluster names the TLS ports to TLS clients and the plain ones
 * to plain connections (CLUSTER SLOTS, MOVED, ASK): the redirections that
 * dlock_test_cluster_command returns name plain ports. */
const char *dlock_test_cluster_url(dlock_test_cluster *c);
int dlock_test_cluster_port(dlock_test_cluster *c, int node);
int dlock_test_cluster_plain_port(dlock_test_cluster *c, int node);

/* The slot of a key: CRC16 (XMODEM) of the key, or of its hash tag (the
 * bytes between the first '{' and the first '}' after it, when not empty),
 * mod 16384. Computed here, independently of the library's. */
unsigned dlock_test_cluster_slot(const char *key);
/* The same for len bytes of any value (binary keys). */
unsigned dlock_test_cluster_slot_n(const char *key, size_t len);

/* The node that every running node names as the owner of slot, asked now;
 * -1 when they disagree or nobody owns it. */
int dlock_test_cluster_slot_master(dlock_test_cluster *c, unsigned slot);

/* The node of shard that answers ROLE "master" (the only one), asked now;
 * -1 when none or several do. */
int dlock_test_cluster_shard_master(dlock_test_cluster *c, int shard);

/* A node's role from its own ROLE reply: DLOCK_TEST_NODE_MASTER, _REPLICA,
 * or _DOWN. */
int dlock_test_cluster_role(dlock_test_cluster *c, int node);

/* Runs one command on a node (dlock_test_redis_command: reply as text,
 * "-MOVED 1234 127.0.0.1:P" for a redirection). 0 or -1. */
int dlock_test_cluster_command(dlock_test_cluster *c, int node, char *out,
                               size_t outlen, const char *const *argv);

/* The k-th (k >= 0) name "<prefix><n>" (n = 0, 1, ...) whose slot belongs
 * to shard (c->slot_shard), written into buf; so cases can spread their
 * names over all masters. Deterministic for a given slot map. NULL when buf
 * is too small or no such name turns up. */
const char *dlock_test_cluster_name(dlock_test_cluster *c, int shard,
                                    const char *prefix, int k, char *buf,
                                    size_t len);

/* CLUSTER FAILOVER on the first running replica of shard (its master must
 * be up), then waits until that replica is the master of the shard's slots
 * and the old master its replica. The new master's node index, or -1. */
int dlock_test_cluster_failover(dlock_test_cluster *c, int shard);

/* kill -9 of shard's master, then waits until one of its replicas took its
 * slots over and the cluster has settled. The killed node's index (for
 * dlock_test_cluster_restart_node), or -1. */
int dlock_test_cluster_kill_master(dlock_test_cluster *c, int shard);

/* kill -9 of one node, without waiting for anything: a test then watches
 * its client through the outage (the slots of a killed master answer
 * CLUSTERDOWN or nothing until a replica takes over) and calls
 * dlock_test_cluster_wait_settled. 0, or -1 when it was not running.
 * (SIGSTOP/SIGCONT: dlock_test_redis_signal(c->node[i], ...).) */
int dlock_test_cluster_kill_node(dlock_test_cluster *c, int node);

/* Starts a killed node again (same port, same nodes.conf, no data): it
 * rejoins, a former master learns that its slots moved on, and it becomes
 * (or stays) a replica of its shard's master; waits until it is attached
 * and the cluster settled. 0, or -1 (also when the node runs). */
int dlock_test_cluster_restart_node(dlock_test_cluster *c, int node);

/* Live resharding of one slot, keys included, to shard's master:
 * begin (CLUSTER SETSLOT IMPORTING on the target, MIGRATING on the source;
 * no key moves yet), keys (CLUSTER GETKEYSINSLOT + MIGRATE in batches of
 * 100: the keys there now move, and the source then answers -ASK for them;
 * returns how many moved, or -1), finish (the remaining keys, then SETSLOT
 * NODE on the target, the source and the other masters; waits until the
 * cluster settled with the slot on the target). move_slot = begin + finish.
 * One move at a time; a test runs its calls between begin and finish to
 * see ASK redirections and TRYAGAIN. Keys must not contain '\n'. 0 or -1. */
int dlock_test_cluster_move_slot(dlock_test_cluster *c, unsigned slot,
                                 int to_shard);
int dlock_test_cluster_move_slot_begin(dlock_test_cluster *c, unsigned slot,
                                       int to_shard);
int dlock_test_cluster_move_slot_keys(dlock_test_cluster *c);
int dlock_test_cluster_move_slot_finish(dlock_test_cluster *c);

/* Waits (up to timeout_ms) until the cluster settled (see above). 0 or -1. */
int dlock_test_cluster_wait_settled(dlock_test_cluster *c, int timeout_ms);

#endif /* DLOCK_TEST_CLUSTER_H */
