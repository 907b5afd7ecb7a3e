/*
 * dlock benchmarks — figure 3: four workers fighting over one lock, as four
 * threads of one client and as four processes (fork+exec: each child builds
 * its own client, as a forked child must).
 *
 * Each worker loops lock(); unlock(); with nothing in between (the lock
 * call is try_lock with a wait far longer than any hand-off, BENCH_WAIT_MS).
 * Every acquisition is recorded in shared memory (memfd, mapped by all
 * processes) with CLOCK_MONOTONIC stamps, which all processes of the machine
 * share:
 *   t_call  lock() called
 *   t_busy  the first "busy" reply of that call arrived (the counting
 *           backend stamps it): from then on the server had this waiter;
 *           0 when the first attempt acquired
 *   t_send  the winning attempt was sent (stamped by the counting backend)
 *   t_acq   lock() returned
 *   t_rel   unlock() returned
 * The record index is taken while the lock is held, so index order is
 * acquisition order.
 *
 * From the records:
 *  - hand-off latency: for consecutive acquisitions by different workers,
 *    t_acq(next) - t_rel(previous): from the holder's unlock returning to
 *    the next holder's lock returning. (The next holder's reply may come
 *    back before the previous holder's, e.g. when its attempt was already
 *    on its way, or the previous holder was descheduled before it could
 *    take its stamp: such a hand-off counts as 0, and is counted as "early".)
 *    A worker taking the lock again right after its own unlock is no
 *    hand-off; those are counted apart ("again"). Each hand-off splits at
 *    t_send of the winner: "wake" = t_send(next) - t_rel(previous), how long
 *    the next holder took to learn of the release and try (negative: its
 *    attempt was already on its way), and "try" = t_acq(next) -
 *    t_send(next), the winning attempt's round trip.
 *  - FIFO violations: B's acquisition j violates FIFO when some other
 *    worker A, whose next acquisition comes after j, was already queued
 *    before B even called lock() (A.t_busy < B.t_call). Both stamps are
 *    taken on the client side around the server's own order, so a reported
 *    violation is certain, never an artefact of reply timing.
 *  - per-worker acquisition counts (min/max): how evenly the lock is shared.
 *
 * Hand-offs are also given in round trips: a raw EVALSHA round trip
 * (bench_raw_rtt_ns), measured just before each run.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define WORKERS 4
#define RECORDS (1u << 18)
#define HANDOFF_RTT_TARGET 3.0 /* round trips, for locks without FIFO */
#define FAIR_HANDOFF_FACTOR 1.5
#define START_TIMEOUT_MS 30000

typedef struct acq_rec {
    int32_t worker;
    int32_t pad;
    int64_t t_call, t_busy, t_send, t_acq, t_rel;
} acq_rec;

typedef struct shared {
    int ready, go, stop;
    uint64_t next;
    uint64_t count[WORKERS];
    int rc[WORKERS];
    char err[WORKERS][160];
    acq_rec rec[RECORDS];
} shared;

/* ---- the worker (a thread, or a child process) ----------------------------------- */

static void contend(shared *sh, int w, dlock_rlock *l)
{
    __atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
    while (!__atomic_load_n(&sh->go, __ATOMIC_ACQUIRE))
        usleep(200);
    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        int64_t t_call = bench_now_ns(), t_acq;
        bench_stamps st = {0, 0};
        uint64_t k;
        int rc;

        bench_counts_arm(&st);
        rc = dlock_try_lock(l, BENCH_WAIT_MS, BENCH_LEASE_MS);
        t_acq = bench_now_ns();
        bench_counts_arm(NULL);
        if (rc != 0) {
            sh->rc[w] = rc;
            snprintf(sh->err[w], sizeof sh->err[w], "lock: %s", dlock_errmsg(l));
            break;
        }
        k = __atomic_fetch_add(&sh->next, 1, __ATOMIC_SEQ_CST);
        if (k < RECORDS) {
            sh->rec[k].worker = w;
            sh->rec[k].t_call = t_call;
            sh->rec[k].t_busy = st.first_busy;
            sh->rec[k].t_send = st.last_send;
            sh->rec[k].t_acq = t_acq;
        }
        rc = dlock_unlock(l);
        if (k < RECORDS)
            sh->rec[k].t_rel = bench_now_ns();
        else
            __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
        if (rc != 0) {
            sh->rc[w] = rc;
            snprintf(sh->err[w], sizeof sh->err[w], "unlock: %s", dlock_errmsg(l));
            break;
        }
        sh->count[w]++;
    }
}

