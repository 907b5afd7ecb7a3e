/*
 * dlock — what the shared library exports.
 *
 * The library is built with -fvisibility=hidden: only the functions declared
 * with DLOCK_API in the public headers (dlock.h, dlock/ and dlock/sys/) are
 * part of libdlock.so's ABI; the internal dlock__* functions stay private to
 * it. A function a header declares without DLOCK_API would link statically
 * and fail to link against the shared library (`make install-check` checks
 * that the exported set and the declared set are the same).
 */
#ifndef DLOCK_EXPORT_H
#define DLOCK_EXPORT_H

#if defined(__GNUC__) && __GNUC__ >= 4
#define DLOCK_API __attribute__((visibility("default")))
#else
#define DLOCK_API
#endif

#endif /* DLOCK_EXPORT_H */
