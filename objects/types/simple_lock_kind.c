/*
 * dlock — what the library knows of the simple lock besides its handle:
 * simple_lock.c is made only through the public interfaces, as a lock
 * type of your own is, so its descriptor (type.h) lives here. It has no
 * method table to match (lifetime takes its one key at its name, as for
 * a type of someone else's) and reserves no names: it says how its data
 * is recognised and makes its lock by name.
 */
#include "dlock/simple_lock.h"
#include "objects/types/type.h"

/* A string holding an owner id "<uuid>:<thread>"
 * (api/dlock/simple_lock.h). */
static const dlock__kind simple_kind = {
    .name = "simple", .what = "simple lock", .rank = 80, .at = DLOCK__AT_STRING,
    .pattern = "^%x+%-%x+%-%x+%-%x+%-%x+:%d+$",
};
const dlock__type dlock__type_simple_lock_kind = {
    .name = "simple", .kind = &simple_kind, .locks = {{"simple", dlock_simple_lock_new}},
};
