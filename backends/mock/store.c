/*
 * dlock mock — the store: lifecycle, keyspace, expiry and command dispatch.
 *
 * The commands themselves live in store_keys.c, store_string.c,
 * store_hash.c, store_list.c, store_zset.c and store_set.c; each exports a table that is
 * merged here into one sorted index.
 *
 * Expiry deviates from Redis in one deliberate detail: a key is gone at its
 * deadline (now >= expire), not one millisecond later. On a virtual clock
 * that only ever stops exactly at deadlines, Redis's "now > expire" would
 * leave a waiter woken at the lease's end looking at a live key with PTTL 0,
 * and it would spin without time ever moving.
 */
#include "store.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lua_bridge.h"
#include "pubsub.h"

/* ---- values ----------------------------------------------------------------- */

dlock__mstr *dlock__mstr_new(const char *s, size_t len)
{
    dlock__mstr *m;

    if (len > (size_t)-1 - sizeof(*m) - 1)
        return NULL;
    m = malloc(sizeof(*m) + len + 1);
    if (m == NULL)
        return NULL;
    m->len = len;
    if (len != 0)
        memcpy(m->buf, s, len);
    m->buf[len] = '\0';
    return m;
}

static void obj_free(void *p)
{
    dlock__obj *o = p;

    switch (o->type) {
    case DLOCK__OBJ_STRING:
        free(o->u.str);
        break;
    case DLOCK__OBJ_HASH:
        dlock__dict_clear(&o->u.hash);
        break;
    case DLOCK__OBJ_LIST:
        dlock__list_clear(&o->u.list);
        break;
    case DLOCK__OBJ_ZSET:
        dlock__zset_clear(&o->u.zset);
        break;
    case DLOCK__OBJ_SET:
        dlock__dict_clear(&o->u.set);
        break;
    }
    free(o);
}

/* ---- replies and parsing ---------------------------------------------------- */

dlock_reply *dlock__reply_error(const char *msg)
{
    return dlock_reply_string(DLOCK_REPLY_ERROR, msg, strlen(msg));
}

dlock_reply *dlock__reply_errorf(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof(buf))
        n = (int)sizeof(buf) - 1;
    return dlock_reply_string(DLOCK_REPLY_ERROR, buf, (size_t)n);
}

dlock_reply *dlock__reply_ok(void)
{
    return dlock_reply_string(DLOCK_REPLY_STATUS, "OK", 2);
}

dlock_reply *dlock__reply_bulk(const char *s, size_t len)
{
    return dlock_reply_string(DLOCK_REPLY_BULK, s, len);
}

/* Valkey's doubles: the fewest significant digits (1 to 17) that read
 * back as d, laid out as Valkey lays them out: an integer in full with up
 * to 7 zeros after its digits, a plain decimal down to 6 zeros after the
 * point (or with a scientific exponent below 4), else d.ddde+X. d is
 * finite and not 0. */
static int format_shortest(char *buf, size_t size, double d)
{
    char sci[40], digits[24], out[48];
    int prec, ndigits = 0, exp10, k, mag, n = 0, i;
    const char *p;

    for (prec = 0; prec < 17; prec++) {
        snprintf(sci, sizeof(sci), "%.*e", prec, d);
        if (strtod(sci, NULL) == d)
            break;
    }
    if (prec == 17)
        snprintf(sci, sizeof(sci), "%.16e", d);
    for (p = sci[0] == '-' ? sci + 1 : sci; *p != 'e'; p++)
        if (*p != '.')
            digits[ndigits++] = *p;
    exp10 = atoi(p + 1);
    while (ndigits > 1 && digits[ndigits - 1] == '0')
        ndigits--;
    k = exp10 - ndigits + 1; /* d = digits x 10^k */
    mag = exp10 < 0 ? -exp10 : exp10;
    if (d < 0)
        out[n++] = '-';
    if (k >= 0 && mag < ndigits + 7) {
        memcpy(out + n, digits, (size_t)ndigits);
        n += ndigits;
        for (i = 0; i < k; i++)
            out[n++] = '0';
    } else if (k < 0 && (k > -7 || mag < 4)) {
        int point = ndigits + k; /* digits before the point */

        if (point <= 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (i = 0; i < -point; i++)
                out[n++] = '0';
            memcpy(out + n, digits, (size_t)ndigits);
            n += ndigits;
        } else {
            memcpy(out + n, digits, (size_t)point);
            n += point;
            out[n++] = '.';
            memcpy(out + n, digits + point, (size_t)(ndigits - point));
            n += ndigits - point;
        }
    } else {
        out[n++] = digits[0];
        if (ndigits > 1) {
            out[n++] = '.';
            memcpy(out + n, digits + 1, (size_t)(ndigits - 1));
            n += ndigits - 1;
        }
        n += snprintf(out + n, sizeof(out) - (size_t)n, "e%c%d",
                      exp10 < 0 ? '-' : '+', mag);
    }
    out[n] = '\0';
    return snprintf(buf, size, "%s", out);
}

