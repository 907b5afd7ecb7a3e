/*
 * dlock — the backend interface (for people who write a backend).
 *
 * A backend is a store that runs one atomic Lua script at a time, carries
 * pub/sub messages and tells time. That is all the lock objects need; they
 * know a backend only through this table.
 *
 * The table starts with a version field and only ever grows at its end.
 * A backend is thread-safe: any number of threads may call any slot at once.
 */
#ifndef DLOCK_SYS_BACKEND_H
#define DLOCK_SYS_BACKEND_H

#include "../export.h"

#include "../types.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "../backend.h"
#include "../errors.h"
#include "clock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- replies (the type: api/dlock/backend.h) ------------------------- */

/* Constructors for backends. Each returns NULL when out of memory. */
DLOCK_API dlock_reply *dlock_reply_nil(void);
DLOCK_API dlock_reply *dlock_reply_integer(long long v);
DLOCK_API dlock_reply *dlock_reply_string(dlock_reply_type type, const char *s, size_t len);
DLOCK_API dlock_reply *dlock_reply_array(size_t n); /* n NULL slots to fill */

/* ---- scripts ----------------------------------------------------------- */

/* A Lua script (the built-in ones: the .lua files of objects/scripts,
 * embedded at build time). A backend may cache per-script state (the Redis
 * backend: the SHA1 of the source), but keyed by the source's content, so
 * a struct on the stack, or one reused for another source, runs its own
 * code. */
typedef struct dlock_script {
    const char *name;   /* "reentrant_acquire": used in error details */
    const char *source; /* NUL-terminated Lua 5.1 source */
} dlock_script;

/* Writes and replica sync. A script is taken to change state unless its
 * source begins with this line: then it must only read (no SET, DEL,
 * PEXPIRE, PUBLISH ...). A backend asked to sync writes to replicas
 * (dlock_redis_options.sync_replicas) waits for the replicas after every
 * script that writes and skips that wait for one that only reads, so mark
 * the read-only scripts of a custom lock type (state, inspect, TTL
 * queries) with it, e.g. {"my_state", DLOCK_SCRIPT_NO_WRITES "return ..."};
 * an unmarked script costs the wait but is never wrong. It is a Lua
 * comment: every backend runs the script unchanged. */
#define DLOCK_SCRIPT_NO_WRITES "-- dlock: no-writes\n"

/* Whether script only reads (its source begins with DLOCK_SCRIPT_NO_WRITES,
 * above); 0 for NULL. For backends. Never blocks. */
DLOCK_API int dlock_script_no_writes(const dlock_script *script);

/* ---- pub/sub ----------------------------------------------------------- */

/* Called for each message on a subscribed channel. Runs on a backend thread
 * (the mock: on the publishing thread, after the publishing script has
 * finished). Must be quick and must not call back into the backend. The
 * strings are valid for the duration of the call only. After a lost
 * connection is restored, a backend may call it once with an empty message
 * (len 0): messages may have been missed meanwhile, so look again. */
typedef void (*dlock_message_fn)(void *arg, const char *channel,
                                 const char *message, size_t len);

/* ---- the backend ------------------------------------------------------- */

/* A call between its halves (eval_send, eval_receive): the backend's. */
typedef struct dlock_pending dlock_pending;

/* Why a write went without the replica sync asked of the backend (the
 * unsynced slot; the Redis backend's sync_replicas, api/dlock/redis.h):
 * sync_replicas = -1 found no replica connected; the server refused WAIT
 * for good (unknown command, NOPERM), which turned sync off. */
#define DLOCK_UNSYNCED_NO_REPLICA 0
#define DLOCK_UNSYNCED_REFUSED 1

/* The method table's version this header describes: every slot below is
 * part of version 1. A later version only appends slots (a table of an
 * older version is shorter: the dispatchers never read past what its
 * version promises); dlock_client_new refuses a backend whose table's
 * version is not one this library knows. */
#define DLOCK_BACKEND_VERSION 1
/* For a table filled at run time: `dlock_backend_methods m =
 * DLOCK_BACKEND_METHODS_INIT;` then set its slots. A constant table names
 * its slots: `{.version = DLOCK_BACKEND_VERSION, .name = "mine", .eval =
 * ..., ...}` (a slot not named is NULL: the dispatcher's fallback). */
#define DLOCK_BACKEND_METHODS_INIT {DLOCK_BACKEND_VERSION, NULL, NULL, NULL, NULL, \
                                    NULL, NULL, NULL, NULL, NULL, NULL, NULL,       \
                                    NULL, NULL, NULL, NULL, NULL, NULL}

