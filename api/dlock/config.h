/*
 * dlock — a client from a JSON configuration (a file or a string), or
 * from a Redisson YAML configuration (below).
 *
 *     {
 *       "url": "redis://:secret@127.0.0.1:6379/0",
 *       "connect_timeout_ms": 2000,
 *       "command_timeout_ms": 2000,
 *       "pool_size": 8,
 *       "reconnect_min_ms": 50,
 *       "reconnect_max_ms": 2000,
 *       "watchdog_timeout_ms": 30000,
 *       "max_hold_ms": 0,
 *       "fair_wait_slack_ms": 300000,
 *       "budget_slack_ms": 50,
 *       "tls_cacert": "/etc/redis/ca.crt",
 *       "tls_cert": "/etc/redis/client.crt",
 *       "tls_key": "/etc/redis/client.key",
 *       "tls_sni": "redis.example.com",
 *       "tls_insecure": false,
 *       "sentinel_user": "sentinel-user",
 *       "sentinel_password": "sentinel-secret",
 *       "sync_replicas": 1,
 *       "sync_timeout_ms": 1000,
 *       "multiplex": true,
 *       "connections": 1,
 *       "lazy_connect": false,
 *       "fair_waiter_timeout_ms": 5000,
 *       "describe_owner": false,
 *       "client_name": "billing",
 *       "metrics_names_max": 100
 *     }
 *
 * One JSON object. "url" is required: "mock:" (a private in-memory store on
 * the real-time clock), "mock://NAME" (a store registered by a test, on its
 * clock: api/dlock/mock.h), redis://, rediss:// (TLS), unix://,
 * redis-sentinel://, rediss-sentinel://, redis-cluster:// or
 * rediss-cluster:// (api/dlock/redis.h). Every other field is optional and defaults to
 * DLOCK_REDIS_OPTIONS_INIT / DLOCK_CLIENT_OPTIONS_INIT; these are integers:
 *   connect_timeout_ms, command_timeout_ms  >= 0 (0: no limit)
 *   pool_size                               1..4096
 *   connections                             1..64 (multiplexed: per node)
 *   reconnect_min_ms, reconnect_max_ms      >= 0, the reconnection back-off
 *                                           (first step, cap; max >= min)
 *   watchdog_timeout_ms                     >= 3
 *   max_hold_ms                             >= 0 (0: renew for ever)
 *   fair_wait_slack_ms                      >= 1
 *   fair_waiter_timeout_ms                  >= 0 (0: none; the URL's
 *                                           parameter of the same name
 *                                           wins)
 *   budget_slack_ms                         >= 0
 *   loop_slice_ms                           >= 0 (0: no bound)
 *   metrics_names_max                       0..10000 (DLOCK_METRICS_NAMES_MAX;
 *                                           0: off; the URL's parameter
 *                                           of the same name wins)
 *   sync_replicas                           -1 (all connected), 0 (off,
 *                                           default) .. 1000: replicas
 *                                           that must acknowledge each
 *                                           write (api/dlock/redis.h)
 *   sync_timeout_ms                         >= 1, below command_timeout_ms
 *   cluster_max_nodes                       1..1000 (default 128): the most
 *                                           nodes a Cluster client follows
 *                                           from one slot map
 *                                           (api/dlock/redis.h; the URL's
 *                                           parameter wins)
 * and every one of them but pool_size, sync_replicas, connections and
 * cluster_max_nodes at most
 * DLOCK_TIME_MAX_MS
 * (10^12, api/dlock/times.h); these TLS settings are the tls_* fields of dlock_redis_options and
 * the rediss:// query parameters of the same name without "tls_"
 * (api/dlock/redis.h; a parameter in the URL wins over the field):
 *   tls_cacert, tls_cacertdir, tls_cert,    non-empty strings (paths)
 *   tls_key
 *   tls_sni                                 a non-empty string (a name)
 *   client_name                             a non-empty string of at most
 *                                           256 bytes (DLOCK_CLIENT_NAME_MAX):
 *                                           the client's label in its
 *                                           metrics (api/dlock/client.h;
 *                                           the URL's client_name wins)
 *   tls_insecure                            true/false or 1/0; default
 *                                           false (verification on)
 *   sentinel_user, sentinel_password        non-empty strings: the
 *                                           sentinels' own credentials
 *                                           (the same-named URL parameters
 *                                           win); used by the *-sentinel://
 *                                           schemes only
 *   multiplex                               true/false or 1/0; default
 *                                           true (calls share connections;
 *                                           false: a pool, pool_size); the
 *                                           URL's multiplex=0|1 wins
 *   lazy_connect                            true/false or 1/0: the client
 *                                           is made without connecting
 *                                           and connects on first use
 *                                           (api/dlock/redis.h, "Lazy
 *                                           connection"); default false
 *                                           for one client, true for a
 *                                           client set (below); the URL's
 *                                           lazy_connect=0|1 wins
 *   describe_owner                          true/false or 1/0: the client
 *                                           publishes who it is
 *                                           (api/dlock/client.h); default
 *                                           false; the URL's
 *                                           describe_owner=0|1 wins
 *   max_reply_bytes                         4096..1073741824: the largest
 *                                           reply accepted (api/dlock/
 *                                           redis.h, "Reply size");
 *                                           default 64 MiB; the URL's
 *                                           max_reply_bytes=N wins
 * (see api/dlock/redis.h and api/dlock/client.h for what each one does).
 * The scheme of "url" alone decides whether TLS is used. The Redis fields
 * are accepted, and unused, with "mock:" (and the TLS fields with redis://
 * and unix://), so one file can switch backends by its URL alone.
 *
 * Errors: DLOCK_EINVAL for a configuration that is not valid, with errbuf
 * "<where>:<line>:<column>: <what>" (where: the path, or "json" for a
 * string; lines and columns from 1). A syntax error gives Jansson's
 * position and the kind of error; a field of the wrong type (a string for
 * a number, a real number for an integer) or out of range, and a field
 * given twice name the field and give the position of its key; an unknown
 * field gives its position and the nearest field's name. No detail quotes
 * the text itself (a token, a value, an unknown name): any string of it
 * may hold a password, and a broken one moves its pieces into tokens and
 * names. The strings that may hold one (url, urls, sentinel_password, and
 * a file's text) are wiped before they are freed. A file that cannot
 * be read is DLOCK_EINVAL too ("<path>: <strerror>"). Otherwise the codes of
 * dlock_client_connect (api/dlock/client.h): the backend is connected once,
 * so a wrong address or password fails here.
 *
 * Thread-safety: both functions may be called from any thread at once.
 */
