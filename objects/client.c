/*
 * dlock — the client: identity, lifetime, and the way to a backend.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "dlock/mock.h"
#include "dlock/redis.h"
#include "internal.h"

/* Thread ids are small integers handed out on a thread's first lock call;
 * they are unique in the process (not reused), so an owner id never names
 * two threads. */
static unsigned long next_thread_id = 1;
static __thread unsigned long my_thread_id;

static unsigned long thread_id(void)
{
    if (my_thread_id == 0)
        my_thread_id = __atomic_fetch_add(&next_thread_id, 1, __ATOMIC_RELAXED);
    return my_thread_id;
}

void dlock__client_owner(const dlock_client *c, char *buf)
{
    snprintf(buf, DLOCK_OWNER_MAX, "%s:%lu", c->id, thread_id());
}

/* The process id, kept current in fork() children by an atfork handler:
 * every lock call checks it, and getpid() is a system call (glibc stopped
 * caching it) costing ~1 us on a machine with page-table isolation, a few
 * percent of an uncontended lock+unlock (tests/bench). */
static pid_t process_pid;
static pthread_once_t process_pid_once = PTHREAD_ONCE_INIT;

static void process_pid_after_fork(void)
{
    process_pid = getpid();
}

static void process_pid_init(void)
{
    process_pid = getpid();
    pthread_atfork(NULL, NULL, process_pid_after_fork);
}

static pid_t current_pid(void)
{
    pthread_once(&process_pid_once, process_pid_init);
    return process_pid;
}

int dlock__client_check(const dlock_client *c)
{
    /* A child of fork() shares the parent's UUID; acting under it would let
     * two processes hold "the same" owner's lock. */
    return current_pid() == c->pid ? 0 : DLOCK_EFORKED;
}

static int options_valid(const dlock_client_options *o)
{
    return o->version >= 1 && o->watchdog_timeout_ms >= 3 &&
           o->max_hold_ms >= 0 && o->fair_wait_slack_ms > 0 &&
           (o->version < 2 || o->budget_slack_ms >= 0);
}

/* opts as this version of the library reads it: a version-1 struct is
 * shorter, so only its part is read and the newer fields get defaults. */
static void options_copy(dlock_client_options *to, const dlock_client_options *from)
{
    static const dlock_client_options defaults = DLOCK_CLIENT_OPTIONS_INIT;

    if (from->version >= 2) {
        *to = *from;
        return;
    }
    *to = defaults;
    memcpy(to, from, offsetof(dlock_client_options, budget_slack_ms));
}

int dlock_client_new(dlock_client **out, dlock_backend *backend,
                     const dlock_client_options *opts)
{
    static const dlock_client_options defaults = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c;
    uuid_t uu;
    int rc;

    if (out)
        *out = NULL;
    if (!out || !backend || !backend->methods)
        return DLOCK_EINVAL;
    if (!opts)
        opts = &defaults;
    if (!options_valid(opts))
        return DLOCK_EINVAL;

    c = calloc(1, sizeof(*c));
    if (!c)
        return DLOCK_ENOMEM;
    options_copy(&c->opts, opts);
    c->pid = current_pid();
    c->refs = 1;
    uuid_generate_random(uu);
    uuid_unparse_lower(uu, c->id);
    if (pthread_mutex_init(&c->ref_mutex, NULL) != 0) {
        free(c);
        return DLOCK_ENOMEM;
    }
    rc = dlock__holds_init(&c->holds);
    if (rc != 0) {
        pthread_mutex_destroy(&c->ref_mutex);
        free(c);
        return rc;
    }
    c->backend = backend;
    c->clock = dlock_backend_clock(backend);
    rc = dlock__watchdog_start(c);
    if (rc != 0) {
        /* the backend stays the caller's */
        dlock__holds_fini(&c->holds);
        pthread_mutex_destroy(&c->ref_mutex);
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void put_err(char *errbuf, size_t errlen, const char *msg)
{
    if (errbuf && errlen > 0)
        snprintf(errbuf, errlen, "%s", msg);
}

int dlock_client_connect(dlock_client **out, const char *url,
                         const dlock_client_options *opts, char *errbuf,
                         size_t errlen)
{
    return dlock__client_connect(out, url, NULL, opts, errbuf, errlen);
}

int dlock__client_connect(dlock_client **out, const char *url,
                          const dlock_redis_options *redis_opts,
                          const dlock_client_options *opts, char *errbuf,
                          size_t errlen)
{
    dlock_backend *b = NULL;
    int rc;

    if (out)
        *out = NULL;
    put_err(errbuf, errlen, "");
    if (!out || !url) {
        put_err(errbuf, errlen, "out and url must not be NULL");
        return DLOCK_EINVAL;
    }
    if (strcmp(url, "mock:") == 0 || strcmp(url, "mock://") == 0) {
        dlock_mock_store *store;
        rc = dlock_mock_store_new(&store, NULL);
        if (rc != 0)
            return rc;
        rc = dlock_mock_backend_new(&b, store);
        dlock_mock_store_free(store); /* the backend keeps it */
    } else if (has_prefix(url, "redis://") || has_prefix(url, "rediss://") ||
               has_prefix(url, "unix://")) {
        rc = dlock_redis_backend_new(&b, url, redis_opts, errbuf, errlen);
    } else {
        /* Echo only the scheme: the rest may carry a password. */
        size_t n = strcspn(url, ":");
        char msg[128];
        snprintf(msg, sizeof(msg),
                 "unknown URL scheme \"%.*s\" (expected mock:, redis://, rediss:// "
                 "or unix://)",
                 (int)(n > 32 ? 32 : n), url);
        put_err(errbuf, errlen, msg);
        return DLOCK_EINVAL;
    }
    if (rc != 0)
        return rc;
    rc = dlock_client_new(out, b, opts);
    if (rc != 0) {
        dlock_backend_free(b);
        put_err(errbuf, errlen, "invalid client options");
    }
    return rc;
}

void dlock__client_ref(dlock_client *c)
{
    pthread_mutex_lock(&c->ref_mutex);
    c->refs++;
    pthread_mutex_unlock(&c->ref_mutex);
}

void dlock__client_unref(dlock_client *c)
{
    int last;

    pthread_mutex_lock(&c->ref_mutex);
    last = --c->refs == 0;
    pthread_mutex_unlock(&c->ref_mutex);
    /* In a fork() child the watchdog thread and the connections are the
     * parent's: joining or closing them here would be wrong, so the child
     * leaves them alone (the memory goes with the child's exit). */
    if (!last || dlock__client_check(c) != 0)
        return;
    dlock__watchdog_stop(c);
    dlock__holds_fini(&c->holds);
    dlock_backend_free(c->backend);
    pthread_mutex_destroy(&c->ref_mutex);
    free(c);
}

void dlock_client_free(dlock_client *c)
{
    if (c)
        dlock__client_unref(c);
}

const char *dlock_client_id(const dlock_client *c)
{
    return c ? c->id : NULL;
}

int dlock_client_owner(dlock_client *c, char *buf, size_t len)
{
    char owner[DLOCK_OWNER_MAX];
    size_t n;

    if (!c || !buf)
        return DLOCK_EINVAL;
    dlock__client_owner(c, owner);
    n = strlen(owner);
    if (len < n + 1)
        return DLOCK_EINVAL;
    memcpy(buf, owner, n + 1);
    return 0;
}

dlock_backend *dlock_client_backend(dlock_client *c)
{
    return c ? c->backend : NULL;
}
