/*
 * Redis backend: Redis Cluster routing and sharded pub/sub (see cluster.h).
 *
 * Ownership: the slot map's entries are pointers, written under mu and
 * read atomically (the thread) or under mu (callers, which take a
 * reference at once). mu guards the node list, each node's references,
 * homes and subscriber pointer, the refresh requests and generations and
 * stopping; no I/O runs under it. move_mu guards the subscription list
 * and each subscription's home: the thread holds it while it moves
 * subscriptions, unsubscribe while it unlinks one (lock order: move_mu,
 * then mu).
 *
 * Node lifetime: only the thread adds map nodes and drops the nodes the
 * map no longer names (after a refresh): a dropped node leaves the list at
 * once and is freed (its connections closed) by whoever lets go of it
 * last, a call in flight on it or a subscription still at home there.
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
#include "cross.h"
#include "node.h"
#include "safety.h"
#include "parse.h"
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
/* apply_slots's refusal of a map naming more nodes than
 * cluster_max_nodes (api/dlock/redis.h) (not a dlock code). */
#define TOO_MANY_NODES 1
#define BACKOFF_MIN_MS 10
#define BACKOFF_MAX_MS 200
/* A caller without a deadline retries refusals this long when the
 * command timeout is 0 ("no limit"). */
#define RETRY_WINDOW_MS 2000

typedef struct cnode {
    dlock__redis_node *node;
    dlock__redis_subscriber *sub; /* NULL until a channel of its slots; mu */
    struct cnode *next;           /* the list (live) or gone; mu */
    int refs;  /* calls using it; mu */
    int homes; /* subscriptions at home here; mu */
    int gone;  /* left the map: freed when refs and homes are 0; mu */
    int mark;  /* the thread's, while it drops nodes */
    unsigned id;   /* its key_node group: NODE_IDS + a count; set once */
    int no_cross;  /* refused a script over several slots; mu */
} cnode;

/* key_node's groups: a slot's own (0..16383), or a node's from here on. */
#define NODE_IDS 0x10000u

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
    pthread_cond_t refreshed; /* done_gen moved; mu (monotonic clock) */
    cnode *nodes;   /* mu */
    cnode *gone;    /* dropped, still in use; mu */
    int nnodes;     /* in nodes; mu */
    unsigned long begun_gen, done_gen; /* refreshes begun, ended; mu */
    int refresh;    /* a refresh is wanted; mu */
    int64_t chase_until; /* refresh until a subscription moves; mu */
    int stopping;   /* mu */

    pthread_mutex_t move_mu;
    csub *subs;     /* move_mu */

    pthread_t thread;
    int started;
    int pipefd[2];

    unsigned nodes_made; /* for node ids; mu */
    dlock__redis_cross *cross; /* eval_node's derived scripts */
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

/* The node of the list at host:port, or NULL. Called with mu held. */
static cnode *find_node(dlock__redis_cluster *c, const char *host, int port)
{
    cnode *n;
    for (n = c->nodes; n; n = n->next)
        if (dlock__redis_node_is(n->node, host, port))
            break;
    return n;
}

/* The node at host:port, made on first use (the thread and the
 * constructor only: the seeds and the masters a map names). NULL: out of
 * memory, or *full: the list holds cluster_max_nodes plus the seeds
 * already. */
