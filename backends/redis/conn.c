/*
 * Redis backend: one connection (see conn.h).
 */
#include "conn.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "dlock/errors.h"
#include "core/wipe.h"
#include "safety.h"

/* ---- RESP formatting --------------------------------------------------- */

/* Grows by a copy rather than realloc, wiping the old memory: the
 * handshake's buffer holds AUTH's password when SELECT and PING are added
 * (growing is rare: buffers are reused). */
static int cmdbuf_reserve(dlock__redis_cmdbuf *b, size_t more)
{
    size_t cap;
    char *d;
    if (b->cap - b->len >= more)
        return 0;
    if (more > SIZE_MAX / 2 - b->len)
        return DLOCK_ENOMEM;
    cap = b->cap ? b->cap : 256;
    while (cap - b->len < more)
        cap *= 2;
    d = malloc(cap);
    if (!d)
        return DLOCK_ENOMEM;
    if (b->len > 0)
        memcpy(d, b->data, b->len);
    dlock__wipe(b->data, b->cap);
    free(b->data);
    b->data = d;
    b->cap = cap;
    return 0;
}

/* "<kind><n>\r\n", digits written by hand: a command has one header per
 * argument, and sprintf's ~800 instructions a call were half the user-space
 * instructions of an uncontended lock+unlock (tests/bench, callgrind). */
