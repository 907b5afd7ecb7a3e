/*
 * The fibers themselves (core/fiber.h), on whichever switch this build has
 * (fiber.c: the x86-64 assembly one, or ucontext elsewhere and with
 * -fcf-protection; make check-fibers and make check-aarch64 run these on
 * the others): steps, state that lives across switches, deep stacks, many
 * fibers at once, and an unwinder's view from inside a fiber.
 */
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fiber.h"
#include "../harness/runner.h"

#define NOINLINE __attribute__((noinline))

static void count_steps(void *arg)
{
    int *n = arg;

    while (*n < 3) {
        ++*n;
        dlock__fiber_yield();
    }
}

/* The switch this build has is the one its make target meant to test
 * (DLOCK_TEST_FIBER_SWITCH, set by make check-fibers and check-aarch64):
 * a flag that stopped selecting the path would otherwise pass unseen. */
static void test_switch_is_the_one_wanted(void **state)
{
    const char *want = getenv("DLOCK_TEST_FIBER_SWITCH");

    print_message("fiber switch: %s\n", dlock__fiber_switch_name());
    if (want && *want)
        assert_string_equal(dlock__fiber_switch_name(), want);
}

/* A fiber runs in steps, and its resume says when it ended. */
static void test_steps(void **state)
{
    dlock__fiber *f;
    int n = 0;

    assert_int_equal(dlock__fiber_new(&f, count_steps, &n), 0);
    assert_null(dlock__fiber_current());
    assert_int_equal(dlock__fiber_resume(f), 0);
    assert_int_equal(n, 1);
    assert_int_equal(dlock__fiber_resume(f), 0);
    assert_int_equal(dlock__fiber_resume(f), 0);
    assert_int_equal(n, 3);
    assert_int_equal(dlock__fiber_resume(f), 1);
    assert_int_equal(dlock__fiber_resume(f), 1); /* ended: not run again */
    dlock__fiber_free(f);
}

/* Integer and floating-point values live across switches in the
 * registers a switch must keep (callee-saved ones, as the compiler
 * chooses); two fibers interleave the same computation on other seeds. */
struct mix {
    unsigned seed;
    unsigned long long ix;
    double dx;
};

static NOINLINE void mix_step(struct mix *m, unsigned long long *a, double *d, int i)
{
    *a = *a * 6364136223846793005ull + m->seed + (unsigned)i;
    *d = *d * 1.0000001 + (double)(*a >> 40);
}

static void mix(void *arg)
{
    struct mix *m = arg;
    unsigned long long a = m->seed, b = m->seed * 3u, c = m->seed ^ 0x5555u;
    double d = m->seed / 7.0, e = m->seed * 0.25, g = 1.5;
    int i;

    for (i = 0; i < 64; i++) {
        mix_step(m, &a, &d, i);
        b += a >> 3;
        c ^= b << 1;
        e += d / 3.0;
        g = g * 0.5 + e;
        if (dlock__fiber_current())
            dlock__fiber_yield();
    }
    m->ix = a ^ b ^ c;
    m->dx = d + e + g;
}

static void test_state_survives_switches(void **state)
{
    struct mix want[2] = {{11, 0, 0}, {29, 0, 0}}, got[2] = {{11, 0, 0}, {29, 0, 0}};
    dlock__fiber *f[2];
    int i, done = 0;

    mix(&want[0]);
    mix(&want[1]);
    for (i = 0; i < 2; i++)
        assert_int_equal(dlock__fiber_new(&f[i], mix, &got[i]), 0);
    while (done < 2)
        for (i = 0, done = 0; i < 2; i++)
            done += dlock__fiber_resume(f[i]);
    for (i = 0; i < 2; i++) {
        assert_true(got[i].ix == want[i].ix);
        assert_true(memcmp(&got[i].dx, &want[i].dx, sizeof(double)) == 0);
        dlock__fiber_free(f[i]);
    }
}

/* Most of a fiber's stack is usable (DLOCK__FIBER_STACK), with a yield at
 * the deepest point. */
static NOINLINE unsigned long deep(int level)
{
    volatile unsigned char page[2048];
    unsigned long sum = 0;
    size_t i;

    for (i = 0; i < sizeof page; i++)
        page[i] = (unsigned char)(level + i);
    if (level > 0)
        sum = deep(level - 1);
    else
        dlock__fiber_yield();
    for (i = 0; i < sizeof page; i += 512)
        sum += page[i];
    return sum;
}

static void run_deep(void *arg)
{
    *(unsigned long *)arg = deep(DLOCK__FIBER_STACK / 2048 * 3 / 4);
}

