/*
 * Redis backend: TLS in a build without it (make WITH_TLS=0: the Makefile
 * compiles this file instead of tls.c, and libdlock needs no libssl). A
 * rediss:// URL fails when its backend is made, with DLOCK_ENOTSUP and a
 * detail that says why; nothing else here is ever reached, since no
 * transport gets a TLS context (dlock_version_info() lists no "tls").
 */
#include "dlock/errors.h"

#include "core/errbuf.h"

#include "tls.h"

void dlock__redis_tls_free(dlock__redis_tls *t)
{
    (void)t;
}

int dlock__redis_tls_new(dlock__redis_tls **out,
                         const dlock__redis_tls_params *p, char *errbuf,
                         size_t errlen)
{
    (void)p;
    *out = NULL;
    return dlock__fail_into(errbuf, errlen, DLOCK_ENOTSUP,
                            "TLS: this libdlock was built without TLS "
                            "(make WITH_TLS=0): rediss:// URLs are not supported");
}

int dlock__redis_tls_stream_new(dlock__redis_tls_stream **out,
                                const dlock__redis_tls *tls,
                                dlock__redis_sock *s, const char *host,
                                char *errbuf, size_t errlen)
{
    (void)tls, (void)s, (void)host;
    *out = NULL;
    return dlock__fail_into(errbuf, errlen, DLOCK_ENOTSUP, "TLS: built without TLS");
}

int dlock__redis_tls_handshake(dlock__redis_tls_stream *st, short *wait,
                               char *errbuf, size_t errlen)
{
    (void)st, (void)wait, (void)errbuf, (void)errlen;
    return DLOCK_ENOTSUP;
}

int dlock__redis_tls_write(dlock__redis_tls_stream *st, const char *buf,
                           size_t len, size_t *done, char *errbuf,
                           size_t errlen)
{
    (void)st, (void)buf, (void)len, (void)errbuf, (void)errlen;
    *done = 0;
    return DLOCK_ENOTSUP;
}

int dlock__redis_tls_read(dlock__redis_tls_stream *st, char *buf, size_t cap,
                          size_t *got, char *errbuf, size_t errlen)
{
    (void)st, (void)buf, (void)cap, (void)errbuf, (void)errlen;
    *got = 0;
    return DLOCK_ENOTSUP;
}

int dlock__redis_tls_pending(const dlock__redis_tls_stream *st)
{
    (void)st;
    return 0;
}

int dlock__redis_tls_buffered(const dlock__redis_tls_stream *st)
{
    (void)st;
    return 0;
}

int dlock__redis_tls_stale(dlock__redis_tls_stream *st)
{
    (void)st;
    return 1;
}

void dlock__redis_tls_stream_free(dlock__redis_tls_stream *st)
{
    (void)st;
}
