/*
 * Redis backend: what a server says of evicting and persisting keys (see
 * safety.h).
 */
#include "safety.h"

#include <stdio.h>
#include <string.h>

#include "core/log.h"

int dlock__redis_probe_add(dlock__redis_cmdbuf *b, int skip_config)
{
    static const char *const config_policy[] = {"CONFIG", "GET", "maxmemory-policy"};
    static const char *const config_save[] = {"CONFIG", "GET", "save"};
    static const char *const info_memory[] = {"INFO", "memory"};
    static const char *const info_persistence[] = {"INFO", "persistence"};

    if (!skip_config && (dlock__redis_cmdbuf_add(b, 3, config_policy, NULL) != 0 ||
                         dlock__redis_cmdbuf_add(b, 3, config_save, NULL) != 0))
        return -1;
    if (dlock__redis_cmdbuf_add(b, 2, info_memory, NULL) != 0 ||
        dlock__redis_cmdbuf_add(b, 2, info_persistence, NULL) != 0)
        return -1;
    return skip_config ? 2 : 4;
}

/* CONFIG GET's [name, value] pair: the value, or NULL (refused, unknown
 * parameter, odd reply). */
static const redisReply *config_value(const redisReply *r)
{
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return NULL;
    return r->element[1];
}

/* INFO's "field:value" line: its value copied into out (len > 0), 0; or
 * -1 when the reply has no such line. INFO's text is lines of
 * "name:value" and "# Section" headers, CRLF-separated. */
static int info_field(const redisReply *r, const char *field, char *out,
                      size_t len)
{
    size_t n = strlen(field);
    const char *p, *end;

    if (!r || (r->type != REDIS_REPLY_STRING))
        return -1;
    p = r->str;
    end = r->str + r->len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol ? eol : end;
        if ((size_t)(line_end - p) > n && memcmp(p, field, n) == 0 &&
            p[n] == ':') {
            size_t vlen = (size_t)(line_end - (p + n + 1));
            if (vlen > 0 && p[n + vlen] == '\r')
                vlen--;
            if (vlen >= len)
                vlen = len - 1;
            memcpy(out, p + n + 1, vlen);
            out[vlen] = '\0';
            return 0;
        }
        p = eol ? eol + 1 : end;
    }
    return -1;
}

void dlock__redis_probe_read(dlock__redis_facts *f, redisReply **replies,
                             int n, const char *where)
{
    redisReply *policy = NULL, *save = NULL, *memory, *persistence;
    const redisReply *v;
    char buf[64];
    int i;

    if (n == 4) {
        policy = replies[0];
        save = replies[1];
    }
    memory = replies[n - 2];
    persistence = replies[n - 1];
    f->known = 1;
    f->policy[0] = '\0';
    f->aof = f->rdb = -1;
    snprintf(f->where, sizeof f->where, "%s", where);
    /* Refused (NOPERM under an ACL, or CONFIG renamed away): INFO. */
    f->from_info = !config_value(policy);
    if (!f->from_info) {
        v = config_value(policy);
        snprintf(f->policy, sizeof f->policy, "%.*s", (int)v->len, v->str);
        if ((v = config_value(save)) != NULL)
            f->rdb = v->len > 0;
    } else if (info_field(memory, "maxmemory_policy", buf, sizeof buf) == 0) {
        snprintf(f->policy, sizeof f->policy, "%.31s", buf);
    }
    if (info_field(persistence, "aof_enabled", buf, sizeof buf) == 0)
        f->aof = strcmp(buf, "1") == 0;
    for (i = 0; i < n; i++)
        if (replies[i])
            freeReplyObject(replies[i]);
}

