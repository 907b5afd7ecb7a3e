/*
 * dlock benchmarks — figures 1, 2 and 4: uncontended lock+unlock pairs.
 *
 * 1. one thread, every lock type, against the raw floor;
 * 2. T threads each on its own lock name (reentrant), against T raw
 *    connections;
 * 4. one thread on the mock backend, every lock type;
 * 7. one thread, reentrant, over TLS against plain TCP on one server.
 *
 * Library and raw sides alternate in short rounds (runner.c), so both see the
 * same machine; the ratio is what the targets are about.
 */
#include <stdio.h>
#include <stdlib.h>

#include "../harness/redis_server.h"
#include "bench.h"

/* ---- the library side -------------------------------------------------------- */

typedef struct lib_ctx {
    dlock_client *client;
    const bench_lock_type *type;
} lib_ctx;

static int lib_open(void *ctx, int idx, void **state)
{
    lib_ctx *x = ctx;
    char name[96];

    snprintf(name, sizeof name, "bench:%s:%d", x->type->name, idx);
    return bench_lock_open((dlock_rlock **)state, x->type, x->client, name);
}

static bench_side lib_side(lib_ctx *x, const char *label)
{
    bench_side s = {label, lib_open, bench_lock_pair, bench_lock_close, x};
    return s;
}

/* ---- the raw side ---------------------------------------------------------------- */

static int raw_open(void *ctx, int idx, void **state)
{
    char name[64];

    snprintf(name, sizeof name, "bench:raw:%d", idx);
    return bench_raw_connect((bench_raw_conn **)state, ctx, name) == 0 ? 0 : -1;
}

static int raw_pair(void *state)
{
    return bench_raw_pair(state, NULL);
}

static void raw_close(void *state)
{
    bench_raw_close(state);
}

static bench_side raw_side(bench_raw *raw)
{
    bench_side s = {"raw", raw_open, raw_pair, raw_close, raw};
    return s;
}

static void print_errors(const bench_rate *r)
{
    if (r->errors)
        bench_row("   (%d threads failed; first: %s)", r->errors, r->error);
}

/* ---- figure 1 ----------------------------------------------------------------------- */

#define UNCONTENDED_TARGET 0.95

