/*
 * Test harness: a Sentinel-managed Redis on loopback — a master, two
 * replicas and three sentinels (quorum 2), each a throwaway process of
 * redis_server.h (free ports, killed with the test process).
 *
 * Not thread-safe: one thread drives a set.
 */
#ifndef DLOCK_TEST_SENTINELS_H
#define DLOCK_TEST_SENTINELS_H

#include <stddef.h>

#include "redis_server.h"

#define DLOCK_TEST_NDATA 3
#define DLOCK_TEST_NSENTINELS 3

typedef struct dlock_test_sentinels {
    dlock_test_redis *data[DLOCK_TEST_NDATA]; /* [0] is the first master */
    dlock_test_redis *sentinel[DLOCK_TEST_NSENTINELS];
    char name[64];
    /* "redis-sentinel://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3
     *  ?sentinelMasterId=<name>" */
    char url[512];
} dlock_test_sentinels;

/* Starts the set, master name `name`, and waits until every sentinel
 * knows both replicas and the two other sentinels (so a failover can be
 * voted) and both replicas are in sync. 0 or -1 (reason on stderr; what
 * was started is stopped). */
int dlock_test_sentinels_start(dlock_test_sentinels *s, const char *name);

/* The index in data[] of the node the first reachable sentinel names as
 * the master, or -1. */
int dlock_test_sentinels_master(dlock_test_sentinels *s);

/* Waits (up to timeout_ms) until the set is ready for another failover:
 * every sentinel names the same master, has no failover of it in progress
 * and does not hold it down, and knows the replicas and the other
 * sentinels; the master answers ROLE "master" with every other data node
 * online as its replica, in step at its offset. 0 or -1. */
int dlock_test_sentinels_wait_ready(dlock_test_sentinels *s, int timeout_ms);

/* The same wait, healing meanwhile: a data node or sentinel that does not
 * answer is started again (same port, data lost), and once the sentinels
 * agree on a master every other data node is made its replica (REPLICAOF),
 * rather than waiting the sentinels' INFO period for it. For use between
 * the runs of a fault case, with a bound that holds on a loaded machine.
 * 0 or -1. */
int dlock_test_sentinels_heal(dlock_test_sentinels *s, int timeout_ms);

/* Prints, on stderr, each data node's ROLE and each sentinel's SENTINEL
 * MASTER reply: what a failed wait found. */
void dlock_test_sentinels_describe(dlock_test_sentinels *s);

/* 0 when m answers ROLE "master" with exactly `replicas` online replicas,
 * each having acknowledged the offset the master had when asked, within a
 * second (writes may go on meanwhile) (ROLE gives the master's offset,
 * then ip, port and acknowledged offset per online replica); -1
 * otherwise. */
int dlock_test_master_in_step(dlock_test_redis *m, int replicas);

/* Stops every process of the set. */
void dlock_test_sentinels_stop(dlock_test_sentinels *s);

#endif /* DLOCK_TEST_SENTINELS_H */
