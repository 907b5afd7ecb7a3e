/*
 * Simulator: the fault backend (tests/sim/fault.h).
 *
 * It is a plain backend of the public interface: every slot it does not
 * change forwards to the wrapped one (tests/harness/wrap_backend.c). It
 * has no eval_send/eval_receive, so the lock objects call eval_until, and
 * a call it fails returns at once: on a single thread, with nothing real
 * to wait for, "the reply never came" is the deadline having passed.
 *
 * A late script is the request that reached the server after its caller
 * gave up: it runs when the driver's clock reaches its time, on the
 * wrapped backend, and its reply goes nowhere. The force-unlock scripts
 * are only ever refused or lost before they run, never late or run
 * unseen: the checkers end every hold at a force unlock's start, which is
 * only true of one that ran then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/mock.h"
#include "tests/harness/wrap_backend.h"
#include "tests/sim/fault.h"
#include "tests/sim/queue.h"

typedef struct fault_backend fault_backend;

typedef struct late_script {
    fault_backend *fb;
    int replay;      /* 1: a write replicated to fb's replica; 0: a late
                      * request to fb's store */
    uint64_t epoch;  /* the primary's: a failover drops what is in flight */
    const dlock_script *script;
    size_t nkeys, nargs;
    char **argv;
    size_t *argvlen;
} late_script;

typedef struct sim_sub sim_sub;

/* What a queue item carries: a late script, or a delayed message. */
typedef struct pending {
    late_script *late; /* or: */
    sim_sub *sub;      /* a delayed message for this listener */
    char *channel, *msg;
    size_t len;
} pending;

#define MAX_BACKENDS 16

struct sim_faults {
    sim_rng rng;
    sim_fault_rates r;
    dlock_vclock *clock;
    int on;
    uint64_t epoch;                  /* failovers so far */
    fault_backend *fbs[MAX_BACKENDS]; /* the ones with a replica */
    int nfbs;
    sim_queue q; /* items: p = a pending */
    uint64_t count;
    int64_t last;
    void (*log)(void *arg, int client, const char *what, const char *name);
    void *log_arg;
    void (*renew_log)(void *arg, int client, const char *script, const char *key,
                      const char *owner, int64_t lease_ms);
    void *renew_arg;
};

struct sim_sub {
    sim_faults *f;
    int client;
    dlock_subscription *inner;
    dlock_message_fn fn;
    void *arg;
    char *channel;
    sim_sub *next; /* in its backend's list */
};

/* A client's clock, off the store's by a constant (clock skew): its
 * times and the wall times it writes into the store (a fair waiter's
 * deadline) are offset; durations are not. */
typedef struct skew_clock {
    dlock_clock base; /* first */
    dlock_clock *inner;
    int64_t offset;
} skew_clock;

struct fault_backend {
    dlock_test_wrap w; /* first; w.inner: the primary's backend */
    skew_clock skew;   /* used when skew.inner is set */
    sim_faults *f;
    int client;
    dlock_backend *replica; /* the replica's (NULL: none, or failed over) */
    dlock_backend *old;     /* the primary's before the failover */
    sim_sub *subs;
};

/* ---- the queue ------------------------------------------------------------ */

static void replicate(fault_backend *fb, const dlock_script *s, size_t nkeys,
                      size_t nargs, const char *const *argv, const size_t *argvlen);

static void push(sim_faults *f, int64_t due, pending *p)
{
    sim_item it = {0};

    it.due = due;
    it.p = p;
    sim_queue_push(&f->q, it);
}

static void pending_free(pending *p)
{
    size_t i;

    if (p->late) {
        for (i = 0; i < p->late->nkeys + p->late->nargs; i++)
            free(p->late->argv[i]);
        free(p->late->argv);
        free(p->late->argvlen);
        free(p->late);
    }
    free(p->channel);
    free(p->msg);
    free(p);
}

static void drop_item(sim_item *it)
{
    pending_free(it->p);
}

/* ---- the shared part ------------------------------------------------------ */

sim_faults *sim_faults_new(uint64_t seed, const sim_fault_rates *rates,
                           dlock_vclock *clock)
{
    sim_faults *f = calloc(1, sizeof(*f));

    if (!f)
        return NULL;
    f->rng.s = seed ^ 0x5deece66dULL;
    f->r = *rates;
    f->clock = clock;
    f->on = 1;
    f->last = -1;
    return f;
}

