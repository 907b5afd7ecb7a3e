/*
 * Test harness: a Sentinel-managed Redis on loopback (see sentinels.h).
 */
#include "sentinels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The integer after the line `field` in a reply of field/value lines. */
static long field_of(const char *reply, const char *field)
{
    size_t n = strlen(field);
    const char *p = reply;
    while ((p = strstr(p, field)) != NULL) {
        if ((p == reply || p[-1] == '\n') && p[n] == '\n')
            return strtol(p + n + 1, NULL, 10);
        p += n;
    }
    return -1;
}

int dlock_test_sentinels_master(dlock_test_sentinels *s)
{
    char out[256];
    int i, j;
    for (i = 0; i < DLOCK_TEST_NSENTINELS; i++) {
        const char *argv[] = {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", s->name, NULL};
        const char *nl;
        if (!s->sentinel[i] ||
            dlock_test_redis_command(s->sentinel[i], out, sizeof out, argv) != 0 ||
            !(nl = strchr(out, '\n')))
            continue;
        for (j = 0; j < DLOCK_TEST_NDATA; j++)
            if (dlock_test_redis_port(s->data[j]) == atoi(nl + 1))
                return j;
    }
    return -1;
}

static int ready(dlock_test_sentinels *s)
{
    char out[4096];
    const char *argv[] = {"SENTINEL", "MASTER", s->name, NULL};
    const char *role[] = {"ROLE", NULL};
    int m = dlock_test_sentinels_master(s), i, agree = 0;

    if (m < 0 || dlock_test_redis_command(s->data[m], out, sizeof out, role) != 0 ||
        strncmp(out, "master", 6) != 0)
        return 0;
    for (i = 0; i < DLOCK_TEST_NSENTINELS; i++) {
        if (dlock_test_redis_command(s->sentinel[i], out, sizeof out, argv) != 0 ||
            field_of(out, "port") != dlock_test_redis_port(s->data[m]) ||
            field_of(out, "num-slaves") < DLOCK_TEST_NDATA - 1 ||
            field_of(out, "num-other-sentinels") < DLOCK_TEST_NSENTINELS - 1)
            return 0;
        agree++;
    }
    for (i = 0; i < DLOCK_TEST_NDATA; i++) {
        char port[16];
        if (i == m)
            continue;
        if (dlock_test_redis_command(s->data[i], out, sizeof out, role) != 0)
            return 0;
        snprintf(port, sizeof port, "\n%d\nconnected\n", dlock_test_redis_port(s->data[m]));
        if (strncmp(out, "slave", 5) != 0 || !strstr(out, port))
            return 0;
    }
    return agree == DLOCK_TEST_NSENTINELS;
}

int dlock_test_sentinels_wait_ready(dlock_test_sentinels *s, int timeout_ms)
{
    long long deadline = dlock_test_now_ms() + timeout_ms;
    while (dlock_test_now_ms() < deadline) {
        if (ready(s))
            return 0;
        dlock_test_sleep_ms(100);
    }
    return -1;
}

int dlock_test_sentinels_start(dlock_test_sentinels *s, const char *name)
{
    char port[16];
    size_t n;
    int i;

    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    if (dlock_test_redis_start(&s->data[0], NULL) != 0)
        goto fail;
    snprintf(port, sizeof port, "%d", dlock_test_redis_port(s->data[0]));
    for (i = 1; i < DLOCK_TEST_NDATA; i++) {
        const char *args[] = {"--replicaof", "127.0.0.1", port, "--repl-diskless-sync",
                              "yes", "--repl-diskless-sync-delay", "0", NULL};
        if (dlock_test_redis_start(&s->data[i], args) != 0)
            goto fail;
    }
    n = (size_t)snprintf(s->url, sizeof s->url, "redis-sentinel://");
    for (i = 0; i < DLOCK_TEST_NSENTINELS; i++) {
        if (dlock_test_sentinel_start(&s->sentinel[i], name,
                                      dlock_test_redis_port(s->data[0]), 2) != 0)
            goto fail;
        n += (size_t)snprintf(s->url + n, sizeof s->url - n, "%s127.0.0.1:%d",
                              i ? "," : "", dlock_test_redis_port(s->sentinel[i]));
    }
    snprintf(s->url + n, sizeof s->url - n, "?sentinelMasterId=%s", name);
    if (dlock_test_sentinels_wait_ready(s, 20000) != 0) {
        fprintf(stderr, "sentinel harness: the set did not get ready in 20 s\n");
        goto fail;
    }
    return 0;
fail:
    dlock_test_sentinels_stop(s);
    return -1;
}

void dlock_test_sentinels_stop(dlock_test_sentinels *s)
{
    int i;
    for (i = 0; i < DLOCK_TEST_NSENTINELS; i++) {
        dlock_test_redis_stop(s->sentinel[i]);
        s->sentinel[i] = NULL;
    }
    for (i = 0; i < DLOCK_TEST_NDATA; i++) {
        dlock_test_redis_stop(s->data[i]);
        s->data[i] = NULL;
    }
}
