/*
 * Redis backend: which node a call goes to — standalone, or the master
 * that Sentinel names (see topology.h).
 *
 * Ownership: the mutex guards master, suspect, stopping and last_err. The node list
 * grows only on the constructor's thread before the watcher starts, then
 * only on the watcher; it is freed after the watcher is joined. The
 * watcher alone owns its sentinel connection.
 */
#include "topology.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "core/log.h"
#include "conn.h"
#include "parse.h"
#include "dlock/errors.h"

/* Silence on the sentinel connection after which the watcher PINGs it. */
#define WATCH_PING_MS 5000
/* The least pause between two failed rounds of asking the sentinels, even
 * with reconnect_min_ms 0: a failover takes seconds anyway. */
#define RETRY_FLOOR_MS 10

struct dlock__redis_topology {
    const dlock__redis_config *cfg;
    dlock__redis_subscriber *sub;
    dlock__redis_node *nodes; /* every node ever used (see above) */

    pthread_mutex_t mu;
    dlock__redis_node *master; /* where calls go (NULL: lazy, none found
                                  yet); mu */
    char last_err[200];        /* why none was found yet; mu */
    int last_rc;               /* and its code; mu */
    int suspect;               /* look for the master again; mu */
    int stopping;              /* mu */

    /* Sentinel only (nsentinels == 0: standalone). */
    dlock__redis_config *sentinels; /* each sentinel's address + credentials */
    int nsentinels;
    int first;                 /* the sentinel asked first (watcher's) */
    int started;
    pthread_t thread;
    int pipefd[2];
};

/* ---- nodes ---------------------------------------------------------- */

static int node_for(dlock__redis_topology *t, const char *host, int port,
                    dlock__redis_node **out)
{
    dlock__redis_node *n;
    for (n = t->nodes; n; n = n->next)
        if (dlock__redis_node_is(n, host, port)) {
            *out = n;
            return 0;
        }
    if (dlock__redis_node_new(&n, t->cfg, host, port) != 0)
        return DLOCK_ENOMEM;
    n->next = t->nodes;
    t->nodes = n;
    *out = n;
    return 0;
}

static void wake(dlock__redis_topology *t)
{
    if (t->started)
        dlock__redis_pipe_poke(t->pipefd[1]);
}

/* Calls go to n from now on; the subscriber follows. One thread at a
 * time (the constructor's, then the watcher). The subscriber moves first,
 * so that a caller who sees the first master of a lazy topology (until
 * then the subscriber had no address) never subscribes without one. */
static void set_master(dlock__redis_topology *t, dlock__redis_node *n)
{
    int moved;
    pthread_mutex_lock(&t->mu);
    moved = t->master != n;
    pthread_mutex_unlock(&t->mu);
    if (moved && t->sub)
        dlock__redis_subscriber_retarget(t->sub, &n->cfg);
    pthread_mutex_lock(&t->mu);
    t->master = n;
    t->suspect = 0;
    pthread_mutex_unlock(&t->mu);
    if (moved) dlock__log(DLOCK_LOG_INFO, "redis-sentinel '%s': master is %s", t->cfg->url.master_name, n->cfg.url.where);
}

/* ---- one command on a fresh connection -------------------------------- */

/* Sends argv on c and reads the reply (bounded by the command timeout). */
static int roundtrip(dlock__redis_conn *c, const dlock__redis_config *cfg,
                     int argc, const char *const *argv, redisReply **out,
                     char *errbuf, size_t errlen)
{
    dlock__redis_cmdbuf b = {0};
    int rc = dlock__redis_cmdbuf_add(&b, argc, argv, NULL);
    if (rc == 0)
        rc = dlock__redis_send(c, &b, cfg, INT64_MAX, errbuf, errlen);
    if (rc == 0)
        rc = dlock__redis_read(c, out, cfg, INT64_MAX, errbuf, errlen);
    dlock__redis_cmdbuf_free(&b);
    return rc;
}

/* Asks sentinel i where the master is. 0 (host, *port set), DLOCK_EINVAL
 * (it knows no such master), or a connection error. */