void sim_faults_free(sim_faults *f)
{
    if (!f)
        return;
    sim_queue_fini(&f->q, drop_item);
    free(f);
}

void sim_faults_enable(sim_faults *f, int on)
{
    f->on = on;
}

uint64_t sim_faults_count(const sim_faults *f)
{
    return f->count;
}

int64_t sim_faults_last(const sim_faults *f)
{
    return f->last;
}

int64_t sim_faults_next(const sim_faults *f)
{
    return sim_queue_next(&f->q);
}

void sim_faults_set_log(sim_faults *f,
                        void (*log)(void *arg, int client, const char *what,
                                    const char *name),
                        void *arg)
{
    f->log = log;
    f->log_arg = arg;
}

void sim_faults_set_renew_log(sim_faults *f,
                              void (*log)(void *arg, int client, const char *script,
                                          const char *key, const char *owner,
                                          int64_t lease_ms),
                              void *arg)
{
    f->renew_log = log;
    f->renew_arg = arg;
}

/* A watchdog renewal that ran (a script "..._renew" of the batch contract,
 * api/dlock/sys/methods.h: KEYS the locks, ARGV[1] the lease, ARGV[1 + i]
 * the owners; its answer 1 per hold renewed): each renewed hold told to
 * the renewal log. */
static void observe_renewal(sim_faults *f, int client, const dlock_script *s, size_t nkeys,
                            size_t nargs, const char *const *argv, const dlock_reply *r)
{
    size_t len, i;

    if (!f->renew_log || !s->name || !r || r->type != DLOCK_REPLY_ARRAY ||
        r->n != nkeys || nargs != nkeys + 1 || (len = strlen(s->name)) < 6 ||
        strcmp(s->name + len - 6, "_renew") != 0)
        return;
    for (i = 0; i < nkeys; i++)
        if (r->elems[i]->type == DLOCK_REPLY_INTEGER && r->elems[i]->integer == 1)
            f->renew_log(f->renew_arg, client, s->name, argv[i], argv[nkeys + 1 + i],
                         strtoll(argv[nkeys], NULL, 10));
}

/* Whether the fault of rate strikes now; logs it when it does. */
static int strike(sim_faults *f, int rate, int client, const char *what,
                  const char *name)
{
    if (!f->on || !sim_rng_chance(&f->rng, rate))
        return 0;
    f->count++;
    f->last = dlock_vclock_now(f->clock);
    if (f->log)
        f->log(f->log_arg, client, what, name);
    return 1;
}

int sim_faults_tick(sim_faults *f)
{
    int64_t now = dlock_vclock_now(f->clock);
    int n = 0;

    while (sim_queue_next(&f->q) <= now) {
        pending *p = sim_queue_pop(&f->q).p;

        if (p->late && p->late->epoch == f->epoch) {
            late_script *l = p->late;
            dlock_backend *to = l->replay ? l->fb->replica : l->fb->w.inner;
            dlock_reply *r = NULL;

            if (to && dlock_backend_eval(to, &r, l->script, l->nkeys, l->nargs,
                                         (const char *const *)l->argv, l->argvlen, NULL,
                                         0) == 0) {
                if (!l->replay)
                    observe_renewal(f, l->fb->client, l->script, l->nkeys, l->nargs,
                                    (const char *const *)l->argv, r);
                dlock_reply_free(r);
                if (!l->replay)
                    replicate(l->fb, l->script, l->nkeys, l->nargs,
                              (const char *const *)l->argv, l->argvlen);
            }
        } else if (p->sub) {
            p->sub->fn(p->sub->arg, p->channel, p->msg, p->len);
        }
        pending_free(p);
        n++;
    }
    return n;
}

/* ---- eval ----------------------------------------------------------------- */

static int is_force(const dlock_script *s)
{
    return s->name && strstr(s->name, "force_unlock") != NULL;
}

static char *dup_bytes(const char *s, size_t len)
{
    char *d = malloc(len + 1);

    if (!d)
        abort();
    memcpy(d, s, len);
    d[len] = '\0';
    return d;
}

