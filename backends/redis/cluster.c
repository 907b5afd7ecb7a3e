/*
 * Redis backend: Redis Cluster routing and sharded pub/sub (see cluster.h).
 *
 * Ownership: the slot map's entries are read and written atomically
 * (a pointer each; nodes are never freed before the cluster). mu guards
 * the node list, each node's subscriber pointer, the refresh requests and
 * stopping; no I/O runs under it. move_mu guards the subscription list
 * and each subscription's home: the thread holds it while it moves
 * subscriptions, unsubscribe while it unlinks one.
 */
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "core/log.h"
#include "core/thread_name.h"
#include "conn.h"
#include "node.h"
#include "slot.h"
#include "subscriber.h"

#define REFRESH_EVERY_MS 5000
#define REFRESH_GAP_MS 50
/* After a shard channel moved or a subscriber lost its node, the map is
 * read every CHASE_STEP_MS for up to CHASE_MS until a subscription moves:
 * the nodes learn of a slot's new owner one after another, and the first
 * one asked may not know yet. */
#define CHASE_MS 5000
#define CHASE_STEP_MS 100
#define MAX_REDIRECTS 16
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 200
/* A caller without a deadline retries refusals this long when the
 * command timeout is 0 ("no limit"). */
#define RETRY_WINDOW_MS 2000

typedef struct cnode {
    dlock__redis_node *node;
    dlock__redis_subscriber *sub; /* NULL until a channel of its slots; mu */
    struct cnode *next;
} cnode;

/* A subscription handle (what dlock_subscription * points to here). */
typedef struct csub {
    char *channel;
    unsigned slot;
    dlock_message_fn fn;
    void *arg;
    cnode *home;               /* move_mu */
    dlock_subscription *inner; /* at home's subscriber; move_mu */
    struct csub *prev, *next;  /* move_mu */
} csub;

struct dlock__redis_cluster {
    const dlock__redis_config *cfg;
    cnode *slots[DLOCK__REDIS_SLOTS]; /* atomic; NULL: not known */

    pthread_mutex_t mu;
    cnode *nodes;   /* mu */
    int refresh;    /* a refresh is wanted; mu */
    int64_t chase_until; /* refresh until a subscription moves; mu */
    int stopping;   /* mu */

    pthread_mutex_t move_mu;
    csub *subs;     /* move_mu */

    pthread_t thread;
    int started;
    int pipefd[2];
};

/* ---- nodes and the map ------------------------------------------------ */

static cnode *slot_node(dlock__redis_cluster *c, unsigned slot)
{
    return __atomic_load_n(&c->slots[slot], __ATOMIC_ACQUIRE);
}

static void slot_set(dlock__redis_cluster *c, unsigned slot, cnode *n)
{
    __atomic_store_n(&c->slots[slot], n, __ATOMIC_RELEASE);
}