static void cmdbuf_header(dlock__redis_cmdbuf *b, char kind, size_t n)
{
    char digits[24];
    size_t k = 0;

    do {
        digits[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n > 0);
    b->data[b->len++] = kind;
    while (k > 0)
        b->data[b->len++] = digits[--k];
    b->data[b->len++] = '\r';
    b->data[b->len++] = '\n';
}

int dlock__redis_cmdbuf_add(dlock__redis_cmdbuf *b, int argc,
                            const char *const *argv, const size_t *argvlen)
{
    size_t need = 24;
    int i;
    /* Size first, so the whole command is written or none of it. */
    for (i = 0; i < argc; i++) {
        size_t n = argvlen ? argvlen[i] : strlen(argv[i]);
        if (n > SIZE_MAX / 2 - need)
            return DLOCK_ENOMEM;
        need += n + 26;
    }
    if (cmdbuf_reserve(b, need + 1) != 0)
        return DLOCK_ENOMEM;
    cmdbuf_header(b, '*', (size_t)argc);
    for (i = 0; i < argc; i++) {
        size_t n = argvlen ? argvlen[i] : strlen(argv[i]);
        cmdbuf_header(b, '$', n);
        memcpy(b->data + b->len, argv[i], n);
        b->len += n;
        b->data[b->len++] = '\r';
        b->data[b->len++] = '\n';
    }
    return 0;
}

int dlock__redis_cmdbuf_append(dlock__redis_cmdbuf *b, const char *data,
                               size_t len)
{
    if (cmdbuf_reserve(b, len) != 0)
        return DLOCK_ENOMEM;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return 0;
}

void dlock__redis_cmdbuf_reset(dlock__redis_cmdbuf *b)
{
    b->len = 0;
}

void dlock__redis_cmdbuf_free(dlock__redis_cmdbuf *b)
{
    if (!b)
        return;
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---- I/O --------------------------------------------------------------- */

/* Bytes asked of the stream per read: a lock script's reply is a few dozen
 * bytes, a restored subscriber's acknowledgements a few kB. */
#define READ_CHUNK 16384

void dlock__redis_conn_free(dlock__redis_conn *c)
{
    if (!c)
        return;
    dlock__redis_transport_close(c->t);
    if (c->reader)
        redisReaderFree(c->reader);
    free(c->rbuf);
    free(c);
}

/* c's read buffer (READ_CHUNK bytes), made at its first use; NULL: out
 * of memory (said in errbuf, the connection broken). */
static char *read_buffer(dlock__redis_conn *c, char *errbuf, size_t errlen)
{
    if (!c->rbuf && !(c->rbuf = malloc(READ_CHUNK))) {
        c->broken = 1;
        if (errbuf && errlen > 0)
            snprintf(errbuf, errlen, "out of memory for a read buffer");
    }
    return c->rbuf;
}

/* The sooner of deadline_ms and the command timeout from now, and whether
 * the call's budget is the one that ends first. */
static int64_t effective_deadline(const dlock__redis_config *cfg,
                                  int64_t deadline_ms, int *budgeted)
{
    int64_t cmd = dlock__redis_deadline(cfg->command_timeout_ms);
    *budgeted = deadline_ms < cmd;
    return *budgeted ? deadline_ms : cmd;
}

/* "<what> within the call's time budget" or "... within <timeout> ms". */
static void timeout_detail(const dlock__redis_config *cfg, int budgeted,
                           const char *what, char *errbuf, size_t errlen)
{
    if (budgeted)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: %s within the call's time budget",
                          cfg->url.where, what);
    else
        dlock__redis_errf(errbuf, errlen, "redis %s: %s within %lld ms",
                          cfg->url.where, what,
                          (long long)cfg->command_timeout_ms);
}

int dlock__redis_send(dlock__redis_conn *c, const dlock__redis_cmdbuf *b,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen)
{
    int budgeted, rc;
    int64_t deadline = effective_deadline(cfg, deadline_ms, &budgeted);

    rc = dlock__redis_transport_write(c->t, b->data, b->len, deadline, errbuf,
                                      errlen);
    if (rc == DLOCK_ETIMEDOUT)
        timeout_detail(cfg, budgeted, "could not send", errbuf, errlen);
    if (rc != 0)
        c->broken = 1;
    return rc;
}

/* ---- the reply cap ------------------------------------------------------ */

/* Whether a value of `cost` bytes more would take the reply being parsed
 * over the cap; if so the connection remembers why its parser fails. */
static int over_cap(dlock__redis_conn *c, size_t cost)
{
    if (cost > c->max_reply || c->reply_mem > c->max_reply - cost) {
        c->over = 1;
        return 1;
    }
    c->reply_mem += cost;
    return 0;
}

/* hiredis's value functions, counted: each value costs its struct, its
 * string, its element pointers. A refusal (NULL) is hiredis's "out of
 * memory": it stops parsing and frees what it built of the reply. */
static void *capped_string(const redisReadTask *task, char *str, size_t len)
{
    dlock__redis_conn *c = task->privdata;
    if (len > SIZE_MAX / 2 || over_cap(c, sizeof(redisReply) + len + 1))
        return NULL;
    return c->hiredis_fn->createString(task, str, len);
}

static void *capped_array(const redisReadTask *task, int elements)
{
    dlock__redis_conn *c = task->privdata;
    /* Each element takes at least 3 bytes of the reply ("+\r\n") and
     * its pointer: an array that claims more than the cap could carry is
     * refused before hiredis allocates its table. */
    size_t n = elements > 0 ? (size_t)elements : 0;
    if (n > c->max_reply / 3 ||
        over_cap(c, sizeof(redisReply) + n * sizeof(redisReply *)))
        return NULL;
    return c->hiredis_fn->createArray(task, elements);
}

static void *capped_integer(const redisReadTask *task, long long value)
{
    dlock__redis_conn *c = task->privdata;
    if (over_cap(c, sizeof(redisReply)))
        return NULL;
    return c->hiredis_fn->createInteger(task, value);
}

static void *capped_nil(const redisReadTask *task)
{
    dlock__redis_conn *c = task->privdata;
    if (over_cap(c, sizeof(redisReply)))
        return NULL;
    return c->hiredis_fn->createNil(task);
}

/* Puts the counting functions under c's reader (hiredis's own still build
 * the values; the other slots, if any, stay hiredis's). */
static void cap_reader(dlock__redis_conn *c, size_t max_reply)
{
    c->hiredis_fn = c->reader->fn;
    c->fn = *c->reader->fn;
    c->fn.createString = capped_string;
    c->fn.createArray = capped_array;
    c->fn.createInteger = capped_integer;
    c->fn.createNil = capped_nil;
    c->reader->fn = &c->fn;
    c->reader->privdata = c;
    c->max_reply = max_reply;
}

/* The length a bulk string's header announces, when the reader stopped
 * on one whose body has not come yet; else -1. hiredis (0.14 as 1.x)
 * consumes an item's type byte, then leaves the item unread until its
 * body is whole: a complete line of digits left at the reader's position
 * is such a header (a line-long item, +, -, :, would have been read). */
static long long pending_bulk(const redisReader *r)
{
    const char *p = r->buf + r->pos;
    size_t n = r->len - r->pos, i;
    long long len = 0;

    /* a length of more than 19 digits is hiredis's own protocol error */
    for (i = 0; i < n && i < 20 && p[i] >= '0' && p[i] <= '9'; i++)
        len = len * 10 + (p[i] - '0');
    if (i == 0 || i == 20 || i + 1 >= n || p[i] != '\r' || p[i + 1] != '\n')
        return -1;
    return len;
}

int dlock__redis_conn_next(dlock__redis_conn *c, redisReply **out)
{
    long long announced;
    void *r = NULL;
    uint64_t end;

    *out = NULL;
    if (redisReaderGetReply(c->reader, &r) != REDIS_OK) {
        c->broken = 1;
        return DLOCK_EPROTO;
    }
    /* A reply ends where the reader stopped (what it holds unparsed
     * belongs to the replies after it); one still incomplete holds every
     * byte fed since the last one ended. */
    end = r ? c->fed - (uint64_t)(c->reader->len - c->reader->pos) : c->fed;
    /* A bulk header is refused as soon as it announces more than the cap
     * can take, not once the body has come (or the call's time ran out
     * waiting for a body that never comes). */
    announced = r ? -1 : pending_bulk(c->reader);
    if (end - c->reply_at > c->max_reply ||
        c->reply_mem > c->max_reply - (size_t)(end - c->reply_at) ||
        (announced >= 0 && ((unsigned long long)announced > c->max_reply ||
                            c->reply_mem > c->max_reply - (size_t)announced))) {
        if (r)
            freeReplyObject(r);
        c->over = 1;
        c->broken = 1;
        return DLOCK_EPROTO;
    }
    if (r) {
        c->reply_at = end;
        c->reply_mem = 0;
    }
    *out = r;
    return 0;
}

void dlock__redis_conn_eproto(const dlock__redis_conn *c, const char *where,
                              char *errbuf, size_t errlen)
{
    if (c->over)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: reply larger than max_reply_bytes (%zu "
                          "bytes); connection dropped",
                          where, c->max_reply);
    else
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: protocol error (is it a Redis server?): "
                          "%s",
                          where, c->reader->errstr);
}

