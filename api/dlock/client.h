/*
 * dlock — the client.
 *
 * The client is what an application creates first. It owns a backend, a
 * random identity (a libuuid UUID, lower-case, 36 characters) and the shared
 * services of the lock objects made from it:
 *
 *  - owner ids: "<client-uuid>:<thread-id>", the thread id a small decimal
 *    integer unique in the process. The plain lock calls act for the calling
 *    thread's owner id; the *_as calls (api/dlock/rlock.h) take an explicit
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
 * object made from it.
 *
 * fork(): a child must not act under its parent's identity. Every call on a
 * client (or its lock objects) made in a forked child returns DLOCK_EFORKED;
 * the child creates its own client. In the child, dlock_client_free and
 * dlock_rlock_free release no threads or connections (they are the parent's).
 *
 * Thread-safety: a client and its lock objects may be used from any number of
 * threads at once.
 */
#ifndef DLOCK_CLIENT_H
#define DLOCK_CLIENT_H

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif


/* Longest owner id, including the terminating NUL. */
#define DLOCK_OWNER_MAX 128

/* Called on the watchdog thread when a renewal finds that owner no longer
 * holds the lock called name (lease expired, force-unlocked, key deleted).
 * The strings are valid during the call only. Must not block for long; may
 * call any dlock function except dlock_client_free on this client. */
typedef void (*dlock_lost_fn)(void *arg, const char *name, const char *owner);

typedef struct dlock_client_options {
    int version;                 /* 1 */
    int64_t watchdog_timeout_ms; /* lease of lease-0 locks, renewed every 1/3 */
    int64_t max_hold_ms;         /* stop renewing after this; 0 = never stop */
    int64_t fair_wait_slack_ms;  /* fair-lock W (api/dlock/fair.h): the
                                  * Java clients' threadWaitTime */
    dlock_lost_fn on_lost;       /* may be NULL */
    void *on_lost_arg;
} dlock_client_options;

#define DLOCK_CLIENT_OPTIONS_INIT {1, 30000, 0, 300000, NULL, NULL}

/* Creates a client on backend. On success the client owns the backend (it
 * is freed with the client); on failure the caller keeps it. opts may be NULL
 * (defaults). Starts the watchdog thread.
 * 0, DLOCK_EINVAL (NULL out/backend, bad option), DLOCK_ENOMEM. */
int dlock_client_new(dlock_client **out, dlock_backend *backend,
                     const dlock_client_options *opts);

/* Creates a client from a URL: "mock:" (a private in-memory store on the
 * real-time clock), or a redis:// or unix:// URL (api/dlock/redis.h, default
 * options). errbuf (may be NULL) receives a one-line detail on failure.
 * Blocks for at most the connect timeout. Returns what
 * dlock_redis_backend_new returns, or DLOCK_EINVAL for an unknown scheme. */
int dlock_client_connect(dlock_client **out, const char *url,
                         const dlock_client_options *opts, char *errbuf,
                         size_t errlen);

/* Drops the application's reference (see Lifetime). NULL is a no-op. Joins
 * the watchdog when the last reference goes. */
void dlock_client_free(dlock_client *c);

/* The client's UUID (borrowed, valid as long as the client). */
const char *dlock_client_id(const dlock_client *c);

/* Writes the calling thread's owner id into buf.
 * 0, DLOCK_EINVAL (NULL, or len < the id's length + 1). Never blocks. */
int dlock_client_owner(dlock_client *c, char *buf, size_t len);

/* The client's backend (borrowed). */
dlock_backend *dlock_client_backend(dlock_client *c);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_CLIENT_H */
