/*
 * dlock — one descriptor per built-in type: what the rest of objects/
 * knows of a type without naming it. Each objects/types/<t>.c that is a
 * type defines `const dlock__type dlock__type_<t>` beside its method
 * table; the Makefile collects them into gen/types.c
 * (dlock__types_builtin), as it collects the backends, so that adding a
 * type touches its own files and no list here. lifetime.c (an object's
 * keys and how delete and expire wake its waiters) and names.c (the names
 * no object may take) read them.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_TYPES_TYPE_H
#define DLOCK_OBJECTS_TYPES_TYPE_H

#include <stddef.h>

#include "dlock/lock.h"
#include "dlock/sys/methods.h"

/* Where a derived key's form sits in a name that would be that key
 * (names.c). */
#define DLOCK__FORM_AT_START 1  /* P + B(N): the name starts with it and holds a '{' */
#define DLOCK__FORM_AT_END 2    /* B(N) + S: the name holds a '{' and ends with it */
#define DLOCK__FORM_INSIDE 3    /* B(N) + S + <an owner id, any bytes>: anywhere */
#define DLOCK__FORM_ANY_AFTER 4 /* the text and anything after it (a space of keys) */

typedef struct dlock__key_form {
    const char *text; /* names.h's DLOCK__KEY_* */
    int where;        /* DLOCK__FORM_* */
    const char *what; /* whose key, and its layout, for the refusal */
} dlock__key_form;

/* A key prefix + {N} + suffix (dlock_rlock_key). */
typedef struct dlock__key {
    const char *prefix, *suffix;
} dlock__key;

/* Which lifetime calls wake the object's waiters (lifetime.c). */
#define DLOCK__WAKE_ON_DELETE 1
#define DLOCK__WAKE_ON_EXPIRE 2

#define DLOCK__TYPE_MAX_KEYS 3

/* What a name may hold for a kind to be recognised (dlock__kind.at). */
#define DLOCK__AT_NONE 1   /* nothing at the name */
#define DLOCK__AT_HASH 2   /* a hash */
#define DLOCK__AT_STRING 4 /* a string */

/*
 * A kind of stored data, as dlock_object_kind answers it: how
 * object_kind.lua recognises it. The kinds of every descriptor are tried
 * in ascending rank; the first whose every condition holds is the answer
 * (none matching: "none", "string" or "other" by what the name holds).
 */
typedef struct dlock__kind {
    const char *name; /* dlock_object_kind's answer ("fair") */
    const char *what; /* in words ("fair lock") */
    int rank;         /* tried in ascending order: a kind that looks like
                       * another plus something else goes first */
    int at;           /* DLOCK__AT_*: what the name may hold */
    const char *field;          /* a field the name's hash has, or NULL */
    dlock__key marks[DLOCK__TYPE_MAX_KEYS]; /* keys of which one exists */
    size_t nmarks;                          /* (0: no such condition) */
    const char *pattern; /* a Lua pattern the string matches, or NULL */
    /* The other kinds a lock of this kind may be taken over, besides
     * "none" (a fair lock's empty queue leaves a plain hash), NULL-ended. */
    const char *also[3];
} dlock__kind;

/* A lock type the tool and dlock_lock_new make by its name. */
typedef struct dlock__lock_maker {
    const char *type; /* "fair", "rwlock_write" */
    int (*make)(dlock_rlock **out, dlock_client *c, const char *name);
} dlock__lock_maker;

typedef struct dlock__type {
    const char *name; /* the method table's type */
    /* Its method tables (the read-write lock has one per half), NULL-ended:
     * a handle is of this type when its table is one of them. */
    const dlock_rlock_methods *tables[3];

    /* The names it reserves: the forms of the keys it derives from its
     * name (names.c refuses a name of any type's form, and "{x}" for a
     * type with any form). */
    const dlock__key_form *forms;
    size_t nforms;

    /* Its object (lifetime.c, object_keys.luainc). */
    int no_keys;                           /* made of other locks (Redlock,
                                            * MultiLock): no keys of its own */
    dlock__key keys[DLOCK__TYPE_MAX_KEYS]; /* its fixed keys after the name */
    size_t nkeys;
    const char *family;  /* "": none; else object_keys.luainc's family of
                          * keys derived per owner ("rw", "lease") ... */
    dlock__key derived;  /* ... and the prefix they start with */
    int wakes;           /* DLOCK__WAKE_ON_*: when its channel is told */
    const char *message; /* the message then ("0", or "1": every waiter) */
    int per_waiter;      /* a message per queued waiter (the fair lock) */

    /* What its data is recognised as (dlock_object_kind), NULL: nothing
     * of its own (a bucket is a "string"); shares_kind: the kind is
     * another type's (a spin lock's hash is a reentrant lock's), which
     * owns it and makes its locks. */
    const dlock__kind *kind;
    int shares_kind;
    /* Its locks by type name (dlock_lock_new), in the order the tool acts
     * on them (the write half first), NULL-ended. */
    dlock__lock_maker locks[3];
} dlock__type;

/* The kinds two types share, defined by their owner: the reentrant
 * lock's hash (the spin lock's too) and the semaphore's count (the
 * latch's too). */
extern const dlock__kind dlock__kind_reentrant, dlock__kind_counter;

/* The built-in types, NULL-ended (gen/types.c, made by the Makefile). */
extern const dlock__type *const dlock__types_builtin[];

/* The descriptor of the built-in type whose method table is m; NULL for a
 * type of someone else's. Never blocks. */
const dlock__type *dlock__type_of(const dlock_rlock_methods *m);

#endif /* DLOCK_OBJECTS_TYPES_TYPE_H */
