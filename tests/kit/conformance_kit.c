/*
 * The conformance kit (api/dlock/conformance.h): the test program's own
 * reentrant cases and fixture (tests/conformance/reentrant_cases.c,
 * tests/harness/fixture.c, asserts.c), packaged as libdlock_conformance.a
 * with the few things tests/main.c otherwise provides. One source for the
 * cases: the kit runs exactly what `make check` runs for the built-in types.
 */
#include "dlock/conformance.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "../harness/fixture.h"
#include "../harness/runner.h"

int dlock_test_total, dlock_test_failed;

static char phase[256] = "starting";

void dlock_test_set_phase(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(phase, sizeof(phase), fmt, ap);
    va_end(ap);
}

void dlock_test_fatal(const char *msg)
{
    /* A helper thread stuck inside the library: the process cannot go on
     * safely (tests/harness/fixture.c, dlock_fx_join). */
    fprintf(stderr, "\ndlock conformance kit: FATAL during %s: %s\n", phase, msg);
    fflush(NULL);
    _exit(2);
}

int dlock_conformance_run(const dlock_conformance_type *type,
                          const char *redis_url_or_null)
{
    dlock_fx_lock_type t;
    int failed;

    if (type == NULL || type->make == NULL)
        return DLOCK_EINVAL;
    t.name = type->name != NULL ? type->name : "custom";
    t.make = type->make;
    failed = dlock_test_conformance_type(&t, "mock", NULL);
    if (redis_url_or_null != NULL) {
        dlock_fx_set_redis_url(redis_url_or_null);
        failed += dlock_test_conformance_type(&t, "redis", NULL);
        dlock_fx_set_redis_url(NULL);
    }
    return failed;
}
