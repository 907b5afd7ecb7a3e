/*
 * dlock — fibers with a pool of guarded stacks (core/fiber.h).
 *
 * The switch, two of them:
 * - x86-64 (without -fcf-protection) and aarch64 (without
 *   -mbranch-protection=bti): a few instructions of our own that save the
 *   callee-saved registers, the floating-point control words and the
 *   stack pointer on the stack being left, and load them from the one
 *   being entered. They carry unwind rules (.cfi_*): a backtrace taken in a
 *   fiber (gdb's bt, backtrace(3)) shows the operation's frames, then the
 *   switch, then dlock__fiber_resume and the loop that resumed it, down to
 *   main; see the rules above the assembly.
 * - everywhere else, and with control-flow enforcement (x86-64's __CET__,
 *   -fcf-protection; aarch64's BTI) or -DDLOCK_FIBER_UCONTEXT:
 *   getcontext/makecontext/swapcontext. glibc's swapcontext also saves and
 *   restores the signal mask, two system calls per switch, and its context
 *   takes ~1 kB per fiber; the signal mask is the thread's anyway here (a
 *   fiber never changes it). A backtrace in a fiber ends below the fiber's
 *   first frame, at glibc's start of the context (the operation's frames,
 *   not the resumer's).
 * make check-fibers runs the ucontext path and a -fcf-protection build on
 * x86-64; make check-aarch64 both aarch64 paths under qemu-user.
 * Why not the assembly switch under CET: endbr64 alone would satisfy
 * indirect-branch tracking (the switch is only called directly, its entry
 * reached by ret), but the shadow stack would not accept it. Each fiber
 * needs a shadow stack of its own (map_shadow_stack, with a restore
 * token), and every switch must move the shadow-stack pointer with
 * saveprevssp/rstorssp, only when the kernel and glibc turned shadow
 * stacks on for the process. glibc's makecontext and swapcontext do just
 * that; a switch of ours would mark the object as shadow-stack compatible
 * (the compiler's .note.gnu.property covers the file) without being so,
 * and the first switch of a process run with shadow stacks would crash.
 *
 * Valgrind: each fiber's stack is registered with it
 * (VALGRIND_STACK_REGISTER) when <valgrind/valgrind.h> is there at build
 * time, so that a switch is not taken for a huge stack frame.
 */
#include "core/fiber.h"

#include "dlock/errors.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

/* Valgrind is told where each fiber's stack is (else it takes a switch
 * for a huge stack frame and warns "client switching stacks?"); the
 * requests cost a few instructions outside Valgrind. Optional: built in
 * when its header is there, left out with -DDLOCK_NO_VALGRIND. */
#if !defined(DLOCK_NO_VALGRIND) && defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define FIBER_VALGRIND 1
#endif
#endif

#if !defined(DLOCK_FIBER_UCONTEXT) && defined(__x86_64__) && !defined(__CET__)
#define FIBER_OWN_SWITCH 1
#define FIBER_SWITCH_NAME "x86-64 assembly"
#elif !defined(DLOCK_FIBER_UCONTEXT) && defined(__aarch64__) && \
    !defined(__ARM_FEATURE_BTI_DEFAULT)
#define FIBER_OWN_SWITCH 1
#define FIBER_SWITCH_NAME "aarch64 assembly"
#else
#define FIBER_SWITCH_NAME "ucontext"
#endif

#ifdef FIBER_OWN_SWITCH
/* A context: the stack pointer the switch left it at. */
typedef struct fctx {
    void *sp;
} fctx;

/* Saves the running context's registers on its stack and its stack
 * pointer into *from, then continues the context whose stack pointer is
 * to (where it switched away, or at dlock__fctx_begin for a new one). */
void dlock__fctx_switch(void **from, void *to) __attribute__((visibility("hidden")));
/* A new fiber's first instruction: calls dlock__fiber_entry(r12 on
 * x86-64, x19 on aarch64).
 * dlock__fctx_entry is one byte before it (a nop), so that an unwinder
 * that looks up a return address minus one finds this code's rules. */
