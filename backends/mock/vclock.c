/*
 * dlock — the virtual clock of the mock backend.
 *
 * Time moves only when a test calls dlock_vclock_advance. An advance is a
 * small discrete-event simulation: it jumps to the earliest sleeper deadline
 * on the way, wakes the sleepers due, and waits (in real time, bounded) until
 * every thread it woke has "settled" — gone back to sleep on the clock, or
 * declared through done() that it will not sleep on that signal again —
 * before taking the next step. That is what makes a watchdog renewing every
 * 10 s renew six times during advance(60000) instead of once.
 *
 * Locking: the clock mutex protects everything here. Lock order is clock
 * mutex -> signal mutex: advance raises signals while holding the clock
 * mutex, and a sleeper never holds its signal's mutex while taking the clock
 * mutex. Because the raise happens under the clock mutex, a sleeper that has
 * unregistered (under the same mutex) knows advance will not touch its
 * signal again, so the signal may live on the sleeper's stack.
 *
 * fork(): a child inherits the lists with the parent's sleepers, threads it
 * does not have, whose entries are on their stacks; the C library reuses
 * those stacks for the child's new threads, or unmaps them. The child's
 * first use of the lists forgets them (lock_lists).
 */
#include "dlock/mock.h"
#include "dlock/sys/backend.h"
#include "dlock/sys/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* wall_ms = VCLOCK_EPOCH_MS + now_ms: a plausible Unix time (Nov 2023) so
 * that scripts storing wall-clock deadlines see realistic magnitudes. */
#define VCLOCK_EPOCH_MS 1700000000000LL

/* How long, in real time, one advance step waits for the threads it woke. */
#define VCLOCK_SETTLE_MS 5000

typedef struct vc_sleeper {
    dlock_signal *sig;
    int64_t deadline;
    int fired; /* raised by advance; the thread is on its way out */
    int background; /* a watchdog (background.h): not a "waiter" */
    struct vc_sleeper *prev, *next;
} vc_sleeper;

struct dlock_vclock {
    dlock_clock clock; /* first: a dlock_clock * is a dlock_vclock * */
    pthread_mutex_t mutex;
    /* Broadcast on any change a waiter may care about: a sleeper registered
     * or left, a pending thread settled, an advance finished. */
    pthread_cond_t changed;
    int64_t now;
    int refs;
    vc_sleeper *sleepers;
    int nsleeping; /* registered and not fired */
    int nwaiting;  /* the same, without the background threads */
    /* Signals whose threads were woken by advance (or declared busy) and
     * have not settled yet. A handful at most, so an array is enough. */
    dlock_signal **pending;
    size_t npending, cappending;
    int advancing;
    unsigned long forks; /* fork_count when the lists were last kept */
};

static dlock_vclock *vc_of(dlock_clock *c)
{
    return (dlock_vclock *)c;
}

/* fork() children made so far, counted by an atfork handler in each
 * child: lock_lists compares it on every use, where a getpid() would be
 * a system call each time (a tenth of a simulator's advance). */
static unsigned long fork_count;
static pthread_once_t fork_watch_once = PTHREAD_ONCE_INIT;

static void forked(void)
{
    __atomic_add_fetch(&fork_count, 1, __ATOMIC_RELAXED);
}

static void fork_watch(void)
{
    pthread_atfork(NULL, NULL, forked);
}

static unsigned long forks_now(void)
{
    pthread_once(&fork_watch_once, fork_watch);
    return __atomic_load_n(&fork_count, __ATOMIC_RELAXED);
}

/* Takes the clock mutex for a use of the sleepers and pending lists, which
 * in a fork() child forgets the parent's (see the top of this file): none
 * of those threads sleeps or advances here. */
static void lock_lists(dlock_vclock *vc)
{
    unsigned long forks = forks_now();

    pthread_mutex_lock(&vc->mutex);
    if (vc->forks != forks) {
        vc->forks = forks;
        vc->sleepers = NULL;
        vc->nsleeping = 0;
        vc->nwaiting = 0;
        vc->npending = 0;
        vc->advancing = 0;
    }
}

/* ---- helpers (clock mutex held) ------------------------------------------ */

static void pending_remove(dlock_vclock *vc, const dlock_signal *s)
{
    size_t i;

    for (i = 0; i < vc->npending; i++) {
        if (vc->pending[i] == s) {
            vc->pending[i] = vc->pending[--vc->npending];
            pthread_cond_broadcast(&vc->changed);
            return;
        }
    }
}

static void pending_add(dlock_vclock *vc, dlock_signal *s)
{
    size_t i;

    for (i = 0; i < vc->npending; i++)
        if (vc->pending[i] == s)
            return;
    if (vc->npending == vc->cappending) {
        size_t cap = vc->cappending ? vc->cappending * 2 : 8;
        dlock_signal **p = realloc(vc->pending, cap * sizeof(*p));

        /* Out of memory only costs precision: advance will not wait for
         * this thread, as if it had settled at once. */
        if (p == NULL)
            return;
        vc->pending = p;
        vc->cappending = cap;
    }
    vc->pending[vc->npending++] = s;
}

