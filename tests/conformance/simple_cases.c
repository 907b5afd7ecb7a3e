/*
 * The simple lock (api/dlock/simple_lock.h): the reentrant lock's generic
 * cases on it (tests/conformance/reentrant_cases.c) but those that need
 * re-entry or plant Redisson's hash, and its own cases: no re-entry, the
 * string layout (a redis-py holder is a holder), a key of another type
 * refused, the state document; and the sys/ helpers it is built on
 * (api/dlock/sys/lock_type.h).
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include "dlock/sys/lock_type.h"
#include "dlock/sys/methods.h"

#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* reentrant_cases.c */
int dlock_test_lock_type(const char *backend, const dlock_fx_lock_type *type,
                         const char *const *skip, const struct CMUnitTest *own,
                         size_t nown);

static const dlock_fx_lock_type simple_type = {"simple", dlock_simple_lock_new};

/* The generic cases the simple lock skips: the first six lock twice with
 * one owner (re-entry, which a simple lock refuses by design:
 * simple_not_reentrant below); the last three plant a value under the name
 * as Redisson's hash or as a foreign string, which for the simple lock is
 * its own layout (simple_foreign_holder, simple_wrong_type below). */
static const char *const simple_skips[] = {
    "hold_count_across_reentry", "seen_from_other_owners", "busy_while_held",
    "lease_reapplied_on_reentry", "watchdog_partial_unlock_keeps_renewing",
    "explicit_owner_across_threads", "odd_names_end_to_end",
    "remain_ttl_values", "watchdog_stops_after_unlock", "wrong_type_under_name",
    NULL,
};

/* One hold per owner; asking again fails instead of re-entering or
 * deadlocking, and changes nothing. */
static void simple_not_reentrant(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_rlock *l2 = dlock_fx_lock(fx, fx->c2, fx->name);
    char buf[DLOCK_OWNER_MAX];
    int64_t ttl;

    assert_int_equal(dlock_lock(l1, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock(l1, 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_non_null(strstr(dlock_errmsg(l1), "not reentrant"));
    assert_int_equal(dlock_try_lock(l1, 1000, fx->long_lease_ms), DLOCK_EDEADLK);
    assert_int_equal(dlock_lock(l1, 0), DLOCK_EDEADLK);
    /* the refused lease-0 call did not put the hold under the watchdog */
    assert_int_equal(dlock_hold_lease(l1, fx->owner1), fx->long_lease_ms);
    assert_int_equal(dlock_try_lock_as(l2, fx->owner1, 1000, 0), DLOCK_EDEADLK);
    printf("  [%s] lock again by the holder: %s\n", fx->backend, dlock_errmsg(l2));
    assert_int_equal(dlock_fx_hold_count(l1), 1);
    assert_int_equal(dlock_fx_hold_count_as(l2, fx->owner1), 1);
    ttl = dlock_fx_remain_ttl(l2);
    assert_true(ttl > fx->long_lease_ms / 2);
    assert_int_equal(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY);

    /* redis-py's layout: a string holding the holder's id */
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "type", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, "string");
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "get", fx->name, 0, NULL, NULL);
    assert_string_equal(buf, fx->owner1);

    /* one unlock releases it; a second is a non-owner's */
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_fx_is_locked(l2), 0);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_try_lock(l2, 0, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(l2), 0);
}

/* A string another client (redis-py) left under the name is a holder. */
static void simple_foreign_holder(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    const char *token = "5f0c1b2e9d3a4c6b8e7f6a5b4c3d2e1f";
    char buf[64], *text = NULL;
    int existed = -1;

    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "set", fx->name, 1, token, NULL);
    assert_string_equal(buf, "OK");
    assert_int_equal(dlock_fx_is_locked(l1), 1);
    assert_int_equal(dlock_fx_remain_ttl(l1), -1);
    assert_int_equal(dlock_fx_is_held_as(l1, token), 1);
    assert_int_equal(dlock_fx_hold_count_as(l1, token), 1);
    assert_int_equal(dlock_fx_hold_count(l1), 0);
    assert_int_equal(dlock_try_lock(l1, 0, 0), DLOCK_EBUSY);
    assert_int_equal(dlock_unlock(l1), DLOCK_ENOTOWNER);
    assert_int_equal(dlock_rlock_state_text(l1, &text), 0);
    printf("  [%s] %s\n", fx->backend, text);
    assert_non_null(strstr(text, "\"type\":\"simple\""));
    assert_non_null(strstr(text, token));
    assert_non_null(strstr(text, "\"locked\":true"));
    free(text);
    assert_int_equal(dlock_force_unlock(l1, &existed), 0);
    assert_int_equal(existed, 1);
    assert_int_equal(dlock_fx_remain_ttl(l1), -2);
    assert_int_equal(dlock_force_unlock(l1, &existed), 0);
    assert_int_equal(existed, 0);
}

/* Redisson's hash under the name is not a simple lock: every call says so
 * and nothing is touched. */
