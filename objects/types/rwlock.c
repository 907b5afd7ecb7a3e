/*
 * dlock — the read-write lock (Redisson's RReadWriteLock layout, honest
 * answers). See api/dlock/rwlock.h for the semantics; the scripts are
 * rwlock_*.lua, sharing rwlock_common.luainc.
 *
 * The two halves are two lock objects of one C type, told apart by their
 * kind (scripts and names); each has its own holds in the client's registry,
 * so the watchdog renews read and write holds with their own scripts, and
 * an unlock of one half never touches the other's local state.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_doc.h"
#include "dlock/rwlock.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"
#include "objects/types/methods.h"
#include "objects/types/type.h"
#include "objects/types/names.h"
#include "scripts.h"

/* What differs between the halves. */
typedef struct rw_kind {
    const char *half; /* "read" | "write": the state script's view */
    const dlock_script *acquire, *release, *renew, *force_unlock;
} rw_kind;

typedef struct rwhalf {
    dlock_object_base o; /* channel: "redisson_rwlock:{name}", shared by both
                      * halves: one publish wakes every waiter */
    const rw_kind *kind;
    char *markers; /* the read markers' prefix, "{name}" (dlock_rlock_key) */
} rwhalf;

/* KEYS of every script but the renewals (rwlock_common.luainc): the hash,
 * the channel, the markers' prefix. */
#define NKEYS 3

/* The write acquire script's reply when the owner holds a read lock. */
#define UPGRADE_REPLY "upgrade"

/* The hash's fixed field, and what a writer's field adds to its owner id
 * (rwlock_common.luainc: the same two names). */
#define MODE_FIELD "mode"
#define WRITE_SUFFIX ":write"

static const rw_kind read_kind = {
    "read", &dlock__script_rwlock_read_acquire, &dlock__script_rwlock_read_release,
    &dlock__script_rwlock_read_renew, &dlock__script_rwlock_read_force_unlock,
};

static const rw_kind write_kind = {
    "write", &dlock__script_rwlock_write_acquire, &dlock__script_rwlock_write_release,
    &dlock__script_rwlock_write_renew, &dlock__script_rwlock_write_force_unlock,
};

static const rw_kind *kind_of(dlock_rlock *l)
{
    return ((rwhalf *)l)->kind;
}

static void keys(dlock_rlock *l, const char **argv)
{
    argv[0] = l->name;
    argv[1] = ((rwhalf *)l)->o.channel;
    argv[2] = ((rwhalf *)l)->markers;
}

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = op->owner;
    const rw_kind *k = kind_of(l);
    char lease[DLOCK__I64_SIZE], retry[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 3];
    dlock_reply *r;
    int rc;

    (void)spec;
    keys(l, argv);
    argv[NKEYS] = dlock__lease_arg(l, lease, lease_ms);
    argv[NKEYS + 1] = owner;
    argv[NKEYS + 2] = dlock__acquire_retry_arg(l, op, retry);
    rc = dlock_rlock_eval_acquire(l, op, &r, lease_ms, k->renew, k->acquire,
                                  NKEYS, 3, argv);
    if (rc != 0 || !r)
        return rc;
    if (r->type == DLOCK_REPLY_BULK && strcmp(r->str, UPGRADE_REPLY) == 0) {
        /* Not DLOCK_EBUSY: the wait loop ends at once, for lock() too. */
        dlock_reply_free(r);
        return dlock_rlock_fail(l, DLOCK_EDEADLK,
                                "\"%.64s\": the owner holds the read lock; the write "
                                "lock would wait for it forever (unlock it first)",
                                l->name);
    }
    if ((rc = dlock_rlock_refused(l, k->acquire, r, retry_ms)) != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\" is %s by another owner",
                            l->name, k == &read_kind ? "write-locked" : "read- or write-locked");
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    return dlock__object_wait(l, op, DLOCK_WAKE_LOCK, 1, attempt, NULL, NULL, wait_ms,
                              lease_ms);
}

