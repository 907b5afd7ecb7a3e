/*
 * Simulator: one run (tests/sim/sim.h).
 *
 * Clients: each a dlock_client on its own fault backend over a mock
 * backend of the one store, with a dlock_loop in poll mode. Owners: a few
 * per client, each a sequential actor (one operation in flight) with an
 * explicit owner id, whose next step the seed chooses when its last
 * callback came. Time moves only here, from one due thing to the next, so
 * a run costs what its operations cost, whatever its virtual length.
 *
 * What keeps a run a function of its seed: one thread; the loops run with
 * no real-time slice (loop_slice_ms 0); clients get their UUIDs from the
 * run (uuid_generate_random below replaces libuuid's in this program);
 * no watchdog thread (dlock__watchdog_threadless): each client's loop
 * runs its watchdog's rounds on the virtual clock
 * (dlock__loop_drive_watchdog), so lease-0 holds are renewed, lost in a
 * pause past the watchdog's timeout, and reported lost, all in the
 * run's one thread (tests/sim/README.md); the mock
 * delivers pub/sub on the publishing call (the fault backend's delayed
 * messages come from the driver); every choice comes from the seed.
 *
 * Faults (tests/sim/fault.c): lost, late and refused calls, lost, late
 * and duplicated messages, a failover to a replica store, clock skew;
 * and, here, client pauses: no loop turn for that client, its owners'
 * steps wait.
 *
 * Phases: the workload (faults on) until cfg->ops operations started;
 * the quiet end (faults off, owners release what they hold, every late
 * script runs, the latch is counted down to 0); the liveness probe, after
 * the longest lease (each client takes and releases every object in turn,
 * awaits the latch, each with a budget of PROBE_WAIT_MS); the end (an hour
 * of virtual time, then the keys left in the store are counted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uuid/uuid.h>

#include "dlock/async.h"
#include "dlock/client.h"
#include "dlock/fenced.h"
#include "dlock/mock.h"
#include "dlock/reentrant.h"
#include "dlock/fair.h"
#include "dlock/latch.h"
#include "dlock/multilock.h"
#include "dlock/redlock.h"
#include "dlock/permit_semaphore.h"
#include "dlock/rwlock.h"
#include "dlock/semaphore.h"
#include "dlock/simple_lock.h"
#include "dlock/spin_lock.h"
#include "objects/async/loop.h"
#include "objects/runtime/watchdog.h"
#include "tests/sim/grow.h"
#include "tests/sim/queue.h"
#include "tests/sim/rng.h"
#include "tests/sim/sim.h"

#define PROBE_WAIT_MS 20000
#define LEASE_MIN_MS 200
#define LEASE_MAX_MS 3000
/* The clients' watchdog timeout: lease-0 holds are renewed every third
 * of it, on the client's loop; a pause (up to pause_max_ms) longer than
 * it loses them. */
#define WATCHDOG_MS 1500
#define MAX_OBJ 16
/* The stores of a MultiLock's members and of a Redlock's nodes: the
 * store (which may fail over) and NODES more (which do not). */
#define NODES 2
/* Permit ids an owner keeps at most (each acquisition takes 1 or 2). */
#define PIDS 4
/* Loop runs within one virtual millisecond past which the run is a busy
 * loop (far more than every operation of a run taking a step). */
#define SPIN_LIMIT 200000

/* ---- identities ---------------------------------------------------------- */

static sim_rng uuid_rng;

/* The clients' UUIDs, from the run's seed (libuuid's would differ between
 * two runs of one seed, and the store's hash order with them). */
void uuid_generate_random(uuid_t out)
{
    uint64_t a = sim_rng_next(&uuid_rng), b = sim_rng_next(&uuid_rng);

    memcpy(out, &a, 8);
    memcpy(out + 8, &b, 8);
    out[6] = (unsigned char)((out[6] & 0x0f) | 0x40);
    out[8] = (unsigned char)((out[8] & 0x3f) | 0x80);
}

/* ---- the run's state -------------------------------------------------------- */

enum { IT_ACT, IT_CANCEL, IT_WRITE, IT_RESUME, IT_PROBE };

typedef struct owner_st {
    char id[DLOCK_OWNER_MAX];
    int64_t op;        /* the operation in flight (-1: none) */
    dlock_op_id dop;
    int idle;          /* quiet end: nothing left to release */
    int held[MAX_OBJ];
    int watchdog[MAX_OBJ]; /* held with lease 0: the watchdog renews it */
    int64_t token[MAX_OBJ];
    int64_t permits[MAX_OBJ];
    /* permit-expirable semaphores: the ids held, and for each the
     * acquisition that took it and its place in that answer */
    char pid[MAX_OBJ][PIDS][DLOCK_PERMIT_ID_SIZE];
    int64_t pacq[MAX_OBJ][PIDS];
    int pk[MAX_OBJ][PIDS];
    int npid[MAX_OBJ];
} owner_st;

/* What a lock object's on_lost callback is told of itself. */
typedef struct lost_arg {
    struct world *w;
    int client, obj;
} lost_arg;

typedef struct client_st {
    dlock_client *c;
    lost_arg lost[MAX_OBJ];
    dlock_client *node[NODES]; /* the client's clients of the other stores */
    dlock_rlock *member[MAX_OBJ][1 + NODES]; /* a MultiLock's members */
    dlock_loop *lp;
    dlock_rlock *lk[MAX_OBJ];
    dlock_semaphore *sem[MAX_OBJ];
    dlock_permit_semaphore *pm[MAX_OBJ];
    dlock_latch *la[MAX_OBJ];
    owner_st own[SIM_MAX_OWNERS];
    int64_t paused_until, paused_total;
} client_st;

typedef struct op_st {
    int client, owner, obj, op;
    int64_t start, paused0;
    int64_t wait, lease, n;
} op_st;

typedef struct world {
    const sim_config *cfg;
    sim_history *h;
    sim_rng rng;
    dlock_vclock *vc;
    dlock_mock_store *store, *replica; /* replica: NULL without failover */
    dlock_mock_store *nodes[NODES];
    sim_faults *faults;
    int failed_over;
    client_st cl[SIM_MAX_CLIENTS];
    sim_queue q;
    op_st *ops;
    size_t nops, capops;
    int64_t started;
    int phase;
    int probe_client, probe_obj, probe_step; /* the probe's place */
    int64_t res_max[MAX_OBJ]; /* the guarded resource: highest token seen */
    int spinning;             /* settle gave up: see SPIN_LIMIT */
    double cpu0;              /* CPU seconds at the run's start */
    unsigned turns;           /* driver turns (the CPU clock is read every 1024) */
    int64_t quiet_downs;      /* the quiet end's count-downs of the latch */
} world;

