/*
 * Redis backend: URL parsing.
 *
 * Error messages name the bad part (the host, the port, a parameter...)
 * and quote it only when no part of the URL can be a secret or a piece of
 * one: a URL with an '@' (user information) or a parameter named like a
 * secret (password, key...) gets nothing of itself quoted, since a raw
 * '@', '&', '?' or '#' inside a password moves what follows it into the
 * host, the path or the parameters (see shown()). Ports, database numbers
 * and parameter values are never quoted; a parameter the parser knows is
 * named by its own name. The scheme is quoted only when it looks like one
 * (it comes before anything that can hold a secret).
 *
 * The copies that held a password are wiped before they are freed
 * (core/wipe.h).
 */
#include "url.h"

#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "dlock/errors.h"
#include "dlock/redis.h"
#include "dlock/times.h"
#include "core/url_param.h"
#include "core/wipe.h"
#include "internal.h"

#define QUOTE_MAX 40 /* longest piece of user input quoted in a message */

/* Decimal digits only (no sign, no blanks), at least one, value <= max. */
static int parse_uint(const char *s, size_t n, long max, long *out)
{
    int64_t v;

    if (dlock__parse_decimal(s, n, max, &v) != 0)
        return -1;
    *out = (long)v;
    return 0;
}

static int scheme_is(const char *s, size_t n, const char *want)
{
    return strlen(want) == n && strncasecmp(s, want, n) == 0;
}

/* RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
static int looks_like_scheme(const char *s, size_t n)
{
    size_t i;
    if (n == 0 || n > 32 || !isalpha((unsigned char)s[0]))
        return 0;
    for (i = 1; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("+-.", s[i]))
            return 0;
    return 1;
}

static int valid_hostname(const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-._", s[i]))
            return 0;
    return 1;
}

static int valid_ipv6(const char *s, size_t n)
{
    size_t i;
    int colon = 0;
    for (i = 0; i < n; i++) {
        if (s[i] == ':')
            colon = 1;
        else if (!isalnum((unsigned char)s[i]) && !strchr(".%-_", s[i]))
            return 0;
    }
    return colon;
}

/* Whether s[0..n) holds, in any case, a word that names a secret. */
static int secretish(const char *s, size_t n)
{
    static const char *const words[] = {"pass", "pwd", "secret", "key", "token"};
    size_t i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < sizeof words / sizeof words[0]; j++)
            if (n - i >= strlen(words[j]) &&
                strncasecmp(s + i, words[j], strlen(words[j])) == 0)
                return 1;
    return 0;
}

/* Whether nothing of url may be quoted (dlock__redis_url.quiet): it holds
 * user information, or a parameter (or anything) named like a secret. */
static int may_hold_secret(const char *url)
{
    return strchr(url, '@') != NULL || secretish(url, strlen(url));
}

/* How a message shows s[0..n), a piece of the URL: " 'piece'" (at most
 * QUOTE_MAX bytes, control bytes as '?'), or "" when the URL may hold a
 * secret: then any piece may be a piece of the secret, moved by a raw '@',
 * '&', '?' or '#' inside it (or a forgotten '@'). buf: QUOTE_MAX + 4. */
