/*
 * dlock — fibers on ucontext, with a pool of guarded stacks (core/fiber.h).
 */
#include "core/fiber.h"

#include "dlock/errors.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define FIBER_TSAN 1
#endif

/* Stacks kept for reuse after their fiber ended: enough for the operations
 * a loop has in flight at once in steady state; more are unmapped. */
#define POOL_MAX 1024

struct dlock__fiber {
    ucontext_t ctx;     /* the fiber's */
    ucontext_t *back;   /* its resumer's, while it runs */
    dlock__fiber_fn fn;
    void *arg;
    void *data;
    char *map;          /* guard page + stack */
    size_t map_len;
    int started, done;
    int want;           /* DLOCK__FIBER_*: what it yielded for */
    struct dlock_signal *sig;
    int64_t wake_ms;
    int fd, events;     /* of a DLOCK__FIBER_IO wait */
    int answer;
    const int *cancel;
#ifdef FIBER_TSAN
    void *tsan, *tsan_back;
#endif
#ifdef FIBER_ASAN
    void *fake_back, *fake_fiber; /* ASan's fake stacks, per side */
    const void *back_bottom;
    size_t back_size;
#endif
};

static __thread dlock__fiber *current;
static __thread int callback_depth;

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static char *pool[POOL_MAX];
static size_t npool;

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);

    return p > 0 ? (size_t)p : 4096;
}

