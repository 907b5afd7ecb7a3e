/*
 * dlock — the client.
 *
 * The client is what an application creates first. It owns a backend, a
 * random identity (a libuuid UUID, lower-case, 36 characters) and the shared
 * services of the lock objects made from it:
 *
 *  - owner ids: "<client-uuid>:<thread-id>", the thread id a small decimal
 *    integer unique in the process. The plain lock calls act for the calling
 *    thread's owner id; the *_as calls (api/dlock/lock.h) take an explicit
 *    owner id, for code that locks in one thread and unlocks in another.
 *  - the watchdog: one thread per client that renews, in batches, the locks
 *    acquired with lease 0, every watchdog_timeout/3. When it finds a lock
 *    no longer held it stops renewing it, marks it lost (the owner's next
 *    unlock returns DLOCK_ELOST) and calls on_lost.
 *  - waiting: blocked acquirers sleep on the object's pub/sub channel (one
 *    subscription per channel per client), not by polling.
 *
 * Lifetime: lock objects keep their client alive; dlock_client_free drops
 * the application's reference and the client goes away with the last lock
 * object made from it. dlock_client_free also cancels the calls blocked on
 * the client at that moment (they return DLOCK_ECANCELED, see
 * dlock_client_cancel_waits); their lock objects keep the client alive
 * until they are freed, so nothing is freed under a blocked call.
 *
 * Shutting down: dlock_client_cancel_waits (or dlock_client_free) gets the
 * threads blocked in dlock_lock and the other waits out; join them, free the
 * lock objects, and the client is gone.
 *
 * fork(): a child must not act under its parent's identity. Every call on a
 * client (or its lock objects) made in a forked child returns DLOCK_EFORKED;
 * the child creates its own client. In the child, dlock_client_free and
 * dlock_rlock_free release no threads or connections (they are the
 * parent's) and take no lock another parent thread may have held at the
 * fork, so they never hang there.
 *
 * Thread-safety: a client and its lock objects may be used from any number of
 * threads at once.
 */
#ifndef DLOCK_CLIENT_H
#define DLOCK_CLIENT_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "times.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Longest owner id, including the terminating NUL. */
#define DLOCK_OWNER_MAX 128

/* Called on the watchdog thread when a renewal finds that owner no longer
 * holds the lock called name (lease expired, force-unlocked, key deleted),
 * and when max_hold_ms stops renewing a hold (its lease then runs out; an
 * unlock before that still succeeds). A lock object's own callback
 * (dlock_rlock_set_on_lost, api/dlock/lock.h) replaces this one for its
 * holds.
 * The strings are valid during the call only. Must not block for long (no
 * renewal of this client's other locks happens meanwhile); may call any
 * dlock function, including dlock_rlock_free of the lost lock's handle and
 * dlock_client_free of this client. When that drops the client's last
 * reference (the application had already freed the client), the client is
 * torn down on the watchdog thread right after the callback returns; the
 * callback itself may go on using what it was given until then. */
typedef void (*dlock_lost_fn)(void *arg, const char *name, const char *owner);

