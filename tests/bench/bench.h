/*
 * dlock benchmarks — what the benchmark program's files share.
 *
 * The program (built and run by `make bench`) measures each lock type
 * against a raw hiredis floor measured in the same run, in short alternating
 * rounds so that machine noise cancels in the ratio. It prints figures and
 * never judges them: no figure makes it fail.
 *
 * Files: main.c (options, the server, the order of the figures, the worker
 * entry for child processes), locks.c (the lock-type table), raw.c (the
 * hiredis floor), count_backend.c (a backend wrapper that counts script calls
 * and stamps busy replies), runner.c (timed loops in threads, alternating
 * rounds), report.c (table + JSON output, percentiles), and one fig_*.c per
 * figure.
 */
#ifndef DLOCK_BENCH_H
#define DLOCK_BENCH_H

#include <dlock.h>
#include <dlock/sys/backend.h>

#include <stddef.h>
#include <stdint.h>

/* ---- settings ------------------------------------------------------------ */

typedef struct bench_config {
    const char *redis_url;   /* redis://127.0.0.1:<port> */
    const char *redis_host;
    int redis_port;
    const char *scripts_dir; /* objects/scripts, for the raw floor */
    const char *self;        /* this program, for fork+exec of workers */
    int rounds;              /* alternating rounds per comparison */
    int round_ms;            /* length of one side of one round */
    int contended_ms;        /* length of one contended run */
    int handles;             /* memory: idle handles */
    int waiters;             /* memory: blocked waiters */
    int watchdog_locks;      /* watchdog: lease-0 locks held by one client */
    int watchdog_periods;    /* watchdog: renewal periods measured */
    int64_t watchdog_timeout_ms;
    int holds_handles;       /* holds: handles locked, then unlocked+freed */
} bench_config;

/* The lease of every timed lock+unlock pair, library and raw alike, so both
 * send the same arguments (a lease of 0 would also be 30 000 ms on the wire,
 * plus the watchdog's bookkeeping, which the uncontended figure is not
 * about). */
#define BENCH_LEASE_MS 30000
#define BENCH_LEASE_STR "30000"

/* The longest any lock call of the benchmarks waits (they use try_lock with
 * this budget rather than lock): a lock type that never grants shows up as a
 * failure in its figure instead of hanging the whole program. */
#define BENCH_WAIT_MS 30000

/* Nanoseconds on CLOCK_MONOTONIC: one time line for every thread and every
 * process of the machine, so processes can compare stamps. */
int64_t bench_now_ns(void);
/* The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns. */
int64_t bench_thread_cpu_ns(void);
void bench_sleep_ms(int64_t ms);

/* ---- lock types ---------------------------------------------------------- */

/* A lock type is one row: its constructor, whether it promises FIFO
 * hand-off (the contended figure then requires 0 violations), whether
 * holders share it (readers: the exclusive-lock figures skip it), and what
 * the store needs before the lock can be taken at all (a semaphore needs its
 * permit; NULL when nothing). */
typedef struct bench_lock_type {
    const char *name;
    int fifo;
    int shared;
    int (*make)(dlock_rlock **out, dlock_client *c, const char *name);
    int (*prepare)(dlock_client *c, const char *name);
} bench_lock_type;

extern const bench_lock_type bench_lock_types[];
extern const size_t bench_nlock_types;
const bench_lock_type *bench_lock_type_find(const char *name);
/* A handle on name, prepared for use (prepare run first). */
int bench_lock_open(dlock_rlock **out, const bench_lock_type *t, dlock_client *c,
                    const char *name);
/* A bench_side's pair and close for a lock handle (the state): one
 * try_lock + unlock, the error printed; dlock_rlock_free. */
int bench_lock_pair(void *state);
void bench_lock_close(void *state);

/* ---- clients --------------------------------------------------------------- */

/* Which store a client talks to. */
typedef enum bench_backend { BENCH_REDIS, BENCH_MOCK } bench_backend;
const char *bench_backend_name(bench_backend b);

/* A wrapper backend (count_backend.c) that forwards everything to the real
 * one and counts: every script call, the calls of renewal scripts, the
 * renewing thread's CPU clock, and (for a thread that armed it) when its
 * acquisition attempts went out and came back busy. */
typedef struct bench_counts bench_counts;

/* What the wrapper stamps for a thread that armed it (CLOCK_MONOTONIC ns,
 * 0 = not yet). */
typedef struct bench_stamps {
    int64_t first_busy; /* the first "busy" acquisition reply arrived */
    int64_t last_send;  /* the latest acquisition attempt was sent */
} bench_stamps;

