/*
 * Fault tests (issue 8, items 1-4): shared pieces.
 *
 *  - helper processes (tests/faults/helper.c, built as dlock_fault_helper
 *    next to the test program): fork+exec'ed, so that a killed or stopped
 *    process is a real separate client with its own threads and sockets.
 *    A forked copy of a test program would inherit its threads' locks; exec
 *    gives the helper a clean start and its own client.
 *  - a TCP proxy on 127.0.0.1 between a client and redis-server, one thread
 *    with poll(), that passes, delays, drops or black-holes traffic.
 *  - time in real milliseconds.
 *
 * Every helper is killed (SIGKILL) by fault_child_kill_all, which the cases'
 * teardowns call, so a failing case leaves no process behind; helpers also
 * die with the thread that spawned them (PR_SET_PDEATHSIG).
 */
#ifndef DLOCK_TEST_FAULTS_H
#define DLOCK_TEST_FAULTS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- time --------------------------------------------------------------- */

int64_t fault_now_ms(void);
void fault_sleep_ms(int64_t ms);

/* ---- helper processes --------------------------------------------------- */

typedef struct fault_child {
    pid_t pid;
    int to;   /* its stdin */
    int from; /* its stdout */
} fault_child;

/* The helper program: $DLOCK_FAULT_HELPER, else dlock_fault_helper in the
 * directory of the running executable. */
const char *fault_helper_path(void);

/* Starts the helper with argv (argv[0] is ignored and replaced by the
 * helper's path; NULL-terminated). 0 or -1. */
int fault_child_spawn(fault_child *c, const char *const *argv);

/* Reads one line from the child (without '\n') within timeout_ms.
 * 0, or -1 on timeout / EOF. */
int fault_child_read_line(fault_child *c, char *buf, size_t len,
                          int64_t timeout_ms);

/* Writes "cmd\n" to the child and reads its one-line answer.
 * 0 or -1. */
int fault_child_ask(fault_child *c, const char *cmd, char *buf, size_t len,
                    int64_t timeout_ms);

/* Waits up to timeout_ms for it to exit; *status as waitpid's.
 * 0, or -1 (still running: the caller decides). */
int fault_child_wait(fault_child *c, int *status, int64_t timeout_ms);

/* SIGKILL + reap + close the pipes. No-op on a finished child. */
void fault_child_kill(fault_child *c);

/* Kills every helper still running (used by teardowns and at exit). */
void fault_child_kill_all(void);

/* ---- TCP proxy ---------------------------------------------------------- */

typedef enum fault_proxy_mode {
    FAULT_PASS = 0,   /* forward at once */
    FAULT_DELAY,      /* forward each chunk delay_ms after it arrived */
    FAULT_DROP,       /* close every connection; refuse (close) new ones */
    FAULT_BLACKHOLE   /* keep connections, accept new ones, forward
                       * nothing either way until healed (held bytes flow
                       * then, as TCP would retransmit them) */
} fault_proxy_mode;

typedef struct fault_proxy fault_proxy;

/* A proxy listening on 127.0.0.1 (a free port) towards 127.0.0.1:target.
 * 0 or -1. */
int fault_proxy_start(fault_proxy **out, int target_port);
int fault_proxy_port(fault_proxy *p);
/* "redis://127.0.0.1:<proxy port>" (valid until stop). */
const char *fault_proxy_url(fault_proxy *p);
/* Takes effect at once (DROP closes the open connections before it
 * returns). */
void fault_proxy_set(fault_proxy *p, fault_proxy_mode mode, int delay_ms);
/* Connections currently open through the proxy. */
int fault_proxy_connections(fault_proxy *p);
/* Stops the thread, closes everything. NULL is a no-op. */
void fault_proxy_stop(fault_proxy *p);

/* A throwaway redis-server (args as dlock_test_redis_start's) with a proxy
 * in front of it: 0, or -1 with neither left running. _stop stops both and
 * NULLs them (NULLs are no-ops). */
struct dlock_test_redis;
int fault_proxied_redis_start(struct dlock_test_redis **srv, fault_proxy **proxy,
                              const char *const *args);
void fault_proxied_redis_stop(struct dlock_test_redis **srv, fault_proxy **proxy);

/* ---- clients ------------------------------------------------------------ */

/* A client on a Redis backend at url with these timeouts and pool size, a
 * short reconnection back-off (20..200 ms) and the watchdog timeout given.
 * Fails the test if it cannot be made. */
struct dlock_client;
struct dlock_client *fault_client_new(const char *url, int64_t cmd_ms,
                                      int64_t conn_ms, int pool,
                                      int64_t watchdog_ms);

/* ---- suites ------------------------------------------------------------- */

/* The fast cases (seconds; `make check`) and the slow ones (`make faults`).
 * Each returns its number of failures. */
int dlock_test_faults(void);
int dlock_test_faults_slow(void);
/* tests/faults/sentinel_cases.c: kill -9 of a Sentinel-managed master and
 * the failover figure (`make faults` only). */
int dlock_test_faults_sentinel(void);
/* tests/faults/redlock_cases.c: Redlock over five servers, killed, stopped
 * and restarted (make faults only). */
int dlock_test_faults_redlock(void);
/* tests/faults/redlock_stress.c: mutual exclusion under node kills and
 * restarts (DLOCK_REDLOCK_STRESS=1, make stress-redlock). 0, >0 failed,
 * -1 could not run. */
int dlock_test_stress_redlock(void);
/* tests/faults/sync_cases.c: sync_replicas=1 vs none under kill -9 of the
 * master (the failover-safety figure). */
int dlock_test_faults_sync(void);
/* tests/faults/mux_stress.c: threads on multiplexed connections while
 * the server is killed and restarted (make faults only). */
int dlock_test_faults_mux(void);
/* Budgets and transient refusals (tests/faults/stall_cases.c), part of
 * dlock_test_faults. */
int dlock_test_stalls(void);

/* Cross-process stress (item 4): procs helper processes x threads x iters
 * per lock type, on a redis-server it starts. Prints one line per type and
 * returns the total number of violations + errors (0 = pass), or -1 when it
 * could not run. */
int fault_stress_run(int procs, int threads, int iters);
/* The same on a Redis Cluster of 3 masters with a replica each (cluster
 * 1; the names of the 4 types spread over the masters), or on one server
 * (cluster 0). */
int fault_stress_run_on(int cluster, int procs, int threads, int iters);

#endif /* DLOCK_TEST_FAULTS_H */
