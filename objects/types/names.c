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
 * This table is the one list of derived-key forms the check reads; the
 * types build their keys from the same macros (names.h): fair.c,
 * fenced.c, semaphore_lock.c, permit_semaphore.c, lifetime.c, and
 * report/describe.c for the owner descriptions.
 */
#include <stdio.h>
#include <string.h>

#include "objects/types/methods.h"
#include "objects/types/names.h"

#include "dlock/errors.h"

/* Where a form's text sits in a derived key. */
#define AT_START 1 /* P + B(N): the name starts with it and holds a '{' */
#define AT_END 2   /* B(N) + S: the name holds a '{' and ends with it */
#define INSIDE 3   /* B(N) + S + <an owner id, any bytes>: anywhere */
#define ANY_AFTER 4 /* the text and anything after it (a space of keys) */

#define MAX_TYPES 2

typedef struct key_form {
    const char *text;
    int where;
    const char *what; /* whose key, and its layout */
    /* the built-in types that keep such a key (NULL-ended) */
    const dlock_rlock_methods *const *types[MAX_TYPES + 1];
} key_form;

static const key_form forms[] = {
    {DLOCK__KEY_FAIR_QUEUE, AT_START, "a fair lock's wait queue, redisson_lock_queue:{N}",
     {&dlock__methods_fair}},
    {DLOCK__KEY_FAIR_DEADLINES, AT_START,
     "a fair lock's waiter deadlines, redisson_lock_timeout:{N}", {&dlock__methods_fair}},
    {DLOCK__KEY_FAIR_ALIVE, AT_START, "a fair lock's waiter liveness, dlock_lock_alive:{N}",
     {&dlock__methods_fair}},
    {DLOCK__KEY_FENCED_TOKEN, AT_START,
     "a fenced lock's token counter, redisson_lock_token:{N}", {&dlock__methods_fenced}},
    {DLOCK__KEY_OWNER, ANY_AFTER, "a client's owner description, dlock_owner:{<client id>}",
     {NULL}},
    {DLOCK__KEY_HOLDERS, AT_END, "a semaphore lock's holders, {N}:holders",
     {&dlock__methods_semaphore_lock}},
    {DLOCK__KEY_LEASES, INSIDE, "a semaphore lock's leases, {N}:lease:<owner>",
     {&dlock__methods_semaphore_lock}},
    {DLOCK__KEY_PERMIT_EXPIRIES, AT_END, "a permit semaphore's permit expiries, {N}:timeout",
     {&dlock__methods_permit_semaphore}},
    {DLOCK__KEY_PERMIT_EXPIRED, AT_END, "a permit semaphore's expired permits, {N}:expired",
     {&dlock__methods_permit_semaphore}},
    {DLOCK__KEY_READ_MARKER, INSIDE,
     "a read-write lock's read markers, {N}:<owner>:rwlock_timeout:<k>",
     {&dlock__methods_rwlock_read, &dlock__methods_rwlock_write}},
};

#define NFORMS (sizeof(forms) / sizeof(forms[0]))

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

static int matches(const key_form *f, const char *name, size_t n)
{
    size_t t = strlen(f->text);
    int braced = memchr(name, '{', n) != NULL;

    if (t > n)
        return 0;
    switch (f->where) {
    case AT_START:
        return braced && memcmp(name, f->text, t) == 0;
    case AT_END:
        return braced && memcmp(name + n - t, f->text, t) == 0;
    case INSIDE:
        return find(name, n, f->text, t) != NULL;
    default:
        return memcmp(name, f->text, t) == 0;
    }
}

/* Whether the type with table m keeps keys derived from its name. */
static int derives_keys(const dlock_rlock_methods *m)
{
    size_t i, k;

    for (i = 0; i < NFORMS; i++)
        for (k = 0; forms[i].types[k]; k++)
            if (*forms[i].types[k] == m)
                return 1;
    return 0;
}

int dlock__name_check(const dlock_rlock_methods *m, const char *name, size_t n,
                      char *why, size_t len)
{
    size_t i;

    for (i = 0; i < NFORMS; i++) {
        if (matches(&forms[i], name, n)) {
            snprintf(why, len, "the name \"%.64s\" is reserved: it has the form of %s "
                     "(another object's key)", name, forms[i].what);
            return DLOCK_EINVAL;
        }
    }
    /* "{x}" with no other '{': B("{x}") = B("x") = "{x}". */
    if (n >= 3 && name[0] == '{' && name[n - 1] == '}' &&
        memchr(name + 1, '{', n - 1) == NULL && derives_keys(m)) {
        int x = (int)(n - 2 < 64 ? n - 2 : 64); /* "x", shown as "%.64s" shows */
        snprintf(why, len, "the name \"%.64s\" is reserved: an object of type \"%s\" "
                 "derives the same keys from it as from \"%.*s\" (braces are not "
                 "added to a name that has some): use \"%.*s\"",
                 name, m->type, x, name + 1, x, name + 1);
        return DLOCK_EINVAL;
    }
    return 0;
}
