/*
 * dlock — the codec dispatchers.
 */

#include "codec_internal.h"

int dlock_codec_encode(const dlock_codec *codec, char **out, size_t *outlen,
                       const void *value, char *errbuf, size_t errlen)
{
    if (out)
        *out = NULL;
    if (outlen)
        *outlen = 0;
    if (!codec || !codec->encode || !out || !outlen)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "codec, out and outlen must not be NULL");
    if (!value)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "%s codec: the value is NULL", codec->name);
    return codec->encode(codec, out, outlen, value, errbuf, errlen);
}

int dlock_codec_decode(const dlock_codec *codec, void **out, const char *bytes,
                       size_t len, char *errbuf, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!codec || !codec->decode || !out)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "codec and out must not be NULL");
    if (!bytes && len > 0)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "%s codec: bytes is NULL", codec->name);
    return codec->decode(codec, out, bytes ? bytes : "", len, errbuf, errlen);
}

void dlock_codec_value_free(const dlock_codec *codec, void *value)
{
    if (codec && codec->free_value && value)
        codec->free_value(codec, value);
}

const char *dlock_codec_name(const dlock_codec *codec)
{
    return codec ? codec->name : NULL;
}
