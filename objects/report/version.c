/*
 * dlock — the library's version (api/dlock/version.h).
 *
 * The Makefile passes its VERSION split in three (DLOCK_MAKE_VERSION_*), so
 * a release that bumps one and forgets the other does not build.
 */
#include "dlock/version.h"

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
