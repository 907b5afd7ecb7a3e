/*
 * Redis backend: its URL schemes (core/registry.c; backends/redis/url.c
 * parses the URL itself).
 */
#include "dlock/redis.h"

#include "core/registry.h"

static int open_redis(void *arg, dlock_backend **out, const char *url,
                      const void *options, char *errbuf, size_t errlen)
{
    (void)arg;
    return dlock_redis_backend_new(out, url, (const dlock_redis_options *)options,
                                   errbuf, errlen);
}

void dlock__backend_register_redis(void);
void dlock__backend_register_redis(void)
{
    static const char *const schemes[] = {
        "redis", "rediss", "unix", "redis-sentinel", "rediss-sentinel",
        "redis-cluster", "rediss-cluster",
    };
    size_t i;

    for (i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        dlock__backend_register(schemes[i], open_redis, NULL);
}