/* A client on the given store. pool_size (redis only) 0 = the default
 * options (multiplexed connections); > 0 = pooled, that many.
 * opts may be NULL. With counts non-NULL the backend is wrapped and *counts
 * points at the wrapper's counters (valid as long as the client). */
int bench_client_new(dlock_client **out, const bench_config *cfg,
                     bench_backend which, int pool_size,
                     const dlock_client_options *opts, bench_counts **counts);

uint64_t bench_counts_evals(const bench_counts *k);
uint64_t bench_counts_renewals(const bench_counts *k);
uint64_t bench_counts_busy(const bench_counts *k);
/* CPU time in ns of the thread that last ran a renewal script (the
 * watchdog), or -1 when no renewal ran yet. */
int64_t bench_counts_renewer_cpu_ns(bench_counts *k);
/* From now on the calling thread's acquisition attempts are stamped into
 * *s; NULL disarms. */
void bench_counts_arm(bench_stamps *s);

/* ---- the raw hiredis floor (raw.c) ----------------------------------------- */

typedef struct bench_raw bench_raw;

/* Loads the reentrant lock's acquire and release scripts from
 * cfg->scripts_dir with SCRIPT LOAD. 0 or -1 (reason on stderr). */
int bench_raw_new(bench_raw **out, const bench_config *cfg);
void bench_raw_free(bench_raw *r);

/* One plain connection and one lock name per thread. */
typedef struct bench_raw_conn bench_raw_conn;
int bench_raw_connect(bench_raw_conn **out, bench_raw *r, const char *name);
/* One acquire + release pair: 0, or -1 on an unexpected reply. When rtt_ns
 * is non-NULL, the two round trips' durations are stored in rtt_ns[0..1]. */
int bench_raw_pair(bench_raw_conn *c, int64_t rtt_ns[2]);
void bench_raw_close(bench_raw_conn *c);

/* A single EVALSHA round trip, measured for ms milliseconds on one
 * connection (the lowest median of a few slices): the unit the contended
 * figure counts hand-offs in. */
int64_t bench_raw_rtt_ns(bench_raw *r, int ms);

/* Runs a command on a fresh connection; the integer value of
 * "<field>:...calls=N,usec=M" style lines is parsed by the callers. The
 * reply text is written into out. 0 or -1. */
int bench_raw_info(bench_raw *r, const char *section, char *out, size_t len);
/* Runs command (a hiredis format with at most one %s, arg) on a fresh
 * connection: its integer reply, or the length of its array reply; -1 on
 * failure. */
long long bench_raw_count(bench_raw *r, const char *command, const char *arg);
/* The server's CPU seconds so far (INFO cpu: used_cpu_sys +
 * used_cpu_user); -1 on failure. */
double bench_raw_server_cpu_s(bench_raw *r);

/* ---- timed loops (runner.c) ------------------------------------------------ */

/* One way of doing lock+unlock pairs. open makes a thread's state (thread
 * idx), pair does one lock+unlock (0 or an error code), close frees the
 * state. */
typedef struct bench_side {
    const char *label;
    int (*open)(void *ctx, int idx, void **state);
    int (*pair)(void *state);
    void (*close)(void *state);
    void *ctx;
} bench_side;

#define BENCH_MAX_ROUNDS 64

typedef struct bench_rate {
    uint64_t pairs;
    double seconds;
    double cpu_seconds;   /* CPU time of the looping threads (user + sys) */
    int errors;           /* threads whose pair failed (they stop that side) */
    char error[160];      /* the first failure */
    /* Each round's own rate, for ratios round by round. */
    double round_rate[BENCH_MAX_ROUNDS];
    int nrounds;
} bench_rate;

/* Threads whose pair failed, over every figure so far (the exit status
 * says whether there were any: a side that fails measures nothing). */
extern int bench_failures;

/* Runs the sides in nthreads threads, one side at a time, for cfg->rounds
 * rounds of cfg->round_ms per side, the order reversed every other round so
 * that drift hits all sides alike. The threads and their per-side states
 * live across all rounds (each state does one untimed pair first), so a
 * round is only the timed loop. rates[i] accumulates side i. */
void bench_alternate(const bench_config *cfg, const bench_side *sides,
                     size_t nsides, int nthreads, bench_rate *rates);

double bench_rate_per_s(const bench_rate *r);
/* CPU time the looping threads spent per pair, in microseconds: what the
 * client side costs, much less disturbed by other load than wall time. */
double bench_cpu_us_per_pair(const bench_rate *r);

/* side / base, round by round: the q-quantile (0..1) of the per-round
 * ratios. The figures use the median (q = 0.5): each round's runs were
 * measured moments apart, so a burst of load elsewhere on the machine spoils
 * one round's ratio, not the figure; min and max show the spread. 0 when
 * nothing was measured. */
