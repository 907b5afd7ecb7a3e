/*
 * dlock benchmarks — figure 11: Redis Cluster. A cluster of its own (3
 * masters, no replicas: replication is not what is measured) and one
 * standalone redis-server, both on loopback; the reentrant lock,
 * uncontended, each thread on its own name (the cluster's names spread
 * over the three masters by their slots). Alternating rounds (runner.c):
 *   1 thread   — what routing by slot costs a pair (one round trip either
 *                way: the ratio should be close to 1);
 *   16 threads — what sharding buys: three single-threaded servers share
 *                the load of one (on 2 cores the client's own CPU caps it).
 */
#include <stdio.h>

#include "../harness/cluster.h"
#include "../harness/redis_server.h"
#include "bench.h"

typedef struct cluster_ctx {
    dlock_client *client;
    const char *prefix;
} cluster_ctx;

static int cluster_open(void *ctx, int idx, void **state)
{
    cluster_ctx *x = ctx;
    char name[64];

    snprintf(name, sizeof name, "bench:%s:%d", x->prefix, idx);
    return bench_lock_open((dlock_rlock **)state, bench_lock_type_find("reentrant"),
                           x->client, name);
}

static void one_row(const bench_config *cfg, int threads, cluster_ctx ctx[2])
{
    bench_side sides[2];
    bench_rate rates[2] = {{0}};
    double n, c, ratio;
    bench_json j;

    sides[0] = (bench_side){"node", cluster_open, bench_lock_pair, bench_lock_close, &ctx[0]};
    sides[1] = (bench_side){"cluster", cluster_open, bench_lock_pair, bench_lock_close,
                            &ctx[1]};
    bench_alternate(cfg, sides, 2, threads, rates);
    n = bench_rate_per_s(&rates[0]);
    c = bench_rate_per_s(&rates[1]);
    ratio = bench_ratio(&rates[1], &rates[0]);
    bench_row("%7d %16.0f %17.0f %7.3f", threads, n, c, ratio);
    if (rates[0].errors || rates[1].errors)
        bench_row("   (failures: node %d, cluster %d: %s%s)", rates[0].errors,
                  rates[1].errors, rates[0].error, rates[1].error);
    bench_json_begin(&j, "cluster");
    bench_json_str(&j, "lock", "reentrant");
    bench_json_int(&j, "threads", threads);
    bench_json_int(&j, "masters", 3);
    bench_json_num(&j, "node_pairs_per_s", n);
    bench_json_num(&j, "cluster_pairs_per_s", c);
    bench_json_num(&j, "ratio_cluster_vs_node", ratio);
    bench_json_num(&j, "ratio_min", bench_ratio_q(&rates[1], &rates[0], 0));
    bench_json_num(&j, "ratio_max", bench_ratio_q(&rates[1], &rates[0], 1));
    bench_json_int(&j, "failures", rates[0].errors + rates[1].errors);
    bench_json_end(&j);
}

void bench_fig_cluster(const bench_config *cfg)
{
    dlock_test_cluster cl = {0};
    dlock_test_redis *node = NULL;
    dlock_client *single = NULL, *sharded = NULL;
    bench_config node_cfg = *cfg, cl_cfg = *cfg;
    cluster_ctx ctx[2];

    bench_heading("11. Redis Cluster, reentrant, uncontended: lock+unlock pairs/s on "
                  "3 masters vs one redis-server, same run",
                  "threads  node pairs/s  cluster pairs/s   ratio");
    if (dlock_test_redis_start(&node, NULL) != 0 ||
        dlock_test_cluster_start(&cl, 3, 0) != 0) {
        bench_row("   cannot start the servers");
        goto out;
    }
    node_cfg.redis_url = dlock_test_redis_url(node);
    cl_cfg.redis_url = dlock_test_cluster_url(&cl);
    if (bench_client_new(&single, &node_cfg, BENCH_REDIS, 0, NULL, NULL) != 0 ||
        bench_client_new(&sharded, &cl_cfg, BENCH_REDIS, 0, NULL, NULL) != 0) {
        bench_row("   cannot create the clients");
        goto out;
    }
    ctx[0] = (cluster_ctx){single, "node"};
    ctx[1] = (cluster_ctx){sharded, "cluster"};
    one_row(cfg, 1, ctx);
    one_row(cfg, 16, ctx);
out:
    dlock_client_free(sharded);
    dlock_client_free(single);
    dlock_test_cluster_stop(&cl);
    dlock_test_redis_stop(node);
}
