/*
 * Test harness: a throwaway Redis Cluster on loopback (see cluster.h).
 */
#include "cluster.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SETTLE_TIMEOUT_MS 20000
/* A manual failover gives up after 5 s on the server's side: ask again. */
#define FAILOVER_RETRY_MS 7000
#define POLL_MS 20
#define REPLY_CAP 65536
#define MIGRATE_BATCH 100
#define NAME_TRIES 1000000u

static void say(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

/* ---- the slot of a key ---- */

static unsigned crc16_xmodem(const char *p, size_t n)
{
    unsigned crc = 0;
    size_t i;
    int b;
    for (i = 0; i < n; i++) {
        crc ^= (unsigned)(unsigned char)p[i] << 8;
        for (b = 0; b < 8; b++)
            crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff
                               : (crc << 1) & 0xffff;
    }
    return crc;
}

unsigned dlock_test_cluster_slot_n(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len), *close;

    if (open) {
        close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
        if (close && close > open + 1)
            return crc16_xmodem(open + 1, (size_t)(close - open - 1)) %
                   DLOCK_TEST_CLUSTER_SLOTS;
    }
    return crc16_xmodem(key, len) % DLOCK_TEST_CLUSTER_SLOTS;
}

unsigned dlock_test_cluster_slot(const char *key)
{
    return dlock_test_cluster_slot_n(key, strlen(key));
}

/* ---- one node's view of the cluster (CLUSTER NODES) ---- */

typedef struct view {
    signed char owner[DLOCK_TEST_CLUSTER_SLOTS];  /* node index or -1 */
    signed char role[DLOCK_TEST_CLUSTER_MAX_NODES]; /* NODE_* or -1: no line */
    signed char master[DLOCK_TEST_CLUSTER_MAX_NODES]; /* a replica's master */
    unsigned char failing[DLOCK_TEST_CLUSTER_MAX_NODES];
    int lines, self;
} view;

static int node_of_id(const dlock_test_cluster *c, const char *id, size_t n)
{
    int i;
    for (i = 0; i < c->nnodes; i++)
        if (strlen(c->id[i]) == n && memcmp(c->id[i], id, n) == 0)
            return i;
    return -1;
}

static int has_flag(const char *flags, size_t n, const char *flag)
{
    size_t f = strlen(flag);
    const char *p = flags, *end = flags + n;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
        if (len == f && memcmp(p, flag, f) == 0)
            return 1;
        p += len + 1;
    }
    return 0;
}

/* The fields before the slots of a line: <id> <addr> <flags> <master>
 * <ping> <pong> <epoch> <link>. The node's index, or -1. */
static int line_node(const dlock_test_cluster *c, const char *const *tok,
                     const size_t *tlen, view *v, char *why, size_t whylen)
{
    int idx = node_of_id(c, tok[0], tlen[0]);
    if (idx < 0) {
        say(why, whylen, "unknown node %.*s", (int)tlen[0], tok[0]);
        return -1;
    }
    if (has_flag(tok[2], tlen[2], "myself"))
        v->self = idx;
    v->role[idx] = has_flag(tok[2], tlen[2], "master") ? DLOCK_TEST_NODE_MASTER
                   : has_flag(tok[2], tlen[2], "slave") ? DLOCK_TEST_NODE_REPLICA
                                                       : -1;
    v->failing[idx] = has_flag(tok[2], tlen[2], "fail") ||
                      has_flag(tok[2], tlen[2], "fail?") ||
                      has_flag(tok[2], tlen[2], "handshake") ||
                      has_flag(tok[2], tlen[2], "noaddr");
    if (v->role[idx] == DLOCK_TEST_NODE_REPLICA)
        v->master[idx] = (signed char)node_of_id(c, tok[3], tlen[3]);
    return idx;
}

/* One line of CLUSTER NODES; a slot after the eighth field is "N", "A-B",
 * or "[N->-id]" / "[N-<-id]" (a move in progress: not an owner). */
static int parse_line(const dlock_test_cluster *c, const char *line,
                      size_t len, view *v, char *why, size_t whylen)
{
    const char *tok[8];
    size_t tlen[8], ntok = 0;
    const char *p = line, *end = line + len;
    int idx = -1;

    while (p < end) {
        const char *sp = memchr(p, ' ', (size_t)(end - p));
        size_t l = sp ? (size_t)(sp - p) : (size_t)(end - p);
        if (l == 0) {
            p++;
            continue;
        }
        if (ntok < 8) {
            tok[ntok] = p;
            tlen[ntok++] = l;
            if (ntok == 8 && (idx = line_node(c, tok, tlen, v, why, whylen)) < 0)
                return -1;
        } else if (*p != '[') {
            long a, b;
            char *e;
            a = strtol(p, &e, 10);
            b = *e == '-' ? strtol(e + 1, &e, 10) : a;
            if (a < 0 || b < a || b >= DLOCK_TEST_CLUSTER_SLOTS) {
                say(why, whylen, "bad slot range %.*s", (int)l, p);
                return -1;
            }
            memset(v->owner + a, idx, (size_t)(b - a + 1));
        }
        p += l;
    }
    if (ntok < 8) {
        say(why, whylen, "short CLUSTER NODES line \"%.*s\"", (int)len, line);
        return -1;
    }
    v->lines++;
    return 0;
}