double bench_ratio_q(const bench_rate *side, const bench_rate *base, double q);
#define bench_ratio(side, base) bench_ratio_q(side, base, 0.5)

/* ---- output (report.c) ----------------------------------------------------- */

/* A figure's heading and its table's header line. */
void bench_heading(const char *title, const char *columns);
/* A table line (printf-style). */
void bench_row(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* One JSON line, built field by field. */
typedef struct bench_json {
    char buf[1024];
    size_t len;
} bench_json;
void bench_json_begin(bench_json *j, const char *bench);
void bench_json_str(bench_json *j, const char *key, const char *value);
void bench_json_int(bench_json *j, const char *key, long long value);
void bench_json_num(bench_json *j, const char *key, double value);
/* Prints the line (JSON lines are collected and printed again at the end, so
 * that one grep of the tail finds them all). */
void bench_json_end(bench_json *j);
/* Keeps a JSON line printed by a child process for the final block. */
void bench_json_keep(const char *line);
void bench_json_print_all(void);

/* The q-quantile (0..1) of v[0..n) (sorts v). 0 when n is 0. */
int64_t bench_quantile(int64_t *v, size_t n, double q);

/* "met", "MISSED" or "n/a" for a target. */
const char *bench_verdict(int applicable, int met);

/* ---- the figures ------------------------------------------------------------ */

void bench_fig_uncontended(const bench_config *cfg, bench_raw *raw);
void bench_fig_scaling(const bench_config *cfg, bench_raw *raw);
void bench_fig_contended(const bench_config *cfg, bench_raw *raw);
void bench_fig_mock(const bench_config *cfg);
void bench_fig_memory(const bench_config *cfg);
void bench_fig_watchdog(const bench_config *cfg, bench_raw *raw);
void bench_fig_holds(const bench_config *cfg);
/* TLS vs plain: starts a server of its own (plain + TLS ports). */
void bench_fig_tls(const bench_config *cfg);
/* fig_sync.c: sync_replicas=1 vs off (a master and a replica of its own). */
void bench_fig_sync(const bench_config *cfg);
/* fig_redlock.c: Redlock n=3, 5 and MultiLock of 3 vs a single node (five
 * servers of its own). */
void bench_fig_redlock(const bench_config *cfg);
/* Many threads on few connections (multiplexed vs pooled vs raw), server
 * CPU per pair, 10 000 blocked waiters (issue 15). */
void bench_fig_many_threads(const bench_config *cfg, bench_raw *raw);
void bench_fig_async(const bench_config *cfg, bench_raw *raw);
/* fig_handoff.c — figure 12: N one-shot waiters of one client handing one
 * lock on (threads, a loop's operations), against 1 / (work + RTT). */
void bench_fig_handoff(const bench_config *cfg, bench_raw *raw);
/* Figure 11d (fig_loop_turn.c): how long one dlock call holds up the
 * application's loop. */
void bench_fig_loop_turn(const bench_config *cfg);
/* Figure 11e (fig_loop_turn.c): how late waits are called back after
 * their starter + wait, thousands pending on one loop. */
void bench_fig_loop_budget(const bench_config *cfg);
/* Figure 11f (fig_loop_turn.c): the same with 1 000 operations in flight
 * on a pool of 8 connections (multiplex=0). */
void bench_fig_loop_pool(const bench_config *cfg);
/* The kernel's limit on a process's mappings (vm.max_map_count; each
 * asynchronous operation in flight holds a fiber, two mappings); 0 when
 * unknown. */
long bench_max_map_count(void);

/* Raises lp's cap on operations in flight (dlock_loop_set_max_in_flight)
 * to n when it is lower: a figure measures its own N in flight, not the
 * default cap's refusals (fig_async.c). */
void bench_loop_room(dlock_loop *lp, int n);
/* Frees what a figure of waits made (fig_async.c): the loop, then the n
 * handle pairs (each of theirs force-unlocked first; NULL entries and
 * arrays ok), the two clients and the arrays. */
void bench_waits_free(dlock_loop *lp, dlock_client *waiter, dlock_client *holder,
                      dlock_rlock **mine, dlock_rlock **theirs, int n);

/* The process's resident set (bytes; -1 unknown), and the server's
 * connected clients (INFO clients; -1 unknown). */
long bench_rss_bytes(void);
long bench_server_clients(bench_raw *raw);

/* fig_cluster.c — figure 11: a 3-master cluster vs one node, 1 and 16
 * threads (servers of its own). */
void bench_fig_cluster(const bench_config *cfg);

/* The child side of the contended figure (main.c dispatches to it). */
int bench_contended_worker(const bench_config *cfg, int argc, char **argv);

#endif /* DLOCK_BENCH_H */