static void test_deep_stack(void **state)
{
    dlock__fiber *f;
    unsigned long got = 0, want;

    assert_int_equal(dlock__fiber_new(&f, run_deep, &got), 0);
    assert_int_equal(dlock__fiber_resume(f), 0);
    assert_int_equal(dlock__fiber_resume(f), 1);
    dlock__fiber_free(f);
    want = 0;
    {
        int level;
        size_t i;
        for (level = 0; level <= DLOCK__FIBER_STACK / 2048 * 3 / 4; level++)
            for (i = 0; i < 2048; i += 512)
                want += (unsigned char)(level + i);
    }
    assert_true(got == want);
}

/* Hundreds of fibers alive at once (more than one chunk of stacks), each
 * with its own state, resumed round robin. */
#define MANY 200

struct counter {
    int id, steps;
};

static void count_own(void *arg)
{
    struct counter *c = arg;
    int local = c->id * 1000;

    while (c->steps < 10) {
        c->steps++;
        local++;
        dlock__fiber_yield();
        if (local != c->id * 1000 + c->steps)
            c->steps = 1000; /* caught by the assertion below */
    }
}

static void test_many_fibers(void **state)
{
    static dlock__fiber *f[MANY];
    static struct counter c[MANY];
    int i, round, done = 0;

    for (i = 0; i < MANY; i++) {
        c[i].id = i;
        c[i].steps = 0;
        assert_int_equal(dlock__fiber_new(&f[i], count_own, &c[i]), 0);
    }
    for (round = 0; round < 20 && done < MANY; round++)
        for (i = 0, done = 0; i < MANY; i++)
            done += dlock__fiber_resume(f[i]);
    assert_int_equal(done, MANY);
    for (i = 0; i < MANY; i++) {
        assert_int_equal(c[i].steps, 10);
        dlock__fiber_free(f[i]);
    }
}

/* backtrace(3) (the unwinder a debugger's backtrace also follows) from
 * inside a fiber: its frames, and past the fiber's first frame its
 * resumer's, down to the resumer's own callers, where the switch says it
 * chains; elsewhere the trace ends cleanly at the fiber's first frame. */
#define TRACE 64

struct trace {
    void *frames[TRACE];
    int n;
};

static NOINLINE void traced(void *arg)
{
    struct trace *t = arg;

    t->n = backtrace(t->frames, TRACE);
    dlock__fiber_yield(); /* a parked fiber's resume, traced the same */
    t->n = backtrace(t->frames, TRACE);
}

static NOINLINE int resume_traced(dlock__fiber *f, struct trace *own)
{
    int rc;

    own->n = backtrace(own->frames, TRACE);
    rc = dlock__fiber_resume(f);
    __asm__ __volatile__("" ::: "memory"); /* not a tail call */
    return rc;
}

static void check_trace(const struct trace *in_fiber, const struct trace *own)
{
    int common = 0, i;

    assert_true(in_fiber->n > 0);
    if (!dlock__fiber_unwinds_to_resumer())
        return;
    /* Below the fiber's frames and the resume: the resumer's callers,
     * the same return addresses as in the resumer's own trace, i.e. all
     * of that trace but resume_traced's own frame (and the frame of
     * backtrace's interceptor, under AddressSanitizer). */
    while (common < in_fiber->n && common < own->n &&
           in_fiber->frames[in_fiber->n - 1 - common] == own->frames[own->n - 1 - common])
        common++;
    if (common < own->n - 2 || common < 1 || in_fiber->n <= common + 2) {
        for (i = 0; i < in_fiber->n || i < own->n; i++)
            print_message("  %2d  in the fiber %p   in the resumer %p\n", i,
                          i < in_fiber->n ? in_fiber->frames[i] : NULL,
                          i < own->n ? own->frames[i] : NULL);
        fail_msg("the fiber's trace does not end with its resumer's callers");
    }
}

static void test_backtrace_through_switch(void **state)
{
    dlock__fiber *f;
    struct trace in_fiber, own;

    assert_int_equal(dlock__fiber_new(&f, traced, &in_fiber), 0);
    assert_int_equal(resume_traced(f, &own), 0);
    check_trace(&in_fiber, &own);
    assert_int_equal(resume_traced(f, &own), 1);
    check_trace(&in_fiber, &own);
    dlock__fiber_free(f);
}

int dlock_test_core_fiber(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_switch_is_the_one_wanted),
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_state_survives_switches),
        cmocka_unit_test(test_deep_stack),
        cmocka_unit_test(test_many_fibers),
        cmocka_unit_test(test_backtrace_through_switch),
    };
    return DLOCK_RUN_GROUP("core_fiber", tests, NULL, NULL);
}
