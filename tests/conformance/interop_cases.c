/*
 * Interoperability with Redisson (issue 16, items 8-10): dlock objects
 * sharing their keys with a Java client. The Java side is played by this
 * file's own Lua scripts, written from Redisson's documented contracts (the
 * fair lock's queue and deadline rules, the latch's channel, the permit ids'
 * raw bytes), run through the backend like any script and, for the fair
 * lock, driven by a test thread that waits as a Redisson client does.
 *
 * Each case is written once and runs on the mock (virtual clock: hand-offs
 * must happen without the clock moving) and on Redis (short real times).
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/recorder.h"
#include "../harness/runner.h"

#include "dlock/sys/backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- the Java side: scripts and a binary-safe call ----------------------- */

/* s as Redisson sends it to this backend: in cluster mode (3.22+) its
 * scripts publish with SPUBLISH (the backend's publish command), which the
 * Java side's scripts here spell 'publish'. Freed with free(). */
static char *java_source(dlock_backend *b, const char *src)
{
    const char *cmd = dlock_backend_publish_command(b), *p;
    size_t n = 0, extra = strlen(cmd) > 7 ? strlen(cmd) - 7 : 0;
    char *out, *o;

    for (p = src; (p = strstr(p, "'publish'")) != NULL; p++)
        n++;
    out = malloc(strlen(src) + n * extra + 1);
    assert_non_null(out);
    for (o = out, p = src; *p;) {
        if (strncmp(p, "'publish'", 9) == 0) {
            o += sprintf(o, "'%s'", cmd);
            p += 9;
        } else {
            *o++ = *p++;
        }
    }
    *o = '\0';
    return out;
}

/* Runs script on c's backend; argument i is len[i] bytes (any byte). */
static int java_eval(dlock_client *c, dlock_reply **out, const dlock_script *s,
                     size_t nkeys, size_t nargs, const char *const *argv,
                     const size_t *len)
{
    char err[256] = "";
    dlock_backend *b = dlock_client_backend(c);
    char *src = java_source(b, s->source);
    dlock_script as_sent = {s->name, src};
    int rc = dlock_backend_eval(b, out, &as_sent, nkeys, nargs, argv, len, err,
                                sizeof(err));

    free(src);

    if (rc != 0)
        fprintf(stderr, "interop: script %s: %s %s\n", s->name, dlock_errname(rc), err);
    else if ((*out)->type == DLOCK_REPLY_ERROR)
        fprintf(stderr, "interop: script %s: %s\n", s->name, (*out)->str);
    return rc;
}

/* ---- 9. the latch's channel ------------------------------------------------ */

static void free_latch(void *o) { dlock_latch_free(o); }

/* RCountDownLatch.countDown: KEYS[1] the count, KEYS[2] the channel. */
static const dlock_script java_latch_count_down = {
    "java_latch_count_down",
    "local v = redis.call('decr', KEYS[1])\n"
    "if v <= 0 then redis.call('del', KEYS[1]) end\n"
    "if v == 0 then redis.call('publish', KEYS[2], '0') end\n"
    "return v\n"};

/* A call with a budget, on its own thread. */
typedef struct timed_call {
    void *obj;
    int64_t wait_ms;
    int rc;
} timed_call;

/* What the cases' threads use lives here rather than on a case's stack: a
 * failed assertion leaves the case at once, and interop_teardown then stops
 * and joins whatever still runs (bg.t[0..3] fair-lock waiters, bg.t[4..5]
 * timed calls). */
struct fair_waiter;

static struct {
    struct fair_waiter *w[4]; /* set while bg.t[i] runs a waiter */
    dlock_fx_thread t[6];
    int live[6];
    timed_call call[2];
} bg;

static void call_start(dlock_fx_thread *t, void (*fn)(void *), timed_call *c)
{
    bg.live[t - bg.t] = 1;
    dlock_fx_start(t, fn, c);
}

static int call_join(dlock_fx *fx, dlock_fx_thread *t)
{
    bg.live[t - bg.t] = 0;
    return dlock_fx_join(fx, t, 5000, NULL);
}

static void latch_await_main(void *arg)
{
    timed_call *w = arg;

    w->rc = dlock_latch_await_for(w->obj, w->wait_ms);
}


/* A name with braces of its own: Redisson still wraps it on the latch's
 * channel, and both sides must hear each other there. */
