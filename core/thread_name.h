/*
 * Names the threads the library starts ("dlock-watchdog", "dlock-sub"), so
 * that top -H, ps -L, gdb and /proc/<pid>/task/<tid>/comm tell them from the
 * application's own threads. Called by whoever created the thread, right
 * after pthread_create. Best effort: where pthread_setname_np is missing
 * (not Linux) or fails, the thread simply keeps its inherited name. Names
 * are at most 15 bytes (Linux's limit).
 */
#ifndef DLOCK_THREAD_NAME_H
#define DLOCK_THREAD_NAME_H

#include <pthread.h>

static inline void dlock__thread_name(pthread_t t, const char *name)
{
#if defined(__linux__) && defined(_GNU_SOURCE)
    (void)pthread_setname_np(t, name);
#else
    (void)t;
    (void)name;
#endif
}

#endif /* DLOCK_THREAD_NAME_H */
