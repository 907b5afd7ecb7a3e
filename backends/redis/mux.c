/*
 * Redis backend: a multiplexed connection (see mux.h).
 */
#include "mux.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "dlock/errors.h"
#include "dlock/sys/clock.h"
#include "core/alloc.h"
#include "core/fiber.h"
#include "transport.h"

enum { QUEUED, INFLIGHT, DONE };

/* Writes one writer makes in a row before leaving the role. */
#define WRITE_ROUNDS 4

/* One call. Its caller holds a reference, which passes to the lane when it
 * leaves a call in flight (abandoned: the reader or the break frees it when
 * its replies are in); a pending wake-up holds another (see lane_unlock). */
typedef struct dlock__redis_mux_req {
    struct dlock__redis_mux_req *next;
    struct dlock__redis_mux_req *wnext; /* on the lane's wake list */
    int refs;                     /* atomic */
    int to_wake;                  /* on the lane's wake list */
    const dlock__redis_cmdbuf *b; /* read only while QUEUED (caller present) */
    int nreplies, got;
    int state;
    int abandoned;
    int in_loop;                  /* its caller is a loop's fiber */
    int waiting;                  /* its caller is in _wait (may be woken
                                   * to take a role) */
    struct lane *lane;
    int rc;                       /* when DONE */
    int64_t cmd_deadline;         /* written at: + the command timeout */
    pthread_cond_t cv;            /* DONE, or a role may be free */
    /* A caller in a loop's fiber sleeps on a signal instead (the loop's
     * thread must not block): made at its first such wait. in_fiber: it
     * is sleeping there now (set and read under the lane's mutex). */
    dlock_signal *fsig;
    int in_fiber;
    char err[512];
    redisReply *replies[1];       /* nreplies of them (allocated so) */
} mux_req;

/* One open connection of a lane; freed (given back to the pool) by the
 * last of the lane, the writer and the reader to let go of it. */
typedef struct session {
    dlock__redis_conn *c;
    pthread_mutex_t io; /* one thread in the transport at a time (TLS) */
    int refs;
    int broken;
    int unparsed; /* the last reader left replies in the reply reader */
    int tls;      /* reads take the io mutex too (one SSL object) */
} session;

struct lane {
    pthread_mutex_t mu;
    session *s;                 /* NULL: none open; the writer opens one */
    mux_req *qhead, *qtail;     /* queued, not yet written */
    mux_req *fhead, *ftail;     /* in flight, in write order */
    int count;                  /* queued + in flight (placeholders too) */
    int abandoned;              /* of which placeholders */
    int writing, reading;       /* the roles, held by callers */
    int64_t heard_ms;           /* when replies last came (0: never) */
    /* Callers in _wait that hand_off looks for: with a queued call (who
     * may write) and with a call in flight it still reads (who may read).
     * Counted so that hand_off does not walk the thousands of calls a
     * loop's fibers keep in flight to find none (see count). Of which
     * callers on threads (not in a loop's fiber): tqwaiting, tfwaiting. */
    int qwaiting, fwaiting, tqwaiting, tfwaiting;
    mux_req *wake, *wake_tail;  /* callers to wake once l->mu is released,
                                 * in the order their calls ended */
    dlock__redis_cmdbuf wbuf;   /* the writer's batch */
};
typedef struct lane lane;

struct dlock__redis_mux {
    const dlock__redis_config *cfg;
    dlock__redis_pool *pool;
    int nlanes;
    unsigned next;              /* round robin over lanes (atomic) */
    lane *lanes;
};

int dlock__redis_mux_new(dlock__redis_mux **out, const dlock__redis_config *cfg,
                         dlock__redis_pool *pool, int nconn)
{
    dlock__redis_mux *m = calloc(1, sizeof *m);
    int i;
    *out = NULL;
    if (!m)
        return DLOCK_ENOMEM;
    m->lanes = calloc((size_t)nconn, sizeof *m->lanes);
    if (!m->lanes) {
        free(m);
        return DLOCK_ENOMEM;
    }
    m->cfg = cfg;
    m->pool = pool;
    for (i = 0; i < nconn; i++) {
        if (pthread_mutex_init(&m->lanes[i].mu, NULL) != 0) {
            dlock__redis_mux_free(m);
            return DLOCK_ENOMEM;
        }
        m->nlanes++;
    }
    *out = m;
    return 0;
}