static const char *shown(char *buf, const dlock__redis_url *u, const char *s,
                         size_t n)
{
    size_t i;
    if (u->quiet)
        return "";
    if (n > QUOTE_MAX)
        n = QUOTE_MAX;
    buf[0] = ' ';
    buf[1] = '\'';
    for (i = 0; i < n; i++)
        buf[2 + i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    buf[2 + n] = '\'';
    buf[3 + n] = '\0';
    return buf;
}

static int param_known(const char *s, size_t n);

/* Whether the user information s[0..n) holds "?name=" or "&name=" for a
 * parameter the parser knows or one named like a secret: then its '@' was
 * inside a query value (where it must be %40), and what follows it is not
 * a host but the rest of that value, which may be a password. */
static int holds_query(const char *s, size_t n)
{
    size_t i, k;
    for (i = 0; i < n; i++) {
        if (s[i] != '?' && s[i] != '&')
            continue;
        for (k = i + 1; k < n && (isalnum((unsigned char)s[k]) || s[k] == '_'); k++)
            ;
        if (k < n && s[k] == '=' && k > i + 1 &&
            (param_known(s + i + 1, k - i - 1) || secretish(s + i + 1, k - i - 1)))
            return 1;
    }
    return 0;
}

static int parse_userinfo(dlock__redis_url *u, const char *s, size_t n,
                          char *errbuf, size_t errlen)
{
    const char *colon = memchr(s, ':', n);
    size_t ulen;
    int rc;
    if (holds_query(s, n)) {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis URL: a raw '@' inside a query value "
                          "(percent-encode it: %%40)");
        return DLOCK_EINVAL;
    }
    if (!colon) {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis URL: credentials must be 'user:password@' "
                          "or ':password@' (percent-encode '@', ':' and '/' "
                          "inside them)");
        return DLOCK_EINVAL;
    }
    ulen = (size_t)(colon - s);
    if (ulen > 0) {
        rc = dlock__pct_decode(&u->user, s, ulen);
        if (rc != 0) {
            if (rc == DLOCK_EINVAL)
                dlock__redis_errf(errbuf, errlen,
                                  "bad redis URL: bad percent-encoding in the "
                                  "user name");
            return rc;
        }
    }
    rc = dlock__pct_decode(&u->password, colon + 1, n - ulen - 1);
    if (rc != 0) {
        if (rc == DLOCK_EINVAL)
            dlock__redis_errf(errbuf, errlen,
                              "bad redis URL: bad percent-encoding in the "
                              "password");
        return rc;
    }
    /* ":@" carries no credentials; "user:@" is an ACL user whose password
     * is empty (a "nopass" user), so AUTH must still be sent. */
    if (!u->user && u->password[0] == '\0') {
        free(u->password);
        u->password = NULL;
    }
    return 0;
}

static int parse_authority(dlock__redis_url *u, const char *rest,
                           int default_port, char *errbuf, size_t errlen)
{
    const char *at = strrchr(rest, '@');
    const char *p, *h, *hend;
    char q[QUOTE_MAX + 4];
    long v;
    int rc;

    u->port = default_port;
    if (at) {
        rc = parse_userinfo(u, rest, (size_t)(at - rest), errbuf, errlen);
        if (rc != 0)
            return rc;
        p = at + 1;
    } else {
        p = rest;
    }

    if (*p == '[') {
        h = p + 1;
        hend = strchr(h, ']');
        if (!hend) {
            dlock__redis_errf(errbuf, errlen,
                              "bad redis URL: unterminated '[' in the host");
            return DLOCK_EINVAL;
        }
        if (!valid_ipv6(h, (size_t)(hend - h))) {
            dlock__redis_errf(errbuf, errlen, "bad redis URL: bad IPv6 host%s",
                              shown(q, u, h, (size_t)(hend - h)));
            return DLOCK_EINVAL;
        }
        p = hend + 1;
        if (*p != '\0' && *p != ':' && *p != '/') {
            dlock__redis_errf(errbuf, errlen,
                              "bad redis URL: unexpected text%s after the "
                              "host",
                              shown(q, u, p, strlen(p)));
            return DLOCK_EINVAL;
        }
    } else {
        h = p;
        hend = p + strcspn(p, ":/?#");
        if (hend == h) {
            dlock__redis_errf(errbuf, errlen, "bad redis URL: empty host");
            return DLOCK_EINVAL;
        }
        if (!valid_hostname(h, (size_t)(hend - h))) {
            dlock__redis_errf(errbuf, errlen, "bad redis URL: bad host%s",
                              shown(q, u, h, (size_t)(hend - h)));
            return DLOCK_EINVAL;
        }
        p = hend;
    }
    u->host = strndup(h, (size_t)(hend - h));
    if (!u->host)
        return DLOCK_ENOMEM;

    if (*p == ':') {
        const char *ps = p + 1;
        size_t n = strcspn(ps, "/");
        /* Not quoted: "redis://user:password" (the '@' and host
         * forgotten) makes the password the port. */
        if (parse_uint(ps, n, 65535, &v) != 0 || v == 0) {
            dlock__redis_errf(errbuf, errlen,
                              "bad redis URL: bad port (expected 1..65535)");
            return DLOCK_EINVAL;
        }
        u->port = (int)v;
        p = ps + n;
    }
    if (*p == '/') {
        const char *ds = p + 1;
        size_t n = strlen(ds);
        /* "redis://host/" is common and means the default database. */
        if (n > 0) {
            if (parse_uint(ds, n, INT_MAX, &v) != 0) {
                dlock__redis_errf(errbuf, errlen,
                                  "bad redis URL: bad database number "
                                  "(expected a non-negative integer)");
                return DLOCK_EINVAL;
            }
            u->db = (int)v;
        }
        p = ds + n;
    }
    if (*p != '\0') {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis URL: unexpected text%s after the host "
                          "(expected [:port][/db])",
                          shown(q, u, p, strlen(p)));
        return DLOCK_EINVAL;
    }
    dlock__redis_url_where(u->where, sizeof u->where, u->host, u->port);
    return 0;
}

