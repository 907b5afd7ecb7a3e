/*
 * dlock — the _async starters (api/dlock/async.h): each checks what the
 * blocking form would refuse at once, copies its arguments into an
 * operation and hands it to the loop; the operation's body then calls the
 * blocking form itself, on a fiber of the loop's thread (loop.c), so that
 * every operation's logic exists once.
 */
#include <stdlib.h>
#include <string.h>

#include "dlock/async.h"
#include "dlock/fenced.h"

#include "objects/async/loop.h"
#include "objects/runtime/client.h"
#include "objects/runtime/base.h"

/* ---- what every starter checks ------------------------------------------------ */

static int common(dlock_loop *lp, const void *obj, dlock_done_fn fn)
{
    int rc;

    if (!lp || !obj || !fn)
        return DLOCK_EINVAL;
    if ((rc = dlock__client_check(dlock__loop_client(lp))) != 0)
        return rc;
    return 0;
}

/* Whose an operation on a lock acts for. */
enum whose {
    OWNER_NONE,    /* nobody's (force_unlock, is_locked, remain_ttl) */
    OWNER_MINT,    /* an acquisition: the owner given, or NULL: a new one */
    OWNER_REQUIRED /* an existing hold's (unlock, extend, is_held,
                    * hold_count): the owner given; NULL refused */
};

/* An operation on lock l for owner, as whose says. NULL and *rc when
 * refused. */
static dlock__aop *lock_op(dlock_loop *lp, dlock_rlock *l, const char *owner,
                           enum whose whose, dlock_done_fn fn, void *arg, int *rc)
{
    char minted[DLOCK_OWNER_MAX];
    dlock__aop *o;

    *rc = common(lp, l, fn);
    if (*rc != 0)
        return NULL;
    if (!l->methods || !l->client) {
        *rc = DLOCK_EINVAL;
        return NULL;
    }
    if (whose == OWNER_NONE) {
        owner = NULL;
    } else if (owner) {
        if ((*rc = dlock_rlock_check_owner(l, owner)) != 0)
            return NULL;
    } else if (whose == OWNER_MINT) {
        /* Not the thread's: every request a loop's thread starts would
         * share it, and two of them would "hold" one lock at once. */
        dlock__client_owner_mint(l->client, minted);
        owner = minted;
    } else {
        *rc = dlock_rlock_fail(l, DLOCK_EINVAL,
                               "owner NULL: pass the owner the acquisition's result "
                               "gave (dlock_result.owner) or the one it was started with");
        return NULL;
    }
    if (!(o = dlock__aop_new(lp, owner))) {
        *rc = DLOCK_ENOMEM;
        return NULL;
    }
    o->obj = l;
    o->fn = fn;
    o->arg = arg;
    return o;
}

/* A plain operation on obj (a semaphore, a latch). */
static dlock__aop *plain_op(dlock_loop *lp, void *obj, dlock_done_fn fn, void *arg,
                            int *rc)
{
    dlock__aop *o;

    *rc = common(lp, obj, fn);
    if (*rc != 0)
        return NULL;
    if (!(o = dlock__aop_new(lp, NULL))) {
        *rc = DLOCK_ENOMEM;
        return NULL;
    }
    o->obj = obj;
    o->fn = fn;
    o->arg = arg;
    return o;
}

static int start(dlock__aop *o, dlock_op_id *id, dlock__aop_body body)
{
    o->body = body;
    return dlock__aop_start(o, id);
}

/* start() for an operation that lets go of something (loop.h). */
static int start_release(dlock__aop *o, dlock_op_id *id, dlock__aop_body body)
{
    o->releases = 1;
    return start(o, id, body);
}

/* A wait's wait_ms: DLOCK_WAIT_FOREVER or >= 0. */
static int wait_ok(int64_t wait_ms)
{
    return wait_ms >= 0 || wait_ms == DLOCK_WAIT_FOREVER;
}

#define LOCK(o) ((dlock_rlock *)(o)->obj)

/* ---- the generic lock calls ------------------------------------------------------ */

static void body_lock(dlock__aop *o)
{
    o->res.rc = o->wait_ms == DLOCK_WAIT_FOREVER
                    ? dlock_lock_as(LOCK(o), o->owner, o->lease_ms)
                    : dlock_try_lock_as(LOCK(o), o->owner, o->wait_ms, o->lease_ms);
}

static void undo_lock(dlock__aop *o)
{
    dlock_unlock_as(LOCK(o), o->owner);
}

/* An acquisition of lock l (body: the blocking call), undone by an
 * unlock when the loop is freed under it. */
