/*
 * Redis backend: the dlock_backend vtable and its constructor.
 *
 * The backend is the sum of independent parts sharing one immutable
 * configuration (the URL, merged with the options, and for rediss:// the
 * TLS context every connection is made from, tls.c): the topology
 * (topology.c: standalone or Sentinel), which owns the nodes (node.c: an
 * address and its connections, multiplexed (mux.c) or pooled (pool.c)) and
 * the subscriber (subscriber.c), and the eval engine (eval.c: the SHA
 * cache, EVALSHA with the NOSCRIPT reload, WAIT for replicas). A call
 * goes eval -> topology (which node) -> node (dlock__redis_node_call); a
 * DLOCK_ECONN there tells the topology to look for the master again. A
 * Redis Cluster (cluster.c) takes the topology's place: it routes each
 * call by its first key's slot and keeps a subscriber per master. Time comes from the process-wide real-time clock:
 * Redis expires keys on its own clock.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dlock/redis.h"
#include "dlock/sys/clock.h"
#include "cluster.h"
#include "eval.h"
#include "internal.h"
#include "mux.h"
#include "safety.h"
#include "slot.h"
#include "topology.h"
#include "transport.h"
#include "core/log.h"
#include "core/wipe.h"

typedef struct redis_backend {
    dlock_backend base; /* first: a dlock_backend * is a redis_backend * */
    dlock__redis_config cfg;
    dlock__redis_topology *topo;   /* standalone or Sentinel; or */
    dlock__redis_cluster *cluster; /* Redis Cluster */
    dlock__redis_scripts *scripts;
    uint64_t reconnects; /* cfg.reconnects points here */
    int safety_warned;   /* cfg.safety_warned points here */
    uint64_t ignored_messages; /* cfg.ignored_messages points here */
} redis_backend;

static int rb_eval_until(dlock_backend *b, dlock_reply **out,
                         const dlock_script *script, size_t nkeys, size_t nargs,
                         const char *const *argv, const size_t *argvlen,
                         int64_t deadline_ms, char *errbuf, size_t errlen)
{
    redis_backend *rb = (redis_backend *)b;
    dlock__redis_node *n;
    int rc;
    if (rb->cluster)
        return dlock__redis_cluster_eval(rb->cluster, rb->scripts, out, script,
                                         nkeys, nargs, argv, argvlen,
                                         deadline_ms, errbuf, errlen);
    n = dlock__redis_topology_master(rb->topo);
    if (!n) {
        *out = NULL;
        return dlock__redis_topology_no_master(rb->topo, errbuf, errlen);
    }
    rc = dlock__redis_eval(n, rb->scripts, out, script, nkeys, nargs, argv,
                           argvlen, deadline_ms, NULL, errbuf, errlen);
    /* Lost, refused or unavailable (READONLY, MASTERDOWN, LOADING...): the
     * caller's wait loop retries within its budget; meanwhile the
     * topology checks whether the master moved. */
    if (rc == DLOCK_ECONN)
        dlock__redis_topology_suspect(rb->topo, n);
    return rc;
}

static int rb_eval(dlock_backend *b, dlock_reply **out,
                   const dlock_script *script, size_t nkeys, size_t nargs,
                   const char *const *argv, const size_t *argvlen,
                   char *errbuf, size_t errlen)
{
    return rb_eval_until(b, out, script, nkeys, nargs, argv, argvlen, INT64_MAX,
                         errbuf, errlen);
}

static int rb_subscribe_until(dlock_backend *b, dlock_subscription **out,
                              const char *channel, dlock_message_fn fn,
                              void *arg, int64_t deadline_ms, char *errbuf,
                              size_t errlen)
{
    redis_backend *rb = (redis_backend *)b;
    if (rb->cluster)
        return dlock__redis_cluster_subscribe(rb->cluster, out, channel, fn,
                                              arg, deadline_ms, errbuf, errlen);
    if (!dlock__redis_topology_master(rb->topo)) {
        if (out)
            *out = NULL;
        return dlock__redis_topology_no_master(rb->topo, errbuf, errlen);
    }
    return dlock__redis_subscriber_add(dlock__redis_topology_subscriber(rb->topo),
                                       out, channel, fn, arg, deadline_ms,
                                       errbuf, errlen);
}

