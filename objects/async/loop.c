/*
 * dlock — the asynchronous loop (api/dlock/async.h).
 *
 * Each operation runs the blocking form's code on a fiber of the loop's
 * thread (core/fiber.h). The loop keeps four lists:
 *  - incoming: started, not yet run (filled by starters, any thread);
 *  - ready: woken (a raised signal, a cancel, a socket): resume;
 *  - spent: the timers run out of waits whose budget has ended (first,
 *    with their callbacks: a timed-out wait is not late behind new work);
 *  - due: the other timers run out (after ready: a slice takes news first);
 *  - turns: fibers that sent a request and read its reply once every
 *    ready fiber sent its own (one round trip for the whole batch);
 *  - done: finished, callback to call.
 * and a timer heap of the parked (sleeping) operations, on the client's
 * clock. A parked operation is woken through its signal's notify hook
 * (dlock_signal_set_notify): a pub/sub message, the client's cancel, or
 * dlock_op_cancel.
 *
 * Sockets: an operation waiting for a reply (or to write, or to connect)
 * parks on its socket (DLOCK__FIBER_IO, from the backend's socket waits)
 * instead of blocking the thread. The loop keeps one epoll set holding
 * its eventfd and those sockets (one-shot); that set is the one file
 * descriptor an application watches (dlock_loop_fd in poll mode, add_read
 * in hook mode), so a loop of any kind sees a reply arrive. Each pass of
 * the loop takes the ready sockets from the set and resumes their fibers.
 *
 * Slices: one run (dlock_loop_run, dlock_loop_on_*) stops after the
 * client's loop_slice_ms of real time, between two steps or callbacks,
 * and leaves the rest in its lists in order (the ready fibers get half of
 * it at most, the turns the rest); it then writes efd (carried), so the epoll set stays readable
 * and the application's loop, whatever its kind, comes back after its own
 * work. The rest of a slice is never a wake-up from another thread: it
 * costs one eventfd write and read per slice.
 *
 * Admission: a starter decides whether its operation can be served, and
 * says so at once. An operation that takes (an acquisition, a read)
 * counts in the loop's cap (max_in_flight): at the cap, DLOCK_EAGAIN;
 * never a late DLOCK_ENOMEM callback. No starter takes a stack: an
 * operation gets a fiber when it runs, from the loop's pool (at most
 * fiber_cap at once; more wait in fiber_q), and gives it back when its
 * body ends. A wait that parks without its fiber (objects/runtime/wait.c,
 * "Parked waits") ends its body with its record in o->carried: the loop
 * parks it fiberless on its signal and timer, and runs its body again on
 * a fiber when it is woken. An operation that lets go (o->releases) is
 * outside the cap, and when no fiber of the pool can be had it runs on
 * one of the loop's reserved fibers (RESERVE, made with the loop; each
 * runs one operation after another, queued in reserve_q), so a holder can
 * always release whatever the waits took; so does anything when the pool
 * has no fiber out that would come back (no stack to be had at all).
 *
 * Locking: the loop's mutex guards incoming, ready, the id table, the
 * pending count and every operation's state while it may be parked; the
 * timer heap, turns and done belong to the loop's thread. Lock order: a
 * signal's mutex is never held while taking the loop's (dlock_signal_raise
 * calls notify after releasing it), and the loop takes a signal's mutex
 * under its own. Callbacks run with no lock held.
 */
#include "objects/async/loop.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dlock/errors.h"
#include "dlock/permit_semaphore.h"

#include "core/background.h"
#include "core/thread_name.h"
#include "core/wait.h"
#include "objects/runtime/client.h"
#include "objects/runtime/watchdog.h"

enum aop_state {
    A_QUEUED,  /* in incoming */
    A_READY,   /* in ready */
    A_RUNNING, /* being resumed, or in turns */
    A_PARKED,  /* sleeping: the heap (if timed) and its signal's notify */
    A_DONE,    /* in done */
};

enum loop_mode { M_POLL, M_HOOKS, M_THREAD };

#define NO_HEAP ((size_t)-1)
/* The id table's first size (it doubles as operations come). */
#define ID_BUCKETS 1024
/* The old buckets a growth of it moves per start. */
#define ID_MOVES 8
/* The fibers a loop's operations run on at once (its pool's cap; more
 * operations queue for one): a parked wait holds none. */
#define FIBER_CAP 1024
/* The reserved fibers of a loop, for what lets go. */
#define RESERVE 4
/* The default cap on operations in flight (dlock_loop_set_max_in_flight). */
#define DEFAULT_CAP ((size_t)1 << 20)

typedef struct fifo {
    dlock__aop *head, *tail;
} fifo;

/* A reserved fiber: it runs operations one after another (op), yielding
 * with finished set after each, and returns when resumed without one. */
typedef struct dlock__worker {
    dlock__fiber *fiber;
    dlock__aop *op;
    int finished;
    struct dlock__worker *next; /* in the idle list */
} dlock__worker;

struct dlock_loop {
    dlock_client *client;
    dlock_clock *clock;
    enum loop_mode mode;
    dlock_loop_hooks hooks;
    int efd;          /* readable while there is work (when wake-ups
                       * go through it: efd_wakes) */
    int efd_wakes;
    int epfd;         /* epoll: efd and the sockets operations wait on */
    int epfd_watched; /* hook mode: add_read(epfd) was called */
    int rt;           /* the client's clock is the real one */

    pthread_mutex_t mu;
    fifo incoming, ready;
    dlock__aop **ids; /* by id % nbuckets, chained */
    size_t nbuckets;
    dlock__aop **old_ids; /* a growth's old table (old_n buckets, 0: none),
                           * empty below moved (id_move) */
    size_t old_n, moved;
    uint64_t next_id;
    size_t pending;
    size_t cap;       /* max_in_flight: the operations that take */
    size_t capped;    /* how many of those are pending */
    int woken;        /* a wake-up is on its way (efd written / hook called) */
    int freeing;
    /* dlock_loop_close's (or dlock_loop_free's from a callback, deferred:
     * free_deferred): the loop frees itself once its work is done */
    int closing, free_deferred;
    void (*on_closed)(void *arg);
    void *closed_arg;

    /* the loop's thread's */
    fifo turns, done;
    fifo spent;          /* timers of waits whose budget ended: first */
    fifo due;            /* timers run out, behind ready and incoming */
    dlock__worker reserve[RESERVE];
    dlock__worker *idle; /* the reserved fibers free now */
    fifo reserve_q;      /* operations waiting for one of them */
    size_t fibers;       /* the operations' own fibers now (the pool) */
    size_t fiber_cap;    /* at most (FIBER_CAP) */
    size_t fibers_peak;  /* the most there were at once */
    fifo fiber_q;        /* operations waiting for a fiber */
    dlock__aop **heap;
    size_t nheap, capheap;
    int64_t timer_armed; /* hook mode: the wake time asked for, or -1 */
    dlock__aop *io_head; /* operations parked on a socket */
    int running;         /* inside run_due (not re-entered) */
    int64_t slice_us;    /* a run_due's bound in real time (0: none) */
    int carried;         /* work was left for the next run: efd written */
    /* What the loop's wait on the epoll set reported (wait_set), for
     * collect_io: the wait and the look are one system call. */
    struct epoll_event stash[64];
    int nstash;