static int64_t now(world *w)
{
    return dlock_vclock_now(w->vc);
}

static sim_event *record(world *w, int kind, int client, int owner, int obj)
{
    sim_history *h = w->h;
    sim_event *e;

    h->ev = sim_grow(h->ev, &h->cap, h->n, sizeof(*h->ev));
    e = &h->ev[h->n++];
    memset(e, 0, sizeof(*e));
    e->t = now(w);
    e->kind = kind;
    e->client = client;
    e->owner = owner;
    e->obj = obj;
    e->id = -1;
    return e;
}

static void log_fault(void *arg, int client, const char *what, const char *name)
{
    world *w = arg;
    sim_event *e = record(w, SIM_EV_FAULT, client, -1, -1);

    /* the fault's kind, by its first letters (the line stays short) */
    e->value = (int64_t)(((unsigned char)what[0] << 8) | (unsigned char)what[strlen(what) - 1]);
    (void)name;
}

static void schedule(world *w, int64_t due, int kind, int client, int owner, int64_t x)
{
    sim_item it = {0};

    it.due = due;
    it.kind = kind;
    it.a = client;
    it.b = owner;
    it.x = x;
    sim_queue_push(&w->q, it);
}

/* ---- operations ------------------------------------------------------------ */

static void act(world *w, int ci, int oi);

static void done(void *arg, dlock_op_id dop, const dlock_result *r);

typedef struct cb_arg {
    world *w;
    int64_t id;
} cb_arg;

static void next_step(world *w, int ci, int oi, int64_t think)
{
    schedule(w, now(w) + think, IT_ACT, ci, oi, 0);
}

/* Starts op on obj for the owner; records it. */
static int start(world *w, int ci, int oi, int obj, int op, int64_t wait, int64_t lease,
                 int64_t n)
{
    client_st *c = &w->cl[ci];
    owner_st *o = &c->own[oi];
    const sim_object *so = &w->h->obj[obj];
    int64_t id = (int64_t)w->nops;
    cb_arg *a;
    op_st *s;
    sim_event *e;
    int rc;

    w->ops = sim_grow(w->ops, &w->capops, w->nops, sizeof(*w->ops));
    s = &w->ops[w->nops++];
    s->client = ci;
    s->owner = oi;
    s->obj = obj;
    s->op = op;
    s->start = now(w);
    s->paused0 = c->paused_total;
    s->wait = wait;
    s->lease = lease;
    s->n = n;
    e = record(w, SIM_EV_START, ci, oi, obj);
    e->op = op;
    e->id = id;
    e->wait = wait;
    e->lease = lease;
    e->n = n;
    if (op == SIM_OP_PERMIT_REL) { /* n: the owner's slot of the id */
        e->value = o->pacq[obj][n];
        e->n = o->pk[obj][n];
    }
    if (!(a = malloc(sizeof(*a))))
        abort();
    a->w = w;
    a->id = id;
    switch (op) {
    case SIM_OP_LOCK:
        rc = so->type == SIM_T_FENCED
                 ? dlock_fenced_lock_async(c->lp, &o->dop, c->lk[obj], o->id, wait, lease,
                                           done, a)
                 : dlock_lock_async(c->lp, &o->dop, c->lk[obj], o->id, wait, lease, done, a);
        break;
    case SIM_OP_UNLOCK:
        rc = dlock_unlock_async(c->lp, &o->dop, c->lk[obj], o->id, done, a);
        break;
    case SIM_OP_EXTEND:
        rc = dlock_extend_async(c->lp, &o->dop, c->lk[obj], o->id, lease, done, a);
        break;
    case SIM_OP_FORCE:
        rc = dlock_force_unlock_async(c->lp, &o->dop, c->lk[obj], done, a);
        break;
    case SIM_OP_SEM_ACQ:
        rc = dlock_semaphore_acquire_async(c->lp, &o->dop, c->sem[obj], n, wait, done, a);
        break;
    case SIM_OP_SEM_REL:
        rc = dlock_semaphore_release_async(c->lp, &o->dop, c->sem[obj], n, done, a);
        break;
    case SIM_OP_PERMIT_ACQ:
        rc = dlock_permit_semaphore_acquire_async(c->lp, &o->dop, c->pm[obj], n, wait, lease,
                                                  done, a);
        break;
    case SIM_OP_PERMIT_REL:
        rc = dlock_permit_semaphore_release_async(c->lp, &o->dop, c->pm[obj], o->pid[obj][n],
                                                  done, a);
        break;
    case SIM_OP_COUNT_DOWN:
        rc = dlock_latch_count_down_async(c->lp, &o->dop, c->la[obj], done, a);
        break;
    default:
        rc = dlock_latch_await_async(c->lp, &o->dop, c->la[obj], wait, done, a);
        break;
    }
    if (rc != 0) {
        /* refused at once: its own line, and no callback will come */
        free(a);
        e = record(w, SIM_EV_DONE, ci, oi, obj);
        e->op = op;
        e->id = id;
        e->rc = rc;
        e->value = -1;
        return rc;
    }
    o->op = id;
    w->started++;
    return 0;
}

static void guarded_write(world *w, int ci, int oi, int obj)
{
    owner_st *o = &w->cl[ci].own[oi];
    sim_event *e;

    if (!o->held[obj])
        return;
    e = record(w, SIM_EV_WRITE, ci, oi, obj);
    e->value = o->token[obj];
    /* the resource keeps the highest token it saw and refuses a lower one */
    if (o->token[obj] >= w->res_max[obj]) {
        w->res_max[obj] = o->token[obj];
        e->rc = 0;
    } else {
        e->rc = 1;
    }
}

static void probe_next(world *w);

/* The ids an acquisition of a permit-expirable semaphore took, kept by
 * its owner with where they came from. */
static void keep_permits(owner_st *o, int obj, int64_t acq, char *const *ids)
{
    int k;

    for (k = 0; ids && ids[k] && o->npid[obj] < PIDS; k++) {
        int slot = o->npid[obj]++;

        snprintf(o->pid[obj][slot], sizeof(o->pid[obj][slot]), "%s", ids[k]);
        o->pacq[obj][slot] = acq;
        o->pk[obj][slot] = k;
    }
}

/* The id in slot is given back (or lost): the last slot takes its place. */
static void drop_permit(owner_st *o, int obj, int slot)
{
    int last = --o->npid[obj];

    memcpy(o->pid[obj][slot], o->pid[obj][last], sizeof(o->pid[obj][slot]));
    o->pacq[obj][slot] = o->pacq[obj][last];
    o->pk[obj][slot] = o->pk[obj][last];
}

