/*
 * The Redis backend over TLS: rediss:// URLs, the TLS options, the JSON
 * fields, and each way a TLS connection fails, against throwaway
 * redis-servers with a throwaway PKI made by the openssl command
 * (tests/harness/redis_server.h: dlock_test_redis_start_tls).
 *
 * Servers: "strict" requires client certificates (--tls-auth-clients yes)
 * and also has a plain port; "optional" has TLS only (--port 0) and does
 * not require them; "tls12" requires them and speaks TLS 1.2 only (where a
 * missing client certificate fails inside the handshake itself, while TLS
 * 1.3 servers refuse it just after). (The whole conformance suite runs over TLS too: see
 * tests/main.c.)
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "dlock/config.h"
#include "dlock/redis.h"
#include "dlock/sys/backend.h"
#include "../../harness/asserts.h"
#include "../../harness/inbox.h"
#include "../../harness/log_capture.h"
#include "../../harness/redis_client.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#define SECRET "tlsPassw0rdXyz"

static dlock_test_redis *strict, *optional, *tls12;
static char errbuf[512];

static const dlock_script s_publish = {
    "tls_publish", "return redis.call('PUBLISH', KEYS[1], ARGV[1])"};

/* The default timeouts (a TLS handshake under a sanitizer takes a while),
 * a small pool, a quick reconnect. */
static dlock_redis_options fast_options(void)
{
    dlock_redis_options o = dlock_test_redis_options(0, 0);
    o.pool_size = 2;
    return o;
}

/* "rediss://<userinfo><host>:<tls port>?<query>", the query's "%D" standing
 * for the server's directory (where the certificates are). */
static void url_of(char *out, size_t len, dlock_test_redis *r, const char *userinfo,
                   const char *host, const char *query)
{
    const char *dir = dlock_test_redis_dir(r);
    size_t n = (size_t)snprintf(out, len, "rediss://%s%s:%d", userinfo, host,
                                dlock_test_redis_tls_port(r));
    if (query && *query) {
        out[n++] = '?';
        for (; *query && n + 1 < len; query++) {
            if (query[0] == '%' && query[1] == 'D') {
                n += (size_t)snprintf(out + n, len - n, "%s", dir);
                query++;
            } else {
                out[n++] = *query;
            }
        }
    }
    out[n < len ? n : len - 1] = '\0';
}

static void path_of(char *out, size_t len, dlock_test_redis *r, const char *file)
{
    snprintf(out, len, "%s/%s", dlock_test_redis_dir(r), file);
}

static int open_with(dlock_backend **out, const char *url, const dlock_redis_options *o)
{
    errbuf[0] = '\0';
    *out = NULL;
    return dlock_redis_backend_new(out, url, o, errbuf, sizeof errbuf);
}

static int open_url(dlock_backend **out, const char *url)
{
    dlock_redis_options o = fast_options();
    return open_with(out, url, &o);
}

/* INCR through a script: proves the connection carries commands. */
static long long incr(dlock_backend *b, const char *key)
{
    long long v = dlock_fx_incr(b, key, errbuf, sizeof errbuf);
    if (v < 0)
        fprintf(stderr, "eval: %s\n", errbuf);
    return v;
}

static void expect_works(const char *url, const dlock_redis_options *o)
{
    dlock_backend *b;
    int rc = o ? open_with(&b, url, o) : open_url(&b, url);
    if (rc != 0)
        fprintf(stderr, "url '%s': %s %s\n", url, dlock_errname(rc), errbuf);
    assert_int_equal(rc, 0);
    assert_true(incr(b, "tls:works") > 0);
    dlock_backend_free(b);
}

/* Fails with code, a detail holding needle, and never the password. */
static void expect_fails(const char *url, const dlock_redis_options *o, int code,
                         const char *needle, char *detail, size_t dlen)
{
    dlock_redis_options d = fast_options();
    dlock_fx_expect_open_fails("tls", url, o ? o : &d, code, needle, SECRET, errbuf,
                               sizeof errbuf);
    if (detail)
        snprintf(detail, dlen, "%s", errbuf);
}

/* ---- connecting ----------------------------------------------------------- */

