/*
 * dlock — MultiLock: all of n lock objects or none (api/dlock/multilock.h).
 *
 * Pure composition: every step is the members' own slots, called in order
 * with the owner id of the MultiLock's call, so any lock type on any client
 * and backend can be a member (a MultiLock or a Redlock included).
 *
 * Its holds are its members' holds: each is in its member's client's hold
 * registry, and a lease-0 member is renewed by that client's watchdog (a
 * Redlock member by its first client's, objects/types/redlock.c), so the
 * MultiLock keeps no registry or renewal of its own; an unlock learns
 * from each member's own answer whether its hold was lost.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock/multilock.h"
#include "core/wait.h"
#include "objects/runtime/client.h"
#include "objects/runtime/op.h"
#include "objects/runtime/base.h"
#include "objects/types/methods.h"
#include "objects/types/type.h"

typedef struct multilock {
    dlock_rlock base; /* client: the first member's */
    size_t n;
    dlock_rlock **members; /* borrowed */
} multilock;

static int is_transport(int rc)
{
    return rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT;
}

static int member_fail(multilock *m, size_t i, int rc, const char *what)
{
    return dlock_rlock_fail(&m->base, rc, "%s member %zu (\"%.64s\"): %s", what, i,
                            m->members[i]->name, dlock_errmsg(m->members[i]));
}

/* Releases members [0, k) in reverse order (what an attempt took). */
static void undo(multilock *m, dlock_op *op, size_t k)
{
    while (k > 0) {
        k--;
        m->members[k]->methods->release(m->members[k], op);
    }
}

/* An asynchronous MultiLock acquisition keeps its fiber while it waits:
 * its wait is not one dlock_rlock_wait but its members' in turn, with
 * work after each (the next member, the undo of those taken), so it has
 * no single wait that could move off this frame; a member's movable wait
 * stays too (the operation lets only its own object's wait move). */
static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    multilock *m = (multilock *)l;
    dlock_clock *clk = l->client->clock;
    int forever = wait_ms == DLOCK_WAIT_FOREVER;
    int64_t deadline =
        forever ? INT64_MAX : dlock__add_sat(dlock__op_wait_start(clk, wait_ms), wait_ms);
    /* The whole call, every member's round trips included, ends within
     * wait_ms + budget_slack_ms, as a single lock's does. */
    int64_t outer = dlock__op_cap_within(
        op, forever ? INT64_MAX
                    : dlock__add_sat(deadline, l->client->opts.budget_slack_ms));
    unsigned seed = (unsigned)(uintptr_t)&seed;
    size_t k;
    int rc;

    for (;;) {
        rc = 0;
        for (k = 0; k < m->n && rc == 0; k++) {
            dlock_rlock *mb = m->members[k];
            int64_t left = forever ? DLOCK_WAIT_FOREVER
                                   : deadline - dlock_clock_now(clk);
            rc = mb->methods->acquire(mb, op, left > 0 || forever ? left : 0, lease_ms);
        }
        if (rc == 0)
            break;
        k--; /* the member that failed */
        /* A lost reply may have been a grant: release that member too (a
         * "not the owner" answer is then harmless). */
        undo(m, op, is_transport(rc) ? k + 1 : k);
        rc = member_fail(m, k, rc, "acquiring");
        if ((rc != DLOCK_EBUSY && !is_transport(rc)) || wait_ms == 0 ||
            dlock_clock_now(clk) >= deadline)
            break;
        /* Budget left (a member gave up early): start again after a short
         * real-time pause, so that contenders do not meet in step. */
        dlock__wait_nap(1 + rand_r(&seed) % 10);
    }
    dlock__op_cap_restore(op, outer);
    if (rc == DLOCK_EBUSY && wait_ms != 0)
        rc = dlock_rlock_fail(l, DLOCK_ETIMEDOUT, "waited %" PRId64 " ms for the "
                              "members of \"%.64s\"", wait_ms, l->name);
    return rc;
}

