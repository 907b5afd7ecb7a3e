/*
 * dlock — error codes.
 *
 * Every fallible dlock call returns int: 0 on success, a negative DLOCK_E*
 * code on failure. The codes, their names and their messages come from one
 * table (DLOCK_ERROR_TABLE) so they can never drift apart.
 *
 * "Someone else holds it" (DLOCK_EBUSY), "the lease ran out" (DLOCK_ELOST) and
 * "the backend is unreachable" (DLOCK_ECONN) are always different codes.
 *
 * Thread-safety: every function here is thread-safe and never blocks.
 */
#ifndef DLOCK_ERRORS_H
#define DLOCK_ERRORS_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, message) */
#define DLOCK_ERROR_TABLE(X)                                                   \
    X(OK, 0, "success")                                                        \
    X(EBUSY, -1, "held by another owner")                                      \
    X(ETIMEDOUT, -2, "the time budget ran out")                                \
    X(ENOTOWNER, -3, "the caller does not hold the lock")                      \
    X(ELOST, -4, "the caller's lease expired or its renewal was lost")         \
    X(EDEADLK, -5, "the call could only deadlock")                             \
    X(EINVAL, -6, "invalid argument")                                          \
    X(ENOMEM, -7, "out of memory")                                             \
    X(ECONN, -8, "backend unreachable or connection lost")                     \
    X(EPROTO, -9, "server error reply or unexpected reply")                    \
    X(ENOTSUP, -10, "operation not supported by this object or backend")      \
    X(EAUTH, -11, "authentication with the backend failed")                    \
    X(EFORKED, -12, "object used in a fork() child; create a new client")    \
    X(ECANCELED, -13, "the wait was canceled (dlock_op_cancel, dlock_client_cancel_waits)") \
    X(ESYNC, -14, "fewer replicas than required acknowledged the write")        \
    X(EAGAIN, -15, "the loop is at its cap of operations in flight; retry after a callback")

typedef enum dlock_error {
#define DLOCK__ERROR_ENUM(name, value, msg) DLOCK_##name = value,
    DLOCK_ERROR_TABLE(DLOCK__ERROR_ENUM)
#undef DLOCK__ERROR_ENUM
    DLOCK__ERROR_LAST = -16
} dlock_error;

/* A static, human-readable message for a code; "unknown error" otherwise. */
DLOCK_API const char *dlock_strerror(int code);

/* The code's name without prefix ("EBUSY"), or "UNKNOWN". */
DLOCK_API const char *dlock_errname(int code);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_ERRORS_H */
