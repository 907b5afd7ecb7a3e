/*
 * The test program's parts spread over worker processes (harness/jobs.h).
 */
#include "jobs.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner.h"

/* Shared with the workers: the next part to take, and one report each. */
typedef struct shared {
    size_t next;
    dlock_test_report reports[];
} shared;

static dlock_test_report solo;
static dlock_test_report *mine = &solo;

dlock_test_report *dlock_test_jobs_mine(void)
{
    return mine;
}

void dlock_test_jobs_publish(void)
{
    mine->total = dlock_test_total;
    mine->failed = dlock_test_failed;
    mine->published = 1;
}

/* Adds r's counters and timings to sum. */
static void add_report(dlock_test_report *sum, const dlock_test_report *r)
{
    int i;

    sum->total += r->total;
    sum->failed += r->failed;
    for (i = 0; i < r->ntimed && sum->ntimed < DLOCK_TEST_TIMED_MAX; i++)
        sum->timed[sum->ntimed++] = r->timed[i];
}

/* Copies what a worker wrote to fd to stdout. */
static void copy_out(int fd, int worker)
{
    char buf[8192];
    ssize_t n;

    printf("---- worker %d ----\n", worker);
    fflush(stdout);
    if (lseek(fd, 0, SEEK_SET) == 0)
        while ((n = read(fd, buf, sizeof buf)) > 0)
            if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n)
                break;
    fflush(stdout);
}

static void worker(shared *sh, size_t nparts, void (*run_part)(size_t),
                   void (*finish)(void))
{
    size_t i;

    while ((i = __atomic_fetch_add(&sh->next, 1, __ATOMIC_SEQ_CST)) < nparts)
        run_part(i);
    finish();
    dlock_test_jobs_publish();
    fflush(NULL);
}

int dlock_test_jobs_run(size_t nparts, int jobs, void (*run_part)(size_t i),
                        void (*finish)(void), dlock_test_report *sum)
{
    size_t size;
    shared *sh;
    pid_t *pids;
    int *fds, k, left, status;
    unsigned left_s;
    char path[] = "/tmp/dlock-test-worker-XXXXXX";

    memset(sum, 0, sizeof *sum);
    if (jobs <= 1) {
        size_t i;
        for (i = 0; i < nparts; i++)
            run_part(i);
        finish();
        dlock_test_jobs_publish();
        add_report(sum, mine);
        return 0;
    }
    size = sizeof(shared) + (size_t)jobs * sizeof(dlock_test_report);
    sh = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pids = calloc((size_t)jobs, sizeof *pids);
    fds = calloc((size_t)jobs, sizeof *fds);
    if (sh == MAP_FAILED || !pids || !fds) {
        fprintf(stderr, "test workers: out of memory\n");
        return -1;
    }
    memset(sh, 0, size);
    /* An alarm is not inherited: each worker keeps what is left of the
     * program's, and the parent waits a little longer (a worker's own
     * alarm names its phase). */
    left_s = alarm(0);
    printf("%zu parts on %d worker processes (DLOCK_TEST_JOBS); each worker's "
           "output follows when it ends\n", nparts, jobs);
    fflush(NULL);
    for (k = 0; k < jobs; k++) {
        memcpy(path + sizeof path - 7, "XXXXXX", 6);
        fds[k] = mkstemp(path);
        if (fds[k] < 0) {
            fprintf(stderr, "test workers: mkstemp: %s\n", strerror(errno));
            return -1;
        }
        unlink(path);
        pids[k] = fork();
        if (pids[k] < 0) {
            fprintf(stderr, "test workers: fork: %s\n", strerror(errno));
            return -1;
        }
        if (pids[k] == 0) {
            alarm(left_s);
            dup2(fds[k], STDOUT_FILENO);
            dup2(fds[k], STDERR_FILENO);
            mine = &sh->reports[k];
            worker(sh, nparts, run_part, finish);
            _exit(dlock_test_failed == 0 ? 0 : 1);
        }
    }
    if (left_s)
        alarm(left_s + 30);
    for (left = jobs; left > 0; left--) {
        pid_t pid = wait(&status);
        if (pid < 0)
            break;
        for (k = 0; k < jobs && pids[k] != pid; k++)
            ;
        if (k == jobs)
            continue;
        copy_out(fds[k], k + 1);
        close(fds[k]);
        if (!sh->reports[k].published ||
            (sh->reports[k].failed == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))) {
            printf("worker %d ended (%s %d) during: %s\n", k + 1,
                   WIFSIGNALED(status) ? "signal" : "status",
                   WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status),
                   sh->reports[k].phase);
            sh->reports[k].total++;
            sh->reports[k].failed++;
        }
        printf("worker %d: %d passed, %d failed\n", k + 1,
               sh->reports[k].total - sh->reports[k].failed, sh->reports[k].failed);
        add_report(sum, &sh->reports[k]);
    }
    fflush(NULL);
    munmap(sh, size);
    free(pids);
    free(fds);
    return 0;
}
