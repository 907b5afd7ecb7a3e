/*
 * Redis backend: the eval engine (see eval.h) — script SHAs computed and
 * cached here, EVALSHA with the NOSCRIPT reload as EVAL, WAIT for replica
 * sync after a script that writes, Cluster's MOVED/ASK answers read into a
 * redirection, and the reply converted to a dlock_reply.
 */
#include "eval.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "conn.h"
#include "core/fmt.h"
#include "parse.h"
#include "core/log.h"

#define SHA_LEN 40
/* Deeper than any reply a lock script builds; stops a hostile server from
 * exhausting the stack through recursion. */
#define MAX_DEPTH 64
/* How late a WAIT may answer after its timeout: Redis checks blocked
 * clients' timeouts on its cron (hz 10 by default: every 100 ms). */
#define SYNC_LATE_MS 250
/* How old the replica count of sync_replicas = -1 may get. */
#define ALL_REPLICAS_MAX_AGE_MS 1000
/* How long a replica seen connected still counts for sync_replicas = -1
 * after it is gone (see sync_count_all). */
#define ALL_REPLICAS_MEMORY_MS 60000

static const char *const asking_argv[1] = {"ASKING"};

/* What is known of one script: its SHA1, computed here (the Redis SHA of a
 * script is the lowercase hex SHA1 of its source), and whether it writes.
 * Found by the struct's address, but valid only while the source there is
 * still the one hashed (the copy is compared): a struct reused for
 * another source gets its own SHA, never the old code. */
typedef struct sha_entry {
    const dlock_script *script;
    char *source; /* the copy that was hashed */
    size_t len;
    char sha[SHA_LEN + 1];
    int writes;
} sha_entry;

struct dlock__redis_scripts {
    /* The table: read-locked by every call (a source comparison long
     * enough that a preempted reader must not stall the others, the
     * watchdog's renewals among them), write-locked to add an entry. */
    pthread_rwlock_t rw;
    sha_entry *v;
    size_t n, cap;
    pthread_mutex_t mu; /* the sync state below */
    /* Replica sync (under mu): the server refused WAIT once (sync off from
     * then on); the master's connected replicas for sync_replicas = -1,
     * and when they were counted (0: never). */
    int wait_refused;
    int all_replicas;
    int64_t all_counted_ms;
    int64_t all_seen_ms; /* when all_replicas were last all connected */
    /* Writes sent without the sync asked for (dlock__redis_scripts_unsynced),
     * and whether sync_replicas = -1 finding no replica was logged. */
    uint64_t unsynced[2];
    int warned_no_replica;
};

int dlock__redis_scripts_new(dlock__redis_scripts **out)
{
    dlock__redis_scripts *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return DLOCK_ENOMEM;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s);
        return DLOCK_ENOMEM;
    }
    if (pthread_rwlock_init(&s->rw, NULL) != 0) {
        pthread_mutex_destroy(&s->mu);
        free(s);
        return DLOCK_ENOMEM;
    }
    *out = s;
    return 0;
}

void dlock__redis_scripts_free(dlock__redis_scripts *s)
{
    size_t i;
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    pthread_rwlock_destroy(&s->rw);
    for (i = 0; i < s->n; i++)
        free(s->v[i].source);
    free(s->v);
    free(s);
}