static void req_put(mux_req *r)
{
    int i;
    if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (i = 0; i < r->got; i++)
        freeReplyObject(r->replies[i]);
    pthread_cond_destroy(&r->cv);
    if (r->fsig) {
        dlock_signal_destroy(r->fsig);
        free(r->fsig);
    }
    free(r);
}

/* Adds d to the lane's counts that r is in. Every change of a call's
 * waiting, state or abandoned goes through uncount / recount around it.
 * Called with l->mu held. */
static void count(lane *l, const mux_req *r, int d)
{
    if (!r->waiting)
        return;
    if (r->state == QUEUED) {
        l->qwaiting += d;
        if (!r->in_loop)
            l->tqwaiting += d;
    } else if (r->state == INFLIGHT && !r->abandoned) {
        l->fwaiting += d;
        if (!r->in_loop)
            l->tfwaiting += d;
    }
}

static void uncount(lane *l, const mux_req *r)
{
    count(l, r, -1);
}

static void recount(lane *l, const mux_req *r)
{
    count(l, r, 1);
}

/* Wakes r's caller once l->mu is released: woken under the mutex, it would
 * only block again on it. Called with l->mu held. */
static void wake(lane *l, mux_req *r)
{
    if (r->to_wake)
        return;
    r->to_wake = 1;
    __atomic_add_fetch(&r->refs, 1, __ATOMIC_RELAXED);
    r->wnext = NULL;
    if (l->wake_tail)
        l->wake_tail->wnext = r;
    else
        l->wake = r;
    l->wake_tail = r;
}

/* Releases l->mu, then wakes the callers wake() listed (a few at a time:
 * the list is only touched under the mutex). */
static void lane_unlock(lane *l)
{
    for (;;) {
        mux_req *batch[32];
        int fiber[32];
        int n = 0, i;
        while (l->wake && n < (int)(sizeof batch / sizeof batch[0])) {
            mux_req *r = l->wake;
            l->wake = r->wnext;
            r->to_wake = 0;
            fiber[n] = r->in_fiber;
            batch[n++] = r;
        }
        if (!l->wake)
            l->wake_tail = NULL;
        pthread_mutex_unlock(&l->mu);
        for (i = 0; i < n; i++) {
            if (fiber[i])
                dlock_signal_raise(batch[i]->fsig);
            else
                pthread_cond_signal(&batch[i]->cv);
            req_put(batch[i]);
        }
        if (n < (int)(sizeof batch / sizeof batch[0]))
            return;
        pthread_mutex_lock(&l->mu);
    }
}

/* Called with l->mu held. */
static void session_unref(dlock__redis_mux *m, session *s)
{
    if (--s->refs > 0)
        return;
    dlock__redis_pool_release(m->pool, s->c, s->broken);
    pthread_mutex_destroy(&s->io);
    free(s);
}

void dlock__redis_mux_free(dlock__redis_mux *m)
{
    int i;
    if (!m)
        return;
    for (i = 0; i < m->nlanes; i++) {
        lane *l = &m->lanes[i];
        mux_req *r, *next;
        /* Placeholders of abandoned calls: their replies never came. */
        for (r = l->fhead; r; r = next) {
            next = r->next;
            req_put(r);
        }
        if (l->s) {
            if (l->fhead)
                l->s->broken = 1;
            session_unref(m, l->s);
        }
        dlock__redis_cmdbuf_free(&l->wbuf);
        pthread_mutex_destroy(&l->mu);
    }
    free(m->lanes);
    free(m);
}

