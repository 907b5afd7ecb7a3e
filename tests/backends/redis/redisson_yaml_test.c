/*
 * The Redisson YAML configuration (api/dlock/config.h): Redisson's own
 * documented examples for a single server, Sentinel and Cluster, written as
 * its configuration reference writes them, read into the settings dlock
 * makes its client from (through the parser, backends/redis/redisson_yaml.h: what the
 * client was made from, URL and options, is not readable from a client),
 * and the URLs they make accepted by the backend; a client made from a
 * YAML string and from a file that takes and releases a lock on a real
 * redis-server with a password, and over mutual TLS from the SSL fields
 * (a PEM truststore, a PEM keystore holding certificate and key); and bad
 * input: malformed YAML, a wrong
 * type, an unknown field, unsupported fields (a Java keystore...), each
 * named with its line and column, with no part of a secret in the
 * message or the log. Nothing may leak: `make asan` runs it under ASan.
 */
#include "../../harness/log_capture.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/redis/config.h"
#include "backends/redis/redisson_yaml.h"
#include "core/config_json.h"
#include "dlock.h"

/* ---- Redisson's documented examples ------------------------------------ */

/* What Redisson's documented examples (its defaults) share: the
 * timeouts every section starts with, the pools and modes of the
 * replicated sections (sentinel, cluster), the top-level tail. */
#define DOC_TIMEOUTS                                                                     \
    "  idleConnectionTimeout: 10000\n"                                                  \
    "  connectTimeout: 10000\n"                                                         \
    "  timeout: 3000\n"                                                                 \
    "  retryAttempts: 3\n"                                                              \
    "  retryInterval: 1500\n"
#define DOC_REPLICATED                                                                   \
    "  failedSlaveReconnectionInterval: 3000\n"                                         \
    "  failedSlaveNodeDetector: !<org.redisson.client.FailedConnectionDetector> {}\n"   \
    "  password: null\n"                                                                \
    "  subscriptionsPerConnection: 5\n"                                                 \
    "  clientName: null\n"                                                              \
    "  loadBalancer: !<org.redisson.connection.balancer.RoundRobinLoadBalancer> {}\n"   \
    "  subscriptionConnectionMinimumIdleSize: 1\n"                                      \
    "  subscriptionConnectionPoolSize: 50\n"                                            \
    "  slaveConnectionMinimumIdleSize: 24\n"                                            \
    "  slaveConnectionPoolSize: 64\n"                                                   \
    "  masterConnectionMinimumIdleSize: 24\n"                                           \
    "  masterConnectionPoolSize: 64\n"                                                  \
    "  readMode: \"SLAVE\"\n"                                                           \
    "  subscriptionMode: \"SLAVE\"\n"
#define DOC_TAIL                                                                         \
    "threads: 16\n"                                                                     \
    "nettyThreads: 32\n"                                                                \
    "codec: !<org.redisson.codec.Kryo5Codec> {}\n"                                      \
    "transportMode: \"NIO\"\n"

static const char single_doc[] =
    "---\n"
    "singleServerConfig:\n"
    DOC_TIMEOUTS
    "  password: null\n"
    "  subscriptionsPerConnection: 5\n"
    "  clientName: null\n"
    "  address: \"redis://127.0.0.1:6379\"\n"
    "  subscriptionConnectionMinimumIdleSize: 1\n"
    "  subscriptionConnectionPoolSize: 50\n"
    "  connectionMinimumIdleSize: 24\n"
    "  connectionPoolSize: 64\n"
    "  database: 0\n"
    "  dnsMonitoringInterval: 5000\n"
    DOC_TAIL;

static const char sentinel_doc[] =
    "---\n"
    "sentinelServersConfig:\n"
    DOC_TIMEOUTS
    DOC_REPLICATED
    "  sentinelAddresses:\n"
    "  - \"redis://127.0.0.1:26379\"\n"
    "  - \"redis://127.0.0.1:26389\"\n"
    "  masterName: \"mymaster\"\n"
    "  database: 0\n"
    DOC_TAIL;

static const char cluster_doc[] =
    "---\n"
    "clusterServersConfig:\n"
    DOC_TIMEOUTS
    DOC_REPLICATED
    "  nodeAddresses:\n"
    "  - \"redis://127.0.0.1:7004\"\n"
    "  - \"redis://127.0.0.1:7001\"\n"
    "  - \"redis://127.0.0.1:7000\"\n"
    "  scanInterval: 1000\n"
    "  pingConnectionInterval: 30000\n"
    "  keepAlive: false\n"
    "  tcpNoDelay: true\n"
    DOC_TAIL;

static void parse_ok(const char *yaml, dlock__config *cfg)
{
    char err[512] = "";
    int rc = dlock__redisson_yaml_parse(cfg, yaml, strlen(yaml), err, sizeof err);

    if (rc != 0)
        fprintf(stderr, "refused: %s\n", err);
    assert_int_equal(rc, 0);
    assert_non_null(cfg->url);
    assert_null(cfg->urls);
}

/* parse_ok with the library's log captured (log_capture.h). */
static void parse_logged(const char *yaml, dlock__config *cfg)
{
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_INFO), 0);
    parse_ok(yaml, cfg);
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
}

