/*
 * dlock — the client's innards (client.c): struct dlock_client, its
 * references, owner ids and the cancellable waits (dlock__waiter).
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_CLIENT_H
#define DLOCK_OBJECTS_RUNTIME_CLIENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dlock/client.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"
#include "objects/runtime/holds.h"
#include "objects/runtime/metrics.h"
#include "objects/runtime/wakes.h"

/* A call blocked in dlock_rlock_wait, registered with its client so that
 * dlock_client_cancel_waits can wake it. Lives on the waiter's stack. */
typedef struct dlock__waiter {
    dlock_signal *sig; /* NULL until registered */
    uint64_t gen;      /* the client's cancel generation when the call began */
    struct dlock__waiter *prev, *next;
} dlock__waiter;

struct dlock_client {
    dlock_backend *backend;
    dlock_clock *clock; /* the backend's */
    char id[37];
    pid_t pid;
    int64_t started_ms; /* unix ms, for its description (report/describe.c) */
    dlock_client_options opts;

    /* Atomic, not under a mutex: a fork() child drops references (its
     * frees) and must not take a mutex a parent thread may have held at
     * the fork. */
    int refs;

    dlock__holds holds;

    /* Blocked waits (dlock__waiter), for dlock_client_cancel_waits. */
    pthread_mutex_t waits_mutex;
    dlock__waiter waits; /* sentinel */
    uint64_t cancel_gen; /* atomic; bumped by every cancel */
    /* Blocked waits again, per channel, in arrival order: whom a message
     * wakes (wakes.h). */
    dlock__wakes wakes;

    /* the watchdog */
    pthread_t wd_thread;
    int wd_started;
    int wd_stop;     /* under holds.mutex */
    int wd_orphaned; /* under holds.mutex: the last reference went on the
                      * watchdog thread itself, which tears the client down */
    dlock_signal wd_signal;

    dlock__metrics metrics;
    dlock__names names; /* per-name counters (metrics_names_max) */
    char *name;         /* client_name, or its default (opts.client_name
                         * points here) */
    dlock_metrics_fn metrics_push; /* under holds.mutex */
    void *metrics_push_arg;
};

/* client.c */
void dlock__client_ref(dlock_client *c);
void dlock__client_unref(dlock_client *c);
/* The end of a client whose last reference went on its own watchdog thread
 * (in on_lost): called by that thread once the callback has returned and it
 * will not touch c again. Detaches the thread and frees everything. */
void dlock__client_destroy_on_watchdog(dlock_client *c);

/* client.c: cancellable waits (dlock_client_cancel_waits). begin returns a
 * waiter holding the cancel generation at the start of a call (a cancel
 * from then on ends it);
 * add registers the signal the call sleeps on, so that a cancel raises it;
 * canceled says whether a cancel came since begin; end unregisters (before
 * the signal is destroyed). */
dlock__waiter dlock__waiter_begin(dlock_client *c);
void dlock__waiter_add(dlock_client *c, dlock__waiter *w, dlock_signal *sig);
int dlock__waiter_canceled(dlock_client *c, const dlock__waiter *w);
void dlock__waiter_end(dlock_client *c, dlock__waiter *w);
/* DLOCK_EFORKED when called in a fork() child of the client's process. */
int dlock__client_check(const dlock_client *c);
/* client.c: records why an object could not be made on c (the calling
 * thread's dlock_client_errmsg) and returns code. */
int dlock__client_refuse(const dlock_client *c, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* report/describe.c: sets what the client's description says of its start. */
void dlock__client_describe_init(dlock_client *c);
/* The calling thread's owner id into buf (DLOCK_OWNER_MAX bytes). */
void dlock__client_owner(const dlock_client *c, char *buf);
/* A new owner id of c, never given before in the process (no thread's,
 * no other minted one), into buf (DLOCK_OWNER_MAX bytes). */
void dlock__client_owner_mint(const dlock_client *c, char *buf);
/* dlock_client_connect with the backend's own options (NULL: defaults;
 * see dlock_backend_open), for clients made from a configuration. */
int dlock__client_connect(dlock_client **out, const char *url,
                          const void *backend_opts,
                          const dlock_client_options *opts, char *errbuf,
                          size_t errlen);

#endif /* DLOCK_OBJECTS_RUNTIME_CLIENT_H */
