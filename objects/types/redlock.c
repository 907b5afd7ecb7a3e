/*
 * dlock — Redlock over n independent nodes (api/dlock/redlock.h).
 *
 * Each node is a fenced lock handle on its own client; this file only
 * counts votes. Every per-node step (acquire, release, read, renew) goes to
 * all nodes at once (fanout.h), each under a per-node budget, and the
 * answers are combined by majority.
 *
 * What this handle believes it holds (per owner: the count, lease-0
 * renewal, lost, the fencing token) is in the hold registry of its own
 * client, l->client, the first node's (objects/runtime/holds.c), as
 * every lock's; the nodes' own holds are in their clients' registries.
 * That client's watchdog renews the lease-0 holds with renew_holds
 * below, its renewal for holds that are not one key on one backend
 * (dlock__renew_fn): the extensions on every node at once, then the
 * votes.
 *
 * Why the first client's watchdog: the handle already belongs to it (its
 * errors, on_lost, metrics and options are that client's, and the handle
 * keeps it alive), its options were already the Redlock's (the watchdog
 * timeout sets the lease-0 lease, max_hold_ms caps renewal), and one
 * owner per hold keeps one renewal per period. The nodes' clients are its
 * members, each only asked for its node's step.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dlock/fenced.h"
#include "dlock/redlock.h"
#include "core/wait.h"
#include "objects/runtime/client.h"
#include "objects/runtime/fanout.h"
#include "objects/runtime/holds.h"
#include "objects/runtime/inspect.h"
#include "objects/runtime/object.h"
#include "objects/runtime/op.h"
#include "objects/runtime/reads.h"
#include "objects/runtime/base.h"
#include "objects/types/hash_lock.h"
#include "objects/types/methods.h"
#include "objects/types/type.h"
#include "scripts.h"

/* A split vote (no majority for anyone) is retried after a random delay
 * up to this many ms, so that contenders do not meet again at once. */
#define SPLIT_RETRY_MS 30

typedef struct redlock {
    dlock_object_base o; /* client: clients[0]; channel: the nodes' channel */
    size_t n, quorum;
    dlock_rlock **nodes;      /* fenced locks, one per client */
    dlock_backend **backends; /* the nodes' backends, for waking */
    int64_t node_timeout_ms;  /* under mutex */
    pthread_mutex_t mutex;    /* node_timeout_ms */
    /* A renewal that sets a missing key again and a release never run at
     * the same time: the set must not bring back what the release
     * deleted. Either holds excl (under mutex) across its round trips;
     * the other waits on excl_cv through the waiting service (a release
     * on a loop's fiber yields, never blocking the loop's thread, whose
     * other fiber may be the one to end it). */
    int excl;
    pthread_cond_t excl_cv;
    int mutexes;              /* how many of mutex and excl_cv were initialised */
    int pooled;               /* holds a fanout pool reference */
    int split;                /* every node's backend splits calls */
} redlock;

static const dlock_rlock_methods redlock_methods;
static void renew_holds(dlock_rlock *l, dlock__renewal *holds, size_t n,
                        int64_t lease);

/* ---- per-node steps ------------------------------------------------------ */

enum { NODE_FAILED, NODE_GRANTED, NODE_REFUSED };

typedef struct node_res {
    dlock__eval_half h; /* a step in halves: the call between them */
    /* The step's operation on this node: the round's owner, within the
     * round's op (its cap, its judging) and cap, and under a node timeout
     * for the steps that take one (node_op). Its own sync note, merged
     * into the round's op on the caller's thread (round_merge). */
    dlock_op op;
    int64_t cap; /* INT64_MAX unless a batch sets the node's budget */
    int sent;           /* h has a call to receive */
    int rc, vote;
    int64_t v[3]; /* acquire: token, holder's TTL; reads: the triple */
    int want;     /* this node takes part in the step */
} node_res;

typedef struct round {
    redlock *r;
    dlock_op *parent; /* the call's op; NULL for renewals and reads */
    const char *owner;
    int64_t lease_ms; /* the lease sent (never 0) */
    const char *mode; /* renewal: "0" or "1" */
    int64_t token;    /* token raise */
    int undo;         /* release: undoing an attempt */
    node_res res[DLOCK_REDLOCK_MAX_NODES];
} round;

static int64_t node_timeout(redlock *r)
{
    int64_t t;

    pthread_mutex_lock(&r->mutex);
    t = r->node_timeout_ms;
    pthread_mutex_unlock(&r->mutex);
    return t;
}

static void round_init(round *rd, redlock *r, dlock_op *parent, const char *owner,
                       int64_t lease_ms)
{
    size_t i;

    memset(rd, 0, sizeof(*rd));
    rd->r = r;
    rd->parent = parent;
    rd->owner = owner;
    rd->lease_ms = lease_ms;
    for (i = 0; i < r->n; i++) {
        rd->res[i].want = 1;
        rd->res[i].cap = INT64_MAX;
    }
}