/* Node i's CLUSTER NODES, parsed. 0 or -1 (why says). */
static int read_view(dlock_test_cluster *c, int i, char *buf, view *v,
                     char *why, size_t whylen)
{
    const char *argv[] = {"CLUSTER", "NODES", NULL};
    const char *p;

    memset(v->owner, -1, sizeof v->owner);
    memset(v->role, -1, sizeof v->role);
    memset(v->master, -1, sizeof v->master);
    memset(v->failing, 0, sizeof v->failing);
    v->lines = 0;
    v->self = -1;
    if (dlock_test_redis_command(c->node[i], buf, REPLY_CAP, argv) != 0 ||
        buf[0] == '-' || strlen(buf) + 1 >= REPLY_CAP) {
        say(why, whylen, "node %d: CLUSTER NODES failed: %.200s", i, buf);
        return -1;
    }
    for (p = buf; *p;) {
        size_t len = strcspn(p, "\r\n");
        if (len > 0 && parse_line(c, p, len, v, why, whylen) != 0)
            return -1;
        p += len;
        p += strspn(p, "\r\n");
    }
    if (v->self != i) {
        say(why, whylen, "node %d: CLUSTER NODES names node %d as myself", i,
            v->self);
        return -1;
    }
    return 0;
}

/* ---- settled ---- */

static int same_view(const dlock_test_cluster *c, const view *a, const view *b,
                     int who, char *why, size_t whylen)
{
    int j;
    if (memcmp(a->owner, b->owner, sizeof a->owner) != 0) {
        say(why, whylen, "node %d sees other slot owners", who);
        return 0;
    }
    for (j = 0; j < c->nnodes; j++) {
        if (!c->up[j])
            continue;
        if (a->role[j] != b->role[j] ||
            (a->role[j] == DLOCK_TEST_NODE_REPLICA && a->master[j] != b->master[j])) {
            say(why, whylen, "node %d sees node %d's role otherwise", who, j);
            return 0;
        }
    }
    return 1;
}

static int replica_attached(dlock_test_cluster *c, int j, char *buf,
                            char *why, size_t whylen)
{
    const char *argv[] = {"INFO", "replication", NULL};
    if (dlock_test_redis_command(c->node[j], buf, REPLY_CAP, argv) != 0 ||
        !strstr(buf, "master_link_status:up")) {
        say(why, whylen, "replica %d: link to its master not up", j);
        return 0;
    }
    return 1;
}

/* Whether the cluster settled (cluster.h); *agreed = the common view. */
static int observe(dlock_test_cluster *c, view *agreed, char *buf,
                   char *why, size_t whylen)
{
    const char *info[] = {"CLUSTER", "INFO", NULL};
    view *v = malloc(sizeof *v);
    int i, j, first = 1, ok = 0;
    unsigned s;

    if (!v)
        return 0;
    for (i = 0; i < c->nnodes; i++) {
        view *mine = first ? agreed : v;
        if (!c->up[i])
            continue;
        if (dlock_test_redis_command(c->node[i], buf, REPLY_CAP, info) != 0 ||
            !strstr(buf, "cluster_state:ok")) {
            say(why, whylen, "node %d: cluster_state not ok", i);
            goto done;
        }
        if (read_view(c, i, buf, mine, why, whylen) != 0)
            goto done;
        if (mine->lines != c->nnodes) {
            say(why, whylen, "node %d knows %d nodes of %d", i, mine->lines,
                c->nnodes);
            goto done;
        }
        if (!first && !same_view(c, agreed, v, i, why, whylen))
            goto done;
        for (j = 0; j < c->nnodes; j++)
            if (c->up[j] && mine->failing[j]) {
                say(why, whylen, "node %d flags running node %d as failing", i, j);
                goto done;
            }
        first = 0;
    }
    if (first) {
        say(why, whylen, "no node is running");
        goto done;
    }
    for (s = 0; s < DLOCK_TEST_CLUSTER_SLOTS; s++) {
        int o = agreed->owner[s];
        if (o < 0 || !c->up[o] || agreed->role[o] != DLOCK_TEST_NODE_MASTER) {
            say(why, whylen, "slot %u has no running master", s);
            goto done;
        }
    }
    for (j = 0; j < c->nnodes; j++) {
        int m = agreed->master[j];
        if (!c->up[j] || agreed->role[j] == DLOCK_TEST_NODE_MASTER)
            continue;
        if (agreed->role[j] != DLOCK_TEST_NODE_REPLICA || m < 0 || !c->up[m] ||
            agreed->role[m] != DLOCK_TEST_NODE_MASTER) {
            say(why, whylen, "node %d is neither a master nor a replica of one", j);
            goto done;
        }
        if (!replica_attached(c, j, buf, why, whylen))
            goto done;
    }
    ok = 1;
done:
    free(v);
    return ok;
}