/* The node at host:port, made on first use. NULL: out of memory. */
static cnode *node_for(dlock__redis_cluster *c, const char *host, int port)
{
    cnode *n;
    pthread_mutex_lock(&c->mu);
    for (n = c->nodes; n; n = n->next)
        if (dlock__redis_node_is(n->node, host, port))
            break;
    if (!n && (n = calloc(1, sizeof *n)) != NULL) {
        if (dlock__redis_node_new(&n->node, c->cfg, host, port) != 0) {
            free(n);
            n = NULL;
        } else {
            n->next = c->nodes;
            c->nodes = n;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* Some node of the map (for calls without keys and unknown slots): the
 * first slot's master, else any node known. */
static cnode *any_node(dlock__redis_cluster *c)
{
    cnode *n = slot_node(c, 0);
    if (n)
        return n;
    pthread_mutex_lock(&c->mu);
    n = c->nodes;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void wake(dlock__redis_cluster *c)
{
    if (c->started)
        dlock__redis_pipe_poke(c->pipefd[1]);
}

static void want_refresh(dlock__redis_cluster *c)
{
    int poke;
    pthread_mutex_lock(&c->mu);
    poke = !c->refresh;
    c->refresh = 1;
    pthread_mutex_unlock(&c->mu);
    if (poke)
        wake(c);
}

static int reply_int(const redisReply *r, long long *v)
{
    if (r->type != REDIS_REPLY_INTEGER)
        return -1;
    *v = r->integer;
    return 0;
}

/* Applies a CLUSTER SLOTS reply got from `asked` (whose host stands in
 * for a master announced without one). 0, or DLOCK_EPROTO/ENOMEM. */
static int apply_slots(dlock__redis_cluster *c, const redisReply *r,
                       const cnode *asked)
{
    size_t i;
    if (r->type != REDIS_REPLY_ARRAY)
        return DLOCK_EPROTO;
    for (i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *m;
        long long lo, hi, port, s;
        const char *host;
        cnode *n;
        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
            reply_int(e->element[0], &lo) != 0 ||
            reply_int(e->element[1], &hi) != 0 || lo < 0 || hi < lo ||
            hi >= DLOCK__REDIS_SLOTS)
            return DLOCK_EPROTO;
        m = e->element[2];
        if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
            m->element[0]->type != REDIS_REPLY_STRING ||
            reply_int(m->element[1], &port) != 0 || port <= 0 || port > 65535)
            return DLOCK_EPROTO;
        host = m->element[0]->str;
        if (host[0] == '\0' || strcmp(host, "?") == 0)
            host = asked->node->cfg.url.host;
        n = node_for(c, host, (int)port);
        if (!n)
            return DLOCK_ENOMEM;
        for (s = lo; s <= hi; s++)
            slot_set(c, (unsigned)s, n);
    }
    return 0;
}

/* CLUSTER SLOTS on n, applied. */
static int refresh_from(dlock__redis_cluster *c, cnode *n, char *errbuf,
                        size_t errlen)
{
    static const char *const argv[2] = {"CLUSTER", "SLOTS"};
    dlock__redis_cmdbuf b = {0};
    redisReply *r = NULL;
    int rc = dlock__redis_cmdbuf_add(&b, 2, argv, NULL);

    if (rc == 0)
        rc = dlock__redis_node_call(n->node, &b, 1, &r, INT64_MAX, errbuf,
                                    errlen);
    else
        dlock__redis_errf(errbuf, errlen, "out of memory");
    dlock__redis_cmdbuf_free(&b);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_ERROR) {
        dlock__redis_errf(errbuf, errlen,
                          strstr(r->str, "cluster support disabled")
                              ? "redis %s is not a cluster node (%.120s): "
                                "use a redis:// URL"
                              : "redis %s: CLUSTER SLOTS refused: %.120s",
                          n->node->cfg.url.where, r->str);
        rc = strncmp(r->str, "NOAUTH", 6) == 0 ||
                     strncmp(r->str, "NOPERM", 6) == 0
                 ? DLOCK_EAUTH
             : dlock__redis_unavailable(r->str, r->len) ? DLOCK_ECONN
                                                        : DLOCK_EPROTO;
    } else {
        rc = apply_slots(c, r, n);
        if (rc == DLOCK_EPROTO)
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: unexpected reply to CLUSTER SLOTS",
                              n->node->cfg.url.where);
        else if (rc != 0)
            dlock__redis_errf(errbuf, errlen, "out of memory");
    }
    freeReplyObject(r);
    return rc;
}

/* Reads the map from the first node that answers: the masters of the map
 * (and every other known node), then the seeds. */
static int refresh(dlock__redis_cluster *c, char *errbuf, size_t errlen)
{
    const dlock__redis_url *u = &c->cfg->url;
    cnode *n, *list;
    int i, rc = DLOCK_ECONN;

    pthread_mutex_lock(&c->mu);
    list = c->nodes;
    pthread_mutex_unlock(&c->mu);
    /* The list only grows at its head: what was read stays valid. */
    for (n = list; n; n = n->next) {
        rc = refresh_from(c, n, errbuf, errlen);
        if (rc == 0 || rc == DLOCK_EAUTH)
            return rc;
    }
    for (i = 0; i < u->naddrs; i++) {
        n = node_for(c, u->addrs[i].host, u->addrs[i].port);
        if (!n) {
            dlock__redis_errf(errbuf, errlen, "out of memory");
            return DLOCK_ENOMEM;
        }
        rc = refresh_from(c, n, errbuf, errlen);
        if (rc == 0 || rc == DLOCK_EAUTH || rc == DLOCK_EPROTO)
            return rc;
    }
    return rc;
}

/* ---- calls ------------------------------------------------------------- */

/* Until when a call repeats what ran nothing: its own deadline, or the
 * command timeout from now (RETRY_WINDOW_MS when that is "no limit"). */
