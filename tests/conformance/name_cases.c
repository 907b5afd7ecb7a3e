/*
 * The conformance cases of lock names against other objects' keys
 * (api/dlock/lock.h, "Reserved names"): a table of names that address
 * another object's derived keys -- its fair queue, holders, leases,
 * permits, read markers, token counter, the owner descriptions, and "{x}"
 * beside "x" -- tried as the name of every object type. Each is either
 * refused at creation (DLOCK_EINVAL, the client's errmsg naming the
 * reserved form, nothing stored), or made and used in every way its type
 * allows while a victim object holds the keys it aims at: the victim's
 * holder keeps it, and another client still cannot take it.
 *
 * Runs on every row (names derived from fx->name, under the ACL row's
 * prefixes) and on the cluster slot row (tests/cluster_slots_test.c).
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- every object type, as an attacker ----------------------------------- */

typedef struct obj_type {
    const char *name;
    int derives; /* keeps keys derived from its name: refuses "{x}" */
    int (*make)(void **out, dlock_client *c, const char *name);
    void (*free_fn)(void *);
    /* everything the type can do to its keys, results ignored */
    void (*use)(dlock_fx *fx, void *o);
} obj_type;

static void rlock_free(void *o) { dlock_rlock_free(o); }
static void rlock_use(dlock_fx *fx, void *o)
{
    int existed;

    (void)dlock_try_lock(o, 0, fx->long_lease_ms);
    (void)dlock_lock(o, fx->long_lease_ms);
    (void)dlock_unlock(o);
    (void)dlock_unlock(o);
    (void)dlock_force_unlock(o, &existed);
}

#define RLOCK_MAKER(fn, call)                                              \
    static int fn(void **out, dlock_client *c, const char *name)          \
    {                                                                      \
        dlock_rlock *l = NULL;                                             \
        int rc = call;                                                     \
        *out = l;                                                          \
        return rc;                                                         \
    }
RLOCK_MAKER(make_reentrant, dlock_reentrant_new(&l, c, name))
RLOCK_MAKER(make_fair, dlock_fair_new(&l, c, name))
RLOCK_MAKER(make_fenced, dlock_fenced_new(&l, c, name))
RLOCK_MAKER(make_spin, dlock_spin_lock_new(&l, c, name, NULL))
RLOCK_MAKER(make_simple, dlock_simple_lock_new(&l, c, name))
RLOCK_MAKER(make_read, dlock_rwlock_read_new(&l, c, name))
RLOCK_MAKER(make_write, dlock_rwlock_write_new(&l, c, name))
RLOCK_MAKER(make_semlock, dlock_semaphore_lock_new(&l, c, name))

static int make_semaphore(void **out, dlock_client *c, const char *name)
{
    return dlock_semaphore_new((dlock_semaphore **)out, c, name);
}
static void semaphore_free(void *o) { dlock_semaphore_free(o); }
static void semaphore_use(dlock_fx *fx, void *o)
{
    int set;
    int64_t n;

    (void)fx;
    (void)dlock_semaphore_try_set_permits(o, &set, 5);
    (void)dlock_semaphore_release(o, 3);
    (void)dlock_semaphore_try_acquire(o, 1, 0);
    (void)dlock_semaphore_drain_permits(o, &n);
}

static int make_permits(void **out, dlock_client *c, const char *name)
{
    return dlock_permit_semaphore_new((dlock_permit_semaphore **)out, c, name);
}
static void permits_free(void *o) { dlock_permit_semaphore_free(o); }

static int make_latch(void **out, dlock_client *c, const char *name)
{
    return dlock_latch_new((dlock_latch **)out, c, name);
}
static void latch_free(void *o) { dlock_latch_free(o); }
static void latch_use(dlock_fx *fx, void *o)
{
    int done;

    (void)fx;
    (void)dlock_latch_try_set_count(o, &done, 3);
    (void)dlock_latch_count_down(o);
    (void)dlock_latch_delete(o, &done);
}

static int make_bucket(void **out, dlock_client *c, const char *name)
{
    return dlock_bucket_new((dlock_bucket **)out, c, name, dlock_codec_string());
}
static void bucket_free(void *o) { dlock_bucket_free(o); }
static void bucket_use(dlock_fx *fx, void *o)
{
    int done;

    (void)fx;
    (void)dlock_bucket_set(o, "x", 0);
    (void)dlock_bucket_delete(o, &done);
}

static const obj_type types[] = {
    {"reentrant", 0, make_reentrant, rlock_free, rlock_use},
    {"fair", 1, make_fair, rlock_free, rlock_use},
    {"fenced", 1, make_fenced, rlock_free, rlock_use},
    {"spin", 0, make_spin, rlock_free, rlock_use},
    {"simple", 0, make_simple, rlock_free, rlock_use},
    {"rwlock read", 1, make_read, rlock_free, rlock_use},
    {"rwlock write", 1, make_write, rlock_free, rlock_use},
    {"semaphore lock", 1, make_semlock, rlock_free, rlock_use},
    {"permit semaphore", 1, make_permits, permits_free, NULL},
    {"semaphore", 0, make_semaphore, semaphore_free, semaphore_use},
    {"latch", 0, make_latch, latch_free, latch_use},
    {"bucket", 0, make_bucket, bucket_free, bucket_use},
};
#define NTYPES (sizeof(types) / sizeof(types[0]))