#ifndef DLOCK_CONFIG_H
#define DLOCK_CONFIG_H

#include "export.h"

#include "types.h"

#include <stddef.h>

#include "client.h"
#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest configuration file read, in bytes. */
#define DLOCK_CONFIG_MAX (1024 * 1024)

/* A program's own defaults for what its users' configuration leaves out
 * (the *_with functions below): a tool that wants, say, lazy connection
 * and owner descriptions whether it was given a URL or a file, while a
 * field the file gives, and a URL parameter, still win. */
typedef struct dlock_config_defaults {
    int version;                        /* 1 */
    /* The client options a field not given takes (NULL: those of
     * DLOCK_CLIENT_OPTIONS_INIT). Its client_name is not used (the
     * field's, else the program's name); on_lost and on_lost_arg are. */
    const dlock_client_options *client;
    int lazy_connect;                   /* 0 or 1 when "lazy_connect" (YAML:
                                         * lazyInitialization) is not given;
                                         * -1: the format's default */
} dlock_config_defaults;

#define DLOCK_CONFIG_DEFAULTS_INIT {1, NULL, -1}

/* Creates a client from the JSON text json (NUL-terminated). errbuf (may
 * be NULL) receives a one-line detail on failure. Blocks for at most the
 * connect timeout (plus one command); with "lazy_connect": true, not on
 * the network at all. */
DLOCK_API int dlock_client_from_json_string(dlock_client **out, const char *json,
                                            char *errbuf, size_t errlen);

/* The same from the file at path (at most DLOCK_CONFIG_MAX bytes). */
DLOCK_API int dlock_client_from_json_file(dlock_client **out, const char *path,
                                          char *errbuf, size_t errlen);

/* dlock_client_from_json_file with the caller's defaults (NULL: the
 * library's). used (may be NULL) receives the client options the client
 * was made with, the file's fields applied (its client_name NULL: read it
 * with dlock_client_name), e.g. the watchdog_timeout_ms that a lock with a
 * lease of 0 gets. Otherwise as dlock_client_from_json_file. */
DLOCK_API int dlock_client_from_json_file_with(dlock_client **out, const char *path,
                                               const dlock_config_defaults *defaults,
                                               dlock_client_options *used, char *errbuf,
                                               size_t errlen);

