/*
 * dlock — the URL query parameters that belong to the client, not to the
 * backend (api/dlock/client.h: fair_waiter_timeout_ms, client_name,
 * metrics_names_max): the client takes
 * them out of a URL before the backend named by its scheme parses the
 * rest, so that every scheme ("mock:" included) takes them. And the two
 * rules every URL parser of dlock shares: where a query starts, and what
 * a decimal number is.
 */
#ifndef DLOCK_CORE_URL_PARAM_H
#define DLOCK_CORE_URL_PARAM_H

#include <stddef.h>
#include <stdint.h>

/* The parameters every URL takes because the client takes them out first
 * (objects/runtime/client.c), NULL-terminated: for the backends' hints
 * on an unknown parameter. */
extern const char *const dlock__client_url_params[];

/* The '?' that starts the query of s (a URL, or its part after "://"), or
 * NULL: the first '?' after the last '@' before it, since a password may
 * hold a raw '?' and an '@' inside a query value must be written %40. */
const char *dlock__url_query(const char *s);

/* s[0..n) as a decimal integer 0..max (digits only, no sign): 0 and *out,
 * or -1. */
int dlock__parse_decimal(const char *s, size_t n, int64_t max, int64_t *out);

/* Takes the parameter name=N (N in min..max, a duration or a count) out of
 * url's query: *rest = url without it (malloc'ed; the caller wipes and
 * frees it: it may hold a password), *given = whether it was there, *out =
 * its value then. 0; DLOCK_EINVAL with errbuf naming the parameter, never
 * quoting the URL or the value (a value out of range or not a number, the
 * name given twice); DLOCK_ENOMEM. */
int dlock__url_take_int(const char *url, const char *name, int64_t min, int64_t max,
                        int64_t *out, int *given, char **rest, char *errbuf,
                        size_t errlen);

/* The same for name=S, S a non-empty percent-encoded string (%00
 * refused): *out = S decoded (malloc'ed, the caller frees it) when given,
 * else NULL. Messages as above ("is empty", "bad percent-encoding"). */
int dlock__url_take_str(const char *url, const char *name, char **out, int *given,
                        char **rest, char *errbuf, size_t errlen);

/* Decodes s[0..n) (percent-encoding) into a fresh string. %00 is refused:
 * every string of a URL ends up as a C string. 0, DLOCK_EINVAL (a bad or
 * NUL escape), DLOCK_ENOMEM. */
int dlock__pct_decode(char **out, const char *s, size_t n);

#endif /* DLOCK_CORE_URL_PARAM_H */
