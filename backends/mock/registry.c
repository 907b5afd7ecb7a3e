/*
 * dlock mock — stores registered under a name, for "mock://NAME" URLs.
 *
 * A test builds its store (on its virtual clock), registers it, and the code
 * under test, which only knows a URL or a JSON configuration, reaches that
 * very store: dlock_client_connect(&c, "mock://t1", ...). The registry holds
 * one reference per name; every backend made from it holds its own, so
 * unregistering never pulls a store from under a live client.
 *
 * Lock order: the registry mutex, then a store's mutex (taking a reference).
 */
#include "store.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 64

typedef struct named_store {
    struct named_store *next;
    dlock_mock_store *store; /* referenced */
    char name[];
} named_store;

static pthread_mutex_t reg_mutex = PTHREAD_MUTEX_INITIALIZER;
static named_store *reg_head;

/* 1..64 characters of [A-Za-z0-9._-]: safe in a URL without escaping. */
static int name_ok(const char *name)
{
    size_t i, n;

    if (name == NULL)
        return 0;
    n = strlen(name);
    if (n == 0 || n > NAME_MAX_LEN)
        return 0;
    for (i = 0; i < n; i++) {
        char ch = name[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
            return 0;
    }
    return 1;
}

/* Registry mutex held. */
static named_store **find(const char *name)
{
    named_store **p;

    for (p = &reg_head; *p != NULL; p = &(*p)->next)
        if (strcmp((*p)->name, name) == 0)
            return p;
    return NULL;
}

int dlock_mock_store_register(dlock_mock_store *store, const char *name)
{
    named_store *e;
    size_t n;

    if (store == NULL || !name_ok(name))
        return DLOCK_EINVAL;
    n = strlen(name);
    e = malloc(sizeof(*e) + n + 1);
    if (e == NULL)
        return DLOCK_ENOMEM;
    memcpy(e->name, name, n + 1);
    e->store = store;
    pthread_mutex_lock(&reg_mutex);
    if (find(name) != NULL) {
        pthread_mutex_unlock(&reg_mutex);
        free(e);
        return DLOCK_EINVAL;
    }
    dlock__store_ref(store);
    e->next = reg_head;
    reg_head = e;
    pthread_mutex_unlock(&reg_mutex);
    return 0;
}

int dlock_mock_store_unregister(const char *name)
{
    named_store **p, *e;

    if (!name_ok(name))
        return DLOCK_EINVAL;
    pthread_mutex_lock(&reg_mutex);
    p = find(name);
    if (p == NULL) {
        pthread_mutex_unlock(&reg_mutex);
        return DLOCK_EINVAL;
    }
    e = *p;
    *p = e->next;
    pthread_mutex_unlock(&reg_mutex);
    dlock_mock_store_free(e->store);
    free(e);
    return 0;
}

int dlock_mock_backend_by_name(dlock_backend **out, const char *name)
{
    named_store **p;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || !name_ok(name))
        return DLOCK_EINVAL;
    pthread_mutex_lock(&reg_mutex);
    p = find(name);
    /* Under the registry mutex: an unregister cannot drop the store's
     * last reference before the backend has taken its own. */
    rc = p != NULL ? dlock_mock_backend_new(out, (*p)->store) : DLOCK_EINVAL;
    pthread_mutex_unlock(&reg_mutex);
    return rc;
}
