/*
 * The client from --url / --config / $DLOCK_URL / $DLOCK_CONFIG, and the
 * tool's one-line errors.
 *
 * The URL goes to the library as given (dlock_client_connect), and so
 * does a configuration file (dlock_client_set_from_json_file, which reads
 * a single client's "url" as well as a client set's "urls"; a file whose
 * name ends in .yaml or .yml, dlock_client_from_redisson_yaml_file): every
 * form they accept works here, and their errors never hold a password.
 *
 * The format goes by the name, not by the content: every JSON text is
 * also YAML, so the content could not tell a JSON file with a mistake
 * from a YAML file, and each parser's errors are only useful for its own
 * format.
 */
#include "cli.h"

#include <dlock/config.h>
#include <dlock/sys/backend.h>

#include <jansson.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A C1 control as UTF-8 (U+0080..U+009F: 0xc2 0x80..0x9f) at p: written
 * as \u00HH, and 1 (p is moved onto its last byte); else 0. */
static int put_c1(FILE *f, const unsigned char **p)
{
    if ((*p)[0] != 0xc2 || (*p)[1] < 0x80 || (*p)[1] > 0x9f)
        return 0;
    fprintf(f, "\\u%04x", *++*p);
    return 1;
}

void cli_put_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    for (; p && *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else if (*p == '\\')
            fputs("\\\\", f);
        else if (!put_c1(f, &p))
            putc(*p, f);
    }
}

void cli_put_json(FILE *f, const char *json)
{
    const unsigned char *p = (const unsigned char *)json;

    /* Jansson escapes C0 and DEL is harmless; a C1 byte pair can only be
     * inside a string, where \u00HH means the same character. */
    for (; *p; p++)
        if (!put_c1(f, &p))
            putc(*p, f);
    putc('\n', f);
}

/* The nodes of the client set connected last (connect_json), by address:
 * the library's Redlock errors count nodes from 0 ("node 1 DLOCK_ECONN"),
 * which an operator would have to map onto the configuration's "urls". */
static char node_names[DLOCK_REDLOCK_MAX_NODES][128];
static size_t n_node_names;

void cli_url_endpoint(const char *url, char *out, size_t len)
{
    const char *p = strstr(url, "://"), *end, *at;
    size_t n;

    if (!p) { /* "mock:" and the like: the URL without its query */
        n = strcspn(url, "?");
        snprintf(out, len, "%.*s", (int)n, url);
        return;
    }
    p += 3;
    end = p + strcspn(p, "/?");
    if (end == p) { /* unix:///path: the path */
        n = strcspn(p, "?");
        snprintf(out, len, "%.*s", (int)n, p);
        return;
    }
    /* never the user name or the password */
    for (at = end; at > p && at[-1] != '@'; at--)
        ;
    snprintf(out, len, "%.*s", (int)(end - at), at);
}

const char *cli_node_name(size_t i)
{
    return i < n_node_names ? node_names[i] : NULL;
}

/* Names the n nodes of the set in config, from its "urls" (or "url"). */
static void name_nodes(const char *config, size_t n)
{
    json_error_t jerr;
    json_t *doc = json_load_file(config, 0, &jerr), *urls, *u;
    size_t i;

    n_node_names = 0;
    urls = json_object_get(doc, "urls");
    if (!json_is_array(urls) && json_is_string(json_object_get(doc, "url")))
        urls = json_pack("[O]", json_object_get(doc, "url"));
    else
        json_incref(urls);
    if (json_array_size(urls) == n && n <= DLOCK_REDLOCK_MAX_NODES) {
        json_array_foreach(urls, i, u)
            cli_url_endpoint(json_is_string(u) ? json_string_value(u) : "?",
                             node_names[i], sizeof node_names[i]);
        n_node_names = n;
    }
    json_decref(urls);
    json_decref(doc);
}

/* msg with each "node N DLOCK_..." of the library's Redlock errors as
 * "node HOST:PORT DLOCK_...", into out. */