static void latch_channel_of_braced_name(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[128], channel[200];
    dlock_latch *a, *b;
    timed_call *w = &bg.call[0];
    dlock_fx_thread *t = &bg.t[4];
    dlock_reply *r = NULL;
    const char *argv[2];
    recorder rec;
    int64_t started, took;
    int n, base;

    /* "{dlock": the README's ACL user's key patterns (redis-acl row) */
    snprintf(name, sizeof(name), "{dlock-app}latch-%s", fx->name);
    snprintf(channel, sizeof(channel), "redisson_countdownlatch__channel__{%s}", name);
    {
        /* Redis Cluster: Redisson's channel for this braced name would hash
         * to another slot than the name (its sharded publish could not run
         * in the name's script), so dlock keeps the brace rule's there. */
        dlock_backend *be = dlock_client_backend(fx->c2);
        if (dlock_backend_key_slot(be, channel, strlen(channel)) !=
            dlock_backend_key_slot(be, name, strlen(name)))
            snprintf(channel, sizeof(channel), "redisson_countdownlatch__channel__%s",
                     name);
    }
    assert_int_equal(dlock_latch_new(&a, fx->c1, name), 0);
    dlock_fx_keep(fx, a, free_latch);
    assert_int_equal(dlock_latch_new(&b, fx->c2, name), 0);
    dlock_fx_keep(fx, b, free_latch);

    /* dlock publishes on Redisson's channel */
    recorder_start(&rec, fx->c2, channel);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    assert_int_equal(dlock_latch_count_down(a), 0);
    n = recorder_count(&rec, 2);
    recorder_stop(&rec);
    assert_int_equal(n, 2);
    assert_string_equal(rec.msgs[0], "1");
    assert_string_equal(rec.msgs[1], "0");

    /* a Java count-down wakes a dlock awaiter: on the mock without the
     * clock moving, on Redis long before the awaiter's own deadline */
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    w->obj = b;
    w->wait_ms = fx->is_mock ? 60000 : 5000;
    base = dlock_fx_settle(fx);
    call_start(t, latch_await_main, w);
    assert_int_equal(dlock_fx_wait_blocked(fx, base, 100), 0);
    argv[0] = name;
    argv[1] = channel;
    started = dlock_fx_real_ms();
    assert_int_equal(java_eval(fx->c1, &r, &java_latch_count_down, 2, 0, argv, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(r->integer, 0);
    dlock_reply_free(r);
    n = dlock_fx_wait_done(t, 3000);
    took = dlock_fx_real_ms() - started;
    assert_int_equal(call_join(fx, t), 0);
    printf("  [%s] awaiter woken by a Java count-down after %" PRId64 " ms\n",
           fx->backend, took);
    assert_int_equal(n, 0);
    assert_int_equal(w->rc, 0);
    assert_true(took < 1000);
}

/* ---- 10. permit ids ------------------------------------------------------- */

static void free_permit(void *o) { dlock_permit_semaphore_free(o); }

static int64_t wall_now(dlock_client *c)
{
    return dlock_clock_wall(dlock_backend_clock(dlock_client_backend(c)));
}

static void i64(char *buf, int64_t v)
{
    snprintf(buf, 24, "%" PRId64, v);
}


#define ID_BYTES 16

/* RPermitExpirableSemaphore's acquire and release of one permit, the id as
 * raw bytes: KEYS[1] the count, KEYS[2] "{N}:timeout", KEYS[3] the channel;
 * acquire ARGV[1] the id, ARGV[2] now, ARGV[3] lease (1 taken, 0 not);
 * release ARGV[1] the id (1 released, 0 not taken). */
static const dlock_script java_permit_acquire = {
    "java_permit_acquire",
    "local gone = redis.call('zrangebyscore', KEYS[2], 0, ARGV[2])\n"
    "for i = 1, #gone do redis.call('zrem', KEYS[2], gone[i]) end\n"
    "if #gone > 0 then redis.call('incrby', KEYS[1], #gone) end\n"
    "local v = tonumber(redis.call('get', KEYS[1]) or '0')\n"
    "if v < 1 then return 0 end\n"
    "redis.call('decrby', KEYS[1], 1)\n"
    "redis.call('zadd', KEYS[2], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])\n"
    "return 1\n"};

static const dlock_script java_permit_release = {
    "java_permit_release",
    "if redis.call('zrem', KEYS[2], ARGV[1]) ~= 1 then return 0 end\n"
    "redis.call('publish', KEYS[3], redis.call('incrby', KEYS[1], 1))\n"
    "return 1\n"};

static void permit_keys(dlock_fx *fx, char *timeout, char *channel)
{
    snprintf(timeout, 160, "{%s}:timeout", fx->name);
    snprintf(channel, 160, "redisson_sc:{%s}", fx->name);
}

static void to_hex(char *hex, const unsigned char *raw)
{
    size_t i;

    for (i = 0; i < ID_BYTES; i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
}

static int java_permit(dlock_fx *fx, const dlock_script *s, const unsigned char *raw)
{
    char timeout[160], channel[160], now[24], lease[24];
    const char *argv[6];
    size_t len[6];
    dlock_reply *r = NULL;
    int v, i;

    permit_keys(fx, timeout, channel);
    i64(now, wall_now(fx->c2));
    i64(lease, fx->long_lease_ms);
    argv[0] = fx->name;
    argv[1] = timeout;
    argv[2] = channel;
    argv[3] = (const char *)raw;
    argv[4] = now;
    argv[5] = lease;
    for (i = 0; i < 6; i++)
        len[i] = i == 3 ? ID_BYTES : strlen(argv[i]);
    assert_int_equal(java_eval(fx->c2, &r, s, 3, s == &java_permit_acquire ? 3 : 1, argv,
                               len), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    v = (int)r->integer;
    dlock_reply_free(r);
    return v;
}

/* The members of "{N}:timeout", as stored. */
static dlock_reply *timeout_members(dlock_fx *fx)
{
    char timeout[160], channel[160];
    dlock_reply *r = NULL;

    permit_keys(fx, timeout, channel);
    assert_int_equal(dlock_fx_call(fx->c1, &r, "ZRANGE", timeout, 2, "0", "-1"), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ARRAY);
    return r;
}

static dlock_permit_semaphore *permits(dlock_fx *fx, dlock_client *c, int64_t n)
{
    dlock_permit_semaphore *p = NULL;

    assert_int_equal(dlock_permit_semaphore_new(&p, c, fx->name), 0);
    dlock_fx_keep(fx, p, free_permit);
    if (n >= 0)
        assert_int_equal(dlock_permit_semaphore_try_set_permits(p, NULL, n), 0);
    return p;
}

static int64_t available(dlock_permit_semaphore *p)
{
    int64_t v = -1;

    assert_int_equal(dlock_permit_semaphore_available_permits(p, &v), 0);
    return v;
}

/* A dlock permit is stored as the 16 bytes its hex id stands for, and a Java
 * client releases it with them; a Java permit (raw bytes) is released by
 * dlock with its hex id. */
static void permit_ids_are_raw_bytes(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = permits(fx, fx->c1, 2);
    unsigned char raw[ID_BYTES], java_id[ID_BYTES];
    char hex[2 * ID_BYTES + 1];
    char **ids = NULL;
    dlock_reply *r;
    size_t i;

    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, fx->long_lease_ms), 0);
    r = timeout_members(fx);
    assert_int_equal(r->n, 1);
    assert_int_equal(r->elems[0]->len, ID_BYTES);
    memcpy(raw, r->elems[0]->str, ID_BYTES);
    dlock_reply_free(r);
    to_hex(hex, raw);
    assert_string_equal(hex, ids[0]);
    /* the Java release finds it */
    assert_int_equal(java_permit(fx, &java_permit_release, raw), 1);
    assert_int_equal(available(p), 2);
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), DLOCK_ENOTOWNER);
    dlock_permit_ids_free(ids);

    /* a Java permit, released by dlock with the hex form */
    for (i = 0; i < ID_BYTES; i++)
        java_id[i] = (unsigned char)(0xf0 ^ (i * 37));
    assert_int_equal(java_permit(fx, &java_permit_acquire, java_id), 1);
    assert_int_equal(available(p), 1);
    to_hex(hex, java_id);
    assert_int_equal(dlock_permit_semaphore_release(p, hex), 0);
    assert_int_equal(available(p), 2);
    r = timeout_members(fx);
    assert_int_equal(r->n, 0);
    dlock_reply_free(r);
    assert_int_equal(java_permit(fx, &java_permit_release, java_id), 0);
}

