/*
 * dlock — a backend, as an application sees it.
 *
 * A client runs on a backend: the mock (api/dlock/mock.h), Redis
 * (api/dlock/redis.h) or one of your own (its method table is in
 * <dlock/sys/backend.h>, which people writing a backend include). An
 * application only creates one, hands it to dlock_client_new (the client
 * then owns it) and, if that failed, frees it.
 *
 * Replies: what a store answers to a command (dlock_mock_store_command) or a
 * script. A reply owns everything it points to.
 */
#ifndef DLOCK_BACKEND_H
#define DLOCK_BACKEND_H

#include "export.h"

#include "types.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Closes the backend's connections, joins its threads, frees it. Only for a
 * backend no client owns (dlock_client_new failed, or it was never given to
 * one). NULL is a no-op. */
DLOCK_API void dlock_backend_free(dlock_backend *b);

typedef enum dlock_reply_type {
    DLOCK_REPLY_NIL = 0,
    DLOCK_REPLY_INTEGER,
    DLOCK_REPLY_BULK,   /* str/len: binary-safe, NUL-terminated for convenience */
    DLOCK_REPLY_STATUS, /* str/len, e.g. "OK" */
    DLOCK_REPLY_ERROR,  /* str/len, e.g. "WRONGTYPE Operation against ..." */
    DLOCK_REPLY_ARRAY   /* elems/n */
} dlock_reply_type;

/* A reply owns everything it points to; free it with dlock_reply_free. */
typedef struct dlock_reply {
    dlock_reply_type type;
    long long integer;
    char *str;
    size_t len;
    struct dlock_reply **elems;
    size_t n;
} dlock_reply;

/* NULL is a no-op. */
DLOCK_API void dlock_reply_free(dlock_reply *r);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_BACKEND_H */
