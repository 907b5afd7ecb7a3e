/*
 * Redis backend: pub/sub on one dedicated connection (see subscriber.h).
 *
 * Ownership: the mutex guards the channel table, the listener lists, the
 * connection status shown to callers and the delivery snapshot's bounds.
 * The thread alone owns the connection, the output buffer and the
 * queue of expected acknowledgements, and it alone frees channels (a
 * channel stays while any command about it awaits its acknowledgement, so
 * the queue never points at freed memory).
 */
#include "subscriber.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "conn.h"
#include "parse.h"
#include "core/fiber.h"
#include "core/log.h"
#include "core/thread_name.h"

#define PING_INTERVAL_MS 5000

enum { L_PENDING, L_ACTIVE, L_FAILED };
enum { X_SUBSCRIBE, X_UNSUBSCRIBE, X_PING };

typedef struct channel channel;

struct dlock_subscription {
    channel *ch;
    dlock_message_fn fn;
    void *arg;
    int state;  /* L_*; only L_ACTIVE listeners receive messages */
    int rc;     /* why an L_FAILED listener failed */
    int dead;   /* removed from inside a callback: skip, free after */
    /* Its subscribe's caller, while it waits for the acknowledgement in
     * a loop's fiber: the signal it sleeps on (on its stack), and its
     * place in the subscriber's list of such callers. */
    dlock_signal *fsig;
    dlock_subscription *fprev, *fnext;
    dlock_subscription *prev, *next;
    dlock_subscription *grave_next;
};

struct channel {
    size_t len;
    unsigned hash;
    channel *hnext;
    dlock_subscription *listeners;
    int nlisteners;
    int sent_sub;  /* the last command sent about it was SUBSCRIBE */
    int inflight;  /* commands sent, acknowledgement not yet seen */
    int confirmed; /* the server has it subscribed, by our last SUBSCRIBE */
    int resync;    /* restored after a reconnect: deliver "" when confirmed */
    int gone;      /* sharded: its slot is served elsewhere; not here */
    int dirty;     /* queued for the thread to reconcile */
    channel *dnext;
    /* its name, in the same allocation (one channel per lock name) */
    char name[];
};

typedef struct expect {
    int kind;
    channel *ch;
} expect;

struct dlock__redis_subscriber {
    const dlock__redis_config *cfg; /* the address to use; mutex */
    int moved;                      /* cfg changed: drop the connection */
    void (*on_lost)(void *);        /* set before the first subscribe */
    void *on_lost_arg;
    int sharded;                    /* SSUBSCRIBE...; set before too */
    void (*on_moved)(void *, const char *, size_t);
    void *on_moved_arg;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* acks, failed attempts, deliveries ending */

    channel **buckets;
    size_t nbuckets, nchannels;
    channel *dirty;
    int nlisteners; /* all channels, pending ones included */

    int pipefd[2];
    pthread_t thread;
    int started, stopping;

    /* Status shown to subscribe(). */
    int connected;
    int failures;
    int64_t retry_at_ms;
    int last_rc;
    char last_err[512]; /* the detail of the last failed connect attempt */
    uint64_t fail_seq; /* bumped by every failed connect attempt */
    dlock_subscription *fwaiting; /* callers waiting in fibers (fsig) */

    /* The delivery in progress: snap[0..nsnap) is being called. */
    int delivering;
    dlock_subscription **snap;
    size_t nsnap, capsnap;
    dlock_subscription *graveyard;

    /* The thread's own. */
    dlock__redis_conn *conn;
    dlock__redis_cmdbuf out;
    expect *fifo;
    size_t fifo_head, fifo_len, fifo_cap;
    int64_t last_rx_ms;
    int64_t ping_sent_ms;
    int ping_outstanding;
};

/* ---- the channel table (mutex held) ----------------------------------- */

