/*
 * dlock — the JSON configuration's parser (core/config_json.c), which
 * turns the text into the options structs; objects/runtime/config.c
 * makes the client from them. The split keeps Jansson out of objects/.
 */
#ifndef DLOCK_CORE_CONFIG_JSON_H
#define DLOCK_CORE_CONFIG_JSON_H

#include <stddef.h>

#include "dlock/client.h"
#include "dlock/config.h"
#include "dlock/redis.h"

/* Most URLs in "urls" (a Redlock's nodes: DLOCK_REDLOCK_MAX_NODES). */
#define DLOCK_CONFIG_MAX_URLS 64

typedef struct dlock__config {
    char *url; /* malloc'ed */
    char **urls; /* a client set ("urls"): nurls malloc'ed strings */
    size_t nurls;
    dlock_redis_options redis; /* its tls_* strings are malloc'ed */
    dlock_client_options client;
} dlock__config;

/* Parses len bytes of JSON text (api/dlock/config.h tells the format) into
 * out: every field not given keeps its default. Exactly one of "url" and
 * "urls" (a client set, 1..DLOCK_CONFIG_MAX_URLS URLs) is required. On failure errbuf gets
 * "<line>:<column>: what", naming the field, and out holds nothing to free.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM. */
int dlock__config_parse(dlock__config *out, const char *text, size_t len,
                        char *errbuf, size_t errlen);

/* Where a parse starts from: the defaults of the fields the text does not
 * give (dlock_config_defaults, api/dlock/config.h; NULL: the library's).
 * out->client and out->redis.lazy_connect start from d; d's client_name
 * is not taken (out's strings are out's own). */
void dlock__config_start(dlock__config *out, const dlock_config_defaults *d);

/* dlock__config_parse from d's defaults rather than the library's. */
int dlock__config_parse_from(dlock__config *out, const dlock_config_defaults *d,
                             const char *text, size_t len, char *errbuf, size_t errlen);

/* Frees what parse allocated. */
void dlock__config_fini(dlock__config *c);

#endif /* DLOCK_CORE_CONFIG_JSON_H */
