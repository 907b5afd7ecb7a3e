/*
 * dlock — the mock backend: an in-process store with Redis semantics.
 *
 * The mock runs the very same Lua scripts as Redis (in an embedded Lua 5.1
 * with a redis.call/redis.pcall bridge onto an in-memory store), carries
 * pub/sub messages in-process, and can run on a virtual clock that your test
 * advances: leases expire, timed waits wake and watchdogs renew exactly as they
 * would in real time, without sleeping.
 *
 *     dlock_vclock *clk;  dlock_mock_store *store;  dlock_backend *b;
 *     dlock_vclock_new(&clk, 0);
 *     dlock_mock_store_new(&store, dlock_vclock_clock(clk));
 *     dlock_mock_backend_new(&b, store);      // one per client
 *     ...
 *     dlock_vclock_advance(clk, 30000);       // 30 s pass, instantly
 *
 * Several backends (hence several clients, i.e. several "processes") may share
 * one store. Stores and virtual clocks are reference counted: a store keeps
 * its clock alive, a backend keeps its store alive, so they may be freed in any
 * order.
 *
 * Thread-safety: everything here is thread-safe. Scripts run one at a time
 * per store (a store-wide mutex), as on a Redis server.
 */
#ifndef DLOCK_MOCK_H
#define DLOCK_MOCK_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the virtual clock -------------------------------------------------- */


/* A virtual clock starting at start_ms (now_ms). Its wall_ms is a fixed epoch
 * base plus now_ms. 0, DLOCK_EINVAL (out NULL, start_ms < 0), DLOCK_ENOMEM. */
DLOCK_API int dlock_vclock_new(dlock_vclock **out, int64_t start_ms);

/* The clock interface of this virtual clock (borrowed). */
DLOCK_API dlock_clock *dlock_vclock_clock(dlock_vclock *vc);

/* Moves time forward by ms, step by step: at each sleeper's deadline on the
 * way, it wakes the sleepers due and waits (in real time, up to a few
 * seconds) until each has gone back to sleep or finished, before moving on.
 * So a watchdog that renews every 10 s renews 6 times during advance(60000),
 * just as in real time. Blocks while the woken threads run.
 * 0 or DLOCK_EINVAL (ms < 0). */
DLOCK_API int dlock_vclock_advance(dlock_vclock *vc, int64_t ms);

/* Number of threads sleeping on the clock right now. Never blocks. */
DLOCK_API int dlock_vclock_sleepers(dlock_vclock *vc);

/* Waits, in real time up to timeout_real_ms, until at least n threads sleep
 * on the clock (e.g. a waiter the test started has blocked). Returns 0, or
 * DLOCK_ETIMEDOUT. */
DLOCK_API int dlock_vclock_wait_sleepers(dlock_vclock *vc, int n, int64_t timeout_real_ms);

DLOCK_API int64_t dlock_vclock_now(dlock_vclock *vc);

/* Drops the caller's reference. NULL is a no-op. */
DLOCK_API void dlock_vclock_free(dlock_vclock *vc);

/* ---- the store ---------------------------------------------------------- */


/* A new empty store whose keys expire on clock (NULL = the real-time clock).
 * The store takes a reference on the clock. 0, DLOCK_EINVAL, DLOCK_ENOMEM. */
DLOCK_API int dlock_mock_store_new(dlock_mock_store **out, dlock_clock *clock);

/* Drops the caller's reference. NULL is a no-op. */
DLOCK_API void dlock_mock_store_free(dlock_mock_store *store);

/* Number of live (not expired) keys: for tests. */
DLOCK_API size_t dlock_mock_store_dbsize(dlock_mock_store *store);

/* Number of PUBLISH calls the store has carried so far: lets a test count
 * wake-ups. */
DLOCK_API uint64_t dlock_mock_store_publish_count(dlock_mock_store *store);

/* Runs one command directly on the store, as if sent by a Redis client (for
 * tests and for the differential test against redis-server): e.g.
 * argv = {"SET", "k", "v"}. The reply is the caller's (dlock_reply_free).
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM. Unknown commands give an error reply. */
DLOCK_API int dlock_mock_store_command(dlock_mock_store *store, dlock_reply **out,
                                       int argc, const char *const *argv,
                                       const size_t *argvlen);

/* ---- the backend -------------------------------------------------------- */

/* A backend on store (it takes a reference). Its clock is the store's.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM. Free with dlock_backend_free. */
DLOCK_API int dlock_mock_backend_new(dlock_backend **out, dlock_mock_store *store);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_MOCK_H */
