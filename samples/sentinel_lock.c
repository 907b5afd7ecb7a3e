/*
 * sentinel_lock — a lock on a Sentinel-managed Redis.
 *
 *   sentinel_lock                     tries redis-sentinel://127.0.0.1:26379
 *   sentinel_lock URL                 e.g. redis-sentinel://s1,s2,s3?sentinelMasterId=mymaster
 *
 * The URL names the sentinels (port 26379 by default), not the master: the
 * backend asks them in turn where the master of sentinelMasterId is,
 * checks with ROLE that it is one, and from then on follows failovers by
 * itself (+switch-master, and a fresh look whenever the master stops
 * answering or turns read-only). A waiter blocked in dlock_lock carries on
 * against the promoted replica; a holder's watchdog renews there.
 *
 * With no sentinel reachable (as under `make demo`, which runs on the mock
 * only), it says what it would have done and exits 0.
 */
#include <dlock.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1]
                               : "redis-sentinel://127.0.0.1:26379?sentinelMasterId=mymaster";
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    char err[256];
    int rc;

    rc = dlock_client_connect(&c, url, NULL, err, sizeof err);
    if (rc != 0) {
        printf("no Sentinel-managed Redis at %s\n  (%s: %s)\n", url, dlock_errname(rc),
               err);
        printf("with one, this program would:\n"
               "  1. ask the sentinels for the master of sentinelMasterId and confirm it "
               "with ROLE\n"
               "  2. take the lock \"sentinel-demo\" with a watchdog lease (lease 0)\n"
               "  3. hold it while the watchdog renews it, on whichever master is current\n"
               "  4. release it; a failover meanwhile costs the calls a retry, not the "
               "lock\n");
        return 0;
    }
    rc = dlock_reentrant_new(&l, c, "sentinel-demo");
    if (rc == 0)
        rc = dlock_lock(l, 0);
    if (rc != 0) {
        fprintf(stderr, "lock: %s\n", dlock_errname(rc));
        dlock_rlock_free(l);
        dlock_client_free(c);
        return 1;
    }
    printf("holding \"sentinel-demo\" on the master the sentinels name\n");
    rc = dlock_unlock(l);
    printf("released: %s\n", rc == 0 ? "ok" : dlock_errname(rc));
    dlock_rlock_free(l);
    dlock_client_free(c);
    return rc == 0 ? 0 : 1;
}
