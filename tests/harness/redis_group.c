/* One cmocka group on one throwaway redis-server (redis_group.h). */
#include "redis_group.h"

#include <stdio.h>

#include "runner.h"

int dlock_test_redis_run_group(const char *name, const struct CMUnitTest *tests, size_t n,
                               dlock_test_redis **srv)
{
    int failed, wanted = dlock_test_cases_wanted(tests, n);

    if (wanted == 0)
        return 0;
    if (dlock_test_redis_start(srv, NULL) != 0) {
        fprintf(stderr, "%s: the group's redis-server did not start\n", name);
        *srv = NULL;
        return dlock_test_count((int)n, (int)n);
    }
    failed = dlock_test_count(wanted, _cmocka_run_group_tests(name, tests, n, NULL, NULL));
    dlock_test_redis_stop(*srv);
    *srv = NULL;
    return failed;
}
