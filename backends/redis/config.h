/*
 * Redis backend: its part of a configuration (backends/redis/config.c)
 * and the Redisson YAML reader (backends/redis/redisson_yaml.c), which
 * register with core/config.h from register.c.
 */
#ifndef DLOCK_BACKENDS_REDIS_CONFIG_H
#define DLOCK_BACKENDS_REDIS_CONFIG_H

#include "core/config.h"
#include "dlock/redis.h"

/* Its part, called "redis": the options are a dlock_redis_options. */
extern const dlock__backend_config dlock__redis_config;

/* The Redis options of a parsed configuration (its "redis" part); NULL
 * only before the Redis backend registered, which dlock__config_start
 * sees to. */
#define DLOCK__CONFIG_REDIS(c) ((dlock_redis_options *)dlock__config_part((c), "redis"))

#endif /* DLOCK_BACKENDS_REDIS_CONFIG_H */
