/*
 * dlock — the long codec: a 64-bit integer as decimal ASCII, what Redisson's
 * LongCodec stores, so Java and C services can share the value (and INCRBY
 * works on it).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec_internal.h"

static int long_encode(const dlock_codec *codec, char **out, size_t *outlen,
                       const void *value, char *errbuf, size_t errlen)
{
    char *p = malloc(24);
    int n;

    (void)codec;
    if (!p)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    n = snprintf(p, 24, "%" PRId64, *(const int64_t *)value);
    *out = p;
    *outlen = (size_t)n;
    return 0;
}

static int long_decode(const dlock_codec *codec, void **out, const char *bytes,
                       size_t len, char *errbuf, size_t errlen)
{
    /* Parsed by hand: strtoll would accept spaces, stop at the first bad
     * byte, and not see an embedded NUL. */
    size_t i = 0;
    int neg = 0;
    uint64_t v = 0, limit;
    int64_t *p;

    (void)codec;
    if (len > 0 && (bytes[0] == '-' || bytes[0] == '+')) {
        neg = bytes[0] == '-';
        i = 1;
    }
    if (i == len)
        return dlock__fail_into(errbuf, errlen, DLOCK_EPROTO,
                                 "long codec: no digits");
    limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < len; i++) {
        unsigned d = (unsigned char)bytes[i] - '0';
        if (d > 9)
            return dlock__fail_into(errbuf, errlen, DLOCK_EPROTO,
                                     "long codec: not a digit at byte %zu", i);
        if (v > (limit - d) / 10)
            return dlock__fail_into(errbuf, errlen, DLOCK_EPROTO,
                                     "long codec: out of the int64 range");
        v = v * 10 + d;
    }
    p = malloc(sizeof(*p));
    if (!p)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    /* -(INT64_MAX + 1) without signed overflow */
    *p = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    *out = p;
    return 0;
}

static void long_free(const dlock_codec *codec, void *value)
{
    (void)codec;
    free(value);
}

static const dlock_codec long_codec = {
    1, "long", long_encode, long_decode, long_free,
};

const dlock_codec *dlock_codec_long(void)
{
    return &long_codec;
}
