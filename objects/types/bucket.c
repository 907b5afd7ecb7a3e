/*
 * dlock — the bucket (api/dlock/bucket.h): a value under a name through a
 * codec, and guarded writes. The scripts are bucket_*.lua, sharing
 * bucket_common.luainc; values travel as binary-safe script arguments.
 *
 * Built on the RLock base for its name, client reference, script calls and
 * error detail, with a method table whose lock slots are all NULL (a bucket
 * is never handed out as a dlock_rlock *).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/bucket.h"
#include "objects/runtime/client.h"
#include "objects/runtime/base.h"
#include "objects/types/methods.h"
#include "objects/types/type.h"
#include "scripts.h"

struct dlock_bucket {
    dlock_rlock base;
    const dlock_codec *codec;
};

#define BASE(b) (&(b)->base)
#define MAX_ARGS 8

static const dlock_rlock_methods bucket_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION, .type = "bucket",
};
const dlock__type dlock__type_bucket = {.name = "bucket", .tables = {&bucket_methods}};

int dlock_bucket_new(dlock_bucket **out, dlock_client *c, const char *name,
                     const dlock_codec *codec)
{
    dlock_rlock *l;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (!codec || !codec->encode || !codec->decode || !codec->free_value)
        return DLOCK_EINVAL;
    rc = dlock__rlock_new(&l, sizeof(dlock_bucket), &bucket_methods, c, name);
    if (rc != 0)
        return rc;
    ((dlock_bucket *)l)->codec = codec;
    *out = (dlock_bucket *)l;
    return 0;
}

void dlock_bucket_free(dlock_bucket *b)
{
    if (b)
        dlock_rlock_free(BASE(b)); /* no destroy slot: frees b itself */
}

const char *dlock_bucket_name(const dlock_bucket *b)
{
    return b ? b->base.name : NULL;
}

const dlock_codec *dlock_bucket_codec(const dlock_bucket *b)
{
    return b ? b->codec : NULL;
}

const char *dlock_bucket_errmsg(dlock_bucket *b)
{
    return b ? dlock_errmsg(BASE(b)) : "bucket object is NULL";
}

void dlock_bucket_value_free(dlock_bucket *b, void *value)
{
    if (b)
        dlock_codec_value_free(b->codec, value);
}

/* ---- plumbing ------------------------------------------------------------- */

/* A script call under construction: keys then arguments, each with its
 * length (values may hold any bytes), and the encoded values it owns. */
typedef struct call {
    const char *argv[MAX_ARGS];
    size_t len[MAX_ARGS];
    size_t n;
    char *owned[2];
    size_t nowned;
} call;

static void put(call *k, const char *s, size_t len)
{
    k->argv[k->n] = s;
    k->len[k->n++] = len;
}

static void put_str(call *k, const char *s)
{
    put(k, s, strlen(s));
}

/* Encodes value and appends it. 0 or the codec's error, recorded. */
static int put_value(dlock_bucket *b, call *k, const void *value, const char *what)
{
    char detail[160] = "", *bytes;
    size_t len;
    int rc = dlock_codec_encode(b->codec, &bytes, &len, value, detail, sizeof(detail));

    if (rc != 0)
        return dlock_rlock_fail(BASE(b), rc, "\"%.64s\": %s: %s", b->base.name, what,
                                detail);
    k->owned[k->nowned++] = bytes;
    put(k, bytes, len);
    return 0;
}

static void call_fini(call *k)
{
    while (k->nowned > 0)
        free(k->owned[--k->nowned]);
}

static int run(dlock_bucket *b, dlock_reply **out, const dlock_script *s, call *k,
               size_t nkeys)
{
    int rc = dlock__rlock_eval_bin(BASE(b), NULL, out, s, nkeys, k->n - nkeys, k->argv, k->len);

    call_fini(k);
    return rc;
}

/* Runs a script whose reply is an integer. */
static int run_int(dlock_bucket *b, int64_t *out, const dlock_script *s, call *k,
                   size_t nkeys)
{
    dlock_reply *r;
    int rc = run(b, &r, s, k, nkeys);

    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(BASE(b), s, r);
    *out = r->integer;
    dlock_reply_free(r);
    return 0;
}

/* Decodes a stored value (a bulk reply; nil = none) into *out. */
static int decode(dlock_bucket *b, void **out, const dlock_reply *v)
{
    char detail[160] = "";
    int rc;

    if (!v || v->type == DLOCK_REPLY_NIL)
        return 0;
    rc = dlock_codec_decode(b->codec, out, v->str, v->len, detail, sizeof(detail));
    if (rc != 0)
        return dlock_rlock_fail(BASE(b), rc, "\"%.64s\": the stored value does not "
                                "decode with the %s codec: %s", b->base.name,
                                b->codec->name, detail);
    return 0;
}

