/*
 * dlock benchmarks — figure 7: many holds on one client (issue 16, item 6).
 *
 * One client on the mock (no network: what is left is the library's own
 * bookkeeping plus the store's script calls), cfg->holds_handles handles on
 * distinct names, each locked once; then each is unlocked and freed. Freeing
 * a handle forgets its holds in the client's hold registry: when that walks
 * every hold of the client, the second phase grows with the square of the
 * number of handles, while the first stays linear. The figure prints both
 * phases and their ratio per handle, so a regression to O(holds) per free
 * shows up as a free phase far slower than the lock phase.
 *
 * Leases are explicit (not 0): the watchdog's renewals are another figure.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define HOLDS_LEASE_MS 600000

void bench_fig_holds(const bench_config *cfg)
{
    int n = cfg->holds_handles, i, locked = 0, freed = 0;
    dlock_rlock **v = calloc((size_t)n, sizeof(*v));
    dlock_client *client = NULL;
    int64_t t0, t1, t2;
    char name[48];
    bench_json j;

    bench_heading("holds: one mock client, N handles locked, then unlocked and freed",
                  "handles   lock all (ms)   unlock+free all (ms)   us/handle lock   us/handle unlock+free");
    if (!v || bench_client_new(&client, cfg, BENCH_MOCK, 0, NULL, NULL) != 0) {
        bench_row("cannot set up");
        free(v);
        return;
    }
    for (i = 0; i < n; i++) {
        snprintf(name, sizeof name, "bench:holds:%d", i);
        if (dlock_reentrant_new(&v[i], client, name) != 0)
            break;
    }
    n = i;
    t0 = bench_now_ns();
    for (i = 0; i < n; i++)
        if (dlock_try_lock(v[i], 0, HOLDS_LEASE_MS) == 0)
            locked++;
    t1 = bench_now_ns();
    for (i = 0; i < n; i++) {
        if (dlock_unlock(v[i]) == 0)
            freed++;
        dlock_rlock_free(v[i]);
    }
    t2 = bench_now_ns();
    dlock_client_free(client);
    free(v);

    bench_row("%7d   %13.1f   %20.1f   %14.2f   %21.2f%s", n, (t1 - t0) / 1e6,
              (t2 - t1) / 1e6, n ? (t1 - t0) / 1e3 / n : 0.0,
              n ? (t2 - t1) / 1e3 / n : 0.0,
              locked == n && freed == n ? "" : "   (some calls failed)");
    bench_json_begin(&j, "holds");
    bench_json_int(&j, "handles", n);
    bench_json_int(&j, "locked", locked);
    bench_json_int(&j, "unlocked", freed);
    bench_json_num(&j, "lock_all_ms", (t1 - t0) / 1e6);
    bench_json_num(&j, "unlock_free_all_ms", (t2 - t1) / 1e6);
    bench_json_end(&j);
}