static void schedule_late(fault_backend *fb, int replay, int64_t delay,
                          const dlock_script *s, size_t nkeys, size_t nargs,
                          const char *const *argv, const size_t *argvlen)
{
    sim_faults *f = fb->f;
    late_script *l = calloc(1, sizeof(*l));
    pending *p = calloc(1, sizeof(*p));
    size_t i, n = nkeys + nargs;

    if (!l || !p || !(l->argv = calloc(n + 1, sizeof(char *))) ||
        !(l->argvlen = calloc(n + 1, sizeof(size_t))))
        abort();
    l->fb = fb;
    l->replay = replay;
    l->epoch = f->epoch;
    l->script = s;
    l->nkeys = nkeys;
    l->nargs = nargs;
    for (i = 0; i < n; i++) {
        l->argvlen[i] = argvlen ? argvlen[i] : strlen(argv[i]);
        l->argv[i] = dup_bytes(argv[i], l->argvlen[i]);
    }
    p->late = l;
    push(f, dlock_vclock_now(f->clock) + delay, p);
}

/* A write that ran on the primary goes to the replica: at once when
 * writes are synced (WAIT), else after the replication lag (and is lost
 * if the primary fails over first). The replica runs the script itself,
 * later: its leases run from then (a replica of Redis gets absolute
 * expiry times), which only keeps its holds longer. */
static void replicate(fault_backend *fb, const dlock_script *s, size_t nkeys,
                      size_t nargs, const char *const *argv, const size_t *argvlen)
{
    sim_faults *f = fb->f;
    dlock_reply *r = NULL;

    if (!fb->replica || dlock_script_no_writes(s))
        return;
    if (f->r.failover_sync) {
        if (dlock_backend_eval(fb->replica, &r, s, nkeys, nargs, argv, argvlen, NULL, 0) == 0)
            dlock_reply_free(r);
        return;
    }
    schedule_late(fb, 1, sim_rng_range(&f->rng, 0, f->r.repl_lag_max_ms), s, nkeys, nargs,
                  argv, argvlen);
}

/* The planted bugs (sim_fault_rates.plant): what a broken library would
 * have answered. */
static void plant(sim_faults *f, const dlock_script *s, dlock_reply *r)
{
    if (f->r.plant == 1 && strcmp(s->name, "reentrant_acquire") == 0 &&
        r->type == DLOCK_REPLY_INTEGER) {
        r->type = DLOCK_REPLY_NIL;
        r->integer = 0;
    } else if (f->r.plant == 2 && strcmp(s->name, "fenced_acquire") == 0 &&
               r->type == DLOCK_REPLY_ARRAY && r->n == 2 &&
               r->elems[0]->integer == 1 && r->elems[1]->integer > 1) {
        r->elems[1]->integer -= 1;
    }
}

static int fault_eval_until(dlock_backend *b, dlock_reply **out, const dlock_script *s,
                            size_t nkeys, size_t nargs, const char *const *argv,
                            const size_t *argvlen, int64_t deadline_ms, char *errbuf,
                            size_t errlen)
{
    fault_backend *fb = (fault_backend *)b;
    sim_faults *f = fb->f;
    int rc, force = is_force(s);

    *out = NULL;
    if (strike(f, f->r.refuse, fb->client, "refuse", s->name)) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "sim: connection refused");
        return DLOCK_ECONN;
    }
    if (strike(f, f->r.lose_request, fb->client, "lose-request", s->name)) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "sim: request lost");
        return DLOCK_ETIMEDOUT;
    }
    if (!force && strike(f, f->r.late, fb->client, "late", s->name)) {
        schedule_late(fb, 0, sim_rng_range(&f->rng, 1, f->r.late_max_ms), s, nkeys, nargs,
                      argv, argvlen);
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "sim: request late");
        return DLOCK_ETIMEDOUT;
    }
    rc = dlock_backend_eval_until(fb->w.inner, out, s, nkeys, nargs, argv, argvlen,
                                  deadline_ms, errbuf, errlen);
    if (rc == 0)
        replicate(fb, s, nkeys, nargs, argv, argvlen);
    if (rc == 0 && *out) {
        observe_renewal(f, fb->client, s, nkeys, nargs, argv, *out);
        plant(f, s, *out);
    }
    if (rc == 0 && !force &&
        strike(f, f->r.lose_reply, fb->client, "lose-reply", s->name)) {
        dlock_reply_free(*out);
        *out = NULL;
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "sim: reply lost");
        return DLOCK_ETIMEDOUT;
    }
    return rc;
}

