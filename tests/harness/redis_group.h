/*
 * A cmocka group on one throwaway redis-server (redis_server.h), for the
 * suites of tests/backends/redis/ whose cases share one plain server and
 * need nothing else of the group: the server is started before the
 * group's first case into the suite's own variable (which its cases
 * read), and stopped after its last, whatever they did.
 */
#ifndef DLOCK_TEST_REDIS_GROUP_H
#define DLOCK_TEST_REDIS_GROUP_H

#include <stddef.h>

#include "redis_server.h"

struct CMUnitTest;

/* Starts a server into *srv, runs tests[0..n) as the cmocka group name,
 * stops the server and sets *srv to NULL. Returns the group's failures,
 * counted in the run's totals (a server that does not start fails every
 * case of the group). */
int dlock_test_redis_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                               dlock_test_redis **srv);

#define DLOCK_RUN_REDIS_GROUP(name, tests, srv)                                          \
    dlock_test_redis_run_group(name, tests, sizeof(tests) / sizeof((tests)[0]), srv)

#endif /* DLOCK_TEST_REDIS_GROUP_H */
