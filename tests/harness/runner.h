#ifndef DLOCK_TEST_RUNNER_H
#define DLOCK_TEST_RUNNER_H
#include <fnmatch.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
extern int dlock_test_total, dlock_test_failed;
/* Adds a group's counts to the run's; returns the group's own failures (not
 * the run's so far), so that suites may sum what their groups return. */
static inline int dlock_test_count(int ran, int failed)
{
    dlock_test_total += ran;
    dlock_test_failed += failed;
    return failed;
}
/* DLOCK_TEST_CASE=pattern (make check CASE=pattern) runs only the cases
 * whose name matches the glob pattern (* and ?: cmocka's own filter, which
 * main.c sets, matches the same way), in every part and row that runs; a
 * group with none of them is not started (no setup, no server). */
static inline int dlock_test_case_wanted(const char *name)
{
    const char *pattern = getenv("DLOCK_TEST_CASE");

    return !pattern || !*pattern || fnmatch(pattern, name, 0) == 0;
}
/* How many of the n cases the run wants. */
static inline int dlock_test_cases_wanted(const struct CMUnitTest *tests, size_t n)
{
    int k = 0;
    size_t i;

    for (i = 0; i < n; i++)
        k += dlock_test_case_wanted(tests[i].name);
    return k;
}
#define DLOCK_RUN_GROUP(name, tests, setup, teardown)                                   \
    (dlock_test_cases_wanted(tests, sizeof(tests) / sizeof((tests)[0])) == 0            \
         ? 0                                                                            \
         : dlock_test_count(dlock_test_cases_wanted(tests, sizeof(tests) / sizeof((tests)[0])), \
                            cmocka_run_group_tests_name(name, tests, setup, teardown)))
/* Whether the comma-separated list in the environment variable env names
 * part (unset or empty: every part is wanted). For DLOCK_TEST_ONLY and
 * DLOCK_FAULTS_ONLY, which run a chosen part of a test program. */
static inline int dlock_test_wanted(const char *env, const char *part)
{
    const char *only = getenv(env), *p;
    size_t n = strlen(part);

    if (!only || !*only)
        return 1;
    for (p = only; *p; ) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, part, n) == 0)
            return 1;
        p += len;
        if (*p == ',')
            p++;
    }
    return 0;
}
#endif
