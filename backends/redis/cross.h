/*
 * Redis backend (private): one script call over several hash slots of one
 * Redis Cluster node (cluster.c's eval_node).
 *
 * A script may declare KEYS of one slot only (the server routes and
 * refuses by them), but Redis 7 and Valkey let a script flagged
 * allow-cross-slot-keys (a "#!lua flags=..." first line) touch undeclared
 * keys of any slot its node serves. So the call's first key is declared
 * and the others travel in ARGV, and the script is run as a derived one:
 * the flag line, then a prelude that rebuilds KEYS and ARGV as the script
 * expects them, then the script unchanged. The prelude first checks that
 * every key is served by the node right now (a slot moving away makes a
 * key's command fail inside the script: a script that reads such a
 * failure as "no such key" would otherwise answer wrongly): if one is not,
 * the script body does not run and the reply is an error
 * ("DLOCKNOTHERE <the node's words>").
 *
 * A server older than the flag (Redis 6: the '#' line does not compile)
 * or one that does not know it answers the call with an error that
 * dlock__redis_cross_refused recognises; cluster.c remembers it per node.
 */
#ifndef DLOCK_REDIS_CROSS_H
#define DLOCK_REDIS_CROSS_H

#include <stddef.h>

#include "dlock/sys/backend.h"

/* The derived scripts of one backend, cached by the source's content. */
typedef struct dlock__redis_cross dlock__redis_cross;

/* 0 or DLOCK_ENOMEM. */
int dlock__redis_cross_new(dlock__redis_cross **out);
/* NULL ok. */
void dlock__redis_cross_free(dlock__redis_cross *x);

/* The derived script of script (valid as long as x), or NULL when out of
 * memory. Any thread. */
const dlock_script *dlock__redis_cross_script(dlock__redis_cross *x,
                                              const dlock_script *script);

/* The derived script's arguments for a call with KEYS = argv[0..nkeys)
 * and ARGV = argv[nkeys..nkeys+nargs) (nkeys >= 1): KEYS = argv[0], ARGV
 * = the key count, the other keys, then the call's ARGV; into out and
 * outlen (nkeys + nargs + 1 entries each; count, at least 24 bytes, holds
 * the count's text). argvlen may be NULL. */
void dlock__redis_cross_args(const char **out, size_t *outlen, char *count,
                             size_t nkeys, size_t nargs,
                             const char *const *argv, const size_t *argvlen);

/* Whether an error reply's text (len bytes) says that the server does not
 * run flagged scripts or does not know the flag. */
int dlock__redis_cross_refused(const char *err, size_t len);

/* Test hook: the flag word of the derived scripts (NULL: the real
 * "allow-cross-slot-keys"). A word the server does not know makes every
 * node refuse, which exercises the per-slot fallback on a server that
 * has the flag. Read when a backend derives a script, so set it before
 * making the backend; process-wide: tests only. */
void dlock__redis_cross_test_flag(const char *word);

#endif /* DLOCK_REDIS_CROSS_H */
