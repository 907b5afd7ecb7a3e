/*
 * Redis backend: the connection pool (see pool.h).
 */
#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fiber.h"
#include "core/log.h"
#include "conn.h"
#include "dlock/errors.h"
#include "dlock/sys/clock.h"
#include "safety.h"

/* A borrower on a loop's fiber waiting for a connection: it sleeps on its
 * signal, so that the loop's thread goes on running the fibers that hold
 * the connections (and would return them) instead of blocking in the
 * condition variable. Lives on the waiter's stack, listed while it
 * waits. */
typedef struct fiber_waiter {
    dlock_signal sig;
    struct fiber_waiter *next;
    int listed;
} fiber_waiter;

struct dlock__redis_pool {
    const dlock__redis_config *cfg;
    pthread_mutex_t mu;
    pthread_cond_t freed; /* a connection came back, or a slot opened */
    fiber_waiter *fibers, *fibers_tail; /* and told so, first come first */
    dlock__redis_conn **idle;  /* LIFO: the warmest connection goes out first */
    int nidle;
    int open;             /* lent + idle + being opened; <= pool_size */
    int failures;         /* consecutive failed connects */
    int probing;          /* an attempt runs while failures > 0 */
    int64_t retry_at_ms;  /* no new attempt before this */
    int last_rc;
    char last_err[512];
    /* What the server said of eviction and persistence (safety.h): the
     * last probe's; asked again on a connect while none was open (a
     * restart, a failover to this server) and on the first after failed
     * ones. */
    dlock__redis_facts facts;
};

int64_t dlock__redis_backoff_ms(const dlock__redis_config *cfg, int failures)
{
    int64_t d = cfg->reconnect_min_ms;
    int i;
    for (i = 1; i < failures && d < cfg->reconnect_max_ms; i++)
        d = d > INT64_MAX / 2 ? INT64_MAX : d * 2;
    return d < cfg->reconnect_max_ms ? d : cfg->reconnect_max_ms;
}

int dlock__redis_pool_new(dlock__redis_pool **out,
                          const dlock__redis_config *cfg)
{
    dlock__redis_pool *p = calloc(1, sizeof *p);
    *out = NULL;
    if (!p)
        return DLOCK_ENOMEM;
    p->cfg = cfg;
    p->idle = calloc((size_t)cfg->pool_size, sizeof *p->idle);
    if (!p->idle) {
        free(p);
        return DLOCK_ENOMEM;
    }
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->idle);
        free(p);
        return DLOCK_ENOMEM;
    }
    if (dlock__wait_cond_init(&p->freed) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p->idle);
        free(p);
        return DLOCK_ENOMEM;
    }
    *out = p;
    return 0;
}

void dlock__redis_pool_free(dlock__redis_pool *p)
{
    int i;
    if (!p)
        return;
    for (i = 0; i < p->nidle; i++)
        dlock__redis_conn_free(p->idle[i]);
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->mu);
    free(p->idle);
    free(p);
}

/* A connection came back or a slot opened (p->mu held): one waiting
 * thread and one waiting fiber are told (the one that comes second waits
 * again). Raised under p->mu: the waiter destroys its signal only after
 * taking it. */
static void tell_freed(dlock__redis_pool *p)
{
    fiber_waiter *w = p->fibers;

    pthread_cond_signal(&p->freed);
    if (!w)
        return;
    p->fibers = w->next;
    if (!p->fibers)
        p->fibers_tail = NULL;
    w->listed = 0;
    dlock_signal_raise(&w->sig);
}

/* Waits on a loop's fiber until told (tell_freed) or deadline (p->mu held,
 * released meanwhile). A cancelled fiber's sleep ends at once, and a
 * borrower is not cancelled mid-call: it then naps a millisecond at a
 * time, as it does without memory for its signal. A told waiter looks
 * again at once (the caller's loop), before its deadline: what it was told
 * of is taken, never lost. */
