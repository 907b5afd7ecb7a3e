/*
 * Redlock stress (`make stress-redlock`, part of `make stress`): mutual
 * exclusion over five redis-servers while a killer thread kills and
 * restarts (empty: no persistence) one random node at a time, so that a
 * majority is always up.
 *
 * WORKERS worker processes (forked before any client exists), each with
 * its own five clients, loop: try_lock (wait 2 s, lease 2 s), check that
 * nobody else is inside, bump a plain counter, leave, unlock. The checks
 * live in memory shared by the processes (an anonymous shared mapping,
 * updated atomically). An overlap is a violation; so is a lost counter
 * update. Acquisitions that fail because nodes were down are counted, not
 * violations. The parent kills and restarts the nodes (it started them).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness/redis_server.h"
#include "dlock.h"
#include "faults.h"

#define N 5
#define WORKERS 5
#define RUN_MS 20000
/* How long the parent waits for the workers once told to stop. */
#define JOIN_MS 30000

static dlock_test_redis *servers[N];
static long kills;

/* What the processes share (MAP_SHARED), atomically. */
typedef struct shared {
    int stop, inside;
    long counter, acquired, failed, violations;
} shared;

static shared *sh;

static void worker_main(const char *name)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c[N] = {NULL};
    dlock_rlock *l = NULL;
    char err[256];
    int i, rc;

    o.budget_slack_ms = 300;
    for (i = 0; i < N; i++)
        if (dlock_client_connect(&c[i], dlock_test_redis_url(servers[i]), &o, err,
                                 sizeof err) != 0) {
            __atomic_add_fetch(&sh->violations, 1, __ATOMIC_SEQ_CST); /* cannot run */
            goto out;
        }
    if (dlock_redlock_new(&l, c, N, name) != 0)
        goto out;
    while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
        rc = dlock_try_lock(l, 2000, 2000);
        if (rc != 0) {
            __atomic_add_fetch(&sh->failed, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (__atomic_add_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&sh->violations, 1, __ATOMIC_SEQ_CST);
        {
            long v = __atomic_load_n(&sh->counter, __ATOMIC_SEQ_CST);
            usleep(200); /* widen the window a lost update needs */
            __atomic_store_n(&sh->counter, v + 1, __ATOMIC_SEQ_CST);
        }
        __atomic_add_fetch(&sh->acquired, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&sh->inside, 1, __ATOMIC_SEQ_CST);
        dlock_unlock(l); /* ELOST / ECONN possible with nodes going away */
    }
out:
    dlock_rlock_free(l);
    for (i = 0; i < N; i++)
        dlock_client_free(c[i]);
}

/* Waits up to JOIN_MS for the workers, then kills what is left (counted
 * as a failure: a worker that does not stop is hung). 0 or -1. */
static int join_workers(const pid_t *pids, int n)
{
    int64_t end = fault_now_ms() + JOIN_MS;
    int left = n, i, bad = 0;
    pid_t done[WORKERS] = {0};

    while (left > 0 && fault_now_ms() < end) {
        for (i = 0; i < n; i++) {
            int st;
            if (done[i] || pids[i] <= 0 || waitpid(pids[i], &st, WNOHANG) != pids[i])
                continue;
            done[i] = 1;
            left--;
            bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        }
        fault_sleep_ms(20);
    }
    for (i = 0; i < n; i++)
        if (!done[i] && pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], NULL, 0);
            bad = 1;
        }
    return bad ? -1 : 0;
}

int dlock_test_stress_redlock(void)
{
    pid_t pids[WORKERS];
    char name[64];
    int i, up = 1, bad, joined;
    int64_t end;
    unsigned seed = (unsigned)getpid();

    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
              -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "redlock stress: mmap failed\n");
        return -1;
    }
    memset(sh, 0, sizeof *sh);
    for (i = 0; i < N; i++)
        up &= dlock_test_redis_start(&servers[i], NULL) == 0;
    if (!up) {
        fprintf(stderr, "redlock stress: cannot start %d redis-servers\n", N);
        bad = -1;
        goto stop_all;
    }
    snprintf(name, sizeof name, "dlock-stress:redlock:%ld", (long)getpid());
    fflush(NULL);
    for (i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            /* no atexit handlers: the parent owns the servers */
            worker_main(name);
            _exit(0);
        }
        if (pids[i] < 0)
            __atomic_add_fetch(&sh->violations, 1, __ATOMIC_SEQ_CST); /* cannot run */
    }
    /* one node down at a time, back empty after a moment */
    end = fault_now_ms() + RUN_MS;
    while (fault_now_ms() < end) {
        int victim = (int)(rand_r(&seed) % N);
        fault_sleep_ms(300 + rand_r(&seed) % 400);
        if (dlock_test_redis_kill(servers[victim]) == 0) {
            kills++;
            fault_sleep_ms(100 + rand_r(&seed) % 300);
            dlock_test_redis_restart(servers[victim]);
        }
    }
    __atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
    joined = join_workers(pids, WORKERS);
    if (sh->counter != sh->acquired)
        sh->violations += labs(sh->acquired - sh->counter);
    printf("redlock stress: %d processes x own 5 clients, %d s, %ld node kills+restarts: "
           "%ld acquisitions, %ld failed attempts (nodes down), %ld violations%s\n",
           WORKERS, RUN_MS / 1000, kills, sh->acquired, sh->failed, sh->violations,
           joined != 0 ? ", a worker did not exit cleanly" : "");
    bad = sh->violations > 0 || sh->acquired == 0 || joined != 0;
stop_all:
    for (i = 0; i < N; i++)
        dlock_test_redis_stop(servers[i]);
    munmap(sh, sizeof *sh);
    return bad;
}