typedef int (*settle_pred)(dlock_test_cluster *c, const view *v, const int *arg,
                           char *why, size_t whylen);

/* Polls until the cluster settled and pred (NULL: none) holds on the agreed
 * view; then records the slot map. 0, or -1 with what did not hold. */
static int wait_until(dlock_test_cluster *c, settle_pred pred, const int *arg,
                      int timeout_ms, const char *what)
{
    long long start = dlock_test_now_ms(), deadline = start + timeout_ms;
    char *buf = malloc(REPLY_CAP), why[512] = "not asked yet", last[512] = "";
    view *v = malloc(sizeof *v);
    const char *trace = getenv("DLOCK_TEST_CLUSTER_TRACE");
    int rc = -1;
    unsigned s;

    if (!buf || !v)
        goto done;
    for (;;) {
        int done = observe(c, v, buf, why, sizeof why) &&
                   (!pred || pred(c, v, arg, why, sizeof why));
        if (trace && (done || strcmp(why, last) != 0)) {
            fprintf(stderr, "cluster harness: %s: %lld ms: %s\n", what,
                    dlock_test_now_ms() - start, done ? "done" : why);
            snprintf(last, sizeof last, "%s", why);
        }
        if (done) {
            for (s = 0; s < DLOCK_TEST_CLUSTER_SLOTS; s++)
                c->slot_shard[s] = (signed char)c->shard[(int)v->owner[s]];
            rc = 0;
            break;
        }
        if (dlock_test_now_ms() >= deadline) {
            fprintf(stderr, "cluster harness: %s: not done after %lld ms: %s\n",
                    what, dlock_test_now_ms() - start, why);
            break;
        }
        dlock_test_sleep_ms(POLL_MS);
    }
done:
    free(buf);
    free(v);
    return rc;
}

int dlock_test_cluster_wait_settled(dlock_test_cluster *c, int timeout_ms)
{
    return wait_until(c, NULL, NULL, timeout_ms, "waiting until settled");
}

/* Every slot of shard (as last recorded) is node's. */
static int shard_owned_by(const dlock_test_cluster *c, const view *v, int shard,
                          int node)
{
    unsigned s;
    for (s = 0; s < DLOCK_TEST_CLUSTER_SLOTS; s++)
        if (c->slot_shard[s] == shard && v->owner[s] != node)
            return 0;
    return 1;
}

/* ---- commands ---- */

int dlock_test_cluster_command(dlock_test_cluster *c, int node, char *out,
                               size_t outlen, const char *const *argv)
{
    if (!c || node < 0 || node >= c->nnodes || !c->node[node] || !c->up[node])
        return -1;
    return dlock_test_redis_command(c->node[node], out, outlen, argv);
}

/* A command whose reply must be +OK. */
static int command_ok(dlock_test_cluster *c, int node, const char *const *argv)
{
    char out[512];
    if (dlock_test_cluster_command(c, node, out, sizeof out, argv) == 0 &&
        strcmp(out, "OK") == 0)
        return 0;
    fprintf(stderr, "cluster harness: node %d: %s %s %s: %s\n", node, argv[0],
            argv[1] ? argv[1] : "", argv[1] && argv[2] ? argv[2] : "", out);
    return -1;
}

int dlock_test_cluster_role(dlock_test_cluster *c, int node)
{
    const char *argv[] = {"ROLE", NULL};
    char out[1024];
    if (dlock_test_cluster_command(c, node, out, sizeof out, argv) != 0)
        return DLOCK_TEST_NODE_DOWN;
    if (strncmp(out, "master\n", 7) == 0)
        return DLOCK_TEST_NODE_MASTER;
    if (strncmp(out, "slave\n", 6) == 0)
        return DLOCK_TEST_NODE_REPLICA;
    return DLOCK_TEST_NODE_DOWN;
}

int dlock_test_cluster_shard_master(dlock_test_cluster *c, int shard)
{
    int i, found = -1, n = 0;
    for (i = 0; c && i < c->nnodes; i++)
        if (c->shard[i] == shard && c->up[i] &&
            dlock_test_cluster_role(c, i) == DLOCK_TEST_NODE_MASTER) {
            found = i;
            n++;
        }
    return n == 1 ? found : -1;
}

