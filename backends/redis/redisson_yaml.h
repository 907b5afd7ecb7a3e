/*
 * Redis backend: the Redisson YAML configuration's parser
 * (backends/redis/redisson_yaml.c, on libyaml; redisson_yaml_none.c in a
 * build without it), which turns a redisson.yaml into a parsed
 * configuration (core/config.h: the URL, the client options and the
 * Redis part) as the JSON configuration does. register.c registers it as
 * the format "yaml" (dlock__config_register_format);
 * objects/runtime/config.c makes the client from the result, on the one
 * path both formats share.
 */
#ifndef DLOCK_BACKENDS_REDIS_REDISSON_YAML_H
#define DLOCK_BACKENDS_REDIS_REDISSON_YAML_H

#include <stddef.h>

#include "core/config.h"

/* Parses len bytes of a Redisson YAML configuration (api/dlock/config.h
 * tells what is read) into out: out->url is the dlock URL the server
 * section makes (credentials percent-encoded into it), every option not
 * given keeps its default; out->urls is never set. Fields that concern
 * only Java are logged (dlock__log, DLOCK_LOG_INFO), one line each. On
 * failure errbuf gets "<line>:<column>: what", naming the field, never
 * quoting a value, and out holds nothing to free.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM. */
/* The bounds on a document (api/dlock/config.h says them too): under
 * them, a file of DLOCK_CONFIG_MAX bytes is read in linear time and
 * memory, whatever its shape. */
#define DLOCK_YAML_DEPTH_MAX 2048     /* nested collections, as JSON's */
/* ... of which flow collections ([ ], { }): libyaml rescans every open one
 * at each token, so their depth multiplies the cost of the whole text */
#define DLOCK_YAML_FLOW_DEPTH_MAX 64
#define DLOCK_YAML_NODES_MAX 16384    /* scalars, collections and aliases */
#define DLOCK_YAML_ANCHORS_MAX 256    /* &anchors */
#define DLOCK_YAML_ALIASES_MAX 1024   /* *aliases */
#define DLOCK_YAML_EXPANDED_MAX 65536 /* bytes of text the aliases stand for, in all */
#define DLOCK_YAML_ADDRESS_MAX 1024   /* one address, "redis://host:port" */
#define DLOCK_YAML_URL_MAX 65536      /* the URL made of the section */

int dlock__redisson_yaml_parse(dlock__config *out, const char *text, size_t len,
                               char *errbuf, size_t errlen);
/* The same from d's defaults (dlock__config_start) rather than the
 * library's: the format "yaml". */
int dlock__redisson_yaml_parse_from(dlock__config *out, const dlock_config_defaults *d,
                                    const char *text, size_t len, char *errbuf,
                                    size_t errlen);

#endif /* DLOCK_BACKENDS_REDIS_REDISSON_YAML_H */
