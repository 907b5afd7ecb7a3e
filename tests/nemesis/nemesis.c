/*
 * `make nemesis` (issue 32 section 6): a randomized fault run.
 *
 *   dlock_nemesis [seconds]      NEMESIS_SECONDS (default 600), NEMESIS_SEED
 *
 * NEMESIS_SYNC_REPLICAS=N gives the Sentinel sync group sync_replicas=N
 * instead of -1 (the two-owner check stays asserted for that group).
 * NEMESIS_ONLY=sentinel|redlock|cluster runs one topology for the whole
 * time; NEMESIS_VERBOSE=1 prints the faults with their times (the first
 * violations are always printed, with theirs).
 *
 * Prints the seed first (NEMESIS_SEED=<seed> replays the same draw of
 * faults, waits and leases; the interleaving with the servers is not
 * replayed). The time is shared by three topologies, one after the other,
 * each started with the test harness on free loopback ports:
 *
 *  1. Sentinel (45 %): a master, two replicas, three sentinels; 3 workers
 *     with sync_replicas=-1 and 3 without sync. Faults: kill -9 of the
 *     master (restarted 2-5 s later), SENTINEL FAILOVER, kill of a replica
 *     (restarted 1-3 s later), SIGSTOP of a data node for 0.2-0.8 s (below
 *     down-after-milliseconds: no failover), SIGSTOP of a holder past its
 *     lease, kill -9 of a worker queued on the fair lock (a new worker
 *     replaces it). One fault at a time, so a majority of the data nodes
 *     is alive.
 *  2. Redlock over 5 servers, each behind the test proxy (35 %), 4 workers.
 *     Faults: kill -9 of a node restarted empty after the longest lease
 *     (a delayed restart, as Redlock requires), SIGSTOP of a node, the
 *     proxy closing, black-holing or delaying a node's connections, and
 *     SIGSTOP of a holder. One node at a time: a majority is alive.
 *  3. A cluster of 3 masters with a replica each (20 %), 4 workers. Faults:
 *     CLUSTER FAILOVER of a shard, SIGSTOP of a master for 0.2-0.7 s (below
 *     the node timeout), SIGSTOP of a holder, kill -9 of a fair waiter.
 *
 * Then the workers stop, the driver waits out the leases and the fair-lock
 * waiter timeout, makes one operation on each fair lock (the next one after
 * the waiters' timeout), scans the servers for what was left behind (a key without
 * expiry other than a fenced lock's token counter or a semaphore's count; a
 * fair lock's queue), and checks the histories (check.c). Exit status: 0,
 * 1 with an asserted violation, 2 when a topology could not start.
 */
#include "nemesis.h"

#include <dlock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../faults/faults.h"
#include "../harness/cluster.h"
#include "../harness/redis_server.h"
#include "../harness/sentinels.h"

#define MAX_LEASE_MS 2500
#define JOIN_MS 30000
#define HEAL_MS 90000 /* as the fault suite heals (a stalled sentinel TILTs for 30 s) */

static nem_shared *sh;
static nem_report *report;
static unsigned rng;
static nem_fault_rec faults[4096];
static int nfaults, nworkers, fork_failures;
static int64_t phase_end;
static int sync_replicas = -1; /* NEMESIS_SYNC_REPLICAS */

static int rnd(int lo, int hi)
{
    return lo + (int)(rand_r(&rng) % (unsigned)(hi - lo + 1));
}

static void fault_begin(int kind, int group)
{
    if (nfaults < (int)(sizeof faults / sizeof faults[0])) {
        faults[nfaults].kind = kind;
        faults[nfaults].group = group;
        faults[nfaults].t0 = fault_now_ms();
    }
}

static void fault_end(void)
{
    if (nfaults < (int)(sizeof faults / sizeof faults[0]))
        faults[nfaults++].t1 = fault_now_ms();
}

/* ---- workers -------------------------------------------------------------- */

