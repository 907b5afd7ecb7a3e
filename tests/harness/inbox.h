/*
 * Test harness: an inbox for pub/sub messages — a message callback that
 * counts what arrives (messages, and the empty "look again" messages a
 * subscriber sends after it reconnected or moved), and a bounded wait for
 * a count.
 */
#ifndef DLOCK_TEST_INBOX_H
#define DLOCK_TEST_INBOX_H

#include <pthread.h>
#include <stddef.h>
#include <time.h>

typedef struct dlock_test_inbox {
    pthread_mutex_t mu;
    int count, empties;
} dlock_test_inbox;

/* A dlock_message_fn; arg is the inbox. */
static inline void dlock_test_inbox_on_message(void *arg, const char *channel,
                                               const char *msg, size_t len)
{
    dlock_test_inbox *in = (dlock_test_inbox *)arg;
    (void)channel;
    (void)msg;
    pthread_mutex_lock(&in->mu);
    if (len == 0)
        in->empties++;
    else
        in->count++;
    pthread_mutex_unlock(&in->mu);
}

/* Waits up to timeout_ms until n messages (empties: n empty ones) came;
 * returns how many did. */
static inline int dlock_test_inbox_wait(dlock_test_inbox *in, int n, int empties,
                                        int timeout_ms)
{
    struct timespec ts = {0, 5000000L};
    int i, v = 0;
    for (i = 0; i <= timeout_ms / 5; i++) {
        pthread_mutex_lock(&in->mu);
        v = empties ? in->empties : in->count;
        pthread_mutex_unlock(&in->mu);
        if (v >= n)
            break;
        nanosleep(&ts, NULL);
    }
    return v;
}

#endif /* DLOCK_TEST_INBOX_H */