static int rb_subscribe(dlock_backend *b, dlock_subscription **out,
                        const char *channel, dlock_message_fn fn, void *arg)
{
    return rb_subscribe_until(b, out, channel, fn, arg, INT64_MAX, NULL, 0);
}

static void rb_unsubscribe(dlock_backend *b, dlock_subscription *sub)
{
    redis_backend *rb = (redis_backend *)b;
    if (rb->cluster)
        dlock__redis_cluster_unsubscribe(rb->cluster, sub);
    else
        dlock__redis_subscriber_remove(
            dlock__redis_topology_subscriber(rb->topo), sub);
}

static dlock_clock *rb_clock(dlock_backend *b)
{
    (void)b;
    return dlock_clock_realtime();
}

static void rb_free(dlock_backend *b)
{
    redis_backend *rb = (redis_backend *)b;
    if (!rb)
        return;
    /* The topology first: its threads read cfg until joined. */
    dlock__redis_topology_free(rb->topo);
    dlock__redis_cluster_free(rb->cluster);
    dlock__redis_scripts_free(rb->scripts);
    dlock__redis_tls_free(rb->cfg.tls);
    dlock__redis_url_clear(&rb->cfg.url);
    free(rb);
}

static uint64_t rb_reconnects(dlock_backend *b)
{
    return __atomic_load_n(&((redis_backend *)b)->reconnects, __ATOMIC_RELAXED);
}

static uint64_t rb_ignored_messages(dlock_backend *b)
{
    return __atomic_load_n(&((redis_backend *)b)->ignored_messages, __ATOMIC_RELAXED);
}

static uint64_t rb_unsynced(dlock_backend *b, int cause)
{
    return dlock__redis_scripts_unsynced(((redis_backend *)b)->scripts, cause);
}

/* The master's facts (standalone; Sentinel: the current master, which a
 * failover replaces with a node whose pool probes afresh), or every
 * master's (Cluster). */
static int rb_server_safety(dlock_backend *b, dlock_server_safety *out)
{
    redis_backend *rb = (redis_backend *)b;
    dlock__redis_node *n;
    dlock__redis_facts f;

    if (rb->cluster) {
        dlock__redis_cluster_safety(rb->cluster, out);
        return 0;
    }
    n = dlock__redis_topology_master(rb->topo);
    if (n && dlock__redis_pool_facts(n->pool, &f))
        dlock__redis_safety_merge(out, &f);
    return 0;
}

/* Redis Cluster: sharded pub/sub (SPUBLISH on the master of the
 * channel's slot, where the waiters SSUBSCRIBE), as Redisson 3.22+ does in
 * cluster mode; standalone and Sentinel: PUBLISH. */
static const char *rb_publish_command(dlock_backend *b)
{
    return ((redis_backend *)b)->cluster ? "spublish" : "publish";
}

/* Redis Cluster: the key's hash slot (one script touches one slot);
 * otherwise one group for every key. */
static unsigned rb_key_slot(dlock_backend *b, const char *key, size_t len)
{
    return ((redis_backend *)b)->cluster ? dlock__redis_key_slot(key, len) : 0;
}

/* Redis Cluster: the master serving the key's slot (cluster.h); one
 * node otherwise. */
static unsigned rb_key_node(dlock_backend *b, const char *key, size_t len)
{
    redis_backend *rb = (redis_backend *)b;
    return rb->cluster ? dlock__redis_cluster_key_node(rb->cluster, key, len) : 0;
}

/* One node serves every key outside a cluster: a plain call. */
static int rb_eval_node(dlock_backend *b, dlock_reply **out,
                        const dlock_script *script, size_t nkeys, size_t nargs,
                        const char *const *argv, const size_t *argvlen,
                        int64_t deadline_ms, char *errbuf, size_t errlen)
{
    redis_backend *rb = (redis_backend *)b;
    if (rb->cluster)
        return dlock__redis_cluster_eval_node(rb->cluster, rb->scripts, out,
                                              script, nkeys, nargs, argv,
                                              argvlen, deadline_ms, errbuf,
                                              errlen);
    return rb_eval_until(b, out, script, nkeys, nargs, argv, argvlen,
                         deadline_ms, errbuf, errlen);
}

