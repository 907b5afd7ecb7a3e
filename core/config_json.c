/*
 * dlock — the JSON configuration's parser (api/dlock/config.h), on Jansson.
 *
 * Jansson tells the position of a syntax error but keeps no positions for
 * the values it parsed, so the position of a field found unknown or
 * ill-typed afterwards comes from a small scan of the text for that
 * top-level key (strings and nesting are followed, so a key's name inside a
 * string value or a nested object is never mistaken for it).
 *
 * No message quotes the text: any string of it may hold a password (the
 * url's, sentinel_password), and a broken one moves its pieces into what
 * the parser takes for a token, a field name or a number. A message says
 * where (line:column), what kind of error, and which field, by the name
 * dlock knows it by (an unknown name gets the nearest known one
 * suggested, not echoed). Jansson's own text is not used: it quotes up to
 * 20 bytes of the token it stopped at. And every string that may hold a
 * secret is wiped before it is freed, Jansson's copies included.
 */
#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edit_distance.h"
#include "errbuf.h"
#include "config_json.h"
#include "wipe.h"

/* The fields: the url, another string (a TLS path or name; max > 0: at most
 * max bytes), a flag (a boolean, or 0/1), or an integer within [min, max]. */
enum { F_URL, F_URLS, F_STR, F_FLAG, F_I64, F_INT };

typedef struct field {
    const char *name;
    int kind;
    size_t offset; /* in dlock__config */
    int64_t min, max;
} field;

/* Every integer field but pool_size, sync_replicas, connections,
 * max_reply_bytes and cluster_max_nodes is a duration: DLOCK_TIME_MAX_MS
 * at most. */
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
    {"lazy_connect", F_FLAG, offsetof(dlock__config, redis.lazy_connect), 0, 1},
    {"max_reply_bytes", F_I64, offsetof(dlock__config, redis.max_reply_bytes),
     DLOCK_REDIS_MAX_REPLY_MIN, DLOCK_REDIS_MAX_REPLY_LIMIT},
    {"cluster_max_nodes", F_INT, offsetof(dlock__config, redis.cluster_max_nodes), 1,
     DLOCK_REDIS_CLUSTER_NODES_LIMIT},
    I64("fair_waiter_timeout_ms", client.fair_waiter_timeout_ms, 0),
    {"describe_owner", F_FLAG, offsetof(dlock__config, client.describe_owner), 0, 1},
    {"client_name", F_STR, offsetof(dlock__config, client.client_name), 0,
     DLOCK_CLIENT_NAME_MAX},
    {"metrics_names_max", F_I64, offsetof(dlock__config, client.metrics_names_max), 0,
     DLOCK_METRICS_NAMES_MAX},
    I64("loop_slice_ms", client.loop_slice_ms, 0),
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

/* The field whose name is within 2 edits of key (the nearest), or NULL:
 * what a misspelt field is told to be, since key itself is not quoted. */
static const field *nearest(const char *key)
{
    const field *best = NULL;
    size_t i, d, best_d = 3;

    for (i = 0; i < NFIELDS; i++) {
        d = dlock__edit_distance(key, fields[i].name);
        if (d < best_d) {
            best = &fields[i];
            best_d = d;
        }
    }
    return best;
}

/* Jansson's syntax errors, by how its text starts: the kind of error, in
 * dlock's words. The rest of its text is input (" near '<token>'", a byte,
 * a \u escape), never shown. */
static const struct {
    const char *jansson, *kind;
} syntax_kinds[] = {
    {"unable to decode byte", "invalid UTF-8"},
    {"premature end of input", "premature end of input"},
    {"unexpected newline", "a line break inside a string (write it \\n)"},
    {"control character", "a control character inside a string (write it \\t, \\n, "
                          "\\u0001...)"},
    {"invalid escape", "invalid escape inside a string (valid: \\\" \\\\ \\/ \\b "
                       "\\f \\n \\r \\t \\uXXXX)"},
    {"invalid Unicode", "invalid \\u escape inside a string"},
    {"\\u0000 is not allowed", "\\u0000 inside a string"},
    {"NUL byte in object key", "\\u0000 inside a field name"},
    {"too big", "integer too big"},
    {"real number overflow", "real number too big"},
    {"maximum parsing depth", "nested too deeply"},
    {"string or '}' expected", "a field name (in quotes) or '}' expected"},
    {"':' expected", "':' expected after a field name"},
    {"'}' expected", "',' or '}' expected"},
    {"']' expected", "',' or ']' expected"},
    {"'[' or '{' expected", "'{' expected"},
    {"end of file expected", "text after the end of the object"},
    {"invalid token", "invalid token (a value is a string in quotes, a number, true, false, "
                      "null, an object or an array)"},
    {"unexpected token", "unexpected token"},
};

/* The message of a syntax error in text[0..len): its position and its
 * kind. A field given twice is named when dlock knows the name (Jansson
 * stops right after the key, its closing quote at position - 1). */
