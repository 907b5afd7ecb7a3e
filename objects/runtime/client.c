/*
 * dlock — the client: identity, lifetime, and the way to a backend.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "dlock/sys/lock_type.h"

#include "core/errbuf.h"
#include "core/fmt.h"
#include "core/url_param.h"
#include "core/utf8.h"
#include "core/wipe.h"

#include "objects/runtime/client.h"
#include "objects/runtime/holds.h"
#include "objects/runtime/watchdog.h"

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

_Static_assert(sizeof(((dlock_client *)0)->id) + DLOCK__FMT_INT_SIZE <= DLOCK_OWNER_MAX,
               "an owner id (client id, ':', thread number) fits DLOCK_OWNER_MAX");

/* c's id, ':' and number n into buf. c->id is a UUID's 36 characters:
 * with ':' and any number it fits DLOCK_OWNER_MAX (checked above at
 * compile time). */
static void owner_format(const dlock_client *c, char *buf, unsigned long n)
{
    memcpy(buf, c->id, sizeof c->id - 1);
    buf[sizeof c->id - 1] = ':';
    dlock__fmt_u64(buf + sizeof c->id, n);
}

void dlock__client_owner(const dlock_client *c, char *buf)
{
    owner_format(c, buf, thread_id());
}

void dlock__client_owner_mint(const dlock_client *c, char *buf)
{
    /* From the thread ids' own counter: a minted id never equals a
     * thread's, nor another minted one, and keeps Redisson's
     * "<uuid>:<thread id>" layout. */
    owner_format(c, buf, __atomic_fetch_add(&next_thread_id, 1, __ATOMIC_RELAXED));
}

/* The process id, kept current in fork() children by an atfork handler:
 * every lock call checks it, and getpid() is a system call (glibc stopped
 * caching it) costing ~1 us on a machine with page-table isolation, a few
 * percent of an uncontended lock+unlock (tests/bench). */
static pid_t process_pid;
static pthread_once_t process_pid_once = PTHREAD_ONCE_INIT;

/* Relaxed atomics, though the child writes it alone: ThreadSanitizer
 * keeps the parent's threads' reads in the child's history and would
 * report the child's write as racing with them. */
static void process_pid_after_fork(void)
{
    __atomic_store_n(&process_pid, getpid(), __ATOMIC_RELAXED);
}

static void process_pid_init(void)
{
    __atomic_store_n(&process_pid, getpid(), __ATOMIC_RELAXED);
    pthread_atfork(NULL, NULL, process_pid_after_fork);
}

static pid_t current_pid(void)
{
    pthread_once(&process_pid_once, process_pid_init);
    return __atomic_load_n(&process_pid, __ATOMIC_RELAXED);
}

int dlock__client_check(const dlock_client *c)
{
    /* A child of fork() shares the parent's UUID; acting under it would let
     * two processes hold "the same" owner's lock. */
    return current_pid() == c->pid ? 0 : DLOCK_EFORKED;
}

static int in_range(int64_t ms, int64_t min_ms)
{
    return ms >= min_ms && ms <= DLOCK_TIME_MAX_MS;
}

/* A client_name: 1..DLOCK_CLIENT_NAME_MAX bytes of UTF-8. */
static int name_valid(const char *name)
{
    size_t n = strnlen(name, DLOCK_CLIENT_NAME_MAX + 1);

    return n > 0 && n <= DLOCK_CLIENT_NAME_MAX && dlock__utf8_check(name, n) == n;
}

static int options_valid(const dlock_client_options *o)
{
    return o->version == DLOCK_CLIENT_OPTIONS_VERSION &&
           in_range(o->watchdog_timeout_ms, 3) && in_range(o->max_hold_ms, 0) &&
           in_range(o->fair_wait_slack_ms, 1) && in_range(o->budget_slack_ms, 0) &&
           in_range(o->fair_waiter_timeout_ms, 0) &&
           (o->describe_owner == 0 || o->describe_owner == 1) &&
           (!o->client_name || name_valid(o->client_name)) &&
           o->metrics_names_max >= 0 && o->metrics_names_max <= DLOCK_METRICS_NAMES_MAX &&
           in_range(o->loop_slice_ms, 0);
}

