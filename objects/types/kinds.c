/*
 * dlock — what is stored under a name, read from the built-in types'
 * descriptors (type.h), and their locks by type name
 * (api/dlock/object.h: dlock_object_kind and the kind lookups;
 * api/dlock/lock.h: dlock_lock_new). No type is named here: each says in
 * its descriptor how its data is recognised (object_kind.lua tries them
 * in rank order) and how its locks are made.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/object.h"
#include "objects/runtime/base.h"
#include "objects/runtime/client.h"
#include "objects/runtime/object.h"
#include "objects/types/type.h"
#include "scripts.h"

#define BASE(o) ((dlock_rlock *)(o))

/* At most this many kinds, each with DLOCK__TYPE_MAX_KEYS marks. */
#define MAX_KINDS 16
#define MAX_MARKS (MAX_KINDS * DLOCK__TYPE_MAX_KEYS)

/* What a name holds when no kind of a type's fits it. */
static const struct {
    const char *name, *what;
} fallbacks[] = {
    {"none", "nothing"},
    {"string", "string that is no dlock object"},
    {"other", "key of another Redis type"},
};
#define NFALLBACKS (sizeof fallbacks / sizeof fallbacks[0])

/* The kinds of the built-in types into out (each once, in rank order):
 * their number. */
static size_t kinds_ranked(const dlock__kind **out)
{
    size_t i, k, n = 0;

    for (i = 0; dlock__types_builtin[i] && n < MAX_KINDS; i++) {
        const dlock__kind *d = dlock__types_builtin[i]->kind;
        if (!d || dlock__types_builtin[i]->shares_kind)
            continue;
        for (k = n; k > 0 && out[k - 1]->rank > d->rank; k--)
            out[k] = out[k - 1];
        out[k] = d;
        n++;
    }
    return n;
}

/* The built-in type owning the kind called name, NULL for none. */
static const dlock__type *kind_owner(const char *name)
{
    size_t i;

    for (i = 0; name && dlock__types_builtin[i]; i++) {
        const dlock__type *t = dlock__types_builtin[i];
        if (t->kind && !t->shares_kind && strcmp(t->kind->name, name) == 0)
            return t;
    }
    return NULL;
}

/* The lock maker of the lock type called type, and its type in *owner;
 * NULL for none. */
static const dlock__lock_maker *maker_of(const char *type, const dlock__type **owner)
{
    size_t i, k;

    for (i = 0; type && dlock__types_builtin[i]; i++)
        for (k = 0; k < 3 && dlock__types_builtin[i]->locks[k].type; k++)
            if (strcmp(dlock__types_builtin[i]->locks[k].type, type) == 0) {
                if (owner)
                    *owner = dlock__types_builtin[i];
                return &dlock__types_builtin[i]->locks[k];
            }
    return NULL;
}

const char *dlock_object_kind_what(const char *kind)
{
    const dlock__type *t = kind_owner(kind);
    size_t i;

    if (t)
        return t->kind->what;
    for (i = 0; kind && i < NFALLBACKS; i++)
        if (strcmp(fallbacks[i].name, kind) == 0)
            return fallbacks[i].what;
    return NULL;
}

const char *dlock_object_kind_lock(const char *kind, size_t i)
{
    const dlock__type *t = kind_owner(kind);

    return t && i < 3 ? t->locks[i].type : NULL;
}

const char *dlock_lock_type_kind(const char *type)
{
    const dlock__type *t = NULL;

    return maker_of(type, &t) && t->kind ? t->kind->name : NULL;
}

int dlock_lock_type_takes(const char *type, const char *kind)
{
    const dlock__type *t = NULL;
    size_t i;

    if (!maker_of(type, &t) || !kind)
        return 0;
    if (strcmp(kind, "none") == 0)
        return 1;
    if (!t->kind)
        return 0;
    if (strcmp(kind, t->kind->name) == 0)
        return 1;
    for (i = 0; i < 3 && t->kind->also[i]; i++)
        if (strcmp(kind, t->kind->also[i]) == 0)
            return 1;
    return 0;
}

