/*
 * dlock — what the codec files share, and nobody outside codecs/ sees.
 */
#ifndef DLOCK_CODECS_INTERNAL_H
#define DLOCK_CODECS_INTERNAL_H

#include <stddef.h>

#include "dlock/codec.h"

/* Writes a printf-style detail into errbuf (may be NULL) and returns code,
 * so that `return dlock__codec_fail(errbuf, errlen, DLOCK_EPROTO, ...)`
 * reads well. */
int dlock__codec_fail(char *errbuf, size_t errlen, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* The offset of the first byte of s[0..n) that is not part of well-formed
 * UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF), or n when all of it is. */
size_t dlock__utf8_check(const char *s, size_t n);

#endif /* DLOCK_CODECS_INTERNAL_H */