int dlock_test_cluster_slot_master(dlock_test_cluster *c, unsigned slot)
{
    char *buf = malloc(REPLY_CAP), why[256];
    view *v = malloc(sizeof *v);
    int i, owner = -2;

    if (!c || slot >= DLOCK_TEST_CLUSTER_SLOTS || !buf || !v)
        owner = -1;
    for (i = 0; owner != -1 && i < c->nnodes; i++) {
        if (!c->up[i])
            continue;
        if (read_view(c, i, buf, v, why, sizeof why) != 0)
            owner = -1;
        else if (owner == -2)
            owner = v->owner[slot];
        else if (owner != v->owner[slot])
            owner = -1;
    }
    free(buf);
    free(v);
    return owner < 0 ? -1 : owner;
}

const char *dlock_test_cluster_url(dlock_test_cluster *c)
{
    return c ? c->url : NULL;
}

int dlock_test_cluster_plain_port(dlock_test_cluster *c, int node)
{
    if (!c || node < 0 || node >= c->nnodes)
        return -1;
    return dlock_test_redis_port(c->node[node]);
}

int dlock_test_cluster_port(dlock_test_cluster *c, int node)
{
    if (!c || node < 0 || node >= c->nnodes)
        return -1;
    return c->tls ? dlock_test_redis_tls_port(c->node[node])
                  : dlock_test_redis_port(c->node[node]);
}

const char *dlock_test_cluster_name(dlock_test_cluster *c, int shard,
                                    const char *prefix, int k, char *buf,
                                    size_t len)
{
    unsigned n;
    if (!c || !prefix || !buf || k < 0)
        return NULL;
    for (n = 0; n < NAME_TRIES; n++) {
        int w = snprintf(buf, len, "%s%u", prefix, n);
        if (w < 0 || (size_t)w >= len)
            return NULL;
        if (c->slot_shard[dlock_test_cluster_slot(buf)] == shard && k-- == 0)
            return buf;
    }
    return NULL;
}

/* ---- start and stop ---- */

/* Formed: as many masters as asked, each with its replicas. */
static int formed(dlock_test_cluster *c, const view *v, const int *arg,
                  char *why, size_t whylen)
{
    int i, j, masters = 0;
    (void)arg;
    for (i = 0; i < c->nnodes; i++) {
        int replicas = 0;
        if (v->role[i] != DLOCK_TEST_NODE_MASTER)
            continue;
        masters++;
        for (j = 0; j < c->nnodes; j++)
            replicas += v->role[j] == DLOCK_TEST_NODE_REPLICA && v->master[j] == i;
        if (replicas != c->replicas) {
            say(why, whylen, "master %d has %d replicas", i, replicas);
            return 0;
        }
    }
    if (masters != c->masters) {
        say(why, whylen, "%d masters", masters);
        return 0;
    }
    return 1;
}

/* Renumbers the nodes into the layout of cluster.h: masters by their first
 * slot, then each one's replicas by port. */
