/*
 * A nemesis worker (a forked process): takes and releases the lock types of
 * its group at random, with random waits and leases, does the guarded write
 * of the fenced lock inside its hold, and records every operation in the
 * memory it shares with the driver (nemesis.h).
 */
#include "nemesis.h"

#include <dlock.h>
#include <dlock/redis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../faults/faults.h"
#include "../harness/redis_client.h"

dlock_client *nem_client_new(const nem_target *t, const char *url)
{
    dlock_redis_options ro =
        dlock_test_redis_options(NEM_CONNECT_TIMEOUT_MS, t->cmd_timeout_ms);
    dlock_client_options co = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = NULL;
    char err[256];
    int rc;

    ro.connections = 4; /* a WAIT holds back its connection's queue */
    ro.lazy_connect = 1;
    if (t->sync_timeout_ms > 0) {
        ro.sync_replicas = t->sync_replicas;
        ro.sync_timeout_ms = t->sync_timeout_ms;
    }
    co.budget_slack_ms = NEM_BUDGET_SLACK_MS;
    rc = dlock_test_client_open(&c, url, &ro, &co, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "nemesis worker: client on %s: %s %s\n", url, dlock_errname(rc),
                err);
        return NULL;
    }
    return c;
}

typedef struct wstate {
    nem_shared *sh;
    nem_slot *me;
    const nem_target *t;
    unsigned seed;
    dlock_client *c[5];
    int nc;
    dlock_rlock *l[NEM_NKINDS];
    dlock_semaphore *sem;
    dlock_bucket *bucket;
} wstate;

static int rnd(wstate *w, int lo, int hi)
{
    return lo + (int)(rand_r(&w->seed) % (unsigned)(hi - lo + 1));
}

static int open_all(wstate *w)
{
    const nem_target *t = w->t;
    char name[64], bname[80];
    int k;

    if (t->group == NEM_REDLOCK5) {
        for (w->nc = 0; w->nc < t->nnodes; w->nc++)
            if ((w->c[w->nc] = nem_client_new(t, t->node_url[w->nc])) == NULL)
                return -1;
        snprintf(name, sizeof name, "%s:%s", t->prefix, nem_kind_name(NEM_REDLOCK));
        return dlock_redlock_new(&w->l[NEM_REDLOCK], w->c, (size_t)w->nc, name) == 0 ? 0
                                                                                      : -1;
    }
    if ((w->c[0] = nem_client_new(t, t->url)) == NULL)
        return -1;
    w->nc = 1;
    for (k = 0; k < NEM_REDLOCK; k++) {
        int rc;
        snprintf(name, sizeof name, "%s:%s", t->prefix, nem_kind_name(k));
        switch (k) {
        case NEM_REENTRANT: rc = dlock_reentrant_new(&w->l[k], w->c[0], name); break;
        case NEM_FAIR: rc = dlock_fair_new(&w->l[k], w->c[0], name); break;
        case NEM_RW_WRITE: rc = dlock_rwlock_write_new(&w->l[k], w->c[0], name); break;
        case NEM_SEMAPHORE:
            rc = dlock_semaphore_lock_new(&w->l[k], w->c[0], name);
            if (rc == 0)
                rc = dlock_semaphore_new(&w->sem, w->c[0], name);
            break;
        default:
            rc = dlock_fenced_new(&w->l[k], w->c[0], name);
            /* the bucket in the lock's slot (one script checks both) */
            snprintf(bname, sizeof bname, "{%s}:bucket", name);
            if (rc == 0)
                rc = dlock_bucket_new(&w->bucket, w->c[0], bname, dlock_codec_long());
        }
        if (rc != 0)
            return -1;
    }
    return 0;
}

static void close_all(wstate *w)
{
    int k;
    for (k = 0; k < NEM_NKINDS; k++)
        dlock_rlock_free(w->l[k]);
    dlock_semaphore_free(w->sem);
    dlock_bucket_free(w->bucket);
    for (k = 0; k < w->nc; k++)
        dlock_client_free(w->c[k]);
}