/* Ids with NUL bytes (a Java client's random bytes may hold any) travel
 * whole: taken by Java, seen, re-leased and released by dlock. */
static void permit_ids_with_nul_bytes(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = permits(fx, fx->c1, 2);
    unsigned char a[ID_BYTES], b[ID_BYTES];
    char hex_a[2 * ID_BYTES + 1], hex_b[2 * ID_BYTES + 1], *text = NULL;
    const char *both[2];
    int64_t left = -1;
    size_t done = 0;

    memset(a, 0, sizeof(a)); /* all NULs */
    memset(b, 0, sizeof(b));
    b[ID_BYTES - 1] = 0x7f; /* differs from a after 15 NULs */
    assert_int_equal(java_permit(fx, &java_permit_acquire, a), 1);
    assert_int_equal(java_permit(fx, &java_permit_acquire, b), 1);
    assert_int_equal(available(p), 0);
    to_hex(hex_a, a);
    to_hex(hex_b, b);
    assert_int_equal(dlock_permit_semaphore_lease_of(p, &left, hex_b), 0);
    assert_true(left > 0 && left <= fx->long_lease_ms);
    assert_int_equal(dlock_permit_semaphore_update_lease(p, hex_a, fx->long_lease_ms), 0);
    /* the state document shows the hex ids */
    assert_int_equal(dlock_permit_semaphore_state_text(p, &text), 0);
    assert_non_null(strstr(text, hex_a));
    assert_non_null(strstr(text, hex_b));
    free(text);
    both[0] = hex_a;
    both[1] = hex_b;
    assert_int_equal(dlock_permit_semaphore_release_all(p, &done, both, 2), 0);
    assert_int_equal(done, 2);
    assert_int_equal(available(p), 2);
    assert_int_equal(java_permit(fx, &java_permit_release, a), 0);
}

/* A malformed hex id is DLOCK_EINVAL with a clear message, and changes
 * nothing, alone or in a list with a good one. */
static void permit_malformed_ids_rejected(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = permits(fx, fx->c1, 2);
    static const char *const bad[] = {
        "0123456789ABCDEF0123456789abcdef", /* upper case */
        "0123456789abcdef0123456789abcde",  /* 31 digits */
        "0123456789abcdef0123456789abcdef0", /* 33 */
        "0123456789abcdef0123456789abcdeg", /* not hex */
        "",
    };
    const char *list[2];
    char **ids = NULL;
    dlock_reply *r;
    size_t i, done = 99;

    assert_int_equal(dlock_permit_semaphore_acquire(p, &ids, 1, fx->long_lease_ms), 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(dlock_permit_semaphore_release(p, bad[i]), DLOCK_EINVAL);
        assert_non_null(strstr(dlock_permit_semaphore_errmsg(p), "not a permit id"));
    }
    list[0] = ids[0];
    list[1] = bad[0];
    assert_int_equal(dlock_permit_semaphore_release_all(p, &done, list, 2), DLOCK_EINVAL);
    assert_int_equal(done, 1);
    /* nothing changed */
    assert_int_equal(available(p), 1);
    r = timeout_members(fx);
    assert_int_equal(r->n, 1);
    dlock_reply_free(r);
    assert_int_equal(dlock_permit_semaphore_release(p, ids[0]), 0);
    dlock_permit_ids_free(ids);
}

/* ---- 8. the fair lock with Java waiters ------------------------------------ */

/* Both scripts first drop dead heads: deadline (KEYS[3]) passed by now. */
#define JAVA_PURGE \
    "while true do\n" \
    "  local first = redis.call('lindex', KEYS[2], 0)\n" \
    "  if not first then break end\n" \
    "  local t = tonumber(redis.call('zscore', KEYS[3], first))\n" \
    "  if t and t > now then break end\n" \
    "  redis.call('zrem', KEYS[3], first)\n" \
    "  redis.call('lpop', KEYS[2])\n" \
    "end\n"

/* Redisson's fair lock, as a Java client runs it (RedissonFairLock):
 * KEYS[1] the lock, KEYS[2] the queue, KEYS[3] the deadlines. Acquire:
 * ARGV[1] lease, ARGV[2] owner, ARGV[3] W (threadWaitTime), ARGV[4] now.
 * Dead heads are purged; the lock goes to the head only, and then every
 * deadline moves W earlier; a waiter already queued is told its deadline
 * minus W; a new one queues with the tail's deadline (or the lock's TTL)
 * plus W, and is told that TTL. */
