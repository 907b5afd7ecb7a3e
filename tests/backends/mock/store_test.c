/*
 * Tests of the mock backend's own parts: replies, the store's Redis
 * semantics, the Lua bridge's conversion rules, expiry on a virtual clock,
 * the virtual clock's stepping, and in-process pub/sub.
 *
 * Replies are compared through a compact text form (see show()), so each
 * expectation reads like a redis-cli session:  5  "v"  nil  +OK  -ERR ...
 * [a, b].
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock.h"
#include "dlock/mock.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"
#include "../../harness/runner.h"

/* ---- helpers ----------------------------------------------------------- */

static void show_into(const dlock_reply *r, char *buf, size_t size, size_t *off)
{
    size_t i;
    int n = 0;

    if (*off >= size)
        return;
    switch (r->type) {
    case DLOCK_REPLY_NIL:
        n = snprintf(buf + *off, size - *off, "nil");
        break;
    case DLOCK_REPLY_INTEGER:
        n = snprintf(buf + *off, size - *off, "%lld", r->integer);
        break;
    case DLOCK_REPLY_BULK:
        n = snprintf(buf + *off, size - *off, "\"%.*s\"", (int)r->len, r->str);
        break;
    case DLOCK_REPLY_STATUS:
        n = snprintf(buf + *off, size - *off, "+%.*s", (int)r->len, r->str);
        break;
    case DLOCK_REPLY_ERROR:
        n = snprintf(buf + *off, size - *off, "-%.*s", (int)r->len, r->str);
        break;
    case DLOCK_REPLY_ARRAY:
        n = snprintf(buf + *off, size - *off, "[");
        *off += n > 0 ? (size_t)n : 0;
        for (i = 0; i < r->n; i++) {
            if (i > 0) {
                n = snprintf(buf + *off, size - *off, ", ");
                *off += n > 0 ? (size_t)n : 0;
            }
            if (*off < size)
                show_into(r->elems[i], buf, size, off);
        }
        n = *off < size ? snprintf(buf + *off, size - *off, "]") : 0;
        break;
    }
    *off += n > 0 ? (size_t)n : 0;
}

static const char *show(const dlock_reply *r)
{
    static char buf[4096];
    size_t off = 0;

    buf[0] = '\0';
    if (r == NULL)
        return "(null)";
    show_into(r, buf, sizeof(buf), &off);
    return buf;
}

/* Runs a NULL-terminated command on the store and checks its reply. */
static void expect_cmd(dlock_mock_store *st, const char *want, ...)
{
    const char *argv[32];
    dlock_reply *r = NULL;
    va_list ap;
    int argc = 0;

    va_start(ap, want);
    while (argc < 32 && (argv[argc] = va_arg(ap, const char *)) != NULL)
        argc++;
    va_end(ap);
    assert_int_equal(dlock_mock_store_command(st, &r, argc, argv, NULL), 0);
    assert_non_null(r);
    if (strcmp(show(r), want) != 0)
        fprintf(stderr, "command %s: got %s, want %s\n", argv[0], show(r), want);
    assert_string_equal(show(r), want);
    dlock_reply_free(r);
}

#define CMD(st, want, ...) expect_cmd(st, want, __VA_ARGS__, (const char *)NULL)

/* Runs a script (keys first, then args; NULL-terminated) and checks it. */
static void expect_eval(dlock_backend *b, const char *src, int nkeys,
                        const char *want, ...)
{
    /* One script object per source text: the mock caches by address. */
    dlock_script script;
    const char *argv[32];
    dlock_reply *r = NULL;
    char err[128] = "";
    va_list ap;
    int n = 0;

    script.name = "test";
    script.source = src;
    va_start(ap, want);
    while (n < 32 && (argv[n] = va_arg(ap, const char *)) != NULL)
        n++;
    va_end(ap);
    assert_int_equal(dlock_backend_eval(b, &r, &script, (size_t)nkeys,
                                        (size_t)(n - nkeys), argv, NULL, err,
                                        sizeof(err)),
                     0);
    assert_non_null(r);
    if (strcmp(show(r), want) != 0)
        fprintf(stderr, "script %s: got %s, want %s\n", src, show(r), want);
    assert_string_equal(show(r), want);
    dlock_reply_free(r);
}

#define EVAL(b, src, nkeys, want, ...) \
    expect_eval(b, src, nkeys, want, __VA_ARGS__, (const char *)NULL)
#define EVAL0(b, src, want) expect_eval(b, src, 0, want, (const char *)NULL)

typedef struct env {
    dlock_vclock *vc;
    dlock_mock_store *st;
    dlock_backend *b;
} env;

static int env_setup(void **state)
{
    env *e = calloc(1, sizeof(*e));

    if (e == NULL || dlock_vclock_new(&e->vc, 1000) != 0 ||
        dlock_mock_store_new(&e->st, dlock_vclock_clock(e->vc)) != 0 ||
        dlock_mock_backend_new(&e->b, e->st) != 0)
        return -1;
    *state = e;
    return 0;
}

static int env_teardown(void **state)
{
    env *e = *state;

    /* Any order: each holds a reference on what it needs. */
    dlock_mock_store_free(e->st);
    dlock_vclock_free(e->vc);
    dlock_backend_free(e->b);
    free(e);
    return 0;
}

/* ---- replies and dispatchers ---------------------------------------------- */

static void test_reply_constructors(void **state)
{
    dlock_reply *a = dlock_reply_array(3);

    (void)state;
    assert_non_null(a);
    assert_int_equal(a->type, DLOCK_REPLY_ARRAY);
    assert_int_equal(a->n, 3);
    a->elems[0] = dlock_reply_integer(-7);
    a->elems[1] = dlock_reply_string(DLOCK_REPLY_BULK, "a\0b", 3);
    /* elems[2] left NULL: a half-filled array must still free cleanly. */
    assert_int_equal(a->elems[1]->len, 3);
    assert_int_equal(a->elems[1]->str[3], '\0');
    dlock_reply_free(a);
    a = dlock_reply_string(DLOCK_REPLY_STATUS, NULL, 0);
    assert_non_null(a);
    assert_string_equal(a->str, "");
    dlock_reply_free(a);
    assert_null(dlock_reply_string(DLOCK_REPLY_INTEGER, "x", 1));
    assert_null(dlock_reply_string(DLOCK_REPLY_BULK, NULL, 1));
    a = dlock_reply_nil();
    assert_int_equal(a->type, DLOCK_REPLY_NIL);
    dlock_reply_free(a);
    a = dlock_reply_array(0);
    assert_int_equal(a->n, 0);
    dlock_reply_free(a);
    dlock_reply_free(NULL);
}