static void sha1_hex(const char *src, size_t len, char sha[SHA_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[SHA_DIGEST_LENGTH];
    size_t i;
    SHA1((const unsigned char *)src, len, md);
    for (i = 0; i < SHA_DIGEST_LENGTH; i++) {
        sha[2 * i] = hex[md[i] >> 4];
        sha[2 * i + 1] = hex[md[i] & 15];
    }
    sha[SHA_LEN] = '\0';
}

/* The SHA1 of script's source into sha, and whether it writes; *fresh: it
 * was not known (so the server probably does not have it either). A
 * program has a few dozen scripts: a linear scan by address, then a
 * comparison of the source, is cheaper than hashing it on every call.
 * Without memory for the entry the SHA is just computed again next time. */
static int sha_of(dlock__redis_scripts *s, const dlock_script *script,
                  char sha[SHA_LEN + 1], int *fresh)
{
    size_t i, len = strlen(script->source);
    int writes = !dlock_script_no_writes(script);
    char *copy;

    pthread_rwlock_rdlock(&s->rw);
    for (i = 0; i < s->n; i++) {
        sha_entry *e = &s->v[i];
        if (e->script == script && e->len == len &&
            memcmp(e->source, script->source, len) == 0) {
            memcpy(sha, e->sha, SHA_LEN + 1);
            writes = e->writes; /* before the unlock: a writer may move v */
            pthread_rwlock_unlock(&s->rw);
            *fresh = 0;
            return writes;
        }
    }
    pthread_rwlock_unlock(&s->rw);

    *fresh = 1;
    sha1_hex(script->source, len, sha);
    copy = malloc(len + 1);
    if (!copy)
        return writes;
    memcpy(copy, script->source, len + 1);
    pthread_rwlock_wrlock(&s->rw);
    for (i = 0; i < s->n; i++)
        if (s->v[i].script == script)
            break; /* the address now holds another source: replace */
    if (i == s->n && s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        sha_entry *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            pthread_rwlock_unlock(&s->rw);
            free(copy);
            return writes;
        }
        s->v = v;
        s->cap = cap;
    }
    if (i == s->n)
        s->n++;
    else
        free(s->v[i].source);
    s->v[i].script = script;
    s->v[i].source = copy;
    s->v[i].len = len;
    memcpy(s->v[i].sha, sha, SHA_LEN + 1);
    s->v[i].writes = writes;
    pthread_rwlock_unlock(&s->rw);
    return writes;
}

static int is_noscript(const redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR && r->len >= 8 &&
           strncmp(r->str, "NOSCRIPT", 8) == 0;
}

static int convert(dlock_reply **out, const redisReply *r, int depth)
{
    dlock_reply *d;
    size_t i;
    *out = NULL;
    switch (r->type) {
    case REDIS_REPLY_NIL:
        d = dlock_reply_nil();
        break;
    case REDIS_REPLY_INTEGER:
        d = dlock_reply_integer(r->integer);
        break;
    case REDIS_REPLY_STRING:
        d = dlock_reply_string(DLOCK_REPLY_BULK, r->str, r->len);
        break;
    case REDIS_REPLY_STATUS:
        d = dlock_reply_string(DLOCK_REPLY_STATUS, r->str, r->len);
        break;
    case REDIS_REPLY_ERROR:
        d = dlock_reply_string(DLOCK_REPLY_ERROR, r->str, r->len);
        break;
    case REDIS_REPLY_ARRAY:
        if (depth >= MAX_DEPTH)
            return DLOCK_EPROTO;
        d = dlock_reply_array(r->elements);
        if (!d)
            return DLOCK_ENOMEM;
        for (i = 0; i < r->elements; i++) {
            int rc = convert(&d->elems[i], r->element[i], depth + 1);
            if (rc != 0) {
                dlock_reply_free(d);
                return rc;
            }
        }
        break;
    default:
        /* RESP3 types: never sent to a RESP2 connection. */
        return DLOCK_EPROTO;
    }
    if (!d)
        return DLOCK_ENOMEM;
    *out = d;
    return 0;
}

int dlock__redis_reply_convert(dlock_reply **out, const redisReply *r)
{
    return convert(out, r, 0);
}

/* ---- replica sync: WAIT after a script that writes (api/dlock/redis.h) --- */

/* How many replicas must acknowledge a call of a script that writes (or
 * not): 0 = send no WAIT. *recount: -1's replica count must be asked for
 * first (sync_count_all). */
