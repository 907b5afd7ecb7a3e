/*
 * dlock — introspection: an object's state as a JSON document
 * (api/dlock/lock.h: dlock_rlock_state). The generic functions dispatch to
 * the type's state slot; the objects that are not
 * locks (object.h) have the same slot and their own public calls, which end
 * up here too. The documents are built with core/json_doc.h, so objects/
 * never includes Jansson, and turned into text by the JSON codec.
 */
#include <stdlib.h>
#include <string.h>

#include "core/json_doc.h"
#include "dlock/codec.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/client.h"
#include "objects/runtime/object.h"
#include "objects/runtime/base.h"
#include "scripts.h"

/* The checks before the slot is called: those of every generic lock call
 * for a lock; for an object that is not a lock (never a dlock_rlock * to
 * the user, so it has no owner to resolve) the checks of its own calls. */
static int enter(dlock_rlock *l, void *out, int is_lock)
{
    char who[DLOCK_OWNER_MAX];
    int rc;

    if (is_lock)
        rc = dlock__rlock_enter(l, DLOCK__OWNER_SELF, NULL, who, out, "state", 1);
    else if (!l)
        rc = DLOCK_EINVAL;
    else if ((rc = dlock__object_check(l)) == 0 && !out)
        rc = dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if (rc == 0 && !DLOCK_RLOCK_HAS_SLOT(l->methods, state))
        rc = dlock_rlock_fail(l, DLOCK_ENOTSUP, "%s locks do not report their state",
                              l->methods->type);
    return rc;
}

static int state(dlock_rlock *l, struct json_t **out, int is_lock)
{
    int rc;

    if (out)
        *out = NULL;
    rc = enter(l, out, is_lock);
    return rc != 0 ? rc : l->methods->state(l, out);
}

static int state_text(dlock_rlock *l, char **out, int is_lock)
{
    struct json_t *doc = NULL;
    char detail[128] = "";
    size_t n;
    int rc;

    if (out)
        *out = NULL;
    rc = enter(l, out, is_lock);
    if (rc == 0)
        rc = l->methods->state(l, &doc);
    if (rc != 0)
        return rc;
    rc = dlock_codec_encode(dlock_codec_json(), out, &n, doc, detail, sizeof(detail));
    dlock__json_free(doc);
    return rc == 0 ? 0 : dlock_rlock_fail(l, rc, "state of \"%.64s\": %s", l->name, detail);
}

int dlock_rlock_state(dlock_rlock *l, struct json_t **out)
{
    return state(l, out, 1);
}

int dlock_rlock_state_text(dlock_rlock *l, char **out)
{
    return state_text(l, out, 1);
}

int dlock__object_state(dlock_rlock *b, struct json_t **out)
{
    return state(b, out, 0);
}

int dlock__object_state_text(dlock_rlock *b, char **out)
{
    return state_text(b, out, 0);
}

/* ---- what the state slots share ------------------------------------------ */

static int kind_is(const dlock_reply *r, char kind)
{
    if (!r)
        return 0;
    switch (kind) {
    case 'i':
        return r->type == DLOCK_REPLY_INTEGER;
    case 'b':
        return r->type == DLOCK_REPLY_BULK;
    case 'a':
        return r->type == DLOCK_REPLY_ARRAY;
    default:
        return 0;
    }
}

int dlock__reply_is(const dlock_reply *r, const char *kinds, int repeated)
{
    size_t k = strlen(kinds), i;

    if (!r || r->type != DLOCK_REPLY_ARRAY || (repeated ? r->n % k != 0 : r->n != k))
        return 0;
    for (i = 0; i < r->n; i++)
        if (!kind_is(r->elems[i], kinds[i % k]))
            return 0;
    return 1;
}

struct json_t *dlock__state_begin(const dlock_rlock *l, int *bad)
{
    struct json_t *doc = dlock__json_object();

    *bad = dlock__json_set_str(doc, "type", l->methods->type, strlen(l->methods->type));
    *bad |= dlock__json_set_str(doc, "name", l->name, l->name_len);
    return doc;
}

struct json_t *dlock__state_row(const dlock_reply *r, size_t i,
                               const char *const *keys, size_t n)
{
    struct json_t *row = dlock__json_object();
    int bad = row == NULL;
    size_t k;

    for (k = 0; k < n; k++) {
        const dlock_reply *e = r->elems[i + k];
        bad |= e->type == DLOCK_REPLY_INTEGER
                   ? dlock__json_set_int(row, keys[k], e->integer)
                   : dlock__json_set_str(row, keys[k], e->str, e->len);
    }
    if (bad) {
        dlock__json_free(row);
        return NULL;
    }
    return row;
}

struct json_t *dlock__state_rows(const dlock_reply *r, const char *const *keys,
                                 size_t n)
{
    struct json_t *arr = dlock__json_array();
    int bad = arr == NULL;
    size_t i;

    for (i = 0; !bad && i + n <= r->n; i += n)
        bad |= dlock__json_append(arr, dlock__state_row(r, i, keys, n));
    if (bad) {
        dlock__json_free(arr);
        return NULL;
    }
    return arr;
}

/* A holder row: what api/dlock/lock.h documents for "holders". */
static const char *const holder_keys[] = {"owner", "holds", "ttl_ms"};

struct json_t *dlock__state_holder(const dlock_reply *r, size_t i)
{
    return dlock__state_row(r, i, holder_keys, 3);
}

struct json_t *dlock__state_holders(const dlock_reply *r)
{
    return dlock__state_rows(r, holder_keys, 3);
}

/* "locked" and "ttl_ms" from the lock's TTL (-2: not held). */
static int lock_fields(struct json_t *doc, int64_t ttl)
{
    return dlock__json_set_bool(doc, "locked", ttl != -2) |
           dlock__json_set_int(doc, "ttl_ms", ttl);
}

