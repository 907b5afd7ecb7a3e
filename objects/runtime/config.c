/*
 * dlock — a client from a configuration (api/dlock/config.h), JSON or
 * Redisson's YAML: the text is parsed into a configuration (core/config.h)
 * by core/config_json.c (the Jansson side, each backend's keys into its
 * part) or by the format the Redis backend registered (its Redisson YAML
 * reader, on libyaml), and the client is made here, on one path for both.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config_json.h"
#include "core/errbuf.h"
#include "core/wipe.h"
#include "dlock/config.h"
#include "objects/runtime/client.h"

/* "<where>:<line>:<column>: what" for a position, "<where>: what" else. */
static void put_err(char *errbuf, size_t errlen, const char *where, const char *msg)
{
    if (errbuf && errlen > 0)
        snprintf(errbuf, errlen, "%s:%s%s", where,
                 msg[0] >= '0' && msg[0] <= '9' ? "" : " ", msg);
}

/* A format: its name (where a string's errors say they are) and its
 * parser. */
typedef struct format {
    const char *name;
    int (*parse)(dlock__config *out, const dlock_config_defaults *d, const char *text,
                 size_t len, char *errbuf, size_t errlen);
} format;

/* The Redisson YAML: the Redis backend's format (core/config.h). */
static int yaml_parse(dlock__config *out, const dlock_config_defaults *d, const char *text,
                      size_t len, char *errbuf, size_t errlen)
{
    dlock__config_parse_fn parse = dlock__config_format("yaml");

    if (!parse)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOTSUP,
                                "no backend of this libdlock reads the Redisson YAML");
    return parse(out, d, text, len, errbuf, errlen);
}

static const format json_format = {"json", dlock__config_parse_from};
static const format yaml_format = {"yaml", yaml_parse};

/* Where a parsed configuration's clients go: one (set NULL) or a set of
 * up to cap (out[0..*n)), and from which format, with which defaults
 * (NULL: the library's), telling the options used (NULL: not asked). */
typedef struct target {
    dlock_client **out;
    size_t cap, *n;
    int set;
    const format *fmt;
    const dlock_config_defaults *defaults;
    dlock_client_options *used;
} target;

static int make_clients(const target *t, dlock__config *cfg, const char *where,
                        char *errbuf, size_t errlen)
{
    char detail[1024] = "", msg[1100];
    size_t i, count = cfg->urls ? cfg->nurls : 1;
    int rc = 0;

    if (!t->set && cfg->urls) {
        put_err(errbuf, errlen, where, "\"urls\" configures a client set: use "
                "dlock_client_set_from_json_string or _file");
        return DLOCK_EINVAL;
    }
    if (t->set && count > t->cap) {
        snprintf(msg, sizeof(msg), "%zu URLs for room for %zu clients", count, t->cap);
        put_err(errbuf, errlen, where, msg);
        return DLOCK_EINVAL;
    }
    for (i = 0; i < count && rc == 0; i++) {
        const char *url = cfg->urls ? cfg->urls[i] : cfg->url;
        rc = dlock__client_connect(&t->out[i], url, dlock__config_backend_options(cfg),
                                   &cfg->client, detail, sizeof(detail));
        if (rc != 0) {
            if (t->set)
                snprintf(msg, sizeof(msg), "urls[%zu]: %s", i,
                         detail[0] ? detail : dlock_strerror(rc));
            else
                snprintf(msg, sizeof(msg), "%s", detail[0] ? detail : dlock_strerror(rc));
            put_err(errbuf, errlen, where, msg);
            while (i > 0) { /* all or nothing */
                i--;
                dlock_client_free(t->out[i]);
                t->out[i] = NULL;
            }
        }
    }
    if (rc == 0 && t->set)
        *t->n = count;
    return rc;
}

static int from_text(const target *t, const char *text, size_t len,
                     const char *where, char *errbuf, size_t errlen)
{
    char detail[1024] = "";
    dlock__config cfg;
    int rc;

    if (errbuf && errlen > 0)
        errbuf[0] = '\0';
    if (t->defaults && t->defaults->version != 1) {
        put_err(errbuf, errlen, where, "dlock_config_defaults: version must be 1");
        return DLOCK_EINVAL;
    }
    rc = t->fmt->parse(&cfg, t->defaults, text, len, detail, sizeof(detail));
    if (rc != 0) {
        put_err(errbuf, errlen, where, detail);
        return rc;
    }
    rc = make_clients(t, &cfg, where, errbuf, errlen);
    if (rc == 0 && t->used) {
        *t->used = cfg.client;
        t->used->client_name = NULL; /* freed below */
    }
    dlock__config_fini(&cfg);
    return rc;
}

