/*
 * dlock — the one-line failure details that calls write into a caller's
 * errbuf (the codecs, the configuration parser).
 */
#ifndef DLOCK_CORE_ERRBUF_H
#define DLOCK_CORE_ERRBUF_H

#include <stddef.h>

/* Writes a printf-style detail into errbuf (may be NULL, or errlen 0) and
 * returns code, so that `return dlock__fail_into(errbuf, errlen,
 * DLOCK_EPROTO, ...)` reads well. */
int dlock__fail_into(char *errbuf, size_t errlen, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif /* DLOCK_CORE_ERRBUF_H */