void dlock__redis_url_where(char *out, size_t len, const char *host, int port)
{
    snprintf(out, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* "[userinfo@]host[:port][,host[:port]...][/db]" (the sentinels, port
 * 26379 by default; or a cluster's seed nodes, port 6379 and no db): each
 * host goes through parse_authority (the last one with the "/db");
 * nothing quoted can be a secret (the user information is parsed first,
 * on its own). */
static int parse_addr_list(dlock__redis_url *u, const char *rest,
                           char *errbuf, size_t errlen)
{
    const char *kind = u->is_cluster ? "redis-cluster" : "redis-sentinel";
    const char *what = u->is_cluster ? "seed node" : "sentinel";
    int default_port = u->is_cluster ? 6379 : 26379;
    const char *at = strrchr(rest, '@');
    const char *p = at ? at + 1 : rest;
    int n = 1, i, rc;

    if (at) {
        rc = parse_userinfo(u, rest, (size_t)(at - rest), errbuf, errlen);
        if (rc != 0)
            return rc;
    }
    for (i = 0; p[i]; i++)
        if (p[i] == ',')
            n++;
    u->addrs = calloc((size_t)n, sizeof *u->addrs);
    if (!u->addrs)
        return DLOCK_ENOMEM;
    for (i = 0; i < n; i++) {
        size_t len = strcspn(p, ",");
        dlock__redis_url one;
        char *piece = strndup(p, len);
        if (!piece)
            return DLOCK_ENOMEM;
        memset(&one, 0, sizeof one);
        one.quiet = u->quiet;
        rc = piece[0] == '/' || piece[0] == '\0'
                 ? (dlock__redis_errf(errbuf, errlen,
                                      "bad %s URL: empty %s host (expected "
                                      "host[:port],...)",
                                      kind, what),
                    DLOCK_EINVAL)
                 : parse_authority(&one, piece, default_port, errbuf, errlen);
        free(piece);
        if (rc == 0 && one.db != 0 && u->is_cluster) {
            dlock__redis_errf(errbuf, errlen,
                              "bad redis-cluster URL: Redis Cluster has "
                              "only database 0 (no /db)");
            rc = DLOCK_EINVAL;
        } else if (rc == 0 && one.db != 0 && i + 1 < n) {
            dlock__redis_errf(errbuf, errlen,
                              "bad redis-sentinel URL: the database goes "
                              "after the last sentinel");
            rc = DLOCK_EINVAL;
        }
        if (rc != 0) {
            dlock__redis_url_clear(&one);
            return rc;
        }
        u->addrs[i].host = one.host;
        u->addrs[i].port = one.port;
        memcpy(u->addrs[i].where, one.where, sizeof one.where);
        u->db = one.db;
        u->naddrs++;
        one.host = NULL;
        dlock__redis_url_clear(&one);
        p += len + (p[len] == ',');
    }
    snprintf(u->where, sizeof u->where, "%s (%.250s%s)",
             u->is_cluster ? "cluster" : "sentinels", u->addrs[0].where,
             n > 1 ? ",..." : "");
    return 0;
}

/* ---- query parameters -------------------------------------------------- */

/* The string parameters: those of rediss:// URLs, after redis-cli's flags
 * (insecure, a flag, is handled on its own), and those of *-sentinel://
 * URLs (sentinelMasterId after Lettuce). */
#define NSTR_PARAMS (sizeof str_params / sizeof str_params[0])
static const struct str_param {
    const char *name;
    int sentinel;  /* 1: *-sentinel:// only; 0: TLS (rediss) only */
    size_t offset; /* of the char * in dlock__redis_url */
} str_params[] = {
    {"cacert", 0, offsetof(dlock__redis_url, tls.cacert)},
    {"cacertdir", 0, offsetof(dlock__redis_url, tls.cacertdir)},
    {"cert", 0, offsetof(dlock__redis_url, tls.cert)},
    {"key", 0, offsetof(dlock__redis_url, tls.key)},
    {"sni", 0, offsetof(dlock__redis_url, tls.sni)},
    {"sentinelMasterId", 1, offsetof(dlock__redis_url, master_name)},
    {"sentinel_user", 1, offsetof(dlock__redis_url, sentinel_user)},
    {"sentinel_password", 1, offsetof(dlock__redis_url, sentinel_password)},
};

/* The integer parameters of every scheme: replica-synced writes and the
 * reply cap (api/dlock/redis.h). */
#define NINT_PARAMS (sizeof int_params / sizeof int_params[0])
static const struct int_param {
    const char *name;
    long long min, max;
} int_params[] = {
    {"sync_replicas", -1, DLOCK_SYNC_REPLICAS_MAX},
    {"sync_timeout_ms", 1, DLOCK_TIME_MAX_MS},
    {"max_reply_bytes", DLOCK_REDIS_MAX_REPLY_MIN, DLOCK_REDIS_MAX_REPLY_LIMIT},
    {"cluster_max_nodes", 1, DLOCK_REDIS_CLUSTER_NODES_LIMIT},
};

/* Sets integer parameter i once, within its bounds. */
static int set_int(dlock__redis_url *u, size_t i, const char *kind,
                   const char *vs, size_t vn, char *errbuf, size_t errlen)
{
    const struct int_param *ip = &int_params[i];
    long long *slot = i == 0   ? &u->sync_replicas
                      : i == 1 ? &u->sync_timeout_ms
                      : i == 2 ? &u->max_reply_bytes
                               : &u->cluster_max_nodes;
    int given = i == 0 ? u->sync_replicas_given
                : i == 1 ? *slot != -1
                         : *slot != 0;
    int neg = vn > 0 && vs[0] == '-';
    long v;

    if (given) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' given twice", kind,
                          ip->name);
        return DLOCK_EINVAL;
    }
    if (parse_uint(vs + neg, vn - (size_t)neg, LONG_MAX, &v) != 0 ||
        (neg ? -(long long)v : (long long)v) < ip->min ||
        (neg ? -(long long)v : (long long)v) > ip->max) {
        dlock__redis_errf(errbuf, errlen,
                          "bad %s URL: '%s' must be an integer %lld..%lld",
                          kind, ip->name, ip->min, ip->max);
        return DLOCK_EINVAL;
    }
    *slot = neg ? -(long long)v : (long long)v;
    if (i == 0)
        u->sync_replicas_given = 1;
    return 0;
}

/* Sets a string parameter once: non-empty, percent-decoded; a message
 * names the parameter, never its value. */
static int set_string(char **slot, const char *name, const char *kind,
                      const char *vs, size_t vn, char *errbuf, size_t errlen)
{
    int rc;
    if (*slot) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' given twice", kind,
                          name);
        return DLOCK_EINVAL;
    }
    if (vn == 0) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' is empty", kind,
                          name);
        return DLOCK_EINVAL;
    }
    rc = dlock__pct_decode(slot, vs, vn);
    if (rc == DLOCK_EINVAL)
        dlock__redis_errf(errbuf, errlen,
                          "bad %s URL: bad percent-encoding in '%s'", kind,
                          name);
    return rc;
}