typedef struct dlock_backend_methods {
    int version; /* DLOCK_BACKEND_VERSION (see there) */
    const char *name; /* "mock", "redis" */

    /* Runs script atomically with KEYS = argv[0..nkeys) and
     * ARGV = argv[nkeys..nkeys+nargs). argvlen may be NULL (then every
     * argument is a NUL-terminated string). On success returns 0 and *out
     * holds the reply, which the caller owns and frees with
     * dlock_reply_free; a script error is a successful call whose reply has
     * type DLOCK_REPLY_ERROR. On failure returns DLOCK_ECONN, DLOCK_ETIMEDOUT,
     * DLOCK_EAUTH, DLOCK_EPROTO or DLOCK_ENOMEM, sets *out = NULL, and writes
     * a one-line detail into errbuf (may be NULL) of size errlen.
     * One exception: DLOCK_ESYNC (a backend that syncs writes to replicas,
     * e.g. Redis with sync_replicas) means the script RAN and *out holds
     * its reply (the caller owns it, as on success), but fewer replicas
     * than required acknowledged its writes; errbuf says how many. The
     * backend cannot undo a script: the caller decides (the lock objects
     * roll an acquisition back and report an unlock or renewal as done).
     * Blocks for at most one round trip (bounded by the command timeout;
     * plus the replicas' acknowledgement, bounded by the sync timeout). */
    int (*eval)(dlock_backend *b, dlock_reply **out, const dlock_script *script,
                size_t nkeys, size_t nargs, const char *const *argv,
                const size_t *argvlen, char *errbuf, size_t errlen);

    /* Adds a listener on channel. Returns only once the server confirmed the
     * subscription (0) or on failure (negative code, *out = NULL). The
     * backend references counts listeners per channel: the channel is
     * subscribed on the server once, and restored after a reconnect.
     * fn/arg must stay valid until the matching unsubscribe returns. May block
     * for one round trip. */
    int (*subscribe)(dlock_backend *b, dlock_subscription **out,
                     const char *channel, dlock_message_fn fn, void *arg);

    /* Removes a listener. When it returns, fn is not running and will not be
     * called again for this subscription. Never fails; may block briefly. */
    void (*unsubscribe)(dlock_backend *b, dlock_subscription *sub);

    /* The clock this backend's time and waits follow. Borrowed: valid as
     * long as the backend. Never blocks. */
    dlock_clock *(*clock)(dlock_backend *b);

    /* Closes connections, joins threads, frees b. Every subscription must
     * have been removed before. */
    void (*free)(dlock_backend *b);

    /* eval, bounded by deadline_ms on this backend's clock (its now_ms):
     * when the reply has not come by then the call returns DLOCK_ETIMEDOUT
     * at the deadline (or DLOCK_ECONN when no connection could be had in
     * time), and the late reply is never handed to another call (the
     * connection it was due on is dropped). INT64_MAX: bounded by the
     * backend's own timeouts only, as eval. May be NULL: the dispatcher
     * then calls eval (a backend that never blocks, like the mock). */
    int (*eval_until)(dlock_backend *b, dlock_reply **out,
                      const dlock_script *script, size_t nkeys, size_t nargs,
                      const char *const *argv, const size_t *argvlen,
                      int64_t deadline_ms, char *errbuf, size_t errlen);

    /* subscribe, waiting for the server's confirmation until deadline_ms at
     * the latest (DLOCK_ETIMEDOUT then, nothing left subscribed for this
     * call); on failure a one-line detail goes into errbuf (may be NULL) of
     * size errlen. May be NULL: the dispatcher then calls subscribe. */
    int (*subscribe_until)(dlock_backend *b, dlock_subscription **out,
                           const char *channel, dlock_message_fn fn, void *arg,
                           int64_t deadline_ms, char *errbuf, size_t errlen);

    /* How many times this backend re-established a connection after
     * failing to connect (for the client's metrics, api/dlock/metrics.h).
     * Never blocks; any thread. May be NULL (counted as 0). */
    uint64_t (*reconnects)(dlock_backend *b);

    /* The command scripts publish wake-up messages with: "publish"
     * (standalone Redis, the mock) or "spublish" (Redis Cluster: sharded
     * pub/sub, as Redisson 3.22+ uses in cluster mode; the channel then
     * lives on the node of its slot, and subscribe follows it). The lock
     * objects pass it to every script that publishes (its last ARGV
     * entry). A static string, or one valid as long as b. Never blocks;
     * any thread. May be NULL ("publish"). */
    const char *(*publish_command)(dlock_backend *b);

    /* The group key (len bytes, not NUL-terminated) belongs to: one script
     * call may only touch keys of one group, so that a caller batching
     * several objects into one call (the watchdog's renewals) splits the
     * batch by group. Redis Cluster: the hash slot (0..16383, CRC16 of the
     * key or of its first non-empty {hash tag}). Never blocks; any thread.
     * May be NULL, and a single-node backend answers 0 for every key. */
    unsigned (*key_slot)(dlock_backend *b, const char *key, size_t len);

    /* eval_until split so that one thread can have calls in flight on
     * several backends at once (a Redlock's attempt on every node: one
     * round trip of the slowest node, no thread per node). eval_send
     * starts the call and returns without waiting for its reply: 0 and
     * *out, a pending call that eval_receive must then complete exactly
     * once (any thread); or a failure as eval_until's, *out = NULL, the
     * script not run, nothing to receive. It copies argv (which may go
     * once it returns); script must stay valid until eval_receive
     * returns. deadline_ms bounds the whole call, the receive included.
     * May block to open a connection or while the socket is full, never
     * for the reply. eval_receive waits for the reply (until the send's
     * deadline) and returns exactly what eval_until would have for that
     * call, ESYNC included; it frees p. Both may be NULL (then the
     * dispatcher's eval_send says DLOCK_ENOTSUP: use eval_until). */
    int (*eval_send)(dlock_backend *b, dlock_pending **out,
                     const dlock_script *script, size_t nkeys, size_t nargs,
                     const char *const *argv, const size_t *argvlen,
                     int64_t deadline_ms, char *errbuf, size_t errlen);
    int (*eval_receive)(dlock_backend *b, dlock_pending *p, dlock_reply **out,
                        char *errbuf, size_t errlen);

    /* How many writes this backend sent without the replica sync it was
     * configured for, for cause (a DLOCK_UNSYNCED_*; 0 for another), for
     * the client's metrics (api/dlock/metrics.h). Never blocks; any
     * thread. May be NULL (counted as 0). */
    uint64_t (*unsynced)(dlock_backend *b, int cause);

    /* What the backend's servers said, when its connections were set up,
     * of evicting and persisting keys (api/dlock/backend.h,
     * dlock_server_safety: the slot fills the fields after version; the
     * dispatcher has checked out and its version). Read it at connect
     * time, in the handshake's round trip, never on a lock operation.
     * 0, or a code. Never blocks on the network; any thread. May be NULL
     * (dlock_backend_server_safety then says DLOCK_ENOTSUP). */
    int (*server_safety)(dlock_backend *b, dlock_server_safety *out);

    /* How many pub/sub messages this backend ignored instead of handing
     * them to listeners: a payload no PUBLISH sends (the Redis backend:
     * a reply that is not a string, from a broken or hostile server), for
     * the client's metrics. Never blocks; any thread. May be NULL
     * (counted as 0). */
    uint64_t (*ignored_messages)(dlock_backend *b);

    /* The node group key (len bytes) belongs to: keys of one group may go
     * in one eval_node call, though their key_slot groups differ. Redis
     * Cluster: the master serving the key's slot now (an id of the
     * backend's, meaningful until the slot map changes), or the key's own
     * slot (a value no master id takes) while that slot is not known or
     * its master refused such calls. Keys of one key_slot group always
     * share a key_node group. Never blocks; any thread. May be NULL (the
     * dispatcher answers key_slot's group). */
    unsigned (*key_node)(dlock_backend *b, const char *key, size_t len);

    /* eval_until for a call whose KEYS share one key_node group but may
     * lie in several key_slot groups (the watchdog renewing the holds of
     * one master in one call; the script must touch keys of those slots
     * only). Returns what eval_until would, or DLOCK_ENOTSUP when the
     * call could not run over several slots and ran nothing the caller
     * depends on (the server refuses such scripts: remembered per node,
     * so that key_node stops grouping its keys; or a key's slot was not
     * served by the node at the time, a slot moving; or any error reply:
     * the script's own errors come back from the split calls): the
     * caller then splits the call by key_slot. The script may have run in part in
     * the second case (a renewal is repeated harmlessly). Blocks as
     * eval_until. May be NULL (DLOCK_ENOTSUP). */
    int (*eval_node)(dlock_backend *b, dlock_reply **out,
                     const dlock_script *script, size_t nkeys, size_t nargs,
                     const char *const *argv, const size_t *argvlen,
                     int64_t deadline_ms, char *errbuf, size_t errlen);
} dlock_backend_methods;

