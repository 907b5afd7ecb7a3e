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

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void cli_put_text(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    for (; p && *p; p++) {
        if (*p < 0x20 || *p == 0x7f)
            fprintf(f, "\\x%02x", *p);
        else if (*p == '\\')
            fputs("\\\\", f);
        else if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            fprintf(f, "\\u%04x", *++p); /* a C1 control, UTF-8 */
        else
            putc(*p, f);
    }
}

static void vline(const char *fmt, va_list ap, const char *suffix)
{
    char buf[2048];
    size_t i;

    vsnprintf(buf, sizeof buf, fmt, ap);
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

int cli_connect(dlock_client **out, const cli_common *co,
                const dlock_client_options *opts)
{
    return cli_connect_used(out, co, opts, NULL);
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

int cli_connect_used(dlock_client **out, const cli_common *co,
                     const dlock_client_options *opts, dlock_client_options *used)
{
    dlock_client_options d;
    dlock_config_defaults defs;
    dlock_client *set[64];
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
    /* A file gets what a URL gets (lazy connection for a command that
     * waits, owner descriptions, the budget slack) where it says nothing
     * itself. */
    config_defaults(&defs, co, opts);
    if (config && is_yaml(config)) {
        rc = dlock_client_from_redisson_yaml_file_with(out, config, &defs, used, err,
                                                       sizeof err);
    } else if (config) {
        rc = dlock_client_set_from_json_file_with(set, sizeof set / sizeof set[0], &n,
                                                  config, &defs, used, err, sizeof err);
        if (rc == 0 && n != 1) {
            for (i = 0; i < n; i++)
                dlock_client_free(set[i]);
            return cli_usage("%s: a client set of %zu servers (\"urls\"); this "
                             "command uses one server (\"url\")", config, n);
        }
        if (rc == 0)
            *out = set[0];
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
    char err[CLI_ERR_MAX] = "";
    int rc;

    *n = 0;
    if ((rc = pick_target(co, &url, &config)) != 0)
        return rc;
    if (!config)
        return cli_usage("--redlock needs a client set: --config FILE (or $DLOCK_CONFIG) "
                         "with \"urls\"");
    {
        dlock_client_options o;
        dlock_config_defaults defs;
        cli_client_options(&o);
        config_defaults(&defs, co, &o);
        rc = dlock_client_set_from_json_file_with(set, max, n, config, &defs, used, err,
                                                  sizeof err);
    }
    if (rc == DLOCK_EINVAL) {
        cli_error("bad configuration: %s", err[0] ? err : dlock_strerror(rc));
        return CLI_USAGE;
    }
    if (rc != 0)
        return cli_failed("cannot connect", rc, err);
    return 0;
}

int cli_lock_new(dlock_rlock **out, dlock_client *c, const char *name, cli_flavour f)
{
    switch (f) {
    case CLI_FAIR:
        return dlock_fair_new(out, c, name);
    case CLI_READ:
        return dlock_rwlock_read_new(out, c, name);
    case CLI_WRITE:
        return dlock_rwlock_write_new(out, c, name);
    case CLI_FENCED:
        return dlock_fenced_new(out, c, name);
    case CLI_SEMAPHORE:
        return dlock_semaphore_lock_new(out, c, name);
    case CLI_SIMPLE:
        return dlock_simple_lock_new(out, c, name);
    case CLI_REENTRANT:
        return dlock_reentrant_new(out, c, name);
    default:
        *out = NULL;
        return DLOCK_EINVAL;
    }
}

int cli_open_lock(dlock_client **c, dlock_rlock **l, const cli_common *co,
                  const dlock_client_options *opts, const char *name, cli_flavour f)
{
    return cli_open_lock_used(c, l, co, opts, NULL, name, f);
}

int cli_open_lock_used(dlock_client **c, dlock_rlock **l, const cli_common *co,
                       const dlock_client_options *opts, dlock_client_options *used,
                       const char *name, cli_flavour f)
{
    int rc = cli_connect_used(c, co, opts, used);

    if (rc != 0)
        return rc;
    rc = cli_lock_new(l, *c, name, f);
    if (rc != 0) {
        dlock_client_free(*c);
        *c = NULL;
        if (rc == DLOCK_EINVAL)
            return cli_usage("bad lock name (1 to %d bytes)", DLOCK_NAME_MAX);
        return cli_failed("cannot make the lock", rc, NULL);
    }
    return 0;
}