/* What every documented example maps: Redisson's timeouts (10 s connect,
 * 3 s response), and nothing else but the defaults. */
static void assert_documented_options(const dlock__config *cfg)
{
    static const dlock_redis_options rd = DLOCK_REDIS_OPTIONS_INIT;
    static const dlock_client_options cd = DLOCK_CLIENT_OPTIONS_INIT;

    assert_int_equal(DLOCK__CONFIG_REDIS(cfg)->connect_timeout_ms, 10000);
    assert_int_equal(DLOCK__CONFIG_REDIS(cfg)->command_timeout_ms, 3000);
    assert_int_equal(cfg->client.watchdog_timeout_ms, cd.watchdog_timeout_ms);
    assert_int_equal(DLOCK__CONFIG_REDIS(cfg)->sync_replicas, rd.sync_replicas);
    assert_int_equal(DLOCK__CONFIG_REDIS(cfg)->lazy_connect, 0);
    assert_int_equal(DLOCK__CONFIG_REDIS(cfg)->pool_size, rd.pool_size);
    assert_int_equal(DLOCK__CONFIG_REDIS(cfg)->tls_insecure, 0);
    assert_null(DLOCK__CONFIG_REDIS(cfg)->tls_cacert);
    assert_null(DLOCK__CONFIG_REDIS(cfg)->tls_cert);
    assert_null(DLOCK__CONFIG_REDIS(cfg)->sentinel_password);
}

static void test_single_documented(void **state)
{
    dlock__config cfg;
    (void)state;

    parse_logged(single_doc, &cfg);
    assert_string_equal(cfg.url, "redis://127.0.0.1:6379");
    assert_documented_options(&cfg);
    /* One line per Java-only field (10 of the section, 4 at the top),
     * each with its position; the mapped ones (connectTimeout, timeout,
     * password, address, database) are not logged. */
    assert_int_equal(dlock_test_log_count("redisson yaml", "ignored"), 14);
    assert_int_equal(dlock_test_log_count("yaml 3:3: singleServerConfig.idleConnectionTimeout "
                                          "ignored", NULL), 1);
    assert_int_equal(dlock_test_log_count("yaml 20:1: codec ignored", NULL), 1);
    assert_int_equal(dlock_test_log_count("yaml 21:1: transportMode ignored", NULL), 1);
    assert_int_equal(dlock_test_log_count("timeout ignored", NULL), 0);
    assert_int_equal(dlock_test_log_count("address", NULL), 0);
    dlock__config_fini(&cfg);
}

static void test_sentinel_documented(void **state)
{
    dlock__config cfg;
    (void)state;

    parse_logged(sentinel_doc, &cfg);
    assert_string_equal(cfg.url, "redis-sentinel://127.0.0.1:26379,127.0.0.1:26389"
                                 "?sentinelMasterId=mymaster");
    assert_documented_options(&cfg);
    assert_int_equal(dlock_test_log_count("yaml 9:3: sentinelServersConfig."
                                          "failedSlaveNodeDetector ignored", NULL), 1);
    assert_int_equal(dlock_test_log_count("sentinelServersConfig.readMode ignored", NULL), 1);
    assert_int_equal(dlock_test_log_count("redisson yaml", "ignored"), 20);
    dlock__config_fini(&cfg);
}

static void test_cluster_documented(void **state)
{
    dlock__config cfg;
    (void)state;

    parse_ok(cluster_doc, &cfg);
    assert_string_equal(cfg.url, "redis-cluster://127.0.0.1:7004,127.0.0.1:7001,127.0.0.1:7000");
    assert_documented_options(&cfg);
    dlock__config_fini(&cfg);
}

/* The URLs the sections make are the backend's: made lazily (no server
 * needed), each is accepted as it is. */
static void test_urls_accepted_by_backend(void **state)
{
    static const char *const docs[] = {single_doc, sentinel_doc, cluster_doc};
    char text[4096], err[512];
    size_t i;
    (void)state;

    for (i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        dlock_client *c = NULL;
        snprintf(text, sizeof text, "%slazyInitialization: true\n", docs[i]);
        err[0] = '\0';
        if (dlock_client_from_redisson_yaml_string(&c, text, err, sizeof err) != 0)
            fprintf(stderr, "example %zu: %s\n", i, err);
        assert_non_null(c);
        dlock_client_free(c);
    }
}