/* Whether a table fills a slot (of version 1: every slot today; a slot a
 * later version appends will be tested with its version too). */
#define DLOCK_BACKEND_HAS_SLOT(m, slot) ((m)->slot != NULL)

struct dlock_backend {
    const dlock_backend_methods *methods;
};

/* Dispatchers (no validation beyond NULL checks). */
DLOCK_API int dlock_backend_eval(dlock_backend *b, dlock_reply **out,
                                 const dlock_script *script, size_t nkeys, size_t nargs,
                                 const char *const *argv, const size_t *argvlen,
                                 char *errbuf, size_t errlen);
DLOCK_API int dlock_backend_subscribe(dlock_backend *b, dlock_subscription **out,
                                      const char *channel, dlock_message_fn fn, void *arg);
/* eval_until and subscribe_until, falling back to eval/subscribe (unbounded by
 * deadline_ms) for a backend without them. */
DLOCK_API int dlock_backend_eval_until(dlock_backend *b, dlock_reply **out,
                                       const dlock_script *script, size_t nkeys,
                                       size_t nargs, const char *const *argv,
                                       const size_t *argvlen, int64_t deadline_ms,
                                       char *errbuf, size_t errlen);
DLOCK_API int dlock_backend_subscribe_until(dlock_backend *b, dlock_subscription **out,
                                            const char *channel, dlock_message_fn fn,
                                            void *arg, int64_t deadline_ms, char *errbuf,
                                            size_t errlen);