static void arrange(dlock_test_cluster *c, const view *v)
{
    dlock_test_redis *node[DLOCK_TEST_CLUSTER_MAX_NODES];
    char id[DLOCK_TEST_CLUSTER_MAX_NODES][41];
    int order[DLOCK_TEST_CLUSTER_MAX_NODES], n = 0, i, j, s;
    unsigned slot;

    for (slot = 0; slot < DLOCK_TEST_CLUSTER_SLOTS; slot++) {
        int o = v->owner[slot], seen = 0;
        for (i = 0; i < n; i++)
            seen |= order[i] == o;
        if (!seen)
            order[n++] = o;
    }
    for (s = 0; s < c->masters; s++) {
        int first = n;
        for (j = 0; j < c->nnodes; j++)
            if (v->role[j] == DLOCK_TEST_NODE_REPLICA && v->master[j] == order[s])
                order[n++] = j;
        for (i = first; i < n; i++) /* a few nodes: insertion sort by port */
            for (j = i; j > first && dlock_test_redis_port(c->node[order[j]]) <
                                         dlock_test_redis_port(c->node[order[j - 1]]); j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
    }
    for (i = 0; i < c->nnodes; i++) {
        node[i] = c->node[order[i]];
        memcpy(id[i], c->id[order[i]], sizeof id[i]);
    }
    for (i = 0; i < c->nnodes; i++) {
        c->node[i] = node[i];
        memcpy(c->id[i], id[i], sizeof id[i]);
        c->shard[i] = i < c->masters ? i : (i - c->masters) / c->replicas;
    }
}

/* One node, its cluster bus on a port of its own (not port + 10000, which
 * may be taken or above 65535). */
static int start_node(dlock_test_cluster *c, int i, const char *const *extra)
{
    const char *args[64];
    char bus[16];
    size_t n = 0, k;
    int attempt;

    args[n++] = "--cluster-enabled";
    args[n++] = "yes";
    args[n++] = "--cluster-config-file"; /* relative to --dir */
    args[n++] = "nodes.conf";
    args[n++] = "--cluster-node-timeout";
    args[n++] = "1000";
    /* A replica may take over however long it was cut off; replicas stay
     * in their shard. */
    args[n++] = "--cluster-replica-validity-factor";
    args[n++] = "0";
    args[n++] = "--cluster-allow-replica-migration";
    args[n++] = "no";
    args[n++] = "--repl-diskless-sync";
    args[n++] = "yes";
    args[n++] = "--repl-diskless-sync-delay";
    args[n++] = "0";
    args[n++] = "--cluster-port";
    args[n++] = bus;
    if (c->password[0]) {
        args[n++] = "--masterauth";
        args[n++] = c->password;
    }
    if (c->tls) {
        /* The bus and replication over TLS too (the nodes share node 0's
         * certificates): one CA and one client certificate fit them all. */
        args[n++] = "--tls-cluster";
        args[n++] = "yes";
        args[n++] = "--tls-replication";
        args[n++] = "yes";
    }
    for (k = 0; extra && extra[k]; k++) {
        if (n + 2 >= sizeof args / sizeof args[0]) {
            fprintf(stderr, "cluster harness: too many extra arguments\n");
            return -1;
        }
        args[n++] = extra[k];
    }
    args[n] = NULL;
    for (attempt = 0; attempt < 3; attempt++) {
        int port = dlock_test_free_port();
        if (port <= 0)
            continue;
        snprintf(bus, sizeof bus, "%d", port);
        if ((!c->tls ? dlock_test_redis_start(&c->node[i], args)
             : i == 0 ? dlock_test_redis_start_tls(&c->node[i], "yes", 1, args)
                      : dlock_test_redis_start_tls_pki(&c->node[i], "yes", 1,
                                                       c->pki, args)) == 0) {
            c->up[i] = 1;
            if (i == 0)
                snprintf(c->pki, sizeof c->pki, "%s",
                         dlock_test_redis_dir(c->node[0]));
            return 0;
        }
    }
    return -1;
}

static int create(dlock_test_cluster *c)
{
    const char *cli = getenv("DLOCK_REDIS_CLI");
    char cmd[4096], auth[200] = "", tls[1024] = "";
    size_t n;
    int i, rc;

    if (!cli || !cli[0])
        cli = "redis-cli";
    if (c->password[0])
        snprintf(auth, sizeof auth, "REDISCLI_AUTH='%s' ", c->password);
    if (c->tls)
        snprintf(tls, sizeof tls, " --tls --cacert '%s/ca.crt' --cert "
                 "'%s/client.crt' --key '%s/client.key'", c->pki, c->pki, c->pki);
    snprintf(c->log, sizeof c->log, "%s/cluster-create.log",
             dlock_test_redis_dir(c->node[0]));
    n = (size_t)snprintf(cmd, sizeof cmd, "%stimeout -k 2 30 %s%s --cluster create",
                         auth, cli, tls);
    for (i = 0; i < c->nnodes && n < sizeof cmd; i++)
        n += (size_t)snprintf(cmd + n, sizeof cmd - n, " 127.0.0.1:%d",
                              dlock_test_cluster_port(c, i));
    if (n < sizeof cmd)
        snprintf(cmd + n, sizeof cmd - n,
                 " --cluster-replicas %d --cluster-yes < /dev/null > '%s' 2>&1",
                 c->replicas, c->log);
    rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "cluster harness: redis-cli --cluster create failed "
                "(status %d; output in %s):\n", rc, c->log);
        snprintf(cmd, sizeof cmd, "cat '%s' >&2", c->log);
        rc = system(cmd);
        (void)rc;
        return -1;
    }
    return 0;
}

int dlock_test_cluster_start(dlock_test_cluster *c, int masters,
                             int replicas_per_master)
{
    return dlock_test_cluster_start_args(c, masters, replicas_per_master, NULL);
}

static int start(dlock_test_cluster *c, int masters, int replicas_per_master,
                 const char *const *extra_args, int tls);

int dlock_test_cluster_start_args(dlock_test_cluster *c, int masters,
                                  int replicas_per_master,
                                  const char *const *extra_args)
{
    return start(c, masters, replicas_per_master, extra_args, 0);
}

int dlock_test_cluster_start_tls(dlock_test_cluster *c, int masters,
                                 int replicas_per_master,
                                 const char *const *extra_args)
{
    return start(c, masters, replicas_per_master, extra_args, 1);
}

