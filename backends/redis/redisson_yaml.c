/*
 * dlock — the Redisson YAML configuration's parser (api/dlock/config.h,
 * "A Redisson YAML configuration"), on libyaml's document loader.
 *
 * libyaml gives the tree with a position for every node; what a scalar
 * means is the application's to decide (YAML leaves plain scalars to a
 * schema): here a plain null, ~ or nothing is null, a plain or quoted
 * decimal is an integer and true/false (yes/no, on/off, as SnakeYAML
 * under Redisson's Jackson reads them) a boolean, since Jackson coerces
 * a quoted "3000" into an int too.
 *
 * Every field of Redisson's Config and of its single, Sentinel and
 * Cluster server configurations is in the tables below, with what dlock
 * does with it: maps it onto the URL or an option, ignores it with one log
 * line (it only concerns the JVM: threads, codecs, pools, Netty), or
 * refuses it as unsupported, by name and position, when ignoring it would
 * change what is connected to or which keys are used (a name mapper, a
 * Java keystore, a protocol list). A name in none of the tables is
 * unknown, and gets the nearest known name suggested, never echoed.
 *
 * No message quotes the text: a value may be a password, and a broken
 * one moves its pieces elsewhere. libyaml's own messages are constant
 * strings (they never quote input), so they are shown. The document's
 * copies of every scalar and the parser's buffers are wiped before they
 * are freed, and so is every copy made here that may hold a secret. Out
 * of reach: the smaller buffers libyaml outgrows while it scans a long
 * scalar (it reallocates them as they fill, with no allocator hook), and
 * the nodes of a document whose load failed (libyaml frees them itself).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "backends/redis/config.h"
#include "backends/redis/redisson_yaml.h"
#include "core/edit_distance.h"
#include "core/errbuf.h"
#include "core/log.h"
#include "core/wipe.h"

/* Which server sections a field belongs to. */
#define M_SINGLE 0x1
#define M_SENTINEL 0x2
#define M_CLUSTER 0x4
#define M_SERVERS (M_SINGLE | M_SENTINEL | M_CLUSTER)
#define M_REPLICATED (M_SENTINEL | M_CLUSTER) /* BaseMasterSlaveServersConfig */
#define M_TOP 0x8                              /* Config itself */

/* What a field is to dlock. */
enum action {
    A_IGNORE,     /* only concerns Java: logged, whatever its value */
    A_NULL_ONLY,  /* a Java object or list dlock cannot apply: null (or
                     absent) is ignored, anything else is unsupported */
    A_UNSUPPORTED, /* unsupported whatever its value */
    A_SERVER,     /* singleServerConfig, sentinelServersConfig, ... */
    A_ADDRESS,    /* singleServerConfig.address */
    A_ADDRESSES,  /* sentinelAddresses, nodeAddresses */
    A_MASTER_NAME,
    A_PASSWORD,
    A_USERNAME,
    A_SENTINEL_PASSWORD,
    A_SENTINEL_USERNAME,
    A_DATABASE,
    A_CONNECT_TIMEOUT,
    A_TIMEOUT,
    A_TRUSTSTORE,
    A_KEYSTORE,
    A_STORE_PASSWORD, /* sslTruststorePassword */
    A_KEYSTORE_PASSWORD,
    A_KEYSTORE_TYPE,
    A_ENDPOINT_IDENTIFICATION,
    A_VERIFICATION_MODE,
    A_WATCHDOG,
    A_SYNC_CHECK,
    A_SYNC_TIMEOUT,
    A_LAZY,
};

typedef struct yfield {
    const char *name;
    int modes;      /* M_TOP, or the server sections it belongs to */
    int action;
    const char *why; /* A_IGNORE / A_UNSUPPORTED: what the log or error says */
} yfield;

#define JAVA "only concerns the JVM"
#define POOL "a Java connection pool's setting; dlock multiplexes its calls"
#define NETTY "a Netty socket setting"
#define READS "dlock runs every call on the master"