/* Gives the parser n bytes read; a failure leaves c->broken alone. */
static int feed_parser(dlock__redis_conn *c, const char *buf, size_t n,
                       char *errbuf, size_t errlen)
{
    if (n > 0 && redisReaderFeed(c->reader, buf, n) != REDIS_OK) {
        dlock__redis_errf(errbuf, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    c->fed += n;
    return 0;
}

static int feed(dlock__redis_conn *c, const char *buf, size_t n, char *errbuf,
                size_t errlen)
{
    int rc = feed_parser(c, buf, n, errbuf, errlen);
    if (rc != 0)
        c->broken = 1;
    return rc;
}

int dlock__redis_conn_parser_new(dlock__redis_conn **out, size_t max_reply)
{
    dlock__redis_conn *c = calloc(1, sizeof *c);

    *out = NULL;
    if (!c || !(c->reader = redisReaderCreate())) {
        free(c);
        return DLOCK_ENOMEM;
    }
    cap_reader(c, max_reply);
    *out = c;
    return 0;
}

int dlock__redis_conn_parse(dlock__redis_conn *c, const char *buf, size_t n)
{
    return feed(c, buf, n, NULL, 0);
}

int dlock__redis_conn_fill(dlock__redis_conn *c, char *errbuf, size_t errlen)
{
    char *buf = read_buffer(c, errbuf, errlen);
    size_t n;
    int rc;

    if (!buf)
        return DLOCK_ENOMEM;
    rc = dlock__redis_transport_read_now(c->t, buf, READ_CHUNK, &n, errbuf, errlen);
    if (rc != 0) {
        c->broken = 1;
        return rc;
    }
    return feed(c, buf, n, errbuf, errlen);
}

int dlock__redis_conn_fill_shared(dlock__redis_conn *c, int64_t deadline_ms,
                                  size_t *got, char *errbuf, size_t errlen)
{
    char *buf = read_buffer(c, errbuf, errlen);
    int rc;

    *got = 0;
    if (!buf)
        return DLOCK_ENOMEM;
    rc = dlock__redis_transport_read_shared(c->t, buf, READ_CHUNK, got, deadline_ms,
                                            errbuf, errlen);
    return rc != 0 ? rc : feed_parser(c, buf, *got, errbuf, errlen);
}

/* Reads until a whole reply is parsed or deadline_ms passes; timeouts get
 * no detail here (the callers know which limit it was). The deadline is
 * checked on every pass: a server that keeps sending without finishing a
 * reply (a trickle, a huge bulk) ends the wait at the deadline as one
 * that sends nothing does. */
static int read_until(dlock__redis_conn *c, redisReply **out,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen)
{
    char *buf = read_buffer(c, errbuf, errlen);
    int looked = 0;

    *out = NULL;
    if (!buf)
        return DLOCK_ENOMEM;
    for (;;) {
        size_t n;
        int rc;
        if (dlock__redis_conn_next(c, out) != 0) {
            dlock__redis_conn_eproto(c, cfg->url.where, errbuf, errlen);
            return DLOCK_EPROTO;
        }
        if (*out)
            return 0;
        /* Past the deadline, the first pass still takes one look (what
         * has come already is this call's), the next ones do not. */
        if (looked && deadline_ms != INT64_MAX &&
            dlock__redis_now_ms() >= deadline_ms) {
            c->broken = 1;
            return DLOCK_ETIMEDOUT;
        }
        looked = 1;
        rc = dlock__redis_transport_read(c->t, buf, READ_CHUNK, &n,
                                         deadline_ms, errbuf, errlen);
        if (rc == 0)
            rc = feed(c, buf, n, errbuf, errlen);
        if (rc != 0) {
            c->broken = 1;
            return rc;
        }
    }
}

int dlock__redis_read(dlock__redis_conn *c, redisReply **out,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen)
{
    int budgeted;
    int64_t deadline = effective_deadline(cfg, deadline_ms, &budgeted);
    int rc = read_until(c, out, cfg, deadline, errbuf, errlen);

    if (rc == DLOCK_ETIMEDOUT)
        timeout_detail(cfg, budgeted, "no reply", errbuf, errlen);
    return rc;
}

int dlock__redis_conn_stale(dlock__redis_conn *c)
{
    return dlock__redis_transport_stale(c->t);
}

/* ---- opening ----------------------------------------------------------- */

/* The server's own words may be quoted in a detail; they never contain the
 * password, but an odd server might echo it. */
static void scrub(char *buf, const char *secret)
{
    size_t n;
    char *p;
    if (!buf || !secret || (n = strlen(secret)) < 3)
        return;
    while ((p = strstr(buf, secret)) != NULL) {
        memset(p, '*', 3);
        memmove(p + 3, p + n, strlen(p + n) + 1);
    }
}

static int starts_with(const redisReply *r, const char *prefix)
{
    size_t n = strlen(prefix);
    return r->len >= n && strncmp(r->str, prefix, n) == 0;
}

static int is_auth_error(const redisReply *r)
{
    return starts_with(r, "WRONGPASS") || starts_with(r, "NOAUTH") ||
           starts_with(r, "NOPERM") || strstr(r->str, "invalid password") ||
           strstr(r->str, "invalid username-password pair") ||
           strstr(r->str, "without any password configured");
}

int dlock__redis_unavailable(const char *msg, size_t len)
{
    static const char *const prefixes[] = {
        "LOADING", "BUSY", "MASTERDOWN", "READONLY", "TRYAGAIN", "CLUSTERDOWN",
    };
    size_t i;

    for (i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        if (len >= n && strncmp(msg, prefixes[i], n) == 0 &&
            (len == n || msg[n] == ' '))
            return 1;
    }
    return strstr(msg, "max number of clients") != NULL;
}

int dlock__redis_unsent(const char *detail)
{
    return strstr(detail, ": cannot connect") != NULL ||
           strstr(detail, ": connect timed out") != NULL ||
           strstr(detail, ": connection down, ") != NULL;
}

static int check_handshake_reply(const redisReply *r, const char *what,
                                 const char *expect,
                                 const dlock__redis_config *cfg, char *errbuf,
                                 size_t errlen)
{
    const char *where = cfg->url.where;
    if (r->type == REDIS_REPLY_ERROR) {
        if (dlock__redis_unavailable(r->str, r->len)) {
            dlock__redis_errf(errbuf, errlen, "redis %s: %s refused: %s",
                              where, what, r->str);
            return DLOCK_ECONN;
        }
        if (is_auth_error(r)) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: authentication failed (%s): %s%s",
                              where, what, r->str,
                              starts_with(r, "NOAUTH")
                                  ? " (give the password in the URL)" : "");
            return DLOCK_EAUTH;
        }
        dlock__redis_errf(errbuf, errlen, "redis %s: %s refused: %s", where,
                          what, r->str);
        return strcmp(what, "AUTH") == 0 ? DLOCK_EAUTH : DLOCK_EPROTO;
    }
    if (r->type != REDIS_REPLY_STATUS || strcmp(r->str, expect) != 0) {
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: unexpected reply to %s (is it a Redis "
                          "server?)",
                          where, what);
        return DLOCK_EPROTO;
    }
    return 0;
}