static int name_is(const char *s, size_t n, const char *want)
{
    return strlen(want) == n && strncmp(s, want, n) == 0;
}

/* connections=N or queue_max=N: 1..max, given once (0: not yet). */
static int set_count(int *slot, const char *name, long max, const char *kind,
                     const char *vs, size_t vn, char *errbuf, size_t errlen)
{
    long v;
    if (*slot != 0) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' given twice", kind,
                          name);
        return DLOCK_EINVAL;
    }
    if (parse_uint(vs, vn, max, &v) != 0 || v < 1) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' must be 1..%ld",
                          kind, name, max);
        return DLOCK_EINVAL;
    }
    *slot = (int)v;
    return 0;
}

/* A flag: 0 or 1, given once (-1: not yet); what says what each means. */
static int set_flag(int *slot, const char *name, const char *what,
                    const char *kind, const char *vs, size_t vn, char *errbuf,
                    size_t errlen)
{
    if (*slot != -1) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' given twice", kind,
                          name);
        return DLOCK_EINVAL;
    }
    if (vn != 1 || (vs[0] != '0' && vs[0] != '1')) {
        dlock__redis_errf(errbuf, errlen, "bad %s URL: '%s' must be %s", kind,
                          name, what);
        return DLOCK_EINVAL;
    }
    *slot = vs[0] - '0';
    return 0;
}

