/*
 * Stored values: the codecs, the bucket, guarded writes, the fenced lock,
 * the JSON configuration and introspection. Each case is written once
 * against the fixture (tests/harness/fixture.h) and runs on every backend:
 * dlock_test_values("mock") and dlock_test_values("redis"). The pure codec
 * cases touch no backend and run once, with the mock group.
 *
 * Expiry runs on the mock's virtual clock (exact, instant); on Redis the
 * leases are real and short.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dlock/bucket.h"
#include "dlock/codec.h"
#include "dlock/config.h"
#include "dlock/fenced.h"
#include "dlock/sys/methods.h"

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- helpers ------------------------------------------------------------- */

/* A lock handle freed by the fixture's teardown. */
static dlock_rlock *track(dlock_fx *fx, dlock_rlock *l)
{
    assert_non_null(l);
    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    fx->locks[fx->nlocks++] = l;
    return l;
}

typedef int (*make_fn)(dlock_rlock **out, dlock_client *c, const char *name);

static dlock_rlock *make(dlock_fx *fx, make_fn fn, dlock_client *c, const char *name)
{
    dlock_rlock *l = NULL;

    assert_int_equal(fn(&l, c, name), 0);
    return track(fx, l);
}

static dlock_bucket *bucket(dlock_client *c, const char *name, const dlock_codec *codec)
{
    dlock_bucket *b = NULL;

    assert_int_equal(dlock_bucket_new(&b, c, name, codec), 0);
    assert_non_null(b);
    return b;
}

/* The bucket's string value, "" for none (the test owns nothing after). */
static void get_str(dlock_bucket *b, char *buf, size_t len)
{
    char *v = NULL;

    assert_int_equal(dlock_bucket_get(b, (void **)&v), 0);
    snprintf(buf, len, "%s", v ? v : "");
    dlock_bucket_value_free(b, v);
}

static int64_t get_long(dlock_bucket *b, int64_t absent)
{
    int64_t *v = NULL, out;

    assert_int_equal(dlock_bucket_get(b, (void **)&v), 0);
    out = v ? *v : absent;
    dlock_bucket_value_free(b, v);
    return out;
}

/* ---- codecs (no backend) --------------------------------------------------- */

/* encode then decode; returns the decoded value (the caller frees it). */
static void *round_trip(const dlock_codec *codec, const void *value, char **enc,
                        size_t *enclen)
{
    char err[128];
    void *back = NULL;

    assert_int_equal(dlock_codec_encode(codec, enc, enclen, value, err, sizeof(err)), 0);
    assert_non_null(*enc);
    assert_int_equal(dlock_codec_decode(codec, &back, *enc, *enclen, err, sizeof(err)), 0);
    assert_non_null(back);
    return back;
}

static void decode_fails(const dlock_codec *codec, const char *bytes, size_t len,
                         const char *detail_part)
{
    char err[160] = "";
    void *v = (void *)1;

    assert_int_equal(dlock_codec_decode(codec, &v, bytes, len, err, sizeof(err)),
                     DLOCK_EPROTO);
    assert_null(v);
    assert_true(err[0] != '\0');
    if (detail_part && !strstr(err, detail_part)) {
        fprintf(stderr, "detail \"%s\" lacks \"%s\"\n", err, detail_part);
        fail();
    }
}

static void codec_string(void **state)
{
    static const char *const texts[] = {
        "", "plain ascii", "h\xc3\xa9llo \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
        "\xf0\x9f\x8e\x89", "\xf4\x8f\xbf\xbf" /* U+10FFFF */,
    };
    const dlock_codec *c = dlock_codec_string();
    char err[128], *enc;
    size_t i, n;

    (void)state;
    assert_string_equal(dlock_codec_name(c), "string");
    for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        char *back = round_trip(c, texts[i], &enc, &n);
        assert_int_equal(n, strlen(texts[i]));
        assert_memory_equal(enc, texts[i], n);
        assert_string_equal(back, texts[i]);
        free(enc);
        dlock_codec_value_free(c, back);
    }
    /* not UTF-8: refused on the way in ... */
    assert_int_equal(dlock_codec_encode(c, &enc, &n, "\xff", err, sizeof(err)), DLOCK_EINVAL);
    assert_null(enc);
    /* ... and on the way out */
    decode_fails(c, "\xc3\x28", 2, "UTF-8");           /* bad continuation */
    decode_fails(c, "\xc0\xaf", 2, "UTF-8");           /* overlong '/' */
    decode_fails(c, "\xe0\x80\xaf", 3, "UTF-8");       /* overlong, 3 bytes */
    decode_fails(c, "\xed\xa0\x80", 3, "UTF-8");       /* a surrogate */
    decode_fails(c, "\xf4\x90\x80\x80", 4, "UTF-8");   /* above U+10FFFF */
    decode_fails(c, "ok\xe2\x82", 4, "UTF-8");         /* cut short */
    decode_fails(c, "\x80", 1, "UTF-8");               /* lone continuation */
    decode_fails(c, "a\0b", 3, "NUL");                 /* not a C string */
}

static void codec_bytes(void **state)
{
    const dlock_codec *c = dlock_codec_bytes();
    char all[256], *enc;
    dlock_bytes in, *back;
    size_t i, n;

    (void)state;
    for (i = 0; i < sizeof(all); i++)
        all[i] = (char)(255 - i); /* every byte value, NUL in the middle */
    in.data = all;
    in.len = sizeof(all);
    back = round_trip(c, &in, &enc, &n);
    assert_int_equal(n, sizeof(all));
    assert_int_equal(back->len, sizeof(all));
    assert_memory_equal(back->data, all, sizeof(all));
    assert_int_equal(back->data[back->len], '\0');
    free(enc);
    dlock_codec_value_free(c, back);

    in.data = NULL;
    in.len = 0;
    back = round_trip(c, &in, &enc, &n);
    assert_int_equal(n, 0);
    assert_int_equal(back->len, 0);
    free(enc);
    dlock_codec_value_free(c, back);
    /* data NULL with a length is not a value */
    in.len = 3;
    assert_int_equal(dlock_codec_encode(c, &enc, &n, &in, NULL, 0), DLOCK_EINVAL);
}

static void codec_long(void **state)
{
    static const int64_t values[] = {0, 1, -1, 42, INT64_MAX, INT64_MIN,
                                     INT64_MAX - 1, INT64_MIN + 1};
    static const char *const bad[] = {"", "-", "+", " 1", "1 ", "1e3", "12a",
                                      "0x10", "1.0", "--1",
                                      "9223372036854775808", "-9223372036854775809",
                                      "99999999999999999999"};
    const dlock_codec *c = dlock_codec_long();
    char expect[32], *enc;
    int64_t *back;
    void *v;
    size_t i, n;

    (void)state;
    for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        back = round_trip(c, &values[i], &enc, &n);
        snprintf(expect, sizeof(expect), "%" PRId64, values[i]);
        assert_string_equal(enc, expect); /* Redisson's LongCodec text */
        assert_true(*back == values[i]);
        free(enc);
        dlock_codec_value_free(c, back);
    }
    /* what Java's Long.parseLong accepts */
    assert_int_equal(dlock_codec_decode(c, &v, "+5", 2, NULL, 0), 0);
    assert_true(*(int64_t *)v == 5);
    dlock_codec_value_free(c, v);
    assert_int_equal(dlock_codec_decode(c, &v, "-007", 4, NULL, 0), 0);
    assert_true(*(int64_t *)v == -7);
    dlock_codec_value_free(c, v);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        decode_fails(c, bad[i], strlen(bad[i]), "long codec");
    decode_fails(c, "12\0" "3", 4, "digit"); /* an embedded NUL */
}

static void codec_json(void **state)
{
    const dlock_codec *c = dlock_codec_json();
    json_t *in, *back;
    char *enc;
    size_t n;

    (void)state;
    in = json_pack("{s:I, s:I, s:s, s:[i, f, b, n], s:{s:s}}",
                   "max", (json_int_t)INT64_MAX, "min", (json_int_t)INT64_MIN,
                   "text", "h\xc3\xa9llo \xf0\x9f\x8e\x89", "list", 1, 0.5, 1,
                   "nested", "k", "v");
    assert_non_null(in);
    back = round_trip(c, in, &enc, &n);
    assert_true(json_equal(in, back));
    assert_true(json_integer_value(json_object_get(back, "max")) == INT64_MAX);
    assert_true(json_integer_value(json_object_get(back, "min")) == INT64_MIN);
    free(enc);
    dlock_codec_value_free(c, back);
    json_decref(in);

    /* one value, one encoding: compact, keys sorted */
    in = json_pack("{s:i, s:i}", "b", 1, "a", 2);
    back = round_trip(c, in, &enc, &n);
    assert_string_equal(enc, "{\"a\":2,\"b\":1}");
    free(enc);
    json_decref(back);
    json_decref(in);
    /* any JSON value, not only containers */
    in = json_string("just text");
    back = round_trip(c, in, &enc, &n);
    assert_string_equal(enc, "\"just text\"");
    assert_true(json_equal(in, back));
    free(enc);
    json_decref(back);
    json_decref(in);

    decode_fails(c, "", 0, "line");
    decode_fails(c, "{", 1, "line 1");
    decode_fails(c, "{\"a\":}", 6, "column");
    decode_fails(c, "[1,]", 4, "line");
    decode_fails(c, "nul", 3, "line");
    decode_fails(c, "\"\xff\"", 3, "line");
    decode_fails(c, "{\"a\":1}\n{\"b\":2}", 15, "line 2");
}