    /* dlock__loop_drive_watchdog's: the next round of the client's
     * watchdog on the client's clock (INT64_MAX: not driven here) */
    int64_t wd_next;

    /* dlock_loop_new_thread's */
    pthread_t thread;
    dlock_signal tsig;
    int stop;
};

/* ---- lists ----------------------------------------------------------------- */

static void fifo_push(fifo *q, dlock__aop *o)
{
    o->next = NULL;
    if (q->tail)
        q->tail->next = o;
    else
        q->head = o;
    q->tail = o;
}

static dlock__aop *fifo_pop(fifo *q)
{
    dlock__aop *o = q->head;

    if (o) {
        q->head = o->next;
        if (!q->head)
            q->tail = NULL;
        o->next = NULL;
    }
    return o;
}

static void fifo_append(fifo *q, fifo *from)
{
    if (!from->head)
        return;
    if (q->tail)
        q->tail->next = from->head;
    else
        q->head = from->head;
    q->tail = from->tail;
    from->head = from->tail = NULL;
}

/* The id table (loop mutex held): o's chain is in the old buckets while
 * a growth has not moved it yet. */
static dlock__aop **id_slot(dlock_loop *lp, dlock_op_id id)
{
    dlock__aop **p = lp->old_n && id % lp->old_n >= lp->moved ? &lp->old_ids[id % lp->old_n]
                                                               : &lp->ids[id % lp->nbuckets];

    while (*p && (*p)->id != id)
        p = &(*p)->hnext;
    return p;
}

/* Moves the chains of up to n old buckets to the current table (loop
 * mutex held); the old table goes once empty. A growth costs each later
 * start a few chains' moves, never one starter the whole table. */
static void id_move(dlock_loop *lp, size_t n)
{
    while (lp->old_n && n-- > 0) {
        dlock__aop *o, *next;

        for (o = lp->old_ids[lp->moved]; o; o = next) {
            next = o->hnext;
            o->hnext = lp->ids[o->id % lp->nbuckets];
            lp->ids[o->id % lp->nbuckets] = o;
        }
        lp->old_ids[lp->moved++] = NULL;
        if (lp->moved == lp->old_n) {
            free(lp->old_ids);
            lp->old_ids = NULL;
            lp->old_n = lp->moved = 0;
        }
    }
}

/* Starts moving the id table to nb buckets (loop mutex held); kept as it
 * is without memory (longer chains). */
static void id_grow(dlock_loop *lp, size_t nb)
{
    dlock__aop **t;

    id_move(lp, SIZE_MAX);
    if ((t = calloc(nb, sizeof(*t))) == NULL)
        return;
    lp->old_ids = lp->ids;
    lp->old_n = lp->nbuckets;
    lp->moved = 0;
    lp->ids = t;
    lp->nbuckets = nb;
}

/* Gives o its id and enters it in the table, grown to keep chains short
 * (loop mutex held). */
static void id_add(dlock_loop *lp, dlock__aop *o)
{
    dlock__aop **slot;

    id_move(lp, ID_MOVES);
    if (lp->pending >= lp->nbuckets)
        id_grow(lp, lp->nbuckets * 2);
    o->id = ++lp->next_id;
    slot = id_slot(lp, o->id);
    o->hnext = NULL;
    *slot = o;
}

/* ---- the timer heap (the loop's thread) -------------------------------------- */

static void heap_set(dlock_loop *lp, size_t i, dlock__aop *o)
{
    lp->heap[i] = o;
    o->heap_i = i;
}

static void heap_up(dlock_loop *lp, size_t i)
{
    dlock__aop *o = lp->heap[i];

    while (i > 0) {
        size_t parent = (i - 1) / 2;

        if (lp->heap[parent]->wake_ms <= o->wake_ms)
            break;
        heap_set(lp, i, lp->heap[parent]);
        i = parent;
    }
    heap_set(lp, i, o);
}

static void heap_down(dlock_loop *lp, size_t i)
{
    dlock__aop *o = lp->heap[i];

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= lp->nheap)
            break;
        if (c + 1 < lp->nheap && lp->heap[c + 1]->wake_ms < lp->heap[c]->wake_ms)
            c++;
        if (o->wake_ms <= lp->heap[c]->wake_ms)
            break;
        heap_set(lp, i, lp->heap[c]);
        i = c;
    }
    heap_set(lp, i, o);
}

static int heap_add(dlock_loop *lp, dlock__aop *o)
{
    if (lp->nheap == lp->capheap) {
        size_t cap = lp->capheap ? lp->capheap * 2 : 64;
        dlock__aop **h = realloc(lp->heap, cap * sizeof(*h));

        if (!h)
            return DLOCK_ENOMEM;
        lp->heap = h;
        lp->capheap = cap;
    }
    heap_set(lp, lp->nheap++, o);
    heap_up(lp, o->heap_i);
    return 0;
}

static void heap_remove(dlock_loop *lp, dlock__aop *o)
{
    size_t i = o->heap_i;
    dlock__aop *last;

    if (i == NO_HEAP)
        return;
    o->heap_i = NO_HEAP;
    last = lp->heap[--lp->nheap];
    if (last == o)
        return;
    heap_set(lp, i, last);
    heap_up(lp, i);
    heap_down(lp, last->heap_i);
}

/* ---- a run's slice -------------------------------------------------------------- */

/* The real monotonic time in microseconds: a run's slice bounds how long
 * the application's loop is held up, whatever the client's clock (a
 * virtual clock does not move while the loop runs). */
static int64_t mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int slice_over(int64_t end)
{
    return end != INT64_MAX && mono_us() >= end;
}

/* Puts front (in order) before what q holds. */
static void fifo_prepend(fifo *q, fifo *front)
{
    if (!front->head)
        return;
    front->tail->next = q->head;
    if (!q->tail)
        q->tail = front->tail;
    q->head = front->head;
    front->head = front->tail = NULL;
}

/* ---- waking the loop ------------------------------------------------------------ */

/* The loop whose run_due this thread is in: what it starts there (from a
 * callback) needs no wake-up, run_due looks again before it returns. */
static __thread dlock_loop *running_here;

/* Has the loop run soon (loop mutex held). */
static void wake_locked(dlock_loop *lp)
{
    uint64_t one = 1;

    if (lp->woken || running_here == lp)
        return;
    lp->woken = 1;
    if (lp->mode == M_THREAD && !lp->rt)
        dlock_signal_raise(&lp->tsig);
    else if (lp->mode == M_HOOKS && lp->hooks.wakeup)
        lp->hooks.wakeup(lp->hooks.data);
    else if (write(lp->efd, &one, sizeof(one)) < 0 && errno != EAGAIN)
        lp->woken = 0; /* cannot happen with an eventfd below its limit */
}

/* Makes a parked operation ready (loop mutex held); 1 if it was parked. */
static int unpark_locked(dlock_loop *lp, dlock__aop *o)
{
    if (o->state != A_PARKED)
        return 0;
    o->state = A_READY;
    fifo_push(&lp->ready, o);
    return 1;
}

