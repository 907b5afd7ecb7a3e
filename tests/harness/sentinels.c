/*
 * Test harness: a Sentinel-managed Redis on loopback (see sentinels.h).
 */
#include "sentinels.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
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

/* ROLE of m as a master with exactly want online replicas: its offset
 * into *offset and the least offset its replicas acknowledged into
 * *acked; -1 when it is not that. */
static int master_offsets(dlock_test_redis *m, int want, long long *offset,
                          long long *acked)
{
    char out[1024], *line[2 + 3 * DLOCK_TEST_NDATA], *p = out;
    const char *role[] = {"ROLE", NULL};
    int n = 0, i;

    if (dlock_test_redis_command(m, out, sizeof out, role) != 0 ||
        strncmp(out, "master\n", 7) != 0)
        return -1;
    while (n < 2 + 3 * DLOCK_TEST_NDATA && (line[n] = strsep(&p, "\n")) != NULL)
        n++;
    if (p || n != 2 + 3 * want)
        return -1;
    *offset = strtoll(line[1], NULL, 10);
    *acked = *offset;
    for (i = 0; i < want; i++) {
        long long a = strtoll(line[4 + 3 * i], NULL, 10);
        if (a < *acked)
            *acked = a;
    }
    return 0;
}

int dlock_test_master_in_step(dlock_test_redis *m, int want)
{
    long long offset, acked, now, ack_now;
    int i;

    if (master_offsets(m, want, &offset, &acked) != 0)
        return -1;
    /* Writes going on (a nemesis's workers) keep the offsets moving: the
     * replicas are in step once they acknowledged what the master had
     * written when asked, within a second. */
    for (i = 0; acked < offset && i < 20; i++) {
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
        if (master_offsets(m, want, &now, &ack_now) != 0)
            return -1;
        acked = ack_now;
    }
    return acked >= offset ? 0 : -1;
}

/* The master every sentinel names, when none has a failover of it in
 * progress or holds it down (flags exactly "master") and each knows its
 * replicas and the other sentinels; else -1. */
static int settled_master(dlock_test_sentinels *s)
{
    char out[4096];
    const char *argv[] = {"SENTINEL", "MASTER", s->name, NULL};
    int m = dlock_test_sentinels_master(s), i;

    if (m < 0)
        return -1;
    for (i = 0; i < DLOCK_TEST_NSENTINELS; i++) {
        const char *flags;
        if (dlock_test_redis_command(s->sentinel[i], out, sizeof out, argv) != 0 ||
            field_of(out, "port") != dlock_test_redis_port(s->data[m]) ||
            !(flags = strstr(out, "\nflags\n")) ||
            strncmp(flags + 7, "master\n", 7) != 0 ||
            field_of(out, "num-slaves") < DLOCK_TEST_NDATA - 1 ||
            field_of(out, "num-other-sentinels") < DLOCK_TEST_NSENTINELS - 1)
            return -1;
    }
    return m;
}

/* Ready for the next failover: the sentinels have settled on a master
 * (settled_master), which answers ROLE "master" with every other data node
 * online as its replica and in step at its offset (a replica still in its
 * first sync could be promoted without writes the others acknowledged). */
static int ready(dlock_test_sentinels *s)
{
    int m = settled_master(s);
    return m >= 0 && dlock_test_master_in_step(s->data[m], DLOCK_TEST_NDATA - 1) == 0;
}

/* One step of healing: a data node or sentinel that does not answer is
 * started again (on its port, data lost); once the sentinels have settled
 * on a master, a data node that is neither it nor its replica is made one (the
 * sentinels would take their INFO period, 10 s, and more). */
static void heal_step(dlock_test_sentinels *s)
{
    char out[512], port[16], want[64];
    const char *ping[] = {"PING", NULL}, *role[] = {"ROLE", NULL};
    int m, i;

    for (i = 0; i < DLOCK_TEST_NSENTINELS; i++)
        if (dlock_test_redis_command(s->sentinel[i], out, sizeof out, ping) != 0)
            dlock_test_redis_restart(s->sentinel[i]);
    for (i = 0; i < DLOCK_TEST_NDATA; i++)
        if (dlock_test_redis_command(s->data[i], out, sizeof out, ping) != 0)
            dlock_test_redis_restart(s->data[i]);
    m = settled_master(s);
    if (m < 0 || dlock_test_redis_command(s->data[m], out, sizeof out, role) != 0 ||
        strncmp(out, "master\n", 7) != 0)
        return;
    snprintf(port, sizeof port, "%d", dlock_test_redis_port(s->data[m]));
    snprintf(want, sizeof want, "slave\n127.0.0.1\n%s\n", port);
    for (i = 0; i < DLOCK_TEST_NDATA; i++) {
        const char *replicaof[] = {"REPLICAOF", "127.0.0.1", port, NULL};
        if (i == m || dlock_test_redis_command(s->data[i], out, sizeof out, role) != 0 ||
            strncmp(out, want, strlen(want)) == 0)
            continue;
        dlock_test_redis_command(s->data[i], out, sizeof out, replicaof);
    }
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

int dlock_test_sentinels_heal(dlock_test_sentinels *s, int timeout_ms)
{
    long long deadline = dlock_test_now_ms() + timeout_ms;
    while (dlock_test_now_ms() < deadline) {
        if (ready(s))
            return 0;
        heal_step(s);
        dlock_test_sleep_ms(100);
    }
    return -1;
}

/* What wait_ready/heal found at their deadline, on stderr: each data
 * node's ROLE and each sentinel's view of the master. */
void dlock_test_sentinels_describe(dlock_test_sentinels *s)
{
    char out[4096], *c;
    const char *role[] = {"ROLE", NULL};
    const char *master[] = {"SENTINEL", "MASTER", s->name, NULL};
    int i;

    for (i = 0; i < DLOCK_TEST_NDATA + DLOCK_TEST_NSENTINELS; i++) {
        int data = i < DLOCK_TEST_NDATA;
        dlock_test_redis *r = data ? s->data[i] : s->sentinel[i - DLOCK_TEST_NDATA];
        if (dlock_test_redis_command(r, out, sizeof out, data ? role : master) != 0)
            snprintf(out, sizeof out, "(no answer)");
        for (c = out; *c; c++)
            if (*c == '\n')
                *c = ' ';
        fprintf(stderr, "  %s %d (port %d): %.600s\n", data ? "data" : "sentinel",
                data ? i : i - DLOCK_TEST_NDATA, dlock_test_redis_port(r), out);
    }
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
        dlock_test_sentinels_describe(s);
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