static int release(dlock_rlock *l, dlock_op *op)
{
    const char *owner = op->owner;
    char lease[DLOCK__I64_SIZE];
    const char *argv[NKEYS + 3];

    keys(l, argv);
    argv[NKEYS] = owner;
    /* Only the write half re-applies a lease (a read hold keeps its own);
     * the read script ignores it. */
    argv[NKEYS + 1] = dlock__i64(lease, dlock_hold_lease(l, owner));
    argv[NKEYS + 2] = dlock__publish_cmd(l);
    return dlock_rlock_eval_release(l, op, kind_of(l)->release, NKEYS, 3, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const char *argv[NKEYS + 1];
    int64_t existed_now;
    int rc;

    keys(l, argv);
    argv[NKEYS] = dlock__publish_cmd(l);
    rc = dlock_rlock_eval_integer(l, NULL, &existed_now, kind_of(l)->force_unlock, NKEYS, 1,
                                  argv);
    if (rc == 0)
        *existed = existed_now == 1;
    return rc;
}

/* That half's state triple. */
static int triple(dlock_rlock *l, const char *owner, int64_t st[3])
{
    const char *argv[NKEYS + 2];

    keys(l, argv);
    argv[NKEYS] = owner;
    argv[NKEYS + 1] = kind_of(l)->half;
    return dlock__eval_triple(l, st, &dlock__script_rwlock_state, NKEYS, 2, argv);
}

/* The state document: the common fields are this half's, as its reads
 * answer them (read half: the readers, the longest live read hold; write
 * half: the writer, the hash's TTL), so that a holder's "holds" is what
 * dlock_hold_count_as says on this handle; "mode", "readers" and "writer"
 * are the whole lock, the same from both halves. */
static int state(dlock_rlock *l, struct json_t **out)
{
    const dlock_script *sc = &dlock__script_rwlock_inspect;
    const dlock_reply *readers, *writer;
    const char *argv[NKEYS];
    struct json_t *doc;
    dlock_reply *r;
    int bad, rc;

    keys(l, argv);
    rc = dlock_rlock_eval(l, NULL, &r, sc, NKEYS, 0, argv);
    if (rc != 0)
        return rc;
    if (!dlock__reply_is(r, "biiaa", 0) || !dlock__reply_is(r->elems[3], "bii", 1) ||
        !dlock__reply_is(r->elems[4], "bii", 1) || r->elems[4]->n > 3)
        return dlock__unexpected_reply(l, sc, r);
    readers = r->elems[3];
    writer = r->elems[4];

    doc = dlock__state_begin(l, &bad);
    if (kind_of(l) == &read_kind)
        bad |= dlock__state_lock(doc, r->elems[2]->integer, readers);
    else
        bad |= dlock__state_lock(doc, writer->n > 0 ? r->elems[1]->integer : -2, writer);
    if (r->elems[0]->len > 0)
        bad |= dlock__json_set_str(doc, "mode", r->elems[0]->str, r->elems[0]->len);
    else
        bad |= dlock__json_set_null(doc, "mode");
    bad |= dlock__json_set(doc, "readers", dlock__state_holders(readers));
    if (writer->n > 0)
        bad |= dlock__json_set(doc, "writer", dlock__state_holder(writer, 0));
    else
        bad |= dlock__json_set_null(doc, "writer");
    dlock_reply_free(r);
    return dlock__state_end(l, doc, bad, out);
}

/* A writer's hold shows as the field "<owner>:write" of the hash: a guarded
 * write (api/dlock/bucket.h) can check it in the same script. Read holds
 * cannot guard a write (they are shared by design). */
static int write_guard_field(dlock_rlock *l, const char *owner, char *buf, size_t len)
{
    (void)l;
    return (size_t)snprintf(buf, len, "%s" WRITE_SUFFIX, owner) < len ? 0 : DLOCK_EINVAL;
}

/* The hash holds "mode", each reader's id and each writer's id + ":write"
 * side by side (Redisson's layout), so on either half (one owner id serves
 * both: a downgrade) an id must be neither "mode" nor end in ":write": the
 * read half would take another owner's write hold for a read hold of its
 * own, and a read lock as "mode" would write the mode field as a count.
 * The scripts refuse them as well (rw_owner_bad, rwlock_common.luainc). */
static int check_owner(dlock_rlock *l, const char *owner)
{
    static const char suffix[] = WRITE_SUFFIX;
    size_t n = strlen(owner), k = sizeof(suffix) - 1;

    if (strcmp(owner, MODE_FIELD) == 0)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "owner id \"%s\" is reserved: it is the "
                                "read-write lock's mode field", MODE_FIELD);
    if (n >= k && memcmp(owner + n - k, suffix, k) == 0)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "owner id \"%.64s\" is reserved: an id "
                                "ending in \"%s\" names a writer's field of the read-write "
                                "lock (\"<owner>%s\")", owner, suffix, suffix);
    return 0;
}

