/*
 * cluster_lock — locks on a Redis Cluster.
 *
 *   cluster_lock                      tries redis-cluster://127.0.0.1:7000
 *   cluster_lock URL                  e.g. redis-cluster://n1:7000,n2:7000,n3:7000
 *
 * The URL names seed nodes (any one that answers is enough): the backend
 * reads the slot map from it (CLUSTER SLOTS) and sends each lock's calls to
 * the master of the lock name's slot, so locks with different names spread
 * over the shards. Every key a lock uses carries the name's hash tag, so
 * one lock never spans two slots. Names with a {tag} put several locks on
 * one shard on purpose. Slot moves (MOVED, ASK) and failovers are followed
 * by the backend; waiters are woken by sharded pub/sub (SPUBLISH /
 * SSUBSCRIBE), as Redisson does in cluster mode.
 *
 * With no cluster reachable (as under `make demo`, which runs on the mock
 * only), it says what it would have done and exits 0.
 */
#include <dlock.h>

#include <stdio.h>

static const char *const names[] = {
    "orders",          /* three names: three slots, likely three shards */
    "invoices",
    "shipments",
    "{customer:42}:profile", /* these two share the slot of "customer:42" */
    "{customer:42}:cart",
};

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "redis-cluster://127.0.0.1:7000";
    dlock_client *c = NULL;
    dlock_rlock *l[sizeof names / sizeof names[0]] = {NULL};
    char err[256];
    size_t i, n = sizeof names / sizeof names[0];
    int rc = 0;

    rc = dlock_client_connect(&c, url, NULL, err, sizeof err);
    if (rc != 0) {
        printf("no Redis Cluster at %s\n  (%s: %s)\n", url, dlock_errname(rc), err);
        printf("with one, this program would:\n"
               "  1. read the slot map from the first seed node that answers\n"
               "  2. take %zu locks with a watchdog lease, each on the master of its "
               "name's slot\n"
               "  3. release them; a waiter elsewhere is woken by SPUBLISH on that "
               "master\n",
               n);
        return 0;
    }
    for (i = 0; i < n && rc == 0; i++) {
        rc = dlock_reentrant_new(&l[i], c, names[i]);
        if (rc == 0)
            rc = dlock_lock(l[i], 0);
        if (rc != 0)
            fprintf(stderr, "lock %s: %s %s\n", names[i], dlock_errname(rc),
                    l[i] ? dlock_errmsg(l[i]) : "");
        else
            printf("holding \"%s\"\n", names[i]);
    }
    for (i = 0; i < n; i++) {
        int held = 0;
        if (l[i] && dlock_is_held(l[i], &held) == 0 && held) {
            int urc = dlock_unlock(l[i]);
            printf("released \"%s\": %s\n", names[i], urc == 0 ? "ok" : dlock_errname(urc));
            if (rc == 0)
                rc = urc;
        }
        dlock_rlock_free(l[i]);
    }
    dlock_client_free(c);
    if (rc == 0)
        printf("cluster_lock: ok\n");
    return rc == 0 ? 0 : 1;
}
