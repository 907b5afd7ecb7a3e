/*
 * dlock — the conformance kit: the generic RLock cases, for your own lock
 * type.
 *
 * The reentrant lock's conformance cases (mutual exclusion, re-entry, lease
 * expiry, watchdog renewal, waiters woken by unlock and by expiry, lost-lock
 * callbacks, timed waits, bad input, fork safety...) are written once against
 * the dlock_rlock interface and run, unchanged, on every built-in type that
 * promises that contract. The kit runs the same cases on a type of yours,
 * on the mock (with a virtual clock: no real waiting) and, given a URL, on a
 * Redis server:
 *
 *     static const dlock_conformance_type mine = {"mine", my_lock_new};
 *     int failures = dlock_conformance_run(&mine, "redis://127.0.0.1:6379");
 *
 * It is not part of libdlock: it is the static library libdlock_conformance.a
 * (installed next to libdlock by `make install` when cmocka is available), and
 * it reports through cmocka, so link both:
 *
 *     cc my_test.c -ldlock_conformance $(pkg-config --cflags --libs dlock) -lcmocka
 *
 * What it does: prints one cmocka report per backend on stdout; creates two
 * clients per case (two "processes"); on Redis writes keys under names unique
 * to each case (use a scratch database: the cases also force-unlock and
 * expire their own keys); forks a child in one case (a lock used in a fork()
 * child must be refused). Blocks for seconds on the mock and about a minute
 * on Redis. Not thread-safe: one run at a time per process.
 */
#ifndef DLOCK_CONFORMANCE_H
#define DLOCK_CONFORMANCE_H

#include "types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A lock type: its name (for the reports) and its constructor, with the
 * signature of dlock_reentrant_new. make must return a dlock_rlock that
 * keeps the RLock contract of api/dlock/lock.h (reentrant, exclusive),
 * including that an acquisition retried after a lost answer holds once: its
 * attempt passes dlock_op_retry_expect (api/dlock/sys/methods.h) to its
 * script (samples/custom_lock.c shows how). */
typedef struct dlock_conformance_type {
    const char *name;
    int (*make)(dlock_rlock **out, dlock_client *c, const char *name);
} dlock_conformance_type;

/* Runs every generic RLock case on type: on the mock, then, when
 * redis_url_or_null is not NULL, on that server (any URL
 * dlock_client_connect accepts). Returns the number of failed cases (0: the
 * type conforms), or DLOCK_EINVAL (negative) when type or type->make is
 * NULL. (In libdlock_conformance.a, not libdlock: no DLOCK_API.) */
int dlock_conformance_run(const dlock_conformance_type *type,
                          const char *redis_url_or_null);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_CONFORMANCE_H */
