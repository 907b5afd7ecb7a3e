/*
 * dlock — building JSON documents without including Jansson: the lock
 * objects' state reports (objects/runtime/inspect.c) are built through
 * these, so that only core/ and codecs/ see <jansson.h>.
 *
 * Every value is a Jansson json_t. The setters take their value's reference
 * (also on failure), so a document is built without intermediate checks:
 * each returns 0 or -1 (out of memory, or a NULL container), and the builder
 * ORs them and checks once.
 */
#ifndef DLOCK_CORE_JSON_DOC_H
#define DLOCK_CORE_JSON_DOC_H

#include <stddef.h>
#include <stdint.h>

struct json_t;

/* New containers; NULL when out of memory. */
struct json_t *dlock__json_object(void);
struct json_t *dlock__json_array(void);

/* obj[key] = a value. Strings are bytes of length n: bytes that are not
 * UTF-8 (lock names and owner ids may hold any bytes) become U+FFFD, since
 * JSON text is UTF-8. */
int dlock__json_set(struct json_t *obj, const char *key, struct json_t *v);
int dlock__json_set_str(struct json_t *obj, const char *key, const char *s, size_t n);
int dlock__json_set_int(struct json_t *obj, const char *key, int64_t v);
int dlock__json_set_bool(struct json_t *obj, const char *key, int v);
/* obj[key] = null, for a field that has no value now (e.g. no writer). */
int dlock__json_set_null(struct json_t *obj, const char *key);
/* obj[key] when it is an array (borrowed), else NULL (obj not an object,
 * no such key, or another kind of value). */
struct json_t *dlock__json_get_array(struct json_t *obj, const char *key);
/* Appends v to the array arr. */
int dlock__json_append(struct json_t *arr, struct json_t *v);

/* Drops a reference; NULL is a no-op. */
void dlock__json_free(struct json_t *j);

#endif /* DLOCK_CORE_JSON_DOC_H */