static int ask_sentinel(dlock__redis_topology *t, int i, char *host,
                        size_t hostlen, int *port, char *errbuf, size_t errlen)
{
    const dlock__redis_config *sc = &t->sentinels[i];
    const char *argv[3];
    dlock__redis_conn *c;
    redisReply *r = NULL;
    int rc;

    rc = dlock__redis_connect(&c, sc, sc->connect_timeout_ms, NULL, errbuf, errlen);
    if (rc != 0)
        return rc;
    argv[0] = "SENTINEL";
    argv[1] = "GET-MASTER-ADDR-BY-NAME";
    argv[2] = t->cfg->url.master_name;
    rc = roundtrip(c, sc, 3, argv, &r, errbuf, errlen);
    dlock__redis_conn_free(c);
    if (rc != 0)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        dlock__redis_errf(errbuf, errlen,
                          "sentinel %s knows no master named '%.100s' "
                          "(sentinelMasterId)",
                          sc->url.where, t->cfg->url.master_name);
        rc = DLOCK_EINVAL;
    } else if (r->type == REDIS_REPLY_ERROR) {
        dlock__redis_errf(errbuf, errlen, "sentinel %s: %.200s", sc->url.where,
                          r->str);
        rc = strncmp(r->str, "NOAUTH", 6) == 0 ? DLOCK_EAUTH : DLOCK_EPROTO;
    } else if (dlock__redis_parse_master_addr(r, host, hostlen, port) != 0) {
        dlock__redis_errf(errbuf, errlen,
                          "sentinel %s: unexpected reply to SENTINEL "
                          "GET-MASTER-ADDR-BY-NAME (is it a sentinel?)",
                          sc->url.where);
        rc = DLOCK_EPROTO;
    }
    freeReplyObject(r);
    return rc;
}

/* Whether n says it is a master (ROLE), on one of its own connections
 * (pooled or multiplexed): that also warms them for the calls about to
 * come. */
static int confirm_master(dlock__redis_node *n, char *errbuf, size_t errlen)
{
    const char *argv[1] = {"ROLE"};
    dlock__redis_cmdbuf b = {0};
    redisReply *r = NULL;
    dlock__redis_role role;
    int rc;

    rc = dlock__redis_cmdbuf_add(&b, 1, argv, NULL);
    if (rc == 0)
        rc = dlock__redis_node_call(n, &b, 1, &r, INT64_MAX, errbuf, errlen);
    else
        dlock__redis_errf(errbuf, errlen, "out of memory");
    dlock__redis_cmdbuf_free(&b);
    if (rc != 0)
        return rc;
    if (dlock__redis_parse_role(r, &role) != 0) {
        dlock__redis_errf(errbuf, errlen, "redis %s: unexpected reply to ROLE",
                          n->cfg.url.where);
        rc = DLOCK_EPROTO;
    } else if (strcmp(role.role, "master") != 0) {
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: named master by a sentinel but its ROLE "
                          "is %.20s (a failover is under way?)",
                          n->cfg.url.where, role.role);
        rc = DLOCK_ECONN;
    }
    freeReplyObject(r);
    return rc;
}

/* Asks the sentinels in turn and moves to the first confirmed master. */
static int discover(dlock__redis_topology *t, char *errbuf, size_t errlen)
{
    char detail[256] = "", host[256];
    int k, unknown = 0, named = 0, auth = 0, port = 0, rc;

    for (k = 0; k < t->nsentinels; k++) {
        int i = (t->first + k) % t->nsentinels;
        dlock__redis_node *n;
        rc = ask_sentinel(t, i, host, sizeof host, &port, detail,
                          sizeof detail);
        unknown += rc == DLOCK_EINVAL;
        auth += rc == DLOCK_EAUTH;
        if (rc != 0)
            continue;
        named++;
        rc = node_for(t, host, port, &n);
        if (rc != 0) {
            dlock__redis_errf(errbuf, errlen, "out of memory");
            return rc;
        }
        rc = confirm_master(n, detail, sizeof detail);
        if (rc == DLOCK_EAUTH || rc == DLOCK_EPROTO) {
            /* the master's credentials or db are wrong: no sentinel helps */
            dlock__redis_errf(errbuf, errlen, "%s", detail);
            return rc;
        }
        if (rc == 0) {
            t->first = i;
            set_master(t, n);
            return 0;
        }
    }
    if (!named && unknown) {
        dlock__redis_errf(errbuf, errlen,
                          "redis-sentinel: no sentinel knows a master named "
                          "'%.100s' (check sentinelMasterId; %s)",
                          t->cfg->url.master_name, detail);
        return DLOCK_EINVAL;
    }
    if (!named && auth) {
        dlock__redis_errf(errbuf, errlen, "redis-sentinel: %s", detail);
        return DLOCK_EAUTH;
    }
    dlock__redis_errf(errbuf, errlen,
                      named ? "redis-sentinel: no master of '%.100s' "
                              "reachable (%d sentinels asked; last error: %s)"
                            : "redis-sentinel: no sentinel of '%.100s' "
                              "reachable (%d tried; last error: %s)",
                      t->cfg->url.master_name, t->nsentinels, detail);
    return DLOCK_ECONN;
}

