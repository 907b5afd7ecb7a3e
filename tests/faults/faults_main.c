/*
 * dlock_faults (`make faults`): every fault case, the fast ones that
 * `make check` runs too and the slow ones. Last line "N passed, N failed";
 * non-zero exit on any failure. An alarm turns a hang into a failure.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "faults.h"
#include "../harness/runner.h"

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

/* DLOCK_FAULTS_ONLY=part[,part] runs only the named parts: fast, slow,
 * sentinel, sync, redlock, mux. Unset: all of them. */
static int wanted(const char *part)
{
    return dlock_test_wanted("DLOCK_FAULTS_ONLY", part);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGALRM, on_alarm);
    alarm(LIMIT_S);
    setvbuf(stdout, NULL, _IOLBF, 0);
    /* DLOCK_REDLOCK_STRESS=1: the Redlock stress run alone (make
     * stress-redlock). */
    if (getenv("DLOCK_REDLOCK_STRESS")) {
        int bad = dlock_test_stress_redlock();
        return bad == 0 ? 0 : 1;
    }
    if (wanted("fast"))
        dlock_test_faults();
    if (wanted("slow"))
        dlock_test_faults_slow();
    if (wanted("sentinel"))
        dlock_test_faults_sentinel();
    if (wanted("sync"))
        dlock_test_faults_sync();
    if (wanted("redlock"))
        dlock_test_faults_redlock();
    if (wanted("mux"))
        dlock_test_faults_mux();
    fault_child_kill_all();
    printf("%d passed, %d failed\n", dlock_test_total - dlock_test_failed,
           dlock_test_failed);
    return dlock_test_failed == 0 ? 0 : 1;
}