static void fork_workers(const nem_target *t, int n, unsigned seed)
{
    int i;
    fflush(NULL);
    for (i = 0; i < n && nworkers < NEM_MAX_WORKERS; i++) {
        int idx = nworkers++;
        pid_t pid;
        sh->slot[idx].group = t->group;
        pid = fork();
        if (pid == 0) {
            nem_worker_main(sh, idx, t, seed * 31u + (unsigned)idx * 7919u);
            _exit(0);
        }
        if (pid < 0) {
            fprintf(stderr, "nemesis: cannot fork a worker\n");
            fork_failures++;
        }
        sh->slot[idx].pid = pid > 0 ? pid : 0;
    }
}

/* Stops the workers of this phase (first..nworkers): 0, or the number that
 * failed or had to be killed. */
static int join_workers(int first)
{
    int64_t end = fault_now_ms() + JOIN_MS;
    int i, bad = 0, left;

    __atomic_store_n(&sh->stop, 1, __ATOMIC_SEQ_CST);
    for (i = first; i < nworkers; i++)
        if (sh->slot[i].pid > 0)
            kill(sh->slot[i].pid, SIGCONT);
    do {
        left = 0;
        for (i = first; i < nworkers; i++) {
            int st;
            pid_t pid = sh->slot[i].pid;
            if (pid <= 0)
                continue;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                sh->slot[i].pid = -1;
                if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                    fprintf(stderr, "nemesis: worker %d ended with status %d\n", i, st);
                    bad++;
                }
            } else {
                left++;
            }
        }
        if (left)
            fault_sleep_ms(20);
    } while (left && fault_now_ms() < end);
    for (i = first; i < nworkers; i++)
        if (sh->slot[i].pid > 0) {
            fprintf(stderr, "nemesis: worker %d did not stop, killed\n", i);
            kill(sh->slot[i].pid, SIGKILL);
            waitpid(sh->slot[i].pid, NULL, 0);
            sh->slot[i].pid = -1;
            bad++;
        }
    __atomic_store_n(&sh->stop, 0, __ATOMIC_SEQ_CST);
    return bad;
}

/* SIGSTOP of a worker of this phase that holds a lock, until past its
 * lease. 0, or -1 when none was holding. */
static int pause_holder(int first, int group)
{
    int i, tries;
    for (tries = 0; tries < 50; tries++) {
        for (i = first; i < nworkers; i++) {
            nem_slot *s = &sh->slot[i];
            int64_t until;
            if (s->pid <= 0 || !__atomic_load_n(&s->holding, __ATOMIC_SEQ_CST))
                continue;
            fault_begin(NEM_F_PAUSE_HOLDER, group);
            __atomic_add_fetch(&s->pauses, 1, __ATOMIC_SEQ_CST);
            kill(s->pid, SIGSTOP);
            until = __atomic_load_n(&s->lease_end_ms, __ATOMIC_SEQ_CST) + rnd(200, 800);
            while (fault_now_ms() < until)
                fault_sleep_ms(20);
            kill(s->pid, SIGCONT);
            __atomic_add_fetch(&s->pauses, 1, __ATOMIC_SEQ_CST);
            fault_end();
            return 0;
        }
        fault_sleep_ms(10);
    }
    return -1;
}

static void sleep_until_or(int64_t ms)
{
    int64_t end = fault_now_ms() + ms;
    if (end > phase_end)
        end = phase_end;
    while (fault_now_ms() < end)
        fault_sleep_ms(20);
}

/* kill -9 of a worker waiting in the fair lock's queue; a new worker of
 * the same target takes its place. 0, or -1 when none was waiting. */
static int kill_waiter(int first, const nem_target *t, unsigned seed)
{
    int i, tries;
    if (nworkers >= NEM_MAX_WORKERS)
        return -1;
    for (tries = 0; tries < 50; tries++) {
        for (i = first; i < nworkers; i++) {
            nem_slot *s = &sh->slot[i];
            if (s->pid <= 0 || s->group != t->group ||
                __atomic_load_n(&s->waiting, __ATOMIC_SEQ_CST) != NEM_FAIR + 1)
                continue;
            fault_begin(NEM_F_KILL_WAITER, t->group == NEM_SENTINEL_ASYNC ? NEM_SENTINEL_SYNC
                                                                          : t->group);
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            s->pid = -1;
            fault_end();
            fork_workers(t, 1, seed + (unsigned)nworkers);
            return 0;
        }
        fault_sleep_ms(10);
    }
    return -1;
}

