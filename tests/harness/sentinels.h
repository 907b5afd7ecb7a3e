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
 * the sentinels agree on a master that answers ROLE "master", and every
 * other running data node is its connected replica. 0 or -1. */
int dlock_test_sentinels_wait_ready(dlock_test_sentinels *s, int timeout_ms);

/* Stops every process of the set. */
void dlock_test_sentinels_stop(dlock_test_sentinels *s);

#endif /* DLOCK_TEST_SENTINELS_H */