/* Waits until every woken thread has settled, or gives up on them after
 * VCLOCK_SETTLE_MS of real time (a thread blocked elsewhere must not hang the
 * test; forgetting it keeps later steps from waiting on it again). */
static void wait_settled(dlock_vclock *vc)
{
    int64_t until;

    if (vc->npending == 0)
        return;
    until = dlock_clock_now(dlock_clock_realtime()) + VCLOCK_SETTLE_MS;
    while (vc->npending > 0) {
        if (dlock_backend_wait_cond(&vc->changed, &vc->mutex, until) == DLOCK_ETIMEDOUT) {
            vc->npending = 0;
            break;
        }
    }
}

/* ---- the clock interface -------------------------------------------------- */

static int64_t vc_now_ms(dlock_clock *c)
{
    dlock_vclock *vc = vc_of(c);
    int64_t now;

    pthread_mutex_lock(&vc->mutex);
    now = vc->now;
    pthread_mutex_unlock(&vc->mutex);
    return now;
}

static int64_t vc_wall_ms(dlock_clock *c)
{
    int64_t now = vc_now_ms(c);

    /* Saturates: a clock advanced to the end of time (now near INT64_MAX)
     * must not wrap to a wall time in the past (found by the bad-input
     * matrix under UBSan). */
    return now > INT64_MAX - VCLOCK_EPOCH_MS ? INT64_MAX : VCLOCK_EPOCH_MS + now;
}

static int vc_sleep_until(dlock_clock *c, dlock_signal *s, int64_t deadline_ms)
{
    dlock_vclock *vc = vc_of(c);
    vc_sleeper me;
    int64_t now;

    if (s == NULL)
        return DLOCK_EINVAL;

    /* A raised flag is news the caller has not seen yet. */
    pthread_mutex_lock(&s->mutex);
    if (s->raised) {
        s->raised = 0;
        pthread_mutex_unlock(&s->mutex);
        return 0;
    }
    pthread_mutex_unlock(&s->mutex);

    lock_lists(vc);
    if (vc->now >= deadline_ms) {
        pthread_mutex_unlock(&vc->mutex);
        return DLOCK_ETIMEDOUT;
    }
    me.sig = s;
    me.deadline = deadline_ms;
    me.fired = 0;
    me.background = dlock_clock_thread_is_background();
    me.prev = NULL;
    me.next = vc->sleepers;
    if (vc->sleepers != NULL)
        vc->sleepers->prev = &me;
    vc->sleepers = &me;
    vc->nsleeping++;
    vc->nwaiting += !me.background;
    /* Back asleep: this thread has settled for any advance waiting on it. */
    pending_remove(vc, s);
    pthread_cond_broadcast(&vc->changed);
    pthread_mutex_unlock(&vc->mutex);

    /* The flag is sticky, so a raise between registering and here is not
     * lost. No real-time timeout: only advance or a message ends this. */
    pthread_mutex_lock(&s->mutex);
    while (!s->raised)
        dlock_backend_wait_cond(&s->cond, &s->mutex, INT64_MAX);
    s->raised = 0;
    pthread_mutex_unlock(&s->mutex);

    lock_lists(vc);
    if (me.prev != NULL)
        me.prev->next = me.next;
    else
        vc->sleepers = me.next;
    if (me.next != NULL)
        me.next->prev = me.prev;
    if (!me.fired) {
        vc->nsleeping--;
        vc->nwaiting -= !me.background;
    }
    now = vc->now;
    pthread_cond_broadcast(&vc->changed);
    pthread_mutex_unlock(&vc->mutex);

    return now >= deadline_ms ? DLOCK_ETIMEDOUT : 0;
}

static void vc_done(dlock_clock *c, dlock_signal *s)
{
    dlock_vclock *vc = vc_of(c);

    lock_lists(vc);
    pending_remove(vc, s);
    pthread_mutex_unlock(&vc->mutex);
}

static void vc_busy(dlock_clock *c, dlock_signal *s)
{
    dlock_vclock *vc = vc_of(c);

    lock_lists(vc);
    pending_add(vc, s);
    pthread_mutex_unlock(&vc->mutex);
}

static void vc_ref(dlock_clock *c)
{
    dlock_vclock *vc = vc_of(c);

    pthread_mutex_lock(&vc->mutex);
    vc->refs++;
    pthread_mutex_unlock(&vc->mutex);
}

static void vc_unref(dlock_clock *c)
{
    dlock_vclock *vc = vc_of(c);
    int last;

    pthread_mutex_lock(&vc->mutex);
    last = --vc->refs == 0;
    pthread_mutex_unlock(&vc->mutex);
    if (!last)
        return;
    pthread_cond_destroy(&vc->changed);
    pthread_mutex_destroy(&vc->mutex);
    free(vc->pending);
    free(vc);
}

static const dlock_clock_methods vc_methods = {
    1,
    vc_now_ms,
    vc_wall_ms,
    vc_sleep_until,
    vc_done,
    vc_ref,
    vc_unref,
    vc_busy,
};

/* ---- public API ------------------------------------------------------------ */