/* Node i's op for a step: within the round's op and the node's cap, and
 * with timed, cut off at the node timeout from now (an attempt's steps,
 * an undo, a set). */
static dlock_op *node_op(round *rd, size_t i, int timed)
{
    node_res *res = &rd->res[i];
    int64_t cap = res->cap;

    if (timed) {
        dlock_rlock *nd = rd->r->nodes[i];
        int64_t t = dlock__add_sat(dlock_clock_now(nd->client->clock),
                                   node_timeout(rd->r));
        cap = t < cap ? t : cap;
    }
    dlock__op_child(&res->op, rd->parent, cap);
    res->op.owner = rd->owner;
    return &res->op;
}

/* The sync notes of the round's nodes into its op (after the step, on
 * the caller's thread). */
static void round_merge(round *rd)
{
    size_t i;

    for (i = 0; rd->parent && i < rd->r->n; i++)
        dlock__op_merge(rd->parent, &rd->res[i].op);
}

static void node_acquire_send(void *ctx, size_t i)
{
    round *rd = ctx;
    node_res *res = &rd->res[i];
    dlock_rlock *nd = rd->r->nodes[i];
    char lease[DLOCK__I64_SIZE];
    const char *argv[4];
    dlock_op *op = node_op(rd, i, 1);

    argv[0] = nd->name;
    argv[1] = dlock__fenced_token_key(nd);
    argv[2] = dlock__i64(lease, rd->lease_ms);
    argv[3] = rd->owner;
    res->vote = NODE_FAILED;
    res->rc = dlock_hold_acquire_begin(nd, rd->owner, rd->lease_ms, NULL);
    res->sent = res->rc == 0;
    if (res->sent)
        dlock__rlock_eval_send(nd, op, &res->h, &dlock__script_fenced_acquire, 2, 2,
                               argv);
}

static void node_acquire_receive(void *ctx, size_t i)
{
    round *rd = ctx;
    node_res *res = &rd->res[i];
    dlock_rlock *nd = rd->r->nodes[i];
    dlock_reply *rep = NULL;
    int valid;

    if (!res->sent)
        return;
    res->sent = 0;
    res->rc = dlock__rlock_eval_receive(nd, &res->h, &rep);
    valid = res->rc == 0 && dlock__reply_is(rep, "ii", 0);
    dlock_hold_acquire_end(nd, rd->owner, rd->lease_ms,
                           valid && rep->elems[0]->integer == 1);
    if (res->rc == 0 && !valid) {
        res->rc = dlock__unexpected_reply(nd, &dlock__script_fenced_acquire, rep);
        rep = NULL;
    } else if (res->rc == 0) {
        res->vote = rep->elems[0]->integer == 1 ? NODE_GRANTED : NODE_REFUSED;
        res->v[0] = rep->elems[1]->integer;
    }
    dlock_reply_free(rep);
}

static void node_release_send(void *ctx, size_t i)
{
    round *rd = ctx;
    node_res *res = &rd->res[i];

    res->sent = res->want;
    if (!res->want)
        return;
    /* Only the undo of an attempt runs under the node timeout (within the
     * caller's budget); an unlock is bounded by the backend's own
     * timeouts, as every lock's: cutting a slow release short would leave
     * the lock there for a lease. */
    dlock__reentrant_release_send(rd->r->nodes[i], node_op(rd, i, rd->undo), &res->h);
}

static void node_release_receive(void *ctx, size_t i)
{
    round *rd = ctx;
    node_res *res = &rd->res[i];

    if (!res->sent)
        return;
    res->sent = 0;
    res->rc = dlock__rlock_release_receive(rd->r->nodes[i], &res->h);
}

static void node_force(void *ctx, size_t i)
{
    round *rd = ctx;
    int existed = 0;

    rd->res[i].rc = dlock__reentrant_force_unlock(rd->r->nodes[i], &existed);
    rd->res[i].v[0] = existed;
}

static void node_read_send(void *ctx, size_t i)
{
    round *rd = ctx;

    rd->res[i].sent = 1;
    dlock__hash_triple_send(rd->r->nodes[i], &rd->res[i].h, rd->owner);
}

static void node_read_receive(void *ctx, size_t i)
{
    round *rd = ctx;

    rd->res[i].sent = 0;
    rd->res[i].rc = dlock__receive_triple(rd->r->nodes[i], &rd->res[i].h,
                                          rd->res[i].v);
}

