/*
 * dlock benchmarks — figure 9: uncontended Redlock and MultiLock (issue
 * 13). Five redis-servers of its own on loopback; one thread doing
 * lock+unlock pairs on a single-node reentrant lock, a Redlock over 3 and
 * over 5 of the servers (its calls split: sent to every node, then every
 * reply read, on the calling thread), the Redlock over 5 again through
 * clients whose backend cannot split calls ("redlock-w": a worker thread
 * per node and step, as before split calls), and a MultiLock of 3
 * reentrant members on 3 servers, in alternating rounds (runner.c) so all see the same machine.
 * Target: Redlock n=5 >= 0.7 of the single node (printed, not asserted).
 *
 * What bounds it on a small machine: the client and the servers share
 * the CPUs, so a Redlock step costs n servers' CPU and the client's n
 * round trips of CPU (system calls, mostly) even when the round trips
 * overlap. A separate short run per side measures the CPU per pair of
 * this process and of the servers (INFO cpu); "ceiling" is the ratio
 * the CPUs would allow if they did nothing else and never idled:
 * (CPUs / CPU per pair) / the single lock's pairs/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../harness/redis_server.h"
#include "bench.h"

#define NODES 5
#define TARGET 0.7

enum { SINGLE, REDLOCK3, REDLOCK5, REDLOCK5W, MULTI3, SIDES };

typedef struct rl_ctx {
    dlock_client **clients;
    int kind;
} rl_ctx;

typedef struct rl_state {
    dlock_rlock *l;
    dlock_rlock *members[3];
} rl_state;

static void rl_close(void *state)
{
    rl_state *s = state;
    int i;

    if (!s)
        return;
    dlock_rlock_free(s->l);
    for (i = 0; i < 3; i++)
        dlock_rlock_free(s->members[i]);
    free(s);
}

static int rl_open(void *ctx, int idx, void **state)
{
    rl_ctx *x = ctx;
    rl_state *s = calloc(1, sizeof(*s));
    char name[64];
    int rc = 0, i;

    if (!s)
        return DLOCK_ENOMEM;
    snprintf(name, sizeof name, "bench:redlock:%d:%d", x->kind, idx);
    switch (x->kind) {
    case SINGLE:
        rc = dlock_reentrant_new(&s->l, x->clients[0], name);
        break;
    case REDLOCK3:
        rc = dlock_redlock_new(&s->l, x->clients, 3, name);
        break;
    case REDLOCK5:
    case REDLOCK5W:
        rc = dlock_redlock_new(&s->l, x->clients, 5, name);
        break;
    default:
        for (i = 0; i < 3 && rc == 0; i++) {
            char m[80];
            snprintf(m, sizeof m, "%s:m%d", name, i);
            rc = dlock_reentrant_new(&s->members[i], x->clients[i], m);
        }
        if (rc == 0)
            rc = dlock_multilock_new(&s->l, s->members, 3);
    }
    if (rc != 0) {
        rl_close(s);
        return rc;
    }
    *state = s;
    return 0;
}

static int rl_pair(void *state)
{
    rl_state *s = state;
    int rc = dlock_try_lock(s->l, BENCH_WAIT_MS, BENCH_LEASE_MS);

    if (rc == 0)
        rc = dlock_unlock(s->l);
    if (rc != 0)
        fprintf(stderr, "bench: %s pair: %s\n", dlock_rlock_name(s->l), dlock_errmsg(s->l));
    return rc;
}

static int64_t process_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The servers' CPU seconds so far, summed; -1 on failure. */
static double servers_cpu_s(bench_raw **raws)
{
    double sum = 0;
    int i;

    for (i = 0; i < NODES; i++) {
        double s = raws[i] ? bench_raw_server_cpu_s(raws[i]) : -1;
        if (s < 0)
            return -1;
        sum += s;
    }
    return sum;
}

/* Over a short run of its own, the CPU per pair of this process (all
 * threads: fan-out workers too) in *client_us and of all servers in
 * *server_us; -1 each on failure. */
static void cpu_us_per_pair(rl_ctx *x, bench_raw **raws, int ms, double *client_us,
                            double *server_us)
{
    void *state = NULL;
    int64_t t0, c0, end;
    double s0;
    long pairs = 0;

    *client_us = *server_us = -1;
    if (rl_open(x, 99, &state) != 0)
        return;
    rl_pair(state);
    s0 = servers_cpu_s(raws);
    c0 = process_cpu_ns();
    t0 = bench_now_ns();
    end = t0 + (int64_t)ms * 1000000;
    do {
        if (rl_pair(state) != 0)
            break;
        pairs++;
    } while (bench_now_ns() < end);
    c0 = process_cpu_ns() - c0;
    if (s0 >= 0 && pairs > 0) {
        double s1 = servers_cpu_s(raws);
        *server_us = s1 >= 0 ? (s1 - s0) * 1e6 / (double)pairs : -1;
    }
    rl_close(state);
    if (pairs > 0)
        *client_us = (double)c0 / 1e3 / (double)pairs;
}

