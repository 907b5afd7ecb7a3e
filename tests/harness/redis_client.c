/*
 * Clients on a test's Redis server (redis_client.h).
 */
#include "redis_client.h"

#include <stdio.h>

dlock_redis_options dlock_test_redis_options(int64_t connect_ms, int64_t command_ms)
{
    dlock_redis_options o = DLOCK_REDIS_OPTIONS_INIT;

    if (connect_ms > 0)
        o.connect_timeout_ms = connect_ms;
    if (command_ms > 0)
        o.command_timeout_ms = command_ms;
    o.reconnect_min_ms = 20;
    o.reconnect_max_ms = 200;
    return o;
}

int dlock_test_client_open(dlock_client **out, const char *url,
                           const dlock_redis_options *ro, const dlock_client_options *co,
                           char *err, size_t errlen)
{
    dlock_redis_options d = dlock_test_redis_options(1000, 1000);
    dlock_backend *b = NULL;
    int rc;

    *out = NULL;
    if (errlen)
        err[0] = '\0';
    rc = dlock_redis_backend_new(&b, url, ro ? ro : &d, err, errlen);
    if (rc != 0)
        return rc;
    rc = dlock_client_new(out, b, co);
    if (rc != 0) {
        snprintf(err, errlen, "the client on the backend: %s", dlock_errname(rc));
        dlock_backend_free(b);
    }
    return rc;
}
