/*
 * custom_lock — a lock type of your own, written outside the library from
 * its installed headers only: <dlock.h> and the type author's
 * <dlock/sys/methods.h> (the method table, the wait loop, the hold registry)
 * and <dlock/sys/lock_type.h> (the object base, leases, the hash renewal
 * script, the state document).
 *
 *   custom_lock                         on the in-process mock backend
 *   custom_lock redis://127.0.0.1:6379  on a Redis server
 *
 * The type: a "capped" reentrant lock, which lets one owner nest at most
 * CAP holds (a guard against runaway recursion) and otherwise behaves as
 * the reentrant lock. It keeps Redisson's layout (a hash at the name, one
 * field per owner = hold count, waiters woken on
 * "redisson_lock__channel:{name}"), so that the library's hash renewal
 * script renews its lease-0 holds and a plain reentrant handle on the same
 * name sees them. A type is two things: Lua scripts, which the backend runs
 * atomically (the same text on Redis and on the mock), and a method table.
 *
 * Prints what it does; exits 0 when every step answered as expected
 * (make demo runs it on the mock, make check on Redis, make install-check
 * builds it from the installed files).
 */
#include <dlock.h>
#include <dlock/sys/lock_type.h>
#include <dlock/sys/methods.h>

#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP 2

/* ---- the scripts ------------------------------------------------------------ */

/* KEYS[1] the lock; ARGV[1] lease ms; ARGV[2] owner; ARGV[3] the cap;
 * ARGV[4] the count this call's earlier attempt would have left if it ran
 * without its answer coming back (dlock_op_retry_expect; 0: none): then
 * that attempt's hold is this one, not counted again.
 * nil: acquired; -3: the owner is at the cap; else the holder's PTTL. Time
 * arguments are checked before the first write: Redis does not roll back a
 * script that fails half way. */
static const dlock_script acquire_script = {
    "capped_acquire",
    "local lease = tonumber(ARGV[1])\n"
    "if not lease or lease < 1 or lease > 1000000000000 then\n"
    "  return redis.error_reply('ERR bad lease')\n"
    "end\n"
    "local mine = tonumber(redis.call('hget', KEYS[1], ARGV[2]) or '0')\n"
    "local expect = tonumber(ARGV[4]) or 0\n"
    "if mine == 0 and redis.call('exists', KEYS[1]) == 1 then\n"
    "  return redis.call('pttl', KEYS[1])\n"
    "end\n"
    "if expect > 0 and mine == expect then\n"
    "  if redis.call('pttl', KEYS[1]) < lease then\n"
    "    redis.call('pexpire', KEYS[1], lease)\n"
    "  end\n"
    "  return nil\n"
    "end\n"
    "if mine >= tonumber(ARGV[3]) then return -3 end\n"
    "redis.call('hincrby', KEYS[1], ARGV[2], 1)\n"
    "if redis.call('pttl', KEYS[1]) < lease then\n"
    "  redis.call('pexpire', KEYS[1], lease)\n"
    "end\n"
    "return nil\n",
};

/* KEYS[1] the lock, KEYS[2] the channel; ARGV[1] owner, ARGV[2] the lease
 * a remaining hold keeps at least (0: its TTL), ARGV[3] the publish command
 * (publish_cmd below). nil: not held by the owner; 0: one hold less; 1:
 * released and waiters told. */
static const dlock_script release_script = {
    "capped_release",
    "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end\n"
    "if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then\n"
    "  local keep = tonumber(ARGV[2])\n"
    "  if keep > 0 and redis.call('pttl', KEYS[1]) < keep then\n"
    "    redis.call('pexpire', KEYS[1], keep)\n"
    "  end\n"
    "  return 0\n"
    "end\n"
    "redis.call('del', KEYS[1])\n"
    "redis.call(ARGV[3], KEYS[2], '0')\n"
    "return 1\n",
};

/* KEYS[1] the lock, KEYS[2] the channel; ARGV[1] the publish command. 1:
 * it existed. */
static const dlock_script force_script = {
    "capped_force_unlock",
    "if redis.call('del', KEYS[1]) == 0 then return 0 end\n"
    "redis.call(ARGV[1], KEYS[2], '0')\n"
    "return 1\n",
};

/* The command that wakes waiters: "publish", or "spublish" on Redis
 * Cluster (sharded pub/sub, where the channel must share the keys' slot:
 * the object base's channel carries the name's {hash tag}). The backend
 * knows which; the scripts take it as an argument. */
