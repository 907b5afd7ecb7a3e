/*
 * Differential test of the mock store against redis-server.
 *
 * Random sequences of the commands the lock scripts use (strings and
 * counters, hashes, lists, sorted sets with score bounds, sets, float
 * increments, key commands with expiries, PUBLISH, TIME, wrong types, bad
 * arguments) run on a mock store and on
 * a throwaway redis-server, and every pair of replies is compared: types,
 * values and error messages. Random Lua scripts run on both too (the mock
 * through its backend's eval, Redis through EVAL), to compare the
 * conversion rules between Lua values and replies.
 *
 * Redis is spoken to over a raw socket (the small RESP client below), not
 * through hiredis or the library's Redis backend, so that the reference
 * side is the server itself and nothing of ours sits in between.
 *
 * Time: the mock runs on the real-time clock. Lease-like TTLs are long
 * (minutes), so no key expires by accident between the two runs of one
 * command; PTTL/TTL answers are compared by class (-2 absent, -1 no expiry)
 * and, when positive, within a tolerance. Expiry itself is checked by
 * dedicated steps: a short TTL on both sides, a real sleep well past it,
 * then a look. Known deliberate difference (backends/mock/store.c): a mock
 * key is gone AT its deadline, a Redis key one millisecond later; that
 * boundary millisecond is never observed here (the sleeps are long).
 *
 * Orders that Redis does not define are compared as sets: HGETALL, HKEYS
 * and HVALS (a hash's field order is an encoding detail on Redis too), and
 * the set commands' member lists. SPOP is compared only where Redis's
 * random choice does not matter (a count of 0 or of the whole set).
 *
 * TIME is compared by shape: two strings, seconds within the TTL tolerance,
 * microseconds below 1 000 000.
 *
 * One deliberate difference: inside a script, the server says "ERR Unknown
 * Redis command called from script" (Valkey: "ERR Unknown command called
 * from script") and the mock adds which command it lacks; the comparison
 * accepts exactly that addition.
 *
 * Servers: the mock answers as the server it emulates (dlock_mock_server in
 * dlock/mock.h), so the mock store is made with the dialect of the server
 * under test, read from its INFO (Redis 7.0 or Valkey 8; another server
 * fails the run, naming it): every reply is then compared exactly, against
 * either server.
 *
 * Everything else that differs is a mock bug. The cases found so far are
 * replayed first, as fixed regressions (regressions[] below).
 *
 * Quick slice: dlock_test_differential() (make check). The long run:
 * tests/backends/mock/differential/stress_main.c (make stress-differential).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"
#include "dlock/sys/backend.h"
#include "differential_test.h"
#include "../../harness/redis_server.h"
#include "../../harness/runner.h"

#define MAX_ARGS 24
#define ARG_CAP 96
#define TTL_TOLERANCE_MS 3000 /* both sides' commands run within this */
#define SHORT_TTL_MS 15
#define SHORT_SLEEP_MS 40
#define IO_TIMEOUT_S 10

/* ---- a raw RESP client ---------------------------------------------------- */

typedef struct resp_conn {
    int fd;
    char buf[16384];
    size_t start, end;
} resp_conn;

