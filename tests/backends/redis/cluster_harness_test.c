/*
 * The Redis Cluster harness itself (tests/harness/cluster.h), on a real
 * 3-master, 3-replica cluster: the layout and the seed URL, the slot
 * function against the server's CLUSTER KEYSLOT, names per shard, a slot
 * moved with its key in one go and in two steps (ASK in the middle), a
 * CLUSTER FAILOVER, a kill -9 of a master with the node restarted as a
 * replica, a replica killed and restarted, and a stop that leaves no
 * process or directory behind. The cases run in order on one cluster; the
 * start and stop times and each change's are printed. Then a TLS cluster
 * of its own (rediss-cluster://).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../../harness/cluster.h"
#include "../../harness/runner.h"

#define MASTERS 3

static dlock_test_cluster cl;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int group_setup(void **state)
{
    long long t0 = now_ms();
    (void)state;
    if (dlock_test_cluster_start(&cl, MASTERS, 1) != 0)
        return -1;
    printf("cluster harness: 3 masters + 3 replicas up in %lld ms at %s\n",
           now_ms() - t0, dlock_test_cluster_url(&cl));
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    dlock_test_cluster_stop(&cl);
    return 0;
}

static void command(int node, char *out, size_t len, const char *const *argv)
{
    assert_int_equal(dlock_test_cluster_command(&cl, node, out, len, argv), 0);
}

static void set_key(int node, const char *key, const char *value)
{
    const char *argv[] = {"SET", key, value, NULL};
    char out[256];
    command(node, out, sizeof out, argv);
    assert_string_equal(out, "OK");
}

static void get_key(int node, const char *key, char *out, size_t len)
{
    const char *argv[] = {"GET", key, NULL};
    command(node, out, len, argv);
}

static void cluster_layout(void **state)
{
    char want[512], out[1024], port[32];
    const char *role[] = {"ROLE", NULL};
    int s, i;
    (void)state;

    assert_int_equal(cl.nnodes, 6);
    snprintf(want, sizeof want, "redis-cluster://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             dlock_test_cluster_port(&cl, 0), dlock_test_cluster_port(&cl, 1),
             dlock_test_cluster_port(&cl, 2));
    assert_string_equal(dlock_test_cluster_url(&cl), want);
    for (s = 0; s < MASTERS; s++) {
        assert_int_equal(dlock_test_cluster_shard_master(&cl, s), s);
        assert_int_equal(dlock_test_cluster_role(&cl, s), DLOCK_TEST_NODE_MASTER);
    }
    /* Node 3 + s: shard s's replica, following node s. */
    for (i = MASTERS; i < cl.nnodes; i++) {
        assert_int_equal(cl.shard[i], i - MASTERS);
        assert_int_equal(dlock_test_cluster_role(&cl, i), DLOCK_TEST_NODE_REPLICA);
        command(i, out, sizeof out, role);
        snprintf(port, sizeof port, "\n%d\nconnected", dlock_test_cluster_port(&cl, i - MASTERS));
        assert_non_null(strstr(out, port));
    }
    /* Shard 0 starts at slot 0, the shards in slot order. */
    assert_int_equal(cl.slot_shard[0], 0);
    assert_int_equal(cl.slot_shard[DLOCK_TEST_CLUSTER_SLOTS - 1], MASTERS - 1);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, 0), 0);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, DLOCK_TEST_CLUSTER_SLOTS - 1),
                     MASTERS - 1);
}

static void slot_matches_keyslot(void **state)
{
    static const char *const keys[] = {
        "{user1000}.following", "{user1000}.followers", "foo{}{bar}",
        "foo{{bar}}zap", "foo{bar}{zap}", "", "{", "}", "{}", "}{a}",
        "a{b", "x}y{z}", "redisson_lock__channel:{mylock}", "mylock",
        "\xc3\xa9t\xc3\xa9", "123456789"};
    char out[64], key[64];
    const char *argv[] = {"CLUSTER", "KEYSLOT", NULL, NULL};
    size_t i;
    int n;
    (void)state;

    /* The CRC16 (XMODEM) check value of "123456789" is 0x31C3. */
    assert_int_equal(dlock_test_cluster_slot("123456789"), 0x31C3);
    assert_int_equal(dlock_test_cluster_slot("{user1000}.following"),
                     dlock_test_cluster_slot("user1000"));
    for (i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        argv[2] = keys[i];
        command(0, out, sizeof out, argv);
        assert_int_equal(strtol(out, NULL, 10), dlock_test_cluster_slot(keys[i]));
    }
    for (n = 0; n < 200; n++) {
        snprintf(key, sizeof key, n % 2 ? "k%d:{t%d}" : "lock-%d-%d", n, n * 7919);
        argv[2] = key;
        command(1, out, sizeof out, argv);
        assert_int_equal(strtol(out, NULL, 10), dlock_test_cluster_slot(key));
    }
}