DLOCK_API void dlock_backend_unsubscribe(dlock_backend *b, dlock_subscription *sub);
DLOCK_API dlock_clock *dlock_backend_clock(dlock_backend *b);
/* The reconnects slot; 0 for a backend without it (or NULL). */
DLOCK_API uint64_t dlock_backend_reconnects(dlock_backend *b);
/* The unsynced slot; 0 for a backend without it (or NULL). */
DLOCK_API uint64_t dlock_backend_unsynced(dlock_backend *b, int cause);
/* The ignored_messages slot; 0 for a backend without it (or NULL). */
DLOCK_API uint64_t dlock_backend_ignored_messages(dlock_backend *b);
/* publish_command and key_slot. publish_command: "publish" for a backend without
 * it (or NULL). key_slot: 0 for a backend without it (or NULL, or key
 * NULL). Never block. */
DLOCK_API const char *dlock_backend_publish_command(dlock_backend *b);
DLOCK_API unsigned dlock_backend_key_slot(dlock_backend *b, const char *key,
                                          size_t len);
/* key_node and eval_node. key_node: key_slot's answer for a backend
 * without it. eval_node: DLOCK_ENOTSUP (nothing done, *out = NULL, no
 * detail) for a backend without it. Block as the slots do. */
DLOCK_API unsigned dlock_backend_key_node(dlock_backend *b, const char *key,
                                          size_t len);
DLOCK_API int dlock_backend_eval_node(dlock_backend *b, dlock_reply **out,
                                      const dlock_script *script, size_t nkeys,
                                      size_t nargs, const char *const *argv,
                                      const size_t *argvlen, int64_t deadline_ms,
                                      char *errbuf, size_t errlen);
/* eval_send and eval_receive. eval_send: DLOCK_ENOTSUP (nothing done, *out =
 * NULL, no detail) for a backend without them; can_split says beforehand
 * whether b has them (1) or not (0, also for NULL). eval_receive: p from
 * b's eval_send. Block as the slots do. */
DLOCK_API int dlock_backend_can_split(dlock_backend *b);
DLOCK_API int dlock_backend_eval_send(dlock_backend *b, dlock_pending **out,
                                      const dlock_script *script, size_t nkeys,
                                      size_t nargs, const char *const *argv,
                                      const size_t *argvlen, int64_t deadline_ms,
                                      char *errbuf, size_t errlen);
DLOCK_API int dlock_backend_eval_receive(dlock_backend *b, dlock_pending *p,
                                         dlock_reply **out, char *errbuf,
                                         size_t errlen);
/* dlock_backend_free: api/dlock/backend.h */

/* ---- waiting for a socket ---------------------------------------------- */

/* What dlock_backend_wait_fd waits for (one of them). */
#define DLOCK_WAIT_READ 1
#define DLOCK_WAIT_WRITE 2

