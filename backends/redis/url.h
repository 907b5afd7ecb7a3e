/*
 * Redis backend (private): the parsed form of a redis://, rediss://,
 * unix://, redis-sentinel://, rediss-sentinel://, redis-cluster:// or
 * rediss-cluster:// URL.
 *
 * Grammar (api/dlock/redis.h):
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://[[user]:password@]host[:port][/db][?tls-param=value&...]
 *   unix:///path/to/socket[?db=N]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
 *       ?sentinelMasterId=NAME[&sentinel_user=U][&sentinel_password=P]
 *   rediss-sentinel://... the same, plus the TLS parameters
 *   redis-cluster://[[user]:password@]host[:port][,host[:port]...]
 *   rediss-cluster://... the same, plus the TLS parameters
 * (cluster seed nodes: port 6379 by default, no db: a cluster has only 0.)
 * (sentinel port 26379 by default; user:password and db are the data
 * nodes', sentinel_user / sentinel_password the sentinels'.)
 * host may be a bracketed IPv6 literal ("[::1]"). user and password are
 * percent-decoded (the unix path and query values too). No part of a
 * password is ever copied into an error message, whatever the URL: a URL
 * with user information (an '@') or a parameter named like a secret
 * (password, key...) gets nothing of itself quoted, since a raw '@', '&',
 * '?' or '#' in a secret moves its rest into the host or the parameters;
 * another gets its bad host or parameter name quoted; values, ports and
 * database numbers never are. A user information that holds "?name=" or
 * "&name=" for a known or secret-named parameter is refused: its '@' was
 * a raw one inside a query value (it must be %40), and what follows it
 * would be taken for the host.
 *
 * TLS parameters (rediss:// only; named like redis-cli's flags): cacert,
 * cacertdir, cert, key, sni (paths and a name), insecure (0 or 1).
 * Every scheme (unix:// too): sync_replicas (-1, 0..DLOCK_SYNC_REPLICAS_MAX)
 * and sync_timeout_ms (1..DLOCK_TIME_MAX_MS).
 * Connection parameters (every scheme): multiplex (0 or 1), connections
 * (1..DLOCK__REDIS_CONNECTIONS_MAX), queue_max
 * (1..DLOCK__REDIS_QUEUE_MAX_LIMIT; multiplexed connections only, which
 * the backend checks once the options are merged), lazy_connect (0 or 1),
 * max_reply_bytes (DLOCK_REDIS_MAX_REPLY_MIN..DLOCK_REDIS_MAX_REPLY_LIMIT),
 * cluster_max_nodes (1..DLOCK_REDIS_CLUSTER_NODES_LIMIT; read by Cluster).
 * password_file (every scheme): the path of a file holding the data
 * nodes' password, instead of user information's password (not both);
 * recorded here, read by the backend (backend.c), so that parsing never
 * touches a file.
 */
#ifndef DLOCK_REDIS_URL_H
#define DLOCK_REDIS_URL_H

#include <stddef.h>

/* The most connections per node a multiplexed backend may share. */
#define DLOCK__REDIS_CONNECTIONS_MAX 64
/* The largest queue_max: calls queued or in flight on one shared
 * connection. */
#define DLOCK__REDIS_QUEUE_MAX_LIMIT 1048576

/* TLS settings, from the URL's query or the options struct; NULL / -1 =
 * not given. */
typedef struct dlock__redis_tls_params {
    char *cacert;    /* PEM file of trusted CAs */
    char *cacertdir; /* directory of hashed CA certificates */
    char *cert;      /* client certificate (mutual TLS) */
    char *key;       /* its private key */
    char *sni;       /* name sent as SNI and verified instead of the host */
    int insecure;    /* 1: no verification; -1: not given */
} dlock__redis_tls_params;

/* One sentinel's or cluster seed node's address. */
typedef struct dlock__redis_addr {
    char *host;
    int port;
    char where[300]; /* "host:port" */
} dlock__redis_addr;

typedef struct dlock__redis_url {
    int is_unix;
    int is_tls;     /* rediss:// */
    dlock__redis_tls_params tls; /* rediss:// only; all unset otherwise */
    char *host;     /* TCP: without brackets; NULL for unix */
    int port;       /* TCP: 1..65535 */
    char *path;     /* unix: the socket path; NULL for TCP */
    char *user;     /* NULL: no ACL user (plain AUTH password) */
    char *password; /* NULL: no AUTH at all */
    int db;         /* 0 = no SELECT needed */
    char where[300]; /* "host:port" or the socket path, for messages */
    int multiplex;   /* 0 or 1; -1: not given */
    int connections; /* 0: not given */
    int queue_max;   /* 0: not given */

    /* *-sentinel:// only (host and path are then NULL; the data nodes'
     * addresses come from the sentinels). */
    int is_sentinel;
    char *master_name;       /* sentinelMasterId, required */
    dlock__redis_addr *addrs; /* the sentinels (or the cluster's seeds) */
    int naddrs;               /* >= 1 */
    char *sentinel_user;     /* NULL: not given */
    char *sentinel_password; /* NULL: not given (no AUTH to sentinels) */

    /* *-cluster:// only (host and path are then NULL; addrs are the seed
     * nodes the slot map is first asked of). */
    int is_cluster;

    /* Replica-synced writes, any scheme; -1 = not given (the options'
     * fields then apply). */
    long long sync_replicas;   /* -1 means "all" only once given: see given */
    long long sync_timeout_ms;
    int sync_replicas_given;

    /* lazy_connect=0|1, any scheme; -1 = not given (the options' field
     * then applies). */
    int lazy_connect;

    /* max_reply_bytes=N, any scheme; 0 = not given (the options' field
     * then applies). */
    long long max_reply_bytes;

    /* cluster_max_nodes=N, any scheme (Cluster reads it); 0 = not given
     * (the options' field then applies). */
    long long cluster_max_nodes;

    /* password_file=PATH, any scheme (percent-decoded); NULL: not given. */
    char *password_file;

    /* While parsing: 1 when the URL may hold a secret, so that its
     * messages quote nothing of it (url.c, shown()). */
    int quiet;
} dlock__redis_url;

/* Parses url into *out (zeroed first). Returns 0, DLOCK_EINVAL (errbuf names
 * the bad part) or DLOCK_ENOMEM. On failure *out holds nothing to free, but
 * dlock__redis_url_clear is harmless on it. */
int dlock__redis_url_parse(dlock__redis_url *out, const char *url,
                           char *errbuf, size_t errlen);

/* "host:port", or "[host]:port" for an IPv6 literal: how messages name
 * an address. */
void dlock__redis_url_where(char *out, size_t len, const char *host, int port);

/* Frees the strings of p and marks them unset. */
void dlock__redis_tls_params_clear(dlock__redis_tls_params *p);

/* Frees the strings (wiping the user and the passwords first) and zeroes
 * *u. */
void dlock__redis_url_clear(dlock__redis_url *u);

#endif /* DLOCK_REDIS_URL_H */
