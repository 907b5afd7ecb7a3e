/*
 * dlock mock — the in-memory store (private).
 *
 * The keyspace maps a key to a typed object (string, hash, list, sorted set,
 * set)
 * with an optional expiry on the store's clock. Commands follow Redis: the
 * same reply types, the same error messages, empty containers deleted, keys
 * expiring lazily when touched (plus a small incremental sweep).
 *
 * Everything below "store mutex held" runs under the store-wide mutex, which
 * also makes a script atomic, exactly as a Redis server runs one command or
 * script at a time.
 */
#ifndef DLOCK_MOCK_STORE_H
#define DLOCK_MOCK_STORE_H

#include "dlock/mock.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "dict.h"

struct dlock__pubsub;
struct dlock__lua;

/* ---- values ------------------------------------------------------------- */

/* A length-prefixed, NUL-terminated byte string. */
typedef struct dlock__mstr {
    size_t len;
    char buf[];
} dlock__mstr;

dlock__mstr *dlock__mstr_new(const char *s, size_t len);

/* A deque of strings (ring buffer, capacity a power of two). */
typedef struct dlock__list {
    dlock__mstr **items;
    size_t start, len, cap;
} dlock__list;

void dlock__list_clear(dlock__list *l);

/* A sorted set: member -> element for O(1) scores, and the elements sorted by
 * (score, member) for ranges. Sorted sets in lock scripts are small (one
 * entry per waiter), so an array with binary search beats a skiplist. */
typedef struct dlock__zelem {
    double score;
    const char *member; /* the key bytes of its dict entry */
    size_t mlen;
} dlock__zelem;

typedef struct dlock__zset {
    dlock__dict members; /* member -> dlock__zelem * (owned) */
    dlock__zelem **sorted;
    size_t len, cap;
} dlock__zset;

void dlock__zset_clear(dlock__zset *z);

typedef enum dlock__obj_type {
    DLOCK__OBJ_STRING,
    DLOCK__OBJ_HASH,
    DLOCK__OBJ_LIST,
    DLOCK__OBJ_ZSET,
    DLOCK__OBJ_SET
} dlock__obj_type;

typedef struct dlock__obj {
    dlock__obj_type type;
    int64_t expire; /* absolute, on the clock's now_ms line; -1 = none */
    union {
        dlock__mstr *str;
        dlock__dict hash; /* field -> dlock__mstr * */
        dlock__list list;
        dlock__zset zset;
        dlock__dict set; /* member -> NULL */
    } u;
} dlock__obj;

/* ---- the store ------------------------------------------------------------ */

typedef struct dlock__message {
    struct dlock__message *next;
    char *channel; /* NUL-terminated copies */
    size_t clen;
    char *msg;
    size_t mlen;
} dlock__message;

struct dlock_mock_store {
    pthread_mutex_t mutex;
    int refs;
    dlock_clock *clock; /* referenced */
    dlock_mock_server server; /* whose spelling replies take (mock.h) */
    dlock__dict keys;   /* key -> dlock__obj * */
    /* The time commands see: read once per command or script, so that a
     * script sees a frozen clock, as on Redis. */
    int64_t now;
    int64_t wall; /* Unix ms at the same instant (for absolute expiries) */
    uint64_t publish_count;
    /* Messages published by the running command or script, delivered once
     * the store mutex has been released. */
    dlock__message *outbox;
    dlock__message **outbox_tail;
    struct dlock__pubsub *pubsub;
    struct dlock__lua *lua; /* created on the first eval */
    size_t sweep_cursor;
    unsigned sweep_tick;
};

/* Takes the store mutex and reads the clock. */
void dlock__store_begin(dlock_mock_store *st);
/* Releases the store mutex, then delivers the messages queued since begin. */
void dlock__store_end(dlock_mock_store *st);
void dlock__store_ref(dlock_mock_store *st);

/* Runs one command (store mutex held). from_script selects the error wording
 * Redis uses inside scripts for unknown commands and wrong arities.
 * Returns NULL only when out of memory. */
dlock_reply *dlock__store_exec(dlock_mock_store *st, int argc,
                               const char *const *argv, const size_t *argvlen,
                               int from_script);

/* ---- for the command implementations (store mutex held) ------------------- */

typedef struct dlock__cmd {
    dlock_mock_store *st;
    int argc;
    const char *const *argv;
    const size_t *len;
} dlock__cmd;

typedef struct dlock__cmd_def {
    const char *name; /* lower case */
    int arity;        /* Redis style: n exact, -n at least n (name included) */
    dlock_reply *(*fn)(dlock__cmd *c);
} dlock__cmd_def;

