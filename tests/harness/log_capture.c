/* The log sink of tests/harness/log_capture.h. */
#include "log_capture.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dlock.h"

#define LINES 256

static struct {
    pthread_mutex_t mu;
    char lines[LINES][512];
    int n;
} cap = {PTHREAD_MUTEX_INITIALIZER, {{0}}, 0};

void dlock_test_log_capture(void *arg, int level, const char *msg)
{
    (void)arg;
    pthread_mutex_lock(&cap.mu);
    if (cap.n < LINES)
        snprintf(cap.lines[cap.n++], sizeof(cap.lines[0]), "%s %s",
                 dlock_log_level_name(level), msg);
    pthread_mutex_unlock(&cap.mu);
}

void dlock_test_log_reset(void)
{
    pthread_mutex_lock(&cap.mu);
    cap.n = 0;
    pthread_mutex_unlock(&cap.mu);
}

int dlock_test_log_count(const char *a, const char *b)
{
    int i, n = 0;

    pthread_mutex_lock(&cap.mu);
    for (i = 0; i < cap.n; i++)
        if (strstr(cap.lines[i], a) && (!b || strstr(cap.lines[i], b)))
            n++;
    pthread_mutex_unlock(&cap.mu);
    return n;
}

void dlock_test_log_dump(void)
{
    int i;

    pthread_mutex_lock(&cap.mu);
    for (i = 0; i < cap.n; i++)
        printf("  log: %s\n", cap.lines[i]);
    pthread_mutex_unlock(&cap.mu);
}