void dlock__fctx_entry(void) __attribute__((visibility("hidden")));
void dlock__fctx_begin(void) __attribute__((visibility("hidden")));
void dlock__fiber_entry(void *f) __attribute__((visibility("hidden"), noreturn));

#if defined(__x86_64__)
/* The unwind rules (.cfi_*): in the switch, the frame is the one whose
 * registers are saved at the stack pointer (the same layout on both
 * sides, so the rules hold before and after the stack pointer moves: a
 * debugger stopped there sees the side it is on). In the entry, the
 * fiber's outermost frame, the caller is the resumer: the word above the
 * fiber's first frame holds &f->back, whose context's saved stack
 * pointer is where dlock__fiber_resume's registers and return address
 * are, so a backtrace taken in a fiber goes on through the resume into
 * the loop that runs it. The CFA expression (DW_CFA_def_cfa_expression):
 * rsp, three loads (&f->back, f->back, f->back->sp), plus 64 (the saved
 * block: control words, r15..r12, rbx, rbp, return address). */
__asm__(".text\n"
        ".globl dlock__fctx_switch\n"
        ".hidden dlock__fctx_switch\n"
        ".type dlock__fctx_switch,@function\n"
        "dlock__fctx_switch:\n"
        "    .cfi_startproc\n"
        "    pushq %rbp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %rbp, 0\n"
        "    pushq %rbx\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %rbx, 0\n"
        "    pushq %r12\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %r12, 0\n"
        "    pushq %r13\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %r13, 0\n"
        "    pushq %r14\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %r14, 0\n"
        "    pushq %r15\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    .cfi_rel_offset %r15, 0\n"
        "    subq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset 8\n"
        "    stmxcsr (%rsp)\n"
        "    fnstcw 4(%rsp)\n"
        "    movq %rsp, (%rdi)\n"
        "    movq %rsi, %rsp\n"
        "    ldmxcsr (%rsp)\n"
        "    fldcw 4(%rsp)\n"
        "    addq $8, %rsp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    popq %r15\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_restore %r15\n"
        "    popq %r14\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_restore %r14\n"
        "    popq %r13\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_restore %r13\n"
        "    popq %r12\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_restore %r12\n"
        "    popq %rbx\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_restore %rbx\n"
        "    popq %rbp\n"
        "    .cfi_adjust_cfa_offset -8\n"
        "    .cfi_restore %rbp\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size dlock__fctx_switch, .-dlock__fctx_switch\n"
        ".globl dlock__fctx_entry\n"
        ".hidden dlock__fctx_entry\n"
        ".type dlock__fctx_entry,@function\n"
        ".globl dlock__fctx_begin\n"
        ".hidden dlock__fctx_begin\n"
        "dlock__fctx_entry:\n"
        "    .cfi_startproc\n"
        "    .cfi_escape 0x0f, 0x07, 0x77, 0x00, 0x06, 0x06, 0x06, 0x23, 0x40\n"
        "    .cfi_offset %rip, -8\n"
        "    .cfi_offset %rbp, -16\n"
        "    .cfi_offset %rbx, -24\n"
        "    .cfi_offset %r12, -32\n"
        "    .cfi_offset %r13, -40\n"
        "    .cfi_offset %r14, -48\n"
        "    .cfi_offset %r15, -56\n"
        "    nop\n"
        "dlock__fctx_begin:\n"
        "    movq %r12, %rdi\n"
        "    call dlock__fiber_entry\n"
        "    ud2\n"
        "    .cfi_endproc\n"
        ".size dlock__fctx_entry, .-dlock__fctx_entry\n");

/* The words dlock__fctx_switch pops for a new context, from its stack
 * pointer up: the control words, r15, r14, r13, r12 (the fiber), rbx,
 * rbp, and the return address; above them, at the 16-aligned address the
 * entry's call is made from (as the ABI wants), the link its unwind rules
 * read (link: &f->back). */
