/*
 * dlock — the codec dispatchers and what the codecs share (error detail,
 * UTF-8 validation).
 */
#include <stdarg.h>
#include <stdio.h>

#include "codec_internal.h"

int dlock__codec_fail(char *errbuf, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (errbuf && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(errbuf, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

size_t dlock__utf8_check(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;

    while (i < n) {
        unsigned c = s[i];
        size_t need, k;
        unsigned long cp;

        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            need = 1, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF)
            need = 2, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4)
            need = 3, cp = c & 0x07;
        else
            return i; /* a continuation byte, an overlong lead, or > U+10FFFF */
        if (n - i <= need)
            return i;
        for (k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80)
                return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        /* The lead byte alone cannot rule these out. */
        if ((need == 2 && cp < 0x800) || (need == 3 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += need + 1;
    }
    return n;
}

int dlock_codec_encode(const dlock_codec *codec, char **out, size_t *outlen,
                       const void *value, char *errbuf, size_t errlen)
{
    if (out)
        *out = NULL;
    if (outlen)
        *outlen = 0;
    if (!codec || !codec->encode || !out || !outlen)
        return dlock__codec_fail(errbuf, errlen, DLOCK_EINVAL,
                                 "codec, out and outlen must not be NULL");
    if (!value)
        return dlock__codec_fail(errbuf, errlen, DLOCK_EINVAL,
                                 "%s codec: the value is NULL", codec->name);
    return codec->encode(codec, out, outlen, value, errbuf, errlen);
}

int dlock_codec_decode(const dlock_codec *codec, void **out, const char *bytes,
                       size_t len, char *errbuf, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!codec || !codec->decode || !out)
        return dlock__codec_fail(errbuf, errlen, DLOCK_EINVAL,
                                 "codec and out must not be NULL");
    if (!bytes && len > 0)
        return dlock__codec_fail(errbuf, errlen, DLOCK_EINVAL,
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
