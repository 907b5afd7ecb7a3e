/*
 * dlock — the range of every time argument.
 *
 * Every duration the public API takes in milliseconds is at most
 * DLOCK_TIME_MAX_MS: the leases of every lock type, of the permit-expirable
 * semaphore and of the semaphore as a lock; the TTLs of the semaphore's
 * count and of bucket values; the client options watchdog_timeout_ms,
 * max_hold_ms and fair_wait_slack_ms; the Redis backend's timeouts and
 * back-off steps; the same fields of the JSON configuration. A value above
 * it is DLOCK_EINVAL, refused before anything is sent: nothing changes.
 *
 * Waits (try_lock's wait_ms, the semaphores' and the latch's waits) are the
 * exception: any wait >= 0 is accepted, and a wait above DLOCK_TIME_MAX_MS
 * has no time limit in effect (its deadline saturates instead of
 * overflowing; it is still a bounded call in every other respect, e.g. a
 * transport error ends it). The fair lock uses such a wait's slack as
 * dlock_lock does (fair_wait_slack_ms, api/dlock/fair.h).
 *
 * Why 10^12 ms (about 31.7 years):
 *  - it is longer than any lease or timeout that means something; a lock
 *    that must live until it is unlocked takes lease 0 (the watchdog);
 *  - the store computes with it: Redis refuses PEXPIRE / SET PX when now +
 *    ms leaves int64 ("invalid expire time"), and the scripts add times to
 *    wall-clock readings (now ~ 1.7 x 10^12 ms) in Lua numbers, doubles
 *    exact up to 2^53 ~ 9 x 10^15, printed by Lua 5.1 with 14 significant
 *    digits. now + DLOCK_TIME_MAX_MS, and sums of thousands of such times
 *    (stacked fair-lock deadlines), stay far inside all three, as do
 *    monotonic now + wait and multiples like watchdog_timeout x 3 in C;
 *  - the scripts check the same bound themselves before their first write
 *    (objects/scripts/time_check.luainc), so a caller that bypasses the C
 *    checks gets an error reply, never a half-written lock. They also
 *    refuse a wall-clock reading (the fair lock's and the permit-expirable
 *    semaphore's "now") beyond 10^13 ms, the year 2286: a virtual clock of
 *    the mock set further than that cannot run those two objects.
 */
#ifndef DLOCK_TIMES_H
#define DLOCK_TIMES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Longest lease, TTL, timeout or option duration: 10^12 ms. */
#define DLOCK_TIME_MAX_MS ((int64_t)1000000000000LL)

/* A wait without a time limit (the wait_ms of the lock-type slots and of
 * the _async starters, api/dlock/async.h). */
#define DLOCK_WAIT_FOREVER ((int64_t)-1)

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_TIMES_H */
