/*
 * Redis backend: the one-line failure details written into callers' errbufs.
 */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

void dlock__redis_errf(char *errbuf, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    if (!errbuf || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}