static void name_nodes_in(const char *msg, char *out, size_t len)
{
    size_t o = 0;
    const char *p = msg;

    while (*p && o + 1 < len) {
        char *end;
        unsigned long i;
        if (strncmp(p, "node ", 5) == 0 && p[5] >= '0' && p[5] <= '9' &&
            (i = strtoul(p + 5, &end, 10)) < n_node_names && end[0] == ' ' &&
            end[1] >= 'A' && end[1] <= 'Z') {
            int k = snprintf(out + o, len - o, "node %s", node_names[i]);
            if (k < 0 || (size_t)k >= len - o)
                break; /* cut */
            o += (size_t)k;
            p = end;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

static void vline(const char *fmt, va_list ap, const char *suffix)
{
    char buf[2048];
    size_t i;

    vsnprintf(buf, sizeof buf, fmt, ap);
    if (n_node_names) {
        char named[sizeof buf];
        name_nodes_in(buf, named, sizeof named);
        memcpy(buf, named, sizeof buf);
    }
    for (i = 0; buf[i]; i++)
        if (buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ' ';
    fputs("dlock: ", stderr);
    cli_put_text(stderr, buf);
    fprintf(stderr, "%s\n", suffix);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap, "");
    va_end(ap);
}

int cli_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap, " (dlock --help for usage)");
    va_end(ap);
    return CLI_USAGE;
}

int cli_common_option(int c, const char *arg, cli_common *co)
{
    switch (c) {
    case 'u':
        co->url = arg;
        return 1;
    case 'C':
        co->config = arg;
        return 1;
    case 'q':
        co->quiet = 1;
        return 1;
    default:
        return 0;
    }
}

static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

/* Where to connect: *url or *config set (the other NULL). 0 or CLI_USAGE
 * after the message. */
static int pick_target(const cli_common *co, const char **url, const char **config)
{
    *url = co->url;
    *config = co->config;
    if (*url && *config)
        return cli_usage("give --url or --config, not both");
    if (*url || *config)
        return 0;
    *url = env_value("DLOCK_URL");
    *config = env_value("DLOCK_CONFIG");
    if (*url && *config)
        return cli_usage("DLOCK_URL and DLOCK_CONFIG are both set: unset one, or "
                         "give --url or --config");
    if (!*url && !*config)
        *url = CLI_DEFAULT_URL;
    return 0;
}

int cli_failed(const char *what, int rc, const char *detail)
{
    if (detail && detail[0])
        cli_error("%s: %s (%s)", what, dlock_strerror(rc), detail);
    else
        cli_error("%s: %s", what, dlock_strerror(rc));
    return CLI_FAILED;
}

void cli_client_options(dlock_client_options *o)
{
    dlock_client_options d = DLOCK_CLIENT_OPTIONS_INIT;

    d.budget_slack_ms = CLI_BUDGET_SLACK_MS;
    /* status and list show who holds a lock: a holder says who it is. */
    d.describe_owner = 1;
    *o = d;
}

/* dlock_client_connect with lazy connection on: the URL's own
 * lazy_connect=0|1 when it has one, else lazy_connect=1 added to its query
 * (the Redis schemes take it, api/dlock/redis.h; the mock, which never
 * connects, takes no query), so that the client's own URL parameters
 * (fair_waiter_timeout_ms, describe_owner) work as they do without it. */
static int connect_lazily(dlock_client **out, const char *url,
                          const dlock_client_options *opts, char *err, size_t errlen)
{
    const char *q = strchr(url, '?');
    size_t n = strlen(url) + sizeof "?lazy_connect=1";
    char *lazy;
    int rc;

    if ((q && strstr(q, "lazy_connect=")) || strncmp(url, "mock:", 5) == 0)
        return dlock_client_connect(out, url, opts, err, errlen);
    if (!(lazy = malloc(n))) {
        snprintf(err, errlen, "out of memory");
        return DLOCK_ENOMEM;
    }
    snprintf(lazy, n, "%s%slazy_connect=1", url, !q ? "?" : q[1] ? "&" : "");
    rc = dlock_client_connect(out, lazy, opts, err, errlen);
    /* it may hold a password */
    memset(lazy, 0, n);
    free(lazy);
    return rc;
}

/* Whether path names a Redisson YAML file: it ends in .yaml or .yml (any
 * case). */
static int is_yaml(const char *path)
{
    size_t n = strlen(path);

    return (n > 5 && strcasecmp(path + n - 5, ".yaml") == 0) ||
           (n > 4 && strcasecmp(path + n - 4, ".yml") == 0);
}

/* The tool's defaults for a configuration file: opts for the fields it
 * does not give, and lazy connection when co asks for it (else the
 * format's own default). */
static void config_defaults(dlock_config_defaults *d, const cli_common *co,
                            const dlock_client_options *opts)
{
    dlock_config_defaults init = DLOCK_CONFIG_DEFAULTS_INIT;

    *d = init;
    d->client = opts;
    if (co->lazy_connect)
        d->lazy_connect = 1;
}

/* The client set of the JSON configuration config (its "urls", or its one
 * "url"), made with the tool's defaults where the file says nothing (opts;
 * NULL: cli_client_options): up to max clients into set, *n of them, the
 * options used into *used (may be NULL), and their names for the
 * messages. 0, or the exit code after the message. */
static int connect_json(dlock_client **set, size_t max, size_t *n, const char *config,
                        const cli_common *co, const dlock_client_options *opts,
                        dlock_client_options *used)
{
    dlock_client_options d;
    dlock_config_defaults defs;
    char err[CLI_ERR_MAX] = "";
    int rc;

    if (!opts) {
        cli_client_options(&d);
        opts = &d;
    }
    config_defaults(&defs, co, opts);
    rc = dlock_client_set_from_json_file_with(set, max, n, config, &defs, used, err,
                                              sizeof err);
    if (rc == DLOCK_EINVAL) {
        /* The configuration is wrong: the caller's to fix, as a bad
         * option is. The library's detail names the file. */
        cli_error("bad configuration: %s", err[0] ? err : dlock_strerror(rc));
        return CLI_USAGE;
    }
    if (rc != 0)
        return cli_failed("cannot connect", rc, err);
    name_nodes(config, *n);
    return 0;
}

int cli_connect(dlock_client **out, const cli_common *co,
                const dlock_client_options *opts)
{
    return cli_connect_used(out, co, opts, NULL);
}

int cli_connect_used(dlock_client **out, const cli_common *co,
                     const dlock_client_options *opts, dlock_client_options *used)
{
    dlock_client_options d;
    dlock_config_defaults defs;
    dlock_client *set[DLOCK_REDLOCK_MAX_NODES];
    const char *url, *config;
    char err[CLI_ERR_MAX] = "";
    size_t n = 0, i;
    int rc;

    if ((rc = pick_target(co, &url, &config)) != 0)
        return rc;
    if (!opts) {
        cli_client_options(&d);
        opts = &d;
    }
    if (config && !is_yaml(config)) {
        if ((rc = connect_json(set, sizeof set / sizeof set[0], &n, config, co, opts,
                               used)) != 0)
            return rc;
        if (n != 1) {
            for (i = 0; i < n; i++)
                dlock_client_free(set[i]);
            return cli_usage("%s: a client set of %zu servers (\"urls\"); this "
                             "command uses one server (\"url\")", config, n);
        }
        *out = set[0];
        return 0;
    }
    if (config) {
        /* A file gets what a URL gets (lazy connection for a command that
         * waits, owner descriptions, the budget slack) where it says
         * nothing itself. */
        config_defaults(&defs, co, opts);
        rc = dlock_client_from_redisson_yaml_file_with(out, config, &defs, used, err,
                                                       sizeof err);
    } else {
        rc = co->lazy_connect ? connect_lazily(out, url, opts, err, sizeof err)
                              : dlock_client_connect(out, url, opts, err, sizeof err);
        if (rc == 0 && used)
            *used = *opts;
    }

    if (rc == DLOCK_EINVAL) {
        /* The URL or the configuration is wrong: the caller's to fix, as
         * a bad option is. The library's detail names the file. */
        cli_error("bad %s: %s", config ? "configuration" : "URL",
                  err[0] ? err : dlock_strerror(rc));
        return CLI_USAGE;
    }
    if (rc != 0)
        return cli_failed("cannot connect", rc, err);
    return 0;
}

int cli_connect_set(dlock_client **set, size_t max, size_t *n, const cli_common *co)
{
    return cli_connect_set_used(set, max, n, co, NULL);
}

int cli_connect_set_used(dlock_client **set, size_t max, size_t *n, const cli_common *co,
                         dlock_client_options *used)
{
    const char *url, *config;
    int rc;

    *n = 0;
    if ((rc = pick_target(co, &url, &config)) != 0)
        return rc;
    if (!config)
        return cli_usage("--redlock needs a client set: --config FILE (or $DLOCK_CONFIG) "
                         "with \"urls\"");
    return connect_json(set, max, n, config, co, NULL, used);
}

int cli_connect_nodes(dlock_client **set, size_t max, size_t *n, const cli_common *co)
{
    const char *url, *config;
    int rc;

    *n = 0;
    if ((rc = pick_target(co, &url, &config)) != 0)
        return rc;
    if (config && !is_yaml(config))
        return connect_json(set, max, n, config, co, NULL, NULL);
    if ((rc = cli_connect(&set[0], co, NULL)) == 0)
        *n = 1;
    return rc;
}

int cli_open_lock(dlock_client **c, dlock_rlock **l, const cli_common *co,
                  const dlock_client_options *opts, const char *name, const char *type)
{
    return cli_open_lock_used(c, l, co, opts, NULL, name, type);
}

int cli_open_lock_used(dlock_client **c, dlock_rlock **l, const cli_common *co,
                       const dlock_client_options *opts, dlock_client_options *used,
                       const char *name, const char *type)
{
    int rc = cli_connect_used(c, co, opts, used);

    if (rc != 0)
        return rc;
    rc = dlock_lock_new(l, *c, type, name);
    if (rc != 0) {
        dlock_client *made = *c;
        *c = NULL;
        if (rc == DLOCK_EINVAL)
            return cli_bad_name(made);
        dlock_client_free(made);
        return cli_failed("cannot make the lock", rc, NULL);
    }
    return 0;
}

int cli_bad_name(dlock_client *c)
{
    char why[300];

    /* read before the client goes: the reason is kept per client */
    snprintf(why, sizeof why, "%s", dlock_client_errmsg(c));
    dlock_client_free(c);
    if (why[0])
        return cli_usage("bad lock name: %s", why);
    return cli_usage("bad lock name (1 to %d bytes)", DLOCK_NAME_MAX);
}
