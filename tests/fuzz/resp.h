/*
 * The fuzz targets' server side: the input is what a server sends, read
 * with hiredis's reply parser (the one the Redis backend's connections
 * use) into replies, each handed to the parser under test. Up to
 * MAX_REPLIES replies per input; a stream hiredis refuses ends it.
 */
#ifndef DLOCK_FUZZ_RESP_H
#define DLOCK_FUZZ_RESP_H

#include <stdint.h>
#include <stdlib.h>

#include <hiredis/hiredis.h>

#define MAX_REPLIES 64

/* Calls fn(r, arg) on each complete reply data[0..size) holds. */
static void each_reply(const uint8_t *data, size_t size,
                       void (*fn)(const redisReply *r, void *arg), void *arg)
{
    redisReader *rd = redisReaderCreate();
    int i;

    if (!rd)
        return;
    if (redisReaderFeed(rd, (const char *)data, size) == REDIS_OK) {
        for (i = 0; i < MAX_REPLIES; i++) {
            void *r = NULL;
            if (redisReaderGetReply(rd, &r) != REDIS_OK || !r)
                break;
            fn(r, arg);
            freeReplyObject(r);
        }
    }
    redisReaderFree(rd);
}

#endif /* DLOCK_FUZZ_RESP_H */