static int syntax_fail(char *errbuf, size_t errlen, const json_error_t *err,
                       const char *text, size_t len)
{
    const char *kind = "invalid JSON";
    size_t i;

    /* Jansson's column is that of the last character read: 0 before the
     * first one of a line (an empty file: "1:0"). Positions count from 1. */
    int line = err->line < 1 ? 1 : err->line, column = err->column < 1 ? 1 : err->column;

    if (json_error_code(err) == json_error_duplicate_key) {
        const field *f = NULL;
        size_t end = (size_t)err->position, start = end > 0 ? end - 1 : 0;
        char key[65];
        if (end >= 2 && end <= len && text[end - 1] == '"') {
            while (start > 0 && text[start - 1] != '"')
                start--;
            if (start > 0 && end - 1 - start < sizeof(key)) {
                memcpy(key, text + start, end - 1 - start);
                key[end - 1 - start] = '\0';
                f = find(key);
            }
        }
        if (f)
            return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                    "%d:%d: field \"%s\" given twice", line, column, f->name);
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                "%d:%d: a field given twice", line, column);
    }
    for (i = 0; i < sizeof(syntax_kinds) / sizeof(syntax_kinds[0]); i++)
        if (strncmp(err->text, syntax_kinds[i].jansson,
                    strlen(syntax_kinds[i].jansson)) == 0) {
            kind = syntax_kinds[i].kind;
            break;
        }
    if (json_error_code(err) == json_error_premature_end_of_input &&
        strstr(kind, "end of input") == NULL)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                "%d:%d: premature end of input (%s)", line, column, kind);
    return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL, "%d:%d: %s", line, column, kind);
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
        dlock__wipe_free(out->url);
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
        if (f->max > 0 && json_string_length(v) > (size_t)f->max)
            return field_fail(errbuf, errlen, text, len, f->name,
                              "longer than %lld bytes", (long long)f->max);
        copy = strdup(json_string_value(v));
        if (!copy)
            return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
        dlock__wipe_free((char *)*slot);
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
    /* The number is not shown: a broken string before it may have made a
     * piece of a secret this field's value. */
    if (n < f->min || n > f->max)
        return field_fail(errbuf, errlen, text, len, f->name,
                          "out of range (%lld..%lld)", (long long)f->min,
                          (long long)f->max);
    if (f->kind == F_INT || f->kind == F_FLAG)
        *(int *)(base + f->offset) = (int)n;
    else
        *(int64_t *)(base + f->offset) = (int64_t)n;
    return 0;
}

/* The URLs may hold passwords, sentinel_password is one. */
void dlock__config_fini(dlock__config *c)
{
    if (c) {
        size_t i;
        for (i = 0; i < c->nurls; i++)
            dlock__wipe_free(c->urls[i]);
        free(c->urls);
        c->urls = NULL;
        c->nurls = 0;
        dlock__wipe_free(c->url);
        free((char *)c->redis.tls_cacert);
        free((char *)c->redis.tls_cacertdir);
        free((char *)c->redis.tls_cert);
        free((char *)c->redis.tls_key);
        free((char *)c->redis.tls_sni);
        free((char *)c->redis.sentinel_user);
        dlock__wipe_free((char *)c->redis.sentinel_password);
        free((char *)c->client.client_name);
        c->client.client_name = NULL;
        c->redis.sentinel_user = c->redis.sentinel_password = NULL;
        c->url = NULL;
        c->redis.tls_cacert = c->redis.tls_cacertdir = c->redis.tls_cert = NULL;
        c->redis.tls_key = c->redis.tls_sni = NULL;
    }
}

/* Jansson's copies of the strings (top-level values and array elements:
 * the url, urls, sentinel_password...), wiped before Jansson frees them.
 * Its buffers of a parse that failed are out of reach. */
static void wipe_strings(json_t *root)
{
    const char *key;
    json_t *v;
    size_t i;

    json_object_foreach(root, key, v) {
        for (i = 0; i < (json_is_array(v) ? json_array_size(v) : 1); i++) {
            json_t *s = json_is_array(v) ? json_array_get(v, i) : v;
            if (json_is_string(s))
                dlock__wipe((char *)json_string_value(s), json_string_length(s));
        }
    }
}

void dlock__config_start(dlock__config *out, const dlock_config_defaults *d)
{
    static const dlock_redis_options redis_defaults = DLOCK_REDIS_OPTIONS_INIT;
    static const dlock_client_options client_defaults = DLOCK_CLIENT_OPTIONS_INIT;

    memset(out, 0, sizeof(*out));
    out->redis = redis_defaults;
    out->client = d && d->client ? *d->client : client_defaults;
    out->client.version = client_defaults.version;
    out->client.client_name = NULL;
    out->redis.lazy_connect = d ? d->lazy_connect : -1; /* -1: the format's */
}

int dlock__config_parse(dlock__config *out, const char *text, size_t len,
                        char *errbuf, size_t errlen)
{
    return dlock__config_parse_from(out, NULL, text, len, errbuf, errlen);
}

int dlock__config_parse_from(dlock__config *out, const dlock_config_defaults *d,
                             const char *text, size_t len, char *errbuf, size_t errlen)
{
    json_error_t err;
    json_t *root, *v;
    const char *key;
    int rc = 0;

    dlock__config_start(out, d);
    /* A duplicate field is an error (with its position) rather than a
     * silent "last one wins". */
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return syntax_fail(errbuf, errlen, &err, text, len);
    if (!json_is_object(root)) {
        json_decref(root);
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "1:1: the configuration must be a JSON object");
    }
    json_object_foreach(root, key, v) {
        const field *f = find(key);
        if (!f) {
            /* Not quoted: a quote, a comma and a quote inside a secret
             * make a field name of its rest. */
            pos p = key_position(text, len, key);
            const field *near = nearest(key);
            rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                  "%d:%d: unknown field%s%s%s", p.line, p.column,
                                  near ? " (did you mean \"" : " (not a field of the "
                                                               "configuration: "
                                                               "dlock/config.h)",
                                  near ? near->name : "", near ? "\"?)" : "");
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
    /* A client set connects lazily unless told otherwise (by the text or
     * the caller's defaults): a Redlock must start with a minority of its
     * nodes down. */
    if (out->redis.lazy_connect == -1)
        out->redis.lazy_connect = out->urls != NULL;
    wipe_strings(root);
    json_decref(root);
    if (rc != 0)
        dlock__config_fini(out);
    return rc;
}
