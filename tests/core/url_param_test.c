/*
 * The URL rules every parser of dlock shares (core/url_param.h) on their
 * own: where a query starts (a password may hold '?'), what a decimal is,
 * percent-decoding (%00 refused), and taking the client's parameters out
 * of a URL without quoting it in an error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"
#include "core/url_param.h"
#include "../harness/runner.h"

static void test_query(void **state)
{
    const char *u = "redis://user:pa?ss@host:6379/0?a=1";

    (void)state;
    assert_ptr_equal(dlock__url_query(u), strrchr(u, '?'));
    assert_null(dlock__url_query("redis://user:pa?ss@host:6379/0"));
    assert_non_null(dlock__url_query("mock:?x=1"));
    assert_string_equal(dlock__url_query("mock:?x=1"), "?x=1");
}

static void test_decimal(void **state)
{
    int64_t v = -1;

    (void)state;
    assert_int_equal(dlock__parse_decimal("0", 1, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(dlock__parse_decimal("10", 2, 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(dlock__parse_decimal("11", 2, 10, &v), -1);       /* above max */
    assert_int_equal(dlock__parse_decimal("", 0, 10, &v), -1);
    assert_int_equal(dlock__parse_decimal("-1", 2, 10, &v), -1);
    assert_int_equal(dlock__parse_decimal("+1", 2, 10, &v), -1);
    assert_int_equal(dlock__parse_decimal("1x", 2, 10, &v), -1);
    assert_int_equal(dlock__parse_decimal("99999999999999999999", 20, INT64_MAX, &v), -1);
    assert_int_equal(dlock__parse_decimal("12345", 3, 1000, &v), 0);  /* n bytes only */
    assert_int_equal(v, 123);
}

static void test_pct_decode(void **state)
{
    char *s = NULL;

    (void)state;
    assert_int_equal(dlock__pct_decode(&s, "a%40b%2fc", 9), 0);
    assert_string_equal(s, "a@b/c");
    free(s);
    s = NULL;
    assert_int_equal(dlock__pct_decode(&s, "a%00b", 5), DLOCK_EINVAL);
    assert_int_equal(dlock__pct_decode(&s, "a%4", 3), DLOCK_EINVAL);
    assert_int_equal(dlock__pct_decode(&s, "a%zz", 4), DLOCK_EINVAL);
}

static void test_take_int(void **state)
{
    const char *url = "redis://:secret@h:6379/?a=1&fair_waiter_timeout_ms=500&b=2";
    char err[256] = "", *rest = NULL;
    int64_t v = 0;
    int given = -1;

    (void)state;
    assert_int_equal(dlock__url_take_int(url, "fair_waiter_timeout_ms", 1, 1000, &v, &given,
                                         &rest, err, sizeof(err)), 0);
    assert_int_equal(given, 1);
    assert_int_equal(v, 500);
    assert_non_null(rest);
    assert_null(strstr(rest, "fair_waiter_timeout_ms"));
    assert_non_null(strstr(rest, "a=1"));
    assert_non_null(strstr(rest, "b=2"));
    free(rest);
    rest = NULL;

    assert_int_equal(dlock__url_take_int("redis://h/?b=2", "fair_waiter_timeout_ms", 1, 1000,
                                         &v, &given, &rest, err, sizeof(err)), 0);
    assert_int_equal(given, 0);
    free(rest);
    rest = NULL;

    /* out of range: named, never quoted (the URL may hold a password) */
    assert_int_equal(dlock__url_take_int(url, "fair_waiter_timeout_ms", 1, 100, &v, &given,
                                         &rest, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "fair_waiter_timeout_ms"));
    assert_null(strstr(err, "secret"));
    assert_null(strstr(err, "500"));
    free(rest);
}

int dlock_test_core_url_param(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_query),
        cmocka_unit_test(test_decimal),
        cmocka_unit_test(test_pct_decode),
        cmocka_unit_test(test_take_int),
    };
    return DLOCK_RUN_GROUP("core_url_param", tests, NULL, NULL);
}
