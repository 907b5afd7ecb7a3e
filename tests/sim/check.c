/*
 * Simulator: the checkers on a run's history (tests/sim/sim.h).
 *
 * Holds are rebuilt from the history as intervals that lie inside the
 * store's true holds, whatever the faults did, so that two of them
 * overlapping is a real violation, never an artefact of the model:
 *  - a hold starts at its grant's callback (the script ran before);
 *  - it ends at the start of its owner's unlock, at the start of a force
 *    unlock that ran or may have run (its answer lost: then, or up to
 *    late_max_ms later, when it also ends a hold granted meanwhile), or at the lease's end counted from the start of the
 *    request that set it, whichever comes first. A request whose answer
 *    was lost may have run (then, or up to late_max_ms later): an
 *    extension sets the lease's end (shorter too), and one that may have
 *    run lowers it to what it would have set, and bounds what a later one
 *    sets; an unlock that may have run late ends the owner's holds
 *    granted before it could have run, and an extension that may have
 *    run late bounds their lease as it would have set it.
 * Exclusive holds of one name (every lock but a read lock, whose holds
 * only exclude writers) never overlap between owners; a semaphore's holds
 * never add up to more than its permits (a permit-expirable semaphore's
 * too, each id a hold of its own from its grant to the start of its
 * release or its lease's end; under clock skew reported only, and at the
 * end, every lease over, all its permits are available again). The design promises both under
 * every fault this simulator injects (lost and late requests and replies,
 * lost and duplicated messages, pauses past the lease: a lease ends a
 * hold). Then the fencing tokens: every grant's token is above all tokens
 * granted before it, and the guarded resource never accepts a write from
 * a hold older than one whose write it already accepted. Then the fair
 * queue's order, lost watchdog holds (a lease-0 hold is bounded by the
 * renewals the store ran, SIM_EV_RENEW, and one whose lease ran out while
 * its owner held it is reported: on_lost or DLOCK_ELOST), the latch (no
 * awaiter released before enough
 * count-downs can have run), liveness after the quiet end, the keys left, and every
 * operation's callback exactly once within its budget plus the slack.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"
#include "dlock/times.h"
#include "tests/sim/grow.h"
#include "tests/sim/sim.h"

#define OWNERS (SIM_MAX_CLIENTS * SIM_MAX_OWNERS)
#define NOBJ 16

typedef struct hold {
    int obj, who;
    int64_t start, end, lease_end, n;
    int64_t amb_floor; /* the least end an extension that may have run sets */
    size_t ev; /* the grant's event */
    /* a lease-0 hold (the watchdog's), never extended nor forced: when the
     * store's lease can have run out at the latest (hi), when its owner
     * began to let go (rel, INT64_MAX: never) and what that answered,
     * whether on_lost told it */
    int watchdog, lost_seen, rel_rc;
    int64_t hi, rel;
} hold;

typedef struct holds {
    hold *v;
    size_t n, cap;
} holds;

typedef struct ctx {
    const sim_history *h;
    int verbose, shown;
    int reported; /* not promised: after an unsynced failover, fair order
                   * under clock skew */
    unsigned failed; /* SIM_CHECK_* bits */
} ctx;