/* Split calls (standalone and Sentinel): the pending call is the script
 * call itself (eval.h). */
static int rb_eval_send(dlock_backend *b, dlock_pending **out,
                        const dlock_script *script, size_t nkeys, size_t nargs,
                        const char *const *argv, const size_t *argvlen,
                        int64_t deadline_ms, char *errbuf, size_t errlen)
{
    redis_backend *rb = (redis_backend *)b;
    dlock__redis_node *n = dlock__redis_topology_master(rb->topo);
    dlock__redis_evalcall *ec = NULL;
    int rc;

    if (!n) {
        *out = NULL;
        return dlock__redis_topology_no_master(rb->topo, errbuf, errlen);
    }
    rc = dlock__redis_eval_send(n, rb->scripts, &ec, script, nkeys, nargs,
                                argv, argvlen, deadline_ms, errbuf, errlen);

    if (rc == DLOCK_ECONN)
        dlock__redis_topology_suspect(rb->topo, n);
    *out = (dlock_pending *)ec;
    return rc;
}

static int rb_eval_receive(dlock_backend *b, dlock_pending *p, dlock_reply **out,
                           char *errbuf, size_t errlen)
{
    redis_backend *rb = (redis_backend *)b;
    dlock__redis_node *n;
    int rc = dlock__redis_eval_receive((dlock__redis_evalcall *)p, &n, out,
                                       errbuf, errlen);

    if (rc == DLOCK_ECONN)
        dlock__redis_topology_suspect(rb->topo, n);
    return rc;
}

static const dlock_backend_methods redis_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "redis",
    .eval = rb_eval,
    .subscribe = rb_subscribe,
    .unsubscribe = rb_unsubscribe,
    .clock = rb_clock,
    .free = rb_free,
    .eval_until = rb_eval_until,
    .subscribe_until = rb_subscribe_until,
    .reconnects = rb_reconnects,
    .publish_command = rb_publish_command,
    .key_slot = rb_key_slot,
    .eval_send = rb_eval_send,
    .eval_receive = rb_eval_receive,
    .unsynced = rb_unsynced,
    .server_safety = rb_server_safety,
    .ignored_messages = rb_ignored_messages,
    .key_node = rb_key_node,
    .eval_node = rb_eval_node,
};

/* Redis Cluster: the same without split calls (a call follows MOVED and
 * ASK replies, one round trip after the other), so that callers see
 * dlock_backend_can_split say 0 and give each call a thread. */
static dlock_backend_methods cluster_methods;
static pthread_once_t cluster_methods_once = PTHREAD_ONCE_INIT;

static void cluster_methods_init(void)
{
    cluster_methods = redis_methods;
    cluster_methods.eval_send = NULL;
    cluster_methods.eval_receive = NULL;
}

static int check_options(const dlock_redis_options *o, char *errbuf,
                         size_t errlen)
{
    const char *bad = NULL;
    if (o->connect_timeout_ms < 0)
        bad = "connect_timeout_ms is negative";
    else if (o->command_timeout_ms < 0)
        bad = "command_timeout_ms is negative";
    else if (o->pool_size < 1)
        bad = "pool_size must be at least 1";
    else if (o->reconnect_min_ms < 0)
        bad = "reconnect_min_ms is negative";
    else if (o->reconnect_max_ms < o->reconnect_min_ms)
        bad = "reconnect_max_ms is below reconnect_min_ms";
    /* deadlines are now + these: the bound keeps them from overflowing */
    else if (o->connect_timeout_ms > DLOCK_TIME_MAX_MS ||
             o->command_timeout_ms > DLOCK_TIME_MAX_MS ||
             o->reconnect_max_ms > DLOCK_TIME_MAX_MS)
        bad = "a timeout or back-off step is above DLOCK_TIME_MAX_MS (10^12 ms)";
    else if (o->tls_insecure != 0 && o->tls_insecure != 1)
        bad = "tls_insecure must be 0 or 1";
    else if (o->sync_replicas < -1 || o->sync_replicas > DLOCK_SYNC_REPLICAS_MAX)
        bad = "sync_replicas must be -1 (all), 0 (off) or 1..1000";
    else if (o->sync_timeout_ms < 1 || o->sync_timeout_ms > DLOCK_TIME_MAX_MS)
        bad = "sync_timeout_ms must be 1..DLOCK_TIME_MAX_MS (10^12 ms)";
    else if (o->multiplex != 0 && o->multiplex != 1)
        bad = "multiplex must be 0 or 1";
    else if (o->connections < 1 ||
             o->connections > DLOCK__REDIS_CONNECTIONS_MAX)
        bad = "connections must be 1..64";
    else if (o->lazy_connect != 0 && o->lazy_connect != 1)
        bad = "lazy_connect must be 0 or 1";
    else if (o->max_reply_bytes < DLOCK_REDIS_MAX_REPLY_MIN ||
             o->max_reply_bytes > DLOCK_REDIS_MAX_REPLY_LIMIT)
        bad = "max_reply_bytes must be 4096..1073741824 (4 kB..1 GiB)";
    else if (o->cluster_max_nodes < 1 ||
             o->cluster_max_nodes > DLOCK_REDIS_CLUSTER_NODES_LIMIT)
        bad = "cluster_max_nodes must be 1..1000";
    if (!bad)
        return 0;
    dlock__redis_errf(errbuf, errlen, "bad redis options: %s", bad);
    return DLOCK_EINVAL;
}

