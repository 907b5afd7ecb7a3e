/*
 * dlock — the fair lock (Redisson's RFairLock layout, honest answers).
 * See api/dlock/fair.h for the semantics; the scripts are fair_*.lua.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/fair.h"
#include "objects/runtime/client.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/reads.h"
#include "objects/types/hash_lock.h"
#include "objects/types/methods.h"
#include "objects/types/names.h"
#include "objects/types/type.h"
#include "scripts.h"

typedef struct fair {
    dlock_object_base o; /* channel: "redisson_lock__channel:{name}", the prefix
                      * of each waiter's own */
    char *queue, *deadlines, *alive;
} fair;

/* What one acquire call tells its attempts. */
typedef struct fair_wait {
    int64_t slack_ms; /* W, Redisson's "thread wait time" */
    int64_t alive_ms; /* L, the waiter timeout (0: none) */
    int join;         /* 0: a single attempt that must not queue */
    int queued;       /* an attempt of this call joined the queue */
} fair_wait;

#define WAKE_MESSAGE "0"
#define NKEYS 5

/* A waiter looks again at least this often, at least every W/4 (so that
 * it renews its deadline, W/2 ahead, in time) and at least every L/4 (so
 * that it renews its liveness, L ahead, with room for three late looks
 * on a loaded machine). A Java client's scripts
 * can purge a live waiter (after their shifts pushed its deadline into the
 * past) without a message; the next look puts it back at its place, so this
 * bounds how long a dropped waiter is out of the queue. */
#define POLL_MS 1000

static void keys(fair *f, const char **argv)
{
    argv[0] = f->o.base.name;
    argv[1] = f->queue;
    argv[2] = f->deadlines;
    argv[3] = f->o.channel;
    argv[4] = f->alive;
}

static int64_t wall_now(dlock_rlock *l)
{
    return dlock_clock_wall(l->client->clock);
}

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = op->owner;
    const dlock_script *s = &dlock__script_fair_acquire;
    fair_wait *fw = spec->arg;
    char lease[DLOCK__I64_SIZE], slack[DLOCK__I64_SIZE], now[DLOCK__I64_SIZE];
    char alive[DLOCK__I64_SIZE], retry[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 9];
    dlock_reply *r;
    int64_t poll;
    int rc;

    keys((fair *)l, argv);
    argv[NKEYS + 0] = dlock__lease_arg(l, lease, lease_ms);
    argv[NKEYS + 1] = owner;
    argv[NKEYS + 2] = dlock__i64(slack, fw->slack_ms);
    argv[NKEYS + 3] = dlock__i64(now, wall_now(l));
    argv[NKEYS + 4] = WAKE_MESSAGE;
    argv[NKEYS + 5] = !fw->join ? "0" : fw->queued ? "2" : "1";
    argv[NKEYS + 6] = dlock__i64(alive, fw->alive_ms);
    argv[NKEYS + 7] = dlock__acquire_retry_arg(l, op, retry);
    argv[NKEYS + 8] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_acquire(l, op, &r, lease_ms, &dlock__script_hash_renew,
                                  s, NKEYS, 9, argv);
    if (rc != 0 || !r)
        return rc;
    if ((rc = dlock_rlock_refused(l, s, r, retry_ms)) != 0)
        return rc;
    fw->queued = fw->join;
    /* Look again when the lease in front ends (or the first in line is
     * presumed dead), and in any case after POLL_MS, to keep our deadline,
     * our liveness and our place. */
    poll = fw->slack_ms / 4 < POLL_MS ? fw->slack_ms / 4 : POLL_MS;
    if (fw->alive_ms > 0 && fw->alive_ms / 4 < poll)
        poll = fw->alive_ms / 4;
    if (poll < 1)
        poll = 1;
    if (*retry_ms < 0 || *retry_ms > poll)
        *retry_ms = poll;
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is held or another waiter is first in line",
                            l->name);
}