static const dlock_script java_fair_acquire = {
    "java_fair_acquire",
    "local now, wait = tonumber(ARGV[4]), tonumber(ARGV[3])\n"
    JAVA_PURGE
    "if redis.call('exists', KEYS[1]) == 0 and (redis.call('exists', KEYS[2]) == 0\n"
    "    or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then\n"
    "  redis.call('lpop', KEYS[2])\n"
    "  redis.call('zrem', KEYS[3], ARGV[2])\n"
    "  local all = redis.call('zrange', KEYS[3], 0, -1)\n"
    "  for i = 1, #all do redis.call('zincrby', KEYS[3], -wait, all[i]) end\n"
    "  redis.call('hset', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then\n"
    "  redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "  redis.call('pexpire', KEYS[1], ARGV[1])\n"
    "  return nil\n"
    "end\n"
    "local mine = redis.call('zscore', KEYS[3], ARGV[2])\n"
    "if mine then return tonumber(mine) - wait - now end\n"
    "local last = redis.call('lindex', KEYS[2], -1)\n"
    "local ttl\n"
    "if last and last ~= ARGV[2] then\n"
    "  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - now\n"
    "else\n"
    "  ttl = redis.call('pttl', KEYS[1])\n"
    "end\n"
    "if redis.call('zadd', KEYS[3], ttl + wait + now, ARGV[2]) == 1 then\n"
    "  redis.call('rpush', KEYS[2], ARGV[2])\n"
    "end\n"
    "return ttl\n"};

/* Unlock: KEYS as acquire plus KEYS[4] the channel prefix; ARGV[1] the
 * message, ARGV[2] lease, ARGV[3] owner, ARGV[4] now. Purges, then wakes
 * the head on its own channel. */
static const dlock_script java_fair_unlock = {
    "java_fair_unlock",
    "local now = tonumber(ARGV[4])\n"
    JAVA_PURGE
    "local function wake()\n"
    "  local head = redis.call('lindex', KEYS[2], 0)\n"
    "  if head then redis.call('publish', KEYS[4] .. ':' .. head, ARGV[1]) end\n"
    "end\n"
    "if redis.call('exists', KEYS[1]) == 0 then wake() return 1 end\n"
    "if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then\n"
    "  redis.call('pexpire', KEYS[1], ARGV[2])\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "wake()\n"
    "return 1\n"};

/* Give-up (acquireFailed): KEYS as acquire; ARGV[2] owner, ARGV[3] W. The
 * waiters behind it move W earlier. */
static const dlock_script java_fair_give_up = {
    "java_fair_give_up",
    "local queue = redis.call('lrange', KEYS[2], 0, -1)\n"
    "local i = 1\n"
    "while i <= #queue and queue[i] ~= ARGV[2] do i = i + 1 end\n"
    "for j = i + 1, #queue do\n"
    "  redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), queue[j])\n"
    "end\n"
    "redis.call('zrem', KEYS[3], ARGV[2])\n"
    "redis.call('lrem', KEYS[2], 0, ARGV[2])\n"
    "return 1\n"};

/* Redisson's default threadWaitTime, and dlock's default fair_wait_slack_ms
 * (the fixture's clients use it). */
#define JAVA_WAIT_MS 300000

typedef struct fair_keys {
    char lock[128], queue[160], deadlines[160], channel[160];
} fair_keys;

static void fair_keys_of(fair_keys *k, const char *name)
{
    snprintf(k->lock, sizeof(k->lock), "%s", name);
    snprintf(k->queue, sizeof(k->queue), "redisson_lock_queue:{%s}", name);
    snprintf(k->deadlines, sizeof(k->deadlines), "redisson_lock_timeout:{%s}", name);
    snprintf(k->channel, sizeof(k->channel), "redisson_lock__channel:{%s}", name);
}

/* One Java call: acquire/give-up (ARGV lease, owner, W, now) or unlock
 * (ARGV message, lease, owner, now), with the Java client's clock skew_ms
 * ahead. *out = the reply (the caller's). */
static int64_t java_wait_ms = JAVA_WAIT_MS; /* W of the case's Java client */

static int java_fair(dlock_fx *fx, dlock_client *c, dlock_reply **out,
                     const dlock_script *s, const char *owner, int64_t lease_ms,
                     int64_t skew_ms)
{
    fair_keys k;
    char lease[24], wait[24], now[24];
    const char *argv[8];
    size_t nkeys = 3;

    fair_keys_of(&k, fx->name);
    i64(lease, lease_ms);
    i64(wait, java_wait_ms);
    i64(now, wall_now(c) + skew_ms);
    argv[0] = k.lock;
    argv[1] = k.queue;
    argv[2] = k.deadlines;
    if (s == &java_fair_unlock) {
        argv[3] = k.channel;
        argv[4] = "0";
        argv[5] = lease;
        argv[6] = owner;
        argv[7] = now;
        nkeys = 4;
    } else {
        argv[3] = lease;
        argv[4] = owner;
        argv[5] = wait;
        argv[6] = now;
    }
    return java_eval(c, out, s, nkeys, 4, argv, NULL);
}

/* The test thread's view of the queue. */
static long long queue_len(dlock_fx *fx)
{
    fair_keys k;

    fair_keys_of(&k, fx->name);
    return dlock_fx_list_len(fx->c1, k.queue);
}