/*
 * A client set (e.g. the independent nodes of a Redlock, api/dlock/
 * redlock.h): the same object with "urls", an array of 1..64 URLs, instead
 * of "url"; every other field applies to every client:
 *
 *     {"urls": ["redis://10.0.0.1:6379", "redis://10.0.0.2:6379",
 *               "redis://10.0.0.3:6379"], "command_timeout_ms": 500}
 *
 * Makes a client per URL, in order, into out[0..*n) (cap: room in out).
 * A set connects lazily by default ("lazy_connect" not given is true
 * here; a URL's lazy_connect=0 or "lazy_connect": false turns it off):
 * the clients are made while their servers are down, and each connects
 * on first use, so a Redlock over them starts with any of its nodes
 * down, acquires with a majority and uses a node as soon as it is up
 * (api/dlock/redis.h, "Lazy connection"). Nothing is then sent here: a
 * wrong address or password shows in the calls (DLOCK_ECONN, DLOCK_EAUTH
 * from that node), not as a failure of the set.
 * All or nothing: on failure no client is left and errbuf names the URL
 * ("urls[2]: ..."). The clients are the caller's (dlock_client_free each;
 * a Redlock made from them keeps them alive). 0, DLOCK_EINVAL (also more
 * URLs than cap, or "urls" given to the single-client functions above),
 * or the codes of dlock_client_connect (with connections eager: a server
 * down is DLOCK_ECONN, "urls[i]: ..."). */
DLOCK_API int dlock_client_set_from_json_string(dlock_client **out, size_t cap, size_t *n,
                                                const char *json, char *errbuf,
                                                size_t errlen);
DLOCK_API int dlock_client_set_from_json_file(dlock_client **out, size_t cap, size_t *n,
                                              const char *path, char *errbuf,
                                              size_t errlen);
/* The same with the caller's defaults and the options used, as
 * dlock_client_from_json_file_with (a set's own lazy default applies when
 * defaults->lazy_connect is -1). */
DLOCK_API int dlock_client_set_from_json_file_with(dlock_client **out, size_t cap,
                                                   size_t *n, const char *path,
                                                   const dlock_config_defaults *defaults,
                                                   dlock_client_options *used,
                                                   char *errbuf, size_t errlen);