static int resp_connect(resp_conn *c, int port)
{
    struct sockaddr_in a;
    struct timeval tv = {IO_TIMEOUT_S, 0};
    int one = 1;
    memset(c, 0, sizeof *c);
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((unsigned short)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

static void resp_close(resp_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

static int resp_fill(resp_conn *c)
{
    ssize_t n;
    if (c->start == c->end)
        c->start = c->end = 0;
    if (c->end == sizeof c->buf) {
        memmove(c->buf, c->buf + c->start, c->end - c->start);
        c->end -= c->start;
        c->start = 0;
    }
    do
        n = recv(c->fd, c->buf + c->end, sizeof c->buf - c->end, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    c->end += (size_t)n;
    return 0;
}

static int resp_getc(resp_conn *c, char *ch)
{
    if (c->start == c->end && resp_fill(c) != 0)
        return -1;
    *ch = c->buf[c->start++];
    return 0;
}

/* A protocol line without its CRLF; lines in replies we parse are short. */
static int resp_line(resp_conn *c, char *line, size_t cap, size_t *len)
{
    size_t n = 0;
    char ch;
    for (;;) {
        if (resp_getc(c, &ch) != 0)
            return -1;
        if (ch == '\n')
            break;
        if (n + 1 >= cap)
            return -1;
        line[n++] = ch;
    }
    if (n > 0 && line[n - 1] == '\r')
        n--;
    line[n] = '\0';
    *len = n;
    return 0;
}

static int resp_read(resp_conn *c, dlock_reply **out, int depth)
{
    char line[1024];
    size_t len, i;
    long long n;
    *out = NULL;
    if (depth > 16 || resp_line(c, line, sizeof line, &len) != 0 || len == 0)
        return -1;
    switch (line[0]) {
    case '+':
    case '-':
        *out = dlock_reply_string(line[0] == '+' ? DLOCK_REPLY_STATUS
                                                 : DLOCK_REPLY_ERROR,
                                  line + 1, len - 1);
        return *out ? 0 : -1;
    case ':':
        *out = dlock_reply_integer(strtoll(line + 1, NULL, 10));
        return *out ? 0 : -1;
    case '$': {
        char *data;
        n = strtoll(line + 1, NULL, 10);
        if (n < 0) {
            *out = dlock_reply_nil();
            return *out ? 0 : -1;
        }
        data = malloc((size_t)n + 2);
        if (!data)
            return -1;
        for (i = 0; i < (size_t)n + 2; i++)
            if (resp_getc(c, &data[i]) != 0) {
                free(data);
                return -1;
            }
        *out = dlock_reply_string(DLOCK_REPLY_BULK, data, (size_t)n);
        free(data);
        return *out ? 0 : -1;
    }
    case '*':
        n = strtoll(line + 1, NULL, 10);
        if (n < 0) {
            *out = dlock_reply_nil();
            return *out ? 0 : -1;
        }
        *out = dlock_reply_array((size_t)n);
        if (!*out)
            return -1;
        for (i = 0; i < (size_t)n; i++)
            if (resp_read(c, &(*out)->elems[i], depth + 1) != 0)
                return -1;
        return 0;
    default:
        return -1;
    }
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Sends argv (binary-safe) in one write (several small writes would meet
 * Nagle's algorithm and delayed ACKs: 40 ms a command) and reads one
 * reply. */
static int resp_command(resp_conn *c, dlock_reply **out, int argc,
                        const char *const *argv, const size_t *argvlen)
{
    size_t cap = 32, pos, i;
    char *msg;
    int rc;
    *out = NULL;
    for (i = 0; i < (size_t)argc; i++)
        cap += argvlen[i] + 32;
    msg = malloc(cap);
    if (!msg)
        return -1;
    pos = (size_t)snprintf(msg, cap, "*%d\r\n", argc);
    for (i = 0; i < (size_t)argc; i++) {
        pos += (size_t)snprintf(msg + pos, cap - pos, "$%zu\r\n", argvlen[i]);
        memcpy(msg + pos, argv[i], argvlen[i]);
        pos += argvlen[i];
        memcpy(msg + pos, "\r\n", 2);
        pos += 2;
    }
    rc = write_all(c->fd, msg, pos);
    free(msg);
    if (rc != 0)
        return -1;
    if (resp_read(c, out, 0) != 0) {
        dlock_reply_free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* ---- random generation ------------------------------------------------------ */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnext(rng *r)
{
    /* splitmix64: small, good enough, reproducible from one seed. */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static unsigned rpick(rng *r, unsigned n)
{
    return (unsigned)(rnext(r) % n);
}

#define PICK(r, arr) ((arr)[rpick((r), sizeof(arr) / sizeof((arr)[0]))])

/* One command under construction. */
typedef struct cmd {
    int argc;
    char argv[MAX_ARGS][ARG_CAP];
    size_t len[MAX_ARGS];
    int ttl_reply; /* the reply is a TTL: compare with a tolerance */
    int unordered; /* the reply's order is not defined: compare sorted */
    int pairs;     /* ... in pairs (HGETALL) */
    int family;    /* which keys it prefers (add_key) */
    int time_reply; /* TIME: compared by shape (see the top) */
} cmd;

static void add(cmd *c, const char *s)
{
    size_t n = strlen(s);
    if (c->argc >= MAX_ARGS || n >= ARG_CAP)
        return;
    memcpy(c->argv[c->argc], s, n + 1);
    c->len[c->argc++] = n;
}

static void addb(cmd *c, const char *s, size_t n)
{
    if (c->argc >= MAX_ARGS || n >= ARG_CAP)
        return;
    memcpy(c->argv[c->argc], s, n);
    c->argv[c->argc][n] = '\0';
    c->len[c->argc++] = n;
}

static void addf(cmd *c, const char *fmt, long long v)
{
    char b[64];
    snprintf(b, sizeof b, fmt, v);
    add(c, b);
}

/* A small key space, so that commands collide on types and values. */
#define NKEYS 10
static const char *const keys[NKEYS] = {"d:a", "d:b", "d:c", "d:{x}", "d:e",
                                        "d:f", "d:g", "d:h", "d:s", "d:t"};
static const char *const fields[] = {"f1", "f2", "mode", "o:1", "o:1:write",
                                     ""};
static const char *const ints[] = {
    "0", "1", "-1", "2", "42", "-7", "100", "9223372036854775807",
    "-9223372036854775808", "9223372036854775806", "-9223372036854775807"};
static const char *const odd_ints[] = {
    "007", " 1", "1 ", "+5", "9223372036854775808", "-9223372036854775809",
    "abc", "", "1.5", "3e2", "0x10", "--1", "-0", "1\n"};
static const char *const strs[] = {"v", "hello", "x y", "", "read", "write",
                                   "0", "1", "12", "-3", "abc", "\xff\xfe"};
static const char *const scores[] = {
    "1", "2", "2.5", "-3", "0", "-0", "1e3", "1.5e-3", "inf", "-inf", "+inf",
    "1e308", "123456789012345678", "0.1", "3.0", "7"};
static const char *const odd_scores[] = {"abc", "nan", "", "1x", " 1",
                                         "(1", "0x1p3", "1e999"};
static const char *const bounds[] = {
    "-inf", "+inf", "inf", "0", "1", "2", "(1", "(2", "(-inf", "(+inf",
    "2.5", "(2.5", "-3", "(-3", "1e3", "7", "(7", "[1", "abc", "(", ""};
static const char *const floats[] = {
    "0.5", "-0.5", "10.6", "0.2", "1e3", "5.0e3", "-0", "3", "0.1", "-1.25",
    "1.5e-3", "1e30", "abc", "inf", "-inf", " 1", "", "1e400", "0x10"};
static const char *const members[] = {"a", "b", "c", "1", "2", "", "x y"};
static const char *const indexes[] = {"0", "1", "-1", "2", "-2", "10", "-10",
                                      "3", "-100", "x", "1.0"};

static void add_int(cmd *c, rng *r)
{
    add(c, rpick(r, 8) == 0 ? PICK(r, odd_ints) : PICK(r, ints));
}

static void add_small_int(cmd *c, rng *r)
{
    if (rpick(r, 10) == 0)
        add_int(c, r);
    else
        addf(c, "%lld", (long long)rpick(r, 21) - 10);
}

static void add_value(cmd *c, rng *r)
{
    unsigned k = rpick(r, 10);
    if (k < 6)
        add(c, PICK(r, strs));
    else if (k < 9)
        add_small_int(c, r);
    else
        addb(c, "a\0b", 3); /* binary-safe values */
}

static void add_score(cmd *c, rng *r)
{
    if (rpick(r, 12) == 0)
        add(c, PICK(r, odd_scores));
    else
        add(c, PICK(r, scores));
}

/* A lease-like TTL: long enough never to run out during a run. Sometimes
 * a bad one (zero, negative, not a number, overflowing). */
static void add_ttl_ms(cmd *c, rng *r)
{
    static const char *const bad[] = {"0", "-5", "abc", "1.5", "",
                                      "9223372036854775807",
                                      "-9223372036854775808",
                                      "9223372036854775"};
    if (rpick(r, 8) == 0)
        add(c, PICK(r, bad));
    else
        addf(c, "%lld", 600000LL + (long long)rpick(r, 600000));
}

/* Mostly a key of the command's own family (so that most commands find a
 * value of their type and do real work), sometimes any key (wrong types). */
static void add_key(cmd *c, rng *r)
{
    if (rpick(r, 4) == 0)
        add(c, PICK(r, keys));
    else
        add(c, keys[(c->family * 2 + (int)rpick(r, 2)) % NKEYS]);
}

static void gen_string(cmd *c, rng *r)
{
    switch (rpick(r, 17)) {
    case 14:
        add(c, rpick(r, 2) ? "SETEX" : "PSETEX"), add_key(c, r);
        if (rpick(r, 6) == 0)
            add(c, PICK(r, ((const char *const[]){"0", "-1", "x", "9223372036854775807"})));
        else
            addf(c, "%lld", 600000LL + (long long)rpick(r, 600000));
        add_value(c, r);
        break;
    case 15:
        add(c, "GETSET"), add_key(c, r), add_value(c, r);
        break;
    case 16:
        add(c, "STRLEN"), add_key(c, r);
        break;
    case 0:
        add(c, "GET"), add_key(c, r);
        break;
    case 1:
    case 2: {
        unsigned opt = rpick(r, 10);
        add(c, "SET"), add_key(c, r), add_value(c, r);
        if (opt == 1)
            add(c, "NX");
        else if (opt == 2)
            add(c, "XX");
        if (opt >= 3 && opt <= 5)
            add(c, rpick(r, 2) ? "PX" : "px"), add_ttl_ms(c, r);
        else if (opt == 6)
            add(c, "EX"), addf(c, "%lld", 600 + (long long)rpick(r, 600));
        else if (opt == 7)
            add(c, "NX"), add(c, "PX"), add_ttl_ms(c, r);
        else if (opt == 8)
            add(c, "PX"); /* missing value */
        else if (opt == 9)
            add(c, "KEEPTTL");
        break;
    }
    case 3:
        add(c, "SETNX"), add_key(c, r), add_value(c, r);
        break;
    case 4:
        add(c, "INCR"), add_key(c, r);
        break;
    case 5:
        add(c, "DECR"), add_key(c, r);
        break;
    case 6:
    case 7:
        add(c, "INCRBY"), add_key(c, r), add_int(c, r);
        break;
    case 8:
    case 9:
        add(c, "DECRBY"), add_key(c, r), add_int(c, r);
        break;
    case 10:
        add(c, "MGET"), add_key(c, r), add_key(c, r);
        break;
    case 12:
        add(c, "GETDEL"), add_key(c, r);
        break;
    case 13:
        add(c, "INCRBYFLOAT"), add_key(c, r), add(c, PICK(r, floats));
        break;
    default:
        add(c, "SET"), add_key(c, r), add_small_int(c, r);
        break;
    }
}

static void gen_keys(cmd *c, rng *r)
{
    unsigned i, n;
    switch (rpick(r, 15)) {
    case 14:
        add(c, "TIME");
        if (rpick(r, 8) == 0)
            add(c, "extra");
        else
            c->time_reply = 1;
        break;
    case 0:
    case 1:
        add(c, rpick(r, 4) ? "DEL" : "UNLINK");
        n = 1 + rpick(r, 3);
        for (i = 0; i < n; i++)
            add_key(c, r);
        break;
    case 2:
    case 3:
        add(c, "EXISTS");
        n = 1 + rpick(r, 3);
        for (i = 0; i < n; i++)
            add_key(c, r);
        break;
    case 4:
        add(c, "TYPE"), add_key(c, r);
        break;
    case 5:
    case 6:
        add(c, "PEXPIRE"), add_key(c, r), add_ttl_ms(c, r);
        if (rpick(r, 5) == 0)
            add(c, PICK(r, ((const char *const[]){"NX", "XX", "GT", "LT",
                                                  "nx", "bogus"})));
        break;
    case 7:
        add(c, "EXPIRE"), add_key(c, r),
            addf(c, "%lld", 600 + (long long)rpick(r, 600));
        break;
    case 8:
    case 9:
        add(c, "PTTL"), add_key(c, r);
        c->ttl_reply = 1;
        break;
    case 10:
        add(c, "TTL"), add_key(c, r);
        c->ttl_reply = 1;
        break;
    case 11:
        add(c, "PERSIST"), add_key(c, r);
        break;
    case 12:
        add(c, "PUBLISH"), add(c, rpick(r, 2) ? "ch" : "redisson_lock__channel:{d:a}"),
            add_value(c, r);
        break;
    default:
        add(c, "PEXPIRE"), add_key(c, r), add(c, rpick(r, 2) ? "-1" : "0");
        break;
    }
}

static void gen_hash(cmd *c, rng *r)
{
    unsigned i, n;
    switch (rpick(r, 15)) {
    case 13:
    case 14:
        add(c, "HINCRBYFLOAT"), add_key(c, r), add(c, PICK(r, fields)),
            add(c, PICK(r, floats));
        break;
    case 0:
    case 1:
        add(c, "HSET"), add_key(c, r);
        n = 1 + rpick(r, 2);
        for (i = 0; i < n; i++)
            add(c, PICK(r, fields)), add_value(c, r);
        if (rpick(r, 15) == 0)
            add(c, "dangling");
        break;
    case 2:
        add(c, "HGET"), add_key(c, r), add(c, PICK(r, fields));
        break;
    case 3:
        add(c, "HDEL"), add_key(c, r), add(c, PICK(r, fields));
        if (rpick(r, 2))
            add(c, PICK(r, fields));
        break;
    case 4:
        add(c, "HEXISTS"), add_key(c, r), add(c, PICK(r, fields));
        break;
    case 5:
    case 6:
        add(c, "HINCRBY"), add_key(c, r), add(c, PICK(r, fields)),
            add_small_int(c, r);
        break;
    case 7:
        add(c, "HGETALL"), add_key(c, r);
        c->unordered = 1;
        c->pairs = 1;
        break;
    case 8:
        add(c, rpick(r, 2) ? "HKEYS" : "HVALS"), add_key(c, r);
        c->unordered = 1;
        break;
    case 9:
        add(c, "HLEN"), add_key(c, r);
        break;
    case 10:
        add(c, "HMGET"), add_key(c, r), add(c, PICK(r, fields)),
            add(c, PICK(r, fields));
        break;
    case 11:
        add(c, "HSETNX"), add_key(c, r), add(c, PICK(r, fields)),
            add_value(c, r);
        break;
    default:
        add(c, "HMSET"), add_key(c, r), add(c, PICK(r, fields)),
            add_value(c, r);
        break;
    }
}

static void gen_list(cmd *c, rng *r)
{
    unsigned i, n;
    switch (rpick(r, 12)) {
    case 0:
    case 1:
        add(c, rpick(r, 2) ? "RPUSH" : "LPUSH"), add_key(c, r);
        n = 1 + rpick(r, 3);
        for (i = 0; i < n; i++)
            add_value(c, r);
        break;
    case 2:
    case 3:
        add(c, rpick(r, 2) ? "LPOP" : "RPOP"), add_key(c, r);
        if (rpick(r, 3) == 0)
            add(c, PICK(r, indexes));
        break;
    case 4:
    case 5:
        add(c, "LRANGE"), add_key(c, r), add(c, PICK(r, indexes)),
            add(c, PICK(r, indexes));
        break;
    case 6:
        add(c, "LINDEX"), add_key(c, r), add(c, PICK(r, indexes));
        break;
    case 7:
        add(c, "LLEN"), add_key(c, r);
        break;
    case 8:
        add(c, "LREM"), add_key(c, r), add(c, PICK(r, indexes)),
            add_value(c, r);
        break;
    case 9:
        add(c, "LSET"), add_key(c, r), add(c, PICK(r, indexes)),
            add_value(c, r);
        break;
    default:
        add(c, "LTRIM"), add_key(c, r), add(c, PICK(r, indexes)),
            add(c, PICK(r, indexes));
        break;
    }
}

static void gen_zset(cmd *c, rng *r)
{
    unsigned i, n;
    switch (rpick(r, 16)) {
    case 0:
    case 1:
    case 2: {
        unsigned opt = rpick(r, 12);
        add(c, "ZADD"), add_key(c, r);
        if (opt == 1)
            add(c, "NX");
        else if (opt == 2)
            add(c, "XX");
        else if (opt == 3)
            add(c, "CH");
        else if (opt == 4)
            add(c, "GT");
        else if (opt == 5)
            add(c, "LT");
        else if (opt == 6)
            add(c, "INCR");
        else if (opt == 7)
            add(c, "NX"), add(c, "XX");
        n = 1 + rpick(r, 2);
        for (i = 0; i < n; i++)
            add_score(c, r), add(c, PICK(r, fields));
        if (opt == 8)
            add_score(c, r); /* odd number of score/member arguments */
        break;
    }
    case 3:
        add(c, "ZSCORE"), add_key(c, r), add(c, PICK(r, fields));
        break;
    case 4:
    case 5: {
        add(c, rpick(r, 2) ? "ZRANGEBYSCORE" : "ZREVRANGEBYSCORE"),
            add_key(c, r), add(c, PICK(r, bounds)), add(c, PICK(r, bounds));
        if (rpick(r, 2))
            add(c, "WITHSCORES");
        if (rpick(r, 3) == 0)
            add(c, "LIMIT"), add(c, PICK(r, indexes)), add(c, PICK(r, indexes));
        break;
    }
    case 6:
    case 7:
        add(c, rpick(r, 2) ? "ZRANGE" : "ZREVRANGE"), add_key(c, r),
            add(c, PICK(r, indexes)), add(c, PICK(r, indexes));
        if (rpick(r, 2))
            add(c, rpick(r, 2) ? "WITHSCORES" : "withscores");
        break;
    case 8:
        add(c, "ZREM"), add_key(c, r), add(c, PICK(r, fields));
        if (rpick(r, 2))
            add(c, PICK(r, fields));
        break;
    case 9:
        add(c, "ZREMRANGEBYSCORE"), add_key(c, r), add(c, PICK(r, bounds)),
            add(c, PICK(r, bounds));
        break;
    case 10:
        add(c, "ZCARD"), add_key(c, r);
        break;
    case 11:
        add(c, "ZCOUNT"), add_key(c, r), add(c, PICK(r, bounds)),
            add(c, PICK(r, bounds));
        break;
    case 12:
        add(c, rpick(r, 2) ? "ZRANK" : "ZREVRANK"), add_key(c, r),
            add(c, PICK(r, fields));
        break;
    case 13:
        add(c, "ZINCRBY"), add_key(c, r), add_score(c, r),
            add(c, PICK(r, fields));
        break;
    default:
        add(c, "ZRANGE"), add_key(c, r), add(c, "0"), add(c, "0"),
            add(c, "WITHSCORES");
        break;
    }
}

static void gen_set(cmd *c, rng *r)
{
    unsigned i, n;
    switch (rpick(r, 12)) {
    case 0:
    case 1:
    case 2:
        add(c, "SADD"), add_key(c, r);
        n = rpick(r, 8) == 0 ? 0 : 1 + rpick(r, 3);
        for (i = 0; i < n; i++)
            add(c, PICK(r, members));
        break;
    case 3:
        add(c, "SREM"), add_key(c, r), add(c, PICK(r, members));
        if (rpick(r, 2))
            add(c, PICK(r, members));
        break;
    case 4:
        add(c, "SISMEMBER"), add_key(c, r), add(c, PICK(r, members));
        break;
    case 5:
        add(c, "SMISMEMBER"), add_key(c, r), add(c, PICK(r, members)),
            add(c, PICK(r, members));
        break;
    case 6:
        add(c, "SCARD"), add_key(c, r);
        break;
    case 7:
        add(c, "SMEMBERS"), add_key(c, r);
        c->unordered = 1;
        break;
    case 8:
        add(c, PICK(r, ((const char *const[]){"SINTER", "SUNION", "SDIFF"})));
        add_key(c, r), add_key(c, r);
        c->unordered = 1;
        break;
    case 9: {
        unsigned k = rpick(r, 6);
        add(c, "SINTERCARD"),
            add(c, PICK(r, ((const char *const[]){"2", "1", "0", "3", "x"})));
        add_key(c, r), add_key(c, r);
        if (k == 1)
            add(c, "LIMIT"), add(c, PICK(r, ((const char *const[]){"1", "0", "-1", "x"})));
        else if (k == 2)
            add(c, "BOGUS");
        break;
    }
    case 10:
        add(c, "SMOVE"), add_key(c, r), add_key(c, r), add(c, PICK(r, members));
        break;
    default:
        add(c, "SPOP"), add_key(c, r),
            add(c, PICK(r, ((const char *const[]){"0", "100", "-1", "x"})));
        c->unordered = 1;
        break;
    }
}

/* Unknown commands and wrong arities: the error wording matters too. */
static void gen_bad(cmd *c, rng *r)
{
    switch (rpick(r, 5)) {
    case 0:
        add(c, "NOSUCHCMD"), add_key(c, r);
        break;
    case 1:
        add(c, "GET");
        break;
    case 2:
        add(c, "HGET"), add_key(c, r);
        break;
    case 3:
        add(c, "ZADD"), add_key(c, r);
        break;
    default:
        add(c, "PTTL"), add_key(c, r), add_key(c, r);
        break;
    }
}

static void gen_command(cmd *c, rng *r)
{
    unsigned k = rpick(r, 100);
    memset(c, 0, sizeof *c);
    c->family = (int)rpick(r, 4);
    if (k < 18)
        c->family = 0, gen_string(c, r);
    else if (k < 38)
        gen_keys(c, r);
    else if (k < 58)
        c->family = 1, gen_hash(c, r);
    else if (k < 74)
        c->family = 2, gen_list(c, r);
    else if (k < 86)
        c->family = 3, gen_zset(c, r);
    else if (k < 97)
        c->family = 4, gen_set(c, r);
    else
        gen_bad(c, r);
}

/* ---- comparing ----------------------------------------------------------------- */

static int reply_equal(const dlock_reply *a, const dlock_reply *b);

static int cmp_reply_ptr(const void *x, const void *y);

static int reply_cmp(const dlock_reply *a, const dlock_reply *b)
{
    size_t i, n;
    int d;
    if (a->type != b->type)
        return (int)a->type - (int)b->type;
    switch (a->type) {
    case DLOCK_REPLY_NIL:
        return 0;
    case DLOCK_REPLY_INTEGER:
        return a->integer < b->integer ? -1 : a->integer > b->integer;
    case DLOCK_REPLY_ARRAY:
        n = a->n < b->n ? a->n : b->n;
        for (i = 0; i < n; i++)
            if ((d = reply_cmp(a->elems[i], b->elems[i])) != 0)
                return d;
        return a->n < b->n ? -1 : a->n > b->n;
    default:
        n = a->len < b->len ? a->len : b->len;
        if ((d = memcmp(a->str, b->str, n)) != 0)
            return d;
        return a->len < b->len ? -1 : a->len > b->len;
    }
}

static int cmp_reply_ptr(const void *x, const void *y)
{
    return reply_cmp(*(dlock_reply *const *)x, *(dlock_reply *const *)y);
}

static int reply_equal(const dlock_reply *a, const dlock_reply *b)
{
    return reply_cmp(a, b) == 0;
}

/* Sorts an array reply in place (pairs: by field, keeping field and value
 * together), so that two unordered answers compare equal. */
static void sort_reply(dlock_reply *r, int pairs)
{
    size_t i;
    if (!r || r->type != DLOCK_REPLY_ARRAY || r->n < 2)
        return;
    if (!pairs) {
        qsort(r->elems, r->n, sizeof *r->elems, cmp_reply_ptr);
        return;
    }
    /* Insertion sort of (field, value) pairs: hashes here are tiny. */
    for (i = 2; i + 1 < r->n + 1; i += 2) {
        size_t j = i;
        while (j >= 2 && reply_cmp(r->elems[j - 2], r->elems[j]) > 0) {
            dlock_reply *f = r->elems[j], *v = r->elems[j + 1];
            r->elems[j] = r->elems[j - 2];
            r->elems[j + 1] = r->elems[j - 1];
            r->elems[j - 2] = f;
            r->elems[j - 1] = v;
            j -= 2;
        }
    }
}

/* Script errors carry where they happened: Redis names the script by its
 * SHA1 ("... script: <sha>, on @user_script:1."), the mock by its name.
 * The message before that suffix must be the same. */
static size_t error_core_len(const dlock_reply *r)
{
    const char *p = r->str, *hit = NULL;
    while ((p = strstr(p, " script: ")) != NULL)
        hit = p++;
    return hit ? (size_t)(hit - r->str) : r->len;
}

#define UNKNOWN_IN_SCRIPT "ERR Unknown Redis command called from script"
#define UNKNOWN_IN_SCRIPT_VALKEY "ERR Unknown command called from script"
#define MOCK_NAMES " (the dlock mock has no '"

static int errors_equal(const dlock_reply *m, const dlock_reply *r)
{
    size_t lm = error_core_len(m), lr = error_core_len(r);
    size_t ln = sizeof(MOCK_NAMES) - 1;
    /* The mock names the command it lacks (see the top), after the
     * server's own words. */
    if (((lr == sizeof(UNKNOWN_IN_SCRIPT) - 1 &&
          memcmp(r->str, UNKNOWN_IN_SCRIPT, lr) == 0) ||
         (lr == sizeof(UNKNOWN_IN_SCRIPT_VALKEY) - 1 &&
          memcmp(r->str, UNKNOWN_IN_SCRIPT_VALKEY, lr) == 0)) &&
        lm > lr + ln && memcmp(m->str, r->str, lr) == 0 &&
        memcmp(m->str + lr, MOCK_NAMES, ln) == 0)
        return 1;
    return lm == lr && memcmp(m->str, r->str, lm) == 0;
}

/* TIME by shape: [seconds, microseconds] as strings of digits. */
static int time_matches(const dlock_reply *m, const dlock_reply *r)
{
    long long ms, rs, mu;
    char *end;
    if (m->type != DLOCK_REPLY_ARRAY || r->type != DLOCK_REPLY_ARRAY || m->n != 2 ||
        r->n != 2 || m->elems[0]->type != DLOCK_REPLY_BULK ||
        m->elems[1]->type != DLOCK_REPLY_BULK || r->elems[0]->type != DLOCK_REPLY_BULK)
        return 0;
    ms = strtoll(m->elems[0]->str, &end, 10);
    if (*end != '\0')
        return 0;
    mu = strtoll(m->elems[1]->str, &end, 10);
    if (*end != '\0' || mu < 0 || mu > 999999)
        return 0;
    rs = strtoll(r->elems[0]->str, NULL, 10);
    return llabs(ms - rs) <= TTL_TOLERANCE_MS / 1000;
}

/* Compares deeply, with the rules above; ttl: integers are TTLs. */
static int replies_match(const dlock_reply *m, const dlock_reply *r, int ttl,
                         int scripted)
{
    size_t i;
    if (!m || !r)
        return m == r;
    if (m->type != r->type)
        return 0;
    if (m->type == DLOCK_REPLY_ERROR && scripted)
        return errors_equal(m, r);
    if (m->type == DLOCK_REPLY_INTEGER && ttl) {
        long long tol = ttl == 2 ? 3 : TTL_TOLERANCE_MS;
        if (m->integer < 0 || r->integer < 0)
            return m->integer == r->integer;
        return llabs(m->integer - r->integer) <= tol;
    }
    if (m->type == DLOCK_REPLY_ARRAY) {
        if (m->n != r->n)
            return 0;
        for (i = 0; i < m->n; i++)
            if (!replies_match(m->elems[i], r->elems[i], ttl, scripted))
                return 0;
        return 1;
    }
    return reply_equal(m, r);
}

static void print_bytes(FILE *f, const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 32 && ch < 127 && ch != '\\')
            fputc(ch, f);
        else
            fprintf(f, "\\x%02x", ch);
    }
}

static void print_reply(FILE *f, const dlock_reply *r)
{
    size_t i;
    if (!r) {
        fputs("(no reply)", f);
        return;
    }
    switch (r->type) {
    case DLOCK_REPLY_NIL:
        fputs("nil", f);
        break;
    case DLOCK_REPLY_INTEGER:
        fprintf(f, "(int)%lld", r->integer);
        break;
    case DLOCK_REPLY_STATUS:
        fputs("+", f);
        print_bytes(f, r->str, r->len);
        break;
    case DLOCK_REPLY_ERROR:
        fputs("-", f);
        print_bytes(f, r->str, r->len);
        break;
    case DLOCK_REPLY_BULK:
        fputs("\"", f);
        print_bytes(f, r->str, r->len);
        fputs("\"", f);
        break;
    case DLOCK_REPLY_ARRAY:
        fputs("[", f);
        for (i = 0; i < r->n; i++) {
            if (i)
                fputs(", ", f);
            print_reply(f, r->elems[i]);
        }
        fputs("]", f);
        break;
    }
}

/* ---- the two sides ----------------------------------------------------------------- */

struct dlock_diff {
    dlock_test_redis *srv;
    int own_server;
    resp_conn conn;
    dlock_mock_store *store;
    dlock_backend *mock;
    rng r;
    dlock_diff_stats st;
    FILE *log;
    int trace; /* $DLOCK_DIFF_TRACE: print every matching pair too */
    char *prev_source; /* see run_script */
    dlock_script script;
};

static void report(dlock_diff *d, const char *what, const cmd *c,
                   const char *script, const dlock_reply *m,
                   const dlock_reply *r)
{
    int i;
    d->st.mismatches++;
    if (!d->log || d->st.mismatches > 20)
        return;
    fprintf(d->log, "differential mismatch (%s):", what);
    if (c)
        for (i = 0; i < c->argc; i++) {
            fputs(" '", d->log);
            print_bytes(d->log, c->argv[i], c->len[i]);
            fputs("'", d->log);
        }
    if (script)
        fprintf(d->log, "\n  script: %s", script);
    fputs("\n  mock:  ", d->log);
    print_reply(d->log, m);
    fputs("\n  redis: ", d->log);
    print_reply(d->log, r);
    fputs("\n", d->log);
}

static void trace(dlock_diff *d, const cmd *c, const char *script,
                  const dlock_reply *m)
{
    int i;
    if (c)
        for (i = 0; i < c->argc; i++) {
            fputs(i ? " '" : "'", stderr);
            print_bytes(stderr, c->argv[i], c->len[i]);
            fputs("'", stderr);
        }
    if (script)
        fprintf(stderr, "script: %s", script);
    fputs("\n  -> ", stderr);
    print_reply(stderr, m);
    fputs("\n", stderr);
}

static int both(dlock_diff *d, const cmd *c, dlock_reply **m, dlock_reply **r)
{
    const char *argv[MAX_ARGS];
    int i;
    for (i = 0; i < c->argc; i++)
        argv[i] = c->argv[i];
    *m = *r = NULL;
    if (dlock_mock_store_command(d->store, m, c->argc, argv, c->len) != 0)
        return -1;
    if (resp_command(&d->conn, r, c->argc, argv, c->len) != 0) {
        d->st.io_errors++;
        return -1;
    }
    return 0;
}

/* Runs c on both sides and compares. */
static int run_cmd(dlock_diff *d, cmd *c, const char *what)
{
    dlock_reply *m, *r;
    int ok;
    if (both(d, c, &m, &r) != 0) {
        dlock_reply_free(m);
        dlock_reply_free(r);
        return -1;
    }
    if (c->unordered) {
        sort_reply(m, c->pairs);
        sort_reply(r, c->pairs);
    }
    ok = c->time_reply ? time_matches(m, r)
                       : replies_match(m, r,
                                       c->ttl_reply ? (strcmp(c->argv[0], "TTL") == 0 ? 2 : 1)
                                                    : 0,
                                       0);
    d->st.commands++;
    if (!ok)
        report(d, what, c, NULL, m, r);
    else if (d->trace)
        trace(d, c, NULL, m);
    dlock_reply_free(m);
    dlock_reply_free(r);
    return ok ? 0 : 1;
}

static void simple(cmd *c, const char *a0, const char *a1, const char *a2,
                   const char *a3)
{
    memset(c, 0, sizeof *c);
    add(c, a0);
    if (a1)
        add(c, a1);
    if (a2)
        add(c, a2);
    if (a3)
        add(c, a3);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A real expiry on both sides: a short TTL, a sleep far past it, a look. */
static void expiry_step(dlock_diff *d)
{
    const char *key = PICK(&d->r, keys);
    char ttl[16];
    cmd c;
    snprintf(ttl, sizeof ttl, "%d", SHORT_TTL_MS);
    if (rpick(&d->r, 2))
        simple(&c, "PEXPIRE", key, ttl, NULL);
    else {
        simple(&c, "SET", key, "short", "PX");
        add(&c, ttl);
    }
    run_cmd(d, &c, "short ttl");
    sleep_ms(SHORT_SLEEP_MS);
    simple(&c, "EXISTS", key, NULL, NULL);
    run_cmd(d, &c, "after expiry");
    simple(&c, "PTTL", key, NULL, NULL);
    c.ttl_reply = 1;
    run_cmd(d, &c, "after expiry");
    d->st.expiries++;
}

/* ---- scripts ----------------------------------------------------------------------- */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static void sput(sbuf *b, const char *s)
{
    size_t n = strlen(s);
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap ? b->cap * 2 : 256) + n;
        char *p = realloc(b->p, cap);
        if (!p)
            return;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n + 1);
    b->len += n;
}

/* A Lua call expression for a random command from the generator, its
 * arguments as Lua string literals (%q-like escaping). */
static void lua_command(sbuf *b, rng *r, int pcall)
{
    cmd c;
    int i;
    size_t j;
    do
        gen_command(&c, r);
    while (c.unordered || c.ttl_reply || c.time_reply); /* exactly comparable */
    sput(b, pcall ? "redis.pcall(" : "redis.call(");
    for (i = 0; i < c.argc; i++) {
        char esc[8];
        sput(b, i ? ", '" : "'");
        for (j = 0; j < c.len[i]; j++) {
            unsigned char ch = (unsigned char)c.argv[i][j];
            if (ch >= 32 && ch < 127 && ch != '\'' && ch != '\\') {
                esc[0] = (char)ch;
                esc[1] = '\0';
            } else {
                snprintf(esc, sizeof esc, "\\%03u", ch);
            }
            sput(b, esc);
        }
        sput(b, "'");
    }
    sput(b, ")");
}

/* A random Lua value expression: the conversion rules are the point. */
static void lua_value(sbuf *b, rng *r, int depth)
{
    static const char *const atoms[] = {
        "1", "0", "-1", "3.99", "-3.99", "0.5", "-0.5", "1e15", "-1e15",
        "2^53", "'str'", "''", "'12'", "true", "false", "nil", "{}",
        "{ok='FINE'}", "{err='MYERR bad thing'}", "{ok='A', err='B'}",
        "{err='noprefix'}", "tostring(12.5)", "#KEYS", "ARGV[1]",
        "type(redis.call('GET', 'd:nope'))", "KEYS[1]", "{1, 2, nil, 4}",
        "{nil, 1}", "{'a', false, 'c'}", "{1.9, -1.9}", "redis.status_reply('S')",
        "redis.error_reply('E custom')", "tonumber('0x10')", "{x=1}",
        "math.huge", "-math.huge", "0/0",
        /* the libraries Redis embeds */
        "cjson.encode({1, 'a', true, {2.5}})", "cjson.decode('[1,2,3]')",
        "cjson.encode(cjson.decode('{\"k\":[1,2.5,null,\"s\"]}'))",
        "cjson.encode(1/3)", "cjson.decode('{\"a\":{\"b\":7}}').a.b",
        "cjson.decode('{')", "cjson.encode(ARGV)", "bit.band(255, 15)",
        "bit.tohex(bit.bxor(12345, 999))", "bit.lshift(1, 40)",
        "{bit.bnot(0), bit.arshift(-256, 4), bit.rol(1, 33)}", "bit.tobit('x')",
        "redis.sha1hex('abc')", "redis.sha1hex(ARGV[2])", "redis.sha1hex()",
        "#redis.call('TIME')", "type(redis.call('TIME')[2])"};
    unsigned k = rpick(r, 10);
    if (depth < 3 && k < 2) {
        unsigned i, n = rpick(r, 4);
        sput(b, "{");
        for (i = 0; i < n; i++) {
            if (i)
                sput(b, ", ");
            lua_value(b, r, depth + 1);
        }
        sput(b, "}");
    } else if (k < 5) {
        lua_command(b, r, k == 4);
    } else {
        const char *a = PICK(r, atoms);
        /* NaN and infinities convert through undefined C casts on Redis;
         * they are not compared (the mock's own tests pin its answer). */
        if (strstr(a, "huge") || strstr(a, "0/0"))
            a = "7";
        sput(b, a);
    }
}

static char *gen_script(rng *r)
{
    sbuf b = {NULL, 0, 0};
    unsigned i, n = rpick(r, 4);
    sput(&b, "");
    for (i = 0; i < n; i++) {
        switch (rpick(r, 4)) {
        case 0: /* a statement: its result is dropped */
            lua_command(&b, r, 1);
            sput(&b, "\n");
            break;
        case 1:
            sput(&b, "local v");
            {
                char num[16];
                snprintf(num, sizeof num, "%u = ", i);
                sput(&b, num);
            }
            lua_command(&b, r, 1);
            sput(&b, "\nif type(v");
            {
                char num[96];
                snprintf(num, sizeof num,
                         "%u) == 'table' and v%u.err then return v%u end\n", i,
                         i, i);
                sput(&b, num);
            }
            break;
        case 2:
            lua_command(&b, r, 1);
            sput(&b, "\n");
            break;
        default:
            /* redis.call raises: the script's error reply. */
            if (rpick(r, 3) == 0) {
                lua_command(&b, r, 0);
                sput(&b, "\n");
            }
            break;
        }
    }
    sput(&b, "return ");
    lua_value(&b, r, 0);
    sput(&b, "\n");
    return b.p;
}

static int run_script(dlock_diff *d, char *source)
{
    static const char *const argv[] = {"d:a", "d:b", "arg1", "7"};
    const char *rargv[7] = {"EVAL", source, "2", "d:a", "d:b", "arg1", "7"};
    size_t rlen[7], alen[4];
    dlock_reply *m = NULL, *r = NULL;
    char err[256];
    int i, ok, rc;
    for (i = 0; i < 7; i++)
        rlen[i] = strlen(rargv[i]);
    for (i = 0; i < 4; i++)
        alen[i] = strlen(argv[i]);
    /* The mock caches compiled scripts by the dlock_script's address and
     * source pointer: a new source pointer (the old buffer still alive, so
     * malloc cannot hand its address out again) makes it compile anew. */
    d->script.name = "diff";
    d->script.source = source;
    rc = dlock_backend_eval(d->mock, &m, &d->script, 2, 2, argv, alen, err,
                            sizeof err);
    free(d->prev_source);
    d->prev_source = source;
    if (rc != 0) {
        report(d, "script: mock eval failed", NULL, source, NULL, NULL);
        return 1;
    }
    if (resp_command(&d->conn, &r, 7, rargv, rlen) != 0) {
        d->st.io_errors++;
        dlock_reply_free(m);
        return -1;
    }
    ok = replies_match(m, r, 0, 1);
    d->st.scripts++;
    if (!ok)
        report(d, "script", NULL, source, m, r);
    else if (d->trace)
        trace(d, NULL, source, m);
    dlock_reply_free(m);
    dlock_reply_free(r);
    return ok ? 0 : 1;
}

/* ---- fixed regressions: differences found by this test, now fixed ----------------- */

typedef struct regression {
    const char *args[8];
} regression;

static const regression regressions[] = {
    /* A score of -0 reads back as 0 (Redis's listpack keeps scores as
     * text); only the INCR reply that computed it says "-0". */
    {{"ZADD", "d:g", "-0", "m", NULL}},
    {{"ZSCORE", "d:g", "m", NULL}},
    {{"ZRANGE", "d:g", "0", "-1", "WITHSCORES", NULL}},
    {{"ZADD", "d:g", "INCR", "-0", "n", NULL}},
    {{"ZSCORE", "d:g", "n", NULL}},
    {{"ZINCRBY", "d:g", "-0", "n", NULL}},
    {{"ZINCRBY", "d:h", "-0", "m", NULL}},
    {{"ZRANGEBYSCORE", "d:g", "(-0", "0", "WITHSCORES", NULL}},
    {{"DEL", "d:g", "d:h", NULL}},
    /* HINCRBYFLOAT and INCRBYFLOAT print Redis's long double format. */
    {{"HINCRBYFLOAT", "d:c", "f", "10.6", NULL}},
    {{"HINCRBYFLOAT", "d:c", "f", "0.2", NULL}},
    {{"HINCRBYFLOAT", "d:c", "g", "-0", NULL}},
    {{"HINCRBYFLOAT", "d:c", "g", "1e30", NULL}},
    {{"HINCRBYFLOAT", "d:c", "h", "5.0e3", NULL}},
    {{"INCRBYFLOAT", "d:a", "0.1", NULL}},
    {{"INCRBYFLOAT", "d:a", "0.2", NULL}},
    {{"INCRBYFLOAT", "d:a", "1.5e-3", NULL}},
    {{"DEL", "d:a", "d:c", NULL}},
};

static void run_regressions(dlock_diff *d)
{
    size_t i;
    int j;
    for (i = 0; i < sizeof regressions / sizeof regressions[0]; i++) {
        cmd c;
        memset(&c, 0, sizeof c);
        for (j = 0; j < 8 && regressions[i].args[j]; j++)
            add(&c, regressions[i].args[j]);
        if (strcmp(c.argv[0], "PTTL") == 0 || strcmp(c.argv[0], "TTL") == 0)
            c.ttl_reply = 1;
        run_cmd(d, &c, "regression");
    }
}

/* ---- the public face ---------------------------------------------------------------- */

/* The value of "field:" in an INFO text, into out ("" when absent). */
static void info_field(const dlock_reply *info, const char *field, char *out,
                       size_t cap)
{
    size_t fl = strlen(field), i = 0;
    const char *p = info->str, *end = info->str + info->len;
    out[0] = '\0';
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        if ((size_t)(eol - p) > fl && memcmp(p, field, fl) == 0 && p[fl] == ':') {
            for (p += fl + 1; p < eol && *p != '\r' && i + 1 < cap; p++)
                out[i++] = *p;
            out[i] = '\0';
            return;
        }
        p = eol + 1;
    }
}

/* The mock's dialect for the server on c (INFO server): Valkey 8 or later,
 * Redis 7.0; 0, or -1 with the reason on log (another server or version:
 * the mock has no dialect for it, and the run would compare the wrong
 * spellings). */
static int server_dialect(resp_conn *c, dlock_mock_server *out, FILE *log)
{
    const char *argv[2] = {"INFO", "server"};
    size_t len[2] = {4, 6};
    dlock_reply *info = NULL;
    char name[64], valkey[64], redis[64];
    int rc = -1;
    if (resp_command(c, &info, 2, argv, len) != 0 || info->type != DLOCK_REPLY_BULK) {
        if (log)
            fprintf(log, "differential: INFO server failed\n");
        dlock_reply_free(info);
        return -1;
    }
    info_field(info, "server_name", name, sizeof name);
    info_field(info, "valkey_version", valkey, sizeof valkey);
    info_field(info, "redis_version", redis, sizeof redis);
    dlock_reply_free(info);
    if (strcmp(name, "valkey") == 0 && atoi(valkey) >= 8) {
        *out = DLOCK_MOCK_VALKEY_8;
        rc = 0;
    } else if (!name[0] && !valkey[0] && strncmp(redis, "7.0.", 4) == 0) {
        *out = DLOCK_MOCK_REDIS_7_0;
        rc = 0;
    } else if (log) {
        fprintf(log, "differential: the mock emulates Redis 7.0 and Valkey 8 "
                     "(dlock/mock.h), not %s %s\n",
                name[0] ? name : "redis", valkey[0] ? valkey : redis);
    }
    return rc;
}

int dlock_diff_open(dlock_diff **out, dlock_test_redis *srv, uint64_t seed,
                    FILE *log)
{
    dlock_diff *d = calloc(1, sizeof *d);
    dlock_mock_options mo = DLOCK_MOCK_OPTIONS_INIT;
    cmd c;
    *out = NULL;
    if (!d)
        return -1;
    d->log = log;
    d->trace = getenv("DLOCK_DIFF_TRACE") != NULL;
    d->r.s = seed;
    d->conn.fd = -1;
    if (!srv) {
        if (dlock_test_redis_start(&srv, NULL) != 0)
            goto fail;
        d->own_server = 1;
    }
    d->srv = srv;
    if (resp_connect(&d->conn, dlock_test_redis_port(srv)) != 0)
        goto fail;
    if (server_dialect(&d->conn, &mo.server, log) != 0 ||
        dlock_mock_store_new_opts(&d->store, &mo) != 0 ||
        dlock_mock_backend_new(&d->mock, d->store) != 0)
        goto fail;
    /* Both sides start empty. */
    simple(&c, "FLUSHALL", NULL, NULL, NULL);
    if (run_cmd(d, &c, "flushall") != 0)
        goto fail;
    *out = d;
    return 0;
fail:
    dlock_diff_close(d);
    return -1;
}

void dlock_diff_close(dlock_diff *d)
{
    if (!d)
        return;
    resp_close(&d->conn);
    dlock_backend_free(d->mock);
    dlock_mock_store_free(d->store);
    if (d->own_server)
        dlock_test_redis_stop(d->srv);
    free(d->prev_source);
    free(d);
}

int dlock_diff_run(dlock_diff *d, unsigned long ncommands,
                   unsigned long nscripts, dlock_diff_stats *st)
{
    unsigned long i, every = nscripts ? (ncommands + nscripts) / nscripts : 0;
    unsigned long done_scripts = 0;
    cmd c;
    run_regressions(d);
    for (i = 0; i < ncommands && d->st.io_errors == 0; i++) {
        if (every && i % every == 0 && done_scripts < nscripts) {
            run_script(d, gen_script(&d->r));
            done_scripts++;
        }
        if (rpick(&d->r, 600) == 0)
            expiry_step(d);
        gen_command(&c, &d->r);
        run_cmd(d, &c, "random");
        /* Now and then a wipe, so that keys are born again with fresh
         * types instead of settling into one. */
        if (rpick(&d->r, 400) == 0) {
            int k;
            simple(&c, "DEL", keys[0], NULL, NULL);
            for (k = 1; k < NKEYS; k++)
                add(&c, keys[k]);
            run_cmd(d, &c, "wipe");
        }
    }
    while (done_scripts < nscripts && d->st.io_errors == 0) {
        run_script(d, gen_script(&d->r));
        done_scripts++;
    }
    if (st)
        *st = d->st;
    return d->st.io_errors ? -1 : (int)(d->st.mismatches > 0);
}

/* ---- the make-check slice ------------------------------------------------------------ */

#define QUICK_COMMANDS 4000
#define QUICK_SCRIPTS 600

static void test_differential_quick(void **state)
{
    dlock_diff *d = NULL;
    dlock_diff_stats st;
    const char *env = getenv("DLOCK_DIFF_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    (void)state;
    assert_int_equal(dlock_diff_open(&d, NULL, seed, stderr), 0);
    dlock_diff_run(d, QUICK_COMMANDS, QUICK_SCRIPTS, &st);
    dlock_diff_close(d);
    printf("differential: seed %llu: %lu commands, %lu scripts, %lu expiries "
           "compared, %lu mismatches\n",
           (unsigned long long)seed, st.commands, st.scripts, st.expiries,
           st.mismatches);
    assert_int_equal(st.io_errors, 0);
    assert_int_equal(st.mismatches, 0);
}

int dlock_test_differential(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_differential_quick),
    };
    return DLOCK_RUN_GROUP("differential", tests, NULL, NULL);
}
