/*
 * dlock — the backend dispatchers (api/dlock/sys/backend.h): every call of
 * a backend slot goes through here, which checks its arguments and falls
 * back for the slots an older or smaller table lacks.
 */
#include "dlock/sys/backend.h"

#include "core/fiber.h"

#include <stdio.h>

#include <stdlib.h>

/* ---- dispatchers --------------------------------------------------------- */

/* What every eval needs (the caller has cleared its out). */
static int eval_args_ok(dlock_backend *b, const void *out,
                        const dlock_script *script, size_t nkeys, size_t nargs,
                        const char *const *argv)
{
    return b != NULL && b->methods != NULL && b->methods->eval != NULL &&
           out != NULL && script != NULL && script->source != NULL &&
           (argv != NULL || nkeys + nargs == 0);
}

int dlock_backend_eval(dlock_backend *b, dlock_reply **out,
                       const dlock_script *script, size_t nkeys, size_t nargs,
                       const char *const *argv, const size_t *argvlen,
                       char *errbuf, size_t errlen)
{
    return dlock_backend_eval_until(b, out, script, nkeys, nargs, argv, argvlen,
                                    INT64_MAX, errbuf, errlen);
}

/* A blocking call from inside a dlock_loop callback would wait for the
 * loop it stands on (core/fiber.h). */
static int refuse_blocking(char *errbuf, size_t errlen)
{
    if (!dlock__blocking_refused())
        return 0;
    if (errbuf != NULL && errlen > 0)
        snprintf(errbuf, errlen, "%s", DLOCK__REFUSED_DETAIL);
    return DLOCK_EDEADLK;
}

/* What every blocking eval checks first: 0, or the code to return. */
static int eval_begin(dlock_backend *b, dlock_reply **out,
                      const dlock_script *script, size_t nkeys, size_t nargs,
                      const char *const *argv, char *errbuf, size_t errlen)
{
    if (out != NULL)
        *out = NULL;
    if (!eval_args_ok(b, out, script, nkeys, nargs, argv))
        return DLOCK_EINVAL;
    return refuse_blocking(errbuf, errlen);
}

int dlock_backend_eval_until(dlock_backend *b, dlock_reply **out,
                             const dlock_script *script, size_t nkeys,
                             size_t nargs, const char *const *argv,
                             const size_t *argvlen, int64_t deadline_ms,
                             char *errbuf, size_t errlen)
{
    int rc;

    if ((rc = eval_begin(b, out, script, nkeys, nargs, argv, errbuf, errlen)) != 0)
        return rc;
    /* In a fiber of a loop: send, let the loop's other fibers send theirs,
     * then read (the replies of the whole batch come in one round trip). */
    if (dlock__fiber_current() && dlock_backend_can_split(b)) {
        dlock_pending *p;

        dlock__fiber_batch(1);
        rc = b->methods->eval_send(b, &p, script, nkeys, nargs, argv, argvlen,
                                   deadline_ms, errbuf, errlen);
        dlock__fiber_batch(0);
        if (rc != 0)
            return rc;
        dlock__fiber_turn();
        return b->methods->eval_receive(b, p, out, errbuf, errlen);
    }
    if (deadline_ms != INT64_MAX && DLOCK_BACKEND_HAS_SLOT(b->methods, eval_until))
        return b->methods->eval_until(b, out, script, nkeys, nargs, argv, argvlen,
                                      deadline_ms, errbuf, errlen);
    return b->methods->eval(b, out, script, nkeys, nargs, argv, argvlen,
                            errbuf, errlen);
}

int dlock_backend_subscribe(dlock_backend *b, dlock_subscription **out,
                            const char *channel, dlock_message_fn fn, void *arg)
{
    return dlock_backend_subscribe_until(b, out, channel, fn, arg, INT64_MAX,
                                         NULL, 0);
}

int dlock_backend_subscribe_until(dlock_backend *b, dlock_subscription **out,
                                  const char *channel, dlock_message_fn fn,
                                  void *arg, int64_t deadline_ms, char *errbuf,
                                  size_t errlen)
{
    if (errbuf != NULL && errlen > 0)
        errbuf[0] = '\0';
    if (out != NULL)
        *out = NULL;
    if (b == NULL || b->methods == NULL || b->methods->subscribe == NULL ||
        out == NULL || channel == NULL || fn == NULL)
        return DLOCK_EINVAL;
    if (dlock__blocking_refused())
        return refuse_blocking(errbuf, errlen);
    if (deadline_ms != INT64_MAX &&
        DLOCK_BACKEND_HAS_SLOT(b->methods, subscribe_until))
        return b->methods->subscribe_until(b, out, channel, fn, arg, deadline_ms,
                                           errbuf, errlen);
    return b->methods->subscribe(b, out, channel, fn, arg);
}