/* ---- what is left behind --------------------------------------------------- */

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Scans one server: every key must expire, but a fenced lock's token
 * counter and a semaphore's count (they never expire by design); no fair
 * lock's queue may be left. */
static void scan_server(dlock_test_redis *srv, int group)
{
    static char keys[1 << 16];
    const char *keys_argv[] = {"KEYS", "*", NULL};
    char *k, *save = NULL;

    if (dlock_test_redis_command(srv, keys, sizeof keys, keys_argv) != 0 ||
        keys[0] == '-') {
        nem_report_leftover(report, group, "scan failed", dlock_test_redis_url(srv));
        return;
    }
    for (k = strtok_r(keys, "\n", &save); k != NULL; k = strtok_r(NULL, "\n", &save)) {
        char ttl[64];
        const char *ttl_argv[] = {"PTTL", k, NULL};
        if (starts(k, "redisson_lock_queue:") || starts(k, "redisson_lock_timeout:")) {
            nem_report_leftover(report, group, "queue", k);
            continue;
        }
        if (starts(k, "redisson_lock_token:") ||
            (strstr(k, ":semaphore") != NULL && strchr(k, '{') == NULL))
            continue;
        if (dlock_test_redis_command(srv, ttl, sizeof ttl, ttl_argv) == 0 &&
            strcmp(ttl, "-1") == 0)
            nem_report_leftover(report, group, "no expiry", k);
    }
}

/* Waits out the leases and the fair waiters' timeout (5 s by default),
 * then makes the next operation on each fair lock (a try_lock without
 * wait, from a client of the driver's own, freed before any later fork):
 * a dead waiter must be gone after it. */
static void wait_leftovers_due(const nem_target *const *t, int n)
{
    int i;
    fault_sleep_ms(MAX_LEASE_MS + 5000 + 1000);
    for (i = 0; i < n; i++) {
        dlock_client *c = nem_client_new(t[i], t[i]->url);
        dlock_rlock *l = NULL;
        char name[64];
        snprintf(name, sizeof name, "%s:%s", t[i]->prefix, nem_kind_name(NEM_FAIR));
        if (c != NULL && dlock_fair_new(&l, c, name) == 0 && dlock_try_lock(l, 0, 1000) == 0)
            dlock_unlock(l);
        dlock_rlock_free(l);
        dlock_client_free(c);
    }
}

static void check_phase(int first)
{
    int i;
    if (getenv("NEMESIS_VERBOSE") != NULL)
        for (i = 0; i < nfaults; i++)
            printf("nemesis: fault %s [%lld, %lld]\n", nem_fault_name(faults[i].kind),
                   (long long)faults[i].t0, (long long)faults[i].t1);
    nem_report_add_faults(report, faults, nfaults);
    nem_report_check(report, &sh->slot[first], nworkers - first, faults, nfaults);
    nfaults = 0;
}

/* ---- 1. Sentinel ------------------------------------------------------------ */

