/*
 * dlock — the edit distance the configuration parsers (JSON and Redisson
 * YAML) use to suggest the field a misspelt name was meant to be, since
 * the name itself is never quoted (it may be a piece of a secret).
 */
#ifndef DLOCK_CORE_EDIT_DISTANCE_H
#define DLOCK_CORE_EDIT_DISTANCE_H

#include <stddef.h>

/* The most bytes b may have (the known name); a longer one is far from
 * everything (SIZE_MAX). */
#define DLOCK_EDIT_DISTANCE_MAX 63

/* The number of insertions, deletions and substitutions that turn a into
 * b; SIZE_MAX when either is longer than DLOCK_EDIT_DISTANCE_MAX bytes. */
size_t dlock__edit_distance(const char *a, const char *b);

#endif /* DLOCK_CORE_EDIT_DISTANCE_H */
