/*
 * dlock mock — in-process pub/sub of one store (private).
 *
 * The registry has its own mutex, never held while a callback runs, and
 * never taken before the store mutex (the store takes it, briefly, to count
 * receivers of a PUBLISH). Callbacks run on the publishing thread after the
 * store mutex has been released.
 */
#ifndef DLOCK_MOCK_PUBSUB_H
#define DLOCK_MOCK_PUBSUB_H

#include "dlock/sys/backend.h"

#include <stddef.h>

typedef struct dlock__pubsub dlock__pubsub;

int dlock__pubsub_new(dlock__pubsub **out);
/* Frees the registry and any subscription still in it. */
void dlock__pubsub_free(dlock__pubsub *ps);

/* 0, DLOCK_ENOMEM. */
int dlock__pubsub_subscribe(dlock__pubsub *ps, dlock_subscription **out,
                            const char *channel, dlock_message_fn fn, void *arg);
/* On return fn is not running and will not run again for sub; sub is freed.
 * Must not be called from inside that subscription's own callback. */
void dlock__pubsub_unsubscribe(dlock_subscription *sub);

/* Number of listeners on channel right now (PUBLISH's reply). */
size_t dlock__pubsub_receivers(dlock__pubsub *ps, const char *channel,
                               size_t clen);
/* Calls every listener of channel; channel and msg are NUL-terminated. */
void dlock__pubsub_deliver(dlock__pubsub *ps, const char *channel, size_t clen,
                           const char *msg, size_t mlen);

#endif /* DLOCK_MOCK_PUBSUB_H */