/* Ends r's call with rc (and detail) or frees it if its caller left.
 * Called with l->mu held, r unlinked. */
static void finish(lane *l, mux_req *r, int rc, const char *detail)
{
    uncount(l, r);
    l->count--;
    if (r->abandoned) {
        l->abandoned--;
        req_put(r);
        return;
    }
    r->state = DONE;
    r->rc = rc;
    if (detail)
        snprintf(r->err, sizeof r->err, "%s", detail);
    wake(l, r);
}

/* The connection is gone or out of step: every call on the lane ends
 * with rc now, and the next call opens a new connection. A reader blocked
 * in poll() is woken by the shutdown. Called with l->mu held. */
static void break_lane(dlock__redis_mux *m, lane *l, session *s, int rc,
                       const char *detail)
{
    mux_req *r;
    if (s->broken)
        return;
    s->broken = 1;
    shutdown(dlock__redis_transport_fd(s->c->t), SHUT_RDWR);
    while ((r = l->fhead) != NULL) {
        l->fhead = r->next;
        finish(l, r, rc, detail);
    }
    l->ftail = NULL;
    while ((r = l->qhead) != NULL) {
        l->qhead = r->next;
        finish(l, r, rc, detail);
    }
    l->qtail = NULL;
    if (l->s == s) {
        l->s = NULL;
        session_unref(m, s);
    }
}

/* Ends every queued call with rc (a connection could not be opened).
 * Called with l->mu held. */
static void fail_queued(lane *l, int rc, const char *detail)
{
    mux_req *r;
    while ((r = l->qhead) != NULL) {
        l->qhead = r->next;
        finish(l, r, rc, detail);
    }
    l->qtail = NULL;
}

/* Takes me out of the queue (the caller counts it out). */
static void unlink_queued(lane *l, mux_req *me)
{
    mux_req **pp = &l->qhead, *prev = NULL;
    while (*pp && *pp != me) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return;
    *pp = me->next;
    if (l->qtail == me)
        l->qtail = prev;
}

/* Opens the lane's connection (me is the writer; its call is queued).
 * Called with l->mu held; returns with it held. 0 or an error that has
 * already ended the calls concerned. */
static int open_session(dlock__redis_mux *m, lane *l, mux_req *me,
                        int64_t deadline_ms)
{
    dlock__redis_conn *c = NULL;
    session *s;
    char detail[512];
    int rc;

    lane_unlock(l);
    detail[0] = '\0';
    rc = dlock__redis_pool_acquire(m->pool, &c, deadline_ms, detail,
                                   sizeof detail);
    s = rc == 0 ? calloc(1, sizeof *s) : NULL;
    if (rc == 0 && (!s || pthread_mutex_init(&s->io, NULL) != 0)) {
        free(s);
        dlock__redis_pool_release(m->pool, c, 1);
        rc = DLOCK_ENOMEM;
        snprintf(detail, sizeof detail, "redis %s: out of memory",
                 m->cfg->url.where);
    }
    pthread_mutex_lock(&l->mu);
    if (rc == DLOCK_ETIMEDOUT && deadline_ms != INT64_MAX) {
        /* The writer's own budget ran out: the others keep theirs. */
        unlink_queued(l, me);
        finish(l, me, rc, detail);
        return rc;
    }
    if (rc != 0) {
        fail_queued(l, rc, detail);
        return rc;
    }
    s->c = c;
    s->tls = dlock__redis_transport_tls(c->t);
    s->refs = 1;
    l->s = s;
    return 0;
}

/* Moves every queued call in flight, in write order and before the write,
 * so the reader finds them when the replies come, and returns what to
 * write. The writer's own call alone (one thread at a time: the usual case)
 * is sent from its own buffer: its caller is right here. Others are copied
 * into l->wbuf under the mutex: their callers may leave (and free them) as
 * soon as it is released. NULL: out of memory (the lane must break).
 * Called with l->mu held. */