static const yfield fields[] = {
    /* ---- Config (the top level) ---- */
    {"singleServerConfig", M_TOP, A_SERVER, NULL},
    {"sentinelServersConfig", M_TOP, A_SERVER, NULL},
    {"clusterServersConfig", M_TOP, A_SERVER, NULL},
    {"masterSlaveServersConfig", M_TOP, A_UNSUPPORTED,
     "unsupported (dlock has no master/replica mode: use singleServerConfig "
     "with the master's address, or sentinelServersConfig)"},
    {"replicatedServersConfig", M_TOP, A_UNSUPPORTED,
     "unsupported (dlock has no replicated mode: use singleServerConfig with "
     "the primary's address)"},
    {"lockWatchdogTimeout", M_TOP, A_WATCHDOG, NULL},
    {"checkLockSyncedSlaves", M_TOP, A_SYNC_CHECK, NULL},
    {"slavesSyncTimeout", M_TOP, A_SYNC_TIMEOUT, NULL},
    {"lazyInitialization", M_TOP, A_LAZY, NULL},
    {"threads", M_TOP, A_IGNORE, JAVA},
    {"nettyThreads", M_TOP, A_IGNORE, JAVA},
    {"codec", M_TOP, A_IGNORE, "a Java value codec (dlock's are per bucket: "
                               "api/dlock/codec.h)"},
    {"transportMode", M_TOP, A_IGNORE, JAVA},
    {"referenceEnabled", M_TOP, A_IGNORE, JAVA},
    {"nettyHook", M_TOP, A_IGNORE, JAVA},
    {"executor", M_TOP, A_IGNORE, JAVA},
    {"eventLoopGroup", M_TOP, A_IGNORE, JAVA},
    {"nettyExecutor", M_TOP, A_IGNORE, JAVA},
    {"connectionListener", M_TOP, A_IGNORE, JAVA},
    {"addressResolverGroupFactory", M_TOP, A_IGNORE, JAVA},
    {"useScriptCache", M_TOP, A_IGNORE, "dlock always runs scripts with EVALSHA"},
    {"keepPubSubOrder", M_TOP, A_IGNORE, JAVA},
    {"minCleanUpDelay", M_TOP, A_IGNORE, "Redisson's caches' setting"},
    {"maxCleanUpDelay", M_TOP, A_IGNORE, "Redisson's caches' setting"},
    {"cleanUpKeysAmount", M_TOP, A_IGNORE, "Redisson's caches' setting"},
    {"reliableTopicWatchdogTimeout", M_TOP, A_IGNORE, "Redisson's reliable topics' setting"},
    {"useThreadClassLoader", M_TOP, A_IGNORE, JAVA},
    {"protocol", M_TOP, A_IGNORE, "dlock speaks RESP2"},
    {"meterMode", M_TOP, A_IGNORE, JAVA},
    {"meterRegistryProvider", M_TOP, A_IGNORE, JAVA},
    {"performanceMode", M_TOP, A_IGNORE, JAVA},
    {"secretKey", M_TOP, A_NULL_ONLY,
     "unsupported (Redisson PRO's encrypted passwords: give them in clear)"},
    /* ---- BaseConfig: every server section ---- */
    {"idleConnectionTimeout", M_SERVERS, A_IGNORE, POOL},
    {"connectTimeout", M_SERVERS, A_CONNECT_TIMEOUT, NULL},
    {"timeout", M_SERVERS, A_TIMEOUT, NULL},
    {"retryAttempts", M_SERVERS, A_IGNORE,
     "dlock retries within each call's own time budget"},
    {"retryInterval", M_SERVERS, A_IGNORE,
     "dlock retries within each call's own time budget"},
    {"password", M_SERVERS, A_PASSWORD, NULL},
    {"username", M_SERVERS, A_USERNAME, NULL},
    {"credentialsResolver", M_SERVERS, A_NULL_ONLY,
     "unsupported (a Java object: give username and password)"},
    {"subscriptionsPerConnection", M_SERVERS, A_IGNORE, POOL},
    {"subscriptionTimeout", M_SERVERS, A_IGNORE,
     "dlock bounds a subscription by the call's budget"},
    {"clientName", M_SERVERS, A_IGNORE, "dlock names no connection"},
    {"sslProvider", M_SERVERS, A_IGNORE, "dlock uses OpenSSL"},
    {"sslProtocols", M_SERVERS, A_NULL_ONLY,
     "unsupported (dlock speaks TLS 1.2 or later, not a list of its own)"},
    {"sslCiphers", M_SERVERS, A_NULL_ONLY,
     "unsupported (dlock uses OpenSSL's default ciphers)"},
    {"sslEnableEndpointIdentification", M_SERVERS, A_ENDPOINT_IDENTIFICATION, NULL},
    {"sslVerificationMode", M_SERVERS, A_VERIFICATION_MODE, NULL},
    {"sslTruststore", M_SERVERS, A_TRUSTSTORE, NULL},
    {"sslTruststorePassword", M_SERVERS, A_STORE_PASSWORD, NULL},
    {"sslKeystore", M_SERVERS, A_KEYSTORE, NULL},
    {"sslKeystorePassword", M_SERVERS, A_KEYSTORE_PASSWORD, NULL},
    {"sslKeystoreType", M_SERVERS, A_KEYSTORE_TYPE, NULL},
    {"sslTrustManagerFactory", M_SERVERS, A_NULL_ONLY,
     "unsupported (a Java object: give sslTruststore, a PEM file)"},
    {"sslKeyManagerFactory", M_SERVERS, A_NULL_ONLY,
     "unsupported (a Java object: give sslKeystore, a PEM file)"},
    {"pingConnectionInterval", M_SERVERS, A_IGNORE,
     "dlock notices a lost connection on its next call"},
    {"keepAlive", M_SERVERS, A_IGNORE, NETTY},
    {"tcpKeepAliveCount", M_SERVERS, A_IGNORE, NETTY},
    {"tcpKeepAliveIdle", M_SERVERS, A_IGNORE, NETTY},
    {"tcpKeepAliveInterval", M_SERVERS, A_IGNORE, NETTY},
    {"tcpUserTimeout", M_SERVERS, A_IGNORE, NETTY},
    {"tcpNoDelay", M_SERVERS, A_IGNORE, NETTY},
    {"nameMapper", M_SERVERS, A_NULL_ONLY,
     "unsupported (it renames Redisson's keys: dlock would use other locks)"},
    {"commandMapper", M_SERVERS, A_NULL_ONLY,
     "unsupported (dlock sends the commands by their own names)"},
    /* ---- SingleServerConfig ---- */
    {"address", M_SINGLE, A_ADDRESS, NULL},
    {"database", M_SINGLE | M_SENTINEL, A_DATABASE, NULL},
    {"connectionMinimumIdleSize", M_SINGLE, A_IGNORE, POOL},
    {"connectionPoolSize", M_SINGLE, A_IGNORE, POOL},
    {"subscriptionConnectionMinimumIdleSize", M_SERVERS, A_IGNORE, POOL},
    {"subscriptionConnectionPoolSize", M_SERVERS, A_IGNORE, POOL},
    {"dnsMonitoringInterval", M_SERVERS, A_IGNORE,
     "a Redisson DNS check"},
    /* ---- BaseMasterSlaveServersConfig: Sentinel and Cluster ---- */
    {"loadBalancer", M_REPLICATED, A_IGNORE, READS},
    {"readMode", M_REPLICATED, A_IGNORE, READS},
    {"subscriptionMode", M_REPLICATED, A_IGNORE, READS},
    {"slaveConnectionMinimumIdleSize", M_REPLICATED, A_IGNORE, POOL},
    {"slaveConnectionPoolSize", M_REPLICATED, A_IGNORE, POOL},
    {"masterConnectionMinimumIdleSize", M_REPLICATED, A_IGNORE, POOL},
    {"masterConnectionPoolSize", M_REPLICATED, A_IGNORE, POOL},
    {"failedSlaveReconnectionInterval", M_REPLICATED, A_IGNORE, READS},
    {"failedSlaveCheckInterval", M_REPLICATED, A_IGNORE, READS},
    {"failedSlaveNodeDetector", M_REPLICATED, A_IGNORE, READS},
    {"natMapper", M_REPLICATED, A_NULL_ONLY,
     "unsupported (dlock connects to the addresses the servers announce)"},
    {"scanInterval", M_REPLICATED, A_IGNORE,
     "dlock follows topology changes as they are announced or met"},
    /* ---- SentinelServersConfig ---- */
    {"sentinelAddresses", M_SENTINEL, A_ADDRESSES, NULL},
    {"masterName", M_SENTINEL, A_MASTER_NAME, NULL},
    {"sentinelPassword", M_SENTINEL, A_SENTINEL_PASSWORD, NULL},
    {"sentinelUsername", M_SENTINEL, A_SENTINEL_USERNAME, NULL},
    {"checkSentinelsList", M_SENTINEL, A_IGNORE, "a startup check of Redisson's"},
    {"checkSlaveStatusWithSyncing", M_SENTINEL, A_IGNORE, READS},
    {"sentinelsDiscovery", M_SENTINEL, A_IGNORE,
     "dlock asks the sentinels it is given"},
    /* ---- ClusterServersConfig ---- */
    {"nodeAddresses", M_CLUSTER, A_ADDRESSES, NULL},
    {"checkSlotsCoverage", M_CLUSTER, A_IGNORE, "a startup check of Redisson's"},
    {"shardedSubscriptionMode", M_CLUSTER, A_IGNORE,
     "dlock uses sharded pub/sub where the server has it"},
    {"slots", M_CLUSTER, A_IGNORE, "Redisson PRO's data partitioning"},
    {"topicSlots", M_CLUSTER, A_IGNORE, "Redisson PRO's topic partitioning"},
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* Most addresses in sentinelAddresses or nodeAddresses. */
#define MAX_ADDRESSES 1000

/* ---- the state of one parse ------------------------------------------------ */

typedef struct yparse {
    yaml_document_t *doc;
    dlock__config *out;
    dlock_redis_options *redis; /* out's Redis part */
    char *errbuf;
    size_t errlen;
    int mode;                    /* M_SINGLE, M_SENTINEL, M_CLUSTER; 0 none */
    const char *section;         /* its name */
    yaml_node_t *section_key;    /* where it starts */
    int tls;                     /* the addresses' scheme: -1 not seen yet */
    yaml_node_t *address;        /* single: the address node */
    yaml_node_t *addresses;      /* sentinel/cluster: the sequence node */
    const char *master_name;     /* the document's string */
    const char *password;        /* the document's strings (wiped with it) */
    const char *username;
    int64_t database;
} yparse;

static int line_of(const yaml_node_t *n) { return (int)n->start_mark.line + 1; }
static int col_of(const yaml_node_t *n) { return (int)n->start_mark.column + 1; }

/* "<line>:<column>: field \"<section.name>\": <what>". */
static int fail_at(yparse *p, const yaml_node_t *at, const char *section, const char *name,
                   const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

static int fail_at(yparse *p, const yaml_node_t *at, const char *section, const char *name,
                   const char *fmt, ...)
{
    char detail[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return dlock__fail_into(p->errbuf, p->errlen, DLOCK_EINVAL,
                            "%d:%d: field \"%s%s%s\": %s", line_of(at), col_of(at),
                            section ? section : "", section ? "." : "", name, detail);
}

static int oom(yparse *p)
{
    return dlock__fail_into(p->errbuf, p->errlen, DLOCK_ENOMEM, "out of memory");
}

/* ---- scalars ---------------------------------------------------------------- */

static int is_plain(const yaml_node_t *v)
{
    return v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ||
           v->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

static const char *sval(const yaml_node_t *v) { return (const char *)v->data.scalar.value; }

/* A plain null, Null, NULL, ~ or nothing. */
static int is_null(const yaml_node_t *v)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    size_t i;

    if (v->type != YAML_SCALAR_NODE || !is_plain(v))
        return 0;
    for (i = 0; i < sizeof(nulls) / sizeof(nulls[0]); i++)
        if (strcmp(sval(v), nulls[i]) == 0)
            return 1;
    return 0;
}

static const char *kind_of(const yaml_node_t *v)
{
    if (v->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (v->type == YAML_SEQUENCE_NODE)
        return "a sequence";
    if (is_null(v))
        return "null";
    return "a scalar";
}

/* A tag that is not YAML's own (!<org.redisson...>) on a value dlock
 * reads: what it would make of it is Java's. */
static int foreign_tag(const yaml_node_t *v)
{
    return v->tag && strncmp((const char *)v->tag, "tag:yaml.org,2002:", 18) != 0;
}

/* A decimal integer in [min, max] (plain or quoted, as Jackson coerces). */
static int get_int(yparse *p, const char *section, const char *name, const yaml_node_t *v,
                   int64_t min, int64_t max, int64_t *out)
{
    const char *s;
    char *end;
    long long n;

    if (v->type != YAML_SCALAR_NODE || foreign_tag(v))
        return fail_at(p, v, section, name, "expected an integer, got %s",
                       foreign_tag(v) ? "a Java object" : kind_of(v));
    s = sval(v);
    errno = 0;
    n = strtoll(s, &end, 10);
    if (s[0] == '\0' || isspace((unsigned char)s[0]) || *end != '\0' ||
        end != s + v->data.scalar.length)
        return fail_at(p, v, section, name, "expected an integer, got %s",
                       is_null(v) ? "null" : "a scalar that is not a decimal integer");
    /* The number is not shown: a broken string before it may have made
     * a piece of a secret this field's value. */
    if (errno == ERANGE || n < min || n > max)
        return fail_at(p, v, section, name, "out of range (%lld..%lld)", (long long)min,
                       (long long)max);
    *out = (int64_t)n;
    return 0;
}

/* true/false (and YAML 1.1's yes/no, on/off), plain or quoted. */
static int get_bool(yparse *p, const char *section, const char *name, const yaml_node_t *v,
                    int *out)
{
    static const char *const yes[] = {"true", "yes", "on"}, *const no[] = {"false", "no", "off"};
    size_t i;

    if (v->type == YAML_SCALAR_NODE && !foreign_tag(v))
        for (i = 0; i < 3; i++) {
            if (strcasecmp(sval(v), yes[i]) == 0)
                return *out = 1, 0;
            if (strcasecmp(sval(v), no[i]) == 0)
                return *out = 0, 0;
        }
    return fail_at(p, v, section, name, "expected true or false, got %s",
                   v->type == YAML_SCALAR_NODE && !is_null(v) ? "another scalar" : kind_of(v));
}

/* A non-empty string without NUL (the document's: valid until it is
 * deleted). ${VARIABLE}s are Redisson's to substitute: refused. */
static int get_str(yparse *p, const char *section, const char *name, const yaml_node_t *v,
                   const char **out)
{
    if (v->type != YAML_SCALAR_NODE || is_null(v) || foreign_tag(v))
        return fail_at(p, v, section, name, "expected a string, got %s",
                       foreign_tag(v) ? "a Java object" : kind_of(v));
    if (v->data.scalar.length == 0)
        return fail_at(p, v, section, name, "expected a non-empty string");
    if (strlen(sval(v)) != v->data.scalar.length)
        return fail_at(p, v, section, name, "the string holds a NUL character");
    if (strstr(sval(v), "${"))
        return fail_at(p, v, section, name,
                       "unsupported: a ${VARIABLE} (Redisson substitutes them; "
                       "dlock reads the file as it is)");
    *out = sval(v);
    return 0;
}

/* ---- addresses ---------------------------------------------------------- */

/* "redis://host:port" (rediss:// for TLS; valkey:// and valkeys:// are
 * their other names): sets *authority to the part after "://". The host
 * part must be bare: credentials go in password/username. */
static int get_address(yparse *p, const char *section, const char *name,
                       const yaml_node_t *v, const char **authority)
{
    static const struct {
        const char *prefix;
        int tls;
    } schemes[] = {{"redis://", 0}, {"rediss://", 1}, {"valkey://", 0}, {"valkeys://", 1}};
    const char *s;
    size_t i;
    int rc = get_str(p, section, name, v, &s);

    if (rc != 0)
        return rc;
    if (v->data.scalar.length > DLOCK_YAML_ADDRESS_MAX)
        return fail_at(p, v, section, name, "longer than %d bytes", DLOCK_YAML_ADDRESS_MAX);
    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
        if (strncmp(s, schemes[i].prefix, strlen(schemes[i].prefix)) == 0)
            break;
    if (i == sizeof(schemes) / sizeof(schemes[0]))
        return fail_at(p, v, section, name,
                       "expected \"redis://host:port\" (or rediss:// for TLS)");
    s += strlen(schemes[i].prefix);
    if (s[0] == '\0' || s[strcspn(s, "@/?#, \t")] != '\0')
        return fail_at(p, v, section, name,
                       "expected host:port after the scheme, nothing else (credentials go "
                       "in password and username)");
    if (p->tls != -1 && p->tls != schemes[i].tls)
        return fail_at(p, v, section, name,
                       "unsupported: redis:// and rediss:// addresses mixed (dlock "
                       "uses TLS with all of them or none)");
    p->tls = schemes[i].tls;
    *authority = s;
    return 0;
}

/* ---- TLS files -------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

/* sslTruststore / sslKeystore: a path, or a file: URL, to a PEM file
 * (.pem, .crt, .cer, .key), copied into *slot. */
static int get_pem(yparse *p, const char *section, const char *name, const yaml_node_t *v,
                   const char **slot)
{
    static const char *const java[] = {".jks", ".p12", ".pfx", ".jceks", ".bks",
                                       ".keystore", ".truststore"};
    static const char *const pem[] = {".pem", ".crt", ".cer", ".key"};
    const char *s, *colon;
    char *copy;
    size_t i;
    int rc = get_str(p, section, name, v, &s);

    if (rc != 0)
        return rc;
    colon = strchr(s, ':');
    if (strncmp(s, "file:", 5) == 0) {
        s += 5;
        if (strncmp(s, "//", 2) == 0)
            s += 2; /* file:///path */
    } else if (colon && colon > s && s[strspn(s, "abcdefghijklmnopqrstuvwxyz")] == ':') {
        return fail_at(p, v, section, name,
                       "unsupported: only a path or a file: URL can be read");
    }
    for (i = 0; i < sizeof(java) / sizeof(java[0]); i++)
        if (ends_with(s, java[i]))
            return fail_at(p, v, section, name,
                           "unsupported: a Java keystore (JKS or PKCS#12), which dlock "
                           "cannot read; convert it to PEM (keytool -exportcert -rfc, "
                           "openssl pkcs12 -nodes) and name the .pem file");
    for (i = 0; i < sizeof(pem) / sizeof(pem[0]); i++)
        if (ends_with(s, pem[i]))
            break;
    if (s[0] == '\0' || i == sizeof(pem) / sizeof(pem[0]))
        return fail_at(p, v, section, name,
                       "unsupported: not a PEM file by its name (.pem, .crt, .cer or "
                       ".key); dlock cannot read Java keystores");
    copy = strdup(s);
    if (!copy)
        return oom(p);
    free((char *)*slot);
    *slot = copy;
    return 0;
}

/* ---- one field ------------------------------------------------------------ */

static const yfield *find(const char *key, int modes)
{
    size_t i;

    for (i = 0; i < NFIELDS; i++)
        if ((fields[i].modes & modes) && strcmp(fields[i].name, key) == 0)
            return &fields[i];
    return NULL;
}

/* The known name (in modes) within 2 edits of key, or NULL. */
static const yfield *nearest(const char *key, int modes)
{
    const yfield *best = NULL;
    size_t i, d, best_d = 3;

    for (i = 0; i < NFIELDS; i++) {
        if (!(fields[i].modes & modes))
            continue;
        d = dlock__edit_distance(key, fields[i].name);
        if (d < best_d) {
            best = &fields[i];
            best_d = d;
        }
    }
    return best;
}

static int set_string(yparse *p, const char *section, const yfield *f, const yaml_node_t *v,
                      const char **slot)
{
    const char *s;
    char *copy;
    int rc;

    if (is_null(v))
        return 0;
    if ((rc = get_str(p, section, f->name, v, &s)) != 0)
        return rc;
    copy = strdup(s);
    if (!copy)
        return oom(p);
    dlock__wipe_free((char *)*slot);
    *slot = copy;
    return 0;
}

static int do_servers(yparse *p, const yaml_node_t *key, const yfield *f,
                      yaml_node_t *v);

static int apply(yparse *p, const char *section, const yaml_node_t *key, const yfield *f,
                 yaml_node_t *v)
{
    int b, rc = 0;
    const char *s;

    switch (f->action) {
    case A_IGNORE:
        dlock__log(DLOCK_LOG_INFO, "redisson yaml %d:%d: %s%s%s ignored: %s", line_of(key),
                   col_of(key), section ? section : "", section ? "." : "", f->name, f->why);
        return 0;
    case A_NULL_ONLY:
        if (is_null(v)) {
            dlock__log(DLOCK_LOG_INFO, "redisson yaml %d:%d: %s%s%s ignored: null",
                       line_of(key), col_of(key), section ? section : "",
                       section ? "." : "", f->name);
            return 0;
        }
        return fail_at(p, key, section, f->name, "%s", f->why);
    case A_UNSUPPORTED:
        return fail_at(p, key, section, f->name, "%s", f->why);
    case A_SERVER:
        return do_servers(p, key, f, v);
    case A_ADDRESS:
        if ((rc = get_address(p, section, f->name, v, &s)) == 0)
            p->address = v;
        return rc;
    case A_ADDRESSES: {
        yaml_node_item_t *it;
        size_t count = v->type == YAML_SEQUENCE_NODE
                           ? (size_t)(v->data.sequence.items.top - v->data.sequence.items.start)
                           : 0;
        if (v->type != YAML_SEQUENCE_NODE || foreign_tag(v))
            return fail_at(p, v, section, f->name,
                           "expected a sequence of \"redis://host:port\" addresses, got %s",
                           foreign_tag(v) ? "a Java object" : kind_of(v));
        if (count < 1 || count > MAX_ADDRESSES)
            return fail_at(p, v, section, f->name, "expected 1..%d addresses",
                           MAX_ADDRESSES);
        for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++)
            if ((rc = get_address(p, section, f->name,
                                  yaml_document_get_node(p->doc, *it), &s)) != 0)
                return rc;
        p->addresses = v;
        return 0;
    }
    case A_MASTER_NAME:
        return is_null(v) ? 0 : get_str(p, section, f->name, v, &p->master_name);
    case A_PASSWORD:
        return is_null(v) ? 0 : get_str(p, section, f->name, v, &p->password);
    case A_USERNAME:
        return is_null(v) ? 0 : get_str(p, section, f->name, v, &p->username);
    case A_SENTINEL_PASSWORD:
        return set_string(p, section, f, v, &p->redis->sentinel_password);
    case A_SENTINEL_USERNAME:
        return set_string(p, section, f, v, &p->redis->sentinel_user);
    case A_DATABASE:
        return is_null(v) ? 0 : get_int(p, section, f->name, v, 0, INT32_MAX, &p->database);
    case A_CONNECT_TIMEOUT:
        return get_int(p, section, f->name, v, 0, DLOCK_TIME_MAX_MS,
                       &p->redis->connect_timeout_ms);
    case A_TIMEOUT:
        return get_int(p, section, f->name, v, 0, DLOCK_TIME_MAX_MS,
                       &p->redis->command_timeout_ms);
    case A_TRUSTSTORE:
        return is_null(v) ? 0 : get_pem(p, section, f->name, v, &p->redis->tls_cacert);
    case A_KEYSTORE:
        /* One PEM file with the client's certificate (chain) and its key,
         * read for both (OpenSSL skips the blocks of the other kind). */
        if (is_null(v))
            return 0;
        if ((rc = get_pem(p, section, f->name, v, &p->redis->tls_cert)) != 0)
            return rc;
        free((char *)p->redis->tls_key);
        p->redis->tls_key = strdup(p->redis->tls_cert);
        return p->redis->tls_key ? 0 : oom(p);
    case A_STORE_PASSWORD:
        /* A PEM file of certificates has no password. */
        dlock__log(DLOCK_LOG_INFO, "redisson yaml %d:%d: %s.%s ignored: a PEM truststore "
                   "has no password", line_of(key), col_of(key), section, f->name);
        return 0;
    case A_KEYSTORE_PASSWORD:
        if (is_null(v))
            return 0;
        return fail_at(p, key, section, f->name,
                       "unsupported: dlock reads an unencrypted PEM key only");
    case A_KEYSTORE_TYPE:
        if (is_null(v) || (v->type == YAML_SCALAR_NODE && strcasecmp(sval(v), "PEM") == 0))
            return 0;
        return fail_at(p, key, section, f->name,
                       "unsupported: dlock reads PEM files only (null or PEM)");
    case A_ENDPOINT_IDENTIFICATION:
        if ((rc = get_bool(p, section, f->name, v, &b)) != 0 || b)
            return rc;
        return fail_at(p, key, section, f->name,
                       "unsupported: false (dlock checks the host name whenever it "
                       "checks the certificate; sslVerificationMode: NONE turns both off)");
    case A_VERIFICATION_MODE:
        if (is_null(v))
            return 0;
        if (v->type == YAML_SCALAR_NODE && strcmp(sval(v), "STRICT") == 0)
            return p->redis->tls_insecure = 0, 0;
        if (v->type == YAML_SCALAR_NODE && strcmp(sval(v), "NONE") == 0)
            return p->redis->tls_insecure = 1, 0;
        return fail_at(p, v, section, f->name,
                       "unsupported (dlock has STRICT and NONE, not CA_ONLY)");
    case A_WATCHDOG:
        return get_int(p, section, f->name, v, 3, DLOCK_TIME_MAX_MS,
                       &p->out->client.watchdog_timeout_ms);
    case A_SYNC_CHECK:
        if ((rc = get_bool(p, section, f->name, v, &b)) == 0)
            p->redis->sync_replicas = b ? -1 : 0;
        return rc;
    case A_SYNC_TIMEOUT:
        return get_int(p, section, f->name, v, 1, DLOCK_TIME_MAX_MS,
                       &p->redis->sync_timeout_ms);
    case A_LAZY:
        if ((rc = get_bool(p, section, f->name, v, &b)) == 0)
            p->redis->lazy_connect = b;
        return rc;
    default:
        return fail_at(p, key, section, f->name, "internal error");
    }
}

/* Every field of one mapping (the top level: section NULL, modes M_TOP;
 * a server section: its name and mode). */
static int do_mapping(yparse *p, const char *section, int modes, yaml_node_t *map)
{
    unsigned char seen[NFIELDS];
    yaml_node_pair_t *pair;
    int rc;

    memset(seen, 0, sizeof(seen));
    for (pair = map->data.mapping.pairs.start; pair < map->data.mapping.pairs.top; pair++) {
        yaml_node_t *key = yaml_document_get_node(p->doc, pair->key);
        yaml_node_t *v = yaml_document_get_node(p->doc, pair->value);
        const yfield *f;

        if (key->type != YAML_SCALAR_NODE)
            return dlock__fail_into(p->errbuf, p->errlen, DLOCK_EINVAL,
                                    "%d:%d: a field name must be a scalar, got %s",
                                    line_of(key), col_of(key), kind_of(key));
        f = find(sval(key), modes);
        if (!f) {
            /* Not quoted: see the top of the file. */
            const yfield *elsewhere = find(sval(key), M_SERVERS | M_TOP);
            const yfield *near = nearest(sval(key), modes);
            if (elsewhere)
                return dlock__fail_into(p->errbuf, p->errlen, DLOCK_EINVAL,
                                        "%d:%d: field \"%s\" is not a field of %s",
                                        line_of(key), col_of(key), elsewhere->name,
                                        section ? section : "the top level");
            return dlock__fail_into(p->errbuf, p->errlen, DLOCK_EINVAL,
                                    "%d:%d: unknown field%s%s%s%s%s", line_of(key),
                                    col_of(key), section ? " in " : "",
                                    section ? section : "",
                                    near ? " (did you mean \"" : " (not a field of Redisson's "
                                                                 "configuration that dlock "
                                                                 "knows: dlock/config.h)",
                                    near ? near->name : "", near ? "\"?)" : "");
        }
        if (seen[f - fields])
            return fail_at(p, key, section, f->name, "given twice");
        seen[f - fields] = 1;
        if ((rc = apply(p, section, key, f, v)) != 0)
            return rc;
    }
    return 0;
}

static int do_servers(yparse *p, const yaml_node_t *key, const yfield *f, yaml_node_t *v)
{
    int mode = strcmp(f->name, "singleServerConfig") == 0      ? M_SINGLE
               : strcmp(f->name, "sentinelServersConfig") == 0 ? M_SENTINEL
                                                               : M_CLUSTER;

    if (p->mode)
        return fail_at(p, key, NULL, f->name,
                       "give one server section (%s was given at %d:%d)", p->section,
                       line_of(p->section_key), col_of(p->section_key));
    if (v->type != YAML_MAPPING_NODE)
        return fail_at(p, v, NULL, f->name, "expected a mapping, got %s", kind_of(v));
    p->mode = mode;
    p->section = f->name;
    p->section_key = (yaml_node_t *)key;
    return do_mapping(p, f->name, mode, v);
}

/* ---- the URL -------------------------------------------------------------- */

/* Appends s percent-encoded (all but RFC 3986's unreserved characters). */
static char *put_encoded(char *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";

    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    return o;
}

static char *put(char *o, const char *s)
{
    size_t n = strlen(s);
    memcpy(o, s, n);
    return o + n;
}

/* scheme://[user:password@]host:port[,host:port...][/db][?sentinelMasterId=NAME] */
static int make_url(yparse *p)
{
    size_t cap = 64, naddr, i;
    yaml_node_item_t *items = NULL;
    const char *authority;
    char *url, *o;

    if (p->mode == M_SINGLE) {
        naddr = 1;
    } else {
        items = p->addresses->data.sequence.items.start;
        naddr = (size_t)(p->addresses->data.sequence.items.top - items);
    }
    for (i = 0; i < naddr; i++) {
        yaml_node_t *a = p->mode == M_SINGLE ? p->address
                                             : yaml_document_get_node(p->doc, items[i]);
        cap += strlen(sval(a)) + 1;
    }
    cap += 3 * ((p->username ? strlen(p->username) : 0) +
                (p->password ? strlen(p->password) : 0) +
                (p->master_name ? strlen(p->master_name) : 0)) + 40;
    /* cap bounds the URL from above (every byte percent-encoded) */
    if (cap > DLOCK_YAML_URL_MAX)
        return fail_at(p, p->section_key, NULL, p->section,
                       "the URL made of this section could be longer than %d bytes "
                       "(addresses, credentials, masterName)", DLOCK_YAML_URL_MAX);
    url = malloc(cap);
    if (!url)
        return oom(p);
    o = put(url, p->mode == M_SINGLE     ? (p->tls ? "rediss://" : "redis://")
                 : p->mode == M_SENTINEL ? (p->tls ? "rediss-sentinel://" : "redis-sentinel://")
                                         : (p->tls ? "rediss-cluster://" : "redis-cluster://"));
    if (p->password) {
        if (p->username)
            o = put_encoded(o, p->username);
        *o++ = ':';
        o = put_encoded(o, p->password);
        *o++ = '@';
    }
    for (i = 0; i < naddr; i++) {
        yaml_node_t *a = p->mode == M_SINGLE ? p->address
                                             : yaml_document_get_node(p->doc, items[i]);
        authority = strstr(sval(a), "://") + 3;
        if (i > 0)
            *o++ = ',';
        o = put(o, authority);
    }
    if (p->database > 0)
        o += sprintf(o, "/%lld", (long long)p->database);
    if (p->master_name) {
        o = put(o, "?sentinelMasterId=");
        o = put_encoded(o, p->master_name);
    }
    *o = '\0';
    p->out->url = url;
    return 0;
}

/* What the sections lack, after the whole document was read. */
static int check_complete(yparse *p)
{
    if (!p->mode)
        return dlock__fail_into(p->errbuf, p->errlen, DLOCK_EINVAL,
                                "1:1: no server section (singleServerConfig, "
                                "sentinelServersConfig or clusterServersConfig)");
    if (p->mode == M_SINGLE && !p->address)
        return fail_at(p, p->section_key, NULL, p->section,
                       "\"address\" is required (\"redis://host:port\")");
    if (p->mode == M_SENTINEL && !p->addresses)
        return fail_at(p, p->section_key, NULL, p->section, "\"sentinelAddresses\" is required");
    if (p->mode == M_SENTINEL && !p->master_name)
        return fail_at(p, p->section_key, NULL, p->section, "\"masterName\" is required");
    if (p->mode == M_CLUSTER && !p->addresses)
        return fail_at(p, p->section_key, NULL, p->section, "\"nodeAddresses\" is required");
    if (p->username && !p->password)
        return fail_at(p, p->section_key, NULL, p->section,
                       "\"username\" without \"password\" (Redis authenticates a user "
                       "with both)");
    return make_url(p);
}

/* ---- the parse ---------------------------------------------------------------- */

/* The document's copy of every scalar (passwords among them). */
static void wipe_document(yaml_document_t *doc)
{
    yaml_node_t *n;

    for (n = doc->nodes.start; n && n < doc->nodes.top; n++)
        if (n->type == YAML_SCALAR_NODE)
            dlock__wipe(n->data.scalar.value, n->data.scalar.length);
}

/* The parser's copies of the text. */
static void wipe_parser(yaml_parser_t *parser)
{
    if (parser->buffer.start)
        dlock__wipe(parser->buffer.start, (size_t)(parser->buffer.end - parser->buffer.start));
    if (parser->raw_buffer.start)
        dlock__wipe(parser->raw_buffer.start,
                    (size_t)(parser->raw_buffer.end - parser->raw_buffer.start));
}

static int syntax_fail(char *errbuf, size_t errlen, const yaml_parser_t *parser,
                       const char *text, size_t len)
{
    /* libyaml's texts are constants. A reader error (bad UTF-8) has a
     * byte offset, not a mark (the reader runs ahead of the scanner): its
     * line and column are counted here, columns in characters. */
    int line = (int)parser->problem_mark.line + 1, column = (int)parser->problem_mark.column + 1;

    if (parser->error == YAML_MEMORY_ERROR)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    if (parser->error == YAML_READER_ERROR) {
        size_t i;
        line = column = 1;
        for (i = 0; i < parser->problem_offset && i < len; i++) {
            if (text[i] == '\n')
                line++, column = 1;
            else if (((unsigned char)text[i] & 0xC0) != 0x80)
                column++;
        }
    }
    return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "%d:%d: invalid YAML: %s%s%s", line,
                            column, parser->problem ? parser->problem : "syntax error",
                            parser->context ? " " : "", parser->context ? parser->context : "");
}

/* ---- the bounds, before the document is built ------------------------------- */

/* An anchor seen so far: its name and the bytes of text its node spans
 * (what an alias to it stands for). */
typedef struct yanchor {
    char *name;
    size_t bytes;
} yanchor;

typedef struct yscan {
    yanchor anchors[DLOCK_YAML_ANCHORS_MAX];
    size_t nanchors;
    /* the open collections: their start, and their anchor's index + 1 */
    size_t open_at[DLOCK_YAML_DEPTH_MAX];
    size_t open_anchor[DLOCK_YAML_DEPTH_MAX];
    unsigned char open_flow[DLOCK_YAML_DEPTH_MAX];
    size_t depth, flow_depth;
    size_t nodes, aliases, expanded;
    int documents;
} yscan;

static int scan_fail(char *errbuf, size_t errlen, const yaml_mark_t *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int scan_fail(char *errbuf, size_t errlen, const yaml_mark_t *at, const char *fmt, ...)
{
    char detail[200];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "%d:%d: %s", (int)at->line + 1,
                            (int)at->column + 1, detail);
}

/* Records the anchor of a node starting at start (its size known at once
 * for a scalar, at its end for a collection): 0, or the code. */
static int scan_anchor(yscan *s, const yaml_event_t *e, const yaml_char_t *anchor,
                       char *errbuf, size_t errlen)
{
    if (!anchor)
        return 0;
    if (s->nanchors == DLOCK_YAML_ANCHORS_MAX)
        return scan_fail(errbuf, errlen, &e->start_mark, "more than %d anchors",
                         DLOCK_YAML_ANCHORS_MAX);
    s->anchors[s->nanchors].name = strdup((const char *)anchor);
    if (!s->anchors[s->nanchors].name)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    s->anchors[s->nanchors].bytes = e->end_mark.index - e->start_mark.index;
    s->nanchors++;
    return 0;
}

/* One event of the pre-pass: 0, or why the text is refused. */
static int scan_event(yscan *s, const yaml_event_t *e, char *errbuf, size_t errlen)
{
    size_t i;
    int rc, flow;

    if ((e->type == YAML_SCALAR_EVENT || e->type == YAML_ALIAS_EVENT ||
         e->type == YAML_SEQUENCE_START_EVENT || e->type == YAML_MAPPING_START_EVENT) &&
        ++s->nodes > DLOCK_YAML_NODES_MAX)
        return scan_fail(errbuf, errlen, &e->start_mark, "more than %d nodes",
                         DLOCK_YAML_NODES_MAX);
    switch (e->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++s->documents > 1)
            return scan_fail(errbuf, errlen, &e->start_mark,
                             "a second document (a configuration is one document)");
        return 0;
    case YAML_SCALAR_EVENT:
        return scan_anchor(s, e, e->data.scalar.anchor, errbuf, errlen);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        flow = e->type == YAML_SEQUENCE_START_EVENT
                   ? e->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE
                   : e->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE;
        if (s->depth == DLOCK_YAML_DEPTH_MAX)
            return scan_fail(errbuf, errlen, &e->start_mark,
                             "nested too deeply (more than %d levels)", DLOCK_YAML_DEPTH_MAX);
        if (flow && s->flow_depth == DLOCK_YAML_FLOW_DEPTH_MAX)
            return scan_fail(errbuf, errlen, &e->start_mark,
                             "[ ] and { } nested too deeply (more than %d levels)",
                             DLOCK_YAML_FLOW_DEPTH_MAX);
        rc = scan_anchor(s, e, e->type == YAML_SEQUENCE_START_EVENT
                                   ? e->data.sequence_start.anchor
                                   : e->data.mapping_start.anchor, errbuf, errlen);
        if (rc != 0)
            return rc;
        s->open_at[s->depth] = e->start_mark.index;
        s->open_anchor[s->depth] = (e->type == YAML_SEQUENCE_START_EVENT
                                        ? e->data.sequence_start.anchor
                                        : e->data.mapping_start.anchor) ? s->nanchors : 0;
        s->open_flow[s->depth] = (unsigned char)flow;
        s->flow_depth += (size_t)flow;
        s->depth++;
        return 0;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (s->depth == 0)
            return 0;
        s->depth--;
        s->flow_depth -= s->open_flow[s->depth];
        if (s->open_anchor[s->depth])
            s->anchors[s->open_anchor[s->depth] - 1].bytes =
                e->end_mark.index - s->open_at[s->depth];
        return 0;
    case YAML_ALIAS_EVENT:
        if (++s->aliases > DLOCK_YAML_ALIASES_MAX)
            return scan_fail(errbuf, errlen, &e->start_mark, "more than %d aliases",
                             DLOCK_YAML_ALIASES_MAX);
        for (i = s->nanchors; i > 0; i--)
            if (strcmp(s->anchors[i - 1].name, (const char *)e->data.alias.anchor) == 0)
                break;
        /* an unknown anchor is the loader's error, with its own words */
        if (i > 0 && (s->expanded += s->anchors[i - 1].bytes) > DLOCK_YAML_EXPANDED_MAX)
            return scan_fail(errbuf, errlen, &e->start_mark,
                             "the aliases stand for more than %d bytes in all",
                             DLOCK_YAML_EXPANDED_MAX);
        return 0;
    default:
        return 0;
    }
}

/* The pre-pass over the events, which builds nothing: depth, anchors,
 * aliases and what they stand for, and the number of documents are
 * bounded before libyaml's loader builds the tree (whose cost the
 * unbounded shapes would make quadratic, and whose aliases the URL
 * would expand). A syntax error is left to the loader, which reports
 * it the same way. */
static int scan_bounds(const char *text, size_t len, char *errbuf, size_t errlen)
{
    yaml_parser_t parser;
    yaml_event_t e;
    yscan *s = calloc(1, sizeof(*s));
    int rc = 0, done = 0;
    size_t i;

    if (!s || !yaml_parser_initialize(&parser)) {
        free(s);
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    while (rc == 0 && !done) {
        if (!yaml_parser_parse(&parser, &e))
            break;
        done = e.type == YAML_STREAM_END_EVENT;
        rc = scan_event(s, &e, errbuf, errlen);
        yaml_event_delete(&e);
    }
    wipe_parser(&parser);
    yaml_parser_delete(&parser);
    for (i = 0; i < s->nanchors; i++)
        free(s->anchors[i].name);
    free(s);
    return rc;
}

int dlock__redisson_yaml_parse(dlock__config *out, const char *text, size_t len,
                               char *errbuf, size_t errlen)
{
    return dlock__redisson_yaml_parse_from(out, NULL, text, len, errbuf, errlen);
}

int dlock__redisson_yaml_parse_from(dlock__config *out, const dlock_config_defaults *d,
                                    const char *text, size_t len, char *errbuf,
                                    size_t errlen)
{
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_node_t *root;
    yparse p;
    int rc;

    if (dlock__config_start(out, d) != 0)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    memset(&p, 0, sizeof(p));
    p.redis = DLOCK__CONFIG_REDIS(out);
    if (p.redis->lazy_connect == -1)
        p.redis->lazy_connect = 0; /* Redisson's lazyInitialization: false */
    if ((rc = scan_bounds(text, len, errbuf, errlen)) != 0) {
        dlock__config_fini(out);
        return rc;
    }
    if (!yaml_parser_initialize(&parser)) {
        dlock__config_fini(out);
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        rc = syntax_fail(errbuf, errlen, &parser, text, len);
        wipe_parser(&parser);
        yaml_parser_delete(&parser);
        dlock__config_fini(out);
        return rc;
    }
    wipe_parser(&parser);
    yaml_parser_delete(&parser);

    p.doc = &doc;
    p.out = out;
    p.errbuf = errbuf;
    p.errlen = errlen;
    p.tls = -1;
    root = yaml_document_get_root_node(&doc);
    if (!root)
        rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "1:1: empty document");
    else if (root->type != YAML_MAPPING_NODE)
        rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                              "%d:%d: the configuration must be a mapping, got %s",
                              line_of(root), col_of(root), kind_of(root));
    else if ((rc = do_mapping(&p, NULL, M_TOP, root)) == 0)
        rc = check_complete(&p);
    wipe_document(&doc);
    yaml_document_delete(&doc);
    if (rc != 0)
        dlock__config_fini(out);
    return rc;
}