/* Every field dlock has an equivalent for. */
static void test_mapped_fields(void **state)
{
    dlock__config cfg;
    (void)state;

    parse_ok("singleServerConfig:\n"
             "  address: \"rediss://redis.example.com:6380\"\n"
             "  username: app\n"
             "  password: \"p@ss:w/rd %\"\n"
             "  database: 3\n"
             "  connectTimeout: 1500\n"
             "  timeout: \"2500\"\n"
             "  sslTruststore: \"file:///etc/redis/ca.pem\"\n"
             "  sslTruststorePassword: null\n"
             "  sslKeystore: /etc/redis/client.pem\n"
             "  sslKeystoreType: null\n"
             "  sslEnableEndpointIdentification: true\n"
             "lockWatchdogTimeout: 12000\n"
             "checkLockSyncedSlaves: true\n"
             "slavesSyncTimeout: 500\n"
             "lazyInitialization: yes\n",
             &cfg);
    assert_string_equal(cfg.url, "rediss://app:p%40ss%3Aw%2Frd%20%25@redis.example.com:6380/3");
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->connect_timeout_ms, 1500);
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->command_timeout_ms, 2500);
    assert_string_equal(DLOCK__CONFIG_REDIS(&cfg)->tls_cacert, "/etc/redis/ca.pem");
    assert_string_equal(DLOCK__CONFIG_REDIS(&cfg)->tls_cert, "/etc/redis/client.pem");
    assert_string_equal(DLOCK__CONFIG_REDIS(&cfg)->tls_key, "/etc/redis/client.pem");
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->tls_insecure, 0);
    assert_int_equal(cfg.client.watchdog_timeout_ms, 12000);
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->sync_replicas, -1);
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->sync_timeout_ms, 500);
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->lazy_connect, 1);
    dlock__config_fini(&cfg);

    parse_ok("sentinelServersConfig:\n"
             "  sentinelAddresses: [\"rediss://10.0.0.1:26379\", \"valkeys://10.0.0.2:26379\"]\n"
             "  masterName: \"my master\"\n"
             "  password: pw\n"
             "  database: 2\n"
             "  sentinelUsername: sentinel-user\n"
             "  sentinelPassword: sentinel-secret\n"
             "  sslTruststore: ca.crt\n"
             "  sslVerificationMode: NONE\n"
             "checkLockSyncedSlaves: false\n",
             &cfg);
    assert_string_equal(cfg.url, "rediss-sentinel://:pw@10.0.0.1:26379,10.0.0.2:26379/2"
                                 "?sentinelMasterId=my%20master");
    assert_string_equal(DLOCK__CONFIG_REDIS(&cfg)->sentinel_user, "sentinel-user");
    assert_string_equal(DLOCK__CONFIG_REDIS(&cfg)->sentinel_password, "sentinel-secret");
    assert_string_equal(DLOCK__CONFIG_REDIS(&cfg)->tls_cacert, "ca.crt");
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->tls_insecure, 1);
    assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->sync_replicas, 0);
    dlock__config_fini(&cfg);

    parse_ok("clusterServersConfig:\n"
             "  nodeAddresses:\n"
             "  - \"redis://[::1]:7000\"\n"
             "  username: u\n"
             "  password: p\n",
             &cfg);
    assert_string_equal(cfg.url, "redis-cluster://u:p@[::1]:7000");
    dlock__config_fini(&cfg);
}

/* ---- on a real redis-server -------------------------------------------- */

#define SERVER_PW "yaml-s3cret!@"

/* Takes and releases a lock with c; a lease-0 lock runs on the watchdog
 * timeout from the YAML (9000 ms, not the default 30000). */
static void lock_cycle(dlock_client *c, const char *name)
{
    dlock_rlock *l = NULL;
    int64_t ttl = 0;
    int held = 0, locked = 1;

    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(dlock_is_held(l, &held), 0);
    assert_int_equal(held, 1);
    assert_int_equal(dlock_remain_ttl(l, &ttl), 0);
    assert_true(ttl > 0 && ttl <= 9000);
    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_is_locked(l, &locked), 0);
    assert_int_equal(locked, 0);
    dlock_rlock_free(l);
}

/* A client made from yaml (a YAML string, or from_file: a file's path)
 * passes a lock cycle on name. */
static void yaml_lock_cycle(const char *yaml, int from_file, const char *name)
{
    dlock_client *c = NULL;
    char err[512] = "";
    int rc = from_file ? dlock_client_from_redisson_yaml_file(&c, yaml, err, sizeof err)
                       : dlock_client_from_redisson_yaml_string(&c, yaml, err, sizeof err);

    if (rc != 0)
        fprintf(stderr, "%s\n", err);
    assert_non_null(c);
    lock_cycle(c, name);
    dlock_client_free(c);
}

