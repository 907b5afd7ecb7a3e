/*
 * dlock — the Redis backend (hiredis's reply parser; OpenSSL for TLS).
 *
 * URLs:
 *   redis://[[user]:password@]host[:port][/db]     (port 6379, db 0 default)
 *   rediss://[[user]:password@]host[:port][/db][?param=value&...]   (TLS)
 *   unix:///path/to/socket[?db=N]
 *   redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
 *       ?sentinelMasterId=NAME[&sentinel_user=U&sentinel_password=P]
 *   rediss-sentinel://...  the same over TLS (sentinels and data nodes
 *                          alike; the TLS parameters below apply to both)
 * A password with '@', ':' or '/' is percent-encoded in the URL (%40 ...);
 * so is an '@', '&' or '%' inside a query value.
 *
 * password_file=PATH (every scheme): the data nodes' password is the text
 * of the file at PATH (one line; a final newline is not part of it; at
 * most 4096 bytes), read once when the backend is made, so that the
 * password need not be in the URL, the command line or the environment
 * (`dlock`'s --url, $DLOCK_URL). An ACL user goes in the user
 * information as "user:@" (an empty password); a non-empty password there
 * as well is DLOCK_EINVAL. A file that cannot be read, is empty or holds
 * more than one line is DLOCK_EINVAL; no message quotes the path or any of
 * the file.
 *
 * TLS. The scheme decides: rediss:// is TLS (1.2 or later), redis:// and
 * unix:// are not. The server's certificate chain and its host name are
 * verified by default: the name checked (and sent as SNI) is sni if given,
 * else the URL's host; an IP-address host is checked against the
 * certificate's IP addresses (and sends no SNI). Settings, as query
 * parameters named like redis-cli's flags, or as the tls_* fields of
 * dlock_redis_options (the JSON configuration's tls_* fields,
 * api/dlock/config.h):
 *   cacert=PATH     tls_cacert     PEM file of the CAs to trust
 *   cacertdir=PATH  tls_cacertdir  directory of CA certificates (c_rehash)
 *                                  neither given: the system's CA store
 *   cert=PATH       tls_cert       client certificate (mutual TLS; PEM, may
 *                                  hold the chain) ...
 *   key=PATH        tls_key        ... and its private key (unencrypted);
 *                                  both or neither
 *   sni=NAME        tls_sni        the server name to ask for and verify
 *   insecure=1      tls_insecure   no verification at all (testing only;
 *                                  never the default); insecure=0 turns it
 *                                  back off over an option
 * Combining: each URL parameter overrides the options field of the same
 * setting; the fields fill in what the URL leaves out. With redis:// or
 * unix:// the tls_* fields are ignored (one configuration can switch
 * transports by its URL alone) and TLS query parameters are an error.
 * Unknown parameters are DLOCK_EINVAL naming the parameter. A TLS failure
 * is DLOCK_ECONN with one of three details: "TLS handshake failed" (not a
 * TLS port, no common protocol, the server refused the client certificate
 * or wanted one), "certificate is not trusted" (chain not verified with
 * the trusted CAs), "does not match the host name". Unreadable or invalid
 * certificate or key files fail dlock_redis_backend_new with DLOCK_EINVAL.
 *
 * Sentinel (the URL form of Lettuce). The hosts are the sentinels (port
 * 26379 by default); user:password and db are the data nodes'. The
 * sentinels' own credentials are sentinel_user / sentinel_password (query
 * parameters, or the fields of the same names below; the URL wins);
 * without them no AUTH is sent to sentinels. The backend asks the
 * sentinels in turn for the master of sentinelMasterId and confirms with
 * ROLE that it is one; creation fails with DLOCK_ECONN when no sentinel
 * (or no master it names) is reachable, DLOCK_EINVAL when no sentinel
 * knows the name. It then follows failovers: a thread of the backend
 * listens for +switch-master on a sentinel, and a call that finds the
 * master unreachable or refusing (READONLY, MASTERDOWN, LOADING) makes it
 * ask the sentinels again. Calls go to the new master as soon as it is
 * confirmed; the subscriber moves there, restores its channels and wakes
 * the waiters (as after a reconnect). A call made meanwhile fails with
 * DLOCK_ECONN within its budget (dlock_lock and waits with time left retry
 * it); no call waits for the rediscovery itself.
 *
 * Connections (multiplex=0|1 and connections=N as URL parameters, or the
 * fields below; queue_max=N as a URL parameter only). Multiplexed
 * (the default): the calls of every thread share `connections` connections
 * per server (default 1), pipelined: what threads submit while a write is
 * in flight goes out in the next write, one reader hands the replies back
 * in order. A call still waits only for its own reply, within its own
 * budget; one that gives up leaves cleanly (its late reply is read and
 * dropped); a lost connection fails every pending call at once with
 * DLOCK_ECONN; at most queue_max calls (1..1 048 576, default 65 536) are
 * queued or in flight per connection: one beyond fails at once with
 * DLOCK_ECONN, detail "redis host:port: request queue full (N calls ...)";
 * a connection whose queue holds only calls that gave up is dropped and
 * reopened by the next call. queue_max with multiplex=0 (URL or field) is
 * DLOCK_EINVAL. With sync_replicas (below), a write's WAIT holds back the
 * calls queued behind it on its connection (Redis serves nothing else of a
 * connection while its WAIT blocks): give it several connections (4) or
 * the pool. Pooled (multiplex=0): pool_size connections, each call
 * borrows one (no lock is held across network I/O).
 *
 * The backend runs scripts with EVALSHA (SCRIPT LOAD on NOSCRIPT), and has
 * one subscriber connection with its own thread; subscriptions are restored
 * after a reconnect. A lost connection is re-established on next use, with
 * back-off; no call blocks past its command timeout (plus connect timeout).
 *
 * Replica-synced writes (failover safety). Redis replicates
 * asynchronously: a master that dies right after granting a lock may not
 * have passed the grant on, and the replica Sentinel promotes then grants
 * the lock a second time. With sync_replicas = N (query parameter
 * sync_replicas=N, the field below, or the JSON config), every script that
 * writes (all but those marked DLOCK_SCRIPT_NO_WRITES,
 * api/dlock/sys/backend.h) is sent with "WAIT N sync_timeout_ms" in the
 * same write: one round trip plus the replication time. N = -1 waits for
 * all the replicas the master had connected when last asked (ROLE, at most
 * a second old; none: no wait), and for one that has left in the last
 * minute too: a failover detaches the replica it promotes first, and a
 * write the others alone acknowledged would be lost when they resync from
 * it (so while a replica is away, writes are DLOCK_ESYNC for up to a
 * minute). When fewer acknowledge in time the call
 * returns DLOCK_ESYNC, detail "1 of 2 replicas acknowledged within 500 ms";
 * the script did run: an acquisition is rolled back (released) by the lock
 * object, an unlock or a renewal keeps its effect. A server that refuses
 * WAIT (some managed services rename it away) is remembered: the call that
 * found out returns DLOCK_ESYNC with a detail saying so, and from then on
 * this backend sends no WAIT (sync off). sync_timeout_ms (query parameter
 * too) bounds the wait; it must be below command_timeout_ms (unless that
 * is 0), which bounds the whole round trip. A call with a time budget
 * (try_lock's wait + budget_slack_ms, api/dlock/client.h) may take up to
 * sync_timeout_ms + 250 ms longer when it writes (Redis answers a WAIT up
 * to its timer period, 100 ms at hz 10, after its timeout): cutting the acknowledgement short
 * would leave a lock taken that its caller was told timed out. The URL's parameters win over
 * the fields. The mock backend has no replicas: it ignores these settings
 * (its dlock_client_connect and JSON config accept them unused).
 *
 * Lazy connection (lazy_connect=0|1 as a URL parameter, the field
 * below, "lazy_connect" in the JSON configuration, where a client
 * set's default is on: api/dlock/config.h). Off (the default),
 * dlock_redis_backend_new connects once, so a wrong address, password or
 * database fails there. On, it does no network I/O: the URL, the options
 * and the TLS files are still checked (DLOCK_EINVAL), but the backend is
 * made while its server is down, and so is a client on it. Its calls
 * connect on first use and after that exactly as after a lost
 * connection: while the server cannot be reached each call fails with
 * DLOCK_ECONN (the detail says why: refused, timed out, wrong password:
 * DLOCK_EAUTH) within its own budget, the reconnection back-off
 * (reconnect_min_ms .. reconnect_max_ms) spaces the attempts, and the
 * waiting calls retry within their budgets: a try_lock with a wait keeps
 * trying until it runs out, a dlock_lock (and every wait without a
 * budget) until the server comes up and the lock is had. What is
 * deferred, per kind of URL:
 *  - redis://, rediss://, unix://: the first connection (TCP or the
 *    socket, the TLS handshake, AUTH, SELECT).
 *  - *-sentinel://: the discovery of the master. The backend's thread
 *    starts at once and asks the sentinels (with back-off while none
 *    answers, as it rediscovers after a failover); until a master is
 *    confirmed every call fails with DLOCK_ECONN, detail "no master of
 *    'NAME' found yet (last: ...)" saying why; once the sentinels have
 *    answered that none of them knows NAME, DLOCK_EINVAL, and when
 *    credentials were refused, DLOCK_EAUTH (errors that waiting does not
 *    mend: a lazy backend reports them there, not at creation).
 *  - *-cluster://: the first reading of the slot map. Until the thread has
 *    read it from a seed (it keeps asking, at most every 200 ms), calls
 *    go to a seed node, which redirects them (MOVED) once it is up, or
 *    are refused (DLOCK_ECONN) within their budget while no seed answers.
 * Nothing else changes: the subscriber connects on the first wait, as it
 * always does.
 *
 * Reply size (max_reply_bytes=N as a URL parameter, the field
 * below, "max_reply_bytes" in the JSON configuration; the URL wins). A
 * reply counts its bytes as received plus the memory of the values parsed
 * from them (a reply of many tiny elements takes more memory than bytes).
 * A reply over the cap, one that claims more elements than the cap could
 * hold, or a bulk string whose header announces more bytes than the cap
 * has left (refused at the header, before any of its body comes), is
 * refused as soon as it is seen to be, on every connection (pooled,
 * multiplexed, the subscriber's, discovery's): the call fails with
 * DLOCK_EPROTO, detail "redis host:port: reply larger than max_reply_bytes
 * (N bytes); connection dropped", the connection is closed and what it had
 * buffered of the reply is freed. What a connection may hold of one reply
 * is thus about twice the cap (plus one 16 kB read). Every read also
 * checks the call's deadline on every pass, pooled or multiplexed: a
 * server that trickles a reply, or streams a huge one, does not hold a
 * call past its budget (the call fails with DLOCK_ETIMEDOUT and the
 * connection is dropped, as for a server that does not answer).
 *
 * Cluster redirections (redis-cluster://, rediss-cluster://). A MOVED or
 * ASK is followed only to a node the slot map names: to an address it
 * does not, only after the map has been read again from the nodes known
 * (within the call's budget) and names it; else the call fails with
 * DLOCK_ECONN, detail "redis cluster: redirected (MOVED) to host:port, a
 * node the slot map does not name: not followed", and nothing is sent
 * there (no AUTH). Nodes that leave the map are dropped and their
 * connections closed; a map naming more than 1000 nodes is refused
 * (DLOCK_EPROTO). Every data node (each cluster node, each master a
 * sentinel names) receives the URL's credentials: with TLS, only servers
 * whose certificate the trusted CAs vouch for (cacert= pins your own CA).
 *
 * Thread-safety: a backend may be shared by any number of threads.
 * No part of a password ever appears in an error message, whatever the
 * URL (a raw '@', '&' or '?' inside a password may move its rest into what
 * looks like the host or a parameter): a URL with user information or a
 * parameter named like a secret (password, key...) gets the bad part named
 * but nothing of itself quoted. The backend's copies of passwords are
 * wiped before they are freed.
 */