static void give_up(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec)
{
    const char *owner = op->owner;
    const fair_wait *fw = spec->arg;
    char slack[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 4];
    dlock_reply *r;

    if (!fw->join)
        return; /* never queued */
    keys((fair *)l, argv);
    argv[NKEYS + 0] = owner;
    argv[NKEYS + 1] = WAKE_MESSAGE;
    argv[NKEYS + 2] = dlock__i64(slack, fw->slack_ms);
    argv[NKEYS + 3] = dlock__publish_cmd(l);
    /* If this fails the deadline still purges us; nothing more to do. */
    if (dlock_rlock_eval(l, op, &r, &dlock__script_fair_give_up, NKEYS, 4, argv) == 0)
        dlock_reply_free(r);
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    fair *f = (fair *)l;
    fair_wait fw;
    dlock_wait_spec spec = DLOCK_WAIT_SPEC_INIT;
    const char *owner = op->owner;
    size_t n = strlen(f->o.channel) + strlen(owner) + 2;
    char *channel = malloc(n);
    int rc;

    if (!channel)
        return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory");
    snprintf(channel, n, "%s:%s", f->o.channel, owner);
    /* One W for every waiter, whatever its own wait: the deadlines are
     * stacked W apart and shifted by W, so W must be the same for everyone
     * sharing the queue (Redisson's threadWaitTime, 5 min by default). */
    fw.slack_ms = l->client->opts.fair_wait_slack_ms;
    fw.alive_ms = l->client->opts.fair_waiter_timeout_ms;
    fw.join = wait_ms != 0;
    fw.queued = 0;
    spec.channel = channel;
    spec.attempt = attempt;
    spec.give_up = give_up;
    spec.arg = &fw;
    /* Movable: a fair waiter that sleeps without a stack still looks
     * again every POLL_MS at most (the attempts' retry time), refreshing
     * its deadline, its liveness and its place; fw (queued: the place
     * was taken) is kept from one call to the next. */
    spec.movable = 1;
    spec.arg_size = sizeof(fw);
    rc = dlock_rlock_wait(l, op, &spec, wait_ms, lease_ms);
    free(channel);
    return rc;
}