static int phase_sentinel(int seconds, unsigned seed)
{
    static dlock_test_sentinels set;
    nem_target ts, ta;
    int first = nworkers, bad = 0, healthy = 1;

    if (dlock_test_sentinels_start(&set, "nemesis") != 0)
        return -1;
    memset(&ts, 0, sizeof ts);
    ts.group = NEM_SENTINEL_SYNC;
    snprintf(ts.url, sizeof ts.url, "%s", set.url);
    snprintf(ts.prefix, sizeof ts.prefix, "ns");
    ts.cmd_timeout_ms = 1000;
    ts.sync_timeout_ms = 500;
    ts.sync_replicas = sync_replicas;
    ta = ts;
    ta.group = NEM_SENTINEL_ASYNC;
    snprintf(ta.prefix, sizeof ta.prefix, "na");
    ta.sync_timeout_ms = 0;
    fork_workers(&ts, 3, seed);
    fork_workers(&ta, 3, seed + 1);
    phase_end = fault_now_ms() + (int64_t)seconds * 1000;
    while (fault_now_ms() < phase_end && healthy) {
        int f = rnd(0, 11), m = dlock_test_sentinels_master(&set), v;
        const char *fo_argv[] = {"SENTINEL", "FAILOVER", "nemesis", NULL};
        char out[256];

        sleep_until_or(rnd(300, 1500));
        if (fault_now_ms() >= phase_end || m < 0)
            break;
        if (f < 2) { /* kill -9 of the master */
            fault_begin(NEM_F_KILL_MASTER, NEM_SENTINEL_SYNC);
            dlock_test_redis_signal(set.data[m], SIGKILL);
            fault_sleep_ms(rnd(2000, 5000));
            healthy = dlock_test_redis_restart(set.data[m]) == 0 &&
                      dlock_test_sentinels_heal(&set, HEAL_MS) == 0;
            fault_end();
        } else if (f < 4) { /* SENTINEL FAILOVER */
            fault_begin(NEM_F_FAILOVER, NEM_SENTINEL_SYNC);
            dlock_test_redis_command(set.sentinel[0], out, sizeof out, fo_argv);
            {
                int64_t until = fault_now_ms() + 15000;
                while (dlock_test_sentinels_master(&set) == m && fault_now_ms() < until)
                    fault_sleep_ms(100);
            }
            healthy = dlock_test_sentinels_heal(&set, HEAL_MS) == 0;
            fault_end();
        } else if (f < 5) { /* a replica killed, back 1-3 s later */
            v = (m + rnd(1, DLOCK_TEST_NDATA - 1)) % DLOCK_TEST_NDATA;
            fault_begin(NEM_F_KILL_NODE, NEM_SENTINEL_SYNC);
            dlock_test_redis_kill(set.data[v]);
            fault_sleep_ms(rnd(1000, 3000));
            healthy = dlock_test_redis_restart(set.data[v]) == 0 &&
                      dlock_test_sentinels_heal(&set, HEAL_MS) == 0;
            fault_end();
        } else if (f < 8) { /* a data node stalled, below down-after */
            v = rnd(0, DLOCK_TEST_NDATA - 1);
            fault_begin(NEM_F_PAUSE_NODE, NEM_SENTINEL_SYNC);
            dlock_test_redis_signal(set.data[v], SIGSTOP);
            fault_sleep_ms(rnd(200, 800));
            dlock_test_redis_signal(set.data[v], SIGCONT);
            fault_end();
        } else if (f < 11) {
            pause_holder(first, NEM_SENTINEL_SYNC);
        } else {
            kill_waiter(first, rnd(0, 1) ? &ts : &ta, seed);
        }
        if (!healthy)
            fprintf(stderr, "nemesis: the Sentinel set did not heal within %d ms; no more "
                            "faults in this phase\n", HEAL_MS);
    }
    bad += join_workers(first);
    {
        const nem_target *fair[] = {&ts, &ta};
        wait_leftovers_due(fair, 2);
    }
    {
        int m = dlock_test_sentinels_master(&set);
        if (m >= 0) {
            scan_server(set.data[m], NEM_SENTINEL_SYNC);
        } else {
            nem_report_leftover(report, NEM_SENTINEL_SYNC, "scan failed", "no master");
        }
    }
    check_phase(first);
    dlock_test_sentinels_stop(&set);
    return bad;
}

/* ---- 2. Redlock over 5 servers behind proxies ------------------------------------ */

#define NR 5

