/*
 * Test harness: forwarders for backends that wrap another (see
 * wrap_backend.h).
 */
#include "wrap_backend.h"

#include <stdint.h>
#include <stdlib.h>

int dlock_test_wrap_eval(dlock_backend *b, dlock_reply **out, const dlock_script *s,
                         size_t nkeys, size_t nargs, const char *const *argv,
                         const size_t *argvlen, char *errbuf, size_t errlen)
{
    return dlock_backend_eval(DLOCK_TEST_INNER(b), out, s, nkeys, nargs, argv, argvlen,
                              errbuf, errlen);
}

int dlock_test_wrap_eval_until(dlock_backend *b, dlock_reply **out,
                               const dlock_script *s, size_t nkeys, size_t nargs,
                               const char *const *argv, const size_t *argvlen,
                               int64_t deadline_ms, char *errbuf, size_t errlen)
{
    return dlock_backend_eval_until(DLOCK_TEST_INNER(b), out, s, nkeys, nargs, argv,
                                    argvlen, deadline_ms, errbuf, errlen);
}

int dlock_test_wrap_eval_by_until(dlock_backend *b, dlock_reply **out,
                                  const dlock_script *s, size_t nkeys, size_t nargs,
                                  const char *const *argv, const size_t *argvlen,
                                  char *errbuf, size_t errlen)
{
    return b->methods->eval_until(b, out, s, nkeys, nargs, argv, argvlen, INT64_MAX,
                                  errbuf, errlen);
}

int dlock_test_wrap_subscribe(dlock_backend *b, dlock_subscription **out,
                              const char *channel, dlock_message_fn fn, void *arg)
{
    return dlock_backend_subscribe(DLOCK_TEST_INNER(b), out, channel, fn, arg);
}

int dlock_test_wrap_subscribe_until(dlock_backend *b, dlock_subscription **out,
                                    const char *channel, dlock_message_fn fn,
                                    void *arg, int64_t deadline_ms, char *errbuf,
                                    size_t errlen)
{
    return dlock_backend_subscribe_until(DLOCK_TEST_INNER(b), out, channel, fn, arg,
                                         deadline_ms, errbuf, errlen);
}

void dlock_test_wrap_unsubscribe(dlock_backend *b, dlock_subscription *sub)
{
    dlock_backend_unsubscribe(DLOCK_TEST_INNER(b), sub);
}

dlock_clock *dlock_test_wrap_clock(dlock_backend *b)
{
    return dlock_backend_clock(DLOCK_TEST_INNER(b));
}

void dlock_test_wrap_free(dlock_backend *b)
{
    dlock_backend_free(DLOCK_TEST_INNER(b));
    free(b);
}

uint64_t dlock_test_wrap_reconnects(dlock_backend *b)
{
    return dlock_backend_reconnects(DLOCK_TEST_INNER(b));
}

const char *dlock_test_wrap_publish_command(dlock_backend *b)
{
    return dlock_backend_publish_command(DLOCK_TEST_INNER(b));
}

unsigned dlock_test_wrap_key_slot(dlock_backend *b, const char *key, size_t len)
{
    return dlock_backend_key_slot(DLOCK_TEST_INNER(b), key, len);
}

unsigned dlock_test_wrap_key_node(dlock_backend *b, const char *key, size_t len)
{
    return dlock_backend_key_node(DLOCK_TEST_INNER(b), key, len);
}