static int open_worker_lock(const bench_config *cfg, const bench_lock_type *t,
                            const char *name, dlock_client **client,
                            dlock_rlock **l)
{
    bench_counts *counts;
    int rc = bench_client_new(client, cfg, BENCH_REDIS, 0, NULL, &counts);

    if (rc == 0)
        rc = bench_lock_open(l, t, *client, name);
    return rc;
}

static void lock_name(char *buf, size_t len, const bench_lock_type *t,
                      const char *mode)
{
    snprintf(buf, len, "bench:contended:%s:%s", t->name, mode);
}

/* Child process: argv = <shm fd> <lock type> <worker index>. */
int bench_contended_worker(const bench_config *cfg, int argc, char **argv)
{
    const bench_lock_type *t;
    dlock_client *client = NULL;
    dlock_rlock *l = NULL;
    shared *sh;
    char name[128];
    int fd, w, rc;

    if (argc != 3 || !(t = bench_lock_type_find(argv[1])))
        return 2;
    fd = atoi(argv[0]);
    w = atoi(argv[2]);
    if (w < 0 || w >= WORKERS)
        return 2;
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED)
        return 2;
    lock_name(name, sizeof name, t, "processes");
    rc = open_worker_lock(cfg, t, name, &client, &l);
    if (rc != 0) {
        sh->rc[w] = rc;
        snprintf(sh->err[w], sizeof sh->err[w], "setup: %s", dlock_errname(rc));
        __atomic_add_fetch(&sh->ready, 1, __ATOMIC_SEQ_CST);
        return 1;
    }
    contend(sh, w, l);
    dlock_rlock_free(l);
    dlock_client_free(client);
    return 0;
}

/* ---- running a scenario ------------------------------------------------------------ */

typedef struct thread_arg {
    shared *sh;
    int w;
    dlock_rlock *l;
    pthread_t thread;
} thread_arg;

static void *thread_main(void *arg)
{
    thread_arg *a = arg;
    contend(a->sh, a->w, a->l);
    return NULL;
}

/* Lets the workers go once all are ready; returns the start time, or 0 when
 * they did not all get ready in time (then they are told to stop). */
static int64_t start_workers(shared *sh)
{
    int64_t deadline = bench_now_ns() + (int64_t)START_TIMEOUT_MS * 1000000;

    while (__atomic_load_n(&sh->ready, __ATOMIC_SEQ_CST) < WORKERS) {
        if (bench_now_ns() > deadline) {
            __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
            __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
            return 0;
        }
        bench_sleep_ms(1);
    }
    __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    return bench_now_ns();
}

static int64_t run_threads(const bench_config *cfg, shared *sh,
                           const bench_lock_type *t)
{
    dlock_client *client = NULL;
    dlock_rlock *l = NULL;
    thread_arg a[WORKERS];
    char name[128];
    int64_t t0 = 0;
    int i, n = 0;

    lock_name(name, sizeof name, t, "threads");
    if (open_worker_lock(cfg, t, name, &client, &l) != 0) {
        dlock_client_free(client);
        return 0;
    }
    for (i = 0; i < WORKERS; i++) {
        a[i].sh = sh;
        a[i].w = i;
        a[i].l = l;
        if (pthread_create(&a[i].thread, NULL, thread_main, &a[i]) != 0)
            break;
        n++;
    }
    if (n == WORKERS)
        t0 = start_workers(sh);
    else
        __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    if (t0)
        bench_sleep_ms(cfg->contended_ms);
    __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < n; i++)
        pthread_join(a[i].thread, NULL);
    dlock_rlock_free(l);
    dlock_client_free(client);
    return t0;
}

static int64_t run_processes(const bench_config *cfg, shared *sh, int fd,
                             const bench_lock_type *t)
{
    pid_t pids[WORKERS];
    int64_t t0 = 0;
    int i, n = 0;

    fflush(NULL);
    for (i = 0; i < WORKERS; i++) {
        char fds[16], idx[16];
        pid_t pid = fork();

        if (pid < 0)
            break;
        if (pid == 0) {
            snprintf(fds, sizeof fds, "%d", fd);
            snprintf(idx, sizeof idx, "%d", i);
            execl(cfg->self, cfg->self, "--redis", cfg->redis_url, "--worker",
                  fds, t->name, idx, (char *)NULL);
            _exit(127);
        }
        pids[n++] = pid;
    }
    if (n == WORKERS)
        t0 = start_workers(sh);
    else
        __atomic_store_n(&sh->go, 1, __ATOMIC_RELEASE);
    if (t0)
        bench_sleep_ms(cfg->contended_ms);
    __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
    for (i = 0; i < n; i++) {
        int status;
        if (!t0)
            kill(pids[i], SIGTERM);
        waitpid(pids[i], &status, 0);
    }
    return t0;
}