static int64_t retry_deadline(const dlock__redis_cluster *c, int64_t deadline_ms)
{
    if (deadline_ms != INT64_MAX)
        return deadline_ms;
    return dlock__redis_now_ms() + (c->cfg->command_timeout_ms > 0
                                        ? c->cfg->command_timeout_ms
                                        : RETRY_WINDOW_MS);
}

int dlock__redis_cluster_eval(dlock__redis_cluster *c,
                              dlock__redis_scripts *scripts, dlock_reply **out,
                              const dlock_script *script, size_t nkeys,
                              size_t nargs, const char *const *argv,
                              const size_t *argvlen, int64_t deadline_ms,
                              char *errbuf, size_t errlen)
{
    dlock__redis_redirect redir;
    char detail[256];
    int64_t retry_until, backoff = BACKOFF_MIN_MS;
    unsigned slot = 0;
    cnode *ask = NULL;
    int redirects = 0, rc;

    if (nkeys > 0 && argv && argv[0])
        slot = dlock__redis_key_slot(argv[0],
                                     argvlen ? argvlen[0] : strlen(argv[0]));
    retry_until = retry_deadline(c, deadline_ms);
    for (;;) {
        cnode *n = ask ? ask : nkeys > 0 ? slot_node(c, slot) : NULL;
        if (!n)
            n = any_node(c);
        memset(&redir, 0, sizeof redir);
        redir.asking = ask != NULL;
        ask = NULL;
        detail[0] = '\0';
        rc = dlock__redis_eval(n->node, scripts, out, script, nkeys, nargs,
                               argv, argvlen, deadline_ms, &redir, detail,
                               sizeof detail);
        if (rc != DLOCK_ECONN)
            break;
        if (redir.kind != 0) {
            cnode *to = node_for(c, redir.host, redir.port);
            if (++redirects > MAX_REDIRECTS) {
                dlock__redis_errf(errbuf, errlen,
                                  "redis cluster: more than %d redirections "
                                  "for one call (last: %s)",
                                  MAX_REDIRECTS, detail);
                return DLOCK_EPROTO;
            }
            if (!to) {
                dlock__redis_errf(errbuf, errlen, "out of memory");
                return DLOCK_ENOMEM;
            }
            if (redir.kind == DLOCK__REDIS_MOVED) {
                if ((unsigned)redir.slot < DLOCK__REDIS_SLOTS)
                    slot_set(c, (unsigned)redir.slot, to);
                want_refresh(c);
            } else {
                ask = to;
            }
            continue;
        }
        want_refresh(c);
        /* Only a refusal, or a node that could not be reached (a master
         * gone before the map knew), ran nothing: safe to repeat. */
        if (!(redir.refused || dlock__redis_unsent(detail)) ||
            dlock__redis_now_ms() + backoff >= retry_until)
            break;
        usleep((useconds_t)backoff * 1000);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    if (rc != 0)
        dlock__redis_errf(errbuf, errlen, "%s", detail);
    return rc;
}

/* ---- sharded pub/sub --------------------------------------------------- */

static void relay(void *arg, const char *channel, const char *msg, size_t len)
{
    csub *s = arg;
    s->fn(s->arg, channel, msg, len);
}

/* A subscription's home no longer serves it (or is gone): chase the map
 * until the thread has moved it. */
static void chase(dlock__redis_cluster *c)
{
    pthread_mutex_lock(&c->mu);
    c->chase_until = dlock__redis_now_ms() + CHASE_MS;
    pthread_mutex_unlock(&c->mu);
    want_refresh(c);
}

static void on_moved(void *arg, const char *channel, size_t len)
{
    (void)channel;
    (void)len;
    chase(arg);
}

static void on_sub_lost(void *arg)
{
    chase(arg);
}

/* n's subscriber, made on first use. NULL: out of memory. */
static dlock__redis_subscriber *node_subscriber(dlock__redis_cluster *c,
                                                cnode *n)
{
    dlock__redis_subscriber *s;
    pthread_mutex_lock(&c->mu);
    if (!n->sub && dlock__redis_subscriber_new(&n->sub, &n->node->cfg) == 0) {
        dlock__redis_subscriber_set_sharded(n->sub, on_moved, c);
        dlock__redis_subscriber_on_lost(n->sub, on_sub_lost, c);
    }
    s = n->sub;
    pthread_mutex_unlock(&c->mu);
    return s;
}

/* Subscribes s at the master of its slot now. */
static int subscribe_home(dlock__redis_cluster *c, csub *s, cnode **home,
                          dlock_subscription **inner, int64_t deadline_ms,
                          char *errbuf, size_t errlen)
{
    cnode *n = slot_node(c, s->slot);
    dlock__redis_subscriber *sub;
    if (!n)
        n = any_node(c);
    sub = node_subscriber(c, n);
    if (!sub) {
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    *home = n;
    return dlock__redis_subscriber_add(sub, inner, s->channel, relay, s,
                                       deadline_ms, errbuf, errlen);
}

int dlock__redis_cluster_subscribe(dlock__redis_cluster *c,
                                   dlock_subscription **out,
                                   const char *channel, dlock_message_fn fn,
                                   void *arg, int64_t deadline_ms,
                                   char *errbuf, size_t errlen)
{
    int64_t retry_until, backoff = BACKOFF_MIN_MS;
    csub *s;
    int rc;

    if (out)
        *out = NULL;
    if (!out || !channel || !channel[0] || !fn)
        return DLOCK_EINVAL;
    s = calloc(1, sizeof *s);
    if (!s || !(s->channel = strdup(channel))) {
        free(s);
        return DLOCK_ENOMEM;
    }
    s->slot = dlock__redis_key_slot(channel, strlen(channel));
    s->fn = fn;
    s->arg = arg;
    retry_until = retry_deadline(c, deadline_ms);
    for (;;) {
        cnode *home;
        dlock_subscription *inner;
        rc = subscribe_home(c, s, &home, &inner, deadline_ms, errbuf, errlen);
        if (rc == 0) {
            pthread_mutex_lock(&c->move_mu);
            s->home = home;
            s->inner = inner;
            s->next = c->subs;
            if (c->subs)
                c->subs->prev = s;
            c->subs = s;
            pthread_mutex_unlock(&c->move_mu);
            /* Moved while this call subscribed: the thread's next pass
             * (this refresh) brings it home. */
            if (slot_node(c, s->slot) != home)
                want_refresh(c);
            *out = (dlock_subscription *)s;
            return 0;
        }
        /* The slot moved (MOVED) or its master is down: the map is read
         * again meanwhile. */
        if (rc != DLOCK_ECONN ||
            dlock__redis_now_ms() + backoff >= retry_until)
            break;
        want_refresh(c);
        usleep((useconds_t)backoff * 1000);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    free(s->channel);
    free(s);
    return rc;
}

void dlock__redis_cluster_unsubscribe(dlock__redis_cluster *c,
                                      dlock_subscription *sub)
{
    csub *s = (csub *)sub;
    dlock__redis_subscriber *from;
    dlock_subscription *inner;
    if (!s)
        return;
    pthread_mutex_lock(&c->move_mu);
    if (s->prev)
        s->prev->next = s->next;
    else
        c->subs = s->next;
    if (s->next)
        s->next->prev = s->prev;
    inner = s->inner;
    pthread_mutex_lock(&c->mu);
    from = s->home->sub;
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_unlock(&c->move_mu);
    dlock__redis_subscriber_remove(from, inner);
    free(s->channel);
    free(s);
}

/* Moves every subscription whose slot's master is not its home (thread).
 * A failure leaves it for the next pass. Returns how many moved. */
static int rehome(dlock__redis_cluster *c)
{
    csub *s;
    int moved = 0;
    pthread_mutex_lock(&c->move_mu);
    for (s = c->subs; s; s = s->next) {
        cnode *home, *now = slot_node(c, s->slot);
        dlock__redis_subscriber *from;
        dlock_subscription *inner, *old;
        if (!now || now == s->home)
            continue;
        if (subscribe_home(c, s, &home, &inner,
                           dlock__redis_deadline(c->cfg->command_timeout_ms),
                           NULL, 0) != 0)
            break; /* the new master does not answer yet: next pass */
        pthread_mutex_lock(&c->mu);
        from = s->home->sub;
        pthread_mutex_unlock(&c->mu);
        old = s->inner;
        s->inner = inner;
        s->home = home;
        dlock__redis_subscriber_remove(from, old);
        moved++;
        dlock__log(DLOCK_LOG_INFO, "redis cluster: subscription to \"%.128s\" "
                   "moved to %s", s->channel, home->node->cfg.url.where);
        /* a release published meanwhile was missed: look again */
        s->fn(s->arg, s->channel, "", 0);
    }
    pthread_mutex_unlock(&c->move_mu);
    return moved;
}

/* ---- the thread ---------------------------------------------------------- */

static void *run(void *arg)
{
    dlock__redis_cluster *c = arg;
    int64_t last = dlock__redis_now_ms(), failures = 0;

    for (;;) {
        struct pollfd p;
        int64_t now = dlock__redis_now_ms(), due;
        int wanted, stopping, chasing;

        pthread_mutex_lock(&c->mu);
        wanted = c->refresh;
        stopping = c->stopping;
        chasing = now < c->chase_until;
        pthread_mutex_unlock(&c->mu);
        if (stopping)
            break;
        due = last + (wanted     ? (failures ? BACKOFF_MAX_MS : REFRESH_GAP_MS)
                      : chasing ? CHASE_STEP_MS
                                : REFRESH_EVERY_MS);
        if (now >= due) {
            pthread_mutex_lock(&c->mu);
            c->refresh = 0;
            pthread_mutex_unlock(&c->mu);
            if (refresh(c, NULL, 0) == 0) {
                failures = 0;
                if (rehome(c) > 0) {
                    pthread_mutex_lock(&c->mu);
                    c->chase_until = 0;
                    pthread_mutex_unlock(&c->mu);
                }
            } else {
                failures++;
                want_refresh(c);
            }
            last = dlock__redis_now_ms();
            continue;
        }
        p.fd = c->pipefd[0];
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, dlock__redis_poll_ms(due - now)) > 0)
            dlock__redis_pipe_drain(c->pipefd[0]);
    }
    return NULL;
}

/* ---- the API ------------------------------------------------------------- */

int dlock__redis_cluster_new(dlock__redis_cluster **out,
                             const dlock__redis_config *cfg, char *errbuf,
                             size_t errlen)
{
    dlock__redis_cluster *c;
    int rc;

    *out = NULL;
    c = calloc(1, sizeof *c);
    if (!c) {
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    c->cfg = cfg;
    c->pipefd[0] = c->pipefd[1] = -1;
    if (pthread_mutex_init(&c->mu, NULL) != 0) {
        free(c);
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    if (pthread_mutex_init(&c->move_mu, NULL) != 0) {
        pthread_mutex_destroy(&c->mu);
        free(c);
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    if (c->cfg->lazy_connect) {
        /* No I/O: the seeds stand in for the map until the thread has read
         * it (it starts with a refresh wanted); a call sent to one meanwhile
         * is redirected by it, or refused while it is down. */
        int i;
        rc = 0;
        for (i = 0; i < cfg->url.naddrs && rc == 0; i++)
            if (!node_for(c, cfg->url.addrs[i].host, cfg->url.addrs[i].port)) {
                dlock__redis_errf(errbuf, errlen, "out of memory");
                rc = DLOCK_ENOMEM;
            }
        c->refresh = 1;
    } else {
        rc = refresh(c, errbuf, errlen);
    }
    if (rc == 0 && !any_node(c)) {
        dlock__redis_errf(errbuf, errlen, "redis cluster: no slot is served");
        rc = DLOCK_ECONN;
    }
    if (rc == 0 && pipe2(c->pipefd, O_NONBLOCK | O_CLOEXEC) != 0) {
        c->pipefd[0] = c->pipefd[1] = -1;
        dlock__redis_errf(errbuf, errlen, "out of memory");
        rc = DLOCK_ENOMEM;
    }
    if (rc == 0) {
        c->started = 1; /* before the thread: it reads it */
        if (pthread_create(&c->thread, NULL, run, c) != 0) {
            c->started = 0;
            dlock__redis_errf(errbuf, errlen, "out of memory");
            rc = DLOCK_ENOMEM;
        }
    }
    if (rc != 0) {
        dlock__redis_cluster_free(c);
        return rc;
    }
    dlock__thread_name(c->thread, "dlock-cluster");
    *out = c;
    return 0;
}

void dlock__redis_cluster_free(dlock__redis_cluster *c)
{
    if (!c)
        return;
    if (c->started) {
        pthread_mutex_lock(&c->mu);
        c->stopping = 1;
        pthread_mutex_unlock(&c->mu);
        wake(c);
        pthread_join(c->thread, NULL);
    }
    if (c->pipefd[0] >= 0) {
        close(c->pipefd[0]);
        close(c->pipefd[1]);
    }
    while (c->nodes) {
        cnode *next = c->nodes->next;
        dlock__redis_subscriber_free(c->nodes->sub);
        dlock__redis_node_free(c->nodes->node);
        free(c->nodes);
        c->nodes = next;
    }
    pthread_mutex_destroy(&c->move_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}
