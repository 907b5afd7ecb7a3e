/*
 * Marks the library's own long-lived threads (the watchdogs) as
 * "background" for the clock they sleep on, so that a virtual clock can
 * tell them from the application's threads: dlock_vclock_wait_waiters
 * (api/dlock/mock.h) counts only the latter. A thread-local flag, set by
 * the thread itself when it starts; never cleared (the thread ends).
 */
#ifndef DLOCK_BACKGROUND_H
#define DLOCK_BACKGROUND_H

void dlock__thread_mark_background(void);
int dlock__thread_is_background(void);

#endif /* DLOCK_BACKGROUND_H */
