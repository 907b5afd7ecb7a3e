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
#include "../harness/runner.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- the Java side: scripts and a binary-safe call ----------------------- */

/* Runs script on c's backend; argument i is len[i] bytes (any byte). */
static int java_eval(dlock_client *c, dlock_reply **out, const dlock_script *s,
                     size_t nkeys, size_t nargs, const char *const *argv,
                     const size_t *len)
{
    char err[256] = "";
    int rc = dlock_backend_eval(dlock_client_backend(c), out, s, nkeys, nargs, argv,
                                len, err, sizeof(err));

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

typedef struct recorder {
    pthread_mutex_t mutex;
    dlock_backend *b;
    dlock_subscription *sub;
    int n;
    char msgs[8][16];
} recorder;

static void on_message(void *arg, const char *channel, const char *msg, size_t len)
{
    recorder *r = arg;

    (void)channel;
    if (len == 0)
        return; /* "look again" after a reconnect */
    pthread_mutex_lock(&r->mutex);
    if (r->n < 8)
        snprintf(r->msgs[r->n], sizeof(r->msgs[0]), "%.*s", (int)len, msg);
    r->n++;
    pthread_mutex_unlock(&r->mutex);
}

/* Messages seen, after waiting up to 2 s of real time for want of them. */
static int recorded(recorder *r, int want)
{
    int64_t until = dlock_fx_real_ms() + 2000;
    int n;

    for (;;) {
        pthread_mutex_lock(&r->mutex);
        n = r->n;
        pthread_mutex_unlock(&r->mutex);
        if (n >= want || dlock_fx_real_ms() >= until)
            return n;
        dlock_fx_sleep_real(5);
    }
}

/* A call with a budget, on its own thread. */
typedef struct timed_call {
    void *obj;
    int64_t wait_ms;
    int rc;
} timed_call;

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
    timed_call w = {NULL, 0, -1};
    dlock_fx_thread t;
    dlock_reply *r = NULL;
    const char *argv[2];
    recorder rec;
    int64_t started, took;
    int n, base;

    snprintf(name, sizeof(name), "{app}latch-%s", fx->name);
    snprintf(channel, sizeof(channel), "redisson_countdownlatch__channel__{%s}", name);
    assert_int_equal(dlock_latch_new(&a, fx->c1, name), 0);
    dlock_fx_keep(fx, a, free_latch);
    assert_int_equal(dlock_latch_new(&b, fx->c2, name), 0);
    dlock_fx_keep(fx, b, free_latch);

    /* dlock publishes on Redisson's channel */
    memset(&rec, 0, sizeof(rec));
    pthread_mutex_init(&rec.mutex, NULL);
    rec.b = dlock_client_backend(fx->c2);
    assert_int_equal(dlock_backend_subscribe(rec.b, &rec.sub, channel, on_message, &rec), 0);
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    assert_int_equal(dlock_latch_count_down(a), 0);
    n = recorded(&rec, 2);
    dlock_backend_unsubscribe(rec.b, rec.sub);
    pthread_mutex_destroy(&rec.mutex);
    assert_int_equal(n, 2);
    assert_string_equal(rec.msgs[0], "1");
    assert_string_equal(rec.msgs[1], "0");

    /* a Java count-down wakes a dlock awaiter: on the mock without the
     * clock moving, on Redis long before the awaiter's own deadline */
    assert_int_equal(dlock_latch_try_set_count(a, NULL, 1), 0);
    w.obj = b;
    w.wait_ms = fx->is_mock ? 60000 : 5000;
    base = dlock_fx_settle(fx);
    dlock_fx_start(&t, latch_await_main, &w);
    assert_int_equal(dlock_fx_wait_blocked(fx, base, 100), 0);
    argv[0] = name;
    argv[1] = channel;
    started = dlock_fx_real_ms();
    assert_int_equal(java_eval(fx->c1, &r, &java_latch_count_down, 2, 0, argv, NULL), 0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    assert_int_equal(r->integer, 0);
    dlock_reply_free(r);
    n = dlock_fx_wait_done(&t, 3000);
    took = dlock_fx_real_ms() - started;
    assert_int_equal(dlock_fx_join(fx, &t, 5000, NULL), 0);
    printf("  [%s] awaiter woken by a Java count-down after %" PRId64 " ms\n",
           fx->backend, took);
    assert_int_equal(n, 0);
    assert_int_equal(w.rc, 0);
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

static const struct CMUnitTest interop_cases[] = {
    DLOCK_FX_CASE(latch_channel_of_braced_name),
    DLOCK_FX_CASE(permit_ids_are_raw_bytes),
    DLOCK_FX_CASE(permit_ids_with_nul_bytes),
    DLOCK_FX_CASE(permit_malformed_ids_rejected),
};

int dlock_test_interop(const char *backend)
{
    int before = dlock_test_failed;

    if (strcmp(backend, "mock") == 0)
        DLOCK_RUN_GROUP("conformance/interop on mock", interop_cases, dlock_fx_group_mock,
                        NULL);
    else
        DLOCK_RUN_GROUP("conformance/interop on redis", interop_cases, dlock_fx_group_redis,
                        NULL);
    return dlock_test_failed - before;
}
