/*
 * dlock — the parts of a configuration (core/config.h): the backends'
 * registrations and a parsed configuration's life.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "registry.h"
#include "wipe.h"

#define FORMATS_MAX 4

/* Written during the built-in backends' one registration (under its
 * pthread_once), read after it. */
static const dlock__backend_config *parts[DLOCK__CONFIG_PARTS_MAX];
static size_t nparts;
static struct {
    const char *name;
    dlock__config_parse_fn parse;
} formats[FORMATS_MAX];
static size_t nformats;

int dlock__backend_register_config(const dlock__backend_config *bc)
{
    if (nparts == DLOCK__CONFIG_PARTS_MAX)
        return DLOCK_ENOMEM;
    parts[nparts++] = bc;
    return 0;
}

int dlock__config_register_format(const char *name, dlock__config_parse_fn parse)
{
    if (nformats == FORMATS_MAX)
        return DLOCK_ENOMEM;
    formats[nformats].name = name;
    formats[nformats++].parse = parse;
    return 0;
}

dlock__config_parse_fn dlock__config_format(const char *name)
{
    size_t i;

    dlock__backends_builtin_once();
    for (i = 0; i < nformats; i++)
        if (strcmp(formats[i].name, name) == 0)
            return formats[i].parse;
    return NULL;
}

int dlock__config_start(dlock__config *out, const dlock_config_defaults *d)
{
    static const dlock_client_options client_defaults = DLOCK_CLIENT_OPTIONS_INIT;
    size_t i;

    dlock__backends_builtin_once();
    memset(out, 0, sizeof(*out));
    out->client = d && d->client ? *d->client : client_defaults;
    out->client.version = client_defaults.version;
    out->client.client_name = NULL;
    for (i = 0; i < nparts; i++) {
        out->parts[i].bc = parts[i];
        if (!(out->parts[i].opts = calloc(1, parts[i]->size))) {
            dlock__config_fini(out);
            return DLOCK_ENOMEM;
        }
        out->nparts++;
        parts[i]->start(out->parts[i].opts, d ? d->lazy_connect : -1);
    }
    return 0;
}

/* The URLs may hold passwords, and so may a part's strings. */
void dlock__config_fini(dlock__config *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->nurls; i++)
        dlock__wipe_free(c->urls[i]);
    free(c->urls);
    c->urls = NULL;
    c->nurls = 0;
    dlock__wipe_free(c->url);
    c->url = NULL;
    free((char *)c->client.client_name);
    c->client.client_name = NULL;
    for (i = 0; i < c->nparts; i++) {
        c->parts[i].bc->fini(c->parts[i].opts);
        free(c->parts[i].opts);
        c->parts[i].opts = NULL;
    }
    c->nparts = 0;
}

void *dlock__config_part(const dlock__config *c, const char *name)
{
    size_t i;

    for (i = 0; i < c->nparts; i++)
        if (strcmp(c->parts[i].bc->name, name) == 0)
            return c->parts[i].opts;
    return NULL;
}

const void *dlock__config_backend_options(const dlock__config *c)
{
    return c->nparts ? c->parts[0].opts : NULL;
}