static int start_acquire(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l, const char *owner,
                         int64_t wait_ms, int64_t lease_ms, dlock_done_fn fn, void *arg,
                         dlock__aop_body body)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, owner, OWNER_MINT, fn, arg, &rc);

    if (!o)
        return rc;
    if (!wait_ok(wait_ms) || (rc = dlock__rlock_check_times(l, wait_ms, lease_ms)) != 0) {
        dlock__aop_discard(o);
        return rc != 0 ? rc : dlock_rlock_fail(l, DLOCK_EINVAL, "wait must be >= 0 ms");
    }
    o->wait_ms = wait_ms;
    o->lease_ms = lease_ms;
    o->is_wait = 1;
    o->undo = undo_lock;
    /* its wait may sleep without a fiber (the type's wait spec says
     * whether: dlock_wait_spec.movable) */
    if (wait_ms != 0)
        o->carried.park_obj = l;
    return start(o, op, body);
}

int dlock_lock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l, const char *owner,
                     int64_t wait_ms, int64_t lease_ms, dlock_done_fn fn, void *arg)
{
    return start_acquire(lp, op, l, owner, wait_ms, lease_ms, fn, arg, body_lock);
}

static void body_unlock(dlock__aop *o)
{
    o->res.rc = dlock_unlock_as(LOCK(o), o->owner);
}

int dlock_unlock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l, const char *owner,
                       dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, owner, OWNER_REQUIRED, fn, arg, &rc);

    return o ? start_release(o, op, body_unlock) : rc;
}

static void body_extend(dlock__aop *o)
{
    o->res.rc = dlock_extend_as(LOCK(o), o->owner, o->lease_ms);
}

int dlock_extend_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l, const char *owner,
                       int64_t lease_ms, dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, owner, OWNER_REQUIRED, fn, arg, &rc);

    if (!o)
        return rc;
    if ((rc = dlock__time_arg(l, "lease (0: watchdog)", lease_ms, 0)) != 0) {
        dlock__aop_discard(o);
        return rc;
    }
    o->lease_ms = lease_ms;
    return start_release(o, op, body_extend);
}

static void body_force_unlock(dlock__aop *o)
{
    int existed = 0;

    o->res.rc = dlock_force_unlock(LOCK(o), &existed);
    o->res.value = existed;
}

int dlock_force_unlock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                             dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, NULL, OWNER_NONE, fn, arg, &rc);

    return o ? start_release(o, op, body_force_unlock) : rc;
}

static void body_fenced(dlock__aop *o)
{
    int64_t token = 0;

    o->res.rc = o->wait_ms == DLOCK_WAIT_FOREVER
                    ? dlock_fenced_lock_as(LOCK(o), &token, o->owner, o->lease_ms)
                    : dlock_fenced_try_lock_as(LOCK(o), &token, o->owner, o->wait_ms,
                                               o->lease_ms);
    o->res.value = o->res.rc == 0 ? token : 0;
}

int dlock_fenced_lock_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                            const char *owner, int64_t wait_ms, int64_t lease_ms,
                            dlock_done_fn fn, void *arg)
{
    return start_acquire(lp, op, l, owner, wait_ms, lease_ms, fn, arg, body_fenced);
}

/* ---- reads ---------------------------------------------------------------------- */

static void body_is_locked(dlock__aop *o)
{
    int b = 0;

    o->res.rc = dlock_is_locked(LOCK(o), &b);
    o->res.value = b;
}

static void body_is_held(dlock__aop *o)
{
    int b = 0;

    o->res.rc = dlock_is_held_as(LOCK(o), o->owner, &b);
    o->res.value = b;
}

static void body_hold_count(dlock__aop *o)
{
    o->res.rc = dlock_hold_count_as(LOCK(o), o->owner, &o->res.value);
}

static void body_remain_ttl(dlock__aop *o)
{
    o->res.rc = dlock_remain_ttl(LOCK(o), &o->res.value);
}

int dlock_is_locked_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                          dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, NULL, OWNER_NONE, fn, arg, &rc);

    return o ? start(o, op, body_is_locked) : rc;
}

int dlock_is_held_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l, const char *owner,
                        dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, owner, OWNER_REQUIRED, fn, arg, &rc);

    return o ? start(o, op, body_is_held) : rc;
}

int dlock_hold_count_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                           const char *owner, dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, owner, OWNER_REQUIRED, fn, arg, &rc);

    return o ? start(o, op, body_hold_count) : rc;
}

int dlock_remain_ttl_async(dlock_loop *lp, dlock_op_id *op, dlock_rlock *l,
                           dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = lock_op(lp, l, NULL, OWNER_NONE, fn, arg, &rc);

    return o ? start(o, op, body_remain_ttl) : rc;
}

/* ---- semaphores and latches ----------------------------------------------------- */

#define SEM(o) ((dlock_semaphore *)(o)->obj)
#define PERMITS(o) ((dlock_permit_semaphore *)(o)->obj)
#define LATCH(o) ((dlock_latch *)(o)->obj)

static void body_sem_acquire(dlock__aop *o)
{
    /* The semaphore's own "no limit": a wait above DLOCK_TIME_MAX_MS. */
    o->res.rc = o->wait_ms == DLOCK_WAIT_FOREVER
                    ? dlock_semaphore_acquire(SEM(o), o->n)
                    : dlock_semaphore_try_acquire(SEM(o), o->n, o->wait_ms);
}

