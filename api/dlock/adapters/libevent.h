/*
 * dlock — attach a dlock_loop (api/dlock/async.h) to a libevent
 * event_base. Header-only, like hiredis's adapters.
 *
 *     dlock_loop *lp;
 *     dlock_loop_new_libevent(&lp, client, base);
 *     dlock_lock_async(lp, NULL, lock, NULL, DLOCK_WAIT_FOREVER, 0, done, arg);
 *     event_base_dispatch(base);
 *     ...
 *     dlock_loop_free(lp);   (on the loop's thread, before event_base_free)
 *
 * Callbacks run on the thread that runs the event_base. dlock's file
 * descriptor is a persistent EV_READ event and its timer an evtimer; no
 * evthread setup is needed (starters on other threads wake the base
 * through the file descriptor).
 */
#ifndef DLOCK_ADAPTERS_LIBEVENT_H
#define DLOCK_ADAPTERS_LIBEVENT_H

#include <event2/event.h>
#include <stdlib.h>

#include "../async.h"

typedef struct dlock_libevent {
    dlock_loop *lp;
    struct event_base *base;
    struct event *read, *timer;
} dlock_libevent;

static void dlock_libevent_on_read_(evutil_socket_t fd, short what, void *arg)
{
    dlock_libevent *a = (dlock_libevent *)arg;

    (void)fd, (void)what;
    dlock_loop_on_fd(a->lp, -1, DLOCK_LOOP_READ);
}

static void dlock_libevent_on_timer_(evutil_socket_t fd, short what, void *arg)
{
    dlock_libevent *a = (dlock_libevent *)arg;

    (void)fd, (void)what;
    dlock_loop_on_timer(a->lp);
}

static void dlock_libevent_add_read_(void *data, int fd)
{
    dlock_libevent *a = (dlock_libevent *)data;

    if (!a->read)
        a->read = event_new(a->base, fd, EV_READ | EV_PERSIST, dlock_libevent_on_read_, a);
    if (a->read)
        event_add(a->read, NULL);
}

static void dlock_libevent_del_read_(void *data, int fd)
{
    dlock_libevent *a = (dlock_libevent *)data;

    (void)fd;
    if (a->read)
        event_del(a->read);
}

static void dlock_libevent_schedule_timer_(void *data, int64_t ms)
{
    dlock_libevent *a = (dlock_libevent *)data;
    struct timeval tv;

    event_del(a->timer);
    if (ms < 0)
        return;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    event_add(a->timer, &tv);
}

static void dlock_libevent_cleanup_(void *data)
{
    dlock_libevent *a = (dlock_libevent *)data;

    if (a->read)
        event_free(a->read);
    event_free(a->timer);
    free(a);
}

/* A dlock_loop for client c, driven by base. 0 and *out (free it with
 * dlock_loop_free, on the base's thread), or what dlock_loop_new returns,
 * or DLOCK_ENOMEM. */
static inline int dlock_loop_new_libevent(dlock_loop **out, dlock_client *c,
                                          struct event_base *base)
{
    dlock_libevent *a;
    dlock_loop_hooks hooks = {DLOCK_LOOP_HOOKS_VERSION, NULL, dlock_libevent_add_read_,
                              dlock_libevent_del_read_, NULL, NULL,
                              dlock_libevent_schedule_timer_, NULL, dlock_libevent_cleanup_};
    dlock_loop *lp = NULL;
    int rc;

    if (!out || !c || !base)
        return DLOCK_EINVAL;
    *out = NULL;
    a = (dlock_libevent *)calloc(1, sizeof(*a));
    if (!a)
        return DLOCK_ENOMEM;
    a->base = base;
    a->timer = evtimer_new(base, dlock_libevent_on_timer_, a);
    if (!a->timer) {
        free(a);
        return DLOCK_ENOMEM;
    }
    hooks.data = a;
    rc = dlock_loop_new(&lp, c, &hooks);
    if (rc != 0 || !a->read) {
        if (lp)
            dlock_loop_free(lp); /* its cleanup frees a */
        else
            dlock_libevent_cleanup_(a);
        return rc != 0 ? rc : DLOCK_ENOMEM;
    }
    a->lp = lp;
    *out = lp;
    return 0;
}

#endif /* DLOCK_ADAPTERS_LIBEVENT_H */