static void node_renew_send(void *ctx, size_t i)
{
    round *rd = ctx;
    node_res *res = &rd->res[i];
    dlock_rlock *nd = rd->r->nodes[i];
    char lease[DLOCK__I64_SIZE];
    const char *argv[4];
    dlock_op *op;

    res->sent = res->want;
    if (!res->want)
        return;
    /* Extensions run under their batch's budget (the node's cap); a set
     * under the node timeout. */
    op = node_op(rd, i, rd->mode[0] == '1');
    argv[0] = nd->name;
    argv[1] = dlock__i64(lease, rd->lease_ms);
    argv[2] = rd->owner;
    argv[3] = rd->mode;
    dlock__rlock_eval_send(nd, op, &res->h, &dlock__script_redlock_renew, 1, 3, argv);
}

static void node_renew_receive(void *ctx, size_t i)
{
    round *rd = ctx;
    node_res *res = &rd->res[i];

    if (!res->sent)
        return;
    res->sent = 0;
    res->rc = dlock__rlock_receive_integer(rd->r->nodes[i], &res->h, &res->v[0]);
}

static void node_raise(void *ctx, size_t i)
{
    round *rd = ctx;
    dlock_rlock *nd = rd->r->nodes[i];
    char token[DLOCK__I64_SIZE];
    const char *argv[2];

    if (!rd->res[i].want)
        return;
    argv[0] = dlock__fenced_token_key(nd);
    argv[1] = dlock__i64(token, rd->token);
    rd->res[i].rc = dlock_rlock_eval_integer(nd, node_op(rd, i, 1), &rd->res[i].v[0],
                                             &dlock__script_redlock_token_raise, 1, 1,
                                             argv);
}

static int is_transport(int rc)
{
    return rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT;
}

/* Records on l, as code, which nodes failed and why (rc != 0 among the
 * wanted ones). */
static int fail_nodes(redlock *r, const round *rd, int code, const char *what)
{
    char detail[DLOCK_ERRMSG_MAX];
    size_t i, len, failed = 0;

    len = (size_t)snprintf(detail, sizeof(detail), "%s: ", what);
    for (i = 0; i < r->n && len < sizeof(detail); i++) {
        if (!rd->res[i].want || rd->res[i].rc == 0)
            continue;
        failed++;
        /* Codes only: a node's own detail may already be its undo's, and
         * five of them do not fit. */
        len += (size_t)snprintf(detail + len, sizeof(detail) - len, "%snode %zu %s",
                                failed > 1 ? ", " : "", i,
                                dlock_errname(rd->res[i].rc));
    }
    return dlock_rlock_fail(&r->o.base, code, "%s", detail);
}

/* The code for a step that fewer than a majority of nodes answered. */
static int transport_code(const round *rd, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (rd->res[i].want && rd->res[i].rc == DLOCK_ETIMEDOUT)
            return DLOCK_ETIMEDOUT;
    for (i = 0; i < n; i++)
        if (rd->res[i].want && rd->res[i].rc != 0 && !is_transport(rd->res[i].rc))
            return rd->res[i].rc;
    return DLOCK_ECONN;
}

/* ---- acquisition --------------------------------------------------------- */

/* What a lease sent to the nodes at the start of a round is still worth
 * once the round took elapsed ms: Redlock's validity, less the clock drift
 * between the nodes and this client (1 % of the lease, + 2 ms). */
static int64_t validity_left(int64_t lease, int64_t elapsed)
{
    return lease - elapsed - (lease / 100 + 2);
}

typedef struct attempt_state {
    /* After a split vote, no attempt before this time of the client's
     * clock (INT64_MIN: none): contenders woken by one message draw
     * apart. The pause is the wait's own (a retry time on the client's
     * clock, the loop's timer in a loop), never a nap of the thread, so
     * that a virtual clock's run is a function of its clock. */
    int64_t not_before;
    unsigned seed;
} attempt_state;