/* Names per shard: the shard's master takes them, another redirects. */
static void names_land_on_shard(void **state)
{
    char name[64], out[256];
    int s, k;
    (void)state;

    for (s = 0; s < MASTERS; s++)
        for (k = 0; k < 4; k++) {
            int other = (s + 1) % MASTERS;
            assert_non_null(dlock_test_cluster_name(&cl, s, "harness-name-", k,
                                                    name, sizeof name));
            assert_int_equal(cl.slot_shard[dlock_test_cluster_slot(name)], s);
            assert_int_equal(dlock_test_cluster_slot_master(&cl, dlock_test_cluster_slot(name)), s);
            set_key(s, name, "v");
            get_key(other, name, out, sizeof out);
            assert_true(strncmp(out, "-MOVED ", 7) == 0);
        }
    /* Deterministic, distinct for each k; NULL when buf is too small. */
    assert_string_equal(dlock_test_cluster_name(&cl, 1, "p", 2, name, sizeof name),
                        dlock_test_cluster_name(&cl, 1, "p", 2, out, sizeof out));
    dlock_test_cluster_name(&cl, 1, "p", 3, out, sizeof out);
    assert_string_not_equal(name, out);
    assert_null(dlock_test_cluster_name(&cl, 1, "a-long-prefix", 0, name, 8));
}

static void move_slot_with_key(void **state)
{
    char name[64], out[256], want[128];
    unsigned slot;
    long long t0;
    int to;
    (void)state;

    assert_non_null(dlock_test_cluster_name(&cl, 0, "harness-move-", 0, name, sizeof name));
    slot = dlock_test_cluster_slot(name);
    set_key(0, name, "moved-value");
    t0 = now_ms();
    assert_int_equal(dlock_test_cluster_move_slot(&cl, slot, 1), 0);
    printf("cluster harness: slot moved with its key in %lld ms\n", now_ms() - t0);
    to = dlock_test_cluster_shard_master(&cl, 1);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, slot), to);
    assert_int_equal(cl.slot_shard[slot], 1);
    get_key(to, name, out, sizeof out);
    assert_string_equal(out, "moved-value");
    get_key(0, name, out, sizeof out);
    snprintf(want, sizeof want, "-MOVED %u 127.0.0.1:%d", slot, dlock_test_cluster_plain_port(&cl, to));
    assert_string_equal(out, want);
    /* And names now count the slot in shard 1. */
    assert_int_equal(cl.slot_shard[slot], 1);
}

/* Between begin and finish: the key stays on the source until it is
 * migrated, then the source answers ASK and the target, asked without
 * ASKING, MOVED back to the source. */
static void move_slot_in_two_steps(void **state)
{
    char name[64], out[256], want[128];
    unsigned slot;
    int from = dlock_test_cluster_shard_master(&cl, 1);
    int to = dlock_test_cluster_shard_master(&cl, 2);
    (void)state;

    assert_non_null(dlock_test_cluster_name(&cl, 1, "harness-ask-", 0, name, sizeof name));
    slot = dlock_test_cluster_slot(name);
    set_key(from, name, "asked");
    assert_int_equal(dlock_test_cluster_move_slot_begin(&cl, slot, 2), 0);
    assert_int_equal(cl.moving_slot, (int)slot);
    /* One move at a time. */
    assert_int_equal(dlock_test_cluster_move_slot_begin(&cl, slot + 1, 2), -1);
    get_key(from, name, out, sizeof out);
    assert_string_equal(out, "asked");
    assert_int_equal(dlock_test_cluster_move_slot_keys(&cl), 1);
    get_key(from, name, out, sizeof out);
    snprintf(want, sizeof want, "-ASK %u 127.0.0.1:%d", slot, dlock_test_cluster_plain_port(&cl, to));
    assert_string_equal(out, want);
    get_key(to, name, out, sizeof out);
    snprintf(want, sizeof want, "-MOVED %u 127.0.0.1:%d", slot, dlock_test_cluster_plain_port(&cl, from));
    assert_string_equal(out, want);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, slot), from);
    assert_int_equal(dlock_test_cluster_move_slot_finish(&cl), 0);
    assert_int_equal(cl.moving_slot, -1);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, slot), to);
    get_key(to, name, out, sizeof out);
    assert_string_equal(out, "asked");
}

