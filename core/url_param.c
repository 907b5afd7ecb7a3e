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

const char *const dlock__client_url_params[] = {
    "fair_waiter_timeout_ms", "client_name", "metrics_names_max", "describe_owner", NULL,
};

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

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int dlock__pct_decode(char **out, const char *s, size_t n)
{
    char *d = malloc(n + 1);
    size_t i, j = 0;
    *out = NULL;
    if (!d)
        return DLOCK_ENOMEM;
    for (i = 0; i < n; i++) {
        if (s[i] == '%') {
            int hi, lo;
            if (i + 2 >= n || (hi = hexval((unsigned char)s[i + 1])) < 0 ||
                (lo = hexval((unsigned char)s[i + 2])) < 0 || (hi | lo) == 0) {
                dlock__wipe(d, n + 1);
                free(d);
                return DLOCK_EINVAL;
            }
            d[j++] = (char)(hi * 16 + lo);
            i += 2;
        } else {
            d[j++] = s[i];
        }
    }
    d[j] = '\0';
    *out = d;
    return 0;
}

/* What a parameter's value must be: an integer min..max (*num), or a
 * non-empty percent-encoded string (*str, malloc'ed). */
typedef struct want {
    int64_t min, max, *num;
    char **str;
} want;

/* Reads s[0..n) as w asks: 0, or DLOCK_EINVAL / DLOCK_ENOMEM with errbuf
 * naming the parameter (never quoting the value). */
static int take_value(const want *w, const char *name, const char *s, size_t n,
                      char *errbuf, size_t errlen)
{
    int rc;

    if (!w->str) {
        if (dlock__parse_decimal(s, n, w->max, w->num) != 0 || *w->num < w->min)
            return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                    "bad URL: '%s' must be an integer %lld..%lld", name,
                                    (long long)w->min, (long long)w->max);
        return 0;
    }
    if (n == 0)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "bad URL: '%s' is empty",
                                name);
    rc = dlock__pct_decode(w->str, s, n);
    if (rc == DLOCK_EINVAL)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                "bad URL: bad percent-encoding in '%s'", name);
    return rc;
}

/* Takes name=V out of url's query (dlock__url_take_int and _str). */
static int take(const char *url, const char *name, const want *wv, int *given,
                char **rest, char *errbuf, size_t errlen)
{
    size_t nlen = strlen(name), len = strlen(url), w;
    const char *q = dlock__url_query(url), *p;
    char *r;
    int rc;

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
            rc = *given ? dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                           "bad URL: '%s' given twice", name)
                        : take_value(wv, name, p + nlen + 1, n - nlen - 1, errbuf, errlen);
            if (rc != 0) {
                /* r is not terminated yet: wipe all of it (it may hold a
                 * password copied from the URL) */
                dlock__wipe(r, len + 1);
                free(r);
                *rest = NULL;
                if (*given && wv->str) {
                    free(*wv->str);
                    *wv->str = NULL;
                }
                *given = 0;
                return rc;
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

int dlock__url_take_int(const char *url, const char *name, int64_t min, int64_t max,
                        int64_t *out, int *given, char **rest, char *errbuf,
                        size_t errlen)
{
    want w = {min, max, out, NULL};

    return take(url, name, &w, given, rest, errbuf, errlen);
}

int dlock__url_take_str(const char *url, const char *name, char **out, int *given,
                        char **rest, char *errbuf, size_t errlen)
{
    want w = {0, 0, NULL, out};

    *out = NULL;
    return take(url, name, &w, given, rest, errbuf, errlen);
}
