/*
 * dlock — the JSON configuration's parser (api/dlock/config.h), on Jansson.
 *
 * Jansson tells the position of a syntax error but keeps no positions for
 * the values it parsed, so the position of a field found unknown or
 * ill-typed afterwards comes from a small scan of the text for that
 * top-level key (strings and nesting are followed, so a key's name inside a
 * string value or a nested object is never mistaken for it).
 */
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "config_json.h"

/* The fields: the url, another string (a TLS path or name), a flag (a
 * boolean, or 0/1), or an integer within [min, max]. */
enum { F_URL, F_URLS, F_STR, F_FLAG, F_I64, F_INT };

typedef struct field {
    const char *name;
    int kind;
    size_t offset; /* in dlock__config */
    int64_t min, max;
} field;

/* Every integer field but pool_size, sync_replicas and connections is a duration: DLOCK_TIME_MAX_MS at most. */
#define I64(name, where, min) \
    {name, F_I64, offsetof(dlock__config, where), min, DLOCK_TIME_MAX_MS}
#define STR(name, where) {name, F_STR, offsetof(dlock__config, where), 0, 0}

static const field fields[] = {
    {"url", F_URL, 0, 0, 0},
    {"urls", F_URLS, 0, 1, DLOCK_CONFIG_MAX_URLS},
    I64("connect_timeout_ms", redis.connect_timeout_ms, 0),
    I64("command_timeout_ms", redis.command_timeout_ms, 0),
    {"pool_size", F_INT, offsetof(dlock__config, redis.pool_size), 1, 4096},
    I64("reconnect_min_ms", redis.reconnect_min_ms, 0),
    I64("reconnect_max_ms", redis.reconnect_max_ms, 0),
    I64("watchdog_timeout_ms", client.watchdog_timeout_ms, 3),
    I64("max_hold_ms", client.max_hold_ms, 0),
    I64("fair_wait_slack_ms", client.fair_wait_slack_ms, 1),
    I64("budget_slack_ms", client.budget_slack_ms, 0),
    STR("tls_cacert", redis.tls_cacert),
    STR("tls_cacertdir", redis.tls_cacertdir),
    STR("tls_cert", redis.tls_cert),
    STR("tls_key", redis.tls_key),
    STR("tls_sni", redis.tls_sni),
    {"tls_insecure", F_FLAG, offsetof(dlock__config, redis.tls_insecure), 0, 1},
    STR("sentinel_user", redis.sentinel_user),
    STR("sentinel_password", redis.sentinel_password),
    {"sync_replicas", F_INT, offsetof(dlock__config, redis.sync_replicas), -1,
     DLOCK_SYNC_REPLICAS_MAX},
    I64("sync_timeout_ms", redis.sync_timeout_ms, 1),
    {"multiplex", F_FLAG, offsetof(dlock__config, redis.multiplex), 0, 1},
    {"connections", F_INT, offsetof(dlock__config, redis.connections), 1, 64},
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

/* ---- where a top-level key is in the text --------------------------------- */

typedef struct pos {
    int line, column;
} pos;

/* Lines and columns count from 1, columns in characters (UTF-8
 * continuation bytes do not count), as Jansson's do. */
static void advance(pos *p, unsigned char c)
{
    if (c == '\n') {
        p->line++;
        p->column = 0;
    } else if ((c & 0xC0) != 0x80) {
        p->column++;
    }
}

/* The position of the opening quote of the top-level key named key, or
 * {1, 1} (the object) when the scan cannot find it (e.g. the key is written
 * with \u escapes). */
static pos key_position(const char *text, size_t len, const char *key)
{
    pos p = {1, 0}, start = {1, 1}, here;
    size_t i = 0, klen = strlen(key);
    int depth = 0;

    while (i < len) {
        unsigned char c = (unsigned char)text[i];
        size_t s;

        advance(&p, c);
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == '"') {
            here = p;
            s = ++i;
            while (i < len && text[i] != '"') {
                if (text[i] == '\\' && i + 1 < len)
                    advance(&p, (unsigned char)text[i++]);
                advance(&p, (unsigned char)text[i++]);
            }
            if (i < len)
                advance(&p, '"');
            if (depth == 1 && i - s == klen && memcmp(text + s, key, klen) == 0) {
                size_t j = i + 1;
                while (j < len && text[j] != '\0' && strchr(" \t\r\n", text[j]))
                    j++;
                if (j < len && text[j] == ':')
                    return here;
            }
        }
        i++;
    }
    return start;
}

/* ---- the parse --------------------------------------------------------------- */

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static const field *find(const char *key)
{
    size_t i;

    for (i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].name, key) == 0)
            return &fields[i];
    return NULL;
}

static int field_fail(char *errbuf, size_t errlen, const char *text, size_t len,
                      const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

static int field_fail(char *errbuf, size_t errlen, const char *text, size_t len,
                      const char *key, const char *fmt, ...)
{
    pos p = key_position(text, len, key);
    char detail[128];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(detail, sizeof(detail), fmt, ap);
    va_end(ap);
    return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "%d:%d: field \"%.64s\": %s",
                             p.line, p.column, key, detail);
}