/* multiplex=0|1, connections=N and queue_max=N, the connections' mode
 * (any scheme). */
static int set_conn_param(dlock__redis_url *u, const char *kind,
                          const char *ps, size_t klen, const char *vs,
                          size_t vn, char *errbuf, size_t errlen)
{
    if (name_is(ps, klen, "multiplex"))
        return set_flag(&u->multiplex, "multiplex",
                        "0 (a pool of connections) or 1 (shared connections)",
                        kind, vs, vn, errbuf, errlen);
    if (name_is(ps, klen, "queue_max"))
        return set_count(&u->queue_max, "queue_max",
                         DLOCK__REDIS_QUEUE_MAX_LIMIT, kind, vs, vn, errbuf,
                         errlen);
    return set_count(&u->connections, "connections",
                     DLOCK__REDIS_CONNECTIONS_MAX, kind, vs, vn, errbuf,
                     errlen);
}

/* Whether s[0..n) is the name of a parameter the parser knows. */
static int param_known(const char *s, size_t n)
{
    static const char *const others[] = {"multiplex", "connections", "queue_max",
                                         "insecure", "db", "lazy_connect",
                                         "password_file"};
    size_t i;
    for (i = 0; i < NSTR_PARAMS; i++)
        if (name_is(s, n, str_params[i].name))
            return 1;
    for (i = 0; i < NINT_PARAMS; i++)
        if (name_is(s, n, int_params[i].name))
            return 1;
    for (i = 0; i < sizeof others / sizeof others[0]; i++)
        if (name_is(s, n, others[i]))
            return 1;
    return 0;
}

/* The parameters a URL like u takes, "a, b, ... or z", from the tables
 * above and the client's (dlock__client_url_params): for the hint on an
 * unknown one, which then cannot leave one out. */
