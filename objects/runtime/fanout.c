/*
 * dlock — one step on several lock objects at once (fanout.h).
 *
 * A process-wide pool of parked worker threads: a step hands each extra
 * index to an idle worker (waking it on its condition variable) and runs
 * index 0 itself. Creating and joining a thread per node and step cost more
 * than the round trip it overlapped (a Redlock of 5 reached 0.04 of a
 * single-node lock's pairs/s); a wake-up is a few microseconds. The pool
 * lives while a Redlock handle holds a reference (dlock__fanout_retain), so
 * freeing the last handle joins every worker: no thread outlives the locks.
 *
 * Cheaper still is no thread at all: when every node's backend can split a
 * call (send now, read the reply later: api/dlock/sys/backend.h), a step in
 * halves sends to every node and then reads every reply on the calling
 * thread (dlock__fanout_halves). A wake-up per node and step cost a
 * Redlock of 5 about two thirds of a single-node lock's pairs/s.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "objects/runtime/fanout.h"

#include "core/fiber.h"
#include "core/wait.h"

#define STACK_WORKERS 16

typedef struct job {
    dlock__fanout_fn fn;
    void *ctx;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t left; /* under mu: indexes handed to workers, not yet done */
} job;

typedef struct worker {
    struct worker *next_idle, *next_all; /* under pool_mu */
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *job; /* under mu: the step to run, NULL when parked */
    size_t i;
    int quit;
} worker;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static worker *idle, *all;
/* Handles that keep the pool, and steps running now: the pool is torn down
 * when both are zero. */
static size_t handles, calls;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void run(job *j, size_t i)
{
    j->fn(j->ctx, i);
}

static void *worker_main(void *arg)
{
    worker *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        job *j;

        while (!w->job && !w->quit)
            dlock__wait_cond(&w->cv, &w->mu, INT64_MAX);
        if (!w->job)
            break;
        j = w->job;
        pthread_mutex_unlock(&w->mu);
        run(j, w->i);
        pthread_mutex_lock(&w->mu);
        w->job = NULL;
        pthread_mutex_unlock(&w->mu);
        /* idle again before the caller can return: once every step has
         * returned, every worker is on the idle list (teardown relies on
         * it) */
        pthread_mutex_lock(&pool_mu);
        w->next_idle = idle;
        idle = w;
        pthread_mutex_unlock(&pool_mu);
        pthread_mutex_lock(&j->mu);
        if (--j->left == 0)
            pthread_cond_signal(&j->cv);
        pthread_mutex_unlock(&j->mu);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Under pool_mu. NULL when no thread can be had. */
static worker *worker_get(void)
{
    worker *w = idle;

    if (w) {
        idle = w->next_idle;
        return w;
    }
    w = calloc(1, sizeof(*w));
    if (!w)
        return NULL;
    if (pthread_mutex_init(&w->mu, NULL) != 0)
        goto fail_mu;
    if (pthread_cond_init(&w->cv, NULL) != 0)
        goto fail_cv;
    if (pthread_create(&w->th, NULL, worker_main, w) != 0)
        goto fail_th;
    w->next_all = all;
    all = w;
    return w;
fail_th:
    pthread_cond_destroy(&w->cv);
fail_cv:
    pthread_mutex_destroy(&w->mu);
fail_mu:
    free(w);
    return NULL;
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&pool_mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&pool_mu);
}

/* The child has none of the workers (only the forking thread survives, and
 * it was not inside a step): it forgets them, their memory included (their
 * mutexes may be held by threads that no longer exist), and starts a new
 * pool on its next step. */
static void atfork_child(void)
{
    idle = NULL;
    all = NULL;
    calls = 0;
    pthread_mutex_unlock(&pool_mu);
}

