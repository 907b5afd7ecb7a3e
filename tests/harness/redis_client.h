/*
 * Clients on a test's Redis server: the options the suites start from and
 * one way to open a client on them (the backend, then the client over it,
 * the backend freed if the client cannot be made).
 */
#ifndef DLOCK_TEST_REDIS_CLIENT_H
#define DLOCK_TEST_REDIS_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "dlock.h"
#include "dlock/redis.h"

/* The defaults, with these connect and command timeouts (0: the default's)
 * and a short reconnection back-off (20..200 ms), so that a server a case
 * restarted is found again soon. */
dlock_redis_options dlock_test_redis_options(int64_t connect_ms, int64_t command_ms);

/* A client on the Redis backend at url with ro (NULL:
 * dlock_test_redis_options(1000, 1000)) and co (NULL: the defaults). 0, or
 * the code, with what failed in err. */
int dlock_test_client_open(dlock_client **out, const char *url,
                           const dlock_redis_options *ro, const dlock_client_options *co,
                           char *err, size_t errlen);

#endif /* DLOCK_TEST_REDIS_CLIENT_H */
