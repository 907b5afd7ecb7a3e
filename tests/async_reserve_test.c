/*
 * A loop when no stack can be had (objects/async/loop.c's fiber pool): a
 * starter needs none, so what it admits is served, on the loop's reserved
 * fibers when its pool has no fiber out (never a 0 followed by a
 * DLOCK_ENOMEM callback), and what lets go still runs on them, more
 * releases than there are of them included. The fiber allocator is replaced through the loop's seam
 * (loop.h) for the duration of a case: the public API cannot empty the
 * process's mappings without taking the machine's with it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlock.h>

#include "objects/async/loop.h"
#include "harness/runner.h"

#define HOLDS 10 /* more than the loop's reserve (loop.c's RESERVE) */

typedef struct seen {
    int calls, rc;
    char owner[DLOCK_OWNER_MAX];
} seen;

static void on_done(void *arg, dlock_op_id op, const dlock_result *r)
{
    seen *s = arg;

    (void)op;
    s->calls++;
    s->rc = r->rc;
    snprintf(s->owner, sizeof s->owner, "%s", r->owner ? r->owner : "");
}

static int no_fiber(dlock__fiber **out, dlock__fiber_fn fn, void *arg)
{
    (void)fn, (void)arg;
    *out = NULL;
    return DLOCK_ENOMEM;
}

static void run_all(dlock_loop *lp)
{
    int i;

    for (i = 0; i < 1000 && dlock_loop_pending(lp) > 0; i++)
        assert_true(dlock_loop_run(lp, 10) >= 0);
}

static void test_no_stack_served_releases_run(void **state)
{
    dlock_client *c = NULL;
    dlock_loop *lp = NULL;
    dlock_rlock *l[HOLDS];
    dlock_semaphore *sem = NULL;
    seen got[HOLDS], rel[HOLDS], late, sr, probe;
    int i, locked = -1;

    (void)state;
    memset(got, 0, sizeof got);
    memset(rel, 0, sizeof rel);
    memset(&late, 0, sizeof late);
    memset(&sr, 0, sizeof sr);
    memset(&probe, 0, sizeof probe);
    assert_int_equal(dlock_client_connect(&c, "mock:", NULL, NULL, 0), 0);
    assert_int_equal(dlock_loop_new(&lp, c, NULL), 0);
    assert_int_equal(dlock_semaphore_new(&sem, c, "reserve:sem"), 0);
    for (i = 0; i < HOLDS; i++) {
        char name[32];

        snprintf(name, sizeof name, "reserve:%d", i);
        assert_int_equal(dlock_reentrant_new(&l[i], c, name), 0);
        assert_int_equal(dlock_lock_async(lp, NULL, l[i], NULL, 0, 60000, on_done, &got[i]),
                         0);
    }
    run_all(lp);
    for (i = 0; i < HOLDS; i++)
        assert_int_equal(got[i].rc, 0);

    /* No stack to be had from here on: an acquisition and a read are
     * still served (on the reserved fibers), each called back once with
     * its answer, not an ENOMEM. */
    dlock__loop_fiber_new = no_fiber;
    assert_int_equal(dlock_lock_async(lp, NULL, l[0], NULL, 0, 0, on_done, &late), 0);
    assert_int_equal(dlock_is_locked_async(lp, NULL, l[1], on_done, &probe), 0);
    run_all(lp);
    assert_int_equal(late.calls, 1);
    assert_int_equal(late.rc, DLOCK_EBUSY);
    assert_int_equal(probe.calls, 1);
    assert_int_equal(probe.rc, 0);
    assert_int_equal(dlock_loop_pending(lp), 0);
    memset(&late, 0, sizeof late);
    /* Every holder lets go at once: more releases than reserved fibers,
     * one after the other on them; and a semaphore release. */
    for (i = 0; i < HOLDS; i++)
        assert_int_equal(dlock_unlock_async(lp, NULL, l[i], got[i].owner, on_done, &rel[i]),
                         0);
    assert_int_equal(dlock_semaphore_release_async(lp, NULL, sem, 1, on_done, &sr), 0);
    run_all(lp);
    dlock__loop_fiber_new = dlock__fiber_new;
    assert_int_equal(late.calls, 0);
    for (i = 0; i < HOLDS; i++) {
        assert_int_equal(rel[i].calls, 1);
        assert_int_equal(rel[i].rc, 0);
        assert_int_equal(dlock_is_locked(l[i], &locked), 0);
        assert_int_equal(locked, 0);
    }
    assert_int_equal(sr.calls, 1);
    assert_int_equal(sr.rc, 0);
    assert_int_equal(dlock_loop_pending(lp), 0);

    /* Stacks again: the loop serves as before. */
    assert_int_equal(dlock_lock_async(lp, NULL, l[0], NULL, 0, 0, on_done, &late), 0);
    run_all(lp);
    assert_int_equal(late.rc, 0);
    assert_int_equal(dlock_unlock_as(l[0], late.owner), 0);

    dlock_loop_free(lp);
    for (i = 0; i < HOLDS; i++)
        dlock_rlock_free(l[i]);
    dlock_semaphore_free(sem);
    dlock_client_free(c);
}

int dlock_test_async_reserve(void);
int dlock_test_async_reserve(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_stack_served_releases_run),
    };
    return DLOCK_RUN_GROUP("async_reserve", tests, NULL, NULL);
}
