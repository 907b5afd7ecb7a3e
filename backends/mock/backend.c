/*
 * dlock mock — the backend vtable over a mock store.
 *
 * A backend is a thin handle: the store does the work, so several backends
 * (several clients, i.e. several simulated processes) can share one store
 * and see each other's locks and messages.
 */
#include "dlock/mock.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "lua_bridge.h"
#include "pubsub.h"
#include "store.h"

typedef struct mock_backend {
    dlock_backend base; /* first: a dlock_backend * is a mock_backend * */
    dlock_mock_store *st;
} mock_backend;

static void set_err(char *errbuf, size_t errlen, const char *msg)
{
    if (errbuf != NULL && errlen > 0)
        snprintf(errbuf, errlen, "%s", msg);
}

static int mock_eval(dlock_backend *base, dlock_reply **out,
                     const dlock_script *script, size_t nkeys, size_t nargs,
                     const char *const *argv, const size_t *argvlen, char *errbuf,
                     size_t errlen)
{
    mock_backend *b = (mock_backend *)base;
    size_t i;
    int rc;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || script == NULL || script->source == NULL ||
        nkeys > INT_MAX || nargs > INT_MAX - nkeys ||
        (argv == NULL && nkeys + nargs > 0)) {
        set_err(errbuf, errlen, "mock: invalid eval arguments");
        return DLOCK_EINVAL;
    }
    for (i = 0; i < nkeys + nargs; i++) {
        if (argv[i] == NULL) {
            set_err(errbuf, errlen, "mock: NULL script argument");
            return DLOCK_EINVAL;
        }
    }
    dlock__store_begin(b->st);
    rc = dlock__lua_eval(b->st, out, script, nkeys, nargs, argv, argvlen, errbuf,
                         errlen);
    dlock__store_end(b->st);
    return rc;
}

static int mock_subscribe(dlock_backend *base, dlock_subscription **out,
                          const char *channel, dlock_message_fn fn, void *arg)
{
    mock_backend *b = (mock_backend *)base;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || channel == NULL || fn == NULL)
        return DLOCK_EINVAL;
    /* In-process: registered means confirmed; nothing to wait for. */
    return dlock__pubsub_subscribe(b->st->pubsub, out, channel, fn, arg);
}

static void mock_unsubscribe(dlock_backend *base, dlock_subscription *sub)
{
    (void)base;
    dlock__pubsub_unsubscribe(sub);
}

static dlock_clock *mock_clock(dlock_backend *base)
{
    return ((mock_backend *)base)->st->clock;
}

static void mock_free(dlock_backend *base)
{
    mock_backend *b = (mock_backend *)base;

    dlock_mock_store_free(b->st);
    free(b);
}

/* One node: plain pub/sub (the store also runs SPUBLISH, the same way, so
 * a script given "spublish" works here too) and one group for every key. */
static const char *mock_publish_command(dlock_backend *b)
{
    (void)b;
    return "publish";
}

static unsigned mock_key_slot(dlock_backend *b, const char *key, size_t len)
{
    (void)b;
    (void)key;
    (void)len;
    return 0;
}

static const dlock_backend_methods mock_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "mock",
    .eval = mock_eval,
    .subscribe = mock_subscribe,
    .unsubscribe = mock_unsubscribe,
    .clock = mock_clock,
    .free = mock_free,
    .publish_command = mock_publish_command,
    .key_slot = mock_key_slot,
};

int dlock_mock_backend_new(dlock_backend **out, dlock_mock_store *store)
{
    mock_backend *b;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || store == NULL)
        return DLOCK_EINVAL;
    b = calloc(1, sizeof(*b));
    if (b == NULL)
        return DLOCK_ENOMEM;
    b->base.methods = &mock_methods;
    dlock__store_ref(store);
    b->st = store;
    *out = &b->base;
    return 0;
}