static void simple_wrong_type(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    char buf[64];
    int existed = -1, flag;

    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hset", fx->name, 2, "other:1", "1");
    assert_string_equal(buf, "1");
    assert_int_equal(dlock_try_lock(l1, 0, fx->lease_ms), DLOCK_EPROTO);
    assert_int_equal(dlock_try_lock(l1, 500, 0), DLOCK_EPROTO);
    printf("  [%s] on a hash: %s\n", fx->backend, dlock_errmsg(l1));
    assert_int_equal(dlock_force_unlock(l1, &existed), DLOCK_EPROTO);
    assert_int_equal(dlock_is_locked(l1, &flag), DLOCK_EPROTO);
    dlock_fx_call_str(fx->c2, buf, sizeof(buf), "hget", fx->name, 1, "other:1", NULL);
    assert_string_equal(buf, "1");
    /* nothing for the watchdog: the lease-0 attempt did not take */
    dlock_fx_advance(fx, 2 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 0);
}

/* The sys/ helpers a lock type of one's own is made of. */
static void lock_type_helpers(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_rlock *l1 = dlock_fx_lock(fx, fx->c1, fx->name);
    dlock_object_base *o = NULL;
    json_t *doc, *h;
    dlock_reply *r;
    int64_t retry = 0;

    assert_int_equal(dlock_client_watchdog_timeout(fx->c1), fx->watchdog_ms);
    assert_int_equal(dlock_client_watchdog_timeout(NULL), 0);
    assert_int_equal(dlock_rlock_lease(l1, 0), fx->watchdog_ms);
    assert_int_equal(dlock_rlock_lease(l1, 1234), 1234);
    assert_int_equal(dlock_retry_after(-1), -1);
    assert_int_equal(dlock_retry_after(0), 1);
    assert_int_equal(dlock_retry_after(250), 250);
    r = dlock_reply_integer(77);
    assert_int_equal(dlock_rlock_refused(l1, dlock_script_hash_renew(), r, &retry), 0);
    assert_int_equal(retry, 77);
    r = dlock_reply_nil();
    assert_int_equal(dlock_rlock_refused(l1, dlock_script_hash_renew(), r, &retry),
                     DLOCK_EPROTO);
    assert_non_null(dlock_script_hash_renew());
    assert_non_null(strstr(dlock_script_hash_renew()->source, "hexists"));

    /* the lease a partial release keeps: the hold's */
    assert_int_equal(dlock_hold_lease(l1, fx->owner1), 0);
    assert_int_equal(dlock_lock(l1, 4321), 0);
    assert_int_equal(dlock_hold_lease(l1, fx->owner1), 4321);
    assert_int_equal(dlock_unlock(l1), 0);
    assert_int_equal(dlock_lock(l1, 0), 0);
    assert_int_equal(dlock_hold_lease(l1, fx->owner1), fx->watchdog_ms);
    assert_int_equal(dlock_unlock(l1), 0);

    doc = dlock_state_new(l1, 900);
    assert_non_null(doc);
    assert_int_equal(dlock_state_add_holder(doc, "a\xff", 2, 1, 900), 0);
    assert_int_equal(dlock_state_add_holder(doc, NULL, 0, 1, 900), DLOCK_EINVAL);
    assert_string_equal(json_string_value(json_object_get(doc, "type")), "simple");
    assert_string_equal(json_string_value(json_object_get(doc, "name")), fx->name);
    assert_true(json_is_true(json_object_get(doc, "locked")));
    assert_int_equal(json_integer_value(json_object_get(doc, "ttl_ms")), 900);
    assert_int_equal(json_array_size(json_object_get(doc, "holders")), 1);
    h = json_array_get(json_object_get(doc, "holders"), 0);
    assert_string_equal(json_string_value(json_object_get(h, "owner")), "a\xef\xbf\xbd");
    assert_int_equal(json_integer_value(json_object_get(h, "holds")), 1);
    json_decref(doc);
    doc = dlock_state_new(l1, -2);
    assert_true(json_is_false(json_object_get(doc, "locked")));
    json_decref(doc);
    assert_null(dlock_state_new(NULL, 0));
    doc = json_object();
    assert_int_equal(dlock_state_add_holder(doc, "x", 1, 1, 1), DLOCK_EINVAL);
    json_object_set_new(doc, "holders", json_string("not an array"));
    assert_int_equal(dlock_state_add_holder(doc, "x", 1, 1, 1), DLOCK_EINVAL);
    json_decref(doc);

    /* the object base refuses a size without room for itself */
    assert_int_equal(dlock_object_base_new(&o, sizeof(dlock_rlock), l1->methods, fx->c1,
                                           fx->name, "p:", ""),
                     DLOCK_EINVAL);
    assert_null(o);
    assert_int_equal(dlock_object_base_new(&o, sizeof(*o), l1->methods, fx->c1,
                                           "base{x}", "chan:", ":s"),
                     0);
    assert_string_equal(o->channel, "chan:base{x}:s");
    dlock_rlock_free(&o->base);
}

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest simple_cases[] = {
    CASE(simple_not_reentrant),
    CASE(simple_foreign_holder),
    CASE(simple_wrong_type),
    CASE(lock_type_helpers),
};

int dlock_test_simple(const char *backend)
{
    return dlock_test_lock_type(backend, &simple_type, simple_skips, simple_cases,
                                sizeof(simple_cases) / sizeof(simple_cases[0]));
}
