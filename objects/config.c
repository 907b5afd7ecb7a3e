/*
 * dlock — a client from a JSON configuration (api/dlock/config.h): the text
 * is parsed in codecs/ (codecs/config_json.c, the Jansson side), the client
 * is made here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/config_json.h"
#include "dlock/config.h"
#include "internal.h"

/* "<where>:<line>:<column>: what" for a position, "<where>: what" else. */
static void put_err(char *errbuf, size_t errlen, const char *where, const char *msg)
{
    if (errbuf && errlen > 0)
        snprintf(errbuf, errlen, "%s:%s%s", where,
                 msg[0] >= '0' && msg[0] <= '9' ? "" : " ", msg);
}

static int from_text(dlock_client **out, const char *text, size_t len,
                     const char *where, char *errbuf, size_t errlen)
{
    char detail[256] = "";
    dlock__config cfg;
    int rc;

    if (errbuf && errlen > 0)
        errbuf[0] = '\0';
    rc = dlock__config_parse(&cfg, text, len, detail, sizeof(detail));
    if (rc != 0) {
        put_err(errbuf, errlen, where, detail);
        return rc;
    }
    rc = dlock__client_connect(out, cfg.url, &cfg.redis, &cfg.client, detail,
                               sizeof(detail));
    if (rc != 0)
        put_err(errbuf, errlen, where, detail[0] ? detail : dlock_strerror(rc));
    dlock__config_fini(&cfg);
    return rc;
}

int dlock_client_from_json_string(dlock_client **out, const char *json,
                                  char *errbuf, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || !json) {
        put_err(errbuf, errlen, "json", "out and json must not be NULL");
        return DLOCK_EINVAL;
    }
    return from_text(out, json, strlen(json), "json", errbuf, errlen);
}

int dlock_client_from_json_file(dlock_client **out, const char *path,
                                char *errbuf, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int rc;

    if (out)
        *out = NULL;
    if (!out || !path) {
        put_err(errbuf, errlen, "json", "out and path must not be NULL");
        return DLOCK_EINVAL;
    }
    f = fopen(path, "rb");
    if (!f) {
        put_err(errbuf, errlen, path, strerror(errno));
        return DLOCK_EINVAL;
    }
    /* One byte more than allowed tells an oversized file from a full one. */
    text = malloc(DLOCK_CONFIG_MAX + 1);
    if (!text) {
        fclose(f);
        put_err(errbuf, errlen, path, "out of memory");
        return DLOCK_ENOMEM;
    }
    len = fread(text, 1, DLOCK_CONFIG_MAX + 1, f);
    if (ferror(f) || len > DLOCK_CONFIG_MAX) {
        put_err(errbuf, errlen, path, ferror(f) ? "read error" : "file too large");
        rc = DLOCK_EINVAL;
    } else {
        rc = from_text(out, text, len, path, errbuf, errlen);
    }
    fclose(f);
    free(text);
    return rc;
}