static const char *publish_cmd(dlock_rlock *l)
{
    return dlock_backend_publish_command(dlock_client_backend(l->client));
}

/* KEYS[1] the lock; ARGV[1] an owner (may be ''). {PTTL, the owner's
 * holds}: one read serves every read slot. */
static const dlock_script read_script = {
    "capped_read",
    "return {redis.call('pttl', KEYS[1]),\n"
    "        tonumber(redis.call('hget', KEYS[1], ARGV[1]) or '0')}\n",
};

/* ---- the method table ------------------------------------------------------- */

/* One acquisition attempt for the wait loop (dlock_rlock_wait), for the
 * operation's owner. op is the library's: hand it, unchanged, to every
 * script call made for it (its deadline and replica-sync verdict ride on
 * it). */
static int attempt(dlock_rlock *l, dlock_op *op, const dlock_wait_spec *spec,
                   int64_t lease_ms, int64_t *retry_ms)
{
    const char *owner = dlock_op_owner(op);
    char lease[24], cap[8], expect[24];
    const char *argv[5];
    dlock_reply *r = NULL;
    int rc;

    (void)spec;
    /* lease 0: the watchdog's timeout, renewed by the watchdog */
    snprintf(lease, sizeof(lease), "%" PRId64, dlock_rlock_lease(l, lease_ms));
    snprintf(cap, sizeof(cap), "%d", CAP);
    argv[0] = l->name;
    argv[1] = lease;
    argv[2] = owner;
    argv[3] = cap;
    /* a retry after a lost answer: what the store holds if it ran */
    snprintf(expect, sizeof(expect), "%" PRId64, dlock_op_retry_expect(l, op));
    argv[4] = expect;
    /* The hold registry brackets the script; with lease 0 the watchdog
     * renews the hold with the library's hash renewal script, which fits
     * this layout. */
    rc = dlock_rlock_eval_acquire(l, op, &r, lease_ms, dlock_script_hash_renew(),
                                  &acquire_script, 1, 4, argv);
    if (rc != 0 || r == NULL)
        return rc; /* an error, or acquired */
    if (r->type == DLOCK_REPLY_INTEGER && r->integer == -3) {
        dlock_reply_free(r);
        return dlock_rlock_fail(l, DLOCK_EBUSY, "at most %d nested holds", CAP);
    }
    /* refused: the holder's TTL bounds the wait for the release message */
    if ((rc = dlock_rlock_refused(l, &acquire_script, r, retry_ms)) != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_EBUSY, "held by another owner");
}

static int acquire(dlock_rlock *l, dlock_op *op, int64_t wait_ms, int64_t lease_ms)
{
    return dlock_object_base_wait(l, op, attempt, NULL, wait_ms, lease_ms);
}

static int release(dlock_rlock *l, dlock_op *op)
{
    const char *owner = dlock_op_owner(op);
    char keep[24];
    const char *argv[5];

    snprintf(keep, sizeof(keep), "%" PRId64, dlock_hold_lease(l, owner));
    argv[0] = l->name;
    argv[1] = ((dlock_object_base *)l)->channel;
    argv[2] = owner;
    argv[3] = keep;
    argv[4] = publish_cmd(l);
    return dlock_rlock_eval_release(l, op, &release_script, 2, 3, argv);
}

static int force_unlock(dlock_rlock *l, int *existed)
{
    const char *argv[3];
    int64_t n = 0;
    int rc;

    argv[0] = l->name;
    argv[1] = ((dlock_object_base *)l)->channel;
    argv[2] = publish_cmd(l);
    /* not part of an operation (no wait, no hold of its own): op NULL */
    rc = dlock_rlock_eval_integer(l, NULL, &n, &force_script, 2, 1, argv);
    *existed = rc == 0 && n == 1;
    return rc;
}

/* st[0] the TTL (-2: free), st[1] owner's holds. */
static int read_state(dlock_rlock *l, const char *owner, int64_t st[2])
{
    const char *argv[2];
    dlock_reply *r;
    int rc;

    argv[0] = l->name;
    argv[1] = owner;
    if ((rc = dlock_rlock_eval(l, NULL, &r, &read_script, 1, 1, argv)) != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 2 ||
        r->elems[0]->type != DLOCK_REPLY_INTEGER ||
        r->elems[1]->type != DLOCK_REPLY_INTEGER) {
        dlock_reply_free(r);
        return dlock_rlock_fail(l, DLOCK_EPROTO, "capped_read: unexpected reply");
    }
    st[0] = r->elems[0]->integer;
    st[1] = r->elems[1]->integer;
    dlock_reply_free(r);
    return 0;
}

