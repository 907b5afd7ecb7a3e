/*
 * dlock — writing a one-line failure detail into a caller's buffer.
 */
#include <stdarg.h>
#include <stdio.h>

#include "errbuf.h"

int dlock__fail_into(char *errbuf, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (errbuf && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}
