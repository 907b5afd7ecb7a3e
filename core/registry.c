/*
 * dlock — the backend registry: URL scheme -> the function that opens a
 * backend for such a URL (api/dlock/sys/backend.h: dlock_backend_register,
 * dlock_backend_open).
 *
 * The built-in backends (one folder each under backends/) register their
 * schemes the first time any scheme is looked up or registered: the build
 * generates dlock__backends_builtin(), which calls every folder's
 * dlock__backend_register_<folder>(), so that neither core/ nor objects/
 * names a backend, and a static link keeps them all (a constructor
 * function in an archive member that nothing references would be dropped).
 *
 * The table is small and fixed: lookups (one per client made) take its
 * mutex; registrations are rare.
 *
 * The mock is not a built-in: it is its own library (libdlock-mock, so
 * that production binaries carry no Lua), which registers "mock" through
 * dlock_backend_register when it is loaded (backends/mock/register.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dlock/sys/backend.h"

#include "errbuf.h"
#include "registry.h"

#define MAX_SCHEMES 32
/* Schemes are short words: "redis-sentinel" is the longest built-in. */
#define SCHEME_MAX 32

/* The build's list of built-in backends (build/gen/backends.c). */
void dlock__backends_builtin(void);

typedef struct scheme_entry {
    char scheme[SCHEME_MAX + 1];
    dlock_backend_open_fn open;
    void *arg;
} scheme_entry;

static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;
static scheme_entry reg[MAX_SCHEMES];
static size_t nreg;
static pthread_once_t builtin_once = PTHREAD_ONCE_INIT;

static void register_builtins(void)
{
    dlock__backends_builtin();
}

void dlock__backends_builtin_once(void)
{
    pthread_once(&builtin_once, register_builtins);
}

/* 1..SCHEME_MAX characters, a letter first, then letters, digits, '+', '-'
 * and '.' (RFC 3986's scheme), lower case only (one spelling per scheme)
 * unless any_case (what a message may quote as a scheme someone wrote). */
static int scheme_ok(const char *s, size_t n, int any_case)
{
    size_t i;

    if (n == 0 || n > SCHEME_MAX)
        return 0;
    for (i = 0; i < n; i++) {
        char ch = any_case && s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
        if (!((ch >= 'a' && ch <= 'z') ||
              (i > 0 && ((ch >= '0' && ch <= '9') || ch == '+' || ch == '-' || ch == '.'))))
            return 0;
    }
    return 1;
}

/* Mutex held. */
static scheme_entry *find(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < nreg; i++)
        if (strlen(reg[i].scheme) == n && memcmp(reg[i].scheme, s, n) == 0)
            return &reg[i];
    return NULL;
}

int dlock__backend_register(const char *scheme, dlock_backend_open_fn open, void *arg)
{
    size_t n = scheme ? strnlen(scheme, SCHEME_MAX + 1) : 0;
    scheme_entry *e;
    int rc = 0;

    if (!scheme_ok(scheme ? scheme : "", n, 0))
        return DLOCK_EINVAL;
    pthread_mutex_lock(&reg_mutex);
    e = find(scheme, n);
    if (!open) {
        /* removal: the last entry takes the place of the removed one */
        if (e)
            *e = reg[--nreg];
        else
            rc = DLOCK_EINVAL;
    } else if (e) {
        rc = DLOCK_EINVAL; /* taken: pick a scheme of your own */
    } else if (nreg == MAX_SCHEMES) {
        rc = DLOCK_ENOMEM;
    } else {
        memcpy(reg[nreg].scheme, scheme, n);
        reg[nreg].scheme[n] = '\0';
        reg[nreg].open = open;
        reg[nreg].arg = arg;
        nreg++;
    }
    pthread_mutex_unlock(&reg_mutex);
    return rc;
}

int dlock_backend_register(const char *scheme, dlock_backend_open_fn open, void *arg)
{
    dlock__backends_builtin_once();
    return dlock__backend_register(scheme, open, arg);
}

/* The registered schemes, "a:, b: or c:", into buf. Mutex held. */
static void list_schemes(char *buf, size_t len)
{
    size_t i, used = 0;

    buf[0] = '\0';
    for (i = 0; i < nreg && used < len; i++) {
        int w = snprintf(buf + used, len - used, "%s%s:",
                         i == 0 ? "" : i + 1 == nreg ? " or " : ", ",
                         reg[i].scheme);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

int dlock_backend_open(dlock_backend **out, const char *url, const void *options,
                       char *errbuf, size_t errlen)
{
    size_t n;
    scheme_entry *e, copy;

    if (out)
        *out = NULL;
    if (errbuf && errlen > 0)
        errbuf[0] = '\0';
    if (!out || !url)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                "out and url must not be NULL");
    dlock__backends_builtin_once();
    n = strcspn(url, ":");
    pthread_mutex_lock(&reg_mutex);
    e = url[n] == ':' && scheme_ok(url, n, 0) ? find(url, n) : NULL;
    if (!e) {
        char known[200];
        list_schemes(known, sizeof known);
        pthread_mutex_unlock(&reg_mutex);
        /* Echo only the scheme: the rest may carry a password. Text with no
         * ':' after it is no scheme, and may be one (a bare password). */
        if (url[n] != ':' || !scheme_ok(url, n, 1))
            return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                    "no URL scheme (expected scheme:...; registered: %s)",
                                    known);
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                "unknown URL scheme \"%.*s\" (registered: %s)", (int)n,
                                url, known);
    }
    copy = *e;
    pthread_mutex_unlock(&reg_mutex);
    return copy.open(copy.arg, out, url, options, errbuf, errlen);
}