#ifndef DLOCK_REDIS_H
#define DLOCK_REDIS_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "times.h"
#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Timeouts of 0 mean no limit. Every duration is 0..DLOCK_TIME_MAX_MS
 * (api/dlock/times.h). The connect timeout also bounds the
 * connection handshake (TLS, AUTH, SELECT) and, pooled, the wait for a free
 * connection; the command timeout bounds one round trip.
 *
 * Versions: fields are only ever appended; a struct of a version this
 * library does not know is refused (DLOCK_EINVAL). */
typedef struct dlock_redis_options {
    int version;                 /* DLOCK_REDIS_OPTIONS_VERSION (1) */
    int64_t connect_timeout_ms;  /* default 2000 */
    int64_t command_timeout_ms;  /* default 2000 */
    int pool_size;               /* pooled mode: connections kept open;
                                    default 8 */
    int64_t reconnect_min_ms;    /* first back-off step; default 50 */
    int64_t reconnect_max_ms;    /* back-off cap; default 2000 */

    /* ---- TLS, used by rediss:// URLs only (see above). The
     * strings are copied by dlock_redis_backend_new; NULL = not set. */
    const char *tls_cacert;      /* PEM file of trusted CAs */
    const char *tls_cacertdir;   /* directory of trusted CA certificates */
    const char *tls_cert;        /* client certificate (PEM) */
    const char *tls_key;         /* its private key (PEM) */
    const char *tls_sni;         /* server name to request and verify */
    int tls_insecure;            /* 1: skip verification; default 0 */

    /* ---- Sentinel (redis-sentinel:// and rediss-sentinel://
     * URLs only; ignored otherwise). The sentinels' own credentials; the
     * URL's user:password are the data nodes'. NULL = not set: the
     * sentinels get no AUTH. The URL's parameters of the same names win. */
    const char *sentinel_user;     /* ACL user on the sentinels */
    const char *sentinel_password; /* AUTH password of the sentinels */

    /* ---- replica-synced writes (see above; any URL scheme).
     * The URL's sync_replicas / sync_timeout_ms parameters win. */
    int sync_replicas;           /* 0 off (default); 1..DLOCK_SYNC_REPLICAS_MAX
                                    replicas; -1 all connected ones */
    int64_t sync_timeout_ms;     /* 1..DLOCK_TIME_MAX_MS; default 1000 */
    /* ---- how calls use connections (every scheme). The
     * URL's parameters multiplex=0|1 and connections=N win. */
    int multiplex;    /* 1 (default): every thread's calls share
                         `connections` connections per node, pipelined
                         (Lettuce/ioredis style); 0: a pool of pool_size
                         connections, one borrowed per call */
    int connections;  /* multiplexed: connections per node, 1..64;
                         default 1 */

    /* ---- lazy connection (see above; every scheme). The
     * URL's lazy_connect=0|1 wins. */
    int lazy_connect; /* 0 (default): connect in dlock_redis_backend_new;
                         1: no I/O there, connect on first use */

    /* ---- the largest reply accepted (see "Reply size" above;
     * every scheme, every connection: calls, the subscriber, Sentinel and
     * Cluster discovery). The URL's max_reply_bytes=N wins. */
    int64_t max_reply_bytes; /* DLOCK_REDIS_MAX_REPLY_MIN ..
                                DLOCK_REDIS_MAX_REPLY_LIMIT; default
                                DLOCK_REDIS_MAX_REPLY_DEFAULT */

    /* ---- the most nodes a Cluster client follows from one
     * slot map (redis-cluster:// and rediss-cluster://; ignored
     * otherwise). Each node a map names costs connections (and an AUTH on
     * each): a seed whose map names more distinct nodes than this is
     * refused, with DLOCK_EPROTO, detail "redis host:port: CLUSTER SLOTS
     * names more than N nodes (cluster_max_nodes=N)", and no connection
     * is opened to any of them. The URL's cluster_max_nodes=N wins; JSON
     * key "cluster_max_nodes". */
    int cluster_max_nodes; /* 1..DLOCK_REDIS_CLUSTER_NODES_LIMIT; default
                              DLOCK_REDIS_CLUSTER_NODES_DEFAULT */
} dlock_redis_options;

