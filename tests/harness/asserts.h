/*
 * Reads for the conformance cases that fail the test unless the call
 * succeeds, so that a case can assert on the value in one line. They use
 * cmocka assertions: call them on the test's own thread only.
 */
#ifndef DLOCK_TEST_ASSERTS_H
#define DLOCK_TEST_ASSERTS_H

#include <stddef.h>
#include <stdint.h>

#include "dlock.h"
#include "dlock/redis.h"

/* The lock's generic reads (api/dlock/lock.h). */
int dlock_fx_is_locked(dlock_rlock *l);
int dlock_fx_is_held(dlock_rlock *l);
int dlock_fx_is_held_as(dlock_rlock *l, const char *owner);
int64_t dlock_fx_hold_count(dlock_rlock *l);
int64_t dlock_fx_hold_count_as(dlock_rlock *l, const char *owner);
int64_t dlock_fx_remain_ttl(dlock_rlock *l);

/* The reply of a direct command on c (dlock_fx_call) as text into buf: the
 * number for an integer, "" for nil, "ERR:<message>" for an error reply,
 * else the string. */
void dlock_fx_call_str(dlock_client *c, char *buf, size_t len, const char *cmd,
                       const char *key, int nargs, const char *a1, const char *a2);
/* The reply of a direct command on c that must be an integer (LLEN, PTTL...). */
long long dlock_fx_call_int(dlock_client *c, const char *cmd, const char *key,
                            int nargs, const char *a1);
/* The length of the list at key (0 when absent), read with LRANGE: LLEN
 * is not among the commands of the README's ACL user (the library never
 * needs it), and the conformance cases also run as that user. */
long long dlock_fx_list_len(dlock_client *c, const char *key);

/* What the keys (a NULL-terminated list) hold, as one text for comparing
 * the store before and after a call: per key "<key>=<type>[<contents>]
 * <expiry>;", the contents as the type's full read gives them (GET,
 * HGETALL, LRANGE, ZRANGE WITHSCORES, SMEMBERS), the expiry "-2" (absent),
 * "-1" (none) or "ttl" (some: the ms left differ from one read to the
 * next). Fails the test when a read fails or buf (len bytes) is too small. */
void dlock_fx_keys_dump(dlock_client *c, const char *const *keys, char *buf, size_t len);

/* Opens a Redis backend with url and o, expecting it to fail with code and
 * a one-line detail (copied into errbuf, and printed after "  [tag] ")
 * that holds needle and never secret. */
void dlock_fx_expect_open_fails(const char *tag, const char *url,
                                const dlock_redis_options *o, int code,
                                const char *needle, const char *secret,
                                char *errbuf, size_t errlen);

/* INCR of key through a script on b (proves the backend carries
 * commands): the new value, or -1 with the detail in errbuf. */
long long dlock_fx_incr(dlock_backend *b, const char *key, char *errbuf, size_t errlen);

#endif /* DLOCK_TEST_ASSERTS_H */