static void queue_at(dlock_fx *fx, char *buf, size_t len, long long i)
{
    fair_keys k;
    char idx[24];

    fair_keys_of(&k, fx->name);
    i64(idx, i);
    dlock_fx_call_str(fx->c1, buf, len, "LINDEX", k.queue, 1, idx, NULL);
}

static long long deadline_of(dlock_fx *fx, const char *owner)
{
    fair_keys k;
    char buf[64];

    fair_keys_of(&k, fx->name);
    dlock_fx_call_str(fx->c1, buf, sizeof(buf), "ZSCORE", k.deadlines, 1, owner, NULL);
    return buf[0] ? strtoll(buf, NULL, 10) : -1;
}

static void wait_queue_len(dlock_fx *fx, long long n)
{
    int64_t give_up = dlock_fx_real_ms() + 5000;

    while (queue_len(fx) < n && dlock_fx_real_ms() < give_up)
        dlock_fx_sleep_real(1);
    assert_int_equal(queue_len(fx), n);
    /* The waiter must also be asleep, done with the attempt it makes after
     * subscribing, before the case goes on. */
    if (fx->is_mock)
        dlock_fx_settle(fx);
    else
        dlock_fx_sleep_real(50);
}

/* Who got the lock, in order, and when it was free in between. */
#define MAX_TURNS 8

typedef struct turns {
    pthread_mutex_t mutex;
    int who[MAX_TURNS];
    int64_t got[MAX_TURNS];  /* real ms: acquired */
    int64_t left[MAX_TURNS]; /* real ms: about to release */
    int n;
} turns;

static void turn_taken(turns *t, int who, int64_t hold_ms)
{
    int i;

    pthread_mutex_lock(&t->mutex);
    i = t->n < MAX_TURNS ? t->n++ : MAX_TURNS - 1;
    t->who[i] = who;
    t->got[i] = dlock_fx_real_ms();
    pthread_mutex_unlock(&t->mutex);
    if (hold_ms > 0)
        dlock_fx_sleep_real(hold_ms);
    pthread_mutex_lock(&t->mutex);
    t->left[i] = dlock_fx_real_ms();
    pthread_mutex_unlock(&t->mutex);
}

/* A waiter of either kind, on its own thread. */
typedef struct fair_waiter {
    dlock_fx *fx;
    dlock_client *c;
    dlock_rlock *l;   /* dlock waiter; NULL: a Java waiter */
    char owner[DLOCK_OWNER_MAX];
    int who;
    int64_t lease_ms, hold_ms;
    turns *turns;
    int rc;
    /* Java waiter: a way out when the case gives up on it */
    dlock_signal sig;
    pthread_mutex_t stop_mutex;
    int stop;
} fair_waiter;

static fair_waiter waiters[4];
static turns the_turns = {PTHREAD_MUTEX_INITIALIZER, {0}, {0}, {0}, 0};

static void turns_reset(turns *t)
{
    pthread_mutex_lock(&t->mutex);
    t->n = 0;
    pthread_mutex_unlock(&t->mutex);
}

static void java_on_message(void *arg, const char *channel, const char *msg, size_t len)
{
    (void)channel, (void)msg, (void)len;
    dlock_signal_raise(arg);
}

static int stopped(fair_waiter *w)
{
    int s;

    pthread_mutex_lock(&w->stop_mutex);
    s = w->stop;
    pthread_mutex_unlock(&w->stop_mutex);
    return s;
}

/* A Java client's lock(): subscribe to its own channel, try, and sleep
 * until a message or the TTL the script told; unlock after its turn. */
static void java_waiter_main(void *arg)
{
    fair_waiter *w = arg;
    dlock_clock *clk = dlock_backend_clock(dlock_client_backend(w->c));
    dlock_subscription *sub = NULL;
    fair_keys k;
    char channel[DLOCK_OWNER_MAX + 200];
    dlock_reply *r = NULL;

    fair_keys_of(&k, w->fx->name);
    snprintf(channel, sizeof(channel), "%s:%s", k.channel, w->owner);
    w->rc = dlock_backend_subscribe(dlock_client_backend(w->c), &sub, channel,
                                    java_on_message, &w->sig);
    while (w->rc == 0) {
        int64_t ttl;

        w->rc = java_fair(w->fx, w->c, &r, &java_fair_acquire, w->owner, w->lease_ms, 0);
        if (w->rc != 0)
            break;
        if (r->type == DLOCK_REPLY_NIL) {
            dlock_reply_free(r);
            break;
        }
        ttl = r->type == DLOCK_REPLY_INTEGER ? r->integer : -1;
        dlock_reply_free(r);
        if (stopped(w)) {
            java_fair(w->fx, w->c, &r, &java_fair_give_up, w->owner, w->lease_ms, 0);
            dlock_reply_free(r);
            w->rc = DLOCK_ETIMEDOUT;
            break;
        }
        dlock_clock_sleep_until(clk, &w->sig,
                                ttl >= 0 ? dlock_clock_now(clk) + (ttl > 0 ? ttl : 1)
                                         : INT64_MAX);
    }
    if (sub)
        dlock_backend_unsubscribe(dlock_client_backend(w->c), sub);
    dlock_clock_done(clk, &w->sig);
    if (w->rc != 0)
        return;
    turn_taken(w->turns, w->who, w->hold_ms);
    if (java_fair(w->fx, w->c, &r, &java_fair_unlock, w->owner, w->lease_ms, 0) == 0) {
        if (r->type != DLOCK_REPLY_INTEGER || r->integer != 1)
            w->rc = DLOCK_EPROTO;
        dlock_reply_free(r);
    }
}

static void dlock_waiter_main(void *arg)
{
    fair_waiter *w = arg;

    w->rc = dlock_lock(w->l, w->lease_ms);
    if (w->rc != 0)
        return;
    turn_taken(w->turns, w->who, w->hold_ms);
    w->rc = dlock_unlock(w->l);
}

