/*
 * The virtual clock as a test author uses it with whole clients (issue 14):
 * counting the application's blocked threads without the watchdogs, and
 * reaching a test's own store and clock from a URL or a JSON configuration
 * ("mock://NAME"); a fork() child's view of the clock.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "dlock.h"
#include "../../harness/runner.h"

typedef struct waiter_arg {
    dlock_rlock *l;
    int rc, unlock_rc;
} waiter_arg;

static void *waiter_main(void *p)
{
    waiter_arg *w = p;

    w->rc = dlock_try_lock(w->l, 60000, 5000);
    /* The hold is this thread's: released here. */
    w->unlock_rc = w->rc == 0 ? dlock_unlock(w->l) : w->rc;
    return NULL;
}

static void test_waiters_exclude_watchdogs(void **state)
{
    dlock_vclock *clk;
    dlock_mock_store *store;
    dlock_backend *b1, *b2;
    dlock_client *c1, *c2;
    dlock_rlock *l1, *l2;
    waiter_arg w;
    pthread_t t;

    (void)state;
    assert_int_equal(dlock_vclock_new(&clk, 0), 0);
    assert_int_equal(dlock_mock_store_new(&store, dlock_vclock_clock(clk)), 0);
    assert_int_equal(dlock_mock_backend_new(&b1, store), 0);
    assert_int_equal(dlock_mock_backend_new(&b2, store), 0);
    assert_int_equal(dlock_client_new(&c1, b1, NULL), 0);
    assert_int_equal(dlock_client_new(&c2, b2, NULL), 0);
    assert_int_equal(dlock_reentrant_new(&l1, c1, "job"), 0);
    assert_int_equal(dlock_reentrant_new(&l2, c2, "job"), 0);

    /* Two clients: two watchdogs sleep on the clock, and no waiter. */
    assert_int_equal(dlock_vclock_wait_sleepers(clk, 2, 5000), 0);
    assert_int_equal(dlock_vclock_waiters(clk), 0);
    assert_int_equal(dlock_vclock_wait_waiters(clk, 1, 20), DLOCK_ETIMEDOUT);
    assert_int_equal(dlock_vclock_wait_waiters(NULL, 1, 20), DLOCK_EINVAL);
    assert_int_equal(dlock_vclock_waiters(NULL), 0);

    assert_int_equal(dlock_lock(l1, 10000), 0);
    w.l = l2;
    w.rc = 1;
    assert_int_equal(pthread_create(&t, NULL, waiter_main, &w), 0);
    /* The one count that means "the waiter has blocked", whatever the
     * number of clients. */
    assert_int_equal(dlock_vclock_wait_waiters(clk, 1, 5000), 0);
    assert_int_equal(dlock_vclock_waiters(clk), 1);
    assert_int_equal(dlock_vclock_sleepers(clk), 3);
    assert_int_equal(dlock_vclock_advance(clk, 10001), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(w.rc, 0); /* l1's lease ran out: the waiter got it */
    assert_int_equal(w.unlock_rc, 0);
    assert_int_equal(dlock_vclock_waiters(clk), 0);

    dlock_rlock_free(l1);
    dlock_rlock_free(l2);
    dlock_client_free(c1);
    dlock_client_free(c2);
    dlock_mock_store_free(store);
    dlock_vclock_free(clk);
}

static void test_named_store(void **state)
{
    static const char long_name[] =
        "x123456789012345678901234567890123456789012345678901234567890123456";
    dlock_vclock *clk;
    dlock_mock_store *store, *other;
    dlock_backend *b = NULL;
    dlock_client *a, *j, *c = NULL;
    dlock_rlock *la, *lj;
    char err[256] = "";

    (void)state;
    assert_int_equal(dlock_vclock_new(&clk, 0), 0);
    assert_int_equal(dlock_mock_store_new(&store, dlock_vclock_clock(clk)), 0);
    assert_int_equal(dlock_mock_store_new(&other, NULL), 0);
    assert_int_equal(dlock_mock_store_register(store, "mockkit-t1"), 0);
    /* Bad input changes nothing. */
    assert_int_equal(dlock_mock_store_register(other, "mockkit-t1"), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_register(other, "bad name"), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_register(other, ""), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_register(other, long_name), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_register(other, NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_register(NULL, "mockkit-t2"), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_backend_by_name(NULL, "mockkit-t1"), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_backend_by_name(&b, "mockkit-none"), DLOCK_EINVAL);
    assert_null(b);

    /* A URL and a JSON configuration reach the test's store and clock. */
    assert_int_equal(dlock_client_connect(&a, "mock://mockkit-t1", NULL, err, sizeof err), 0);
    assert_int_equal(dlock_client_from_json_string(
                         &j, "{\"url\": \"mock://mockkit-t1\", \"watchdog_timeout_ms\": 3000}",
                         err, sizeof err),
                     0);
    assert_int_equal(dlock_reentrant_new(&la, a, "job"), 0);
    assert_int_equal(dlock_reentrant_new(&lj, j, "job"), 0);
    assert_int_equal(dlock_lock(la, 10000), 0);
    assert_int_equal(dlock_try_lock(lj, 0, 0), DLOCK_EBUSY); /* one store */
    assert_int_equal(dlock_mock_store_dbsize(store), 1);     /* the test's */
    assert_int_equal(dlock_mock_store_dbsize(other), 0);
    assert_int_equal(dlock_vclock_advance(clk, 10001), 0);  /* its clock */
    assert_int_equal(dlock_try_lock(lj, 0, 5000), 0);
    assert_int_equal(dlock_unlock(la), DLOCK_ELOST);

    assert_int_equal(dlock_client_connect(&c, "mock://mockkit-none", NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err, "mock://mockkit-none: no mock store is registered"));

    /* Unregistering: no new clients, the existing ones keep the store. */
    assert_int_equal(dlock_mock_store_unregister("mockkit-t1"), 0);
    assert_int_equal(dlock_mock_store_unregister("mockkit-t1"), DLOCK_EINVAL);
    assert_int_equal(dlock_mock_store_unregister(NULL), DLOCK_EINVAL);
    assert_int_equal(dlock_client_connect(&c, "mock://mockkit-t1", NULL, err, sizeof err),
                     DLOCK_EINVAL);
    assert_int_equal(dlock_unlock(lj), 0);
    /* The name is free again. */
    assert_int_equal(dlock_mock_store_register(other, "mockkit-t1"), 0);
    assert_int_equal(dlock_mock_store_unregister("mockkit-t1"), 0);

    dlock_rlock_free(la);
    dlock_rlock_free(lj);
    dlock_client_free(a);
    dlock_client_free(j);
    dlock_mock_store_free(store);
    dlock_mock_store_free(other);
    dlock_vclock_free(clk);
}

/* A fork() child does not have its parent's threads: the clock it inherits
 * has no sleepers (the parent's entries are on their stacks, which the
 * child's own threads would reuse), and an advance in the child does not
 * wait for them. The parent's view is unchanged. */
static void test_fork_child_forgets_parents_sleepers(void **state)
{
    dlock_vclock *clk;
    dlock_mock_store *store;
    dlock_backend *b;
    dlock_client *c;
    int status = -1;
    pid_t pid;

    (void)state;
    assert_int_equal(dlock_vclock_new(&clk, 0), 0);
    assert_int_equal(dlock_mock_store_new(&store, dlock_vclock_clock(clk)), 0);
    assert_int_equal(dlock_mock_backend_new(&b, store), 0);
    assert_int_equal(dlock_client_new(&c, b, NULL), 0);
    assert_int_equal(dlock_vclock_wait_sleepers(clk, 1, 5000), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) /* no thread started here: ThreadSanitizer could not */
        _exit(dlock_vclock_sleepers(clk) != 0 ? 1 :
              dlock_vclock_advance(clk, 60000) != 0 ? 2 :
              dlock_vclock_now(clk) != 60000 ? 3 : 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(dlock_vclock_sleepers(clk), 1);
    assert_int_equal(dlock_vclock_now(clk), 0);

    dlock_client_free(c);
    dlock_mock_store_free(store);
    dlock_vclock_free(clk);
}

int dlock_test_mock_clock(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_waiters_exclude_watchdogs),
        cmocka_unit_test(test_named_store),
        cmocka_unit_test(test_fork_child_forgets_parents_sleepers),
    };
    return DLOCK_RUN_GROUP("mock_clock", tests, NULL, NULL);
}
