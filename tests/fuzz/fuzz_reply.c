/*
 * libFuzzer target: the Redis backend's reply-to-value conversion
 * (dlock__redis_reply_convert, backends/redis/eval.c), on every reply a
 * server could send (tests/fuzz/resp.h). Oracle: a conversion that
 * succeeds is the same tree (types mapped, integers, bytes and element
 * counts equal); a failure leaves *out NULL and says EPROTO (a type or a
 * depth the backend does not take) or ENOMEM.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/backend.h"
#include "dlock/errors.h"
#include "../../backends/redis/eval.h"
#include "resp.h"

static void same(const dlock_reply *d, const redisReply *r)
{
    size_t i;

    switch (r->type) {
    case REDIS_REPLY_NIL:
        if (d->type != DLOCK_REPLY_NIL)
            abort();
        return;
    case REDIS_REPLY_INTEGER:
        if (d->type != DLOCK_REPLY_INTEGER || d->integer != r->integer)
            abort();
        return;
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        if (d->type != (r->type == REDIS_REPLY_STRING   ? DLOCK_REPLY_BULK
                        : r->type == REDIS_REPLY_STATUS ? DLOCK_REPLY_STATUS
                                                        : DLOCK_REPLY_ERROR) ||
            d->len != r->len || !d->str || memcmp(d->str, r->str, r->len) != 0 ||
            d->str[d->len] != '\0')
            abort();
        return;
    case REDIS_REPLY_ARRAY:
        if (d->type != DLOCK_REPLY_ARRAY || d->n != r->elements)
            abort();
        for (i = 0; i < r->elements; i++)
            same(d->elems[i], r->element[i]);
        return;
    default:
        abort(); /* converted a type it does not know */
    }
}

static void check(const redisReply *r, void *arg)
{
    dlock_reply *d = (dlock_reply *)1;
    int rc = dlock__redis_reply_convert(&d, r);

    (void)arg;
    if (rc == 0) {
        if (!d)
            abort();
        same(d, r);
        dlock_reply_free(d);
    } else if (d != NULL || (rc != DLOCK_EPROTO && rc != DLOCK_ENOMEM)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    each_reply(data, size, check, NULL);
    return 0;
}