/* ---- what the records say ------------------------------------------------------------ */

typedef struct result {
    uint64_t acquisitions;
    double seconds;
    size_t handoffs, again, early, in_flight;
    int64_t p50_ns, p99_ns, wake_p50_ns, try_p50_ns;
    uint64_t min_count, max_count;
    uint64_t violations;
} result;

static void analyse(shared *sh, int64_t t0, result *res)
{
    size_t n = sh->next < RECORDS ? (size_t)sh->next : RECORDS, k;
    int64_t *h = malloc((n ? n : 1) * sizeof(*h));
    int64_t *wake = malloc((n ? n : 1) * sizeof(*wake));
    int64_t *try_ = malloc((n ? n : 1) * sizeof(*try_));
    size_t next_of[WORKERS];
    int w;

    memset(res, 0, sizeof(*res));
    res->acquisitions = n;
    if (n > 0)
        res->seconds = (double)(sh->rec[n - 1].t_rel - t0) / 1e9;
    for (k = 1; h && wake && try_ && k < n; k++) {
        const acq_rec *prev = &sh->rec[k - 1], *next = &sh->rec[k];
        int64_t d;
        if (next->worker == prev->worker) {
            res->again++;
            continue;
        }
        d = next->t_acq - prev->t_rel;
        if (d < 0) {
            res->early++;
            d = 0;
        }
        if (next->t_send < prev->t_rel)
            res->in_flight++;
        wake[res->handoffs] = next->t_send - prev->t_rel;
        try_[res->handoffs] = next->t_acq - next->t_send;
        h[res->handoffs++] = d;
    }
    if (h && wake && try_) {
        res->p50_ns = bench_quantile(h, res->handoffs, 0.50);
        res->p99_ns = bench_quantile(h, res->handoffs, 0.99);
        res->wake_p50_ns = bench_quantile(wake, res->handoffs, 0.50);
        res->try_p50_ns = bench_quantile(try_, res->handoffs, 0.50);
    }
    free(try_);
    free(wake);
    free(h);

    /* Walking backwards, next_of[w] is w's first acquisition after k. */
    for (w = 0; w < WORKERS; w++)
        next_of[w] = SIZE_MAX;
    for (k = n; k-- > 0;) {
        const acq_rec *j = &sh->rec[k];
        for (w = 0; w < WORKERS; w++) {
            const acq_rec *a;
            if (w == j->worker || next_of[w] == SIZE_MAX)
                continue;
            a = &sh->rec[next_of[w]];
            if (a->t_busy != 0 && a->t_busy < j->t_call)
                res->violations++;
        }
        next_of[j->worker] = k;
    }

    res->min_count = UINT64_MAX;
    for (w = 0; w < WORKERS; w++) {
        if (sh->count[w] < res->min_count)
            res->min_count = sh->count[w];
        if (sh->count[w] > res->max_count)
            res->max_count = sh->count[w];
    }
}

static shared *shared_new(int *fd_out)
{
    int fd = memfd_create("dlock-bench", 0); /* inherited across exec */
    shared *sh;

    if (fd < 0)
        return NULL;
    if (ftruncate(fd, (off_t)sizeof(shared)) != 0) {
        close(fd);
        return NULL;
    }
    sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (sh == MAP_FAILED) {
        close(fd);
        return NULL;
    }
    *fd_out = fd;
    return sh;
}

static void shared_free(shared *sh, int fd)
{
    munmap(sh, sizeof(*sh));
    close(fd);
}