/* cluster_max_nodes: the default, far above the masters of the clusters
 * seen in practice (a slot map names the masters), and the bound (Redis
 * Cluster's own advice: at most 1000 nodes, masters and replicas). */
#define DLOCK_REDIS_CLUSTER_NODES_DEFAULT 128
#define DLOCK_REDIS_CLUSTER_NODES_LIMIT 1000

/* max_reply_bytes: the default (64 MiB) and the bounds. dlock's own
 * replies are small: a lock script answers with a few integers or a
 * short array (well under 1 kB), SCRIPT LOAD with a 40-byte sha, and the
 * largest ones it ever reads, CLUSTER SLOTS of a cluster of a thousand
 * nodes or a subscriber's restored channels, take a few hundred kB. 64 MiB
 * is two orders of magnitude above those, yet keeps what one hostile or
 * broken server can make a connection hold (about twice the cap: the
 * parser's buffer and the value built from it) far below a gigabyte. */
#define DLOCK_REDIS_MAX_REPLY_DEFAULT ((int64_t)64 * 1024 * 1024)
#define DLOCK_REDIS_MAX_REPLY_MIN ((int64_t)4096)
#define DLOCK_REDIS_MAX_REPLY_LIMIT ((int64_t)1024 * 1024 * 1024)

/* The largest sync_replicas (far above any real replica count). */
#define DLOCK_SYNC_REPLICAS_MAX 1000

