/*
 * dlock — the JSON configuration's parser (core/config_json.c), which
 * turns the text into a parsed configuration (core/config.h): the URL(s)
 * and the client options are core's keys, every other key is a backend's
 * (its registered part); objects/runtime/config.c makes the client from
 * the result. The split keeps Jansson out of objects/.
 */
#ifndef DLOCK_CORE_CONFIG_JSON_H
#define DLOCK_CORE_CONFIG_JSON_H

#include <stddef.h>

#include "config.h"

/* Parses len bytes of JSON text (api/dlock/config.h tells the format) into
 * out: every field not given keeps its default. Exactly one of "url" and
 * "urls" (a client set, 1..DLOCK_CONFIG_MAX_URLS URLs) is required. On failure errbuf gets
 * "<line>:<column>: what", naming the field, and out holds nothing to free.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM. */
int dlock__config_parse(dlock__config *out, const char *text, size_t len,
                        char *errbuf, size_t errlen);

/* dlock__config_parse from d's defaults (dlock__config_start) rather than
 * the library's. */
int dlock__config_parse_from(dlock__config *out, const dlock_config_defaults *d,
                             const char *text, size_t len, char *errbuf, size_t errlen);

#endif /* DLOCK_CORE_CONFIG_JSON_H */