static void test_real_server(void **state)
{
    const char *const args[] = {"--requirepass", SERVER_PW, NULL};
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    char yaml[1024], path[128], err[512] = "";
    FILE *f;
    (void)state;

    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    snprintf(yaml, sizeof yaml,
             "singleServerConfig:\n"
             "  address: \"%s\"\n"
             "  password: \"%s\"\n"
             "  timeout: 10000\n"
             "  connectionPoolSize: 64\n"
             "lockWatchdogTimeout: 9000\n"
             "codec: !<org.redisson.codec.JsonJacksonCodec> {}\n",
             dlock_test_redis_url(r), SERVER_PW);
    yaml_lock_cycle(yaml, 0, "yaml-string-lock");

    /* The same from a file. */
    snprintf(path, sizeof path, "/tmp/yaml-test-%ld.yaml", (long)getpid());
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fputs(yaml, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    yaml_lock_cycle(path, 1, "yaml-file-lock");
    c = (dlock_client *)1;

    /* A wrong password: the server's refusal, not a word of the secret. */
    snprintf(yaml, sizeof yaml,
             "singleServerConfig:\n  address: \"%s\"\n  password: \"Qz7xKv3Wj@Tq5Lm2Pn\"\n",
             dlock_test_redis_url(r));
    assert_int_equal(dlock_client_from_redisson_yaml_string(&c, yaml, err, sizeof err),
                     DLOCK_EAUTH);
    assert_null(c);
    assert_null(strstr(err, "Qz7x"));
    assert_null(strstr(err, "Tq5L"));
    unlink(path);
    dlock_test_redis_stop(r);
}

/* Mutual TLS from Redisson's SSL fields: sslTruststore the CA (a file:
 * URL), sslKeystore one PEM file with the client's certificate and key
 * (the server requires a client certificate: without the keystore the
 * handshake fails). */
static void test_real_server_tls(void **state)
{
    dlock_test_redis *r = NULL;
    dlock_client *c = NULL;
    char yaml[2048], pem[512], line[512], err[512] = "";
    const char *parts[] = {"client.crt", "client.key"};
    FILE *out, *in;
    size_t i;
    (void)state;

    assert_int_equal(dlock_test_redis_start_tls(&r, "yes", 0, NULL), 0);
    snprintf(pem, sizeof pem, "%s/client-both.pem", dlock_test_redis_dir(r));
    assert_non_null(out = fopen(pem, "w"));
    for (i = 0; i < 2; i++) {
        char part[512];
        snprintf(part, sizeof part, "%s/%s", dlock_test_redis_dir(r), parts[i]);
        assert_non_null(in = fopen(part, "r"));
        while (fgets(line, sizeof line, in))
            fputs(line, out);
        fclose(in);
    }
    assert_int_equal(fclose(out), 0);
    snprintf(yaml, sizeof yaml,
             "singleServerConfig:\n"
             "  address: \"rediss://127.0.0.1:%d\"\n"
             "  sslTruststore: \"file:%s/ca.crt\"\n"
             "  sslKeystore: \"%s\"\n"
             "  sslProvider: \"JDK\"\n"
             "  timeout: 10000\n"
             "  connectTimeout: 10000\n"
             "lockWatchdogTimeout: 9000\n",
             dlock_test_redis_tls_port(r), dlock_test_redis_dir(r), pem);
    yaml_lock_cycle(yaml, 0, "yaml-tls-lock");
    c = (dlock_client *)1;

    /* Without the keystore the server refuses us: the field is used. */
    snprintf(yaml, sizeof yaml,
             "singleServerConfig:\n"
             "  address: \"rediss://127.0.0.1:%d\"\n"
             "  sslTruststore: \"%s/ca.crt\"\n",
             dlock_test_redis_tls_port(r), dlock_test_redis_dir(r));
    assert_int_equal(dlock_client_from_redisson_yaml_string(&c, yaml, err, sizeof err),
                     DLOCK_ECONN);
    assert_null(c);
    dlock_test_redis_stop(r);
}

/* ---- bad input ------------------------------------------------------------ */

static const struct bad {
    const char *yaml, *want; /* want: what the message must hold */
} bads[] = {
    /* malformed YAML: libyaml's position and kind */
    {"singleServerConfig:\n  address: \"redis://127.0.0.1:6379\n",
     "yaml:3:1: invalid YAML: found unexpected end of stream"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n timeout: 3\n",
     "yaml:3:2: invalid YAML: did not find expected key"},
    {"singleServerConfig:\n  address: \"redis://h:\xff" "1\"\n",
     "yaml:2:23: invalid YAML: invalid leading UTF-8 octet"},
    {"singleServerConfig: [\n", "yaml:2:1: invalid YAML:"},
    {"", "yaml:1:1: empty document"},
    {"- singleServerConfig\n", "yaml:1:1: the configuration must be a mapping, got a sequence"},
    /* wrong types and ranges */
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  timeout: \"soon\"\n",
     "yaml:3:12: field \"singleServerConfig.timeout\": expected an integer"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  timeout: [1]\n",
     "yaml:3:12: field \"singleServerConfig.timeout\": expected an integer, got a sequence"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  connectTimeout: -1\n",
     "yaml:3:19: field \"singleServerConfig.connectTimeout\": out of range"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  database: 1.5\n",
     "yaml:3:13: field \"singleServerConfig.database\": expected an integer"},
    {"singleServerConfig:\n  address: 6379\n",
     "yaml:2:12: field \"singleServerConfig.address\": expected \"redis://host:port\""},
    {"singleServerConfig:\n  address: {}\n",
     "yaml:2:12: field \"singleServerConfig.address\": expected a string, got a mapping"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\nlockWatchdogTimeout: 2\n",
     "yaml:3:22: field \"lockWatchdogTimeout\": out of range (3.."},
    {"singleServerConfig:\n  address: \"redis://h:1\"\ncheckLockSyncedSlaves: 2\n",
     "yaml:3:24: field \"checkLockSyncedSlaves\": expected true or false"},
    {"singleServerConfig: \"redis://h:1\"\n",
     "yaml:1:21: field \"singleServerConfig\": expected a mapping, got a scalar"},
    {"clusterServersConfig:\n  nodeAddresses: \"redis://h:1\"\n",
     "yaml:2:18: field \"clusterServersConfig.nodeAddresses\": expected a sequence"},
    {"clusterServersConfig:\n  nodeAddresses: []\n",
     "yaml:2:18: field \"clusterServersConfig.nodeAddresses\": expected 1..1000 addresses"},
    /* unknown, misplaced, twice, missing */
    {"singleServerConfig:\n  adress: \"redis://h:1\"\n",
     "yaml:2:3: unknown field in singleServerConfig (did you mean \"address\"?)"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\nlockWatchdogTimout: 5\n",
     "yaml:3:1: unknown field (did you mean \"lockWatchdogTimeout\"?)"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  frobnicate: 1\n",
     "yaml:3:3: unknown field in singleServerConfig (not a field"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  nodeAddresses: []\n",
     "yaml:3:3: field \"nodeAddresses\" is not a field of singleServerConfig"},
    {"clusterServersConfig:\n  nodeAddresses: [\"redis://h:1\"]\n  database: 1\n",
     "yaml:3:3: field \"database\" is not a field of clusterServersConfig"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  timeout: 1\n  timeout: 2\n",
     "yaml:4:3: field \"singleServerConfig.timeout\": given twice"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\nclusterServersConfig:\n"
     "  nodeAddresses: [\"redis://h:1\"]\n",
     "yaml:3:1: field \"clusterServersConfig\": give one server section"},
    {"threads: 16\n", "yaml:1:1: no server section"},
    {"singleServerConfig:\n  timeout: 1\n",
     "yaml:1:1: field \"singleServerConfig\": \"address\" is required"},
    {"sentinelServersConfig:\n  sentinelAddresses: [\"redis://h:1\"]\n",
     "yaml:1:1: field \"sentinelServersConfig\": \"masterName\" is required"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  username: u\n",
     "\"username\" without \"password\""},
    /* unsupported */
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n"
     "  sslTruststore: \"file:/etc/redis/truststore.jks\"\n",
     "yaml:3:18: field \"singleServerConfig.sslTruststore\": unsupported: a Java keystore"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslKeystore: client.p12\n",
     "yaml:3:16: field \"singleServerConfig.sslKeystore\": unsupported: a Java keystore"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslTruststore: classpath:ca.pem\n",
     "yaml:3:18: field \"singleServerConfig.sslTruststore\": unsupported: only a path"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslKeystorePassword: pw\n",
     "yaml:3:3: field \"singleServerConfig.sslKeystorePassword\": unsupported"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslKeystoreType: JKS\n",
     "yaml:3:3: field \"singleServerConfig.sslKeystoreType\": unsupported"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslEnableEndpointIdentification: false\n",
     "yaml:3:3: field \"singleServerConfig.sslEnableEndpointIdentification\": unsupported"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslVerificationMode: CA_ONLY\n",
     "yaml:3:24: field \"singleServerConfig.sslVerificationMode\": unsupported"},
    {"singleServerConfig:\n  address: \"rediss://h:1\"\n  sslProtocols: [TLSv1.3]\n",
     "yaml:3:3: field \"singleServerConfig.sslProtocols\": unsupported"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n"
     "  nameMapper: !<com.example.PrefixMapper> {}\n",
     "yaml:3:3: field \"singleServerConfig.nameMapper\": unsupported"},
    {"masterSlaveServersConfig:\n  masterAddress: \"redis://h:1\"\n",
     "yaml:1:1: field \"masterSlaveServersConfig\": unsupported"},
    {"singleServerConfig:\n  address: \"redis://127.0.0.1:${REDIS_PORT:-6379}\"\n",
     "yaml:2:12: field \"singleServerConfig.address\": unsupported: a ${VARIABLE}"},
    {"sentinelServersConfig:\n  masterName: m\n"
     "  sentinelAddresses: [\"redis://a:1\", \"rediss://b:2\"]\n",
     "yaml:3:38: field \"sentinelServersConfig.sentinelAddresses\": unsupported: redis:// and "
     "rediss:// addresses mixed"},
    {"singleServerConfig:\n  address: \"127.0.0.1:6379\"\n",
     "yaml:2:12: field \"singleServerConfig.address\": expected \"redis://host:port\""},
    {"singleServerConfig:\n  address: \"redis://:pw@127.0.0.1:6379\"\n",
     "yaml:2:12: field \"singleServerConfig.address\": expected host:port after the scheme"},
    {"singleServerConfig:\n  address: \"redis://h:1\"\n  timeout: !<java.lang.Integer> 5\n",
     "yaml:3:12: field \"singleServerConfig.timeout\": expected an integer, got a Java object"},
};

