/*
 * make stress-differential: the long differential run of the mock store
 * against a throwaway redis-server (tests/backends/mock/differential_test.c).
 *
 *   stress_differential [commands [scripts [seed]]]
 *
 * Defaults: 100 000 commands, 10 000 scripts, a seed from the time (printed,
 * so that a failing run can be replayed). Exit status 0 only when every
 * reply pair matched.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../differential_test.h"

/* The differential engine lives in the cmocka suite's file. */
int dlock_test_total, dlock_test_failed;

int main(int argc, char **argv)
{
    unsigned long ncmd = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
    unsigned long nscr = argc > 2 ? strtoul(argv[2], NULL, 10) : 10000;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : (uint64_t)time(NULL);
    dlock_diff *d = NULL;
    dlock_diff_stats st;
    int rc;

    signal(SIGPIPE, SIG_IGN);
    if (dlock_diff_open(&d, NULL, seed, stderr) != 0) {
        fprintf(stderr, "stress-differential: cannot start (redis-server?)\n");
        return 2;
    }
    rc = dlock_diff_run(d, ncmd, nscr, &st);
    dlock_diff_close(d);
    printf("stress-differential: seed %llu: %lu commands, %lu scripts, "
           "%lu expiries compared, %lu mismatches%s\n",
           (unsigned long long)seed, st.commands, st.scripts, st.expiries,
           st.mismatches, rc < 0 ? " (lost the server)" : "");
    return rc == 0 ? 0 : 1;
}