/* Waits until fd is ready for events (DLOCK_WAIT_READ or DLOCK_WAIT_WRITE,
 * as poll(2)'s POLLIN and POLLOUT; an error or a hang-up counts as ready)
 * or until deadline_ms, a time of dlock_clock_now on
 * dlock_clock_realtime() (CLOCK_MONOTONIC, in ms; INT64_MAX: no deadline).
 * A deadline already past is one look without waiting. Returns 1 (ready),
 * 0 (the deadline passed first), DLOCK_EINVAL (fd < 0, or not one event)
 * or DLOCK_ECONN (poll failed; errno says why).
 *
 * The one call a backend's slots should wait for their sockets with: on a
 * plain thread it blocks the thread (poll); when the slot runs for an
 * asynchronous operation (api/dlock/async.h: on the loop's thread, in the
 * operation's fiber) it does not block: the operation is parked, the
 * loop's thread goes on with the others and resumes it when the loop's
 * poller sees fd ready or the deadline comes. So a backend written outside
 * the library that waits only through this (and never with poll, select,
 * a blocking recv or a sleep of its own) never stalls a loop.
 *
 * fd stays the caller's: it is only borrowed for the call, must stay open
 * until the call returns, and may be any pollable descriptor (a socket, a
 * pipe). While parked, the loop may run other operations on the same
 * thread, some perhaps calling into the same backend: hold no lock of the
 * backend's across the call (the blocking thread of another operation
 * would then wait for it, or the loop's thread would deadlock). A backend
 * that waits for a reply another caller reads should use a deadline and
 * look again. Any thread. */
DLOCK_API int dlock_backend_wait_fd(int fd, int events, int64_t deadline_ms);

/* With mu held: waits until cv is signalled or deadline_ms passes (the
 * deadline as dlock_backend_wait_fd's) and returns with mu held again: 0,
 * or DLOCK_ETIMEDOUT once the deadline is past; DLOCK_EINVAL for a NULL
 * cv or mu. As pthread_cond_wait, it may return early: look at the
 * condition again. cv should be initialised to time its waits on
 * CLOCK_MONOTONIC (pthread_condattr_setclock) when a deadline is given.
 * On a plain thread it blocks the thread (pthread_cond_timedwait); in an
 * asynchronous operation's fiber the thread never waits on cv: mu is
 * released, the operation is parked a millisecond at a time (the loop goes
 * on) and mu retaken, so the waker needs nothing more than its
 * pthread_cond_signal or _broadcast. The same rule as above: hold no other
 * lock across the call. Any thread. */
DLOCK_API int dlock_backend_wait_cond(pthread_cond_t *cv, pthread_mutex_t *mu,
                                      int64_t deadline_ms);

/* ---- the registry: backends found by URL scheme ----------------------- */

/* Opens a backend for url, whose scheme (the text before its first ':')
 * it was registered under. options: the backend's own options struct, or
 * NULL for its defaults (the Redis schemes: const dlock_redis_options *;
 * the mock ignores it). On success 0 and *out, the caller's (free it with
 * dlock_backend_free, or hand it to dlock_client_new). On failure a code,
 * *out = NULL, and a one-line detail in errbuf (may be NULL) of size
 * errlen that never holds more of url than its scheme, or what the
 * backend's own parser shows (never a password). May block as the
 * backend's constructor does (connecting). Any thread. */
typedef int (*dlock_backend_open_fn)(void *arg, dlock_backend **out, const char *url,
                                     const void *options, char *errbuf,
                                     size_t errlen);

/* Registers open (with arg, passed back as its first argument) for URLs
 * of scheme (1..32 characters: a lower-case letter, then lower-case
 * letters, digits, '+', '-', '.'; no ':'). The built-in ones ("mock",
 * "redis", "rediss", "unix", "redis-sentinel", "rediss-sentinel",
 * "redis-cluster", "rediss-cluster") are there from the start. open NULL
 * removes scheme. dlock_client_connect and the JSON configuration find a
 * backend through this table. 0; DLOCK_EINVAL (a bad scheme, one already
 * registered, or removing one that is not); DLOCK_ENOMEM (the table holds
 * 32). Any thread; open and arg must stay valid while registered. */
DLOCK_API int dlock_backend_register(const char *scheme, dlock_backend_open_fn open,
                                     void *arg);
DLOCK_API int dlock_backend_open(dlock_backend **out, const char *url,
                                 const void *options, char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_SYS_BACKEND_H */
