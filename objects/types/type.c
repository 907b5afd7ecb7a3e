/*
 * dlock — finding a built-in type's descriptor (type.h) by its method
 * table.
 */
#include "objects/types/type.h"

const dlock__type *dlock__type_of(const dlock_rlock_methods *m)
{
    size_t i, k;

    for (i = 0; dlock__types_builtin[i]; i++)
        for (k = 0; dlock__types_builtin[i]->tables[k]; k++)
            if (dlock__types_builtin[i]->tables[k] == m)
                return dlock__types_builtin[i];
    return NULL;
}