static const dlock__redis_cmdbuf *take_queued(lane *l, mux_req *me,
                                              int64_t cmd_deadline)
{
    const dlock__redis_cmdbuf *out =
        l->qhead == me && !me->next ? me->b : &l->wbuf;
    mux_req *r;

    dlock__redis_cmdbuf_reset(&l->wbuf);
    while ((r = l->qhead) != NULL) {
        if (out == &l->wbuf &&
            dlock__redis_cmdbuf_append(&l->wbuf, r->b->data, r->b->len) != 0)
            return NULL;
        l->qhead = r->next;
        r->next = NULL;
        r->b = NULL;
        uncount(l, r);
        r->state = INFLIGHT;
        recount(l, r);
        r->cmd_deadline = cmd_deadline;
        if (l->ftail)
            l->ftail->next = r;
        else
            l->fhead = r;
        l->ftail = r;
    }
    l->qtail = NULL;
    return out;
}

/* me takes the writer's role: opens the connection if needed, then writes
 * everything queued in one go. Called with l->mu held, returns with it
 * held. */
static void write_batch(dlock__redis_mux *m, lane *l, mux_req *me,
                        int64_t deadline_ms)
{
    const dlock__redis_config *cfg = m->cfg;
    char detail[512];
    session *s;
    int rc, round;

    l->writing = 1;
    for (;;) {
        int fresh = 0, stale;
        if (!l->s) {
            if (open_session(m, l, me, deadline_ms) != 0)
                goto out;
            fresh = 1;
        }
        if (fresh || l->fhead || l->reading)
            break;
        /* Idle since its last reply: the server may have closed it
         * meanwhile (restart, idle timeout). Nobody else is on it now. */
        s = l->s;
        s->refs++;
        lane_unlock(l);
        pthread_mutex_lock(&s->io);
        stale = dlock__redis_conn_stale(s->c);
        pthread_mutex_unlock(&s->io);
        pthread_mutex_lock(&l->mu);
        if (!stale && !s->broken) {
            session_unref(m, s);
            break;
        }
        s->broken = 1;
        if (l->s == s) {
            l->s = NULL;
            s->refs--; /* the lane's; ours keeps it until just below */
        }
        session_unref(m, s);
        if (!l->qhead)
            goto out;
    }
    /* What arrives while a write is in flight goes in the next one, by
     * this writer (up to WRITE_ROUNDS writes: its own call waits). */
    for (round = 0; round < WRITE_ROUNDS && l->qhead && l->s; round++) {
        const dlock__redis_cmdbuf *out_buf;
        s = l->s;
        s->refs++;
        out_buf = take_queued(l, me,
                              dlock__redis_deadline(cfg->command_timeout_ms));
        lane_unlock(l);
        detail[0] = '\0';
        if (!out_buf) {
            rc = DLOCK_ENOMEM;
            snprintf(detail, sizeof detail, "redis %s: out of memory",
                     cfg->url.where);
        } else {
            pthread_mutex_lock(&s->io);
            /* The command timeout, not the writer's budget: a partial
             * write would break the lane for everyone. It only blocks when
             * the server stopped reading for a socket buffer's worth. */
            rc = dlock__redis_send(s->c, out_buf, cfg, INT64_MAX, detail,
                                   sizeof detail);
            pthread_mutex_unlock(&s->io);
        }
        pthread_mutex_lock(&l->mu);
        if (rc != 0)
            /* What was written of the batch is unknown: out of step. */
            break_lane(m, l, s, rc == DLOCK_ENOMEM ? rc : DLOCK_ECONN,
                       detail);
        session_unref(m, s);
    }
out:
    l->writing = 0;
}

/* Replies parsed per look at the reader's buffer. */
#define PARSE_MAX 64

/* Parses up to PARSE_MAX replies read so far into got (only the reader
 * touches the connection's reply reader, so no lock is needed). Returns
 * how many; *bad when the stream is not RESP. */
