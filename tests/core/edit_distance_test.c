/*
 * The edit distance behind the configuration parsers' "did you mean"
 * (core/edit_distance.h) on its own: insertions, deletions, substitutions,
 * the empty strings, and the length bound past which nothing is near.
 */
#include <stdint.h>
#include <string.h>

#include "core/edit_distance.h"
#include "../harness/runner.h"

static void test_distances(void **state)
{
    (void)state;
    assert_int_equal(dlock__edit_distance("", ""), 0);
    assert_int_equal(dlock__edit_distance("timeout", "timeout"), 0);
    assert_int_equal(dlock__edit_distance("", "abc"), 3);
    assert_int_equal(dlock__edit_distance("abc", ""), 3);
    assert_int_equal(dlock__edit_distance("timout", "timeout"), 1);    /* an insertion */
    assert_int_equal(dlock__edit_distance("timeoutt", "timeout"), 1);  /* a deletion */
    assert_int_equal(dlock__edit_distance("timeoat", "timeout"), 1);   /* a substitution */
    assert_int_equal(dlock__edit_distance("kitten", "sitting"), 3);
    assert_int_equal(dlock__edit_distance("flaw", "lawn"), 2);
    /* symmetric */
    assert_int_equal(dlock__edit_distance("sitting", "kitten"), 3);
}

static void test_bound(void **state)
{
    char longest[DLOCK_EDIT_DISTANCE_MAX + 1], over[DLOCK_EDIT_DISTANCE_MAX + 2];

    (void)state;
    memset(longest, 'a', sizeof(longest) - 1);
    longest[sizeof(longest) - 1] = '\0';
    memset(over, 'a', sizeof(over) - 1);
    over[sizeof(over) - 1] = '\0';
    assert_int_equal(dlock__edit_distance(longest, longest), 0);
    assert_int_equal(dlock__edit_distance("", longest), DLOCK_EDIT_DISTANCE_MAX);
    assert_true(dlock__edit_distance(over, "a") == SIZE_MAX);
    assert_true(dlock__edit_distance("a", over) == SIZE_MAX);
}

int dlock_test_core_edit_distance(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distances),
        cmocka_unit_test(test_bound),
    };
    return DLOCK_RUN_GROUP("core_edit_distance", tests, NULL, NULL);
}