static int release(dlock_rlock *l, dlock_op *op)
{
    const char *owner = op->owner;
    const dlock_script *s = &dlock__script_fair_release;
    char lease[DLOCK__I64_SIZE], now[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 5];

    keys((fair *)l, argv);
    argv[NKEYS + 0] = WAKE_MESSAGE;
    argv[NKEYS + 1] = dlock__i64(lease, dlock_hold_lease(l, owner));
    argv[NKEYS + 2] = owner;
    argv[NKEYS + 3] = dlock__i64(now, wall_now(l));
    argv[NKEYS + 4] = dlock__publish_cmd(l);
    return dlock_rlock_eval_release(l, op, s, NKEYS, 5, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const dlock_script *s = &dlock__script_fair_force_unlock;
    char now[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 3];
    int64_t existed_now;
    int rc;

    keys((fair *)l, argv);
    argv[NKEYS + 0] = WAKE_MESSAGE;
    argv[NKEYS + 1] = dlock__i64(now, wall_now(l));
    argv[NKEYS + 2] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_integer(l, NULL, &existed_now, s, NKEYS, 3, argv);
    if (rc == 0)
        *existed = existed_now == 1;
    return rc;
}

static void destroy(dlock_rlock *l)
{
    fair *f = (fair *)l;

    free(f->queue); /* deadlines and alive share its allocation */
    dlock_object_base_destroy(l);
}

/* The holders and the queue with the waiters' deadlines. */
static int state(dlock_rlock *l, struct json_t **out)
{
    fair *f = (fair *)l;

    return dlock__hash_state(l, out, NULL, f->queue, f->deadlines, f->alive);
}

static const dlock__lock_methods fair_methods = {
    {.version = DLOCK_RLOCK_METHODS_VERSION,
     .type = "fair",
     .acquire = acquire,
     .release = release,
     .force_unlock = force_unlock,
     DLOCK__TRIPLE_READ_SLOTS,
     .destroy = destroy,
     .state = state,
     .guard_field = dlock__hash_guard_field,
     .extend = dlock__hash_extend},
    dlock__hash_triple,
};
static const dlock__key_form fair_forms[] = {
    {DLOCK__KEY_FAIR_QUEUE, DLOCK__FORM_AT_START, "a fair lock's wait queue, redisson_lock_queue:{N}"},
    {DLOCK__KEY_FAIR_DEADLINES, DLOCK__FORM_AT_START,
     "a fair lock's waiter deadlines, redisson_lock_timeout:{N}"},
    {DLOCK__KEY_FAIR_ALIVE, DLOCK__FORM_AT_START, "a fair lock's waiter liveness, dlock_lock_alive:{N}"},
};
/* A hash of owners (or nothing) with a queue, deadlines or liveness set;
 * with an empty queue it is a reentrant lock's hash. */
static const dlock__kind fair_kind = {
    .name = "fair", .what = "fair lock", .rank = 40, .at = DLOCK__AT_HASH | DLOCK__AT_NONE,
    .marks = {{DLOCK__KEY_FAIR_QUEUE, ""}, {DLOCK__KEY_FAIR_DEADLINES, ""},
              {DLOCK__KEY_FAIR_ALIVE, ""}},
    .nmarks = 3, .also = {"reentrant"},
};
const dlock__type dlock__type_fair = {
    .name = "fair", .tables = {&fair_methods.m},
    .forms = fair_forms, .nforms = sizeof(fair_forms) / sizeof(fair_forms[0]),
    .keys = {{DLOCK__KEY_FAIR_QUEUE, ""}, {DLOCK__KEY_FAIR_DEADLINES, ""}, {DLOCK__KEY_FAIR_ALIVE, ""}},
    .nkeys = 3,
    .wakes = DLOCK__WAKE_ON_DELETE | DLOCK__WAKE_ON_EXPIRE, .message = "0", .per_waiter = 1,
    .kind = &fair_kind, .locks = {{"fair", dlock_fair_new}},
};

/* The queue, deadline and liveness keys in one allocation (*deadlines and
 * *alive point into it): every allocation has a header and rounding, and a
 * handle should cost little (100 000 idle handles is a figure in
 * tests/bench). */
static char *all_keys(dlock_rlock *l, char **deadlines, char **alive)
{
    char *q = dlock_rlock_key(l, DLOCK__KEY_FAIR_QUEUE, "");
    char *d = dlock_rlock_key(l, DLOCK__KEY_FAIR_DEADLINES, "");
    char *a = dlock_rlock_key(l, DLOCK__KEY_FAIR_ALIVE, "");
    char *all = NULL;

    if (q && d && a &&
        (all = malloc(strlen(q) + strlen(d) + strlen(a) + 3)) != NULL) {
        strcpy(all, q);
        *deadlines = all + strlen(q) + 1;
        strcpy(*deadlines, d);
        *alive = *deadlines + strlen(d) + 1;
        strcpy(*alive, a);
    }
    free(q);
    free(d);
    free(a);
    return all;
}

int dlock_fair_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    fair *f;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock_object_base_new(&o, sizeof(*f), &fair_methods.m, c, name,
                           "redisson_lock__channel:", "");
    if (rc != 0)
        return rc;
    f = (fair *)o;
    f->queue = all_keys(&o->base, &f->deadlines, &f->alive);
    if (!f->queue) {
        dlock_rlock_free(&o->base);
        return DLOCK_ENOMEM;
    }
    *out = &o->base;
    return 0;
}

int dlock_fair_clear_dead(dlock_rlock *l, int64_t *out)
{
    const dlock_script *s = &dlock__script_fair_clear_dead;
    char now[DLOCK__I64_SIZE], who[DLOCK_OWNER_MAX];
    const char *argv[NKEYS + 3];
    int rc;

    if (out)
        *out = 0;
    if ((rc = dlock__rlock_enter(l, DLOCK__OWNER_SELF, NULL, who, out, "clear_dead", 1)) != 0)
        return rc;
    if (l->methods != &fair_methods.m)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "not a fair lock");
    keys((fair *)l, argv);
    argv[NKEYS + 0] = WAKE_MESSAGE;
    argv[NKEYS + 1] = dlock__i64(now, wall_now(l));
    argv[NKEYS + 2] = dlock__publish_cmd(l);
    return dlock_rlock_eval_integer(l, NULL, out, s, NKEYS, 3, argv);
}
