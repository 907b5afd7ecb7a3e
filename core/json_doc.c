/*
 * dlock — the document builder the lock objects use for their state
 * reports (core/json_doc.h), on Jansson.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "json_doc.h"
#include "utf8.h"

json_t *dlock__json_object(void)
{
    return json_object();
}

json_t *dlock__json_array(void)
{
    return json_array();
}

int dlock__json_set(json_t *obj, const char *key, json_t *v)
{
    if (!obj || !v) {
        json_decref(v);
        return -1;
    }
    return json_object_set_new(obj, key, v) == 0 ? 0 : -1;
}

/* s[0..n) with every byte that is not part of well-formed UTF-8 replaced by
 * U+FFFD (3 bytes), as a Jansson string. */
static json_t *text(const char *s, size_t n)
{
    size_t i = 0, j = 0;
    char *buf;
    json_t *v;

    if (dlock__utf8_check(s, n) == n)
        return json_stringn(s, n);
    buf = malloc(3 * n + 1);
    if (!buf)
        return NULL;
    while (i < n) {
        size_t good = dlock__utf8_check(s + i, n - i);
        if (good > 0) {
            memcpy(buf + j, s + i, good);
            i += good;
            j += good;
            continue;
        }
        memcpy(buf + j, "\xEF\xBF\xBD", 3);
        j += 3;
        i++;
    }
    v = json_stringn(buf, j);
    free(buf);
    return v;
}

int dlock__json_set_str(json_t *obj, const char *key, const char *s, size_t n)
{
    return dlock__json_set(obj, key, text(s, n));
}

int dlock__json_set_int(json_t *obj, const char *key, int64_t v)
{
    return dlock__json_set(obj, key, json_integer((json_int_t)v));
}

int dlock__json_set_bool(json_t *obj, const char *key, int v)
{
    return dlock__json_set(obj, key, json_boolean(v));
}

int dlock__json_set_null(json_t *obj, const char *key)
{
    return dlock__json_set(obj, key, json_null());
}

json_t *dlock__json_get_array(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);

    return json_is_array(v) ? v : NULL;
}

int dlock__json_append(json_t *arr, json_t *v)
{
    if (!arr || !v) {
        json_decref(v);
        return -1;
    }
    return json_array_append_new(arr, v) == 0 ? 0 : -1;
}

void dlock__json_free(json_t *j)
{
    json_decref(j);
}
