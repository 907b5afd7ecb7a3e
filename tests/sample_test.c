/*
 * Samples run as a user runs them, against a test's server: e.g.
 * samples/custom_lock.c (a lock type of one's own, written from the public
 * headers only; make install-check builds it from the installed files,
 * make demo runs it on the mock) as `custom_lock redis://...` against the
 * conformance suite's redis-server, samples/cluster_lock.c against the
 * Cluster tests' cluster. make check builds them into $(BUILD)/samples
 * (DLOCK_SAMPLES_DIR; default build/samples). The exit status and the last
 * line ("<sample>: ok") say whether every step answered as expected.
 * samples/custom_lock runs as a group of the redis row (tests/suites.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness/fixture.h"
#include "harness/runner.h"

int dlock_test_sample(const char *sample, const char *url)
{
    char want[128];
    const char *dir = getenv("DLOCK_SAMPLES_DIR");
    char cmd[1024], line[1024] = "", last[1024] = "";
    int status, ok;
    FILE *p;

    if (!dir || !*dir)
        dir = "build/samples";
    snprintf(cmd, sizeof(cmd), "'%s/%s' '%s' 2>&1", dir, sample, url);
    snprintf(want, sizeof(want), "%s: ok\n", sample);
    printf("[ RUN      ] samples/%s on %s\n", sample, url);
    p = popen(cmd, "r");
    if (!p) {
        printf("[  FAILED  ] cannot run %s\n", cmd);
        return dlock_test_count(1, 1);
    }
    while (fgets(line, sizeof(line), p)) {
        printf("  | %s", line);
        if (line[0] != '\n')
            memcpy(last, line, sizeof(last));
    }
    status = pclose(p);
    ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         strcmp(last, want) == 0;
    if (ok)
        printf("[       OK ] samples/%s on %s\n", sample, url);
    else
        printf("[  FAILED  ] samples/%s (%s): exit status %d; built? (make "
               "%s/%s)\n", sample, cmd, status, dir, sample);
    return dlock_test_count(1, !ok);
}

/* samples/custom_lock on the row's server (dlock_fx_redis_url, which main
 * has set), as a group of tests/suites.h. */
int dlock_test_sample_custom_lock(const char *backend);
int dlock_test_sample_custom_lock(const char *backend)
{
    (void)backend;
    return dlock_test_sample("custom_lock", dlock_fx_redis_url());
}