static cnode *node_for(dlock__redis_cluster *c, const char *host, int port,
                       int *full)
{
    cnode *n;
    *full = 0;
    pthread_mutex_lock(&c->mu);
    n = find_node(c, host, port);
    if (!n && c->nnodes >= c->cfg->cluster_max_nodes + c->cfg->url.naddrs)
        *full = 1;
    else if (!n && (n = calloc(1, sizeof *n)) != NULL) {
        if (dlock__redis_node_new(&n->node, c->cfg, host, port) != 0) {
            free(n);
            n = NULL;
        } else {
            n->id = NODE_IDS + c->nodes_made++;
            n->next = c->nodes;
            c->nodes = n;
            c->nnodes++;
        }
    }
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void cnode_free(cnode *n)
{
    dlock__redis_subscriber_free(n->sub);
    dlock__redis_node_free(n->node);
    free(n);
}

/* Unlinks n from the gone list if nobody uses it any more: the caller
 * frees it, after unlocking. A node with a subscriber is left to the
 * thread (drop_unmapped): its last user may be that subscriber's own
 * thread, which cannot join itself. Called with mu held. */
static int gone_unused(dlock__redis_cluster *c, cnode *n)
{
    cnode **p;
    if (!n->gone || n->refs > 0 || n->homes > 0 || n->sub)
        return 0;
    for (p = &c->gone; *p; p = &(*p)->next)
        if (*p == n) {
            *p = n->next;
            return 1;
        }
    return 0;
}

/* Some node of the map (for calls without keys and unknown slots): the
 * first slot's master, else any node known. Called with mu held. */
static cnode *any_node_locked(dlock__redis_cluster *c)
{
    cnode *n = slot_node(c, 0);
    return n ? n : c->nodes;
}

static cnode *any_node(dlock__redis_cluster *c)
{
    cnode *n;
    pthread_mutex_lock(&c->mu);
    n = any_node_locked(c);
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* The node a call goes to (next: where a redirection sent it, already
 * referenced; else the slot's master, or any), referenced: node_put lets
 * go of it. */
static cnode *node_get(dlock__redis_cluster *c, cnode *next, size_t nkeys,
                       unsigned slot)
{
    cnode *n;
    pthread_mutex_lock(&c->mu);
    n = next ? next : nkeys > 0 ? slot_node(c, slot) : NULL;
    if (!n)
        n = any_node_locked(c);
    if (n && !next)
        n->refs++;
    pthread_mutex_unlock(&c->mu);
    return n;
}

/* Lets go of n: a call's reference (home 0) or a subscription's home
 * (home 1). The last user of a node that left the map frees it. */
static void let_go(dlock__redis_cluster *c, cnode *n, int home)
{
    int unused;
    pthread_mutex_lock(&c->mu);
    if (home)
        n->homes--;
    else
        n->refs--;
    unused = gone_unused(c, n);
    pthread_mutex_unlock(&c->mu);
    if (unused)
        cnode_free(n);
}

static void node_put(dlock__redis_cluster *c, cnode *n)
{
    let_go(c, n, 0);
}

/* Drops the nodes no slot names, the seeds among them (refresh makes them
 * again when it needs them): out of the list at once, freed now or by
 * their last user; and frees the nodes dropped before that nobody uses
 * now (thread, after a refresh). */
static void drop_unmapped(dlock__redis_cluster *c)
{
    cnode **p, *n, *unused = NULL;
    unsigned s;

    pthread_mutex_lock(&c->mu);
    p = &c->gone;
    while ((n = *p) != NULL) {
        if (n->refs > 0 || n->homes > 0) {
            p = &n->next;
            continue;
        }
        *p = n->next;
        n->next = unused;
        unused = n;
    }
    for (n = c->nodes; n; n = n->next)
        n->mark = 0;
    for (s = 0; s < DLOCK__REDIS_SLOTS; s++)
        if (c->slots[s])
            c->slots[s]->mark = 1;
    p = &c->nodes;
    while ((n = *p) != NULL) {
        if (n->mark) {
            p = &n->next;
            continue;
        }
        *p = n->next;
        c->nnodes--;
        n->gone = 1;
        dlock__log(DLOCK_LOG_INFO, "redis cluster: node %s left the slot map: "
                   "dropped", n->node->cfg.url.where);
        if (n->refs == 0 && n->homes == 0) {
            n->next = unused;
            unused = n;
        } else {
            n->next = c->gone;
            c->gone = n;
        }
    }
    pthread_mutex_unlock(&c->mu);
    while (unused) {
        n = unused->next;
        cnode_free(unused);
        unused = n;
    }
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

/* apply_slots's: the cluster and the node asked, and whether the map
 * named too many nodes. */
typedef struct slots_apply {
    dlock__redis_cluster *c;
    const cnode *asked;
} slots_apply;

static int apply_range(void *arg, unsigned lo, unsigned hi, const char *host, int port)
{
    slots_apply *a = arg;
    cnode *n;
    unsigned s;
    int full;

    n = node_for(a->c, host ? host : a->asked->node->cfg.url.host, port, &full);
    if (full)
        return TOO_MANY_NODES;
    if (!n)
        return DLOCK_ENOMEM;
    pthread_mutex_lock(&a->c->mu);
    for (s = lo; s <= hi; s++)
        slot_set(a->c, s, n);
    pthread_mutex_unlock(&a->c->mu);
    return 0;
}

/* The distinct masters of a map, counted up to a cap before any node is
 * made for one of them (each costs connections and an AUTH). */
typedef struct slots_count {
    const char *asked_host;
    int max, n;
    const char **host;
    int *port;
} slots_count;

static int count_range(void *arg, unsigned lo, unsigned hi, const char *host, int port)
{
    slots_count *k = arg;
    int i;

    (void)lo;
    (void)hi;
    if (!host)
        host = k->asked_host;
    for (i = 0; i < k->n; i++)
        if (k->port[i] == port && strcmp(k->host[i], host) == 0)
            return 0;
    if (k->n == k->max)
        return TOO_MANY_NODES;
    k->host[k->n] = host;
    k->port[k->n++] = port;
    return 0;
}

/* Applies a CLUSTER SLOTS reply got from `asked` (whose host stands in
 * for a master announced without one), unless it names more masters than
 * cluster_max_nodes. 0, or DLOCK_EPROTO/ENOMEM, or TOO_MANY_NODES. */
static int apply_slots(dlock__redis_cluster *c, const redisReply *r,
                       const cnode *asked)
{
    slots_apply a = {c, asked};
    slots_count k = {asked->node->cfg.url.host, c->cfg->cluster_max_nodes, 0, NULL, NULL};
    int rc;

    k.host = malloc((size_t)k.max * sizeof(*k.host));
    k.port = malloc((size_t)k.max * sizeof(*k.port));
    rc = k.host && k.port ? dlock__redis_parse_slots(r, count_range, &k) : DLOCK_ENOMEM;
    free(k.host);
    free(k.port);
    return rc != 0 ? rc : dlock__redis_parse_slots(r, apply_range, &a);
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
        if (rc == TOO_MANY_NODES) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: CLUSTER SLOTS names more than %d "
                              "nodes (refused: cluster_max_nodes=%d)",
                              n->node->cfg.url.where, c->cfg->cluster_max_nodes,
                              c->cfg->cluster_max_nodes);
            rc = DLOCK_EPROTO;
        } else if (rc == DLOCK_EPROTO)
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
 * (and every other known node), then the seeds. The constructor's and the
 * thread's only (the list's other writers only add at its head, and only
 * the thread unlinks). */
static int refresh(dlock__redis_cluster *c, char *errbuf, size_t errlen)
{
    const dlock__redis_url *u = &c->cfg->url;
    cnode *n, *list;
    int i, full, rc = DLOCK_ECONN;

    pthread_mutex_lock(&c->mu);
    list = c->nodes;
    pthread_mutex_unlock(&c->mu);
    for (n = list; n; n = n->next) {
        rc = refresh_from(c, n, errbuf, errlen);
        if (rc == 0 || rc == DLOCK_EAUTH)
            return rc;
    }
    for (i = 0; i < u->naddrs; i++) {
        n = node_for(c, u->addrs[i].host, u->addrs[i].port, &full);
        if (!n) {
            dlock__redis_errf(errbuf, errlen, full ? "redis cluster: too many "
                              "nodes" : "out of memory");
            return full ? DLOCK_EPROTO : DLOCK_ENOMEM;
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

/* The node a redirection names, referenced (node_put), if the map knows
 * it: after the map is read again when it does not yet (the thread reads
 * it; this waits by deadline_ms). NULL: the map does not name it, and no
 * connection to it is made (nor credentials sent). */
static cnode *redirect_target(dlock__redis_cluster *c,
                              const dlock__redis_redirect *redir,
                              int64_t deadline_ms)
{
    cnode *n;
    pthread_mutex_lock(&c->mu);
    n = find_node(c, redir->host, redir->port);
    if (!n) {
        unsigned long want = c->begun_gen + 1;
        int poke = !c->refresh;
        c->refresh = 1;
        pthread_mutex_unlock(&c->mu);
        if (poke)
            wake(c);
        pthread_mutex_lock(&c->mu);
        while (c->done_gen < want && !c->stopping &&
               dlock__redis_now_ms() < deadline_ms)
            dlock__wait_cond(&c->refreshed, &c->mu, deadline_ms);
        n = find_node(c, redir->host, redir->port);
    }
    if (n)
        n->refs++;
    pthread_mutex_unlock(&c->mu);
    return n;
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
    cnode *next = NULL; /* where a redirection sent the call; referenced */
    int redirects = 0, asking = 0, rc;

    if (nkeys > 0 && argv && argv[0])
        slot = dlock__redis_key_slot(argv[0],
                                     argvlen ? argvlen[0] : strlen(argv[0]));
    retry_until = retry_deadline(c, deadline_ms);
    for (;;) {
        cnode *n = node_get(c, next, nkeys, slot), *to;
        if (!n) {
            dlock__redis_errf(errbuf, errlen, "redis cluster: no node known");
            return DLOCK_ECONN;
        }
        memset(&redir, 0, sizeof redir);
        redir.asking = asking;
        next = NULL;
        asking = 0;
        detail[0] = '\0';
        rc = dlock__redis_eval(n->node, scripts, out, script, nkeys, nargs,
                               argv, argvlen, deadline_ms, &redir, detail,
                               sizeof detail);
        node_put(c, n);
        if (rc != DLOCK_ECONN)
            break;
        if (redir.kind != 0) {
            if (++redirects > MAX_REDIRECTS) {
                dlock__redis_errf(errbuf, errlen,
                                  "redis cluster: more than %d redirections "
                                  "for one call (last: %s)",
                                  MAX_REDIRECTS, detail);
                return DLOCK_EPROTO;
            }
            to = redirect_target(c, &redir, retry_until);
            if (!to) {
                dlock__redis_errf(errbuf, errlen,
                                  "redis cluster: redirected (%s) to %s:%d, "
                                  "a node the slot map does not name: not "
                                  "followed",
                                  redir.kind == DLOCK__REDIS_MOVED ? "MOVED"
                                                                   : "ASK",
                                  redir.host, redir.port);
                return DLOCK_ECONN;
            }
            /* The call is repeated at the node named (with ASKING after
             * an ASK); a MOVED also moves the slot there. */
            if (redir.kind == DLOCK__REDIS_MOVED) {
                pthread_mutex_lock(&c->mu);
                if ((unsigned)redir.slot < DLOCK__REDIS_SLOTS && !to->gone)
                    slot_set(c, (unsigned)redir.slot, to);
                pthread_mutex_unlock(&c->mu);
                want_refresh(c);
            } else {
                asking = 1;
            }
            next = to;
            continue;
        }
        want_refresh(c);
        /* Only a refusal, or a node that could not be reached (a master
         * gone before the map knew), ran nothing: safe to repeat. */
        if (!(redir.refused || dlock__redis_unsent(detail)) ||
            dlock__redis_now_ms() + backoff >= retry_until)
            break;
        dlock__wait_nap(backoff);
        backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
    }
    if (rc != 0)
        dlock__redis_errf(errbuf, errlen, "%s", detail);
    return rc;
}

/* ---- several slots of one node in one call (cross.h) ------------------ */

unsigned dlock__redis_cluster_key_node(dlock__redis_cluster *c, const char *key,
                                       size_t len)
{
    unsigned slot = dlock__redis_key_slot(key, len), group = slot;
    cnode *n;

    pthread_mutex_lock(&c->mu);
    n = slot_node(c, slot);
    if (n && !n->no_cross)
        group = n->id;
    pthread_mutex_unlock(&c->mu);
    return group;
}

int dlock__redis_cluster_eval_node(dlock__redis_cluster *c,
                                   dlock__redis_scripts *scripts,
                                   dlock_reply **out, const dlock_script *script,
                                   size_t nkeys, size_t nargs,
                                   const char *const *argv, const size_t *argvlen,
                                   int64_t deadline_ms, char *errbuf,
                                   size_t errlen)
{
    const dlock_script *derived;
    const char **av;
    size_t *avlen, total = nkeys + nargs + 1;
    char count[24];
    cnode *n;
    int rc, refused;

    *out = NULL;
    if (nkeys < 1)
        return DLOCK_ENOTSUP;
    n = node_get(c, NULL, 1, dlock__redis_key_slot(argv[0], argvlen ? argvlen[0]
                                                                    : strlen(argv[0])));
    if (!n) {
        dlock__redis_errf(errbuf, errlen, "redis cluster: no node known");
        return DLOCK_ECONN;
    }
    pthread_mutex_lock(&c->mu);
    refused = n->no_cross;
    pthread_mutex_unlock(&c->mu);
    derived = refused ? NULL : dlock__redis_cross_script(c->cross, script);
    av = derived ? malloc(total * sizeof *av) : NULL;
    avlen = av ? malloc(total * sizeof *avlen) : NULL;
    if (refused || !avlen) {
        free(av);
        node_put(c, n);
        if (refused)
            return DLOCK_ENOTSUP;
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    dlock__redis_cross_args(av, avlen, count, nkeys, nargs, argv, argvlen);
    rc = dlock__redis_cluster_eval(c, scripts, out, derived, 1, total - 1, av,
                                   avlen, deadline_ms, errbuf, errlen);
    free(av);
    free(avlen);
    if ((rc == 0 || rc == DLOCK_ESYNC) && (*out)->type == DLOCK_REPLY_ERROR) {
        const dlock_reply *r = *out;
        if (dlock__redis_cross_refused(r->str, r->len)) {
            pthread_mutex_lock(&c->mu);
            refused = !n->no_cross;
            n->no_cross = 1;
            pthread_mutex_unlock(&c->mu);
            /* Once per node: its keys are grouped by slot from now on. */
            if (refused)
                dlock__log(DLOCK_LOG_INFO, "redis cluster: node %s runs no "
                           "script over several slots (%.120s): one call per "
                           "slot there", n->node->cfg.url.where, r->str);
            rc = DLOCK_ENOTSUP;
        }
        /* The prelude's "not served here" (a slot moving), or another
         * refusal of the derived script that the plain one may not meet
         * (OOM refuses a flagged script that may write, not a plain one
         * that only extends leases): the caller splits. */
        rc = DLOCK_ENOTSUP;
        dlock_reply_free(*out);
        *out = NULL;
    }
    node_put(c, n);
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

/* Subscribes s at the master of its slot now. On 0, *home is that node,
 * counted as s's home (set_home's to undo). */
static int subscribe_home(dlock__redis_cluster *c, csub *s, cnode **home,
                          dlock_subscription **inner, int64_t deadline_ms,
                          char *errbuf, size_t errlen)
{
    cnode *n = node_get(c, NULL, 1, s->slot);
    dlock__redis_subscriber *sub;
    int rc;
    if (!n) {
        dlock__redis_errf(errbuf, errlen, "redis cluster: no node known");
        return DLOCK_ECONN;
    }
    sub = node_subscriber(c, n);
    if (!sub) {
        dlock__redis_errf(errbuf, errlen, "out of memory");
        rc = DLOCK_ENOMEM;
    } else {
        rc = dlock__redis_subscriber_add(sub, inner, s->channel, relay, s,
                                         deadline_ms, errbuf, errlen);
    }
    if (rc == 0) {
        pthread_mutex_lock(&c->mu);
        n->homes++;
        pthread_mutex_unlock(&c->mu);
        *home = n;
    }
    node_put(c, n);
    return rc;
}

/* n is no longer a subscription's home. */
static void leave_home(dlock__redis_cluster *c, cnode *n)
{
    let_go(c, n, 1);
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
        dlock__wait_nap(backoff);
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
    leave_home(c, s->home);
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
        dlock__redis_subscriber_remove(from, old);
        leave_home(c, s->home);
        s->home = home;
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
            unsigned long gen;
            int ok;
            pthread_mutex_lock(&c->mu);
            c->refresh = 0;
            gen = ++c->begun_gen;
            pthread_mutex_unlock(&c->mu);
            ok = refresh(c, NULL, 0) == 0;
            if (ok) {
                failures = 0;
                if (rehome(c) > 0) {
                    pthread_mutex_lock(&c->mu);
                    c->chase_until = 0;
                    pthread_mutex_unlock(&c->mu);
                }
                drop_unmapped(c);
            }
            /* Callers waiting on a redirection look at the map now. */
            pthread_mutex_lock(&c->mu);
            c->done_gen = gen;
            pthread_cond_broadcast(&c->refreshed);
            pthread_mutex_unlock(&c->mu);
            if (!ok) {
                failures++;
                want_refresh(c);
            }
            last = dlock__redis_now_ms();
            continue;
        }
        p.fd = c->pipefd[0];
        p.events = POLLIN;
        p.revents = 0;
        if (dlock__wait_fds(&p, 1, due) > 0)
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
    if (dlock__wait_cond_init(&c->refreshed) != 0) {
        pthread_mutex_destroy(&c->move_mu);
        pthread_mutex_destroy(&c->mu);
        free(c);
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    if (dlock__redis_cross_new(&c->cross) != 0) {
        dlock__redis_cluster_free(c);
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    if (c->cfg->lazy_connect) {
        /* No I/O: the seeds stand in for the map until the thread has read
         * it (it starts with a refresh wanted); a call sent to one meanwhile
         * is redirected by it, or refused while it is down. */
        int i, full;
        rc = 0;
        for (i = 0; i < cfg->url.naddrs && rc == 0; i++)
            if (!node_for(c, cfg->url.addrs[i].host, cfg->url.addrs[i].port,
                          &full)) {
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
        pthread_cond_broadcast(&c->refreshed);
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
        cnode_free(c->nodes);
        c->nodes = next;
    }
    while (c->gone) {
        cnode *next = c->gone->next;
        cnode_free(c->gone);
        c->gone = next;
    }
    dlock__redis_cross_free(c->cross);
    pthread_cond_destroy(&c->refreshed);
    pthread_mutex_destroy(&c->move_mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* ---- what the masters keep (safety.h) ---------------------------------- */

/* Whether the map names n as the master of some slot. Called with mu held. */
static int is_master(dlock__redis_cluster *c, const cnode *n)
{
    unsigned s;
    for (s = 0; s < DLOCK__REDIS_SLOTS; s++)
        if (slot_node(c, s) == n)
            return 1;
    return 0;
}

void dlock__redis_cluster_safety(dlock__redis_cluster *c,
                                 dlock_server_safety *out)
{
    dlock__redis_facts f;
    cnode *n;

    pthread_mutex_lock(&c->mu);
    for (n = c->nodes; n; n = n->next)
        if (is_master(c, n) && dlock__redis_pool_facts(n->node->pool, &f))
            dlock__redis_safety_merge(out, &f);
    pthread_mutex_unlock(&c->mu);
}
