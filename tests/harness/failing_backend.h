/*
 * Test harness: a backend in front of another that fails, on request, the
 * scripts it forwards with DLOCK_ECONN ("injected failure"), as a server
 * that cannot be reached would; everything else passes through. The
 * lease control cases (tests/conformance/lease_control_cases.c) fail the
 * watchdog's renewals with it, the Redlock cases take a mock node "down".
 */
#ifndef DLOCK_TEST_FAILING_BACKEND_H
#define DLOCK_TEST_FAILING_BACKEND_H

#include "dlock/client.h"

#include "wrap_backend.h"

#define DLOCK_TEST_FAIL_NONE 0
#define DLOCK_TEST_FAIL_RENEWALS 1 /* the scripts whose name has "renew" */
#define DLOCK_TEST_FAIL_ALL 2
/* The next acquisition script (its name ends in "_acquire") runs, and its
 * reply is lost: DLOCK_ETIMEDOUT, as a reply that came too late; then
 * back to NONE. */
#define DLOCK_TEST_FAIL_ACQUIRE_REPLY 3

typedef struct dlock_test_failing {
    dlock_test_wrap w; /* first: &w.base is the backend */
    int mode;          /* a DLOCK_TEST_FAIL_*; dlock_test_failing_set */
} dlock_test_failing;

/* A failing backend (mode NONE) in front of inner, which it owns from now
 * on (freed with it: dlock_test_wrap_free, or the client that took it).
 * NULL when out of memory (inner is freed then). */
dlock_test_failing *dlock_test_failing_new(dlock_backend *inner);

/* Sets the mode for the calls that start afterwards (any thread). */
void dlock_test_failing_set(dlock_test_failing *f, int mode);

/* ---- with the conformance fixture (not in the conformance kit) ---- */

struct dlock_fx;
/* A client of its own (fresh metrics) on the fixture's store or server,
 * behind a failing backend (*fb, owned by the client), with o's options but the fixture's
 * watchdog timeout and a 2 s budget slack; on the mock, its watchdog is
 * asleep before this returns. Kept for teardown; fails the test if it
 * cannot be made. */
dlock_client *dlock_fx_failing_client(struct dlock_fx *fx, const dlock_client_options *o,
                                      dlock_test_failing **fb);

#endif /* DLOCK_TEST_FAILING_BACKEND_H */
