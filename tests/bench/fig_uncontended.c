/*
 * dlock benchmarks — figures 1, 2 and 4: uncontended lock+unlock pairs.
 *
 * 1. one thread, every lock type, against the raw floor;
 * 2. T threads each on its own lock name (reentrant), against T raw
 *    connections;
 * 4. one thread on the mock backend, every lock type.
 *
 * Library and raw sides alternate in short rounds (runner.c), so both see the
 * same machine; the ratio is what the targets are about.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

/* ---- the library side -------------------------------------------------------- */

typedef struct lib_ctx {
    dlock_client *client;
    const bench_lock_type *type;
} lib_ctx;

static int lib_open(void *ctx, int idx, void **state)
{
    lib_ctx *x = ctx;
    bench_lock *bl = malloc(sizeof(*bl));
    char name[96];
    int rc;

    if (!bl)
        return DLOCK_ENOMEM;
    snprintf(name, sizeof name, "bench:%s:%d", x->type->name, idx);
    rc = bench_lock_open(bl, x->type, x->client, name);
    if (rc != 0) {
        free(bl);
        return rc;
    }
    *state = bl;
    return 0;
}

static int lib_pair(void *state)
{
    bench_lock *bl = state;
    int rc = dlock_lock(bl->l, BENCH_LEASE_MS);

    if (rc == 0)
        rc = dlock_unlock(bl->l);
    if (rc != 0)
        fprintf(stderr, "bench: %s pair: %s\n", bl->type->name, dlock_errmsg(bl->l));
    return rc;
}

static void lib_close(void *state)
{
    bench_lock_close(state);
    free(state);
}

static bench_side lib_side(lib_ctx *x, const char *label)
{
    bench_side s = {label, lib_open, lib_pair, lib_close, x};
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
        bench_row("   (%d failed pairs; first: %s)", r->errors, r->error);
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
        double ratio = raw_rate > 0 ? lib / raw_rate : 0;
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
        if (applicable) {
            bench_json_num(&j, "target_ratio", UNCONTENDED_TARGET);
            bench_json_str(&j, "target", bench_verdict(1, ratio >= UNCONTENDED_TARGET));
        }
        bench_json_int(&j, "failed_pairs", rates[i + 1].errors);
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
                  "(one client; pool = max(T, default)), vs T raw connections "
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
        ratio = rawr > 0 ? lib / rawr : 0;
        bench_row("%2d %11.0f %14.0f %7.3f   %s", t, lib, rawr, ratio,
                  bench_verdict(1, ratio >= SCALING_TARGET));
        print_errors(&rates[0]);
        print_errors(&rates[1]);
        bench_json_begin(&j, "scaling");
        bench_json_str(&j, "lock", "reentrant");
        bench_json_str(&j, "backend", "redis");
        bench_json_int(&j, "threads", t);
        bench_json_int(&j, "pool_size", pool ? pool : defaults.pool_size);
        bench_json_num(&j, "pairs_per_s", lib);
        bench_json_num(&j, "raw_pairs_per_s", rawr);
        bench_json_num(&j, "ratio_vs_raw", ratio);
        bench_json_num(&j, "target_ratio", SCALING_TARGET);
        bench_json_str(&j, "target", bench_verdict(1, ratio >= SCALING_TARGET));
        bench_json_int(&j, "failed_pairs", rates[0].errors + rates[1].errors);
        bench_json_end(&j);
    }
}

/* ---- figure 4 ----------------------------------------------------------------------- */

#define MOCK_TARGET 100000.0

void bench_fig_mock(const bench_config *cfg)
{
    size_t n = bench_nlock_types, i;
    bench_side *sides = calloc(n, sizeof(*sides));
    bench_rate *rates = calloc(n, sizeof(*rates));
    lib_ctx *ctx = calloc(n, sizeof(*ctx));
    dlock_client *client = NULL;

    bench_heading("4. mock backend, 1 thread: lock+unlock pairs/s "
                  "(target >= 100 000/s)",
                  "lock          pairs/s   target");
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
        bench_json j;

        bench_row("%-10s %10.0f   %s", bench_lock_types[i].name, r,
                  bench_verdict(1, r >= MOCK_TARGET));
        print_errors(&rates[i]);
        bench_json_begin(&j, "mock");
        bench_json_str(&j, "lock", bench_lock_types[i].name);
        bench_json_str(&j, "backend", "mock");
        bench_json_int(&j, "threads", 1);
        bench_json_num(&j, "pairs_per_s", r);
        bench_json_num(&j, "target_pairs_per_s", MOCK_TARGET);
        bench_json_str(&j, "target", bench_verdict(1, r >= MOCK_TARGET));
        bench_json_int(&j, "failed_pairs", rates[i].errors);
        bench_json_end(&j);
    }
out:
    dlock_client_free(client);
    free(ctx);
    free(rates);
    free(sides);
}