static int start(dlock_test_cluster *c, int masters, int replicas_per_master,
                 const char *const *extra_args, int tls)
{
    const char *myid[] = {"CLUSTER", "MYID", NULL};
    view *v = NULL;
    size_t n;
    int i, k;

    if (!c)
        return -1;
    memset(c, 0, sizeof *c);
    c->moving_slot = -1;
    /* redis-cli --cluster create refuses fewer than 3 masters. */
    if (masters < 3 || replicas_per_master < 0 ||
        masters * (1 + replicas_per_master) > DLOCK_TEST_CLUSTER_MAX_NODES) {
        fprintf(stderr, "cluster harness: %d masters with %d replicas each: "
                "3 masters or more, at most %d nodes\n", masters, replicas_per_master,
                DLOCK_TEST_CLUSTER_MAX_NODES);
        return -1;
    }
    c->masters = masters;
    c->replicas = replicas_per_master;
    c->tls = tls;
    for (k = 0; extra_args && extra_args[k]; k++)
        if (strcmp(extra_args[k], "--requirepass") == 0 && extra_args[k + 1]) {
            if (strchr(extra_args[k + 1], '\'') ||
                strlen(extra_args[k + 1]) >= sizeof c->password) {
                fprintf(stderr, "cluster harness: unusable password\n");
                return -1;
            }
            snprintf(c->password, sizeof c->password, "%s", extra_args[k + 1]);
        }
    for (i = 0; i < masters * (1 + replicas_per_master); i++) {
        c->nnodes = i + 1;
        if (start_node(c, i, extra_args) != 0) {
            fprintf(stderr, "cluster harness: could not start node %d\n", i);
            goto fail;
        }
    }
    if (create(c) != 0)
        goto fail;
    for (i = 0; i < c->nnodes; i++) {
        char out[128];
        if (dlock_test_redis_command(c->node[i], out, sizeof out, myid) != 0 ||
            strlen(out) != 40) {
            fprintf(stderr, "cluster harness: node %d: CLUSTER MYID: %s\n", i, out);
            goto fail;
        }
        memcpy(c->id[i], out, 41);
        c->shard[i] = -1;
    }
    if (wait_until(c, formed, NULL, SETTLE_TIMEOUT_MS, "forming the cluster") != 0)
        goto fail;
    v = malloc(sizeof *v);
    if (!v) {
        goto fail;
    } else {
        char *buf = malloc(REPLY_CAP), why[256];
        int rc = buf ? read_view(c, 0, buf, v, why, sizeof why) : -1;
        free(buf);
        if (rc != 0) {
            fprintf(stderr, "cluster harness: %s\n", why);
            goto fail;
        }
    }
    arrange(c, v);
    free(v);
    v = NULL;
    /* Records slot_shard with the shards now numbered. */
    if (dlock_test_cluster_wait_settled(c, SETTLE_TIMEOUT_MS) != 0)
        goto fail;
    n = (size_t)snprintf(c->url, sizeof c->url, "%s",
                         tls ? "rediss-cluster://" : "redis-cluster://");
    for (i = 0; i < masters && n < sizeof c->url; i++)
        n += (size_t)snprintf(c->url + n, sizeof c->url - n, "%s127.0.0.1:%d",
                              i ? "," : "", dlock_test_cluster_port(c, i));
    if (tls && n < sizeof c->url)
        n += (size_t)snprintf(c->url + n, sizeof c->url - n,
                              "?cacert=%s/ca.crt&cert=%s/client.crt&key=%s/client.key",
                              c->pki, c->pki, c->pki);
    if (n >= sizeof c->url) {
        fprintf(stderr, "cluster harness: the seed URL is longer than %zu bytes\n",
                sizeof c->url - 1);
        goto fail;
    }
    return 0;
fail:
    free(v);
    dlock_test_cluster_stop(c);
    return -1;
}

void dlock_test_cluster_stop(dlock_test_cluster *c)
{
    int i;
    if (!c)
        return;
    /* All at once: a master going down alone would wait for its replicas
     * (shutdown-timeout) and the rest would start failing over. */
    for (i = 0; i < c->nnodes; i++)
        if (c->node[i] && c->up[i])
            dlock_test_redis_signal(c->node[i], SIGKILL);
    for (i = 0; i < c->nnodes; i++) {
        dlock_test_redis_stop(c->node[i]);
        c->node[i] = NULL;
        c->up[i] = 0;
    }
    c->nnodes = 0;
}

/* ---- failures ---- */

/* arg: {shard, new master, old master}. */
static int failed_over(dlock_test_cluster *c, const view *v, const int *arg,
                       char *why, size_t whylen)
{
    if (!shard_owned_by(c, v, arg[0], arg[1])) {
        say(why, whylen, "node %d does not own shard %d's slots yet", arg[1], arg[0]);
        return 0;
    }
    if (arg[2] >= 0 && c->up[arg[2]] &&
        (v->role[arg[2]] != DLOCK_TEST_NODE_REPLICA || v->master[arg[2]] != arg[1])) {
        say(why, whylen, "node %d is not a replica of node %d yet", arg[2], arg[1]);
        return 0;
    }
    return 1;
}

