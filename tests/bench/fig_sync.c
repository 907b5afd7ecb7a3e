/*
 * dlock benchmarks — figure 8: what sync_replicas=1 costs an uncontended
 * lock+unlock pair (api/dlock/redis.h: every write is followed by WAIT in
 * the same round trip, so a pair costs two round trips plus two
 * replications). Its own master with one replica on loopback; one client
 * with the option and one without, on the same master, the reentrant lock,
 * alternating rounds (runner.c) so both see the same machine.
 */
#include <stdio.h>
#include <string.h>

#include "../harness/redis_server.h"
#include "bench.h"

typedef struct sync_ctx {
    dlock_client *client;
} sync_ctx;

static int sync_open(void *ctx, int idx, void **state)
{
    sync_ctx *x = ctx;
    char name[64];

    snprintf(name, sizeof name, "bench:sync:%d", idx);
    return bench_lock_open((dlock_rlock **)state, bench_lock_type_find("reentrant"),
                           x->client, name);
}

/* The replica is connected and online. 0 or -1. */
static int replica_online(dlock_test_redis *master)
{
    const char *info[] = {"INFO", "replication", NULL};
    char out[4096];
    int i;

    for (i = 0; i < 100; i++) {
        if (dlock_test_redis_command(master, out, sizeof out, info) == 0 &&
            strstr(out, "state=online"))
            return 0;
        bench_sleep_ms(50);
    }
    return -1;
}

void bench_fig_sync(const bench_config *cfg)
{
    dlock_test_redis *master = NULL, *replica = NULL;
    dlock_client *plain = NULL, *synced = NULL;
    bench_config plain_cfg = *cfg, sync_cfg = *cfg;
    char port[16], sync_url[128];
    const char *args[] = {"--replicaof", "127.0.0.1", port, NULL};
    sync_ctx ctx[2];
    bench_side sides[2];
    bench_rate rates[2] = {{0}};
    double p, s, ratio;
    bench_json j;

    bench_heading("8. sync_replicas=1, redis, reentrant, 1 thread: lock+unlock pairs/s "
                  "with WAIT for one replica (loopback) vs without, same master",
                  "            plain pairs/s  sync pairs/s   ratio");
    if (dlock_test_redis_start(&master, NULL) != 0) {
        bench_row("   cannot start redis-server");
        return;
    }
    snprintf(port, sizeof port, "%d", dlock_test_redis_port(master));
    if (dlock_test_redis_start(&replica, args) != 0 || replica_online(master) != 0) {
        bench_row("   cannot start the replica");
        goto out;
    }
    snprintf(sync_url, sizeof sync_url, "%s?sync_replicas=1",
             dlock_test_redis_url(master));
    plain_cfg.redis_url = dlock_test_redis_url(master);
    sync_cfg.redis_url = sync_url;
    if (bench_client_new(&plain, &plain_cfg, BENCH_REDIS, 0, NULL, NULL) != 0 ||
        bench_client_new(&synced, &sync_cfg, BENCH_REDIS, 0, NULL, NULL) != 0) {
        bench_row("   cannot create the clients");
        goto out;
    }
    ctx[0].client = plain;
    ctx[1].client = synced;
    sides[0] = (bench_side){"plain", sync_open, bench_lock_pair, bench_lock_close, &ctx[0]};
    sides[1] = (bench_side){"sync", sync_open, bench_lock_pair, bench_lock_close, &ctx[1]};
    bench_alternate(cfg, sides, 2, 1, rates);
    p = bench_rate_per_s(&rates[0]);
    s = bench_rate_per_s(&rates[1]);
    ratio = bench_ratio(&rates[1], &rates[0]);
    bench_row("reentrant %15.0f %13.0f %7.3f", p, s, ratio);
    if (rates[0].errors || rates[1].errors)
        bench_row("   (failures: plain %d, sync %d)", rates[0].errors, rates[1].errors);
    bench_json_begin(&j, "sync");
    bench_json_str(&j, "lock", "reentrant");
    bench_json_str(&j, "backend", "redis");
    bench_json_int(&j, "threads", 1);
    bench_json_int(&j, "replicas", 1);
    bench_json_num(&j, "plain_pairs_per_s", p);
    bench_json_num(&j, "sync_pairs_per_s", s);
    bench_json_num(&j, "ratio_sync_vs_plain", ratio);
    bench_json_num(&j, "ratio_min", bench_ratio_q(&rates[1], &rates[0], 0));
    bench_json_num(&j, "ratio_max", bench_ratio_q(&rates[1], &rates[0], 1));
    bench_json_int(&j, "failures", rates[0].errors + rates[1].errors);
    bench_json_end(&j);
out:
    dlock_client_free(synced);
    dlock_client_free(plain);
    dlock_test_redis_stop(replica);
    dlock_test_redis_stop(master);
}
