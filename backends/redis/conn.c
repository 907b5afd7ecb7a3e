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

/* ---- RESP formatting --------------------------------------------------- */

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
    d = realloc(b->data, cap);
    if (!d)
        return DLOCK_ENOMEM;
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

/* ---- failures ---------------------------------------------------------- */

static int is_timeout_errno(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK || e == ETIMEDOUT;
}

int dlock__redis_ctx_error(redisContext *c, int saved_errno,
                           const dlock__redis_config *cfg, char *errbuf,
                           size_t errlen)
{
    const char *where = cfg->url.where;
    if (!c) {
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", where);
        return DLOCK_ENOMEM;
    }
    switch (c->err) {
#ifdef REDIS_ERR_TIMEOUT
    case REDIS_ERR_TIMEOUT:
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: no reply within %lld ms", where,
                          (long long)cfg->command_timeout_ms);
        return DLOCK_ETIMEDOUT;
#endif
    case REDIS_ERR_IO:
        /* A socket timeout (SO_RCVTIMEO) surfaces as an I/O error whose
         * errno is EAGAIN; the message is the backup if errno moved. */
        if (is_timeout_errno(saved_errno) ||
            strstr(c->errstr, "temporarily unavailable")) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: no reply within %lld ms", where,
                              (long long)cfg->command_timeout_ms);
            return DLOCK_ETIMEDOUT;
        }
        dlock__redis_errf(errbuf, errlen, "redis %s: connection lost: %s",
                          where, c->errstr);
        return DLOCK_ECONN;
    case REDIS_ERR_EOF:
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: the server closed the connection", where);
        return DLOCK_ECONN;
    case REDIS_ERR_PROTOCOL:
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: protocol error (is it a Redis server?): "
                          "%s",
                          where, c->errstr);
        return DLOCK_EPROTO;
    case REDIS_ERR_OOM:
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", where);
        return DLOCK_ENOMEM;
    default:
        dlock__redis_errf(errbuf, errlen, "redis %s: %s", where,
                          c->errstr[0] ? c->errstr : "connection error");
        return DLOCK_ECONN;
    }
}

/* ---- I/O --------------------------------------------------------------- */

int dlock__redis_send(redisContext *c, const dlock__redis_cmdbuf *b,
                      const dlock__redis_config *cfg, char *errbuf,
                      size_t errlen)
{
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = send(c->fd, b->data + off, b->len - off, MSG_NOSIGNAL);
        if (n < 0) {
            int e = errno;
            if (e == EINTR)
                continue;
            if (is_timeout_errno(e)) {
                dlock__redis_errf(errbuf, errlen,
                                  "redis %s: could not send within %lld ms",
                                  cfg->url.where,
                                  (long long)cfg->command_timeout_ms);
                return DLOCK_ETIMEDOUT;
            }
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: connection lost: %s", cfg->url.where,
                              strerror(e));
            return DLOCK_ECONN;
        }
        off += (size_t)n;
    }
    return 0;
}

/* Waits until c's socket is readable or deadline_ms passes: 0, or
 * DLOCK_ETIMEDOUT / DLOCK_ECONN (detail written). */
static int wait_readable(redisContext *c, int64_t deadline_ms,
                         const dlock__redis_config *cfg, char *errbuf,
                         size_t errlen)
{
    for (;;) {
        int64_t left = deadline_ms - dlock__redis_now_ms();
        struct pollfd p;
        int n;

        if (left <= 0) {
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: no reply within the call's time "
                              "budget", cfg->url.where);
            return DLOCK_ETIMEDOUT;
        }
        p.fd = c->fd;
        p.events = POLLIN;
        p.revents = 0;
        n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR) {
            dlock__redis_errf(errbuf, errlen, "redis %s: poll: %s",
                              cfg->url.where, strerror(errno));
            return DLOCK_ECONN;
        }
    }
}

/* A reply hiredis already parsed, or one read after the socket became
 * readable before deadline_ms: the budgeted form of redisGetReply. */
static int get_reply_until(redisContext *c, void **r, int64_t deadline_ms,
                           const dlock__redis_config *cfg, char *errbuf,
                           size_t errlen, int *own_detail)
{
    int rc;

    *own_detail = 0;
    if (redisGetReplyFromReader(c, r) != REDIS_OK)
        return REDIS_ERR;
    while (!*r) {
        rc = wait_readable(c, deadline_ms, cfg, errbuf, errlen);
        if (rc != 0) {
            *own_detail = rc;
            return REDIS_ERR;
        }
        if (redisBufferRead(c) != REDIS_OK ||
            redisGetReplyFromReader(c, r) != REDIS_OK)
            return REDIS_ERR;
    }
    return REDIS_OK;
}

