/*
 * dlock — a client's description of itself (api/dlock/client.h:
 * describe_owner, dlock_client_describe, dlock_client_owner_info): who a
 * holder's owner id stands for, for operators.
 *
 * One key per client, not per lock: the hash "dlock_owner:{<uuid>}" with
 * host, pid, program and start time, expiring after the watchdog timeout
 * and rewritten by the watchdog every third of it (watchdog.c), so it goes
 * within that time after the client does.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "objects/runtime/client.h"
#include "objects/types/names.h"
#include "scripts.h"

/* program_invocation_short_name: glibc's, from <errno.h> with _GNU_SOURCE. */

static void key_of(char *buf, size_t len, const char *uuid, size_t n)
{
    snprintf(buf, len, DLOCK__KEY_OWNER "{%.*s}", (int)n, uuid);
}

static int64_t unix_ms(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

int dlock_client_describe(dlock_client *c)
{
    char key[64], host[256] = "", pid[32], started[32], ttl[32];
    const char *argv[6];
    dlock_reply *r = NULL;
    int rc;

    if (!c)
        return DLOCK_EINVAL;
    if ((rc = dlock__client_check(c)) != 0)
        return rc;
    if (!c->opts.describe_owner)
        return 0; /* the option says no: nothing published */
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "?");
    key_of(key, sizeof key, c->id, strlen(c->id));
    snprintf(pid, sizeof pid, "%ld", (long)c->pid);
    snprintf(started, sizeof started, "%" PRId64, c->started_ms);
    snprintf(ttl, sizeof ttl, "%" PRId64, c->opts.watchdog_timeout_ms);
    argv[0] = key;
    argv[1] = host;
    argv[2] = pid;
    argv[3] = program_invocation_short_name ? program_invocation_short_name : "?";
    argv[4] = started;
    argv[5] = ttl;
    rc = dlock_backend_eval(c->backend, &r, &dlock__script_owner_describe, 1, 5, argv, NULL,
                            NULL, 0);
    if (rc == DLOCK_ESYNC)
        rc = 0;
    if (rc == 0 && r->type != DLOCK_REPLY_INTEGER)
        rc = DLOCK_EPROTO;
    dlock_reply_free(r);
    return rc;
}

void dlock__client_describe_init(dlock_client *c)
{
    c->started_ms = unix_ms();
}

/* "host" and the like from a bulk reply into buf. */
static void take(char *buf, size_t len, const dlock_reply *r)
{
    snprintf(buf, len, "%.*s", (int)(r->len < len ? r->len : len - 1), r->str);
}

int dlock_client_owner_info(dlock_client *c, const char *owner, dlock_owner_info *out,
                            int *found)
{
    const char *colon;
    char key[64];
    const char *argv[1];
    dlock_reply *r = NULL;
    size_t n, i;
    int rc;

    if (found)
        *found = 0;
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !owner || !out || !found)
        return DLOCK_EINVAL;
    if ((rc = dlock__client_check(c)) != 0)
        return rc;
    /* "<uuid>:<thread>" or the bare uuid */
    colon = strchr(owner, ':');
    n = colon ? (size_t)(colon - owner) : strlen(owner);
    if (n != 36)
        return 0; /* not a dlock owner id: nobody described it */
    key_of(key, sizeof key, owner, n);
    argv[0] = key;
    rc = dlock_backend_eval(c->backend, &r, &dlock__script_owner_read, 1, 0, argv, NULL,
                            NULL, 0);
    if (rc != 0)
        return rc;
    if (r->type == DLOCK_REPLY_INTEGER) {
        dlock_reply_free(r);
        return 0;
    }
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 4) {
        dlock_reply_free(r);
        return DLOCK_EPROTO;
    }
    for (i = 0; i < 4; i++)
        if (r->elems[i]->type != DLOCK_REPLY_BULK) {
            dlock_reply_free(r);
            return DLOCK_EPROTO;
        }
    take(out->host, sizeof out->host, r->elems[0]);
    out->pid = strtoll(r->elems[1]->str, NULL, 10);
    take(out->program, sizeof out->program, r->elems[2]);
    out->started_ms = strtoll(r->elems[3]->str, NULL, 10);
    *found = 1;
    dlock_reply_free(r);
    return 0;
}
