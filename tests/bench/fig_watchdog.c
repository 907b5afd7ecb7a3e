/*
 * dlock benchmarks — figure 6: the watchdog under load. One client holds N
 * reentrant locks taken with lease 0 (watchdog-renewed); a short watchdog
 * timeout makes the renewal period 1 s so that several periods fit in a few
 * seconds.
 *
 * The measurement window runs from the end of one renewal round to the end
 * of the K-th round after it (a round ends when the counting backend has
 * seen renewal calls and then none for a quarter period), so it holds K
 * whole rounds. Per round:
 *  - script calls: renewal calls seen by the counting backend; on Redis also
 *    the server's own count (INFO commandstats, cmdstat_evalsha calls)
 *    and the server CPU it spent on them (usec);
 *  - on Redis Cluster (a third row, 3 masters of its own) a call may
 *    declare keys of one slot only, so the watchdog renews each master's
 *    holds in calls over several slots (the allow-cross-slot-keys flag),
 *    one per slot only where a server refuses that; the server count is
 *    the masters' sum, and the row's target is 3 x the redis row's calls
 *    (a cluster costs the watchdog at most a few calls per master more);
 *  - CPU: the whole process (getrusage, user + sys) minus what the same
 *    client costs idle over the same time (measured before taking the
 *    locks), and the watchdog thread's own CPU clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "../harness/cluster.h"
#include "bench.h"

#define CALLS_TARGET 100

static int64_t process_cpu_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* Where the server counts come from: one server, or a cluster's masters. */
typedef struct server_stats {
    bench_raw *raw;
    dlock_test_cluster *cl;
} server_stats;

/* Adds the EVALSHA calls and usec of INFO commandstats text info. */
static void add_evalsha(const char *info, long long *calls, long long *usec)
{
    const char *p = strstr(info, "cmdstat_evalsha:");
    long long c = 0, u = 0;

    if (p && sscanf(p, "cmdstat_evalsha:calls=%lld,usec=%lld", &c, &u) == 2) {
        *calls += c;
        *usec += u;
    }
}

/* Server-side EVALSHA calls and usec so far (a cluster: its masters'
 * sum); zeros when not on Redis. */
static void evalsha_stats(const server_stats *srv, long long *calls, long long *usec)
{
    char info[16384];
    int i;

    *calls = *usec = 0;
    if (srv->raw && bench_raw_info(srv->raw, "commandstats", info, sizeof info) == 0)
        add_evalsha(info, calls, usec);
    for (i = 0; srv->cl && i < srv->cl->nnodes; i++) {
        const char *argv[] = {"INFO", "commandstats", NULL};
        if (srv->cl->up[i] && dlock_test_cluster_role(srv->cl, i) == DLOCK_TEST_NODE_MASTER &&
            dlock_test_cluster_command(srv->cl, i, info, sizeof info, argv) == 0)
            add_evalsha(info, calls, usec);
    }
}

/* Waits until a renewal round has run (renewal calls beyond *seen) and
 * ended (none for quiet_ms); updates *seen. 0, or -1 after a timeout. */
static int wait_round_end(bench_counts *k, uint64_t *seen, int64_t period_ms)
{
    int64_t quiet_ms = period_ms / 4, deadline = bench_now_ns() + 4 * period_ms * 1000000;
    int64_t last_change = 0;
    uint64_t last = *seen;

    while (bench_now_ns() < deadline) {
        uint64_t now_count = bench_counts_renewals(k);
        int64_t now = bench_now_ns();
        if (now_count != last) {
            last = now_count;
            last_change = now;
        } else if (last != *seen && now - last_change >= quiet_ms * 1000000) {
            *seen = last;
            return 0;
        }
        bench_sleep_ms(5);
    }
    return -1;
}

typedef struct snapshot {
    int64_t wall_ns, cpu_ns, wd_cpu_ns;
    uint64_t renewals;
    long long evalsha, evalsha_usec;
} snapshot;

static void snap(snapshot *s, bench_counts *k, const server_stats *srv)
{
    evalsha_stats(srv, &s->evalsha, &s->evalsha_usec);
    s->wall_ns = bench_now_ns();
    s->cpu_ns = process_cpu_ns();
    s->wd_cpu_ns = bench_counts_renewer_cpu_ns(k);
    s->renewals = bench_counts_renewals(k);
}

/* label: the row's store (NULL: the backend's name); srv: where the
 * server's counts come from (NULL: none); target: the most script calls
 * per period the row may cost. The calls per period measured, or -1. */