static void done(void *arg, dlock_op_id dop, const dlock_result *r)
{
    cb_arg *a = arg;
    world *w = a->w;
    op_st *s = &w->ops[a->id];
    client_st *c = &w->cl[s->client];
    owner_st *o = &c->own[s->owner];
    sim_event *e = record(w, SIM_EV_DONE, s->client, s->owner, s->obj);
    int64_t think, a_id;

    (void)dop;
    e->op = s->op;
    e->id = a->id;
    e->rc = r->rc;
    e->value = r->value;
    e->paused = c->paused_total - s->paused0;
    a_id = a->id;
    free(a);
    o->op = -1;
    switch (s->op) {
    case SIM_OP_LOCK:
        if (r->rc == 0) {
            o->held[s->obj] = 1;
            o->watchdog[s->obj] = s->lease == 0;
            o->token[s->obj] = r->value;
            if (w->h->obj[s->obj].type == SIM_T_FENCED)
                schedule(w, now(w) + sim_rng_range(&w->rng, 0, 20), IT_WRITE, s->client,
                         s->owner, s->obj);
        }
        break;
    case SIM_OP_UNLOCK:
        /* refused or unanswered: it may not have run, and a watchdog hold
         * would then be renewed for good; the owner tries again */
        if (r->rc != DLOCK_ECONN && r->rc != DLOCK_ETIMEDOUT)
            o->held[s->obj] = 0;
        break;
    case SIM_OP_EXTEND:
        o->watchdog[s->obj] = 0; /* a lease now (or lost) */
        break;
    case SIM_OP_SEM_ACQ:
        if (r->rc == 0)
            o->permits[s->obj] += s->n;
        break;
    case SIM_OP_SEM_REL:
        o->permits[s->obj] -= s->n;
        break;
    case SIM_OP_PERMIT_ACQ:
        if (r->rc == 0)
            keep_permits(o, s->obj, a_id, r->permit_ids);
        break;
    case SIM_OP_PERMIT_REL:
        /* released, lapsed or lost: either way no longer the owner's */
        drop_permit(o, s->obj, (int)s->n);
        break;
    default:
        break;
    }
    if (w->phase == 2) {
        probe_next(w);
        return;
    }
    think = sim_rng_range(&w->rng, 0, 100);
    if (r->rc == 0 &&
        (s->op == SIM_OP_LOCK || s->op == SIM_OP_SEM_ACQ || s->op == SIM_OP_PERMIT_ACQ))
        think = sim_rng_range(&w->rng, 0, LEASE_MAX_MS); /* hold it a while */
    next_step(w, s->client, s->owner, think);
}

/* A wait; forever only where a lease bounds what it waits for (a
 * semaphore's permits have none: one taken by an acquisition whose
 * answer was lost is gone for good). */
static int64_t pick_wait(world *w, int forever_ok)
{
    int64_t r = sim_rng_range(&w->rng, 0, forever_ok ? 99 : 94);

    if (r < 25)
        return 0;
    if (r < 70)
        return sim_rng_range(&w->rng, 1, 500);
    if (r < 95)
        return sim_rng_range(&w->rng, 500, 4000);
    return DLOCK_WAIT_FOREVER;
}

static int64_t pick_lease(world *w)
{
    return sim_rng_range(&w->rng, LEASE_MIN_MS, LEASE_MAX_MS);
}

/* Whether obj's holds are one store's keys, which its client's watchdog
 * renews (a MultiLock's members and a Redlock's nodes are other
 * clients'; they are given leases). */
static int watchdog_type(uint32_t t)
{
    return t != SIM_T_MULTI && t != SIM_T_REDLOCK;
}

/* An acquisition's lease: one in five of them 0 (the watchdog's). */
static int64_t pick_lock_lease(world *w, int obj)
{
    if (watchdog_type(w->h->obj[obj].type) && sim_rng_chance(&w->rng, 2000))
        return 0;
    return pick_lease(w);
}

/* The quiet end: release what the owner holds, one thing per step. */
static void release_step(world *w, int ci, int oi)
{
    owner_st *o = &w->cl[ci].own[oi];
    int i;

    for (i = 0; i < w->h->nobj; i++) {
        if (o->held[i]) {
            start(w, ci, oi, i, SIM_OP_UNLOCK, 0, 0, 0);
            return;
        }
        if (o->permits[i] > 0) {
            start(w, ci, oi, i, SIM_OP_SEM_REL, 0, 0, o->permits[i]);
            return;
        }
        if (o->npid[i] > 0) {
            start(w, ci, oi, i, SIM_OP_PERMIT_REL, 0, 0, 0);
            return;
        }
        /* the latch's count brought to 0 (a count-down of an open latch
         * does nothing), so that the probe's awaits are released */
        if (w->h->obj[i].type == SIM_T_LATCH && ci == 0 && oi == 0 &&
            w->quiet_downs < w->h->obj[i].permits) {
            w->quiet_downs++;
            start(w, ci, oi, i, SIM_OP_COUNT_DOWN, 0, 0, 0);
            return;
        }
    }
    o->idle = 1;
}

/* Whether o holds something the watchdog renews. */
static int holds_watchdog(const world *w, const owner_st *o)
{
    int i;

    for (i = 0; i < w->h->nobj; i++)
        if (o->held[i] && o->watchdog[i])
            return 1;
    return 0;
}