static int release(dlock_rlock *l, dlock_op *op)
{
    multilock *m = (multilock *)l;
    size_t i, ok = 0, notowner = 0;
    int rc = 0, err = 0, lost = 0;

    for (i = m->n; i > 0; i--) {
        dlock_rlock *mb = m->members[i - 1];
        rc = mb->methods->release(mb, op);
        if (rc == 0)
            ok++;
        else if (rc == DLOCK_ENOTOWNER)
            notowner++;
        else if (rc == DLOCK_ELOST)
            lost = 1;
        else if (!err)
            err = member_fail(m, i - 1, rc, "releasing");
    }
    if (err)
        return err;
    /* Some held and some not: part of the hold went away. */
    if (lost || (notowner > 0 && ok > 0))
        return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": %zu of %zu members were "
                                "no longer held", l->name, m->n - ok, m->n);
    if (notowner > 0)
        return dlock_rlock_fail(l, DLOCK_ENOTOWNER, "\"%.64s\" is not held by this "
                                "owner", l->name);
    return 0;
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    multilock *m = (multilock *)l;
    size_t i;
    int err = 0;

    *existed = 0;
    for (i = 0; i < m->n; i++) {
        int one = 0, rc = m->members[i]->methods->force_unlock(m->members[i], &one);
        if (rc != 0 && !err)
            err = member_fail(m, i, rc, "force-unlocking");
        *existed |= rc == 0 && one;
    }
    return err;
}

static int is_locked(dlock_rlock *l, int *out)
{
    multilock *m = (multilock *)l;
    size_t i;

    *out = 0;
    for (i = 0; i < m->n && !*out; i++) {
        int rc = m->members[i]->methods->is_locked(m->members[i], out);
        if (rc != 0)
            return member_fail(m, i, rc, "reading");
    }
    return 0;
}

static int hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    multilock *m = (multilock *)l;
    size_t i;

    *out = INT64_MAX;
    for (i = 0; i < m->n; i++) {
        int64_t c;
        int rc = m->members[i]->methods->hold_count(m->members[i], owner, &c);
        if (rc != 0)
            return member_fail(m, i, rc, "reading");
        *out = c < *out ? c : *out;
    }
    return 0;
}

static int is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t c;
    int rc = hold_count(l, owner, &c);

    if (rc == 0)
        *out = c > 0;
    return rc;
}

static int remain_ttl(dlock_rlock *l, int64_t *out)
{
    multilock *m = (multilock *)l;
    int64_t least = INT64_MAX;
    size_t i;

    for (i = 0; i < m->n; i++) {
        int64_t t;
        int rc = m->members[i]->methods->remain_ttl(m->members[i], &t);
        if (rc != 0)
            return member_fail(m, i, rc, "reading");
        if (t == -2) {
            least = -2;
            break;
        }
        if (t != -1 && t < least)
            least = t;
    }
    *out = least == INT64_MAX ? -1 : least;
    return 0;
}

/* The owner id goes to every member: it must be one each member takes (a
 * read-write lock half reserves some), checked before any member is sent
 * anything, so that a refused id leaves no member taken and released. */
static int check_owner(dlock_rlock *l, const char *owner)
{
    multilock *m = (multilock *)l;
    size_t i;

    for (i = 0; i < m->n; i++) {
        int rc = dlock_rlock_check_owner(m->members[i], owner);
        if (rc != 0)
            return member_fail(m, i, rc, "owner id for");
    }
    return 0;
}

/* ---- lease control (dlock_extend) ---------------------------------------- */

static const dlock_rlock_methods multilock_methods;

/* Whether every lock under l has an extend slot (a MultiLock member: all
 * of its own members), so that a type without one is refused before any
 * lease is changed. */
static int can_extend(const dlock_rlock *l)
{
    const multilock *m = (const multilock *)l;
    size_t i;

    if (l->methods != &multilock_methods)
        return DLOCK_RLOCK_HAS_SLOT(l->methods, extend);
    for (i = 0; i < m->n; i++)
        if (!can_extend(m->members[i]))
            return 0;
    return 1;
}

/* Every member's hold is checked before any is extended, so that a member
 * gone changes nothing; a member whose hold ends between its check and
 * its extension (its lease ran out just then) stops the extension there
 * (api/dlock/multilock.h says what is left). Each member's extension is
 * its own dlock_extend_as, which tells a lost hold from one never had. */