/* ---- the watcher: +switch-master, rediscovery ------------------------- */

/* A connection to a sentinel (the first that answers) subscribed to
 * +switch-master. */
static int watch_open(dlock__redis_topology *t, dlock__redis_conn **out)
{
    static const char *const argv[2] = {"SUBSCRIBE", "+switch-master"};
    int k;

    *out = NULL;
    for (k = 0; k < t->nsentinels; k++) {
        int i = (t->first + k) % t->nsentinels;
        const dlock__redis_config *sc = &t->sentinels[i];
        dlock__redis_conn *c;
        redisReply *r = NULL;
        int ok;
        if (dlock__redis_connect(&c, sc, sc->connect_timeout_ms, NULL, NULL, 0) != 0)
            continue;
        ok = roundtrip(c, sc, 2, argv, &r, NULL, 0) == 0 &&
             r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
             r->element[0]->type == REDIS_REPLY_STRING &&
             strcmp(r->element[0]->str, "subscribe") == 0;
        if (r)
            freeReplyObject(r);
        if (ok) {
            *out = c;
            return 0;
        }
        dlock__redis_conn_free(c);
    }
    return DLOCK_ECONN;
}

/* "+switch-master <name> <old-ip> <old-port> <new-ip> <new-port>" */
static void on_switch(dlock__redis_topology *t, const char *msg, size_t len)
{
    dlock__redis_switch sw;
    dlock__redis_node *n;

    if (dlock__redis_parse_switch(msg, len, &sw) != 0 ||
        strcmp(sw.name, t->cfg->url.master_name) != 0)
        return;
    if (node_for(t, sw.new_host, sw.new_port, &n) == 0 && confirm_master(n, NULL, 0) == 0) {
        set_master(t, n);
        return;
    }
    dlock__log(DLOCK_LOG_WARN, "redis-sentinel '%s': +switch-master to %.200s:%d not confirmed, rediscovering", sw.name, sw.new_host, sw.new_port);
    pthread_mutex_lock(&t->mu);
    t->suspect = 1; /* rediscovery retries with back-off */
    pthread_mutex_unlock(&t->mu);
}

/* Handles what the sentinel connection has now. -1: drop it. */
static int watch_read(dlock__redis_topology *t, dlock__redis_conn *c,
                      int *ping_out)
{
    if (dlock__redis_conn_fill(c, NULL, 0) != 0)
        return -1;
    for (;;) {
        redisReply *r = NULL;
        if (dlock__redis_conn_next(c, &r) != 0)
            return -1;
        if (!r)
            return 0;
        if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
            r->element[0]->type == REDIS_REPLY_STRING) {
            const char *kind = r->element[0]->str;
            if (strcmp(kind, "pong") == 0)
                *ping_out = 0;
            else if (strcmp(kind, "message") == 0 && r->elements == 3 &&
                     r->element[2]->type == REDIS_REPLY_STRING)
                on_switch(t, r->element[2]->str, r->element[2]->len);
        }
        freeReplyObject(r);
    }
}

static int64_t retry_ms(const dlock__redis_config *cfg, int failures)
{
    int64_t d = dlock__redis_backoff_ms(cfg, failures);
    return d < RETRY_FLOOR_MS ? RETRY_FLOOR_MS : d;
}

