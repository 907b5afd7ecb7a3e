/*
 * Redlock stress (`make stress-redlock`, part of `make stress`): mutual
 * exclusion over five redis-servers while a killer thread kills and
 * restarts (empty: no persistence) one random node at a time, so that a
 * majority is always up.
 *
 * THREADS workers, each with its own five clients (its own identity, as a
 * separate process would have), loop: try_lock (wait 2 s, lease 2 s), check
 * that nobody else is inside, bump a plain counter, leave, unlock. An
 * overlap is a violation; so is a lost counter update. Acquisitions that
 * fail because nodes were down are counted, not violations. In-process
 * threads with separate clients stand for processes here: the servers only
 * see five independent identities.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness/redis_server.h"
#include "dlock.h"
#include "faults.h"

#define N 5
#define THREADS 5
#define RUN_MS 20000

static dlock_test_redis *servers[N];
static int stop, inside;
static long counter, acquired, failed, violations, kills;

typedef struct worker {
    pthread_t th;
    int id;
    char name[64];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c[N] = {NULL};
    dlock_rlock *l = NULL;
    char err[256];
    int i, rc;

    o.budget_slack_ms = 300;
    for (i = 0; i < N; i++)
        if (dlock_client_connect(&c[i], dlock_test_redis_url(servers[i]), &o, err,
                                 sizeof err) != 0) {
            __atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST); /* cannot run */
            goto out;
        }
    if (dlock_redlock_new(&l, c, N, w->name) != 0)
        goto out;
    while (!__atomic_load_n(&stop, __ATOMIC_SEQ_CST)) {
        rc = dlock_try_lock(l, 2000, 2000);
        if (rc != 0) {
            __atomic_add_fetch(&failed, 1, __ATOMIC_SEQ_CST);
            continue;
        }
        if (__atomic_add_fetch(&inside, 1, __ATOMIC_SEQ_CST) != 1)
            __atomic_add_fetch(&violations, 1, __ATOMIC_SEQ_CST);
        {
            long v = __atomic_load_n(&counter, __ATOMIC_SEQ_CST);
            usleep(200); /* widen the window a lost update needs */
            __atomic_store_n(&counter, v + 1, __ATOMIC_SEQ_CST);
        }
        __atomic_add_fetch(&acquired, 1, __ATOMIC_SEQ_CST);
        __atomic_sub_fetch(&inside, 1, __ATOMIC_SEQ_CST);
        dlock_unlock(l); /* ELOST / ECONN possible with nodes going away */
    }
out:
    dlock_rlock_free(l);
    for (i = 0; i < N; i++)
        dlock_client_free(c[i]);
    return NULL;
}

int dlock_test_stress_redlock(void)
{
    worker ws[THREADS];
    int i, up = 1, bad;
    int64_t end;
    unsigned seed = (unsigned)getpid();

    for (i = 0; i < N; i++)
        up &= dlock_test_redis_start(&servers[i], NULL) == 0;
    if (!up) {
        fprintf(stderr, "redlock stress: cannot start %d redis-servers\n", N);
        bad = -1;
        goto stop_all;
    }
    for (i = 0; i < THREADS; i++) {
        ws[i].id = i;
        snprintf(ws[i].name, sizeof ws[i].name, "dlock-stress:redlock:%ld", (long)getpid());
        pthread_create(&ws[i].th, NULL, worker_main, &ws[i]);
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
    __atomic_store_n(&stop, 1, __ATOMIC_SEQ_CST);
    for (i = 0; i < THREADS; i++)
        pthread_join(ws[i].th, NULL);
    if (counter != acquired)
        violations += labs(acquired - counter);
    printf("redlock stress: %d threads x own 5 clients, %d s, %ld node kills+restarts: "
           "%ld acquisitions, %ld failed attempts (nodes down), %ld violations\n",
           THREADS, RUN_MS / 1000, kills, acquired, failed, violations);
    bad = violations > 0 || acquired == 0;
stop_all:
    for (i = 0; i < N; i++)
        dlock_test_redis_stop(servers[i]);
    return bad;
}
