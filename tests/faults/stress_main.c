/*
 * dlock_stress (`make stress-processes`): item 4 of issue 8, stress across
 * processes. Arguments: [--cluster] [procs threads iters], default 4 4 2000;
 * --cluster: on a Redis Cluster of 3 masters + 3 replicas. Prints one
 * line per lock type (acquisitions, violations, errors); exits non-zero on
 * any violation or error.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"

#define LIMIT_S 3600

static void on_alarm(int sig)
{
    static const char msg[] = "\nTIMEOUT: the stress run hung\n";
    ssize_t r;
    (void)sig;
    r = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)r;
    _exit(3);
}

int main(int argc, char **argv)
{
    int cluster = argc > 1 && strcmp(argv[1], "--cluster") == 0;
    int procs, threads, iters, bad;

    argc -= cluster;
    argv += cluster;
    procs = argc > 1 ? atoi(argv[1]) : 4;
    threads = argc > 2 ? atoi(argv[2]) : 4;
    iters = argc > 3 ? atoi(argv[3]) : 2000;

    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm(LIMIT_S);
    setvbuf(stdout, NULL, _IOLBF, 0);
    bad = fault_stress_run_on(cluster, procs, threads, iters);
    if (bad < 0) {
        fprintf(stderr, "stress: could not run\n");
        return 2;
    }
    printf("stress: %s (%d violations + errors)\n", bad ? "FAILED" : "passed",
           bad);
    return bad ? 1 : 0;
}