static void ctx_make(fctx *c, char *stack, size_t size, void *f, fctx *const *link)
{
    uintptr_t top = (((uintptr_t)stack + size) & ~(uintptr_t)15) - 16;
    uint64_t *w = (uint64_t *)(top - 64);

    *(fctx *const **)top = link;
    w[0] = 0x1F80u | ((uint64_t)0x037Fu << 32); /* MXCSR, x87 control word:
                                                 * the ABI's initial values */
    w[1] = w[2] = w[3] = 0;
    w[4] = (uint64_t)(uintptr_t)f;
    w[5] = w[6] = 0;
    w[7] = (uint64_t)(uintptr_t)dlock__fctx_begin;
    c->sp = w;
}

#else /* __aarch64__ */
/* Where the switch saved each register, from the CFA (sp + 176). */
#define FIBER_A64_SAVED_CFI                                                  \
    "    .cfi_offset x19, -176\n    .cfi_offset x20, -168\n"               \
    "    .cfi_offset x21, -160\n    .cfi_offset x22, -152\n"               \
    "    .cfi_offset x23, -144\n    .cfi_offset x24, -136\n"               \
    "    .cfi_offset x25, -128\n    .cfi_offset x26, -120\n"               \
    "    .cfi_offset x27, -112\n    .cfi_offset x28, -104\n"               \
    "    .cfi_offset x29, -96\n    .cfi_offset x30, -88\n"                 \
    "    .cfi_offset d8, -80\n    .cfi_offset d9, -72\n"                   \
    "    .cfi_offset d10, -64\n    .cfi_offset d11, -56\n"                 \
    "    .cfi_offset d12, -48\n    .cfi_offset d13, -40\n"                 \
    "    .cfi_offset d14, -32\n    .cfi_offset d15, -24\n"

/* The same on aarch64: x19-x30 (x29 the frame pointer, x30 the return
 * address), d8-d15 and FPCR saved at the stack pointer, 176 bytes; the
 * entry's CFA expression is x86-64's (sp, three loads, plus 176). Only
 * called directly and entered by ret: no BTI landing pads are needed, but
 * a -mbranch-protection=bti build takes the ucontext path, as the note
 * the compiler adds would claim them for the file. */
__asm__(".text\n"
        ".globl dlock__fctx_switch\n"
        ".hidden dlock__fctx_switch\n"
        ".type dlock__fctx_switch,%function\n"
        ".p2align 2\n"
        "dlock__fctx_switch:\n"
        "    .cfi_startproc\n"
        "    sub sp, sp, #176\n"
        "    .cfi_def_cfa_offset 176\n"
        "    stp x19, x20, [sp, #0]\n"
        "    stp x21, x22, [sp, #16]\n"
        "    stp x23, x24, [sp, #32]\n"
        "    stp x25, x26, [sp, #48]\n"
        "    stp x27, x28, [sp, #64]\n"
        "    stp x29, x30, [sp, #80]\n"
        "    stp d8, d9, [sp, #96]\n"
        "    stp d10, d11, [sp, #112]\n"
        "    stp d12, d13, [sp, #128]\n"
        "    stp d14, d15, [sp, #144]\n"
        FIBER_A64_SAVED_CFI
        "    mrs x9, fpcr\n"
        "    str x9, [sp, #160]\n"
        "    mov x9, sp\n"
        "    str x9, [x0]\n"
        "    mov sp, x1\n"
        "    ldr x9, [sp, #160]\n"
        "    msr fpcr, x9\n"
        "    ldp d8, d9, [sp, #96]\n"
        "    ldp d10, d11, [sp, #112]\n"
        "    ldp d12, d13, [sp, #128]\n"
        "    ldp d14, d15, [sp, #144]\n"
        "    ldp x19, x20, [sp, #0]\n"
        "    ldp x21, x22, [sp, #16]\n"
        "    ldp x23, x24, [sp, #32]\n"
        "    ldp x25, x26, [sp, #48]\n"
        "    ldp x27, x28, [sp, #64]\n"
        "    ldp x29, x30, [sp, #80]\n"
        "    add sp, sp, #176\n"
        "    .cfi_def_cfa_offset 0\n"
        "    .cfi_restore x19\n    .cfi_restore x20\n    .cfi_restore x21\n"
        "    .cfi_restore x22\n    .cfi_restore x23\n    .cfi_restore x24\n"
        "    .cfi_restore x25\n    .cfi_restore x26\n    .cfi_restore x27\n"
        "    .cfi_restore x28\n    .cfi_restore x29\n    .cfi_restore x30\n"
        "    .cfi_restore d8\n    .cfi_restore d9\n    .cfi_restore d10\n"
        "    .cfi_restore d11\n    .cfi_restore d12\n    .cfi_restore d13\n"
        "    .cfi_restore d14\n    .cfi_restore d15\n"
        "    ret\n"
        "    .cfi_endproc\n"
        ".size dlock__fctx_switch, .-dlock__fctx_switch\n"
        ".globl dlock__fctx_entry\n"
        ".hidden dlock__fctx_entry\n"
        ".type dlock__fctx_entry,%function\n"
        ".globl dlock__fctx_begin\n"
        ".hidden dlock__fctx_begin\n"
        ".p2align 2\n"
        "dlock__fctx_entry:\n"
        "    .cfi_startproc\n"
        "    .cfi_escape 0x0f, 0x08, 0x8f, 0x00, 0x06, 0x06, 0x06, 0x23, 0xb0, 0x01\n"
        FIBER_A64_SAVED_CFI
        "    nop\n"
        "dlock__fctx_begin:\n"
        "    mov x0, x19\n"
        "    bl dlock__fiber_entry\n"
        "    brk #0\n"
        "    .cfi_endproc\n"
        ".size dlock__fctx_entry, .-dlock__fctx_entry\n");

