/*
 * dlock benchmarks — the raw floor: what the reentrant lock's two scripts
 * cost when sent by hand as EVALSHA on a plain hiredis connection, with no
 * library code in between. The library cannot beat this (it sends the same
 * scripts, one round trip each), so ratio = library / raw says how much the
 * library adds.
 *
 * The scripts are read at run time from objects/scripts/ (the very files the
 * library embeds at build time) and loaded with SCRIPT LOAD. The reentrant
 * scripts include no fragment, so the file text is the text the library
 * sends and both load under the same SHA1.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define SHA_LEN 40

struct bench_raw {
    const bench_config *cfg;
    char acquire_sha[SHA_LEN + 1];
    char release_sha[SHA_LEN + 1];
};

struct bench_raw_conn {
    redisContext *c;
    /* The two commands, argument vectors ready to send. */
    const char *acq[7], *rel[9];
    size_t acq_len[7], rel_len[9];
    char key[128], channel[160], owner[64];
};

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) != NULL) {
        *len = fread(buf, 1, (size_t)n, f);
        buf[*len] = '\0';
    }
    fclose(f);
    return buf;
}

/* The script as the library sends it: each "-- #include x.luainc" line
 * replaced by that fragment of the same folder (objects/scripts/embed.sh
 * does the same at build time). NULL on failure. */
static char *expand_includes(const char *dir, char *src, size_t *len)
{
    static const char tag[] = "-- #include ";
    char *at;

    while ((at = strstr(src, tag)) != NULL) {
        char path[1024], *frag, *out;
        size_t name_len = strcspn(at + sizeof tag - 1, "\r\n"), flen = 0;
        size_t head = (size_t)(at - src), tail_at = head + sizeof tag - 1 + name_len;

        snprintf(path, sizeof path, "%s/%.*s", dir, (int)name_len, at + sizeof tag - 1);
        frag = read_file(path, &flen);
        out = frag ? malloc(*len - (tail_at - head) + flen + 1) : NULL;
        if (!out) {
            free(frag);
            free(src);
            return NULL;
        }
        memcpy(out, src, head);
        memcpy(out + head, frag, flen);
        memcpy(out + head + flen, src + tail_at, *len - tail_at + 1);
        *len = head + flen + (*len - tail_at);
        free(frag);
        free(src);
        src = out;
    }
    return src;
}

