/*
 * dlock — what a backend may ask of a script (api/dlock/sys/backend.h).
 */
#include <string.h>

#include "dlock/sys/backend.h"

int dlock_script_no_writes(const dlock_script *script)
{
    static const char mark[] = DLOCK_SCRIPT_NO_WRITES;

    return script && script->source &&
           strncmp(script->source, mark, sizeof mark - 1) == 0;
}
