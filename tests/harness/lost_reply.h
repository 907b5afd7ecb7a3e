/*
 * Test harness: the lost-reply check of a reentrant lock type (every
 * backend). An acquisition whose first attempt ran on the store but whose
 * reply was lost (a transport error: the caller cannot tell) is retried
 * within its wait and granted; it must count as one hold, so that its
 * owner's one unlock frees the lock for another owner at once. Then
 * re-entry (twice locked, twice unlocked) still counts every hold, from
 * another thread with the explicit owner, with a fixed lease and with the
 * watchdog's.
 */
#ifndef DLOCK_TEST_LOST_REPLY_H
#define DLOCK_TEST_LOST_REPLY_H

#include "dlock.h"

struct dlock_fx;

/* reentrant: 0 for a type that is not (the simple lock: its holder asking
 * again is refused, and still after such a retry). make: the type's constructor (the lock on a failing client of fx's
 * store or server); other: the constructor of what another owner takes
 * to prove the lock free (on fx->c2; the same type, or the write half of
 * a read lock). Fails the test on any deviation. */
void dlock_fx_lost_reply_check(struct dlock_fx *fx,
                               int (*make)(dlock_rlock **out, dlock_client *c,
                                           const char *name),
                               int (*other)(dlock_rlock **out, dlock_client *c,
                                            const char *name),
                               int reentrant);

#endif /* DLOCK_TEST_LOST_REPLY_H */