static void test_null_safety(void **state)
{
    dlock_reply *r = (dlock_reply *)&r;
    dlock_subscription *sub = (dlock_subscription *)&sub;
    dlock_script s = {"x", "return 1"};
    dlock_signal sig;
    const char *argv[] = {"GET", "k"};

    (void)state;
    assert_int_equal(dlock_backend_eval(NULL, &r, &s, 0, 0, NULL, NULL, NULL, 0),
                     DLOCK_EINVAL);
    assert_null(r);
    assert_int_equal(dlock_backend_subscribe(NULL, &sub, "c", NULL, NULL), DLOCK_EINVAL);
    assert_null(sub);
    dlock_backend_unsubscribe(NULL, NULL);
    assert_null(dlock_backend_clock(NULL));
    dlock_backend_free(NULL);

    assert_int_equal(dlock_clock_sleep_until(NULL, &sig, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_clock_now(NULL), 0);
    dlock_clock_done(NULL, NULL);
    dlock_clock_busy(NULL, NULL);
    dlock_signal_raise(NULL);
    assert_int_equal(dlock_signal_init(NULL), DLOCK_EINVAL);

    assert_int_equal(dlock_vclock_new(NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_vclock_advance(NULL, 1), DLOCK_EINVAL);
    assert_int_equal(dlock_vclock_sleepers(NULL), 0);
    assert_int_equal(dlock_vclock_wait_sleepers(NULL, 1, 1), DLOCK_EINVAL);
    assert_null(dlock_vclock_clock(NULL));
    dlock_vclock_free(NULL);

    assert_int_equal(dlock_mock_store_new(NULL, NULL), DLOCK_EINVAL);
    dlock_mock_store_free(NULL);
    assert_int_equal(dlock_mock_store_dbsize(NULL), 0);
    assert_int_equal(dlock_mock_store_publish_count(NULL), 0);
    assert_int_equal(dlock_mock_store_command(NULL, &r, 2, argv, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_backend_new(NULL, NULL), DLOCK_EINVAL);
}

/* ---- the store ---------------------------------------------------------------- */

static void test_store_bad_input(void **state)
{
    env *e = *state;
    dlock_reply *r = (dlock_reply *)&r;
    const char *argv[] = {"SET", NULL, "v"};
    const char *bin[] = {"SET", "a\0b", "x\0y"};
    const char *get[] = {"GET", "a\0b"};
    const size_t binlen[] = {3, 3, 3}, getlen[] = {3, 3};

    assert_int_equal(dlock_mock_store_command(e->st, NULL, 1, argv, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_command(e->st, &r, 0, argv, NULL), DLOCK_EINVAL);
    assert_null(r);
    assert_int_equal(dlock_mock_store_command(e->st, &r, 3, NULL, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_command(e->st, &r, 3, argv, NULL), DLOCK_EINVAL);

    /* Binary-safe keys and values. */
    assert_int_equal(dlock_mock_store_command(e->st, &r, 3, bin, binlen), 0);
    dlock_reply_free(r);
    assert_int_equal(dlock_mock_store_command(e->st, &r, 2, get, getlen), 0);
    assert_int_equal(r->type, DLOCK_REPLY_BULK);
    assert_int_equal(r->len, 3);
    assert_memory_equal(r->str, "x\0y", 3);
    dlock_reply_free(r);
    CMD(e->st, "nil", "GET", "a");

    CMD(e->st, "-ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ",
        "NOPE", "a", "b");
    CMD(e->st, "-ERR wrong number of arguments for 'get' command", "GET");
    CMD(e->st, "-ERR wrong number of arguments for 'hset' command", "HSET", "h", "f");
    CMD(e->st, "-ERR wrong number of arguments for 'hset' command", "HSET", "h", "f",
        "v", "g");
    CMD(e->st, "+PONG", "ping");
}

static void test_store_strings(void **state)
{
    env *e = *state;

    CMD(e->st, "+OK", "SET", "k", "v");
    CMD(e->st, "\"v\"", "get", "k");
    CMD(e->st, "nil", "SET", "k", "w", "NX");
    CMD(e->st, "+OK", "SET", "k", "w", "XX");
    CMD(e->st, "nil", "SET", "n", "w", "XX");
    CMD(e->st, "\"w\"", "SET", "k", "x", "GET");
    CMD(e->st, "-ERR syntax error", "SET", "k", "v", "NX", "XX");
    CMD(e->st, "-ERR syntax error", "SET", "k", "v", "PX", "5", "EX", "5");
    CMD(e->st, "-ERR syntax error", "SET", "k", "v", "PX");
    CMD(e->st, "-ERR value is not an integer or out of range", "SET", "k", "v", "PX",
        "x");
    CMD(e->st, "-ERR invalid expire time in 'set' command", "SET", "k", "v", "PX", "0");
    CMD(e->st, "-ERR invalid expire time in 'set' command", "SET", "k", "v", "EX", "-1");
    CMD(e->st, "0", "SETNX", "k", "y");
    CMD(e->st, "1", "SETNX", "k2", "y");

    CMD(e->st, "1", "INCR", "c");
    CMD(e->st, "11", "INCRBY", "c", "10");
    CMD(e->st, "10", "DECR", "c");
    CMD(e->st, "-5", "DECRBY", "c", "15");
    CMD(e->st, "\"-5\"", "GET", "c");
    CMD(e->st, "-ERR value is not an integer or out of range", "INCR", "k");
    CMD(e->st, "-ERR value is not an integer or out of range", "INCRBY", "c", "1.5");
    CMD(e->st, "-ERR value is not an integer or out of range", "INCRBY", "c", "01");
    CMD(e->st, "+OK", "SET", "big", "9223372036854775807");
    CMD(e->st, "-ERR increment or decrement would overflow", "INCR", "big");
    CMD(e->st, "-ERR value is not an integer or out of range", "INCRBY", "c",
        "9223372036854775808");
    CMD(e->st, "[\"x\", nil, \"-5\"]", "MGET", "k", "nokey", "c");

    CMD(e->st, "1", "HSET", "h", "f", "v");
    CMD(e->st, "-WRONGTYPE Operation against a key holding the wrong kind of value",
        "GET", "h");
    CMD(e->st, "-WRONGTYPE Operation against a key holding the wrong kind of value",
        "INCR", "h");
    /* SET replaces a value of any type. */
    CMD(e->st, "+OK", "SET", "h", "s");
    CMD(e->st, "+string", "TYPE", "h");
}

static void test_store_keys(void **state)
{
    env *e = *state;

    CMD(e->st, "+OK", "SET", "a", "1");
    CMD(e->st, "1", "RPUSH", "l", "x");
    CMD(e->st, "1", "ZADD", "z", "1", "m");
    CMD(e->st, "1", "HSET", "h", "f", "v");
    CMD(e->st, "+string", "TYPE", "a");
    CMD(e->st, "+list", "TYPE", "l");
    CMD(e->st, "+zset", "TYPE", "z");
    CMD(e->st, "+hash", "TYPE", "h");
    CMD(e->st, "+none", "TYPE", "nokey");
    /* EXISTS counts repeats; DEL deletes once. */
    CMD(e->st, "3", "EXISTS", "a", "a", "l", "nokey");
    CMD(e->st, "2", "DEL", "a", "a", "l", "nokey");
    CMD(e->st, "0", "EXISTS", "a", "l");
    assert_int_equal(dlock_mock_store_dbsize(e->st), 2);
    CMD(e->st, "2", "DBSIZE");
    CMD(e->st, "+OK", "FLUSHALL");
    assert_int_equal(dlock_mock_store_dbsize(e->st), 0);
}

/* Many keys and fields, added and removed: the tables grow and shrink a
 * few buckets per change (backends/mock/dict.c), and every key stays
 * found, every removed one gone, at each step of a move. */
static void test_store_grow_shrink(void **state)
{
    env *e = *state;
    enum { N = 5000 };
    char k[32], v[32];
    int i, j;

    for (i = 0; i < N; i++) {
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "%d", i);
        CMD(e->st, "+OK", "SET", k, v);
        CMD(e->st, "1", "HSET", "h", k, v);
        /* this one and earlier ones, while a move goes on */
        for (j = i; j > 0 && j >= i / 4; j -= 1 + i / 3) {
            snprintf(k, sizeof k, "k%d", j);
            snprintf(v, sizeof v, "\"%d\"", j);
            CMD(e->st, v, "GET", k);
        }
    }
    assert_int_equal(dlock_mock_store_dbsize(e->st), N + 1);
    snprintf(v, sizeof v, "%d", N);
    CMD(e->st, v, "HLEN", "h");
    for (i = 0; i < N - 10; i++) {
        snprintf(k, sizeof k, "k%d", i);
        CMD(e->st, "1", "DEL", k);
        CMD(e->st, "1", "HDEL", "h", k);
        CMD(e->st, "0", "EXISTS", k);
        snprintf(k, sizeof k, "k%d", N - 1 - i % 10);
        CMD(e->st, "1", "EXISTS", k);
        CMD(e->st, "1", "HEXISTS", "h", k);
    }
    assert_int_equal(dlock_mock_store_dbsize(e->st), 11);
    CMD(e->st, "10", "HLEN", "h");
    for (i = N - 10; i < N; i++) {
        snprintf(k, sizeof k, "k%d", i);
        snprintf(v, sizeof v, "\"%d\"", i);
        CMD(e->st, v, "GET", k);
        snprintf(v, sizeof v, "\"%d\"", i);
        CMD(e->st, v, "HGET", "h", k);
    }
}

static void test_store_hash(void **state)
{
    env *e = *state;

    CMD(e->st, "2", "HSET", "h", "b", "1", "a", "2");
    CMD(e->st, "1", "HSET", "h", "b", "3", "c", "4");
    CMD(e->st, "0", "HSETNX", "h", "a", "x");
    CMD(e->st, "1", "HSETNX", "h", "d", "5");
    CMD(e->st, "\"3\"", "HGET", "h", "b");
    CMD(e->st, "nil", "HGET", "h", "zz");
    CMD(e->st, "nil", "HGET", "nokey", "zz");
    /* Insertion order, as Redis keeps it for small hashes. */
    CMD(e->st, "[\"b\", \"3\", \"a\", \"2\", \"c\", \"4\", \"d\", \"5\"]", "HGETALL", "h");
    CMD(e->st, "[\"b\", \"a\", \"c\", \"d\"]", "HKEYS", "h");
    CMD(e->st, "[\"3\", \"2\", \"4\", \"5\"]", "HVALS", "h");
    CMD(e->st, "[\"2\", nil, \"5\"]", "HMGET", "h", "a", "x", "d");
    CMD(e->st, "4", "HLEN", "h");
    CMD(e->st, "1", "HEXISTS", "h", "a");
    CMD(e->st, "0", "HEXISTS", "h", "x");
    CMD(e->st, "13", "HINCRBY", "h", "b", "10");
    CMD(e->st, "-1", "HINCRBY", "h", "new", "-1");
}

static void test_store_hash_more(void **state)
{
    env *e = *state;

    CMD(e->st, "1", "HSET", "h", "f", "x");
    CMD(e->st, "-ERR hash value is not an integer", "HINCRBY", "h", "f", "1");
    CMD(e->st, "-ERR value is not an integer or out of range", "HINCRBY", "h", "f", "y");
    CMD(e->st, "1", "HDEL", "h", "f", "f", "nope");
    CMD(e->st, "0", "EXISTS", "h");
    CMD(e->st, "[]", "HGETALL", "h");
    CMD(e->st, "+OK", "HMSET", "h", "a", "1");
    CMD(e->st, "+OK", "SET", "s", "v");
    CMD(e->st, "-WRONGTYPE Operation against a key holding the wrong kind of value",
        "HSET", "s", "f", "v");
    CMD(e->st, "-WRONGTYPE Operation against a key holding the wrong kind of value",
        "HGETALL", "s");
}

static void test_store_list(void **state)
{
    env *e = *state;

    CMD(e->st, "3", "RPUSH", "l", "a", "b", "c");
    CMD(e->st, "5", "LPUSH", "l", "y", "x");
    CMD(e->st, "[\"x\", \"y\", \"a\", \"b\", \"c\"]", "LRANGE", "l", "0", "-1");
    CMD(e->st, "[\"b\", \"c\"]", "LRANGE", "l", "-2", "100");
    CMD(e->st, "[]", "LRANGE", "l", "3", "1");
    CMD(e->st, "\"x\"", "LINDEX", "l", "0");
    CMD(e->st, "\"c\"", "LINDEX", "l", "-1");
    CMD(e->st, "nil", "LINDEX", "l", "5");
    CMD(e->st, "nil", "LINDEX", "nokey", "x");
    CMD(e->st, "-ERR value is not an integer or out of range", "LINDEX", "l", "x");
    CMD(e->st, "5", "LLEN", "l");
    CMD(e->st, "\"x\"", "LPOP", "l");
    CMD(e->st, "\"c\"", "RPOP", "l");
    CMD(e->st, "[\"y\", \"a\"]", "LPOP", "l", "2");
    CMD(e->st, "[]", "LPOP", "l", "0");
    CMD(e->st, "-ERR value is out of range, must be positive", "LPOP", "l", "-1");
    CMD(e->st, "\"b\"", "LPOP", "l");
    /* Empty lists disappear. */
    CMD(e->st, "0", "EXISTS", "l");
    CMD(e->st, "nil", "LPOP", "l");

    CMD(e->st, "6", "RPUSH", "r", "a", "b", "a", "c", "a", "b");
    CMD(e->st, "2", "LREM", "r", "-2", "a");
    CMD(e->st, "[\"a\", \"b\", \"c\", \"b\"]", "LRANGE", "r", "0", "-1");
    CMD(e->st, "2", "LREM", "r", "0", "b");
    CMD(e->st, "1", "LREM", "r", "1", "a");
    CMD(e->st, "[\"c\"]", "LRANGE", "r", "0", "-1");
    CMD(e->st, "+OK", "LSET", "r", "0", "z");
    CMD(e->st, "-ERR index out of range", "LSET", "r", "1", "z");
    CMD(e->st, "-ERR no such key", "LSET", "nokey", "0", "z");
    CMD(e->st, "1", "LREM", "r", "-9223372036854775808", "z");
    CMD(e->st, "0", "EXISTS", "r");

    CMD(e->st, "5", "RPUSH", "t", "1", "2", "3", "4", "5");
    CMD(e->st, "+OK", "LTRIM", "t", "1", "-2");
    CMD(e->st, "[\"2\", \"3\", \"4\"]", "LRANGE", "t", "0", "-1");
    CMD(e->st, "+OK", "LTRIM", "t", "5", "10");
    CMD(e->st, "0", "EXISTS", "t");
}

/* The ring buffer under interleaved pushes, pops and removals from both
 * ends and the middle, checked against a plain array model. */
static void test_store_list_model(void **state)
{
    env *e = *state;
    int model[512], n = 0, i, step;
    unsigned seed = 12345;
    char v[16], want[4096];

    for (step = 0; step < 2000; step++) {
        int op, x;
        size_t off;

        seed = seed * 1103515245u + 12345u;
        op = (int)((seed >> 16) % 5);
        x = (int)((seed >> 8) % 7);
        snprintf(v, sizeof(v), "%d", x);
        if ((op == 0 || op == 1) && n < 500) {
            snprintf(want, sizeof(want), "%d", n + 1);
            expect_cmd(e->st, want, op == 0 ? "LPUSH" : "RPUSH", "l", v,
                       (const char *)NULL);
            if (op == 0) {
                memmove(model + 1, model, (size_t)n * sizeof(int));
                model[0] = x;
            } else {
                model[n] = x;
            }
            n++;
        } else if (op == 2 || op == 3) {
            if (n == 0) {
                CMD(e->st, "nil", op == 2 ? "LPOP" : "RPOP", "l");
                continue;
            }
            snprintf(want, sizeof(want), "\"%d\"", op == 2 ? model[0] : model[n - 1]);
            expect_cmd(e->st, want, op == 2 ? "LPOP" : "RPOP", "l", (const char *)NULL);
            if (op == 2)
                memmove(model, model + 1, (size_t)(n - 1) * sizeof(int));
            n--;
        } else {
            int k = 0, j;

            for (i = 0, j = 0; i < n; i++) {
                if (model[i] == x && k < 1)
                    k++;
                else
                    model[j++] = model[i];
            }
            n = j;
            snprintf(want, sizeof(want), "%d", k);
            CMD(e->st, want, "LREM", "l", "1", v);
        }
        off = (size_t)snprintf(want, sizeof(want), "[");
        for (i = 0; i < n; i++)
            off += (size_t)snprintf(want + off, sizeof(want) - off, "%s\"%d\"",
                                    i ? ", " : "", model[i]);
        snprintf(want + off, sizeof(want) - off, "]");
        CMD(e->st, want, "LRANGE", "l", "0", "-1");
    }
}

static void test_store_zset(void **state)
{
    env *e = *state;

    CMD(e->st, "4", "ZADD", "z", "3", "c", "1.5", "b", "0.1", "a", "3", "bb");
    CMD(e->st, "\"1.5\"", "ZSCORE", "z", "b");
    CMD(e->st, "\"3\"", "ZSCORE", "z", "c");
    CMD(e->st, "\"0.10000000000000001\"", "ZSCORE", "z", "a");
    CMD(e->st, "nil", "ZSCORE", "z", "nope");
    CMD(e->st, "[\"a\", \"b\", \"bb\", \"c\"]", "ZRANGE", "z", "0", "-1");
    CMD(e->st, "[\"bb\", \"3\", \"c\", \"3\"]", "ZRANGE", "z", "-2", "-1", "WITHSCORES");
    CMD(e->st, "[\"c\", \"bb\"]", "ZRANGE", "z", "0", "1", "REV");
    CMD(e->st, "[\"c\", \"bb\"]", "ZREVRANGE", "z", "0", "1");
    CMD(e->st, "2", "ZRANK", "z", "bb");
    CMD(e->st, "1", "ZREVRANK", "z", "bb");
    CMD(e->st, "nil", "ZRANK", "z", "nope");
    CMD(e->st, "4", "ZCARD", "z");
    CMD(e->st, "[\"b\", \"bb\", \"c\"]", "ZRANGEBYSCORE", "z", "1", "+inf");
    CMD(e->st, "[\"bb\", \"c\"]", "ZRANGEBYSCORE", "z", "(1.5", "inf");
    CMD(e->st, "[\"a\", \"b\"]", "ZRANGEBYSCORE", "z", "-inf", "(3");
    CMD(e->st, "[\"b\", \"1.5\", \"bb\", \"3\"]", "ZRANGEBYSCORE", "z", "-inf", "+inf",
        "WITHSCORES", "LIMIT", "1", "2");
    CMD(e->st, "[\"c\", \"bb\"]", "ZREVRANGEBYSCORE", "z", "+inf", "2");
    CMD(e->st, "[\"c\", \"bb\"]", "ZRANGE", "z", "+inf", "2", "BYSCORE", "REV");
    CMD(e->st, "[]", "ZRANGEBYSCORE", "z", "2", "1");
    CMD(e->st, "-ERR min or max is not a float", "ZRANGEBYSCORE", "z", "x", "1");
    CMD(e->st, "2", "ZCOUNT", "z", "3", "3");

    /* Updates move members; NX/XX/CH. */
    CMD(e->st, "0", "ZADD", "z", "0", "c");
    CMD(e->st, "[\"c\", \"a\"]", "ZRANGE", "z", "0", "1");
    CMD(e->st, "0", "ZADD", "z", "NX", "9", "c");
    CMD(e->st, "0", "ZADD", "z", "XX", "9", "new");
    CMD(e->st, "1", "ZADD", "z", "XX", "CH", "9", "c");
    CMD(e->st, "\"10\"", "ZADD", "z", "INCR", "1", "c");
    CMD(e->st, "\"12\"", "ZINCRBY", "z", "2", "c");
    CMD(e->st, "-ERR XX and NX options at the same time are not compatible", "ZADD", "z",
        "NX", "XX", "1", "a");
    CMD(e->st, "-ERR syntax error", "ZADD", "z", "1", "a", "2");
    CMD(e->st, "-ERR value is not a valid float", "ZADD", "z", "x", "a");
    CMD(e->st, "-ERR wrong number of arguments for 'zadd' command", "ZADD", "z", "1");

    CMD(e->st, "2", "ZREMRANGEBYSCORE", "z", "-inf", "(3");
    CMD(e->st, "[\"bb\", \"c\"]", "ZRANGE", "z", "0", "-1");
    CMD(e->st, "1", "ZREM", "z", "bb", "nope");
    CMD(e->st, "1", "ZREM", "z", "c");
    CMD(e->st, "0", "EXISTS", "z");
    CMD(e->st, "1", "ZADD", "inf", "-inf", "m");
    CMD(e->st, "\"-inf\"", "ZSCORE", "inf", "m");
}

/* ---- expiry on the virtual clock ------------------------------------------------- */

static void test_store_expiry(void **state)
{
    env *e = *state;

    CMD(e->st, "+OK", "SET", "k", "v", "PX", "1000");
    CMD(e->st, "1000", "PTTL", "k");
    CMD(e->st, "1", "TTL", "k");
    CMD(e->st, "+OK", "SET", "k2", "v");
    CMD(e->st, "-1", "PTTL", "k2");
    CMD(e->st, "-2", "PTTL", "nokey");
    assert_int_equal(dlock_vclock_advance(e->vc, 999), 0);
    CMD(e->st, "1", "PTTL", "k");
    CMD(e->st, "\"v\"", "GET", "k");
    assert_int_equal(dlock_vclock_advance(e->vc, 1), 0);
    /* Gone at its deadline, not one millisecond later. */
    CMD(e->st, "nil", "GET", "k");
    CMD(e->st, "-2", "PTTL", "k");

    CMD(e->st, "1", "HSET", "h", "f", "v");
    CMD(e->st, "-1", "PTTL", "h");
    CMD(e->st, "1", "PEXPIRE", "h", "500");
    CMD(e->st, "500", "PTTL", "h");
    CMD(e->st, "0", "PEXPIRE", "h", "600", "NX");
    CMD(e->st, "1", "PEXPIRE", "h", "600", "GT");
    CMD(e->st, "0", "PEXPIRE", "h", "100", "GT");
    CMD(e->st, "1", "PERSIST", "h");
    CMD(e->st, "0", "PERSIST", "h");
    CMD(e->st, "-1", "PTTL", "h");
    CMD(e->st, "1", "EXPIRE", "h", "2");
    CMD(e->st, "2000", "PTTL", "h");
    /* INCR and HSET keep the TTL; SET clears it unless KEEPTTL. */
    CMD(e->st, "1", "HSET", "h", "g", "v");
    CMD(e->st, "2000", "PTTL", "h");
    CMD(e->st, "+OK", "SET", "s", "1", "EX", "10");
    CMD(e->st, "2", "INCR", "s");
    CMD(e->st, "10000", "PTTL", "s");
    CMD(e->st, "+OK", "SET", "s", "5", "KEEPTTL");
    CMD(e->st, "10000", "PTTL", "s");
    CMD(e->st, "+OK", "SET", "s", "5");
    CMD(e->st, "-1", "PTTL", "s");

    /* dbsize counts live keys only. */
    CMD(e->st, "+OK", "SET", "short", "v", "PX", "10");
    assert_int_equal(dlock_mock_store_dbsize(e->st), 4);
    assert_int_equal(dlock_vclock_advance(e->vc, 10), 0);
    assert_int_equal(dlock_mock_store_dbsize(e->st), 3);

    /* A non-positive TTL deletes at once. */
    CMD(e->st, "1", "PEXPIRE", "s", "0");
    CMD(e->st, "0", "EXISTS", "s");
    CMD(e->st, "+OK", "SET", "s", "v");
    CMD(e->st, "1", "EXPIRE", "s", "-5");
    CMD(e->st, "0", "EXISTS", "s");
    CMD(e->st, "0", "PEXPIRE", "nokey", "100");
    CMD(e->st, "-ERR value is not an integer or out of range", "PEXPIRE", "h", "x");
    CMD(e->st, "-ERR invalid expire time in 'pexpire' command", "PEXPIRE", "h",
        "9223372036854775807");
    CMD(e->st, "-ERR Unsupported option foo", "PEXPIRE", "h", "10", "foo");
}

static void test_store_expireat(void **state)
{
    env *e = *state;
    char at[32];
    int64_t wall = dlock_clock_wall(dlock_vclock_clock(e->vc));

    /* Absolute times are Unix ms, on the clock's wall time line. */
    assert_true(wall > 1600000000000LL);
    assert_int_equal(wall - dlock_vclock_now(e->vc),
                     dlock_clock_wall(dlock_vclock_clock(e->vc)) -
                         dlock_clock_now(dlock_vclock_clock(e->vc)));
    CMD(e->st, "+OK", "SET", "k", "v");
    snprintf(at, sizeof(at), "%lld", (long long)(wall + 1234));
    CMD(e->st, "1", "PEXPIREAT", "k", at);
    CMD(e->st, "1234", "PTTL", "k");
    snprintf(at, sizeof(at), "%lld", (long long)(wall + 500));
    CMD(e->st, "+OK", "SET", "k2", "v", "PXAT", at);
    CMD(e->st, "500", "PTTL", "k2");
    snprintf(at, sizeof(at), "%lld", (long long)(wall / 1000 - 1));
    CMD(e->st, "1", "EXPIREAT", "k", at);
    CMD(e->st, "0", "EXISTS", "k");
}

static void test_store_realtime_expiry(void **state)
{
    dlock_mock_store *st;
    struct timespec ts = {0, 60 * 1000000L};

    (void)state;
    assert_int_equal(dlock_mock_store_new(&st, NULL), 0);
    CMD(st, "+OK", "SET", "k", "v", "PX", "30");
    CMD(st, "1", "EXISTS", "k");
    nanosleep(&ts, NULL);
    CMD(st, "0", "EXISTS", "k");
    assert_int_equal(dlock_mock_store_dbsize(st), 0);
    dlock_mock_store_free(st);
}

/* ---- pub/sub noise (issue 28 section 6) ------------------------------------------ */

typedef struct noise {
    dlock_backend *b;
    int stop; /* atomic */
    long sent;
} noise;

static void *noise_main(void *arg)
{
    static const dlock_script pub = {"noise", "return redis.call('publish', KEYS[1], ARGV[1])"};
    noise *n = arg;
    const char *argv[2] = {"redisson_lock__channel:{noise}", "noise"};

    while (!__atomic_load_n(&n->stop, __ATOMIC_SEQ_CST)) {
        dlock_reply *r = NULL;
        if (dlock_backend_eval(n->b, &r, &pub, 1, 1, argv, NULL, NULL, 0) == 0)
            n->sent++;
        dlock_reply_free(r);
    }
    return NULL;
}

/* On the real-time clock, a waiter under a stream of messages that
 * change nothing looks again at most once per 25 ms floor (plus the
 * attempts of the wait itself and a burst of 4): counted as the busy
 * refusals of its client. (On a virtual clock the floor is off: the
 * conformance cases' handoffs at one instant show that.) */
static void test_noise_floor(void **state)
{
    dlock_mock_store *st = NULL;
    dlock_backend *b1 = NULL, *b2 = NULL, *b3 = NULL;
    dlock_client *holder = NULL, *waiter = NULL;
    dlock_rlock *hl = NULL, *wl = NULL;
    dlock_metrics m = DLOCK_METRICS_INIT;
    noise n = {NULL, 0, 0};
    pthread_t th;
    struct timespec t0, t1;
    long took;

    (void)state;
    assert_int_equal(dlock_mock_store_new(&st, NULL), 0);
    assert_int_equal(dlock_mock_backend_new(&b1, st), 0);
    assert_int_equal(dlock_mock_backend_new(&b2, st), 0);
    assert_int_equal(dlock_mock_backend_new(&b3, st), 0);
    assert_int_equal(dlock_client_new(&holder, b1, NULL), 0);
    assert_int_equal(dlock_client_new(&waiter, b2, NULL), 0);
    assert_int_equal(dlock_reentrant_new(&hl, holder, "noise"), 0);
    assert_int_equal(dlock_reentrant_new(&wl, waiter, "noise"), 0);
    assert_int_equal(dlock_lock(hl, 60000), 0);
    n.b = b3;
    assert_int_equal(pthread_create(&th, NULL, noise_main, &n), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(dlock_try_lock(wl, 1000, 60000), DLOCK_ETIMEDOUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    __atomic_store_n(&n.stop, 1, __ATOMIC_SEQ_CST);
    pthread_join(th, NULL);
    took = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_int_equal(dlock_client_metrics(waiter, &m), 0);
    print_message("  mock noise: %ld messages in %ld ms, %llu attempts refused\n", n.sent,
                  took, (unsigned long long)m.busy);
    if (n.sent < 100)
        fail_msg("only %ld messages published: no noise to judge", n.sent);
    if (m.busy > (uint64_t)(took / 25 + 8))
        fail_msg("%llu attempts in %ld ms: above one per 25 ms floor + 8",
                 (unsigned long long)m.busy, took);
    assert_int_equal(m.messages_ignored, 0); /* the mock ignores none */
    assert_int_equal(dlock_unlock(hl), 0);
    dlock_rlock_free(wl);
    dlock_rlock_free(hl);
    dlock_client_free(waiter);
    dlock_client_free(holder);
    dlock_backend_free(b3);
    dlock_mock_store_free(st);
}

/* ---- the Lua bridge --------------------------------------------------------------- */

static void test_lua_to_redis(void **state)
{
    env *e = *state;

    EVAL0(e->b, "return 'hello'", "\"hello\"");
    EVAL0(e->b, "return 42", "42");
    EVAL0(e->b, "return 3.99", "3");
    EVAL0(e->b, "return -3.99", "-3");
    EVAL0(e->b, "return true", "1");
    EVAL0(e->b, "return false", "nil");
    EVAL0(e->b, "return nil", "nil");
    EVAL0(e->b, "return", "nil");
    EVAL0(e->b, "return {}", "[]");
    EVAL0(e->b, "return {1, 2, nil, 4}", "[1, 2]");
    EVAL0(e->b, "return {1, false, 'x', {ok='S'}, {err='E'}, {2, {3}}}",
          "[1, nil, \"x\", +S, -E, [2, [3]]]");
    EVAL0(e->b, "return {1, 2, ok='fine'}", "+fine");
    EVAL0(e->b, "return {err='e', ok='x'}", "-e");
    EVAL0(e->b, "return {ok=3}", "[]");
    EVAL0(e->b, "return redis.status_reply('FINE')", "+FINE");
    EVAL0(e->b, "return redis.error_reply('My Error')", "-My Error");
    EVAL0(e->b, "return redis.error_reply('-ERR x')", "-ERR x");
    EVAL0(e->b, "return function() end", "nil");
}

/* The compiled-script cache is keyed by content: one struct, and even one
 * source buffer, rewritten with another script runs the new code. */
static void test_script_cache_by_content(void **state)
{
    env *e = *state;
    dlock_script s = {"reused", "return 1"};
    char src[64];
    dlock_reply *r = NULL;

    assert_int_equal(dlock_backend_eval(e->b, &r, &s, 0, 0, NULL, NULL, NULL, 0), 0);
    assert_int_equal(r->integer, 1);
    dlock_reply_free(r);
    strcpy(src, "return 'first'");
    s.source = src;
    assert_int_equal(dlock_backend_eval(e->b, &r, &s, 0, 0, NULL, NULL, NULL, 0), 0);
    assert_string_equal(r->str, "first");
    dlock_reply_free(r);
    strcpy(src, "return 'second'");
    assert_int_equal(dlock_backend_eval(e->b, &r, &s, 0, 0, NULL, NULL, NULL, 0), 0);
    assert_string_equal(r->str, "second");
    dlock_reply_free(r);
}

static void test_lua_self_reference(void **state)
{
    env *e = *state;
    dlock_script script = {"selfref", "local t = {} t[1] = t return t"};
    dlock_reply *r = NULL, *leaf;
    int depth = 0;

    assert_int_equal(dlock_backend_eval(e->b, &r, &script, 0, 0, NULL, NULL, NULL, 0), 0);
    for (leaf = r; leaf->type == DLOCK_REPLY_ARRAY; leaf = leaf->elems[0]) {
        assert_int_equal(leaf->n, 1);
        depth++;
    }
    /* Nested arrays down to an error, as Redis answers. */
    assert_int_equal(leaf->type, DLOCK_REPLY_ERROR);
    assert_string_equal(leaf->str, "ERR reached lua stack limit");
    assert_true(depth > 10 && depth <= 1000);
    dlock_reply_free(r);
}

/* DLOCK_MOCK_VALKEY_8: replies spelled as Valkey 8 spells them (every
 * expected text below is what a valkey-server answered), and the options'
 * bad input. The default dialect (Redis 7.0) is every other test's. */
static void test_valkey_dialect(void **state)
{
    static const char *const scores[][2] = {
        {"0.1", "\"0.1\""},
        {"123456789012345678", "\"123456789012345680\""},
        {"1e308", "\"1e+308\""},
        {"1.5e-3", "\"0.0015\""},
        {"1e-7", "\"1e-7\""},
        {"1e21", "\"1e+21\""},
        {"1e19", "\"1e+19\""},
        {"12345678.5", "\"12345678.5\""},
        {"-0.000001", "\"-0.000001\""},
        {"0.0001234", "\"1.234e-4\""},
        {"-2.5e-5", "\"-0.000025\""},
        {"4611686018427387904", "\"4611686018427387904\""},
        {"9007199254740993", "\"9007199254740992\""},
        {"1e8", "\"100000000\""},
        {"123e-9", "\"1.23e-7\""},
        {"-inf", "\"-inf\""},
    };
    dlock_mock_options o = DLOCK_MOCK_OPTIONS_INIT;
    dlock_mock_store *st = (dlock_mock_store *)1;
    dlock_backend *b = NULL;
    size_t i;
    (void)state;

    o.server = (dlock_mock_server)2;
    assert_int_equal(dlock_mock_store_new_opts(&st, &o), DLOCK_EINVAL);
    assert_null(st);
    o.server = DLOCK_MOCK_VALKEY_8;
    o.version = 2;
    assert_int_equal(dlock_mock_store_new_opts(&st, &o), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_new_opts(NULL, &o), DLOCK_EINVAL);
    o.version = DLOCK_MOCK_OPTIONS_VERSION;
    assert_int_equal(dlock_mock_store_new_opts(&st, &o), 0);
    assert_int_equal(dlock_mock_backend_new(&b, st), 0);

    for (i = 0; i < sizeof scores / sizeof scores[0]; i++) {
        CMD(st, "1", "ZADD", "z", scores[i][0], "m");
        CMD(st, scores[i][1], "ZSCORE", "z", "m");
        CMD(st, "1", "DEL", "z");
    }
    CMD(st, "\"0.1\"", "ZINCRBY", "z", "0.1", "m");
    CMD(st, "[\"m\", \"0.1\"]", "ZRANGE", "z", "0", "-1", "WITHSCORES");
    CMD(st, "\"0.2\"", "ZADD", "z", "INCR", "0.1", "m");
    /* Numbers a script passes: the same text, -0 as 0. */
    EVAL(b, "redis.call('SET', KEYS[1], ARGV[1] + 0) return redis.call('GET', KEYS[1])",
         1, "\"0.1\"", "k", "0.1");
    EVAL(b, "redis.call('SET', KEYS[1], -0.0) return redis.call('GET', KEYS[1])", 1,
         "\"0\"", "k");
    EVAL(b, "redis.call('SET', KEYS[1], 1e20) return redis.call('GET', KEYS[1])", 1,
         "\"1e+20\"", "k");
    EVAL(b, "redis.call('SET', KEYS[1], 2^62) return redis.call('GET', KEYS[1])", 1,
         "\"4611686018427387904\"", "k");
    EVAL0(b, "return redis.pcall()",
          "-ERR Please specify at least one argument for this call");
    EVAL0(b, "return redis.pcall('SET', 'k', {})",
          "-ERR Command arguments must be strings or integers");
    EVAL0(b, "return redis.pcall('NOPE')",
          "-ERR Unknown command called from script (the dlock mock has no "
          "'NOPE'; dlock/mock.h lists what it runs)");
    EVAL0(b, "return redis.pcall('GET')",
          "-ERR Wrong number of args calling command from script");
    /* Outside scripts, and long doubles, the two servers agree. */
    CMD(st, "-ERR wrong number of arguments for 'get' command", "GET");
    CMD(st, "\"0.1\"", "INCRBYFLOAT", "f", "0.1");
    dlock_backend_free(b);
    dlock_mock_store_free(st);
}

static void test_redis_to_lua(void **state)
{
    env *e = *state;

    EVAL(e->b, "return redis.call('SET', KEYS[1], ARGV[1])", 1, "+OK", "k", "v");
    EVAL(e->b, "return type(redis.call('SET', KEYS[1], ARGV[1]))", 1, "\"table\"",
         "k", "v");
    EVAL(e->b, "return redis.call('SET', KEYS[1], ARGV[1]).ok", 1, "\"OK\"", "k", "v");
    EVAL(e->b, "return redis.call('GET', KEYS[1])", 1, "\"v\"", "k");
    /* A nil bulk is false in Lua. */
    EVAL(e->b, "return redis.call('GET', KEYS[1]) == false", 1, "1", "nokey");
    EVAL(e->b, "local n = redis.call('INCRBY', KEYS[1], 5) return type(n) .. n", 1,
         "\"number5\"", "c");
    EVAL(e->b, "redis.call('RPUSH', KEYS[1], 'a', 'b') "
               "local t = redis.call('LRANGE', KEYS[1], 0, -1) return #t .. t[2]",
         1, "\"2b\"", "l");
    /* Numbers become arguments through "%.17g", as on Redis 7.0. */
    EVAL(e->b, "redis.call('SET', KEYS[1], 0.1) return redis.call('GET', KEYS[1])", 1,
         "\"0.10000000000000001\"", "k");
    EVAL(e->b, "redis.call('SET', KEYS[1], 30000) return redis.call('GET', KEYS[1])", 1,
         "\"30000\"", "k");
    EVAL(e->b, "return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], #KEYS, #ARGV}", 2,
         "[\"a\", \"b\", \"x\", \"y\", 2, 2]", "a", "b", "x", "y");
    EVAL0(e->b, "return #KEYS + #ARGV", "0");
    /* pcall turns an error reply into a table. */
    EVAL(e->b, "redis.call('HSET', KEYS[1], 'f', 'v') "
               "local r = redis.pcall('INCR', KEYS[1]) return r.err",
         1, "\"WRONGTYPE Operation against a key holding the wrong kind of value\"", "h");
    EVAL(e->b, "return redis.pcall('INCR', KEYS[1])", 1,
         "-WRONGTYPE Operation against a key holding the wrong kind of value", "h");
    EVAL0(e->b, "return redis.pcall('NOPE')",
          "-ERR Unknown Redis command called from script (the dlock mock has no "
          "'NOPE'; dlock/mock.h lists what it runs)");
    EVAL0(e->b, "return redis.pcall('GET')",
          "-ERR Wrong number of args calling Redis command from script");
    EVAL0(e->b, "return redis.pcall()",
          "-ERR Please specify at least one argument for this redis lib call");
    EVAL0(e->b, "return redis.pcall('SET', 'k', {})",
          "-ERR Lua redis lib command arguments must be strings or integers");
    /* Many arguments take the heap path. */
    EVAL0(e->b, "return redis.call('RPUSH', 'many', 1,2,3,4,5,6,7,8,9,10,11,12,13,14,"
                "15,16,17,18,19,20)",
          "20");
}

static void test_lua_errors(void **state)
{
    env *e = *state;

    EVAL(e->b, "redis.call('HSET', KEYS[1], 'f', 'v') return redis.call('INCR', KEYS[1])",
         1,
         "-WRONGTYPE Operation against a key holding the wrong kind of value script: test",
         "h");
    EVAL0(e->b, "return redis.call('NOPE')",
          "-ERR Unknown Redis command called from script (the dlock mock has no "
          "'NOPE'; dlock/mock.h lists what it runs) script: test");
    /* A caught redis.call error is a plain string, as in Redis 7.0; raised
     * again by error(), it gains a position and the ERR prefix. */
    EVAL(e->b, "local ok, err = pcall(redis.call, 'INCR', KEYS[1]) return {tostring(ok), err}",
         1, "[\"false\", \"WRONGTYPE Operation against a key holding the wrong kind of value\"]",
         "h");
    EVAL(e->b, "local ok, err = pcall(redis.call, 'INCR', KEYS[1]) error(err)", 1,
         "-ERR user_script:1: WRONGTYPE Operation against a key holding the wrong kind "
         "of value script: test",
         "h");
    EVAL0(e->b, "error('boom')", "-ERR user_script:1: boom script: test");
    EVAL0(e->b, "error({err='MYCODE boom'})", "-MYCODE boom script: test");
    EVAL0(e->b, "local x = nil; return x.y",
          "-ERR user_script:1: attempt to index local 'x' (a nil value) script: test");
    EVAL0(e->b, "return +", "-ERR Error compiling script (new function): user_script:1: "
                            "unexpected symbol near '+'");
    EVAL0(e->b, "return redis.status_reply(3)",
          "-ERR wrong number or type of arguments script: test");

    /* Globals: read-only, undefined ones are errors, no os/io/print. */
    EVAL0(e->b, "x = 1", "-ERR user_script:1: Attempt to modify a readonly table script: test");
    EVAL0(e->b, "KEYS = {}", "-ERR user_script:1: Attempt to modify a readonly table script: test");
    EVAL0(e->b, "return foo",
          "-ERR user_script:1: Script attempted to access nonexistent global variable "
          "'foo' script: test");
    EVAL0(e->b, "return os.time()",
          "-ERR user_script:1: Script attempted to access nonexistent global variable "
          "'os' script: test");
    EVAL0(e->b, "return io",
          "-ERR user_script:1: Script attempted to access nonexistent global variable "
          "'io' script: test");
    EVAL0(e->b, "return loadfile",
          "-ERR user_script:1: Script attempted to access nonexistent global variable "
          "'loadfile' script: test");
    EVAL0(e->b, "return {type(string.format), type(table.insert), type(math.floor), "
                "type(tonumber), type(unpack), type(redis.log)}",
          "[\"function\", \"function\", \"function\", \"function\", \"function\", "
          "\"function\"]");
    EVAL0(e->b, "local function f(n) return n + 1 end return f(1)", "2");
    EVAL0(e->b, "redis.log(redis.LOG_WARNING, 'hi') return 1", "1");
    /* pcall, xpcall and coroutines behave as in plain Lua 5.1. */
    EVAL0(e->b, "return {pcall(function() return 1, 2, 3 end)}", "[1, 1, 2, 3]");
    EVAL0(e->b, "local ok, e = pcall(error, 'x') return {tostring(ok), e}",
          "[\"false\", \"x\"]");
    EVAL0(e->b, "return {xpcall(function() error('y') end, function(m) return 'h:' .. m end)}",
          "[nil, \"h:user_script:1: y\"]");
    EVAL0(e->b, "local co = coroutine.create(function(a) local b = coroutine.yield(a + 1) "
                "return b * 2 end) local _, r1 = coroutine.resume(co, 1) "
                "local _, r2 = coroutine.resume(co, 5) return {r1, r2}",
          "[2, 10]");
    /* The state survives errors. */
    EVAL0(e->b, "return 'still fine'", "\"still fine\"");
}

/* ---- what issue 14 added: sets, GETDEL, float increments, TIME, the Lua
 * libraries (each also compared with redis-server: differential_test.c) -- */

static void test_store_set(void **state)
{
    env *e = *state;

    CMD(e->st, "3", "SADD", "s", "a", "b", "c");
    CMD(e->st, "1", "SADD", "s", "a", "d", "d");
    CMD(e->st, "4", "SCARD", "s");
    CMD(e->st, "0", "SCARD", "nokey");
    CMD(e->st, "+set", "TYPE", "s");
    CMD(e->st, "1", "SISMEMBER", "s", "b");
    CMD(e->st, "0", "SISMEMBER", "s", "x");
    CMD(e->st, "0", "SISMEMBER", "nokey", "x");
    CMD(e->st, "[1, 0, 1]", "SMISMEMBER", "s", "a", "x", "d");
    CMD(e->st, "[\"a\", \"b\", \"c\", \"d\"]", "SMEMBERS", "s");
    CMD(e->st, "[]", "SMEMBERS", "nokey");
    CMD(e->st, "2", "SREM", "s", "a", "x", "b");
    CMD(e->st, "0", "SREM", "nokey", "a");
    CMD(e->st, "2", "SADD", "t", "c", "z");
    CMD(e->st, "[\"c\"]", "SINTER", "s", "t");
    CMD(e->st, "[]", "SINTER", "s", "nokey");
    CMD(e->st, "[\"c\", \"d\", \"z\"]", "SUNION", "s", "t");
    CMD(e->st, "[\"d\"]", "SDIFF", "s", "t");
    CMD(e->st, "1", "SINTERCARD", "2", "s", "t");
    CMD(e->st, "1", "SINTERCARD", "1", "s", "LIMIT", "1");
    CMD(e->st, "-ERR numkeys should be greater than 0", "SINTERCARD", "0", "s");
    CMD(e->st, "-ERR Number of keys can't be greater than number of args",
        "SINTERCARD", "3", "s", "t");
    CMD(e->st, "-ERR LIMIT can't be negative", "SINTERCARD", "1", "s", "LIMIT", "-1");
    CMD(e->st, "-ERR syntax error", "SINTERCARD", "1", "s", "BOGUS", "1");
    CMD(e->st, "1", "SMOVE", "s", "t", "d");
    CMD(e->st, "0", "SMOVE", "s", "t", "nope");
    CMD(e->st, "[\"c\", \"z\", \"d\"]", "SMEMBERS", "t");
    /* Emptied sets are deleted, as every container in Redis. */
    CMD(e->st, "\"c\"", "SPOP", "s");
    CMD(e->st, "0", "EXISTS", "s");
    CMD(e->st, "nil", "SPOP", "s");
    CMD(e->st, "[]", "SPOP", "s", "2");
    CMD(e->st, "[\"c\", \"z\"]", "SPOP", "t", "2");
    CMD(e->st, "[\"d\"]", "SPOP", "t", "5");
    CMD(e->st, "0", "EXISTS", "t");
    CMD(e->st, "-ERR value is out of range, must be positive", "SPOP", "t", "-1");
    /* Types: a set is not a string, a string is not a set. */
    CMD(e->st, "+OK", "SET", "str", "v");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "SADD", "str", "a");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "SINTER", "nokey", "str");
    CMD(e->st, "1", "SADD", "s2", "m");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "GET", "s2");
    CMD(e->st, "-ERR wrong number of arguments for 'sadd' command", "SADD", "s2");
    /* Expiry applies to sets too. */
    CMD(e->st, "1", "PEXPIRE", "s2", "10");
    assert_int_equal(dlock_vclock_advance(e->vc, 10), 0);
    CMD(e->st, "0", "SCARD", "s2");
}

static void test_store_getdel_floats(void **state)
{
    env *e = *state;

    CMD(e->st, "+OK", "PSETEX", "k", "500", "abc");
    CMD(e->st, "500", "PTTL", "k");
    CMD(e->st, "3", "STRLEN", "k");
    CMD(e->st, "0", "STRLEN", "nokey");
    CMD(e->st, "\"abc\"", "GETSET", "k", "v"); /* and the TTL is gone */
    CMD(e->st, "-1", "PTTL", "k");
    CMD(e->st, "nil", "GETSET", "k2", "w");
    CMD(e->st, "+OK", "SETEX", "k2", "2", "w2");
    CMD(e->st, "2000", "PTTL", "k2");
    CMD(e->st, "-ERR invalid expire time in 'setex' command", "SETEX", "k2", "0", "w");
    CMD(e->st, "-ERR invalid expire time in 'psetex' command", "PSETEX", "k2", "-5", "w");
    CMD(e->st, "-ERR value is not an integer or out of range", "SETEX", "k2", "x", "w");
    CMD(e->st, "\"v\"", "GETDEL", "k");
    CMD(e->st, "nil", "GETDEL", "k");
    CMD(e->st, "0", "EXISTS", "k");
    CMD(e->st, "1", "HSET", "h", "f", "1");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "GETDEL", "h");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "GETSET", "h", "x");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "STRLEN", "h");
    CMD(e->st, "1", "EXISTS", "h");

    /* HINCRBYFLOAT counts in long double and prints like Redis's ld2string:
     * 17 decimals, trailing zeros dropped, no exponent. */
    CMD(e->st, "\"1.5\"", "HINCRBYFLOAT", "h", "f", "0.5");
    CMD(e->st, "\"10.6\"", "HINCRBYFLOAT", "h", "n", "10.6");
    CMD(e->st, "\"10.8\"", "HINCRBYFLOAT", "h", "n", "0.2");
    CMD(e->st, "\"5000\"", "HINCRBYFLOAT", "h", "e", "5.0e3");
    CMD(e->st, "\"0\"", "HINCRBYFLOAT", "h", "z", "-0");
    CMD(e->st, "\"-1.25\"", "HINCRBYFLOAT", "h", "z", "-1.25");
    CMD(e->st, "\"10.8\"", "HGET", "h", "n");
    CMD(e->st, "-ERR value is not a valid float", "HINCRBYFLOAT", "h", "n", "abc");
    CMD(e->st, "-ERR value is not a valid float", "HINCRBYFLOAT", "h", "n", " 1");
    CMD(e->st, "-ERR value is NaN or Infinity", "HINCRBYFLOAT", "h", "n", "inf");
    CMD(e->st, "1", "HSET", "h", "s", "text");
    CMD(e->st, "-ERR hash value is not a float", "HINCRBYFLOAT", "h", "s", "1");
    CMD(e->st, "+OK", "SET", "str", "1");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "HINCRBYFLOAT", "str", "f", "1");
    CMD(e->st, "-ERR wrong number of arguments for 'hincrbyfloat' command",
        "HINCRBYFLOAT", "h", "f");

    /* INCRBYFLOAT: the same arithmetic on strings; the key keeps its TTL. */
    CMD(e->st, "\"3.5\"", "INCRBYFLOAT", "c", "3.5");
    CMD(e->st, "1", "PEXPIRE", "c", "1000");
    CMD(e->st, "\"3\"", "INCRBYFLOAT", "c", "-0.5");
    CMD(e->st, "1000", "PTTL", "c");
    CMD(e->st, "\"3\"", "GET", "c");
    CMD(e->st, "-ERR value is not a valid float", "INCRBYFLOAT", "c", "x");
    CMD(e->st, "-ERR increment would produce NaN or Infinity", "INCRBYFLOAT", "c", "inf");
    CMD(e->st, "-" "WRONGTYPE Operation against a key holding the wrong kind of value",
        "INCRBYFLOAT", "h", "1");
}