/* The largest password_file read: a password, not a document. */
#define PASSWORD_FILE_MAX 4096

/* The URL's password_file=PATH read into u->password: the file's text
 * without one final newline ("\n" or "\r\n"), one line, not empty, no
 * NUL byte. A password in the user information as well is refused (an
 * empty one, "user:@", is the place of the file's). Messages name the
 * parameter, never the path (the URL's rules: its values are not
 * quoted) nor anything of the content. 0, DLOCK_EINVAL or DLOCK_ENOMEM;
 * the buffer read is wiped. */
static int read_password_file(dlock__redis_url *u, char *errbuf, size_t errlen)
{
    char buf[PASSWORD_FILE_MAX + 1];
    struct stat st;
    size_t n = 0;
    ssize_t got = 1;
    int fd, rc = 0;
    const char *bad = NULL;

    if (!u->password_file)
        return 0;
    if (u->password && u->password[0]) {
        dlock__redis_errf(errbuf, errlen, "bad redis URL: a password in the user "
                          "information and password_file: give one of them");
        return DLOCK_EINVAL;
    }
    fd = open(u->password_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0)
        bad = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        bad = "not a regular file";
    if (bad) {
        dlock__redis_errf(errbuf, errlen, "bad redis URL: cannot read its "
                          "password_file (%s)", bad);
        if (fd >= 0)
            close(fd);
        return DLOCK_EINVAL;
    }
    while (got > 0 && n < sizeof buf) {
        got = read(fd, buf + n, sizeof buf - n);
        if (got < 0 && errno == EINTR)
            got = 1;
        else if (got > 0)
            n += (size_t)got;
    }
    close(fd);
    if (got < 0)
        bad = "cannot read its password_file";
    else if (n > PASSWORD_FILE_MAX)
        bad = "its password_file is larger than 4096 bytes";
    if (!bad && n > 0 && buf[n - 1] == '\n')
        n -= n > 1 && buf[n - 2] == '\r' ? 2 : 1;
    if (!bad && n == 0)
        bad = "its password_file is empty";
    else if (!bad && (memchr(buf, '\0', n) || memchr(buf, '\n', n) || memchr(buf, '\r', n)))
        bad = "its password_file holds more than one line, or a NUL byte";
    if (bad) {
        dlock__redis_errf(errbuf, errlen, "bad redis URL: %s", bad);
        rc = DLOCK_EINVAL;
    } else {
        char *pw = malloc(n + 1);
        if (!pw) {
            dlock__redis_errf(errbuf, errlen, "out of memory");
            rc = DLOCK_ENOMEM;
        } else {
            memcpy(pw, buf, n);
            pw[n] = '\0';
            dlock__wipe_free(u->password);
            u->password = pw;
        }
    }
    dlock__wipe(buf, sizeof buf);
    return rc;
}

/* The sentinels' credentials the URL left out, from the options. 0 or
 * DLOCK_ENOMEM. */
