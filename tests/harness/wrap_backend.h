/*
 * Test harness: the forwarding half of a backend that wraps another (the
 * failing, counting and slot-checking backends of the tests, the bench's
 * counting one). A wrapper's struct begins with a dlock_test_wrap; its
 * methods table takes the forwarders below for every slot it does not
 * change, so each wrapper holds only what it adds.
 */
#ifndef DLOCK_TEST_WRAP_BACKEND_H
#define DLOCK_TEST_WRAP_BACKEND_H

#include "dlock/sys/backend.h"

typedef struct dlock_test_wrap {
    dlock_backend base; /* first: a dlock_backend * is a dlock_test_wrap * */
    dlock_backend *inner; /* owned: freed with the wrapper */
} dlock_test_wrap;

#define DLOCK_TEST_INNER(b) (((dlock_test_wrap *)(b))->inner)

/* Each calls the same slot of the inner backend (through its dispatcher,
 * so an inner table without the slot gets the dispatcher's fallback). */
int dlock_test_wrap_eval(dlock_backend *b, dlock_reply **out, const dlock_script *s,
                         size_t nkeys, size_t nargs, const char *const *argv,
                         const size_t *argvlen, char *errbuf, size_t errlen);
int dlock_test_wrap_eval_until(dlock_backend *b, dlock_reply **out,
                               const dlock_script *s, size_t nkeys, size_t nargs,
                               const char *const *argv, const size_t *argvlen,
                               int64_t deadline_ms, char *errbuf, size_t errlen);
int dlock_test_wrap_subscribe(dlock_backend *b, dlock_subscription **out,
                              const char *channel, dlock_message_fn fn, void *arg);
int dlock_test_wrap_subscribe_until(dlock_backend *b, dlock_subscription **out,
                                    const char *channel, dlock_message_fn fn,
                                    void *arg, int64_t deadline_ms, char *errbuf,
                                    size_t errlen);
void dlock_test_wrap_unsubscribe(dlock_backend *b, dlock_subscription *sub);
dlock_clock *dlock_test_wrap_clock(dlock_backend *b);
/* The eval slot of a wrapper whose own eval_until does the work: calls
 * it without a deadline. */
int dlock_test_wrap_eval_by_until(dlock_backend *b, dlock_reply **out,
                                  const dlock_script *s, size_t nkeys, size_t nargs,
                                  const char *const *argv, const size_t *argvlen,
                                  char *errbuf, size_t errlen);
/* Frees the inner backend, then b (allocated with malloc/calloc). */
void dlock_test_wrap_free(dlock_backend *b);
uint64_t dlock_test_wrap_reconnects(dlock_backend *b);
const char *dlock_test_wrap_publish_command(dlock_backend *b);
unsigned dlock_test_wrap_key_slot(dlock_backend *b, const char *key, size_t len);
unsigned dlock_test_wrap_key_node(dlock_backend *b, const char *key, size_t len);

#endif /* DLOCK_TEST_WRAP_BACKEND_H */
