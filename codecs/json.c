/*
 * dlock — the JSON codec, on Jansson, and the document builder the lock
 * objects use for their state reports (codecs/json_doc.h). With
 * codecs/config_json.c, the only code that includes <jansson.h>.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"
#include "json_doc.h"

/* Sorted keys: one value, one encoding (compare_and_set compares bytes). */
#define ENCODE_FLAGS (JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)
#define DECODE_FLAGS (JSON_DECODE_ANY | JSON_ALLOW_NUL)

static int json_encode(const dlock_codec *codec, char **out, size_t *outlen,
                       const void *value, char *errbuf, size_t errlen)
{
    size_t n = json_dumpb((const json_t *)value, NULL, 0, ENCODE_FLAGS);
    char *p;

    (void)codec;
    /* json_dumpb gives 0 for what it cannot encode (e.g. a NaN real). */
    if (n == 0)
        return dlock__codec_fail(errbuf, errlen, DLOCK_EINVAL,
                                 "json codec: the value cannot be encoded");
    p = malloc(n + 1);
    if (!p)
        return dlock__codec_fail(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    if (json_dumpb((const json_t *)value, p, n, ENCODE_FLAGS) != n) {
        free(p);
        return dlock__codec_fail(errbuf, errlen, DLOCK_EINVAL,
                                 "json codec: the value changed while encoding");
    }
    p[n] = '\0';
    *out = p;
    *outlen = n;
    return 0;
}

static int json_decode(const dlock_codec *codec, void **out, const char *bytes,
                       size_t len, char *errbuf, size_t errlen)
{
    json_error_t err;
    json_t *v = json_loadb(bytes, len, DECODE_FLAGS, &err);

    (void)codec;
    if (!v)
        return dlock__codec_fail(errbuf, errlen, DLOCK_EPROTO,
                                 "json codec: line %d, column %d: %s", err.line,
                                 err.column, err.text);
    *out = v;
    return 0;
}

static void json_free_value(const dlock_codec *codec, void *value)
{
    (void)codec;
    json_decref((json_t *)value);
}

static const dlock_codec json_codec = {
    1, "json", json_encode, json_decode, json_free_value,
};

const dlock_codec *dlock_codec_json(void)
{
    return &json_codec;
}

/* ---- the document builder ------------------------------------------------ */

json_t *dlock__json_object(void)
{
    return json_object();
}

json_t *dlock__json_array(void)
{
    return json_array();
}

int dlock__json_set(json_t *obj, const char *key, json_t *v)
{
    if (!obj || !v) {
        json_decref(v);
        return -1;
    }
    return json_object_set_new(obj, key, v) == 0 ? 0 : -1;
}

/* s[0..n) with every byte that is not part of well-formed UTF-8 replaced by
 * U+FFFD (3 bytes), as a Jansson string. */
static json_t *text(const char *s, size_t n)
{
    size_t i = 0, j = 0;
    char *buf;
    json_t *v;

    if (dlock__utf8_check(s, n) == n)
        return json_stringn(s, n);
    buf = malloc(3 * n + 1);
    if (!buf)
        return NULL;
    while (i < n) {
        size_t good = dlock__utf8_check(s + i, n - i);
        if (good > 0) {
            memcpy(buf + j, s + i, good);
            i += good;
            j += good;
            continue;
        }
        memcpy(buf + j, "\xEF\xBF\xBD", 3);
        j += 3;
        i++;
    }
    v = json_stringn(buf, j);
    free(buf);
    return v;
}

int dlock__json_set_str(json_t *obj, const char *key, const char *s, size_t n)
{
    return dlock__json_set(obj, key, text(s, n));
}

int dlock__json_set_int(json_t *obj, const char *key, int64_t v)
{
    return dlock__json_set(obj, key, json_integer((json_int_t)v));
}

int dlock__json_set_bool(json_t *obj, const char *key, int v)
{
    return dlock__json_set(obj, key, json_boolean(v));
}

int dlock__json_set_null(json_t *obj, const char *key)
{
    return dlock__json_set(obj, key, json_null());
}

json_t *dlock__json_get_array(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_array(v) ? v : NULL;
}

int dlock__json_append(json_t *arr, json_t *v)
{
    if (!arr || !v) {
        json_decref(v);
        return -1;
    }
    return json_array_append_new(arr, v) == 0 ? 0 : -1;
}

void dlock__json_free(json_t *j)
{
    json_decref(j);
}