static int merge_sentinel(dlock__redis_url *u, const dlock_redis_options *o)
{
    if (!u->sentinel_user && o->sentinel_user &&
        !(u->sentinel_user = strdup(o->sentinel_user)))
        return DLOCK_ENOMEM;
    if (!u->sentinel_password && o->sentinel_password &&
        !(u->sentinel_password = strdup(o->sentinel_password)))
        return DLOCK_ENOMEM;
    return 0;
}

/* Fills the TLS settings the URL left out from the options (the URL's
 * own parameters win, field by field). 0 or DLOCK_ENOMEM. */
static int merge_tls(dlock__redis_tls_params *p, const dlock_redis_options *o)
{
    const char *from[5];
    char **to[5];
    size_t i;

    from[0] = o->tls_cacert;
    to[0] = &p->cacert;
    from[1] = o->tls_cacertdir;
    to[1] = &p->cacertdir;
    from[2] = o->tls_cert;
    to[2] = &p->cert;
    from[3] = o->tls_key;
    to[3] = &p->key;
    from[4] = o->tls_sni;
    to[4] = &p->sni;
    for (i = 0; i < 5; i++)
        if (!*to[i] && from[i] && !(*to[i] = strdup(from[i])))
            return DLOCK_ENOMEM;
    if (p->insecure == -1)
        p->insecure = o->tls_insecure;
    return 0;
}

/* Certificate verification off is never silent (issue 28): logged at
 * DLOCK_LOG_WARN each time a backend is made so, saying where it came
 * from, and that the URL overrode the application's tls_insecure = 0.
 * url_insecure: the URL's insecure parameter (-1: not given). */
static void warn_insecure(const dlock__redis_url *u, int url_insecure,
                          const dlock_redis_options *o)
{
    if (u->tls.insecure != 1)
        return;
    dlock__log(DLOCK_LOG_WARN,
               "redis %s: TLS certificate and host name verification is OFF (%s): "
               "anyone on the path can read and change the traffic, credentials "
               "included; for testing only",
               u->where,
               url_insecure != 1        ? "tls_insecure = 1 in the options"
               : o->tls_insecure == 0 ? "insecure=1 in the URL, overriding the "
                                        "options' tls_insecure = 0"
                                      : "insecure=1 in the URL");
}

/* The sync settings: the URL's parameters, else the options' fields. The
 * WAIT reply must come within the round trip's own bound. */
static int merge_sync(dlock__redis_config *cfg, const dlock_redis_options *o,
                      char *errbuf, size_t errlen)
{
    const dlock__redis_url *u = &cfg->url;
    cfg->sync_replicas = u->sync_replicas_given ? (int)u->sync_replicas
                                                : o->sync_replicas;
    cfg->sync_timeout_ms = u->sync_timeout_ms != -1 ? u->sync_timeout_ms
                                                    : o->sync_timeout_ms;
    if (cfg->sync_replicas != 0 && cfg->command_timeout_ms != 0 &&
        cfg->sync_timeout_ms >= cfg->command_timeout_ms) {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis options: sync_timeout_ms (%lld) must be "
                          "below command_timeout_ms (%lld), which bounds the "
                          "whole round trip",
                          (long long)cfg->sync_timeout_ms,
                          (long long)cfg->command_timeout_ms);
        return DLOCK_EINVAL;
    }
    return 0;
}