size_t dlock__format_double(const dlock_mock_store *st, char *buf, size_t size,
                            double d, int script_arg)
{
    int n;

    if (isinf(d))
        n = snprintf(buf, size, "%s", d > 0 ? "inf" : "-inf");
    else if (st->server == DLOCK_MOCK_VALKEY_8) {
        /* Integers (and -0 when a script passes it) in full within
         * +-2^62, where Valkey prints them as a long long. */
        if (isnan(d))
            n = snprintf(buf, size, "nan");
        else if (d == 0 && !script_arg)
            n = snprintf(buf, size, "%s", signbit(d) ? "-0" : "0");
        else if (d >= -4611686018427387903.0 && d <= 4611686018427387903.0 &&
                 d == (double)(long long)d)
            n = snprintf(buf, size, "%lld", (long long)d);
        else
            n = format_shortest(buf, size, d);
    } else if (script_arg && d > -1e15 && d < 1e15 && d == (double)(long long)d &&
               !(d == 0 && signbit(d))) {
        /* What "%.17g" prints, without printf's floating-point path
         * (~1 700 instructions a call, a fifth of a fair-lock pair). */
        n = snprintf(buf, size, "%lld", (long long)d);
    } else
        n = snprintf(buf, size, "%.17g", d);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

dlock_reply *dlock__reply_double(const dlock_mock_store *st, double d)
{
    char buf[64];
    size_t n = dlock__format_double(st, buf, sizeof(buf), d, 0);

    return dlock__reply_bulk(buf, n);
}

int dlock__parse_ll(const char *s, size_t len, long long *out)
{
    unsigned long long v = 0, limit;
    int neg = 0;
    size_t i = 0;

    if (len == 0 || len > 20)
        return 0;
    if (len == 1 && s[0] == '0') {
        *out = 0;
        return 1;
    }
    if (s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i >= len || s[i] < '1' || s[i] > '9')
        return 0;
    limit = neg ? (unsigned long long)LLONG_MAX + 1 : (unsigned long long)LLONG_MAX;
    for (; i < len; i++) {
        unsigned d;

        if (s[i] < '0' || s[i] > '9')
            return 0;
        d = (unsigned)(s[i] - '0');
        if (v > (limit - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg)
        *out = v == (unsigned long long)LLONG_MAX + 1 ? LLONG_MIN : -(long long)v;
    else
        *out = (long long)v;
    return 1;
}

int dlock__parse_double(const char *s, size_t len, double *out)
{
    char buf[128];
    char *end;
    double d;

    if (len == 0 || len >= sizeof(buf) || isspace((unsigned char)s[0]))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (strlen(buf) != len) /* an embedded NUL */
        return 0;
    errno = 0;
    d = strtod(buf, &end);
    if (*end != '\0' || isnan(d))
        return 0;
    /* Like Redis: overflow to infinity or underflow to zero is an error; a
     * written "inf" is not. */
    if (errno == ERANGE && (isinf(d) || d == 0))
        return 0;
    *out = d;
    return 1;
}

int dlock__parse_ld(const char *s, size_t len, long double *out)
{
    char buf[5 * 1024]; /* Redis's MAX_LONG_DOUBLE_CHARS: "%.17Lf" fits */
    char *end;
    long double v;

    if (len == 0 || len >= sizeof(buf))
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    if (isspace((unsigned char)buf[0]) || *end != '\0' || isnan(v) ||
        ((errno == ERANGE || errno == EINVAL) &&
         (v == HUGE_VAL || v == -HUGE_VAL || v == 0)))
        return 0;
    *out = v;
    return 1;
}

size_t dlock__format_ld(char *buf, size_t size, long double v)
{
    int n;

    if (isinf(v))
        n = snprintf(buf, size, "%s", v > 0 ? "inf" : "-inf");
    else
        n = snprintf(buf, size, "%.17Lf", v);
    if (n < 0 || (size_t)n >= size)
        return 0;
    if (!isinf(v) && strchr(buf, '.') != NULL) {
        while (buf[n - 1] == '0')
            n--;
        if (buf[n - 1] == '.')
            n--;
    }
    if (n == 2 && buf[0] == '-' && buf[1] == '0') {
        buf[0] = '0';
        n = 1;
    }
    buf[n] = '\0';
    return (size_t)n;
}

int dlock__arg_is(const dlock__cmd *c, int i, const char *word)
{
    size_t n = strlen(word), k;

    if (c->len[i] != n)
        return 0;
    for (k = 0; k < n; k++)
        if (tolower((unsigned char)c->argv[i][k]) != word[k])
            return 0;
    return 1;
}

/* ---- the keyspace ------------------------------------------------------------- */

static int expired(const dlock_mock_store *st, const dlock__obj *o)
{
    return o->expire >= 0 && o->expire <= st->now;
}

dlock__obj *dlock__key_lookup(dlock_mock_store *st, const char *key, size_t klen)
{
    dlock__dict_entry *e = dlock__dict_find(&st->keys, key, klen);

    if (e == NULL)
        return NULL;
    if (expired(st, e->val)) {
        dlock__dict_remove(&st->keys, e);
        return NULL;
    }
    return e->val;
}

int dlock__key_lookup_typed(dlock__cmd *c, int i, dlock__obj_type type,
                            dlock__obj **out)
{
    dlock__obj *o = dlock__key_lookup(c->st, c->argv[i], c->len[i]);

    *out = NULL;
    if (o != NULL && o->type != type)
        return -1;
    *out = o;
    return 0;
}

dlock__obj *dlock__key_create(dlock_mock_store *st, const char *key, size_t klen,
                              dlock__obj_type type)
{
    dlock__obj *o = calloc(1, sizeof(*o));

    if (o == NULL)
        return NULL;
    o->type = type;
    o->expire = -1;
    if (type == DLOCK__OBJ_HASH)
        dlock__dict_init(&o->u.hash, free);
    else if (type == DLOCK__OBJ_ZSET)
        dlock__dict_init(&o->u.zset.members, free);
    else if (type == DLOCK__OBJ_SET)
        dlock__dict_init(&o->u.set, NULL);
    if (dlock__dict_add(&st->keys, key, klen, o) == NULL) {
        free(o);
        return NULL;
    }
    return o;
}

int dlock__key_delete(dlock_mock_store *st, const char *key, size_t klen)
{
    /* An expired key does not count as deleted. */
    if (dlock__key_lookup(st, key, klen) == NULL)
        return 0;
    return dlock__dict_delete(&st->keys, key, klen);
}

void dlock__key_delete_if_empty(dlock_mock_store *st, const char *key,
                                size_t klen, dlock__obj *o)
{
    size_t n = 0;

    switch (o->type) {
    case DLOCK__OBJ_STRING:
        return;
    case DLOCK__OBJ_HASH:
        n = o->u.hash.size;
        break;
    case DLOCK__OBJ_LIST:
        n = o->u.list.len;
        break;
    case DLOCK__OBJ_ZSET:
        n = o->u.zset.len;
        break;
    case DLOCK__OBJ_SET:
        n = o->u.set.size;
        break;
    }
    if (n == 0)
        dlock__dict_delete(&st->keys, key, klen);
}

int dlock__key_set_string(dlock_mock_store *st, const char *key, size_t klen,
                          const char *val, size_t vlen, int keepttl)
{
    dlock__obj *o = dlock__key_lookup(st, key, klen);
    dlock__mstr *m = dlock__mstr_new(val, vlen);
    int64_t expire = -1;

    if (m == NULL)
        return -1;
    if (o != NULL && o->type == DLOCK__OBJ_STRING) {
        free(o->u.str);
        o->u.str = m;
        if (!keepttl)
            o->expire = -1;
        return 0;
    }
    if (o != NULL) {
        expire = o->expire;
        dlock__dict_delete(&st->keys, key, klen);
    }
    o = dlock__key_create(st, key, klen, DLOCK__OBJ_STRING);
    if (o == NULL) {
        free(m);
        return -1;
    }
    o->u.str = m;
    if (keepttl)
        o->expire = expire;
    return 0;
}

size_t dlock__key_purge_expired(dlock_mock_store *st)
{
    dlock__dict_entry *e, *next;

    for (e = st->keys.head; e != NULL; e = next) {
        next = e->next;
        if (expired(st, e->val))
            dlock__dict_remove(&st->keys, e);
    }
    return st->keys.size;
}

int dlock__expire_after(const dlock_mock_store *st, long long ttl_ms,
                        int64_t *out)
{
    /* Checked on both lines: Redis rejects what overflows its Unix-time
     * deadline, and the keyspace must not overflow its own. */
    int64_t hi = st->now > st->wall ? st->now : st->wall;
    int64_t lo = st->now < st->wall ? st->now : st->wall;

    if ((ttl_ms > 0 && hi > LLONG_MAX - ttl_ms) || (ttl_ms < 0 && lo < LLONG_MIN - ttl_ms))
        return -1;
    *out = st->now + ttl_ms;
    return 0;
}

int dlock__expire_at(const dlock_mock_store *st, long long unix_ms, int64_t *out)
{
    long long offset = (long long)(st->wall - st->now);

    /* Redis accepts any absolute time; one beyond the now line's range is
     * simply far past or far future. */
    if (offset > 0 && unix_ms < LLONG_MIN + offset)
        *out = LLONG_MIN;
    else if (offset < 0 && unix_ms > LLONG_MAX + offset)
        *out = LLONG_MAX;
    else
        *out = unix_ms - offset;
    return 0;
}

/* Drops a few expired keys that nobody touches any more, so that a long
 * test with many short leases does not grow without bound. */
static void sweep(dlock_mock_store *st)
{
    int budget = 16, buckets = 8;

    while (buckets-- > 0 && budget > 0 && st->keys.nbuckets > 0) {
        dlock__dict_entry *e, *next;

        if (st->sweep_cursor >= st->keys.nbuckets)
            st->sweep_cursor = 0;
        e = dlock__dict_bucket(&st->keys, st->sweep_cursor++);
        for (; e != NULL && budget > 0; e = next, budget--) {
            /* Removal may resize the table and relink chains; `next` still
             * points at a live entry, so at worst the walk wanders into
             * another bucket, which is harmless here. */
            next = e->chain;
            if (expired(st, e->val))
                dlock__dict_remove(&st->keys, e);
        }
    }
}

/* ---- publishing ------------------------------------------------------------- */

long long dlock__store_publish(dlock_mock_store *st, const char *channel,
                               size_t clen, const char *msg, size_t mlen)
{
    dlock__message *m = calloc(1, sizeof(*m));

    if (m == NULL)
        return -1;
    m->channel = malloc(clen + 1);
    m->msg = malloc(mlen + 1);
    if (m->channel == NULL || m->msg == NULL) {
        free(m->channel);
        free(m->msg);
        free(m);
        return -1;
    }
    memcpy(m->channel, channel, clen);
    m->channel[clen] = '\0';
    m->clen = clen;
    if (mlen != 0)
        memcpy(m->msg, msg, mlen);
    m->msg[mlen] = '\0';
    m->mlen = mlen;
    *st->outbox_tail = m;
    st->outbox_tail = &m->next;
    st->publish_count++;
    return (long long)dlock__pubsub_receivers(st->pubsub, channel, clen);
}

void dlock__store_begin(dlock_mock_store *st)
{
    pthread_mutex_lock(&st->mutex);
    st->now = dlock_clock_now(st->clock);
    st->wall = dlock_clock_wall(st->clock);
}

void dlock__store_end(dlock_mock_store *st)
{
    dlock__message *m = st->outbox, *next;

    st->outbox = NULL;
    st->outbox_tail = &st->outbox;
    pthread_mutex_unlock(&st->mutex);
    for (; m != NULL; m = next) {
        next = m->next;
        dlock__pubsub_deliver(st->pubsub, m->channel, m->clen, m->msg, m->mlen);
        free(m->channel);
        free(m->msg);
        free(m);
    }
}

/* ---- dispatch ------------------------------------------------------------------- */

static const dlock__cmd_def **cmd_index;
static size_t cmd_count;
static pthread_once_t cmd_once = PTHREAD_ONCE_INIT;

static int def_cmp(const void *a, const void *b)
{
    return strcmp((*(const dlock__cmd_def *const *)a)->name,
                  (*(const dlock__cmd_def *const *)b)->name);
}

static void build_index(void)
{
    static const struct {
        const dlock__cmd_def *defs;
        const size_t *n;
    } groups[] = {
        {dlock__cmds_keys, &dlock__ncmds_keys},
        {dlock__cmds_string, &dlock__ncmds_string},
        {dlock__cmds_hash, &dlock__ncmds_hash},
        {dlock__cmds_list, &dlock__ncmds_list},
        {dlock__cmds_zset, &dlock__ncmds_zset},
        {dlock__cmds_set, &dlock__ncmds_set},
    };
    size_t g, i, total = 0;
    const dlock__cmd_def **idx;

    for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        total += *groups[g].n;
    idx = malloc(total * sizeof(*idx));
    if (idx == NULL)
        return; /* every command will look unknown; retried never */
    total = 0;
    for (g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
        for (i = 0; i < *groups[g].n; i++)
            idx[total++] = &groups[g].defs[i];
    qsort(idx, total, sizeof(*idx), def_cmp);
    cmd_index = idx;
    cmd_count = total;
}

/* The index is process-wide and lives until exit: one small allocation. */
static const dlock__cmd_def *find_cmd(const char *name, size_t len)
{
    char low[32];
    size_t lo = 0, hi, i;

    pthread_once(&cmd_once, build_index);
    if (len == 0 || len >= sizeof(low))
        return NULL;
    for (i = 0; i < len; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[len] = '\0';
    if (strlen(low) != len)
        return NULL;
    hi = cmd_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(low, cmd_index[mid]->name);

        if (c == 0)
            return cmd_index[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

static dlock_reply *unknown_command(int argc, const char *const *argv,
                                    const size_t *len)
{
    char buf[512];
    size_t off;
    int i, n;

    n = snprintf(buf, sizeof(buf), "ERR unknown command '%.*s', with args beginning with: ",
                 (int)(len[0] > 128 ? 128 : len[0]), argv[0]);
    off = n < 0 ? 0 : (size_t)n;
    for (i = 1; i < argc && off < sizeof(buf) - 1; i++) {
        n = snprintf(buf + off, sizeof(buf) - off, "'%.*s' ",
                     (int)(len[i] > 128 ? 128 : len[i]), argv[i]);
        if (n < 0)
            break;
        off += (size_t)n;
    }
    if (off >= sizeof(buf))
        off = sizeof(buf) - 1;
    return dlock_reply_string(DLOCK_REPLY_ERROR, buf, off);
}

#define EXEC_STACK_ARGS 16

dlock_reply *dlock__store_exec(dlock_mock_store *st, int argc,
                               const char *const *argv, const size_t *argvlen,
                               int from_script)
{
    size_t stack_len[EXEC_STACK_ARGS];
    size_t *lens = NULL;
    const dlock__cmd_def *def;
    dlock__cmd c;
    dlock_reply *r;
    int i;

    if (argc <= 0)
        return dlock__reply_error("ERR empty command");
    if (argvlen == NULL) {
        lens = argc <= EXEC_STACK_ARGS ? stack_len
                                       : malloc((size_t)argc * sizeof(*lens));
        if (lens == NULL)
            return NULL;
        for (i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        argvlen = lens;
    }
    def = find_cmd(argv[0], argvlen[0]);
    if (def == NULL) {
        /* Redis's wording, so that code matching it works on both, then
         * the name: on the mock the command may exist on Redis. */
        r = from_script
                ? dlock__reply_errorf("ERR Unknown %scommand called from script "
                                      "(the dlock mock has no '%.*s'; dlock/mock.h "
                                      "lists what it runs)",
                                      st->server == DLOCK_MOCK_VALKEY_8 ? "" : "Redis ",
                                      (int)(argvlen[0] > 64 ? 64 : argvlen[0]), argv[0])
                : unknown_command(argc, argv, argvlen);
    } else if ((def->arity > 0 && argc != def->arity) ||
               (def->arity < 0 && argc < -def->arity)) {
        r = from_script
                ? dlock__reply_error(
                      st->server == DLOCK_MOCK_VALKEY_8
                          ? "ERR Wrong number of args calling command from script"
                          : "ERR Wrong number of args calling Redis command from script")
                : dlock__reply_errorf("ERR wrong number of arguments for '%s' command",
                                      def->name);
    } else {
        if ((++st->sweep_tick & 15) == 0)
            sweep(st);
        c.st = st;
        c.argc = argc;
        c.argv = argv;
        c.len = argvlen;
        r = def->fn(&c);
    }
    if (lens != NULL && lens != stack_len)
        free(lens);
    return r;
}

/* ---- public API ------------------------------------------------------------------ */

int dlock_mock_store_new(dlock_mock_store **out, dlock_clock *clock)
{
    dlock_mock_options o = DLOCK_MOCK_OPTIONS_INIT;

    o.clock = clock;
    return dlock_mock_store_new_opts(out, &o);
}

int dlock_mock_store_new_opts(dlock_mock_store **out, const dlock_mock_options *opts)
{
    static const dlock_mock_options defaults = DLOCK_MOCK_OPTIONS_INIT;
    dlock_mock_store *st;
    dlock_clock *clock;

    if (out != NULL)
        *out = NULL;
    if (opts == NULL)
        opts = &defaults;
    if (out == NULL || opts->version != DLOCK_MOCK_OPTIONS_VERSION ||
        (opts->server != DLOCK_MOCK_REDIS_7_0 && opts->server != DLOCK_MOCK_VALKEY_8))
        return DLOCK_EINVAL;
    clock = opts->clock;
    if (clock == NULL)
        clock = dlock_clock_realtime();
    if (clock->methods == NULL || clock->methods->now_ms == NULL)
        return DLOCK_EINVAL;
    st = calloc(1, sizeof(*st));
    if (st == NULL)
        return DLOCK_ENOMEM;
    if (pthread_mutex_init(&st->mutex, NULL) != 0) {
        free(st);
        return DLOCK_ENOMEM;
    }
    if (dlock__pubsub_new(&st->pubsub) != 0) {
        pthread_mutex_destroy(&st->mutex);
        free(st);
        return DLOCK_ENOMEM;
    }
    dlock__dict_init(&st->keys, obj_free);
    st->outbox_tail = &st->outbox;
    st->refs = 1;
    st->clock = clock;
    st->server = opts->server;
    if (clock->methods->ref != NULL)
        clock->methods->ref(clock);
    *out = st;
    return 0;
}

void dlock__store_ref(dlock_mock_store *st)
{
    pthread_mutex_lock(&st->mutex);
    st->refs++;
    pthread_mutex_unlock(&st->mutex);
}

void dlock_mock_store_free(dlock_mock_store *st)
{
    int last;

    if (st == NULL)
        return;
    pthread_mutex_lock(&st->mutex);
    last = --st->refs == 0;
    pthread_mutex_unlock(&st->mutex);
    if (!last)
        return;
    dlock__lua_free(st->lua);
    dlock__dict_clear(&st->keys);
    dlock__pubsub_free(st->pubsub);
    if (st->clock->methods->unref != NULL)
        st->clock->methods->unref(st->clock);
    pthread_mutex_destroy(&st->mutex);
    free(st);
}

size_t dlock_mock_store_dbsize(dlock_mock_store *st)
{
    size_t n;

    if (st == NULL)
        return 0;
    dlock__store_begin(st);
    n = dlock__key_purge_expired(st);
    dlock__store_end(st);
    return n;
}

uint64_t dlock_mock_store_publish_count(dlock_mock_store *st)
{
    uint64_t n;

    if (st == NULL)
        return 0;
    pthread_mutex_lock(&st->mutex);
    n = st->publish_count;
    pthread_mutex_unlock(&st->mutex);
    return n;
}

int dlock_mock_store_command(dlock_mock_store *st, dlock_reply **out, int argc,
                             const char *const *argv, const size_t *argvlen)
{
    int i;

    if (out != NULL)
        *out = NULL;
    if (st == NULL || out == NULL || argc <= 0 || argv == NULL)
        return DLOCK_EINVAL;
    for (i = 0; i < argc; i++)
        if (argv[i] == NULL)
            return DLOCK_EINVAL;
    dlock__store_begin(st);
    *out = dlock__store_exec(st, argc, argv, argvlen, 0);
    dlock__store_end(st);
    return *out != NULL ? 0 : DLOCK_ENOMEM;
}
