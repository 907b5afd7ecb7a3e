/*
 * libFuzzer target: the Redisson YAML configuration (api/dlock/config.h),
 * through its parser (core/config_yaml.c): dlock_client_from_redisson_
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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "../../core/config_yaml.h"
#include "secret.h"

static const char *const places[][2] = {
    {"  password: \"", "\""},
    {"  password: '", "'"},
    {"  password: ", ""},
    {"  sentinelPassword: ", ""},
    {"  address: \"redis://", ""},
};
#define NPLACES (sizeof places / sizeof places[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock__config cfg;
    recipe r;
    char err[256];
    char *text;
    size_t len;

    if (size < 1 || size > 65536)
        return 0;
    text = recipe_text(&r, data, size, places, NPLACES, "", &len);
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