int dlock_lock_new(dlock_rlock **out, dlock_client *c, const char *type, const char *name)
{
    const dlock__lock_maker *m;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (!c)
        return DLOCK_EINVAL;
    if (!(m = maker_of(type, NULL)))
        return dlock__client_refuse(c, DLOCK_EINVAL, "no built-in lock type \"%.64s\"",
                                    type ? type : "(NULL)");
    return m->make(out, c, name);
}

/* ---- what is stored -------------------------------------------------------- */

/* The script's arguments: KEYS (the name, then every kind's marks), six
 * ARGV per kind (object_kind.lua). */
typedef struct kind_call {
    const char *argv[1 + MAX_MARKS + 6 * MAX_KINDS];
    char *owned[MAX_MARKS];
    char nums[MAX_KINDS][3][8];
    size_t nkeys, nargs, nowned;
} kind_call;

static int kind_call_fill(dlock_rlock *l, kind_call *k)
{
    const dlock__kind *kinds[MAX_KINDS];
    /* written past every key's place, then moved to right after the keys */
    const char **args = k->argv + 1 + MAX_MARKS;
    size_t n = kinds_ranked(kinds), i, m;

    k->argv[0] = l->name;
    k->nkeys = 1;
    for (i = 0; i < n; i++) {
        const dlock__kind *d = kinds[i];
        snprintf(k->nums[i][0], sizeof k->nums[i][0], "%d", d->at);
        snprintf(k->nums[i][1], sizeof k->nums[i][1], "%zu", d->nmarks ? k->nkeys + 1 : 0);
        snprintf(k->nums[i][2], sizeof k->nums[i][2], "%zu", d->nmarks);
        for (m = 0; m < d->nmarks; m++) {
            char *key = dlock_rlock_key(l, d->marks[m].prefix, d->marks[m].suffix);
            if (!key)
                return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory");
            k->owned[k->nowned++] = key;
            k->argv[k->nkeys++] = key;
        }
        args[6 * i] = d->name;
        args[6 * i + 1] = k->nums[i][0];
        args[6 * i + 2] = d->field ? d->field : "";
        args[6 * i + 3] = k->nums[i][1];
        args[6 * i + 4] = k->nums[i][2];
        args[6 * i + 5] = d->pattern ? d->pattern : "";
    }
    memmove(k->argv + k->nkeys, args, 6 * n * sizeof(*args));
    k->nargs = 6 * n;
    return 0;
}

static void kind_call_free(kind_call *k)
{
    while (k->nowned > 0)
        free(k->owned[--k->nowned]);
}

/* The static name of the kind the script answered, NULL for none. */
static const char *kind_named(const char *s)
{
    const dlock__type *t = kind_owner(s);
    size_t i;

    if (t)
        return t->kind->name;
    for (i = 0; i < NFALLBACKS; i++)
        if (strcmp(fallbacks[i].name, s) == 0)
            return fallbacks[i].name;
    return NULL;
}

int dlock_object_kind(dlock_object *o, const char **out)
{
    dlock_rlock *l = BASE(o);
    dlock_reply *r = NULL;
    kind_call k;
    int rc;

    if (out)
        *out = fallbacks[0].name;
    if (!o)
        return DLOCK_EINVAL;
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if ((rc = dlock__object_check(l)) != 0)
        return rc;
    memset(&k, 0, sizeof k);
    rc = kind_call_fill(l, &k);
    if (rc == 0)
        rc = dlock_rlock_eval(l, NULL, &r, &dlock__script_object_kind, k.nkeys, k.nargs,
                              k.argv);
    kind_call_free(&k);
    if (rc != 0)
        return rc;
    if (r->type == DLOCK_REPLY_BULK || r->type == DLOCK_REPLY_STATUS) {
        const char *name = kind_named(r->str);
        if (name) {
            *out = name;
            dlock_reply_free(r);
            return 0;
        }
    }
    return dlock__unexpected_reply(l, &dlock__script_object_kind, r);
}
