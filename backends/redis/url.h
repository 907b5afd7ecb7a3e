/*
 * Redis backend (private): the parsed form of a redis:// or unix:// URL.
 *
 * Grammar (api/dlock/redis.h):
 *   redis://[[user]:password@]host[:port][/db]
 *   unix:///path/to/socket[?db=N]
 * host may be a bracketed IPv6 literal ("[::1]"). user and password are
 * percent-decoded (the unix path too). The password is never copied into an
 * error message; nothing before the last '@' of a redis:// URL is.
 */
#ifndef DLOCK_REDIS_URL_H
#define DLOCK_REDIS_URL_H

#include <stddef.h>

typedef struct dlock__redis_url {
    int is_unix;
    char *host;     /* TCP: without brackets; NULL for unix */
    int port;       /* TCP: 1..65535 */
    char *path;     /* unix: the socket path; NULL for TCP */
    char *user;     /* NULL: no ACL user (plain AUTH password) */
    char *password; /* NULL: no AUTH at all */
    int db;         /* 0 = no SELECT needed */
    char where[300]; /* "host:port" or the socket path, for messages */
} dlock__redis_url;

/* Parses url into *out (zeroed first). Returns 0, DLOCK_EINVAL (errbuf names
 * the bad part) or DLOCK_ENOMEM. On failure *out holds nothing to free, but
 * dlock__redis_url_clear is harmless on it. */
int dlock__redis_url_parse(dlock__redis_url *out, const char *url,
                           char *errbuf, size_t errlen);

/* Frees the strings (wiping the password first) and zeroes *u. */
void dlock__redis_url_clear(dlock__redis_url *u);

#endif /* DLOCK_REDIS_URL_H */
