/*
 * dlock — introspection: a lock object's state as a JSON document
 * (api/dlock/rlock.h: dlock_rlock_state). The generic functions dispatch to
 * the type's state slot (method table version 2); the documents are built
 * with codecs/json_doc.h, so objects/ never includes Jansson, and turned into
 * text by the JSON codec.
 */
#include <stdlib.h>
#include <string.h>

#include "../codecs/json_doc.h"
#include "dlock/codec.h"
#include "internal.h"
#include "scripts.h"

/* The checks every generic call makes before dispatching, with this
 * call's own word for a type without the slot. */
static int enter(dlock_rlock *l, void *out)
{
    char who[DLOCK_OWNER_MAX];
    int rc = dlock__rlock_enter(l, DLOCK__OWNER_SELF, NULL, who, out, "state", 1);

    if (rc == 0 && !DLOCK_RLOCK_HAS_SLOT(l->methods, state))
        rc = dlock_rlock_fail(l, DLOCK_ENOTSUP, "%s locks do not report their state",
                              l->methods->type);
    return rc;
}

int dlock_rlock_state(dlock_rlock *l, struct json_t **out)
{
    int rc;

    if (out)
        *out = NULL;
    rc = enter(l, out);
    return rc != 0 ? rc : l->methods->state(l, out);
}

int dlock_rlock_state_text(dlock_rlock *l, char **out)
{
    struct json_t *doc = NULL;
    char detail[128] = "";
    size_t n;
    int rc;

    if (out)
        *out = NULL;
    rc = enter(l, out);
    if (rc == 0)
        rc = l->methods->state(l, &doc);
    if (rc != 0)
        return rc;
    rc = dlock_codec_encode(dlock_codec_json(), out, &n, doc, detail, sizeof(detail));
    dlock__json_free(doc);
    return rc == 0 ? 0 : dlock_rlock_fail(l, rc, "state of \"%.64s\": %s", l->name, detail);
}

/* ---- locks kept as a hash with a field per owner ------------------------ */

static int is_int(const dlock_reply *r)
{
    return r && r->type == DLOCK_REPLY_INTEGER;
}

static int is_bulk(const dlock_reply *r)
{
    return r && r->type == DLOCK_REPLY_BULK;
}

/* Whether r is an array of pairs {bulk, bulk or integer}. */
static int pairs(const dlock_reply *r, int second_is_int)
{
    size_t i;

    if (r->type != DLOCK_REPLY_ARRAY || r->n % 2 != 0)
        return 0;
    for (i = 0; i < r->n; i += 2)
        if (!is_bulk(r->elems[i]) ||
            !(second_is_int ? is_int(r->elems[i + 1]) : is_bulk(r->elems[i + 1])))
            return 0;
    return 1;
}

/* {owner, count, ...} -> [{"owner", "holds", "ttl_ms"}]; NULL: out of
 * memory. */
static struct json_t *holders_doc(const dlock_reply *r, int64_t ttl)
{
    struct json_t *arr = dlock__json_array();
    int bad = arr == NULL;
    size_t i;

    for (i = 0; !bad && i < r->n; i += 2) {
        struct json_t *h = dlock__json_object();
        bad |= dlock__json_set_str(h, "owner", r->elems[i]->str, r->elems[i]->len);
        bad |= dlock__json_set_int(h, "holds", strtoll(r->elems[i + 1]->str, NULL, 10));
        /* one hash, one lease: every holder of these locks shares it */
        bad |= dlock__json_set_int(h, "ttl_ms", ttl);
        bad |= dlock__json_append(arr, h);
    }
    if (bad) {
        dlock__json_free(arr);
        return NULL;
    }
    return arr;
}

/* {owner, deadline, ...} -> [{"owner", "deadline_ms", "remaining_ms"}];
 * NULL: out of memory. */
static struct json_t *queue_doc(const dlock_reply *r, int64_t now)
{
    struct json_t *arr = dlock__json_array();
    int bad = arr == NULL;
    size_t i;

    for (i = 0; !bad && i < r->n; i += 2) {
        struct json_t *w = dlock__json_object();
        bad |= dlock__json_set_str(w, "owner", r->elems[i]->str, r->elems[i]->len);
        bad |= dlock__json_set_int(w, "deadline_ms", r->elems[i + 1]->integer);
        /* negative: the waiter is presumed dead and goes at the next call */
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
                      const char *queue, const char *deadlines)
{
    const dlock_script *s = &dlock__script_hash_inspect;
    const char *argv[4];
    struct json_t *doc, *part;
    dlock_reply *r;
    size_t nkeys = 1;
    int64_t ttl;
    int bad, rc;

    argv[0] = l->name;
    if (token_key)
        argv[nkeys++] = token_key;
    if (queue) {
        argv[nkeys++] = queue;
        argv[nkeys++] = deadlines;
    }
    argv[nkeys] = token_key ? "fenced" : queue ? "fair" : "plain";
    rc = dlock_rlock_eval(l, &r, s, nkeys, 1, argv);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 3 || !is_int(r->elems[0]) ||
        !pairs(r->elems[1], 0) || (queue ? !pairs(r->elems[2], 1) : !is_int(r->elems[2])))
        return dlock__unexpected_reply(l, s, r);
    ttl = r->elems[0]->integer;

    doc = dlock__json_object();
    bad = dlock__json_set_str(doc, "type", l->methods->type, strlen(l->methods->type));
    bad |= dlock__json_set_str(doc, "name", l->name, l->name_len);
    bad |= dlock__json_set_bool(doc, "locked", ttl != -2);
    bad |= dlock__json_set_int(doc, "ttl_ms", ttl);
    part = holders_doc(r->elems[1], ttl);
    bad |= part == NULL || dlock__json_set(doc, "holders", part);
    if (token_key)
        bad |= dlock__json_set_int(doc, "token", r->elems[2]->integer);
    if (queue) {
        part = queue_doc(r->elems[2], dlock_clock_wall(l->client->clock));
        bad |= part == NULL || dlock__json_set(doc, "queue", part);
    }
    dlock_reply_free(r);
    if (bad) {
        dlock__json_free(doc);
        return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory building the state of "
                                "\"%.64s\"", l->name);
    }
    *out = doc;
    return 0;
}

int dlock__hash_state_plain(dlock_rlock *l, struct json_t **out)
{
    return dlock__hash_state(l, out, NULL, NULL, NULL);
}
