/*
 * async_lock — the asynchronous API (api/dlock/async.h) on a libuv loop.
 *
 *   async_lock                         on the in-process mock backend
 *   async_lock redis://127.0.0.1:6379  on a Redis server
 *
 * One thread, no blocking call: a lock is held by "another process"; our
 * request for it waits in the loop (no thread parked) while a timed
 * try-lock gives up; a timer releases the other hold, the wait is woken by
 * the release message, and we unlock. Built without libuv, the same
 * program runs dlock's poll mode instead (dlock_loop_run).
 *
 * The request-handler pattern: each request handled on the loop's thread
 * has an owner id of its own (dlock_client_owner_new), passed to every
 * call of the request, so two requests never share a hold (the thread's
 * owner id would be every request's). An acquisition started with owner
 * NULL mints one too and gives it in r->owner.
 */
#include <dlock.h>
#ifdef DLOCK_SAMPLE_LIBUV
#include <dlock/adapters/libuv.h>
#endif

#include <stdio.h>
#include <stdlib.h>

#define OTHER "another-process"

static dlock_loop *lp;
static dlock_rlock *lock;
static int finished;

/* What a request handler keeps: its name and its own owner id. */
typedef struct request {
    const char *name;
    char owner[DLOCK_OWNER_MAX];
} request;

static void check(int rc, const char *what)
{
    if (rc == 0)
        return;
    fprintf(stderr, "%s: %s (%s): %s\n", what, dlock_errname(rc), dlock_strerror(rc),
            lock ? dlock_errmsg(lock) : "");
    exit(1);
}

static void unlocked(void *arg, dlock_op_id op, const dlock_result *r)
{
    (void)arg, (void)op;
    printf("%s: unlock -> %s\n", (const char *)arg, dlock_errname(r->rc));
    finished += r->rc == 0 && arg != NULL && ((const char *)arg)[0] == 'w';
}

/* Callbacks run on the loop's thread; starting more work from one is fine
 * (a blocking call there would be DLOCK_EDEADLK). */
static void acquired(void *arg, dlock_op_id op, const dlock_result *r)
{
    request *req = arg;

    (void)op;
    printf("%s: lock -> %s%s%s\n", req->name, dlock_errname(r->rc), r->rc ? ": " : "",
           r->detail);
    /* r->owner is req->owner: the one the request started with */
    if (r->rc == 0)
        check(dlock_unlock_async(lp, NULL, lock, req->owner, unlocked, "waiter"),
              "unlock_async");
}

static void gave_up(void *arg, dlock_op_id op, const dlock_result *r)
{
    (void)arg, (void)op;
    printf("impatient: try_lock(50 ms) -> %s: %s\n", dlock_errname(r->rc), r->detail);
    /* now let the other process go */
    check(dlock_unlock_async(lp, NULL, lock, OTHER, unlocked, "other"), "unlock_async");
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "mock:";
    dlock_client *c = NULL;
    request waiter = {"waiter", ""};
    char err[256];
#ifdef DLOCK_SAMPLE_LIBUV
    uv_loop_t *uv = uv_default_loop();
#endif

    check(dlock_client_connect(&c, url, NULL, err, sizeof(err)), err);
    check(dlock_reentrant_new(&lock, c, "async-sample"), "reentrant_new");
    /* held elsewhere */
    check(dlock_lock_as(lock, OTHER, 0), "lock_as");
#ifdef DLOCK_SAMPLE_LIBUV
    check(dlock_loop_new_libuv(&lp, c, uv), "loop_new_libuv");
    printf("loop: libuv\n");
#else
    check(dlock_loop_new(&lp, c, NULL), "loop_new");
    printf("loop: dlock's poll mode\n");
#endif
    /* A request: its own owner id, for all of its calls. */
    check(dlock_client_owner_new(c, waiter.owner, sizeof waiter.owner), "owner_new");
    check(dlock_lock_async(lp, NULL, lock, waiter.owner, DLOCK_WAIT_FOREVER, 0, acquired,
                           &waiter),
          "lock_async");
    /* Owner NULL: an owner id of the acquisition's own (in r->owner). */
    check(dlock_lock_async(lp, NULL, lock, NULL, 50, 0, gave_up, NULL), "lock_async");
#ifdef DLOCK_SAMPLE_LIBUV
    while (!finished)
        uv_run(uv, UV_RUN_ONCE);
#else
    while (!finished)
        dlock_loop_run(lp, 100);
#endif
    dlock_loop_free(lp);
#ifdef DLOCK_SAMPLE_LIBUV
    uv_run(uv, UV_RUN_DEFAULT); /* the adapter's handles close */
    uv_loop_close(uv);
#endif
    dlock_rlock_free(lock);
    dlock_client_free(c);
    printf("done: no thread was parked\n");
    return 0;
}