/* A parked operation's signal was raised (any thread). */
static void on_raise(void *arg)
{
    dlock__aop *o = arg;
    dlock_loop *lp = o->lp;

    pthread_mutex_lock(&lp->mu);
    if (unpark_locked(lp, o))
        wake_locked(lp);
    pthread_mutex_unlock(&lp->mu);
}

/* ---- operations ------------------------------------------------------------------ */

dlock__aop *dlock__aop_new(dlock_loop *lp, const char *owner)
{
    size_t n = owner ? strlen(owner) + 1 : 1;
    dlock__aop *o = calloc(1, sizeof(*o) + n);

    if (o) {
        if (owner)
            memcpy(o->owner, owner, n);
        o->lp = lp;
        o->heap_i = NO_HEAP;
    }
    return o;
}

void dlock__aop_discard(dlock__aop *o)
{
    if (!o)
        return;
    dlock__pin_remove(&o->pin); /* never the last: not freed meanwhile */
    if (!o->worker)
        dlock__fiber_free(o->fiber);
    free(o->carried.detail);
    free(o->detail);
    free(o->text);
    free(o);
}

static void fiber_main(void *arg);
static void fiber_give(dlock_loop *lp, dlock__aop *o);

int (*dlock__loop_fiber_new)(dlock__fiber **out, dlock__fiber_fn fn,
                             void *arg) = dlock__fiber_new;

/* o's object was freed while o was pending (under the pin table's lock,
 * any thread): a wait ends as a cancelled one does. */
static void on_object_freed(dlock__pin *p)
{
    dlock__aop *o = (dlock__aop *)((char *)p - offsetof(dlock__aop, pin));
    dlock_loop *lp = o->lp;

    if (!o->is_wait)
        return;
    pthread_mutex_lock(&lp->mu);
    __atomic_store_n(&o->canceled, 1, __ATOMIC_RELEASE);
    if (unpark_locked(lp, o))
        wake_locked(lp);
    pthread_mutex_unlock(&lp->mu);
}

int dlock__aop_start(dlock__aop *o, dlock_op_id *id)
{
    dlock_loop *lp = o->lp;

    /* Its object lives until its callback has run, whatever
     * dlock_rlock_free meanwhile. */
    if (dlock__pin_add(&o->pin, o->obj, on_object_freed) != 0) {
        dlock__aop_discard(o);
        return DLOCK_ENOMEM;
    }
    if (!o->releases) {
        pthread_mutex_lock(&lp->mu);
        o->capped = lp->capped < lp->cap;
        lp->capped += (size_t)o->capped;
        pthread_mutex_unlock(&lp->mu);
        if (!o->capped) {
            dlock__aop_discard(o);
            return DLOCK_EAGAIN;
        }
    }
    /* No stack yet: the loop gives it a fiber from its pool when it runs
     * (loop.c's header), so what is admitted is served. */
    o->carried.start_ms = dlock_clock_now(lp->clock);
    o->budget_end_ms = o->is_wait && o->wait_ms > 0 ? o->carried.start_ms + o->wait_ms
                                                    : INT64_MAX;
    pthread_mutex_lock(&lp->mu);
    id_add(lp, o);
    lp->pending++;
    o->state = A_QUEUED;
    /* A wait started while the loop closes (from a callback) ends at once:
     * it would hold the close open for its whole budget. */
    if (o->is_wait && lp->freeing)
        __atomic_store_n(&o->canceled, 1, __ATOMIC_RELEASE);
    fifo_push(&lp->incoming, o);
    if (id)
        *id = o->id;
    wake_locked(lp);
    pthread_mutex_unlock(&lp->mu);
    return 0;
}

dlock_client *dlock__loop_client(const dlock_loop *lp)
{
    return lp->client;
}

int dlock__loop_freeing(const dlock_loop *lp)
{
    return __atomic_load_n(&lp->freeing, __ATOMIC_ACQUIRE);
}

/* Keeps text as o's detail (without memory: none; the callback then
 * reads the code's own text). */
static void set_detail(dlock__aop *o, const char *text)
{
    size_t n = strlen(text) + 1;

    if (n > DLOCK_ERRMSG_MAX)
        n = DLOCK_ERRMSG_MAX;
    free(o->detail);
    if ((o->detail = malloc(n)) != NULL) {
        memcpy(o->detail, text, n - 1);
        o->detail[n - 1] = '\0';
    }
}

static void fiber_main(void *arg)
{
    dlock__aop *o = arg;

    o->body(o);
    /* Its wait parked without this fiber: the loop keeps it (step). */
    if (o->carried.parked)
        return;
    /* A grant made while the loop or the object is being freed is
     * undone: the application will not get to use it. */
    if (o->res.rc == 0 && o->is_wait &&
        (dlock__loop_freeing(o->lp) || dlock__pin_freed(&o->pin))) {
        if (o->undo)
            o->undo(o);
        o->res.rc = DLOCK_ECANCELED;
        o->res.value = 0;
        set_detail(o, dlock__loop_freeing(o->lp) ? "the loop was freed during the wait"
                                                 : "the object was freed during the wait");
        return;
    }
    /* Ended by its object's free: say so, rather than a cancel the
     * application did not ask for. */
    if (o->res.rc == DLOCK_ECANCELED && dlock__pin_freed(&o->pin) &&
        !dlock__loop_freeing(o->lp))
        set_detail(o, "the object was freed during the wait");
    /* Its own detail: the object's is shared with the operations that ran
     * while this one yielded. */
    if (o->res.rc != 0 && !o->detail) {
        o->detail = o->carried.detail;
        o->carried.detail = NULL;
    }
}

/* Sets o's state (read by other threads' raises and cancels, under the
 * mutex). */
static void set_state(dlock_loop *lp, dlock__aop *o, int state)
{
    pthread_mutex_lock(&lp->mu);
    o->state = state;
    pthread_mutex_unlock(&lp->mu);
}

static void finish(dlock_loop *lp, dlock__aop *o)
{
    set_state(lp, o, A_DONE);
    fifo_push(&lp->done, o);
}

/* Under lp->mu: o listens to sig's raises (on_raise); whether sig was
 * raised already. */
static int listen_locked(dlock__aop *o, dlock_signal *sig)
{
    int raised;

    o->sig = sig;
    dlock_signal_set_notify(sig, on_raise, o);
    pthread_mutex_lock(&sig->mutex);
    raised = sig->raised;
    pthread_mutex_unlock(&sig->mutex);
    return raised;
}

/* Ends a park, under lp->mu (taken by the caller, released here): o
 * sleeps (parked), or is ready at once; a parked o with a time is put in
 * the heap. o->state is not read after the mutex is released: a raise on
 * another thread may change it from then on. */
static void park_unlock(dlock_loop *lp, dlock__aop *o, int parked, int64_t wake)
{
    if (parked) {
        o->state = A_PARKED;
    } else {
        o->state = A_READY;
        fifo_push(&lp->ready, o);
    }
    pthread_mutex_unlock(&lp->mu);
    if (parked && wake != INT64_MAX && heap_add(lp, o) != 0)
        on_raise(o); /* no room for the timer: look again at once */
}