static void failover_swaps_roles(void **state)
{
    const char *wait[] = {"WAIT", "1", "2000", NULL};
    char name[64], out[256];
    int old = dlock_test_cluster_shard_master(&cl, 2), new_master;
    long long t0;
    (void)state;

    assert_int_equal(old, 2);
    assert_non_null(dlock_test_cluster_name(&cl, 2, "harness-fo-", 0, name, sizeof name));
    set_key(old, name, "kept");
    command(old, out, sizeof out, wait);
    assert_string_equal(out, "1");
    t0 = now_ms();
    new_master = dlock_test_cluster_failover(&cl, 2);
    printf("cluster harness: CLUSTER FAILOVER settled in %lld ms\n", now_ms() - t0);
    assert_int_equal(new_master, MASTERS + 2);
    assert_int_equal(dlock_test_cluster_role(&cl, new_master), DLOCK_TEST_NODE_MASTER);
    assert_int_equal(dlock_test_cluster_role(&cl, old), DLOCK_TEST_NODE_REPLICA);
    assert_int_equal(dlock_test_cluster_shard_master(&cl, 2), new_master);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, dlock_test_cluster_slot(name)),
                     new_master);
    get_key(new_master, name, out, sizeof out);
    assert_string_equal(out, "kept");
}

static void kill_and_restart_master(void **state)
{
    char name[64], out[1024], port[32];
    const char *role[] = {"ROLE", NULL};
    int killed, m;
    long long t0;
    (void)state;

    assert_non_null(dlock_test_cluster_name(&cl, 1, "harness-kill-", 0, name, sizeof name));
    t0 = now_ms();
    killed = dlock_test_cluster_kill_master(&cl, 1);
    printf("cluster harness: kill -9 of a master to a settled failover in %lld ms\n",
           now_ms() - t0);
    assert_int_equal(killed, 1);
    assert_int_equal(dlock_test_cluster_role(&cl, killed), DLOCK_TEST_NODE_DOWN);
    m = dlock_test_cluster_shard_master(&cl, 1);
    assert_int_equal(m, MASTERS + 1);
    assert_int_equal(dlock_test_cluster_slot_master(&cl, dlock_test_cluster_slot(name)), m);
    set_key(m, name, "after-kill");
    /* Killed nodes are not asked; restarting a running one is refused. */
    assert_int_equal(dlock_test_cluster_restart_node(&cl, 0), -1);
    t0 = now_ms();
    assert_int_equal(dlock_test_cluster_restart_node(&cl, killed), 0);
    printf("cluster harness: the killed node back as a replica in %lld ms\n",
           now_ms() - t0);
    assert_int_equal(dlock_test_cluster_role(&cl, killed), DLOCK_TEST_NODE_REPLICA);
    command(killed, out, sizeof out, role);
    snprintf(port, sizeof port, "\n%d\n", dlock_test_cluster_port(&cl, m));
    assert_non_null(strstr(out, port));
    assert_int_equal(dlock_test_cluster_shard_master(&cl, 1), m);
}

/* A replica killed and restarted: its master stays; the restart waits
 * until it follows it again. */
static void kill_and_restart_replica(void **state)
{
    int replica = MASTERS; /* shard 0's, never failed over here */
    (void)state;

    assert_int_equal(dlock_test_cluster_shard_master(&cl, 0), 0);
    assert_int_equal(dlock_test_cluster_kill_node(&cl, replica), 0);
    assert_int_equal(dlock_test_cluster_kill_node(&cl, replica), -1);
    assert_int_equal(dlock_test_cluster_role(&cl, replica), DLOCK_TEST_NODE_DOWN);
    assert_int_equal(dlock_test_cluster_wait_settled(&cl, 20000), 0);
    assert_int_equal(dlock_test_cluster_shard_master(&cl, 0), 0);
    /* No replica left in shard 0: nothing to fail over to. */
    assert_int_equal(dlock_test_cluster_failover(&cl, 0), -1);
    assert_int_equal(dlock_test_cluster_restart_node(&cl, replica), 0);
    assert_int_equal(dlock_test_cluster_role(&cl, replica), DLOCK_TEST_NODE_REPLICA);
    assert_int_equal(dlock_test_cluster_shard_master(&cl, 0), 0);
}

static void stop_leaves_nothing(void **state)
{
    int pid[DLOCK_TEST_CLUSTER_MAX_NODES], n = cl.nnodes, i;
    char dir[DLOCK_TEST_CLUSTER_MAX_NODES][256];
    struct stat st;
    long long t0;
    (void)state;

    for (i = 0; i < n; i++) {
        pid[i] = dlock_test_redis_pid(cl.node[i]);
        assert_true(pid[i] > 0);
        snprintf(dir[i], sizeof dir[i], "%s", dlock_test_redis_dir(cl.node[i]));
    }
    t0 = now_ms();
    dlock_test_cluster_stop(&cl);
    printf("cluster harness: stopped 6 nodes in %lld ms\n", now_ms() - t0);
    assert_int_equal(cl.nnodes, 0);
    for (i = 0; i < n; i++) {
        assert_int_equal(kill(pid[i], 0), -1);
        assert_int_equal(errno, ESRCH);
        assert_int_equal(stat(dir[i], &st), -1);
    }
    dlock_test_cluster_stop(&cl); /* again: a no-op */
}