int dlock_test_cluster_failover(dlock_test_cluster *c, int shard)
{
    const char *argv[] = {"CLUSTER", "FAILOVER", NULL};
    int arg[3], i, attempt;

    if (!c || shard < 0 || shard >= c->masters)
        return -1;
    arg[0] = shard;
    arg[1] = -1;
    arg[2] = dlock_test_cluster_shard_master(c, shard);
    for (i = 0; i < c->nnodes && arg[1] < 0; i++)
        if (c->shard[i] == shard && c->up[i] &&
            dlock_test_cluster_role(c, i) == DLOCK_TEST_NODE_REPLICA)
            arg[1] = i;
    if (arg[1] < 0 || arg[2] < 0) {
        fprintf(stderr, "cluster harness: shard %d has no running master and "
                "replica to fail over\n", shard);
        return -1;
    }
    for (attempt = 0; attempt < 2; attempt++) {
        /* Asked again only if the first one did not complete late. */
        if ((attempt == 0 ||
             dlock_test_cluster_role(c, arg[1]) == DLOCK_TEST_NODE_REPLICA) &&
            command_ok(c, arg[1], argv) != 0)
            return -1;
        if (wait_until(c, failed_over, arg,
                       attempt ? SETTLE_TIMEOUT_MS - FAILOVER_RETRY_MS
                               : FAILOVER_RETRY_MS,
                       "CLUSTER FAILOVER") == 0)
            return arg[1];
    }
    return -1;
}

/* arg: {shard, killed node}: another node of the shard owns its slots. */
static int took_over(dlock_test_cluster *c, const view *v, const int *arg,
                     char *why, size_t whylen)
{
    unsigned s;
    for (s = 0; s < DLOCK_TEST_CLUSTER_SLOTS; s++) {
        int o = v->owner[s];
        if (c->slot_shard[s] == arg[0] && (o == arg[1] || c->shard[o] != arg[0])) {
            say(why, whylen, "slot %u of shard %d is on node %d", s, arg[0], o);
            return 0;
        }
    }
    return 1;
}

int dlock_test_cluster_kill_node(dlock_test_cluster *c, int node)
{
    if (!c || node < 0 || node >= c->nnodes || !c->up[node] ||
        dlock_test_redis_signal(c->node[node], SIGKILL) != 0)
        return -1;
    dlock_test_redis_kill(c->node[node]); /* reaps it */
    c->up[node] = 0;
    return 0;
}

int dlock_test_cluster_kill_master(dlock_test_cluster *c, int shard)
{
    int arg[2], i, replicas = 0;

    if (!c || shard < 0 || shard >= c->masters)
        return -1;
    arg[0] = shard;
    arg[1] = dlock_test_cluster_shard_master(c, shard);
    for (i = 0; i < c->nnodes; i++)
        replicas += c->shard[i] == shard && c->up[i] && i != arg[1];
    if (arg[1] < 0 || replicas == 0) {
        fprintf(stderr, "cluster harness: shard %d has no running master and "
                "replica\n", shard);
        return -1;
    }
    if (dlock_test_cluster_kill_node(c, arg[1]) != 0)
        return -1;
    if (wait_until(c, took_over, arg, SETTLE_TIMEOUT_MS,
                   "failover after kill -9") != 0)
        return -1;
    return arg[1];
}

/* arg: {node}: a replica of its shard's master. */
static int rejoined(dlock_test_cluster *c, const view *v, const int *arg,
                    char *why, size_t whylen)
{
    int m = v->master[arg[0]];
    if (v->role[arg[0]] != DLOCK_TEST_NODE_REPLICA || m < 0 ||
        c->shard[m] != c->shard[arg[0]]) {
        say(why, whylen, "node %d is not a replica in its shard yet", arg[0]);
        return 0;
    }
    return 1;
}

int dlock_test_cluster_restart_node(dlock_test_cluster *c, int node)
{
    int arg[1];
    if (!c || node < 0 || node >= c->nnodes || c->up[node])
        return -1;
    if (dlock_test_redis_restart(c->node[node]) != 0) {
        fprintf(stderr, "cluster harness: node %d did not start again\n", node);
        return -1;
    }
    c->up[node] = 1;
    arg[0] = node;
    return wait_until(c, rejoined, arg, SETTLE_TIMEOUT_MS,
                      "rejoining after a restart");
}

/* ---- resharding ---- */