/* Parks o after its fiber yielded to sleep: on its signal's notify and
 * (when timed) in the heap. A raise or a cancel that came first makes it
 * ready again at once. */
static void park(dlock_loop *lp, dlock__aop *o, dlock_signal *sig, int64_t wake)
{
    int raised;

    pthread_mutex_lock(&lp->mu);
    o->wake_ms = wake;
    raised = listen_locked(o, sig);
    park_unlock(lp, o, !raised && !__atomic_load_n(&o->canceled, __ATOMIC_ACQUIRE),
                wake);
}

/* Takes o out of the socket waits (the loop's thread). Its socket stays
 * in the epoll set, disarmed once it fired (one-shot): the next wait on it
 * re-arms it with one EPOLL_CTL_MOD; a report of it with nobody waiting
 * is ignored; a socket closed meanwhile leaves the set by itself. */
static void io_unwatch(dlock_loop *lp, dlock__aop *o)
{
    dlock__aop **p;

    o->io_watched = 0;
    for (p = &lp->io_head; *p; p = &(*p)->io_next)
        if (*p == o) {
            *p = o->io_next;
            break;
        }
    o->io_next = NULL;
    o->io = 0;
}

/* Parks o after its fiber yielded for a socket: the socket in the epoll
 * set (one-shot), the time in the heap, and sig's notify when the fiber
 * also wants to be woken by a signal (NULL: not). A socket the set cannot take (one
 * another operation already waits on) is looked at again in a millisecond
 * instead. A cancel does not end such a wait (the round trip finishes by
 * its own deadline), so unlike park() it is not looked at here. */
static void park_io(dlock_loop *lp, dlock__aop *o, dlock_signal *sig, int64_t wake)
{
    int fd, events, parked = 1;

    dlock__fiber_want_io(o->fiber, &fd, &events);
    o->io = 1;
    o->io_fd = fd;
    o->io_watched = 0;
    if (fd >= 0) {
        struct epoll_event ev;

        memset(&ev, 0, sizeof(ev));
        ev.events = EPOLLONESHOT |
                    ((events & DLOCK__FIBER_WRITE) ? EPOLLOUT : EPOLLIN);
        ev.data.fd = fd;
        o->io_watched = epoll_ctl(lp->epfd, EPOLL_CTL_MOD, fd, &ev) == 0 ||
                        (errno == ENOENT &&
                         epoll_ctl(lp->epfd, EPOLL_CTL_ADD, fd, &ev) == 0);
    }
    if (!o->io_watched) {
        int64_t nap = dlock_clock_now(lp->clock) + 1;

        if (nap < wake)
            wake = nap;
    }
    o->io_next = lp->io_head;
    lp->io_head = o;
    o->wake_ms = wake;
    pthread_mutex_lock(&lp->mu);
    /* Or woken by sig (as park() does): a raise that came first makes it
     * ready at once. */
    if (sig)
        parked = !listen_locked(o, sig);
    park_unlock(lp, o, parked, wake);
}

/* Makes the operations whose sockets are in ev[0..n) ready (the loop's
 * thread). */
static void io_ready(dlock_loop *lp, const struct epoll_event *ev, int n)
{
    int i;

    for (i = 0; i < n; i++) {
        dlock__aop *o;

        if (ev[i].data.fd == lp->efd)
            continue;
        for (o = lp->io_head; o; o = o->io_next)
            if (o->io_watched && o->io_fd == ev[i].data.fd) {
                o->io_ready = 1;
                pthread_mutex_lock(&lp->mu);
                unpark_locked(lp, o);
                pthread_mutex_unlock(&lp->mu);
                break;
            }
    }
}

/* Makes the operations whose sockets are ready ready (the loop's thread):
 * what the last wait_set reported, else (look) a look at the set. */
static void collect_io(dlock_loop *lp, int look)
{
    struct epoll_event ev[64];
    int n = lp->nstash;

    if (n > 0) {
        lp->nstash = 0;
        io_ready(lp, lp->stash, n);
        if (n < 64)
            return;
    } else if (!look) {
        return;
    }
    if (!lp->io_head)
        return;
    do {
        n = epoll_wait(lp->epfd, ev, 64, 0);
        if (n > 0)
            io_ready(lp, ev, n);
    } while (n == 64);
}

/* Waits up to ms (-1: no limit) for the epoll set: a wake-up or a socket.
 * What it reports waits in the stash for collect_io (the loop's thread). */
static void wait_set(dlock_loop *lp, int ms)
{
    int n = epoll_wait(lp->epfd, lp->stash, 64, ms);

    lp->nstash = n > 0 ? n : 0;
}

/* ---- the reserved fibers (the loop's thread) ------------------------------------ */

static void worker_main(void *arg)
{
    dlock__worker *w = arg;

    while (w->op) {
        fiber_main(w->op);
        w->finished = 1;
        dlock__fiber_yield();
    }
}

/* Puts o on an idle reserved fiber; 0 when none is idle. */
static int worker_take(dlock_loop *lp, dlock__aop *o)
{
    dlock__worker *w = lp->idle;

    if (!w)
        return 0;
    lp->idle = w->next;
    w->next = NULL;
    w->op = o;
    w->finished = 0;
    o->worker = w;
    o->fiber = w->fiber;
    return 1;
}

/* w is idle again: the next operation waiting for one gets it (its turn
 * comes in this run). */
static void worker_give(dlock_loop *lp, dlock__worker *w)
{
    dlock__aop *next;

    w->op = NULL;
    w->finished = 0;
    w->next = lp->idle;
    lp->idle = w;
    if ((next = fifo_pop(&lp->reserve_q)) != NULL ||
        (lp->fibers == 0 && (next = fifo_pop(&lp->fiber_q)) != NULL))
        fifo_push(&lp->turns, next);
}

/* ---- the fiber pool (the loop's thread) ------------------------------------------ */

/* Gives o a fiber to run on: one of the pool's while it is under its cap
 * (the stacks come from core/fiber.c's pool), else a reserved one for
 * what lets go, or for anything when the pool has no fiber out that
 * would come back (its stacks cannot be had). 0: none now (o queues). */
static int fiber_take(dlock_loop *lp, dlock__aop *o)
{
    if (lp->fibers < lp->fiber_cap && dlock__loop_fiber_new(&o->fiber, fiber_main, o) == 0) {
        if (++lp->fibers > lp->fibers_peak)
            lp->fibers_peak = lp->fibers;
        return 1;
    }
    return (o->releases || lp->fibers == 0) && worker_take(lp, o);
}

/* o's own fiber ended: freed, and the next operation waiting for one gets
 * its turn in this run. */
static void fiber_give(dlock_loop *lp, dlock__aop *o)
{
    dlock__aop *next;

    dlock__fiber_free(o->fiber);
    o->fiber = NULL;
    lp->fibers--;
    if ((next = fifo_pop(&lp->fiber_q)) != NULL || (next = fifo_pop(&lp->reserve_q)) != NULL)
        fifo_push(&lp->turns, next);
}

size_t dlock__loop_fibers_in_use(dlock_loop *lp)
{
    return lp->fibers;
}

size_t dlock__loop_fibers_peak(dlock_loop *lp)
{
    return lp->fibers_peak;
}