static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = op->owner;
    redlock *r = (redlock *)l;
    attempt_state *a = spec->arg;
    int64_t lease = lease_ms > 0 ? lease_ms : l->client->opts.watchdog_timeout_ms;
    dlock_clock *clk = l->client->clock;
    size_t i, granted = 0, refused = 0, failed = 0, raised = 0;
    int64_t start, elapsed, validity, token = 0, ttl = INT64_MAX;
    round rd, undo;
    int rc;

    if (a->not_before != INT64_MIN && (start = dlock_clock_now(clk)) < a->not_before) {
        /* the split vote's pause: not yet (a message woke the wait) */
        *retry_ms = a->not_before - start;
        return dlock_rlock_fail(l, DLOCK_EBUSY, "\"%.64s\": pausing after a split vote",
                                l->name);
    }
    a->not_before = INT64_MIN;
    rc = dlock__hold_acquire_begin(l, owner, lease_ms, &dlock__script_redlock_renew,
                                   renew_holds);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "out of memory before acquiring \"%.64s\"",
                                l->name);
    round_init(&rd, r, op, owner, lease);
    start = dlock_clock_now(clk);
    dlock__fanout_halves(r->n, r->split, node_acquire_send, node_acquire_receive,
                         &rd);
    round_merge(&rd);
    elapsed = dlock_clock_now(clk) - start;
    for (i = 0; i < r->n; i++) {
        node_res *res = &rd.res[i];
        if (res->vote == NODE_GRANTED) {
            granted++;
            token = res->v[0] > token ? res->v[0] : token;
        } else if (res->vote == NODE_REFUSED) {
            refused++;
            ttl = res->v[0] >= 0 && res->v[0] < ttl ? res->v[0] : ttl;
        } else {
            failed++;
        }
    }
    validity = validity_left(lease, elapsed);
    if (granted >= r->quorum && validity > 0) {
        /* Fencing: the granting nodes whose counter is behind learn the
         * token, so that every node of this majority has it. */
        round rs;
        round_init(&rs, r, op, owner, lease);
        rs.token = token;
        for (i = 0; i < r->n; i++) {
            rs.res[i].want = rd.res[i].vote == NODE_GRANTED && rd.res[i].v[0] < token;
            raised += rd.res[i].vote == NODE_GRANTED && !rs.res[i].want;
        }
        if (raised < granted) {
            dlock__fanout(r->n, node_raise, &rs);
            round_merge(&rs);
            for (i = 0; i < r->n; i++)
                raised += rs.res[i].want && rs.res[i].rc == 0;
        }
        if (raised >= r->quorum) {
            dlock__hold_acquire_end(l, owner, lease_ms, 1, token);
            return 0;
        }
    }
    /* Not acquired: undo it wherever it may have been granted (a reply
     * that never came may have been a grant). */
    round_init(&undo, r, op, owner, lease);
    undo.undo = 1;
    for (i = 0; i < r->n; i++)
        undo.res[i].want = rd.res[i].vote != NODE_REFUSED;
    dlock__fanout_halves(r->n, r->split, node_release_send, node_release_receive,
                         &undo);
    round_merge(&undo);
    dlock__hold_acquire_end(l, owner, lease_ms, 0, 0);
    if (granted >= r->quorum)
        return dlock_rlock_fail(l, DLOCK_ETIMEDOUT,
                                "\"%.64s\": a majority granted it but %" PRId64
                                " ms of a %" PRId64 " ms lease left no validity",
                                l->name, elapsed, lease);
    if (failed > r->n - r->quorum) {
        for (i = 0; i < r->n; i++)
            rd.res[i].want = rd.res[i].vote == NODE_FAILED;
        char what[160];
        snprintf(what, sizeof(what),
                 "\"%.64s\": %zu of %zu nodes failed, %zu needed", l->name, failed,
                 r->n, r->quorum);
        return fail_nodes(r, &rd, transport_code(&rd, r->n), what);
    }
    if (refused > r->n - r->quorum) {
        *retry_ms = dlock_retry_after(ttl == INT64_MAX ? -1 : ttl);
    } else {
        /* at least a millisecond: two contenders whose undoes wake each
         * other must not retry in the same instant for ever (a store that
         * answers at once, the mock) */
        a->not_before = dlock_clock_now(clk) + 1 + rand_r(&a->seed) % (SPLIT_RETRY_MS / 3);
        *retry_ms = 1 + rand_r(&a->seed) % SPLIT_RETRY_MS;
    }
    return dlock_rlock_fail(l, DLOCK_EBUSY,
                            "\"%.64s\" is held by another owner (%zu of %zu nodes "
                            "granted, %zu needed)", l->name, granted, r->n, r->quorum);
}

/* The split-vote delays' seed: from the owner id (whose client part is a
 * random UUID) and the client's clock, so that contenders draw apart, and
 * a run on a virtual clock whose UUIDs come from a seed (tests/sim) draws
 * the same delays again; never from addresses. */
static unsigned split_seed(const dlock_rlock *l, const char *owner)
{
    unsigned s = (unsigned)dlock_clock_now(l->client->clock);

    while (owner && *owner)
        s = s * 31u + (unsigned char)*owner++;
    return s;
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms,
                   int64_t lease_ms)
{
    redlock *r = (redlock *)l;
    attempt_state a;
    dlock_wait_spec spec;

    memset(&spec, 0, sizeof(spec));
    a.not_before = INT64_MIN;
    a.seed = split_seed(l, op->owner);
    spec.version = DLOCK_WAIT_SPEC_VERSION;
    spec.channel = r->o.channel;
    spec.attempt = attempt;
    spec.arg = &a;
    spec.backends = r->backends;
    spec.nbackends = r->n;
    spec.subscribe_timeout_ms = node_timeout(r);
    /* Not movable (a wait on several backends never is: its subscriptions
     * are per backend, best effort, kept in the wait's own allocations),
     * and its attempts fan out to worker threads with a's state. */
    return dlock_rlock_wait(l, op, &spec, wait_ms, lease_ms);
}