/* ---- pub/sub -------------------------------------------------------------- */

static void queue_message(sim_sub *sub, const char *channel, const char *msg,
                          size_t len)
{
    sim_faults *f = sub->f;
    pending *p = calloc(1, sizeof(*p));

    if (!p)
        abort();
    p->sub = sub;
    p->channel = dup_bytes(channel, strlen(channel));
    p->msg = dup_bytes(msg, len);
    p->len = len;
    push(f, dlock_vclock_now(f->clock) + sim_rng_range(&f->rng, 0, f->r.msg_delay_max_ms),
         p);
}

static void on_message(void *arg, const char *channel, const char *msg, size_t len)
{
    sim_sub *sub = arg;
    sim_faults *f = sub->f;

    if (strike(f, f->r.msg_drop, sub->client, "msg-drop", channel))
        return;
    if (strike(f, f->r.msg_delay, sub->client, "msg-delay", channel)) {
        queue_message(sub, channel, msg, len);
        return;
    }
    if (strike(f, f->r.msg_dup, sub->client, "msg-dup", channel))
        queue_message(sub, channel, msg, len);
    sub->fn(sub->arg, channel, msg, len);
}

static int fault_subscribe_until(dlock_backend *b, dlock_subscription **out,
                                 const char *channel, dlock_message_fn fn, void *arg,
                                 int64_t deadline_ms, char *errbuf, size_t errlen)
{
    fault_backend *fb = (fault_backend *)b;
    sim_sub *sub;
    int rc;

    *out = NULL;
    if (strike(fb->f, fb->f->r.refuse, fb->client, "refuse-subscribe", channel)) {
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "sim: connection refused");
        return DLOCK_ECONN;
    }
    if (!(sub = calloc(1, sizeof(*sub))))
        return DLOCK_ENOMEM;
    sub->f = fb->f;
    sub->client = fb->client;
    sub->fn = fn;
    sub->arg = arg;
    sub->channel = dup_bytes(channel, strlen(channel));
    rc = dlock_backend_subscribe_until(fb->w.inner, &sub->inner, channel, on_message,
                                       sub, deadline_ms, errbuf, errlen);
    if (rc != 0) {
        free(sub->channel);
        free(sub);
        return rc;
    }
    sub->next = fb->subs;
    fb->subs = sub;
    *out = (dlock_subscription *)sub;
    return 0;
}

static int fault_subscribe(dlock_backend *b, dlock_subscription **out,
                           const char *channel, dlock_message_fn fn, void *arg)
{
    return fault_subscribe_until(b, out, channel, fn, arg, INT64_MAX, NULL, 0);
}

static int not_for(const sim_item *it, void *sub)
{
    return ((pending *)it->p)->sub != sub;
}

/* After it, the listener is never called again: its delayed messages go. */
static void fault_unsubscribe(dlock_backend *b, dlock_subscription *s)
{
    fault_backend *fb = (fault_backend *)b;
    sim_sub *sub = (sim_sub *)s;

    sim_sub **pp = &fb->subs;

    while (*pp != sub)
        pp = &(*pp)->next;
    *pp = sub->next;
    if (sub->inner)
        dlock_backend_unsubscribe(fb->w.inner, sub->inner);
    sim_queue_filter(&fb->f->q, not_for, sub, drop_item);
    free(sub->channel);
    free(sub);
}

/* ---- failover ---------------------------------------------------------------- */

static int current(const sim_item *it, void *f)
{
    const pending *p = it->p;

    return !p->late || p->late->epoch == ((sim_faults *)f)->epoch;
}