int dlock_test_cluster_move_slot_begin(dlock_test_cluster *c, unsigned slot,
                                       int to_shard)
{
    char n[16];
    int from, to;

    if (!c || slot >= DLOCK_TEST_CLUSTER_SLOTS || to_shard < 0 ||
        to_shard >= c->masters)
        return -1;
    if (c->moving_slot >= 0) {
        fprintf(stderr, "cluster harness: slot %d is still moving\n",
                c->moving_slot);
        return -1;
    }
    from = dlock_test_cluster_slot_master(c, slot);
    to = dlock_test_cluster_shard_master(c, to_shard);
    if (from < 0 || to < 0 || from == to) {
        fprintf(stderr, "cluster harness: cannot move slot %u from node %d to "
                "node %d\n", slot, from, to);
        return -1;
    }
    snprintf(n, sizeof n, "%u", slot);
    {
        const char *importing[] = {"CLUSTER", "SETSLOT", n, "IMPORTING", c->id[from], NULL};
        const char *migrating[] = {"CLUSTER", "SETSLOT", n, "MIGRATING", c->id[to], NULL};
        if (command_ok(c, to, importing) != 0 || command_ok(c, from, migrating) != 0)
            return -1;
    }
    c->moving_slot = (int)slot;
    c->move_from = from;
    c->move_to = to;
    return 0;
}

int dlock_test_cluster_move_slot_keys(dlock_test_cluster *c)
{
    char n[16], port[16], out[256];
    char *keys;
    int moved = 0, rounds;

    if (!c || c->moving_slot < 0)
        return -1;
    keys = malloc(REPLY_CAP);
    if (!keys)
        return -1;
    snprintf(n, sizeof n, "%d", c->moving_slot);
    snprintf(port, sizeof port, "%d", dlock_test_cluster_port(c, c->move_to));
    for (rounds = 0; rounds < 10000; rounds++) {
        const char *get[] = {"CLUSTER", "GETKEYSINSLOT", n, "100", NULL};
        const char *argv[MIGRATE_BATCH + 12];
        size_t a = 0;
        char *p;

        if (dlock_test_cluster_command(c, c->move_from, keys, REPLY_CAP, get) != 0 ||
            keys[0] == '-') {
            fprintf(stderr, "cluster harness: GETKEYSINSLOT %s: %s\n", n, keys);
            moved = -1;
            break;
        }
        if (!keys[0])
            break;
        argv[a++] = "MIGRATE";
        argv[a++] = "127.0.0.1";
        argv[a++] = port;
        argv[a++] = "";
        argv[a++] = "0";
        argv[a++] = "5000";
        if (c->password[0]) {
            argv[a++] = "AUTH";
            argv[a++] = c->password;
        }
        argv[a++] = "KEYS";
        for (p = keys; p && a < sizeof argv / sizeof argv[0] - 1;) {
            char *nl = strchr(p, '\n');
            argv[a++] = p;
            moved++;
            if (nl)
                *nl = '\0';
            p = nl ? nl + 1 : NULL;
        }
        argv[a] = NULL;
        if (dlock_test_cluster_command(c, c->move_from, out, sizeof out, argv) != 0 ||
            (strcmp(out, "OK") != 0 && strcmp(out, "NOKEY") != 0)) {
            fprintf(stderr, "cluster harness: MIGRATE of slot %s: %s\n", n, out);
            moved = -1;
            break;
        }
    }
    free(keys);
    return moved;
}

/* arg: {slot, target node}. */
static int slot_moved(dlock_test_cluster *c, const view *v, const int *arg,
                      char *why, size_t whylen)
{
    (void)c;
    if (v->owner[arg[0]] != arg[1]) {
        say(why, whylen, "slot %d is on node %d", arg[0], v->owner[arg[0]]);
        return 0;
    }
    return 1;
}

int dlock_test_cluster_move_slot_finish(dlock_test_cluster *c)
{
    char n[16];
    int arg[2], i;

    if (!c || c->moving_slot < 0)
        return -1;
    if (dlock_test_cluster_move_slot_keys(c) < 0)
        return -1;
    snprintf(n, sizeof n, "%d", c->moving_slot);
    arg[0] = c->moving_slot;
    arg[1] = c->move_to;
    {
        const char *node[] = {"CLUSTER", "SETSLOT", n, "NODE", c->id[c->move_to], NULL};
        /* The target first: it bumps its epoch, so its claim wins. */
        if (command_ok(c, c->move_to, node) != 0 ||
            command_ok(c, c->move_from, node) != 0)
            return -1;
        for (i = 0; i < c->nnodes; i++)
            if (i != c->move_to && i != c->move_from && c->up[i] &&
                dlock_test_cluster_role(c, i) == DLOCK_TEST_NODE_MASTER &&
                command_ok(c, i, node) != 0)
                return -1;
    }
    c->moving_slot = -1;
    return wait_until(c, slot_moved, arg, SETTLE_TIMEOUT_MS, "moving a slot");
}

int dlock_test_cluster_move_slot(dlock_test_cluster *c, unsigned slot,
                                 int to_shard)
{
    if (dlock_test_cluster_move_slot_begin(c, slot, to_shard) != 0)
        return -1;
    return dlock_test_cluster_move_slot_finish(c);
}
