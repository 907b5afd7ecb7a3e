/*
 * Redis Cluster's slot rules on the scripts, without a cluster: the lock
 * objects run on the mock wrapped in the slot check (tests/harness/
 * slot_check.h), which answers real hash slots and "spublish" and refuses
 * any script call that reaches more than one slot (its KEYS, the keys its
 * commands touch, its SPUBLISH channels). The groups marked ROW_SLOTS in
 * tests/suites.h pass through it (the generic conformance cases of the
 * lock types, the groups of the types with keys of their own: fair queue,
 * read-write markers, semaphore leases and permits; the object lifetime
 * calls of the Redisson parity cases; the reserved names):
 * SPUBLISH wakes the waiters end to end and no script leaves its slot. Then
 * the watchdog: holds over many slots are renewed in one call per master
 * (the check's 3 masters), or in one call per slot where the server
 * refuses calls over several slots, and a lost hold in a master's call is
 * reported alone.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/asserts.h"
#include "harness/fixture.h"
#include "harness/runner.h"
#include "harness/slot_check.h"
#include "suites.h"

#include "dlock/sys/backend.h"

#define KIND "mock-cluster"

DLOCK_TEST_GROUPS(DLOCK_TEST_DECLARE_GROUP)

/* The generic cases of every lock type but one: a name with a '{' and no
 * {hash tag} after it ("}{", "{") leaves its keys without a common tag
 * (Redisson's naming rule adds braces only to a name without any), so its
 * key and its channel land in different slots: such names cannot be used
 * on a cluster, with Redisson as with dlock. */
static const char *const cluster_skips[] = {"odd_names_end_to_end", NULL};

/* The stress cases: the scripts they run, the others run too; what they
 * add is concurrency, which the slot check does not change, and time
 * (about 50 s here). sem_stress_* also count with a gauge script of
 * their own over two unrelated keys. */
static const char *const stress_cases[] = {
    "mutual_exclusion", "watchdog_races_unlock", "stress_readers_and_writers",
    "sem_stress_plain", "sem_stress_plain_and_lock", NULL};

/* The groups marked ROW_SLOTS in tests/suites.h: the types with keys of
 * their own mark theirs, so a new one is checked with no line here. */
static const struct {
    int (*fn)(const char *backend);
    int rows;
} groups[] = {
#define SLOT_GROUP(fn, what, rows) {fn, rows},
    DLOCK_TEST_GROUPS(SLOT_GROUP)
#undef SLOT_GROUP
};

/* Redis's own examples (cluster spec, CLUSTER KEYSLOT). */
static void slot_function_is_redis_cluster_s(void **state)
{
    (void)state;
    assert_int_equal(slot_check_slot("123456789", 9), 0x31C3); /* CRC16 check value */
    assert_int_equal(slot_check_slot("foo", 3), 12182);
    assert_int_equal(slot_check_slot("{user1000}.following", 20),
                     slot_check_slot("{user1000}.followers", 20));
    assert_int_equal(slot_check_slot("{user1000}.following", 20),
                     slot_check_slot("user1000", 8));
    /* an empty tag does not count: the whole key is hashed */
    assert_int_equal(slot_check_slot("foo{}{bar}", 10), slot_check_slot("foo{}{bar}", 10));
    assert_int_not_equal(slot_check_slot("foo{}{bar}", 10), slot_check_slot("bar", 3));
    assert_int_equal(slot_check_slot("foo{{bar}}zap", 13), slot_check_slot("{bar", 4));
    assert_int_equal(slot_check_slot("foo{bar}{zap}", 13), slot_check_slot("bar", 3));
}

static const dlock_script two_slots = {"test_two_slots", "return 1\n"};
static const dlock_script reaches_out = {
    "test_reaches_out", "return redis.call('exists', KEYS[1], 'bar')\n"};
static const dlock_script plain_publish = {
    "test_plain_publish", "return redis.call('publish', KEYS[1], 'x')\n"};
static const dlock_script sharded_publish = {
    "test_sharded_publish", "return redis.call(ARGV[1], 'ch:{foo}', 'x')\n"};

/* The check can fail: a call whose KEYS span two slots, a script touching
 * a key of another slot, and a plain PUBLISH are refused and counted; a
 * SPUBLISH in the slot of KEYS[1] runs. */