/* The words dlock__fctx_switch loads for a new context, from its stack
 * pointer up: x19 (the fiber) to x28, x29 (0: the end of the frame
 * chain), x30 (the entry), d8-d15, FPCR (0: the ABI's initial value);
 * above them, at the 16-aligned address the entry starts from, the link
 * its unwind rules read. */
static void ctx_make(fctx *c, char *stack, size_t size, void *f, fctx *const *link)
{
    uintptr_t top = (((uintptr_t)stack + size) & ~(uintptr_t)15) - 16;
    uint64_t *w = (uint64_t *)(top - 176);

    *(fctx *const **)top = link;
    memset(w, 0, 176);
    w[0] = (uint64_t)(uintptr_t)f;
    w[11] = (uint64_t)(uintptr_t)dlock__fctx_begin;
    c->sp = w;
}
#endif

static void ctx_swap(fctx *from, fctx *to)
{
    dlock__fctx_switch(&from->sp, to->sp);
}
#else
typedef ucontext_t fctx;

static void trampoline(unsigned hi, unsigned lo);

static void ctx_make(fctx *c, char *stack, size_t size, void *f, fctx *const *link)
{
    (void)link; /* glibc's makecontext ends the unwind at the fiber's first frame */
    c->uc_stack.ss_sp = stack;
    c->uc_stack.ss_size = size;
    c->uc_link = NULL;
    /* makecontext passes ints: the fiber's address in two halves */
    makecontext(c, (void (*)(void))trampoline, 2, (unsigned)((uintptr_t)f >> 32),
                (unsigned)((uintptr_t)f & 0xffffffffu));
}

static void ctx_swap(fctx *from, fctx *to)
{
    swapcontext(from, to);
}
#endif

/* Stacks are mapped CHUNK at a time, each with a guard page below it, and
 * reused: a chunk is unmapped (one system call, and one flush of the
 * other CPUs' TLBs, for CHUNK stacks) only when all its stacks are free
 * and more than KEEP_FREE stacks, and at least as many as are in use,
 * would stay free without it. A loop with thousands of operations in
 * flight then costs no mapping or unmapping per operation, even when
 * they finish in waves (a slice's worth of fibers freed before the
 * callbacks start the next ones): a fresh chunk costs CHUNK + 1 system
 * calls and a page fault or two on each stack's first use, which a
 * reused stack has paid already. */
