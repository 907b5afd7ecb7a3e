/*
 * dlock — the library's version.
 *
 * DLOCK_VERSION_* are the version of the headers a program was compiled
 * with; dlock_version() and dlock_version_number() the version of the
 * library it runs with (they differ when a program built against one
 * release runs with another's shared library). Semantic versioning: the
 * soname (libdlock.so.N) changes with an ABI break.
 *
 * The Makefile's VERSION is the same number: the build stops if they
 * disagree (objects/report/version.c).
 *
 * Thread-safety: both functions are thread-safe and never block.
 */
#ifndef DLOCK_VERSION_H
#define DLOCK_VERSION_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DLOCK_VERSION_MAJOR 1
#define DLOCK_VERSION_MINOR 0
#define DLOCK_VERSION_PATCH 0

/* "1.0.0" */
#define DLOCK_VERSION_STRINGIFY_(x) #x
#define DLOCK_VERSION_STRINGIFY(x) DLOCK_VERSION_STRINGIFY_(x)
#define DLOCK_VERSION                                                          \
    DLOCK_VERSION_STRINGIFY(DLOCK_VERSION_MAJOR) "."                           \
    DLOCK_VERSION_STRINGIFY(DLOCK_VERSION_MINOR) "."                           \
    DLOCK_VERSION_STRINGIFY(DLOCK_VERSION_PATCH)

/* One comparable number: major * 10000 + minor * 100 + patch (1.0.0 is
 * 10000), for `#if DLOCK_VERSION_NUMBER >= 10000`. */
#define DLOCK_VERSION_NUMBER                                                   \
    (DLOCK_VERSION_MAJOR * 10000 + DLOCK_VERSION_MINOR * 100 +                 \
     DLOCK_VERSION_PATCH)

/* The running library's version, "MAJOR.MINOR.PATCH" (static storage). */
DLOCK_API const char *dlock_version(void);

/* The running library's DLOCK_VERSION_NUMBER. */
DLOCK_API int dlock_version_number(void);

/* The optional parts the running library was built with, as words
 * separated by one space, in this order: "tls" (rediss:// URLs, on
 * OpenSSL's libssl), "yaml" (the Redisson YAML configuration, on libyaml);
 * "" when it has neither (make WITH_TLS=0 WITH_YAML=0). A call that needs
 * a part left out fails with DLOCK_ENOTSUP and a detail saying so (a
 * rediss:// URL when the backend is made, dlock_client_from_redisson_yaml_*).
 * Static storage. */
DLOCK_API const char *dlock_version_info(void);

/* 1 if the running library was built with the part named (a word of
 * dlock_version_info()), else 0 (NULL or an unknown name included). */
DLOCK_API int dlock_version_has(const char *part);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_VERSION_H */