void dlock__loop_set_fiber_cap(dlock_loop *lp, size_t cap)
{
    lp->fiber_cap = cap > 0 ? cap : FIBER_CAP;
}

/* Makes the loop's reserved fibers: 0 or DLOCK_ENOMEM. */
static int reserve_make(dlock_loop *lp)
{
    int i;

    for (i = 0; i < RESERVE; i++) {
        dlock__worker *w = &lp->reserve[i];

        if (dlock__fiber_new(&w->fiber, worker_main, w) != 0)
            return DLOCK_ENOMEM;
        w->next = lp->idle;
        lp->idle = w;
    }
    return 0;
}

/* Ends the reserved fibers (resumed without an operation, each returns)
 * and frees them. */
static void reserve_free(dlock_loop *lp)
{
    int i;

    for (i = 0; i < RESERVE; i++) {
        dlock__worker *w = &lp->reserve[i];

        if (!w->fiber)
            continue;
        w->op = NULL;
        while (!dlock__fiber_resume(w->fiber))
            ;
        dlock__fiber_free(w->fiber);
        w->fiber = NULL;
    }
}

/* Resumes o's fiber until it yields (0) or its body is over (1: its own
 * fiber freed, or the reserved one idle again). */
static int resume(dlock_loop *lp, dlock__aop *o)
{
    dlock__worker *w = o->worker;

    if (!w) {
        if (!dlock__fiber_resume(o->fiber))
            return 0;
        fiber_give(lp, o);
        return 1;
    }
    dlock__fiber_resume(w->fiber);
    if (!w->finished)
        return 0;
    o->worker = NULL;
    o->fiber = NULL;
    worker_give(lp, w);
    return 1;
}

/* Resumes o (ready, a turn, or new) until it yields or finishes. */
static void step(dlock_loop *lp, dlock__aop *o)
{
    dlock_signal *sig;
    int64_t wake;
    int want;

    if (o->io || o->sig) {
        /* Back from a socket wait or a sleep (or both at once): the
         * socket out of the set, no more notifies, the signal's flag
         * consumed, and the answer the wait returns (1: the socket is
         * ready; 0: woken early; DLOCK_ETIMEDOUT). */
        int raised = 0, ready = o->io && o->io_ready;

        if (o->io)
            io_unwatch(lp, o);
        if (o->sig) {
            dlock_signal_set_notify(o->sig, NULL, NULL);
            pthread_mutex_lock(&o->sig->mutex);
            raised = o->sig->raised;
            o->sig->raised = 0;
            pthread_mutex_unlock(&o->sig->mutex);
            o->sig = NULL;
        }
        heap_remove(lp, o);
        if (o->fiber) /* (a wait parked without one steps on from its record) */
            dlock__fiber_answer(o->fiber, ready ? 1
                                          : raised || dlock_clock_now(lp->clock) < o->wake_ms
                                              ? 0 : DLOCK_ETIMEDOUT);
        o->io_ready = 0;
    }
    if (!o->begun && o->is_wait && __atomic_load_n(&o->canceled, __ATOMIC_ACQUIRE)) {
        o->res.rc = DLOCK_ECANCELED;
        set_detail(o, "canceled before it started");
        finish(lp, o);
        return;
    }
    if (!o->fiber) {
        /* New, or a parked wait woken: a fiber from the pool, or its turn
         * when one is free. */
        if (!fiber_take(lp, o)) {
            set_state(lp, o, A_RUNNING);
            fifo_push(o->releases ? &lp->reserve_q : &lp->fiber_q, o);
            return;
        }
        dlock__fiber_set_cancel(o->fiber, &o->canceled);
        dlock__fiber_set_data(o->fiber, &o->carried);
        o->begun = 1;
    }
    set_state(lp, o, A_RUNNING);
    if (resume(lp, o)) {
        if (o->carried.parked) {
            /* its wait sleeps without a fiber: on its signal and timer */
            park(lp, o, o->carried.park_sig, o->carried.park_wake);
            return;
        }
        finish(lp, o);
        return;
    }
    want = dlock__fiber_want(o->fiber, &sig, &wake);
    if (want == DLOCK__FIBER_SLEEP && sig)
        park(lp, o, sig, wake);
    else if (want == DLOCK__FIBER_IO)
        park_io(lp, o, sig, wake);
    else
        fifo_push(&lp->turns, o); /* a turn (or a sleep without a signal) */
}

/* Resumes the operations of q in order until the slice ends (after one
 * at least): what is left stays in q. */
static void step_list(dlock_loop *lp, fifo *q, int64_t end)
{
    dlock__aop *o;

    while ((o = fifo_pop(q)) != NULL) {
        step(lp, o);
        if (slice_over(end))
            break;
    }
}

/* Calls the callbacks of what finished, with no lock held, until the
 * slice ends (after one at least, and through's whatever the slice:
 * NULL for none). */
static int deliver(dlock_loop *lp, int64_t end, const dlock__aop *through)
{
    dlock__aop *o;
    dlock_rlock *gone;
    int n = 0, owed = through != NULL;

    while (!(n > 0 && !owed && slice_over(end)) && (o = fifo_pop(&lp->done)) != NULL) {
        owed = owed && o != through;
        pthread_mutex_lock(&lp->mu);
        *id_slot(lp, o->id) = o->hnext;
        pthread_mutex_unlock(&lp->mu);
        o->res.detail = o->detail ? o->detail
                        : o->res.rc != 0 ? dlock_strerror(o->res.rc) : "";
        o->res.owner = o->owner[0] ? o->owner : NULL;
        dlock__callback_enter();
        o->fn(o->arg, o->id, &o->res);
        dlock__callback_leave();
        dlock_permit_ids_free(o->res.permit_ids);
        pthread_mutex_lock(&lp->mu);
        lp->pending--;
        lp->capped -= (size_t)o->capped;
        pthread_mutex_unlock(&lp->mu);
        /* An object freed while this was pending (in the callback, or
         * before) goes with its last operation. */
        gone = dlock__pin_remove(&o->pin);
        dlock__aop_discard(o);
        dlock_rlock_free(gone);
        n++;
    }
    return n;
}

/* Moves the due timers to ready (the loop's thread): those of waits
 * whose budget has ended to spent (they time out: run first), the others
 * to due. */
static void due_timers(dlock_loop *lp)
{
    int64_t now = dlock_clock_now(lp->clock);

    while (lp->nheap > 0 && lp->heap[0]->wake_ms <= now) {
        dlock__aop *o = lp->heap[0];

        heap_remove(lp, o);
        pthread_mutex_lock(&lp->mu);
        if (o->state == A_PARKED) {
            o->state = A_READY;
            fifo_push(now >= o->budget_end_ms ? &lp->spent : &lp->due, o);
        }
        pthread_mutex_unlock(&lp->mu);
    }
}

/* Steps the waits whose budget ended (lp->spent) until the slice ends
 * (after one at least; the rest stays for the next run, first again);
 * the last of them that finished (in done), or NULL. */
static const dlock__aop *step_spent(dlock_loop *lp, int64_t end)
{
    const dlock__aop *last = NULL;
    dlock__aop *o;

    while ((o = fifo_pop(&lp->spent)) != NULL) {
        step(lp, o);
        if (lp->done.tail == o)
            last = o;
        if (slice_over(end))
            break;
    }
    return last;
}