static void codec_bad_arguments(void **state)
{
    char *enc = (char *)1;
    size_t n = 9;
    void *v = (void *)1;

    (void)state;
    assert_int_equal(dlock_codec_encode(NULL, &enc, &n, "x", NULL, 0), DLOCK_EINVAL);
    assert_null(enc);
    assert_int_equal(n, 0);
    assert_int_equal(dlock_codec_encode(dlock_codec_string(), NULL, &n, "x", NULL, 0),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_codec_encode(dlock_codec_json(), &enc, &n, NULL, NULL, 0),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_codec_decode(dlock_codec_long(), &v, NULL, 3, NULL, 0),
                     DLOCK_EINVAL);
    assert_null(v);
    assert_int_equal(dlock_codec_decode(NULL, &v, "1", 1, NULL, 0), DLOCK_EINVAL);
    assert_null(dlock_codec_name(NULL));
    dlock_codec_value_free(NULL, (void *)1); /* no-op */
    dlock_codec_value_free(dlock_codec_json(), NULL);
}

/* ---- the bucket ------------------------------------------------------------ */

static void bucket_each_codec(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160], buf[64], all[256];
    dlock_bucket *b;
    dlock_bytes in, *bytes;
    json_t *doc, *back;
    dlock_reply *r = NULL;
    int64_t lv;
    size_t i;

    /* string: Unicode text, seen from another client */
    snprintf(name, sizeof(name), "%s:string", fx->name);
    b = bucket(fx->c1, name, dlock_codec_string());
    assert_int_equal(dlock_bucket_set(b, "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89", 0), 0);
    dlock_bucket_free(b);
    b = bucket(fx->c2, name, dlock_codec_string());
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "\xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x8e\x89");
    assert_string_equal(dlock_bucket_codec(b)->name, "string");
    assert_string_equal(dlock_bucket_name(b), name);
    dlock_bucket_free(b);

    /* bytes: every byte value, NUL included, through the store */
    snprintf(name, sizeof(name), "%s:bytes", fx->name);
    b = bucket(fx->c1, name, dlock_codec_bytes());
    for (i = 0; i < sizeof(all); i++)
        all[i] = (char)i;
    in.data = all;
    in.len = sizeof(all);
    assert_int_equal(dlock_bucket_set(b, &in, 0), 0);
    assert_int_equal(dlock_bucket_get(b, (void **)&bytes), 0);
    assert_non_null(bytes);
    assert_int_equal(bytes->len, sizeof(all));
    assert_memory_equal(bytes->data, all, sizeof(all));
    dlock_bucket_value_free(b, bytes);
    /* stored as they are, seen by a plain GET */
    assert_int_equal(dlock_fx_call(fx->c2, &r, "get", name, 0), 0);
    assert_int_equal(r->type, DLOCK_REPLY_BULK);
    assert_int_equal(r->len, sizeof(all));
    assert_memory_equal(r->str, all, sizeof(all));
    dlock_reply_free(r);
    dlock_bucket_free(b);

    /* long: the int64 limits, stored as Redisson's LongCodec text */
    snprintf(name, sizeof(name), "%s:long", fx->name);
    b = bucket(fx->c1, name, dlock_codec_long());
    lv = INT64_MIN;
    assert_int_equal(dlock_bucket_set(b, &lv, 0), 0);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", name, 0, NULL, NULL);
    assert_string_equal(buf, "-9223372036854775808");
    assert_true(get_long(b, 0) == INT64_MIN);
    lv = INT64_MAX;
    assert_int_equal(dlock_bucket_set(b, &lv, 0), 0);
    assert_true(get_long(b, 0) == INT64_MAX);
    /* a number another program stored is read as it is */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", name, 1, "12345", NULL);
    assert_true(get_long(b, 0) == 12345);
    dlock_bucket_free(b);

    /* json */
    snprintf(name, sizeof(name), "%s:json", fx->name);
    b = bucket(fx->c1, name, dlock_codec_json());
    doc = json_pack("{s:s, s:[i, i]}", "who", "\xc3\xa9t\xc3\xa9", "n", 1, 2);
    assert_int_equal(dlock_bucket_set(b, doc, 0), 0);
    assert_int_equal(dlock_bucket_get(b, (void **)&back), 0);
    assert_non_null(back);
    assert_true(json_equal(doc, back));
    json_decref(back);
    json_decref(doc);
    /* JSON null is a value, not "absent" */
    assert_int_equal(dlock_bucket_set(b, json_null(), 0), 0);
    assert_int_equal(dlock_bucket_get(b, (void **)&back), 0);
    assert_non_null(back);
    assert_true(json_is_null(back));
    json_decref(back);
    dlock_bucket_free(b);
}

static void bucket_operations(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_bucket *b = bucket(fx->c1, fx->name, dlock_codec_string());
    char buf[64], *v = NULL;
    int done = -1;

    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "");
    assert_int_equal(dlock_bucket_get(b, (void **)&v), 0);
    assert_null(v);

    assert_int_equal(dlock_bucket_set(b, "one", 0), 0);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "one");
    assert_int_equal(dlock_bucket_set(b, "two", 0), 0);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "two");

    assert_int_equal(dlock_bucket_set_if_absent(b, &done, "three", 0), 0);
    assert_int_equal(done, 0);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "two");

    assert_int_equal(dlock_bucket_delete(b, &done), 0);
    assert_int_equal(done, 1);
    assert_int_equal(dlock_bucket_delete(b, &done), 0);
    assert_int_equal(done, 0);
    assert_int_equal(dlock_bucket_set_if_absent(b, &done, "three", 0), 0);
    assert_int_equal(done, 1);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "three");

    /* compare_and_set: wrong expectation, right one, absent, delete */
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, "two", "four", 0), 0);
    assert_int_equal(done, 0);
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, NULL, "four", 0), 0);
    assert_int_equal(done, 0);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "three");
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, "three", "four", 0), 0);
    assert_int_equal(done, 1);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "four");
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, "four", NULL, 0), 0);
    assert_int_equal(done, 1);
    assert_int_equal(dlock_bucket_get(b, (void **)&v), 0);
    assert_null(v);
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, "four", "five", 0), 0);
    assert_int_equal(done, 0);
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, NULL, "five", 0), 0);
    assert_int_equal(done, 1);

    /* get_and_delete */
    assert_int_equal(dlock_bucket_get_and_delete(b, (void **)&v), 0);
    assert_non_null(v);
    assert_string_equal(v, "five");
    dlock_bucket_value_free(b, v);
    assert_int_equal(dlock_bucket_get_and_delete(b, (void **)&v), 0);
    assert_null(v);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "exists", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "0");
    dlock_bucket_free(b);
}

static void bucket_ttl_expiry(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_bucket *b = bucket(fx->c1, fx->name, dlock_codec_string());
    int64_t ttl = -3, lease = fx->lease_ms;
    char buf[64];
    int done = -1;

    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_int_equal(ttl, -2);
    assert_int_equal(dlock_bucket_set(b, "forever", 0), 0);
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_int_equal(ttl, -1);

    /* set with a TTL replaces the "forever" */
    assert_int_equal(dlock_bucket_set(b, "short", lease), 0);
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_true(ttl > 0 && ttl <= lease);
    if (fx->is_mock) {
        assert_int_equal(ttl, lease); /* the virtual clock has not moved */
        dlock_fx_advance(fx, lease - 1);
        get_str(b, buf, sizeof(buf));
        assert_string_equal(buf, "short");
        dlock_fx_advance(fx, 1);
    } else {
        dlock_fx_advance(fx, lease + 50);
    }
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "");
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_int_equal(ttl, -2);

    /* set_if_absent and compare_and_set set the TTL too */
    assert_int_equal(dlock_bucket_set_if_absent(b, &done, "again", lease), 0);
    assert_int_equal(done, 1);
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, "again", "cas", 0), 0);
    assert_int_equal(done, 1);
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_int_equal(ttl, -1);
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, "cas", "cas2", lease), 0);
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_true(ttl > 0 && ttl <= lease);
    dlock_fx_advance(fx, fx->is_mock ? lease : lease + 50);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "");
    dlock_bucket_free(b);
}

/* compare_and_set between 8 threads on two clients: a counter incremented
 * by read + compare_and_set loses no increment, and of 8 threads racing to
 * fill an empty bucket exactly one wins. */
#define NRACE 8