/* One operation, recorded in r. */
static void one_op(wstate *w, nem_rec *r, int kind)
{
    dlock_rlock *l = w->l[kind];
    int64_t wait = rnd(w, 200, 1500), lease = rnd(w, 800, 2500);
    int rc;

    r->kind = (int16_t)kind;
    r->wait_ms = wait;
    r->lease_ms = lease;
    r->call_budget_ms = (int32_t)(w->t->cmd_timeout_ms + NEM_CONNECT_TIMEOUT_MS);
    r->budget_ms = wait + NEM_BUDGET_SLACK_MS +
                   (w->t->sync_timeout_ms > 0 ? w->t->sync_timeout_ms + 250 : 0);
    if (kind == NEM_SEMAPHORE) /* lost with a failover without sync: set again */
        dlock_semaphore_try_set_permits(w->sem, NULL, NEM_SEM_PERMITS);
    __atomic_store_n(&w->me->waiting, kind + 1, __ATOMIC_SEQ_CST);
    r->t0 = fault_now_ms();
    if (kind == NEM_FENCED)
        rc = dlock_fenced_try_lock(l, &r->token, wait, lease);
    else
        rc = dlock_try_lock(l, wait, lease);
    r->t1 = fault_now_ms();
    __atomic_store_n(&w->me->waiting, 0, __ATOMIC_SEQ_CST);
    r->acq_rc = rc;
    if (rc != 0)
        return;
    __atomic_store_n(&w->me->lease_end_ms, r->t0 + lease, __ATOMIC_SEQ_CST);
    __atomic_store_n(&w->me->holding, 1, __ATOMIC_SEQ_CST);
    fault_sleep_ms(rnd(w, 0, 150)); /* a pause of the holder lands here */
    if (kind == NEM_FENCED) {
        dlock_guard g = DLOCK_GUARD_INIT;
        g.lock = l;
        g.token = r->token;
        r->w0 = fault_now_ms();
        r->write_rc = dlock_bucket_set_guarded(w->bucket, &g, &r->token, 60000);
        r->w1 = fault_now_ms();
    } else if (kind == NEM_REDLOCK) {
        dlock_redlock_token(l, &r->token);
    }
    fault_sleep_ms(rnd(w, 0, 100));
    r->t2 = fault_now_ms();
    r->rel_rc = dlock_unlock(l);
    r->t3 = fault_now_ms();
    __atomic_store_n(&w->me->holding, 0, __ATOMIC_SEQ_CST);
}

void nem_worker_main(nem_shared *sh, int idx, const nem_target *t, unsigned seed)
{
    wstate w;

    memset(&w, 0, sizeof w);
    w.sh = sh;
    w.me = &sh->slot[idx];
    w.t = t;
    w.seed = seed;
    if (open_all(&w) != 0) {
        close_all(&w);
        _exit(2);
    }
    while (!__atomic_load_n(&sh->stop, __ATOMIC_SEQ_CST)) {
        nem_rec r;
        int pauses = __atomic_load_n(&w.me->pauses, __ATOMIC_SEQ_CST);
        int kind = t->group == NEM_REDLOCK5 ? NEM_REDLOCK : rnd(&w, 0, NEM_FENCED);

        memset(&r, 0, sizeof r);
        r.worker = (int16_t)idx;
        r.group = (int16_t)t->group;
        one_op(&w, &r, kind);
        r.paused = __atomic_load_n(&w.me->pauses, __ATOMIC_SEQ_CST) != pauses;
        if (w.me->nrec < NEM_RECS_PER_WORKER)
            w.me->rec[w.me->nrec++] = r;
        else
            w.me->dropped++;
        if (r.acq_rc != 0)
            fault_sleep_ms(rnd(&w, 10, 50));
    }
    close_all(&w);
}
