/*
 * The build switches (make WITH_TLS=0 WITH_YAML=0, Makefile): the library
 * says which optional parts it was built with (dlock_version_info,
 * dlock_version_has), and a call that needs a part left out fails with
 * DLOCK_ENOTSUP and a detail naming it, while a part built in never does.
 * The test program is built with the library's switches
 * (DLOCK_TEST_NO_TLS, DLOCK_TEST_NO_YAML), so each build checks its own.
 * No server: the rediss:// URL points at a closed port and is refused (or
 * not) before any connection.
 */
#include <stdio.h>
#include <string.h>

#include "dlock.h"
#include "harness/runner.h"

#ifdef DLOCK_TEST_NO_TLS
#define HAVE_TLS 0
#else
#define HAVE_TLS 1
#endif
#ifdef DLOCK_TEST_NO_YAML
#define HAVE_YAML 0
#else
#define HAVE_YAML 1
#endif

static void info_lists_the_parts(void **state)
{
    const char *info = dlock_version_info();
    char want[32];

    (void)state;
    snprintf(want, sizeof want, "%s%s%s", HAVE_TLS ? "tls" : "",
             HAVE_TLS && HAVE_YAML ? " " : "", HAVE_YAML ? "yaml" : "");
    assert_string_equal(info, want);
    assert_int_equal(dlock_version_has("tls"), HAVE_TLS);
    assert_int_equal(dlock_version_has("yaml"), HAVE_YAML);
    assert_int_equal(dlock_version_has("tl"), 0);
    assert_int_equal(dlock_version_has("ls"), 0);
    assert_int_equal(dlock_version_has(""), 0);
    assert_int_equal(dlock_version_has(NULL), 0);
    assert_int_equal(dlock_version_has("tls yaml"), 0);
}

static void tls_url(void **state)
{
    dlock_client *c = NULL;
    char err[256] = "";
    int rc;

    (void)state;
    /* lazy_connect: the backend is made without connecting, so a built-in
     * TLS gets as far as its context and succeeds */
    rc = dlock_client_connect(&c, "rediss://127.0.0.1:1?insecure=1&lazy_connect=1", NULL,
                              err, sizeof err);
    if (HAVE_TLS) {
        assert_int_not_equal(rc, DLOCK_ENOTSUP);
    } else {
        assert_int_equal(rc, DLOCK_ENOTSUP);
        assert_null(c);
        assert_non_null(strstr(err, "built without TLS"));
    }
    dlock_client_free(c);
}

static void yaml_config(void **state)
{
    dlock_client *c = NULL;
    char err[256] = "";
    int rc;

    (void)state;
    rc = dlock_client_from_redisson_yaml_string(
        &c, "lazyInitialization: true\nsingleServerConfig:\n  address: \"redis://127.0.0.1:1\"\n",
        err, sizeof err);
    if (HAVE_YAML) {
        assert_int_not_equal(rc, DLOCK_ENOTSUP);
    } else {
        assert_int_equal(rc, DLOCK_ENOTSUP);
        assert_null(c);
        assert_non_null(strstr(err, "built without the Redisson YAML reader"));
    }
    dlock_client_free(c);
}

int dlock_test_build_options(void)
{
    const struct CMUnitTest cases[] = {
        cmocka_unit_test(info_lists_the_parts),
        cmocka_unit_test(tls_url),
        cmocka_unit_test(yaml_config),
    };
    return DLOCK_RUN_GROUP("build options", cases, NULL, NULL);
}
