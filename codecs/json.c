/*
 * dlock — the JSON codec, on Jansson.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

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
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "json codec: the value cannot be encoded");
    p = malloc(n + 1);
    if (!p)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    if (json_dumpb((const json_t *)value, p, n, ENCODE_FLAGS) != n) {
        free(p);
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
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
        return dlock__fail_into(errbuf, errlen, DLOCK_EPROTO,
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
