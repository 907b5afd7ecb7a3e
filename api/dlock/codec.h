/*
 * dlock — value codecs: how a stored value (a bucket's, api/dlock/bucket.h)
 * becomes bytes in the store and back.
 *
 * A codec is a constant table: a name, encode (value -> bytes), decode
 * (bytes -> a new value) and free_value. The built-in codecs and their value
 * types (what `const void *value` points to, what decode hands back):
 *
 *   codec                value on encode         decode gives (free with
 *                                                dlock_codec_value_free)
 *   dlock_codec_string   const char *: UTF-8      char *: UTF-8 text, NUL-
 *                        text, NUL-terminated     terminated
 *   dlock_codec_bytes    const dlock_bytes *:     dlock_bytes *: the bytes,
 *                        any bytes                NUL-terminated after len
 *   dlock_codec_long     const int64_t *          int64_t *
 *   dlock_codec_json     const json_t *           json_t * (a new reference)
 *
 * Formats:
 *  - string: the UTF-8 bytes as they are (Redisson's StringCodec). Encoding
 *    text that is not well-formed UTF-8 is DLOCK_EINVAL; decoding bytes that
 *    are not well-formed UTF-8, or that contain a NUL byte (a C string could
 *    not hold them), is DLOCK_EPROTO. Use the bytes codec for binary data.
 *  - bytes: the bytes as they are; every byte string decodes.
 *  - long: the integer in decimal ASCII, what Redisson's LongCodec stores
 *    ("-42"). Decoding accepts what Java's Long.parseLong accepts: an
 *    optional sign and decimal digits, within the int64 range; anything else
 *    (empty, spaces, "1e3", overflow) is DLOCK_EPROTO.
 *  - json: compact JSON text with object keys sorted, so that one value has
 *    one encoding (compare_and_set compares encodings). Any JSON value may be
 *    stored, not only objects and arrays. Decoding malformed JSON is
 *    DLOCK_EPROTO with the line and column in the detail.
 *
 * JSON without Jansson's header: this header only forward-declares
 * `struct json_t` (Jansson's json_t), so it compiles anywhere; code that
 * builds or reads the values includes <jansson.h> itself. The library links
 * Jansson (pkg-config: dlock requires jansson).
 *
 * Errors: encode returns 0, DLOCK_EINVAL (NULL, or not a value of the codec)
 * or DLOCK_ENOMEM; decode returns 0, DLOCK_EPROTO (the bytes are not a valid
 * encoding) or DLOCK_ENOMEM. errbuf (may be NULL) receives a one-line detail.
 * No input makes a codec crash.
 *
 * A user-defined codec is a dlock_codec table of its own: fill every slot,
 * keep the table alive as long as the buckets that use it.
 *
 * Thread-safety: the codecs keep no state; every function here may be called
 * from any thread at once.
 */
#ifndef DLOCK_CODEC_H
#define DLOCK_CODEC_H

#include "export.h"

#include <stddef.h>
#include <stdint.h>

#include "errors.h"

#ifdef __cplusplus
extern "C" {
#endif

struct json_t; /* Jansson's json_t */

/* A byte string: the bytes codec's value. */
typedef struct dlock_bytes {
    const char *data;
    size_t len;
} dlock_bytes;

typedef struct dlock_codec dlock_codec;

struct dlock_codec {
    int version;      /* 1 */
    const char *name; /* "string", "bytes", "long", "json" */

    /* Encodes value (never NULL; the codec's value type) into a new buffer:
     * *out (malloc'ed, NUL-terminated after *outlen bytes, the caller's, to
     * free()) and *outlen. Never blocks. 0, DLOCK_EINVAL, DLOCK_ENOMEM. */
    int (*encode)(const dlock_codec *codec, char **out, size_t *outlen,
                  const void *value, char *errbuf, size_t errlen);

    /* Decodes len bytes (bytes may be NULL when len is 0) into a new value,
     * the caller's, freed with free_value. Never blocks.
     * 0, DLOCK_EPROTO, DLOCK_ENOMEM. */
    int (*decode)(const dlock_codec *codec, void **out, const char *bytes,
                  size_t len, char *errbuf, size_t errlen);

    /* Frees a value that decode returned. NULL is a no-op. */
    void (*free_value)(const dlock_codec *codec, void *value);
};

/* The built-in codecs (static tables, never freed). */
DLOCK_API const dlock_codec *dlock_codec_string(void);
DLOCK_API const dlock_codec *dlock_codec_bytes(void);
DLOCK_API const dlock_codec *dlock_codec_long(void);
DLOCK_API const dlock_codec *dlock_codec_json(void);

/* Dispatchers: check their arguments (DLOCK_EINVAL for NULL codec, out,
 * value, or bytes with len > 0), set *out to NULL on failure. */
DLOCK_API int dlock_codec_encode(const dlock_codec *codec, char **out, size_t *outlen,
                                 const void *value, char *errbuf, size_t errlen);
DLOCK_API int dlock_codec_decode(const dlock_codec *codec, void **out, const char *bytes,
                                 size_t len, char *errbuf, size_t errlen);
/* NULL codec or value: no-op. */
DLOCK_API void dlock_codec_value_free(const dlock_codec *codec, void *value);
/* The codec's name, or NULL for NULL. */
DLOCK_API const char *dlock_codec_name(const dlock_codec *codec);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_CODEC_H */