static int sync_wanted(dlock__redis_scripts *s, const dlock__redis_config *cfg,
                       int writes, int *recount)
{
    int n;
    *recount = 0;
    if (cfg->sync_replicas == 0 || !writes)
        return 0;
    pthread_mutex_lock(&s->mu);
    if (s->wait_refused) {
        n = 0;
    } else if (cfg->sync_replicas > 0) {
        n = cfg->sync_replicas;
    } else {
        n = s->all_replicas;
        *recount = s->all_counted_ms == 0 ||
                   dlock__redis_now_ms() - s->all_counted_ms > ALL_REPLICAS_MAX_AGE_MS;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* sync_replicas = -1: counts the replicas the master has connected
 * (ROLE: "master", offset, one entry per connected replica), keeping the
 * most seen for ALL_REPLICAS_MEMORY_MS: a replica that has just left
 * still counts. It may be the one a failover is promoting (Sentinel
 * detaches it first): a write acknowledged by the others alone would be
 * lost when they resync from it. Its absence makes such writes
 * DLOCK_ESYNC (an acquisition rolled back) until it is back, or until it
 * has been gone that long. A server that refuses ROLE counts as one
 * replica: never less safe than asked. */
static int sync_count_all(dlock__redis_scripts *s, dlock__redis_node *node,
                          int64_t deadline_ms, char *errbuf, size_t errlen)
{
    static const char *const argv[1] = {"ROLE"};
    dlock__redis_cmdbuf b = {0};
    dlock__redis_role role;
    redisReply *r = NULL;
    int n = 1, rc = dlock__redis_cmdbuf_add(&b, 1, argv, NULL);

    if (rc == 0)
        rc = dlock__redis_node_call(node, &b, 1, &r, deadline_ms, errbuf, errlen);
    dlock__redis_cmdbuf_free(&b);
    if (rc != 0)
        return rc;
    if (dlock__redis_parse_role(r, &role) == 0 && role.replicas >= 0)
        n = role.replicas;
    freeReplyObject(r);
    pthread_mutex_lock(&s->mu);
    s->all_counted_ms = dlock__redis_now_ms();
    if (n >= s->all_replicas ||
        s->all_counted_ms - s->all_seen_ms > ALL_REPLICAS_MEMORY_MS) {
        s->all_replicas = n;
        s->all_seen_ms = s->all_counted_ms;
    }
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Appends "WAIT n sync_timeout_ms" to b, behind the script's command. */
static int sync_append(dlock__redis_cmdbuf *b, int n,
                       const dlock__redis_config *cfg)
{
    char ns[DLOCK__FMT_INT_SIZE], ts[DLOCK__FMT_INT_SIZE];
    const char *argv[3];
    dlock__fmt_i64(ns, n);
    dlock__fmt_i64(ts, cfg->sync_timeout_ms);
    argv[0] = "WAIT";
    argv[1] = ns;
    argv[2] = ts;
    return dlock__redis_cmdbuf_add(b, 3, argv, NULL);
}

/* Whether an error reply to WAIT says the server will never run it:
 * renamed away or unknown ("ERR unknown command"), or denied by ACL
 * (NOPERM). Anything else (a replica refusing it mid-failover) is about
 * this call only. */
static int wait_refused_for_good(const redisReply *w)
{
    return w->type == REDIS_REPLY_ERROR &&
           (strstr(w->str, "unknown command") || strncmp(w->str, "NOPERM", 6) == 0);
}

/* WAIT's reply w for n required replicas: 0 when enough acknowledged, else
 * DLOCK_ESYNC with the counts. A refusal for good (wait_refused_for_good)
 * is remembered: no WAIT is sent any more, and this one call says so. */
static int sync_check(dlock__redis_scripts *s, const dlock__redis_config *cfg,
                      const redisReply *w, int n, char *errbuf, size_t errlen)
{
    int first;

    if (w->type == REDIS_REPLY_INTEGER && w->integer >= n)
        return 0;
    if (w->type == REDIS_REPLY_INTEGER) {
        dlock__redis_errf(errbuf, errlen,
                          "%lld of %d%s replicas acknowledged within %lld ms "
                          "(redis %s)",
                          (long long)w->integer, n,
                          cfg->sync_replicas < 0 ? " (all connected)" : "",
                          (long long)cfg->sync_timeout_ms, cfg->url.where);
        return DLOCK_ESYNC;
    }
    if (!wait_refused_for_good(w)) {
        dlock__redis_errf(errbuf, errlen, "redis %s: WAIT failed (%.80s): the write "
                          "was not synced", cfg->url.where,
                          w->type == REDIS_REPLY_ERROR ? w->str : "unexpected reply");
        return DLOCK_ESYNC;
    }
    pthread_mutex_lock(&s->mu);
    first = !s->wait_refused;
    s->wait_refused = 1;
    s->unsynced[DLOCK_UNSYNCED_REFUSED]++; /* this one was not synced either */
    pthread_mutex_unlock(&s->mu);
    if (first)
        dlock__log(DLOCK_LOG_WARN, "redis %s refuses WAIT (%.80s): sync_replicas is off "
                   "for this backend from now on, its writes go unsynced (logged once; "
                   "counted in the client's metrics)", cfg->url.where,
                   w->type == REDIS_REPLY_ERROR ? w->str : "unexpected reply");
    dlock__redis_errf(errbuf, errlen,
                      "redis %s refuses WAIT (%.80s): this write was not "
                      "synced, and sync_replicas is off for this backend from "
                      "now on",
                      cfg->url.where,
                      w->type == REDIS_REPLY_ERROR ? w->str : "unexpected reply");
    return DLOCK_ESYNC;
}

/* A write that sync_replicas asked to sync goes without WAIT (n = 0):
 * counted by cause, and the first one for want of a replica logged (the
 * refusal is logged where it is found, sync_check). */
static void sync_note_skip(dlock__redis_scripts *s, const dlock__redis_config *cfg,
                           int writes, int n)
{
    int warn = 0;

    if (cfg->sync_replicas == 0 || !writes || n > 0)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->wait_refused) {
        s->unsynced[DLOCK_UNSYNCED_REFUSED]++;
    } else {
        s->unsynced[DLOCK_UNSYNCED_NO_REPLICA]++;
        warn = !s->warned_no_replica;
        s->warned_no_replica = 1;
    }
    pthread_mutex_unlock(&s->mu);
    if (warn)
        dlock__log(DLOCK_LOG_WARN, "redis %s: sync_replicas=-1 but the master has no "
                   "replica connected: writes go unsynced while none is (logged once; "
                   "counted in the client's metrics)", cfg->url.where);
}

uint64_t dlock__redis_scripts_unsynced(dlock__redis_scripts *s, int cause)
{
    uint64_t n;

    if (cause != DLOCK_UNSYNCED_NO_REPLICA && cause != DLOCK_UNSYNCED_REFUSED)
        return 0;
    pthread_mutex_lock(&s->mu);
    n = s->unsynced[cause];
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* One script call on a node, from its arguments to its reply; between the
 * halves of a split call (dlock__redis_eval_send/_receive) it lives on the
 * heap with a copy of the arguments. */
struct dlock__redis_evalcall {
    dlock__redis_node *node;
    dlock__redis_scripts *cache;
    const dlock_script *script;
    const char *small_vec[16];
    size_t small_len[16];
    const char **vec; /* the command: verb, SHA or source, nkeys, argv */
    size_t *lens;
    size_t argc;
    char *copy; /* the arguments' bytes, when they must outlive argv */
    char sha[SHA_LEN + 1], nkeys_str[24];
    dlock__redis_cmdbuf b;
    redisReply *all[3];
    int nwait;  /* replicas to WAIT for (0: no WAIT) */
    int pass;   /* 0: EVALSHA, 1: EVAL of the source */
    int asking; /* ASKING goes first (an ASK's retry) */
    int64_t deadline_ms;
    dlock__redis_ticket t;
};

static void call_release(dlock__redis_evalcall *ec)
{
    size_t i;
    for (i = 0; i < 3; i++)
        if (ec->all[i])
            freeReplyObject(ec->all[i]);
    dlock__redis_cmdbuf_free(&ec->b);
    if (ec->vec != ec->small_vec)
        free((void *)ec->vec);
    if (ec->lens != ec->small_len)
        free(ec->lens);
    free(ec->copy);
}

/* Checks the arguments and lays out the command in ec (zeroed by the
 * caller); copy: the arguments are copied (they must outlive argv). */
static int call_prepare(dlock__redis_evalcall *ec, dlock__redis_node *node,
                        dlock__redis_scripts *cache, const dlock_script *script,
                        size_t nkeys, size_t nargs, const char *const *argv,
                        const size_t *argvlen, int64_t deadline_ms, int copy,
                        char *errbuf, size_t errlen)
{
    const dlock__redis_config *cfg = &node->cfg;
    size_t i, total = 0;
    int rc, recount, fresh, writes;

    ec->node = node;
    ec->cache = cache;
    ec->script = script;
    ec->vec = ec->small_vec;
    ec->lens = ec->small_len;
    if (!script || !script->source) {
        dlock__redis_errf(errbuf, errlen, "eval: NULL %s",
                          !script ? "script" : "script source");
        return DLOCK_EINVAL;
    }
    if (nkeys > (size_t)INT_MAX - 3 || nargs > (size_t)INT_MAX - 3 - nkeys) {
        dlock__redis_errf(errbuf, errlen, "eval %s: too many arguments",
                          script->name ? script->name : "?");
        return DLOCK_EINVAL;
    }
    ec->argc = 3 + nkeys + nargs;
    for (i = 0; i < nkeys + nargs; i++) {
        if (!argv || !argv[i]) {
            dlock__redis_errf(errbuf, errlen, "eval %s: argument %zu is NULL",
                              script->name ? script->name : "?", i);
            return DLOCK_EINVAL;
        }
    }
    if (ec->argc > sizeof ec->small_vec / sizeof ec->small_vec[0]) {
        ec->vec = malloc(ec->argc * sizeof *ec->vec);
        ec->lens = malloc(ec->argc * sizeof *ec->lens);
        if (!ec->vec || !ec->lens)
            goto oom;
    }
    ec->vec[2] = ec->nkeys_str;
    ec->lens[2] = dlock__fmt_u64(ec->nkeys_str, nkeys);
    for (i = 0; i < nkeys + nargs; i++) {
        ec->vec[3 + i] = argv[i];
        ec->lens[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
        total += ec->lens[3 + i];
    }
    if (copy) {
        char *d = ec->copy = malloc(total ? total : 1);
        if (!d)
            goto oom;
        for (i = 3; i < ec->argc; i++) {
            memcpy(d, ec->vec[i], ec->lens[i]);
            ec->vec[i] = d;
            d += ec->lens[i];
        }
    }

    if (deadline_ms != INT64_MAX && dlock__redis_now_ms() >= deadline_ms) {
        /* Nothing is sent that nobody would wait for. */
        dlock__redis_errf(errbuf, errlen,
                          "eval %s: the call's time budget was spent before "
                          "it could be sent",
                          script->name ? script->name : "?");
        return DLOCK_ETIMEDOUT;
    }
    writes = sha_of(cache, script, ec->sha, &fresh);
    ec->nwait = sync_wanted(cache, cfg, writes, &recount);
    if (recount) {
        rc = sync_count_all(cache, node, deadline_ms, errbuf, errlen);
        if (rc != 0)
            return rc;
        ec->nwait = sync_wanted(cache, cfg, 1, &recount);
    }
    sync_note_skip(cache, cfg, writes, ec->nwait);
    /* The replicas' acknowledgement comes on top of the call's budget:
     * cut short, the script would have run unreported (a lock taken, the
     * caller told it timed out). sync_timeout_ms bounds it, plus the
     * lateness of the server's timer (WAIT times out on its cron). */
    if (ec->nwait > 0 && deadline_ms != INT64_MAX)
        deadline_ms = deadline_ms > INT64_MAX - cfg->sync_timeout_ms - SYNC_LATE_MS
                          ? INT64_MAX
                          : deadline_ms + cfg->sync_timeout_ms + SYNC_LATE_MS;
    ec->deadline_ms = deadline_ms;
    /* EVALSHA with the SHA known locally; EVAL of the source (which also
     * caches it on the server) on this backend's first use of the script. */
    ec->pass = fresh;
    return 0;
oom:
    dlock__redis_errf(errbuf, errlen, "eval: out of memory");
    return DLOCK_ENOMEM;
}

/* Writes the current pass (EVALSHA or EVAL; WAIT in the same write). */
static int call_send(dlock__redis_evalcall *ec, char *errbuf, size_t errlen)
{
    int rc;

    ec->vec[0] = ec->pass == 0 ? "EVALSHA" : "EVAL";
    ec->lens[0] = strlen(ec->vec[0]);
    ec->vec[1] = ec->pass == 0 ? ec->sha : ec->script->source;
    ec->lens[1] = ec->pass == 0 ? SHA_LEN : strlen(ec->script->source);
    dlock__redis_cmdbuf_reset(&ec->b);
    /* An ASK's retry: ASKING lets the importing node serve the very next
     * command (each pass's), in the same write. */
    rc = ec->asking ? dlock__redis_cmdbuf_add(&ec->b, 1, asking_argv, NULL) : 0;
    if (rc == 0)
        rc = dlock__redis_cmdbuf_add(&ec->b, (int)ec->argc, ec->vec, ec->lens);
    if (rc == 0 && ec->nwait > 0)
        rc = sync_append(&ec->b, ec->nwait, &ec->node->cfg);
    if (rc != 0) {
        dlock__redis_errf(errbuf, errlen, "eval: out of memory");
        return rc;
    }
    return dlock__redis_node_send(ec->node, &ec->b,
                                  ec->asking + (ec->nwait > 0 ? 2 : 1),
                                  ec->deadline_ms, &ec->t, errbuf, errlen);
}

/* Reads the replies of the pass sent; a NOSCRIPT answer to EVALSHA
 * (restart, SCRIPT FLUSH, failover) repeats the call as EVAL. */
static int call_complete(dlock__redis_evalcall *ec, char *errbuf, size_t errlen)
{
    size_t i;
    int rc;

    for (;;) {
        rc = dlock__redis_node_receive(&ec->t, ec->all, errbuf, errlen);
        if (rc != 0 || ec->pass == 1 || !is_noscript(ec->all[ec->asking]))
            return rc;
        for (i = 0; i < 3; i++)
            if (ec->all[i])
                freeReplyObject(ec->all[i]);
        ec->all[0] = ec->all[1] = ec->all[2] = NULL;
        ec->pass = 1;
        rc = call_send(ec, errbuf, errlen);
        if (rc != 0)
            return rc;
    }
}

/* The script's answer from the replies (rc: how the round trip went). */
static int call_answer(dlock__redis_evalcall *ec, int rc, dlock_reply **out,
                       dlock__redis_redirect *redir, char *errbuf, size_t errlen)
{
    const dlock__redis_config *cfg = &ec->node->cfg;
    const char *name = ec->script->name ? ec->script->name : "?";
    redisReply **rep = ec->all + ec->asking;

    if (rc != 0)
        return rc;
    if (redir && dlock__redis_parse_redirect(rep[0], redir) == 0) {
        /* Not the script's answer: the slot is served elsewhere. */
        dlock__redis_errf(errbuf, errlen, "redis %s: %.160s", cfg->url.where,
                          rep[0]->str);
        return DLOCK_ECONN;
    }
    if (rep[0]->type == REDIS_REPLY_ERROR &&
        dlock__redis_unavailable(rep[0]->str, rep[0]->len)) {
        /* Not the script's answer but the server refusing service for now:
         * a transport condition, retried like a lost connection. */
        dlock__redis_errf(errbuf, errlen, "redis %s: server unavailable: %.160s",
                          cfg->url.where, rep[0]->str);
        if (redir)
            redir->refused = 1;
        return DLOCK_ECONN;
    }
    rc = convert(out, rep[0], 0);
    if (rc != 0) {
        dlock__redis_errf(errbuf, errlen,
                          rc == DLOCK_ENOMEM
                              ? "eval %s: out of memory"
                              : "eval %s: reply nested too deep or of an "
                                "unknown type",
                          name);
        return rc;
    }
    /* A script error is the script's answer; otherwise too few
     * acknowledgements make this an ESYNC whose reply the caller still
     * gets. */
    if (ec->nwait > 0 && rep[0]->type != REDIS_REPLY_ERROR)
        rc = sync_check(ec->cache, cfg, rep[1], ec->nwait, errbuf, errlen);
    return rc;
}

int dlock__redis_eval(dlock__redis_node *node, dlock__redis_scripts *cache,
                      dlock_reply **out,
                      const dlock_script *script, size_t nkeys, size_t nargs,
                      const char *const *argv, const size_t *argvlen,
                      int64_t deadline_ms, dlock__redis_redirect *redir,
                      char *errbuf, size_t errlen)
{
    dlock__redis_evalcall ec;
    int rc;

    if (redir) {
        redir->kind = 0;
        redir->refused = 0;
    }
    if (!out) {
        dlock__redis_errf(errbuf, errlen, "eval: NULL out");
        return DLOCK_EINVAL;
    }
    *out = NULL;
    memset(&ec, 0, sizeof ec);
    ec.asking = redir && redir->asking;
    rc = call_prepare(&ec, node, cache, script, nkeys, nargs, argv, argvlen,
                      deadline_ms, 0, errbuf, errlen);
    if (rc == 0)
        rc = call_send(&ec, errbuf, errlen);
    if (rc == 0)
        rc = call_complete(&ec, errbuf, errlen);
    rc = call_answer(&ec, rc, out, redir, errbuf, errlen);
    call_release(&ec);
    return rc;
}

int dlock__redis_eval_send(dlock__redis_node *node, dlock__redis_scripts *cache,
                           dlock__redis_evalcall **out,
                           const dlock_script *script, size_t nkeys,
                           size_t nargs, const char *const *argv,
                           const size_t *argvlen, int64_t deadline_ms,
                           char *errbuf, size_t errlen)
{
    dlock__redis_evalcall *ec = calloc(1, sizeof *ec);
    int rc;

    *out = NULL;
    if (!ec) {
        dlock__redis_errf(errbuf, errlen, "eval: out of memory");
        return DLOCK_ENOMEM;
    }
    rc = call_prepare(ec, node, cache, script, nkeys, nargs, argv, argvlen,
                      deadline_ms, 1, errbuf, errlen);
    if (rc == 0)
        rc = call_send(ec, errbuf, errlen);
    if (rc != 0) {
        call_release(ec);
        free(ec);
        return rc;
    }
    *out = ec;
    return 0;
}

int dlock__redis_eval_receive(dlock__redis_evalcall *ec,
                              dlock__redis_node **node, dlock_reply **out,
                              char *errbuf, size_t errlen)
{
    int rc = call_complete(ec, errbuf, errlen);

    *node = ec->node;
    *out = NULL;
    rc = call_answer(ec, rc, out, NULL, errbuf, errlen);
    call_release(ec);
    free(ec);
    return rc;
}