static void test_store_time(void **state)
{
    env *e = *state;

    /* The virtual clock's wall time: its epoch (1700000000000 ms) plus its
     * now (1000 ms at set-up), as [seconds, microseconds] strings. */
    CMD(e->st, "[\"1700000001\", \"0\"]", "TIME");
    assert_int_equal(dlock_vclock_advance(e->vc, 1234), 0);
    CMD(e->st, "[\"1700000002\", \"234000\"]", "TIME");
    EVAL0(e->b, "local t = redis.call('TIME') return {t[1], t[2], type(t[1])}",
          "[\"1700000002\", \"234000\", \"string\"]");
    CMD(e->st, "-ERR wrong number of arguments for 'time' command", "TIME", "x");
}

static void test_lua_libraries(void **state)
{
    env *e = *state;

    /* cjson: Lua CJSON, as embedded in Redis (14 significant digits). */
    EVAL0(e->b, "return cjson.encode({1, 2, 'a', {x = 1.5}, true})",
          "\"[1,2,\"a\",{\"x\":1.5},true]\"");
    EVAL0(e->b, "return cjson.encode(1/3)", "\"0.33333333333333\"");
    EVAL0(e->b, "local t = cjson.decode('{\"a\":[1,2.5,null,\"x\"]}') "
                "return {t.a[1], t.a[4], t.a[3] == cjson.null and 'null' or 'other'}",
          "[1, \"x\", \"null\"]");
    EVAL0(e->b, "return cjson.decode('{')",
          "-ERR user_script:1: Expected object key string but found T_END at "
          "character 2 script: test");
    /* bit: LuaBitOp, 32-bit signed results. */
    EVAL0(e->b, "return {bit.band(7, 3), bit.bor(1, 2), bit.bxor(5, 1), bit.lshift(1, 31), "
                "bit.tohex(-1), bit.bnot(0), bit.arshift(-256, 4), bit.rol(1, 33)}",
          "[3, 3, 4, -2147483648, \"ffffffff\", -1, -16, 2]");
    EVAL0(e->b, "return bit.tobit('x')",
          "-ERR user_script:1: bad argument #1 to 'tobit' (number expected, got string) "
          "script: test");
    /* redis.sha1hex: exactly one argument; non-strings hash as "". */
    EVAL0(e->b, "return {redis.sha1hex('abc'), redis.sha1hex(''), redis.sha1hex(12), "
                "redis.sha1hex(nil)}",
          "[\"a9993e364706816aba3e25717850c26c9cd0d89d\", "
          "\"da39a3ee5e6b4b0d3255bfef95601890afd80709\", "
          "\"7b52009b64fd0a2a49e6d8a939753077792b0554\", "
          "\"da39a3ee5e6b4b0d3255bfef95601890afd80709\"]");
    EVAL0(e->b, "return redis.sha1hex()", "-ERR wrong number of arguments script: test");
    EVAL0(e->b, "return redis.sha1hex('a', 'b')",
          "-ERR wrong number of arguments script: test");
    /* The libraries are globals like the others: read-only names. */
    EVAL0(e->b, "cjson = nil", "-ERR user_script:1: Attempt to modify a readonly table "
                               "script: test");
    /* A command the mock lacks is named, after Redis's own wording. */
    EVAL0(e->b, "return redis.pcall('SRANDMEMBER', 'k')",
          "-ERR Unknown Redis command called from script (the dlock mock has no "
          "'SRANDMEMBER'; dlock/mock.h lists what it runs)");
    /* A lock-like script using sets and GETDEL end to end. */
    EVAL(e->b, "if redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end "
               "redis.call('SET', KEYS[2], cjson.encode({owner = ARGV[1]})) "
               "return cjson.decode(redis.call('GETDEL', KEYS[2])).owner",
         2, "\"id-1\"", "holders", "last", "id-1");
    EVAL(e->b, "return redis.call('SADD', KEYS[1], ARGV[1])", 1, "0", "holders", "id-1");
}