static char *stack_take(size_t *len)
{
    char *m = NULL;
    size_t page = page_size();

    *len = DLOCK__FIBER_STACK + page;
    pthread_mutex_lock(&pool_mu);
    if (npool > 0)
        m = pool[--npool];
    pthread_mutex_unlock(&pool_mu);
    if (m)
        return m;
    m = mmap(NULL, *len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    /* The guard: stacks grow down, so the lowest page. */
    if (mprotect(m, page, PROT_NONE) != 0) {
        munmap(m, *len);
        return NULL;
    }
    return m;
}

static void stack_give(char *m, size_t len)
{
    int kept = 0;

    if (!m)
        return;
    pthread_mutex_lock(&pool_mu);
    if (npool < POOL_MAX) {
        pool[npool++] = m;
        kept = 1;
    }
    pthread_mutex_unlock(&pool_mu);
    if (!kept)
        munmap(m, len);
}

/* makecontext passes ints: the fiber's address in two halves. */
static void trampoline(unsigned hi, unsigned lo)
{
    dlock__fiber *f = (dlock__fiber *)(((uintptr_t)hi << 32) | (uintptr_t)lo);

#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &f->back_bottom, &f->back_size);
#endif
    f->fn(f->arg);
    f->done = 1;
    /* Back for the last time: uc_link is not used, so that the switch is
     * annotated like every other one. */
    dlock__fiber_yield();
}

int dlock__fiber_new(dlock__fiber **out, dlock__fiber_fn fn, void *arg)
{
    dlock__fiber *f = calloc(1, sizeof(*f));

    *out = NULL;
    if (!f)
        return DLOCK_ENOMEM;
    f->map = stack_take(&f->map_len);
    if (!f->map || getcontext(&f->ctx) != 0) {
        stack_give(f->map, f->map_len);
        free(f);
        return DLOCK_ENOMEM;
    }
    f->fn = fn;
    f->arg = arg;
    f->ctx.uc_stack.ss_sp = f->map + page_size();
    f->ctx.uc_stack.ss_size = DLOCK__FIBER_STACK;
    f->ctx.uc_link = NULL;
    makecontext(&f->ctx, (void (*)(void))trampoline, 2,
                (unsigned)((uintptr_t)f >> 32), (unsigned)((uintptr_t)f & 0xffffffffu));
#ifdef FIBER_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    *out = f;
    return 0;
}

int dlock__fiber_resume(dlock__fiber *f)
{
    ucontext_t back;

    if (!f || f->done || current)
        return 1;
    f->back = &back;
    f->started = 1;
    current = f;
#ifdef FIBER_TSAN
    f->tsan_back = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(f->tsan, 0);
#endif
#ifdef FIBER_ASAN
    __sanitizer_start_switch_fiber(&f->fake_back, f->ctx.uc_stack.ss_sp,
                                   f->ctx.uc_stack.ss_size);
#endif
    swapcontext(&back, &f->ctx);
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(f->fake_back, NULL, NULL);
#endif
    current = NULL;
    return f->done;
}

void dlock__fiber_yield(void)
{
    dlock__fiber *f = current;

    if (!f)
        return;
#ifdef FIBER_TSAN
    __tsan_switch_to_fiber(f->tsan_back, 0);
#endif
#ifdef FIBER_ASAN
    /* A finished fiber's stack is never coming back: NULL frees its fake
     * frames. */
    __sanitizer_start_switch_fiber(f->done ? NULL : &f->fake_fiber,
                                   f->back_bottom, f->back_size);
#endif
    swapcontext(&f->ctx, f->back);
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(f->fake_fiber, &f->back_bottom, &f->back_size);
#endif
}

dlock__fiber *dlock__fiber_current(void)
{
    return current;
}

void *dlock__fiber_data(const dlock__fiber *f)
{
    return f ? f->data : NULL;
}

void dlock__fiber_set_data(dlock__fiber *f, void *data)
{
    if (f)
        f->data = data;
}

void dlock__fiber_free(dlock__fiber *f)
{
    if (!f)
        return;
#ifdef FIBER_TSAN
    __tsan_destroy_fiber(f->tsan);
#endif
    stack_give(f->map, f->map_len);
    free(f);
}

int dlock__fiber_sleep(struct dlock_signal *sig, int64_t wake_ms)
{
    dlock__fiber *f = current;

    if (!f)
        return DLOCK_EINVAL;
    f->want = DLOCK__FIBER_SLEEP;
    f->sig = sig;
    f->wake_ms = wake_ms;
    f->answer = 0;
    dlock__fiber_yield();
    f->want = 0;
    f->sig = NULL;
    return f->answer;
}

int dlock__fiber_wait_fd(int fd, int events, int64_t wake_ms)
{
    dlock__fiber *f = current;

    if (!f)
        return DLOCK_EINVAL;
    f->want = DLOCK__FIBER_IO;
    f->fd = fd;
    f->events = events;
    f->wake_ms = wake_ms;
    f->answer = 0;
    dlock__fiber_yield();
    f->want = 0;
    f->fd = -1;
    return f->answer;
}

void dlock__fiber_want_io(const dlock__fiber *f, int *fd, int *events)
{
    *fd = f->fd;
    *events = f->events;
}

void dlock__fiber_turn(void)
{
    dlock__fiber *f = current;

    if (!f)
        return;
    f->want = DLOCK__FIBER_TURN;
    dlock__fiber_yield();
    f->want = 0;
}

int dlock__fiber_want(const dlock__fiber *f, struct dlock_signal **sig, int64_t *wake_ms)
{
    if (sig)
        *sig = f->sig;
    if (wake_ms)
        *wake_ms = f->wake_ms;
    return f->want;
}

void dlock__fiber_answer(dlock__fiber *f, int rc)
{
    f->answer = rc;
}

void dlock__fiber_set_cancel(dlock__fiber *f, const int *flag)
{
    f->cancel = flag;
}

int dlock__fiber_canceled(void)
{
    dlock__fiber *f = current;

    return f && f->cancel && __atomic_load_n(f->cancel, __ATOMIC_ACQUIRE);
}

void dlock__callback_enter(void)
{
    callback_depth++;
}

void dlock__callback_leave(void)
{
    callback_depth--;
}

int dlock__blocking_refused(void)
{
    return callback_depth > 0 && current == NULL;
}

int dlock__in_callback(void)
{
    return callback_depth > 0;
}