static unsigned hash_bytes(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static channel *chan_find(dlock__redis_subscriber *s, const char *name,
                          size_t len)
{
    unsigned h = hash_bytes(name, len);
    channel *c;
    for (c = s->buckets[h & (s->nbuckets - 1)]; c; c = c->hnext)
        if (c->hash == h && c->len == len && memcmp(c->name, name, len) == 0)
            return c;
    return NULL;
}

static void chan_grow(dlock__redis_subscriber *s)
{
    size_t n = s->nbuckets * 2, i;
    channel **b = calloc(n, sizeof *b);
    if (!b)
        return; /* longer chains, still correct */
    for (i = 0; i < s->nbuckets; i++) {
        channel *c = s->buckets[i];
        while (c) {
            channel *next = c->hnext;
            c->hnext = b[c->hash & (n - 1)];
            b[c->hash & (n - 1)] = c;
            c = next;
        }
    }
    free(s->buckets);
    s->buckets = b;
    s->nbuckets = n;
}

static channel *chan_get(dlock__redis_subscriber *s, const char *name,
                         size_t len)
{
    channel *c = chan_find(s, name, len);
    size_t i;
    if (c)
        return c;
    c = calloc(1, sizeof *c + len + 1);
    if (!c)
        return NULL;
    memcpy(c->name, name, len);
    c->name[len] = '\0';
    c->len = len;
    c->hash = hash_bytes(name, len);
    if (s->nchannels >= s->nbuckets)
        chan_grow(s);
    i = c->hash & (s->nbuckets - 1);
    c->hnext = s->buckets[i];
    s->buckets[i] = c;
    s->nchannels++;
    return c;
}

static void chan_free(dlock__redis_subscriber *s, channel *c)
{
    channel **pp = &s->buckets[c->hash & (s->nbuckets - 1)];
    while (*pp != c)
        pp = &(*pp)->hnext;
    *pp = c->hnext;
    s->nchannels--;
    free(c);
}

static void mark_dirty(dlock__redis_subscriber *s, channel *c)
{
    if (c->dirty)
        return;
    c->dirty = 1;
    c->dnext = s->dirty;
    s->dirty = c;
}

static void wake(dlock__redis_subscriber *s)
{
    dlock__redis_pipe_poke(s->pipefd[1]);
}

/* A pending listener's subscribe ends with state: its caller is woken
 * (a thread by the broadcast that follows; a fiber by its signal).
 * Mutex held. */
static void settle(dlock_subscription *l, int state)
{
    l->state = state;
    if (l->fsig)
        dlock_signal_raise(l->fsig);
}

/* Every caller waiting in a fiber looks again (a failed connect attempt).
 * Mutex held. */
static void wake_fibers(dlock__redis_subscriber *s)
{
    dlock_subscription *l;
    for (l = s->fwaiting; l; l = l->fnext)
        dlock_signal_raise(l->fsig);
}

static void listener_unlink(dlock__redis_subscriber *s, dlock_subscription *l)
{
    channel *c = l->ch;
    if (l->prev)
        l->prev->next = l->next;
    else
        c->listeners = l->next;
    if (l->next)
        l->next->prev = l->prev;
    l->prev = l->next = NULL;
    c->nlisteners--;
    s->nlisteners--;
    if (c->nlisteners == 0) {
        mark_dirty(s, c);
        wake(s);
    }
}

/* ---- the thread: commands and acknowledgements ------------------------ */

static int fifo_push(dlock__redis_subscriber *s, int kind, channel *c)
{
    if (s->fifo_len == s->fifo_cap) {
        size_t cap = s->fifo_cap ? s->fifo_cap * 2 : 16, i;
        expect *f = malloc(cap * sizeof *f);
        if (!f)
            return DLOCK_ENOMEM;
        for (i = 0; i < s->fifo_len; i++)
            f[i] = s->fifo[(s->fifo_head + i) % s->fifo_cap];
        free(s->fifo);
        s->fifo = f;
        s->fifo_cap = cap;
        s->fifo_head = 0;
    }
    s->fifo[(s->fifo_head + s->fifo_len) % s->fifo_cap].kind = kind;
    s->fifo[(s->fifo_head + s->fifo_len) % s->fifo_cap].ch = c;
    s->fifo_len++;
    return 0;
}

static int fifo_pop(dlock__redis_subscriber *s, expect *e)
{
    if (s->fifo_len == 0)
        return -1;
    *e = s->fifo[s->fifo_head];
    s->fifo_head = (s->fifo_head + 1) % s->fifo_cap;
    s->fifo_len--;
    return 0;
}

/* Queues one command (mutex held; touches only thread-owned buffers). */
static int queue_command(dlock__redis_subscriber *s, int kind, channel *c)
{
    const char *argv[2];
    size_t argvlen[2];
    size_t mark = s->out.len;
    if (kind == X_SUBSCRIBE)
        argv[0] = s->sharded ? "SSUBSCRIBE" : "SUBSCRIBE";
    else if (kind == X_UNSUBSCRIBE)
        argv[0] = s->sharded ? "SUNSUBSCRIBE" : "UNSUBSCRIBE";
    else
        argv[0] = "PING";
    argvlen[0] = strlen(argv[0]);
    if (c) {
        argv[1] = c->name;
        argvlen[1] = c->len;
    }
    if (dlock__redis_cmdbuf_add(&s->out, c ? 2 : 1, argv, argvlen) != 0)
        return DLOCK_ENOMEM;
    if (fifo_push(s, kind, c) != 0) {
        s->out.len = mark;
        return DLOCK_ENOMEM;
    }
    return 0;
}

/* Brings the server's view of each dirty channel in line with its
 * listeners, and frees the channels nobody needs any more (mutex held). */
static void reconcile(dlock__redis_subscriber *s)
{
    channel *c = s->dirty, *retry = NULL;
    s->dirty = NULL;
    while (c) {
        channel *next = c->dnext;
        /* A channel whose slot left this node is not asked for here again
         * (the cluster moves its listeners to the slot's new node). */
        int want = c->nlisteners > 0 && !c->gone;
        c->dirty = 0;
        if (s->conn && want != c->sent_sub) {
            if (queue_command(s, want ? X_SUBSCRIBE : X_UNSUBSCRIBE, c) == 0) {
                c->sent_sub = want;
                c->inflight++;
                c->confirmed = 0;
            } else {
                c->dnext = retry; /* out of memory: try on the next wake */
                retry = c;
                c->dirty = 1;
            }
        } else if (c->nlisteners == 0 && !c->sent_sub && c->inflight == 0) {
            /* (A channel gone to another node keeps its listeners, failed
             * or moving, until they unlink: the last one marks it dirty
             * again.) */
            chan_free(s, c);
        }
        c = next;
    }
    while (retry) {
        channel *next = retry->dnext;
        retry->dnext = s->dirty;
        s->dirty = retry;
        retry = next;
    }
}

/* Calls the active listeners of c with msg (thread, mutex not held). */
static void deliver(dlock__redis_subscriber *s, channel *c, const char *msg,
                    size_t len)
{
    dlock_subscription *l, *grave;
    size_t i, n = 0;

    pthread_mutex_lock(&s->mu);
    for (l = c->listeners; l; l = l->next)
        if (l->state == L_ACTIVE)
            n++;
    if (n > s->capsnap) {
        dlock_subscription **v = realloc(s->snap, n * sizeof *v);
        if (!v) {
            pthread_mutex_unlock(&s->mu);
            return; /* the waiters' own deadlines cover a lost wake-up */
        }
        s->snap = v;
        s->capsnap = n;
    }
    n = 0;
    for (l = c->listeners; l; l = l->next)
        if (l->state == L_ACTIVE)
            s->snap[n++] = l;
    s->nsnap = n;
    s->delivering = 1;
    pthread_mutex_unlock(&s->mu);

    for (i = 0; i < n; i++)
        if (!s->snap[i]->dead)
            s->snap[i]->fn(s->snap[i]->arg, c->name, msg, len);

    pthread_mutex_lock(&s->mu);
    s->delivering = 0;
    s->nsnap = 0;
    grave = s->graveyard;
    s->graveyard = NULL;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    while (grave) {
        l = grave->grave_next;
        free(grave);
        grave = l;
    }
}

static void lose_connection(dlock__redis_subscriber *s)
{
    size_t i;
    if (s->conn) {
        dlock__redis_conn_free(s->conn);
        s->conn = NULL;
    }
    dlock__redis_cmdbuf_reset(&s->out);
    s->fifo_len = 0;
    s->fifo_head = 0;
    s->ping_outstanding = 0;

    pthread_mutex_lock(&s->mu);
    s->connected = 0;
    for (i = 0; i < s->nbuckets; i++) {
        channel *c;
        for (c = s->buckets[i]; c; c = c->hnext) {
            if (c->confirmed && c->nlisteners > 0)
                c->resync = 1;
            c->sent_sub = 0;
            c->inflight = 0;
            c->confirmed = 0;
            mark_dirty(s, c);
        }
    }
    pthread_mutex_unlock(&s->mu);
}

/* An acknowledgement for (kind, name): it must be the next one expected. */
static int on_ack(dlock__redis_subscriber *s, int kind, const redisReply *name)
{
    expect e;
    channel *c, *resync = NULL;
    dlock_subscription *l;

    if (fifo_pop(s, &e) != 0 || e.kind != kind || !e.ch ||
        name->type != REDIS_REPLY_STRING || name->len != e.ch->len ||
        memcmp(name->str, e.ch->name, name->len) != 0)
        return -1;
    c = e.ch;
    pthread_mutex_lock(&s->mu);
    c->inflight--;
    if (c->inflight == 0 && c->sent_sub && kind == X_SUBSCRIBE) {
        c->confirmed = 1;
        for (l = c->listeners; l; l = l->next)
            if (l->state == L_PENDING)
                settle(l, L_ACTIVE);
        if (c->resync) {
            c->resync = 0;
            resync = c;
        }
        pthread_cond_broadcast(&s->cv);
    }
    if (c->inflight == 0 && !c->sent_sub)
        mark_dirty(s, c); /* may be freed by the next reconcile */
    pthread_mutex_unlock(&s->mu);
    if (resync) dlock__log(DLOCK_LOG_INFO, "redis: subscription to \"%.*s\" restored after a reconnect", (int)name->len, name->str);
    if (resync)
        deliver(s, resync, "", 0);
    return 0;
}

/* Sharded: c's slot is served by another node now (the server dropped
 * the subscription, or refused it with MOVED). It is not asked for here
 * again; its listeners look again, and the cluster moves them to the
 * slot's new node (thread, mutex not held). */
static void moved_away(dlock__redis_subscriber *s, channel *c)
{
    pthread_mutex_lock(&s->mu);
    c->gone = 1;
    c->confirmed = 0;
    c->sent_sub = 0;
    if (c->nlisteners == 0 && c->inflight == 0)
        mark_dirty(s, c);
    pthread_mutex_unlock(&s->mu);
    dlock__log(DLOCK_LOG_INFO, "redis %s: shard channel \"%.*s\" moved to "
               "another node", s->cfg->url.where, (int)c->len, c->name);
    deliver(s, c, "", 0);
    if (s->on_moved)
        s->on_moved(s->on_moved_arg, c->name, c->len);
}

/* Whether the head of the queue expects (kind, name). */
static int expected(const dlock__redis_subscriber *s, int kind,
                    const redisReply *name)
{
    const expect *e;
    if (s->fifo_len == 0)
        return 0;
    e = &s->fifo[s->fifo_head];
    return e->kind == kind && e->ch && name->type == REDIS_REPLY_STRING &&
           name->len == e->ch->len &&
           memcmp(name->str, e->ch->name, name->len) == 0;
}

static void on_error_reply(dlock__redis_subscriber *s, const redisReply *r)
{
    expect e;
    channel *c;
    dlock_subscription *l, *next;
    int rc;

    if (fifo_pop(s, &e) != 0)
        return;
    if (e.kind == X_PING) {
        s->ping_outstanding = 0;
        return;
    }
    c = e.ch;
    if (s->sharded && e.kind == X_SUBSCRIBE && strncmp(r->str, "MOVED ", 6) == 0) {
        /* Served elsewhere: pending listeners fail (the cluster retries
         * them at the right node); active ones (a restore) move. */
        pthread_mutex_lock(&s->mu);
        c = e.ch;
        c->inflight--;
        for (l = c->listeners; l; l = l->next)
            if (l->state == L_PENDING) {
                l->rc = DLOCK_ECONN;
                settle(l, L_FAILED);
            }
        pthread_cond_broadcast(&s->cv);
        pthread_mutex_unlock(&s->mu);
        moved_away(s, c);
        return;
    }
    rc = (strncmp(r->str, "NOPERM", 6) == 0 || strncmp(r->str, "NOAUTH", 6) == 0)
             ? DLOCK_EAUTH : DLOCK_EPROTO;
    pthread_mutex_lock(&s->mu);
    c->inflight--;
    if (e.kind == X_SUBSCRIBE) {
        /* Not subscribed after all. Pending listeners fail; active ones
         * (a restore refused, e.g. ACL changed) keep their deadlines and
         * the next reconnect tries again. */
        c->sent_sub = 0;
        for (l = c->listeners; l; l = next) {
            next = l->next;
            if (l->state == L_PENDING) {
                l->rc = rc;
                settle(l, L_FAILED);
            }
        }
        pthread_cond_broadcast(&s->cv);
    }
    if (c->inflight == 0 && !c->sent_sub && c->nlisteners == 0)
        mark_dirty(s, c);
    pthread_mutex_unlock(&s->mu);
}

/* Returns -1 when the stream no longer matches what was sent. */
static int on_reply(dlock__redis_subscriber *s, const redisReply *r)
{
    dlock__redis_pubsub_event ev;
    channel *c;
    expect e;

    switch (dlock__redis_pubsub_classify(r, s->sharded, &ev)) {
    case DLOCK__PUBSUB_MESSAGE:
        pthread_mutex_lock(&s->mu);
        c = chan_find(s, ev.name->str, ev.name->len);
        pthread_mutex_unlock(&s->mu);
        /* Only this thread frees channels, so c stays valid. */
        if (c)
            deliver(s, c, ev.payload, ev.len);
        return 0;
    case DLOCK__PUBSUB_ODD_MESSAGE:
        /* A payload no PUBLISH sends (an integer, an array: a hostile or
         * broken server) is not a wake-up: ignored and counted, the
         * connection kept (dropping it would make every such message
         * cost a resubscribe of every channel). */
        if (s->cfg->ignored_messages)
            __atomic_add_fetch(s->cfg->ignored_messages, 1, __ATOMIC_RELAXED);
        return 0;
    case DLOCK__PUBSUB_SUBSCRIBED:
        return on_ack(s, X_SUBSCRIBE, ev.name);
    case DLOCK__PUBSUB_UNSUBSCRIBED:
        if (!s->sharded || expected(s, X_UNSUBSCRIBE, ev.name))
            return on_ack(s, X_UNSUBSCRIBE, ev.name);
        /* Not asked for: the server dropped a shard channel whose slot
         * migrated away. */
        if (ev.name->type != REDIS_REPLY_STRING)
            return -1;
        pthread_mutex_lock(&s->mu);
        c = chan_find(s, ev.name->str, ev.name->len);
        pthread_mutex_unlock(&s->mu);
        if (c)
            moved_away(s, c);
        return 0;
    case DLOCK__PUBSUB_PONG:
        if (fifo_pop(s, &e) != 0 || e.kind != X_PING)
            return -1;
        s->ping_outstanding = 0;
        return 0;
    case DLOCK__PUBSUB_ERROR:
        /* Refused for now (BUSY, LOADING...): as if the connection had
         * dropped: reconnect with back-off and restore every channel, and
         * the waiters look again; pending subscribes fail with ECONN. */
        if (dlock__redis_unavailable(r->str, r->len))
            return -1;
        on_error_reply(s, r);
        return 0;
    case DLOCK__PUBSUB_IGNORED:
        return 0; /* nothing else is asked for */
    default:
        return -1;
    }
}

/* Reads what the stream has now and handles every complete reply. -1
 * when the connection must be dropped. */
static int read_replies(dlock__redis_subscriber *s)
{
    if (dlock__redis_conn_fill(s->conn, NULL, 0) != 0)
        return -1;
    s->last_rx_ms = dlock__redis_now_ms();
    for (;;) {
        redisReply *r = NULL;
        int bad;
        if (dlock__redis_conn_next(s->conn, &r) != 0) {
            /* what broke the stream (a reply over the cap, found at its
             * header; garbage) is the detail waiters see next */
            char detail[256];
            dlock__redis_conn_eproto(s->conn, s->cfg->url.where, detail, sizeof detail);
            dlock__log(DLOCK_LOG_WARN, "subscriber connection dropped: %s", detail);
            pthread_mutex_lock(&s->mu);
            snprintf(s->last_err, sizeof s->last_err, "%s", detail);
            pthread_mutex_unlock(&s->mu);
            return -1;
        }
        if (!r)
            return 0;
        bad = on_reply(s, r);
        freeReplyObject(r);
        if (bad)
            return -1;
    }
}

/* Sleeps until woken or deadline_ms passes (INT64_MAX: no deadline). */
static void wait_pipe(dlock__redis_subscriber *s, int64_t deadline_ms)
{
    if (dlock__wait_fd(s->pipefd[0], POLLIN, deadline_ms) > 0)
        dlock__redis_pipe_drain(s->pipefd[0]);
}

/* One connect attempt; mutex held on entry and exit, released meanwhile. */
static void try_connect(dlock__redis_subscriber *s)
{
    const dlock__redis_config *cfg = s->cfg;
    dlock__redis_conn *c = NULL;
    char detail[512];
    size_t i;
    int rc;

    pthread_mutex_unlock(&s->mu);
    rc = dlock__redis_connect(&c, cfg, cfg->connect_timeout_ms, NULL, detail,
                              sizeof detail);
    if (rc != 0) dlock__log(DLOCK_LOG_WARN, "subscriber connect failed: %s", detail);
    pthread_mutex_lock(&s->mu);
    if (rc != 0) {
        s->failures++;
        s->retry_at_ms = dlock__redis_now_ms() +
                         dlock__redis_backoff_ms(cfg, s->failures);
        s->last_rc = rc;
        snprintf(s->last_err, sizeof s->last_err, "%s", detail);
        s->fail_seq++;
        pthread_cond_broadcast(&s->cv);
        wake_fibers(s);
        return;
    }
    s->conn = c;
    s->connected = 1;
    s->failures = 0;
    s->last_rx_ms = dlock__redis_now_ms();
    for (i = 0; i < s->nbuckets; i++) {
        channel *ch;
        for (ch = s->buckets[i]; ch; ch = ch->hnext)
            mark_dirty(s, ch);
    }
}

static void *run(void *arg)
{
    dlock__redis_subscriber *s = arg;
    const dlock__redis_config *cfg;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        struct pollfd p[2];
        int64_t now, due;
        int n, lost = 0;

        if (s->stopping)
            break;
        cfg = s->cfg;
        if (s->moved) {
            /* To the new address, as after a lost connection: every
             * channel is restored there and its listeners look again. */
            s->moved = 0;
            if (s->conn) {
                pthread_mutex_unlock(&s->mu);
                lose_connection(s);
                pthread_mutex_lock(&s->mu);
            }
            continue;
        }
        if (!s->conn) {
            if (s->nlisteners == 0) {
                reconcile(s); /* frees what listeners left behind */
                pthread_mutex_unlock(&s->mu);
                wait_pipe(s, INT64_MAX);
                pthread_mutex_lock(&s->mu);
                continue;
            }
            now = dlock__redis_now_ms();
            if (s->failures > 0 && now < s->retry_at_ms) {
                pthread_mutex_unlock(&s->mu);
                wait_pipe(s, s->retry_at_ms);
                pthread_mutex_lock(&s->mu);
                continue;
            }
            try_connect(s);
            continue;
        }
        reconcile(s);
        pthread_mutex_unlock(&s->mu);

        now = dlock__redis_now_ms();
        if (s->ping_outstanding) {
            due = cfg->command_timeout_ms > 0
                      ? s->ping_sent_ms + cfg->command_timeout_ms : INT64_MAX;
            if (now >= due)
                lost = 1;
        } else {
            due = s->last_rx_ms + PING_INTERVAL_MS;
            if (now >= due) {
                pthread_mutex_lock(&s->mu);
                if (queue_command(s, X_PING, NULL) == 0) {
                    s->ping_outstanding = 1;
                    s->ping_sent_ms = now;
                }
                pthread_mutex_unlock(&s->mu);
                due = cfg->command_timeout_ms > 0
                          ? now + cfg->command_timeout_ms : INT64_MAX;
            }
        }
        if (!lost && s->out.len > 0) {
            lost = dlock__redis_send(s->conn, &s->out, cfg, INT64_MAX, NULL,
                                     0) != 0;
            dlock__redis_cmdbuf_reset(&s->out);
        }
        if (!lost) {
            /* TLS may hold decrypted (or read-ahead) bytes while the
             * socket is quiet: then look without sleeping. */
            int pending = dlock__redis_transport_pending(s->conn->t);
            p[0].fd = dlock__redis_transport_fd(s->conn->t);
            p[0].events = dlock__redis_transport_events(s->conn->t);
            p[0].revents = 0;
            p[1].fd = s->pipefd[0];
            p[1].events = POLLIN;
            p[1].revents = 0;
            n = dlock__wait_fds(p, 2, pending ? 0 : due);
            if (n > 0 && p[1].revents)
                dlock__redis_pipe_drain(s->pipefd[0]);
            if (pending || (n > 0 && p[0].revents))
                lost = read_replies(s) != 0;
        }
        if (lost) {
            lose_connection(s);
            if (s->on_lost)
                s->on_lost(s->on_lost_arg);
        }
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    if (s->conn) {
        dlock__redis_conn_free(s->conn);
        s->conn = NULL;
    }
    return NULL;
}

/* ---- the API ---------------------------------------------------------- */

int dlock__redis_subscriber_new(dlock__redis_subscriber **out,
                                const dlock__redis_config *cfg)
{
    dlock__redis_subscriber *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return DLOCK_ENOMEM;
    s->cfg = cfg;
    s->pipefd[0] = s->pipefd[1] = -1;
    s->nbuckets = 64;
    s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
    if (!s->buckets)
        goto fail;
    if (pthread_mutex_init(&s->mu, NULL) != 0)
        goto fail;
    if (dlock__wait_cond_init(&s->cv) != 0) {
        pthread_mutex_destroy(&s->mu);
        goto fail;
    }
    *out = s;
    return 0;
fail:
    free(s->buckets);
    free(s);
    return DLOCK_ENOMEM;
}

/* Mutex held. */
static int start_thread(dlock__redis_subscriber *s)
{
    if (pipe2(s->pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        s->pipefd[0] = s->pipefd[1] = -1;
        return DLOCK_ENOMEM;
    }
    if (pthread_create(&s->thread, NULL, run, s) != 0) {
        close(s->pipefd[0]);
        close(s->pipefd[1]);
        s->pipefd[0] = s->pipefd[1] = -1;
        return DLOCK_ENOMEM;
    }
    dlock__thread_name(s->thread, "dlock-sub");
    s->started = 1;
    return 0;
}

void dlock__redis_subscriber_free(dlock__redis_subscriber *s)
{
    size_t i;
    if (!s)
        return;
    if (s->started) {
        pthread_mutex_lock(&s->mu);
        s->stopping = 1;
        pthread_mutex_unlock(&s->mu);
        wake(s);
        pthread_join(s->thread, NULL);
        close(s->pipefd[0]);
        close(s->pipefd[1]);
    }
    for (i = 0; i < s->nbuckets; i++) {
        channel *c = s->buckets[i];
        while (c) {
            channel *next = c->hnext;
            dlock_subscription *l = c->listeners;
            while (l) {
                dlock_subscription *ln = l->next;
                free(l);
                l = ln;
            }
            free(c);
            c = next;
        }
    }
    dlock__redis_cmdbuf_free(&s->out);
    free(s->fifo);
    free(s->snap);
    free(s->buckets);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int dlock__redis_subscriber_add(dlock__redis_subscriber *s,
                                dlock_subscription **out, const char *channel_name,
                                dlock_message_fn fn, void *arg,
                                int64_t deadline_ms, char *errbuf,
                                size_t errlen)
{
    const dlock__redis_config *cfg;
    dlock_subscription *l;
    dlock_signal fsig;
    channel *c;
    int64_t now, deadline;
    uint64_t seq;
    int rc = 0;

    if (out)
        *out = NULL;
    if (!out || !channel_name || !channel_name[0] || !fn)
        return DLOCK_EINVAL;
    l = calloc(1, sizeof *l);
    if (!l)
        return DLOCK_ENOMEM;
    l->fn = fn;
    l->arg = arg;

    pthread_mutex_lock(&s->mu);
    cfg = s->cfg;
    if (!s->started && (rc = start_thread(s)) != 0) {
        pthread_mutex_unlock(&s->mu);
        free(l);
        return rc;
    }
    now = dlock__redis_now_ms();
    if (!s->connected && s->failures > 0 && now < s->retry_at_ms) {
        rc = s->last_rc == DLOCK_EAUTH ? DLOCK_EAUTH : DLOCK_ECONN;
        dlock__redis_errf(errbuf, errlen,
                          "subscriber connection down, backing off (last "
                          "error: %s)", s->last_err);
        pthread_mutex_unlock(&s->mu);
        free(l);
        return rc;
    }
    c = chan_get(s, channel_name, strlen(channel_name));
    if (!c) {
        pthread_mutex_unlock(&s->mu);
        free(l);
        return DLOCK_ENOMEM;
    }
    /* The cluster routed it here again: its slot came back. */
    c->gone = 0;
    if (!c->confirmed && pthread_equal(pthread_self(), s->thread)) {
        /* From inside a callback (forbidden by the contract): the ack this
         * call would wait for can only be read by this very thread. */
        mark_dirty(s, c); /* lets the thread free c if it is new */
        pthread_mutex_unlock(&s->mu);
        free(l);
        return DLOCK_EDEADLK;
    }
    l->ch = c;
    l->next = c->listeners;
    if (c->listeners)
        c->listeners->prev = l;
    c->listeners = l;
    c->nlisteners++;
    s->nlisteners++;
    if (c->confirmed) {
        l->state = L_ACTIVE;
        pthread_mutex_unlock(&s->mu);
        *out = l;
        return 0;
    }
    l->state = L_PENDING;
    mark_dirty(s, c);
    wake(s);

    deadline = cfg->command_timeout_ms > 0 ? now + cfg->command_timeout_ms
                                           : INT64_MAX;
    if (!s->connected && deadline != INT64_MAX)
        deadline = cfg->connect_timeout_ms > 0
                       ? deadline + cfg->connect_timeout_ms : INT64_MAX;
    if (deadline_ms < deadline)
        deadline = deadline_ms;
    seq = s->fail_seq;
    /* In a loop's fiber the fiber sleeps, not the loop's thread: on a
     * signal the subscriber's thread raises when the answer comes. */
    if (dlock__fiber_current() && dlock_signal_init(&fsig) == 0) {
        l->fsig = &fsig;
        l->fnext = s->fwaiting;
        if (s->fwaiting)
            s->fwaiting->fprev = l;
        s->fwaiting = l;
    }
    while (l->state == L_PENDING) {
        if (s->fail_seq != seq) {
            rc = s->last_rc == DLOCK_EAUTH ? DLOCK_EAUTH : DLOCK_ECONN;
            dlock__redis_errf(errbuf, errlen, "%s", s->last_err);
            break;
        }
        if (dlock__redis_now_ms() >= deadline) {
            rc = DLOCK_ETIMEDOUT;
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: SUBSCRIBE not confirmed in time",
                              cfg->url.where);
            break;
        }
        if (!l->fsig) {
            dlock__wait_cond(&s->cv, &s->mu, deadline);
            continue;
        }
        if (dlock__fiber_canceled()) {
            /* a cancelled wait stops here rather than spin on its
             * cancel until the answer comes */
            rc = DLOCK_ECANCELED;
            dlock__redis_errf(errbuf, errlen, "canceled while subscribing");
            break;
        }
        dlock__wait_cond_or(&s->cv, &s->mu, &fsig, deadline);
    }
    if (l->fsig) {
        if (l->fprev)
            l->fprev->fnext = l->fnext;
        else
            s->fwaiting = l->fnext;
        if (l->fnext)
            l->fnext->fprev = l->fprev;
        l->fsig = NULL;
        l->fprev = l->fnext = NULL;
        dlock_signal_destroy(&fsig);
    }
    if (l->state == L_ACTIVE) {
        pthread_mutex_unlock(&s->mu);
        *out = l;
        return 0;
    }
    if (l->state == L_FAILED)
        rc = l->rc;
    /* Never active, so in no delivery snapshot: free it right away. */
    listener_unlink(s, l);
    pthread_mutex_unlock(&s->mu);
    free(l);
    return rc;
}

void dlock__redis_subscriber_remove(dlock__redis_subscriber *s,
                                    dlock_subscription *l)
{
    size_t i;
    int in_snapshot;
    if (!l)
        return;
    pthread_mutex_lock(&s->mu);
    listener_unlink(s, l);
    if (s->started && pthread_equal(pthread_self(), s->thread)) {
        /* From inside a callback (the contract forbids it, but a deadlock
         * would be worse): the delivery loop skips it and frees it. */
        l->dead = 1;
        l->grave_next = s->graveyard;
        s->graveyard = l;
        pthread_mutex_unlock(&s->mu);
        return;
    }
    for (;;) {
        in_snapshot = 0;
        if (s->delivering)
            for (i = 0; i < s->nsnap; i++)
                if (s->snap[i] == l)
                    in_snapshot = 1;
        if (!in_snapshot)
            break;
        dlock__wait_pin(&s->cv, &s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    free(l);
}

void dlock__redis_subscriber_on_lost(dlock__redis_subscriber *s,
                                     void (*fn)(void *), void *arg)
{
    s->on_lost = fn;
    s->on_lost_arg = arg;
}

void dlock__redis_subscriber_set_sharded(dlock__redis_subscriber *s,
                                         void (*on_moved)(void *, const char *,
                                                          size_t),
                                         void *arg)
{
    s->sharded = 1;
    s->on_moved = on_moved;
    s->on_moved_arg = arg;
}

void dlock__redis_subscriber_retarget(dlock__redis_subscriber *s,
                                      const dlock__redis_config *cfg)
{
    int started;
    pthread_mutex_lock(&s->mu);
    started = s->started;
    if (s->cfg != cfg) {
        s->cfg = cfg;
        s->moved = 1;
        /* a new address owes nothing to the old one's back-off */
        s->failures = 0;
        s->retry_at_ms = 0;
    }
    pthread_mutex_unlock(&s->mu);
    if (started)
        wake(s);
}