static void test_lua_script_cache(void **state)
{
    env *e = *state;
    static const dlock_script s1 = {"s1", "return redis.call('INCR', KEYS[1])"};
    dlock_script s2 = {"s2", "return 'a'"};
    const char *k[] = {"n"};
    dlock_reply *r;
    int i;

    for (i = 1; i <= 3; i++) {
        assert_int_equal(dlock_backend_eval(e->b, &r, &s1, 1, 0, k, NULL, NULL, 0), 0);
        assert_int_equal(r->integer, i);
        dlock_reply_free(r);
    }
    assert_int_equal(dlock_backend_eval(e->b, &r, &s2, 0, 0, NULL, NULL, NULL, 0), 0);
    assert_string_equal(r->str, "a");
    dlock_reply_free(r);
    /* Same address, new text: recompiled, not served stale. */
    s2.source = "return 'b'";
    assert_int_equal(dlock_backend_eval(e->b, &r, &s2, 0, 0, NULL, NULL, NULL, 0), 0);
    assert_string_equal(r->str, "b");
    dlock_reply_free(r);
    /* Same address and a new text where a freed one was (a wrapper that
     * builds sources on the fly): still its own code. */
    for (i = 0; i < 3; i++) {
        char *text = malloc(32);

        assert_non_null(text);
        snprintf(text, 32, "return %d", 10 + i);
        s2.source = text;
        assert_int_equal(dlock_backend_eval(e->b, &r, &s2, 0, 0, NULL, NULL, NULL, 0), 0);
        assert_int_equal(r->integer, 10 + i);
        dlock_reply_free(r);
        free(text);
    }
}

