/*
 * libFuzzer target: the subscriber's reading of what comes on its
 * connection (dlock__redis_pubsub_classify, backends/redis/parse.c, which
 * subscriber.c's reply handler switches on), plain and sharded, on every
 * reply a server could send (tests/fuzz/resp.h). Oracle: a message has a
 * string channel and its payload is the reply's own bytes; a message
 * whose channel or payload is not a string is ODD (ignored, never a
 * reason to drop the connection); an acknowledgement names the reply's
 * second element; an error reply is ERROR; a push whose kind is a
 * string is never BAD (out of step: the connection dropped); nothing
 * else is read as one of those.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../backends/redis/parse.h"
#include "resp.h"

static int is_kind(const redisReply *r, const char *s)
{
    return r->type == REDIS_REPLY_STRING && r->len == strlen(s) && strcasecmp(r->str, s) == 0;
}

static void check_one(const redisReply *r, int sharded)
{
    dlock__redis_pubsub_event ev;
    int kind = dlock__redis_pubsub_classify(r, sharded, &ev);
    int push = r->type == REDIS_REPLY_ARRAY && r->elements == 3;

    switch (kind) {
    case DLOCK__PUBSUB_MESSAGE:
        if (!push || !is_kind(r->element[0], sharded ? "smessage" : "message") ||
            ev.name != r->element[1] || ev.name->type != REDIS_REPLY_STRING ||
            ev.payload != r->element[2]->str || ev.len != r->element[2]->len ||
            r->element[2]->type != REDIS_REPLY_STRING)
            abort();
        break;
    case DLOCK__PUBSUB_ODD_MESSAGE:
        if (!push || !is_kind(r->element[0], sharded ? "smessage" : "message") ||
            (r->element[1]->type == REDIS_REPLY_STRING &&
             r->element[2]->type == REDIS_REPLY_STRING))
            abort();
        break;
    case DLOCK__PUBSUB_SUBSCRIBED:
    case DLOCK__PUBSUB_UNSUBSCRIBED:
        if (!push || ev.name != r->element[1])
            abort();
        break;
    case DLOCK__PUBSUB_ERROR:
        if (r->type != REDIS_REPLY_ERROR)
            abort();
        break;
    case DLOCK__PUBSUB_PONG:
    case DLOCK__PUBSUB_IGNORED:
        if (r->type == REDIS_REPLY_ERROR)
            abort();
        break;
    case DLOCK__PUBSUB_BAD:
        /* a push whose kind is a string is never out of step */
        if (r->type == REDIS_REPLY_ERROR ||
            (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
             r->element[0]->type == REDIS_REPLY_STRING))
            abort();
        break;
    default:
        abort();
    }
}

static void check(const redisReply *r, void *arg)
{
    (void)arg;
    check_one(r, 0);
    check_one(r, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    each_reply(data, size, check, NULL);
    return 0;
}
