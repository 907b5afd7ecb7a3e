/*
 * UTF-8 validation (core/utf8.h) on its own: where the first byte that is
 * not well-formed UTF-8 sits, for each way RFC 3629 lets a sequence go
 * wrong (overlong forms, surrogates, above U+10FFFF, cut short, a stray
 * continuation byte) and for the edges that are allowed.
 */
#include <stdint.h>
#include <string.h>

#include "core/utf8.h"
#include "../harness/runner.h"

#define AT(s) dlock__utf8_check(s, sizeof(s) - 1)

static void test_well_formed(void **state)
{
    (void)state;
    assert_int_equal(dlock__utf8_check("", 0), 0);
    assert_int_equal(AT("lock:1"), 6);
    assert_int_equal(AT("\xc2\x80"), 2);                 /* U+0080, the first two-byte */
    assert_int_equal(AT("\xdf\xbf"), 2);                 /* U+07FF */
    assert_int_equal(AT("\xe0\xa0\x80"), 3);             /* U+0800 */
    assert_int_equal(AT("\xed\x9f\xbf"), 3);             /* U+D7FF, below the surrogates */
    assert_int_equal(AT("\xee\x80\x80"), 3);             /* U+E000, above them */
    assert_int_equal(AT("\xf0\x90\x80\x80"), 4);         /* U+10000 */
    assert_int_equal(AT("\xf4\x8f\xbf\xbf"), 4);         /* U+10FFFF, the last */
    assert_int_equal(AT("a\xc3\xa9z"), 4);
}

static void test_ill_formed(void **state)
{
    (void)state;
    assert_int_equal(AT("ab\x80"), 2);                   /* a stray continuation byte */
    assert_int_equal(AT("ab\xc0\x80"), 2);               /* overlong NUL */
    assert_int_equal(AT("\xc1\xbf"), 0);                 /* overlong two-byte */
    assert_int_equal(AT("\xe0\x9f\xbf"), 0);             /* overlong three-byte */
    assert_int_equal(AT("\xf0\x8f\xbf\xbf"), 0);         /* overlong four-byte */
    assert_int_equal(AT("x\xed\xa0\x80"), 1);            /* U+D800, a surrogate */
    assert_int_equal(AT("\xed\xbf\xbf"), 0);             /* U+DFFF */
    assert_int_equal(AT("\xf4\x90\x80\x80"), 0);         /* U+110000 */
    assert_int_equal(AT("\xf5\x80\x80\x80"), 0);
    assert_int_equal(AT("\xff"), 0);
    assert_int_equal(AT("ok\xe2\x82"), 2);               /* cut short at the end */
    assert_int_equal(AT("\xe2\x82x"), 0);                /* cut short by another byte */
    /* n is the length: a NUL is a character, and nothing past n is read. */
    assert_int_equal(dlock__utf8_check("a\0b", 3), 3);
    assert_int_equal(dlock__utf8_check("\xc3\xa9", 1), 0);
}

int dlock_test_core_utf8(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_well_formed),
        cmocka_unit_test(test_ill_formed),
    };
    return DLOCK_RUN_GROUP("core_utf8", tests, NULL, NULL);
}
