/*
 * dlock — the string codec (UTF-8 text as C strings) and the bytes codec
 * (any bytes). Both store the bytes as they are: they differ only in what
 * they promise the caller about them.
 */
#include <stdlib.h>
#include <string.h>

#include "codec_internal.h"

/* Copies n bytes into a new NUL-terminated buffer. */
static char *copy(const char *s, size_t n)
{
    char *p = malloc(n + 1);

    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static void free_plain(const dlock_codec *codec, void *value)
{
    (void)codec;
    free(value);
}

static int string_encode(const dlock_codec *codec, char **out, size_t *outlen,
                         const void *value, char *errbuf, size_t errlen)
{
    const char *s = value;
    size_t n = strlen(s), bad = dlock__utf8_check(s, n);

    (void)codec;
    if (bad != n)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "string codec: not UTF-8 (byte %zu); use the bytes codec",
                                 bad);
    if (!(*out = copy(s, n)))
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    *outlen = n;
    return 0;
}

static int string_decode(const dlock_codec *codec, void **out, const char *bytes,
                         size_t len, char *errbuf, size_t errlen)
{
    const char *nul = memchr(bytes, '\0', len);
    size_t bad = dlock__utf8_check(bytes, len);

    (void)codec;
    if (nul)
        return dlock__fail_into(errbuf, errlen, DLOCK_EPROTO,
                                 "string codec: NUL byte at %zu (not a C string)",
                                 (size_t)(nul - bytes));
    if (bad != len)
        return dlock__fail_into(errbuf, errlen, DLOCK_EPROTO,
                                 "string codec: not UTF-8 at byte %zu", bad);
    if (!(*out = copy(bytes, len)))
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    return 0;
}

static int bytes_encode(const dlock_codec *codec, char **out, size_t *outlen,
                        const void *value, char *errbuf, size_t errlen)
{
    const dlock_bytes *b = value;

    (void)codec;
    if (!b->data && b->len > 0)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "bytes codec: data is NULL");
    if (!(*out = copy(b->data ? b->data : "", b->len)))
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    *outlen = b->len;
    return 0;
}

static int bytes_decode(const dlock_codec *codec, void **out, const char *bytes,
                        size_t len, char *errbuf, size_t errlen)
{
    /* One block: the caller frees the value with a single free(). */
    dlock_bytes *b = malloc(sizeof(*b) + len + 1);
    char *data;

    (void)codec;
    if (!b)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    data = (char *)(b + 1);
    memcpy(data, bytes, len);
    data[len] = '\0';
    b->data = data;
    b->len = len;
    *out = b;
    return 0;
}

static const dlock_codec string_codec = {
    1, "string", string_encode, string_decode, free_plain,
};

static const dlock_codec bytes_codec = {
    1, "bytes", bytes_encode, bytes_decode, free_plain,
};

const dlock_codec *dlock_codec_string(void)
{
    return &string_codec;
}

const dlock_codec *dlock_codec_bytes(void)
{
    return &bytes_codec;
}
