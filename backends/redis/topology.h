/*
 * Redis backend (private): which node a call goes to.
 *
 * Standalone (redis://, rediss://, unix://): one node, the URL's address.
 *
 * Sentinel (redis-sentinel://, rediss-sentinel://): the master of the
 * sentinels' sentinelMasterId.
 * - Discovery: the sentinels are asked in turn (the one that answered last
 *   first) SENTINEL GET-MASTER-ADDR-BY-NAME; the address given is
 *   confirmed with ROLE on a connection of that node's pool (a stale
 *   sentinel may still name a dead or demoted master). The first
 *   confirmed master wins.
 * - Following failovers: a thread of the topology holds a connection to
 *   one sentinel subscribed to +switch-master and moves to the new master
 *   the moment it is announced (after ROLE confirms it). It also looks
 *   again ("rediscovery", with back-off while it fails) when a call on the
 *   master failed with DLOCK_ECONN (a lost connection, or READONLY,
 *   MASTERDOWN, LOADING... which dlock__redis_unavailable classifies as
 *   such), when the subscriber lost its connection, and after (re)joining
 *   a sentinel (events may have been missed meanwhile).
 * - Moving: later calls go to the new node; the subscriber is retargeted
 *   (subscriber.h): it reconnects there, restores its channels and tells
 *   waiters to look again. Nodes are kept until the topology is freed, so
 *   a call still running on the old one finishes (or fails) there.
 * Budgets: callers never wait for discovery. They take the current master
 * under a mutex held for no I/O and run on it within their own deadline;
 * a failure there is DLOCK_ECONN, which the wait loop retries within the
 * budget (the waiting objects back off 50 ms .. 1 s). Only the thread
 * talks to sentinels, each step bounded by the connect and command
 * timeouts.
 *
 * Thread-safety: every function may be called from any thread.
 */
#ifndef DLOCK_REDIS_TOPOLOGY_H
#define DLOCK_REDIS_TOPOLOGY_H

#include "internal.h"
#include "node.h"
#include "subscriber.h"

typedef struct dlock__redis_topology dlock__redis_topology;

/* Builds the topology of cfg (borrowed; it must outlive the topology) and
 * checks it once: standalone, one connection (so a wrong address, password
 * or db fails here); Sentinel, a discovery (each sentinel tried at most
 * once, each step bounded by the connect and command timeouts), then the
 * watching thread starts. With cfg->lazy_connect, neither check: no I/O
 * here; the first call connects (standalone), the watcher discovers
 * (Sentinel) from its first pass. Returns 0, DLOCK_ECONN (no sentinel reachable,
 * or none named a reachable master; the detail says which), DLOCK_EINVAL
 * (no sentinel knows sentinelMasterId), DLOCK_EAUTH, DLOCK_ETIMEDOUT,
 * DLOCK_EPROTO, DLOCK_ENOMEM; errbuf gets the detail. */
int dlock__redis_topology_new(dlock__redis_topology **out,
                              const dlock__redis_config *cfg, char *errbuf,
                              size_t errlen);

/* Joins the thread, frees the subscriber and every node. NULL ok. */
void dlock__redis_topology_free(dlock__redis_topology *t);

/* The node calls go to now. Never blocks on I/O. NULL only for a lazy
 * Sentinel topology (cfg->lazy_connect) whose first master has not been
 * found yet: the caller then fails with dlock__redis_topology_no_master. */
dlock__redis_node *dlock__redis_topology_master(dlock__redis_topology *t);

/* Writes why no master is known yet ("no master of 'NAME' found yet
 * (last: <the watcher's last discovery error>)") and returns DLOCK_ECONN,
 * or the last discovery's DLOCK_EINVAL (no sentinel knows the name) or
 * DLOCK_EAUTH (credentials refused): errors waiting does not mend. Never
 * blocks on I/O. */
int dlock__redis_topology_no_master(dlock__redis_topology *t, char *errbuf,
                                    size_t errlen);

/* The subscriber (it follows the master). */
dlock__redis_subscriber *dlock__redis_topology_subscriber(
    dlock__redis_topology *t);

/* A call on n failed with DLOCK_ECONN: with Sentinel, if n is still the
 * master, the thread looks for the master again. Never blocks. */
void dlock__redis_topology_suspect(dlock__redis_topology *t,
                                   dlock__redis_node *n);

#endif /* DLOCK_REDIS_TOPOLOGY_H */
