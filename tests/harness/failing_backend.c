/*
 * Test harness: the failing backend (failing_backend.h).
 */
#include "failing_backend.h"
#include "fixture.h"
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_acquire(const dlock_script *s)
{
    size_t n = s->name ? strlen(s->name) : 0;

    return n >= 8 && strcmp(s->name + n - 8, "_acquire") == 0;
}

/* DLOCK_TEST_FAIL_ACQUIRE_REPLY: whether this call takes the one loss. */
static int loses_reply(dlock_backend *b, const dlock_script *s)
{
    int mode = DLOCK_TEST_FAIL_ACQUIRE_REPLY;

    return is_acquire(s) &&
           __atomic_compare_exchange_n(&((dlock_test_failing *)b)->mode, &mode,
                                       DLOCK_TEST_FAIL_NONE, 0, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

static int fails(dlock_backend *b, const dlock_script *s)
{
    int mode = __atomic_load_n(&((dlock_test_failing *)b)->mode, __ATOMIC_SEQ_CST);

    return mode == DLOCK_TEST_FAIL_ALL ||
           (mode == DLOCK_TEST_FAIL_RENEWALS && s->name && strstr(s->name, "renew"));
}

static int fb_eval_until(dlock_backend *b, dlock_reply **out, const dlock_script *s,
                         size_t nkeys, size_t nargs, const char *const *argv,
                         const size_t *argvlen, int64_t deadline_ms, char *errbuf,
                         size_t errlen)
{
    if (loses_reply(b, s)) {
        int rc = dlock_test_wrap_eval_until(b, out, s, nkeys, nargs, argv, argvlen,
                                            deadline_ms, errbuf, errlen);

        if (rc == 0)
            dlock_reply_free(*out);
        *out = NULL;
        if (errbuf && errlen)
            snprintf(errbuf, errlen, "injected loss of the reply");
        return rc == 0 ? DLOCK_ETIMEDOUT : rc;
    }
    if (!fails(b, s))
        return dlock_test_wrap_eval_until(b, out, s, nkeys, nargs, argv, argvlen,
                                          deadline_ms, errbuf, errlen);
    *out = NULL;
    if (errbuf && errlen)
        snprintf(errbuf, errlen, "injected failure");
    return DLOCK_ECONN;
}

static const dlock_backend_methods failing_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "failing",
    .eval = dlock_test_wrap_eval_by_until,
    .subscribe = dlock_test_wrap_subscribe,
    .unsubscribe = dlock_test_wrap_unsubscribe,
    .clock = dlock_test_wrap_clock,
    .free = dlock_test_wrap_free,
    .eval_until = fb_eval_until,
    .subscribe_until = dlock_test_wrap_subscribe_until,
    .reconnects = dlock_test_wrap_reconnects,
    .publish_command = dlock_test_wrap_publish_command,
    .key_slot = dlock_test_wrap_key_slot,
};

dlock_test_failing *dlock_test_failing_new(dlock_backend *inner)
{
    dlock_test_failing *f = calloc(1, sizeof(*f));

    if (!f) {
        dlock_backend_free(inner);
        return NULL;
    }
    f->w.base.methods = &failing_methods;
    f->w.inner = inner;
    return f;
}

void dlock_test_failing_set(dlock_test_failing *f, int mode)
{
    __atomic_store_n(&f->mode, mode, __ATOMIC_SEQ_CST);
}

static void free_failing_client(void *o) { dlock_client_free(o); }

dlock_client *dlock_fx_failing_client(dlock_fx *fx, const dlock_client_options *o,
                                      dlock_test_failing **fb)
{
    dlock_client_options opts = *o;
    dlock_backend *inner = NULL;
    dlock_test_failing *f;
    dlock_client *c = NULL;

    assert_int_equal(dlock_fx_backend_new(fx, &inner), 0);
    f = dlock_test_failing_new(inner);
    assert_non_null(f);
    opts.watchdog_timeout_ms = fx->watchdog_ms;
    opts.budget_slack_ms = 2000;
    if (dlock_client_new(&c, &f->w.base, &opts) != 0) {
        dlock_test_wrap_free(&f->w.base);
        fail_msg("own client");
    }
    if (fx->is_mock)
        dlock_fx_settle(fx); /* its watchdog asleep before the clock moves */
    *fb = f;
    return dlock_fx_keep(fx, c, free_failing_client);
}