static int parse(session *s, redisReply **got, int *bad)
{
    int n = 0;
    *bad = 0;
    while (n < PARSE_MAX) {
        redisReply *rep;
        if (dlock__redis_conn_next(s->c, &rep) != 0) {
            *bad = 1;
            break;
        }
        if (!rep)
            break;
        got[n++] = rep;
    }
    return n;
}

/* Hands the n parsed replies to the calls in flight, oldest first; bad:
 * what followed them was not RESP. Called with l->mu held. 0, or an error
 * that broke the lane. */
static int dispatch(dlock__redis_mux *m, lane *l, session *s,
                    redisReply **got, int n, int bad)
{
    char detail[512];
    int i;
    for (i = 0; i < n; i++) {
        mux_req *r = l->fhead;
        if (!r) {
            snprintf(detail, sizeof detail,
                     "redis %s: a reply nobody asked for (connection out "
                     "of step)",
                     m->cfg->url.where);
            break_lane(m, l, s, DLOCK_EPROTO, detail);
            for (; i < n; i++)
                freeReplyObject(got[i]);
            return DLOCK_EPROTO;
        }
        r->replies[r->got++] = got[i];
        if (r->got == r->nreplies) {
            l->fhead = r->next;
            if (!l->fhead)
                l->ftail = NULL;
            finish(l, r, 0, NULL);
        }
    }
    if (bad) {
        dlock__redis_conn_eproto(s->c, m->cfg->url.where, detail,
                                 sizeof detail);
        break_lane(m, l, s, DLOCK_EPROTO, detail);
        return DLOCK_EPROTO;
    }
    return 0;
}

/* When me's wait ends for the command timeout (the server taken as gone):
 * that long after me was written, or after the lane last got replies,
 * whichever is later. Replies come in order: a server still answering the
 * calls ahead of me (a long queue, read by a loop's fiber between other
 * work) is not silent. The caller's own deadline bounds the wait anyway.
 * Called with l->mu. */
static int64_t silent_until(const dlock__redis_mux *m, const lane *l,
                            const mux_req *me)
{
    int64_t heard = l->heard_ms > 0 && m->cfg->command_timeout_ms > 0
                        ? l->heard_ms + m->cfg->command_timeout_ms
                        : 0;

    return me->cmd_deadline > heard ? me->cmd_deadline : heard;
}

/* me takes the reader's role until its call is done or its wait ends;
 * or, look_only (a loop's fiber), until a read would wait: a fiber never
 * holds the role while it is parked (a thread's call on the lane would
 * wait for the loop to run it). Returns whether anything was read.
 * Called with l->mu held, returns with it held. */