/* ---- the victims --------------------------------------------------------- */

#define V_NONE 0
#define V_FAIR 1
#define V_SEMLOCK 2
#define V_FENCED 3
#define V_RWLOCK 4

/* A victim held by c1's thread, and the way to try it from c2. */
typedef struct victim {
    dlock_semaphore *permits; /* semaphore lock: its count */
    dlock_rlock *held;  /* c1's hold */
    dlock_rlock *other; /* c2's handle of the same object */
    dlock_rlock *other_write; /* rwlock: c2's write half */
} victim;

static dlock_rlock *keep_rlock(dlock_fx *fx, dlock_rlock *l)
{
    return dlock_fx_keep(fx, l, rlock_free);
}

static void victim_take(dlock_fx *fx, victim *v, int kind, const char *name)
{
    void *a = NULL, *b = NULL;
    int (*make)(void **, dlock_client *, const char *) =
        kind == V_FAIR ? make_fair : kind == V_SEMLOCK ? make_semlock :
        kind == V_FENCED ? make_fenced : make_read;

    memset(v, 0, sizeof(*v));
    if (kind == V_NONE)
        return;
    if (kind == V_SEMLOCK) {
        dlock_semaphore *s = NULL;
        int set = 0;
        assert_int_equal(dlock_semaphore_new(&s, fx->c1, name), 0);
        v->permits = dlock_fx_keep(fx, s, semaphore_free);
        assert_int_equal(dlock_semaphore_try_set_permits(s, &set, 1), 0);
        assert_int_equal(set, 1);
    }
    assert_int_equal(make(&a, fx->c1, name), 0);
    v->held = keep_rlock(fx, a);
    assert_int_equal(make(&b, fx->c2, name), 0);
    v->other = keep_rlock(fx, b);
    if (kind == V_RWLOCK) {
        assert_int_equal(make_write(&b, fx->c2, name), 0);
        v->other_write = keep_rlock(fx, b);
    }
    assert_int_equal(dlock_lock(v->held, fx->long_lease_ms), 0);
}

/* The victim's holder still holds it and c2 cannot take it. */
static void victim_intact(dlock_fx *fx, const victim *v, const char *attack)
{
    int rc;

    if (!v->held)
        return;
    if (dlock_fx_is_held(v->held) != 1)
        fail_msg("%s: the victim's holder lost it", attack);
    rc = dlock_try_lock(v->other_write ? v->other_write : v->other, 0, fx->long_lease_ms);
    if (rc != DLOCK_EBUSY)
        fail_msg("%s: another client's try_lock gave %s, not EBUSY", attack,
                 dlock_errname(rc));
}

/* Frees what the case kept, now (the table makes more objects than the
 * fixture keeps at once). */
static void drop(dlock_fx *fx, void *o, void (*free_fn)(void *))
{
    if (!o)
        return;
    dlock_fx_unkeep(fx, o);
    free_fn(o);
}

static void victim_release(dlock_fx *fx, const victim *v)
{
    int existed;

    if (v->held)
        (void)dlock_force_unlock(v->held, &existed);
    drop(fx, v->held, rlock_free);
    drop(fx, v->other, rlock_free);
    drop(fx, v->other_write, rlock_free);
    drop(fx, v->permits, semaphore_free);
}

/* ---- the table ----------------------------------------------------------- */

typedef struct name_form {
    const char *fmt;  /* printf'd with the victim's name and c1's owner id */
    int victim;       /* the object whose keys the name aims at */
    int braced;       /* the victim's name holds a {hash tag} of its own */
    int only_derived; /* refused by the types that derive keys only */
    const char *says; /* what the refusal names */
} name_form;

static const name_form forms[] = {
    {"{%s}:holders", V_SEMLOCK, 0, 0, "{N}:holders"},
    {"%s:holders", V_SEMLOCK, 1, 0, "{N}:holders"},
    {"{%s}:lease:%s", V_SEMLOCK, 0, 0, "{N}:lease:<owner>"},
    {"{%s}:timeout", V_NONE, 0, 0, "{N}:timeout"},
    {"{%s}:expired", V_NONE, 0, 0, "{N}:expired"},
    {"redisson_lock_queue:{%s}", V_FAIR, 0, 0, "redisson_lock_queue:{N}"},
    {"redisson_lock_queue:%s", V_FAIR, 1, 0, "redisson_lock_queue:{N}"},
    {"redisson_lock_timeout:{%s}", V_FAIR, 0, 0, "redisson_lock_timeout:{N}"},
    {"dlock_lock_alive:{%s}", V_FAIR, 0, 0, "dlock_lock_alive:{N}"},
    {"redisson_lock_token:{%s}", V_FENCED, 0, 0, "redisson_lock_token:{N}"},
    {"{%s}:%s:rwlock_timeout:1", V_RWLOCK, 0, 0, "rwlock_timeout:<k>"},
    {"dlock_owner:{%s}", V_NONE, 0, 0, "dlock_owner:{<client id>}"},
    {"{%s}", V_FAIR, 0, 1, "braces are not added"},
    {"{%s}", V_RWLOCK, 0, 1, "braces are not added"},
    {"{%s}", V_SEMLOCK, 0, 1, "braces are not added"},
    {"{%s}", V_FENCED, 0, 1, "braces are not added"},
};
#define NFORMS (sizeof(forms) / sizeof(forms[0]))

