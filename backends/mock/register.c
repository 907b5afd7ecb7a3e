/*
 * dlock mock — the "mock" URL scheme (core/registry.c): "mock:" (or
 * "mock://") is a private store of its own on the real-time clock,
 * "mock://NAME" the store a test registered under NAME
 * (dlock_mock_store_register).
 */
#include <stdio.h>
#include <string.h>

#include "dlock/mock.h"

#include "core/errbuf.h"
#include "core/registry.h"

static int open_mock(void *arg, dlock_backend **out, const char *url,
                     const void *options, char *errbuf, size_t errlen)
{
    dlock_mock_store *store;
    int rc;

    (void)arg, (void)options;
    if (strcmp(url, "mock:") == 0 || strcmp(url, "mock://") == 0) {
        rc = dlock_mock_store_new(&store, NULL);
        if (rc != 0)
            return rc;
        rc = dlock_mock_backend_new(out, store);
        dlock_mock_store_free(store); /* the backend keeps it */
        return rc;
    }
    if (strncmp(url, "mock://", 7) != 0)
        return dlock__fail_into(errbuf, errlen, DLOCK_EINVAL,
                                "a mock URL is \"mock:\" or \"mock://NAME\"");
    rc = dlock_mock_backend_by_name(out, url + 7);
    if (rc == DLOCK_EINVAL)
        dlock__fail_into(errbuf, errlen, rc,
                         "%.80s: no mock store is registered under this name "
                         "(dlock_mock_store_register)", url);
    return rc;
}

void dlock__backend_register_mock(void);
void dlock__backend_register_mock(void)
{
    dlock__backend_register("mock", open_mock, NULL);
}