static int is_locked(dlock_rlock *l, int *out)
{
    int64_t st[2];
    int rc = read_state(l, "", st);

    *out = rc == 0 && st[0] != -2;
    return rc;
}

static int is_held(dlock_rlock *l, const char *owner, int *out)
{
    int64_t st[2];
    int rc = read_state(l, owner, st);

    *out = rc == 0 && st[1] > 0;
    return rc;
}

static int hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    int64_t st[2];
    int rc = read_state(l, owner, st);

    *out = rc == 0 ? st[1] : 0;
    return rc;
}

static int remain_ttl(dlock_rlock *l, int64_t *out)
{
    int64_t st[2];
    int rc = read_state(l, "", st);

    *out = rc == 0 ? st[0] : -2;
    return rc;
}

/* The state document: the common fields from the library's builder, the
 * calling thread's holds as the one holder shown (a full type would list
 * every field of the hash), and this type's extra, "cap". */
static int state(dlock_rlock *l, json_t **out)
{
    char owner[DLOCK_OWNER_MAX];
    int64_t st[2];
    json_t *doc;
    int rc;

    dlock_client_owner(l->client, owner, sizeof(owner));
    if ((rc = read_state(l, owner, st)) != 0)
        return rc;
    doc = dlock_state_new(l, st[0]);
    if (!doc || json_object_set_new(doc, "cap", json_integer(CAP)) != 0 ||
        (st[1] > 0 && dlock_state_add_holder(doc, owner, strlen(owner), st[1], st[0]))) {
        json_decref(doc);
        return dlock_rlock_fail(l, DLOCK_ENOMEM, "out of memory");
    }
    *out = doc;
    return 0;
}

/* dlock_extend: the layout is the reentrant lock's, so the library's hash
 * renewal script sets the owner's lease (and the hold registry learns
 * whether the watchdog renews it from now on). */
static int extend(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return dlock_rlock_extend_by_renewal(l, owner, lease_ms, dlock_script_hash_renew());
}

/* Slots named: a slot left out is NULL (not supported), and a table
 * built against a newer header keeps compiling. */
static const dlock_rlock_methods capped_methods = {
    .version = DLOCK_RLOCK_METHODS_VERSION,
    .type = "capped",
    .acquire = acquire,
    .release = release,
    .force_unlock = force_unlock,
    .is_locked = is_locked,
    .is_held = is_held,
    .hold_count = hold_count,
    .remain_ttl = remain_ttl,
    .destroy = dlock_object_base_destroy,
    .state = state,
    .extend = extend,
};

/* The constructor: the object base allocates the handle and names the
 * channel; dlock_rlock_free frees it through the table's destroy slot. */
static int capped_lock_new(dlock_rlock **out, dlock_client *c, const char *name)
{
    dlock_object_base *o = NULL;
    int rc = dlock_object_base_new(&o, sizeof(*o), &capped_methods, c, name,
                                   "redisson_lock__channel:", "");

    *out = o ? &o->base : NULL;
    return rc;
}

/* ---- using it: every generic dlock_* call works on it ----------------------- */

static int failures;

static void expect(int rc, int want, const char *what, dlock_rlock *l)
{
    printf("  %-44s -> %s%s%s\n", what, dlock_errname(rc), rc && l ? ": " : "",
           rc && l ? dlock_errmsg(l) : "");
    if (rc != want) {
        printf("custom_lock: FAIL: %s: expected %s\n", what, dlock_errname(want));
        failures++;
    }
}

typedef struct waiter_arg {
    dlock_rlock *l;
    int rc;
} waiter_arg;

static void *waiter(void *arg)
{
    waiter_arg *w = arg;

    w->rc = dlock_try_lock(w->l, 10000, 5000);
    if (w->rc == 0)
        w->rc = dlock_unlock(w->l);
    return NULL;
}

