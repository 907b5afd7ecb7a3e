/*
 * dlock — attach a dlock_loop (api/dlock/async.h) to a libev loop.
 * Header-only, like hiredis's adapters.
 *
 *     dlock_loop *lp;
 *     dlock_loop_new_libev(&lp, client, EV_DEFAULT);
 *     dlock_lock_async(lp, NULL, lock, NULL, DLOCK_WAIT_FOREVER, 0, done, arg);
 *     ev_run(EV_DEFAULT, 0);
 *     ...
 *     dlock_loop_free(lp);   (on the loop's thread, before ev_loop_destroy)
 *
 * Callbacks run on the thread that runs ev_run. dlock's file descriptor is
 * an ev_io watcher and its timer an ev_timer.
 */
#ifndef DLOCK_ADAPTERS_LIBEV_H
#define DLOCK_ADAPTERS_LIBEV_H

#include <ev.h>
#include <stdlib.h>

#include "../async.h"

typedef struct dlock_libev {
    dlock_loop *lp;
    struct ev_loop *loop;
    ev_io io;
    ev_timer timer;
    int io_set;
} dlock_libev;

static void dlock_libev_on_io_(struct ev_loop *loop, ev_io *w, int revents)
{
    dlock_libev *a = (dlock_libev *)w->data;

    (void)loop, (void)revents;
    dlock_loop_on_fd(a->lp, -1, DLOCK_LOOP_READ);
}

static void dlock_libev_on_timer_(struct ev_loop *loop, ev_timer *w, int revents)
{
    dlock_libev *a = (dlock_libev *)w->data;

    (void)loop, (void)revents;
    dlock_loop_on_timer(a->lp);
}

static void dlock_libev_add_read_(void *data, int fd)
{
    dlock_libev *a = (dlock_libev *)data;

    if (!a->io_set) {
        ev_io_init(&a->io, dlock_libev_on_io_, fd, EV_READ);
        a->io.data = a;
        a->io_set = 1;
    }
    ev_io_start(a->loop, &a->io);
}

static void dlock_libev_del_read_(void *data, int fd)
{
    dlock_libev *a = (dlock_libev *)data;

    (void)fd;
    if (a->io_set)
        ev_io_stop(a->loop, &a->io);
}

static void dlock_libev_schedule_timer_(void *data, int64_t ms)
{
    dlock_libev *a = (dlock_libev *)data;

    ev_timer_stop(a->loop, &a->timer);
    if (ms < 0)
        return;
    ev_timer_set(&a->timer, (ev_tstamp)ms / 1000.0, 0.0);
    ev_timer_start(a->loop, &a->timer);
}

static void dlock_libev_cleanup_(void *data)
{
    dlock_libev *a = (dlock_libev *)data;

    if (a->io_set)
        ev_io_stop(a->loop, &a->io);
    ev_timer_stop(a->loop, &a->timer);
    free(a);
}

/* A dlock_loop for client c, driven by loop. 0 and *out (free it with
 * dlock_loop_free, on the loop's thread), or what dlock_loop_new returns,
 * or DLOCK_ENOMEM. */
static inline int dlock_loop_new_libev(dlock_loop **out, dlock_client *c,
                                       struct ev_loop *loop)
{
    dlock_libev *a;
    dlock_loop_hooks hooks = {DLOCK_LOOP_HOOKS_VERSION, NULL, dlock_libev_add_read_,
                              dlock_libev_del_read_, NULL, NULL,
                              dlock_libev_schedule_timer_, NULL, dlock_libev_cleanup_};
    dlock_loop *lp = NULL;
    int rc;

    if (!out || !c || !loop)
        return DLOCK_EINVAL;
    *out = NULL;
    a = (dlock_libev *)calloc(1, sizeof(*a));
    if (!a)
        return DLOCK_ENOMEM;
    a->loop = loop;
    ev_timer_init(&a->timer, dlock_libev_on_timer_, 0.0, 0.0);
    a->timer.data = a;
    hooks.data = a;
    rc = dlock_loop_new(&lp, c, &hooks);
    if (rc != 0 || !a->io_set) {
        if (lp)
            dlock_loop_free(lp); /* its cleanup frees a */
        else
            dlock_libev_cleanup_(a);
        return rc != 0 ? rc : DLOCK_ENOMEM;
    }
    a->lp = lp;
    *out = lp;
    return 0;
}

#endif /* DLOCK_ADAPTERS_LIBEV_H */
