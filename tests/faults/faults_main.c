/*
 * dlock_faults (`make faults`): every fault case, the fast ones that
 * `make check` runs too and the slow ones. Last line "N passed, N failed";
 * non-zero exit on any failure. An alarm turns a hang into a failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "faults.h"

int dlock_test_total, dlock_test_failed;

#define LIMIT_S 900

static void on_alarm(int sig)
{
    static const char msg[] = "\nTIMEOUT: the fault tests hung\n";
    ssize_t r;
    (void)sig;
    r = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)r;
    /* Helpers die with us (PR_SET_PDEATHSIG), servers too. */
    _exit(3);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm(LIMIT_S);
    setvbuf(stdout, NULL, _IOLBF, 0);
    dlock_test_faults();
    dlock_test_faults_slow();
    dlock_test_faults_sentinel();
    dlock_test_faults_sync();
    fault_child_kill_all();
    printf("%d passed, %d failed\n", dlock_test_total - dlock_test_failed,
           dlock_test_failed);
    return dlock_test_failed == 0 ? 0 : 1;
}