static void *watch(void *arg)
{
    dlock__redis_topology *t = arg;
    const dlock__redis_config *cfg = t->cfg;
    dlock__redis_conn *w = NULL;
    int64_t w_retry = 0, d_retry = 0, last_rx = 0, ping_sent = 0;
    int w_fail = 0, d_fail = 0, ping_out = 0;

    for (;;) {
        struct pollfd p[2];
        int64_t now, due = INT64_MAX;
        int suspect, stopping, np = 1, pending = 0;

        pthread_mutex_lock(&t->mu);
        suspect = t->suspect;
        stopping = t->stopping;
        pthread_mutex_unlock(&t->mu);
        if (stopping)
            break;
        now = dlock__redis_now_ms();
        if (suspect && now >= d_retry) {
            char why[sizeof t->last_err] = "";
            int rc = discover(t, why, sizeof why);
            if (rc == 0) {
                d_fail = 0;
            } else {
                pthread_mutex_lock(&t->mu);
                memcpy(t->last_err, why, sizeof why);
                t->last_rc = rc;
                pthread_mutex_unlock(&t->mu);
                d_fail++;
                d_retry = dlock__redis_now_ms() + retry_ms(cfg, d_fail);
            }
            continue;
        }
        if (!w && now >= w_retry) {
            if (watch_open(t, &w) == 0) {
                w_fail = 0;
                ping_out = 0;
                last_rx = dlock__redis_now_ms();
                /* a switch may have been announced while we were away */
                pthread_mutex_lock(&t->mu);
                t->suspect = 1;
                pthread_mutex_unlock(&t->mu);
            } else {
                w_fail++;
                w_retry = dlock__redis_now_ms() + retry_ms(cfg, w_fail);
            }
            continue;
        }
        if (w && ping_out && cfg->command_timeout_ms > 0 &&
            now >= ping_sent + cfg->command_timeout_ms) {
            dlock__redis_conn_free(w); /* silent: try another sentinel */
            w = NULL;
            t->first = (t->first + 1) % t->nsentinels;
            continue;
        }
        if (w && !ping_out && now >= last_rx + WATCH_PING_MS) {
            static const char *const argv[1] = {"PING"};
            dlock__redis_cmdbuf b = {0};
            int rc = dlock__redis_cmdbuf_add(&b, 1, argv, NULL);
            if (rc == 0)
                rc = dlock__redis_send(w, &b, cfg, INT64_MAX, NULL, 0);
            dlock__redis_cmdbuf_free(&b);
            ping_out = 1;
            ping_sent = now;
            if (rc != 0) {
                dlock__redis_conn_free(w);
                w = NULL;
            }
            continue;
        }
        if (suspect)
            due = d_retry;
        if (!w && w_retry < due)
            due = w_retry;
        p[0].fd = t->pipefd[0];
        p[0].events = POLLIN;
        p[0].revents = 0;
        if (w) {
            int64_t pd = ping_out ? (cfg->command_timeout_ms > 0
                                         ? ping_sent + cfg->command_timeout_ms
                                         : INT64_MAX)
                                  : last_rx + WATCH_PING_MS;
            if (pd < due)
                due = pd;
            p[1].fd = dlock__redis_transport_fd(w->t);
            p[1].events = dlock__redis_transport_events(w->t);
            p[1].revents = 0;
            pending = dlock__redis_transport_pending(w->t);
            np = 2;
        }
        if (dlock__wait_fds(p, (nfds_t)np, pending ? 0 : due) > 0 &&
            p[0].revents)
            dlock__redis_pipe_drain(t->pipefd[0]);
        if (w && (pending || p[1].revents)) {
            last_rx = dlock__redis_now_ms();
            if (watch_read(t, w, &ping_out) != 0) {
                dlock__redis_conn_free(w);
                w = NULL;
                w_retry = 0; /* another sentinel, at once */
                t->first = (t->first + 1) % t->nsentinels;
            }
        }
    }
    dlock__redis_conn_free(w);
    return NULL;
}

/* ---- the API ---------------------------------------------------------- */

static void on_subscriber_lost(void *arg)
{
    dlock__redis_topology *t = arg;
    pthread_mutex_lock(&t->mu);
    t->suspect = 1;
    pthread_mutex_unlock(&t->mu);
    wake(t);
}

/* Each sentinel's configuration: the backend's, with the sentinel's
 * address and credentials and no database. */
static int make_sentinel_configs(dlock__redis_topology *t)
{
    const dlock__redis_url *u = &t->cfg->url;
    int i;
    t->sentinels = calloc((size_t)u->naddrs, sizeof *t->sentinels);
    if (!t->sentinels)
        return DLOCK_ENOMEM;
    for (i = 0; i < u->naddrs; i++) {
        dlock__redis_config *sc = &t->sentinels[i];
        *sc = *t->cfg;
        sc->url.host = u->addrs[i].host;
        sc->url.port = u->addrs[i].port;
        memcpy(sc->url.where, u->addrs[i].where, sizeof sc->url.where);
        sc->url.user = u->sentinel_user;
        sc->url.password = u->sentinel_password;
        sc->url.db = 0;
    }
    t->nsentinels = u->naddrs;
    return 0;
}

