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

/* ---- what the servers keep (issue 32 §4; README "Deploying") -------- */

/* Which lock keys a server may evict under memory pressure (its
 * maxmemory-policy): */
#define DLOCK_EVICTS_UNKNOWN (-1) /* the server would not say (INFO refused) */
#define DLOCK_EVICTS_NONE 0       /* noeviction: writes fail instead */
#define DLOCK_EVICTS_VOLATILE 1   /* volatile-*: keys with a TTL, i.e. every
                                   * held lock (its lease): another owner
                                   * can then acquire it; not the fenced
                                   * token counters (they never expire) */
#define DLOCK_EVICTS_ALL 2        /* allkeys-*: any key, held locks and the
                                   * token counters too (tokens go back) */

/* What a backend found out, when it connected, about the servers that
 * keep its locks: the master (standalone, Sentinel: the current master,
 * read again after a failover) or every master (Cluster). Read once per
 * connection set-up (the first connection to a server, and the first
 * after a reconnect), in the round trip of the handshake: never on a lock
 * operation. The fields describe the least safe server of those known. */
typedef struct dlock_server_safety {
    int version;  /* set by the caller: 1 */
    int servers;  /* servers whose settings are known; 0: none yet (a lazy
                   * client before its first call, a Sentinel before it
                   * found the master), and then the fields below say
                   * "unknown" */
    int evicts;   /* a DLOCK_EVICTS_* */
    char maxmemory_policy[32]; /* as the server says it; "" unknown */
    int aof;      /* appendonly: 1 yes, 0 no, -1 unknown */
    int rdb;      /* RDB save points: 1 some, 0 none, -1 unknown (CONFIG
                   * refused, as to the least-privilege user) */
    int from_info; /* 1: CONFIG GET was refused (ACL): the policy comes from
                    * INFO memory, aof from INFO persistence */
    /* The verdicts (the least safe server's; api/dlock/fenced.h says when
     * tokens hold): */
    int locks_evictable;    /* evicts != DLOCK_EVICTS_NONE */
    int tokens_can_go_back; /* evicts == DLOCK_EVICTS_ALL or unknown, or
                             * neither AOF nor RDB save points (a restart
                             * loses the counters) */
    char server[128];       /* that server, "host:port" or the socket path
                             * (cut to fit) */
} dlock_server_safety;

#define DLOCK_SERVER_SAFETY_INIT {1, 0, DLOCK_EVICTS_UNKNOWN, "", -1, -1, 0, 0, 0, ""}

/* Fills *out (version set by the caller, as with DLOCK_SERVER_SAFETY_INIT)
 * with what b found out so far. Never blocks, never talks to a server (it
 * reports what the connections' set-up read). 0; DLOCK_EINVAL (NULL, or
 * a version this library does not know); DLOCK_ENOTSUP (a backend that
 * cannot tell: the mock, which never evicts and never persists). Any
 * thread. The same for a client: dlock_client_server_safety
 * (api/dlock/client.h). */
DLOCK_API int dlock_backend_server_safety(dlock_backend *b, dlock_server_safety *out);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_BACKEND_H */
