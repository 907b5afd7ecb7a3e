/*
 * Simulator: one run (tests/sim/world.c), its history and the checkers
 * (tests/sim/check.c). A run is one thread, one seed, N clients (each a
 * dlock_client on a fault backend over one mock store, with its own
 * dlock_loop in poll mode; and, for the MultiLock and the Redlock, two
 * more dlock_clients on fault backends over two more stores, used through
 * the same loop) and the stores' one virtual clock; the driver
 * moves the clock from one due thing to the next (a loop's timer, the
 * workload's next step, a late script, a delayed message, a pause's end).
 */
#ifndef DLOCK_SIM_H
#define DLOCK_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "tests/sim/fault.h"

/* What a run is made of; sim_config_from_seed fills it from the seed. */
typedef struct sim_config {
    uint64_t seed;
    int clients;          /* 1..SIM_MAX_CLIENTS */
    int owners;           /* owners (sequential actors) per client */
    int64_t ops;          /* operations started before the quiet end */
    sim_fault_rates rates;
    int pause_rate;       /* per 10 000 workload steps: a client pauses */
    int failover;         /* 1: the store fails over to its replica once */
    int skew;             /* > 0: each client's clock is off the store's by
                           * up to this many ms, either way */
    int failover_permille; /* ... when this share (per mille) of ops has
                            * started; synced or not: rates.failover_sync.
                            * A share, not a count: a replay with fewer
                            * --ops (the shrinker's) draws the same run */
    int64_t pause_max_ms;
    uint32_t types;       /* SIM_T_* bits: which objects the run uses */
    /* 1: a planted bug for the checkers' self-tests (see check.c):
     * SIM_PLANT_* */
    int plant;
    /* The bounds of one run, past which it is a failure (SIM_CHECK_TIMEOUT)
     * rather than a hang: virtual ms for the workload and the quiet end
     * (0: SIM_VIRTUAL_MS_PER_OP per operation and SIM_VIRTUAL_BASE_MS),
     * and CPU seconds for the whole run (0: no bound; a bound of CPU time
     * is the one thing of a run that depends on more than its seed). */
    int64_t virtual_limit_ms;
    double cpu_limit_s;
} sim_config;

#define SIM_VIRTUAL_MS_PER_OP 1000
#define SIM_VIRTUAL_BASE_MS (600 * 1000)

#define SIM_MAX_CLIENTS 8
#define SIM_MAX_OWNERS 4

enum {
    SIM_T_REENTRANT = 1 << 0,
    SIM_T_FAIR = 1 << 1,
    SIM_T_READ = 1 << 2,
    SIM_T_WRITE = 1 << 3,
    SIM_T_FENCED = 1 << 4,
    SIM_T_SEMAPHORE = 1 << 5,
    SIM_T_SPIN = 1 << 6,
    SIM_T_SIMPLE = 1 << 7,
    SIM_T_SEMLOCK = 1 << 8, /* the semaphore as a lock, 2 permits */
    SIM_T_PERMIT = 1 << 9,  /* the permit-expirable semaphore, 3 permits */
    SIM_T_LATCH = 1 << 10,  /* the count-down latch, one round */
    SIM_T_MULTI = 1 << 11,  /* a MultiLock of reentrant locks on 3 stores */
    SIM_T_REDLOCK = 1 << 12, /* a Redlock over the same 3 stores */
    SIM_T_KINDS = 13,
    SIM_T_ALL = (1 << SIM_T_KINDS) - 1,
    /* What a seed runs: all but the Redlock. Its runs are a function of
     * their seed now (its split-vote pause is on the client's clock), but
     * --types 0x1000 still finds seeds that do not end: 315, 323 and 326
     * spin in one loop run without time passing (waiters whose undone
     * partial grants publish releases that wake each other at once, on a
     * store that answers at once), and 330 reports two holders (open) */
    SIM_T_DEFAULT = SIM_T_ALL & ~SIM_T_REDLOCK
};

/* Planted bugs: each must make one checker fail. */
enum {
    SIM_PLANT_NONE,
    SIM_PLANT_GRANT_BUSY,   /* fault backend: busy acquisitions granted (mutex) */
    SIM_PLANT_TOKEN_LOW,    /* fault backend: tokens one too low (fencing) */
    SIM_PLANT_SEM_OVER,     /* history: a semaphore grant of one permit too many */
    SIM_PLANT_FAIR_SWAP,    /* history: two fair grants swapped */
    SIM_PLANT_DOUBLE_CB,    /* history: a callback twice */
    SIM_PLANT_LATE_CB,      /* history: a callback past its budget */
    SIM_PLANT_NO_EXPIRY,    /* store: a lock key left without expiry */
    SIM_PLANT_STUCK,        /* store: a lock held forever before the drain */
    SIM_PLANT_PERMIT_OVER,  /* history: a permit grant of one permit too many */
    SIM_PLANT_PERMIT_LEAK,  /* store: a permit-expirable semaphore's count lowered */
    SIM_PLANT_LATCH_EARLY,  /* history: an awaiter released before the count is 0 */
    SIM_PLANT_ENDLESS,      /* run: the workload never ends (the per-seed bound) */
    SIM_PLANT_LOST_SILENT,  /* history: lost watchdog holds never reported */
    SIM_PLANT_COUNT
};

