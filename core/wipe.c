/*
 * dlock — wiping secrets before they are freed (core/wipe.h).
 *
 * explicit_bzero (glibc 2.25, the BSDs) is what the C library offers for
 * this; elsewhere the stores go through a volatile pointer, which the
 * compiler must keep.
 */
#include <stdlib.h>
#include <string.h>

#include "wipe.h"

void dlock__wipe(void *p, size_t n)
{
    if (!p || n == 0)
        return;
#if (defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))) || \
    defined(__OpenBSD__) || defined(__FreeBSD__)
    explicit_bzero(p, n);
#else
    {
        volatile unsigned char *v = p;
        while (n--)
            *v++ = 0;
    }
#endif
}

void dlock__wipe_free(char *s)
{
    if (s) {
        dlock__wipe(s, strlen(s));
        free(s);
    }
}