/* ---- release, force unlock, reads ---------------------------------------- */

/* Takes r's renewal/release exclusion (excl), waiting for it without
 * blocking a loop's thread. */
static void excl_enter(redlock *r)
{
    pthread_mutex_lock(&r->mutex);
    while (r->excl)
        dlock__wait_cond(&r->excl_cv, &r->mutex, INT64_MAX);
    r->excl = 1;
    pthread_mutex_unlock(&r->mutex);
}

static void excl_leave(redlock *r)
{
    pthread_mutex_lock(&r->mutex);
    r->excl = 0;
    pthread_cond_broadcast(&r->excl_cv);
    pthread_mutex_unlock(&r->mutex);
}

static int release(dlock_rlock *l, dlock_op *op)
{
    const char *owner = op->owner;
    redlock *r = (redlock *)l;
    size_t i, ok = 0, gone = 0;
    int believed, lost = 0;
    round rd;

    round_init(&rd, r, op, owner, 0);
    /* Marked before the release is sent: a renewal that finds the lock
     * gone meanwhile must not call it lost. */
    dlock_hold_release_begin(l, owner);
    excl_enter(r);
    dlock__fanout_halves(r->n, r->split, node_release_send, node_release_receive,
                         &rd);
    round_merge(&rd);
    for (i = 0; i < r->n; i++) {
        ok += rd.res[i].rc == 0;
        gone += rd.res[i].rc == DLOCK_ENOTOWNER || rd.res[i].rc == DLOCK_ELOST;
    }
    /* Gone from a majority: the whole hold is over (every count of a
     * reentrant hold), as a single lock's is; else one hold less. */
    believed = dlock__hold_release_end(l, owner, DLOCK_HOLD_ONE, gone > r->n - r->quorum,
                                       &lost);
    excl_leave(r);
    if (lost)
        return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": fewer than a majority of "
                                "nodes kept the lock", l->name);
    if (ok >= r->quorum)
        return 0;
    if (gone > r->n - r->quorum) {
        if (believed)
            return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": the lease ran out or "
                                    "the lock was taken away on %zu of %zu nodes",
                                    l->name, gone, r->n);
        return dlock_rlock_fail(l, DLOCK_ENOTOWNER, "\"%.64s\" is not held by this "
                                "owner", l->name);
    }
    for (i = 0; i < r->n; i++)
        rd.res[i].want = rd.res[i].rc != 0 && !(rd.res[i].rc == DLOCK_ENOTOWNER ||
                                                rd.res[i].rc == DLOCK_ELOST);
    return fail_nodes(r, &rd, transport_code(&rd, r->n),
                      "released on fewer than a majority of nodes");
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    redlock *r = (redlock *)l;
    size_t i, ok = 0;
    round rd;

    round_init(&rd, r, NULL, "", 0);
    dlock__fanout(r->n, node_force, &rd);
    *existed = 0;
    for (i = 0; i < r->n; i++) {
        ok += rd.res[i].rc == 0;
        *existed |= rd.res[i].rc == 0 && rd.res[i].v[0];
    }
    if (ok >= r->quorum)
        return 0;
    return fail_nodes(r, &rd, transport_code(&rd, r->n), "force unlock reached "
                      "fewer than a majority of nodes");
}

/* One read on every node; vals[i] = pick(triple), or none for a node that
 * did not answer. 0 when a majority answered. */
static int read_all(redlock *r, const char *owner, int what, int64_t none,
                    int64_t *vals)
{
    size_t i, ok = 0;
    round rd;

    round_init(&rd, r, NULL, owner, 0);
    dlock__fanout_halves(r->n, r->split, node_read_send, node_read_receive,
                         &rd);
    for (i = 0; i < r->n; i++) {
        ok += rd.res[i].rc == 0;
        vals[i] = rd.res[i].rc == 0 ? rd.res[i].v[what] : none;
    }
    if (ok >= r->quorum)
        return 0;
    return fail_nodes(r, &rd, transport_code(&rd, r->n),
                      "fewer than a majority of nodes answered");
}

static int desc(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The value a majority reaches: the quorum-th largest. */
static int64_t majority_value(redlock *r, int64_t *vals)
{
    qsort(vals, r->n, sizeof(*vals), desc);
    return vals[r->quorum - 1];
}

static int is_locked(dlock_rlock *l, int *out)
{
    redlock *r = (redlock *)l;
    int64_t vals[DLOCK_REDLOCK_MAX_NODES];
    int rc = read_all(r, "", 0, 0, vals);

    if (rc == 0)
        *out = majority_value(r, vals) > 0;
    return rc;
}

static int hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    redlock *r = (redlock *)l;
    int64_t vals[DLOCK_REDLOCK_MAX_NODES];
    int rc = read_all(r, owner, 1, 0, vals);

    if (rc == 0)
        *out = majority_value(r, vals);
    return rc;
}

