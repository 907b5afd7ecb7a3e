/*
 * Redis backend (private): running scripts.
 *
 * eval sends EVALSHA with the SHA1 the server gave for the script (cached
 * per dlock_script address, shared by every connection of the backend): one
 * round trip in the steady state. On first use, and when the server answers
 * NOSCRIPT (restart, SCRIPT FLUSH, failover), it pipelines SCRIPT LOAD and
 * EVAL of the source in one round trip: the EVAL runs the call, SCRIPT LOAD
 * refreshes the cached SHA1. Nothing is hashed locally.
 */
#ifndef DLOCK_REDIS_SCRIPTS_H
#define DLOCK_REDIS_SCRIPTS_H

#include <hiredis/hiredis.h>

#include "dlock/sys/backend.h"
#include "internal.h"
#include "node.h"

typedef struct dlock__redis_scripts dlock__redis_scripts;

/* 0 or DLOCK_ENOMEM. */
int dlock__redis_scripts_new(dlock__redis_scripts **out);
void dlock__redis_scripts_free(dlock__redis_scripts *s);

/* The backend's eval_until slot (api/dlock/sys/backend.h), on node's
 * connections (pooled or multiplexed: dlock__redis_node_call); deadline_ms is monotonic (INT64_MAX: the configured
 * timeouts only). DLOCK_EINVAL for NULL or too many arguments. A reply the
 * server gives instead of running the script because it refuses service
 * for now (dlock__redis_unavailable: LOADING, BUSY, READONLY...) is
 * DLOCK_ECONN, not a script error. */
int dlock__redis_eval(dlock__redis_node *node, dlock__redis_scripts *cache,
                      dlock_reply **out,
                      const dlock_script *script, size_t nkeys, size_t nargs,
                      const char *const *argv, const size_t *argvlen,
                      int64_t deadline_ms, char *errbuf, size_t errlen);

/* A deep copy of r as a dlock_reply. 0, DLOCK_ENOMEM, or DLOCK_EPROTO for a
 * reply type or nesting this backend does not know. */
int dlock__redis_reply_convert(dlock_reply **out, const redisReply *r);

#endif /* DLOCK_REDIS_SCRIPTS_H */