/* Two clients on one store: "mock:" would give each its own. */
static int connect2(const char *url, dlock_client **c1, dlock_client **c2)
{
    char err[256] = "";
    int rc;

    if (strcmp(url, "mock:") == 0) {
        dlock_mock_store *store = NULL;
        dlock_backend *b1 = NULL, *b2 = NULL;
        rc = dlock_mock_store_new(&store, NULL);
        if (rc == 0 && (rc = dlock_mock_backend_new(&b1, store)) == 0 &&
            (rc = dlock_mock_backend_new(&b2, store)) == 0 &&
            (rc = dlock_client_new(c1, b1, NULL)) == 0)
            b1 = NULL;
        if (rc == 0 && (rc = dlock_client_new(c2, b2, NULL)) == 0)
            b2 = NULL;
        dlock_backend_free(b1);
        dlock_backend_free(b2);
        dlock_mock_store_free(store); /* the backends keep it */
    } else if ((rc = dlock_client_connect(c1, url, NULL, err, sizeof(err))) == 0) {
        rc = dlock_client_connect(c2, url, NULL, err, sizeof(err));
    }
    if (rc != 0)
        fprintf(stderr, "custom_lock: connect %s: %s %s\n", url, dlock_errname(rc), err);
    return rc;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "mock:";
    dlock_client *c1 = NULL, *c2 = NULL;
    dlock_rlock *l1 = NULL, *l2 = NULL, *plain = NULL;
    char owner[DLOCK_OWNER_MAX], *text = NULL;
    int64_t n = -1;
    waiter_arg w;
    pthread_t th;

    if (connect2(url, &c1, &c2) != 0)
        return 1;
    if (capped_lock_new(&l1, c1, "samples:custom_lock") != 0 ||
        capped_lock_new(&l2, c2, "samples:custom_lock") != 0 ||
        dlock_reentrant_new(&plain, c2, "samples:custom_lock") != 0) {
        fprintf(stderr, "custom_lock: out of memory\n");
        return 1;
    }
    dlock_client_owner(c1, owner, sizeof(owner));
    printf("a capped lock (at most %d nested holds) on %s, watchdog %" PRId64 " ms\n",
           CAP, url, dlock_client_watchdog_timeout(c1));
    dlock_force_unlock(l1, NULL); /* a clean start on a shared server */

    expect(dlock_lock(l1, 0), 0, "lock (lease 0: the watchdog renews it)", l1);
    expect(dlock_lock(l1, 0), 0, "lock again (re-entry)", l1);
    expect(dlock_try_lock(l1, 0, 0), DLOCK_EBUSY, "a third time (over the cap)", l1);
    expect(dlock_hold_count_as(plain, owner, &n), 0, "a reentrant handle reads it", plain);
    printf("  hold count seen through dlock_reentrant: %" PRId64 "\n", n);
    if (n != 2)
        failures++;
    expect(dlock_try_lock(l2, 0, 0), DLOCK_EBUSY, "the other client, wait 0", l2);
    {
        int64_t ttl = -1;
        expect(dlock_extend(l1, 90000), 0, "extend to 90 s (the watchdog stops)", l1);
        expect(dlock_remain_ttl(l1, &ttl), 0, "its remaining lease", l1);
        printf("  remaining after extend: %" PRId64 " ms\n", ttl);
        if (ttl <= 60000 || ttl > 90000)
            failures++;
        expect(dlock_extend(l2, 1000), DLOCK_ENOTOWNER, "extend by the other client", l2);
        expect(dlock_extend(l1, 0), 0, "extend with 0 (the watchdog again)", l1);
    }
    if (dlock_rlock_state_text(l1, &text) == 0)
        printf("  state: %s\n", text);
    else
        failures++;
    free(text);

    /* a waiter on the other client, woken by the release's message */
    w.l = l2;
    w.rc = -1;
    if (pthread_create(&th, NULL, waiter, &w) != 0)
        return 1;
    expect(dlock_unlock(l1), 0, "unlock", l1);
    expect(dlock_unlock(l1), 0, "unlock (released: waiters told)", l1);
    pthread_join(th, NULL);
    expect(w.rc, 0, "the other client's try_lock(wait 10 s)", l2);
    expect(dlock_unlock(l1), DLOCK_ENOTOWNER, "unlock once too often", l1);

    dlock_rlock_free(plain);
    dlock_rlock_free(l2);
    dlock_rlock_free(l1);
    dlock_client_free(c2);
    dlock_client_free(c1);
    if (failures) {
        printf("custom_lock: %d unexpected answer(s)\n", failures);
        return 1;
    }
    printf("custom_lock: ok\n");
    return 0;
}