static void act(world *w, int ci, int oi)
{
    client_st *c = &w->cl[ci];
    owner_st *o = &c->own[oi];
    const sim_config *cfg = w->cfg;
    int obj, rc;
    int64_t r;

    if (o->op >= 0)
        return; /* a late step: the owner has one operation at a time */
    if (c->paused_until > now(w)) {
        schedule(w, c->paused_until, IT_ACT, ci, oi, 0);
        return;
    }
    if (w->phase >= 1) {
        release_step(w, ci, oi);
        return;
    }
    if (w->started >= cfg->ops && cfg->plant != SIM_PLANT_ENDLESS) {
        w->phase = 1;
        record(w, SIM_EV_PHASE, -1, -1, -1)->value = 1;
        sim_faults_enable(w->faults, 0);
        release_step(w, ci, oi);
        return;
    }
    if (cfg->failover && !w->failed_over &&
        w->started >= cfg->ops * cfg->failover_permille / 1000 + 1) {
        sim_event *e = record(w, SIM_EV_FAULT, -1, -1, -1);

        w->failed_over = 1;
        sim_faults_failover(w->faults);
        e->value = ('F' << 8) | (cfg->rates.failover_sync ? 'S' : 'U');
        if (!cfg->rates.failover_sync)
            w->h->unsynced_failover = e->t;
    }
    if (sim_rng_chance(&w->rng, cfg->pause_rate)) {
        int64_t d = sim_rng_range(&w->rng, 1, cfg->pause_max_ms);
        sim_event *e = record(w, SIM_EV_PAUSE, ci, -1, -1);

        c->paused_until = now(w) + d;
        c->paused_total += d;
        e->value = c->paused_until;
        schedule(w, c->paused_until, IT_RESUME, ci, -1, 0);
        schedule(w, c->paused_until, IT_ACT, ci, oi, 0);
        return;
    }
    obj = (int)sim_rng_range(&w->rng, 0, w->h->nobj - 1);
    r = sim_rng_range(&w->rng, 0, 99);
    if (w->h->obj[obj].type == SIM_T_PERMIT) {
        if (o->npid[obj] > 0 && (r < 55 || o->npid[obj] > PIDS - 2))
            rc = start(w, ci, oi, obj, SIM_OP_PERMIT_REL, 0, 0,
                       sim_rng_range(&w->rng, 0, o->npid[obj] - 1));
        else
            rc = start(w, ci, oi, obj, SIM_OP_PERMIT_ACQ, pick_wait(w, 1), pick_lease(w),
                       sim_rng_range(&w->rng, 1, 2));
    } else if (w->h->obj[obj].type == SIM_T_LATCH) {
        if (r < 25)
            rc = start(w, ci, oi, obj, SIM_OP_COUNT_DOWN, 0, 0, 0);
        else
            rc = start(w, ci, oi, obj, SIM_OP_AWAIT, pick_wait(w, 0), 0, 0);
    } else if (w->h->obj[obj].type == SIM_T_SEMAPHORE) {
        if (o->permits[obj] > 0 && r < 60)
            rc = start(w, ci, oi, obj, SIM_OP_SEM_REL, 0, 0, o->permits[obj]);
        else
            rc = start(w, ci, oi, obj, SIM_OP_SEM_ACQ, pick_wait(w, 0), 0,
                       sim_rng_range(&w->rng, 1, 2));
    } else if (o->held[obj]) {
        if (r < 55)
            rc = start(w, ci, oi, obj, SIM_OP_UNLOCK, 0, 0, 0);
        else if (r < 80)
            rc = start(w, ci, oi, obj, SIM_OP_EXTEND, 0, pick_lease(w), 0);
        else if (r < 97) {
            guarded_write(w, ci, oi, obj);
            next_step(w, ci, oi, sim_rng_range(&w->rng, 0, 500));
            return;
        } else
            rc = start(w, ci, oi, obj, SIM_OP_FORCE, 0, 0, 0);
    } else if (r < 3) {
        rc = start(w, ci, oi, obj, SIM_OP_FORCE, 0, 0, 0);
    } else {
        /* forever only where what the owner holds has a lease: a hold
         * the watchdog renews, held while waiting forever, can deadlock */
        int64_t wait = pick_wait(w, !holds_watchdog(w, o));

        rc = start(w, ci, oi, obj, SIM_OP_LOCK, wait, pick_lock_lease(w, obj), 0);
        if (rc == 0 && wait != 0 && sim_rng_chance(&w->rng, 800))
            schedule(w, now(w) + sim_rng_range(&w->rng, 0, wait > 0 ? wait : 5000),
                     IT_CANCEL, ci, oi, o->op);
    }
    if (rc != 0)
        next_step(w, ci, oi, sim_rng_range(&w->rng, 1, 100));
}

/* ---- the liveness probe ------------------------------------------------------ */

static void probe_next(world *w)
{
    while (w->probe_client < w->cfg->clients) {
        int ci = w->probe_client, obj = w->probe_obj;
        owner_st *o = &w->cl[ci].own[0];
        uint32_t type = w->h->obj[obj].type;

        if (w->probe_step == 0) {
            int op = type == SIM_T_SEMAPHORE ? SIM_OP_SEM_ACQ
                     : type == SIM_T_PERMIT  ? SIM_OP_PERMIT_ACQ
                     : type == SIM_T_LATCH   ? SIM_OP_AWAIT
                                             : SIM_OP_LOCK;

            w->probe_step = 1;
            if (start(w, ci, 0, obj, op, PROBE_WAIT_MS, 1000, op == SIM_OP_LOCK ? 0 : 1) == 0)
                return;
        }
        if (w->probe_step == 1) {
            w->probe_step = 2;
            if (o->held[obj] && start(w, ci, 0, obj, SIM_OP_UNLOCK, 0, 0, 0) == 0)
                return;
            if (o->permits[obj] > 0 &&
                start(w, ci, 0, obj, SIM_OP_SEM_REL, 0, 0, o->permits[obj]) == 0)
                return;
            if (o->npid[obj] > 0 && start(w, ci, 0, obj, SIM_OP_PERMIT_REL, 0, 0, 0) == 0)
                return;
        }
        w->probe_step = 0;
        if (++w->probe_obj == w->h->nobj) {
            w->probe_obj = 0;
            w->probe_client++;
        }
    }
    w->phase = 3;
}

/* ---- set-up ------------------------------------------------------------------- */

static const char *type_name(uint32_t t)
{
    switch (t) {
    case SIM_T_REENTRANT: return "reentrant";
    case SIM_T_FAIR: return "fair";
    case SIM_T_READ: return "read";
    case SIM_T_WRITE: return "write";
    case SIM_T_FENCED: return "fenced";
    case SIM_T_SEMAPHORE: return "semaphore";
    case SIM_T_SIMPLE: return "simple";
    case SIM_T_SEMLOCK: return "semaphore-lock";
    case SIM_T_PERMIT: return "permit-semaphore";
    case SIM_T_LATCH: return "latch";
    case SIM_T_MULTI: return "multilock";
    case SIM_T_REDLOCK: return "redlock";
    default: return "spin";
    }
}

static void add_objects(world *w)
{
    static const struct { uint32_t t; const char *name; } all[] = {
        {SIM_T_REENTRANT, "r0"}, {SIM_T_FAIR, "f0"}, {SIM_T_READ, "w0"},
        {SIM_T_WRITE, "w0"}, {SIM_T_FENCED, "x0"}, {SIM_T_SEMAPHORE, "s0"},
        {SIM_T_SPIN, "p0"}, {SIM_T_SIMPLE, "m0"}, {SIM_T_SEMLOCK, "q0"},
        {SIM_T_PERMIT, "e0"}, {SIM_T_LATCH, "l0"}, {SIM_T_MULTI, "M"},
        {SIM_T_REDLOCK, "R"},
    };
    size_t i;

    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        sim_object *o;

        if (!(w->cfg->types & all[i].t))
            continue;
        o = &w->h->obj[w->h->nobj++];
        o->name = all[i].name;
        o->type = all[i].t;
        o->permits = all[i].t == SIM_T_SEMAPHORE || all[i].t == SIM_T_PERMIT ? 3
                     : all[i].t == SIM_T_SEMLOCK                           ? 2
                     : all[i].t == SIM_T_LATCH ? sim_rng_range(&w->rng, 1, 8)
                                               : 0;
        o->left = -1;
    }
}