/* The options' version this header describes: every field above. */
#define DLOCK_REDIS_OPTIONS_VERSION 1
#define DLOCK_REDIS_OPTIONS_INIT                                               \
    {DLOCK_REDIS_OPTIONS_VERSION, 2000, 2000, 8, 50, 2000, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL, \
     0, 1000, 1, 1, 0, DLOCK_REDIS_MAX_REPLY_DEFAULT,                        \
     DLOCK_REDIS_CLUSTER_NODES_DEFAULT}

/* Creates the backend and connects once to check the URL, the credentials
 * and the database (so a wrong password fails here, with DLOCK_EAUTH).
 * opts may be NULL (defaults). Blocks for at most the connect timeout plus
 * the command timeout. With lazy_connect (above) it does not connect and
 * never blocks on the network: DLOCK_ECONN, DLOCK_ETIMEDOUT, DLOCK_EAUTH
 * and DLOCK_EPROTO then come from the calls.
 * Returns 0, DLOCK_EINVAL (bad URL or options, unreadable TLS files;
 * errbuf says which part), DLOCK_ECONN (including TLS failures, above),
 * DLOCK_ETIMEDOUT, DLOCK_EAUTH, DLOCK_EPROTO (not a Redis server, or SELECT
 * refused), DLOCK_ENOMEM. errbuf (may be NULL) receives a one-line detail;
 * it never holds a password. */
DLOCK_API int dlock_redis_backend_new(dlock_backend **out, const char *url,
                                      const dlock_redis_options *opts, char *errbuf,
                                      size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_REDIS_H */
