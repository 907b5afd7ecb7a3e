#ifndef DLOCK_TEST_RUNNER_H
#define DLOCK_TEST_RUNNER_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
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
#define DLOCK_RUN_GROUP(name, tests, setup, teardown)                         \
    dlock_test_count((int)(sizeof(tests) / sizeof((tests)[0])),               \
                     cmocka_run_group_tests_name(name, tests, setup, teardown))
#endif