/* Whether work is left that can run now (the loop's thread). */
static int work_left(dlock_loop *lp)
{
    int work;

    if (lp->turns.head || lp->done.head || lp->due.head || lp->spent.head)
        return 1;
    pthread_mutex_lock(&lp->mu);
    work = lp->ready.head || lp->incoming.head;
    pthread_mutex_unlock(&lp->mu);
    return work;
}

/* The client's watchdog, where this loop drives it: its round, when its
 * time came (before the operations of the run: a renewal due at t is not
 * behind the work that became ready at t). Periods count from their
 * starts, as on the watchdog's thread. */
static void watchdog_due(dlock_loop *lp)
{
    int64_t now, period;

    if (lp->wd_next == INT64_MAX || (now = dlock_clock_now(lp->clock)) < lp->wd_next)
        return;
    period = lp->client->opts.watchdog_timeout_ms / 3;
    lp->wd_next += period;
    if (lp->wd_next <= now)
        lp->wd_next = now + period;
    dlock__watchdog_round(lp->client);
}

/* Runs what can run now, for one slice (lp->slice_us; 0: until nothing
 * is left); the number of callbacks called. What the slice leaves (the
 * callbacks that start operations, the timers falling due meanwhile, a
 * large batch of starts) waits for the next run, with the loop's fd left
 * readable so that the application's loop comes back to it after its own
 * work, as libuv and hiredis callbacks leave the rest of a read. */
static int run_due(dlock_loop *lp)
{
    int64_t end = lp->slice_us > 0 ? mono_us() + lp->slice_us : INT64_MAX;
    int n = 0, over = 0;

    if (lp->running)
        return 0;
    lp->running = 1;
    running_here = lp;
    watchdog_due(lp);
    for (int pass = 0; !over; pass++) {
        fifo batch = {NULL, NULL}, turns = {NULL, NULL};
        uint64_t drain;
        int drain_efd = lp->carried;

        lp->carried = 0;
        pthread_mutex_lock(&lp->mu);
        if (lp->woken) {
            lp->woken = 0;
            drain_efd |= lp->efd_wakes;
        }
        pthread_mutex_unlock(&lp->mu);
        if (drain_efd && read(lp->efd, &drain, sizeof(drain)) < 0)
            drain = 0;
        /* The set is looked at once per run: what becomes ready later
         * shows on its fd (and in the next run). */
        collect_io(lp, pass == 0);
        due_timers(lp);
        pthread_mutex_lock(&lp->mu);
        fifo_append(&batch, &lp->ready);
        fifo_append(&batch, &lp->incoming);
        pthread_mutex_unlock(&lp->mu);
        /* What a message or a reply woke first, then the naps and sleeps
         * whose time came: when a slice cannot take everything, the
         * operations with news go first. */
        fifo_append(&batch, &lp->due);
        if (!batch.head && !lp->turns.head && !lp->done.head && !lp->spent.head)
            break;
        /* Before all of them, the waits whose budget ended, and their
         * callbacks: a timed-out wait is called back at its time, not
         * after the steps and callbacks of whatever became ready since. */
        if (lp->spent.head) {
            const dlock__aop *last = step_spent(lp, end);

            n += deliver(lp, end, last);
        }
        /* Every ready fiber first (they send), for half the slice at
         * most, then the turns, a previous run's and these (they read the
         * replies of the batch): reads are never starved by a flood of
         * starts and wake-ups, and the sends of a batch still go out
         * together. */
        step_list(lp, &batch, end == INT64_MAX ? end : end - lp->slice_us / 2);
        fifo_append(&turns, &lp->turns);
        step_list(lp, &turns, end);
        over = batch.head != NULL || turns.head != NULL || lp->spent.head != NULL;
        /* What the slice left goes back in front, in its order. */
        fifo_prepend(&lp->turns, &turns);
        if (batch.head) {
            pthread_mutex_lock(&lp->mu);
            fifo_prepend(&lp->ready, &batch);
            pthread_mutex_unlock(&lp->mu);
        }
        n += deliver(lp, end, NULL);
        over = over || slice_over(end);
    }
    if (over && work_left(lp)) {
        uint64_t one = 1;

        /* The rest is the next run's: the fd stays readable till then. */
        lp->carried = write(lp->efd, &one, sizeof(one)) == sizeof(one);
    }
    running_here = NULL;
    lp->running = 0;
    return n;
}

/* The next timer's wake time, or INT64_MAX. */
static int64_t next_wake(const dlock_loop *lp)
{
    int64_t t = lp->nheap > 0 ? lp->heap[0]->wake_ms : INT64_MAX;

    return lp->wd_next < t ? lp->wd_next : t;
}

/* Hook mode: the one timer armed for the next wake time. */
static void rearm(dlock_loop *lp)
{
    int64_t wake = next_wake(lp), ms;

    if (lp->mode != M_HOOKS)
        return;
    if (wake == INT64_MAX) {
        if (lp->timer_armed != -1)
            lp->hooks.schedule_timer(lp->hooks.data, -1);
        lp->timer_armed = -1;
        return;
    }
    if (wake == lp->timer_armed)
        return;
    ms = wake - dlock_clock_now(lp->clock);
    lp->hooks.schedule_timer(lp->hooks.data, ms > 0 ? ms : 0);
    lp->timer_armed = wake;
}

/* ---- the loop's thread (dlock_loop_new_thread) ------------------------------------ */

static void closed(dlock_loop *lp);

static void *thread_main(void *arg)
{
    dlock_loop *lp = arg;

    dlock__thread_mark_background();
    for (;;) {
        int stop;

        run_due(lp);
        pthread_mutex_lock(&lp->mu);
        stop = lp->stop && lp->pending == 0;
        pthread_mutex_unlock(&lp->mu);
        if (stop)
            break;
        if (lp->carried) {
            continue; /* a slice's rest: run it now */
        } else if (lp->rt) {
            /* The epoll set: a wake-up (efd) or a socket ready. */
            int64_t wake = next_wake(lp), now = dlock_clock_now(lp->clock);

            wait_set(lp, wake == INT64_MAX ? -1
                         : wake <= now ? 0
                         : wake - now > 1000000 ? 1000000 : (int)(wake - now));
        } else {
            /* Sleeps on the client's clock: a virtual clock's advance
             * wakes it. */
            dlock_clock_sleep_until(lp->clock, &lp->tsig, next_wake(lp));
        }
    }
    dlock_clock_done(lp->clock, &lp->tsig);
    /* Closed (dlock_loop_close, or freed from its own callback): nobody
     * joins this thread; it frees the loop itself. */
    if (lp->closing) {
        pthread_detach(pthread_self());
        closed(lp);
    }
    return NULL;
}

/* ---- public -------------------------------------------------------------------------- */

/* The default cap on a loop's operations in flight (api/dlock/async.h):
 * a pending operation holds no stack (a parked wait is a heap record of
 * about a kilobyte; the loop's fibers are a pool of FIBER_CAP), so the
 * cap bounds memory, not memory mappings. */
