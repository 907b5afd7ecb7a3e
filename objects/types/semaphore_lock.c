/*
 * dlock — the semaphore as a lock: each owner holds at most one permit of
 * the semaphore's count, with a lease (see api/dlock/semaphore.h for the
 * semantics and the data layout; the scripts are semaphore_lock_*.lua).
 */
#include <stdlib.h>

#include "core/json_doc.h"
#include "dlock/semaphore.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"
#include "objects/types/methods.h"
#include "objects/types/names.h"
#include "objects/types/type.h"
#include "scripts.h"

typedef struct semlock {
    dlock_object_base o;    /* channel: the semaphore's, "redisson_sc:{name}" */
    char *holders;      /* "{name}:holders" */
    char *lease_prefix; /* "{name}:lease:", the owner id follows */
} semlock;

/* KEYS: the count, the holders hash and the lease keys' prefix (a KEYS
 * entry, though no key itself: the scripts build the lease keys from it,
 * and a cluster client or proxy routes by KEYS). */
#define NKEYS 3

/* The KEYS of every script. */
static void keys(semlock *s, const char **argv)
{
    argv[0] = s->o.base.name;
    argv[1] = s->holders;
    argv[2] = s->lease_prefix;
}

/* KEYS and ARGV[1] (the channel) of every writing script. */
static void common_args(semlock *s, const char **argv)
{
    keys(s, argv);
    argv[NKEYS] = s->o.channel;
}

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = op->owner;
    const dlock_script *sc = &dlock__script_semaphore_lock_acquire;
    char lease[DLOCK__I64_SIZE], retry[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 5];
    dlock_reply *r;
    int rc;

    (void)spec;
    common_args((semlock *)l, argv);
    argv[NKEYS + 1] = dlock__lease_arg(l, lease, lease_ms);
    argv[NKEYS + 2] = owner;
    argv[NKEYS + 3] = dlock__acquire_retry_arg(l, op, retry);
    argv[NKEYS + 4] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_acquire(l, op, &r, lease_ms,
                                  &dlock__script_semaphore_lock_renew, sc, NKEYS, 5,
                                  argv);
    if (rc != 0 || !r)
        return rc;
    if ((rc = dlock_rlock_refused(l, sc, r, retry_ms)) != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_EBUSY, "no permit of \"%.64s\" is free", l->name);
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    return dlock__object_wait(l, op, DLOCK_WAKE_COUNT, 1, attempt, NULL, NULL, wait_ms,
                              lease_ms);
}

static int release(dlock_rlock *l, dlock_op *op)
{
    const char *owner = op->owner;
    char lease[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 4];

    common_args((semlock *)l, argv);
    argv[NKEYS + 1] = dlock__i64(lease, dlock_hold_lease(l, owner));
    argv[NKEYS + 2] = owner;
    argv[NKEYS + 3] = dlock__publish_cmd(l);
    return dlock_rlock_eval_release(l, op, &dlock__script_semaphore_lock_release,
                                    NKEYS, 4, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const char *argv[NKEYS + 2];
    int64_t v;
    int rc;

    common_args((semlock *)l, argv);
    argv[NKEYS + 1] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_integer(l, NULL, &v, &dlock__script_semaphore_lock_force_unlock,
                                  NKEYS, 2, argv);
    if (rc == 0)
        *existed = v == 1;
    return rc;
}

/* The state triple: {live holders, owner's hold count, longest lease
 * left}. */
static int triple(dlock_rlock *l, const char *owner, int64_t st[3])
{
    const char *argv[NKEYS + 1];

    keys((semlock *)l, argv);
    argv[NKEYS] = owner;
    return dlock__eval_triple(l, st, &dlock__script_semaphore_lock_state, NKEYS, 1,
                              argv);
}

/* The state document: the holders with their own leases, and "permits",
 * the available count as the next acquirer finds it (ended holds' permits
 * included, which the stored count gets back only at the next write). */
static int state(dlock_rlock *l, struct json_t **out)
{
    const dlock_script *sc = &dlock__script_semaphore_lock_inspect;
    const char *argv[NKEYS];
    struct json_t *doc;
    dlock_reply *r;
    int bad, rc;

    keys((semlock *)l, argv);
    rc = dlock_rlock_eval(l, NULL, &r, sc, NKEYS, 0, argv);
    if (rc != 0)
        return rc;
    if (!dlock__reply_is(r, "iia", 0) || !dlock__reply_is(r->elems[2], "bii", 1))
        return dlock__unexpected_reply(l, sc, r);
    doc = dlock__state_begin(l, &bad);
    bad |= dlock__state_lock(doc, r->elems[1]->integer, r->elems[2]);
    bad |= dlock__json_set_int(doc, "permits", r->elems[0]->integer);
    dlock_reply_free(r);
    return dlock__state_end(l, doc, bad, out);
}

static void destroy(dlock_rlock *l)
{
    semlock *s = (semlock *)l;

    free(s->holders);
    free(s->lease_prefix);
    dlock_object_base_destroy(l);
}

/* No guard_field slot: a hold is not a field of a hash at the name, so it
 * cannot guard writes (DLOCK_ENOTSUP). */
static int extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return dlock_rlock_extend_by_renewal(l, owner, lease_ms,
                                         &dlock__script_semaphore_lock_renew);
}

static const dlock__lock_methods semlock_methods = {
    .m = {
        .version = DLOCK_RLOCK_METHODS_VERSION,
        .type = "semaphore",
        .acquire = acquire,
        .release = release,
        .force_unlock = force_unlock,
        DLOCK__TRIPLE_READ_SLOTS,
        .destroy = destroy,
        .state = state,
        .extend = extend,
    },
    .triple = triple,
};
static const dlock__key_form semlock_forms[] = {
    {DLOCK__KEY_HOLDERS, DLOCK__FORM_AT_END, "a semaphore lock's holders, {N}:holders"},
    {DLOCK__KEY_LEASES, DLOCK__FORM_INSIDE, "a semaphore lock's leases, {N}:lease:<owner>"},
};
/* Its holders' hash beside the count (or alone); its count is a plain
 * semaphore's. */
static const dlock__kind semlock_kind = {
    .name = "semaphore_lock", .what = "semaphore held as a lock", .rank = 20,
    .at = DLOCK__AT_STRING | DLOCK__AT_NONE,
    .marks = {{"", DLOCK__KEY_HOLDERS}}, .nmarks = 1, .also = {"counter"},
};
const dlock__type dlock__type_semaphore_lock = {
    .name = "semaphore_lock", .tables = {&semlock_methods.m},
    .forms = semlock_forms, .nforms = 2,
    .keys = {{"", DLOCK__KEY_HOLDERS}}, .nkeys = 1,
    .family = "lease", .derived = {"", DLOCK__KEY_LEASES},
    .kind = &semlock_kind, .locks = {{"semaphore_lock", dlock_semaphore_lock_new}},
};

int dlock_semaphore_lock_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    semlock *s;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock_object_base_new(&o, sizeof(semlock), &semlock_methods.m, c, name,
                           "redisson_sc:", "");
    if (rc != 0)
        return rc;
    s = (semlock *)o;
    /* The renewal script derives both keys from the name with the same
     * rule (semaphore_lock_renew.lua). */
    s->holders = dlock_rlock_key(&o->base, "", DLOCK__KEY_HOLDERS);
    s->lease_prefix = dlock_rlock_key(&o->base, "", DLOCK__KEY_LEASES);
    if (!s->holders || !s->lease_prefix) {
        dlock_rlock_free(&o->base);
        return DLOCK_ENOMEM;
    }
    *out = &o->base;
    return 0;
}
