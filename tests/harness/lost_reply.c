/*
 * Test harness: the lost-reply check (lost_reply.h).
 */
#include "lost_reply.h"
#include "asserts.h"
#include "failing_backend.h"
#include "fixture.h"
#include "runner.h"

#include <string.h>

#define OWNER "lost-reply:1"

typedef struct acquirer {
    dlock_rlock *l;
    int64_t wait_ms, lease_ms;
    int rc;
    dlock_fx_thread t;
} acquirer;

static void acquirer_main(void *arg)
{
    acquirer *a = arg;

    a->rc = dlock_try_lock_as(a->l, OWNER, a->wait_ms, a->lease_ms);
}

static dlock_rlock *made(dlock_fx *fx, int (*make)(dlock_rlock **, dlock_client *,
                                                   const char *),
                         dlock_client *c)
{
    dlock_rlock *l = NULL;

    assert_true(fx->nlocks < DLOCK_FX_MAX_LOCKS);
    assert_int_equal(make(&l, c, fx->name), 0);
    assert_non_null(l);
    fx->locks[fx->nlocks++] = l;
    return l;
}

/* One acquisition on another thread whose first reply fb loses; the
 * retry after the transport error's back-off takes it. */
static void acquire_losing_reply(dlock_fx *fx, dlock_test_failing *fb, dlock_rlock *l,
                                 int64_t lease_ms)
{
    const int64_t wait = fx->is_mock ? 60000 : 5000;
    acquirer a;
    int i, joined;

    memset(&a, 0, sizeof(a));
    a.l = l;
    a.wait_ms = wait;
    a.lease_ms = lease_ms;
    a.rc = 1;
    dlock_test_failing_set(fb, DLOCK_TEST_FAIL_ACQUIRE_REPLY);
    dlock_fx_start(&a.t, acquirer_main, &a);
    /* the mock's back-off sleeps on the virtual clock */
    for (i = 0; fx->is_mock && i < 200 && !dlock_fx_done(&a.t); i++) {
        dlock_fx_settle(fx);
        dlock_fx_advance(fx, 50);
    }
    joined = dlock_fx_join(fx, &a.t, fx->is_mock ? 5000 : wait + 5000, l);
    assert_int_equal(joined, 0);
    assert_int_equal(a.rc, 0);
    /* the loss happened (the mode is back to none) */
    assert_int_equal(__atomic_load_n(&fb->mode, __ATOMIC_SEQ_CST), DLOCK_TEST_FAIL_NONE);
}

void dlock_fx_lost_reply_check(dlock_fx *fx,
                               int (*make)(dlock_rlock **, dlock_client *, const char *),
                               int (*other)(dlock_rlock **, dlock_client *, const char *),
                               int reentrant)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_test_failing *fb = NULL;
    dlock_client *c = dlock_fx_failing_client(fx, &o, &fb);
    dlock_rlock *l = made(fx, make, c);
    dlock_rlock *l2 = made(fx, other, fx->c2);
    const int64_t leases[2] = {fx->long_lease_ms, 0};
    int i;

    for (i = 0; i < 2; i++) {
        acquire_losing_reply(fx, fb, l, leases[i]);
        /* one hold, on the store as in the client */
        assert_int_equal(dlock_fx_hold_count_as(l, OWNER), 1);
        assert_int_equal(dlock_fx_is_held_as(l, OWNER), 1);
        assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), DLOCK_EBUSY);

        /* re-entry counts, from this thread with the explicit owner; a
         * lock that is not reentrant still refuses its holder */
        if (reentrant) {
            assert_int_equal(dlock_try_lock_as(l, OWNER, 0, leases[i]), 0);
            assert_int_equal(dlock_fx_hold_count_as(l, OWNER), 2);
            assert_int_equal(dlock_unlock_as(l, OWNER), 0);
            assert_int_equal(dlock_fx_hold_count_as(l, OWNER), 1);
        } else {
            assert_int_equal(dlock_try_lock_as(l, OWNER, 0, leases[i]), DLOCK_EBUSY);
            assert_int_equal(dlock_try_lock_as(l, OWNER, 1000, leases[i]), DLOCK_EDEADLK);
        }
        assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), DLOCK_EBUSY);

        /* the one unlock of the one acquisition frees it */
        assert_int_equal(dlock_unlock_as(l, OWNER), 0);
        assert_int_equal(dlock_fx_hold_count_as(l, OWNER), 0);
        assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
        assert_int_equal(dlock_unlock(l2), 0);
        assert_int_equal(dlock_unlock_as(l, OWNER), DLOCK_ENOTOWNER);
    }
}