static void atfork_install(void)
{
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

/* Called with pool_mu held; releases it. */
static void pool_unref(void)
{
    worker *w, *list = NULL;

    if (handles == 0 && calls == 0) {
        list = all;
        all = NULL;
        idle = NULL;
    }
    pthread_mutex_unlock(&pool_mu);
    while ((w = list) != NULL) {
        list = w->next_all;
        pthread_mutex_lock(&w->mu);
        w->quit = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
    }
}

size_t dlock__fanout_workers(void)
{
    size_t k = 0;
    worker *w;

    pthread_mutex_lock(&pool_mu);
    for (w = all; w; w = w->next_all)
        k++;
    pthread_mutex_unlock(&pool_mu);
    return k;
}

void dlock__fanout_retain(void)
{
    pthread_once(&atfork_once, atfork_install);
    pthread_mutex_lock(&pool_mu);
    handles++;
    pthread_mutex_unlock(&pool_mu);
}

void dlock__fanout_release(void)
{
    pthread_mutex_lock(&pool_mu);
    handles--;
    pool_unref();
}

void dlock__fanout(size_t n, dlock__fanout_fn fn, void *ctx)
{
    worker *stack[STACK_WORKERS], **ws;
    job j;
    size_t i, handed = 0;

    if (n == 0)
        return;
    /* In a loop's fiber, or inside a callback where blocking calls are
     * refused: every index on this thread, one after the other. The
     * fiber's round trips then yield instead of parking the loop's thread
     * on the workers, and a refused call is refused on every node (the
     * backends' dispatchers say DLOCK_EDEADLK) instead of having workers
     * make its round trips while the callback waits for them. */
    if (dlock__fiber_current() || dlock__in_callback()) {
        for (i = 0; i < n; i++)
            fn(ctx, i);
        return;
    }
    j.fn = fn;
    j.ctx = ctx;
    ws = n <= STACK_WORKERS ? stack : calloc(n, sizeof(*ws));
    if (!ws || pthread_mutex_init(&j.mu, NULL) != 0) {
        /* out of resources: one after the other (each step's op bounds it) */
        for (i = 0; i < n; i++)
            fn(ctx, i);
        if (ws != stack)
            free(ws);
        return;
    }
    if (pthread_cond_init(&j.cv, NULL) != 0) {
        pthread_mutex_destroy(&j.mu);
        for (i = 0; i < n; i++)
            fn(ctx, i);
        if (ws != stack)
            free(ws);
        return;
    }
    pthread_once(&atfork_once, atfork_install);
    pthread_mutex_lock(&pool_mu);
    calls++;
    for (i = 1; i < n; i++) {
        ws[i] = worker_get();
        handed += ws[i] != NULL;
    }
    pthread_mutex_unlock(&pool_mu);
    j.left = handed;
    for (i = 1; i < n; i++) {
        if (!ws[i])
            continue;
        pthread_mutex_lock(&ws[i]->mu);
        ws[i]->i = i;
        ws[i]->job = &j;
        pthread_cond_signal(&ws[i]->cv);
        pthread_mutex_unlock(&ws[i]->mu);
    }
    /* index 0, and any index no worker could be had for, on this thread */
    run(&j, 0);
    for (i = 1; i < n; i++)
        if (!ws[i])
            run(&j, i);
    pthread_mutex_lock(&j.mu);
    while (j.left > 0)
        dlock__wait_cond(&j.cv, &j.mu, INT64_MAX);
    pthread_mutex_unlock(&j.mu);
    pthread_cond_destroy(&j.cv);
    pthread_mutex_destroy(&j.mu);
    if (ws != stack)
        free(ws);
    pthread_mutex_lock(&pool_mu);
    calls--;
    pool_unref();
}

typedef struct halves {
    dlock__fanout_fn send, receive;
    void *ctx;
} halves;

static void both_halves(void *ctx, size_t i)
{
    halves *h = ctx;

    h->send(h->ctx, i);
    h->receive(h->ctx, i);
}

void dlock__fanout_halves(size_t n, int split, dlock__fanout_fn send,
                          dlock__fanout_fn receive, void *ctx)
{
    halves h;
    size_t i;

    if (split) {
        for (i = 0; i < n; i++)
            send(ctx, i);
        for (i = 0; i < n; i++)
            receive(ctx, i);
        return;
    }
    h.send = send;
    h.receive = receive;
    h.ctx = ctx;
    dlock__fanout(n, both_halves, &h);
}