static int read_replies(dlock__redis_mux *m, lane *l, mux_req *me,
                        int64_t deadline_ms, int look_only)
{
    session *s = l->s;
    char detail[512];
    redisReply *got[PARSE_MAX];
    int n = s->unparsed ? PARSE_MAX : 0, bad = 0, any = 0;

    l->reading = 1;
    s->refs++;
    while (me->state != DONE && !s->broken) {
        int64_t silent = silent_until(m, l, me);
        int64_t until = look_only ? 0 /* past: one look */
                        : silent < deadline_ms ? silent : deadline_ms;
        int64_t now = dlock__redis_now_ms();
        struct pollfd p;
        int rc = 0, ready = 1;

        lane_unlock(l);
        if (n < PARSE_MAX && !s->tls) {
            /* The last look took all there was: read more. A plain
             * socket is read while the writer writes (no io mutex), in
             * one blocking recv() when the command timeout ends the wait. */
            size_t nread;
            detail[0] = '\0';
            rc = dlock__redis_conn_fill_shared(s->c, until, &nread, detail,
                                               sizeof detail);
            ready = nread > 0;
        } else if (n < PARSE_MAX) {
            pthread_mutex_lock(&s->io);
            ready = dlock__redis_transport_pending(s->c->t);
            p.fd = dlock__redis_transport_fd(s->c->t);
            p.events = dlock__redis_transport_events(s->c->t);
            pthread_mutex_unlock(&s->io);
            /* Past the wait's end, one look without waiting: a reply
             * already there is taken (the caller of a split call may come
             * to read late, having read other nodes first). */
            if (!ready)
                ready = dlock__wait_fd(p.fd, p.events, until) > 0;
            if (ready) {
                pthread_mutex_lock(&s->io);
                detail[0] = '\0';
                rc = dlock__redis_conn_fill(s->c, detail, sizeof detail);
                pthread_mutex_unlock(&s->io);
            }
        }
        n = rc == 0 && ready ? parse(s, got, &bad) : 0;
        pthread_mutex_lock(&l->mu);
        if (s->broken || rc != 0) {
            while (n > 0)
                freeReplyObject(got[--n]);
            if (rc != 0)
                break_lane(m, l, s, DLOCK_ECONN, detail);
            break;
        }
        if (n > 0)
            l->heard_ms = dlock__redis_now_ms();
        any |= ready || n > 0;
        if (dispatch(m, l, s, got, n, bad) != 0)
            break;
        /* A pass begun past the wait's end was its one last look: a
         * server that keeps sending (a trickle, a huge reply, replies
         * for others) does not hold the caller past its deadline. A
         * fiber's look goes on while there is something to take. */
        if (look_only ? !ready && n == 0 : now >= until)
            break;
    }
    /* A full look may have left more: the next reader parses first. */
    s->unparsed = n == PARSE_MAX;
    l->reading = 0;
    session_unref(m, s);
    return any;
}

/* Wakes whoever may now take a role nobody holds; threads_only: only a
 * caller on a thread (not in a loop's fiber) and not self. Called with
 * l->mu. */
static void hand_off_to(lane *l, int threads_only, const mux_req *self)
{
    mux_req *r;
    /* Only a caller in _wait can take a role: one that only submitted is
     * busy elsewhere (sending to other nodes) and takes it when it comes
     * to wait, if nobody has done its part by then. */
    if (!l->writing && (threads_only ? l->tqwaiting : l->qwaiting) > 0)
        for (r = l->qhead; r; r = r->next)
            if (r->waiting && r != self && !(threads_only && r->in_loop)) {
                wake(l, r);
                break;
            }
    if (!l->reading && (threads_only ? l->tfwaiting : l->fwaiting) > 0)
        for (r = l->fhead; r; r = r->next)
            if (!r->abandoned && r->waiting && r != self &&
                !(threads_only && r->in_loop)) {
                wake(l, r);
                break;
            }
}

static void hand_off(lane *l)
{
    hand_off_to(l, 0, NULL);
}

