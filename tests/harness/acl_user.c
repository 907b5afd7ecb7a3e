/*
 * The README's least-privilege ACL user, applied to a test server (see
 * acl_user.h).
 */
#include "acl_user.h"

#include <stdio.h>
#include <string.h>

#define MAX_ARGS 128

int dlock_test_acl_line(char *buf, size_t len)
{
    FILE *f = fopen(DLOCK_TEST_ACL_FILE, "r");
    size_t n;

    if (!f) {
        fprintf(stderr, "cannot open %s (run from the repository's root)\n",
                DLOCK_TEST_ACL_FILE);
        return -1;
    }
    if (!fgets(buf, (int)len, f)) {
        fclose(f);
        fprintf(stderr, "%s is empty\n", DLOCK_TEST_ACL_FILE);
        return -1;
    }
    fclose(f);
    n = strcspn(buf, "\r\n");
    buf[n] = '\0';
    return 0;
}

int dlock_test_acl_apply(dlock_test_redis *r, char *url, size_t len)
{
    char line[4096], reply[256];
    const char *argv[MAX_ARGS + 1], *user = NULL, *password = NULL;
    char *tok, *save = NULL;
    int argc = 0;

    if (dlock_test_acl_line(line, sizeof line) != 0)
        return -1;
    for (tok = strtok_r(line, " ", &save); tok && argc < MAX_ARGS;
         tok = strtok_r(NULL, " ", &save)) {
        if (argc == 2)
            user = tok;
        else if (tok[0] == '>' && !password)
            password = tok + 1;
        argv[argc++] = tok;
    }
    argv[argc] = NULL;
    if (argc < 3 || tok || strcmp(argv[0], "ACL") != 0 ||
        strcmp(argv[1], "SETUSER") != 0 || !password) {
        fprintf(stderr, "%s: not one ACL SETUSER line with a >password\n",
                DLOCK_TEST_ACL_FILE);
        return -1;
    }
    if (dlock_test_redis_command(r, reply, sizeof reply, argv) != 0 ||
        strcmp(reply, "OK") != 0) {
        fprintf(stderr, "ACL SETUSER refused: %s\n", reply);
        return -1;
    }
    snprintf(url, len, "redis://%s:%s@127.0.0.1:%d", user, password,
             dlock_test_redis_port(r));
    return 0;
}
