/*
 * dlock benchmarks — the program behind `make bench`.
 *
 *   dlock_bench [--scripts DIR] [--redis URL] [--only FIGURE]
 *               [--rounds N] [--round-ms MS]
 *
 * Without --redis it starts a throwaway redis-server on 127.0.0.1 through the
 * test harness (tests/harness/redis_server.c) and stops it at the end.
 * FIGURE: uncontended, scaling, contended, mock, memory, watchdog, holds,
 * tls (tls starts a server of its own, with plain and TLS ports), sync
 * (a master and a replica of its own), redlock (five servers of its own),
 * many_threads, cluster (a cluster of 3 masters and a server of its own),
 * async, handoff.
 *
 * It runs every figure, prints a table per figure and one JSON line per row,
 * then all JSON lines again at the end. A figure that misses its target
 * never changes the exit status; it is 1 or 2 when the program could not
 * run at all (no server, no scripts; bad usage) and 3 when a side's pairs
 * failed (it measured nothing: `make check` runs one short figure for
 * this, so that a change the bench's own copy of a call misses is seen).
 *
 * The same program is also its own child: "--worker ..." is one process of
 * the contended figure; "--child" runs a figure for a parent that relays its
 * output (the memory figure runs so, under glibc tunables of its own).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness/redis_server.h"
#include "bench.h"

/* A hung benchmark must not hold up whoever runs it. */
#define TIME_LIMIT_S 1200

static const char *const figures[] = {"uncontended", "scaling", "contended",
                                      "mock", "memory", "watchdog", "holds",
                                      "tls", "sync", "redlock", "many_threads",
                                      "cluster", "async", "loop_turn", "loop_budget",
                                      "loop_pool",
                                      "handoff"};

static void on_alarm(int sig)
{
    static const char msg[] = "\ndlock_bench: time limit reached, giving up\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0) {
        /* nothing more to do */
    }
    _exit(3);
}

static int parse_url(bench_config *cfg, char *host, size_t hostlen)
{
    const char *p = cfg->redis_url, *colon;

    if (strncmp(p, "redis://", 8) != 0)
        return -1;
    p += 8;
    colon = strrchr(p, ':');
    if (!colon || (size_t)(colon - p) >= hostlen)
        return -1;
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    cfg->redis_host = host;
    cfg->redis_port = atoi(colon + 1);
    return cfg->redis_port > 0 ? 0 : -1;
}

/* Runs `--child --only <figure>` with extra environment, relaying its
 * output and keeping its JSON lines for the final block. */
