/*
 * Redis backend: its part of a configuration (core/config.h): the JSON
 * configuration's Redis keys (api/dlock/config.h), which fill the
 * dlock_redis_options its open function gets (api/dlock/redis.h).
 */
#include <stddef.h>
#include <stdlib.h>

#include "core/config.h"
#include "core/wipe.h"
#include "dlock/redis.h"
#include "dlock/times.h"
#include "backends/redis/config.h"

/* Every integer key but pool_size, sync_replicas, connections,
 * max_reply_bytes and cluster_max_nodes is a duration: DLOCK_TIME_MAX_MS
 * at most. */
#define I64(name, where, min) \
    {name, DLOCK__F_I64, offsetof(dlock_redis_options, where), min, DLOCK_TIME_MAX_MS}
#define STR(name, where) {name, DLOCK__F_STR, offsetof(dlock_redis_options, where), 0, 0}
#define INT(name, where, min, max) \
    {name, DLOCK__F_INT, offsetof(dlock_redis_options, where), min, max}
#define FLAG(name, where) {name, DLOCK__F_FLAG, offsetof(dlock_redis_options, where), 0, 1}

static const dlock__config_field fields[] = {
    I64("connect_timeout_ms", connect_timeout_ms, 0),
    I64("command_timeout_ms", command_timeout_ms, 0),
    INT("pool_size", pool_size, 1, 4096),
    I64("reconnect_min_ms", reconnect_min_ms, 0),
    I64("reconnect_max_ms", reconnect_max_ms, 0),
    STR("tls_cacert", tls_cacert),
    STR("tls_cacertdir", tls_cacertdir),
    STR("tls_cert", tls_cert),
    STR("tls_key", tls_key),
    STR("tls_sni", tls_sni),
    FLAG("tls_insecure", tls_insecure),
    STR("sentinel_user", sentinel_user),
    STR("sentinel_password", sentinel_password),
    INT("sync_replicas", sync_replicas, -1, DLOCK_SYNC_REPLICAS_MAX),
    I64("sync_timeout_ms", sync_timeout_ms, 1),
    FLAG("multiplex", multiplex),
    INT("connections", connections, 1, 64),
    FLAG("lazy_connect", lazy_connect),
    {"max_reply_bytes", DLOCK__F_I64, offsetof(dlock_redis_options, max_reply_bytes),
     DLOCK_REDIS_MAX_REPLY_MIN, DLOCK_REDIS_MAX_REPLY_LIMIT},
    INT("cluster_max_nodes", cluster_max_nodes, 1, DLOCK_REDIS_CLUSTER_NODES_LIMIT),
};

static void start(void *opts, int lazy_connect)
{
    static const dlock_redis_options defaults = DLOCK_REDIS_OPTIONS_INIT;
    dlock_redis_options *r = opts;

    *r = defaults;
    r->lazy_connect = lazy_connect; /* -1: the format's */
}

/* A client set connects lazily unless told otherwise (by the text or the
 * caller's defaults): a Redlock must start with a minority of its nodes
 * down. */
static void finish(void *opts, int set)
{
    dlock_redis_options *r = opts;

    if (r->lazy_connect == -1)
        r->lazy_connect = set;
}

/* sentinel_password is a secret. */
static void fini(void *opts)
{
    dlock_redis_options *r = opts;

    free((char *)r->tls_cacert);
    free((char *)r->tls_cacertdir);
    free((char *)r->tls_cert);
    free((char *)r->tls_key);
    free((char *)r->tls_sni);
    free((char *)r->sentinel_user);
    dlock__wipe_free((char *)r->sentinel_password);
    r->tls_cacert = r->tls_cacertdir = r->tls_cert = r->tls_key = r->tls_sni = NULL;
    r->sentinel_user = r->sentinel_password = NULL;
}

const dlock__backend_config dlock__redis_config = {
    "redis", sizeof(dlock_redis_options), fields, sizeof(fields) / sizeof(fields[0]),
    start, finish, fini,
};