int dlock__redis_mux_submit(dlock__redis_mux *m, const dlock__redis_cmdbuf *b,
                            int nreplies, dlock__redis_mux_req **out,
                            int64_t deadline_ms, char *errbuf, size_t errlen)
{
    const dlock__redis_config *cfg = m->cfg;
    unsigned pick = __atomic_fetch_add(&m->next, 1, __ATOMIC_RELAXED);
    lane *l = &m->lanes[pick % (unsigned)m->nlanes];
    mux_req *me;

    *out = NULL;
    me = dlock__zalloc(sizeof *me + (size_t)nreplies * sizeof me->replies[0]);
    if (!me || dlock__wait_cond_init(&me->cv) != 0) {
        free(me);
        dlock__redis_errf(errbuf, errlen, "redis %s: out of memory",
                          cfg->url.where);
        return DLOCK_ENOMEM;
    }
    me->refs = 1;
    me->b = b;
    me->nreplies = nreplies;
    me->cmd_deadline = INT64_MAX;
    me->lane = l;

    pthread_mutex_lock(&l->mu);
    if (l->count >= cfg->queue_max && l->count == l->abandoned && l->s) {
        /* Only placeholders: no caller is left to read their replies, so
         * they would hold the lane full for good. */
        char detail[512];
        snprintf(detail, sizeof detail,
                 "redis %s: connection dropped: %d calls gave up waiting "
                 "for their replies (queue_max=%d)",
                 cfg->url.where, l->count, cfg->queue_max);
        break_lane(m, l, l->s, DLOCK_ECONN, detail);
    }
    if (l->count >= cfg->queue_max) {
        lane_unlock(l);
        req_put(me);
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: request queue full (%d calls queued or "
                          "in flight on one connection; the URL's "
                          "queue_max=N sets the limit)",
                          cfg->url.where, cfg->queue_max);
        return DLOCK_ECONN;
    }
    if (l->qtail)
        l->qtail->next = me;
    else
        l->qhead = me;
    l->qtail = me;
    l->count++;
    /* Written now when nobody is writing (else the writer of the moment,
     * or this caller's _wait, takes it in a later batch). A loop's fiber
     * that will wait for it right after its turn leaves it queued: the
     * first of the fibers to wait writes what they all queued meanwhile,
     * in one write (core/fiber.h: dlock__fiber_batch). */
    if (!l->writing && !dlock__fiber_batching())
        write_batch(m, l, me, deadline_ms);
    hand_off(l);
    if (me->state == DONE && me->rc != 0) {
        /* Failed already (no connection could be opened): said now. */
        int rc = me->rc;
        lane_unlock(l);
        dlock__redis_errf(errbuf, errlen, "%s", me->err);
        req_put(me);
        return rc;
    }
    lane_unlock(l);
    *out = me;
    return 0;
}

/* Sleeps until me is woken (its call ended, or a role may be free) or
 * until passes; l->mu held, released meanwhile. In a loop's fiber the
 * fiber sleeps, not the thread (without memory for its signal: a short
 * nap of the fiber instead, then the caller looks again). */
/* me's signal for a caller in a loop's fiber, made at its first use;
 * NULL: out of memory. */
static dlock_signal *fiber_signal(mux_req *me)
{
    if (!me->fsig) {
        dlock_signal *sig = malloc(sizeof *sig);
        if (sig && dlock_signal_init(sig) == 0)
            me->fsig = sig;
        else
            free(sig);
    }
    return me->fsig;
}

static void wait_woken(lane *l, mux_req *me, int64_t until)
{
    if (dlock__fiber_current())
        me->in_fiber = fiber_signal(me) != NULL;
    dlock__wait_cond_or(&me->cv, &l->mu, me->in_fiber ? me->fsig : NULL, until);
    me->in_fiber = 0;
}

/* Breaks l's connection, silent for the command timeout. Not inlined:
 * its buffer would widen the frame every read runs under (see
 * dlock__redis_conn's rbuf). Called with l->mu held, l->s set. */
__attribute__((noinline)) static void drop_silent(dlock__redis_mux *m, lane *l)
{
    char detail[512];
    snprintf(detail, sizeof detail,
             "redis %s: connection dropped: no reply within %lld ms",
             m->cfg->url.where, (long long)m->cfg->command_timeout_ms);
    break_lane(m, l, l->s, DLOCK_ECONN, detail);
}

/* A caller in a loop's fiber that found nothing to read: sleeps until
 * the lane's socket has something, or it is woken (its call ended by
 * another reader, a role free), or until passes, without holding the
 * reader's role. Called with l->mu held, l->s set; released meanwhile. */
static void fiber_wait_readable(lane *l, mux_req *me, int64_t until)
{
    dlock__redis_transport *t = l->s->c->t;
    int fd = dlock__redis_transport_fd(t);
    short ev = dlock__redis_transport_events(t);

    if (!fiber_signal(me)) {
        wait_woken(l, me, until); /* a short nap, then a look */
        return;
    }
    me->in_fiber = 1;
    lane_unlock(l); /* wake-ups owed go out first */
    dlock__wait_fd_or(me->fsig, fd, ev, until);
    pthread_mutex_lock(&l->mu);
    me->in_fiber = 0;
}