/* ---- the history ------------------------------------------------------------ */

enum {
    SIM_OP_LOCK,     /* any lock type; value: the token (fenced) */
    SIM_OP_UNLOCK,
    SIM_OP_EXTEND,
    SIM_OP_FORCE,
    SIM_OP_SEM_ACQ,  /* n permits */
    SIM_OP_SEM_REL,
    SIM_OP_PERMIT_ACQ, /* n permits, each its own id; value: how many */
    SIM_OP_PERMIT_REL, /* one id; START's value: the acquisition's operation
                        * number, n: the id's place in its answer */
    SIM_OP_COUNT_DOWN,
    SIM_OP_AWAIT,
    SIM_OP_COUNT
};

enum {
    SIM_EV_START,    /* an operation started */
    SIM_EV_DONE,     /* its callback */
    SIM_EV_WRITE,    /* a guarded write: rc 0 accepted, 1 refused */
    SIM_EV_CANCEL,   /* dlock_op_cancel of op */
    SIM_EV_PAUSE,    /* client paused until value */
    SIM_EV_FAULT,
    SIM_EV_PHASE,    /* value: 1 quiet end begins, 2 liveness probe, 3 end */
    SIM_EV_RENEW,    /* the watchdog's renewal of the owner's hold ran on the
                      * store (the store's side): value the lease's end */
    SIM_EV_LOST      /* the lock object's on_lost for the owner */
};

typedef struct sim_event {
    int64_t t;
    int kind;        /* SIM_EV_* */
    int client, owner;
    int obj;         /* index into the run's objects, -1 none */
    int op;          /* SIM_OP_* */
    int64_t id;      /* the run's operation number */
    int rc;
    int64_t value;
    int64_t wait, lease, n;
    int64_t paused;  /* DONE: ms its client spent paused during the op */
} sim_event;

typedef struct sim_object {
    const char *name; /* store name; a read and a write object share one */
    uint32_t type;    /* one SIM_T_* bit */
    int64_t permits;  /* semaphore: its permits; latch: its count */
    int64_t left;     /* permit-expirable semaphore: the available permits
                       * read at the end (all leases over), -1 unread */
} sim_object;

typedef struct sim_history {
    sim_event *ev;
    size_t n, cap;
    sim_object obj[16];
    int nobj;
    uint64_t hash;   /* FNV-1a of the rendered lines, in order */
    int64_t slack_ms;
    int64_t late_max_ms; /* how late a script may run (fault rates) */
    int64_t watchdog_ms; /* the clients' watchdog timeout (lease-0 holds) */
    /* the store at the end: keys left beyond the persistent ones */
    int leftover;
    char leftover_detail[256];
    /* liveness: probes that failed */
    int probe_failures;
    char probe_detail[256];
    int timed_out;   /* the run passed a bound of sim_config (detail above) */
    uint64_t faults;
    /* when the store failed over with writes not synced (-1: it did not):
     * from then on neither exclusion nor the order of fencing tokens is
     * promised (api/dlock/fenced.h); both are reported, not asserted */
    int64_t unsynced_failover;
    int reported; /* violations reported, not asserted */
} sim_history;

/* One line of the history, as printed and hashed. */
void sim_event_render(const sim_history *h, const sim_event *e, char *buf, size_t len);

/* Runs cfg; fills h (sim_history_free after). 0, or -1 when the run
 * itself could not be set up (message on stderr). */
int sim_run(const sim_config *cfg, sim_history *h);
void sim_history_free(sim_history *h);

/* Fills cfg from seed (the seed decides everything else). */
void sim_config_from_seed(sim_config *cfg, uint64_t seed, int64_t ops);

/* The checkers: which failed (SIM_CHECK_* bits, 0: none); with verbose,
 * the first few violations printed on stderr with the events involved. */
enum {
    SIM_CHECK_EXCLUSION = 1 << 0,
    SIM_CHECK_FENCING = 1 << 1,
    SIM_CHECK_PERMITS = 1 << 2,
    SIM_CHECK_FAIR = 1 << 3,
    SIM_CHECK_LIVENESS = 1 << 4,
    SIM_CHECK_EXPIRY = 1 << 5,
    SIM_CHECK_CALLBACK = 1 << 6,
    SIM_CHECK_LATCH = 1 << 7,
    SIM_CHECK_TIMEOUT = 1 << 8,
    SIM_CHECK_LOST = 1 << 9
};
int sim_check(const sim_history *h, int verbose);

/* A planted history bug (SIM_PLANT_SEM_OVER ...): changes h as a broken
 * library would have; 0, or -1 when h has nothing to plant it on. */
int sim_plant_history(sim_history *h, int plant);

#endif /* DLOCK_SIM_H */