/* The checks at the top of every call; a ttl_ms out of range
 * (0..DLOCK_TIME_MAX_MS) is refused where given. */
static int enter(dlock_bucket *b, call *k, int64_t ttl_ms)
{
    int rc;

    if (!b)
        return DLOCK_EINVAL;
    rc = dlock__client_check(b->base.client);
    if (rc != 0)
        return dlock_rlock_fail(BASE(b), rc, "bucket used in a fork() child");
    rc = dlock__time_arg(BASE(b), "ttl (0: none)", ttl_ms, 0);
    if (rc != 0)
        return rc;
    memset(k, 0, sizeof(*k));
    put(k, b->base.name, b->base.name_len);
    return 0;
}

#define NEED(b, p, what)                                                       \
    do {                                                                       \
        if (!(p))                                                              \
            return dlock_rlock_fail(BASE(b), DLOCK_EINVAL, "%s is NULL", what); \
    } while (0)

/* ---- the calls -------------------------------------------------------------- */

/* One read: {PTTL, value}. */
static int read_value(dlock_bucket *b, void **value, int64_t *ttl)
{
    const dlock_script *s = &dlock__script_bucket_get;
    dlock_reply *r;
    call k;
    int rc = enter(b, &k, 0);

    if (rc != 0)
        return rc;
    rc = run(b, &r, s, &k, 1);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n < 1 || r->n > 2 ||
        r->elems[0]->type != DLOCK_REPLY_INTEGER ||
        (r->n == 2 && r->elems[1]->type != DLOCK_REPLY_BULK))
        return dlock__unexpected_reply(BASE(b), s, r);
    if (ttl)
        *ttl = r->elems[0]->integer;
    rc = value && r->n == 2 ? decode(b, value, r->elems[1]) : 0;
    dlock_reply_free(r);
    return rc;
}

int dlock_bucket_get(dlock_bucket *b, void **out)
{
    if (out)
        *out = NULL;
    if (b)
        NEED(b, out, "out");
    return read_value(b, out, NULL);
}

int dlock_bucket_remain_ttl(dlock_bucket *b, int64_t *out)
{
    if (b)
        NEED(b, out, "out");
    return read_value(b, NULL, out);
}

static int set(dlock_bucket *b, int *out, const void *value, int64_t ttl_ms,
               int only_if_absent)
{
    char ttl[24];
    int64_t stored;
    call k;
    int rc = enter(b, &k, ttl_ms);

    if (rc != 0)
        return rc;
    NEED(b, value, "value");
    if ((rc = put_value(b, &k, value, "value")) != 0)
        return rc;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    put_str(&k, ttl);
    put_str(&k, only_if_absent ? "1" : "0");
    rc = run_int(b, &stored, &dlock__script_bucket_set, &k, 1);
    if (rc == 0 && out)
        *out = stored == 1;
    return rc;
}

int dlock_bucket_set(dlock_bucket *b, const void *value, int64_t ttl_ms)
{
    return set(b, NULL, value, ttl_ms, 0);
}

int dlock_bucket_set_if_absent(dlock_bucket *b, int *out, const void *value,
                               int64_t ttl_ms)
{
    return set(b, out, value, ttl_ms, 1);
}

int dlock_bucket_compare_and_set(dlock_bucket *b, int *out, const void *expect,
                                 const void *update, int64_t ttl_ms)
{
    char ttl[24];
    int64_t replaced;
    call k;
    int rc = enter(b, &k, ttl_ms);

    if (rc != 0)
        return rc;
    put_str(&k, expect ? "1" : "0");
    if (expect && (rc = put_value(b, &k, expect, "expected value")) != 0)
        goto fail;
    if (!expect)
        put_str(&k, "");
    put_str(&k, update ? "1" : "0");
    if (update && (rc = put_value(b, &k, update, "new value")) != 0)
        goto fail;
    if (!update)
        put_str(&k, "");
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    put_str(&k, ttl);
    rc = run_int(b, &replaced, &dlock__script_bucket_compare_and_set, &k, 1);
    if (rc == 0 && out)
        *out = replaced == 1;
    return rc;
fail:
    call_fini(&k);
    return rc;
}

