/*
 * A sink for the library's log hook (dlock_set_log) that tests read back:
 * the lines, each "<level> <message>", kept in memory (the first 256).
 * Process-wide like the hook itself; safe from any thread.
 */
#ifndef DLOCK_TEST_LOG_CAPTURE_H
#define DLOCK_TEST_LOG_CAPTURE_H

/* The hook to pass to dlock_set_log (arg unused). */
void dlock_test_log_capture(void *arg, int level, const char *msg);
/* Forgets the lines captured so far. */
void dlock_test_log_reset(void);
/* The number of lines holding both a and b (b may be NULL). */
int dlock_test_log_count(const char *a, const char *b);
/* Prints the lines (for a failing case's output). */
void dlock_test_log_dump(void);

#endif