#define CHUNK 64
#define KEEP_FREE 1024

typedef struct chunk {
    char *base;                 /* CHUNK slots of (guard page + stack) */
    struct chunk *prev, *next;  /* in the list of chunks with a free slot */
    unsigned nfree;
    unsigned char idle[CHUNK];  /* the free slots' numbers */
} chunk;

struct dlock__fiber {
    fctx ctx;           /* the fiber's */
    fctx *back;         /* its resumer's, while it runs */
    dlock__fiber_fn fn;
    void *arg;
    void *data;
    char *map;          /* guard page + stack: slot `slot` of chunk */
    chunk *chunk;
    unsigned slot;
    int started, done;
    int want;           /* DLOCK__FIBER_*: what it yielded for */
    struct dlock_signal *sig;
    int64_t wake_ms;
    int fd, events;     /* of a DLOCK__FIBER_IO wait */
    int answer;
    int batching;       /* dlock__fiber_batch */
    const int *cancel;
#ifdef FIBER_TSAN
    void *tsan, *tsan_back;
#endif
#ifdef FIBER_VALGRIND
    unsigned vg_stack;  /* Valgrind's id of the stack */
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
static chunk *partial;      /* chunks with a free slot */
static size_t free_slots;   /* in them */
static size_t all_slots;    /* in every chunk mapped */

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);

    return p > 0 ? (size_t)p : 4096;
}

static size_t slot_size(void)
{
    return page_size() + DLOCK__FIBER_STACK;
}

/* pool_mu held */
static void partial_add(chunk *c)
{
    c->prev = NULL;
    c->next = partial;
    if (partial)
        partial->prev = c;
    partial = c;
}

static void partial_remove(chunk *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else
        partial = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
}

/* A new chunk, every slot free, its guard pages in place; NULL: no
 * memory. */
static chunk *chunk_map(void)
{
    size_t slot = slot_size(), page = page_size(), i;
    chunk *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->base = mmap(NULL, CHUNK * slot, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (c->base == MAP_FAILED) {
        free(c);
        return NULL;
    }
    for (i = 0; i < CHUNK; i++) {
        /* The guard: stacks grow down, so each slot's lowest page. */
        if (mprotect(c->base + i * slot, page, PROT_NONE) != 0) {
            munmap(c->base, CHUNK * slot);
            free(c);
            return NULL;
        }
        c->idle[i] = (unsigned char)(CHUNK - 1 - i);
    }
    c->nfree = CHUNK;
    return c;
}

/* A free slot for f (f->map, f->chunk, f->slot); -1: no memory. */
static int stack_take(dlock__fiber *f)
{
    chunk *c, *fresh = NULL;

    pthread_mutex_lock(&pool_mu);
    while (!partial) {
        pthread_mutex_unlock(&pool_mu);
        if (!(fresh = chunk_map()))
            return -1;
        pthread_mutex_lock(&pool_mu);
        partial_add(fresh);
        free_slots += CHUNK;
        all_slots += CHUNK;
    }
    c = partial;
    f->chunk = c;
    f->slot = c->idle[--c->nfree];
    f->map = c->base + f->slot * slot_size();
    free_slots--;
    if (c->nfree == 0)
        partial_remove(c);
    pthread_mutex_unlock(&pool_mu);
    return 0;
}

static void stack_give(dlock__fiber *f)
{
    chunk *c = f->chunk, *unmap = NULL;

    if (!c)
        return;
    pthread_mutex_lock(&pool_mu);
    if (c->nfree == 0)
        partial_add(c);
    c->idle[c->nfree++] = (unsigned char)f->slot;
    free_slots++;
    if (c->nfree == CHUNK && free_slots - CHUNK >= KEEP_FREE &&
        free_slots - CHUNK >= all_slots - free_slots) {
        partial_remove(c);
        free_slots -= CHUNK;
        all_slots -= CHUNK;
        unmap = c;
    }
    pthread_mutex_unlock(&pool_mu);
    f->chunk = NULL;
    f->map = NULL;
    if (unmap) {
        munmap(unmap->base, CHUNK * slot_size());
        free(unmap);
    }
}

/* A fiber's first frame: runs its function, then leaves for good. */
static void fiber_run(dlock__fiber *f)
{
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &f->back_bottom, &f->back_size);
#endif
    f->fn(f->arg);
    f->done = 1;
    /* Back for the last time: uc_link is not used, so that the switch is
     * annotated like every other one. */
    dlock__fiber_yield();
}

