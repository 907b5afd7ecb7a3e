/*
 * The randomized fault run (`make nemesis`, issue 32 section 6): shared
 * pieces of the driver (nemesis.c), the workers (worker.c) and the checker
 * (check.c).
 *
 * The driver starts a topology with the test harness, forks worker
 * processes (before it makes any dlock client: the workers make their own)
 * and, while they take and release locks, injects faults at random. Every
 * worker writes the history of its operations into memory shared with the
 * parent (an anonymous MAP_SHARED mapping), one record per operation; the
 * checker reads the histories after the workers have exited.
 *
 * Time: CLOCK_MONOTONIC in ms (fault_now_ms), the same clock in every
 * process of the machine.
 */
#ifndef DLOCK_TEST_NEMESIS_H
#define DLOCK_TEST_NEMESIS_H

#include <stdint.h>
#include <sys/types.h>

/* Lock types the workers take. */
enum nem_kind {
    NEM_REENTRANT = 0,
    NEM_FAIR,
    NEM_RW_WRITE,  /* the write half of the read-write lock */
    NEM_SEMAPHORE, /* the semaphore as a lock, NEM_SEM_PERMITS permits */
    NEM_FENCED,    /* the fenced lock, then a guarded write with its token */
    NEM_REDLOCK,   /* a Redlock over the 5 servers (a guarded write needs
                    * one store: none here) */
    NEM_NKINDS
};

#define NEM_SEM_PERMITS 2

/* Groups of workers: which configuration their clients use. */
enum nem_group {
    NEM_SENTINEL_SYNC = 0, /* Sentinel, sync_replicas=-1 */
    NEM_SENTINEL_ASYNC,    /* Sentinel, no sync (plain async replication) */
    NEM_REDLOCK5,          /* Redlock over 5 servers behind proxies */
    NEM_CLUSTER3,          /* a cluster of 3 masters with a replica each */
    NEM_NGROUPS
};

/* One operation: acquire, (if acquired) the critical section with the
 * guarded write of the fenced types, release. Times in ms. */
typedef struct nem_rec {
    int16_t worker, group, kind, paused; /* paused: SIGSTOPped meanwhile */
    int32_t acq_rc, write_rc, rel_rc;
    int32_t call_budget_ms; /* of the release and the write (no wait):
                             * the command and connect timeouts */
    int64_t wait_ms, lease_ms, budget_ms; /* budget of the acquire call */
    int64_t t0;         /* acquire called */
    int64_t t1;         /* acquire returned */
    int64_t w0, w1;     /* guarded write called / returned (0: none) */
    int64_t t2, t3;     /* release called / returned (0: none) */
    int64_t token;      /* the fencing token (fenced, Redlock), else 0 */
} nem_rec;

#define NEM_MAX_WORKERS 40
#define NEM_RECS_PER_WORKER 32768

/* A worker's slot in the shared memory. */
typedef struct nem_slot {
    pid_t pid;
    int group;
    int holding;          /* 1 between a successful acquire and release */
    int waiting;          /* kind + 1 during an acquire call, else 0 */
    int64_t lease_end_ms; /* t0 + lease of the current hold */
    int pauses;           /* bumped by the parent around each SIGSTOP */
    long nrec, dropped;
    nem_rec rec[NEM_RECS_PER_WORKER];
} nem_slot;

typedef struct nem_shared {
    int stop;
    nem_slot slot[NEM_MAX_WORKERS];
} nem_shared;

/* What a worker connects to (filled by the driver before the fork). */
typedef struct nem_target {
    int group;
    char url[600];          /* Sentinel or cluster URL */
    char node_url[5][128];  /* the Redlock's nodes (through their proxies) */
    int nnodes;
    char prefix[16];        /* lock names: "<prefix>:<kind>" */
    int64_t cmd_timeout_ms; /* the clients' command timeout */
    int64_t sync_timeout_ms;/* 0: no sync */
    int sync_replicas;      /* with sync: -1 (all connected) or N */
} nem_target;

/* A client on url with the target's timeouts (and sync), connecting on
 * first use so that it can be made while its server is down. NULL on
 * failure (reason on stderr). */
struct dlock_client;
struct dlock_client *nem_client_new(const nem_target *t, const char *url);

/* The worker loop (worker.c): runs until sh->stop, then returns. */
void nem_worker_main(nem_shared *sh, int idx, const nem_target *t,
                     unsigned seed);

/* Budget of a call with wait_ms, as api/dlock/client.h and redis.h state
 * it: wait + budget_slack_ms (+ sync_timeout_ms + 250 for a synced write).
 * Without a wait (release, guarded write): the command timeout. */
#define NEM_BUDGET_SLACK_MS 50
#define NEM_CONNECT_TIMEOUT_MS 500
/* One round trip, on a loaded 2-core loopback shared with other builds:
 * what a call may take past its budget (the worst overrun is reported
 * whatever it is; 614 ms was seen once on the cluster while two other runs
 * loaded the machine, under 450 ms otherwise). */
#define NEM_ROUND_TRIP_MS 1000

/* ---- faults and the check (check.c) -------------------------------------- */

enum nem_fault {
    NEM_F_KILL_MASTER = 0, /* kill -9 of the Sentinel master, restart later */
    NEM_F_FAILOVER,        /* SENTINEL FAILOVER / CLUSTER FAILOVER */
    NEM_F_KILL_NODE,       /* kill -9 of a server, restart later (Redlock:
                            * after the longest lease: a delayed restart) */
    NEM_F_PAUSE_NODE,      /* SIGSTOP of a server, SIGCONT later */
    NEM_F_PROXY_CUT,       /* the proxy closes and refuses connections */
    NEM_F_PROXY_HOLE,      /* the proxy black-holes the traffic */
    NEM_F_PROXY_DELAY,     /* the proxy delays every chunk */
    NEM_F_PAUSE_HOLDER,    /* SIGSTOP of a worker holding a lock, past its
                            * lease */
    NEM_F_KILL_WAITER,     /* kill -9 of a worker queued on the fair lock
                            * (a new worker takes its place) */
    NEM_NFAULTS
};

typedef struct nem_fault_rec {
    int kind, group;
    int64_t t0, t1; /* injected / healed */
} nem_fault_rec;

const char *nem_kind_name(int kind);
const char *nem_group_name(int group);
const char *nem_fault_name(int fault);

/* The check of one topology's histories (sh after the workers exited),
 * accumulated into the report. leftovers: what the end-of-run scan found
 * (keys without expiry, fair-queue entries), by the driver. */
typedef struct nem_report nem_report;
nem_report *nem_report_new(unsigned seed, int seconds);
void nem_report_add_faults(nem_report *r, const nem_fault_rec *f, int n);
void nem_report_check(nem_report *r, const nem_slot *slots, int nworkers,
                      const nem_fault_rec *f, int nfaults);
void nem_report_leftover(nem_report *r, int group, const char *what,
                         const char *key);
/* Prints the table and the JSON lines; returns the number of asserted
 * violations. */
long nem_report_print(nem_report *r);
void nem_report_free(nem_report *r);
/* Runs the checker on planted histories (two owners, a stale token, an
 * overrun, and cases that are none of these): 0 when it finds exactly
 * the planted violations, else -1 (reason on stderr). */
int nem_check_self_test(void);

#endif /* DLOCK_TEST_NEMESIS_H */
