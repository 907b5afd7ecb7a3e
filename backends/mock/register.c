/*
 * dlock mock — the "mock" URL scheme (core/registry.c): "mock:" (or
 * "mock://") is a private store of its own on the real-time clock,
 * "mock://NAME" the store a test registered under NAME
 * (dlock_mock_store_register).
 *
 * The mock is a library of its own (libdlock-mock), so that a production
 * binary linked to libdlock alone carries no Lua. It registers its scheme
 * through the public registry (dlock_backend_register) when it is loaded
 * (the constructor below) and again, harmlessly, at each
 * dlock_mock_register() call: a static link or --as-needed keeps a
 * library only when something refers to it, which dlock-mock.pc and the
 * CMake targets see to (-u dlock_mock_register for an archive,
 * --no-as-needed for the shared library).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "dlock/mock.h"
#include "dlock/sys/backend.h"

#include "core/errbuf.h"

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

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered_rc;

static void register_once(void)
{
    registered_rc = dlock_backend_register("mock", open_mock, NULL);
}

int dlock_mock_register(void)
{
    pthread_once(&once, register_once);
    return registered_rc;
}

__attribute__((constructor)) static void register_on_load(void)
{
    dlock_mock_register();
}
