/*
 * dlock — the client's URL query parameters and the rules URL parsers
 * share (core/url_param.h).
 */
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"

#include "errbuf.h"
#include "url_param.h"
#include "wipe.h"

const char *dlock__url_query(const char *s)
{
    const char *q = strchr(s, '?');
    const char *at;

    while (q && (at = strchr(q, '@')) != NULL)
        q = strchr(at, '?');
    return q;
}

int dlock__parse_decimal(const char *s, size_t n, int64_t max, int64_t *out)
{
    int64_t v = 0;
    size_t i;

    if (n == 0)
        return -1;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (max - (s[i] - '0')) / 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int dlock__url_take_int(const char *url, const char *name, int64_t min, int64_t max,
                        int64_t *out, int *given, char **rest, char *errbuf,
                        size_t errlen)
{
    size_t nlen = strlen(name), len = strlen(url), w;
    const char *q = dlock__url_query(url), *p;
    char *r;

    *given = 0;
    *rest = r = malloc(len + 1);
    if (!r)
        return DLOCK_ENOMEM;
    if (!q) {
        memcpy(r, url, len + 1);
        return 0;
    }
    /* Everything before the query, then each parameter but ours. */
    w = (size_t)(q - url);
    memcpy(r, url, w);
    for (p = q + 1; p <= url + len;) {
        size_t n = strcspn(p, "&");

        if (n > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
            int twice = *given;

            if (twice || dlock__parse_decimal(p + nlen + 1, n - nlen - 1, max, out) != 0 ||
                *out < min) {
                /* r is not terminated yet: wipe all of it (it may hold a
                 * password copied from the URL) */
                dlock__wipe(r, len + 1);
                free(r);
                *rest = NULL;
                if (twice)
                    return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                            "bad URL: '%s' given twice", name);
                return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                        "bad URL: '%s' must be an integer %lld..%lld",
                                        name, (long long)min, (long long)max);
            }
            *given = 1;
        } else {
            char sep = w == (size_t)(q - url) ? '?' : '&';

            r[w++] = sep;
            memcpy(r + w, p, n);
            w += n;
        }
        p += n + 1;
    }
    r[w] = '\0';
    return 0;
}