/* Each half renews (and so extends) its own holds with its own script. */
static int extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return dlock_rlock_extend_by_renewal(l, owner, lease_ms, kind_of(l)->renew);
}

static void destroy(dlock_rlock *l)
{
    free(((rwhalf *)l)->markers);
    dlock_object_base_destroy(l);
}

static const dlock__lock_methods read_methods = {
    {.version = DLOCK_RLOCK_METHODS_VERSION,
     .type = "rwlock_read",
     .acquire = acquire,
     .release = release,
     .force_unlock = force_unlock,
     DLOCK__TRIPLE_READ_SLOTS,
     .destroy = destroy,
     .state = state,
     .extend = extend,
     .check_owner = check_owner},
    triple,
};

static const dlock__lock_methods write_methods = {
    {.version = DLOCK_RLOCK_METHODS_VERSION,
     .type = "rwlock_write",
     .acquire = acquire,
     .release = release,
     .force_unlock = force_unlock,
     DLOCK__TRIPLE_READ_SLOTS,
     .destroy = destroy,
     .state = state,
     .guard_field = write_guard_field,
     .extend = extend,
     .check_owner = check_owner},
    triple,
};
static const dlock__key_form rwlock_forms[] = {
    {DLOCK__KEY_READ_MARKER, DLOCK__FORM_INSIDE,
     "a read-write lock's read markers, {N}:<owner>:rwlock_timeout:<k>"},
};
/* A hash with the field "mode". */
static const dlock__kind rwlock_kind = {
    .name = "rwlock", .what = "read-write lock", .rank = 10, .at = DLOCK__AT_HASH,
    .field = "mode",
};
const dlock__type dlock__type_rwlock = {
    .name = "rwlock", .tables = {&read_methods.m, &write_methods.m},
    .forms = rwlock_forms, .nforms = 1,
    .family = "rw", .derived = {"", ""}, /* the markers start with "{N}" */
    .wakes = DLOCK__WAKE_ON_DELETE | DLOCK__WAKE_ON_EXPIRE,
    .message = "1", /* the write-unlock message: every waiter retries */
    .kind = &rwlock_kind,
    .locks = {{"rwlock_write", dlock_rwlock_write_new}, {"rwlock_read", dlock_rwlock_read_new}},
};

static int rw_new(dlock_rlock **out, dlock_client *c, const char *name,
                  const dlock__lock_methods *m, const rw_kind *k)
{
    dlock_object_base *o = NULL;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    rc = dlock_object_base_new(&o, sizeof(rwhalf), &m->m, c, name, "redisson_rwlock:", "");
    if (rc != 0)
        return rc;
    ((rwhalf *)o)->kind = k;
    /* The renewal scripts derive the same prefix from the name
     * (rw_prefix in rwlock_common.luainc). */
    ((rwhalf *)o)->markers = dlock_rlock_key(&o->base, "", "");
    if (!((rwhalf *)o)->markers) {
        dlock_rlock_free(&o->base);
        return DLOCK_ENOMEM;
    }
    *out = &o->base;
    return 0;
}

int dlock_rwlock_read_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return rw_new(out, c, name, &read_methods, &read_kind);
}

int dlock_rwlock_write_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    return rw_new(out, c, name, &write_methods, &write_kind);
}