/* Every form as the name of every type, each against a fresh victim. */
static void reserved_names_refused_or_harmless(void **state)
{
    dlock_fx *fx = BEGIN(state);
    size_t f, t;

    for (f = 0; f < NFORMS; f++) {
        for (t = 0; t < NTYPES; t++) {
            char vname[160], name[400], what[480];
            int refuse = !forms[f].only_derived || types[t].derives;
            victim v;
            void *o = NULL;
            int rc;

            snprintf(vname, sizeof(vname), forms[f].braced ? "%s:%zu:%zu{t}" : "%s:%zu:%zu",
                     fx->name, f, t);
            snprintf(name, sizeof(name), forms[f].fmt, vname, fx->owner1);
            snprintf(what, sizeof(what), "%s named \"%s\"", types[t].name, name);
            victim_take(fx, &v, forms[f].victim, vname);
            rc = types[t].make(&o, fx->c2, name);
            if (refuse) {
                const char *why = dlock_client_errmsg(fx->c2);
                if (rc != DLOCK_EINVAL)
                    fail_msg("%s: made (%s), not refused", what, dlock_errname(rc));
                assert_null(o);
                if (!strstr(why, forms[f].says) || !strstr(why, "reserved"))
                    fail_msg("%s: the reason \"%s\" does not name \"%s\"", what, why,
                             forms[f].says);
            } else {
                if (rc != 0)
                    fail_msg("%s: refused (%s): %s", what, dlock_errname(rc),
                             dlock_client_errmsg(fx->c2));
                dlock_fx_keep(fx, o, types[t].free_fn);
                types[t].use(fx, o);
            }
            victim_intact(fx, &v, what);
            victim_release(fx, &v);
            drop(fx, o, types[t].free_fn);
        }
    }
}

/* The first report, end to end: the semaphore lock "w" of one
 * permit and the reentrant lock "{w}:holders" -- the second cannot be made,
 * so no other holder is ever credited w's permit. */
static void holders_hash_is_nobody_elses(void **state)
{
    dlock_fx *fx = BEGIN(state);
    char name[200];
    victim v;
    dlock_rlock *l = (dlock_rlock *)&l;

    victim_take(fx, &v, V_SEMLOCK, fx->name);
    snprintf(name, sizeof(name), "{%s}:holders", fx->name);
    assert_int_equal(dlock_reentrant_new(&l, fx->c2, name), DLOCK_EINVAL);
    assert_null(l);
    assert_non_null(strstr(dlock_client_errmsg(fx->c2), "semaphore lock's holders"));
    assert_string_equal(dlock_client_errmsg(fx->c1), ""); /* c1 refused nothing */
    assert_int_equal(dlock_fx_call_int(fx->c1, "exists", name, 0, NULL), 1);
    victim_intact(fx, &v, "semaphore lock");
    victim_release(fx, &v);
}

/* Names near the reserved forms but of no other object stay usable: no
 * brace (no derived key has none), a form in the middle, "{x}" for a type
 * without derived keys, and braces inside. */
static void near_names_still_work(void **state)
{
    dlock_fx *fx = BEGIN(state);
    static const char *const fmts[] = {
        "%s:holders", "redisson_lock_queue:%s", "%s:timeout", "{%s}:holders:x",
        "{%s}x", "{%s}{x}", "%s:lease", "{%s}:expired:y"};
    size_t i;

    for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
        char name[200];
        dlock_rlock *l = NULL;

        snprintf(name, sizeof(name), fmts[i], fx->name);
        if (dlock_fair_new(&l, fx->c1, name) != 0)
            fail_msg("fair \"%s\" refused: %s", name, dlock_client_errmsg(fx->c1));
        keep_rlock(fx, l);
        assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
        assert_int_equal(dlock_unlock(l), 0);
    }
    /* "{x}" of a type that keeps no derived key: its one key is "{x}" */
    {
        char name[200];
        dlock_rlock *l = NULL;
        snprintf(name, sizeof(name), "{%s}", fx->name);
        assert_int_equal(dlock_reentrant_new(&l, fx->c1, name), 0);
        keep_rlock(fx, l);
    }
}

static const struct CMUnitTest name_cases[] = {
    DLOCK_FX_CASE(reserved_names_refused_or_harmless),
    DLOCK_FX_CASE(holders_hash_is_nobody_elses),
    DLOCK_FX_CASE(near_names_still_work),
};

/* Runs every case on backend ("mock", a wrapped mock's kind, or a Redis
 * row). Returns the number of failures. */
int dlock_test_names(const char *backend);
int dlock_test_names(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("reserved names", backend, name_cases);
}
