/*
 * libFuzzer target: what a Redis Cluster node answers that the router
 * acts on (backends/redis/parse.c): CLUSTER SLOTS replies
 * (dlock__redis_parse_slots) and MOVED / ASK redirections
 * (dlock__redis_parse_redirect), on every reply a server could send
 * (tests/fuzz/resp.h). Oracle: every range handed on is within the 16384
 * slots with lo <= hi, its port 1..65535 and its host NULL or non-empty;
 * a malformed map hands on nothing; a redirection read is a MOVED or an
 * ASK with a slot 0..16383, a non-empty host that fits and a port
 * 1..65535, and a refused one says so.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"
#include "../../backends/redis/parse.h"
#include "resp.h"

static int on_range(void *arg, unsigned lo, unsigned hi, const char *host, int port)
{
    int *ranges = arg;

    if (lo > hi || hi >= 16384 || port < 1 || port > 65535 || (host && !host[0]))
        abort();
    (*ranges)++;
    return 0;
}

static void check(const redisReply *r, void *arg)
{
    dlock__redis_redirect d;
    int ranges = 0, rc;

    (void)arg;
    rc = dlock__redis_parse_slots(r, on_range, &ranges);
    if (rc != 0 && (rc != DLOCK_EPROTO || ranges != 0))
        abort();
    if (rc == 0 && (r->type != REDIS_REPLY_ARRAY || (size_t)ranges != r->elements))
        abort();
    memset(&d, 0, sizeof d);
    if (dlock__redis_parse_redirect(r, &d) == 0) {
        if ((d.kind != DLOCK__REDIS_MOVED && d.kind != DLOCK__REDIS_ASK) || d.slot < 0 ||
            d.slot >= 16384 || d.port < 1 || d.port > 65535 || !d.host[0] ||
            strlen(d.host) >= sizeof d.host || r->type != REDIS_REPLY_ERROR)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    each_reply(data, size, check, NULL);
    return 0;
}