static void test_bad_input(void **state)
{
    dlock_client *c = (dlock_client *)1;
    char err[512];
    size_t i;
    (void)state;

    for (i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        int rc;
        c = (dlock_client *)1;
        err[0] = '\0';
        rc = dlock_client_from_redisson_yaml_string(&c, bads[i].yaml, err, sizeof err);
        if (rc != DLOCK_EINVAL || !strstr(err, bads[i].want))
            fprintf(stderr, "case %zu: %s -> %s \"%s\", expected \"%s\"\n", i, bads[i].yaml,
                    dlock_errname(rc), err, bads[i].want);
        assert_int_equal(rc, DLOCK_EINVAL);
        assert_null(c);
        assert_non_null(strstr(err, bads[i].want));
    }
    /* The arguments, and a file that is not there, or is not a file. */
    assert_int_equal(dlock_client_from_redisson_yaml_string(NULL, single_doc, err, sizeof err),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_client_from_redisson_yaml_string(&c, NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_null(c);
    assert_int_equal(dlock_client_from_redisson_yaml_file(&c, NULL, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_client_from_redisson_yaml_file(&c, "/nonexistent/redisson.yaml", err,
                                                          sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "/nonexistent/redisson.yaml: "));
    assert_int_equal(dlock_client_from_redisson_yaml_file(&c, "/", err, sizeof err),
                     DLOCK_EINVAL);
    assert_null(c);
}

/* ---- bounded time and memory ---------------------------------------------- */

/* A text of at most DLOCK_CONFIG_MAX bytes: head, then unit as many times
 * as fit (at most times; 0: as many as fit) with room for tail, then tail. */
static char *shape(const char *head, const char *unit, size_t times, const char *tail)
{
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail), n, i;
    char *text, *o;

    n = u > 0 ? (DLOCK_CONFIG_MAX - 1 - h - t) / u : 0;
    if (times > 0 && times < n)
        n = times;
    text = malloc(h + n * u + t + 1);
    assert_non_null(text);
    o = text;
    memcpy(o, head, h), o += h;
    for (i = 0; i < n; i++)
        memcpy(o, unit, u), o += u;
    memcpy(o, tail, t + 1);
    assert_true(strlen(text) < DLOCK_CONFIG_MAX);
    return text;
}

/* The parse of text: 0 or the code, its message containing want. */
static void shape_parses(char *text, int code, const char *want)
{
    dlock__config cfg;
    char err[512] = "";
    int rc = dlock__redisson_yaml_parse(&cfg, text, strlen(text), err, sizeof err);

    if (rc != code || (want && !strstr(err, want)))
        fprintf(stderr, "a %zu-byte shape: %s \"%s\", expected %s \"%s\"\n", strlen(text),
                dlock_errname(rc), err, dlock_errname(code), want ? want : "");
    assert_int_equal(rc, code);
    if (want)
        assert_non_null(strstr(err, want));
    if (rc == 0)
        dlock__config_fini(&cfg);
    free(text);
}

#define H10 "hhhhhhhhhh"
#define H100 H10 H10 H10 H10 H10 H10 H10 H10 H10 H10
#define SINGLE_HEAD "singleServerConfig:\n  address: \"redis://h:1\"\n"

/* The shapes that took seconds to minutes and gigabytes (an alias
 * standing for a long address a thousand times, nesting under an ignored
 * field), each just under the size cap, are refused or read: the bounds
 * (backends/redis/redisson_yaml.h) keep every parse linear. By hand, each takes a few
 * ms (README: The configuration a Redisson team already has). */
static void test_bounded_shapes(void **state)
{
    char *text, *big;
    (void)state;

    /* one anchored long address and aliases to it: the address alone is
     * refused; a short one aliased past the bound on what they expand to */
    big = malloc(DLOCK_CONFIG_MAX);
    assert_non_null(big);
    text = shape("", "h", DLOCK_CONFIG_MAX - 10000, "");
    snprintf(big, DLOCK_CONFIG_MAX, "clusterServersConfig:\n  nodeAddresses:\n"
             "  - &a \"redis://%s:1\"\n", text);
    free(text);
    shape_parses(shape(big, "  - *a\n", 999, ""), DLOCK_EINVAL,
                 "the aliases stand for more than 65536 bytes");
    text = shape("clusterServersConfig:\n  nodeAddresses:\n  - &a \"redis://", "h", 2000,
                 ":1\"\n");
    shape_parses(text, DLOCK_EINVAL, "field \"clusterServersConfig.nodeAddresses\": "
                                     "longer than 1024 bytes");
    text = shape("clusterServersConfig:\n  nodeAddresses:\n  - &a \"redis://hhhhhhhhhh:1\"\n",
                 "  - *a\n", 0, "");
    shape_parses(text, DLOCK_EINVAL, "more than 1024 aliases");
    text = shape(SINGLE_HEAD "codec: [", "&a x, ", 0, "]\n");
    shape_parses(text, DLOCK_EINVAL, "more than 256 anchors");
    /* under the bounds, aliases work */
    shape_parses(shape(SINGLE_HEAD "threads: &n 16\nnettyThreads: *n\ncodec: [", "*n, ", 1000,
                       "*n]\n"),
                 0, NULL);
    /* depth: nesting under an ignored field, 2 048 levels read (the
     * bound is JSON's; the top-level mapping is the first level) and one
     * more refused; [ ] and { } (which libyaml rescans at every token)
     * 64 levels */
    shape_parses(shape(SINGLE_HEAD "codec:\n", "- ", 2047, "x\n"), 0, NULL);
    shape_parses(shape(SINGLE_HEAD "codec:\n", "- ", 2048, "x\n"), DLOCK_EINVAL,
                 "4:4095: nested too deeply (more than 2048 levels)");
    shape_parses(shape(SINGLE_HEAD "codec:\n", "- ", 0, "x\n"), DLOCK_EINVAL,
                 "nested too deeply (more than 2048 levels)");
    text = shape(SINGLE_HEAD "codec: ", "[", 0, "");
    shape_parses(text, DLOCK_EINVAL, "3:72: [ ] and { } nested too deeply (more than 64");
    text = shape(SINGLE_HEAD "codec: ", "{a: ", 0, "");
    shape_parses(text, DLOCK_EINVAL, "[ ] and { } nested too deeply");
    {
        char *deep = shape(SINGLE_HEAD "codec: ", "[", 64, "");
        char *closed = shape(deep, "]", 64, "\n");
        free(deep);
        shape_parses(closed, 0, NULL);
        /* as deep as allowed, with nearly as many nodes as allowed */
        deep = shape(SINGLE_HEAD "codec:\n", "- ", 1700, "");
        closed = shape(deep, "[", 64, "");
        free(deep);
        deep = shape(closed, "1,", 14000, "1");
        free(closed);
        closed = shape(deep, "]", 64, "\n");
        free(deep);
        shape_parses(closed, 0, NULL);
    }
    shape_parses(shape(SINGLE_HEAD "codec: [", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],",
                       0, "1]\n"),
                 DLOCK_EINVAL, "more than 16384 nodes");
    /* wide shapes: the nodes are bounded (libyaml's tree costs about
     * 200 bytes a node); long scalars and comments are read */
    shape_parses(shape(SINGLE_HEAD "codec: [", "1,", 0, "1]\n"), DLOCK_EINVAL,
                 "more than 16384 nodes");
    shape_parses(shape(SINGLE_HEAD "codec: {", "a: b, ", 0, "z: 1}\n"), DLOCK_EINVAL,
                 "more than 16384 nodes");
    shape_parses(shape(SINGLE_HEAD "codec: [", "1,", 16000, "1]\n"), 0, NULL);
    shape_parses(shape(SINGLE_HEAD "codec: \"", "x", 0, "\"\n"), 0, NULL);
    shape_parses(shape(SINGLE_HEAD "codec: |\n", "  a literal line\n", 0, ""), 0, NULL);
    shape_parses(shape(SINGLE_HEAD, "# a comment\n", 0, ""), 0, NULL);
    /* a URL longer than the bound, from many short addresses */
    shape_parses(shape("clusterServersConfig:\n  nodeAddresses:\n",
                       "  - \"redis://" H100 ":1\"\n", 1000, ""),
                 DLOCK_EINVAL, "could be longer than 65536 bytes");
    /* one document per file */
    text = shape(SINGLE_HEAD "---\n", "", 1, "singleServerConfig:\n  address: \"redis://k:1\"\n");
    shape_parses(text, DLOCK_EINVAL, "3:1: a second document");
    shape_parses(shape("---\n" SINGLE_HEAD "...\n", "", 1, "---\n"), DLOCK_EINVAL,
                 "a second document");
    shape_parses(shape("---\n" SINGLE_HEAD "...\n", "# after\n", 1, ""), 0, NULL);
    shape_parses(shape("", "", 1, ""), DLOCK_EINVAL, "1:1: empty document");
    free(big);
}

/* ---- no secret in a message ---------------------------------------------- */

#define SECRET "Qz7xKv3Wj@Tq5Lm2Pn"

/* A program's defaults (dlock_config_defaults) fill what a configuration
 * leaves out, JSON or YAML, and what it gives wins; the *_file_with
 * functions tell the options the client was made with. */
static void test_program_defaults(void **state)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT, used;
    dlock_config_defaults d = DLOCK_CONFIG_DEFAULTS_INIT;
    const char *yaml_bare = "singleServerConfig:\n  address: \"redis://127.0.0.1:1\"\n";
    const char *yaml_set = "singleServerConfig:\n  address: \"redis://127.0.0.1:1\"\n"
                           "lockWatchdogTimeout: 4000\nlazyInitialization: false\n";
    const char *json_bare = "{\"url\": \"mock:\"}";
    const char *json_set = "{\"url\": \"mock:\", \"watchdog_timeout_ms\": 5000, "
                           "\"describe_owner\": false, \"lazy_connect\": false}";
    char err[512] = "", path[] = "/tmp/dlock-defaults.XXXXXX";
    dlock__config cfg;
    dlock_client *c = NULL;
    FILE *f;
    int fd;

    o.watchdog_timeout_ms = 7000;
    o.describe_owner = 1;
    o.budget_slack_ms = 2000;
    d.client = &o;
    d.lazy_connect = 1;
    {
        /* text, yaml, with the defaults: watchdog, describe_owner, budget
         * slack and lazy connection parsed */
        const struct {
            const char *text;
            int yaml, with;
            int64_t watchdog, describe, slack, lazy;
        } cases[] = {
            {yaml_bare, 1, 1, 7000, 1, 2000, 1},
            {yaml_set, 1, 1, 4000, 1, 2000, 0},
            {json_bare, 0, 1, 7000, 1, 2000, 1},
            {json_set, 0, 1, 5000, 0, 2000, 0},
            {json_bare, 0, 0, 30000, 0, 50, 0}, /* no defaults: the library's */
        };
        size_t i;

        for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const dlock_config_defaults *with = cases[i].with ? &d : NULL;
            size_t n = strlen(cases[i].text);
            int rc = cases[i].yaml
                         ? dlock__redisson_yaml_parse_from(&cfg, with, cases[i].text, n, err,
                                                           sizeof err)
                         : dlock__config_parse_from(&cfg, with, cases[i].text, n, err,
                                                    sizeof err);
            assert_int_equal(rc, 0);
            assert_int_equal(cfg.client.watchdog_timeout_ms, cases[i].watchdog);
            assert_int_equal(cfg.client.describe_owner, cases[i].describe);
            assert_int_equal(cfg.client.budget_slack_ms, cases[i].slack);
            assert_int_equal(DLOCK__CONFIG_REDIS(&cfg)->lazy_connect, cases[i].lazy);
            dlock__config_fini(&cfg);
        }
    }

    /* the public function, from a file: the options used */
    assert_true((fd = mkstemp(path)) >= 0);
    assert_non_null(f = fdopen(fd, "w"));
    fputs(json_bare, f);
    fclose(f);
    memset(&used, 0, sizeof used);
    assert_int_equal(dlock_client_from_json_file_with(&c, path, &d, &used, err, sizeof err),
                     0);
    assert_int_equal(used.watchdog_timeout_ms, 7000);
    assert_int_equal(used.describe_owner, 1);
    assert_null(used.client_name);
    dlock_client_free(c);
    d.version = 2;
    assert_int_equal(dlock_client_from_json_file_with(&c, path, &d, NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "version"));
    unlink(path);
}