/* The owner of client ci whose id is owner, or -1. */
static int owner_index(world *w, int ci, const char *owner)
{
    int oi;

    for (oi = 0; oi < w->cfg->owners; oi++)
        if (strcmp(w->cl[ci].own[oi].id, owner) == 0)
            return oi;
    return -1;
}

/* A lock object's on_lost (on its client's loop thread): the watchdog
 * found the owner's hold gone. */
static void on_lost(void *arg, const char *name, const char *owner)
{
    lost_arg *a = arg;
    int oi = owner_index(a->w, a->client, owner);
    sim_event *e = record(a->w, SIM_EV_LOST, a->client, oi, a->obj);

    e->op = SIM_OP_LOCK;
    (void)name;
}

/* A renewal that ran on a store (tests/sim/fault.h): which object (of a
 * watchdog type; a read-write lock's halves by the script), which owner. */
static void on_renewal(void *arg, int client, const char *script, const char *key,
                       const char *owner, int64_t lease_ms)
{
    world *w = arg;
    int oi = owner_index(w, client, owner), i;
    uint32_t want = strcmp(script, "rwlock_read_renew") == 0    ? SIM_T_READ
                    : strcmp(script, "rwlock_write_renew") == 0 ? SIM_T_WRITE
                                                                : 0;

    if (oi < 0)
        return;
    for (i = 0; i < w->h->nobj; i++) {
        const sim_object *o = &w->h->obj[i];

        if (strcmp(o->name, key) == 0 && watchdog_type(o->type) &&
            (want ? o->type == want : o->type != SIM_T_READ && o->type != SIM_T_WRITE)) {
            sim_event *e = record(w, SIM_EV_RENEW, client, oi, i);

            e->op = SIM_OP_LOCK;
            e->lease = lease_ms;
            e->value = now(w) + lease_ms;
            return;
        }
    }
}

/* A client of the store (w->store, or w->nodes[k]) behind a fault
 * backend, its clock offset by skew. */
static int store_client(world *w, int ci, dlock_mock_store *store, dlock_mock_store *replica,
                        int64_t skew, dlock_client **out)
{
    dlock_client_options opts = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *mb, *fb, *rb = NULL;
    int rc;

    /* the watchdog's rounds on the client's loop (make_client); no
     * real-time slice */
    opts.watchdog_timeout_ms = WATCHDOG_MS;
    opts.loop_slice_ms = 0;
    if ((rc = dlock_mock_backend_new(&mb, store)) != 0)
        return rc;
    if (replica && (rc = dlock_mock_backend_new(&rb, replica)) != 0) {
        dlock_backend_free(mb);
        return rc;
    }
    if ((rc = sim_fault_backend_new(&fb, w->faults, mb, rb, ci)) != 0) {
        dlock_backend_free(mb);
        dlock_backend_free(rb);
        return rc;
    }
    if (skew != 0)
        sim_fault_backend_skew(fb, skew);
    if ((rc = dlock_client_new(out, fb, &opts)) != 0)
        dlock_backend_free(fb);
    return rc;
}

/* A MultiLock of reentrant locks called name, one on each store, or a
 * Redlock called name over the stores. */
static int multi_store_lock(client_st *c, int i, const sim_object *o)
{
    dlock_client *cs[1 + NODES];
    int k, rc = 0;

    cs[0] = c->c;
    for (k = 0; k < NODES; k++)
        cs[1 + k] = c->node[k];
    if (o->type == SIM_T_REDLOCK)
        return dlock_redlock_new(&c->lk[i], cs, 1 + NODES, o->name);
    for (k = 0; k < 1 + NODES && rc == 0; k++)
        rc = dlock_reentrant_new(&c->member[i][k], cs[k], o->name);
    return rc ? rc : dlock_multilock_new(&c->lk[i], c->member[i], 1 + NODES);
}

static int make_client(world *w, int ci)
{
    client_st *c = &w->cl[ci];
    int64_t skew = 0;
    int i, rc;

    if (w->cfg->skew > 0) {
        sim_event *e = record(w, SIM_EV_FAULT, ci, -1, -1);

        skew = e->n = sim_rng_range(&w->rng, -w->cfg->skew, w->cfg->skew);
        e->value = ('C' << 8) | 'K';
    }
    if ((rc = store_client(w, ci, w->store, w->replica, skew, &c->c)) != 0)
        return rc;
    /* the other stores' clients (only where a run uses them: each client
     * costs a watchdog thread's start) run on the same machine: the same
     * clock */
    for (i = 0; i < NODES && (w->cfg->types & (SIM_T_MULTI | SIM_T_REDLOCK)); i++)
        if ((rc = store_client(w, ci, w->nodes[i], NULL, skew, &c->node[i])) != 0)
            return rc;
    if ((rc = dlock_loop_new(&c->lp, c->c, NULL)) != 0 ||
        (rc = dlock__loop_drive_watchdog(c->lp)) != 0)
        return rc;
    for (i = 0; i < w->cfg->owners; i++) {
        snprintf(c->own[i].id, sizeof(c->own[i].id), "%s:o%d", dlock_client_id(c->c), i);
        c->own[i].op = -1;
    }
    for (i = 0; i < w->h->nobj && rc == 0; i++) {
        const sim_object *o = &w->h->obj[i];

        switch (o->type) {
        case SIM_T_REENTRANT: rc = dlock_reentrant_new(&c->lk[i], c->c, o->name); break;
        case SIM_T_FAIR: rc = dlock_fair_new(&c->lk[i], c->c, o->name); break;
        case SIM_T_READ: rc = dlock_rwlock_read_new(&c->lk[i], c->c, o->name); break;
        case SIM_T_WRITE: rc = dlock_rwlock_write_new(&c->lk[i], c->c, o->name); break;
        case SIM_T_FENCED: rc = dlock_fenced_new(&c->lk[i], c->c, o->name); break;
        case SIM_T_SPIN: rc = dlock_spin_lock_new(&c->lk[i], c->c, o->name, NULL); break;
        case SIM_T_SIMPLE: rc = dlock_simple_lock_new(&c->lk[i], c->c, o->name); break;
        case SIM_T_SEMLOCK:
            rc = dlock_semaphore_lock_new(&c->lk[i], c->c, o->name);
            if (rc == 0 && ci == 0) {
                /* its permits: the count of the plain semaphore of the name */
                dlock_semaphore *s = NULL;
                int set;

                rc = dlock_semaphore_new(&s, c->c, o->name);
                if (rc == 0)
                    rc = dlock_semaphore_try_set_permits(s, &set, o->permits);
                dlock_semaphore_free(s);
            }
            break;
        case SIM_T_MULTI:
        case SIM_T_REDLOCK: rc = multi_store_lock(c, i, o); break;
        case SIM_T_PERMIT:
            rc = dlock_permit_semaphore_new(&c->pm[i], c->c, o->name);
            if (rc == 0 && ci == 0)
                rc = dlock_permit_semaphore_try_set_permits(c->pm[i], NULL, o->permits);
            break;
        case SIM_T_LATCH:
            rc = dlock_latch_new(&c->la[i], c->c, o->name);
            if (rc == 0 && ci == 0)
                rc = dlock_latch_try_set_count(c->la[i], NULL, o->permits);
            break;
        default:
            rc = dlock_semaphore_new(&c->sem[i], c->c, o->name);
            if (rc == 0 && ci == 0) {
                int set;

                rc = dlock_semaphore_try_set_permits(c->sem[i], &set, o->permits);
            }
            break;
        }
        if (rc == 0 && c->lk[i]) {
            c->lost[i].w = w;
            c->lost[i].client = ci;
            c->lost[i].obj = i;
            rc = dlock_rlock_set_on_lost(c->lk[i], on_lost, &c->lost[i]);
        }
    }
    return rc;
}

