/*
 * dlock — the state documents (inspect.c): what every state slot shares,
 * the hash locks' and counted objects' slots, and the non-lock objects'
 * public state calls.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_INSPECT_H
#define DLOCK_OBJECTS_RUNTIME_INSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/sys/backend.h"
#include "dlock/sys/methods.h"

/* inspect.c: what every state slot (api/dlock/sys/methods.h) shares. A slot
 * runs one read-only script, checks the reply's shape, then builds the
 * document with these and core/json_doc.h (OR the results into bad, check
 * once at the end). */
struct json_t;
/* Whether r is an array of the kinds given, one letter per element: 'i'
 * integer, 'b' bulk string, 'a' array. With repeated, the pattern repeats
 * over the whole array (any multiple of its length, 0 included). */
int dlock__reply_is(const dlock_reply *r, const char *kinds, int repeated);
/* A new document holding "type" (the method table's) and "name"; *bad is
 * set when out of memory. */
struct json_t *dlock__state_begin(const dlock_rlock *l, int *bad);
/* The n elements r->elems[i..i+n) (bulk strings and integers) as an object
 * {keys[0]: the first, ...}; NULL when out of memory. */
struct json_t *dlock__state_row(const dlock_reply *r, size_t i,
                               const char *const *keys, size_t n);
/* Every run of n elements of r as such an object, in an array; NULL when
 * out of memory. */
struct json_t *dlock__state_rows(const dlock_reply *r, const char *const *keys,
                                 size_t n);
/* A holder {"owner", "holds", "ttl_ms"} from the triple at r->elems[i..i+2]
 * (dlock__reply_is(r, "bii", 1)), and every triple of r as holders. NULL
 * when out of memory. */
struct json_t *dlock__state_holder(const dlock_reply *r, size_t i);
struct json_t *dlock__state_holders(const dlock_reply *r);
/* The lock fields every lock type reports: "locked" (ttl != -2), "ttl_ms"
 * and "holders" from holders' triples. 0 or -1. */
int dlock__state_lock(struct json_t *doc, int64_t ttl, const dlock_reply *holders);
/* The end of a slot: *out = doc and 0, or with bad set frees doc and
 * records DLOCK_ENOMEM. */
int dlock__state_end(dlock_rlock *l, struct json_t *doc, int bad, struct json_t **out);

/* inspect.c: the state slot of locks kept as a hash with a field per owner.
 * token_key (fenced lock) adds the latest token; queue, deadlines and
 * alive (fair lock) add the waiters. Either may be NULL. */
int dlock__hash_state(dlock_rlock *l, struct json_t **out, const char *token_key,
                      const char *queue, const char *deadlines, const char *alive);
/* The state slot of the reentrant lock (no extras). */
int dlock__hash_state_plain(dlock_rlock *l, struct json_t **out);

/* The public state calls of the objects that are not locks
 * (dlock_semaphore_state and the like): dlock_rlock_state and
 * dlock_rlock_state_text with the checks of those objects' own calls
 * instead of the lock entry checks. b may be NULL (DLOCK_EINVAL). */
int dlock__object_state(dlock_rlock *b, struct json_t **out);
int dlock__object_state_text(dlock_rlock *b, char **out);

/* The state slot of an object kept as one integer at its name
 * (semaphore_inspect.lua): {"type", "name", field: the integer (0 when
 * absent), and with with_ttl "ttl_ms": its remaining time (-2 absent, -1 no
 * expiry)}. */
int dlock__count_state(dlock_rlock *b, struct json_t **out, const char *field,
                       int with_ttl);

#endif /* DLOCK_OBJECTS_RUNTIME_INSPECT_H */