/* The durations are at most DLOCK_TIME_MAX_MS (api/dlock/times.h). */
typedef struct dlock_client_options {
    int version;                 /* DLOCK_CLIENT_OPTIONS_VERSION (1);
                                  * fields are only ever appended, and
                                  * a version this library does not
                                  * know is refused */
    int64_t watchdog_timeout_ms; /* lease of lease-0 locks, renewed every 1/3;
                                  * 3..DLOCK_TIME_MAX_MS */
    int64_t max_hold_ms;         /* stop renewing after this; 0 = never stop;
                                  * 0..DLOCK_TIME_MAX_MS */
    int64_t fair_wait_slack_ms;  /* fair-lock W (api/dlock/fair.h): the
                                  * Java clients' threadWaitTime;
                                  * 1..DLOCK_TIME_MAX_MS */
    dlock_lost_fn on_lost;       /* may be NULL */
    void *on_lost_arg;
    /* A call with a time budget (try_lock's wait, the semaphore and latch
     * waits) returns within its budget plus this: every round trip it makes
     * is cut off at budget + budget_slack_ms, so a reply that takes longer
     * ends the call with DLOCK_ETIMEDOUT (and is never handed to another
     * call). It is also what a wait of 0 grants its one attempt: on a link
     * whose round trip is slower than this, give try_lock a wait that
     * covers one. >= 0; default 50. */
    int64_t budget_slack_ms;
    /* A waiter of this client in a fair lock's queue that has not renewed
     * its place for this long is presumed dead, and stops blocking the
     * queue once first in line, whatever its deadline W says
     * (api/dlock/fair.h). Its waiters renew it at least every quarter of
     * this. 0: none, this client's waiters are presumed dead by W alone,
     * as Java clients' are. URL query parameter fair_waiter_timeout_ms=N
     * (wins over this field), JSON key "fair_waiter_timeout_ms".
     * 0..DLOCK_TIME_MAX_MS; default 5000. */
    int64_t fair_waiter_timeout_ms;
    /* 1: the client publishes who it is (host name, pid, program, start
     * time) for tools that show lock holders (dlock(1)'s status and list;
     * dlock_client_owner_info below): one key per client, whatever the
     * number of its locks, "dlock_owner:{<client uuid>}" (a hash), written
     * by the watchdog thread when the client starts and every third of
     * watchdog_timeout_ms after, expiring after watchdog_timeout_ms (so it
     * goes that long after the client does). The host name and program
     * are readable by anyone who can read the server. URL query parameter
     * describe_owner=0|1 (wins over this field), JSON key
     * "describe_owner" (true/false). Default 0. */
    int describe_owner;
    /* The client's name in its metrics: the label client="..." of every
     * series dlock_client_metrics_prometheus renders (api/dlock/metrics.h).
     * Unlike the client's UUID it stays the same across restarts, so a
     * series outlives its process. 1..DLOCK_CLIENT_NAME_MAX bytes of UTF-8
     * (any characters: the exposition escapes them), copied by the client;
     * NULL: the program's name (glibc's program_invocation_short_name,
     * "dlock" when that is empty or not UTF-8). URL query parameter
     * client_name=S, percent-encoded (wins over this field), JSON key
     * "client_name". dlock_client_name reads it. */
    const char *client_name;
    /* Per-lock-name counters in the metrics: the first metrics_names_max
     * distinct lock names this client acquires, is refused, or loses get
     * counters of their own (acquisitions, busy attempts, lost holds);
     * every later name, and a name that is not UTF-8, is counted in one
     * "other" bucket, so the number of series stays bounded whatever names
     * the application uses. 0 (default): off, nothing is counted per name
     * and nothing is spent. URL query parameter metrics_names_max=N (wins
     * over this field), JSON key "metrics_names_max".
     * 0..DLOCK_METRICS_NAMES_MAX. */
    int64_t metrics_names_max;
    /* How long one call of a dlock_loop of this client (dlock_loop_run,
     * dlock_loop_on_fd / _on_timer / _on_wakeup; api/dlock/async.h) may
     * run operations and callbacks before it returns, leaving the rest for
     * the next call (the loop's fd stays readable meanwhile): what bounds
     * how long your event loop is held up when thousands of operations are
     * due at once. Real milliseconds, whatever the client's clock; a call
     * may exceed it by one operation's step or one callback. 0: no bound
     * (a call runs until nothing is left). JSON key "loop_slice_ms".
     * 0..DLOCK_TIME_MAX_MS; default 2. */
    int64_t loop_slice_ms;
} dlock_client_options;

/* The options' version this header describes: every field above. */
#define DLOCK_CLIENT_OPTIONS_VERSION 1
#define DLOCK_CLIENT_OPTIONS_INIT {DLOCK_CLIENT_OPTIONS_VERSION, 30000, 0, 300000, NULL, NULL, 50, 5000, 0, NULL, 0, 2}

/* Longest client_name, in bytes (without the NUL). */
#define DLOCK_CLIENT_NAME_MAX 256
/* Most lock names with counters of their own (metrics_names_max). */
#define DLOCK_METRICS_NAMES_MAX 10000

/* A client's description of itself (describe_owner). Strings cut to fit. */
typedef struct dlock_owner_info {
    char host[256];
    long long pid;
    char program[256];
    int64_t started_ms; /* when its client was made, unix ms */
} dlock_owner_info;

/* With describe_owner set, publishes c's description now rather than when
 * the watchdog thread gets to it (which rewrites it after): for a program
 * that wants it seen before it goes on. Blocks for one round trip. Without
 * describe_owner, does nothing. 0, DLOCK_EINVAL, DLOCK_EFORKED, or a
 * backend's error. */
DLOCK_API int dlock_client_describe(dlock_client *c);

/* The description published by the client of owner (an owner id
 * "<uuid>:<thread>" or a client id), read through c: *found 1 and *out
 * filled, or *found 0 (none published, expired, or owner is not a dlock
 * id). Blocks for one round trip. 0, DLOCK_EINVAL (NULL argument),
 * DLOCK_EFORKED, or a backend's error (DLOCK_EPROTO: not a description
 * stored there). */
DLOCK_API int dlock_client_owner_info(dlock_client *c, const char *owner,
                                      dlock_owner_info *out, int *found);

/* Creates a client on backend. On success the client owns the backend (it
 * is freed with the client); on failure the caller keeps it. opts may be NULL
 * (defaults). Starts the watchdog thread.
 * 0, DLOCK_EINVAL (NULL out/backend, bad option, options or a backend
 * table of a version this library does not know), DLOCK_ENOMEM. */
DLOCK_API int dlock_client_new(dlock_client **out, dlock_backend *backend,
                               const dlock_client_options *opts);

/* Creates a client from a URL: "mock:" (a private in-memory store on the
 * real-time clock), "mock://NAME" (the store a test registered under NAME,
 * on its clock: api/dlock/mock.h), or a redis:// or unix:// URL
 * (api/dlock/redis.h, default options). errbuf (may be NULL) receives a one-line detail on failure.
 * Blocks for at most the connect timeout; a URL with lazy_connect=1
 * (api/dlock/redis.h) makes the client without connecting, so without
 * blocking, while its server is down. Returns what
 * dlock_redis_backend_new returns, or DLOCK_EINVAL for an unknown scheme. */