static void free_clients(world *w)
{
    int ci, i, k;

    for (ci = 0; ci < SIM_MAX_CLIENTS; ci++) {
        client_st *c = &w->cl[ci];

        dlock_loop_free(c->lp);
        for (i = 0; i < MAX_OBJ; i++) {
            dlock_rlock_free(c->lk[i]);
            dlock_semaphore_free(c->sem[i]);
            dlock_permit_semaphore_free(c->pm[i]);
            dlock_latch_free(c->la[i]);
            for (k = 0; k < 1 + NODES; k++)
                dlock_rlock_free(c->member[i][k]);
        }
        for (k = 0; k < NODES; k++)
            dlock_client_free(c->node[k]);
        dlock_client_free(c->c);
    }
}

/* ---- the driver ---------------------------------------------------------------- */

/* Runs every loop that has work, until none has (one loop's script may
 * wake another's waiter). How many loop runs that took. */
static int settle(world *w)
{
    int ci, any, n = 0;

    do {
        any = 0;
        any += sim_faults_tick(w->faults);
        while (sim_queue_next(&w->q) <= now(w)) {
            sim_item it = sim_queue_pop(&w->q);
            client_st *c = &w->cl[it.a];

            any = 1;
            switch (it.kind) {
            case IT_ACT:
                act(w, it.a, it.b);
                break;
            case IT_WRITE:
                if (c->paused_until > now(w))
                    schedule(w, c->paused_until, IT_WRITE, it.a, it.b, it.x);
                else
                    guarded_write(w, it.a, it.b, (int)it.x);
                break;
            case IT_CANCEL:
                if (c->own[it.b].op == it.x && c->paused_until <= now(w)) {
                    sim_event *e = record(w, SIM_EV_CANCEL, it.a, it.b, -1);

                    e->id = it.x;
                    e->rc = dlock_op_cancel(c->lp, c->own[it.b].dop);
                }
                break;
            case IT_PROBE:
                probe_next(w);
                break;
            default: /* IT_RESUME: the loop runs again below */
                break;
            }
        }
        for (ci = 0; ci < w->cfg->clients; ci++) {
            client_st *c = &w->cl[ci];

            if (c->paused_until > now(w))
                continue;
            while (dlock_loop_timeout_ms(c->lp) == 0) {
                dlock_loop_run(c->lp, 0);
                any = 1;
                if (++n > SPIN_LIMIT) {
                    /* work at every turn and no time passing: on a real
                     * clock, a busy loop */
                    w->spinning = 1;
                    return n;
                }
            }
        }
    } while (any);
    return n;
}

static int64_t next_due(world *w)
{
    int64_t t = sim_queue_next(&w->q), f = sim_faults_next(w->faults);
    int ci;

    if (f < t)
        t = f;
    for (ci = 0; ci < w->cfg->clients; ci++) {
        client_st *c = &w->cl[ci];
        int64_t d;

        if (c->paused_until > now(w))
            continue; /* its resume item is in the queue */
        d = dlock_loop_timeout_ms(c->lp);
        if (d >= 0 && now(w) + d < t)
            t = now(w) + d;
    }
    return t;
}

static int quiet(world *w)
{
    int ci, oi;

    if (sim_faults_next(w->faults) != INT64_MAX)
        return 0;
    for (ci = 0; ci < w->cfg->clients; ci++) {
        if (dlock_loop_pending(w->cl[ci].lp) > 0)
            return 0;
        for (oi = 0; oi < w->cfg->owners; oi++)
            if (!w->cl[ci].own[oi].idle)
                return 0;
    }
    return 1;
}

/* The keys left after the run: the semaphores' counts and the fencing
 * counters persist by design; anything else left an hour after the last
 * operation has no expiry. */
static int counted_type(uint32_t t)
{
    return t == SIM_T_SEMAPHORE || t == SIM_T_SEMLOCK || t == SIM_T_PERMIT;
}

/* 1 if key is in store, else 0. */
static size_t key_exists(dlock_mock_store *store, const char *key)
{
    const char *argv[2] = {"EXISTS", key};
    dlock_reply *r;
    size_t n = 0;

    if (dlock_mock_store_command(store, &r, 2, argv, NULL) == 0) {
        n = r->type == DLOCK_REPLY_INTEGER && r->integer == 1;
        dlock_reply_free(r);
    }
    return n;
}

/* A permit-expirable semaphore at the end: the permits available (every
 * lease over: all of them, if none was lost), and how many of its keys
 * persist by design (the count, the sets of taken and of expired ids). */
static size_t permit_keys(world *w, dlock_mock_store *store, int obj)
{
    sim_history *h = w->h;
    const char *name = h->obj[obj].name;
    char keys[3][128];
    size_t k, n = 0;

    if (dlock_permit_semaphore_available_permits(w->cl[0].pm[obj], &h->obj[obj].left) != 0)
        h->obj[obj].left = -1;
    snprintf(keys[0], sizeof(keys[0]), "%s", name);
    snprintf(keys[1], sizeof(keys[1]), "{%s}:timeout", name);
    snprintf(keys[2], sizeof(keys[2]), "{%s}:expired", name);
    for (k = 0; k < 3; k++)
        n += key_exists(store, keys[k]);
    return n;
}

