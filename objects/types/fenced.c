/*
 * dlock — the fenced lock: the reentrant lock plus a token counter
 * (api/dlock/fenced.h). Release, force unlock, renewal and the reads are the
 * reentrant lock's scripts; only the acquisition differs, since it also
 * hands out a token.
 */
#include <stdlib.h>

#include "dlock/fenced.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"
#include "objects/types/hash_lock.h"
#include "objects/types/methods.h"
#include "objects/types/names.h"
#include "objects/types/type.h"
#include "scripts.h"

typedef struct fenced {
    dlock_object_base o; /* channel: "redisson_lock__channel:{name}" */
    char *token_key; /* "redisson_lock_token:{name}" */
} fenced;

static const dlock__lock_methods fenced_methods;

/* Reports an acquisition to the watchdog's hold registry around the script
 * (as dlock_rlock_eval_acquire does for scripts that reply nil), and reads
 * the token out of the reply. */
static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const dlock_script *s = &dlock__script_fenced_acquire;
    const char *owner = op->owner;
    fenced *f = (fenced *)l;
    char lease[DLOCK__I64_SIZE], retry[DLOCK__I64_SIZE];
    const char *argv[5];
    dlock_reply *r;
    int rc, acquired, valid;

    argv[0] = l->name;
    argv[1] = f->token_key;
    argv[2] = dlock__lease_arg(l, lease, lease_ms);
    argv[3] = owner;
    argv[4] = dlock__acquire_retry_arg(l, op, retry);
    rc = dlock_hold_acquire_begin(l, owner, lease_ms, &dlock__script_hash_renew);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "out of memory before acquiring \"%.64s\"",
                                l->name);
    rc = dlock_rlock_eval(l, op, &r, s, 2, 3, argv);
    dlock__op_attempt_end(op, rc);
    valid = rc == 0 && r->type == DLOCK_REPLY_ARRAY && r->n == 2 &&
            r->elems[0]->type == DLOCK_REPLY_INTEGER &&
            r->elems[1]->type == DLOCK_REPLY_INTEGER;
    acquired = valid && r->elems[0]->integer == 1;
    dlock_hold_acquire_end(l, owner, lease_ms, acquired);
    if (rc != 0)
        return rc;
    if (!valid)
        return dlock__unexpected_reply(l, s, r);
    if (acquired) {
        *(int64_t *)spec->arg = r->elems[1]->integer;
        dlock_reply_free(r);
        return 0;
    }
    /* the holder's TTL, as for the reentrant lock */
    *retry_ms = dlock_retry_after(r->elems[1]->integer);
    dlock_reply_free(r);
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is held by another owner",
                            l->name);
}

static int acquire_token(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                         int64_t lease_ms, int64_t *token)
{
    /* movable: the token is written by the attempt that grants, into the
     * frame of the call that gets the code */
    return dlock__object_wait(l, op, DLOCK_WAKE_LOCK, 1, attempt, NULL, token, wait_ms,
                              lease_ms);
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms, int64_t lease_ms)
{
    int64_t token;

    return acquire_token(l, op, wait_ms, lease_ms, &token);
}

static int state(dlock_rlock *l, struct json_t **out)
{
    return dlock__hash_state(l, out, ((fenced *)l)->token_key, NULL, NULL, NULL);
}

static void destroy(dlock_rlock *l)
{
    free(((fenced *)l)->token_key);
    dlock_object_base_destroy(l);
}

/* The reentrant lock's release and force unlock: the counter stays, tokens
 * never go back. */
static const dlock__lock_methods fenced_methods =
    DLOCK__HASH_LOCK_TABLE("fenced", acquire, destroy, state);
/* Its object is the hash, not the token counter (api/dlock/object.h). */
static const dlock__key_form fenced_forms[] = {
    {DLOCK__KEY_FENCED_TOKEN, DLOCK__FORM_AT_START,
     "a fenced lock's token counter, redisson_lock_token:{N}"},
};
/* A hash of owners and a token counter, or the counter alone (a free
 * fenced lock); its hash is a reentrant lock's. */
static const dlock__kind fenced_kind = {
    .name = "fenced", .what = "fenced lock", .rank = 50, .at = DLOCK__AT_HASH | DLOCK__AT_NONE,
    .marks = {{DLOCK__KEY_FENCED_TOKEN, ""}}, .nmarks = 1, .also = {"reentrant"},
};
const dlock__type dlock__type_fenced = {
    .name = "fenced", .tables = {&fenced_methods.m},
    .forms = fenced_forms, .nforms = 1,
    .wakes = DLOCK__WAKE_ON_DELETE | DLOCK__WAKE_ON_EXPIRE, .message = "0",
    .kind = &fenced_kind, .locks = {{"fenced", dlock_fenced_new}},
};

