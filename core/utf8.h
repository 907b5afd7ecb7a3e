/*
 * dlock — UTF-8 validation (core/utf8.c).
 */
#ifndef DLOCK_CORE_UTF8_H
#define DLOCK_CORE_UTF8_H

#include <stddef.h>

/* The offset of the first byte of s[0..n) that is not part of well-formed
 * UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing above
 * U+10FFFF), or n when all of it is. */
size_t dlock__utf8_check(const char *s, size_t n);

#endif /* DLOCK_CORE_UTF8_H */