static void check_refuses_what_a_cluster_refuses(void **state)
{
    dlock_fx *fx = dlock_fx_begin(state, "check_refuses");
    dlock_backend *b = dlock_client_backend(fx->c1);
    const char *argv[3] = {"foo", "bar", NULL};
    slot_check_counts before, after;
    dlock_reply *r;

    assert_string_equal(dlock_backend_publish_command(b), "spublish");
    assert_int_equal(dlock_backend_key_slot(b, "foo", 3), 12182);
    slot_check_counts_get(&before, NULL, 0);
    assert_int_equal(dlock_backend_eval(b, &r, &two_slots, 2, 0, argv, NULL, NULL, 0), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    assert_non_null(strstr(r->str, "CROSSSLOT"));
    dlock_reply_free(r);
    assert_int_equal(dlock_backend_eval(b, &r, &reaches_out, 1, 0, argv, NULL, NULL, 0), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    dlock_reply_free(r);
    assert_int_equal(dlock_backend_eval(b, &r, &plain_publish, 1, 0, argv, NULL, NULL, 0), 0);
    assert_int_equal(r->type, DLOCK_REPLY_ERROR);
    dlock_reply_free(r);
    slot_check_counts_get(&after, NULL, 0);
    assert_int_equal(after.cross_keys, before.cross_keys + 1);
    assert_int_equal(after.cross_body, before.cross_body + 2);
    argv[1] = "spublish";
    assert_int_equal(dlock_backend_eval(b, &r, &sharded_publish, 1, 1, argv, NULL, NULL, 0),
                     0);
    assert_int_equal(r->type, DLOCK_REPLY_INTEGER);
    dlock_reply_free(r);
    /* forget the breaches made on purpose: the totals below count the
     * objects' own */
    slot_check_counts_reset();
}

#define NPLAIN 30  /* names of their own: about as many slots */
#define NTAGGED 20 /* names sharing one {hash tag}: one slot */
#define NHOLDS (NPLAIN + NTAGGED)

/* More handles than the fixture keeps: freed together by its teardown. */
typedef struct lock_set {
    size_t n;
    dlock_rlock *l[NHOLDS];
} lock_set;

static void free_lock_set(void *o)
{
    lock_set *s = o;

    while (s->n > 0)
        dlock_rlock_free(s->l[--s->n]);
    free(s);
}

/* Takes NHOLDS lease-0 locks on c1, over many slots; counts the slots and
 * the masters (slot * 3 / 16384) they lie in. */
static lock_set *take_spread(dlock_fx *fx, size_t *nslots, size_t *nnodes)
{
    lock_set *set = dlock_fx_keep(fx, calloc(1, sizeof(lock_set)), free_lock_set);
    unsigned seen[NHOLDS];
    int node_seen[3] = {0, 0, 0};
    size_t i, k;

    *nslots = *nnodes = 0;
    for (i = 0; i < NHOLDS; i++) {
        char name[160];
        unsigned s;

        if (i < NPLAIN)
            snprintf(name, sizeof(name), "%s:%zu", fx->name, i);
        else
            snprintf(name, sizeof(name), "{%s:tagged}:%zu", fx->name, i);
        assert_int_equal(dlock_reentrant_new(&set->l[set->n], fx->c1, name), 0);
        assert_int_equal(dlock_lock(set->l[set->n++], 0), 0);
        s = slot_check_slot(name, strlen(name));
        for (k = 0; k < *nslots && seen[k] != s; k++)
            ;
        if (k == *nslots)
            seen[(*nslots)++] = s;
        if (!node_seen[s * 3 / 16384]++)
            (*nnodes)++;
    }
    assert_true(*nslots > NPLAIN / 2); /* the names do spread */
    return set;
}

/* Five watchdog periods (each lease three times over) with the holds of
 * set on c1: every hold still held, no call beyond its slot (or master),
 * every round renewed every hold. The renewal calls made, per round. */
static uint64_t calls_per_round(dlock_fx *fx, lock_set *set)
{
    slot_check_counts before, after;
    dlock_metrics m0 = DLOCK_METRICS_INIT, m1 = DLOCK_METRICS_INIT;
    uint64_t calls, renewed;
    size_t i;

    slot_check_counts_get(&before, NULL, 0);
    assert_int_equal(dlock_client_metrics(fx->c1, &m0), 0);
    dlock_fx_advance(fx, 5 * fx->watchdog_ms);
    slot_check_counts_get(&after, NULL, 0);
    assert_int_equal(dlock_client_metrics(fx->c1, &m1), 0);
    for (i = 0; i < set->n; i++)
        assert_int_equal(dlock_fx_hold_count(set->l[i]), 1);
    assert_int_equal(after.cross_keys + after.cross_body, 0);
    calls = after.renewals - before.renewals;
    renewed = m1.renewals - m0.renewals;
    assert_true(renewed >= 10 * NHOLDS);
    assert_int_equal(renewed % NHOLDS, 0);
    assert_int_equal(calls % (renewed / NHOLDS), 0);
    printf("watchdog: %llu renewal calls for %llu renewed holds\n",
           (unsigned long long)calls, (unsigned long long)renewed);
    return calls / (renewed / NHOLDS);
}

/* A server refusing calls over several slots: the watchdog renews holds
 * spread over many slots in one call per slot (per renewal script): each
 * round costs exactly as many calls as there are distinct slots. */
static void watchdog_renews_one_call_per_slot(void **state)
{
    dlock_fx *fx = dlock_fx_begin(state, "watchdog_slots");
    size_t nslots, nnodes;
    lock_set *set;

    slot_check_set_cross(0);
    set = take_spread(fx, &nslots, &nnodes);
    assert_int_equal(calls_per_round(fx, set), nslots);
    printf("over %zu slots\n", nslots);
    slot_check_set_cross(1);
}

/* The same holds with calls over several slots of one master allowed: each
 * round costs one call per master the names lie on (fewer than 100 holds
 * each), and still no call reaches beyond its master. */
static void watchdog_renews_one_call_per_master(void **state)
{
    dlock_fx *fx = dlock_fx_begin(state, "watchdog_masters");
    size_t nslots, nnodes;
    lock_set *set;

    slot_check_set_cross(1);
    set = take_spread(fx, &nslots, &nnodes);
    assert_true(nnodes < nslots);
    assert_int_equal(calls_per_round(fx, set), nnodes);
    printf("over %zu slots of %zu masters\n", nslots, nnodes);
}

/* One hold of a master's call deleted behind its owner's back (a forced
 * unlock from the other client): the next round reports that one lost,
 * exactly once, and keeps renewing the others. */
static void watchdog_lost_in_master_call(void **state)
{
    dlock_fx *fx = dlock_fx_begin(state, "watchdog_lost");
    size_t nslots, nnodes, i;
    const size_t victim = 7;
    lock_set *set;
    dlock_rlock *other = NULL;
    char name[DLOCK_NAME_MAX + 1];
    int existed = 0;

    slot_check_set_cross(1);
    set = take_spread(fx, &nslots, &nnodes);
    snprintf(name, sizeof(name), "%s", dlock_rlock_name(set->l[victim]));
    assert_int_equal(dlock_reentrant_new(&other, fx->c2, name), 0);
    assert_int_equal(dlock_force_unlock(other, &existed), 0);
    assert_int_equal(existed, 1);
    dlock_rlock_free(other);
    dlock_fx_advance(fx, 3 * fx->watchdog_ms);
    assert_int_equal(dlock_fx_lost_count(fx), 1);
    pthread_mutex_lock(&fx->lost_mutex);
    assert_string_equal(fx->lost_name, name);
    pthread_mutex_unlock(&fx->lost_mutex);
    for (i = 0; i < set->n; i++)
        if (i != victim)
            assert_int_equal(dlock_fx_hold_count(set->l[i]), 1);
    assert_int_equal(dlock_unlock(set->l[victim]), DLOCK_ELOST);
}

/* Last: nothing run through the check reached beyond its slot. */
static void no_script_crossed_a_slot(void **state)
{
    slot_check_counts n;
    char first[256];

    (void)state;
    slot_check_counts_get(&n, first, sizeof(first));
    if (n.cross_keys + n.cross_body > 0)
        fprintf(stderr, "first breach: %s\n", first);
    assert_true(n.evals > 1000);
    assert_int_equal(n.cross_keys, 0);
    assert_int_equal(n.cross_body, 0);
}

static const struct CMUnitTest own_cases[] = {
    cmocka_unit_test(slot_function_is_redis_cluster_s),
    DLOCK_FX_CASE(check_refuses_what_a_cluster_refuses),
    DLOCK_FX_CASE(watchdog_renews_one_call_per_slot),
    DLOCK_FX_CASE(watchdog_renews_one_call_per_master),
    DLOCK_FX_CASE(watchdog_lost_in_master_call),
};

static const struct CMUnitTest total_cases[] = {
    cmocka_unit_test(no_script_crossed_a_slot),
};

int dlock_test_cluster_slots(void);
int dlock_test_cluster_slots(void)
{
    int before = dlock_test_failed;
    size_t i;

    dlock_fx_set_mock_wrapper(KIND, slot_check_backend_new);
    dlock_fx_set_skips(stress_cases);
    slot_check_counts_reset();
    DLOCK_FX_RUN_GROUP("slot check", KIND, own_cases);
    dlock_fx_set_conformance_skips(cluster_skips);
    for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
        if (groups[i].rows & ROW_SLOTS)
            groups[i].fn(KIND);
    dlock_fx_set_conformance_skips(NULL);
    DLOCK_RUN_GROUP("cluster slots: totals", total_cases, NULL, NULL);
    dlock_fx_set_skips(NULL);
    dlock_fx_set_mock_wrapper(NULL, NULL);
    return dlock_test_failed - before;
}