/* Whether s holds 4 bytes in a row of SECRET. */
static int leaks(const char *s)
{
    char piece[5];
    size_t i;

    for (i = 0; i + 4 <= strlen(SECRET); i++) {
        memcpy(piece, SECRET + i, 4);
        piece[4] = '\0';
        if (strstr(s, piece))
            return 1;
    }
    return 0;
}

static void test_no_secret_in_errors(void **state)
{
    static const char *const texts[] = {
        /* the password's string broken */
        "singleServerConfig:\n  password: \"" SECRET "\n",
        "singleServerConfig:\n  password: " SECRET ": x\n",
        "singleServerConfig:\n  password: '" SECRET "\n  address: \"redis://h:1\"\n",
        "singleServerConfig:\n  password: \"" SECRET "\\q\"\n",
        /* the secret where a name or a number goes */
        "singleServerConfig:\n  " SECRET ": 1\n",
        "singleServerConfig:\n  address: \"redis://h:1\"\n  timeout: " SECRET "\n",
        "singleServerConfig:\n  address: \"redis://" SECRET "\"\n",
        "singleServerConfig:\n  address: \"redis://h:1\"\n  password: [" SECRET "]\n",
        "sentinelServersConfig:\n  sentinelAddresses: [\"redis://h:1\"]\n"
        "  masterName: m\n  sentinelPassword: {" SECRET ": 1}\n",
        "singleServerConfig:\n  address: \"redis://h:1\"\n  password: " SECRET "\n"
        "  sslKeystorePassword: " SECRET "\n",
        "singleServerConfig:\n  address: \"redis://h:1\"\n  password: \"${" SECRET "}\"\n",
        SECRET "\n",
    };
    dlock_client *c = NULL;
    char err[512];
    size_t i;
    (void)state;

    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_DEBUG), 0);
    for (i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        err[0] = '\0';
        assert_int_equal(dlock_client_from_redisson_yaml_string(&c, texts[i], err, sizeof err),
                         DLOCK_EINVAL);
        if (leaks(err) || err[0] == '\0')
            fprintf(stderr, "case %zu: \"%s\"\n", i, err);
        assert_true(err[0] != '\0');
        assert_false(leaks(err));
    }
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
    assert_int_equal(dlock_test_log_count("Qz7x", NULL), 0);
    assert_int_equal(dlock_test_log_count("Tq5L", NULL), 0);
}

int dlock_test_redisson_yaml(void);
int dlock_test_redisson_yaml(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_documented),
        cmocka_unit_test(test_sentinel_documented),
        cmocka_unit_test(test_cluster_documented),
        cmocka_unit_test(test_urls_accepted_by_backend),
        cmocka_unit_test(test_mapped_fields),
        cmocka_unit_test(test_real_server),
        cmocka_unit_test(test_real_server_tls),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_no_secret_in_errors),
        cmocka_unit_test(test_bounded_shapes),
        cmocka_unit_test(test_program_defaults),
    };
    return DLOCK_RUN_GROUP("redisson_yaml", tests, NULL, NULL);
}