static void waiter_init(fair_waiter *w, dlock_fx *fx, dlock_client *c, int java, int who,
                        turns *t)
{
    memset(w, 0, sizeof(*w));
    w->fx = fx;
    w->c = c;
    w->who = who;
    w->lease_ms = fx->long_lease_ms;
    w->hold_ms = fx->is_mock ? 0 : 20;
    w->turns = t;
    pthread_mutex_init(&w->stop_mutex, NULL);
    assert_int_equal(dlock_signal_init(&w->sig), 0);
    if (java) {
        snprintf(w->owner, sizeof(w->owner), "6a1d2c3e-0000-4000-8000-00000000%04d:%d",
                 who, 40 + who);
    } else {
        assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
        assert_int_equal(dlock_fair_new(&w->l, c, fx->name), 0);
        fx->locks[fx->nlocks++] = w->l;
    }
}

static void waiter_start(fair_waiter *w, dlock_fx_thread *t)
{
    bg.w[t - bg.t] = w;
    bg.live[t - bg.t] = 1;
    if (!w->l)
        dlock_clock_busy(dlock_backend_clock(dlock_client_backend(w->c)), &w->sig);
    dlock_fx_start(t, w->l ? dlock_waiter_main : java_waiter_main, w);
}

/* Joins a waiter thread; a Java waiter still waiting is told to give up. */
static int waiter_join(dlock_fx *fx, fair_waiter *w, dlock_fx_thread *t,
                       dlock_rlock *rescue)
{
    int rc = 0;

    bg.live[t - bg.t] = 0;
    if (dlock_fx_wait_done(t, 5000) != 0) {
        rc = -1;
        pthread_mutex_lock(&w->stop_mutex);
        w->stop = 1;
        pthread_mutex_unlock(&w->stop_mutex);
        dlock_signal_raise(&w->sig);
    }
    rc |= dlock_fx_join(fx, t, 5000, rescue);
    dlock_signal_destroy(&w->sig);
    pthread_mutex_destroy(&w->stop_mutex);
    return rc;
}

static void try_lock_main(void *arg)
{
    timed_call *t = arg;

    t->rc = dlock_try_lock(t->obj, t->wait_ms, 60000);
    if (t->rc == 0)
        dlock_unlock(t->obj);
}

/* Every turn's owner name for messages: R1, D1, ... */
static const char *const who_name[] = {"H", "R1", "D1", "R2", "D2"};

/* The scenario: a dlock holder, then Java R1, dlock D1, Java R2,
 * dlock D2 queue in this order. Each takes the lock in that order as the
 * one before releases, and the lock never sits free for long: on the mock
 * the whole chain runs with the clock standing still (message hand-offs
 * only), on Redis each gap is measured. */
