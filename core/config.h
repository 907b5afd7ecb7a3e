/*
 * dlock — a parsed configuration (api/dlock/config.h), whatever its format:
 * the URL(s), the client options, and one part per backend that keeps
 * configuration keys (its options struct, filled from its keys). core/
 * parses the document (core/config_json.c) and knows no backend's keys:
 * each backend registers its part (dlock__backend_register_config, from
 * its dlock__backend_register_<folder>) as it registers its schemes, and
 * a backend may register a format of its own (the Redis backend's
 * Redisson YAML reader: dlock__config_register_format).
 * objects/runtime/config.c makes the clients from the result.
 */
#ifndef DLOCK_CORE_CONFIG_H
#define DLOCK_CORE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "dlock/client.h"
#include "dlock/config.h"

/* Most URLs in "urls" (a Redlock's nodes: DLOCK_REDLOCK_MAX_NODES). */
#define DLOCK_CONFIG_MAX_URLS 64

/* Most backends with a part. */
#define DLOCK__CONFIG_PARTS_MAX 4

/* What a field holds: the url, the urls, another string (a TLS path or
 * name; max > 0: at most max bytes), a flag (a boolean, or 0/1), or an
 * integer within [min, max] (64 or 32 bits). */
enum { DLOCK__F_URL, DLOCK__F_URLS, DLOCK__F_STR, DLOCK__F_FLAG, DLOCK__F_I64, DLOCK__F_INT };

/* A top-level key of the JSON configuration. */
typedef struct dlock__config_field {
    const char *name;
    int kind;      /* DLOCK__F_* */
    size_t offset; /* in its part's options (core's own: in dlock__config) */
    int64_t min, max;
} dlock__config_field;

/* A backend's part: its keys and the options struct they fill, which is
 * what its open function gets (api/dlock/sys/backend.h). The strings it
 * holds are its own (fini frees them). */
typedef struct dlock__backend_config {
    const char *name;                 /* "redis" */
    size_t size;                      /* of its options struct */
    const dlock__config_field *fields; /* its keys: F_STR (malloc'ed
                                        * strings), F_FLAG, F_I64, F_INT */
    size_t nfields;
    /* Its defaults into opts (size bytes); lazy_connect: the caller's
     * (dlock_config_defaults), -1 for the format's own. */
    void (*start)(void *opts, int lazy_connect);
    /* After a JSON document's keys: set when it gave "urls" (a client
     * set), to settle what start left to the format. */
    void (*finish)(void *opts, int set);
    /* Frees (and wipes, for a secret) the strings in opts. */
    void (*fini)(void *opts);
} dlock__backend_config;

/* Registers a backend's part (bc stays valid: a static); from its
 * dlock__backend_register_<folder>() (core/registry.c runs them once).
 * 0, or DLOCK_ENOMEM past DLOCK__CONFIG_PARTS_MAX. */
int dlock__backend_register_config(const dlock__backend_config *bc);

typedef struct dlock__config {
    char *url;   /* malloc'ed */
    char **urls; /* a client set ("urls"): nurls malloc'ed strings */
    size_t nurls;
    dlock_client_options client; /* its client_name is malloc'ed */
    size_t nparts;
    struct {
        const dlock__backend_config *bc;
        void *opts; /* malloc'ed, bc->size bytes */
    } parts[DLOCK__CONFIG_PARTS_MAX];
} dlock__config;

/* Where a parse starts from: the defaults of every field (d: the caller's,
 * dlock_config_defaults, api/dlock/config.h; NULL: the library's): the
 * client options from d (not its client_name: out's strings are out's
 * own), each registered part from its start. 0, or DLOCK_ENOMEM (out
 * holds nothing to free). */
int dlock__config_start(dlock__config *out, const dlock_config_defaults *d);

/* Frees what a parse allocated; NULL is a no-op. */
void dlock__config_fini(dlock__config *c);

/* The options of the part called name, NULL when no backend registered
 * it. */
void *dlock__config_part(const dlock__config *c, const char *name);

/* The options every backend opened from c gets (dlock_backend_open's
 * options): those of the first part registered, the built-in Redis
 * backend's (a dlock_redis_options), whatever the URL's scheme. So a
 * backend registered at run time and opened from a configuration gets a
 * dlock_redis_options too, as it always has (the Redis keys are accepted
 * with any URL: api/dlock/config.h); NULL with no part. */
const void *dlock__config_backend_options(const dlock__config *c);

/* A configuration format read by a backend (the Redisson YAML): its
 * parser, from d's defaults (dlock__config_start), errors as
 * dlock__config_parse's. */
typedef int (*dlock__config_parse_fn)(dlock__config *out, const dlock_config_defaults *d,
                                      const char *text, size_t len, char *errbuf,
                                      size_t errlen);
/* Registers parse for the format called name (a static string), as
 * dlock__backend_register_config. 0 or DLOCK_ENOMEM. */
int dlock__config_register_format(const char *name, dlock__config_parse_fn parse);
/* The parser of the format called name, NULL for none. Never blocks but
 * for the built-in backends' one registration. */
dlock__config_parse_fn dlock__config_format(const char *name);

#endif /* DLOCK_CORE_CONFIG_H */
