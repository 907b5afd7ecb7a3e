/*
 * A message recorder for the conformance cases: subscribes to one channel
 * and keeps the first messages that arrive. recorder_start and
 * recorder_count use cmocka assertions: call them on the test's own thread.
 */
#ifndef DLOCK_TEST_RECORDER_H
#define DLOCK_TEST_RECORDER_H

#include <pthread.h>

#include "dlock.h"

#define MAX_MSGS 16

typedef struct recorder {
    pthread_mutex_t mutex;
    dlock_backend *b;
    dlock_subscription *sub;
    int n;
    char msgs[MAX_MSGS][32];
} recorder;

/* Subscribes r to channel on c's backend. */
void recorder_start(recorder *r, dlock_client *c, const char *channel);
/* Messages seen so far, after waiting (Redis delivers them on its own
 * thread) up to 2 s of real time for at least want of them. */
int recorder_count(recorder *r, int want);
void recorder_stop(recorder *r);

#endif /* DLOCK_TEST_RECORDER_H */