/* client_name's default: the program's name, which a restart keeps. */
static const char *default_name(void)
{
    const char *p = program_invocation_short_name;

    return p && name_valid(p) ? p : "dlock";
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
    if (!out || !backend || !backend->methods || backend->methods->version < 1 ||
        backend->methods->version > DLOCK_BACKEND_VERSION)
        return DLOCK_EINVAL;
    if (!opts)
        opts = &defaults;
    if (!options_valid(opts))
        return DLOCK_EINVAL;

    c = calloc(1, sizeof(*c));
    if (!c)
        return DLOCK_ENOMEM;
    c->opts = *opts;
    c->name = strdup(c->opts.client_name ? c->opts.client_name : default_name());
    if (!c->name || dlock__names_init(&c->names, (size_t)c->opts.metrics_names_max) != 0) {
        free(c->name);
        free(c);
        return DLOCK_ENOMEM;
    }
    c->opts.client_name = c->name;
    c->pid = current_pid();
    dlock__client_describe_init(c);
    c->refs = 1;
    c->waits.next = c->waits.prev = &c->waits;
    uuid_generate_random(uu);
    uuid_unparse_lower(uu, c->id);
    if (pthread_mutex_init(&c->waits_mutex, NULL) != 0) {
        rc = DLOCK_ENOMEM;
        goto fail_mutex;
    }
    if (dlock__wakes_init(&c->wakes) != 0) {
        rc = DLOCK_ENOMEM;
        goto fail_wakes;
    }
    rc = dlock__holds_init(&c->holds);
    if (rc != 0)
        goto fail_holds;
    c->backend = backend;
    c->clock = dlock_backend_clock(backend);
    rc = dlock__watchdog_start(c);
    if (rc != 0)
        goto fail_watchdog; /* the backend stays the caller's */
    *out = c;
    return 0;

fail_watchdog:
    dlock__holds_fini(&c->holds);
fail_holds:
    dlock__wakes_fini(&c->wakes);
fail_wakes:
    pthread_mutex_destroy(&c->waits_mutex);
fail_mutex:
    dlock__names_fini(&c->names);
    free(c->name);
    free(c);
    return rc;
}

/* What dlock_client_free's last reference and the watchdog's own teardown
 * both free last. */
static void client_free_memory(dlock_client *c)
{
    dlock__wakes_fini(&c->wakes);
    pthread_mutex_destroy(&c->waits_mutex);
    dlock__names_fini(&c->names);
    free(c->name);
    free(c);
}

static void put_err(char *errbuf, size_t errlen, const char *msg)
{
    if (errbuf && errlen > 0)
        snprintf(errbuf, errlen, "%s", msg);
}

/* The URL query parameters that are the client's (api/dlock/client.h). */
enum { GIVEN_FAIR = 1, GIVEN_NAME = 2, GIVEN_NAMES_MAX = 4 };

typedef struct client_params {
    int given; /* GIVEN_* */
    int64_t fair_waiter_timeout_ms, names_max;
    char *name; /* malloc'ed */
} client_params;

/* Takes the client's parameters out of url: *rest = the backend's part
 * (malloc'ed, may hold a password: the caller wipes it). 0, or
 * DLOCK_EINVAL / DLOCK_ENOMEM with errbuf naming the parameter and
 * nothing left to free. */
static int take_client_params(const char *url, client_params *p, char **rest,
                              char *errbuf, size_t errlen)
{
    char *r1 = NULL, *r2 = NULL;
    int given, rc;

    memset(p, 0, sizeof(*p));
    *rest = NULL;
    rc = dlock__url_take_int(url, "fair_waiter_timeout_ms", 0, DLOCK_TIME_MAX_MS,
                             &p->fair_waiter_timeout_ms, &given, &r1, errbuf, errlen);
    if (rc != 0)
        return rc;
    p->given |= given ? GIVEN_FAIR : 0;
    rc = dlock__url_take_str(r1, "client_name", &p->name, &given, &r2, errbuf, errlen);
    dlock__wipe_free(r1);
    if (rc != 0)
        return rc;
    p->given |= given ? GIVEN_NAME : 0;
    if (p->name && !name_valid(p->name))
        rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                              "bad URL: 'client_name' must be 1..%d bytes of UTF-8",
                              DLOCK_CLIENT_NAME_MAX);
    else
        rc = dlock__url_take_int(r2, "metrics_names_max", 0, DLOCK_METRICS_NAMES_MAX,
                                 &p->names_max, &given, rest, errbuf, errlen);
    dlock__wipe_free(r2);
    if (rc != 0) {
        free(p->name);
        p->name = NULL;
        return rc;
    }
    p->given |= given ? GIVEN_NAMES_MAX : 0;
    return 0;
}

int dlock_client_connect(dlock_client **out, const char *url,
                         const dlock_client_options *opts, char *errbuf,
                         size_t errlen)
{
    return dlock__client_connect(out, url, NULL, opts, errbuf, errlen);
}

