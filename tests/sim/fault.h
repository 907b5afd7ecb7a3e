/*
 * Simulator: the fault backend. It wraps another backend through the public
 * interface (dlock/sys/backend.h) and, from the run's seed, refuses calls
 * (a refused connection), loses a request before the script ran or its
 * reply after it ran, lets a request arrive late (the script runs after the
 * caller gave up), drops, delays, reorders and duplicates pub/sub
 * messages, and fails a replicated store over to its replica (the writes
 * not yet replicated lost, unless writes are synced). Single-threaded: the simulator's driver calls
 * sim_faults_tick to run what came due (late scripts, delayed messages).
 */
#ifndef DLOCK_SIM_FAULT_H
#define DLOCK_SIM_FAULT_H

#include <stdint.h>

#include "dlock/sys/backend.h"
#include "tests/sim/rng.h"

/* How often each fault strikes, in parts per 10 000 of the calls or
 * messages it could strike. */
typedef struct sim_fault_rates {
    int refuse;       /* eval or subscribe refused: DLOCK_ECONN, nothing ran */
    int lose_request; /* DLOCK_ETIMEDOUT, the script did not run */
    int lose_reply;   /* DLOCK_ETIMEDOUT, the script ran */
    int late;         /* DLOCK_ETIMEDOUT, the script runs up to late_max_ms later */
    int msg_drop, msg_dup, msg_delay; /* a pub/sub message */
    int64_t late_max_ms, msg_delay_max_ms;
    /* Replication to the replica (backends made with one): 1 synced (each
     * write reaches the replica before its reply, as with WAIT), 0 after
     * a lag of up to repl_lag_max_ms. */
    int failover_sync;
    int64_t repl_lag_max_ms;
    /* A planted bug, for the checkers' self-tests: 1 grants every refused
     * exclusive acquisition (a busy reply turned into nil), 2 hands out
     * fencing tokens one too low. 0: none. */
    int plant;
} sim_fault_rates;

typedef struct sim_faults sim_faults;

/* The shared part (one per run): the rng, the rates, the queue of what is
 * due later. now: the run's clock. */
sim_faults *sim_faults_new(uint64_t seed, const sim_fault_rates *rates,
                           dlock_vclock *clock);
void sim_faults_free(sim_faults *f);
/* 0 turns every fault off (the quiet end of a run), 1 on again. */
void sim_faults_enable(sim_faults *f, int on);
/* Runs the late scripts and delivers the delayed messages due by now;
 * how many. */
int sim_faults_tick(sim_faults *f);
/* The earliest time something is due (INT64_MAX: nothing). */
int64_t sim_faults_next(const sim_faults *f);
/* Faults injected so far, and the time of the last one. */
uint64_t sim_faults_count(const sim_faults *f);
int64_t sim_faults_last(const sim_faults *f);
/* Each fault is reported here (for the history); may be NULL. */
void sim_faults_set_log(sim_faults *f, void (*log)(void *arg, int client,
                                                   const char *what, const char *name),
                        void *arg);

/* Each watchdog renewal that ran on a store (at once, or late), for each
 * hold it renewed (its answer 1): the client whose backend sent it, the
 * script's name, the key, the owner and the lease (ms from now). The
 * store's side, whatever became of the reply. May be NULL. */
void sim_faults_set_renew_log(sim_faults *f,
                              void (*log)(void *arg, int client, const char *script,
                                          const char *key, const char *owner,
                                          int64_t lease_ms),
                              void *arg);

/* A backend that wraps inner (taking it) for client number client;
 * replica (taken too; may be NULL): a backend on the replica's store,
 * which every write that ran reaches (sim_fault_rates.failover_sync). */
int sim_fault_backend_new(dlock_backend **out, sim_faults *f, dlock_backend *inner,
                          dlock_backend *replica, int client);
/* Client b's clock runs offset_ms off the store's from now on (call it
 * before making the client: it reads its backend's clock once). */
void sim_fault_backend_skew(dlock_backend *b, int64_t offset_ms);
/* The primary fails over to the replica: every backend with a replica
 * talks to it from now on (its subscriptions moved, each listener given
 * an empty message), and what was not replicated yet is lost. */
void sim_faults_failover(sim_faults *f);

#endif /* DLOCK_SIM_FAULT_H */