static void count_leftovers(world *w)
{
    sim_history *h = w->h;
    dlock_mock_store *store = w->failed_over ? w->replica : w->store;
    size_t dbsize = dlock_mock_store_dbsize(store), persistent = 0;
    int i, k;

    for (i = 0; i < h->nobj; i++) {
        char key[128];

        if (h->obj[i].type == SIM_T_PERMIT) {
            persistent += permit_keys(w, store, i);
            continue;
        }
        if (h->obj[i].type == SIM_T_SEMAPHORE || h->obj[i].type == SIM_T_SEMLOCK)
            snprintf(key, sizeof(key), "%s", h->obj[i].name);
        else if (h->obj[i].type == SIM_T_FENCED || h->obj[i].type == SIM_T_REDLOCK)
            snprintf(key, sizeof(key), "redisson_lock_token:{%s}", h->obj[i].name);
        else
            continue;
        persistent += key_exists(store, key);
        /* a Redlock's nodes keep their token counters too */
        for (k = 0; k < NODES && h->obj[i].type == SIM_T_REDLOCK; k++)
            persistent += key_exists(w->nodes[k], key);
    }
    for (k = 0; k < NODES && w->nodes[k]; k++)
        dbsize += dlock_mock_store_dbsize(w->nodes[k]);
    h->leftover = (int)(dbsize - persistent);
    if (h->leftover > 0) {
        /* name the lock keys still there */
        size_t off = 0;

        for (i = 0; i < h->nobj && off < sizeof(h->leftover_detail) - 80; i++) {
            const char *argv[2] = {"PTTL", h->obj[i].name};
            dlock_reply *r;

            if (counted_type(h->obj[i].type))
                continue;
            if (dlock_mock_store_command(store, &r, 2, argv, NULL) == 0) {
                if (r->type == DLOCK_REPLY_INTEGER && r->integer != -2)
                    off += (size_t)snprintf(h->leftover_detail + off,
                                            sizeof(h->leftover_detail) - off,
                                            "%s (pttl %lld) ", h->obj[i].name,
                                            (long long)r->integer);
                dlock_reply_free(r);
            }
        }
    }
}

static void plant_store(world *w)
{
    const char *set[3] = {"SET", "r0", "stuck"};
    const char *hset[4] = {"HSET", "r0", "nobody:1", "1"};
    const char *decr[2] = {"DECR", "e0"};
    dlock_reply *r = NULL;

    if (w->cfg->plant == SIM_PLANT_NO_EXPIRY &&
        dlock_mock_store_command(w->failed_over ? w->replica : w->store, &r, 3, set, NULL) == 0)
        dlock_reply_free(r);
    if (w->cfg->plant == SIM_PLANT_STUCK &&
        dlock_mock_store_command(w->failed_over ? w->replica : w->store, &r, 4, hset, NULL) == 0)
        dlock_reply_free(r);
    if (w->cfg->plant == SIM_PLANT_PERMIT_LEAK &&
        dlock_mock_store_command(w->failed_over ? w->replica : w->store, &r, 2, decr, NULL) == 0)
        dlock_reply_free(r);
}

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Whether the run passed a bound of its config (then h says which). */
static int out_of_bounds(world *w)
{
    const sim_config *cfg = w->cfg;
    int64_t vlimit = cfg->virtual_limit_ms > 0
                         ? cfg->virtual_limit_ms
                         : SIM_VIRTUAL_BASE_MS + cfg->ops * SIM_VIRTUAL_MS_PER_OP;
    double cpu = 0;

    if (w->phase < 2 && now(w) > vlimit) {
        snprintf(w->h->probe_detail, sizeof(w->h->probe_detail),
                 "the workload and its quiet end not over after %lld virtual ms (phase %d)",
                 (long long)vlimit, w->phase);
    } else if (cfg->cpu_limit_s > 0 && (++w->turns & 1023) == 0 &&
               (cpu = cpu_now() - w->cpu0) > cfg->cpu_limit_s) {
        snprintf(w->h->probe_detail, sizeof(w->h->probe_detail),
                 "the run not over after %.1f CPU seconds (at t=%lld, phase %d)", cpu,
                 (long long)now(w), w->phase);
    } else {
        return 0;
    }
    w->h->timed_out = 1;
    record(w, SIM_EV_PHASE, -1, -1, -1)->value = 7;
    return 1;
}

/* FNV-1a over every event's fields, in order: what the rendered lines
 * say (sim_event_render prints nothing else), without printing them. */
static uint64_t history_hash(const sim_history *h)
{
    uint64_t hash = 1469598103934665603ULL;
    size_t i, k;

    for (i = 0; i < h->n; i++) {
        const sim_event *e = &h->ev[i];
        int64_t f[13] = {e->t, e->kind, e->client, e->owner, e->obj, e->op, e->id,
                         e->rc, e->value, e->wait, e->lease, e->n, e->paused};

        for (k = 0; k < 13; k++) {
            uint64_t v = (uint64_t)f[k];
            int b;

            for (b = 0; b < 8; b++, v >>= 8)
                hash = (hash ^ (v & 0xff)) * 1099511628211ULL;
        }
    }
    return hash;
}