static int handshake(dlock__redis_conn *c, const dlock__redis_config *cfg,
                     int64_t deadline_ms, dlock__redis_facts *probe,
                     char *errbuf, size_t errlen)
{
    const dlock__redis_url *u = &cfg->url;
    dlock__redis_cmdbuf b = {0};
    const char *what[3];
    const char *expect[3];
    redisReply *answers[4] = {NULL, NULL, NULL, NULL};
    int n = 0, i, rc = 0, nprobe = 0;

    if (u->password) {
        const char *argv[3];
        int argc = 0;
        argv[argc++] = "AUTH";
        if (u->user)
            argv[argc++] = u->user;
        argv[argc++] = u->password;
        rc = dlock__redis_cmdbuf_add(&b, argc, argv, NULL);
        what[n] = "AUTH";
        expect[n++] = "OK";
    }
    if (rc == 0 && u->db != 0) {
        char db[16];
        const char *argv[2];
        snprintf(db, sizeof db, "%d", u->db);
        argv[0] = "SELECT";
        argv[1] = db;
        rc = dlock__redis_cmdbuf_add(&b, 2, argv, NULL);
        what[n] = "SELECT";
        expect[n++] = "OK";
    }
    if (rc == 0) {
        const char *argv[1] = {"PING"};
        rc = dlock__redis_cmdbuf_add(&b, 1, argv, NULL);
        what[n] = "PING";
        expect[n++] = "PONG";
    }
    /* The probe rides in the same round trip, after PING (safety.h). */
    if (rc == 0 && probe &&
        (nprobe = dlock__redis_probe_add(&b, probe->from_info)) < 0)
        rc = DLOCK_ENOMEM;
    if (rc != 0) {
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", u->where);
        goto out;
    }
    rc = dlock__redis_transport_write(c->t, b.data, b.len, deadline_ms, errbuf,
                                      errlen);
    /* Stop at the first error: replies come in order, so it is the cause
     * (a failed AUTH makes SELECT and PING fail with NOAUTH), and the
     * connection is discarded anyway. */
    for (i = 0; rc == 0 && i < n; i++) {
        redisReply *r;
        rc = read_until(c, &r, cfg, deadline_ms, errbuf, errlen);
        if (rc != 0)
            break;
        rc = check_handshake_reply(r, what[i], expect[i], cfg, errbuf, errlen);
        freeReplyObject(r);
    }
    /* Every reply of the probe is read, whatever it says: the connection
     * stays in step; a refusal only leaves a fact unknown. */
    for (i = 0; rc == 0 && i < nprobe; i++)
        rc = read_until(c, &answers[i], cfg, deadline_ms, errbuf, errlen);
    if (rc == 0 && nprobe > 0)
        dlock__redis_probe_read(probe, answers, nprobe, u->where);
    else
        for (i = 0; i < nprobe; i++)
            if (answers[i])
                freeReplyObject(answers[i]);
out:
    /* The buffer held the password. */
    dlock__wipe(b.data, b.cap);
    dlock__redis_cmdbuf_free(&b);
    return rc;
}