/*
 * A Redisson YAML configuration: the redisson.yaml a team's Java services
 * already read (Config.fromYAML), so that a C service sharing their locks
 * reads the same file. One client (Redisson's file configures one).
 *
 *     singleServerConfig:
 *       address: "redis://127.0.0.1:6379"
 *       password: "secret"
 *       database: 0
 *       timeout: 3000
 *     lockWatchdogTimeout: 30000
 *     codec: !<org.redisson.codec.Kryo5Codec> {}
 *
 * Exactly one server section: singleServerConfig, sentinelServersConfig
 * or clusterServersConfig (masterSlaveServersConfig and
 * replicatedServersConfig are unsupported). What dlock reads of it:
 *   address                  single: "redis://host:port", or rediss://
 *                            (TLS); valkey:// and valkeys:// too; nothing
 *                            but host:port after the scheme
 *   sentinelAddresses,       Sentinel: the sentinels' addresses, and the
 *   masterName               master's name -> redis-sentinel://h1,h2...
 *                            ?sentinelMasterId=NAME (rediss-sentinel://
 *                            when the addresses are rediss://)
 *   nodeAddresses            Cluster: the seed nodes -> redis-cluster://
 *   password, username       the data nodes' AUTH (percent-encoded into
 *                            the URL); username needs a password
 *   sentinelPassword,        the sentinels' own AUTH (sentinel_password,
 *   sentinelUsername         sentinel_user)
 *   database                 single and Sentinel: the URL's /db
 *   connectTimeout, timeout  connect_timeout_ms, command_timeout_ms
 *                            (dlock's defaults, 2000 ms each, where not
 *                            given; Redisson's are 10000 and 3000)
 *   sslTruststore            tls_cacert: a PEM file (.pem, .crt, .cer),
 *                            as a path or a file: URL
 *   sslKeystore              tls_cert and tls_key: one PEM file (.pem,
 *                            .crt, .cer, .key) holding the client
 *                            certificate and its unencrypted key
 *   sslVerificationMode      STRICT (the default) or NONE (tls_insecure)
 *   sslEnableEndpointIdentification  true only (the default)
 *   lockWatchdogTimeout      watchdog_timeout_ms (top level)
 *   checkLockSyncedSlaves    true: sync_replicas -1 (every connected
 *                            replica acknowledges each write); false: 0.
 *                            Where not given, dlock's default (off), not
 *                            Redisson's (true)
 *   slavesSyncTimeout        sync_timeout_ms
 *   lazyInitialization       lazy_connect
 * Integers may be plain or quoted ("3000", as Jackson coerces them);
 * booleans are true/false (yes/no, on/off); null (or ~, or nothing) is
 * "not set": the default.
 *
 * Ignored, with one log line each (api/dlock/log.h, DLOCK_LOG_INFO: "dlock:
 * redisson yaml LINE:COLUMN: NAME ignored: why"), whatever their value and
 * tag (!<org.redisson.codec.Kryo5Codec> {} and the like): what only
 * concerns the JVM (threads, nettyThreads, codec, transportMode, executors,
 * Netty and TCP settings, pingConnectionInterval), connection pools and
 * their idle timeouts, retryAttempts and retryInterval (a dlock call
 * retries within its own budget), clientName, readMode, subscriptionMode,
 * loadBalancer, scanInterval and the other topology checks, and the
 * settings of Redisson's caches and topics. Unsupported (DLOCK_EINVAL,
 * naming the field and its position), because ignoring them would change
 * which servers, keys or certificates are used: a Java keystore (.jks,
 * .p12, .pfx... as sslTruststore or sslKeystore: convert it to PEM), an
 * sslKeystorePassword, sslKeystoreType other than PEM, sslProtocols,
 * sslCiphers, sslEnableEndpointIdentification: false, sslVerificationMode:
 * CA_ONLY, a non-null nameMapper, commandMapper, natMapper,
 * credentialsResolver or secretKey (Redisson PRO's encrypted passwords),
 * a ${VARIABLE} anywhere (Redisson substitutes them; dlock does not),
 * addresses mixing redis:// and rediss://, and credentials inside an
 * address. Options Redisson has no field for (pool_size, max_hold_ms...)
 * keep their defaults: use the JSON configuration for them.
 *
 * Errors: DLOCK_EINVAL with errbuf "<where>:<line>:<column>: <what>"
 * (where: the path, or "yaml" for a string), as the JSON configuration's:
 * a YAML syntax error gives libyaml's position and its kind; a value of
 * the wrong type or out of range, a field given twice or in the wrong
 * section, a required field missing (address; sentinelAddresses and
 * masterName; nodeAddresses) name the field ("singleServerConfig.timeout");
 * an unknown field gives its position and the nearest known name. No
 * detail quotes a value or an unknown name, and every copy of the text
 * and of the passwords (libyaml's included) is wiped before it is freed.
 * Then the codes of dlock_client_connect, as for the JSON configuration.
 *
 * Bounds, so that any text under DLOCK_CONFIG_MAX is read in linear time
 * and a few MB (DLOCK_EINVAL with the position where it is crossed): one
 * document (a second "---" is refused); collections nested at most 2 048
 * deep (as the JSON configuration), of which flow collections ([ ], { })
 * at most 64 (libyaml rescans every open one at each token); at most
 * 16 384 nodes, 256 anchors and 1 024 aliases, which may stand for at
 * most 64 KiB of text in all; an address of at most 1 024 bytes; a URL
 * made of the section (addresses, credentials, masterName percent-encoded)
 * of at most 64 KiB.
 *
 * Where dlock differs from Redisson's Config.fromYAML: a field not given
 * takes dlock's default, not Redisson's (2000 ms timeouts, no replica
 * sync); TLS files are PEM, not Java keystores; ${VARIABLE}s are refused,
 * not substituted; one document, one client.
 *
 * Ownership: the text and path are the caller's, read during the call
 * only; on success *out is the caller's (dlock_client_free), on failure
 * *out is NULL. Blocks as dlock_client_from_json_string does (for at most
 * the connect timeout plus one command; lazyInitialization: true, not on
 * the network). Thread-safety: may be called from any thread at once.
 */
DLOCK_API int dlock_client_from_redisson_yaml_string(dlock_client **out, const char *yaml,
                                                     char *errbuf, size_t errlen);

/* The same from the file at path (at most DLOCK_CONFIG_MAX bytes). */
DLOCK_API int dlock_client_from_redisson_yaml_file(dlock_client **out, const char *path,
                                                   char *errbuf, size_t errlen);
/* The same with the caller's defaults and the options used, as
 * dlock_client_from_json_file_with (lockWatchdogTimeout, for instance,
 * shows in used->watchdog_timeout_ms). */
DLOCK_API int dlock_client_from_redisson_yaml_file_with(dlock_client **out, const char *path,
                                                        const dlock_config_defaults *defaults,
                                                        dlock_client_options *used,
                                                        char *errbuf, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_CONFIG_H */