static void accepted_params(char *buf, size_t len, const dlock__redis_url *u)
{
    const char *names[NSTR_PARAMS + NINT_PARAMS + 16];
    size_t n = 0, i, off = 0;

    if (u->is_unix)
        names[n++] = "db=N";
    for (i = 0; i < NSTR_PARAMS && !u->is_unix; i++)
        if (!str_params[i].sentinel || u->is_sentinel)
            names[n++] = str_params[i].name;
    if (!u->is_unix)
        names[n++] = "insecure";
    for (i = 0; i < NINT_PARAMS; i++)
        names[n++] = int_params[i].name;
    names[n++] = "multiplex";
    names[n++] = "connections";
    names[n++] = "queue_max";
    names[n++] = "lazy_connect";
    names[n++] = "password_file";
    for (i = 0; dlock__client_url_params[i]; i++)
        names[n++] = dlock__client_url_params[i];
    buf[0] = '\0';
    for (i = 0; i < n && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, "%s%s",
                                i == 0 ? "" : i + 1 < n ? ", " : u->is_unix ? " and " : " or ",
                                names[i]);
}

/* One "name=value" of a query: sets the field it names. Messages never
 * quote a value, and a name only through shown() (a raw '&' inside a
 * secret value makes its rest a name). */
static int set_param(dlock__redis_url *u, const char *kind, const char *ps,
                     size_t n, int *have_db, char *errbuf, size_t errlen)
{
    size_t klen = strcspn(ps, "=&");
    const char *vs = ps + klen + 1;
    size_t vn = klen < n ? n - klen - 1 : 0;
    char q[QUOTE_MAX + 4], all[512];
    size_t i;
    long v;

    if (klen >= n) {
        dlock__redis_errf(errbuf, errlen,
                          "bad %s URL: parameter%s has no value (expected "
                          "name=value; an '&' inside a value is %%26)",
                          kind, shown(q, u, ps, klen));
        return DLOCK_EINVAL;
    }
    for (i = 0; i < NINT_PARAMS; i++)
        if (name_is(ps, klen, int_params[i].name))
            return set_int(u, i, kind, vs, vn, errbuf, errlen);
    if (name_is(ps, klen, "multiplex") || name_is(ps, klen, "connections") ||
        name_is(ps, klen, "queue_max"))
        return set_conn_param(u, kind, ps, klen, vs, vn, errbuf, errlen);
    if (name_is(ps, klen, "lazy_connect"))
        return set_flag(&u->lazy_connect, "lazy_connect",
                        "0 (connect when the backend is made) or 1 (connect "
                        "on first use)",
                        kind, vs, vn, errbuf, errlen);
    if (name_is(ps, klen, "password_file"))
        return set_string(&u->password_file, "password_file", kind, vs, vn, errbuf,
                          errlen);
    if (u->is_unix && name_is(ps, klen, "db")) {
        if (*have_db) {
            dlock__redis_errf(errbuf, errlen, "bad unix URL: 'db' given twice");
            return DLOCK_EINVAL;
        }
        if (parse_uint(vs, vn, INT_MAX, &v) != 0) {
            dlock__redis_errf(errbuf, errlen,
                              "bad unix URL: bad database number (expected "
                              "a non-negative integer)");
            return DLOCK_EINVAL;
        }
        u->db = (int)v;
        *have_db = 1;
        return 0;
    }
    if (u->is_unix) {
        accepted_params(all, sizeof all, u);
        dlock__redis_errf(errbuf, errlen,
                          "bad unix URL: unknown parameter%s (only %s are supported; "
                          "TLS needs rediss://)",
                          shown(q, u, ps, klen), all);
        return DLOCK_EINVAL;
    }
    for (i = 0; i < NSTR_PARAMS; i++)
        if (name_is(ps, klen, str_params[i].name))
            break;
    if (i == NSTR_PARAMS && !name_is(ps, klen, "insecure")) {
        accepted_params(all, sizeof all, u);
        dlock__redis_errf(errbuf, errlen, "bad %s URL: unknown parameter%s (expected %s%s)",
                          kind, shown(q, u, ps, klen), all,
                          name_is(ps, klen, "db")
                              ? "; the database goes in the path: /N" : "");
        return DLOCK_EINVAL;
    }
    if (i < NSTR_PARAMS && str_params[i].sentinel && !u->is_sentinel) {
        dlock__redis_errf(errbuf, errlen,
                          "bad %s URL: '%s' needs a redis-sentinel:// or "
                          "rediss-sentinel:// URL",
                          kind, str_params[i].name);
        return DLOCK_EINVAL;
    }
    if ((i == NSTR_PARAMS || !str_params[i].sentinel) && !u->is_tls) {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis URL: TLS parameter '%s' needs a "
                          "rediss:// URL",
                          i < NSTR_PARAMS ? str_params[i].name : "insecure");
        return DLOCK_EINVAL;
    }
    if (i < NSTR_PARAMS)
        return set_string((char **)((char *)u + str_params[i].offset),
                          str_params[i].name, kind, vs, vn, errbuf, errlen);
    return set_flag(&u->tls.insecure, "insecure", "0 or 1", kind, vs, vn,
                    errbuf, errlen);
}

