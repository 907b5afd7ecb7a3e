/*
 * Redis backend: its URL schemes (core/registry.c; backends/redis/url.c
 * parses the URL itself), its part of a configuration (config.c) and the
 * Redisson YAML format (redisson_yaml.c), with core/config.h.
 */
#include "dlock/redis.h"

#include "backends/redis/config.h"
#include "backends/redis/redisson_yaml.h"
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
    /* the first part registered: its options go to every backend a
     * configuration opens (core/config.h) */
    dlock__backend_register_config(&dlock__redis_config);
    dlock__config_register_format("yaml", dlock__redisson_yaml_parse_from);
}