int dlock_vclock_new(dlock_vclock **out, int64_t start_ms)
{
    dlock_vclock *vc;
    pthread_condattr_t attr;

    if (out != NULL)
        *out = NULL;
    if (out == NULL || start_ms < 0)
        return DLOCK_EINVAL;
    vc = calloc(1, sizeof(*vc));
    if (vc == NULL)
        return DLOCK_ENOMEM;
    if (pthread_mutex_init(&vc->mutex, NULL) != 0) {
        free(vc);
        return DLOCK_ENOMEM;
    }
    if (pthread_condattr_init(&attr) != 0) {
        pthread_mutex_destroy(&vc->mutex);
        free(vc);
        return DLOCK_ENOMEM;
    }
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&vc->changed, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        pthread_mutex_destroy(&vc->mutex);
        free(vc);
        return DLOCK_ENOMEM;
    }
    pthread_condattr_destroy(&attr);
    vc->clock.methods = &vc_methods;
    vc->now = start_ms;
    vc->refs = 1;
    vc->forks = forks_now();
    *out = vc;
    return 0;
}

dlock_clock *dlock_vclock_clock(dlock_vclock *vc)
{
    return vc != NULL ? &vc->clock : NULL;
}

int dlock_vclock_advance(dlock_vclock *vc, int64_t ms)
{
    int64_t target;

    if (vc == NULL || ms < 0)
        return DLOCK_EINVAL;
    lock_lists(vc);
    /* Two advances interleaving their steps would make both meaningless. */
    while (vc->advancing)
        dlock_backend_wait_cond(&vc->changed, &vc->mutex, INT64_MAX);
    vc->advancing = 1;
    /* INT64_MAX stays unreachable: it means "no deadline". */
    target = ms > INT64_MAX - 1 - vc->now ? INT64_MAX - 1 : vc->now + ms;

    for (;;) {
        vc_sleeper *e;
        int64_t next = INT64_MAX;

        /* Also before the first step: a thread declared busy must reach its
         * first sleep before time moves past its deadline. */
        wait_settled(vc);
        for (e = vc->sleepers; e != NULL; e = e->next)
            if (!e->fired && e->deadline < next)
                next = e->deadline;
        if (next > target)
            break;
        if (next > vc->now)
            vc->now = next;
        for (e = vc->sleepers; e != NULL; e = e->next) {
            if (e->fired || e->deadline > vc->now)
                continue;
            e->fired = 1;
            vc->nsleeping--;
            vc->nwaiting -= !e->background;
            pending_add(vc, e->sig);
            dlock_signal_raise(e->sig);
        }
    }
    if (target > vc->now)
        vc->now = target;
    vc->advancing = 0;
    pthread_cond_broadcast(&vc->changed);
    pthread_mutex_unlock(&vc->mutex);
    return 0;
}

/* The count that sleepers or waiters read: every sleeper, or only the
 * application's. */
static int count(const dlock_vclock *vc, int waiters_only)
{
    return waiters_only ? vc->nwaiting : vc->nsleeping;
}

static int get_count(dlock_vclock *vc, int waiters_only)
{
    int n;

    if (vc == NULL)
        return 0;
    lock_lists(vc);
    n = count(vc, waiters_only);
    pthread_mutex_unlock(&vc->mutex);
    return n;
}

static int wait_count(dlock_vclock *vc, int n, int64_t timeout_real_ms, int waiters_only)
{
    int64_t until;
    int rc = 0;

    if (vc == NULL)
        return DLOCK_EINVAL;
    if (timeout_real_ms < 0)
        timeout_real_ms = 0;
    /* Keeps the timespec arithmetic in range; nobody waits a year. */
    if (timeout_real_ms > 365LL * 24 * 3600 * 1000)
        timeout_real_ms = 365LL * 24 * 3600 * 1000;
    until = dlock_clock_now(dlock_clock_realtime()) + timeout_real_ms;
    lock_lists(vc);
    while (count(vc, waiters_only) < n) {
        if (dlock_backend_wait_cond(&vc->changed, &vc->mutex, until) == DLOCK_ETIMEDOUT) {
            rc = count(vc, waiters_only) >= n ? 0 : DLOCK_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&vc->mutex);
    return rc;
}

int dlock_vclock_sleepers(dlock_vclock *vc)
{
    return get_count(vc, 0);
}

int dlock_vclock_wait_sleepers(dlock_vclock *vc, int n, int64_t timeout_real_ms)
{
    return wait_count(vc, n, timeout_real_ms, 0);
}

int dlock_vclock_waiters(dlock_vclock *vc)
{
    return get_count(vc, 1);
}

int dlock_vclock_wait_waiters(dlock_vclock *vc, int n, int64_t timeout_real_ms)
{
    return wait_count(vc, n, timeout_real_ms, 1);
}

int64_t dlock_vclock_now(dlock_vclock *vc)
{
    if (vc == NULL)
        return 0;
    return vc_now_ms(&vc->clock);
}

void dlock_vclock_free(dlock_vclock *vc)
{
    if (vc == NULL)
        return;
    vc_unref(&vc->clock);
}