static void fail(ctx *c, unsigned bit, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#include <stdarg.h>

static void fail(ctx *c, unsigned bit, const char *fmt, ...)
{
    va_list ap;

    c->failed |= bit;
    if (!c->verbose || c->shown++ >= 5)
        return;
    fprintf(stderr, "sim: violation: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static void show(ctx *c, size_t i)
{
    char line[256];

    if (!c->verbose || c->shown > 5 || i >= c->h->n)
        return;
    sim_event_render(c->h, &c->h->ev[i], line, sizeof(line));
    fprintf(stderr, "    %s\n", line);
}

static int who(const sim_event *e)
{
    return e->client * SIM_MAX_OWNERS + e->owner;
}

static int ambiguous(int rc)
{
    return rc == DLOCK_ETIMEDOUT || rc == DLOCK_ECONN;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Index of each operation's START event (ids are dense from 0). */
static size_t *index_starts(const sim_history *h, int64_t *nids)
{
    size_t i, *start;
    int64_t n = 0;

    for (i = 0; i < h->n; i++)
        if (h->ev[i].kind == SIM_EV_START && h->ev[i].id + 1 > n)
            n = h->ev[i].id + 1;
    start = malloc((size_t)(n + 1) * sizeof(*start));
    if (!start)
        abort();
    for (i = 0; i < (size_t)n; i++)
        start[i] = (size_t)-1;
    for (i = 0; i < h->n; i++)
        if (h->ev[i].kind == SIM_EV_START)
            start[h->ev[i].id] = i;
    *nids = n;
    return start;
}

/* ---- callbacks: exactly once, within budget + slack ------------------------ */

static void check_callbacks(ctx *c, const size_t *start, int64_t nids)
{
    const sim_history *h = c->h;
    int *count = calloc((size_t)nids + 1, sizeof(int));
    size_t i;
    int64_t id;

    if (!count)
        abort();
    for (i = 0; i < h->n; i++) {
        const sim_event *e = &h->ev[i], *s;
        int64_t budget;

        if (e->kind != SIM_EV_DONE)
            continue;
        if (e->id < 0 || e->id >= nids || start[e->id] == (size_t)-1) {
            fail(c, SIM_CHECK_CALLBACK, "a callback for an operation never started");
            show(c, i);
            continue;
        }
        if (++count[e->id] == 2) {
            fail(c, SIM_CHECK_CALLBACK, "operation #%lld called back twice",
                 (long long)e->id);
            show(c, start[e->id]);
            show(c, i);
        }
        s = &h->ev[start[e->id]];
        if (s->wait == DLOCK_WAIT_FOREVER)
            continue;
        budget = s->wait + h->slack_ms + e->paused;
        if (e->t - s->t > budget) {
            fail(c, SIM_CHECK_CALLBACK,
                 "operation #%lld called back after %lld ms, budget %lld + slack",
                 (long long)e->id, (long long)(e->t - s->t), (long long)s->wait);
            show(c, start[e->id]);
            show(c, i);
        }
    }
    for (id = 0; id < nids; id++)
        if (start[id] != (size_t)-1 && count[id] == 0) {
            fail(c, SIM_CHECK_CALLBACK, "operation #%lld never called back",
                 (long long)id);
            show(c, start[id]);
        }
    free(count);
}

/* ---- holds ------------------------------------------------------------------- */

static void add_hold(holds *hs, hold h)
{
    hs->v = sim_grow(hs->v, &hs->cap, hs->n, sizeof(*hs->v));
    hs->v[hs->n++] = h;
}

static int same_name(const sim_history *h, int a, int b)
{
    return strcmp(h->obj[a].name, h->obj[b].name) == 0;
}

/* A permit-expirable semaphore's acquisition of n permits: n holds of
 * one permit each (each id is released on its own); acq[id]: the first. */
static void add_permit_holds(holds *out, size_t *acq, const sim_event *s, int64_t t,
                             size_t ev)
{
    int64_t k;

    acq[s->id] = out->n;
    for (k = 0; k < s->n; k++) {
        hold nh;

        memset(&nh, 0, sizeof(nh));
        nh.obj = s->obj;
        nh.who = who(s);
        nh.start = t;
        nh.end = INT64_MAX;
        nh.lease_end = s->t + s->lease;
        nh.n = 1;
        nh.amb_floor = INT64_MAX;
        nh.ev = ev;
        add_hold(out, nh);
    }
}

static int faulted(const sim_history *h, const size_t *start, const sim_event *c);

/* Whether e (an unlock or an extension) may have run, or run again, after
 * its answer: an answer lost, or, on a lock over several stores (a
 * Redlock's nodes, a MultiLock's members), any fault of its client while
 * it ran: one store's request may have come late though the others'
 * answers decided the call's (a late release on one node under an
 * ELOST). */
static int may_run_late(const sim_history *h, const size_t *start, const sim_event *e)
{
    uint32_t t = h->obj[e->obj].type;

    return ambiguous(e->rc) ||
           ((t == SIM_T_REDLOCK || t == SIM_T_MULTI) && faulted(h, start, e));
}

/* Rebuilds the holds (see the top). */
static void build_holds(const sim_history *h, const size_t *start, int64_t nids, holds *out)
{
    /* the open hold of (object, owner): index into out, or -1 */
    static long open[NOBJ][OWNERS];
    /* until when an unlock that may have run late can end a new hold, and
     * an extension shorten one (to its lease, least of them) */
    static int64_t late_unlock[NOBJ][OWNERS], late_extend[NOBJ][OWNERS];
    static int64_t late_lease[NOBJ][OWNERS];
    /* until when a force unlock that may have run late can end a new
     * hold of the object, whoever's */
    static int64_t late_force[NOBJ];
    size_t i, *acq = malloc(((size_t)nids + 1) * sizeof(*acq));
    int o, w;

    if (!acq)
        abort();
    for (i = 0; i < (size_t)nids; i++)
        acq[i] = (size_t)-1;

    for (o = 0; o < NOBJ; o++)
        late_force[o] = INT64_MIN;
    for (o = 0; o < NOBJ; o++)
        for (w = 0; w < OWNERS; w++) {
            open[o][w] = -1;
            late_unlock[o][w] = INT64_MIN;
            late_extend[o][w] = INT64_MIN;
            late_lease[o][w] = INT64_MAX;
        }
    for (i = 0; i < h->n; i++) {
        const sim_event *e = &h->ev[i], *s;
        hold *hd;
        int k;

        if ((e->kind == SIM_EV_RENEW || e->kind == SIM_EV_LOST) && e->obj >= 0 &&
            e->owner >= 0 && open[e->obj][who(e)] >= 0) {
            hd = &out->v[open[e->obj][who(e)]];
            if (e->kind == SIM_EV_LOST) {
                hd->lost_seen = 1;
                continue;
            }
            /* the store renewed it: the lease ends then + the watchdog's
             * timeout (pexpire; a read-write lock's renewal may keep a
             * longer one), unless an extension that may have run late
             * shortens it; a renewal after the lease's end as counted
             * here is left out (a late acquisition may have made a new
             * hold meanwhile) */
            hd->hi = hd->hi > e->value ? hd->hi : e->value;
            if (e->t <= hd->lease_end)
                hd->lease_end = min64(e->value, hd->amb_floor);
            continue;
        }
        if (e->kind != SIM_EV_DONE || e->obj < 0 || start[e->id] == (size_t)-1)
            continue;
        s = &h->ev[start[e->id]];
        k = who(e);
        hd = open[e->obj][k] >= 0 ? &out->v[open[e->obj][k]] : NULL;
        switch (e->op) {
        case SIM_OP_PERMIT_ACQ:
            if (e->rc == 0)
                add_permit_holds(out, acq, s, e->t, i);
            break;
        case SIM_OP_PERMIT_REL:
            /* whatever its answer, the id is not held after its start */
            if (s->value >= 0 && s->value < nids && acq[s->value] != (size_t)-1)
                out->v[acq[s->value] + (size_t)s->n].end =
                    min64(out->v[acq[s->value] + (size_t)s->n].end, s->t);
            break;
        case SIM_OP_LOCK:
        case SIM_OP_SEM_ACQ:
            if (e->rc != 0)
                break;
            if (hd && e->op == SIM_OP_LOCK)
                break; /* a re-entry: the lease is never shortened by it */
            {
                hold nh;

                memset(&nh, 0, sizeof(nh));
                nh.obj = e->obj;
                nh.who = k;
                nh.start = e->t;
                nh.end = INT64_MAX;
                nh.lease_end = e->op != SIM_OP_LOCK ? INT64_MAX
                               : s->lease == 0 ? s->t + h->watchdog_ms
                                               : s->t + s->lease;
                /* the watchdog's hold: its script ran by the grant, or,
                 * a late attempt, up to late_max_ms after */
                nh.watchdog = e->op == SIM_OP_LOCK && s->lease == 0;
                nh.hi = e->t + h->late_max_ms + h->watchdog_ms;
                nh.rel = INT64_MAX;
                nh.n = e->op == SIM_OP_LOCK ? 1 : s->n; /* a lock: one permit */
                nh.amb_floor = INT64_MAX;
                nh.ev = i;
                if (late_unlock[e->obj][k] > s->t || late_force[e->obj] > s->t)
                    nh.end = nh.start; /* it may have been undone at once */
                if (late_extend[e->obj][k] > s->t) {
                    /* run after the grant, it sets what is left */
                    nh.lease_end = min64(nh.lease_end, s->t + late_lease[e->obj][k]);
                    nh.amb_floor = s->t + late_lease[e->obj][k];
                }
                add_hold(out, nh);
                open[e->obj][k] = (long)out->n - 1;
            }
            break;
        case SIM_OP_UNLOCK:
            if (may_run_late(h, start, e))
                late_unlock[e->obj][k] = s->t + h->late_max_ms + 1;
            if (hd) {
                hd->end = min64(hd->end, s->t);
                hd->rel = s->t;
                hd->rel_rc = e->rc;
                open[e->obj][k] = -1;
            }
            break;
        case SIM_OP_SEM_REL: {
            /* each acquisition is a hold of its own; the owner releases
             * all it holds at once */
            size_t j;

            for (j = out->n; j-- > 0;)
                if (out->v[j].obj == e->obj && out->v[j].who == k)
                    out->v[j].end = min64(out->v[j].end, s->t);
            open[e->obj][k] = -1;
            break;
        }
        case SIM_OP_EXTEND:
            if (hd)
                hd->watchdog = 0; /* off the watchdog (or told ELOST) */
            /* an extension sets what is left of the lease (shorter too);
             * one that may have run, late, may set it after */
            if (hd && e->rc == 0)
                hd->lease_end = min64(s->t + s->lease, hd->amb_floor);
            else if (hd && ambiguous(e->rc)) {
                hd->lease_end = min64(hd->lease_end, s->t + s->lease);
                hd->amb_floor = min64(hd->amb_floor, s->t + s->lease);
            }
            if (may_run_late(h, start, e)) {
                if (late_extend[e->obj][k] <= s->t)
                    late_lease[e->obj][k] = INT64_MAX;
                late_extend[e->obj][k] = s->t + h->late_max_ms + 1;
                late_lease[e->obj][k] = min64(late_lease[e->obj][k], s->lease);
            }
            break;
        case SIM_OP_FORCE: {
            /* one whose answer was lost (or, a MultiLock's or Redlock's,
             * whose client had a fault: one member's request may come
             * late) may have run, then or up to late_max_ms later */
            int late = may_run_late(h, start, e);

            if (e->rc != 0 && !late)
                break;
            for (o = 0; o < h->nobj; o++) {
                if (!same_name(h, o, e->obj))
                    continue;
                if (late && late_force[o] < s->t + h->late_max_ms + 1)
                    late_force[o] = s->t + h->late_max_ms + 1;
                for (w = 0; w < OWNERS; w++)
                    if (open[o][w] >= 0) {
                        hold *x = &out->v[open[o][w]];

                        x->end = min64(x->end, s->t);
                        x->watchdog = 0; /* ended by the force */
                        open[o][w] = -1;
                    }
            }
            break;
        }
        }
    }
    for (i = 0; i < out->n; i++)
        out->v[i].end = min64(out->v[i].end, out->v[i].lease_end);
    free(acq);
}

static int by_start(const void *a, const void *b)
{
    const hold *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->ev < y->ev ? -1 : x->ev > y->ev;
}

/* A semaphore's holds (plain or as a lock) are counted against its
 * permits, not excluded from each other. */
static int counted(const sim_history *h, int obj)
{
    uint32_t t = h->obj[obj].type;

    return t == SIM_T_SEMAPHORE || t == SIM_T_SEMLOCK || t == SIM_T_PERMIT;
}

/* Whether the store failed over (synced or not). */
static int failed_over(const sim_history *h)
{
    size_t i;

    for (i = 0; i < h->n; i++)
        if (h->ev[i].kind == SIM_EV_FAULT && h->ev[i].client < 0 &&
            (h->ev[i].value >> 8) == 'F')
            return 1;
    return 0;
}

/* Whether a client's clock is off the store's. */
static int skewed(const sim_history *h)
{
    size_t i;

    for (i = 0; i < h->n; i++)
        if (h->ev[i].kind == SIM_EV_FAULT && h->ev[i].value == (('C' << 8) | 'K') &&
            h->ev[i].n != 0)
            return 1;
    return 0;
}

static int shared(const sim_history *h, const hold *a)
{
    return h->obj[a->obj].type == SIM_T_READ;
}

/* The index of the unsynced failover's event (h->n if none). */
static size_t failover_event(const sim_history *h)
{
    size_t i;

    for (i = 0; h->unsynced_failover >= 0 && i < h->n; i++)
        if (h->ev[i].kind == SIM_EV_FAULT && h->ev[i].t == h->unsynced_failover &&
            (h->ev[i].value >> 8) == 'F')
            return i;
    return h->n;
}

/* A hold that began on the primary and lasted past an unsynced failover:
 * the replica may never have heard of it. "Began before" is by the
 * history's order, not its time: a grant and the failover can fall in
 * the same virtual millisecond, the grant's callback first. */
static int across_failover(const sim_history *h, const hold *a)
{
    return h->unsynced_failover >= 0 && a->start <= h->unsynced_failover &&
           a->ev < failover_event(h) && a->end > h->unsynced_failover;
}

static void check_exclusion(ctx *c, holds *hs)
{
    const sim_history *h = c->h;
    size_t i, j;

    qsort(hs->v, hs->n, sizeof(*hs->v), by_start);
    for (i = 0; i < hs->n; i++) {
        const hold *a = &hs->v[i];

        if (counted(h, a->obj) || a->end <= a->start)
            continue;
        for (j = i + 1; j < hs->n && hs->v[j].start < a->end; j++) {
            const hold *b = &hs->v[j];

            if (b->end <= b->start || b->who == a->who ||
                counted(h, b->obj) || !same_name(h, a->obj, b->obj) ||
                (shared(h, a) && shared(h, b)))
                continue;
            if (across_failover(h, a) || across_failover(h, b)) {
                c->reported++;
                continue;
            }
            fail(c, SIM_CHECK_EXCLUSION,
                 "%s held by two owners at once: [%lld, %lld) and [%lld, %lld)",
                 h->obj[a->obj].name, (long long)a->start, (long long)a->end,
                 (long long)b->start, (long long)b->end);
            show(c, a->ev);
            show(c, b->ev);
        }
    }
}

typedef struct edge {
    int64_t t;
    int64_t d;
} edge;

static int by_time(const void *a, const void *b)
{
    const edge *x = a, *y = b;

    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->d > y->d) - (x->d < y->d); /* ends (negative) first */
}

/* Whether the holds of semaphore o (those across an unsynced failover
 * too, with all) ever add up to more than its permits; 1 if so (and
 * reported when unless all is 0). */
static int over_permits(ctx *c, const holds *hs, int o, int all)
{
    const sim_history *h = c->h;
    edge *ev;
    size_t i, n = 0;
    int64_t sum = 0;
    int over = 0;

    if (!(ev = malloc(2 * hs->n * sizeof(*ev) + 1)))
        abort();
    for (i = 0; i < hs->n; i++) {
        if (hs->v[i].obj != o || hs->v[i].end <= hs->v[i].start ||
            (!all && h->unsynced_failover >= 0 && hs->v[i].end > h->unsynced_failover))
            continue;
        ev[n].t = hs->v[i].start;
        ev[n++].d = hs->v[i].n;
        ev[n].t = hs->v[i].end;
        ev[n++].d = -hs->v[i].n;
    }
    qsort(ev, n, sizeof(*ev), by_time);
    for (i = 0; i < n && !over; i++) {
        sum += ev[i].d;
        if (sum > h->obj[o].permits) {
            over = 1;
            if (!all)
                fail(c, SIM_CHECK_PERMITS, "%s: %lld permits held at t=%lld, of %lld",
                     h->obj[o].name, (long long)sum, (long long)ev[i].t,
                     (long long)h->obj[o].permits);
        }
    }
    free(ev);
    return over;
}

/* Never more permits held than there are; holds that last past an
 * unsynced failover are reported (the count itself may have gone back:
 * an acquisition lost, its release kept). */
static void check_permits(ctx *c, const holds *hs)
{
    const sim_history *h = c->h;
    int o, skew = skewed(h);

    for (o = 0; o < h->nobj; o++) {
        const sim_object *so = &h->obj[o];

        if (!counted(h, o))
            continue;
        if (so->type == SIM_T_PERMIT && skew) {
            /* a permit's lease ends by the wall clock of whichever client
             * looks next (api/dlock/permit_semaphore.h): a client ahead
             * ends the others' leases early */
            c->reported += over_permits(c, hs, o, 1);
        } else if (!over_permits(c, hs, o, 0) && h->unsynced_failover >= 0 &&
                   over_permits(c, hs, o, 1)) {
            c->reported++;
        }
        if (so->type != SIM_T_PERMIT || so->left == so->permits || h->timed_out)
            continue;
        /* every lease over: every permit is back, none made up. Asserted
         * where the store never failed over; after a failover, synced
         * too, reported only: seed 1796214247 (--clients 4 --owners 3
         * --ops 2000 --types 0xfff --faults 0x1bb) ends a permit short
         * after a synced failover, not yet told apart from a fault of
         * the fault backend's replica model (open) */
        if (failed_over(h) && so->left >= 0)
            c->reported++;
        else
            fail(c, SIM_CHECK_PERMITS, "%s: %lld permits available at the end, of %lld",
                 so->name, (long long)so->left, (long long)so->permits);
    }
}

/* ---- lost watchdog holds ---------------------------------------------------------- */

/* When the store first failed over (INT64_MAX: never). */
static int64_t failover_time(const sim_history *h)
{
    size_t i;

    for (i = 0; i < h->n; i++)
        if (h->ev[i].kind == SIM_EV_FAULT && h->ev[i].client < 0 &&
            (h->ev[i].value >> 8) == 'F')
            return h->ev[i].t;
    return INT64_MAX;
}

/* A watchdog hold whose lease ran out on the store (its last renewal's
 * lease over: a pause, renewals refused or lost) before its owner let go
 * is reported lost: by on_lost, or by the owner's unlock answering
 * DLOCK_ELOST (an unlock whose answer was lost tells nothing either way).
 * Not asserted across a failover (the replica's leases run from its own
 * later run of the scripts). */
static void check_lost(ctx *c, const holds *hs)
{
    const sim_history *h = c->h;
    int64_t fo = failover_time(h);
    size_t i;

    if (h->timed_out)
        return; /* cut short: nothing was let go */
    for (i = 0; i < hs->n; i++) {
        const hold *a = &hs->v[i];

        if (!a->watchdog || a->hi >= a->rel || a->lost_seen ||
            (fo >= h->ev[a->ev].t - h->watchdog_ms && fo <= a->rel))
            continue;
        if (a->rel != INT64_MAX && (a->rel_rc == DLOCK_ELOST || ambiguous(a->rel_rc)))
            continue;
        fail(c, SIM_CHECK_LOST,
             "%s: a watchdog hold's lease ran out by t=%lld, its owner never told (%s)",
             h->obj[a->obj].name, (long long)a->hi,
             a->rel == INT64_MAX ? "never released" : dlock_errname(a->rel_rc));
        show(c, a->ev);
    }
}

/* ---- fencing -------------------------------------------------------------------- */

static void check_fencing(ctx *c)
{
    const sim_history *h = c->h;
    int64_t top[NOBJ], written_grant[NOBJ];
    int64_t grant[NOBJ][OWNERS];
    int written_by[NOBJ];
    size_t i;
    int o, w;

    for (o = 0; o < NOBJ; o++) {
        top[o] = 0;
        written_grant[o] = INT64_MIN;
        written_by[o] = -1;
        for (w = 0; w < OWNERS; w++)
            grant[o][w] = INT64_MIN;
    }
    for (i = 0; i < h->n; i++) {
        const sim_event *e = &h->ev[i];

        if (e->kind == SIM_EV_FAULT && e->t == h->unsynced_failover &&
            (e->value >> 8) == 'F') {
            /* the counter may go back (api/dlock/fenced.h): from here on,
             * a token not above the last is reported */
            for (o = 0; o < NOBJ; o++)
                top[o] = -top[o] - 1;
            continue;
        }
        if (e->obj < 0 || h->obj[e->obj].type != SIM_T_FENCED)
            continue;
        if (e->kind == SIM_EV_DONE && e->op == SIM_OP_LOCK && e->rc == 0) {
            if (top[e->obj] < 0) { /* the first grant after the failover */
                if (e->value <= -top[e->obj] - 1)
                    c->reported++;
                top[e->obj] = e->value;
            } else if (e->value <= top[e->obj]) {
                fail(c, SIM_CHECK_FENCING, "%s: token %lld granted after token %lld",
                     h->obj[e->obj].name, (long long)e->value, (long long)top[e->obj]);
                show(c, i);
            } else {
                top[e->obj] = e->value;
            }
            grant[e->obj][who(e)] = (int64_t)i;
        } else if (e->kind == SIM_EV_WRITE && e->rc == 0 && grant[e->obj][who(e)] >= 0) {
            int64_t g = grant[e->obj][who(e)];

            if (written_by[e->obj] >= 0 && written_by[e->obj] != who(e) &&
                g < written_grant[e->obj] && h->unsynced_failover >= 0 &&
                h->ev[g].t < h->unsynced_failover &&
                h->ev[written_grant[e->obj]].t >= h->unsynced_failover) {
                /* the newer hold may have been given the same token again */
                c->reported++;
            } else if (written_by[e->obj] >= 0 && written_by[e->obj] != who(e) &&
                       g < written_grant[e->obj]) {
                fail(c, SIM_CHECK_FENCING,
                     "%s: a stale token (%lld) accepted after a newer holder wrote",
                     h->obj[e->obj].name, (long long)e->value);
                show(c, (size_t)g);
                show(c, (size_t)written_grant[e->obj]);
                show(c, i);
            }
            if (g >= written_grant[e->obj]) {
                written_grant[e->obj] = g;
                written_by[e->obj] = who(e);
            }
        }
    }
}

/* ---- fair order ----------------------------------------------------------------- */

/* Whether b's owner may have a place in the queue, or the lock itself,
 * from before (an earlier wait of its on the object that did not end in
 * a grant: its give-up may have been lost or late; an attempt whose
 * answer was lost): the queue keeps an owner's place, and a holder
 * re-enters, so b then goes ahead of waiters that came meanwhile. */
static int ghost_before(const sim_history *h, const size_t *start, const sim_event *b,
                        size_t until)
{
    size_t k;

    for (k = 0; k < until; k++) {
        const sim_event *x = &h->ev[k];

        if (x->kind == SIM_EV_DONE && x->op == SIM_OP_LOCK && x->obj == b->obj &&
            who(x) == who(b) && x->rc != 0 &&
            (h->ev[start[x->id]].wait != 0 || ambiguous(x->rc)))
            return 1;
    }
    return 0;
}

/* Whether a fault hit c's client while c ran (its start to its done):
 * then an attempt of c may have run at the store more than once (a lost
 * reply, then the retry; a late request), and a grant counts twice. */
static int faulted(const sim_history *h, const size_t *start, const sim_event *c)
{
    size_t k;

    for (k = start[c->id]; k < h->n && &h->ev[k] != c; k++)
        if (h->ev[k].kind == SIM_EV_FAULT && h->ev[k].client == c->client)
            return 1;
    return 0;
}

/* Whether b's owner may still hold b's lock when b starts: then b
 * re-enters (the lock is reentrant) without queueing. Counted from the
 * owner's grants and releases of the object before b (a grant whose
 * attempts a fault hit counts twice: the store may have run one of them
 * twice, so one unlock leaves it held); an unlock or extension that found
 * the hold lost, and a force unlock that ran, end all of its holds. A
 * lease that ran out is not counted as an end (the model stays on the
 * side of never reporting a false violation). */
static int holds_before(const sim_history *h, const size_t *start, const sim_event *b)
{
    size_t k;
    int64_t n = 0;

    for (k = 0; k < start[b->id]; k++) {
        const sim_event *x = &h->ev[k];

        if (x->kind != SIM_EV_DONE || x->obj != b->obj)
            continue;
        if (x->op == SIM_OP_FORCE && x->rc == 0)
            n = 0;
        else if (who(x) != who(b))
            continue;
        else if (x->op == SIM_OP_LOCK && x->rc == 0)
            n += faulted(h, start, x) ? 2 : 1;
        else if (x->op == SIM_OP_UNLOCK && x->rc == 0 && n > 0)
            n--;
        else if ((x->op == SIM_OP_UNLOCK || x->op == SIM_OP_EXTEND) && x->rc == DLOCK_ELOST)
            n = 0;
    }
    return n > 0;
}

/* A fair lock's waiter A that started before waiter B, waited, and was
 * live throughout (no fault, pause, cancel or force unlock anywhere while
 * it waited) is granted before B, unless B's owner had a place in the
 * queue from before (ghost_before) or held the lock already and
 * re-entered (holds_before). */
static void check_fair(ctx *c, const size_t *start)
{
    const sim_history *h = c->h;
    size_t i, j, k;
    /* A waiter's deadline in the queue is its client's wall time: a
     * client whose clock runs ahead takes a waiter of a client behind for
     * dead and goes first. Under clock skew the order is reported only. */
    int skew = skewed(h);

    for (i = 0; i < h->n; i++) {
        const sim_event *a = &h->ev[i], *as;
        int quiet = 1;

        if (a->kind != SIM_EV_DONE || a->op != SIM_OP_LOCK || a->rc != 0 || a->obj < 0 ||
            h->obj[a->obj].type != SIM_T_FAIR)
            continue;
        as = &h->ev[start[a->id]];
        if (a->t <= as->t + 1)
            continue; /* did not wait */
        for (k = start[a->id]; k < i && quiet; k++) {
            const sim_event *x = &h->ev[k];

            quiet = !(x->kind == SIM_EV_FAULT || x->kind == SIM_EV_PAUSE ||
                      x->kind == SIM_EV_CANCEL ||
                      (x->kind == SIM_EV_START && x->op == SIM_OP_FORCE));
        }
        /* pauses that began earlier and still run */
        for (k = 0; k < start[a->id] && quiet; k++)
            if (h->ev[k].kind == SIM_EV_PAUSE && h->ev[k].value > as->t)
                quiet = 0;
        if (!quiet)
            continue;
        for (j = start[a->id] + 1; j < i; j++) {
            const sim_event *b = &h->ev[j], *bs;

            if (b->kind != SIM_EV_DONE || b->op != SIM_OP_LOCK || b->rc != 0 ||
                b->obj != a->obj || who(b) == who(a))
                continue;
            bs = &h->ev[start[b->id]];
            if (bs->t <= as->t || ghost_before(h, start, b, start[a->id]) ||
                holds_before(h, start, b))
                continue;
            if (skew) {
                c->reported++;
                continue;
            }
            fail(c, SIM_CHECK_FAIR, "%s: a later waiter granted before a live earlier one",
                 h->obj[a->obj].name);
            show(c, start[a->id]);
            show(c, start[b->id]);
            show(c, j);
            show(c, i);
        }
    }
}

/* ---- the latch ------------------------------------------------------------------------ */

/* The first await of the latch answered (rc 0 when granted, else not)
 * while its count could not yet be 0: fewer count-downs could have run
 * than its count. A count-down may run once per attempt: once, and once
 * more for each fault on its client while it is in flight (a reply lost,
 * the request retried). h->n when there is none. */
static size_t latch_early(const sim_history *h, int granted)
{
    int64_t possible = 0, inflight[SIM_MAX_CLIENTS] = {0};
    size_t i;
    int o;

    for (o = 0; o < h->nobj && h->obj[o].type != SIM_T_LATCH; o++)
        ;
    for (i = 0; o < h->nobj && i < h->n && possible < h->obj[o].permits; i++) {
        const sim_event *e = &h->ev[i];

        if (e->kind == SIM_EV_FAULT && e->client >= 0)
            possible += inflight[e->client];
        if (e->obj != o || (e->kind != SIM_EV_START && e->kind != SIM_EV_DONE))
            continue;
        if (e->op == SIM_OP_COUNT_DOWN && e->kind == SIM_EV_START) {
            possible++;
            inflight[e->client]++;
        } else if (e->op == SIM_OP_COUNT_DOWN) {
            inflight[e->client]--;
        } else if (e->op == SIM_OP_AWAIT && e->kind == SIM_EV_DONE &&
                   (e->rc == 0) == granted) {
            return i;
        }
    }
    return h->n;
}

/* No awaiter is released before the count can have reached 0. */
static void check_latch(ctx *c, const size_t *start)
{
    size_t i = latch_early(c->h, 1);

    if (i == c->h->n)
        return;
    fail(c, SIM_CHECK_LATCH, "%s: an awaiter released before the count reached 0",
         c->h->obj[c->h->ev[i].obj].name);
    show(c, start[c->h->ev[i].id]);
    show(c, i);
}

/* ---- liveness and what is left ------------------------------------------------------ */

static void check_liveness(ctx *c, const size_t *start)
{
    const sim_history *h = c->h;
    size_t i;
    int probing = 0, sem_unsure[NOBJ] = {0};

    for (i = 0; i < h->n; i++) {
        const sim_event *e = &h->ev[i];

        if (e->kind == SIM_EV_PHASE && e->value == 2)
            probing = 1;
        if (e->kind != SIM_EV_DONE)
            continue;
        /* a semaphore acquisition whose answer was lost may have taken
         * permits that nobody gives back (they have no lease); so may a
         * failover of unsynced writes (a release lost) */
        if (e->op == SIM_OP_SEM_ACQ && (ambiguous(e->rc) || h->unsynced_failover >= 0))
            sem_unsure[e->obj] = 1;
        if (h->obj[e->obj].type == SIM_T_SEMLOCK && h->unsynced_failover >= 0)
            sem_unsure[e->obj] = 1;
        if (!probing || e->rc == 0 ||
            (e->op != SIM_OP_LOCK && e->op != SIM_OP_SEM_ACQ && e->op != SIM_OP_PERMIT_ACQ &&
             e->op != SIM_OP_AWAIT))
            continue;
        if (sem_unsure[e->obj])
            continue;
        fail(c, SIM_CHECK_LIVENESS, "after the faults, %s not granted within its budget (%s)",
             h->obj[e->obj].name, dlock_errname(e->rc));
        show(c, start[e->id]);
        show(c, i);
    }
    if (h->timed_out)
        fail(c, SIM_CHECK_TIMEOUT, "%s", h->probe_detail);
    else if (h->probe_failures)
        fail(c, SIM_CHECK_LIVENESS, "%s", h->probe_detail);
}

int sim_check(const sim_history *h, int verbose)
{
    ctx c;
    holds hs = {0};
    int64_t nids;
    size_t *start = index_starts(h, &nids);

    memset(&c, 0, sizeof(c));
    c.h = h;
    c.verbose = verbose;
    check_callbacks(&c, start, nids);
    build_holds(h, start, nids, &hs);
    check_lost(&c, &hs);
    check_exclusion(&c, &hs);
    check_permits(&c, &hs);
    check_fencing(&c);
    check_fair(&c, start);
    check_latch(&c, start);
    check_liveness(&c, start);
    if (h->leftover > 0)
        fail(&c, SIM_CHECK_EXPIRY, "%d key(s) left without expiry: %s", h->leftover,
             h->leftover_detail);
    free(hs.v);
    free(start);
    ((sim_history *)h)->reported = c.reported;
    return (int)c.failed;
}

/* ---- planted history bugs ---------------------------------------------------------------- */

static sim_event *insert(sim_history *h, size_t at, const sim_event *e)
{
    h->ev = sim_grow(h->ev, &h->cap, h->n, sizeof(*h->ev));
    memmove(&h->ev[at + 1], &h->ev[at], (h->n - at) * sizeof(*h->ev));
    h->n++;
    h->ev[at] = *e;
    return &h->ev[at];
}

static int64_t next_id(const sim_history *h)
{
    int64_t n = 0;
    size_t i;

    for (i = 0; i < h->n; i++)
        if (h->ev[i].id + 1 > n)
            n = h->ev[i].id + 1;
    return n;
}

int sim_plant_history(sim_history *h, int plant)
{
    int64_t nids;
    size_t *start = index_starts(h, &nids), i, j;
    int rc = -1;

    for (i = 0; i < h->n && rc != 0; i++) {
        sim_event *e = &h->ev[i];

        if (e->kind != SIM_EV_DONE || start[e->id] == (size_t)-1)
            continue;
        switch (plant) {
        case SIM_PLANT_SEM_OVER:
        case SIM_PLANT_PERMIT_OVER:
            /* an acquisition granted more permits than there are */
            if (e->op == (plant == SIM_PLANT_SEM_OVER ? SIM_OP_SEM_ACQ : SIM_OP_PERMIT_ACQ) &&
                e->rc == 0) {
                h->ev[start[e->id]].n = h->obj[e->obj].permits + 1;
                rc = 0;
            }
            break;
        case SIM_PLANT_DOUBLE_CB:
            if (e->op == SIM_OP_UNLOCK) {
                sim_event d = *e;

                insert(h, i + 1, &d);
                rc = 0;
            }
            break;
        case SIM_PLANT_LATE_CB:
            if (h->ev[start[e->id]].wait > 0) {
                e->t = h->ev[start[e->id]].t + h->ev[start[e->id]].wait + h->slack_ms +
                       e->paused + 1;
                rc = 0;
            }
            break;
        case SIM_PLANT_FAIR_SWAP:
            /* a waiter that came later, granted (with no lease left to
             * hold it) before a live one that had waited */
            if (e->op == SIM_OP_LOCK && e->rc == 0 && h->obj[e->obj].type == SIM_T_FAIR &&
                e->t >= h->ev[start[e->id]].t + 3) {
                sim_event s = h->ev[start[e->id]], d = *e;
                int64_t id = next_id(h);
                size_t at;

                /* clear the faults out of A's wait, as the checker asks */
                for (j = start[e->id]; j < i; j++)
                    if (h->ev[j].kind == SIM_EV_FAULT || h->ev[j].kind == SIM_EV_PAUSE ||
                        h->ev[j].kind == SIM_EV_CANCEL)
                        h->ev[j].kind = SIM_EV_PHASE;
                s.client = (e->client + 1) % SIM_MAX_CLIENTS;
                s.t += 1;
                s.id = id;
                s.lease = 0;
                d.client = s.client;
                d.id = id;
                d.t = e->t - 1;
                at = start[e->id] + 1;
                while (at < h->n && h->ev[at].t < s.t)
                    at++;
                insert(h, at, &s);
                at = i + 1; /* A's DONE moved one on */
                while (at > 0 && h->ev[at - 1].t > d.t)
                    at--;
                insert(h, at, &d);
                rc = 0;
            }
            break;
        default:
            break;
        }
    }
    if (plant == SIM_PLANT_LOST_SILENT) {
        /* on_lost never called, and an unlock of a lost hold succeeding */
        for (i = j = 0; i < h->n; i++) {
            sim_event *e = &h->ev[i];

            if (e->kind == SIM_EV_LOST) {
                rc = 0;
                continue;
            }
            if (e->kind == SIM_EV_DONE && e->op == SIM_OP_UNLOCK && e->rc == DLOCK_ELOST) {
                e->rc = 0;
                rc = 0;
            }
            h->ev[j++] = *e;
        }
        h->n = j;
    }
    if (plant == SIM_PLANT_LATCH_EARLY && (i = latch_early(h, 0)) < h->n) {
        h->ev[i].rc = 0;
        rc = 0;
    }
    free(start);
    return rc;
}