void bench_fig_redlock(const bench_config *cfg)
{
    static const char *const labels[SIDES] = {"single", "redlock", "redlock",
                                              "redlock-w", "multilock"};
    static const int nodes[SIDES] = {1, 3, 5, 5, 3};
    dlock_test_redis *servers[NODES] = {NULL};
    dlock_client *clients[NODES] = {NULL};
    /* the same servers through a wrapper without split calls: the
     * Redlock's steps then wake a worker thread per node (fanout.c) */
    dlock_client *wrapped[NODES] = {NULL};
    bench_counts *counts;
    bench_raw *raws[NODES] = {NULL};
    bench_config cfgs[NODES]; /* the raw connections keep theirs */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    rl_ctx ctx[SIDES];
    bench_side sides[SIDES];
    bench_rate rates[SIDES];
    double single;
    int i;

    bench_heading("9. Redlock / MultiLock, redis, 1 thread, uncontended: lock+unlock "
                  "pairs/s vs a single-node reentrant lock, same rounds (5 servers of "
                  "its own on loopback; target n=5 >= 0.7)",
                  "kind       nodes      pairs/s   ratio  (min-max)  thread cpu us  "
                  "process cpu us  server cpu us  ceiling  target");
    memset(rates, 0, sizeof rates);
    for (i = 0; i < NODES; i++) {
        bench_config c = *cfg;
        if (dlock_test_redis_start(&servers[i], NULL) != 0) {
            bench_row("   cannot start redis-server %d", i);
            goto out;
        }
        c.redis_url = dlock_test_redis_url(servers[i]);
        cfgs[i] = c;
        cfgs[i].redis_host = "127.0.0.1";
        cfgs[i].redis_port = dlock_test_redis_port(servers[i]);
        if (bench_raw_new(&raws[i], &cfgs[i]) != 0)
            raws[i] = NULL; /* no server CPU figures */
        if (bench_client_new(&clients[i], &c, BENCH_REDIS, 0, NULL, NULL) != 0 ||
            bench_client_new(&wrapped[i], &c, BENCH_REDIS, 0, NULL, &counts) != 0) {
            bench_row("   cannot create client %d", i);
            goto out;
        }
    }
    for (i = 0; i < SIDES; i++) {
        ctx[i].clients = i == REDLOCK5W ? wrapped : clients;
        ctx[i].kind = i;
        sides[i] = (bench_side){labels[i], rl_open, rl_pair, rl_close, &ctx[i]};
    }
    bench_alternate(cfg, sides, SIDES, 1, rates);
    single = bench_rate_per_s(&rates[SINGLE]);
    for (i = 0; i < SIDES; i++) {
        double r = bench_rate_per_s(&rates[i]);
        double ratio = i == SINGLE ? 1.0 : bench_ratio(&rates[i], &rates[SINGLE]);
        double pcpu, scpu, ceiling = -1;
        int has_target = i == REDLOCK5;
        bench_json j;

        cpu_us_per_pair(&ctx[i], raws, 1000, &pcpu, &scpu);
        if (pcpu > 0 && scpu >= 0 && single > 0 && ncpu > 0)
            ceiling = (double)ncpu * 1e6 / (pcpu + scpu) / single;
        bench_row("%-10s %5d %12.0f %7.3f (%.2f-%.2f) %13.1f %15.1f %14.1f %8.2f  %s",
                  labels[i], nodes[i], r, ratio,
                  bench_ratio_q(&rates[i], &rates[SINGLE], 0),
                  bench_ratio_q(&rates[i], &rates[SINGLE], 1),
                  bench_cpu_us_per_pair(&rates[i]), pcpu, scpu, ceiling,
                  bench_verdict(has_target, ratio >= TARGET));
        if (rates[i].errors)
            bench_row("   (failures: %d: %s)", rates[i].errors, rates[i].error);
        bench_json_begin(&j, "redlock");
        bench_json_str(&j, "kind", labels[i]);
        bench_json_int(&j, "nodes", nodes[i]);
        bench_json_int(&j, "threads", 1);
        bench_json_num(&j, "pairs_per_s", r);
        bench_json_num(&j, "single_pairs_per_s", single);
        bench_json_num(&j, "ratio_vs_single", ratio);
        bench_json_num(&j, "ratio_min", bench_ratio_q(&rates[i], &rates[SINGLE], 0));
        bench_json_num(&j, "ratio_max", bench_ratio_q(&rates[i], &rates[SINGLE], 1));
        bench_json_num(&j, "thread_cpu_us_per_pair", bench_cpu_us_per_pair(&rates[i]));
        bench_json_num(&j, "process_cpu_us_per_pair", pcpu);
        bench_json_num(&j, "server_cpu_us_per_pair", scpu);
        bench_json_num(&j, "cpu_ceiling_ratio", ceiling);
        if (has_target)
            bench_json_num(&j, "target", TARGET);
        bench_json_int(&j, "failures", rates[i].errors);
        bench_json_end(&j);
    }
out:
    for (i = 0; i < NODES; i++) {
        dlock_client_free(clients[i]);
        dlock_client_free(wrapped[i]);
    }
    for (i = 0; i < NODES; i++)
        bench_raw_free(raws[i]);
    for (i = 0; i < NODES; i++)
        dlock_test_redis_stop(servers[i]);
}