void dlock_backend_unsubscribe(dlock_backend *b, dlock_subscription *sub)
{
    if (b == NULL || b->methods == NULL || b->methods->unsubscribe == NULL ||
        sub == NULL)
        return;
    b->methods->unsubscribe(b, sub);
}

dlock_clock *dlock_backend_clock(dlock_backend *b)
{
    if (b == NULL || b->methods == NULL || b->methods->clock == NULL)
        return NULL;
    return b->methods->clock(b);
}

uint64_t dlock_backend_reconnects(dlock_backend *b)
{
    if (b == NULL || b->methods == NULL || b->methods->reconnects == NULL)
        return 0;
    return b->methods->reconnects(b);
}

uint64_t dlock_backend_unsynced(dlock_backend *b, int cause)
{
    if (b == NULL || b->methods == NULL || b->methods->unsynced == NULL)
        return 0;
    return b->methods->unsynced(b, cause);
}

int dlock_backend_server_safety(dlock_backend *b, dlock_server_safety *out)
{
    static const dlock_server_safety unknown = DLOCK_SERVER_SAFETY_INIT;

    if (b == NULL || out == NULL || out->version != 1)
        return DLOCK_EINVAL;
    if (b->methods == NULL || b->methods->server_safety == NULL)
        return DLOCK_ENOTSUP;
    *out = unknown;
    return b->methods->server_safety(b, out);
}

uint64_t dlock_backend_ignored_messages(dlock_backend *b)
{
    if (b == NULL || b->methods == NULL || b->methods->ignored_messages == NULL)
        return 0;
    return b->methods->ignored_messages(b);
}

const char *dlock_backend_publish_command(dlock_backend *b)
{
    const char *cmd = NULL;

    if (b != NULL && b->methods != NULL && b->methods->publish_command != NULL)
        cmd = b->methods->publish_command(b);
    return cmd != NULL ? cmd : "publish";
}

unsigned dlock_backend_key_slot(dlock_backend *b, const char *key, size_t len)
{
    if (b == NULL || b->methods == NULL || b->methods->key_slot == NULL || key == NULL)
        return 0;
    return b->methods->key_slot(b, key, len);
}

unsigned dlock_backend_key_node(dlock_backend *b, const char *key, size_t len)
{
    if (b == NULL || b->methods == NULL || b->methods->key_node == NULL || key == NULL)
        return dlock_backend_key_slot(b, key, len);
    return b->methods->key_node(b, key, len);
}

int dlock_backend_eval_node(dlock_backend *b, dlock_reply **out,
                            const dlock_script *script, size_t nkeys,
                            size_t nargs, const char *const *argv,
                            const size_t *argvlen, int64_t deadline_ms,
                            char *errbuf, size_t errlen)
{
    int rc;

    if ((rc = eval_begin(b, out, script, nkeys, nargs, argv, errbuf, errlen)) != 0)
        return rc;
    if (b->methods->eval_node == NULL)
        return DLOCK_ENOTSUP;
    return b->methods->eval_node(b, out, script, nkeys, nargs, argv, argvlen,
                                 deadline_ms, errbuf, errlen);
}

int dlock_backend_can_split(dlock_backend *b)
{
    return b != NULL && b->methods != NULL && b->methods->eval_send != NULL && b->methods->eval_receive != NULL;
}

int dlock_backend_eval_send(dlock_backend *b, dlock_pending **out,
                            const dlock_script *script, size_t nkeys,
                            size_t nargs, const char *const *argv,
                            const size_t *argvlen, int64_t deadline_ms,
                            char *errbuf, size_t errlen)
{
    if (out != NULL)
        *out = NULL;
    if (!eval_args_ok(b, out, script, nkeys, nargs, argv))
        return DLOCK_EINVAL;
    if (!dlock_backend_can_split(b))
        return DLOCK_ENOTSUP;
    if (dlock__blocking_refused())
        return refuse_blocking(errbuf, errlen);
    return b->methods->eval_send(b, out, script, nkeys, nargs, argv, argvlen,
                                 deadline_ms, errbuf, errlen);
}

int dlock_backend_eval_receive(dlock_backend *b, dlock_pending *p,
                               dlock_reply **out, char *errbuf, size_t errlen)
{
    if (out == NULL || p == NULL || !dlock_backend_can_split(b))
        return DLOCK_EINVAL;
    /* In a fiber: after the loop's other ready fibers sent theirs. */
    dlock__fiber_turn();
    return b->methods->eval_receive(b, p, out, errbuf, errlen);
}

void dlock_backend_free(dlock_backend *b)
{
    if (b == NULL || b->methods == NULL || b->methods->free == NULL)
        return;
    b->methods->free(b);
}