static void fiber_wait_until(dlock__redis_pool *p, int64_t deadline)
{
    fiber_waiter w;

    if (dlock__fiber_canceled() || dlock_signal_init(&w.sig) != 0) {
        dlock__wait_cond(&p->freed, &p->mu, deadline); /* a nap */
        return;
    }
    w.next = NULL;
    w.listed = 1;
    if (p->fibers_tail)
        p->fibers_tail->next = &w;
    else
        p->fibers = &w;
    p->fibers_tail = &w;
    dlock__wait_cond_or(&p->freed, &p->mu, &w.sig, deadline);
    if (w.listed) {
        fiber_waiter **q = &p->fibers, *prev = NULL;

        while (*q != &w) {
            prev = *q;
            q = &prev->next;
        }
        *q = w.next;
        if (p->fibers_tail == &w)
            p->fibers_tail = prev;
    }
    dlock_signal_destroy(&w.sig);
}

/* Called with p->mu held when no new connection may be tried yet. */
static int fail_fast(dlock__redis_pool *p, int64_t now, char *errbuf,
                     size_t errlen)
{
    const char *where = p->cfg->url.where;
    int rc = p->last_rc == DLOCK_EAUTH ? DLOCK_EAUTH : DLOCK_ECONN;
    if (p->probing)
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: connection down, a reconnect attempt is "
                          "in progress (last error: %s)",
                          where, p->last_err);
    else
        dlock__redis_errf(errbuf, errlen,
                          "redis %s: connection down, backing off; next "
                          "attempt in %lld ms (last error: %s)",
                          where, (long long)(p->retry_at_ms - now),
                          p->last_err);
    return rc;
}

int dlock__redis_pool_acquire(dlock__redis_pool *p, dlock__redis_conn **out,
                              int64_t deadline_ms, char *errbuf, size_t errlen)
{
    const dlock__redis_config *cfg = p->cfg;
    int64_t deadline = dlock__redis_deadline(cfg->connect_timeout_ms);
    int budgeted = deadline_ms < deadline;
    dlock__redis_conn *c;
    char detail[512];
    int rc;

    *out = NULL;
    if (budgeted)
        deadline = deadline_ms;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        int64_t now;
        if (p->nidle > 0) {
            c = p->idle[--p->nidle];
            pthread_mutex_unlock(&p->mu);
            if (!dlock__redis_conn_stale(c)) {
                *out = c;
                return 0;
            }
            dlock__redis_conn_free(c);
            pthread_mutex_lock(&p->mu);
            p->open--;
            continue;
        }
        now = dlock__redis_now_ms();
        if (p->open < cfg->pool_size) {
            int64_t budget = 0;
            int probe = 0;
            dlock__redis_facts ask, *asking = NULL;
            if (p->failures > 0) {
                if (p->probing || now < p->retry_at_ms) {
                    rc = fail_fast(p, now, errbuf, errlen);
                    pthread_mutex_unlock(&p->mu);
                    return rc;
                }
                p->probing = probe = 1;
            }
            if (probe || p->open == 0 || !p->facts.known) {
                /* A server that refused CONFIG is not asked again (its
                 * ACL: each refusal is an ACL LOG entry). */
                memset(&ask, 0, sizeof ask);
                ask.from_info = p->facts.known && p->facts.from_info;
                asking = &ask;
            }
            p->open++;
            pthread_mutex_unlock(&p->mu);

            if (deadline != INT64_MAX) {
                budget = deadline - now;
                if (budget < 1)
                    budget = 1;
            }
            detail[0] = '\0';
            rc = dlock__redis_connect(&c, cfg, budget, asking, detail,
                                      sizeof detail);

            pthread_mutex_lock(&p->mu);
            if (probe)
                p->probing = 0;
            if (rc == DLOCK_ETIMEDOUT && budgeted) {
                /* The caller's budget ran out, which says nothing about the
                 * server: no back-off for the others. */
                p->open--;
                dlock__redis_errf(errbuf, errlen, "%s (the call's time budget)",
                                  detail);
                tell_freed(p);
                pthread_mutex_unlock(&p->mu);
                return rc;
            }
            if (rc != 0) {
                p->open--;
                p->failures++;
                p->retry_at_ms = dlock__redis_now_ms() +
                                 dlock__redis_backoff_ms(cfg, p->failures);
                p->last_rc = rc;
                snprintf(p->last_err, sizeof p->last_err, "%s", detail);
                dlock__redis_errf(errbuf, errlen, "%s", detail);
                tell_freed(p);
                pthread_mutex_unlock(&p->mu);
                dlock__log(DLOCK_LOG_WARN, "connect failed: %s", detail);
                return rc;
            }
            p->failures = 0;
            if (asking && ask.known)
                p->facts = ask;
            pthread_mutex_unlock(&p->mu);
            if (asking && ask.known)
                dlock__redis_safety_report(cfg, &ask);
            if (probe && cfg->reconnects) __atomic_add_fetch(cfg->reconnects, 1, __ATOMIC_RELAXED);
            if (probe) dlock__log(DLOCK_LOG_INFO, "redis %s: reconnected", cfg->url.where);
            *out = c;
            return 0;
        }
        if (now >= deadline && budgeted) {
            pthread_mutex_unlock(&p->mu);
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: no free connection (all %d busy) "
                              "within the call's time budget",
                              cfg->url.where, cfg->pool_size);
            return DLOCK_ETIMEDOUT;
        }
        if (now >= deadline) {
            pthread_mutex_unlock(&p->mu);
            dlock__redis_errf(errbuf, errlen,
                              "redis %s: all %d connections stayed busy for "
                              "%lld ms (raise pool_size?)",
                              cfg->url.where, cfg->pool_size,
                              (long long)cfg->connect_timeout_ms);
            return DLOCK_ETIMEDOUT;
        }
        if (dlock__fiber_current())
            fiber_wait_until(p, deadline);
        else
            dlock__wait_cond(&p->freed, &p->mu, deadline);
    }
}

