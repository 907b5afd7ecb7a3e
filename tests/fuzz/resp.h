/*
 * The fuzz targets' server side: the input is what a server sends, read
 * as a Redis connection reads it (backends/redis/conn.h: hiredis's reply
 * parser under the connection's reply cap, here 1 MiB) into replies, each
 * handed to the parser under test. Up to MAX_REPLIES replies per input; a
 * stream the connection refuses (malformed, over the cap) ends it.
 */
#ifndef DLOCK_FUZZ_RESP_H
#define DLOCK_FUZZ_RESP_H

#include <stdint.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "../../backends/redis/conn.h"

#define MAX_REPLIES 64
#define REPLY_CAP (1024 * 1024)

/* Calls fn(r, arg) on each complete reply data[0..size) holds. */
static void each_reply(const uint8_t *data, size_t size,
                       void (*fn)(const redisReply *r, void *arg), void *arg)
{
    dlock__redis_conn *c = NULL;
    int i;

    if (dlock__redis_conn_parser_new(&c, REPLY_CAP) != 0)
        return;
    if (dlock__redis_conn_parse(c, (const char *)data, size) == 0) {
        for (i = 0; i < MAX_REPLIES; i++) {
            redisReply *r = NULL;
            if (dlock__redis_conn_next(c, &r) != 0 || !r)
                break;
            fn(r, arg);
            freeReplyObject(r);
        }
    }
    dlock__redis_conn_free(c);
}

#endif /* DLOCK_FUZZ_RESP_H */