static void tls_connect_by_name_and_ip(void **state)
{
    char url[1024];
    (void)state;
    url_of(url, sizeof url, strict, "", "localhost",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    expect_works(url, NULL);
    url_of(url, sizeof url, strict, ":" SECRET "@", "127.0.0.1",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    /* no password is set on the server: AUTH fails, after TLS worked */
    expect_fails(url, NULL, DLOCK_EAUTH, "AUTH", NULL, 0);
    url_of(url, sizeof url, strict, "", "127.0.0.1",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    expect_works(url, NULL);
    /* the CA directory form (hashed links made with openssl rehash) */
    url_of(url, sizeof url, optional, "", "localhost", "cacertdir=%D/cadir");
    expect_works(url, NULL);
    /* /1: SELECT over TLS */
    snprintf(url, sizeof url, "rediss://localhost:%d/1?cacert=%s/ca.crt",
             dlock_test_redis_tls_port(optional), dlock_test_redis_dir(optional));
    expect_works(url, NULL);
}

static void tls_options_struct(void **state)
{
    char url[1024], ca[300], other[300], cert[300], key[300];
    dlock_redis_options o = fast_options();
    (void)state;
    path_of(ca, sizeof ca, strict, "ca.crt");
    path_of(other, sizeof other, strict, "other-ca.crt");
    path_of(cert, sizeof cert, strict, "client.crt");
    path_of(key, sizeof key, strict, "client.key");

    /* all from the options */
    url_of(url, sizeof url, strict, "", "localhost", NULL);
    o.tls_cacert = ca;
    o.tls_cert = cert;
    o.tls_key = key;
    expect_works(url, &o);
    /* the URL wins over the options, field by field */
    o.tls_cacert = other;
    o.tls_sni = "wrong.example";
    url_of(url, sizeof url, strict, "", "127.0.0.1", "cacert=%D/ca.crt&sni=localhost");
    expect_works(url, &o);
    url_of(url, sizeof url, strict, "", "127.0.0.1", "sni=localhost");
    expect_fails(url, &o, DLOCK_ECONN, "not trusted", NULL, 0);
    /* with redis:// the TLS fields are ignored */
    o.tls_cacert = "/nonexistent/ca.crt";
    expect_works(dlock_test_redis_url(strict), &o);
    /* a struct of a version this library does not know is refused
     * before anything is read past its version */
    o = fast_options();
    o.version = DLOCK_REDIS_OPTIONS_VERSION + 1;
    o.tls_cacert = "/nonexistent/ca.crt";
    o.tls_insecure = 7;
    url_of(url, sizeof url, strict, "", "localhost",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    expect_fails(url, &o, DLOCK_EINVAL, "version must be", NULL, 0);
    /* one this library knows is checked field by field */
    o.version = DLOCK_REDIS_OPTIONS_VERSION;
    expect_fails(url, &o, DLOCK_EINVAL, "tls_insecure", NULL, 0);
    o.tls_insecure = 0;
    url_of(url, sizeof url, strict, "", "localhost", "cert=%D/client.crt&key=%D/client.key");
    expect_fails(url, &o, DLOCK_EINVAL, "cannot read cacert", NULL, 0);
    o.tls_cacert = NULL;
    o.tls_key = key;
    url_of(url, sizeof url, strict, "", "localhost", "cacert=%D/ca.crt");
    expect_fails(url, &o, DLOCK_EINVAL, "both cert and key", NULL, 0);
    /* a key that is not the certificate's */
    o.tls_cert = cert;
    path_of(key, sizeof key, strict, "server.key");
    expect_fails(url, &o, DLOCK_EINVAL, "private key", NULL, 0);
}

/* ---- the three failures -------------------------------------------------- */

static void bad_ca_detail(char *d, size_t n)
{
    char url[1024];
    url_of(url, sizeof url, strict, "user:" SECRET "@", "localhost",
           "cacert=%D/other-ca.crt&cert=%D/client.crt&key=%D/client.key");
    expect_fails(url, NULL, DLOCK_ECONN, "certificate is not trusted", d, n);
}

static void wrong_host_detail(char *d, size_t n)
{
    char url[1024];
    url_of(url, sizeof url, strict, ":" SECRET "@", "127.0.0.1",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key&sni=wrong.example");
    expect_fails(url, NULL, DLOCK_ECONN, "host name", d, n);
}

static void no_client_cert_detail(char *d, size_t n)
{
    char url[1024];
    url_of(url, sizeof url, strict, ":" SECRET "@", "localhost", "cacert=%D/ca.crt");
    expect_fails(url, NULL, DLOCK_ECONN, "handshake", d, n);
}

static void tls_bad_ca(void **state)
{
    char d[512];
    (void)state;
    bad_ca_detail(d, sizeof d);
    assert_non_null(strstr(d, "certificate"));
}

static void tls_wrong_host_name(void **state)
{
    char url[1024], d[512];
    (void)state;
    wrong_host_detail(d, sizeof d);
    assert_non_null(strstr(d, "wrong.example"));
    /* by IP address: the certificate lists 127.0.0.1 but not 127.0.0.2 */
    url_of(url, sizeof url, strict, "", "localhost",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key&sni=127.0.0.2");
    expect_fails(url, NULL, DLOCK_ECONN, "host name '127.0.0.2'", NULL, 0);
}

static void tls_missing_client_cert(void **state)
{
    char url[1024], d[512];
    (void)state;
    no_client_cert_detail(d, sizeof d);
    assert_non_null(strstr(d, "client certificate"));
    url_of(url, sizeof url, tls12, ":" SECRET "@", "localhost", "cacert=%D/ca.crt");
    expect_fails(url, NULL, DLOCK_ECONN, "TLS handshake failed", d, sizeof d);
    assert_non_null(strstr(d, "client certificate"));
    url_of(url, sizeof url, tls12, "", "localhost",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    expect_works(url, NULL);
}

static void tls_failure_details_distinct(void **state)
{
    char ca[512], host[512], hs[512];
    (void)state;
    bad_ca_detail(ca, sizeof ca);
    wrong_host_detail(host, sizeof host);
    no_client_cert_detail(hs, sizeof hs);
    assert_true(strcmp(ca, host) != 0 && strcmp(ca, hs) != 0 && strcmp(host, hs) != 0);
    /* each names its own cause only */
    assert_null(strstr(ca, "host name"));
    assert_null(strstr(ca, "handshake"));
    assert_null(strstr(host, "not trusted"));
    assert_null(strstr(host, "handshake"));
    assert_null(strstr(hs, "not trusted"));
    assert_null(strstr(hs, "host name"));
}

static void tls_insecure(void **state)
{
    char url[1024];
    dlock_redis_options o = fast_options();
    (void)state;
    url_of(url, sizeof url, strict, "", "localhost",
           "cacert=%D/other-ca.crt&cert=%D/client.crt&key=%D/client.key&insecure=1");
    expect_works(url, NULL);
    url_of(url, sizeof url, strict, "", "127.0.0.1",
           "cert=%D/client.crt&key=%D/client.key&insecure=1&sni=wrong.example");
    expect_works(url, NULL);
    /* never the default: the system store does not know the test CA */
    url_of(url, sizeof url, optional, "", "localhost", "");
    expect_fails(url, NULL, DLOCK_ECONN, "not trusted", NULL, 0);
    o.tls_insecure = 1;
    expect_works(url, &o);
    /* insecure=0 in the URL overrides the option */
    url_of(url, sizeof url, optional, "", "localhost", "insecure=0");
    expect_fails(url, &o, DLOCK_ECONN, "not trusted", NULL, 0);
}

/* Verification off is never silent (issue 28): each backend made so
 * logs a warning naming where it came from, the URL's insecure=1 over
 * the application's tls_insecure = 0 included; verification on logs
 * nothing of the kind. */
static void tls_insecure_warned(void **state)
{
    char url[1024];
    dlock_redis_options o = fast_options();
    (void)state;
    dlock_test_log_reset();
    assert_int_equal(dlock_set_log(dlock_test_log_capture, NULL, DLOCK_LOG_WARN), 0);
    url_of(url, sizeof url, optional, "", "localhost", "insecure=1");
    o.tls_insecure = 0;
    expect_works(url, &o);
    assert_int_equal(dlock_test_log_count("verification is OFF",
                                          "insecure=1 in the URL, overriding the options' "
                                          "tls_insecure = 0"), 1);
    url_of(url, sizeof url, optional, "", "localhost", "");
    o.tls_insecure = 1;
    expect_works(url, &o);
    assert_int_equal(dlock_test_log_count("verification is OFF",
                                          "tls_insecure = 1 in the options"), 1);
    url_of(url, sizeof url, optional, "", "localhost", "cacert=%D/ca.crt&insecure=0");
    expect_works(url, &o);
    assert_int_equal(dlock_test_log_count("verification is OFF", NULL), 2);
    assert_int_equal(dlock_set_log(NULL, NULL, 0), 0);
}

static void tls_wrong_port_kind(void **state)
{
    char url[1024];
    dlock_redis_options o = fast_options();
    dlock_backend *b = (dlock_backend *)1;
    int rc;
    (void)state;
    /* plain Redis on a TLS port: the server drops the connection */
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", dlock_test_redis_tls_port(strict));
    rc = open_url(&b, url);
    printf("  [tls] %s\n", errbuf);
    assert_int_equal(rc, DLOCK_ECONN);
    assert_null(b);
    /* TLS to a plain port: Redis waits for a line that never comes */
    o.connect_timeout_ms = 300;
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d?insecure=1",
             dlock_test_redis_port(strict));
    rc = open_with(&b, url, &o);
    printf("  [tls] %s\n", errbuf);
    assert_true(rc == DLOCK_ETIMEDOUT || rc == DLOCK_ECONN);
    assert_null(b);
    assert_non_null(strstr(errbuf, "TLS"));
}

static void tls_optional_client_auth(void **state)
{
    char url[1024];
    (void)state;
    url_of(url, sizeof url, optional, "", "localhost", "cacert=%D/ca.crt");
    expect_works(url, NULL);
    url_of(url, sizeof url, optional, "", "localhost",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    expect_works(url, NULL);
}

/* ---- pub/sub, restarts, clients ------------------------------------------- */

static void publish(dlock_backend *b, const char *channel, const char *msg)
{
    dlock_reply *r = NULL;
    const char *argv[2];
    argv[0] = channel;
    argv[1] = msg;
    assert_int_equal(dlock_backend_eval(b, &r, &s_publish, 1, 1, argv, NULL, errbuf,
                                        sizeof errbuf),
                     0);
    dlock_reply_free(r);
}

static void tls_pubsub_and_restart(void **state)
{
    char url[1024];
    dlock_backend *b;
    dlock_subscription *sub = NULL;
    dlock_test_inbox in;
    int i;
    void (*old)(int);
    (void)state;
    memset(&in, 0, sizeof in);
    pthread_mutex_init(&in.mu, NULL);
    /* Writes to dead TLS connections come back as errors even when SIGPIPE
     * has its default action (the transport's BIO sends with
     * MSG_NOSIGNAL): a signal here would end the test program. */
    old = signal(SIGPIPE, SIG_DFL);
    url_of(url, sizeof url, optional, "", "localhost", "cacert=%D/ca.crt");
    assert_int_equal(open_url(&b, url), 0);
    assert_int_equal(dlock_backend_subscribe(b, &sub, "tls:ch", dlock_test_inbox_on_message, &in), 0);
    publish(b, "tls:ch", "hello");
    assert_int_equal(dlock_test_inbox_wait(&in, 1, 0, 3000), 1);

    assert_int_equal(dlock_test_redis_restart(optional), 0);
    /* the subscriber reconnects over TLS, restores the channel and says
     * "look again" with an empty message */
    assert_int_equal(dlock_test_inbox_wait(&in, 1, 1, 5000), 1);
    /* the pool drops its dead TLS connections and opens new ones */
    for (i = 0; i < 20; i++)
        if (incr(b, "tls:after-restart") > 0)
            break;
    assert_true(i < 20);
    publish(b, "tls:ch", "again");
    assert_int_equal(dlock_test_inbox_wait(&in, 2, 0, 3000), 2);
    dlock_backend_unsubscribe(b, sub);
    dlock_backend_free(b);
    signal(SIGPIPE, old);
    pthread_mutex_destroy(&in.mu);
}

static void tls_client_and_json(void **state)
{
    char url[1024], json[2048], ca[300], cert[300], key[300], err[512];
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    (void)state;
    url_of(url, sizeof url, strict, "", "localhost",
           "cacert=%D/ca.crt&cert=%D/client.crt&key=%D/client.key");
    assert_int_equal(dlock_client_connect(&c, url, NULL, err, sizeof err), 0);
    assert_int_equal(dlock_reentrant_new(&l, c, "tls:client"), 0);
    assert_int_equal(dlock_try_lock(l, 0, 5000), 0);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);

    path_of(ca, sizeof ca, strict, "ca.crt");
    path_of(cert, sizeof cert, strict, "client.crt");
    path_of(key, sizeof key, strict, "client.key");
    url_of(url, sizeof url, strict, "", "127.0.0.1", NULL);
    snprintf(json, sizeof json,
             "{\"url\": \"%s\", \"tls_cacert\": \"%s\", \"tls_cert\": \"%s\",\n"
             " \"tls_key\": \"%s\", \"tls_sni\": \"localhost\", \"tls_insecure\": false}",
             url, ca, cert, key);
    c = NULL;
    if (dlock_client_from_json_string(&c, json, err, sizeof err) != 0)
        fprintf(stderr, "json: %s\n", err);
    assert_non_null(c);
    dlock_client_free(c);
    /* tls_insecure takes 0/1 too; a TLS field of the wrong type names itself */
    snprintf(json, sizeof json,
             "{\"url\": \"%s\", \"tls_cacert\": \"%s\", \"tls_insecure\": 1,\n"
             " \"tls_cert\": \"%s\", \"tls_key\": \"%s\"}", url, ca, cert, key);
    c = NULL;
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err), 0);
    dlock_client_free(c);
    c = NULL;
    assert_int_equal(dlock_client_from_json_string(
                         &c, "{\"url\": \"rediss://h\", \"tls_insecure\": 2}", err,
                         sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "tls_insecure"));
    assert_int_equal(dlock_client_from_json_string(
                         &c, "{\"url\": \"rediss://h\",\n \"tls_sni\": 5}", err,
                         sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "2:2: field \"tls_sni\""));
    assert_int_equal(dlock_client_from_json_string(
                         &c, "{\"url\": \"rediss://h\", \"tls_cert\": \"\"}", err,
                         sizeof err),
                     DLOCK_EINVAL);
    assert_non_null(strstr(err, "tls_cert"));
    /* the untrusted case through the JSON path: the detail comes through */
    snprintf(json, sizeof json, "{\"url\": \"%s\"}", url);
    assert_int_equal(dlock_client_from_json_string(&c, json, err, sizeof err),
                     DLOCK_ECONN);
    assert_non_null(strstr(err, "not trusted"));
    assert_null(c);
}

/* ---- the group -------------------------------------------------------------- */

static int group_setup(void **state)
{
    char cmd[600];
    (void)state;
    static const char *const tls12_args[] = {"--tls-protocols", "TLSv1.2", NULL};
    if (dlock_test_redis_start_tls(&strict, "yes", 1, NULL) != 0 ||
        dlock_test_redis_start_tls(&optional, "optional", 0, NULL) != 0 ||
        dlock_test_redis_start_tls(&tls12, "yes", 0, tls12_args) != 0)
        return -1;
    /* a hashed CA directory for cacertdir= */
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkdir cadir && cp ca.crt cadir/ && "
             "openssl rehash cadir >/dev/null 2>&1",
             dlock_test_redis_dir(optional));
    return system(cmd) == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    dlock_test_redis_stop(strict);
    dlock_test_redis_stop(optional);
    dlock_test_redis_stop(tls12);
    strict = optional = tls12 = NULL;
    return 0;
}

int dlock_test_redis_tls(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tls_connect_by_name_and_ip),
        cmocka_unit_test(tls_options_struct),
        cmocka_unit_test(tls_bad_ca),
        cmocka_unit_test(tls_wrong_host_name),
        cmocka_unit_test(tls_missing_client_cert),
        cmocka_unit_test(tls_failure_details_distinct),
        cmocka_unit_test(tls_insecure),
        cmocka_unit_test(tls_insecure_warned),
        cmocka_unit_test(tls_wrong_port_kind),
        cmocka_unit_test(tls_optional_client_auth),
        cmocka_unit_test(tls_pubsub_and_restart),
        cmocka_unit_test(tls_client_and_json),
    };
    return DLOCK_RUN_GROUP("redis_tls", tests, group_setup, group_teardown);
}