typedef struct racer {
    dlock_fx *fx;
    dlock_bucket *b, *first;
    int rounds, id;
    pthread_barrier_t *start;
    int rc, won, retries;
    dlock_fx_thread t;
} racer;

static void racer_main(void *arg)
{
    racer *r = arg;
    int i, done;
    int64_t id = r->id;

    pthread_barrier_wait(r->start);
    r->rc = dlock_bucket_compare_and_set(r->first, &r->won, NULL, &id, 0);
    for (i = 0; r->rc == 0 && i < r->rounds; i++) {
        for (;;) {
            int64_t *cur = NULL, next;
            r->rc = dlock_bucket_get(r->b, (void **)&cur);
            if (r->rc != 0)
                break;
            next = (cur ? *cur : 0) + 1;
            r->rc = dlock_bucket_compare_and_set(r->b, &done, cur, &next, 0);
            dlock_bucket_value_free(r->b, cur);
            if (r->rc != 0 || done)
                break;
            r->retries++;
        }
    }
}

static void bucket_cas_race(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160];
    racer r[NRACE];
    pthread_barrier_t start;
    dlock_bucket *check;
    int i, wins = 0, joined = 0, rounds = fx->is_mock ? 40 : 20, retries = 0;

    snprintf(name, sizeof(name), "%s:first", fx->name);
    pthread_barrier_init(&start, NULL, NRACE);
    memset(r, 0, sizeof(r));
    for (i = 0; i < NRACE; i++) {
        dlock_client *c = i % 2 ? fx->c2 : fx->c1;
        r[i].fx = fx;
        r[i].id = i + 1;
        r[i].rounds = rounds;
        r[i].start = &start;
        r[i].b = bucket(c, fx->name, dlock_codec_long());
        r[i].first = bucket(c, name, dlock_codec_long());
        r[i].rc = 1;
    }
    for (i = 0; i < NRACE; i++)
        dlock_fx_start(&r[i].t, racer_main, &r[i]);
    for (i = 0; i < NRACE; i++)
        joined |= dlock_fx_join(fx, &r[i].t, 60000, NULL);
    pthread_barrier_destroy(&start);
    assert_int_equal(joined, 0);
    for (i = 0; i < NRACE; i++) {
        assert_int_equal(r[i].rc, 0);
        wins += r[i].won;
        retries += r[i].retries;
    }
    assert_int_equal(wins, 1);
    check = bucket(fx->c1, fx->name, dlock_codec_long());
    assert_true(get_long(check, -1) == (int64_t)NRACE * rounds);
    dlock_bucket_free(check);
    check = bucket(fx->c1, name, dlock_codec_long());
    i = (int)get_long(check, -1);
    assert_true(i >= 1 && i <= NRACE && r[i - 1].won == 1);
    dlock_bucket_free(check);
    for (i = 0; i < NRACE; i++) {
        dlock_bucket_free(r[i].b);
        dlock_bucket_free(r[i].first);
    }
    printf("  [%s] %d threads x %d compare_and_set increments: %d lost rounds retried\n",
           fx->backend, NRACE, rounds, retries);
}

static void bucket_bad_input(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_bucket *b = NULL;
    char buf[64], name[160];
    void *v = (void *)1;
    int64_t ttl;
    int done;

    assert_int_equal(dlock_bucket_new(&b, fx->c1, fx->name, NULL), DLOCK_EINVAL);
    assert_null(b);
    assert_int_equal(dlock_bucket_new(&b, NULL, fx->name, dlock_codec_string()),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_bucket_new(&b, fx->c1, "", dlock_codec_string()), DLOCK_EINVAL);
    assert_int_equal(dlock_bucket_new(NULL, fx->c1, fx->name, dlock_codec_string()),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_bucket_get(NULL, &v), DLOCK_EINVAL);
    assert_null(v);
    assert_int_equal(dlock_bucket_set(NULL, "x", 0), DLOCK_EINVAL);
    dlock_bucket_free(NULL);
    assert_null(dlock_bucket_name(NULL));
    assert_null(dlock_bucket_codec(NULL));

    b = bucket(fx->c1, fx->name, dlock_codec_string());
    assert_int_equal(dlock_bucket_set(b, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_bucket_set(b, "x", -1), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_bucket_errmsg(b), "ttl"));
    assert_int_equal(dlock_bucket_get(b, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_bucket_remain_ttl(b, NULL), DLOCK_EINVAL);
    /* a value the codec refuses changes nothing */
    assert_int_equal(dlock_bucket_set(b, "\xff\xfe", 0), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_bucket_errmsg(b), "UTF-8"));
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "exists", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "0");

    /* another kind of value under the name: refused, left as it is */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, "f", "v");
    assert_int_equal(dlock_bucket_get(b, &v), DLOCK_EPROTO);
    assert_null(v);
    assert_non_null(strstr(dlock_bucket_errmsg(b), "WRONGTYPE"));
    assert_int_equal(dlock_bucket_set(b, "x", 0), DLOCK_EPROTO);
    assert_int_equal(dlock_bucket_set_if_absent(b, &done, "x", 0), DLOCK_EPROTO);
    assert_int_equal(dlock_bucket_compare_and_set(b, &done, NULL, "x", 0), DLOCK_EPROTO);
    assert_int_equal(dlock_bucket_delete(b, &done), DLOCK_EPROTO);
    assert_int_equal(dlock_bucket_get_and_delete(b, &v), DLOCK_EPROTO);
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), DLOCK_EPROTO);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", fx->name, 1, "f", NULL);
    assert_string_equal(buf, "v");
    dlock_bucket_free(b);

    /* stored bytes the codec cannot decode: a clear error, never a crash */
    snprintf(name, sizeof(name), "%s:long", fx->name);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", name, 1, "12abc", NULL);
    b = bucket(fx->c1, name, dlock_codec_long());
    assert_int_equal(dlock_bucket_get(b, &v), DLOCK_EPROTO);
    assert_null(v);
    assert_non_null(strstr(dlock_bucket_errmsg(b), "long codec"));
    assert_int_equal(dlock_bucket_get_and_delete(b, &v), DLOCK_EPROTO);
    assert_null(v);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "exists", name, 0, NULL, NULL);
    assert_string_equal(buf, "0"); /* taken out all the same */
    dlock_bucket_free(b);
    snprintf(name, sizeof(name), "%s:json", fx->name);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", name, 1, "{\"a\":", NULL);
    b = bucket(fx->c1, name, dlock_codec_json());
    assert_int_equal(dlock_bucket_get(b, &v), DLOCK_EPROTO);
    assert_non_null(strstr(dlock_bucket_errmsg(b), "column"));
    dlock_bucket_free(b);
}

/* ---- guarded writes -------------------------------------------------------- */

static const struct {
    const char *name;
    make_fn make;
} hash_types[] = {
    {"reentrant", dlock_reentrant_new},
    {"fair", dlock_fair_new},
    {"fenced", dlock_fenced_new},
};

#define NHASH (sizeof(hash_types) / sizeof(hash_types[0]))

/* The stale-holder problem: A's lease runs out without A knowing, B takes
 * the lock and writes; A's guarded write is refused and B's value stands. */
static void guarded_write_after_expiry(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char lname[160], bname[160], buf[64];
    size_t i;

    for (i = 0; i < NHASH; i++) {
        dlock_guard ga = DLOCK_GUARD_INIT, gb = DLOCK_GUARD_INIT;
        dlock_rlock *a, *bl;
        dlock_bucket *va, *vb;

        /* one hash tag: a guarded write runs on one slot of a cluster */
        snprintf(lname, sizeof(lname), "{%s:%s}:lock", fx->name, hash_types[i].name);
        snprintf(bname, sizeof(bname), "{%s:%s}:value", fx->name, hash_types[i].name);
        a = make(fx, hash_types[i].make, fx->c1, lname);
        bl = make(fx, hash_types[i].make, fx->c2, lname);
        va = bucket(fx->c1, bname, dlock_codec_string());
        vb = bucket(fx->c2, bname, dlock_codec_string());
        ga.lock = a;
        gb.lock = bl;

        /* not held yet: refused */
        assert_int_equal(dlock_bucket_set_guarded(va, &ga, "A0", 0), DLOCK_ENOTOWNER);
        assert_non_null(strstr(dlock_bucket_errmsg(va), "not held"));
        assert_int_equal(dlock_lock(a, fx->lease_ms), 0);
        assert_int_equal(dlock_bucket_set_guarded(va, &ga, "A1", 0), 0);
        get_str(vb, buf, sizeof(buf));
        assert_string_equal(buf, "A1");
        /* B cannot write while A holds it */
        assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B0", 0), DLOCK_ENOTOWNER);

        dlock_fx_advance(fx, fx->is_mock ? fx->lease_ms : fx->lease_ms + 50);
        assert_int_equal(dlock_try_lock(bl, 0, fx->long_lease_ms), 0);
        assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B1", 0), 0);
        /* A still believes it holds the lock: its write must not land */
        assert_int_equal(dlock_bucket_set_guarded(va, &ga, "A2", 0), DLOCK_ENOTOWNER);
        get_str(va, buf, sizeof(buf));
        assert_string_equal(buf, "B1");
        assert_int_equal(dlock_unlock(a), DLOCK_ELOST);
        assert_int_equal(dlock_unlock(bl), 0);
        /* after the unlock, B's writes are refused too */
        assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B2", 0), DLOCK_ENOTOWNER);
        get_str(vb, buf, sizeof(buf));
        assert_string_equal(buf, "B1");
        dlock_bucket_free(va);
        dlock_bucket_free(vb);
    }
}