int sim_run(const sim_config *cfg, sim_history *h)
{
    world w;
    sim_fault_rates rates = cfg->rates;
    int ci, oi, rc = 0;
    int64_t limit;

    memset(&w, 0, sizeof(w));
    memset(h, 0, sizeof(*h));
    w.cfg = cfg;
    w.h = h;
    w.rng.s = cfg->seed;
    w.cpu0 = cpu_now();
    uuid_rng.s = cfg->seed ^ 0xa5a5a5a5a5a5a5a5ULL;
    h->slack_ms = 50; /* DLOCK_CLIENT_OPTIONS_INIT's budget_slack_ms */
    h->unsynced_failover = -1;
    h->late_max_ms = rates.late_max_ms;
    h->watchdog_ms = WATCHDOG_MS;
    /* no watchdog thread: each client's loop drives its watchdog */
    dlock__watchdog_threadless = 1;
    add_objects(&w);
    if (cfg->plant == SIM_PLANT_GRANT_BUSY)
        rates.plant = 1;
    else if (cfg->plant == SIM_PLANT_TOKEN_LOW)
        rates.plant = 2;
    if (dlock_vclock_new(&w.vc, 1000) != 0 ||
        dlock_mock_store_new(&w.store, dlock_vclock_clock(w.vc)) != 0 ||
        (cfg->failover &&
         dlock_mock_store_new(&w.replica, dlock_vclock_clock(w.vc)) != 0) ||

        !(w.faults = sim_faults_new(cfg->seed, &rates, w.vc))) {
        fprintf(stderr, "sim: out of memory\n");
        rc = -1;
        goto out;
    }
    for (ci = 0; ci < NODES && (cfg->types & (SIM_T_MULTI | SIM_T_REDLOCK)); ci++)
        if (dlock_mock_store_new(&w.nodes[ci], dlock_vclock_clock(w.vc)) != 0) {
            fprintf(stderr, "sim: out of memory\n");
            rc = -1;
            goto out;
        }
    sim_faults_enable(w.faults, 0);
    sim_faults_set_log(w.faults, log_fault, &w);
    sim_faults_set_renew_log(w.faults, on_renewal, &w);
    for (ci = 0; ci < cfg->clients && rc == 0; ci++)
        rc = make_client(&w, ci);
    if (rc != 0) {
        fprintf(stderr, "sim: set-up failed: %s\n", dlock_strerror(rc));
        rc = -1;
        goto out;
    }
    sim_faults_enable(w.faults, 1);
    for (ci = 0; ci < cfg->clients; ci++)
        for (oi = 0; oi < cfg->owners; oi++)
            schedule(&w, now(&w) + sim_rng_range(&w.rng, 0, 50), IT_ACT, ci, oi, 0);
    limit = INT64_MAX;
    for (;;) {
        int64_t t;

        settle(&w);
        if (out_of_bounds(&w))
            break;
        if (w.spinning) {
            record(&w, SIM_EV_PHASE, -1, -1, -1)->value = 8;
            h->probe_failures++;
            snprintf(h->probe_detail, sizeof(h->probe_detail),
                     "a loop kept running at t=%lld without time passing (a busy loop)",
                     (long long)now(&w));
            break;
        }
        if (w.phase == 1 && quiet(&w)) {
            w.phase = 2;
            plant_store(&w);
            record(&w, SIM_EV_PHASE, -1, -1, -1)->value = 2;
            limit = now(&w) + (int64_t)cfg->clients * h->nobj * (PROBE_WAIT_MS + 1000) +
                    60000;
            /* after the longest lease: a hold an owner does not know it has
             * (its acquisition's reply was lost) has run out; its own
             * read hold would make its write probe EDEADLK */
            schedule(&w, now(&w) + LEASE_MAX_MS + 1, IT_PROBE, 0, 0, 0);
            continue;
        }
        if (w.phase == 3)
            break;
        t = next_due(&w);
        if (t == INT64_MAX || t > limit) {
            /* nothing left to happen, yet the run has not ended: stuck */
            record(&w, SIM_EV_PHASE, -1, -1, -1)->value = 9;
            h->probe_failures++;
            snprintf(h->probe_detail, sizeof(h->probe_detail),
                     "stuck in phase %d at t=%lld", w.phase, (long long)now(&w));
            break;
        }
        if (t > now(&w))
            dlock_vclock_advance(w.vc, t - now(&w));
    }
    if (!w.spinning && !h->timed_out) {
        dlock_vclock_advance(w.vc, 3600 * 1000);
        settle(&w);
    }
    record(&w, SIM_EV_PHASE, -1, -1, -1)->value = 3;
    if (!h->timed_out) /* mid-run, the keys tell nothing */
        count_leftovers(&w);
    h->faults = sim_faults_count(w.faults);
out:
    free_clients(&w);
    sim_queue_fini(&w.q, NULL);
    free(w.ops);
    sim_faults_free(w.faults);
    dlock_mock_store_free(w.store);
    dlock_mock_store_free(w.replica);
    for (ci = 0; ci < NODES; ci++)
        dlock_mock_store_free(w.nodes[ci]);
    dlock_vclock_free(w.vc);
    h->hash = history_hash(h);
    return rc;
}

void sim_history_free(sim_history *h)
{
    free(h->ev);
    h->ev = NULL;
    h->n = h->cap = 0;
}

/* ---- rendering ------------------------------------------------------------------ */

static const char *const op_names[SIM_OP_COUNT] = {
    "lock", "unlock", "extend", "force", "acquire", "release",
    "permit-acquire", "permit-release", "count-down", "await"};

void sim_event_render(const sim_history *h, const sim_event *e, char *buf, size_t len)
{
    const char *obj = e->obj >= 0 ? h->obj[e->obj].name : "-";
    const char *ty = e->obj >= 0 ? type_name(h->obj[e->obj].type) : "-";

    switch (e->kind) {
    case SIM_EV_START:
        snprintf(buf, len, "%lld c%d.o%d start #%lld %s %s %s wait=%lld lease=%lld n=%lld",
                 (long long)e->t, e->client, e->owner, (long long)e->id, op_names[e->op],
                 ty, obj, (long long)e->wait, (long long)e->lease, (long long)e->n);
        if (e->op == SIM_OP_PERMIT_REL) /* which id: of which acquisition */
            snprintf(buf + strlen(buf), len - strlen(buf), " of #%lld", (long long)e->value);
        break;
    case SIM_EV_DONE:
        snprintf(buf, len, "%lld c%d.o%d done #%lld %s %s %s rc=%s value=%lld paused=%lld",
                 (long long)e->t, e->client, e->owner, (long long)e->id, op_names[e->op],
                 ty, obj, dlock_errname(e->rc), (long long)e->value,
                 (long long)e->paused);
        break;
    case SIM_EV_WRITE:
        snprintf(buf, len, "%lld c%d.o%d write %s token=%lld %s", (long long)e->t,
                 e->client, e->owner, obj, (long long)e->value,
                 e->rc == 0 ? "accepted" : "refused");
        break;
    case SIM_EV_CANCEL:
        snprintf(buf, len, "%lld c%d.o%d cancel #%lld rc=%s", (long long)e->t, e->client,
                 e->owner, (long long)e->id, dlock_errname(e->rc));
        break;
    case SIM_EV_PAUSE:
        snprintf(buf, len, "%lld c%d pause until %lld", (long long)e->t, e->client,
                 (long long)e->value);
        break;
    case SIM_EV_RENEW:
        snprintf(buf, len, "%lld c%d.o%d renewed %s %s until %lld", (long long)e->t,
                 e->client, e->owner, ty, obj, (long long)e->value);
        break;
    case SIM_EV_LOST:
        snprintf(buf, len, "%lld c%d.o%d lost %s %s", (long long)e->t, e->client, e->owner,
                 ty, obj);
        break;
    case SIM_EV_FAULT:
        if (e->value == (('C' << 8) | 'K'))
            snprintf(buf, len, "%lld c%d fault clock offset %lld", (long long)e->t,
                     e->client, (long long)e->n);
        else
            snprintf(buf, len, "%lld c%d fault %c%c", (long long)e->t, e->client,
                     (char)(e->value >> 8), (char)(e->value & 0xff));
        break;
    default:
        snprintf(buf, len, "%lld phase %lld", (long long)e->t, (long long)e->value);
        break;
    }
}