static int phase_redlock(int seconds, unsigned seed)
{
    dlock_test_redis *srv[NR] = {NULL};
    fault_proxy *px[NR] = {NULL};
    nem_target t;
    int first = nworkers, bad = 0, i, up = 1;

    for (i = 0; i < NR; i++)
        up &= fault_proxied_redis_start(&srv[i], &px[i], NULL) == 0;
    if (!up) {
        for (i = 0; i < NR; i++)
            fault_proxied_redis_stop(&srv[i], &px[i]);
        return -1;
    }
    memset(&t, 0, sizeof t);
    t.group = NEM_REDLOCK5;
    t.nnodes = NR;
    for (i = 0; i < NR; i++)
        snprintf(t.node_url[i], sizeof t.node_url[i], "%s", fault_proxy_url(px[i]));
    snprintf(t.prefix, sizeof t.prefix, "nr");
    t.cmd_timeout_ms = 1000;
    fork_workers(&t, 4, seed);
    phase_end = fault_now_ms() + (int64_t)seconds * 1000;
    while (fault_now_ms() < phase_end) {
        int f = rnd(0, 11), v = rnd(0, NR - 1);
        sleep_until_or(rnd(300, 1500));
        if (fault_now_ms() >= phase_end)
            break;
        if (f < 2) { /* kill -9, restarted empty after the longest lease */
            fault_begin(NEM_F_KILL_NODE, NEM_REDLOCK5);
            dlock_test_redis_signal(srv[v], SIGKILL);
            fault_sleep_ms(MAX_LEASE_MS + rnd(500, 1500));
            dlock_test_redis_restart(srv[v]);
            fault_end();
        } else if (f < 4) {
            fault_begin(NEM_F_PAUSE_NODE, NEM_REDLOCK5);
            dlock_test_redis_signal(srv[v], SIGSTOP);
            fault_sleep_ms(rnd(200, 2000));
            dlock_test_redis_signal(srv[v], SIGCONT);
            fault_end();
        } else if (f < 9) {
            static const int kinds[] = {NEM_F_PROXY_CUT, NEM_F_PROXY_HOLE,
                                        NEM_F_PROXY_DELAY};
            static const fault_proxy_mode modes[] = {FAULT_DROP, FAULT_BLACKHOLE,
                                                     FAULT_DELAY};
            int which = (f - 4) % 3;
            fault_begin(kinds[which], NEM_REDLOCK5);
            fault_proxy_set(px[v], modes[which], rnd(20, 200));
            fault_sleep_ms(rnd(300, 2500));
            fault_proxy_set(px[v], FAULT_PASS, 0);
            fault_end();
        } else {
            pause_holder(first, NEM_REDLOCK5);
        }
    }
    bad += join_workers(first);
    wait_leftovers_due(NULL, 0);
    for (i = 0; i < NR; i++)
        scan_server(srv[i], NEM_REDLOCK5);
    check_phase(first);
    for (i = 0; i < NR; i++)
        fault_proxied_redis_stop(&srv[i], &px[i]);
    return bad;
}

/* ---- 3. A cluster of 3 masters ------------------------------------------------------- */

static int phase_cluster(int seconds, unsigned seed)
{
    static dlock_test_cluster c;
    nem_target t;
    int first = nworkers, bad = 0, i, healthy = 1;

    if (dlock_test_cluster_start(&c, 3, 1) != 0)
        return -1;
    memset(&t, 0, sizeof t);
    t.group = NEM_CLUSTER3;
    snprintf(t.url, sizeof t.url, "%s", dlock_test_cluster_url(&c));
    snprintf(t.prefix, sizeof t.prefix, "nc");
    t.cmd_timeout_ms = 1000;
    fork_workers(&t, 4, seed);
    phase_end = fault_now_ms() + (int64_t)seconds * 1000;
    while (fault_now_ms() < phase_end && healthy) {
        int f = rnd(0, 10), shard = rnd(0, 2), m;
        sleep_until_or(rnd(300, 1500));
        if (fault_now_ms() >= phase_end)
            break;
        if (f < 3) {
            fault_begin(NEM_F_FAILOVER, NEM_CLUSTER3);
            healthy = dlock_test_cluster_failover(&c, shard) >= 0;
            fault_end();
        } else if (f < 6 && (m = dlock_test_cluster_shard_master(&c, shard)) >= 0) {
            fault_begin(NEM_F_PAUSE_NODE, NEM_CLUSTER3);
            dlock_test_redis_signal(c.node[m], SIGSTOP);
            fault_sleep_ms(rnd(200, 700));
            dlock_test_redis_signal(c.node[m], SIGCONT);
            fault_end();
        } else if (f < 10) {
            pause_holder(first, NEM_CLUSTER3);
        } else {
            kill_waiter(first, &t, seed);
        }
        if (!healthy)
            fprintf(stderr, "nemesis: the cluster did not settle; no more faults in "
                            "this phase\n");
    }
    bad += join_workers(first);
    {
        const nem_target *fair[] = {&t};
        wait_leftovers_due(fair, 1);
    }
    for (i = 0; i < c.nnodes; i++)
        if (dlock_test_cluster_role(&c, i) == DLOCK_TEST_NODE_MASTER)
            scan_server(c.node[i], NEM_CLUSTER3);
    check_phase(first);
    dlock_test_cluster_stop(&c);
    return bad;
}

