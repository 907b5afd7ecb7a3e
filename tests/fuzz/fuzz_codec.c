/*
 * libFuzzer target: codec decoding (api/dlock/codec.h). The first byte
 * picks the codec, the rest is the stored bytes. A value that decodes must
 * encode again, and for the canonical codecs (string, bytes, long) decode
 * back to the same bytes; JSON re-encodes to a canonical form that must
 * itself round-trip.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const dlock_codec *codecs[4];
    const dlock_codec *codec;
    void *v = NULL, *v2 = NULL;
    char *enc = NULL, *enc2 = NULL, err[256];
    size_t len = 0, len2 = 0;
    const void *arg;
    dlock_bytes bytes;

    if (size < 1 || size > 65536)
        return 0;
    codecs[0] = dlock_codec_string();
    codecs[1] = dlock_codec_bytes();
    codecs[2] = dlock_codec_long();
    codecs[3] = dlock_codec_json();
    codec = codecs[data[0] % 4];
    if (dlock_codec_decode(codec, &v, (const char *)data + 1, size - 1, err,
                           sizeof err) != 0) {
        if (v)
            abort(); /* *out is NULL on failure */
        return 0;
    }
    /* What encode takes for each codec's decoded value. */
    if (codec == codecs[0])
        arg = v; /* char * */
    else if (codec == codecs[1]) {
        bytes = *(const dlock_bytes *)v;
        arg = &bytes;
    } else
        arg = v; /* int64_t *, json_t * */
    if (dlock_codec_encode(codec, &enc, &len, arg, err, sizeof err) != 0)
        abort();
    if (codec != codecs[3] && (len != size - 1 || memcmp(enc, data + 1, len) != 0)) {
        /* long: "+5", "-0", "007" decode but are not canonical */
        if (codec != codecs[2])
            abort();
    }
    if (dlock_codec_decode(codec, &v2, enc, len, err, sizeof err) != 0)
        abort();
    if (codec == codecs[3]) {
        dlock_codec_value_free(codec, v);
        v = v2;
        v2 = NULL;
        if (dlock_codec_encode(codec, &enc2, &len2, v, err, sizeof err) != 0 ||
            len2 != len || memcmp(enc, enc2, len) != 0)
            abort();
    }
    free(enc);
    free(enc2);
    dlock_codec_value_free(codec, v);
    dlock_codec_value_free(codec, v2);
    return 0;
}