static int is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t count;
    int rc = hold_count(l, owner, &count);

    if (rc == 0)
        *out = count > 0;
    return rc;
}

static int remain_ttl(dlock_rlock *l, int64_t *out)
{
    redlock *r = (redlock *)l;
    int64_t vals[DLOCK_REDLOCK_MAX_NODES], v;
    size_t i;
    int rc = read_all(r, "", 2, -2, vals);

    if (rc != 0)
        return rc;
    /* no expiry outlasts every TTL; absent is below every TTL */
    for (i = 0; i < r->n; i++)
        vals[i] = vals[i] == -1 ? INT64_MAX : vals[i];
    v = majority_value(r, vals);
    *out = v == INT64_MAX ? -1 : v;
    return 0;
}

/* ---- lease 0: renewed by the client's watchdog -------------------------- */

/* The extensions of one renewal period: every collected hold on every
 * node, one thread per node (fanout) going through all holds, so that a
 * stalled node costs the period one node budget, not one per hold. */
typedef struct renew_batch {
    redlock *r;
    round *rounds; /* one per hold */
    size_t count;
    int64_t lease;
} renew_batch;

/* Node i's renewal budget, from now, for every hold's step on it: a
 * renewal is still worth its reply for half a lease, longer than an
 * attempt's node timeout, so that a slow period is not a lost lock. */
static void renew_budget(renew_batch *b, size_t i)
{
    dlock_rlock *nd = b->r->nodes[i];
    int64_t budget = b->lease / 2 > node_timeout(b->r) ? b->lease / 2 : node_timeout(b->r);
    int64_t cap = dlock__add_sat(dlock_clock_now(nd->client->clock), budget);
    size_t k;

    for (k = 0; k < b->count; k++)
        b->rounds[k].res[i].cap = cap;
}

static void node_renew_batch(void *ctx, size_t i)
{
    renew_batch *b = ctx;
    size_t k;

    renew_budget(b, i);
    for (k = 0; k < b->count; k++) {
        node_renew_send(&b->rounds[k], i);
        node_renew_receive(&b->rounds[k], i);
    }
}

/* Every hold's renewal on every node. Split calls: hold by hold, one step
 * on every node at once (one call in flight per node: a pooled backend
 * lends a connection per call, and may have only one); otherwise a worker
 * per node goes through the holds. Either way a stalled node costs the
 * period one node budget, not one per hold. */
static void renew_every_node(renew_batch *b)
{
    redlock *r = b->r;
    size_t i, k;

    if (!r->split) {
        dlock__fanout(r->n, node_renew_batch, b);
        return;
    }
    for (i = 0; i < r->n; i++)
        renew_budget(b, i); /* the node's budget, taken now for all of its holds */
    for (k = 0; k < b->count; k++) {
        for (i = 0; i < r->n; i++)
            node_renew_send(&b->rounds[k], i);
        for (i = 0; i < r->n; i++)
            node_renew_receive(&b->rounds[k], i);
    }
}

/* After the extensions: when a majority still has the hold, sets it again
 * on the nodes that lost it; with fewer than a majority holding it (and a
 * majority answering), it is gone. Only the setting excludes releases
 * (excl): an extension after a release finds nothing to extend, a
 * set could bring the lock back. Returns w's answer (DLOCK__RENEWED, ...). */
static int renew_settle(redlock *r, const dlock__renewal *w, round *rd)
{
    size_t i, held = 0, missing = 0;

    for (i = 0; i < r->n; i++) {
        held += rd->res[i].rc == 0 && rd->res[i].v[0] == 1;
        missing += rd->res[i].rc == 0 && rd->res[i].v[0] == 0;
    }
    if (held >= r->quorum && missing > 0) {
        excl_enter(r);
        if (dlock__hold_current(&r->o.base, w)) {
            for (i = 0; i < r->n; i++) {
                rd->res[i].want = rd->res[i].rc == 0 && rd->res[i].v[0] == 0;
                rd->res[i].cap = INT64_MAX; /* a set: the node timeout only */
            }
            rd->mode = "1";
            dlock__fanout_halves(r->n, r->split, node_renew_send,
                                 node_renew_receive, rd);
        }
        excl_leave(r);
    }
    if (held >= r->quorum)
        return DLOCK__RENEWED;
    /* Nodes that could not be asked say nothing: the next period tries
     * again, as for every lock. */
    for (i = 0, missing = 0; i < r->n; i++)
        missing += rd->res[i].rc == 0 && rd->res[i].v[0] != 1;
    return missing > r->n - r->quorum ? DLOCK__RENEW_GONE : DLOCK__RENEW_FAILED;
}

