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

/* Every integer field but pool_size, sync_replicas, connections,
 * max_reply_bytes, cluster_max_nodes and metrics_names_max is a duration:
 * DLOCK_TIME_MAX_MS at most. */
#define I64(name, where, min) \
    {name, DLOCK__F_I64, offsetof(dlock__config, where), min, DLOCK_TIME_MAX_MS}

/* core's own keys: the URL(s) and the client options (offsets in
 * dlock__config). Every other key is a backend's (core/config.h). */
static const dlock__config_field fields[] = {
    {"url", DLOCK__F_URL, 0, 0, 0},
    {"urls", DLOCK__F_URLS, 0, 1, DLOCK_CONFIG_MAX_URLS},
    I64("watchdog_timeout_ms", client.watchdog_timeout_ms, 3),
    I64("max_hold_ms", client.max_hold_ms, 0),
    I64("fair_wait_slack_ms", client.fair_wait_slack_ms, 1),
    I64("budget_slack_ms", client.budget_slack_ms, 0),
    I64("fair_waiter_timeout_ms", client.fair_waiter_timeout_ms, 0),
    {"describe_owner", DLOCK__F_FLAG, offsetof(dlock__config, client.describe_owner), 0, 1},
    {"client_name", DLOCK__F_STR, offsetof(dlock__config, client.client_name), 0,
     DLOCK_CLIENT_NAME_MAX},
    {"metrics_names_max", DLOCK__F_I64, offsetof(dlock__config, client.metrics_names_max), 0,
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

/* A field and the struct it writes: core's (out itself) or a part's
 * options. */
typedef struct found {
    const dlock__config_field *f;
    char *base;
} found;

/* Calls each(f, base, arg) on every field, core's first, then each part's
 * in the order the backends registered them, until it returns nonzero. */
static void each_field(const dlock__config *c,
                       int (*each)(const dlock__config_field *f, char *base, void *arg),
                       void *arg)
{
    size_t i, k;

    for (i = 0; i < NFIELDS; i++)
        if (each(&fields[i], (char *)c, arg))
            return;
    for (k = 0; k < c->nparts; k++)
        for (i = 0; i < c->parts[k].bc->nfields; i++)
            if (each(&c->parts[k].bc->fields[i], c->parts[k].opts, arg))
                return;
}

typedef struct search {
    const char *key;
    found hit;
    size_t best_d;
} search;

static int is_named(const dlock__config_field *f, char *base, void *arg)
{
    search *s = arg;

    if (strcmp(f->name, s->key) != 0)
        return 0;
    s->hit.f = f;
    s->hit.base = base;
    return 1;
}

static int is_nearer(const dlock__config_field *f, char *base, void *arg)
{
    search *s = arg;
    size_t d = dlock__edit_distance(s->key, f->name);

    if (d < s->best_d) {
        s->hit.f = f;
        s->best_d = d;
    }
    return 0;
}

/* The field called key (hit.f NULL: none). */
static found find(const dlock__config *c, const char *key)
{
    search s = {key, {NULL, NULL}, 0};

    each_field(c, is_named, &s);
    return s.hit;
}

/* The field whose name is within 2 edits of key (the nearest), or NULL:
 * what a misspelt field is told to be, since key itself is not quoted. */
static const dlock__config_field *nearest(const dlock__config *c, const char *key)
{
    search s = {key, {NULL, NULL}, 3};

    each_field(c, is_nearer, &s);
    return s.hit.f;
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
static int syntax_fail(const dlock__config *c, char *errbuf, size_t errlen,
                       const json_error_t *err, const char *text, size_t len)
{
    const char *kind = "invalid JSON";
    size_t i;

    /* Jansson's column is that of the last character read: 0 before the
     * first one of a line (an empty file: "1:0"). Positions count from 1. */
    int line = err->line < 1 ? 1 : err->line, column = err->column < 1 ? 1 : err->column;

    if (json_error_code(err) == json_error_duplicate_key) {
        const dlock__config_field *f = NULL;
        size_t end = (size_t)err->position, start = end > 0 ? end - 1 : 0;
        char key[65];
        if (end >= 2 && end <= len && text[end - 1] == '"') {
            while (start > 0 && text[start - 1] != '"')
                start--;
            if (start > 0 && end - 1 - start < sizeof(key)) {
                memcpy(key, text + start, end - 1 - start);
                key[end - 1 - start] = '\0';
                f = find(c, key).f;
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

/* Sets field f of base (out or a part's options) from v. */
static int set_field(dlock__config *out, const dlock__config_field *f, char *base, json_t *v,
                     char *errbuf, size_t errlen, const char *text, size_t len)
{
    json_int_t n;

    if (f->kind == DLOCK__F_URL) {
        if (!json_is_string(v))
            return field_fail(errbuf, errlen, text, len, f->name,
                              "expected a string (a backend URL), got %s", type_name(v));
        dlock__wipe_free(out->url);
        out->url = strdup(json_string_value(v));
        return out->url ? 0 : dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    }
    if (f->kind == DLOCK__F_URLS) {
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
    if (f->kind == DLOCK__F_STR) {
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
    if (f->kind == DLOCK__F_FLAG && json_is_boolean(v)) {
        *(int *)(base + f->offset) = json_is_true(v);
        return 0;
    }
    if (!json_is_integer(v))
        return field_fail(errbuf, errlen, text, len, f->name,
                          f->kind == DLOCK__F_FLAG ? "expected true, false, 0 or 1, got %s"
                                            : "expected an integer, got %s",
                          type_name(v));
    n = json_integer_value(v);
    /* The number is not shown: a broken string before it may have made a
     * piece of a secret this field's value. */
    if (n < f->min || n > f->max)
        return field_fail(errbuf, errlen, text, len, f->name,
                          "out of range (%lld..%lld)", (long long)f->min,
                          (long long)f->max);
    if (f->kind == DLOCK__F_INT || f->kind == DLOCK__F_FLAG)
        *(int *)(base + f->offset) = (int)n;
    else
        *(int64_t *)(base + f->offset) = (int64_t)n;
    return 0;
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

    size_t i;

    if (dlock__config_start(out, d) != 0)
        return dlock__fail_into(errbuf, errlen, DLOCK_ENOMEM, "out of memory");
    /* A duplicate field is an error (with its position) rather than a
     * silent "last one wins". */
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) {
        rc = syntax_fail(out, errbuf, errlen, &err, text, len);
        dlock__config_fini(out);
        return rc;
    }
    if (!json_is_object(root)) {
        json_decref(root);
        dlock__config_fini(out);
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                 "1:1: the configuration must be a JSON object");
    }
    json_object_foreach(root, key, v) {
        found f = find(out, key);
        if (!f.f) {
            /* Not quoted: a quote, a comma and a quote inside a secret
             * make a field name of its rest. */
            pos p = key_position(text, len, key);
            const dlock__config_field *near = nearest(out, key);
            rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                  "%d:%d: unknown field%s%s%s", p.line, p.column,
                                  near ? " (did you mean \"" : " (not a field of the "
                                                               "configuration: "
                                                               "dlock/config.h)",
                                  near ? near->name : "", near ? "\"?)" : "");
            break;
        }
        if ((rc = set_field(out, f.f, f.base, v, errbuf, errlen, text, len)) != 0)
            break;
    }
    if (rc == 0 && out->url && out->urls)
        rc = field_fail(errbuf, errlen, text, len, "urls",
                        "give \"url\" (one client) or \"urls\" (a client set), not both");
    if (rc == 0 && !out->url && !out->urls)
        rc = dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                               "1:1: field \"url\" is required (mock:, redis://..., rediss://... "
                               "or unix://...)");
    /* What the parts left to the format (the Redis part: a client set
     * connects lazily unless told otherwise). */
    for (i = 0; rc == 0 && i < out->nparts; i++)
        if (out->parts[i].bc->finish)
            out->parts[i].bc->finish(out->parts[i].opts, out->urls != NULL);
    wipe_strings(root);
    json_decref(root);
    if (rc != 0)
        dlock__config_fini(out);
    return rc;
}