int dlock__client_connect(dlock_client **out, const char *url,
                          const void *backend_opts,
                          const dlock_client_options *opts, char *errbuf,
                          size_t errlen)
{
    static const dlock_client_options defaults = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client_options mine;
    dlock_backend *b = NULL;
    client_params p;
    char *rest = NULL;
    int64_t describe;
    int given_describe, rc;

    if (out)
        *out = NULL;
    put_err(errbuf, errlen, "");
    if (!out || !url) {
        put_err(errbuf, errlen, "out and url must not be NULL");
        return DLOCK_EINVAL;
    }
    /* The client's own parameters first, whatever the scheme; the rest
     * goes to the backend. */
    rc = take_client_params(url, &p, &rest, errbuf, errlen);
    if (rc != 0)
        return rc;
    {
        char *rest2 = NULL;
        rc = dlock__url_take_int(rest, "describe_owner", 0, 1, &describe, &given_describe,
                                 &rest2, errbuf, errlen);
        dlock__wipe_free(rest); /* it may hold a password */
        if (rc != 0) {
            free(p.name);
            return rc;
        }
        rest = rest2;
    }
    if (p.given || given_describe) {
        if (!opts)
            opts = &defaults;
        if (opts->version != DLOCK_CLIENT_OPTIONS_VERSION) {
            dlock__wipe_free(rest);
            free(p.name);
            put_err(errbuf, errlen, "invalid client options");
            return DLOCK_EINVAL;
        }
        mine = *opts;
        if (p.given & GIVEN_FAIR)
            mine.fair_waiter_timeout_ms = p.fair_waiter_timeout_ms;
        if (p.given & GIVEN_NAME)
            mine.client_name = p.name;
        if (p.given & GIVEN_NAMES_MAX)
            mine.metrics_names_max = p.names_max;
        if (given_describe)
            mine.describe_owner = (int)describe;
        opts = &mine;
    }
    /* The scheme finds the backend (core/registry.c), which alone knows
     * what its options are. */
    rc = dlock_backend_open(&b, rest, backend_opts, errbuf, errlen);
    dlock__wipe_free(rest); /* it may hold a password */
    if (rc != 0) {
        free(p.name);
        return rc;
    }
    rc = dlock_client_new(out, b, opts); /* copies the name */
    free(p.name);
    if (rc != 0) {
        dlock_backend_free(b);
        put_err(errbuf, errlen, "invalid client options");
    }
    return rc;
}

void dlock__client_ref(dlock_client *c)
{
    __atomic_fetch_add(&c->refs, 1, __ATOMIC_RELAXED);
}

void dlock__client_unref(dlock_client *c)
{
    /* acq_rel: whatever the other references' holders did happens before
     * the teardown. */
    int last = __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0;

    /* In a fork() child the watchdog thread and the connections are the
     * parent's: joining or closing them here would be wrong, so the child
     * leaves them alone (the memory goes with the child's exit). */
    if (!last || dlock__client_check(c) != 0)
        return;
    if (dlock__watchdog_is_current(c)) {
        /* Inside on_lost, the last reference went (the application had
         * dropped the client and freed the lost lock's handle): a thread
         * cannot join itself, and the watchdog is still using c, so it
         * finishes the teardown once the callback has returned. */
        dlock__watchdog_orphan(c);
        return;
    }
    dlock__watchdog_stop(c);
    dlock__holds_fini(&c->holds);
    dlock_backend_free(c->backend);
    client_free_memory(c);
}

static void clock_ref(dlock_clock *clk, int up)
{
    if (up && clk->methods->ref)
        clk->methods->ref(clk);
    else if (!up && clk->methods->unref)
        clk->methods->unref(clk);
}

void dlock__client_destroy_on_watchdog(dlock_client *c)
{
    dlock_clock *clk = c->clock;

    /* Nobody will join this thread. */
    pthread_detach(pthread_self());
    /* The clock belongs to the backend, but its bookkeeping must see this
     * thread "done" only after the backend is gone: a virtual-clock advance
     * that woke the watchdog then returns with the client fully torn down
     * (a test that frees its store and clock next finds nothing running). */
    clock_ref(clk, 1);
    dlock__holds_fini(&c->holds);
    dlock_backend_free(c->backend);
    dlock_clock_done(clk, &c->wd_signal);
    clock_ref(clk, 0);
    dlock_signal_destroy(&c->wd_signal);
    client_free_memory(c);
}

/* ---- cancellable waits ------------------------------------------------------ */

dlock__waiter dlock__waiter_begin(dlock_client *c)
{
    dlock__waiter w = {NULL, 0, NULL, NULL};

    w.gen = __atomic_load_n(&c->cancel_gen, __ATOMIC_ACQUIRE);
    return w;
}

