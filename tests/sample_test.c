/*
 * samples/custom_lock.c on Redis. The sample is a lock type of one's own,
 * written from the public headers only (make install-check builds it from
 * the installed files; make demo runs it on the mock). Here it runs as a
 * user runs it, against the conformance suite's redis-server:
 * `custom_lock redis://...`, built by make check into $(BUILD)/samples
 * (DLOCK_SAMPLES_DIR; default build/samples). Its exit status and its last
 * line say whether every step answered as expected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness/runner.h"

int dlock_test_custom_lock_sample(const char *url)
{
    const char *dir = getenv("DLOCK_SAMPLES_DIR");
    char cmd[1024], line[1024] = "", last[1024] = "";
    int status, ok;
    FILE *p;

    if (!dir || !*dir)
        dir = "build/samples";
    snprintf(cmd, sizeof(cmd), "'%s/custom_lock' '%s' 2>&1", dir, url);
    printf("[ RUN      ] samples/custom_lock on %s\n", url);
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
         strcmp(last, "custom_lock: ok\n") == 0;
    if (ok)
        printf("[       OK ] samples/custom_lock on %s\n", url);
    else
        printf("[  FAILED  ] samples/custom_lock (%s): exit status %d; built? (make "
               "%s/custom_lock)\n", cmd, status, dir);
    return dlock_test_count(1, !ok);
}
