/*
 * libFuzzer target: the Redis URL parser (backends/redis/url.c), linked
 * directly: the public dlock_redis_backend_new would go on to resolve and
 * connect to whatever host the input names.
 *
 * Besides "no crash, no leak, no UB", it checks the parser's promises: a
 * parsed URL is either TCP (host, port 1..65535) or unix (an absolute
 * path), and a password never appears in an error message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../backends/redis/url.h"

/* "redis://user:PASSWORD@rest": when the password (6+ bytes, so that it
 * does not match by accident) occurs nowhere else in the URL, the error
 * message must not contain it. */
static void check_password_hidden(const char *url, const char *err)
{
    const char *at = strrchr(url, '@'), *colon;
    char pw[4097];
    size_t plen;

    if (strncmp(url, "redis://", 8) != 0 || !at)
        return;
    colon = memchr(url + 8, ':', (size_t)(at - (url + 8)));
    if (!colon)
        return;
    plen = (size_t)(at - colon - 1);
    if (plen < 6 || plen >= sizeof pw)
        return;
    memcpy(pw, colon + 1, plen);
    pw[plen] = '\0';
    if (strstr(url, pw) != colon + 1 || strstr(colon + 2, pw) != NULL)
        return;
    if (strstr(err, pw))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock__redis_url u;
    char err[256];
    char *url;
    int rc;

    if (size > 4096)
        return 0;
    url = malloc(size + 1);
    if (!url)
        return 0;
    memcpy(url, data, size);
    url[size] = '\0';
    rc = dlock__redis_url_parse(&u, url, err, sizeof err);
    if (rc == 0) {
        if (u.is_unix ? (!u.path || u.path[0] != '/' || u.host)
                      : (!u.host || u.port < 1 || u.port > 65535 || u.path))
            abort();
        if (u.db < 0)
            abort();
    } else {
        check_password_hidden(url, err);
    }
    dlock__redis_url_clear(&u);
    free(url);
    return 0;
}