void dlock__waiter_add(dlock_client *c, dlock__waiter *w, dlock_signal *sig)
{
    /* Under the mutex a cancel holds while it bumps the generation and
     * raises: a cancel either raises sig or is seen by the next
     * dlock__waiter_canceled, never neither. */
    pthread_mutex_lock(&c->waits_mutex);
    w->sig = sig;
    w->next = &c->waits;
    w->prev = c->waits.prev;
    c->waits.prev->next = w;
    c->waits.prev = w;
    pthread_mutex_unlock(&c->waits_mutex);
}

int dlock__waiter_canceled(dlock_client *c, const dlock__waiter *w)
{
    return __atomic_load_n(&c->cancel_gen, __ATOMIC_ACQUIRE) != w->gen;
}

void dlock__waiter_end(dlock_client *c, dlock__waiter *w)
{
    if (!w->sig)
        return;
    pthread_mutex_lock(&c->waits_mutex);
    w->prev->next = w->next;
    w->next->prev = w->prev;
    pthread_mutex_unlock(&c->waits_mutex);
    w->sig = NULL;
}

static void cancel_waits(dlock_client *c)
{
    dlock__waiter *w;

    pthread_mutex_lock(&c->waits_mutex);
    __atomic_add_fetch(&c->cancel_gen, 1, __ATOMIC_ACQ_REL);
    for (w = c->waits.next; w != &c->waits; w = w->next)
        dlock_signal_raise(w->sig);
    pthread_mutex_unlock(&c->waits_mutex);
}

int dlock_client_cancel_waits(dlock_client *c)
{
    if (!c)
        return DLOCK_EINVAL;
    if (dlock__client_check(c) != 0)
        return DLOCK_EFORKED;
    cancel_waits(c);
    return 0;
}

void dlock_client_free(dlock_client *c)
{
    if (!c)
        return;
    /* Blocked calls end (DLOCK_ECANCELED) rather than outlive the
     * application's interest; their lock objects keep c alive meanwhile.
     * Not in a fork() child: no call of the child waits, and the mutex may
     * have been held by a parent thread at the fork. */
    if (dlock__client_check(c) == 0)
        cancel_waits(c);
    dlock__client_unref(c);
}

int dlock_client_set_on_lost(dlock_client *c, dlock_lost_fn fn, void *arg)
{
    if (!c)
        return DLOCK_EINVAL;
    if (dlock__client_check(c) != 0)
        return DLOCK_EFORKED;
    /* The watchdog picks the callback under this mutex (holds.c). */
    pthread_mutex_lock(&c->holds.mutex);
    c->opts.on_lost = fn;
    c->opts.on_lost_arg = arg;
    pthread_mutex_unlock(&c->holds.mutex);
    return 0;
}

/* A constructor that refuses has no object to keep its reason: the
 * calling thread keeps it, with the client it was asked of. */
static __thread const dlock_client *refused_on;
static __thread char refused_why[DLOCK_ERRMSG_MAX];

int dlock__client_refuse(const dlock_client *c, int code, const char *fmt, ...)
{
    va_list ap;

    refused_on = c;
    va_start(ap, fmt);
    vsnprintf(refused_why, sizeof(refused_why), fmt, ap);
    va_end(ap);
    return code;
}

const char *dlock_client_errmsg(const dlock_client *c)
{
    if (!c)
        return "client is NULL";
    return c == refused_on ? refused_why : "";
}

const char *dlock_client_id(const dlock_client *c)
{
    return c ? c->id : NULL;
}

const char *dlock_client_name(const dlock_client *c)
{
    return c ? c->name : NULL;
}

int64_t dlock_client_watchdog_timeout(const dlock_client *c)
{
    return c ? c->opts.watchdog_timeout_ms : 0;
}

/* The owner id mine(c) gives into buf of len bytes. */
static int owner_out(dlock_client *c, char *buf, size_t len,
                     void (*mine)(const dlock_client *, char *))
{
    char owner[DLOCK_OWNER_MAX];
    size_t n;

    if (!c || !buf)
        return DLOCK_EINVAL;
    mine(c, owner);
    n = strlen(owner);
    if (len < n + 1)
        return DLOCK_EINVAL;
    memcpy(buf, owner, n + 1);
    return 0;
}

int dlock_client_owner(dlock_client *c, char *buf, size_t len)
{
    return owner_out(c, buf, len, dlock__client_owner);
}

int dlock_client_owner_new(dlock_client *c, char *buf, size_t len)
{
    return owner_out(c, buf, len, dlock__client_owner_mint);
}

dlock_backend *dlock_client_backend(dlock_client *c)
{
    return c ? c->backend : NULL;
}

int dlock_client_server_safety(dlock_client *c, dlock_server_safety *out)
{
    if (!c)
        return DLOCK_EINVAL;
    return dlock_backend_server_safety(c->backend, out);
}
