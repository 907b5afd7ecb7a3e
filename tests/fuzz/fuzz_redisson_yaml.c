/*
 * libFuzzer target: the Redisson YAML configuration (api/dlock/config.h),
 * through its parser (backends/redis/redisson_yaml.c): dlock_client_from_redisson_
 * yaml_string would go on to connect to the address the input names.
 *
 * Besides "no crash, no leak, no UB" and "a failure says why", no part of
 * a secret ever shows in a message (tests/fuzz/secret.h): the first byte
 * picks a place (or the raw mode: the rest is the text as it is), the
 * rest is a recipe, and the text is
 *   A "  password: \"" SECRET "\"" B                 (a double-quoted string)
 *   A "  password: '" SECRET "'" B                   (a single-quoted one)
 *   A "  password: " SECRET B                        (a plain scalar)
 *   A "  sentinelPassword: " SECRET B
 *   A "  address: \"redis://" SECRET B
 * SECRET raw: odd bytes in it (quotes, ':', '#', '\', line breaks, bytes
 * that are not UTF-8) break the YAML around it. (A parse that succeeds
 * holds the secret in its URL, percent-encoded, by design: only the
 * messages are judged.)
 *
 * First byte 0xFF: the shapes mode, for the shapes that only a large text
 * has (aliases standing for a long address a thousand times, nesting
 * thousands deep, tens of thousands of nodes), which make fuzz's
 * -max_len=4096 could not reach otherwise: the rest is two count bytes
 * (big-endian, times 16), then PREFIX NUL UNIT NUL SUFFIX, and the text is
 * PREFIX, UNIT repeated as often as the count says and the size cap
 * allows, SUFFIX. The oracle is the same; libFuzzer's -timeout and
 * -rss_limit_mb catch a shape the bounds would let run away.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "../../backends/redis/redisson_yaml.h"
#include "secret.h"

static const char *const places[][2] = {
    {"  password: \"", "\""},
    {"  password: '", "'"},
    {"  password: ", ""},
    {"  sentinelPassword: ", ""},
    {"  address: \"redis://", ""},
};
#define NPLACES (sizeof places / sizeof places[0])

/* The shapes mode's text (see above), or NULL. */
static char *shape_text(const uint8_t *data, size_t size, size_t *len)
{
    const uint8_t *prefix = data + 3, *unit, *suffix, *end = data + size;
    size_t np, nu, ns, times, cap, i;
    char *text, *o;

    if (size < 3)
        return NULL;
    times = (((size_t)data[1] << 8) | data[2]) * 16;
    unit = memchr(prefix, '\0', (size_t)(end - prefix));
    if (!unit)
        return NULL;
    unit++;
    suffix = memchr(unit, '\0', (size_t)(end - unit));
    if (!suffix)
        return NULL;
    suffix++;
    np = (size_t)(unit - 1 - prefix);
    nu = (size_t)(suffix - 1 - unit);
    ns = (size_t)(end - suffix);
    cap = DLOCK_CONFIG_MAX;
    if (np + ns > cap)
        return NULL;
    if (nu == 0 || times > (cap - np - ns) / nu)
        times = nu ? (cap - np - ns) / nu : 0;
    text = malloc(np + times * nu + ns + 1);
    if (!text)
        return NULL;
    o = text;
    memcpy(o, prefix, np), o += np;
    for (i = 0; i < times; i++)
        memcpy(o, unit, nu), o += nu;
    memcpy(o, suffix, ns), o += ns;
    *o = '\0';
    *len = (size_t)(o - text);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock__config cfg;
    recipe r;
    char err[256];
    char *text;
    size_t len;

    if (size < 1 || size > 65536)
        return 0;
    if (data[0] == 0xFF) {
        memset(&r, 0, sizeof(r)); /* no secret placed: nothing judged */
        text = shape_text(data, size, &len);
    } else {
        text = recipe_text(&r, data, size, places, NPLACES, "", &len);
    }
    if (!text) {
        free(r.copy);
        return 0;
    }
    err[0] = '\0';
    if (dlock__redisson_yaml_parse(&cfg, text, len, err, sizeof err) == 0) {
        if (!cfg.url || cfg.urls)
            abort(); /* one URL, never a set */
        dlock__config_fini(&cfg);
    } else {
        recipe_check_failure(&r, err);
    }
    free(text);
    free(r.copy);
    return 0;
}
