/*
 * dlock — which lock names are refused because their keys would be another
 * object's (names.c): the one table of every built-in type's derived keys.
 * Private to objects/; included by runtime/ rlock.c and object.c.
 */
#ifndef DLOCK_OBJECTS_TYPES_NAMES_H
#define DLOCK_OBJECTS_TYPES_NAMES_H

#include <stddef.h>

#include "dlock/sys/rlock.h"

/* 0 when an object of type m (a built-in table or anyone's) may be called
 * name (n bytes); else DLOCK_EINVAL with the reason, naming the reserved
 * form the name matches, in why (len bytes, NUL-terminated). Never blocks;
 * reads nothing but its arguments. */
int dlock__name_check(const dlock_rlock_methods *m, const char *name, size_t n,
                      char *why, size_t len);

#endif /* DLOCK_OBJECTS_TYPES_NAMES_H */