int dlock__redis_connect(dlock__redis_conn **out,
                         const dlock__redis_config *cfg, int64_t budget_ms,
                         dlock__redis_facts *probe, char *errbuf,
                         size_t errlen)
{
    const dlock__redis_url *u = &cfg->url;
    int64_t start = dlock__redis_now_ms(), hs_deadline;
    dlock__redis_conn *c;
    int rc;

    *out = NULL;
    if (dlock__redis_conn_parser_new(&c, cfg->max_reply_bytes) != 0) {
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", u->where);
        return DLOCK_ENOMEM;
    }
    rc = dlock__redis_transport_open(&c->t, u, cfg->tls,
                                     budget_ms > 0 ? start + budget_ms
                                                   : INT64_MAX,
                                     errbuf, errlen);
    if (rc == DLOCK_ETIMEDOUT)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: connect timed out after %lld ms%s",
                          u->where, (long long)budget_ms,
                          cfg->tls ? " (TCP connect and TLS handshake)" : "");
    if (rc != 0)
        goto fail;
    if (dlock__redis_transport_set_timeout(c->t, cfg->command_timeout_ms) != 0) {
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: cannot set the socket timeout: %s",
                          u->where, strerror(errno));
        rc = DLOCK_ECONN;
        goto fail;
    }
    /* The connection is not ready until the handshake is done, so the
     * handshake spends what is left of the connect budget; a caller then
     * waits at most connect + command timeout in all. */
    if (budget_ms > 0) {
        hs_deadline = start + budget_ms;
        if (hs_deadline < dlock__redis_now_ms() + 1)
            hs_deadline = dlock__redis_now_ms() + 1;
    } else {
        hs_deadline = dlock__redis_deadline(cfg->command_timeout_ms);
    }
    rc = handshake(c, cfg, hs_deadline, probe, errbuf, errlen);
    if (rc == DLOCK_ETIMEDOUT)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: no reply to AUTH/SELECT/PING within "
                          "%lld ms",
                          u->where,
                          (long long)(budget_ms > 0 ? budget_ms
                                                    : cfg->command_timeout_ms));
    if (rc != 0) {
        scrub(errbuf, u->password);
        goto fail;
    }
    *out = c;
    return 0;

fail:
    dlock__redis_conn_free(c);
    return rc;
}
