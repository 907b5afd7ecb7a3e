/*
 * libFuzzer target: the Redis URL parser (backends/redis/url.c), linked
 * directly: the public dlock_redis_backend_new would go on to resolve and
 * connect to whatever host the input names.
 *
 * Besides "no crash, no leak, no UB", it checks the parser's promises:
 *  - a parsed URL is unix (an absolute path, no host), TCP (a host, port
 *    1..65535, no path), or sentinel / cluster (no host or path, but 1 or
 *    more addresses, each a host and a port 1..65535; a sentinel URL
 *    names its master);
 *  - no part of a secret ever shows (tests/fuzz/secret.h): the first byte
 *    picks a place (or the raw mode: the rest is the URL as it is), the
 *    second a scheme, the rest is a recipe, and the URL is
 *      scheme "://" A ":" SECRET "@" B          (the password)
 *      scheme "://" A SECRET "@" B              (the user information)
 *      scheme "://" A SEP "sentinel_password=" SECRET B
 *      scheme "://" A SEP "key=" SECRET B
 *      scheme "://" A SEP "password=" SECRET B
 *    with SEP '?', or '&' when A holds a '?' already (so that by the
 *    grammar SECRET is that parameter's value: after a '?' in A a second
 *    '?' would be inside another value). Neither the error message nor
 *    what a parsed URL names for messages and logs (its address, each
 *    sentinel's or seed's, the master's name) may hold 4 bytes of MARKER
 *    (but a unix:// URL's address: it has no user information, so the
 *    first two recipes put SECRET in its socket path).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"
#include "../../backends/redis/url.h"
#include "secret.h"

enum { P_PASSWORD, P_USERINFO, P_SENTINEL_PASSWORD, P_KEY, P_PASSWORD_PARAM, NPLACES };

static const char *const schemes[] = {
    "redis",         "rediss",         "redis-sentinel", "rediss-sentinel",
    "redis-cluster", "rediss-cluster", "unix",           "REDIS",
};
#define NSCHEMES (sizeof schemes / sizeof schemes[0])

static void check_structure(const dlock__redis_url *u)
{
    int i;

    if (u->db < 0)
        abort();
    if (u->is_unix) {
        if (!u->path || u->path[0] != '/' || u->host)
            abort();
        return;
    }
    if (u->is_sentinel || u->is_cluster) {
        if (u->host || u->path || u->naddrs < 1 || !u->addrs)
            abort();
        for (i = 0; i < u->naddrs; i++)
            if (!u->addrs[i].host || u->addrs[i].port < 1 || u->addrs[i].port > 65535)
                abort();
        if (u->is_sentinel && !u->master_name)
            abort();
        return;
    }
    if (!u->host || u->port < 1 || u->port > 65535 || u->path)
        abort();
}

/* What a parsed URL shows of itself in messages and logs. */
static void check_shown(const recipe *r, const dlock__redis_url *u)
{
    int i;

    recipe_check(r, u->where);
    for (i = 0; i < u->naddrs; i++)
        recipe_check(r, u->addrs[i].where);
    recipe_check(r, u->master_name);
}

static char *make_url(const recipe *r, int place, const char *scheme)
{
    static const char *const params[] = {"sentinel_password=", "key=", "password="};
    size_t len = strlen(scheme) + 3 + r->alen + strlen(r->secret) + r->blen + 32;
    char *url = malloc(len);

    if (!url)
        return NULL;
    if (place == P_PASSWORD)
        snprintf(url, len, "%s://%s:%s@%s", scheme, r->a, r->secret, r->b);
    else if (place == P_USERINFO)
        snprintf(url, len, "%s://%s%s@%s", scheme, r->a, r->secret, r->b);
    else
        snprintf(url, len, "%s://%s%c%s%s%s", scheme, r->a, strchr(r->a, '?') ? '&' : '?',
                 params[place - P_SENTINEL_PASSWORD], r->secret, r->b);
    return url;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock__redis_url u;
    recipe r;
    char err[256];
    char *url;
    int place, rc;

    if (size < 2 || size > 4096)
        return 0;
    place = data[0] % (NPLACES + 1);
    if (place == NPLACES) {
        memset(&r, 0, sizeof r); /* raw: nothing judged */
        url = malloc(size);
        if (!url)
            return 0;
        memcpy(url, data + 1, size - 1);
        url[size - 1] = '\0';
    } else {
        if (recipe_read(&r, data + 2, size - 2) != 0) {
            free(r.copy);
            return 0;
        }
        url = make_url(&r, place, schemes[data[1] % NSCHEMES]);
        if (!url) {
            free(r.copy);
            return 0;
        }
    }
    err[0] = '\0';
    rc = dlock__redis_url_parse(&u, url, err, sizeof err);
    if (rc == 0) {
        check_structure(&u);
        /* unix:// has no user information: SECRET "@" is in its path */
        if (!(u.is_unix && place <= P_USERINFO))
            check_shown(&r, &u);
    } else {
        if (rc == DLOCK_EINVAL && err[0] == '\0')
            abort(); /* a refusal always says why */
        recipe_check(&r, err);
    }
    dlock__redis_url_clear(&u);
    free(url);
    free(r.copy);
    return 0;
}