static int set_field(dlock__config *out, const field *f, json_t *v, char *errbuf,
                     size_t errlen, const char *text, size_t len)
{
    char *base = (char *)out;
    json_int_t n;

    if (f->kind == F_URL) {
        if (!json_is_string(v))
            return field_fail(errbuf, errlen, text, len, f->name,
                              "expected a string (a backend URL), got %s", type_name(v));
        free(out->url);
        out->url = strdup(json_string_value(v));
        return out->url ? 0 : dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    }
    if (f->kind == F_URLS) {
        size_t i, count = json_is_array(v) ? json_array_size(v) : 0;
        if (count < (size_t)f->min || count > (size_t)f->max)
            return field_fail(errbuf, errlen, text, len, f->name,
                              "expected an array of %lld..%lld URL strings, got %s",
                              (long long)f->min, (long long)f->max,
                              json_is_array(v) ? "another number of elements"
                                               : type_name(v));
        for (i = 0; i < count; i++)
            if (!json_is_string(json_array_get(v, i)) ||
                json_string_length(json_array_get(v, i)) == 0)
                return field_fail(errbuf, errlen, text, len, f->name,
                                  "element %zu: expected a non-empty string, got %s", i,
                                  type_name(json_array_get(v, i)));
        out->urls = calloc(count, sizeof(*out->urls));
        if (!out->urls)
            return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
        for (i = 0; i < count; i++) {
            out->urls[i] = strdup(json_string_value(json_array_get(v, i)));
            out->nurls += out->urls[i] != NULL;
            if (!out->urls[i])
                return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
        }
        return 0;
    }
    if (f->kind == F_STR) {
        const char **slot = (const char **)(base + f->offset);
        char *copy;
        if (!json_is_string(v) || json_string_length(v) == 0)
            return field_fail(errbuf, errlen, text, len, f->name,
                              "expected a non-empty string, got %s",
                              json_is_string(v) ? "\"\"" : type_name(v));
        if (strlen(json_string_value(v)) != json_string_length(v))
            return field_fail(errbuf, errlen, text, len, f->name,
                              "the string holds a NUL character");
        copy = strdup(json_string_value(v));
        if (!copy)
            return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
        free((char *)*slot);
        *slot = copy;
        return 0;
    }
    if (f->kind == F_FLAG && json_is_boolean(v)) {
        *(int *)(base + f->offset) = json_is_true(v);
        return 0;
    }
    if (!json_is_integer(v))
        return field_fail(errbuf, errlen, text, len, f->name,
                          f->kind == F_FLAG ? "expected true, false, 0 or 1, got %s"
                                            : "expected an integer, got %s",
                          type_name(v));
    n = json_integer_value(v);
    if (n < f->min || n > f->max)
        return field_fail(errbuf, errlen, text, len, f->name,
                          "%lld is out of range (%lld..%lld)", (long long)n,
                          (long long)f->min, (long long)f->max);
    if (f->kind == F_INT || f->kind == F_FLAG)
        *(int *)(base + f->offset) = (int)n;
    else
        *(int64_t *)(base + f->offset) = (int64_t)n;
    return 0;
}

void dlock__config_fini(dlock__config *c)
{
    if (c) {
        size_t i;
        for (i = 0; i < c->nurls; i++)
            free(c->urls[i]);
        free(c->urls);
        c->urls = NULL;
        c->nurls = 0;
        free(c->url);
        free((char *)c->redis.tls_cacert);
        free((char *)c->redis.tls_cacertdir);
        free((char *)c->redis.tls_cert);
        free((char *)c->redis.tls_key);
        free((char *)c->redis.tls_sni);
        free((char *)c->redis.sentinel_user);
        if (c->redis.sentinel_password) {
            /* a secret: wiped before it goes back to the allocator */
            volatile char *p = (volatile char *)c->redis.sentinel_password;
            while (*p)
                *p++ = '\0';
            free((char *)c->redis.sentinel_password);
        }
        c->redis.sentinel_user = c->redis.sentinel_password = NULL;
        c->url = NULL;
        c->redis.tls_cacert = c->redis.tls_cacertdir = c->redis.tls_cert = NULL;
        c->redis.tls_key = c->redis.tls_sni = NULL;
    }
}

int dlock__config_parse(dlock__config *out, const char *text, size_t len,
                        char *errbuf, size_t errlen)
{
    static const dlock_redis_options redis_defaults = DLOCK_REDIS_OPTIONS_INIT;
    static const dlock_client_options client_defaults = DLOCK_CLIENT_OPTIONS_INIT;
    json_error_t err;
    json_t *root, *v;
    const char *key;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    out->redis = redis_defaults;
    out->client = client_defaults;
    /* A duplicate field is an error (with its position) rather than a
     * silent "last one wins". */
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "%d:%d: %s", err.line,
                                 err.column, err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "1:1: the configuration must be a JSON object");
    }
    json_object_foreach(root, key, v) {
        const field *f = find(key);
        if (!f) {
            pos p = key_position(text, len, key);
            rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                   "%d:%d: unknown field \"%.64s\"", p.line, p.column, key);
            break;
        }
        if ((rc = set_field(out, f, v, errbuf, errlen, text, len)) != 0)
            break;
    }
    if (rc == 0 && out->url && out->urls)
        rc = field_fail(errbuf, errlen, text, len, "urls",
                        "give \"url\" (one client) or \"urls\" (a client set), not both");
    if (rc == 0 && !out->url && !out->urls)
        rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                               "1:1: field \"url\" is required (mock:, redis://..., rediss://... "
                               "or unix://...)");
    json_decref(root);
    if (rc != 0)
        dlock__config_fini(out);
    return rc;
}