void bench_fig_uncontended(const bench_config *cfg, bench_raw *raw)
{
    size_t n = bench_nlock_types, i;
    bench_side *sides = calloc(n + 1, sizeof(*sides));
    bench_rate *rates = calloc(n + 1, sizeof(*rates));
    lib_ctx *ctx = calloc(n, sizeof(*ctx));
    dlock_client *client = NULL;
    double raw_rate;
    int rc;

    bench_heading("1. uncontended, 1 thread, redis: lock+unlock pairs/s vs the raw "
                  "EVALSHA floor (target: reentrant >= 0.95)",
                  "lock          pairs/s    raw pairs/s   ratio   target");
    if (!sides || !rates || !ctx ||
        (rc = bench_client_new(&client, cfg, BENCH_REDIS, 0, NULL, NULL)) != 0) {
        bench_row("   cannot set up the figure");
        goto out;
    }
    sides[0] = raw_side(raw);
    for (i = 0; i < n; i++) {
        ctx[i].client = client;
        ctx[i].type = &bench_lock_types[i];
        sides[i + 1] = lib_side(&ctx[i], bench_lock_types[i].name);
    }
    bench_alternate(cfg, sides, n + 1, 1, rates);
    raw_rate = bench_rate_per_s(&rates[0]);
    print_errors(&rates[0]);
    for (i = 0; i < n; i++) {
        const bench_lock_type *t = &bench_lock_types[i];
        double lib = bench_rate_per_s(&rates[i + 1]);
        double ratio = bench_ratio(&rates[i + 1], &rates[0]);
        int applicable = t == bench_lock_type_find("reentrant"); /* its target */
        bench_json j;

        bench_row("%-10s %10.0f %14.0f %7.3f   %s", t->name, lib, raw_rate, ratio,
                  applicable ? bench_verdict(1, ratio >= UNCONTENDED_TARGET) : "-");
        print_errors(&rates[i + 1]);
        bench_json_begin(&j, "uncontended");
        bench_json_str(&j, "lock", t->name);
        bench_json_str(&j, "backend", "redis");
        bench_json_int(&j, "threads", 1);
        bench_json_num(&j, "pairs_per_s", lib);
        bench_json_num(&j, "raw_pairs_per_s", raw_rate);
        bench_json_num(&j, "ratio_vs_raw", ratio);
        bench_json_num(&j, "client_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[i + 1]));
        bench_json_num(&j, "raw_client_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[0]));
        bench_json_num(&j, "ratio_min", bench_ratio_q(&rates[i + 1], &rates[0], 0));
        bench_json_num(&j, "ratio_max", bench_ratio_q(&rates[i + 1], &rates[0], 1));
        if (applicable) {
            bench_json_num(&j, "target_ratio", UNCONTENDED_TARGET);
            bench_json_str(&j, "target", bench_verdict(1, ratio >= UNCONTENDED_TARGET));
        }
        bench_json_int(&j, "failures", rates[i + 1].errors);
        bench_json_end(&j);
    }
out:
    dlock_client_free(client);
    free(ctx);
    free(rates);
    free(sides);
}

/* ---- figure 2 ----------------------------------------------------------------------- */

#define SCALING_TARGET 0.9

void bench_fig_scaling(const bench_config *cfg, bench_raw *raw)
{
    static const int threads[] = {1, 2, 4, 8, 16};
    const dlock_redis_options defaults = DLOCK_REDIS_OPTIONS_INIT;
    size_t k;

    bench_heading("2. scaling, redis, reentrant: T threads each on its own lock "
                  "(one client; T <= 8: default options, multiplexed; else "
                  "pooled, pool = T), vs T raw connections "
                  "(target >= 0.9)",
                  " T     pairs/s    raw pairs/s   ratio   target");
    for (k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        int t = threads[k];
        int pool = t > defaults.pool_size ? t : 0;
        dlock_client *client;
        lib_ctx ctx;
        bench_side sides[2];
        bench_rate rates[2] = {{0}};
        double lib, rawr, ratio;
        bench_json j;

        if (bench_client_new(&client, cfg, BENCH_REDIS, pool, NULL, NULL) != 0) {
            bench_row("%2d   cannot create a client", t);
            continue;
        }
        ctx.client = client;
        ctx.type = bench_lock_type_find("reentrant");
        sides[0] = raw_side(raw);
        sides[1] = lib_side(&ctx, "reentrant");
        bench_alternate(cfg, sides, 2, t, rates);
        dlock_client_free(client);
        rawr = bench_rate_per_s(&rates[0]);
        lib = bench_rate_per_s(&rates[1]);
        ratio = bench_ratio(&rates[1], &rates[0]);
        bench_row("%2d %11.0f %14.0f %7.3f   %s", t, lib, rawr, ratio,
                  bench_verdict(1, ratio >= SCALING_TARGET));
        print_errors(&rates[0]);
        print_errors(&rates[1]);
        bench_json_begin(&j, "scaling");
        bench_json_str(&j, "lock", "reentrant");
        bench_json_str(&j, "backend", "redis");
        bench_json_int(&j, "threads", t);
        bench_json_str(&j, "mode", pool ? "pool" : "multiplex");
        bench_json_int(&j, pool ? "pool_size" : "connections",
                       pool ? pool : defaults.connections);
        bench_json_num(&j, "pairs_per_s", lib);
        bench_json_num(&j, "raw_pairs_per_s", rawr);
        bench_json_num(&j, "ratio_vs_raw", ratio);
        bench_json_num(&j, "client_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[1]));
        bench_json_num(&j, "raw_client_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[0]));
        bench_json_num(&j, "ratio_min", bench_ratio_q(&rates[1], &rates[0], 0));
        bench_json_num(&j, "ratio_max", bench_ratio_q(&rates[1], &rates[0], 1));
        bench_json_num(&j, "target_ratio", SCALING_TARGET);
        bench_json_str(&j, "target", bench_verdict(1, ratio >= SCALING_TARGET));
        bench_json_int(&j, "failures", rates[0].errors + rates[1].errors);
        bench_json_end(&j);
    }
}

/* ---- figure 4 ----------------------------------------------------------------------- */

/* The mock does no I/O: one pair is pure CPU in the calling thread, so on a
 * busy machine the wall-clock rate measures the other load as much as the
 * mock. Pairs per CPU-second of the looping thread is what one free core
 * would do; the target is judged on it, and both are printed. */
#define MOCK_TARGET 100000.0

void bench_fig_mock(const bench_config *cfg)
{
    size_t n = bench_nlock_types, i;
    bench_side *sides = calloc(n, sizeof(*sides));
    bench_rate *rates = calloc(n, sizeof(*rates));
    lib_ctx *ctx = calloc(n, sizeof(*ctx));
    dlock_client *client = NULL;

    bench_heading("4. mock backend, 1 thread: lock+unlock pairs/s (target >= 100 000 "
                  "per CPU-second of the thread)",
                  "lock        pairs/s wall   pairs/CPU-s   target");
    if (!sides || !rates || !ctx ||
        bench_client_new(&client, cfg, BENCH_MOCK, 0, NULL, NULL) != 0) {
        bench_row("   cannot set up the figure");
        goto out;
    }
    for (i = 0; i < n; i++) {
        ctx[i].client = client;
        ctx[i].type = &bench_lock_types[i];
        sides[i] = lib_side(&ctx[i], bench_lock_types[i].name);
    }
    bench_alternate(cfg, sides, n, 1, rates);
    for (i = 0; i < n; i++) {
        double r = bench_rate_per_s(&rates[i]);
        double cpu_us = bench_cpu_us_per_pair(&rates[i]);
        double per_cpu_s = cpu_us > 0 ? 1e6 / cpu_us : 0;
        const char *verdict = bench_verdict(cpu_us > 0, per_cpu_s >= MOCK_TARGET);
        bench_json j;

        bench_row("%-10s %13.0f %13.0f   %s", bench_lock_types[i].name, r, per_cpu_s,
                  verdict);
        print_errors(&rates[i]);
        bench_json_begin(&j, "mock");
        bench_json_str(&j, "lock", bench_lock_types[i].name);
        bench_json_str(&j, "backend", "mock");
        bench_json_int(&j, "threads", 1);
        bench_json_num(&j, "pairs_per_s", r);
        bench_json_num(&j, "pairs_per_cpu_s", per_cpu_s);
        bench_json_num(&j, "client_cpu_us_per_pair", cpu_us);
        bench_json_num(&j, "target_pairs_per_s", MOCK_TARGET);
        bench_json_str(&j, "target", verdict);
        bench_json_int(&j, "failures", rates[i].errors);
        bench_json_end(&j);
    }
out:
    dlock_client_free(client);
    free(ctx);
    free(rates);
    free(sides);
}

/* ---- figure 7 ----------------------------------------------------------------------- */

/* What TLS costs an uncontended lock+unlock pair: the same server listens
 * on a plain and a TLS port (its own throwaway server, with a throwaway
 * PKI; client certificates required, as on a managed service), one client
 * on each, the reentrant lock, alternating rounds. */
#define TLS_TARGET 0.8

void bench_fig_tls(const bench_config *cfg)
{
    dlock_test_redis *server = NULL;
    dlock_client *plain = NULL, *tls = NULL;
    bench_config tls_cfg = *cfg, plain_cfg = *cfg;
    lib_ctx ctx[2];
    bench_side sides[2];
    bench_rate rates[2] = {{0}};
    double p, t, ratio;
    bench_json j;

    bench_heading("7. TLS, redis, reentrant, 1 thread: lock+unlock pairs/s over rediss:// "
                  "vs plain redis:// on the same server (target >= 0.8)",
                  "            plain pairs/s   TLS pairs/s   ratio   target");
    if (dlock_test_redis_start_tls(&server, "yes", 1, NULL) != 0) {
        bench_row("   cannot start a TLS redis-server");
        return;
    }
    plain_cfg.redis_url = dlock_test_redis_url(server);
    tls_cfg.redis_url = dlock_test_redis_tls_url(server);
    if (bench_client_new(&plain, &plain_cfg, BENCH_REDIS, 0, NULL, NULL) != 0 ||
        bench_client_new(&tls, &tls_cfg, BENCH_REDIS, 0, NULL, NULL) != 0) {
        bench_row("   cannot create the clients");
        goto out;
    }
    ctx[0].client = plain;
    ctx[1].client = tls;
    ctx[0].type = ctx[1].type = bench_lock_type_find("reentrant");
    sides[0] = lib_side(&ctx[0], "plain");
    sides[1] = lib_side(&ctx[1], "tls");
    bench_alternate(cfg, sides, 2, 1, rates);
    p = bench_rate_per_s(&rates[0]);
    t = bench_rate_per_s(&rates[1]);
    ratio = bench_ratio(&rates[1], &rates[0]);
    bench_row("reentrant %15.0f %13.0f %7.3f   %s", p, t, ratio,
              bench_verdict(1, ratio >= TLS_TARGET));
    print_errors(&rates[0]);
    print_errors(&rates[1]);
    bench_json_begin(&j, "tls");
    bench_json_str(&j, "lock", "reentrant");
    bench_json_str(&j, "backend", "redis");
    bench_json_int(&j, "threads", 1);
    bench_json_num(&j, "plain_pairs_per_s", p);
    bench_json_num(&j, "tls_pairs_per_s", t);
    bench_json_num(&j, "ratio_tls_vs_plain", ratio);
    bench_json_num(&j, "ratio_min", bench_ratio_q(&rates[1], &rates[0], 0));
    bench_json_num(&j, "ratio_max", bench_ratio_q(&rates[1], &rates[0], 1));
    bench_json_num(&j, "plain_client_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[0]));
    bench_json_num(&j, "tls_client_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[1]));
    bench_json_num(&j, "target_ratio", TLS_TARGET);
    bench_json_str(&j, "target", bench_verdict(1, ratio >= TLS_TARGET));
    bench_json_int(&j, "failures", rates[0].errors + rates[1].errors);
    bench_json_end(&j);
out:
    dlock_client_free(tls);
    dlock_client_free(plain);
    dlock_test_redis_stop(server);
}
