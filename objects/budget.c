/*
 * dlock — the calling thread's time budget.
 *
 * A budgeted call (try_lock with a wait, the semaphore and latch waits)
 * must return within its budget plus the client's budget_slack_ms, so every
 * round trip it makes is capped by that deadline. The round trips are made
 * deep inside the lock types' attempt functions, whose signatures are
 * public (api/dlock/sys/rlock.h) and carry no deadline; the wait loop
 * therefore records the deadline for the calling thread, and
 * dlock__rlock_eval_bin hands it to the backend with every script call.
 * Nested budgets keep the nearer deadline.
 */
#include "internal.h"

static __thread int64_t thread_deadline = INT64_MAX;

int64_t dlock__budget_deadline(void)
{
    return thread_deadline;
}

int64_t dlock__budget_enter(int64_t deadline_ms)
{
    int64_t outer = thread_deadline;

    if (deadline_ms < outer)
        thread_deadline = deadline_ms;
    return outer;
}

void dlock__budget_leave(int64_t outer)
{
    thread_deadline = outer;
}

int64_t dlock__add_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}