/* Parses "name=value&name=value" (q points at the '?'). */
static int parse_query(dlock__redis_url *u, const char *kind, const char *q,
                       char *errbuf, size_t errlen)
{
    int have_db = 0, rc;
    while (q) {
        const char *ps = q + 1;
        size_t n = strcspn(ps, "&");
        rc = set_param(u, kind, ps, n, &have_db, errbuf, errlen);
        if (rc != 0)
            return rc;
        q = ps[n] == '&' ? ps + n : NULL;
    }
    return 0;
}

/* The query starts at the first '?' after the last '@' before it: a
 * password may hold a raw '?', as it always could; an '@' inside a query
 * value must be percent-encoded (%40). */
static int parse_tcp(dlock__redis_url *u, const char *rest, char *errbuf,
                     size_t errlen)
{
    const char *q = dlock__url_query(rest);
    char *head;
    int rc;

    if (!q) {
        if (u->is_sentinel) {
            dlock__redis_errf(errbuf, errlen,
                              "bad redis-sentinel URL: sentinelMasterId=NAME "
                              "is required (the master's name in the "
                              "sentinels' configuration)");
            return DLOCK_EINVAL;
        }
        return u->is_cluster ? parse_addr_list(u, rest, errbuf, errlen)
                             : parse_authority(u, rest, 6379, errbuf, errlen);
    }
    head = strndup(rest, (size_t)(q - rest));
    if (!head)
        return DLOCK_ENOMEM;
    rc = u->is_sentinel || u->is_cluster
             ? parse_addr_list(u, head, errbuf, errlen)
             : parse_authority(u, head, 6379, errbuf, errlen);
    dlock__wipe_free(head); /* it held the password */
    if (rc == 0)
        rc = parse_query(u,
                         u->is_sentinel  ? (u->is_tls ? "rediss-sentinel"
                                                      : "redis-sentinel")
                         : u->is_cluster ? (u->is_tls ? "rediss-cluster"
                                                      : "redis-cluster")
                         : u->is_tls     ? "rediss"
                                         : "redis",
                         q, errbuf, errlen);
    if (rc == 0 && u->is_sentinel && !u->master_name) {
        dlock__redis_errf(errbuf, errlen,
                          "bad redis-sentinel URL: sentinelMasterId=NAME is "
                          "required (the master's name in the sentinels' "
                          "configuration)");
        rc = DLOCK_EINVAL;
    }
    return rc;
}