int dlock_bucket_get_and_delete(dlock_bucket *b, void **out)
{
    const dlock_script *s = &dlock__script_bucket_get_and_delete;
    dlock_reply *r;
    call k;
    int rc;

    if (out)
        *out = NULL;
    if ((rc = enter(b, &k, 0)) != 0)
        return rc;
    NEED(b, out, "out");
    rc = run(b, &r, s, &k, 1);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_NIL && r->type != DLOCK_REPLY_BULK)
        return dlock__unexpected_reply(BASE(b), s, r);
    rc = decode(b, out, r);
    dlock_reply_free(r);
    return rc;
}

int dlock_bucket_delete(dlock_bucket *b, int *out)
{
    int64_t existed;
    call k;
    int rc = enter(b, &k, 0);

    if (rc != 0)
        return rc;
    rc = run_int(b, &existed, &dlock__script_bucket_delete, &k, 1);
    if (rc == 0 && out)
        *out = existed == 1;
    return rc;
}

/* ---- guarded writes ------------------------------------------------------ */

int dlock_bucket_set_guarded(dlock_bucket *b, const dlock_guard *guard,
                             const void *value, int64_t ttl_ms)
{
    char field[DLOCK_OWNER_MAX + 32], owner[DLOCK_OWNER_MAX], ttl[24], token[24];
    const char *token_key;
    dlock_rlock *l;
    int64_t answer;
    call k;
    int rc = enter(b, &k, ttl_ms);

    if (rc != 0)
        return rc;
    NEED(b, guard, "guard");
    NEED(b, guard->lock, "guard->lock");
    NEED(b, value, "value");
    l = guard->lock;
    if (guard->version < 1 || !l->methods || !l->client)
        return dlock_rlock_fail(BASE(b), DLOCK_EINVAL,
                                "guard is not initialised (use DLOCK_GUARD_INIT)");
    if (!DLOCK_RLOCK_HAS_SLOT(l->methods, guard_field))
        return dlock_rlock_fail(BASE(b), DLOCK_ENOTSUP, "%s locks cannot guard a write",
                                l->methods->type);
    if (guard->owner) {
        /* an id the lock refuses (too long, or reserved by its layout)
         * never holds it */
        if ((rc = dlock_rlock_check_owner(l, guard->owner)) != 0)
            return dlock_rlock_fail(BASE(b), rc, "guard: %s", dlock_errmsg(l));
        memcpy(owner, guard->owner, strlen(guard->owner) + 1);
    } else {
        /* the lock's client names the owner: it is the lock's holder we ask
         * about, whichever client the bucket uses */
        dlock__client_owner(l->client, owner);
    }
    token_key = dlock__fenced_token_key(l);
    if (guard->token < 0 || (guard->token > 0 && !token_key))
        return dlock_rlock_fail(BASE(b), DLOCK_EINVAL, guard->token < 0
                                ? "a token is > 0 (0: no token check)"
                                : "a token needs a fenced lock, and \"%.64s\" is a %s lock",
                                l->name, l->methods->type);
    rc = l->methods->guard_field(l, owner, field, sizeof(field));
    if (rc != 0)
        return dlock_rlock_fail(BASE(b), rc, "no guard field for owner \"%.64s\"", owner);

    put(&k, l->name, l->name_len);
    if (guard->token > 0)
        put_str(&k, token_key);
    if ((rc = put_value(b, &k, value, "value")) != 0)
        return rc;
    snprintf(ttl, sizeof(ttl), "%" PRId64, ttl_ms);
    snprintf(token, sizeof(token), "%" PRId64, guard->token);
    put_str(&k, ttl);
    put_str(&k, field);
    put_str(&k, token);
    rc = run_int(b, &answer, &dlock__script_bucket_set_guarded, &k,
                 guard->token > 0 ? 3 : 2);
    if (rc != 0)
        return rc;
    switch (answer) {
    case 1:
        return 0;
    case 0:
        return dlock_rlock_fail(BASE(b), DLOCK_ENOTOWNER,
                                "\"%.64s\" not written: lock \"%.64s\" is not held by "
                                "this owner (never taken, unlocked, or its lease ran out)",
                                b->base.name, l->name);
    case -1:
        return dlock_rlock_fail(BASE(b), DLOCK_ELOST,
                                "\"%.64s\" not written: token %" PRId64 " of lock \"%.64s\" "
                                "is stale (a later acquisition has a greater one)",
                                b->base.name, guard->token, l->name);
    default:
        return dlock_rlock_fail(BASE(b), DLOCK_EINVAL,
                                "\"%.64s\" not written: token %" PRId64 " of lock \"%.64s\" "
                                "was never handed out", b->base.name, guard->token,
                                l->name);
    }
}
