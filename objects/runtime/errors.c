/* dlock — messages and names of the error codes, from DLOCK_ERROR_TABLE. */
#include "dlock/errors.h"

const char *dlock_strerror(int code)
{
    switch (code) {
#define DLOCK__ERROR_MSG(name, value, msg) case value: return msg;
        DLOCK_ERROR_TABLE(DLOCK__ERROR_MSG)
#undef DLOCK__ERROR_MSG
    default:
        return "unknown error";
    }
}

const char *dlock_errname(int code)
{
    switch (code) {
#define DLOCK__ERROR_NAME(name, value, msg) case value: return #name;
        DLOCK_ERROR_TABLE(DLOCK__ERROR_NAME)
#undef DLOCK__ERROR_NAME
    default:
        return "UNKNOWN";
    }
}
