/*
 * The message recorder of the conformance cases (recorder.h).
 */
#include "recorder.h"

#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "runner.h"

#include "dlock/sys/backend.h"

static void on_message(void *arg, const char *channel, const char *msg, size_t len)
{
    recorder *r = arg;

    (void)channel;
    if (len == 0)
        return; /* "look again" after a reconnect: not a message */
    pthread_mutex_lock(&r->mutex);
    if (r->n < MAX_MSGS)
        snprintf(r->msgs[r->n], sizeof(r->msgs[0]), "%.*s", (int)len, msg);
    r->n++;
    pthread_mutex_unlock(&r->mutex);
}

void recorder_start(recorder *r, dlock_client *c, const char *channel)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->mutex, NULL);
    r->b = dlock_client_backend(c);
    assert_int_equal(dlock_backend_subscribe(r->b, &r->sub, channel, on_message, r), 0);
}

int recorder_count(recorder *r, int want)
{
    int64_t until = dlock_fx_real_ms() + 2000;
    int n;

    for (;;) {
        pthread_mutex_lock(&r->mutex);
        n = r->n;
        pthread_mutex_unlock(&r->mutex);
        if (n >= want || dlock_fx_real_ms() >= until)
            return n;
        dlock_fx_sleep_real(5);
    }
}

void recorder_stop(recorder *r)
{
    if (r->sub)
        dlock_backend_unsubscribe(r->b, r->sub);
    r->sub = NULL;
    pthread_mutex_destroy(&r->mutex);
}