static size_t default_cap(void)
{
    return DEFAULT_CAP;
}

/* A loop of mode for c: 0 and *out, or DLOCK_EINVAL (out or c NULL),
 * DLOCK_EFORKED, DLOCK_ENOMEM and *out = NULL. */
static int loop_alloc(dlock_loop **out, dlock_client *c, enum loop_mode mode)
{
    dlock_loop *lp;
    int rc;

    if (!out)
        return DLOCK_EINVAL;
    *out = NULL;
    if (!c)
        return DLOCK_EINVAL;
    if ((rc = dlock__client_check(c)) != 0)
        return rc;
    lp = calloc(1, sizeof(*lp));
    if (!lp)
        return DLOCK_ENOMEM;
    lp->client = c;
    lp->clock = c->clock;
    lp->mode = mode;
    lp->efd = lp->epfd = -1;
    lp->timer_armed = -1;
    lp->wd_next = INT64_MAX;
    lp->rt = lp->clock == dlock_clock_realtime();
    lp->slice_us = c->opts.loop_slice_ms * 1000;
    lp->cap = default_cap();
    lp->fiber_cap = FIBER_CAP;
    lp->nbuckets = ID_BUCKETS;
    lp->ids = calloc(lp->nbuckets, sizeof(*lp->ids));
    if (!lp->ids) {
        free(lp);
        return DLOCK_ENOMEM;
    }
    if (pthread_mutex_init(&lp->mu, NULL) != 0) {
        free(lp->ids);
        free(lp);
        return DLOCK_ENOMEM;
    }
    if (reserve_make(lp) != 0) {
        reserve_free(lp);
        pthread_mutex_destroy(&lp->mu);
        free(lp->ids);
        free(lp);
        return DLOCK_ENOMEM;
    }
    lp->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    lp->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (lp->efd >= 0 && lp->epfd >= 0) {
        struct epoll_event ev;

        memset(&ev, 0, sizeof(ev));
        ev.events = EPOLLIN;
        ev.data.fd = lp->efd;
        if (epoll_ctl(lp->epfd, EPOLL_CTL_ADD, lp->efd, &ev) == 0) {
            lp->efd_wakes = mode != M_THREAD || lp->rt;
            *out = lp;
            return 0;
        }
    }
    if (lp->efd >= 0)
        close(lp->efd);
    if (lp->epfd >= 0)
        close(lp->epfd);
    reserve_free(lp);
    pthread_mutex_destroy(&lp->mu);
    free(lp->ids);
    free(lp);
    return DLOCK_ENOMEM;
}

static void loop_release(dlock_loop *lp)
{
    reserve_free(lp);
    if (lp->efd >= 0)
        close(lp->efd);
    if (lp->epfd >= 0)
        close(lp->epfd);
    pthread_mutex_destroy(&lp->mu);
    free(lp->heap);
    free(lp->ids);
    free(lp->old_ids);
    free(lp);
}

int dlock_loop_new(dlock_loop **out, dlock_client *c, const dlock_loop_hooks *hooks)
{
    dlock_loop *lp;
    int rc;

    if (hooks && (hooks->version != DLOCK_LOOP_HOOKS_VERSION || !hooks->add_read ||
                  !hooks->del_read || !hooks->schedule_timer)) {
        if (out)
            *out = NULL;
        return DLOCK_EINVAL;
    }
    rc = loop_alloc(out, c, hooks ? M_HOOKS : M_POLL);
    if (rc != 0)
        return rc;
    lp = *out;
    if (hooks) {
        /* One fd, watched always: the epoll set, which holds the sockets
         * operations wait on (and the eventfd, when there is no wakeup
         * hook: then efd_wakes). */
        lp->hooks = *hooks;
        lp->efd_wakes = !hooks->wakeup;
        lp->hooks.add_read(lp->hooks.data, lp->epfd);
        lp->epfd_watched = 1;
    }
    return 0;
}

int dlock_loop_new_thread(dlock_loop **out, dlock_client *c)
{
    dlock_loop *lp;
    int rc;

    rc = loop_alloc(out, c, M_THREAD);
    if (rc != 0)
        return rc;
    lp = *out;
    *out = NULL; /* until the thread runs */
    if (dlock_signal_init(&lp->tsig) != 0) {
        loop_release(lp);
        return DLOCK_ENOMEM;
    }
    dlock_clock_busy(lp->clock, &lp->tsig);
    if (pthread_create(&lp->thread, NULL, thread_main, lp) != 0) {
        dlock_clock_done(lp->clock, &lp->tsig);
        dlock_signal_destroy(&lp->tsig);
        loop_release(lp);
        return DLOCK_ENOMEM;
    }
    dlock__thread_name(lp->thread, "dlock-loop");
    *out = lp;
    return 0;
}

/* Cancels every pending wait (loop mutex held). */
static void cancel_all(dlock_loop *lp)
{
    size_t i;

    id_move(lp, SIZE_MAX); /* one table to walk */
    for (i = 0; i < lp->nbuckets; i++) {
        dlock__aop *o;

        for (o = lp->ids[i]; o; o = o->hnext) {
            __atomic_store_n(&o->canceled, 1, __ATOMIC_RELEASE);
            unpark_locked(lp, o);
        }
    }
    wake_locked(lp);
}

/* Starts a free or a close (mutex held): waits cancelled, no new wait
 * lasts, a loop thread told to stop once its work is done. 0, or
 * DLOCK_EINVAL when one was started already. */
static int begin_close(dlock_loop *lp)
{
    if (lp->freeing)
        return DLOCK_EINVAL;
    __atomic_store_n(&lp->freeing, 1, __ATOMIC_RELEASE);
    cancel_all(lp);
    if (lp->mode == M_THREAD)
        lp->stop = 1;
    return 0;
}

/* The application's loop lets go of a loop in hook mode. */
static void drop_hooks(dlock_loop *lp)
{
    if (lp->mode != M_HOOKS)
        return;
    if (lp->timer_armed != -1)
        lp->hooks.schedule_timer(lp->hooks.data, -1);
    if (lp->epfd_watched)
        lp->hooks.del_read(lp->hooks.data, lp->epfd);
    if (lp->hooks.cleanup)
        lp->hooks.cleanup(lp->hooks.data);
}

/* A closed loop's end (its work done, on its thread): freed, then its
 * on_closed called, as an application's callback. */
static void closed(dlock_loop *lp)
{
    void (*fn)(void *arg) = lp->on_closed;
    void *arg = lp->closed_arg;

    drop_hooks(lp);
    if (lp->mode == M_THREAD)
        dlock_signal_destroy(&lp->tsig);
    loop_release(lp);
    if (fn) {
        dlock__callback_enter();
        fn(arg);
        dlock__callback_leave();
    }
}

/* Completes every pending operation on the caller's thread (poll and hook
 * modes), then frees lp. */
static void drain_and_free(dlock_loop *lp)
{
    size_t left;

    for (;;) {
        run_due(lp);
        pthread_mutex_lock(&lp->mu);
        left = lp->pending;
        pthread_mutex_unlock(&lp->mu);
        if (left == 0)
            break;
        /* What is left is an unlock or a read in flight elsewhere (a
         * blocking thread reads its reply), or a wait about to see its
         * cancel: short real-time naps until it reports. */
        dlock__wait_fd(lp->epfd, POLLIN, dlock__wait_now_ms() + 10);
    }
    drop_hooks(lp);
    loop_release(lp);
}