static int parse_unix(dlock__redis_url *u, const char *rest, char *errbuf,
                      size_t errlen)
{
    const char *q = strchr(rest, '?');
    size_t plen = q ? (size_t)(q - rest) : strlen(rest);
    int rc;

    if (plen == 0) {
        dlock__redis_errf(errbuf, errlen,
                          "bad unix URL: empty socket path "
                          "(expected unix:///path/to/socket)");
        return DLOCK_EINVAL;
    }
    if (rest[0] != '/') {
        dlock__redis_errf(errbuf, errlen,
                          "bad unix URL: the socket path must be absolute "
                          "(unix:///path/to/socket); no host or credentials "
                          "go before it");
        return DLOCK_EINVAL;
    }
    rc = dlock__pct_decode(&u->path, rest, plen);
    if (rc != 0) {
        if (rc == DLOCK_EINVAL)
            dlock__redis_errf(errbuf, errlen,
                              "bad unix URL: bad percent-encoding in the "
                              "socket path");
        return rc;
    }
    if (strlen(u->path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        dlock__redis_errf(errbuf, errlen,
                          "bad unix URL: socket path too long (at most %zu "
                          "bytes)",
                          sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return DLOCK_EINVAL;
    }
    rc = parse_query(u, "unix", q, errbuf, errlen);
    if (rc != 0)
        return rc;
    snprintf(u->where, sizeof u->where, "%s", u->path);
    return 0;
}

int dlock__redis_url_parse(dlock__redis_url *out, const char *url,
                           char *errbuf, size_t errlen)
{
    const char *sep;
    size_t slen;
    int rc;

    memset(out, 0, sizeof *out);
    if (!url) {
        dlock__redis_errf(errbuf, errlen, "bad URL: NULL");
        return DLOCK_EINVAL;
    }
    if (url[0] == '\0') {
        dlock__redis_errf(errbuf, errlen, "bad URL: empty string");
        return DLOCK_EINVAL;
    }
    sep = strstr(url, "://");
    slen = sep ? (size_t)(sep - url) : 0;
    if (!sep || !looks_like_scheme(url, slen)) {
        dlock__redis_errf(errbuf, errlen,
                          "bad URL: missing scheme (expected redis://..., "
                          "rediss://..., unix://..., redis-sentinel://... or "
                          "redis-cluster://...)");
        return DLOCK_EINVAL;
    }
    out->quiet = may_hold_secret(url);
    out->tls.insecure = -1;
    out->sync_replicas = -1;
    out->sync_timeout_ms = -1;
    out->multiplex = -1;
    out->lazy_connect = -1;
    if (scheme_is(url, slen, "redis") || scheme_is(url, slen, "rediss")) {
        out->is_tls = slen == 6;
        rc = parse_tcp(out, sep + 3, errbuf, errlen);
    } else if (scheme_is(url, slen, "redis-sentinel") ||
               scheme_is(url, slen, "rediss-sentinel")) {
        out->is_sentinel = 1;
        out->is_tls = slen == 15;
        rc = parse_tcp(out, sep + 3, errbuf, errlen);
    } else if (scheme_is(url, slen, "redis-cluster") ||
               scheme_is(url, slen, "rediss-cluster")) {
        out->is_cluster = 1;
        out->is_tls = slen == 14;
        rc = parse_tcp(out, sep + 3, errbuf, errlen);
    } else if (scheme_is(url, slen, "unix")) {
        out->is_unix = 1;
        rc = parse_unix(out, sep + 3, errbuf, errlen);
    } else {
        dlock__redis_errf(errbuf, errlen,
                          "bad URL: unknown scheme '%.*s' (expected redis://, "
                          "rediss://, unix://, redis-sentinel://, "
                          "rediss-sentinel://, redis-cluster:// or "
                          "rediss-cluster://)",
                          (int)slen, url);
        return DLOCK_EINVAL;
    }
    if (rc != 0)
        dlock__redis_url_clear(out);
    return rc;
}

void dlock__redis_tls_params_clear(dlock__redis_tls_params *p)
{
    free(p->cacert);
    free(p->cacertdir);
    free(p->cert);
    free(p->key);
    free(p->sni);
    memset(p, 0, sizeof *p);
    p->insecure = -1;
}

void dlock__redis_url_clear(dlock__redis_url *u)
{
    int i;
    if (!u)
        return;
    dlock__wipe_free(u->password);
    dlock__wipe_free(u->sentinel_password);
    dlock__wipe_free(u->user);
    free(u->master_name);
    free(u->sentinel_user);
    free(u->password_file);
    for (i = 0; i < u->naddrs; i++)
        free(u->addrs[i].host);
    free(u->addrs);
    free(u->host);
    free(u->path);
    dlock__redis_tls_params_clear(&u->tls);
    memset(u, 0, sizeof *u);
}
