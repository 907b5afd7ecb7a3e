/*
 * The client from --url / $DLOCK_URL, and the tool's one-line errors.
 *
 * The URL goes to the library as given (dlock_client_connect): every form
 * it accepts works here, and its errors never hold a password.
 */
#include "cli.h"

#include <dlock/sys/backend.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void vline(const char *fmt, va_list ap, const char *suffix)
{
    char buf[2048];
    size_t i;

    vsnprintf(buf, sizeof buf, fmt, ap);
    for (i = 0; buf[i]; i++)
        if (buf[i] == '\n' || buf[i] == '\r')
            buf[i] = ' ';
    fprintf(stderr, "dlock: %s%s\n", buf, suffix);
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

const char *cli_url(const cli_common *co)
{
    const char *env = getenv("DLOCK_URL");

    if (co->url)
        return co->url;
    return env && env[0] ? env : CLI_DEFAULT_URL;
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
    *o = d;
}

int cli_connect(dlock_client **out, const cli_common *co,
                const dlock_client_options *opts)
{
    dlock_client_options d;
    char err[512] = "";
    int rc;

    if (!opts) {
        cli_client_options(&d);
        opts = &d;
    }
    if (co->lazy_connect) {
        /* The backend by its scheme, as dlock_client_connect finds it, but
         * with lazy connection on (the Redis schemes' options; the mock
         * ignores them). */
        dlock_redis_options ro = DLOCK_REDIS_OPTIONS_INIT;
        dlock_backend *b = NULL;

        ro.lazy_connect = 1;
        *out = NULL;
        rc = dlock_backend_open(&b, cli_url(co), &ro, err, sizeof err);
        if (rc == 0 && (rc = dlock_client_new(out, b, opts)) != 0) {
            dlock_backend_free(b);
            snprintf(err, sizeof err, "invalid client options");
        }
    } else {
        rc = dlock_client_connect(out, cli_url(co), opts, err, sizeof err);
    }

    if (rc == DLOCK_EINVAL) {
        /* The URL (or $DLOCK_URL) is wrong: the caller's to fix, as a bad
         * option is. */
        cli_error("bad URL: %s", err[0] ? err : dlock_strerror(rc));
        return CLI_USAGE;
    }
    if (rc != 0)
        return cli_failed("cannot connect", rc, err);
    return 0;
}

int cli_open_lock(dlock_client **c, dlock_rlock **l, const cli_common *co,
                  const dlock_client_options *opts, const char *name, int fair)
{
    int rc = cli_connect(c, co, opts);

    if (rc != 0)
        return rc;
    rc = fair ? dlock_fair_new(l, *c, name) : dlock_reentrant_new(l, *c, name);
    if (rc != 0) {
        dlock_client_free(*c);
        *c = NULL;
        if (rc == DLOCK_EINVAL)
            return cli_usage("bad lock name (1 to %d bytes)", DLOCK_NAME_MAX);
        return cli_failed("cannot make the lock", rc, NULL);
    }
    return 0;
}