static void test_backend(void **state)
{
    env *e = *state;
    dlock_backend *b2;
    dlock_reply *r = (dlock_reply *)&r;
    dlock_script s = {"s", "return redis.call('GET', KEYS[1])"};
    const char *argv[] = {"k", NULL};
    const size_t lens[] = {1};
    char err[64];

    assert_string_equal(e->b->methods->name, "mock");
    assert_ptr_equal(dlock_backend_clock(e->b), dlock_vclock_clock(e->vc));
    assert_int_equal(dlock_backend_eval(e->b, NULL, &s, 1, 0, argv, NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_backend_eval(e->b, &r, NULL, 1, 0, argv, NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_null(r);
    assert_int_equal(dlock_backend_eval(e->b, &r, &s, 2, 0, argv, NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_backend_eval(e->b, &r, &s, 0, 1, NULL, NULL, err, sizeof(err)),
                     DLOCK_EINVAL);

    /* Two backends on one store see the same data. */
    assert_int_equal(dlock_mock_backend_new(&b2, e->st), 0);
    CMD(e->st, "+OK", "SET", "k", "shared");
    assert_int_equal(dlock_backend_eval(b2, &r, &s, 1, 0, argv, lens, err, sizeof(err)), 0);
    assert_string_equal(show(r), "\"shared\"");
    dlock_reply_free(r);
    dlock_backend_free(b2);
}

static void test_lifetimes(void **state)
{
    dlock_vclock *vc;
    dlock_mock_store *st;
    dlock_backend *b;
    dlock_reply *r;
    dlock_script s = {"s", "return redis.call('SET', 'k', 'v', 'PX', 100)"};

    (void)state;
    /* The creator's references go first; the backend keeps everything. */
    assert_int_equal(dlock_vclock_new(&vc, 0), 0);
    assert_int_equal(dlock_mock_store_new(&st, dlock_vclock_clock(vc)), 0);
    assert_int_equal(dlock_mock_backend_new(&b, st), 0);
    dlock_vclock_free(vc);
    dlock_mock_store_free(st);
    assert_int_equal(dlock_backend_eval(b, &r, &s, 0, 0, NULL, NULL, NULL, 0), 0);
    assert_string_equal(show(r), "+OK");
    dlock_reply_free(r);
    assert_int_equal(dlock_clock_now(dlock_backend_clock(b)), 0);
    dlock_backend_free(b);
}

/* ---- pub/sub -------------------------------------------------------------------------- */

typedef struct listener {
    pthread_mutex_t mutex;
    int calls;
    char last[64];
    char channel[64];
    dlock_mock_store *peek; /* if set, read key "after" during the call */
    char peeked[32];
} listener;

static void on_message(void *arg, const char *channel, const char *msg, size_t len)
{
    listener *l = arg;

    pthread_mutex_lock(&l->mutex);
    l->calls++;
    snprintf(l->last, sizeof(l->last), "%.*s", (int)len, msg);
    snprintf(l->channel, sizeof(l->channel), "%s", channel);
    pthread_mutex_unlock(&l->mutex);
    if (l->peek != NULL) {
        /* Only a test does this: it proves the store mutex is free and the
         * script has finished (its last write is visible). */
        const char *argv[] = {"GET", "after"};
        dlock_reply *r = NULL;

        if (dlock_mock_store_command(l->peek, &r, 2, argv, NULL) == 0 && r != NULL &&
            r->type == DLOCK_REPLY_BULK)
            snprintf(l->peeked, sizeof(l->peeked), "%s", r->str);
        dlock_reply_free(r);
    }
}

static int calls_of(listener *l)
{
    int n;

    pthread_mutex_lock(&l->mutex);
    n = l->calls;
    pthread_mutex_unlock(&l->mutex);
    return n;
}

static void test_pubsub(void **state)
{
    env *e = *state;
    listener a, b;
    dlock_subscription *sa, *sb;

    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    pthread_mutex_init(&a.mutex, NULL);
    pthread_mutex_init(&b.mutex, NULL);
    assert_int_equal(dlock_backend_subscribe(e->b, &sa, "ch", on_message, &a), 0);
    assert_int_equal(dlock_backend_subscribe(e->b, &sb, "ch", on_message, &b), 0);

    CMD(e->st, "2", "PUBLISH", "ch", "hello");
    CMD(e->st, "0", "PUBLISH", "other", "x");
    assert_int_equal(calls_of(&a), 1);
    assert_int_equal(calls_of(&b), 1);
    assert_string_equal(a.last, "hello");
    assert_string_equal(a.channel, "ch");
    assert_int_equal(dlock_mock_store_publish_count(e->st), 2);

    /* Delivered after the script, with the store free again. */
    a.peek = e->st;
    EVAL(e->b, "local n = redis.call('PUBLISH', KEYS[1], 'm1') "
               "redis.call('SET', 'after', 'done') return n",
         1, "2", "ch");
    assert_int_equal(calls_of(&a), 2);
    assert_string_equal(a.last, "m1");
    assert_string_equal(a.peeked, "done");
    a.peek = NULL;

    dlock_backend_unsubscribe(e->b, sa);
    CMD(e->st, "1", "PUBLISH", "ch", "bye");
    assert_int_equal(calls_of(&a), 2);
    assert_int_equal(calls_of(&b), 3);
    dlock_backend_unsubscribe(e->b, sb);
    CMD(e->st, "0", "PUBLISH", "ch", "none");
    assert_int_equal(calls_of(&b), 3);
    dlock_backend_unsubscribe(e->b, NULL);
    pthread_mutex_destroy(&a.mutex);
    pthread_mutex_destroy(&b.mutex);
}

typedef struct publisher {
    dlock_mock_store *st;
    pthread_mutex_t mutex;
    int stop;
} publisher;

static void *publish_loop(void *arg)
{
    publisher *p = arg;
    const char *argv[] = {"PUBLISH", "busy", "x"};

    for (;;) {
        dlock_reply *r = NULL;
        int stop;

        pthread_mutex_lock(&p->mutex);
        stop = p->stop;
        pthread_mutex_unlock(&p->mutex);
        if (stop)
            break;
        if (dlock_mock_store_command(p->st, &r, 3, argv, NULL) == 0)
            dlock_reply_free(r);
    }
    return NULL;
}

/* Unsubscribe while another thread publishes: once it returns, the
 * callback never runs again (checked by freeing the listener at once). */
static void test_pubsub_unsubscribe_race(void **state)
{
    env *e = *state;
    publisher p;
    pthread_t t;
    int i;

    p.st = e->st;
    p.stop = 0;
    pthread_mutex_init(&p.mutex, NULL);
    assert_int_equal(pthread_create(&t, NULL, publish_loop, &p), 0);
    for (i = 0; i < 300; i++) {
        listener *l = calloc(1, sizeof(*l));
        dlock_subscription *s;

        assert_non_null(l);
        pthread_mutex_init(&l->mutex, NULL);
        assert_int_equal(dlock_backend_subscribe(e->b, &s, "busy", on_message, l), 0);
        if (i % 3 == 0)
            sched_yield();
        dlock_backend_unsubscribe(e->b, s);
        /* A late call would touch freed memory: ASan/TSan would see it. */
        pthread_mutex_destroy(&l->mutex);
        free(l);
    }
    pthread_mutex_lock(&p.mutex);
    p.stop = 1;
    pthread_mutex_unlock(&p.mutex);
    pthread_join(t, NULL);
    pthread_mutex_destroy(&p.mutex);
}

/* ---- clocks ------------------------------------------------------------------------------ */

static void test_realtime_clock(void **state)
{
    dlock_clock *c = dlock_clock_realtime();
    dlock_signal s;
    int64_t t0, t1, w;
    struct timespec ts;

    (void)state;
    assert_int_equal(dlock_signal_init(&s), 0);
    t0 = dlock_clock_now(c);
    assert_int_equal(dlock_clock_sleep_until(c, &s, t0 + 20), DLOCK_ETIMEDOUT);
    t1 = dlock_clock_now(c);
    assert_true(t1 - t0 >= 20);
    dlock_signal_raise(&s);
    assert_int_equal(dlock_clock_sleep_until(c, &s, INT64_MAX), 0);
    /* Consumed: the next wait times out. */
    assert_int_equal(dlock_clock_sleep_until(c, &s, dlock_clock_now(c)), DLOCK_ETIMEDOUT);
    clock_gettime(CLOCK_REALTIME, &ts);
    w = dlock_clock_wall(c);
    assert_true(w / 1000 - (int64_t)ts.tv_sec <= 1 && (int64_t)ts.tv_sec - w / 1000 <= 1);
    dlock_clock_done(c, &s); /* no slot: a no-op */
    dlock_clock_busy(c, &s);
    c->methods->ref(c);
    c->methods->unref(c);
    dlock_signal_destroy(&s);
}

static void test_vclock_basics(void **state)
{
    dlock_vclock *vc;
    dlock_clock *c;
    dlock_signal s;

    (void)state;
    assert_int_equal(dlock_vclock_new(&vc, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_vclock_new(&vc, 5000), 0);
    c = dlock_vclock_clock(vc);
    assert_int_equal(dlock_vclock_now(vc), 5000);
    assert_int_equal(dlock_clock_now(c), 5000);
    assert_int_equal(dlock_clock_wall(c) - dlock_clock_now(c), 1700000000000LL);
    assert_int_equal(dlock_vclock_advance(vc, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_vclock_advance(vc, 250), 0);
    assert_int_equal(dlock_vclock_now(vc), 5250);
    assert_int_equal(dlock_vclock_advance(vc, 0), 0);
    assert_int_equal(dlock_vclock_now(vc), 5250);

    assert_int_equal(dlock_signal_init(&s), 0);
    /* Past deadlines time out without sleeping; a raised flag wins. */
    assert_int_equal(dlock_clock_sleep_until(c, &s, 5250), DLOCK_ETIMEDOUT);
    dlock_signal_raise(&s);
    assert_int_equal(dlock_clock_sleep_until(c, &s, 0), 0);
    assert_int_equal(dlock_vclock_sleepers(vc), 0);
    assert_int_equal(dlock_vclock_wait_sleepers(vc, 1, 10), DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_vclock_wait_sleepers(vc, 0, 10), 0);
    dlock_clock_done(c, &s);
    dlock_signal_destroy(&s);

    /* Far jumps saturate instead of overflowing. */
    assert_int_equal(dlock_vclock_advance(vc, INT64_MAX), 0);
    assert_true(dlock_vclock_now(vc) == INT64_MAX - 1);
    dlock_vclock_free(vc);
}

typedef struct sleeper {
    dlock_clock *clock;
    dlock_signal sig;
    int64_t deadline; /* one sleep with this deadline when period is 0 */
    int64_t period;   /* > 0: sleep in a loop, period ms at a time */
    pthread_mutex_t mutex;
    int stop;
    int wakes;
    int rc;
    int64_t woke_at[16];
} sleeper;

static void *sleeper_main(void *arg)
{
    sleeper *s = arg;

    if (s->period == 0) {
        int rc = dlock_clock_sleep_until(s->clock, &s->sig, s->deadline);

        pthread_mutex_lock(&s->mutex);
        s->rc = rc;
        s->wakes++;
        pthread_mutex_unlock(&s->mutex);
    } else {
        int64_t next = dlock_clock_now(s->clock) + s->period;

        for (;;) {
            int rc = dlock_clock_sleep_until(s->clock, &s->sig, next), stop;

            pthread_mutex_lock(&s->mutex);
            stop = s->stop;
            if (!stop && rc == DLOCK_ETIMEDOUT) {
                if (s->wakes < 16)
                    s->woke_at[s->wakes] = dlock_clock_now(s->clock);
                s->wakes++;
            }
            pthread_mutex_unlock(&s->mutex);
            if (stop)
                break;
            if (rc == DLOCK_ETIMEDOUT)
                next = dlock_clock_now(s->clock) + s->period;
        }
    }
    dlock_clock_done(s->clock, &s->sig);
    return NULL;
}

static int wakes_of(sleeper *s)
{
    int n;

    pthread_mutex_lock(&s->mutex);
    n = s->wakes;
    pthread_mutex_unlock(&s->mutex);
    return n;
}

static void sleeper_init(sleeper *s, dlock_clock *c, int64_t deadline, int64_t period)
{
    memset(s, 0, sizeof(*s));
    s->clock = c;
    s->deadline = deadline;
    s->period = period;
    pthread_mutex_init(&s->mutex, NULL);
    assert_int_equal(dlock_signal_init(&s->sig), 0);
}

static void sleeper_destroy(sleeper *s)
{
    dlock_signal_destroy(&s->sig);
    pthread_mutex_destroy(&s->mutex);
}

static void test_vclock_wakes_sleeper(void **state)
{
    dlock_vclock *vc;
    sleeper s;
    pthread_t t;

    (void)state;
    assert_int_equal(dlock_vclock_new(&vc, 0), 0);
    sleeper_init(&s, dlock_vclock_clock(vc), 1000, 0);
    assert_int_equal(pthread_create(&t, NULL, sleeper_main, &s), 0);
    assert_int_equal(dlock_vclock_wait_sleepers(vc, 1, 5000), 0);
    assert_int_equal(dlock_vclock_sleepers(vc), 1);
    assert_int_equal(dlock_vclock_advance(vc, 999), 0);
    assert_int_equal(wakes_of(&s), 0);
    assert_int_equal(dlock_vclock_sleepers(vc), 1);
    /* advance returns only once the woken thread has settled (done). */
    assert_int_equal(dlock_vclock_advance(vc, 1), 0);
    assert_int_equal(wakes_of(&s), 1);
    assert_int_equal(s.rc, DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_vclock_sleepers(vc), 0);
    pthread_join(t, NULL);

    /* Woken by a message before the deadline: 0, time unchanged. */
    sleeper_destroy(&s);
    sleeper_init(&s, dlock_vclock_clock(vc), INT64_MAX, 0);
    assert_int_equal(pthread_create(&t, NULL, sleeper_main, &s), 0);
    assert_int_equal(dlock_vclock_wait_sleepers(vc, 1, 5000), 0);
    assert_int_equal(dlock_vclock_advance(vc, 1000000), 0);
    assert_int_equal(wakes_of(&s), 0);
    dlock_signal_raise(&s.sig);
    pthread_join(t, NULL);
    assert_int_equal(s.rc, 0);
    assert_int_equal(dlock_vclock_now(vc), 1001000);
    sleeper_destroy(&s);
    dlock_vclock_free(vc);
}

/* The point of the virtual clock: advance(60000) over a thread that sleeps
 * 10 s at a time wakes it six times, at the right virtual instants. */
static void test_vclock_stepping(void **state)
{
    dlock_vclock *vc;
    dlock_clock *c;
    sleeper a, b;
    pthread_t ta, tb;
    int i;

    (void)state;
    assert_int_equal(dlock_vclock_new(&vc, 0), 0);
    c = dlock_vclock_clock(vc);
    sleeper_init(&a, c, 0, 10000);
    sleeper_init(&b, c, 0, 25000);
    /* Declared busy before the threads exist, so the advance below waits
     * for their first sleep instead of racing past it. */
    dlock_clock_busy(c, &a.sig);
    dlock_clock_busy(c, &b.sig);
    assert_int_equal(pthread_create(&ta, NULL, sleeper_main, &a), 0);
    assert_int_equal(pthread_create(&tb, NULL, sleeper_main, &b), 0);

    assert_int_equal(dlock_vclock_advance(vc, 60000), 0);
    assert_int_equal(wakes_of(&a), 6);
    assert_int_equal(wakes_of(&b), 2);
    for (i = 0; i < 6; i++)
        assert_int_equal(a.woke_at[i], 10000 * (i + 1));
    assert_int_equal(b.woke_at[0], 25000);
    assert_int_equal(b.woke_at[1], 50000);
    assert_int_equal(dlock_vclock_now(vc), 60000);
    assert_int_equal(dlock_vclock_sleepers(vc), 2);

    assert_int_equal(dlock_vclock_advance(vc, 5000), 0);
    assert_int_equal(wakes_of(&a), 6);
    assert_int_equal(dlock_vclock_advance(vc, 5000), 0);
    assert_int_equal(wakes_of(&a), 7);
    assert_int_equal(wakes_of(&b), 2);

    pthread_mutex_lock(&a.mutex);
    a.stop = 1;
    pthread_mutex_unlock(&a.mutex);
    pthread_mutex_lock(&b.mutex);
    b.stop = 1;
    pthread_mutex_unlock(&b.mutex);
    dlock_signal_raise(&a.sig);
    dlock_signal_raise(&b.sig);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    assert_int_equal(dlock_vclock_sleepers(vc), 0);
    sleeper_destroy(&a);
    sleeper_destroy(&b);
    dlock_vclock_free(vc);
}

/* A lease on the virtual clock: a sleeper waiting for the key's TTL wakes
 * exactly when the key is gone. */
static void test_vclock_store_lease(void **state)
{
    env *e = *state;
    sleeper s;
    pthread_t t;

    CMD(e->st, "+OK", "SET", "lease", "me", "PX", "30000");
    sleeper_init(&s, dlock_vclock_clock(e->vc), dlock_vclock_now(e->vc) + 30000, 0);
    assert_int_equal(pthread_create(&t, NULL, sleeper_main, &s), 0);
    assert_int_equal(dlock_vclock_wait_sleepers(e->vc, 1, 5000), 0);
    assert_int_equal(dlock_vclock_advance(e->vc, 29999), 0);
    CMD(e->st, "1", "EXISTS", "lease");
    assert_int_equal(wakes_of(&s), 0);
    assert_int_equal(dlock_vclock_advance(e->vc, 100000), 0);
    pthread_join(t, NULL);
    assert_int_equal(s.rc, DLOCK_ETIMEDOUT);
    CMD(e->st, "0", "EXISTS", "lease");
    sleeper_destroy(&s);
}

/* ---- throughput -------------------------------------------------------------------------- */

static void test_throughput(void **state)
{
    env *e = *state;
    static const dlock_script acquire = {
        "bench_acquire",
        "if redis.call('exists', KEYS[1]) == 0 or "
        "redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
        "redis.call('hincrby', KEYS[1], ARGV[2], 1) "
        "redis.call('pexpire', KEYS[1], ARGV[1]) return nil end "
        "return redis.call('pttl', KEYS[1])"};
    static const dlock_script release = {
        "bench_release",
        "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end "
        "local n = redis.call('hincrby', KEYS[1], ARGV[1], -1) "
        "if n > 0 then return 0 end redis.call('del', KEYS[1]) "
        "redis.call('publish', KEYS[2], '0') return 1"};
    const char *a[] = {"lock", "30000", "owner-1"};
    const char *rl[] = {"lock", "chan", "owner-1"};
    struct timespec t0, t1;
    double secs;
    int i, n = 20000;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < n; i++) {
        dlock_reply *r;

        assert_int_equal(dlock_backend_eval(e->b, &r, &acquire, 1, 2, a, NULL, NULL, 0), 0);
        assert_int_equal(r->type, DLOCK_REPLY_NIL);
        dlock_reply_free(r);
        assert_int_equal(dlock_backend_eval(e->b, &r, &release, 2, 1, rl, NULL, NULL, 0), 0);
        assert_int_equal(r->integer, 1);
        dlock_reply_free(r);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_message("mock: %.0f scripts/s (lock+unlock pairs, one thread)\n",
                  2.0 * n / (secs > 0 ? secs : 1e-9));
    assert_int_equal(dlock_mock_store_dbsize(e->st), 0);
}

int dlock_test_mock_store(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reply_constructors),
        cmocka_unit_test(test_null_safety),
        cmocka_unit_test_setup_teardown(test_store_bad_input, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_strings, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_keys, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_hash, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_grow_shrink, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_hash_more, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_list, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_list_model, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_zset, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_set, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_getdel_floats, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_time, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_lua_libraries, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_expiry, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_store_expireat, env_setup, env_teardown),
        cmocka_unit_test(test_store_realtime_expiry),
        cmocka_unit_test_setup_teardown(test_lua_to_redis, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_script_cache_by_content, env_setup, env_teardown),

        cmocka_unit_test_setup_teardown(test_lua_self_reference, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_redis_to_lua, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_lua_errors, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_lua_script_cache, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_backend, env_setup, env_teardown),
        cmocka_unit_test(test_lifetimes),
        cmocka_unit_test_setup_teardown(test_pubsub, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_pubsub_unsubscribe_race, env_setup,
                                        env_teardown),
        cmocka_unit_test(test_realtime_clock),
        cmocka_unit_test(test_vclock_basics),
        cmocka_unit_test(test_vclock_wakes_sleeper),
        cmocka_unit_test(test_vclock_stepping),
        cmocka_unit_test_setup_teardown(test_vclock_store_lease, env_setup, env_teardown),
        cmocka_unit_test_setup_teardown(test_throughput, env_setup, env_teardown),
        cmocka_unit_test(test_valkey_dialect),
        cmocka_unit_test(test_noise_floor),
    };

    return DLOCK_RUN_GROUP("mock_store", tests, NULL, NULL);
}