int dlock__redis_mux_wait(dlock__redis_mux *m, dlock__redis_mux_req *me,
                          redisReply **replies, int64_t deadline_ms,
                          char *errbuf, size_t errlen)
{
    const dlock__redis_config *cfg = m->cfg;
    lane *l = me->lane;
    int nreplies = me->nreplies;
    int rc, i;

    pthread_mutex_lock(&l->mu);
    if (!me->waiting) {
        me->waiting = 1;
        me->in_loop = dlock__fiber_current() != NULL;
        recount(l, me);
    }
    for (;;) {
        int64_t until;
        if (me->state == DONE)
            break;
        if (!l->writing && l->qhead) {
            write_batch(m, l, me, deadline_ms);
            continue;
        }
        if (me->state == INFLIGHT && !l->reading) {
            int fiber = dlock__fiber_current() != NULL, any;
            int64_t silent;
            any = read_replies(m, l, me, deadline_ms, fiber);
            silent = silent_until(m, l, me);
            until = silent < deadline_ms ? silent : deadline_ms;
            if (me->state != DONE && dlock__redis_now_ms() >= until)
                break;
            if (fiber && me->state != DONE) {
                /* The role is free again: a thread waiting may take it
                 * (fibers wait for the socket themselves, see below). */
                hand_off_to(l, 1, me);
                if (!any && l->s)
                    fiber_wait_readable(l, me, until);
            }
            continue;
        }
        until = deadline_ms;
        if (me->state == INFLIGHT) {
            int64_t silent = silent_until(m, l, me);
            if (silent < until)
                until = silent;
        }
        if (dlock__redis_now_ms() >= until)
            break;
        if (l->wake) {
            /* Wake-ups owed by this thread go out before it sleeps. */
            lane_unlock(l);
            pthread_mutex_lock(&l->mu);
            continue;
        }
        wait_woken(l, me, until);
    }

    if (me->state == DONE) {
        rc = me->rc;
        if (rc == 0)
            for (i = 0; i < nreplies; i++)
                replies[i] = me->replies[i];
        else
            dlock__redis_errf(errbuf, errlen, "%s", me->err);
        me->got = rc == 0 ? 0 : me->got;
        hand_off(l);
        lane_unlock(l);
        req_put(me);
        return rc;
    }

    /* The wait ended first. */
    rc = DLOCK_ETIMEDOUT;
    if (me->state == INFLIGHT && silent_until(m, l, me) <= deadline_ms) {
        /* No reply for the command timeout: the server is gone. */
        dlock__redis_errf(errbuf, errlen, "redis %s: no reply within %lld ms",
                          cfg->url.where, (long long)cfg->command_timeout_ms);
        uncount(l, me);
        me->abandoned = 1;
        l->abandoned++;
        if (l->s)
            drop_silent(m, l);
        hand_off(l);
        lane_unlock(l);
        return rc;
    }
    dlock__redis_errf(errbuf, errlen,
                      "redis %s: no reply within the call's time budget",
                      cfg->url.where);
    if (me->state == QUEUED) {
        unlink_queued(l, me);
        uncount(l, me);
        l->count--;
        hand_off(l);
        lane_unlock(l);
        req_put(me);
        return rc;
    }
    /* In flight: stays as a placeholder whose late replies are read and
     * freed, never given to the next call. */
    uncount(l, me);
    me->abandoned = 1;
    l->abandoned++;
    hand_off(l);
    lane_unlock(l);
    return rc;
}

int dlock__redis_mux_call(dlock__redis_mux *m, const dlock__redis_cmdbuf *b,
                          int nreplies, redisReply **replies,
                          int64_t deadline_ms, char *errbuf, size_t errlen)
{
    dlock__redis_mux_req *r;
    int rc = dlock__redis_mux_submit(m, b, nreplies, &r, deadline_ms, errbuf,
                                     errlen);

    return rc != 0 ? rc
                   : dlock__redis_mux_wait(m, r, replies, deadline_ms, errbuf,
                                           errlen);
}
