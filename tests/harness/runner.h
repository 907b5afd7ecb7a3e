#ifndef DLOCK_TEST_RUNNER_H
#define DLOCK_TEST_RUNNER_H
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
extern int dlock_test_total, dlock_test_failed;
#define DLOCK_RUN_GROUP(name, tests, setup, teardown) \
    (dlock_test_total += (int)(sizeof(tests) / sizeof((tests)[0])), \
     dlock_test_failed += cmocka_run_group_tests_name(name, tests, setup, teardown))
#endif