static void guarded_write_options(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = make(fx, dlock_reentrant_new, fx->c1, fx->name);
    dlock_rlock *rd = NULL;
    dlock_bucket *b;
    dlock_guard g = DLOCK_GUARD_INIT;
    char bname[160], buf[64];
    int64_t ttl = 0;

    snprintf(bname, sizeof(bname), "{%s}:value", fx->name); /* the lock's slot */
    b = bucket(fx->c2, bname, dlock_codec_string());

    /* an explicit owner: locked in one place, written for it elsewhere */
    assert_int_equal(dlock_lock_as(l, "worker-7", fx->long_lease_ms), 0);
    g.lock = l;
    g.owner = "worker-7";
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "w7", fx->lease_ms), 0);
    assert_int_equal(dlock_bucket_remain_ttl(b, &ttl), 0);
    assert_true(ttl > 0 && ttl <= fx->lease_ms);
    g.owner = "worker-8";
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "w8", 0), DLOCK_ENOTOWNER);
    /* the calling thread (owner1 on the lock's client) does not hold it */
    g.owner = NULL;
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "me", 0), DLOCK_ENOTOWNER);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "w7");
    /* the calling thread's hold, checked through a bucket of another client */
    assert_int_equal(dlock_unlock_as(l, "worker-7"), 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "me", 0), 0);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "me");

    /* bad guards */
    assert_int_equal(dlock_bucket_set_guarded(b, NULL, "x", 0), DLOCK_EINVAL);
    g.lock = NULL;
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL);
    g.lock = l;
    g.owner = "";
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL);
    g.owner = NULL;
    g.token = 5; /* a token needs a fenced lock */
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_bucket_errmsg(b), "fenced"));
    g.token = 0;
    assert_int_equal(dlock_bucket_set_guarded(b, &g, NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "x", -5), DLOCK_EINVAL);
    /* a lock type that cannot prove a hold with one field */
    assert_int_equal(dlock_rwlock_read_new(&rd, fx->c1, fx->name), 0);
    track(fx, rd);
    g.lock = rd;
    assert_int_equal(dlock_bucket_set_guarded(b, &g, "x", 0), DLOCK_ENOTSUP);
    get_str(b, buf, sizeof(buf));
    assert_string_equal(buf, "me");
    assert_int_equal(dlock_unlock(l), 0);
    dlock_bucket_free(b);
}

/* ---- the fenced lock --------------------------------------------------------- */