#ifdef FIBER_OWN_SWITCH
void dlock__fiber_entry(void *f)
{
    fiber_run(f);
    abort(); /* a finished fiber is never resumed */
}
#else
static void trampoline(unsigned hi, unsigned lo)
{
    fiber_run((dlock__fiber *)(((uintptr_t)hi << 32) | (uintptr_t)lo));
}
#endif

int dlock__fiber_new(dlock__fiber **out, dlock__fiber_fn fn, void *arg)
{
    dlock__fiber *f = calloc(1, sizeof(*f));

    *out = NULL;
    if (!f)
        return DLOCK_ENOMEM;
    if (stack_take(f) != 0) {
        free(f);
        return DLOCK_ENOMEM;
    }
#ifndef FIBER_OWN_SWITCH
    if (getcontext(&f->ctx) != 0)
        stack_give(f);
#endif
    if (!f->map) {
        free(f);
        return DLOCK_ENOMEM;
    }
    f->fn = fn;
    f->arg = arg;
    ctx_make(&f->ctx, f->map + page_size(), DLOCK__FIBER_STACK, f, &f->back);
#ifdef FIBER_VALGRIND
    f->vg_stack = VALGRIND_STACK_REGISTER(f->map + page_size(),
                                          f->map + page_size() + DLOCK__FIBER_STACK - 1);
#endif
#ifdef FIBER_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    *out = f;
    return 0;
}

int dlock__fiber_resume(dlock__fiber *f)
{
    fctx back;

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
    __sanitizer_start_switch_fiber(&f->fake_back, f->map + page_size(),
                                   DLOCK__FIBER_STACK);
#endif
    ctx_swap(&back, &f->ctx);
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
    ctx_swap(&f->ctx, f->back);
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(f->fake_fiber, &f->back_bottom, &f->back_size);
#endif
}

const char *dlock__fiber_switch_name(void)
{
    return FIBER_SWITCH_NAME;
}

int dlock__fiber_unwinds_to_resumer(void)
{
#ifdef FIBER_OWN_SWITCH
    return 1;
#else
    return 0;
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
#ifdef FIBER_VALGRIND
    VALGRIND_STACK_DEREGISTER(f->vg_stack);
#endif
    stack_give(f);
    free(f);
}

/* Yields for want (with sig, or fd and events) until wake_ms, and
 * returns what the resumer answered; DLOCK_EINVAL outside a fiber. */
static int park(int want, struct dlock_signal *sig, int fd, int events, int64_t wake_ms)
{
    dlock__fiber *f = current;

    if (!f)
        return DLOCK_EINVAL;
    f->want = want;
    f->sig = sig;
    f->fd = fd;
    f->events = events;
    f->wake_ms = wake_ms;
    f->answer = 0;
    dlock__fiber_yield();
    f->want = 0;
    f->sig = NULL;
    f->fd = -1;
    return f->answer;
}

int dlock__fiber_sleep(struct dlock_signal *sig, int64_t wake_ms)
{
    return park(DLOCK__FIBER_SLEEP, sig, -1, 0, wake_ms);
}

int dlock__fiber_wait_fd(int fd, int events, int64_t wake_ms)
{
    return park(DLOCK__FIBER_IO, NULL, fd, events, wake_ms);
}

int dlock__fiber_wait_fd_or(struct dlock_signal *sig, int fd, int events, int64_t wake_ms)
{
    return park(DLOCK__FIBER_IO, sig, fd, events, wake_ms);
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

void dlock__fiber_batch(int on)
{
    if (current)
        current->batching = on;
}

int dlock__fiber_batching(void)
{
    return current && current->batching;
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
