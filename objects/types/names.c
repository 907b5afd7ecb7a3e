/*
 * dlock — the names no object may take because its keys would be another
 * object's (api/dlock/lock.h, "Reserved names"; README, the key layout).
 *
 * The layout is Redisson's and must stay so (a Java service shares the
 * locks): every type keeps its state under its name N and, for some types,
 * under keys derived from it, P + B(N) or B(N) + S, where B(N) is "{N}",
 * or N itself when N already holds a '{' (DESIGN.md §2). So a derived key
 * always holds a '{', and two things can go wrong:
 *   - a name that is itself a derived key of another name: refused for
 *     every type, whose keys begin with the name;
 *   - "{x}" (one '{', first, and a last '}') and "x" derive the very same
 *     keys, B being "{x}" for both: refused for the types that derive keys;
 *     "x" is the canonical form (same keys, same cluster slot).
 * Every other pair of names has disjoint keys: a shared derived key would
 * need one of the two names to be of a form below.
 *
 * Each type's descriptor (type.h) holds the forms of its derived keys; the
 * check reads them all, from the built-in list. The types build their keys
 * from the same macros (names.h): fair.c,
 * fenced.c, semaphore_lock.c, permit_semaphore.c, lifetime.c, and
 * report/describe.c for the owner descriptions.
 */
#include <stdio.h>
#include <string.h>

#include "objects/types/names.h"
#include "objects/types/type.h"

#include "dlock/errors.h"

/* The one form that is no type's: the clients' descriptions. Every other
 * form is in its type's descriptor (type.h, gen/types.c). */
static const dlock__key_form owner_form = {
    DLOCK__KEY_OWNER, DLOCK__FORM_ANY_AFTER,
    "a client's owner description, dlock_owner:{<client id>}"};

/* The first occurrence of text (t bytes) in s (n bytes), or NULL: names
 * may hold any byte but NUL, and are not NUL-terminated here. */
static const char *find(const char *s, size_t n, const char *text, size_t t)
{
    size_t i;

    for (i = 0; t <= n && i <= n - t; i++)
        if (memcmp(s + i, text, t) == 0)
            return s + i;
    return NULL;
}

static int matches(const dlock__key_form *f, const char *name, size_t n)
{
    size_t t = strlen(f->text);
    int braced = memchr(name, '{', n) != NULL;

    if (t > n)
        return 0;
    switch (f->where) {
    case DLOCK__FORM_AT_START:
        return braced && memcmp(name, f->text, t) == 0;
    case DLOCK__FORM_AT_END:
        return braced && memcmp(name + n - t, f->text, t) == 0;
    case DLOCK__FORM_INSIDE:
        return find(name, n, f->text, t) != NULL;
    default:
        return memcmp(name, f->text, t) == 0;
    }
}

/* The form of another object's key that name (n bytes) has, or NULL. */
static const dlock__key_form *form_of(const char *name, size_t n)
{
    size_t i, k;

    if (matches(&owner_form, name, n))
        return &owner_form;
    for (i = 0; dlock__types_builtin[i]; i++)
        for (k = 0; k < dlock__types_builtin[i]->nforms; k++)
            if (matches(&dlock__types_builtin[i]->forms[k], name, n))
                return &dlock__types_builtin[i]->forms[k];
    return NULL;
}

int dlock__name_check(const dlock_rlock_methods *m, const char *name, size_t n,
                      char *why, size_t len)
{
    const dlock__key_form *f = form_of(name, n);
    const dlock__type *t = dlock__type_of(m);

    if (f) {
        snprintf(why, len, "the name \"%.64s\" is reserved: it has the form of %s "
                 "(another object's key)", name, f->what);
        return DLOCK_EINVAL;
    }
    /* "{x}" with no other '{': B("{x}") = B("x") = "{x}", for a type that
     * derives keys. */
    if (n >= 3 && name[0] == '{' && name[n - 1] == '}' &&
        memchr(name + 1, '{', n - 1) == NULL && t && t->nforms > 0) {
        int x = (int)(n - 2 < 64 ? n - 2 : 64); /* "x", shown as "%.64s" shows */
        snprintf(why, len, "the name \"%.64s\" is reserved: an object of type \"%s\" "
                 "derives the same keys from it as from \"%.*s\" (braces are not "
                 "added to a name that has some): use \"%.*s\"",
                 name, m->type, x, name + 1, x, name + 1);
        return DLOCK_EINVAL;
    }
    return 0;
}
