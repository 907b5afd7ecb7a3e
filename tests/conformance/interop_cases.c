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

static const struct CMUnitTest interop_cases[] = {
    DLOCK_FX_CASE(latch_channel_of_braced_name),
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
