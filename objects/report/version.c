/*
 * dlock — the library's version (api/dlock/version.h).
 *
 * The Makefile passes its VERSION split in three (DLOCK_MAKE_VERSION_*), so
 * a release that bumps one and forgets the other does not build; and its
 * build switches (DLOCK_WITH_TLS, DLOCK_WITH_YAML: which files it
 * compiled), for dlock_version_info.
 */
#include "dlock/version.h"

#include <stddef.h>
#include <string.h>

#if !defined(DLOCK_WITH_TLS) || !defined(DLOCK_WITH_YAML)
#error "the Makefile passes DLOCK_WITH_TLS and DLOCK_WITH_YAML (0 or 1)"
#endif

#if defined(DLOCK_MAKE_VERSION_MAJOR)
#if DLOCK_MAKE_VERSION_MAJOR != DLOCK_VERSION_MAJOR ||                         \
    DLOCK_MAKE_VERSION_MINOR != DLOCK_VERSION_MINOR ||                         \
    DLOCK_MAKE_VERSION_PATCH != DLOCK_VERSION_PATCH
#error "the Makefile's VERSION and api/dlock/version.h disagree"
#endif
#endif

const char *dlock_version(void)
{
    return DLOCK_VERSION;
}

int dlock_version_number(void)
{
    return DLOCK_VERSION_NUMBER;
}

#if DLOCK_WITH_TLS && DLOCK_WITH_YAML
#define BUILT_WITH "tls yaml"
#elif DLOCK_WITH_TLS
#define BUILT_WITH "tls"
#elif DLOCK_WITH_YAML
#define BUILT_WITH "yaml"
#else
#define BUILT_WITH ""
#endif

const char *dlock_version_info(void)
{
    return BUILT_WITH;
}

int dlock_version_has(const char *part)
{
    static const char built[] = BUILT_WITH;
    const char *p = built;
    size_t n = part ? strlen(part) : 0;

    if (n == 0 || strchr(part, ' '))
        return 0;
    while ((p = strstr(p, part)) != NULL) {
        if ((p == built || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return 1;
        p += n;
    }
    return 0;
}
