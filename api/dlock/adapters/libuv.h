/*
 * dlock — attach a dlock_loop (api/dlock/async.h) to a libuv loop.
 * Header-only, like hiredis's adapters: include it where libuv is.
 *
 *     dlock_loop *lp;
 *     dlock_loop_new_libuv(&lp, client, uv_default_loop());
 *     dlock_lock_async(lp, NULL, lock, NULL, DLOCK_WAIT_FOREVER, 0, done, arg);
 *     uv_run(uv_default_loop(), UV_RUN_DEFAULT);
 *     ...
 *     dlock_loop_free(lp);   (on the loop's thread, before uv_loop_close)
 *
 * Callbacks run on the thread that runs uv_run. dlock's file descriptor is
 * watched with a uv_poll_t and its timer is a uv_timer_t (both referenced:
 * uv_run(UV_RUN_DEFAULT) returns only after dlock_loop_free). After
 * dlock_loop_free the handles close on the loop's next turn (uv_close):
 * run the loop once more before uv_loop_close.
 */
#ifndef DLOCK_ADAPTERS_LIBUV_H
#define DLOCK_ADAPTERS_LIBUV_H

#include <stdlib.h>
#include <uv.h>

#include "../async.h"

typedef struct dlock_libuv {
    dlock_loop *lp;
    uv_loop_t *loop;
    uv_poll_t poll;
    uv_timer_t timer;
    int poll_open, polling, open_handles;
} dlock_libuv;

static void dlock_libuv_on_poll_(uv_poll_t *h, int status, int events)
{
    dlock_libuv *a = (dlock_libuv *)h->data;

    (void)status, (void)events;
    dlock_loop_on_fd(a->lp, -1, DLOCK_LOOP_READ);
}

static void dlock_libuv_on_timer_(uv_timer_t *h)
{
    dlock_libuv *a = (dlock_libuv *)h->data;

    dlock_loop_on_timer(a->lp);
}

static void dlock_libuv_add_read_(void *data, int fd)
{
    dlock_libuv *a = (dlock_libuv *)data;

    if (!a->poll_open) {
        if (uv_poll_init(a->loop, &a->poll, fd) != 0)
            return;
        a->poll.data = a;
        a->poll_open = 1;
        a->open_handles++;
    }
    if (!a->polling && uv_poll_start(&a->poll, UV_READABLE, dlock_libuv_on_poll_) == 0)
        a->polling = 1;
}

static void dlock_libuv_del_read_(void *data, int fd)
{
    dlock_libuv *a = (dlock_libuv *)data;

    (void)fd;
    if (a->polling)
        uv_poll_stop(&a->poll);
    a->polling = 0;
}

static void dlock_libuv_schedule_timer_(void *data, int64_t ms)
{
    dlock_libuv *a = (dlock_libuv *)data;

    uv_timer_stop(&a->timer);
    if (ms >= 0)
        uv_timer_start(&a->timer, dlock_libuv_on_timer_, (uint64_t)ms, 0);
}

static void dlock_libuv_closed_(uv_handle_t *h)
{
    dlock_libuv *a = (dlock_libuv *)h->data;

    if (--a->open_handles == 0)
        free(a);
}

static void dlock_libuv_cleanup_(void *data)
{
    dlock_libuv *a = (dlock_libuv *)data;

    if (a->poll_open)
        uv_close((uv_handle_t *)&a->poll, dlock_libuv_closed_);
    uv_close((uv_handle_t *)&a->timer, dlock_libuv_closed_);
}

/* A dlock_loop for client c, driven by loop. 0 and *out (free it with
 * dlock_loop_free, on the loop's thread), or what dlock_loop_new returns,
 * or DLOCK_ENOMEM. Call it on the loop's thread. */
static inline int dlock_loop_new_libuv(dlock_loop **out, dlock_client *c, uv_loop_t *loop)
{
    dlock_libuv *a;
    dlock_loop_hooks hooks = {DLOCK_LOOP_HOOKS_VERSION, NULL, dlock_libuv_add_read_,
                              dlock_libuv_del_read_, NULL, NULL,
                              dlock_libuv_schedule_timer_, NULL, dlock_libuv_cleanup_};
    dlock_loop *lp = NULL;
    int rc;

    if (!out || !c || !loop)
        return DLOCK_EINVAL;
    *out = NULL;
    a = (dlock_libuv *)calloc(1, sizeof(*a));
    if (!a)
        return DLOCK_ENOMEM;
    hooks.data = a;
    a->loop = loop;
    if (uv_timer_init(loop, &a->timer) != 0) {
        free(a);
        return DLOCK_ENOMEM;
    }
    a->timer.data = a;
    a->open_handles = 1;
    /* dlock_loop_new asks to watch its fd (add_read): the poll handle is
     * made there. */
    rc = dlock_loop_new(&lp, c, &hooks);
    if (rc != 0 || !a->poll_open) {
        if (lp)
            dlock_loop_free(lp); /* its cleanup closes the handles */
        else
            dlock_libuv_cleanup_(a);
        return rc != 0 ? rc : DLOCK_ENOMEM;
    }
    a->lp = lp;
    *out = lp;
    return 0;
}

#endif /* DLOCK_ADAPTERS_LIBUV_H */
