/*
 * dlock — the backend-neutral reply value.
 *
 * Replies are built by backends and owned by the caller of eval; keeping them
 * free of hiredis and Lua types is what lets the objects stay backend-blind.
 */
#include "dlock/sys/backend.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

void dlock_reply_free(dlock_reply *r)
{
    size_t i;

    if (r == NULL)
        return;
    if (r->elems != NULL) {
        /* Slots may still be NULL when a backend gave up half-way through
         * filling an array (out of memory), so NULL elements are fine. */
        for (i = 0; i < r->n; i++)
            dlock_reply_free(r->elems[i]);
        free(r->elems);
    }
    free(r->str);
    free(r);
}

dlock_reply *dlock_reply_nil(void)
{
    return dlock__zalloc(sizeof(dlock_reply));
}

dlock_reply *dlock_reply_integer(long long v)
{
    dlock_reply *r = dlock__zalloc(sizeof(*r));

    if (r == NULL)
        return NULL;
    r->type = DLOCK_REPLY_INTEGER;
    r->integer = v;
    return r;
}

dlock_reply *dlock_reply_string(dlock_reply_type type, const char *s, size_t len)
{
    dlock_reply *r;

    if (type != DLOCK_REPLY_BULK && type != DLOCK_REPLY_STATUS &&
        type != DLOCK_REPLY_ERROR)
        return NULL;
    if (s == NULL && len != 0)
        return NULL;
    if (len == (size_t)-1)
        return NULL;
    r = dlock__zalloc(sizeof(*r));
    if (r == NULL)
        return NULL;
    r->str = malloc(len + 1);
    if (r->str == NULL) {
        free(r);
        return NULL;
    }
    if (len != 0)
        memcpy(r->str, s, len);
    r->str[len] = '\0';
    r->len = len;
    r->type = type;
    return r;
}

dlock_reply *dlock_reply_array(size_t n)
{
    dlock_reply *r = dlock__zalloc(sizeof(*r));

    if (r == NULL)
        return NULL;
    r->type = DLOCK_REPLY_ARRAY;
    if (n != 0) {
        r->elems = dlock__zalloc_array(n, sizeof(*r->elems));
        if (r->elems == NULL) {
            free(r);
            return NULL;
        }
    }
    r->n = n;
    return r;
}