static void fair_mixed_queue_is_fifo(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *holder = NULL;
    fair_waiter *w = waiters;
    dlock_fx_thread *t = bg.t;
    turns *tu = &the_turns;
    int i, joined = 0;
    int64_t released, worst = 0;

    turns_reset(tu);
    assert_int_equal(dlock_fair_new(&holder, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = holder;
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    for (i = 0; i < 4; i++) {
        /* R1, D1, R2, D2; the dlock waiters on both clients */
        waiter_init(&w[i], fx, i < 2 ? fx->c2 : fx->c1, i % 2 == 0, i + 1, tu);
        waiter_start(&w[i], &t[i]);
        wait_queue_len(fx, i + 1);
    }
    released = dlock_fx_real_ms();
    assert_int_equal(dlock_unlock(holder), 0);
    for (i = 0; i < 4; i++)
        joined |= waiter_join(fx, &w[i], &t[i], holder);

    printf("  [%s] order:", fx->backend);
    for (i = 0; i < tu->n; i++) {
        int64_t gap = tu->got[i] - (i == 0 ? released : tu->left[i - 1]);

        printf(" %s (free %" PRId64 " ms)", who_name[tu->who[i]], gap);
        if (gap > worst)
            worst = gap;
    }
    printf("\n");
    assert_int_equal(joined, 0);
    assert_int_equal(tu->n, 4);
    for (i = 0; i < 4; i++) {
        assert_int_equal(w[i].rc, 0);
        assert_int_equal(tu->who[i], i + 1);
    }
    assert_true(worst < 500);
    assert_int_equal(queue_len(fx), 0);
}

/* The deadline arithmetic, step by step: a dlock waiter joining behind a
 * Java waiter is stacked W behind it, and a Java waiter behind it W more;
 * a Java acquisition shifts both by -W and leaves the dlock waiter in line;
 * a dlock acquisition shifts the rest by -W; a dlock waiter giving up moves
 * those behind it W earlier. */
static void fair_deadlines_follow_redisson(void **state)
{
    dlock_fx *fx = BEGIN(state);
    const char *r1 = "6a1d2c3e-0000-4000-8000-000000000001:41";
    const char *r2 = "6a1d2c3e-0000-4000-8000-000000000002:42";
    const char *r3 = "6a1d2c3e-0000-4000-8000-000000000003:43";
    const long long slop = fx->is_mock ? 0 : 1000; /* real time passes on Redis */
    dlock_rlock *holder = NULL, *d2 = NULL;
    dlock_fx_thread *t1 = &bg.t[0], *t2 = &bg.t[4];
    fair_waiter *w1 = &waiters[0];
    timed_call *tr = &bg.call[0];
    turns *tu = &the_turns;
    dlock_reply *r = NULL;
    char head[DLOCK_OWNER_MAX + 8];
    long long at_r1, at_d1, at_r2, at_r3;
    int64_t t0;
    int joined = 0;

    turns_reset(tu);
    assert_int_equal(dlock_fair_new(&holder, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = holder;
    t0 = wall_now(fx->c1);
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);

    /* R1 queues: the lock's TTL + W */
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r1, fx->long_lease_ms, 0),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    dlock_reply_free(r);
    at_r1 = deadline_of(fx, r1);
    assert_true(llabs(at_r1 - (t0 + fx->long_lease_ms + JAVA_WAIT_MS)) <= slop);

    /* D1 (a dlock waiter) queues W behind it */
    waiter_init(w1, fx, fx->c2, 0, 2, tu);
    waiter_start(w1, t1);
    wait_queue_len(fx, 2);
    queue_at(fx, head, sizeof(head), 1);
    at_d1 = deadline_of(fx, head);
    assert_true(llabs(at_d1 - (at_r1 + JAVA_WAIT_MS)) <= slop);

    /* R2 queues W behind D1 */
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r2, fx->long_lease_ms, 0),
                     0);
    dlock_reply_free(r);
    at_r2 = deadline_of(fx, r2);
    assert_true(llabs(at_r2 - (at_d1 + JAVA_WAIT_MS)) <= slop);

    /* the holder leaves, R1 (Java) takes it: everyone W earlier */
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r1, fx->long_lease_ms, 0),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_NIL);
    dlock_reply_free(r);
    at_d1 -= JAVA_WAIT_MS;
    at_r2 -= JAVA_WAIT_MS;
    assert_int_equal(deadline_of(fx, head), at_d1);
    assert_int_equal(deadline_of(fx, r2), at_r2);
    /* ...and D1, first in line now, is still there after the Java unlock's
     * purge, which wakes it: it takes the lock, and R2 moves W earlier */
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_unlock, r1, fx->long_lease_ms, 0),
                     0);
    assert_int_equal(r->integer, 1);
    dlock_reply_free(r);
    assert_int_equal(dlock_fx_wait_done(t1, 5000), 0);
    assert_int_equal(w1->rc, 0);
    assert_int_equal(tu->n, 1);
    assert_int_equal(deadline_of(fx, r2), at_r2 - JAVA_WAIT_MS);
    at_r2 -= JAVA_WAIT_MS;
    joined |= waiter_join(fx, w1, t1, holder);

    /* R2 takes it (the queue is empty behind it); then a dlock waiter D2
     * with a budget queues, R3 behind it; D2's budget runs out: it leaves
     * and R3 moves W earlier */
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r2, fx->long_lease_ms, 0),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_NIL);
    dlock_reply_free(r);
    assert_int_equal(dlock_fair_new(&d2, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = d2;
    tr->obj = d2;
    tr->wait_ms = fx->is_mock ? 5000 : 300;
    tr->rc = -1;
    call_start(t2, try_lock_main, tr);
    wait_queue_len(fx, 1);
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r3, fx->long_lease_ms, 0),
                     0);
    dlock_reply_free(r);
    at_r3 = deadline_of(fx, r3);
    dlock_fx_advance(fx, tr->wait_ms);
    joined |= call_join(fx, t2);
    assert_int_equal(tr->rc, DLOCK_ETIMEDOUT);
    assert_int_equal(queue_len(fx), 1);
    assert_int_equal(deadline_of(fx, r3), at_r3 - JAVA_WAIT_MS);
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_unlock, r2, fx->long_lease_ms, 0),
                     0);
    dlock_reply_free(r);
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r3, fx->long_lease_ms, 0),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_NIL);
    dlock_reply_free(r);
    assert_int_equal(queue_len(fx), 0);
    assert_int_equal(joined, 0);
}

/* A live dlock waiter purged from the queue (here by a Java client whose
 * clock runs far ahead; any purge of a live waiter looks the same to it)
 * goes back to its place, the head, within about a second, and gets the
 * lock before the Java waiter that queued while it was out. */
static void fair_dropped_waiter_returns(void **state)
{
    dlock_fx *fx = BEGIN(state);
    const char *r2 = "6a1d2c3e-0000-4000-8000-000000000002:42";
    dlock_rlock *holder = NULL;
    fair_waiter *w1 = &waiters[0];
    dlock_fx_thread *t1 = &bg.t[0];
    turns *tu = &the_turns;
    dlock_reply *r = NULL;
    char d1[DLOCK_OWNER_MAX + 8], at[DLOCK_OWNER_MAX + 8];
    int64_t started, took;
    int joined = 0;

    turns_reset(tu);
    assert_int_equal(dlock_fair_new(&holder, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = holder;
    assert_int_equal(dlock_lock(holder, fx->long_lease_ms), 0);
    waiter_init(w1, fx, fx->c2, 0, 2, tu);
    waiter_start(w1, t1);
    wait_queue_len(fx, 1);
    queue_at(fx, d1, sizeof(d1), 0);

    /* R2's clock is past D1's deadline: its attempt purges D1 and queues */
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r2, fx->long_lease_ms,
                               fx->long_lease_ms + JAVA_WAIT_MS + 1000),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    dlock_reply_free(r);
    assert_int_equal(queue_len(fx), 1);
    queue_at(fx, at, sizeof(at), 0);
    assert_string_equal(at, r2);
    assert_int_equal(deadline_of(fx, d1), -1);

    started = dlock_fx_real_ms();
    if (fx->is_mock) {
        dlock_fx_advance(fx, 1000);
        dlock_fx_settle(fx);
    } else {
        while (queue_len(fx) < 2 && dlock_fx_real_ms() - started < 3000)
            dlock_fx_sleep_real(5);
    }
    took = dlock_fx_real_ms() - started;
    printf("  [%s] dropped waiter back in line after %" PRId64 " ms%s\n", fx->backend,
           took, fx->is_mock ? " (1000 ms virtual)" : "");
    assert_int_equal(queue_len(fx), 2);
    queue_at(fx, at, sizeof(at), 0);
    assert_string_equal(at, d1);
    queue_at(fx, at, sizeof(at), 1);
    assert_string_equal(at, r2);
    if (!fx->is_mock)
        assert_true(took <= 1500);

    /* the unlock wakes D1, first again; R2 comes after it */
    assert_int_equal(dlock_unlock(holder), 0);
    assert_int_equal(dlock_fx_wait_done(t1, 5000), 0);
    assert_int_equal(w1->rc, 0);
    assert_int_equal(tu->n, 1);
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_acquire, r2, fx->long_lease_ms, 0),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_NIL);
    dlock_reply_free(r);
    assert_int_equal(java_fair(fx, fx->c2, &r, &java_fair_unlock, r2, fx->long_lease_ms, 0),
                     0);
    dlock_reply_free(r);
    joined |= waiter_join(fx, w1, t1, holder);
    assert_int_equal(joined, 0);
    assert_int_equal(queue_len(fx), 0);
}