/* The output of a shell command, trimmed; 0 or -1. */
static int run(const char *cmd, char *out, size_t len)
{
    FILE *p = popen(cmd, "r");
    size_t n;
    if (!p)
        return -1;
    n = fread(out, 1, len - 1, p);
    out[n] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    return pclose(p) == 0 ? 0 : -1;
}

/* A TLS cluster of its own: the URL names the TLS ports and the PKI, a TLS
 * client that follows redirections (redis-cli -c) finds a key through any
 * master with the URL's certificates, a slot moves over the TLS bus
 * (MIGRATE) and a failover completes over TLS replication. */
static void tls_cluster(void **state)
{
    dlock_test_cluster t;
    char want[1024], out[4096], name[64], cmd[2048];
    const char *slots[] = {"CLUSTER", "SLOTS", NULL};
    unsigned slot;
    long long t0 = now_ms();
    int to;
    (void)state;

    assert_int_equal(dlock_test_cluster_start_tls(&t, MASTERS, 1, NULL), 0);
    printf("cluster harness: TLS cluster up in %lld ms\n", now_ms() - t0);
    snprintf(want, sizeof want, "rediss-cluster://127.0.0.1:%d,127.0.0.1:%d,"
             "127.0.0.1:%d?cacert=%s/ca.crt&cert=%s/client.crt&key=%s/client.key",
             dlock_test_cluster_port(&t, 0), dlock_test_cluster_port(&t, 1),
             dlock_test_cluster_port(&t, 2), t.pki, t.pki, t.pki);
    assert_string_equal(dlock_test_cluster_url(&t), want);
    assert_int_not_equal(dlock_test_cluster_port(&t, 0), dlock_test_cluster_plain_port(&t, 0));
    /* To the harness's plain connection the cluster names plain ports. */
    assert_int_equal(dlock_test_cluster_command(&t, 0, out, sizeof out, slots), 0);
    snprintf(want, sizeof want, "\n%d\n", dlock_test_cluster_plain_port(&t, 1));
    assert_non_null(strstr(out, want));

    assert_non_null(dlock_test_cluster_name(&t, 0, "harness-tls-", 0, name, sizeof name));
    slot = dlock_test_cluster_slot(name);
    {
        const char *set[] = {"SET", name, "over-tls", NULL};
        assert_int_equal(dlock_test_cluster_command(&t, 0, out, sizeof out, set), 0);
        assert_string_equal(out, "OK");
    }
    assert_int_equal(dlock_test_cluster_move_slot(&t, slot, 2), 0);
    to = dlock_test_cluster_shard_master(&t, 2);
    assert_int_equal(dlock_test_cluster_slot_master(&t, slot), to);
    /* Asked at shard 1's master over TLS, redirected to the TLS port. */
    snprintf(cmd, sizeof cmd, "%s --tls --cacert '%s/ca.crt' --cert '%s/client.crt' "
             "--key '%s/client.key' -p %d -c GET '%s' 2>&1",
             getenv("DLOCK_REDIS_CLI") ? getenv("DLOCK_REDIS_CLI") : "redis-cli",
             t.pki, t.pki, t.pki, dlock_test_cluster_port(&t, 1), name);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_string_equal(out, "over-tls");
    assert_int_equal(dlock_test_cluster_failover(&t, 2), MASTERS + 2);
    assert_int_equal(dlock_test_cluster_role(&t, to), DLOCK_TEST_NODE_REPLICA);
    t0 = now_ms();
    dlock_test_cluster_stop(&t);
    printf("cluster harness: TLS cluster stopped in %lld ms\n", now_ms() - t0);
}

int dlock_test_redis_cluster_harness(void);

int dlock_test_redis_cluster_harness(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cluster_layout),
        cmocka_unit_test(slot_matches_keyslot),
        cmocka_unit_test(names_land_on_shard),
        cmocka_unit_test(move_slot_with_key),
        cmocka_unit_test(move_slot_in_two_steps),
        cmocka_unit_test(failover_swaps_roles),
        cmocka_unit_test(kill_and_restart_master),
        cmocka_unit_test(kill_and_restart_replica),
        cmocka_unit_test(stop_leaves_nothing),
    };
    const struct CMUnitTest tls[] = {
        cmocka_unit_test(tls_cluster),
    };
    return DLOCK_RUN_GROUP("redis_cluster_harness", tests, group_setup, group_teardown) +
           DLOCK_RUN_GROUP("redis_cluster_harness_tls", tls, NULL, NULL);
}