static double run(const bench_config *cfg, bench_backend which,
                  const server_stats *srv, const char *label, double target)
{
    const bench_lock_type *t = bench_lock_type_find("reentrant");
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    int64_t period = cfg->watchdog_timeout_ms / 3;
    int n = cfg->watchdog_locks, k = cfg->watchdog_periods, i, held = 0, rounds = 0;
    dlock_rlock **v = calloc((size_t)n, sizeof(*v));
    dlock_client *client = NULL;
    bench_counts *counts;
    snapshot a, b;
    int64_t idle_cpu, idle_wall, t_acq;
    uint64_t seen;
    double calls = -1, cpu_ms, wd_ms, idle_rate;
    char name[48], srv_calls[32] = "-", srv_cpu[32] = "-";
    bench_json j;

    if (!label)
        label = bench_backend_name(which);
    opts.watchdog_timeout_ms = cfg->watchdog_timeout_ms;
    if (!v || bench_client_new(&client, cfg, which, 0, &opts, &counts) != 0) {
        bench_row("%-6s cannot set up", label);
        goto out;
    }
    /* What the client costs doing nothing, over as long as the window. */
    idle_wall = bench_now_ns();
    idle_cpu = process_cpu_ns();
    bench_sleep_ms(k * period);
    idle_cpu = process_cpu_ns() - idle_cpu;
    idle_wall = bench_now_ns() - idle_wall;
    idle_rate = (double)idle_cpu / (double)idle_wall;

    t_acq = bench_now_ns();
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof name, "bench:wd:%d", i);
        if (bench_lock_open(&v[i], t, client, name) != 0 || dlock_try_lock(v[i], BENCH_WAIT_MS, 0) != 0)
            break;
        held++;
    }
    t_acq = bench_now_ns() - t_acq;

    seen = bench_counts_renewals(counts);
    if (held == 0 || wait_round_end(counts, &seen, period) != 0) {
        bench_row("%-6s no renewal round seen (%d locks held)", label, held);
        goto out;
    }
    snap(&a, counts, srv ? srv : &(server_stats){NULL, NULL});
    for (rounds = 0; rounds < k; rounds++)
        if (wait_round_end(counts, &seen, period) != 0)
            break;
    snap(&b, counts, srv ? srv : &(server_stats){NULL, NULL});
    if (rounds == 0) {
        bench_row("%-6s renewal rounds stopped", label);
        goto out;
    }

    calls = (double)(b.renewals - a.renewals) / rounds;
    cpu_ms = ((double)(b.cpu_ns - a.cpu_ns) -
              idle_rate * (double)(b.wall_ns - a.wall_ns)) / rounds / 1e6;
    wd_ms = a.wd_cpu_ns >= 0 ? (double)(b.wd_cpu_ns - a.wd_cpu_ns) / rounds / 1e6 : -1;
    if (srv) {
        snprintf(srv_calls, sizeof srv_calls, "%.1f",
                 (double)(b.evalsha - a.evalsha) / rounds);
        snprintf(srv_cpu, sizeof srv_cpu, "%.2f",
                 (double)(b.evalsha_usec - a.evalsha_usec) / rounds / 1e3);
    }
    bench_row("%-6s %6d %6d %9.1f %10.1f %11s %11.2f %9.2f %10s %10.0f   %s",
              label, held, rounds, (double)(b.wall_ns - a.wall_ns) / rounds / 1e6,
              calls, srv_calls, cpu_ms, wd_ms, srv_cpu, (double)t_acq / 1e6,
              bench_verdict(1, calls <= target));

    bench_json_begin(&j, "watchdog");
    bench_json_str(&j, "lock", t->name);
    bench_json_str(&j, "backend", label);
    bench_json_int(&j, "locks", held);
    bench_json_int(&j, "watchdog_timeout_ms", cfg->watchdog_timeout_ms);
    bench_json_int(&j, "rounds", rounds);
    bench_json_num(&j, "period_ms", (double)(b.wall_ns - a.wall_ns) / rounds / 1e6);
    bench_json_num(&j, "script_calls_per_period", calls);
    if (srv)
        bench_json_num(&j, "server_evalsha_per_period",
                       (double)(b.evalsha - a.evalsha) / rounds);
    bench_json_num(&j, "process_cpu_ms_per_period", cpu_ms);
    bench_json_num(&j, "watchdog_thread_cpu_ms_per_period", wd_ms);
    if (srv)
        bench_json_num(&j, "server_cpu_ms_per_period",
                       (double)(b.evalsha_usec - a.evalsha_usec) / rounds / 1e3);
    bench_json_num(&j, "idle_cpu_ms_per_s", idle_rate * 1e3);
    bench_json_num(&j, "acquire_all_ms", (double)t_acq / 1e6);
    bench_json_num(&j, "target_calls", target);
    bench_json_str(&j, "target", bench_verdict(1, calls <= target));
    bench_json_end(&j);
out:
    /* Local only: on Redis the leases simply run out. */
    for (i = 0; v && i < n; i++)
        dlock_rlock_free(v[i]);
    free(v);
    dlock_client_free(client);
    return calls;
}

void bench_fig_watchdog(const bench_config *cfg, bench_raw *raw)
{
    char title[256];

    snprintf(title, sizeof title,
             "6. watchdog: one client holding %d lease-0 reentrant locks, "
             "watchdog timeout %lld ms (target <= 100 script calls per period; "
             "cluster: <= 3 x the redis row's)",
             cfg->watchdog_locks, (long long)cfg->watchdog_timeout_ms);
    bench_heading(title, "store   locks rounds period ms calls/per. server/per. "
                         "cpu ms/per. wd cpu ms srv cpu ms acq all ms   target");
    server_stats one = {raw, NULL};
    double single = run(cfg, BENCH_REDIS, &one, NULL, CALLS_TARGET);

    run(cfg, BENCH_MOCK, NULL, NULL, CALLS_TARGET);
    {
        /* Redis Cluster (3 masters of its own): 10 000 names fill most of
         * the 16 384 slots; a call per slot would be ~7 500 per period. */
        dlock_test_cluster cl = {0};
        bench_config ccfg = *cfg;
        server_stats masters = {NULL, &cl};
        if (dlock_test_cluster_start(&cl, 3, 0) != 0) {
            bench_row("cluster cannot start");
            return;
        }
        ccfg.redis_url = dlock_test_cluster_url(&cl);
        run(&ccfg, BENCH_REDIS, &masters, "cluster",
            3 * (single > 0 ? single : CALLS_TARGET));
        dlock_test_cluster_stop(&cl);
    }
}