void bench_fig_contended(const bench_config *cfg, bench_raw *raw)
{
    static const char *const modes[] = {"threads", "processes"};
    double plain_p50[2] = {-1, -1}; /* the reentrant lock's, once measured */
    size_t i;
    int m;

    bench_heading("3. contended, redis: 4 workers on one lock, lock+unlock in a loop "
                  "(targets: hand-off p50 <= 3 RTT; FIFO locks: p50 <= 1.5x "
                  "the reentrant lock's, FIFO violations 0)",
                  "lock       mode       acq/s hand-offs early again  p50 us  p99 us"
                  " p50 RTT wake us try us  min/max per worker FIFO viol  target");
    for (i = 0; i < bench_nlock_types; i++) {
        const bench_lock_type *t = &bench_lock_types[i];
        int plain = t == bench_lock_type_find("reentrant");

        if (t->shared) {
            bench_row("%-10s (holders share it: no hand-off to measure)", t->name);
            continue;
        }
        for (m = 0; m < 2; m++) {
            int64_t rtt = bench_raw_rtt_ns(raw, 500), t0;
            result res;
            shared *sh;
            bench_json j;
            const char *verdict = "n/a";
            int fd, w, failed = 0;
            double p50_rtt;

            sh = shared_new(&fd);
            if (!sh) {
                bench_row("%-10s %-9s cannot map shared memory", t->name, modes[m]);
                continue;
            }
            t0 = m == 0 ? run_threads(cfg, sh, t) : run_processes(cfg, sh, fd, t);
            analyse(sh, t0, &res);
            p50_rtt = rtt > 0 ? (double)res.p50_ns / (double)rtt : 0;
            if (plain && t0)
                plain_p50[m] = (double)res.p50_ns;
            if (!t->fifo) {
                verdict = bench_verdict(1, p50_rtt <= HANDOFF_RTT_TARGET);
            } else {
                verdict = bench_verdict(plain_p50[m] >= 0,
                                        res.violations == 0 &&
                                        (double)res.p50_ns <=
                                            FAIR_HANDOFF_FACTOR * plain_p50[m]);
            }
            for (w = 0; w < WORKERS; w++)
                failed |= sh->rc[w] != 0;
            if (!t0)
                verdict = "not run";
            bench_row("%-10s %-9s %6.0f %9zu %5zu %5zu %7.0f %7.0f %7.2f %7.0f %6.0f  %8llu/%-8llu %9llu  %s",
                      t->name, modes[m],
                      res.seconds > 0 ? (double)res.acquisitions / res.seconds : 0,
                      res.handoffs, res.early, res.again, (double)res.p50_ns / 1e3,
                      (double)res.p99_ns / 1e3, p50_rtt, (double)res.wake_p50_ns / 1e3,
                      (double)res.try_p50_ns / 1e3,
                      (unsigned long long)res.min_count,
                      (unsigned long long)res.max_count,
                      (unsigned long long)res.violations, verdict);
            for (w = 0; w < WORKERS; w++)
                if (sh->rc[w] != 0)
                    bench_row("   worker %d failed: %s", w, sh->err[w]);

            bench_json_begin(&j, "contended");
            bench_json_str(&j, "lock", t->name);
            bench_json_str(&j, "backend", "redis");
            bench_json_str(&j, "mode", modes[m]);
            bench_json_int(&j, "workers", WORKERS);
            bench_json_num(&j, "acquisitions_per_s",
                           res.seconds > 0 ? (double)res.acquisitions / res.seconds : 0);
            bench_json_int(&j, "acquisitions", (long long)res.acquisitions);
            bench_json_int(&j, "handoffs", (long long)res.handoffs);
            bench_json_int(&j, "reacquired_by_same_worker", (long long)res.again);
            bench_json_int(&j, "handoffs_reply_before_unlock_reply", (long long)res.early);
            bench_json_num(&j, "handoff_p50_us", (double)res.p50_ns / 1e3);
            bench_json_num(&j, "handoff_p99_us", (double)res.p99_ns / 1e3);
            bench_json_num(&j, "handoff_wake_p50_us", (double)res.wake_p50_ns / 1e3);
            bench_json_num(&j, "handoff_try_p50_us", (double)res.try_p50_ns / 1e3);
            bench_json_int(&j, "handoffs_attempt_in_flight", (long long)res.in_flight);
            bench_json_num(&j, "rtt_us", (double)rtt / 1e3);
            bench_json_num(&j, "handoff_p50_rtt", p50_rtt);
            bench_json_int(&j, "per_worker_min", (long long)res.min_count);
            bench_json_int(&j, "per_worker_max", (long long)res.max_count);
            bench_json_int(&j, "fifo_violations", (long long)res.violations);
            bench_json_int(&j, "fifo_promised", t->fifo);
            bench_json_str(&j, "target", verdict);
            bench_json_int(&j, "failed_workers", failed);
            bench_json_end(&j);
            shared_free(sh, fd);
        }
    }
}