int dlock__redis_read(redisContext *c, redisReply **out,
                      const dlock__redis_config *cfg, int64_t deadline_ms,
                      char *errbuf, size_t errlen)
{
    void *r = NULL;
    int ok, own = 0;

    *out = NULL;
    errno = 0;
    /* The socket's own timeout (SO_RCVTIMEO) is the command timeout; a call
     * whose budget ends sooner waits with poll() instead, at the cost of one
     * more system call per reply. */
    if (deadline_ms != INT64_MAX &&
        (cfg->command_timeout_ms <= 0 ||
         deadline_ms < dlock__redis_now_ms() + cfg->command_timeout_ms))
        ok = get_reply_until(c, &r, deadline_ms, cfg, errbuf, errlen, &own);
    else
        ok = redisGetReply(c, &r);
    if (ok != REDIS_OK || !r) {
        int e = errno;
        if (r)
            freeReplyObject(r);
        if (own)
            return own;
        if (!c->err) {
            dlock__redis_errf(errbuf, errlen, "redis %s: no reply",
                              cfg->url.where);
            return DLOCK_ECONN;
        }
        return dlock__redis_ctx_error(c, e, cfg, errbuf, errlen);
    }
    *out = r;
    return 0;
}

int dlock__redis_conn_stale(redisContext *c)
{
    struct pollfd p;
    int n;
    p.fd = c->fd;
    p.events = POLLIN;
    p.revents = 0;
    do {
        n = poll(&p, 1, 0);
    } while (n < 0 && errno == EINTR);
    return n != 0;
}

/* ---- opening ----------------------------------------------------------- */

static struct timeval ms_to_tv(int64_t ms)
{
    struct timeval tv;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    return tv;
}

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

static int handshake(redisContext *c, const dlock__redis_config *cfg,
                     char *errbuf, size_t errlen)
{
    const dlock__redis_url *u = &cfg->url;
    dlock__redis_cmdbuf b = {0};
    const char *what[3];
    const char *expect[3];
    int n = 0, i, rc = 0;

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
    if (rc != 0) {
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", u->where);
        goto out;
    }
    rc = dlock__redis_send(c, &b, cfg, errbuf, errlen);
    /* Stop at the first error: replies come in order, so it is the cause
     * (a failed AUTH makes SELECT and PING fail with NOAUTH), and the
     * connection is discarded anyway. */
    for (i = 0; rc == 0 && i < n; i++) {
        redisReply *r;
        rc = dlock__redis_read(c, &r, cfg, INT64_MAX, errbuf, errlen);
        if (rc != 0)
            break;
        rc = check_handshake_reply(r, what[i], expect[i], cfg, errbuf, errlen);
        freeReplyObject(r);
    }
out:
    /* The buffer held the password. */
    if (b.data)
        memset(b.data, 0, b.cap);
    dlock__redis_cmdbuf_free(&b);
    return rc;
}

int dlock__redis_connect(redisContext **out, const dlock__redis_config *cfg,
                         int64_t budget_ms, char *errbuf, size_t errlen)
{
    const dlock__redis_url *u = &cfg->url;
    int64_t start = dlock__redis_now_ms(), hs_ms;
    redisContext *c;
    int rc;

    *out = NULL;
    if (budget_ms > 0) {
        struct timeval tv = ms_to_tv(budget_ms);
        c = u->is_unix ? redisConnectUnixWithTimeout(u->path, tv)
                       : redisConnectWithTimeout(u->host, u->port, tv);
    } else {
        c = u->is_unix ? redisConnectUnix(u->path)
                       : redisConnect(u->host, u->port);
    }
    if (!c) {
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory", u->where);
        return DLOCK_ENOMEM;
    }
    if (c->err) {
        if (c->err == REDIS_ERR_OOM) {
            rc = DLOCK_ENOMEM;
            dlock__redis_errf(errbuf, errlen, "redis %s: out of memory",
                              u->where);
        } else if (strstr(c->errstr, "timed out")) {
            rc = DLOCK_ETIMEDOUT;
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: connect timed out after %lld ms",
                              u->where, (long long)budget_ms);
        } else {
            rc = DLOCK_ECONN;
            dlock__redis_errf(errbuf, errlen, "redis %s: cannot connect: %s",
                              u->where, c->errstr);
        }
        redisFree(c);
        return rc;
    }
    /* The connection is not ready until the handshake is done, so the
     * handshake spends what is left of the connect budget; a caller then
     * waits at most connect + command timeout in all. */
    hs_ms = cfg->command_timeout_ms;
    if (budget_ms > 0) {
        hs_ms = budget_ms - (dlock__redis_now_ms() - start);
        if (hs_ms < 1)
            hs_ms = 1;
    }
    if (hs_ms > 0 && redisSetTimeout(c, ms_to_tv(hs_ms)) != REDIS_OK)
        goto sockopt_failed;
    rc = handshake(c, cfg, errbuf, errlen);
    if (rc == DLOCK_ETIMEDOUT)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: no reply to AUTH/SELECT/PING within "
                          "%lld ms",
                          u->where, (long long)hs_ms);
    if (rc != 0) {
        scrub(errbuf, u->password);
        redisFree(c);
        return rc;
    }
    /* A zero timeval means no timeout. */
    if (hs_ms != cfg->command_timeout_ms &&
        redisSetTimeout(c, ms_to_tv(cfg->command_timeout_ms)) != REDIS_OK)
        goto sockopt_failed;
    *out = c;
    return 0;

sockopt_failed:
    dlock__redis_errf(errbuf, errlen,
                      "redis %s: cannot set the socket timeout: %s", u->where,
                      c->errstr);
    redisFree(c);
    return DLOCK_ECONN;
}