int dlock__redis_topology_new(dlock__redis_topology **out,
                              const dlock__redis_config *cfg, char *errbuf,
                              size_t errlen)
{
    dlock__redis_topology *t;
    dlock__redis_node *n;
    int rc;

    *out = NULL;
    t = calloc(1, sizeof *t);
    if (!t)
        goto nomem;
    t->cfg = cfg;
    t->pipefd[0] = t->pipefd[1] = -1;
    if (pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        goto nomem;
    }
    if (!cfg->url.is_sentinel) {
        dlock__redis_conn *c;
        if (dlock__redis_node_new(&n, cfg, NULL, 0) != 0)
            goto nomem_t;
        t->nodes = t->master = n;
        /* One connection now, so a wrong URL, password or db fails here
         * rather than at the first lock; it stays in the pool for that
         * first lock. */
        if (!cfg->lazy_connect) {
            rc = dlock__redis_pool_acquire(n->pool, &c, INT64_MAX, errbuf,
                                           errlen);
            if (rc != 0)
                goto fail;
            dlock__redis_pool_release(n->pool, c, 0);
        }
    } else {
        if (make_sentinel_configs(t) != 0)
            goto nomem_t;
        if (cfg->lazy_connect) {
            /* The watcher discovers, from its first pass on. */
            t->suspect = 1;
            snprintf(t->last_err, sizeof t->last_err, "not asked yet");
        } else if ((rc = discover(t, errbuf, errlen)) != 0) {
            goto fail;
        }
    }
    /* Lazy Sentinel: no address until set_master retargets it; nothing
     * subscribes before (dlock__redis_topology_master is NULL). */
    if (dlock__redis_subscriber_new(&t->sub, t->master ? &t->master->cfg
                                                       : t->cfg) != 0)
        goto nomem_t;
    if (t->nsentinels > 0) {
        dlock__redis_subscriber_on_lost(t->sub, on_subscriber_lost, t);
        if (pipe2(t->pipefd, O_NONBLOCK | O_CLOEXEC) != 0 ||
            pthread_create(&t->thread, NULL, watch, t) != 0)
            goto nomem_t;
        t->started = 1;
    }
    *out = t;
    return 0;

nomem_t:
    dlock__redis_topology_free(t);
nomem:
    dlock__redis_errf(errbuf, errlen, "out of memory");
    return DLOCK_ENOMEM;
fail:
    dlock__redis_topology_free(t);
    return rc;
}

void dlock__redis_topology_free(dlock__redis_topology *t)
{
    if (!t)
        return;
    if (t->started) {
        pthread_mutex_lock(&t->mu);
        t->stopping = 1;
        pthread_mutex_unlock(&t->mu);
        wake(t);
        pthread_join(t->thread, NULL);
    }
    if (t->pipefd[0] >= 0) {
        close(t->pipefd[0]);
        close(t->pipefd[1]);
    }
    /* The subscriber first: its thread reads the master node's cfg. */
    dlock__redis_subscriber_free(t->sub);
    while (t->nodes) {
        dlock__redis_node *next = t->nodes->next;
        dlock__redis_node_free(t->nodes);
        t->nodes = next;
    }
    free(t->sentinels);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

dlock__redis_node *dlock__redis_topology_master(dlock__redis_topology *t)
{
    dlock__redis_node *n;
    if (t->nsentinels == 0)
        return t->master; /* standalone: set once, before any call */
    pthread_mutex_lock(&t->mu);
    n = t->master;
    pthread_mutex_unlock(&t->mu);
    return n;
}

int dlock__redis_topology_no_master(dlock__redis_topology *t, char *errbuf,
                                    size_t errlen)
{
    char why[sizeof t->last_err];
    int rc;
    pthread_mutex_lock(&t->mu);
    memcpy(why, t->last_err, sizeof why);
    rc = t->last_rc;
    pthread_mutex_unlock(&t->mu);
    dlock__redis_errf(errbuf, errlen,
                      "redis-sentinel: no master of '%.100s' found yet "
                      "(last: %s)",
                      t->cfg->url.master_name, why);
    /* What waiting cannot mend (no sentinel knows the name, credentials
     * refused) is told as such, so that a dlock_lock does not wait for
     * ever on a configuration error; the rest is "unreachable". */
    return rc == DLOCK_EINVAL || rc == DLOCK_EAUTH ? rc : DLOCK_ECONN;
}

dlock__redis_subscriber *dlock__redis_topology_subscriber(
    dlock__redis_topology *t)
{
    return t->sub;
}

void dlock__redis_topology_suspect(dlock__redis_topology *t,
                                   dlock__redis_node *n)
{
    int poke = 0;
    if (t->nsentinels == 0)
        return;
    pthread_mutex_lock(&t->mu);
    if (n == t->master && !t->suspect)
        poke = t->suspect = 1;
    pthread_mutex_unlock(&t->mu);
    if (poke)
        wake(t);
}