static void undo_sem_acquire(dlock__aop *o)
{
    dlock_semaphore_release(SEM(o), o->n);
}

int dlock_semaphore_acquire_async(dlock_loop *lp, dlock_op_id *op, dlock_semaphore *s,
                                  int64_t permits, int64_t wait_ms, dlock_done_fn fn,
                                  void *arg)
{
    int rc;
    dlock__aop *o;

    if (!wait_ok(wait_ms))
        return DLOCK_EINVAL;
    o = plain_op(lp, s, fn, arg, &rc);
    if (!o)
        return rc;
    o->n = permits;
    o->wait_ms = wait_ms;
    o->is_wait = 1;
    o->undo = undo_sem_acquire;
    if (wait_ms != 0)
        o->carried.park_obj = s; /* as start_acquire's */
    return start(o, op, body_sem_acquire);
}

static void body_sem_release(dlock__aop *o)
{
    o->res.rc = dlock_semaphore_release(SEM(o), o->n);
}

int dlock_semaphore_release_async(dlock_loop *lp, dlock_op_id *op, dlock_semaphore *s,
                                  int64_t permits, dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = plain_op(lp, s, fn, arg, &rc);

    if (!o)
        return rc;
    o->n = permits;
    return start_release(o, op, body_sem_release);
}

static void body_permit_acquire(dlock__aop *o)
{
    char **ids = NULL;

    o->res.rc = o->wait_ms == DLOCK_WAIT_FOREVER
                    ? dlock_permit_semaphore_acquire(PERMITS(o), &ids, o->n, o->lease_ms)
                    : dlock_permit_semaphore_try_acquire(PERMITS(o), &ids, o->n,
                                                         o->wait_ms, o->lease_ms);
    o->res.permit_ids = ids;
    o->res.value = o->res.rc == 0 ? o->n : 0;
}

static void undo_permit_acquire(dlock__aop *o)
{
    size_t n = 0;

    if (o->res.permit_ids)
        dlock_permit_semaphore_release_all(PERMITS(o), &n,
                                           (const char *const *)o->res.permit_ids,
                                           (size_t)o->n);
    dlock_permit_ids_free(o->res.permit_ids);
    o->res.permit_ids = NULL;
}

int dlock_permit_semaphore_acquire_async(dlock_loop *lp, dlock_op_id *op,
                                         dlock_permit_semaphore *p, int64_t permits,
                                         int64_t wait_ms, int64_t lease_ms,
                                         dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o;

    if (!wait_ok(wait_ms))
        return DLOCK_EINVAL;
    o = plain_op(lp, p, fn, arg, &rc);
    if (!o)
        return rc;
    o->n = permits;
    o->wait_ms = wait_ms;
    o->lease_ms = lease_ms;
    o->is_wait = 1;
    o->undo = undo_permit_acquire;
    return start(o, op, body_permit_acquire);
}

static void body_permit_release(dlock__aop *o)
{
    o->res.rc = dlock_permit_semaphore_release(PERMITS(o), o->text);
}

int dlock_permit_semaphore_release_async(dlock_loop *lp, dlock_op_id *op,
                                         dlock_permit_semaphore *p, const char *id,
                                         dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o;

    if (!id)
        return DLOCK_EINVAL;
    o = plain_op(lp, p, fn, arg, &rc);
    if (!o)
        return rc;
    if (!(o->text = strdup(id))) {
        dlock__aop_discard(o);
        return DLOCK_ENOMEM;
    }
    return start_release(o, op, body_permit_release);
}

static void body_latch_await(dlock__aop *o)
{
    o->res.rc = o->wait_ms == DLOCK_WAIT_FOREVER ? dlock_latch_await(LATCH(o))
                                                 : dlock_latch_await_for(LATCH(o), o->wait_ms);
}

int dlock_latch_await_async(dlock_loop *lp, dlock_op_id *op, dlock_latch *l,
                            int64_t wait_ms, dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o;

    if (!wait_ok(wait_ms))
        return DLOCK_EINVAL;
    o = plain_op(lp, l, fn, arg, &rc);
    if (!o)
        return rc;
    o->wait_ms = wait_ms;
    o->is_wait = 1; /* nothing to undo: the count reached zero for everyone */
    if (wait_ms != 0)
        o->carried.park_obj = l; /* as start_acquire's */
    return start(o, op, body_latch_await);
}

static void body_latch_count_down(dlock__aop *o)
{
    o->res.rc = dlock_latch_count_down(LATCH(o));
}

int dlock_latch_count_down_async(dlock_loop *lp, dlock_op_id *op, dlock_latch *l,
                                 dlock_done_fn fn, void *arg)
{
    int rc;
    dlock__aop *o = plain_op(lp, l, fn, arg, &rc);

    return o ? start_release(o, op, body_latch_count_down) : rc;
}
