/*
 * libFuzzer target: the JSON configuration (api/dlock/config.h), through
 * its parser (core/config_json.c): dlock_client_from_json_string would
 * go on to connect to the URL the input names. A configuration that parses
 * with "url": "mock:" is also turned into a client, end to end.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "../../core/config_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    dlock__config cfg;
    char err[256];
    char *text;

    if (size > 65536)
        return 0;
    text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (dlock__config_parse(&cfg, text, size, err, sizeof err) == 0) {
        if (!cfg.url)
            abort();
        if (strcmp(cfg.url, "mock:") == 0) {
            dlock_client *c = NULL;
            if (dlock_client_from_json_string(&c, text, err, sizeof err) == 0)
                dlock_client_free(c);
        }
        dlock__config_fini(&cfg);
    } else if (err[0] == '\0') {
        abort(); /* a failure always says why */
    }
    free(text);
    return 0;
}