void dlock__redis_pool_release(dlock__redis_pool *p, dlock__redis_conn *c,
                               int broken)
{
    if (!c)
        return;
    if (broken || c->broken) {
        dlock__redis_conn_free(c);
        pthread_mutex_lock(&p->mu);
        p->open--;
        tell_freed(p);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->idle[p->nidle++] = c;
    tell_freed(p);
    pthread_mutex_unlock(&p->mu);
}

int dlock__redis_pool_send(dlock__redis_pool *p, const dlock__redis_cmdbuf *b,
                           dlock__redis_conn **out, int64_t deadline_ms,
                           char *errbuf, size_t errlen)
{
    dlock__redis_conn *c;
    int rc;

    *out = NULL;
    rc = dlock__redis_pool_acquire(p, &c, deadline_ms, errbuf, errlen);
    if (rc != 0)
        return rc;
    rc = dlock__redis_send(c, b, p->cfg, deadline_ms, errbuf, errlen);
    if (rc != 0) {
        dlock__redis_pool_release(p, c, 1);
        return rc;
    }
    *out = c;
    return 0;
}

int dlock__redis_pool_receive(dlock__redis_pool *p, dlock__redis_conn *c,
                              int nreplies, redisReply **replies,
                              int64_t deadline_ms, char *errbuf, size_t errlen)
{
    int rc = 0, i, got = 0;

    while (rc == 0 && got < nreplies) {
        rc = dlock__redis_read(c, &replies[got], p->cfg, deadline_ms, errbuf,
                               errlen);
        if (rc == 0)
            got++;
    }
    /* A failure leaves the reply stream out of step (or gone). */
    dlock__redis_pool_release(p, c, rc != 0);
    /* And no reply with the caller: one that frees what is left in its
     * array would free these a second time. */
    if (rc != 0)
        for (i = 0; i < got; i++) {
            freeReplyObject(replies[i]);
            replies[i] = NULL;
        }
    return rc;
}

int dlock__redis_pool_call(dlock__redis_pool *p, const dlock__redis_cmdbuf *b,
                           int nreplies, redisReply **replies,
                           int64_t deadline_ms, char *errbuf, size_t errlen)
{
    dlock__redis_conn *c;
    int rc = dlock__redis_pool_send(p, b, &c, deadline_ms, errbuf, errlen);

    return rc != 0 ? rc
                   : dlock__redis_pool_receive(p, c, nreplies, replies,
                                               deadline_ms, errbuf, errlen);
}

int dlock__redis_pool_facts(dlock__redis_pool *p, dlock__redis_facts *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->facts;
    pthread_mutex_unlock(&p->mu);
    return out->known;
}
