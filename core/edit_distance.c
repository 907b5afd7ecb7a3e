/*
 * dlock — the edit distance (core/edit_distance.h): Levenshtein's, with
 * two rows.
 */
#include <stdint.h>
#include <string.h>

#include "edit_distance.h"

size_t dlock__edit_distance(const char *a, const char *b)
{
    size_t prev[DLOCK_EDIT_DISTANCE_MAX + 1], cur[DLOCK_EDIT_DISTANCE_MAX + 1];
    size_t i, j, lb = strlen(b);

    if (lb > DLOCK_EDIT_DISTANCE_MAX || strlen(a) > DLOCK_EDIT_DISTANCE_MAX)
        return SIZE_MAX;
    for (j = 0; j <= lb; j++)
        prev[j] = j;
    for (i = 1; a[i - 1]; i++) {
        cur[0] = i;
        for (j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, (lb + 1) * sizeof(*prev));
    }
    return prev[lb];
}
