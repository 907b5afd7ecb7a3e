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
 *
 * Linking: the mock is its own library, libdlock-mock (pkg-config
 * dlock-mock, CMake dlock::mock or dlock::mock_static), which needs
 * libdlock; libdlock alone carries no Lua and knows no "mock:" URL.
 * Loading libdlock-mock registers the "mock" URL scheme (a constructor);
 * its pkg-config and CMake flags keep it linked even where nothing else
 * names it (--as-needed; a static link: dlock-mock.pc's static_libs). A
 * program linked by other means calls dlock_mock_register() once.
 *
 * What the mock runs (a server's replies, error texts, WRONGTYPE checks,
 * empty containers deleted; checked against a real server by
 * tests/backends/mock/differential_test.c):
 *
 *   keys     DEL UNLINK EXISTS TYPE EXPIRE PEXPIRE EXPIREAT PEXPIREAT
 *            (NX XX GT LT) TTL PTTL PERSIST DBSIZE FLUSHALL FLUSHDB PING
 *            PUBLISH TIME
 *   strings  GET GETDEL GETSET MGET SET (NX XX GET EX PX EXAT PXAT KEEPTTL)
 *            SETNX SETEX PSETEX STRLEN INCR DECR INCRBY DECRBY INCRBYFLOAT
 *   hashes   HSET HMSET HSETNX HGET HMGET HDEL HEXISTS HLEN HGETALL HKEYS
 *            HVALS HINCRBY HINCRBYFLOAT
 *   lists    LPUSH RPUSH LPOP RPOP (count) LLEN LINDEX LRANGE LREM LSET LTRIM
 *   sets     SADD SREM SISMEMBER SMISMEMBER SMEMBERS SCARD SINTER SUNION
 *            SDIFF SINTERCARD SMOVE SPOP
 *   zsets    ZADD (NX XX GT LT CH INCR) ZINCRBY ZREM ZCARD ZCOUNT ZSCORE
 *            ZRANK ZREVRANK ZRANGE ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE
 *            ZREMRANGEBYSCORE
 *
 * Scripts see Redis's Lua 5.1 environment: the base, table, string and math
 * libraries, cjson (Lua CJSON) and bit (LuaBitOp) — the libraries Redis
 * embeds —, KEYS, ARGV and redis.call, redis.pcall, redis.status_reply,
 * redis.error_reply, redis.sha1hex, redis.log (accepted, not printed),
 * redis.replicate_commands, redis.set_repl; globals are read-only.
 *
 * Which server it answers as (dlock_mock_server below): Redis 7.0 by
 * default (Debian 12's redis-server), or Valkey 8. The lock semantics are
 * the same on both; only how a few replies are spelled differs:
 *
 *                        DLOCK_MOCK_REDIS_7_0       DLOCK_MOCK_VALKEY_8
 *   a double in a reply  "%.17g": "0.10000000000   the shortest text that
 *   (ZSCORE, ZINCRBY,    000001", "1e+17" style    reads back as the same
 *   ZADD INCR, WITH-                               double: "0.1", integers
 *   SCORES)                                        in full up to 2^62
 *   a Lua number passed  "%.17g" (integers as      the same as replies, but
 *   to redis.call        such below 1e15)          -0 is "0"
 *   errors raised in     "... calling Redis        "... calling command
 *   scripts              command from script",     from script", "Unknown
 *                        "Unknown Redis command    command called from
 *                        called from script",      script", "... for this
 *                        "... for this redis lib   call", "Command arguments
 *                        call", "Lua redis lib     must be strings or
 *                        command arguments must    integers"
 *                        be strings or integers"
 *
 * (INCRBYFLOAT and HINCRBYFLOAT print a long double alike on both.) Other
 * servers and versions (Redis 7.2 and later) are not emulated as such: the
 * suite runs against Redis 7.0 and Valkey 8 only. "mock:" URLs give the
 * default.
 *
 * Differences to know: TIME is the store's clock ([seconds, microseconds]
 * of its wall time; on a virtual clock, virtual time, frozen during a
 * script); set replies list members in insertion order and SPOP takes the
 * oldest members (Redis: an unspecified order, random members); a key
 * expires at its deadline, not one millisecond later. A command not listed
 * fails inside a script with the server's "ERR Unknown Redis command called
 * from script" (Valkey: "ERR Unknown command called from script"), followed
 * by "(the dlock mock has no 'NAME'; ...)"; outside
 * scripts (dlock_mock_store_command) with Redis's "ERR unknown command".
 * cmsgpack and struct are not offered, and the library tables (string,
 * cjson, bit...) are writable, where Redis 7.0.12+ makes them read-only.
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

/* Registers the "mock" URL scheme with the backend registry
 * (dlock_backend_register), if not done yet; loading libdlock-mock does it
 * already. 0, or DLOCK_EINVAL when another backend took the scheme first
 * (DLOCK_ENOMEM: the registry is full). Any thread; idempotent. */
DLOCK_API int dlock_mock_register(void);

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

/* Number of threads sleeping on the clock right now, the library's own
 * included: each client on the clock has a watchdog thread that sleeps on
 * it between renewals. Never blocks. */
DLOCK_API int dlock_vclock_sleepers(dlock_vclock *vc);

/* Waits, in real time up to timeout_real_ms, until at least n threads sleep
 * on the clock, watchdogs included (so n = your threads + one per client).
 * Returns 0, DLOCK_ETIMEDOUT, or DLOCK_EINVAL (vc NULL). */
DLOCK_API int dlock_vclock_wait_sleepers(dlock_vclock *vc, int n, int64_t timeout_real_ms);

/* The same two without the watchdogs: the threads of the application (or
 * test) sleeping on the clock, i.e. blocked in a dlock call (a lock wait, a
 * semaphore or latch wait). This is the count a test wants before it
 * advances: "my n waiters have blocked", whatever the number of clients.
 * A thread counts from the moment it sleeps until the clock wakes it. */
DLOCK_API int dlock_vclock_waiters(dlock_vclock *vc);
DLOCK_API int dlock_vclock_wait_waiters(dlock_vclock *vc, int n, int64_t timeout_real_ms);

DLOCK_API int64_t dlock_vclock_now(dlock_vclock *vc);

/* Drops the caller's reference. NULL is a no-op. */
DLOCK_API void dlock_vclock_free(dlock_vclock *vc);

/* ---- the store ---------------------------------------------------------- */


/* A new empty store whose keys expire on clock (NULL = the real-time clock).
 * The store takes a reference on the clock. 0, DLOCK_EINVAL, DLOCK_ENOMEM. */
DLOCK_API int dlock_mock_store_new(dlock_mock_store **out, dlock_clock *clock);

/* The server whose replies a store gives where servers differ (see the
 * table at the top). */
typedef enum dlock_mock_server {
    DLOCK_MOCK_REDIS_7_0 = 0, /* the default */
    DLOCK_MOCK_VALKEY_8 = 1
} dlock_mock_server;

/* Options of dlock_mock_store_new_opts. Start from DLOCK_MOCK_OPTIONS_INIT
 * (fields may be added at the end; version says which are there). */
typedef struct dlock_mock_options {
    int version;             /* DLOCK_MOCK_OPTIONS_VERSION (1) */
    dlock_clock *clock;      /* NULL: the real-time clock; referenced */
    dlock_mock_server server; /* default DLOCK_MOCK_REDIS_7_0 */
} dlock_mock_options;

#define DLOCK_MOCK_OPTIONS_VERSION 1
#define DLOCK_MOCK_OPTIONS_INIT {DLOCK_MOCK_OPTIONS_VERSION, NULL, DLOCK_MOCK_REDIS_7_0}

/* dlock_mock_store_new with options (NULL: the defaults, as
 * dlock_mock_store_new(out, NULL)). 0, DLOCK_EINVAL (out NULL, a version
 * other than 1, an unknown server: nothing made), DLOCK_ENOMEM. */
DLOCK_API int dlock_mock_store_new_opts(dlock_mock_store **out,
                                        const dlock_mock_options *opts);

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

/* ---- stores by name: "mock://NAME" ----------------------------------------
 *
 * Code that makes its clients from a URL or a JSON configuration (the
 * application under test) can be pointed at a store the test built, on the
 * test's virtual clock:
 *
 *     dlock_vclock_new(&clk, 0);
 *     dlock_mock_store_new(&store, dlock_vclock_clock(clk));
 *     dlock_mock_store_register(store, "t1");
 *     ... the application: dlock_client_connect(&c, "mock://t1", NULL, ...)
 *         or {"url": "mock://t1"} in its JSON configuration ...
 *     dlock_vclock_advance(clk, 30000);
 *     dlock_mock_store_unregister("t1");
 *
 * Every client made from "mock://t1" is a backend on that one store (like
 * processes on one Redis). "mock:" and "mock://" still give a private store
 * on the real-time clock. The registry is process-wide and thread-safe. */

/* Registers store under name (1 to 64 characters of A-Z a-z 0-9 . _ -),
 * taking a reference on it. 0, DLOCK_EINVAL (NULL store, bad name, or the
 * name is taken: unregister first), DLOCK_ENOMEM. */
DLOCK_API int dlock_mock_store_register(dlock_mock_store *store, const char *name);

/* Removes the name and drops the registry's reference; clients made from it
 * keep working on the store. 0, or DLOCK_EINVAL (not registered). */
DLOCK_API int dlock_mock_store_unregister(const char *name);

/* A backend on the store registered under name, as "mock://name" gives.
 * 0, DLOCK_EINVAL (NULL out, no such name), DLOCK_ENOMEM. */
DLOCK_API int dlock_mock_backend_by_name(dlock_backend **out, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_MOCK_H */