void dlock_loop_free(dlock_loop *lp)
{
    int rc;

    if (!lp)
        return;
    pthread_mutex_lock(&lp->mu);
    if (dlock__in_callback()) {
        /* Deferred: the dlock call running this callback finishes the
         * free before it returns (a loop thread: once its work is done). */
        if (begin_close(lp) == 0)
            lp->closing = lp->free_deferred = 1;
        pthread_mutex_unlock(&lp->mu);
        return;
    }
    rc = begin_close(lp);
    pthread_mutex_unlock(&lp->mu);
    if (rc != 0)
        return; /* closing already (it frees itself), or being freed */
    if (lp->mode == M_THREAD) {
        pthread_join(lp->thread, NULL);
        dlock_signal_destroy(&lp->tsig);
        loop_release(lp);
        return;
    }
    drain_and_free(lp);
}

int dlock_loop_close(dlock_loop *lp, void (*on_closed)(void *arg), void *arg)
{
    int rc;

    if (!lp)
        return DLOCK_EINVAL;
    pthread_mutex_lock(&lp->mu);
    rc = begin_close(lp);
    if (rc == 0) {
        lp->closing = 1;
        lp->on_closed = on_closed;
        lp->closed_arg = arg;
        wake_locked(lp); /* the next turn looks, even with nothing pending */
    }
    pthread_mutex_unlock(&lp->mu);
    return rc;
}

/* At the end of a call into the loop (dlock_loop_run, an on_* call):
 * a close whose work is done, or a deferred free, ends the loop here.
 * 1 when lp is gone. */
static int end_of_call(dlock_loop *lp)
{
    size_t left;

    if (!lp->closing)
        return 0;
    if (lp->free_deferred) {
        drain_and_free(lp);
        return 1;
    }
    pthread_mutex_lock(&lp->mu);
    left = lp->pending;
    pthread_mutex_unlock(&lp->mu);
    if (left > 0)
        return 0;
    closed(lp);
    return 1;
}

int dlock__loop_drive_watchdog(dlock_loop *lp)
{
    if (!lp || lp->mode != M_POLL || lp->client->wd_started ||
        lp->client->opts.watchdog_timeout_ms / 3 <= 0)
        return DLOCK_EINVAL;
    lp->wd_next = dlock_clock_now(lp->clock) + lp->client->opts.watchdog_timeout_ms / 3;
    return 0;
}

int dlock_loop_fd(dlock_loop *lp)
{
    return lp ? lp->epfd : -1;
}

int64_t dlock_loop_timeout_ms(dlock_loop *lp)
{
    int64_t wake, now;
    int work;

    if (!lp)
        return -1;
    pthread_mutex_lock(&lp->mu);
    work = lp->incoming.head || lp->ready.head || lp->woken;
    pthread_mutex_unlock(&lp->mu);
    if (work || lp->turns.head || lp->done.head || lp->due.head || lp->spent.head)
        return 0;
    wake = next_wake(lp);
    if (wake == INT64_MAX)
        return -1;
    now = dlock_clock_now(lp->clock);
    return wake > now ? wake - now : 0;
}

/* dlock_loop_run's wait, up to max_wait_ms, when nothing is to run now
 * (real-time clock; not with a wakeup hook, whose wake-ups do not go
 * through the set): 1 if it waited. */
static int run_wait(dlock_loop *lp, int64_t max_wait_ms)
{
    int64_t t, wait;

    if (max_wait_ms == 0 || !lp->rt || (lp->mode == M_HOOKS && lp->hooks.wakeup))
        return 0;
    t = dlock_loop_timeout_ms(lp);
    if (t == 0)
        return 0;
    wait = t < 0 ? max_wait_ms : (max_wait_ms < 0 || t < max_wait_ms ? t : max_wait_ms);
    wait_set(lp, wait < 0 || wait > 1000000000 ? -1 : (int)wait);
    return 1;
}

int dlock_loop_run(dlock_loop *lp, int64_t max_wait_ms)
{
    int n;

    if (!lp || lp->mode == M_THREAD || dlock__in_callback())
        return DLOCK_EINVAL;
    /* Nothing to run now: the wait first, whose report the run takes. */
    if (!run_wait(lp, max_wait_ms)) {
        n = run_due(lp);
        if (n == 0 && run_wait(lp, max_wait_ms))
            n = run_due(lp);
    } else {
        n = run_due(lp);
    }
    rearm(lp);
    end_of_call(lp);
    return n;
}

void dlock_loop_on_fd(dlock_loop *lp, int fd, int events)
{
    (void)fd, (void)events;
    if (!lp || lp->mode == M_THREAD)
        return;
    run_due(lp);
    rearm(lp);
    end_of_call(lp);
}

void dlock_loop_on_timer(dlock_loop *lp)
{
    if (!lp || lp->mode == M_THREAD)
        return;
    lp->timer_armed = -1;
    run_due(lp);
    rearm(lp);
    end_of_call(lp);
}

void dlock_loop_on_wakeup(dlock_loop *lp)
{
    dlock_loop_on_fd(lp, -1, DLOCK_LOOP_READ);
}

size_t dlock_loop_pending(dlock_loop *lp)
{
    size_t n;

    if (!lp)
        return 0;
    pthread_mutex_lock(&lp->mu);
    n = lp->pending;
    pthread_mutex_unlock(&lp->mu);
    return n;
}

int dlock_loop_set_max_in_flight(dlock_loop *lp, size_t max)
{
    if (!lp)
        return DLOCK_EINVAL;
    pthread_mutex_lock(&lp->mu);
    lp->cap = max > 0 ? max : default_cap();
    pthread_mutex_unlock(&lp->mu);
    return 0;
}

size_t dlock_loop_max_in_flight(dlock_loop *lp)
{
    size_t cap;

    if (!lp)
        return 0;
    pthread_mutex_lock(&lp->mu);
    cap = lp->cap;
    pthread_mutex_unlock(&lp->mu);
    return cap;
}

int dlock_op_cancel(dlock_loop *lp, dlock_op_id id)
{
    dlock__aop *o;

    if (!lp || id == 0)
        return DLOCK_EINVAL;
    pthread_mutex_lock(&lp->mu);
    o = *id_slot(lp, id);
    if (!o || o->state == A_DONE) {
        pthread_mutex_unlock(&lp->mu);
        return DLOCK_EINVAL;
    }
    if (o->is_wait) {
        __atomic_store_n(&o->canceled, 1, __ATOMIC_RELEASE);
        if (unpark_locked(lp, o))
            wake_locked(lp);
    }
    pthread_mutex_unlock(&lp->mu);
    return 0;
}

char **dlock_result_take_permit_ids(const dlock_result *r)
{
    dlock_result *w = (dlock_result *)r; /* the loop's own, writable */
    char **ids;

    if (!r)
        return NULL;
    ids = w->permit_ids;
    w->permit_ids = NULL;
    return ids;
}