static void free_client(void *c) { dlock_client_free(c); }

/* A client of the fixture's backend kind with its own fair-lock W. */
static dlock_client *client_with_wait(dlock_fx *fx, int64_t wait_ms)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;

    if (fx->is_mock)
        assert_int_equal(dlock_mock_backend_new(&b, fx->store), 0);
    else
        assert_int_equal(dlock_redis_backend_new(&b, dlock_fx_redis_url(), NULL, NULL, 0), 0);
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    opts.fair_wait_slack_ms = wait_ms;
    if (dlock_client_new(&c, b, &opts) != 0) {
        dlock_backend_free(b);
        fail_msg("client_new");
    }
    return dlock_fx_keep(fx, c, free_client);
}

/* A holder that keeps its lock (watchdog) much longer than W: the dlock
 * waiter first in line keeps its deadline ahead of the lease and moves the
 * Java waiter behind it along, so that neither is purged: when the holder
 * leaves, D1 then R1 get the lock, by messages alone. */
static void fair_long_hold_keeps_the_queue(void **state)
{
    dlock_fx *fx = BEGIN(state);
    const int64_t wait = fx->is_mock ? 20000 : 1000;
    dlock_client *cw = client_with_wait(fx, wait);
    dlock_rlock *holder = NULL;
    fair_waiter *w = waiters;
    dlock_fx_thread *t = bg.t;
    turns *tu = &the_turns;
    char d1[DLOCK_OWNER_MAX + 8];
    long long at_d1, at_r1;
    int64_t now;
    int i, joined = 0;

    java_wait_ms = wait;
    turns_reset(tu);
    assert_int_equal(dlock_fair_new(&holder, fx->c1, fx->name), 0);
    fx->locks[fx->nlocks++] = holder;
    assert_int_equal(dlock_lock(holder, 0), 0); /* watchdog-renewed */
    waiter_init(&w[0], fx, cw, 0, 2, tu); /* D1 */
    waiter_init(&w[1], fx, fx->c2, 1, 1, tu); /* R1 */
    for (i = 0; i < 2; i++) {
        waiter_start(&w[i], &t[i]);
        wait_queue_len(fx, i + 1);
    }
    queue_at(fx, d1, sizeof(d1), 0);
    /* many times W, and the watchdog's lease */
    dlock_fx_advance(fx, 3 * wait + fx->watchdog_ms);
    now = wall_now(fx->c1);
    at_d1 = deadline_of(fx, d1);
    at_r1 = deadline_of(fx, w[1].owner);
    printf("  [%s] after %" PRId64 " ms held: D1 due in %lld ms, R1 in %lld ms (W %" PRId64
           ")\n", fx->backend, 3 * wait + fx->watchdog_ms, at_d1 - now, at_r1 - now, wait);
    assert_int_equal(queue_len(fx), 2);
    assert_true(at_d1 > now);
    assert_true(at_r1 >= at_d1 + wait);

    assert_int_equal(dlock_unlock(holder), 0);
    for (i = 0; i < 2; i++)
        joined |= waiter_join(fx, &w[i], &t[i], holder);
    assert_int_equal(joined, 0);
    assert_int_equal(tu->n, 2);
    assert_int_equal(tu->who[0], 2);
    assert_int_equal(tu->who[1], 1);
    assert_int_equal(w[0].rc, 0);
    assert_int_equal(w[1].rc, 0);
    assert_int_equal(queue_len(fx), 0);
}

/* Stops and joins the threads a failed case left running, before the
 * fixture frees what they use. */
static int interop_teardown(void **state)
{
    dlock_fx *fx = *state;
    int i;

    for (i = 0; fx && i < 6; i++) {
        if (!bg.live[i])
            continue;
        if (i < 4)
            waiter_join(fx, bg.w[i], &bg.t[i], fx->nlocks ? fx->locks[0] : NULL);
        else
            call_join(fx, &bg.t[i]);
    }
    java_wait_ms = JAVA_WAIT_MS;
    return dlock_fx_teardown(state);
}

#define CASE(f) cmocka_unit_test_setup_teardown(f, dlock_fx_setup, interop_teardown)

static const struct CMUnitTest interop_cases[] = {
    CASE(latch_channel_of_braced_name),
    CASE(permit_ids_are_raw_bytes),
    CASE(permit_ids_with_nul_bytes),
    CASE(permit_malformed_ids_rejected),
    CASE(fair_mixed_queue_is_fifo),
    CASE(fair_deadlines_follow_redisson),
    CASE(fair_dropped_waiter_returns),
    CASE(fair_long_hold_keeps_the_queue),
};

int dlock_test_interop(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("interop", backend, interop_cases);
}