static int from_string(const target *t, const char *text, char *errbuf, size_t errlen)
{
    if (!text) {
        put_err(errbuf, errlen, t->fmt->name, "the text must not be NULL");
        return DLOCK_EINVAL;
    }
    return from_text(t, text, strlen(text), t->fmt->name, errbuf, errlen);
}

static int from_file(const target *t, const char *path, char *errbuf, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f;
    int rc;

    if (!path) {
        put_err(errbuf, errlen, t->fmt->name, "path must not be NULL");
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
        rc = from_text(t, text, len, path, errbuf, errlen);
    }
    fclose(f);
    dlock__wipe(text, len); /* its URLs and passwords */
    free(text);
    return rc;
}

static int one(target *t, const format *fmt, dlock_client **out, char *errbuf,
               size_t errlen)
{
    memset(t, 0, sizeof(*t));
    t->out = out;
    t->cap = 1;
    t->fmt = fmt;
    if (out)
        *out = NULL;
    else
        put_err(errbuf, errlen, fmt->name, "out must not be NULL");
    return out ? 0 : DLOCK_EINVAL;
}

static int set(target *t, dlock_client **out, size_t cap, size_t *n, char *errbuf,
               size_t errlen)
{
    size_t i;

    memset(t, 0, sizeof(*t));
    t->out = out;
    t->cap = cap;
    t->n = n;
    t->set = 1;
    t->fmt = &json_format;
    if (n)
        *n = 0;
    for (i = 0; out && i < cap; i++)
        out[i] = NULL;
    if (!out || !n || cap == 0) {
        put_err(errbuf, errlen, "json", "out and n must not be NULL, cap not 0");
        return DLOCK_EINVAL;
    }
    return 0;
}

/* One client, in fmt, from the text or (file) the file at arg, with
 * defaults and the options used (both may be NULL). */
static int one_from(const format *fmt, dlock_client **out, const char *arg, int file,
                    const dlock_config_defaults *defaults, dlock_client_options *used,
                    char *errbuf, size_t errlen)
{
    target t;
    int rc = one(&t, fmt, out, errbuf, errlen);

    if (rc != 0)
        return rc;
    t.defaults = defaults;
    t.used = used;
    return file ? from_file(&t, arg, errbuf, errlen) : from_string(&t, arg, errbuf, errlen);
}

int dlock_client_from_json_string(dlock_client **out, const char *json,
                                  char *errbuf, size_t errlen)
{
    return one_from(&json_format, out, json, 0, NULL, NULL, errbuf, errlen);
}

int dlock_client_from_json_file(dlock_client **out, const char *path,
                                char *errbuf, size_t errlen)
{
    return one_from(&json_format, out, path, 1, NULL, NULL, errbuf, errlen);
}

int dlock_client_set_from_json_string(dlock_client **out, size_t cap, size_t *n,
                                      const char *json, char *errbuf, size_t errlen)
{
    target t;
    int rc = set(&t, out, cap, n, errbuf, errlen);

    return rc != 0 ? rc : from_string(&t, json, errbuf, errlen);
}

int dlock_client_set_from_json_file(dlock_client **out, size_t cap, size_t *n,
                                    const char *path, char *errbuf, size_t errlen)
{
    target t;
    int rc = set(&t, out, cap, n, errbuf, errlen);

    return rc != 0 ? rc : from_file(&t, path, errbuf, errlen);
}

int dlock_client_from_redisson_yaml_string(dlock_client **out, const char *yaml,
                                           char *errbuf, size_t errlen)
{
    return one_from(&yaml_format, out, yaml, 0, NULL, NULL, errbuf, errlen);
}

int dlock_client_from_redisson_yaml_file(dlock_client **out, const char *path,
                                         char *errbuf, size_t errlen)
{
    return one_from(&yaml_format, out, path, 1, NULL, NULL, errbuf, errlen);
}

int dlock_client_from_json_file_with(dlock_client **out, const char *path,
                                     const dlock_config_defaults *defaults,
                                     dlock_client_options *used, char *errbuf, size_t errlen)
{
    return one_from(&json_format, out, path, 1, defaults, used, errbuf, errlen);
}

int dlock_client_set_from_json_file_with(dlock_client **out, size_t cap, size_t *n,
                                         const char *path,
                                         const dlock_config_defaults *defaults,
                                         dlock_client_options *used, char *errbuf,
                                         size_t errlen)
{
    target t;
    int rc = set(&t, out, cap, n, errbuf, errlen);

    if (rc != 0)
        return rc;
    t.defaults = defaults;
    t.used = used;
    return from_file(&t, path, errbuf, errlen);
}

int dlock_client_from_redisson_yaml_file_with(dlock_client **out, const char *path,
                                              const dlock_config_defaults *defaults,
                                              dlock_client_options *used, char *errbuf,
                                              size_t errlen)
{
    return one_from(&yaml_format, out, path, 1, defaults, used, errbuf, errlen);
}