void sim_faults_failover(sim_faults *f)
{
    int i;

    f->epoch++;
    f->count++;
    f->last = dlock_vclock_now(f->clock);
    /* the requests in flight and the writes not yet replicated are lost */
    sim_queue_filter(&f->q, current, f, drop_item);
    for (i = 0; i < f->nfbs; i++) {
        fault_backend *fb = f->fbs[i];
        sim_sub *sub;

        if (!fb->replica)
            continue;
        fb->old = fb->w.inner;
        fb->w.inner = fb->replica;
        fb->replica = NULL;
        /* the subscriptions follow, and each listener is told that
         * messages may have been lost (the backend's empty message) */
        for (sub = fb->subs; sub; sub = sub->next) {
            pending *p = calloc(1, sizeof(*p));

            dlock_backend_unsubscribe(fb->old, sub->inner);
            sub->inner = NULL;
            if (dlock_backend_subscribe_until(fb->w.inner, &sub->inner, sub->channel,
                                              on_message, sub, INT64_MAX, NULL, 0) != 0)
                sub->inner = NULL;
            if (!p)
                abort();
            p->sub = sub;
            p->channel = dup_bytes(sub->channel, strlen(sub->channel));
            p->msg = dup_bytes("", 0);
            push(f, dlock_vclock_now(f->clock), p);
        }
    }
}

/* ---- clock skew ------------------------------------------------------------- */

static int64_t skew_now(dlock_clock *c)
{
    skew_clock *k = (skew_clock *)c;

    return dlock_clock_now(k->inner) + k->offset;
}

static int64_t skew_wall(dlock_clock *c)
{
    skew_clock *k = (skew_clock *)c;

    return dlock_clock_wall(k->inner) + k->offset;
}

static int skew_sleep(dlock_clock *c, dlock_signal *s, int64_t deadline_ms)
{
    skew_clock *k = (skew_clock *)c;

    return dlock_clock_sleep_until(k->inner, s,
                                   deadline_ms == INT64_MAX ? INT64_MAX
                                                            : deadline_ms - k->offset);
}

static void skew_done(dlock_clock *c, dlock_signal *s)
{
    dlock_clock_done(((skew_clock *)c)->inner, s);
}

static void skew_busy(dlock_clock *c, dlock_signal *s)
{
    dlock_clock_busy(((skew_clock *)c)->inner, s);
}

/* The backend owns the skewed clock: it lives as long as the backend. */
static void skew_ref(dlock_clock *c)
{
    (void)c;
}

static const dlock_clock_methods skew_methods = {1, skew_now, skew_wall, skew_sleep,
                                                 skew_done, skew_ref, skew_ref, skew_busy};

static dlock_clock *fault_clock(dlock_backend *b)
{
    fault_backend *fb = (fault_backend *)b;

    return fb->skew.inner ? &fb->skew.base : dlock_test_wrap_clock(b);
}

void sim_fault_backend_skew(dlock_backend *b, int64_t offset_ms)
{
    fault_backend *fb = (fault_backend *)b;

    fb->skew.base.methods = &skew_methods;
    fb->skew.inner = dlock_test_wrap_clock(b);
    fb->skew.offset = offset_ms;
}

static void fault_free(dlock_backend *b)
{
    fault_backend *fb = (fault_backend *)b;

    dlock_backend_free(fb->replica);
    dlock_backend_free(fb->old);
    dlock_test_wrap_free(b);
}

static const dlock_backend_methods fault_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "sim-fault",
    .eval = dlock_test_wrap_eval_by_until,
    .subscribe = fault_subscribe,
    .unsubscribe = fault_unsubscribe,
    .clock = fault_clock,
    .free = fault_free,
    .eval_until = fault_eval_until,
    .subscribe_until = fault_subscribe_until,
    .reconnects = dlock_test_wrap_reconnects,
    .publish_command = dlock_test_wrap_publish_command,
    .key_slot = dlock_test_wrap_key_slot,
};

int sim_fault_backend_new(dlock_backend **out, sim_faults *f, dlock_backend *inner,
                          dlock_backend *replica, int client)
{
    fault_backend *fb = calloc(1, sizeof(*fb));

    *out = NULL;
    if (!fb)
        return DLOCK_ENOMEM;
    fb->w.base.methods = &fault_methods;
    fb->w.inner = inner;
    fb->f = f;
    fb->client = client;
    fb->replica = replica;
    if (replica) {
        if (f->nfbs == MAX_BACKENDS)
            abort();
        f->fbs[f->nfbs++] = fb;
    }
    *out = &fb->w.base;
    return 0;
}