static void fenced_tokens_increase(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = make(fx, dlock_fenced_new, fx->c1, fx->name);
    dlock_rlock *l2 = make(fx, dlock_fenced_new, fx->c2, fx->name);
    dlock_rlock *plain = make(fx, dlock_reentrant_new, fx->c1, fx->name);
    int64_t t[8], cur = -1;
    char key[200], buf[64];
    int existed = 0;

    assert_int_equal(dlock_fenced_token(l1, &cur), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_fenced_lock(l1, &t[0], 0), 0);
    assert_true(t[0] >= 1);
    assert_int_equal(dlock_fenced_lock(l1, &t[1], 0), 0); /* re-entry */
    assert_true(t[1] > t[0]);
    assert_int_equal(dlock_fenced_try_lock(l1, &t[2], 0, 0), 0); /* re-entry */
    assert_true(t[2] > t[1]);
    assert_int_equal(dlock_fx_hold_count(l1), 3);
    assert_int_equal(dlock_fenced_token(l1, &cur), 0);
    assert_true(cur == t[2]);
    /* another client cannot get one while it is held */
    assert_int_equal(dlock_fenced_try_lock(l2, &t[3], 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_fenced_token(l2, &cur), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_unlock(l1), 0);

    /* across clients, and through the plain lock call */
    assert_int_equal(dlock_fenced_try_lock(l2, &t[3], 0, fx->long_lease_ms), 0);
    assert_true(t[3] > t[2]);
    assert_int_equal(dlock_unlock(l2), 0);
    assert_int_equal(dlock_lock(l2, 0), 0);
    assert_int_equal(dlock_fenced_token(l2, &t[4]), 0);
    assert_true(t[4] > t[3]);
    /* tokens survive a force unlock */
    assert_int_equal(dlock_force_unlock(l1, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fenced_lock_as(l1, &t[5], "other", fx->long_lease_ms), 0);
    assert_true(t[5] > t[4]);
    assert_int_equal(dlock_fenced_token_as(l1, &cur, "other"), 0);
    assert_true(cur == t[5]);
    assert_int_equal(dlock_fenced_try_lock_as(l2, &t[6], "other", 0, fx->long_lease_ms), 0);
    assert_true(t[6] > t[5]);

    /* Redisson's layout: the counter beside the reentrant lock's hash */
    snprintf(key, sizeof(key), "redisson_lock_token:{%s}", fx->name);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", key, 0, NULL, NULL);
    assert_int_equal(strtoll(buf, NULL, 10), t[6]);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", fx->name, 1, "other", NULL);
    assert_string_equal(buf, "2");

    /* the token calls want a fenced lock, and valid arguments */
    assert_int_equal(dlock_fenced_lock(plain, &cur, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_fenced_token(plain, &cur), DLOCK_EINVAL);
    assert_int_equal(dlock_fenced_lock(NULL, &cur, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_fenced_try_lock(l1, &cur, -1, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_fenced_lock(l1, &cur, -1), DLOCK_EINVAL);
    assert_int_equal(dlock_fenced_lock_as(l1, &cur, "", 0), DLOCK_EINVAL);
    assert_int_equal(dlock_fenced_token(l1, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_force_unlock(l1, NULL), 0);
}

/* An acquisition that fails hands out no token (issue 32): the script
 * took the token (INCR) before finding that the owner's hold count is not
 * an integer (planted by hand), so a failed call moved the counter. Now it
 * checks first, and the store is as it was. */
static void fenced_failed_acquire_takes_no_token(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = make(fx, dlock_fenced_new, fx->c1, fx->name);
    char key[200], buf[64], before[512], after[512];
    const char *keys[] = {fx->name, key, NULL};
    int64_t token = -1;

    snprintf(key, sizeof(key), strchr(fx->name, '{') ? "redisson_lock_token:%s"
                                                      : "redisson_lock_token:{%s}", fx->name);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", key, 1, "5", NULL);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, fx->owner1, "x");
    dlock_fx_keys_dump(fx->c2, keys, before, sizeof(before));
    assert_int_equal(dlock_fenced_try_lock(l, &token, 0, fx->lease_ms), DLOCK_EPROTO);
    printf("  [%s] %s\n", fx->backend, dlock_errmsg(l));
    assert_int_equal(token, -1);
    assert_int_equal(dlock_try_lock(l, 0, fx->lease_ms), DLOCK_EPROTO);
    assert_int_equal(dlock_unlock(l), DLOCK_EPROTO);
    dlock_fx_keys_dump(fx->c2, keys, after, sizeof(after));
    assert_string_equal(after, before);
    /* once the name is free, the next token follows the counter */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "del", fx->name, 0, NULL, NULL);
    assert_int_equal(dlock_fenced_try_lock(l, &token, 0, fx->lease_ms), 0);
    assert_int_equal(token, 6);
    assert_int_equal(dlock_unlock(l), 0);
}

/* Tokens taken by 4 threads on two clients: all different, and each
 * thread's increasing. */
#define NTOK_THREADS 4
#define NTOK 15

typedef struct tokener {
    dlock_rlock *l;
    int64_t tokens[NTOK];
    int rc;
    dlock_fx_thread t;
} tokener;

static void tokener_main(void *arg)
{
    tokener *k = arg;
    int i;

    for (i = 0; i < NTOK; i++) {
        k->rc = dlock_fenced_lock(k->l, &k->tokens[i], 0);
        if (k->rc != 0)
            return;
        k->rc = dlock_unlock(k->l);
        if (k->rc != 0)
            return;
    }
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void fenced_tokens_unique_under_contention(void **state)
{
    dlock_fx *fx = BEGIN(state);
    tokener k[NTOK_THREADS];
    int64_t all[NTOK_THREADS * NTOK];
    int i, j, joined = 0;

    memset(k, 0, sizeof(k));
    for (i = 0; i < NTOK_THREADS; i++) {
        k[i].l = make(fx, dlock_fenced_new, i % 2 ? fx->c2 : fx->c1, fx->name);
        k[i].rc = 1;
    }
    for (i = 0; i < NTOK_THREADS; i++)
        dlock_fx_start(&k[i].t, tokener_main, &k[i]);
    for (i = 0; i < NTOK_THREADS; i++)
        joined |= dlock_fx_join(fx, &k[i].t, 60000, k[0].l);
    assert_int_equal(joined, 0);
    for (i = 0; i < NTOK_THREADS; i++) {
        assert_int_equal(k[i].rc, 0);
        for (j = 0; j < NTOK; j++) {
            if (j > 0)
                assert_true(k[i].tokens[j] > k[i].tokens[j - 1]);
            all[i * NTOK + j] = k[i].tokens[j];
        }
    }
    qsort(all, NTOK_THREADS * NTOK, sizeof(all[0]), cmp_i64);
    for (i = 1; i < NTOK_THREADS * NTOK; i++)
        assert_true(all[i] > all[i - 1]);
    /* nothing was handed out but these */
    assert_true(all[0] == 1 && all[NTOK_THREADS * NTOK - 1] == NTOK_THREADS * NTOK);
}

static void fenced_stale_token_refused(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *a = make(fx, dlock_fenced_new, fx->c1, fx->name);
    dlock_rlock *bl = make(fx, dlock_fenced_new, fx->c2, fx->name);
    dlock_guard ga = DLOCK_GUARD_INIT, gb = DLOCK_GUARD_INIT;
    dlock_bucket *va, *vb;
    char bname[160], buf[64];
    int64_t ta = 0, tb = 0, tb2 = 0;

    snprintf(bname, sizeof(bname), "{%s}:value", fx->name); /* the lock's slot */
    va = bucket(fx->c1, bname, dlock_codec_string());
    vb = bucket(fx->c2, bname, dlock_codec_string());
    ga.lock = a;
    gb.lock = bl;

    assert_int_equal(dlock_fenced_lock(a, &ta, fx->lease_ms), 0);
    ga.token = ta;
    assert_int_equal(dlock_bucket_set_guarded(va, &ga, "A1", 0), 0);
    dlock_fx_advance(fx, fx->is_mock ? fx->lease_ms : fx->lease_ms + 50);
    assert_int_equal(dlock_fenced_lock(bl, &tb, fx->long_lease_ms), 0);
    assert_true(tb > ta);
    gb.token = tb;
    assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B1", 0), 0);
    /* A's token is stale: refused, and it says so */
    assert_int_equal(dlock_bucket_set_guarded(va, &ga, "A2", 0), DLOCK_ELOST);
    assert_non_null(strstr(dlock_bucket_errmsg(va), "stale"));
    get_str(va, buf, sizeof(buf));
    assert_string_equal(buf, "B1");

    /* B re-enters: only its newest token is current */
    assert_int_equal(dlock_fenced_lock(bl, &tb2, fx->long_lease_ms), 0);
    assert_true(tb2 > tb);
    assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B2", 0), DLOCK_ELOST);
    gb.token = tb2;
    assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B3", 0), 0);
    /* a token never handed out, a negative one */
    gb.token = tb2 + 1;
    assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B4", 0), DLOCK_EINVAL);
    gb.token = -1;
    assert_int_equal(dlock_bucket_set_guarded(vb, &gb, "B5", 0), DLOCK_EINVAL);
    /* the current token of someone who does not hold the lock */
    ga.token = tb2;
    assert_int_equal(dlock_bucket_set_guarded(va, &ga, "A3", 0), DLOCK_ENOTOWNER);
    get_str(va, buf, sizeof(buf));
    assert_string_equal(buf, "B3");
    assert_int_equal(dlock_unlock(bl), 0);
    assert_int_equal(dlock_unlock(bl), 0);
    dlock_bucket_free(va);
    dlock_bucket_free(vb);
}

/* ---- the JSON configuration ------------------------------------------------- */

static void config_valid(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char path[] = "/tmp/dlock-config-XXXXXX", err[256] = "x", url[256];
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    int64_t ttl = 0;
    FILE *f;
    int fd;

    snprintf(url, sizeof(url), "%s", fx->is_mock ? "mock:" : dlock_fx_redis_url());
    fd = mkstemp(path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "{\n  \"url\": \"%s\",\n  \"connect_timeout_ms\": 1500,\n"
               "  \"command_timeout_ms\": 1500,\n  \"pool_size\": 3,\n"
               "  \"reconnect_min_ms\": 10,\n  \"reconnect_max_ms\": 500,\n"
               "  \"watchdog_timeout_ms\": 45000,\n  \"max_hold_ms\": 0,\n"
               "  \"fair_wait_slack_ms\": 1000\n}\n", url);
    fclose(f);
    assert_int_equal(dlock_client_from_json_file(&c, path, err, sizeof(err)), 0);
    unlink(path);
    assert_non_null(c);
    /* it works, and the watchdog timeout is the file's */
    assert_int_equal(dlock_reentrant_new(&l, c, fx->name), 0);
    assert_int_equal(dlock_lock(l, 0), 0);
    assert_int_equal(dlock_remain_ttl(l, &ttl), 0);
    assert_true(ttl > 40000 && ttl <= 45000);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_rlock_free(l);
    dlock_client_free(c);

    /* from a string, only the URL */
    snprintf(path, sizeof(path), "{\"url\":\"%.14s\"}", "mock:");
    assert_int_equal(dlock_client_from_json_string(&c, path, err, sizeof(err)), 0);
    assert_non_null(c);
    dlock_client_free(c);
}

/* Each bad configuration gives DLOCK_EINVAL and a detail naming what and
 * where ("json:<line>:<column>: ..."), never quoting the password some of
 * them hold (hunter2). */
static void config_bad(const char *text, const char *want1, const char *want2)
{
    dlock_client *c = (dlock_client *)1;
    char err[256] = "";
    int rc = dlock_client_from_json_string(&c, text, err, sizeof(err));

    if (rc != DLOCK_EINVAL || c != NULL || !strstr(err, want1) ||
        (want2 && !strstr(err, want2)) || strstr(err, "hunter")) {
        fprintf(stderr, "config %s: rc %s, detail \"%s\", wanted \"%s\" and \"%s\"\n",
                text, dlock_errname(rc), err, want1, want2 ? want2 : "");
        dlock_client_free(c != (dlock_client *)1 ? c : NULL);
        fail();
    }
}

static void config_errors(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = (dlock_client *)1;
    char err[256] = "";

    (void)fx;
    /* unknown field: at its key's line and column, not quoted (a broken
     * string can make a field name of a piece of a secret), the nearest
     * field named */
    config_bad("{\n  \"url\": \"mock:\",\n  \"poolsize\": 4\n}", "json:3:3:",
               "unknown field (did you mean \"pool_size\"?)");
    /* a syntax error: where and what kind, no token quoted (the issue's
     * broken escape in a URL with a password) */
    config_bad("{\"url\": \"redis://:hunter2\\q@h\"}", "json:1:27:", "invalid escape");
    config_bad("{\"url\": \"mock:\",\n \"sentinel_password\": \"hunter2\tx\"}", "json:2:",
               "control character inside a string");
    /* the key's name inside a string or a nested object is not the key */
    config_bad("{\"url\": \"x\\\"pool_size\\\": 1\",\n \"pool_size\": \"8\"}", "json:2:2:",
               "\"pool_size\": expected an integer");
    config_bad("{\"pool_size\": {\"pool_size\": 1}}", "json:1:2:", "got an object");
    /* an empty text, or one ending at a line's start: positions count from
     * 1 (Jansson says column 0 there) */
    config_bad("", "json:1:1: premature end of input", NULL);
    config_bad("{\n", "json:2:1: premature end of input", NULL);
    config_bad("{\"url\": \"mock:\",\n\t\"pool_size\": \"8\"}", "json:2:2:",
               "\"pool_size\": expected an integer, got a string");
    config_bad("{\"url\": \"mock:\", \"command_timeout_ms\": 2.5}", "json:1:18:",
               "\"command_timeout_ms\": expected an integer, got a real number");
    config_bad("{\"url\": \"mock:\", \"watchdog_timeout_ms\": true}",
               "\"watchdog_timeout_ms\"", "got a boolean");
    config_bad("{\"url\": \"mock:\", \"max_hold_ms\": null}", "\"max_hold_ms\"",
               "got null");
    config_bad("{\"url\": \"mock:\", \"connect_timeout_ms\": -1}",
               "\"connect_timeout_ms\"", "out of range");
    config_bad("{\"url\": \"mock:\", \"pool_size\": 0}", "\"pool_size\"", "out of range");
    config_bad("{\"url\": \"mock:\", \"pool_size\": 99999999999}", "\"pool_size\"",
               "out of range");
    config_bad("{\"url\": \"mock:\", \"watchdog_timeout_ms\": 2}",
               "\"watchdog_timeout_ms\"", "out of range");
    config_bad("{\"url\": 5}", "json:1:2:", "\"url\": expected a string");
    config_bad("{\"pool_size\": 2}", "\"url\" is required", NULL);
    config_bad("{\"url\": \"mock:\", \"url\": \"mock:\"}", "json:1:", "field \"url\" given twice");
    config_bad("{\"url\": \"mock:\",\n \"pool_size\": }", "json:2:", NULL);
    config_bad("[\"url\"]", "JSON object", NULL);
    config_bad("", "json:", NULL);
    config_bad("{\"url\": \"ftp://x\"}", "unknown URL scheme", NULL);
    /* the backend's own checks name the option too */
    config_bad("{\"url\": \"redis://127.0.0.1:1\", \"reconnect_min_ms\": 100, "
               "\"reconnect_max_ms\": 10}", "reconnect_max_ms", NULL);

    assert_int_equal(dlock_client_from_json_file(&c, "/nonexistent/dlock.json", err,
                                                 sizeof(err)), DLOCK_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "/nonexistent/dlock.json: "));
    assert_int_equal(dlock_client_from_json_string(NULL, "{}", NULL, 0), DLOCK_EINVAL);
    assert_int_equal(dlock_client_from_json_string(&c, NULL, err, sizeof(err)),
                     DLOCK_EINVAL);
}

/* ---- introspection ----------------------------------------------------------- */

/* Whether two state documents read one after the other agree: equal but
 * for the times left, which run on between the reads (on Redis). */
static int same_state(json_t *a, json_t *b)
{
    const char *key;
    json_t *v;
    size_t i;

    if (json_is_object(a) && json_is_object(b)) {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        json_object_foreach(a, key, v) {
            json_t *w = json_object_get(b, key);
            if (strcmp(key, "ttl_ms") == 0 || strcmp(key, "remaining_ms") == 0) {
                if (!json_is_integer(v) || !json_is_integer(w))
                    return 0;
            } else if (!w || !same_state(v, w)) {
                return 0;
            }
        }
        return 1;
    }
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return 0;
        for (i = 0; i < json_array_size(a); i++)
            if (!same_state(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    return json_equal(a, b);
}

/* The text form (read second) is the same document through the JSON
 * codec. Takes text. */
static void check_text(json_t *doc, char *text)
{
    json_t *again = NULL;

    assert_non_null(doc);
    assert_true(json_is_object(doc));
    assert_non_null(text);
    assert_int_equal(dlock_codec_decode(dlock_codec_json(), (void **)&again, text,
                                        strlen(text), NULL, 0), 0);
    assert_true(same_state(doc, again));
    json_decref(again);
    free(text);
}

static json_t *state_of(dlock_rlock *l)
{
    json_t *doc = NULL;
    char *text = NULL;

    assert_int_equal(dlock_rlock_state(l, &doc), 0);
    assert_int_equal(dlock_rlock_state_text(l, &text), 0);
    check_text(doc, text);
    return doc;
}

/* state_of for the objects that are not locks: kind is the calls' prefix
 * (dlock_semaphore, dlock_latch, ...). */
#define OBJECT_STATE(kind, obj, doc)                                     \
    do {                                                                 \
        char *text_ = NULL;                                              \
        (doc) = NULL;                                                    \
        assert_int_equal(kind##_state((obj), &(doc)), 0);                \
        assert_int_equal(kind##_state_text((obj), &text_), 0);           \
        check_text((doc), text_);                                        \
    } while (0)

static json_int_t int_of(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static const char *str_of(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    assert_true(json_is_string(v));
    return json_string_value(v);
}

/* The entry of arr whose "owner" (or "id") is who; fails if none. */
static json_t *entry(json_t *arr, const char *field, const char *who)
{
    size_t i;

    for (i = 0; i < json_array_size(arr); i++)
        if (strcmp(str_of(json_array_get(arr, i), field), who) == 0)
            return json_array_get(arr, i);
    fprintf(stderr, "no %s \"%s\" in the state\n", field, who);
    fail();
    return NULL;
}

/* The common fields of a lock nobody holds. */
static void check_free(json_t *doc, const char *type, const char *name)
{
    assert_string_equal(str_of(doc, "type"), type);
    assert_string_equal(str_of(doc, "name"), name);
    assert_true(json_is_false(json_object_get(doc, "locked")));
    assert_int_equal(int_of(doc, "ttl_ms"), -2);
    assert_int_equal(json_array_size(json_object_get(doc, "holders")), 0);
}

/* A lease left that is plausible for a hold taken with lease_ms. */
static void check_lease(json_t *obj, int64_t lease_ms)
{
    json_int_t ttl = int_of(obj, "ttl_ms");

    assert_true(ttl > 0 && ttl <= lease_ms);
}

static void check_holder(json_t *doc, size_t i, const char *owner, json_int_t holds)
{
    json_t *h = json_array_get(json_object_get(doc, "holders"), i);

    assert_non_null(h);
    assert_string_equal(json_string_value(json_object_get(h, "owner")), owner);
    assert_int_equal(json_integer_value(json_object_get(h, "holds")), holds);
}

static void inspect_hash_locks(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160];
    size_t i;

    for (i = 0; i < NHASH; i++) {
        dlock_rlock *l;
        json_t *doc;
        json_int_t ttl;

        snprintf(name, sizeof(name), "%s:%s", fx->name, hash_types[i].name);
        l = make(fx, hash_types[i].make, fx->c1, name);
        doc = state_of(l);
        assert_string_equal(json_string_value(json_object_get(doc, "type")),
                            hash_types[i].name);
        assert_string_equal(json_string_value(json_object_get(doc, "name")), name);
        assert_true(json_is_false(json_object_get(doc, "locked")));
        assert_int_equal(json_integer_value(json_object_get(doc, "ttl_ms")), -2);
        assert_int_equal(json_array_size(json_object_get(doc, "holders")), 0);
        json_decref(doc);

        assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
        assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
        doc = state_of(l);
        assert_true(json_is_true(json_object_get(doc, "locked")));
        ttl = json_integer_value(json_object_get(doc, "ttl_ms"));
        assert_true(ttl > 0 && ttl <= fx->long_lease_ms);
        assert_int_equal(json_array_size(json_object_get(doc, "holders")), 1);
        check_holder(doc, 0, fx->owner1, 2);
        assert_true(json_integer_value(json_object_get(
                        json_array_get(json_object_get(doc, "holders"), 0), "ttl_ms")) > 0);
        if (strcmp(hash_types[i].name, "fenced") == 0)
            assert_int_equal(json_integer_value(json_object_get(doc, "token")), 2);
        else
            assert_null(json_object_get(doc, "token"));
        if (strcmp(hash_types[i].name, "fair") == 0)
            assert_int_equal(json_array_size(json_object_get(doc, "queue")), 0);
        else
            assert_null(json_object_get(doc, "queue"));
        json_decref(doc);
        assert_int_equal(dlock_unlock(l), 0);
        assert_int_equal(dlock_unlock(l), 0);
    }
}

/* The fair lock's queue, as a waiter would have left it: in order, with
 * each deadline and the time left until it. */
static void inspect_fair_queue(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = make(fx, dlock_fair_new, fx->c1, fx->name);
    dlock_clock *clk = dlock_backend_clock(dlock_client_backend(fx->c1));
    char queue[200], deadlines[200], d1[32], d2[32], buf[64];
    int64_t now = dlock_clock_wall(clk);
    json_t *doc, *q, *w;
    json_int_t left;

    snprintf(queue, sizeof(queue), "redisson_lock_queue:{%s}", fx->name);
    snprintf(deadlines, sizeof(deadlines), "redisson_lock_timeout:{%s}", fx->name);
    snprintf(d1, sizeof(d1), "%" PRId64, now + 50000);
    snprintf(d2, sizeof(d2), "%" PRId64, now + 90000);
    assert_int_equal(dlock_lock_as(l, "holder", fx->long_lease_ms), 0);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "rpush", queue, 2, "first", "second");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "zadd", deadlines, 2, d1, "first");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "zadd", deadlines, 2, d2, "second");

    doc = state_of(l);
    check_holder(doc, 0, "holder", 1);
    q = json_object_get(doc, "queue");
    assert_int_equal(json_array_size(q), 2);
    w = json_array_get(q, 0);
    assert_string_equal(json_string_value(json_object_get(w, "owner")), "first");
    assert_true(json_integer_value(json_object_get(w, "deadline_ms")) == now + 50000);
    left = json_integer_value(json_object_get(w, "remaining_ms"));
    assert_true(left <= 50000 && left > 40000);
    w = json_array_get(q, 1);
    assert_string_equal(json_string_value(json_object_get(w, "owner")), "second");
    assert_true(json_integer_value(json_object_get(w, "deadline_ms")) == now + 90000);
    json_decref(doc);
    /* introspection changed nothing */
    assert_int_equal(dlock_fx_list_len(fx->c2, queue), 2);
    assert_int_equal(dlock_force_unlock(l, NULL), 0);
}

/* A lock type without a state slot; and a table of a version this library
 * does not know. */
static const dlock_rlock_methods v1_methods = {.version = 1, .type = "v1"};
static const dlock_rlock_methods newer_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION + 1, .type = "newer"};

static void inspect_odd_and_unsupported(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[160], owner[] = "bad\xff" "owner";
    dlock_rlock *l, *v1;
    dlock_semaphore *s = NULL;
    dlock_permit_semaphore *p = NULL;
    dlock_latch *latch = NULL;
    json_t *doc = (json_t *)1;
    char *text = (char *)1;
    const char *shown;

    /* bytes that are not UTF-8 show as U+FFFD, and the JSON stays valid */
    snprintf(name, sizeof(name), "%s:\xc3", fx->name);
    l = make(fx, dlock_reentrant_new, fx->c1, name);
    assert_int_equal(dlock_lock_as(l, owner, fx->long_lease_ms), 0);
    doc = state_of(l);
    shown = json_string_value(json_object_get(json_array_get(
        json_object_get(doc, "holders"), 0), "owner"));
    assert_string_equal(shown, "bad\xef\xbf\xbdowner");
    assert_non_null(strstr(json_string_value(json_object_get(doc, "name")),
                           ":\xef\xbf\xbd"));
    json_decref(doc);
    assert_int_equal(dlock_unlock_as(l, owner), 0);

    /* every built-in lock type reports; a type without the slot cannot */
    v1 = calloc(1, sizeof(*v1));
    assert_non_null(v1);
    assert_int_equal(dlock_rlock_init(v1, &newer_methods, fx->c1, fx->name), DLOCK_EINVAL);
    assert_null(v1->methods);
    assert_int_equal(dlock_rlock_init(v1, &v1_methods, fx->c1, fx->name), 0);
    track(fx, v1);
    doc = (json_t *)1;
    assert_int_equal(dlock_rlock_state(v1, &doc), DLOCK_ENOTSUP);
    assert_null(doc);
    assert_int_equal(dlock_rlock_state_text(v1, &text), DLOCK_ENOTSUP);
    assert_null(text);
    assert_int_equal(dlock_rlock_state(NULL, &doc), DLOCK_EINVAL);
    assert_int_equal(dlock_rlock_state(l, NULL), DLOCK_EINVAL);

    /* the objects that are not locks check as their other calls do */
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, fx->name), 0);
    assert_int_equal(dlock_permit_semaphore_new(&p, fx->c1, fx->name), 0);
    assert_int_equal(dlock_latch_new(&latch, fx->c1, fx->name), 0);
    doc = (json_t *)1;
    assert_int_equal(dlock_semaphore_state(NULL, &doc), DLOCK_EINVAL);
    assert_null(doc);
    text = (char *)1;
    assert_int_equal(dlock_permit_semaphore_state_text(NULL, &text), DLOCK_EINVAL);
    assert_null(text);
    assert_int_equal(dlock_latch_state(NULL, &doc), DLOCK_EINVAL);
    assert_int_equal(dlock_semaphore_state(s, NULL), DLOCK_EINVAL);
    assert_non_null(strstr(dlock_semaphore_errmsg(s), "out is NULL"));
    assert_int_equal(dlock_semaphore_state_text(s, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_permit_semaphore_state(p, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_latch_state_text(latch, NULL), DLOCK_EINVAL);

    /* another kind of value under the name: no document, from any type */
    dlock_fx_call_str(fx->c2, name, sizeof(name), "hset", fx->name, 2, "f", "1");
    assert_int_equal(dlock_semaphore_state(s, &doc), DLOCK_EPROTO);
    assert_null(doc);
    assert_int_equal(dlock_permit_semaphore_state_text(p, &text), DLOCK_EPROTO);
    assert_null(text);
    assert_int_equal(dlock_latch_state(latch, &doc), DLOCK_EPROTO);
    l = make(fx, dlock_semaphore_lock_new, fx->c1, fx->name);
    assert_int_equal(dlock_rlock_state(l, &doc), DLOCK_EPROTO);
    dlock_fx_call_str(fx->c2, name, sizeof(name), "del", fx->name, 0, NULL, NULL);
    dlock_fx_call_str(fx->c2, name, sizeof(name), "set", fx->name, 1, "x", NULL);
    l = make(fx, dlock_fair_new, fx->c1, fx->name);
    assert_int_equal(dlock_rlock_state(l, &doc), DLOCK_EPROTO);
    assert_null(doc);
    l = make(fx, dlock_rwlock_write_new, fx->c1, fx->name);
    assert_int_equal(dlock_rlock_state(l, &doc), DLOCK_EPROTO);
    assert_null(doc);
    dlock_semaphore_free(s);
    dlock_permit_semaphore_free(p);
    dlock_latch_free(latch);
}

/* The read-write lock from both halves: the halves' own common fields, and
 * the whole lock's mode, readers and writer, as the test built them. */
static void inspect_rwlock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *rd = make(fx, dlock_rwlock_read_new, fx->c1, fx->name);
    dlock_rlock *wr = make(fx, dlock_rwlock_write_new, fx->c1, fx->name);
    dlock_rlock *rd2 = make(fx, dlock_rwlock_read_new, fx->c2, fx->name);
    json_t *doc, *readers, *h;
    size_t i;

    /* absent: both halves free, no mode, nobody */
    for (i = 0; i < 2; i++) {
        doc = state_of(i == 0 ? rd : wr);
        check_free(doc, i == 0 ? "rwlock_read" : "rwlock_write", fx->name);
        assert_true(json_is_null(json_object_get(doc, "mode")));
        assert_int_equal(json_array_size(json_object_get(doc, "readers")), 0);
        assert_true(json_is_null(json_object_get(doc, "writer")));
        json_decref(doc);
    }

    /* read mode: two readers (one on the other client), one with a short
     * lease */
    assert_int_equal(dlock_lock(rd, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(rd, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock_as(rd2, "reader-b", fx->lease_ms), 0);
    doc = state_of(rd);
    assert_string_equal(str_of(doc, "mode"), "read");
    assert_true(json_is_true(json_object_get(doc, "locked")));
    check_lease(doc, fx->long_lease_ms);
    readers = json_object_get(doc, "readers");
    assert_int_equal(json_array_size(readers), 2);
    /* listed by owner id */
    assert_true(strcmp(str_of(json_array_get(readers, 0), "owner"),
                       str_of(json_array_get(readers, 1), "owner")) < 0);
    h = entry(readers, "owner", fx->owner1);
    assert_int_equal(int_of(h, "holds"), 2);
    check_lease(h, fx->long_lease_ms);
    h = entry(readers, "owner", "reader-b");
    assert_int_equal(int_of(h, "holds"), 1);
    check_lease(h, fx->lease_ms);
    /* the read half's holders are the readers */
    assert_true(json_equal(json_object_get(doc, "holders"), readers));
    assert_true(json_is_null(json_object_get(doc, "writer")));
    json_decref(doc);

    doc = state_of(wr);
    check_free(doc, "rwlock_write", fx->name);
    assert_string_equal(str_of(doc, "mode"), "read");
    assert_int_equal(json_array_size(json_object_get(doc, "readers")), 2);
    json_decref(doc);

    /* a reader whose lease ran out holds nothing and is not listed */
    dlock_fx_advance(fx, fx->lease_ms + 50);
    doc = state_of(rd);
    readers = json_object_get(doc, "readers");
    assert_int_equal(json_array_size(readers), 1);
    assert_string_equal(str_of(json_array_get(readers, 0), "owner"), fx->owner1);
    json_decref(doc);
    assert_int_equal(dlock_unlock(rd), 0);
    assert_int_equal(dlock_unlock(rd), 0);

    /* write mode, and a downgrade: the writer reads too */
    assert_int_equal(dlock_lock(wr, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(wr, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(rd, fx->long_lease_ms), 0);
    for (i = 0; i < 2; i++) {
        doc = state_of(i == 0 ? rd : wr);
        assert_string_equal(str_of(doc, "mode"), "write");
        h = json_object_get(doc, "writer");
        assert_string_equal(str_of(h, "owner"), fx->owner1);
        assert_int_equal(int_of(h, "holds"), 2);
        check_lease(h, fx->long_lease_ms);
        readers = json_object_get(doc, "readers");
        assert_int_equal(json_array_size(readers), 1);
        assert_int_equal(int_of(entry(readers, "owner", fx->owner1), "holds"), 1);
        assert_true(json_is_true(json_object_get(doc, "locked")));
        check_lease(doc, fx->long_lease_ms);
        /* each half's holders: its own holds */
        h = json_array_get(json_object_get(doc, "holders"), 0);
        assert_int_equal(json_array_size(json_object_get(doc, "holders")), 1);
        assert_int_equal(int_of(h, "holds"), i == 0 ? 1 : 2);
        json_decref(doc);
    }
    assert_int_equal(dlock_unlock(rd), 0);
    assert_int_equal(dlock_unlock(wr), 0);
    assert_int_equal(dlock_unlock(wr), 0);
    doc = state_of(wr);
    assert_true(json_is_null(json_object_get(doc, "mode")));
    json_decref(doc);
}

/* The semaphore as a lock: the holders with their own leases, and the
 * permits as the next acquirer finds them. */
static void inspect_semaphore_lock(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l = make(fx, dlock_semaphore_lock_new, fx->c1, fx->name);
    dlock_rlock *l2 = make(fx, dlock_semaphore_lock_new, fx->c2, fx->name);
    dlock_semaphore *s = NULL;
    json_t *doc, *holders;
    int64_t avail;

    doc = state_of(l);
    check_free(doc, "semaphore", fx->name);
    assert_int_equal(int_of(doc, "permits"), 0);
    json_decref(doc);

    assert_int_equal(dlock_semaphore_new(&s, fx->c1, fx->name), 0);
    assert_int_equal(dlock_semaphore_try_set_permits(s, NULL, 3), 0);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock_as(l2, "other", fx->lease_ms), 0);
    doc = state_of(l);
    assert_true(json_is_true(json_object_get(doc, "locked")));
    check_lease(doc, fx->long_lease_ms);
    assert_int_equal(int_of(doc, "permits"), 1);
    holders = json_object_get(doc, "holders");
    assert_int_equal(json_array_size(holders), 2);
    assert_int_equal(int_of(entry(holders, "owner", fx->owner1), "holds"), 2);
    check_lease(entry(holders, "owner", fx->owner1), fx->long_lease_ms);
    assert_int_equal(int_of(entry(holders, "owner", "other"), "holds"), 1);
    check_lease(entry(holders, "owner", "other"), fx->lease_ms);
    json_decref(doc);

    /* an ended hold: gone from the holders, its permit counted as free,
     * and nothing given back in the store (introspection only reads) */
    dlock_fx_advance(fx, fx->lease_ms + 50);
    doc = state_of(l2);
    holders = json_object_get(doc, "holders");
    assert_int_equal(json_array_size(holders), 1);
    assert_string_equal(str_of(json_array_get(holders, 0), "owner"), fx->owner1);
    assert_int_equal(int_of(doc, "permits"), 2);
    json_decref(doc);
    assert_int_equal(dlock_semaphore_available_permits(s, &avail), 0);
    assert_int_equal(avail, 1);

    assert_int_equal(dlock_unlock(l), 0);
    assert_int_equal(dlock_unlock(l), 0);
    dlock_semaphore_free(s);
}

/* The plain semaphore and the latch: the count as stored. */
static void inspect_semaphore_and_latch(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char sname[160], lname[160];
    dlock_semaphore *s = NULL;
    dlock_latch *latch = NULL;
    json_t *doc;

    snprintf(sname, sizeof(sname), "%s:sem", fx->name);
    snprintf(lname, sizeof(lname), "%s:latch", fx->name);
    assert_int_equal(dlock_semaphore_new(&s, fx->c1, sname), 0);
    assert_int_equal(dlock_latch_new(&latch, fx->c1, lname), 0);

    OBJECT_STATE(dlock_semaphore, s, doc);
    assert_string_equal(str_of(doc, "type"), "semaphore");
    assert_string_equal(str_of(doc, "name"), sname);
    assert_int_equal(int_of(doc, "permits"), 0);
    assert_int_equal(int_of(doc, "ttl_ms"), -2);
    assert_int_equal(json_object_size(doc), 4);
    json_decref(doc);
    assert_int_equal(dlock_semaphore_try_set_permits_ttl(s, NULL, 5, fx->long_lease_ms),
                     0);
    assert_int_equal(dlock_semaphore_try_acquire(s, 2, 0), 0);
    OBJECT_STATE(dlock_semaphore, s, doc);
    assert_int_equal(int_of(doc, "permits"), 3);
    check_lease(doc, fx->long_lease_ms);
    json_decref(doc);

    OBJECT_STATE(dlock_latch, latch, doc);
    assert_string_equal(str_of(doc, "type"), "latch");
    assert_string_equal(str_of(doc, "name"), lname);
    assert_int_equal(int_of(doc, "count"), 0);
    assert_int_equal(json_object_size(doc), 3);
    json_decref(doc);
    assert_int_equal(dlock_latch_try_set_count(latch, NULL, 3), 0);
    assert_int_equal(dlock_latch_count_down(latch), 0);
    OBJECT_STATE(dlock_latch, latch, doc);
    assert_int_equal(int_of(doc, "count"), 2);
    json_decref(doc);

    dlock_semaphore_free(s);
    dlock_latch_free(latch);
}

/* The permit-expirable semaphore: the counts and the running permits by id,
 * the first to end first. */
static void inspect_permit_semaphore(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_permit_semaphore *p = NULL;
    char **long_ids = NULL, **short_ids = NULL;
    json_t *doc, *permits;

    assert_int_equal(dlock_permit_semaphore_new(&p, fx->c1, fx->name), 0);
    OBJECT_STATE(dlock_permit_semaphore, p, doc);
    assert_string_equal(str_of(doc, "type"), "permit_semaphore");
    assert_string_equal(str_of(doc, "name"), fx->name);
    assert_int_equal(int_of(doc, "available"), 0);
    assert_int_equal(int_of(doc, "acquired"), 0);
    assert_int_equal(int_of(doc, "total"), 0);
    assert_int_equal(json_array_size(json_object_get(doc, "permits")), 0);
    json_decref(doc);

    assert_int_equal(dlock_permit_semaphore_set_permits(p, 4), 0);
    assert_int_equal(dlock_permit_semaphore_try_acquire(p, &long_ids, 2, 0,
                                                        fx->long_lease_ms), 0);
    assert_int_equal(dlock_permit_semaphore_try_acquire(p, &short_ids, 1, 0,
                                                        fx->lease_ms), 0);
    OBJECT_STATE(dlock_permit_semaphore, p, doc);
    assert_int_equal(int_of(doc, "available"), 1);
    assert_int_equal(int_of(doc, "acquired"), 3);
    assert_int_equal(int_of(doc, "total"), 4);
    permits = json_object_get(doc, "permits");
    assert_int_equal(json_array_size(permits), 3);
    assert_string_equal(str_of(json_array_get(permits, 0), "id"), short_ids[0]);
    check_lease(json_array_get(permits, 0), fx->lease_ms);
    check_lease(entry(permits, "id", long_ids[0]), fx->long_lease_ms);
    check_lease(entry(permits, "id", long_ids[1]), fx->long_lease_ms);
    json_decref(doc);

    /* the short lease ends: its permit counts as available again */
    dlock_fx_advance(fx, fx->lease_ms + 50);
    OBJECT_STATE(dlock_permit_semaphore, p, doc);
    assert_int_equal(int_of(doc, "available"), 2);
    assert_int_equal(int_of(doc, "acquired"), 2);
    assert_int_equal(int_of(doc, "total"), 4);
    permits = json_object_get(doc, "permits");
    assert_int_equal(json_array_size(permits), 2);
    entry(permits, "id", long_ids[0]);
    entry(permits, "id", long_ids[1]);
    json_decref(doc);

    assert_int_equal(dlock_permit_semaphore_release_all(
                         p, NULL, (const char *const *)long_ids, 2), 0);
    dlock_permit_ids_free(long_ids);
    dlock_permit_ids_free(short_ids);
    dlock_permit_semaphore_free(p);
}

/* ---- the suite ------------------------------------------------------------------ */

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest codec_cases[] = {
    cmocka_unit_test(codec_string),
    cmocka_unit_test(codec_bytes),
    cmocka_unit_test(codec_long),
    cmocka_unit_test(codec_json),
    cmocka_unit_test(codec_bad_arguments),
};

static const struct CMUnitTest values_cases[] = {
    CASE(bucket_each_codec),
    CASE(bucket_operations),
    CASE(bucket_ttl_expiry),
    CASE(bucket_cas_race),
    CASE(bucket_bad_input),
    CASE(guarded_write_after_expiry),
    CASE(guarded_write_options),
    CASE(fenced_tokens_increase),
    CASE(fenced_failed_acquire_takes_no_token),
    CASE(fenced_tokens_unique_under_contention),
    CASE(fenced_stale_token_refused),
    CASE(config_valid),
    CASE(config_errors),
    CASE(inspect_hash_locks),
    CASE(inspect_fair_queue),
    CASE(inspect_rwlock),
    CASE(inspect_semaphore_lock),
    CASE(inspect_semaphore_and_latch),
    CASE(inspect_permit_semaphore),
    CASE(inspect_odd_and_unsupported),
};

/* Runs the value cases on backend ("mock" or "redis"; for redis, main has
 * set the server URL); the codec cases, which need no backend, with the
 * mock. Returns the number of failures. */
int dlock_test_values(const char *backend)
{
    int before = dlock_test_failed, mock = strcmp(backend, "mock") == 0;
    char group[64];

    if (mock) {
        dlock_test_set_phase("values: codecs");
        DLOCK_RUN_GROUP("values/codecs", codec_cases, NULL, NULL);
    }
    snprintf(group, sizeof(group), "values on %s", backend);
    DLOCK_RUN_GROUP(group, values_cases,
                    mock ? dlock_fx_group_mock : dlock_fx_group_redis, NULL);
    return dlock_test_failed - before;
}