int dlock__redis_facts_evicts(const dlock__redis_facts *f)
{
    if (!f->known || f->policy[0] == '\0')
        return DLOCK_EVICTS_UNKNOWN;
    if (strcmp(f->policy, "noeviction") == 0)
        return DLOCK_EVICTS_NONE;
    /* volatile-lru, -lfu, -random, -ttl: keys with an expiry only. */
    if (strncmp(f->policy, "volatile-", 9) == 0)
        return DLOCK_EVICTS_VOLATILE;
    /* allkeys-*, and any policy this version does not know */
    return DLOCK_EVICTS_ALL;
}

int dlock__redis_facts_tokens_back(const dlock__redis_facts *f)
{
    int e = dlock__redis_facts_evicts(f);
    return e == DLOCK_EVICTS_ALL || e == DLOCK_EVICTS_UNKNOWN ||
           (f->aof != 1 && f->rdb != 1);
}

/* How unsafe a server is, for picking the least safe: eviction of every
 * key first, then of held locks, then tokens lost at a restart. */
static int badness(int evicts, int tokens_back)
{
    int e = evicts == DLOCK_EVICTS_ALL || evicts == DLOCK_EVICTS_UNKNOWN ? 2
            : evicts == DLOCK_EVICTS_VOLATILE                           ? 1
                                                                        : 0;
    return e * 2 + (tokens_back != 0);
}

void dlock__redis_safety_merge(dlock_server_safety *out,
                               const dlock__redis_facts *f)
{
    int evicts = dlock__redis_facts_evicts(f);
    int back = dlock__redis_facts_tokens_back(f);

    if (!f->known)
        return;
    if (out->servers++ > 0 &&
        badness(evicts, back) <= badness(out->evicts, out->tokens_can_go_back))
        return;
    out->evicts = evicts;
    snprintf(out->maxmemory_policy, sizeof out->maxmemory_policy, "%s",
             f->policy);
    out->aof = f->aof;
    out->rdb = f->rdb;
    out->from_info = f->from_info;
    out->locks_evictable = evicts != DLOCK_EVICTS_NONE;
    out->tokens_can_go_back = back;
    snprintf(out->server, sizeof out->server, "%.127s", f->where);
}

void dlock__redis_safety_report(const dlock__redis_config *cfg,
                                const dlock__redis_facts *f)
{
    int evicts = dlock__redis_facts_evicts(f);
    const char *keys, *persist, *failover;

    if (!dlock__redis_facts_tokens_back(f) && evicts == DLOCK_EVICTS_NONE)
        return;
    /* One line per backend, whichever of its nodes saw it first. */
    if (!cfg->safety_warned ||
        __atomic_exchange_n(cfg->safety_warned, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    keys = evicts == DLOCK_EVICTS_ALL
               ? "can evict any key: held locks (another owner then gets "
                 "them) and fenced-lock token counters (tokens go back)"
           : evicts == DLOCK_EVICTS_VOLATILE
               ? "can evict keys with a TTL: held locks (another owner then "
                 "gets them)"
           : evicts == DLOCK_EVICTS_UNKNOWN
               ? "is unknown (CONFIG and INFO refused): lock keys may be "
                 "evicted"
               : "keeps lock keys";
    persist = f->aof == 1 ? "AOF on"
              : f->rdb == 1 ? "RDB snapshots only (a crash loses the tokens "
                              "since the last one)"
              : f->rdb == 0 ? "no persistence: a restart sends fenced tokens "
                              "back"
                            : "no AOF, RDB save points unknown (CONFIG "
                              "refused): a restart may send fenced tokens "
                              "back";
    failover = cfg->sync_replicas == 0 && (cfg->url.is_sentinel ||
                                           cfg->url.is_cluster)
                   ? "; a failover can also lose the last writes (set "
                     "sync_replicas)"
                   : "";
    dlock__log(DLOCK_LOG_WARN,
               "redis %s: maxmemory-policy %s %s; %s%s (see the README, "
               "Deploying: maxmemory-policy noeviction, appendonly yes)",
               f->where, f->policy[0] ? f->policy : "?", keys, persist,
               failover);
}