/* ---- main ---------------------------------------------------------------------- */

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    char *end;
    long n;
    if (v == NULL || *v == '\0')
        return def;
    n = strtol(v, &end, 10);
    if (*end != '\0' || n < 0) {
        fprintf(stderr, "nemesis: %s=%s: not a number\n", name, v);
        exit(2);
    }
    return n;
}

int main(int argc, char **argv)
{
    long seconds = env_long("NEMESIS_SECONDS", 600);
    unsigned seed = (unsigned)env_long("NEMESIS_SEED", (long)((unsigned)time(NULL) ^
                                                               ((unsigned)getpid() << 16)));
    int s1, s2, s3, bad = 0, rc;
    const char *only;
    long asserted;

    if (argc > 1)
        seconds = atol(argv[1]);
    if (getenv("NEMESIS_SYNC_REPLICAS") != NULL &&
        strcmp(getenv("NEMESIS_SYNC_REPLICAS"), "-1") != 0)
        sync_replicas = (int)env_long("NEMESIS_SYNC_REPLICAS", -1);
    if (seconds < 10) {
        fprintf(stderr, "nemesis: at least 10 seconds\n");
        return 2;
    }
    printf("nemesis: seed %u (NEMESIS_SEED=%u replays it), %ld s\n", seed, seed, seconds);
    fflush(stdout);
    if (nem_check_self_test() != 0)
        return 2;
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    report = nem_report_new(seed, (int)seconds);
    if (sh == MAP_FAILED || report == NULL) {
        fprintf(stderr, "nemesis: out of memory\n");
        return 2;
    }
    only = getenv("NEMESIS_ONLY");
    if (only != NULL && *only != '\0') {
        s1 = strcmp(only, "sentinel") == 0 ? (int)seconds : 0;
        s2 = strcmp(only, "redlock") == 0 ? (int)seconds : 0;
        s3 = strcmp(only, "cluster") == 0 ? (int)seconds : 0;
        if (s1 + s2 + s3 == 0) {
            fprintf(stderr, "nemesis: NEMESIS_ONLY=%s: sentinel, redlock or cluster\n",
                    only);
            return 2;
        }
    } else {
        s1 = (int)(seconds * 45 / 100);
        s2 = (int)(seconds * 35 / 100);
        s3 = (int)seconds - s1 - s2;
    }
    rng = seed;
    if (s1 > 0) {
        printf("nemesis: Sentinel (master, 2 replicas, 3 sentinels), %d s\n", s1);
        fflush(stdout);
        if ((rc = phase_sentinel(s1, seed)) < 0) {
            fprintf(stderr, "nemesis: cannot start the Sentinel set\n");
            return 2;
        }
        bad += rc;
    }
    if (s2 > 0) {
        printf("nemesis: Redlock over 5 servers behind proxies, %d s\n", s2);
        fflush(stdout);
        if ((rc = phase_redlock(s2, seed + 2)) < 0) {
            fprintf(stderr, "nemesis: cannot start the Redlock servers\n");
            return 2;
        }
        bad += rc;
    }
    if (s3 > 0) {
        printf("nemesis: cluster of 3 masters with a replica each, %d s\n", s3);
        fflush(stdout);
        if ((rc = phase_cluster(s3, seed + 3)) < 0) {
            fprintf(stderr, "nemesis: cannot start the cluster\n");
            return 2;
        }
        bad += rc;
    }
    asserted = nem_report_print(report);
    bad += fork_failures;
    if (bad)
        printf("nemesis: %d worker(s) failed or did not stop\n", bad);
    nem_report_free(report);
    munmap(sh, sizeof *sh);
    return asserted > 0 || bad > 0 ? 1 : 0;
}