int dlock_redis_backend_new(dlock_backend **out, const char *url,
                            const dlock_redis_options *opts, char *errbuf,
                            size_t errlen)
{
    static const dlock_redis_options defaults = DLOCK_REDIS_OPTIONS_INIT;
    dlock_redis_options o;
    redis_backend *rb;
    int rc;

    if (errbuf && errlen > 0)
        errbuf[0] = '\0';
    if (!out) {
        dlock__redis_errf(errbuf, errlen, "NULL out");
        return DLOCK_EINVAL;
    }
    *out = NULL;
    if (!opts)
        opts = &defaults;
    if (opts->version != DLOCK_REDIS_OPTIONS_VERSION) {
        /* Not a struct this library knows: read nothing past version. */
        dlock__redis_errf(errbuf, errlen, "bad redis options: version must "
                          "be %d (use DLOCK_REDIS_OPTIONS_INIT)",
                          DLOCK_REDIS_OPTIONS_VERSION);
        return DLOCK_EINVAL;
    }
    o = *opts;
    opts = &o;
    rc = check_options(opts, errbuf, errlen);
    if (rc != 0)
        return rc;

    rb = calloc(1, sizeof *rb);
    if (!rb) {
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    rb->base.methods = &redis_methods;
    rb->cfg.connect_timeout_ms = opts->connect_timeout_ms;
    rb->cfg.command_timeout_ms = opts->command_timeout_ms;
    rb->cfg.pool_size = opts->pool_size;
    rb->cfg.reconnect_min_ms = opts->reconnect_min_ms;
    rb->cfg.reconnect_max_ms = opts->reconnect_max_ms;
    rb->cfg.reconnects = &rb->reconnects;
    rb->cfg.safety_warned = &rb->safety_warned;
    rb->cfg.ignored_messages = &rb->ignored_messages;

    rc = dlock__redis_url_parse(&rb->cfg.url, url, errbuf, errlen);
    if (rc == 0)
        rc = read_password_file(&rb->cfg.url, errbuf, errlen);
    if (rc != 0)
        goto fail;
    if (rb->cfg.url.is_cluster) {
        pthread_once(&cluster_methods_once, cluster_methods_init);
        rb->base.methods = &cluster_methods;
    }
    /* The URL's connection parameters win over the options. */
    rb->cfg.multiplex = rb->cfg.url.multiplex != -1 ? rb->cfg.url.multiplex
                                                    : opts->multiplex;
    rb->cfg.connections = rb->cfg.url.connections ? rb->cfg.url.connections
                                                  : opts->connections;
    rb->cfg.queue_max = rb->cfg.url.queue_max ? rb->cfg.url.queue_max
                                              : DLOCK__REDIS_MUX_QUEUE_MAX;
    rb->cfg.lazy_connect = rb->cfg.url.lazy_connect != -1
                               ? rb->cfg.url.lazy_connect
                               : opts->lazy_connect;
    rb->cfg.max_reply_bytes = rb->cfg.url.max_reply_bytes
                                  ? (size_t)rb->cfg.url.max_reply_bytes
                                  : (size_t)opts->max_reply_bytes;
    rb->cfg.cluster_max_nodes = rb->cfg.url.cluster_max_nodes
                                    ? (int)rb->cfg.url.cluster_max_nodes
                                    : opts->cluster_max_nodes;
    if (rb->cfg.url.queue_max && !rb->cfg.multiplex) {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis URL: 'queue_max' bounds the request "
                          "queue of a shared connection, but multiplex is 0 "
                          "(a pool, which has none)");
        rc = DLOCK_EINVAL;
        goto fail;
    }
    if (rb->cfg.url.is_tls) {
        int url_insecure = rb->cfg.url.tls.insecure;
        rc = merge_tls(&rb->cfg.url.tls, opts);
        if (rc != 0) {
            dlock__redis_errf(errbuf, errlen, "out of memory");
            goto fail;
        }
        warn_insecure(&rb->cfg.url, url_insecure, opts);
        rc = dlock__redis_tls_new(&rb->cfg.tls, &rb->cfg.url.tls, errbuf,
                                  errlen);
        if (rc != 0)
            goto fail;
    }
    if (rb->cfg.url.is_sentinel && merge_sentinel(&rb->cfg.url, opts) != 0) {
        rc = DLOCK_ENOMEM;
        dlock__redis_errf(errbuf, errlen, "out of memory");
        goto fail;
    }
    rc = merge_sync(&rb->cfg, opts, errbuf, errlen);
    if (rc != 0)
        goto fail;
    rc = dlock__redis_scripts_new(&rb->scripts);
    if (rc != 0) {
        dlock__redis_errf(errbuf, errlen, "out of memory");
        goto fail;
    }
    /* Connects once (standalone) or discovers the master (Sentinel), so a
     * wrong URL, password, db or master name fails here rather than at
     * the first lock; lazily, neither (they do it on first use). */
    rc = rb->cfg.url.is_cluster
             ? dlock__redis_cluster_new(&rb->cluster, &rb->cfg, errbuf, errlen)
             : dlock__redis_topology_new(&rb->topo, &rb->cfg, errbuf, errlen);
    if (rc != 0)
        goto fail;
    *out = &rb->base;
    return 0;

fail:
    rb_free(&rb->base);
    return rc;
}