/* The watchdog's renewal of this handle's lease-0 holds (dlock__renew_fn),
 * on its thread, once a period: every hold's extension on every node at
 * once, then each hold's votes. */
static void renew_holds(dlock_rlock *l, dlock__renewal *holds, size_t n,
                        int64_t lease)
{
    redlock *r = (redlock *)l;
    round *rounds = calloc(n, sizeof(*rounds));
    renew_batch b;
    size_t i;

    if (!rounds)
        return; /* every answer stays "could not tell": the next period */
    for (i = 0; i < n; i++) {
        round_init(&rounds[i], r, NULL, holds[i].owner, lease);
        rounds[i].mode = "0";
    }
    b.r = r;
    b.rounds = rounds;
    b.count = n;
    b.lease = lease;
    renew_every_node(&b);
    for (i = 0; i < n; i++)
        holds[i].renewed = renew_settle(r, &holds[i], &rounds[i]);
    free(rounds);
}

/* ---- lease control (dlock_extend) ---------------------------------------- */

/* One node's extension: the renewal's step, extend only (a node that lost
 * the key stays without it: this call asks whether a majority still holds
 * the lock, it does not take it again), under the node timeout as an
 * attempt's, so that a stalled node costs the call that long. */
static void node_extend_send(void *ctx, size_t i)
{
    round *rd = ctx;
    dlock_rlock *nd = rd->r->nodes[i];

    rd->res[i].cap = dlock__add_sat(dlock_clock_now(nd->client->clock),
                                    node_timeout(rd->r));
    node_renew_send(ctx, i);
}

/* The extend slot: the new lease on every node at once; extended when a
 * majority took it with validity left, as an acquisition is acquired. */
static int extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    redlock *r = (redlock *)l;
    dlock_clock *clk = l->client->clock;
    int64_t lease = lease_ms > 0 ? lease_ms : l->client->opts.watchdog_timeout_ms;
    int64_t start, elapsed;
    size_t i, taken = 0, gone = 0;
    char what[160];
    dlock_lost_fn fn;
    void *arg;
    round rd;

    round_init(&rd, r, NULL, owner, lease);
    rd.mode = "0";
    /* Stamped before and after the round: a renewal collected before, or
     * during it, neither sets the key again nor reports it lost on a view
     * older than this extension. */
    dlock__hold_stamp(l, owner);
    start = dlock_clock_now(clk);
    dlock__fanout_halves(r->n, r->split, node_extend_send, node_renew_receive,
                         &rd);
    elapsed = dlock_clock_now(clk) - start;
    for (i = 0; i < r->n; i++) {
        taken += rd.res[i].rc == 0 && rd.res[i].v[0] == 1;
        gone += rd.res[i].rc == 0 && rd.res[i].v[0] != 1;
    }
    dlock__hold_stamp(l, owner);
    if (taken >= r->quorum) {
        /* lease 0 hands the hold to the watchdog, a lease takes it off,
         * as for every lock */
        dlock__hold_extended(l, owner, lease_ms, &dlock__script_redlock_renew,
                             renew_holds);
        if (validity_left(lease, elapsed) > 0)
            return 0;
        return dlock_rlock_fail(l, DLOCK_ETIMEDOUT,
                                "\"%.64s\": %zu of %zu nodes took the lease but %"
                                PRId64 " ms of a %" PRId64 " ms lease left no validity",
                                l->name, taken, r->n, elapsed, lease);
    }
    /* Nodes that did not answer say nothing, as for a renewal: only a
     * majority of "not held" answers makes the hold lost (this call's
     * answer is the report: fn is not called). */
    if (gone > r->n - r->quorum) {
        if (dlock__hold_lost(l->client, l, l->name, owner, 0, 0, &fn, &arg))
            return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": the lease ran out or "
                                    "the lock was taken away on %zu of %zu nodes; not "
                                    "extended", l->name, gone, r->n);
        return dlock_rlock_fail(l, DLOCK_ENOTOWNER, "\"%.64s\" is not held by this "
                                "owner", l->name);
    }
    snprintf(what, sizeof(what), "\"%.64s\": extended on %zu of %zu nodes, %zu needed",
             l->name, taken, r->n, r->quorum);
    return fail_nodes(r, &rd, transport_code(&rd, r->n), what);
}

/* ---- lifetime ------------------------------------------------------------ */

/* Its holds are forgotten by then (dlock_rlock_fini), after any renewal
 * of them the watchdog was running. */
