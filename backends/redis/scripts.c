/*
 * Redis backend: running scripts (see scripts.h).
 */
#include "scripts.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"

#define SHA_LEN 40
/* Deeper than any reply a lock script builds; stops a hostile server from
 * exhausting the stack through recursion. */
#define MAX_DEPTH 64

typedef struct sha_entry {
    const dlock_script *script;
    char sha[SHA_LEN + 1];
} sha_entry;

struct dlock__redis_scripts {
    pthread_mutex_t mu;
    sha_entry *v;
    size_t n, cap;
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
    *out = s;
    return 0;
}

void dlock__redis_scripts_free(dlock__redis_scripts *s)
{
    if (!s)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s->v);
    free(s);
}

/* A program has a few dozen scripts: a linear scan beats hashing. */
static int sha_get(dlock__redis_scripts *s, const dlock_script *script,
                   char sha[SHA_LEN + 1])
{
    size_t i;
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n; i++) {
        if (s->v[i].script == script) {
            memcpy(sha, s->v[i].sha, SHA_LEN + 1);
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
    return found;
}

/* Best effort: without memory the next call just loads the script again. */
static void sha_put(dlock__redis_scripts *s, const dlock_script *script,
                    const char *sha)
{
    size_t i;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < s->n; i++)
        if (s->v[i].script == script)
            break;
    if (i == s->n) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 16;
            sha_entry *v = realloc(s->v, cap * sizeof *v);
            if (!v) {
                pthread_mutex_unlock(&s->mu);
                return;
            }
            s->v = v;
            s->cap = cap;
        }
        s->v[s->n++].script = script;
    }
    memcpy(s->v[i].sha, sha, SHA_LEN);
    s->v[i].sha[SHA_LEN] = '\0';
    pthread_mutex_unlock(&s->mu);
}

static int is_sha(const redisReply *r)
{
    size_t i;
    if (r->type != REDIS_REPLY_STRING || r->len != SHA_LEN)
        return 0;
    for (i = 0; i < SHA_LEN; i++)
        if (!strchr("0123456789abcdefABCDEF", r->str[i]))
            return 0;
    return 1;
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

int dlock__redis_eval(dlock__redis_node *node, dlock__redis_scripts *cache,
                      dlock_reply **out,
                      const dlock_script *script, size_t nkeys, size_t nargs,
                      const char *const *argv, const size_t *argvlen,
                      int64_t deadline_ms, char *errbuf, size_t errlen)
{
    const char *small_vec[16];
    size_t small_len[16];
    const char **vec = small_vec;
    size_t *lens = small_len;
    const dlock__redis_config *cfg = &node->cfg;
    dlock__redis_cmdbuf b = {0};
    char sha[SHA_LEN + 1], nkeys_str[24];
    redisReply *r = NULL, *load = NULL, *two[2];
    size_t i, argc;
    int rc, have_sha, sent = 0;

    if (out)
        *out = NULL;
    if (!out || !script || !script->source) {
        dlock__redis_errf(errbuf, errlen, "eval: NULL %s",
                          !out ? "out" : !script ? "script" : "script source");
        return DLOCK_EINVAL;
    }
    if (nkeys > (size_t)INT_MAX - 3 || nargs > (size_t)INT_MAX - 3 - nkeys) {
        dlock__redis_errf(errbuf, errlen, "eval %s: too many arguments",
                          script->name ? script->name : "?");
        return DLOCK_EINVAL;
    }
    argc = 3 + nkeys + nargs;
    for (i = 0; i < nkeys + nargs; i++) {
        if (!argv || !argv[i]) {
            dlock__redis_errf(errbuf, errlen, "eval %s: argument %zu is NULL",
                              script->name ? script->name : "?", i);
            return DLOCK_EINVAL;
        }
    }
    if (argc > sizeof small_vec / sizeof small_vec[0]) {
        vec = malloc(argc * sizeof *vec);
        lens = malloc(argc * sizeof *lens);
        if (!vec || !lens) {
            rc = DLOCK_ENOMEM;
            dlock__redis_errf(errbuf, errlen, "eval: out of memory");
            goto done;
        }
    }
    snprintf(nkeys_str, sizeof nkeys_str, "%zu", nkeys);
    vec[2] = nkeys_str;
    lens[2] = strlen(nkeys_str);
    for (i = 0; i < nkeys + nargs; i++) {
        vec[3 + i] = argv[i];
        lens[3 + i] = argvlen ? argvlen[i] : strlen(argv[i]);
    }

    if (deadline_ms != INT64_MAX && dlock__redis_now_ms() >= deadline_ms) {
        /* Nothing is sent that nobody would wait for. */
        dlock__redis_errf(errbuf, errlen,
                          "eval %s: the call's time budget was spent before "
                          "it could be sent",
                          script->name ? script->name : "?");
        rc = DLOCK_ETIMEDOUT;
        goto done;
    }
    rc = 0;
    have_sha = sha_get(cache, script, sha);
    if (have_sha) {
        vec[0] = "EVALSHA";
        lens[0] = 7;
        vec[1] = sha;
        lens[1] = SHA_LEN;
        rc = dlock__redis_cmdbuf_add(&b, (int)argc, vec, lens);
        if (rc == 0) {
            sent = 1;
            rc = dlock__redis_node_call(node, &b, 1, &r, deadline_ms, errbuf,
                                        errlen);
        }
        if (rc == 0 && is_noscript(r)) {
            freeReplyObject(r);
            r = NULL;
            have_sha = 0;
        }
    }
    if (rc == 0 && !have_sha) {
        const char *load_argv[3] = {"SCRIPT", "LOAD", script->source};
        dlock__redis_cmdbuf_reset(&b);
        vec[0] = "EVAL";
        lens[0] = 4;
        vec[1] = script->source;
        lens[1] = strlen(script->source);
        rc = dlock__redis_cmdbuf_add(&b, 3, load_argv, NULL);
        if (rc == 0)
            rc = dlock__redis_cmdbuf_add(&b, (int)argc, vec, lens);
        if (rc == 0) {
            sent = 1;
            rc = dlock__redis_node_call(node, &b, 2, two, deadline_ms, errbuf,
                                        errlen);
        }
        if (rc == 0) {
            load = two[0];
            r = two[1];
        }
        if (rc == 0 && is_sha(load))
            sha_put(cache, script, load->str);
    }
    if (rc != 0) {
        /* A formatting failure sent nothing and has no detail yet. */
        if (!sent)
            dlock__redis_errf(errbuf, errlen, "eval: out of memory");
        goto done;
    }
    if (r->type == REDIS_REPLY_ERROR && dlock__redis_unavailable(r->str, r->len)) {
        /* Not the script's answer but the server refusing service for now:
         * a transport condition, retried like a lost connection. */
        dlock__redis_errf(errbuf, errlen, "redis %s: server unavailable: %.160s",
                          cfg->url.where, r->str);
        rc = DLOCK_ECONN;
        goto done;
    }
    rc = convert(out, r, 0);
    if (rc != 0)
        dlock__redis_errf(errbuf, errlen,
                          rc == DLOCK_ENOMEM
                              ? "eval %s: out of memory"
                              : "eval %s: reply nested too deep or of an "
                                "unknown type",
                          script->name ? script->name : "?");

done:
    if (r)
        freeReplyObject(r);
    if (load)
        freeReplyObject(load);
    dlock__redis_cmdbuf_free(&b);
    if (vec != small_vec)
        free((void *)vec);
    if (lens != small_len)
        free(lens);
    return rc;
}