DLOCK_API int dlock_client_connect(dlock_client **out, const char *url,
                                   const dlock_client_options *opts, char *errbuf,
                                   size_t errlen);

/* Drops the application's reference (see Lifetime). NULL is a no-op. First
 * cancels the calls blocked on c at that moment, as dlock_client_cancel_waits
 * (not in a fork() child). Joins the watchdog when the last reference goes
 * (unless called on the watchdog thread, in on_lost: the watchdog then ends
 * after the callback). */
DLOCK_API void dlock_client_free(dlock_client *c);

/* Wakes every call of this client (through any of its lock objects) that is
 * blocked at this moment: dlock_lock, the try_lock waits, the semaphore,
 * permit-semaphore and latch waits, including the back-off sleeps of an
 * unbounded call retrying a lost connection. They return DLOCK_ECANCELED
 * without the lock or permits (a fair-lock waiter leaves the queue). A call
 * that is in the middle of a round trip (its first attempt, a subscribe)
 * returns after that round trip, with the lock if that attempt got it.
 * Calls started after this returns wait normally: it is a one-time wake-up,
 * not a state of the client.
 * Any thread may call it, including on_lost on the watchdog thread; it
 * never blocks on the network. 0, DLOCK_EINVAL (c NULL), DLOCK_EFORKED (in a
 * fork() child). */
DLOCK_API int dlock_client_cancel_waits(dlock_client *c);

/* Replaces the client's on_lost callback and its arg (a client made from a
 * URL or a JSON configuration gets one this way). Also called when
 * max_hold_ms stops renewing a hold (its lease then runs out). Takes effect
 * for the next report; a callback under way finishes with the old one.
 * Never blocks on the network. 0, DLOCK_EINVAL (c NULL), DLOCK_EFORKED. */
DLOCK_API int dlock_client_set_on_lost(dlock_client *c, dlock_lost_fn fn, void *arg);

/* Why the calling thread's last refused attempt to make an object on c
 * failed (a lock, semaphore, latch or bucket constructor returning
 * DLOCK_EINVAL for its name has no object whose errmsg could tell): e.g.
 * which reserved form the name has (api/dlock/lock.h, "Reserved names").
 * "" when none was refused; the text stays until the thread's next refused
 * constructor call. Borrowed, the calling thread's own. Never blocks. */
DLOCK_API const char *dlock_client_errmsg(const dlock_client *c);

/* The client's UUID (borrowed, valid as long as the client). */
DLOCK_API const char *dlock_client_id(const dlock_client *c);

/* The client's name (client_name, or its default; borrowed, valid as long
 * as the client). NULL for a NULL c. Never blocks. */
DLOCK_API const char *dlock_client_name(const dlock_client *c);

/* Writes the calling thread's owner id into buf.
 * 0, DLOCK_EINVAL (NULL, or len < the id's length + 1). Never blocks. */
DLOCK_API int dlock_client_owner(dlock_client *c, char *buf, size_t len);

/* Writes a new owner id of c into buf: "<client-uuid>:<n>", the layout of
 * a thread's id (Redisson's "<uuid>:<thread id>"), n never handed out
 * before in the process (no thread has it, no other call returned it).
 * For a task that is not a thread (a request handled in callbacks, a
 * job that moves between workers): mint one per task and pass it to
 * every call of the task (the _as and _async forms), so that two tasks
 * never share a hold by accident. Thread-safe, never blocks, sends
 * nothing. 0, DLOCK_EINVAL (NULL, or len < the id's length + 1;
 * DLOCK_OWNER_MAX always fits). */
DLOCK_API int dlock_client_owner_new(dlock_client *c, char *buf, size_t len);

/* The client's backend (borrowed). */
DLOCK_API dlock_backend *dlock_client_backend(dlock_client *c);

/* What the servers that keep c's locks said, when c's backend connected
 * to them, of evicting keys (maxmemory-policy) and persisting them (AOF,
 * RDB save points): dlock_server_safety in api/dlock/backend.h, which
 * says what each field means; api/dlock/fenced.h says when fencing tokens
 * hold, and the README's "Deploying" how to set a server up. The Redis
 * backend reads it on the connection being set up (the first to a server,
 * the first after a reconnect or a failover; with lazy_connect, the first
 * call's), never on a lock operation, and logs one DLOCK_LOG_WARN line
 * per backend (api/dlock/log.h) the first time a server can evict lock
 * keys or send tokens back. Never blocks, never talks to a server.
 * 0; DLOCK_EINVAL (NULL, out->version not 1); DLOCK_ENOTSUP (a backend
 * that cannot tell: the mock). Any thread. */
struct dlock_server_safety;
DLOCK_API int dlock_client_server_safety(dlock_client *c,
                                         struct dlock_server_safety *out);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_CLIENT_H */