static int extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    multilock *m = (multilock *)l;
    size_t i, held = 0, lost = 0, missing = 0, first = 0;
    int64_t count;
    int rc;

    for (i = 0; i < m->n; i++)
        if (!can_extend(m->members[i]))
            return dlock_rlock_fail(l, DLOCK_ENOTSUP, "\"%.64s\": member %zu "
                                    "(\"%.64s\", %s locks) cannot be extended; "
                                    "nothing extended", l->name, i,
                                    m->members[i]->name, m->members[i]->methods->type);
    for (i = 0; i < m->n; i++) {
        dlock_rlock *mb = m->members[i];
        if ((rc = mb->methods->hold_count(mb, owner, &count)) != 0)
            return member_fail(m, i, rc, "reading");
        if (count > 0) {
            held++;
            continue;
        }
        /* Not held, so its own extension changes nothing and says whether
         * that member's hold was lost (and marks it so for its unlock). */
        rc = dlock_extend_as(mb, owner, lease_ms);
        if (rc == 0)
            held++; /* taken again meanwhile, by this same owner */
        else if (rc != DLOCK_ELOST && rc != DLOCK_ENOTOWNER)
            return member_fail(m, i, rc, "extending");
        else if (missing++ == 0)
            first = i;
        lost += rc == DLOCK_ELOST;
    }
    if (lost > 0 || (missing > 0 && held > 0))
        return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": the lease ran out or the "
                                "lock was taken away on %zu of %zu members (member "
                                "%zu, \"%.64s\", first); nothing extended", l->name,
                                missing, m->n, first, m->members[first]->name);
    if (missing > 0)
        return dlock_rlock_fail(l, DLOCK_ENOTOWNER, "\"%.64s\" is not held by this "
                                "owner", l->name);
    for (i = 0; i < m->n; i++) {
        rc = dlock_extend_as(m->members[i], owner, lease_ms);
        if (rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER)
            return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": member %zu (\"%.64s\") "
                                    "was lost before its extension; the %zu before "
                                    "it have the new lease, the others their old one",
                                    l->name, i, m->members[i]->name, i);
        if (rc != 0)
            return member_fail(m, i, rc, "extending (the members before it have the "
                               "new lease)");
    }
    return 0;
}

static void destroy(dlock_rlock *l)
{
    free(((multilock *)l)->members);
    free(l);
}

static const dlock_rlock_methods multilock_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION,
    .type = "multilock",
    .acquire = acquire,
    .release = release,
    .force_unlock = force_unlock,
    .is_locked = is_locked,
    .is_held = is_held,
    .hold_count = hold_count,
    .remain_ttl = remain_ttl,
    .destroy = destroy,
    .extend = extend,
    .check_owner = check_owner,
};
const dlock__type dlock__type_multilock = {
    .name = "multilock", .tables = {&multilock_methods}, .no_keys = 1,
};

int dlock_multilock_new(dlock_rlock **out, dlock_rlock *const *locks, size_t n)
{
    char name[DLOCK_NAME_MAX + 1];
    size_t i, len = 0;
    dlock_rlock *l;
    multilock *m;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (!locks || n == 0 || n > DLOCK_MULTILOCK_MAX)
        return DLOCK_EINVAL;
    name[0] = '\0';
    for (i = 0; i < n; i++) {
        const dlock_rlock_methods *mt = locks[i] ? locks[i]->methods : NULL;
        if (!mt || !locks[i]->client || !mt->acquire || !mt->release ||
            !mt->force_unlock || !mt->is_locked || !mt->hold_count || !mt->remain_ttl)
            return DLOCK_EINVAL; /* a member must support every lock slot */
        if (len < DLOCK_NAME_MAX)
            len += (size_t)snprintf(name + len, sizeof(name) - len, "%s%s",
                                    i ? "+" : "", locks[i]->name);
    }
    rc = dlock__rlock_new(&l, sizeof(multilock), &multilock_methods, locks[0]->client,
                          name);
    if (rc != 0)
        return rc;
    m = (multilock *)l;
    m->members = malloc(n * sizeof(*m->members));
    if (!m->members) {
        dlock_rlock_free(l);
        return DLOCK_ENOMEM;
    }
    memcpy(m->members, locks, n * sizeof(*m->members));
    m->n = n;
    *out = l;
    return 0;
}