extern const dlock__cmd_def dlock__cmds_keys[];
extern const size_t dlock__ncmds_keys;
extern const dlock__cmd_def dlock__cmds_string[];
extern const size_t dlock__ncmds_string;
extern const dlock__cmd_def dlock__cmds_hash[];
extern const size_t dlock__ncmds_hash;
extern const dlock__cmd_def dlock__cmds_list[];
extern const size_t dlock__ncmds_list;
extern const dlock__cmd_def dlock__cmds_zset[];
extern const size_t dlock__ncmds_zset;
extern const dlock__cmd_def dlock__cmds_set[];
extern const size_t dlock__ncmds_set;

#define DLOCK__ERR_WRONGTYPE \
    "WRONGTYPE Operation against a key holding the wrong kind of value"
#define DLOCK__ERR_NOTINT "ERR value is not an integer or out of range"
#define DLOCK__ERR_NOTFLOAT "ERR value is not a valid float"
#define DLOCK__ERR_SYNTAX "ERR syntax error"
#define DLOCK__ERR_OVERFLOW "ERR increment or decrement would overflow"
#define DLOCK__ERR_NANINF "ERR increment would produce NaN or Infinity"

/* The live object at key (an expired one is deleted first), or NULL. */
dlock__obj *dlock__key_lookup(dlock_mock_store *st, const char *key, size_t klen);
/* Looks up argv[i] expecting type: 0 (with *out NULL when absent) or -1 for
 * a key of another type. */
int dlock__key_lookup_typed(dlock__cmd *c, int i, dlock__obj_type type,
                            dlock__obj **out);
/* A new empty object at a key known to be absent; NULL when out of memory. */
dlock__obj *dlock__key_create(dlock_mock_store *st, const char *key, size_t klen,
                              dlock__obj_type type);
int dlock__key_delete(dlock_mock_store *st, const char *key, size_t klen);
/* Deletes key if its container obj has become empty, as Redis does. */
void dlock__key_delete_if_empty(dlock_mock_store *st, const char *key,
                                size_t klen, dlock__obj *obj);
/* Deletes every expired key; returns the number of live keys. */
size_t dlock__key_purge_expired(dlock_mock_store *st);
/* The expiry, on the now line, of a TTL of ttl_ms from now, or -1 when the
 * deadline would overflow a Unix ms time (Redis's "invalid expire time"). */
int dlock__expire_after(const dlock_mock_store *st, long long ttl_ms,
                        int64_t *out);
/* The expiry, on the now line, of an absolute Unix ms time (saturating;
 * returns 0). */
int dlock__expire_at(const dlock_mock_store *st, long long unix_ms, int64_t *out);
/* Sets a string value; keeps the expiry only when keepttl. 0 or -1 (ENOMEM). */
int dlock__key_set_string(dlock_mock_store *st, const char *key, size_t klen,
                          const char *val, size_t vlen, int keepttl);

/* Queues a message for delivery after the store mutex is released and
 * counts it. Returns the number of receivers, or -1 when out of memory. */
long long dlock__store_publish(dlock_mock_store *st, const char *channel,
                               size_t clen, const char *msg, size_t mlen);

dlock_reply *dlock__reply_error(const char *msg);
dlock_reply *dlock__reply_errorf(const char *fmt, ...);
dlock_reply *dlock__reply_ok(void);
dlock_reply *dlock__reply_bulk(const char *s, size_t len);
/* A double as the store's server prints it in a reply (the bulk string
 * of RESP2). */
dlock_reply *dlock__reply_double(const dlock_mock_store *st, double d);

/* Redis's strict integer syntax: no spaces, no '+', no leading zeros. 1 on
 * success. */
int dlock__parse_ll(const char *s, size_t len, long long *out);
/* A finite or infinite double ("inf", "-inf", "+inf"), never NaN. */
int dlock__parse_double(const char *s, size_t len, double *out);
/* A double as the store's server prints it: Redis 7.0 "%.17g"; Valkey
 * the shortest text that reads back as d; "inf"/"-inf" on both.
 * script_arg: as a Lua number passed to redis.call (integers below 1e15
 * in full on Redis 7.0; -0 is "0" on Valkey). Returns the length. */
size_t dlock__format_double(const dlock_mock_store *st, char *buf, size_t size,
                            double d, int script_arg);
/* Redis's string2ld: a long double (INCRBYFLOAT, HINCRBYFLOAT count in
 * long double, as Redis does); no spaces, no NaN. 1 on success. */
int dlock__parse_ld(const char *s, size_t len, long double *out);
/* Redis's ld2string in "human" mode: "%.17Lf" without trailing zeros, "-0"
 * as "0", "inf"/"-inf". Returns the length (0: no room). */
size_t dlock__format_ld(char *buf, size_t size, long double v);
/* Case-insensitive equality of argv[i] with a lower-case word. */
int dlock__arg_is(const dlock__cmd *c, int i, const char *word);

#endif /* DLOCK_MOCK_STORE_H */
