/*
 * The per-call integer formatting (core/fmt.h) against snprintf: the edges
 * of both types and a spread of values in between, digit for digit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/fmt.h"
#include "../harness/runner.h"

/* fmt(buf, v) against snprintf(fmt_spec) for one value. */
#define CHECK(fmt, spec, v)                                      \
    do {                                                         \
        char want_[32], got_[DLOCK__FMT_INT_SIZE + 8];           \
        size_t n_;                                               \
        memset(got_, 'x', sizeof got_);                          \
        snprintf(want_, sizeof want_, "%" spec, v);              \
        n_ = fmt(got_, v);                                       \
        assert_string_equal(got_, want_);                        \
        assert_int_equal(n_, strlen(want_));                     \
        assert_true(n_ + 1 <= DLOCK__FMT_INT_SIZE);              \
    } while (0)

static void check_i64(int64_t v)
{
    CHECK(dlock__fmt_i64, PRId64, v);
}

static void check_u64(uint64_t v)
{
    CHECK(dlock__fmt_u64, PRIu64, v);
}

static void test_edges(void **state)
{
    static const int64_t s[] = {0, 1, -1, 9, 10, -10, 99, 100, 30000, -30000,
                                INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN,
                                INT64_MAX - 1, INT64_MIN + 1};
    size_t i;
    (void)state;

    for (i = 0; i < sizeof s / sizeof s[0]; i++) {
        check_i64(s[i]);
        check_u64((uint64_t)s[i]);
    }
    check_u64(UINT64_MAX);
}

/* Every power of ten and its neighbours, then a pseudo-random spread. */
static void test_spread(void **state)
{
    uint64_t p = 1, x = 0x9e3779b97f4a7c15ULL;
    int i;
    (void)state;

    for (i = 0; i < 20; i++, p *= 10) {
        check_u64(p - 1);
        check_u64(p);
        check_u64(p + 1);
        check_i64(-(int64_t)(p - 1));
        check_i64((int64_t)p);
    }
    for (i = 0; i < 100000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        check_u64(x >> (x & 63));
        check_i64((int64_t)x >> (x & 63));
    }
}

int dlock_test_core_fmt(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges),
        cmocka_unit_test(test_spread),
    };
    return DLOCK_RUN_GROUP("core_fmt", tests, NULL, NULL);
}