static void run_child_figure(const bench_config *cfg, const char *figure,
                             const char *const *env)
{
    char line[2048];
    int fd[2], status;
    pid_t pid;
    FILE *in;

    fflush(NULL);
    if (pipe(fd) != 0)
        return;
    pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return;
    }
    if (pid == 0) {
        size_t i;
        dup2(fd[1], 1);
        close(fd[0]);
        close(fd[1]);
        for (i = 0; env[i]; i += 2)
            setenv(env[i], env[i + 1], 1);
        execl(cfg->self, cfg->self, "--child", "--redis", cfg->redis_url,
              "--scripts", cfg->scripts_dir, "--only", figure, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    in = fdopen(fd[0], "r");
    while (in && fgets(line, sizeof line, in)) {
        fputs(line, stdout);
        fflush(stdout);
        if (strncmp(line, "{\"bench\"", 8) == 0) {
            line[strcspn(line, "\n")] = '\0';
            bench_json_keep(line);
        }
    }
    if (in)
        fclose(in);
    else
        close(fd[0]);
    waitpid(pid, &status, 0);
}

static int wanted(const char *only, const char *figure)
{
    return !only || strcmp(only, figure) == 0;
}

static void usage(void)
{
    fprintf(stderr, "usage: dlock_bench [--scripts DIR] [--redis URL] [--only FIGURE]"
                    " [--rounds N] [--round-ms MS]\n"
                    "FIGURE: uncontended scaling contended mock memory watchdog holds tls "
                    "sync redlock many_threads cluster async loop_turn loop_budget loop_pool "
                    "handoff\n");
}

int main(int argc, char **argv)
{
    static const char *const memory_env[] = {
        "GLIBC_TUNABLES", "glibc.malloc.tcache_count=0",
        "MALLOC_ARENA_MAX", "1", NULL};
    bench_config cfg;
    dlock_test_redis *server = NULL;
    bench_raw *raw = NULL;
    const char *only = NULL;
    char host[256];
    int child = 0, i, worker_at = 0;
    double load[3] = {0, 0, 0};

    memset(&cfg, 0, sizeof cfg);
    cfg.scripts_dir = "objects/scripts";
    cfg.self = "/proc/self/exe";
    cfg.rounds = 20;
    cfg.round_ms = 250;
    cfg.contended_ms = 3000;
    cfg.handles = 100000;
    cfg.waiters = 200;
    cfg.watchdog_locks = 10000;
    cfg.watchdog_periods = 5;
    cfg.watchdog_timeout_ms = 3000;
    cfg.holds_handles = 50000;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--worker") == 0) {
            worker_at = i + 1;
            break;
        } else if (strcmp(a, "--child") == 0) {
            child = 1;
            continue;
        }
        if (!v) {
            usage();
            return 2;
        }
        if (strcmp(a, "--scripts") == 0)
            cfg.scripts_dir = v;
        else if (strcmp(a, "--redis") == 0)
            cfg.redis_url = v;
        else if (strcmp(a, "--only") == 0)
            only = v;
        else if (strcmp(a, "--rounds") == 0)
            cfg.rounds = atoi(v) > 0 ? atoi(v) : cfg.rounds;
        else if (strcmp(a, "--round-ms") == 0)
            cfg.round_ms = atoi(v) > 0 ? atoi(v) : cfg.round_ms;
        else {
            usage();
            return 2;
        }
        i++;
    }
    signal(SIGPIPE, SIG_IGN);

    if (worker_at) {
        if (!cfg.redis_url || parse_url(&cfg, host, sizeof host) != 0)
            return 2;
        return bench_contended_worker(&cfg, argc - worker_at, argv + worker_at);
    }
    if (only) {
        size_t k;
        for (k = 0; k < sizeof figures / sizeof figures[0]; k++)
            if (strcmp(only, figures[k]) == 0)
                break;
        if (k == sizeof figures / sizeof figures[0]) {
            usage();
            return 2;
        }
    }
    alarm(TIME_LIMIT_S);
    signal(SIGALRM, on_alarm);

    if (!cfg.redis_url) {
        if (dlock_test_redis_start(&server, NULL) != 0) {
            fprintf(stderr, "dlock_bench: cannot start redis-server\n");
            return 1;
        }
        cfg.redis_url = dlock_test_redis_url(server);
    }
    if (parse_url(&cfg, host, sizeof host) != 0 || bench_raw_new(&raw, &cfg) != 0) {
        fprintf(stderr, "dlock_bench: cannot use %s\n", cfg.redis_url);
        dlock_test_redis_stop(server);
        return 1;
    }

    if (!child) {
        if (getloadavg(load, 3) < 0)
            load[0] = load[1] = load[2] = 0;
        printf("dlock benchmarks: redis-server at %s, %ld CPUs, load average "
               "%.2f %.2f %.2f\n%d alternating rounds of %d ms per side; ratios "
               "compare sides measured in the same rounds\n",
               cfg.redis_url, sysconf(_SC_NPROCESSORS_ONLN), load[0], load[1],
               load[2], cfg.rounds, cfg.round_ms);
    }
    if (wanted(only, "uncontended"))
        bench_fig_uncontended(&cfg, raw);
    if (wanted(only, "scaling"))
        bench_fig_scaling(&cfg, raw);
    if (wanted(only, "contended"))
        bench_fig_contended(&cfg, raw);
    if (wanted(only, "mock"))
        bench_fig_mock(&cfg);
    if (wanted(only, "memory")) {
        if (child)
            bench_fig_memory(&cfg);
        else
            run_child_figure(&cfg, "memory", memory_env);
    }
    if (wanted(only, "watchdog"))
        bench_fig_watchdog(&cfg, raw);
    if (wanted(only, "holds"))
        bench_fig_holds(&cfg);
    if (wanted(only, "tls"))
        bench_fig_tls(&cfg);
    if (wanted(only, "sync"))
        bench_fig_sync(&cfg);
    if (wanted(only, "redlock"))
        bench_fig_redlock(&cfg);
    if (wanted(only, "many_threads"))
        bench_fig_many_threads(&cfg, raw);
    if (wanted(only, "async"))
        bench_fig_async(&cfg, raw);
    if (wanted(only, "handoff"))
        bench_fig_handoff(&cfg, raw);
    if (wanted(only, "loop_turn"))
        bench_fig_loop_turn(&cfg);
    if (wanted(only, "loop_budget"))
        bench_fig_loop_budget(&cfg);
    if (wanted(only, "loop_pool"))
        bench_fig_loop_pool(&cfg);
    if (wanted(only, "cluster"))
        bench_fig_cluster(&cfg);

    if (!child)
        bench_json_print_all();
    bench_raw_free(raw);
    dlock_test_redis_stop(server);
    if (bench_failures > 0) {
        fprintf(stderr, "dlock_bench: %d threads' pairs failed (see the rows)\n",
                bench_failures);
        return 3;
    }
    return 0;
}