static void destroy(dlock_rlock *l)
{
    redlock *r = (redlock *)l;
    size_t i;

    /* In a fork() child the mutexes may have been copied held: the memory
     * only. */
    if (r->nodes && r->nodes[0] && dlock__client_check(r->nodes[0]->client) != 0)
        r->mutexes = 0;
    for (i = 0; r->nodes && i < r->n; i++)
        dlock_rlock_free(r->nodes[i]);
    free(r->nodes);
    free(r->backends);
    if (r->pooled)
        dlock__fanout_release();
    if (r->mutexes > 1)
        pthread_cond_destroy(&r->excl_cv);
    if (r->mutexes > 0)
        pthread_mutex_destroy(&r->mutex);
    dlock_object_base_destroy(&r->o.base);
}

static const dlock_rlock_methods redlock_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION,
    .type = "redlock",
    .acquire = acquire,
    .release = release,
    .force_unlock = force_unlock,
    .is_locked = is_locked,
    .is_held = is_held,
    .hold_count = hold_count,
    .remain_ttl = remain_ttl,
    .destroy = destroy,
    .extend = extend,
};
const dlock__type dlock__type_redlock = {
    .name = "redlock", .tables = {&redlock_methods}, .no_keys = 1,
};

int dlock_redlock_new(dlock_rlock **out, dlock_client *const *clients, size_t n,
                      const char *name)
{
    dlock_object_base *o = NULL;
    redlock *r;
    size_t i, j;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (!clients || n == 0 || n > DLOCK_REDLOCK_MAX_NODES)
        return DLOCK_EINVAL;
    for (i = 0; i < n; i++) {
        if (!clients[i])
            return DLOCK_EINVAL;
        for (j = 0; j < i; j++)
            if (clients[j] == clients[i])
                return DLOCK_EINVAL; /* one server voting twice */
    }
    rc = dlock_object_base_new(&o, sizeof(redlock), &redlock_methods, clients[0], name,
                           "redisson_lock__channel:", "");
    if (rc != 0)
        return rc;
    r = (redlock *)o;
    r->n = n;
    r->quorum = n / 2 + 1;
    r->node_timeout_ms = DLOCK_REDLOCK_NODE_TIMEOUT_MS;
    if (pthread_mutex_init(&r->mutex, NULL) != 0)
        goto nomem;
    r->mutexes = 1;
    if (dlock__wait_cond_init(&r->excl_cv) != 0)
        goto nomem;
    r->mutexes = 2;
    dlock__fanout_retain();
    r->pooled = 1;
    r->nodes = calloc(n, sizeof(*r->nodes));
    r->backends = calloc(n, sizeof(*r->backends));
    if (!r->nodes || !r->backends)
        goto nomem;
    for (i = 0; i < n; i++) {
        rc = dlock_fenced_new(&r->nodes[i], clients[i], name);
        if (rc != 0) {
            dlock_rlock_free(&o->base);
            return rc;
        }
        r->backends[i] = clients[i]->backend;
    }
    /* Split calls have one call in flight per node; a backend used by two
     * nodes would have two, which a pool of one connection cannot lend. */
    r->split = 1;
    for (i = 0; i < n; i++) {
        size_t k;
        r->split = r->split && dlock__rlock_can_split(r->nodes[i]);
        for (k = 0; k < i; k++)
            r->split = r->split && r->backends[k] != r->backends[i];
    }
    *out = &o->base;
    return 0;
nomem:
    dlock_rlock_free(&o->base);
    return DLOCK_ENOMEM;
}

static redlock *as_redlock(dlock_rlock *l)
{
    return l && l->methods == &redlock_methods ? (redlock *)l : NULL;
}

int dlock_redlock_set_node_timeout(dlock_rlock *l, int64_t ms)
{
    redlock *r = as_redlock(l);
    int rc;

    if (!r)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "not a Redlock") : DLOCK_EINVAL;
    if ((rc = dlock__time_arg(l, "node timeout", ms, 1)) != 0)
        return rc;
    pthread_mutex_lock(&r->mutex);
    r->node_timeout_ms = ms;
    pthread_mutex_unlock(&r->mutex);
    return 0;
}

static int token(dlock_rlock *l, int mode, const char *owner, int64_t *out)
{
    redlock *r = as_redlock(l);
    int rc = r ? 0 : DLOCK_EINVAL;
    char who[DLOCK_OWNER_MAX];

    if (rc == 0)
        rc = dlock__rlock_enter(l, mode, owner, who, out, "token", 1);
    else if (l)
        return dlock_rlock_fail(l, rc, "not a Redlock");
    if (rc != 0)
        return rc;
    rc = dlock__hold_token(l, who, out);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "\"%.64s\" is not held by this owner through "
                                "this handle", l->name);
    return 0;
}

int dlock_redlock_token(dlock_rlock *l, int64_t *out)
{
    return token(l, DLOCK__OWNER_SELF, NULL, out);
}

int dlock_redlock_token_as(dlock_rlock *l, int64_t *out, const char *owner)
{
    return token(l, DLOCK__OWNER_GIVEN, owner, out);
}