int dlock__state_lock(struct json_t *doc, int64_t ttl, const dlock_reply *holders)
{
    return lock_fields(doc, ttl) |
           dlock__json_set(doc, "holders", dlock__state_holders(holders));
}

/* ---- the public builder (api/dlock/sys/lock_type.h) --------------------- */

struct json_t *dlock_state_new(const dlock_rlock *l, int64_t ttl_ms)
{
    struct json_t *doc;
    int bad;

    if (!l || !l->methods)
        return NULL;
    doc = dlock__state_begin(l, &bad);
    bad |= lock_fields(doc, ttl_ms);
    bad |= dlock__json_set(doc, "holders", dlock__json_array());
    if (bad) {
        dlock__json_free(doc);
        return NULL;
    }
    return doc;
}

int dlock_state_add_holder(struct json_t *doc, const char *owner, size_t n,
                           int64_t holds, int64_t ttl_ms)
{
    struct json_t *holders = doc ? dlock__json_get_array(doc, "holders") : NULL;
    struct json_t *row;
    int bad;

    if (!holders || !owner)
        return DLOCK_EINVAL;
    row = dlock__json_object();
    bad = dlock__json_set_str(row, "owner", owner, n);
    bad |= dlock__json_set_int(row, "holds", holds);
    bad |= dlock__json_set_int(row, "ttl_ms", ttl_ms);
    if (bad) {
        dlock__json_free(row);
        return DLOCK_ENOMEM;
    }
    return dlock__json_append(holders, row) == 0 ? 0 : DLOCK_ENOMEM;
}

int dlock__state_end(dlock_rlock *l, struct json_t *doc, int bad, struct json_t **out)
{
    if (bad) {
        dlock__json_free(doc);
        return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory building the state of "
                                "\"%.64s\"", l->name);
    }
    *out = doc;
    return 0;
}

/* ---- locks kept as a hash with a field per owner ------------------------ */

/* {owner, deadline, ...} -> [{"owner", "deadline_ms", "remaining_ms"}];
 * NULL: out of memory. */
static struct json_t *queue_doc(const dlock_reply *r, int64_t now)
{
    static const char *const keys[] = {"owner", "deadline_ms"};
    struct json_t *arr = dlock__json_array();
    int bad = arr == NULL;
    size_t i;

    for (i = 0; !bad && i < r->n; i += 2) {
        struct json_t *w = dlock__state_row(r, i, keys, 2);
        /* the sooner of its deadline and (a dlock waiter) its liveness;
         * negative: the waiter is presumed dead and goes at the next call */
        bad |= dlock__json_set_int(w, "remaining_ms", r->elems[i + 1]->integer - now);
        bad |= dlock__json_append(arr, w);
    }
    if (bad) {
        dlock__json_free(arr);
        return NULL;
    }
    return arr;
}

int dlock__hash_state(dlock_rlock *l, struct json_t **out, const char *token_key,
                      const char *queue, const char *deadlines, const char *alive)
{
    const dlock_script *s = &dlock__script_hash_inspect;
    const char *argv[5];
    struct json_t *doc;
    dlock_reply *r;
    size_t nkeys = 1;
    int bad, rc;

    argv[0] = l->name;
    if (token_key)
        argv[nkeys++] = token_key;
    if (queue) {
        argv[nkeys++] = queue;
        argv[nkeys++] = deadlines;
        argv[nkeys++] = alive;
    }
    argv[nkeys] = token_key ? "fenced" : queue ? "fair" : "plain";
    rc = dlock_rlock_eval(l, NULL, &r, s, nkeys, 1, argv);
    if (rc != 0)
        return rc;
    if (!dlock__reply_is(r, queue ? "iaa" : "iai", 0) ||
        !dlock__reply_is(r->elems[1], "bii", 1) ||
        (queue && !dlock__reply_is(r->elems[2], "bi", 1)))
        return dlock__unexpected_reply(l, s, r);

    doc = dlock__state_begin(l, &bad);
    bad |= dlock__state_lock(doc, r->elems[0]->integer, r->elems[1]);
    if (token_key)
        bad |= dlock__json_set_int(doc, "token", r->elems[2]->integer);
    if (queue) {
        int64_t now = dlock_clock_wall(l->client->clock);
        bad |= dlock__json_set(doc, "queue", queue_doc(r->elems[2], now));
    }
    dlock_reply_free(r);
    return dlock__state_end(l, doc, bad, out);
}

int dlock__hash_state_plain(dlock_rlock *l, struct json_t **out)
{
    return dlock__hash_state(l, out, NULL, NULL, NULL, NULL);
}

/* ---- objects kept as one integer at the name ------------------------------ */

int dlock__count_state(dlock_rlock *b, struct json_t **out, const char *field,
                       int with_ttl)
{
    const dlock_script *s = &dlock__script_semaphore_inspect;
    const char *argv[1];
    struct json_t *doc;
    dlock_reply *r;
    int bad, rc;

    argv[0] = b->name;
    rc = dlock_rlock_eval(b, NULL, &r, s, 1, 0, argv);
    if (rc != 0)
        return rc;
    if (!dlock__reply_is(r, "ii", 0))
        return dlock__unexpected_reply(b, s, r);
    doc = dlock__state_begin(b, &bad);
    bad |= dlock__json_set_int(doc, field, r->elems[0]->integer);
    if (with_ttl)
        bad |= dlock__json_set_int(doc, "ttl_ms", r->elems[1]->integer);
    dlock_reply_free(r);
    return dlock__state_end(b, doc, bad, out);
}