int dlock_fenced_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    fenced *f;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock_object_base_new(&o, sizeof(*f), &fenced_methods.m, c, name,
                           "redisson_lock__channel:", "");
    if (rc != 0)
        return rc;
    f = (fenced *)o;
    f->token_key = dlock_rlock_key(&o->base, DLOCK__KEY_FENCED_TOKEN, "");
    if (!f->token_key) {
        dlock_rlock_free(&o->base);
        return DLOCK_ENOMEM;
    }
    *out = &o->base;
    return 0;
}

const char *dlock__fenced_token_key(const dlock_rlock *l)
{
    return l && l->methods == &fenced_methods.m ? ((const fenced *)l)->token_key : NULL;
}

/* ---- the calls that hand out tokens ------------------------------------- */

/* The generic functions' checks, for a fenced lock only; the owner
 * resolved into who. */
static int enter(dlock_rlock *l, const char *owner, int explicit_owner, char *who)
{
    if (l && l->client && l->methods != &fenced_methods.m)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "\"%.64s\" is a %s lock, not a fenced lock",
                                l->name, l->methods ? l->methods->type : "?");
    return dlock__rlock_enter(l, explicit_owner ? DLOCK__OWNER_GIVEN : DLOCK__OWNER_SELF,
                              owner, who, DLOCK__NO_OUT, "lock", 1);
}

static int lock_token(dlock_rlock *l, int64_t *out, const char *owner,
                      int explicit_owner, int timed, int64_t wait_ms,
                      int64_t lease_ms)
{
    char who[DLOCK_OWNER_MAX];
    int64_t token = 0;
    int rc = enter(l, owner, explicit_owner, who);
    dlock_op op;

    if (rc == 0)
        rc = dlock__rlock_check_times(l, timed && wait_ms < 0 ? INT64_MIN : wait_ms,
                                      lease_ms);
    if (rc != 0)
        return rc;
    dlock__op_init(&op, who);
    rc = acquire_token(l, &op, wait_ms, lease_ms, &token);
    if (rc == 0 && out)
        *out = token;
    return rc;
}

int dlock_fenced_lock(dlock_rlock *l, int64_t *out, int64_t lease_ms)
{
    return lock_token(l, out, NULL, 0, 0, DLOCK_WAIT_FOREVER, lease_ms);
}

int dlock_fenced_lock_as(dlock_rlock *l, int64_t *out, const char *owner,
                         int64_t lease_ms)
{
    return lock_token(l, out, owner, 1, 0, DLOCK_WAIT_FOREVER, lease_ms);
}

int dlock_fenced_try_lock(dlock_rlock *l, int64_t *out, int64_t wait_ms,
                          int64_t lease_ms)
{
    return lock_token(l, out, NULL, 0, 1, wait_ms, lease_ms);
}

int dlock_fenced_try_lock_as(dlock_rlock *l, int64_t *out, const char *owner,
                             int64_t wait_ms, int64_t lease_ms)
{
    return lock_token(l, out, owner, 1, 1, wait_ms, lease_ms);
}

static int token(dlock_rlock *l, int64_t *out, const char *owner, int explicit_owner)
{
    const dlock_script *s = &dlock__script_fenced_token;
    char who[DLOCK_OWNER_MAX];
    const char *argv[3];
    dlock_reply *r;
    int rc = enter(l, owner, explicit_owner, who);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    argv[0] = l->name;
    argv[1] = ((fenced *)l)->token_key;
    argv[2] = who;
    rc = dlock_rlock_eval(l, NULL, &r, s, 2, 1, argv);
    if (rc != 0)
        return rc;
    if (r->type == DLOCK_REPLY_NIL) {
        dlock_reply_free(r);
        return dlock_rlock_fail(l, DLOCK_ENOTOWNER, "\"%.64s\" is not held by this owner",
                                l->name);
    }
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, s, r);
    *out = r->integer;
    dlock_reply_free(r);
    return 0;
}

int dlock_fenced_token(dlock_rlock *l, int64_t *out)
{
    return token(l, out, NULL, 0);
}

int dlock_fenced_token_as(dlock_rlock *l, int64_t *out, const char *owner)
{
    return token(l, out, owner, 1);
}