static redisContext *connect_server(const bench_config *cfg)
{
    redisContext *c = redisConnect(cfg->redis_host, cfg->redis_port);

    if (!c || c->err) {
        fprintf(stderr, "bench: cannot connect to %s: %s\n", cfg->redis_url,
                c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return NULL;
    }
    return c;
}

static int load(redisContext *c, const bench_config *cfg, const char *file,
                char sha[SHA_LEN + 1])
{
    char path[1024];
    size_t len = 0;
    char *src;
    redisReply *r;
    int rc = -1;

    snprintf(path, sizeof path, "%s/%s", cfg->scripts_dir, file);
    src = read_file(path, &len);
    if (src)
        src = expand_includes(cfg->scripts_dir, src, &len);
    if (!src) {
        fprintf(stderr, "bench: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    r = redisCommand(c, "SCRIPT LOAD %b", src, len);
    if (r && r->type == REDIS_REPLY_STRING && r->len == SHA_LEN) {
        memcpy(sha, r->str, SHA_LEN + 1);
        rc = 0;
    } else {
        fprintf(stderr, "bench: SCRIPT LOAD %s failed: %s\n", path,
                r && r->str ? r->str : c->errstr);
    }
    if (r)
        freeReplyObject(r);
    free(src);
    return rc;
}

int bench_raw_new(bench_raw **out, const bench_config *cfg)
{
    bench_raw *r = calloc(1, sizeof(*r));
    redisContext *c;
    int rc = -1;

    *out = NULL;
    if (!r)
        return -1;
    r->cfg = cfg;
    c = connect_server(cfg);
    if (c) {
        rc = load(c, cfg, "reentrant_acquire.lua", r->acquire_sha);
        if (rc == 0)
            rc = load(c, cfg, "reentrant_release.lua", r->release_sha);
        redisFree(c);
    }
    if (rc != 0) {
        free(r);
        return -1;
    }
    *out = r;
    return 0;
}

void bench_raw_free(bench_raw *r)
{
    free(r);
}

int bench_raw_connect(bench_raw_conn **out, bench_raw *r, const char *name)
{
    static int next_owner = 1;
    bench_raw_conn *k = calloc(1, sizeof(*k));
    size_t i;

    *out = NULL;
    if (!k)
        return -1;
    k->c = connect_server(r->cfg);
    if (!k->c) {
        free(k);
        return -1;
    }
    snprintf(k->key, sizeof k->key, "%s", name);
    snprintf(k->channel, sizeof k->channel, "redisson_lock__channel:{%s}", name);
    /* Shaped like the library's owner ids (<uuid>:<thread>), so both send
     * arguments of the same size. */
    snprintf(k->owner, sizeof k->owner, "00000000-0000-4000-8000-%012x:1",
             __atomic_fetch_add(&next_owner, 1, __ATOMIC_RELAXED));
    k->acq[0] = "EVALSHA";
    k->acq[1] = r->acquire_sha;
    k->acq[2] = "1";
    k->acq[3] = k->key;
    k->acq[4] = BENCH_LEASE_STR;
    k->acq[5] = k->owner;
    k->acq[6] = "0"; /* no unanswered attempt before (the retry argument) */
    k->rel[0] = "EVALSHA";
    k->rel[1] = r->release_sha;
    k->rel[2] = "2";
    k->rel[3] = k->key;
    k->rel[4] = k->channel;
    k->rel[5] = "0";
    k->rel[6] = BENCH_LEASE_STR;
    k->rel[7] = k->owner;
    k->rel[8] = "publish"; /* the wake-up's command, as the library passes it */
    for (i = 0; i < 7; i++)
        k->acq_len[i] = strlen(k->acq[i]);
    for (i = 0; i < 9; i++)
        k->rel_len[i] = strlen(k->rel[i]);
    *out = k;
    return 0;
}

void bench_raw_close(bench_raw_conn *k)
{
    if (!k)
        return;
    redisFree(k->c);
    free(k);
}

int bench_raw_pair(bench_raw_conn *k, int64_t rtt_ns[2])
{
    redisReply *r;
    int64_t t0 = rtt_ns ? bench_now_ns() : 0, t1 = 0;
    int ok;

    r = redisCommandArgv(k->c, 7, k->acq, k->acq_len);
    ok = r && r->type == REDIS_REPLY_NIL;
    if (r)
        freeReplyObject(r);
    if (!ok)
        return -1;
    if (rtt_ns)
        t1 = bench_now_ns();
    r = redisCommandArgv(k->c, 9, k->rel, k->rel_len);
    ok = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r)
        freeReplyObject(r);
    if (rtt_ns) {
        rtt_ns[0] = t1 - t0;
        rtt_ns[1] = bench_now_ns() - t1;
    }
    return ok ? 0 : -1;
}

int64_t bench_raw_rtt_ns(bench_raw *r, int ms)
{
    enum { SLICES = 5 };
    bench_raw_conn *k;
    size_t cap = 1 << 15;
    int64_t *v = malloc(cap * sizeof(*v)), best = 0;
    int s;

    if (!v || bench_raw_connect(&k, r, "bench:raw:rtt") != 0) {
        free(v);
        return 0;
    }
    /* The round trip of a quiet moment: other load on the machine only ever
     * adds to it, so the least disturbed slice's median is the estimate. */
    for (s = 0; s < SLICES; s++) {
        int64_t end = bench_now_ns() + (int64_t)ms * 1000000 / SLICES, med;
        size_t n = 0;
        while (bench_now_ns() < end && n + 2 <= cap && bench_raw_pair(k, v + n) == 0)
            n += 2;
        med = bench_quantile(v, n, 0.5);
        if (med > 0 && (best == 0 || med < best))
            best = med;
    }
    bench_raw_close(k);
    free(v);
    return best;
}

int bench_raw_info(bench_raw *r, const char *section, char *out, size_t len)
{
    redisContext *c = connect_server(r->cfg);
    redisReply *rep;
    int rc = -1;

    if (!c)
        return -1;
    rep = redisCommand(c, "INFO %s", section);
    if (rep && rep->type == REDIS_REPLY_STRING) {
        snprintf(out, len, "%s", rep->str);
        rc = 0;
    }
    if (rep)
        freeReplyObject(rep);
    redisFree(c);
    return rc;
}

long long bench_raw_count(bench_raw *r, const char *command, const char *arg)
{
    redisContext *c = connect_server(r->cfg);
    redisReply *rep;
    long long n = -1;

    if (!c)
        return -1;
    rep = arg ? redisCommand(c, command, arg) : redisCommand(c, command);
    if (rep && rep->type == REDIS_REPLY_INTEGER)
        n = rep->integer;
    else if (rep && rep->type == REDIS_REPLY_ARRAY)
        n = (long long)rep->elements;
    if (rep)
        freeReplyObject(rep);
    redisFree(c);
    return n;
}

double bench_raw_server_cpu_s(bench_raw *r)
{
    char info[4096];
    const char *s, *u;

    if (bench_raw_info(r, "cpu", info, sizeof info) != 0)
        return -1;
    s = strstr(info, "used_cpu_sys:");
    u = strstr(info, "used_cpu_user:");
    if (!s || !u)
        return -1;
    return atof(s + 13) + atof(u + 14);
}
