/*
 * libFuzzer target: the JSON configuration (api/dlock/config.h), through
 * its parser (core/config_json.c): dlock_client_from_json_string would
 * go on to connect to the URL the input names. A configuration that parses
 * with "url": "mock:" is also turned into a client, end to end.
 *
 * Besides "no crash, no leak, no UB" and "a failure says why", no part of
 * a secret ever shows (tests/fuzz/secret.h): the first byte picks a place
 * (or the raw mode: the rest is the text as it is), the rest is a recipe,
 * and the text is
 *   "{" A "\"sentinel_password\": \"" SECRET "\"" B
 *   "{" A "\"url\": \"redis://:" SECRET "@" B
 *   "{" A "\"url\": \"redis-sentinel://h?sentinelMasterId=m&sentinel_password=" SECRET B
 *   "{" A "\"urls\": [\"redis://u:" SECRET "@" B
 * SECRET raw: odd bytes in it ('"', '\', control bytes, bytes that are
 * not UTF-8) break the JSON around it. The parser's message must not hold
 * 4 bytes of MARKER, nor the mock client's. (What the URL parser does with
 * a parsed url is fuzz_url's: once a '"' in SECRET has ended the string,
 * the URL is another one, e.g. a password's '@' and rest make its host.)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "../../core/config_json.h"
#include "secret.h"

static const char *const places[][2] = {
    {"\"sentinel_password\": \"", "\""},
    {"\"url\": \"redis://:", "@"},
    {"\"url\": \"redis-sentinel://h?sentinelMasterId=m&sentinel_password=", ""},
    {"\"urls\": [\"redis://u:", "@"},
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
    text = recipe_text(&r, data, size, places, NPLACES, "{", &len);
    if (!text) {
        free(r.copy);
        return 0;
    }
    err[0] = '\0';
    if (dlock__config_parse(&cfg, text, len, err, sizeof err) == 0) {
        if (!cfg.url == !cfg.urls)
            abort(); /* exactly one of them */
        if (cfg.url && strcmp(cfg.url, "mock:") == 0) {
            dlock_client *c = NULL;
            err[0] = '\0';
            if (dlock_client_from_json_string(&c, text, err, sizeof err) == 0)
                dlock_client_free(c);
            else
                recipe_check(&r, err);
        }
        dlock__config_fini(&cfg);
    } else {
        recipe_check_failure(&r, err);
    }
    free(text);
    free(r.copy);
    return 0;
}
