/*
 * redlock — one lock over independent servers (Redlock), and all-or-none
 * over several locks (MultiLock).
 *
 *   redlock                         three "mock:" nodes (private in-memory
 *                                   stores): runs anywhere, as `make demo`
 *   redlock URL URL URL [...]       your independent masters, e.g.
 *                                   redis://10.0.0.1 redis://10.0.0.2 ...
 *
 * The nodes come from a JSON client set ("urls"); the lock is held while a
 * majority of them grant it. Use its fencing token with the resource you
 * protect: a lease can run out under a paused process, the token tells the
 * resource that a newer holder exists.
 */
#include <dlock.h>

#include <stdio.h>
#include <string.h>

#define MAX_NODES 9

int main(int argc, char **argv)
{
    dlock_client *nodes[MAX_NODES] = {NULL};
    dlock_rlock *rl = NULL, *a = NULL, *b = NULL, *multi = NULL, *both[2];
    char json[2048], err[256];
    size_t n = 0, i, len;
    int64_t token = 0, ttl = 0;
    int rc;

    if (argc > 1) {
        len = (size_t)snprintf(json, sizeof json, "{\"urls\": [");
        for (i = 1; i < (size_t)argc && i <= MAX_NODES && len < sizeof json; i++)
            len += (size_t)snprintf(json + len, sizeof json - len, "%s\"%s\"",
                                    i > 1 ? ", " : "", argv[i]);
        if (len < sizeof json)
            snprintf(json + len, sizeof json - len, "]}");
    } else {
        snprintf(json, sizeof json, "{\"urls\": [\"mock:\", \"mock:\", \"mock:\"]}");
    }
    rc = dlock_client_set_from_json_string(nodes, MAX_NODES, &n, json, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "nodes: %s: %s\n", dlock_errname(rc), err);
        return 1;
    }

    /* Redlock: held while a majority (n/2 + 1) of the nodes grant it. */
    rc = dlock_redlock_new(&rl, nodes, n, "orders:rebuild");
    if (rc == 0)
        rc = dlock_lock(rl, 0); /* lease 0: renewed on every node */
    if (rc == 0)
        rc = dlock_redlock_token(rl, &token);
    if (rc == 0)
        rc = dlock_remain_ttl(rl, &ttl);
    if (rc != 0) {
        fprintf(stderr, "redlock: %s: %s\n", dlock_errname(rc), dlock_errmsg(rl));
        return 1;
    }
    printf("Redlock over %zu nodes held, fencing token %lld, %lld ms left on a "
           "majority\n", n, (long long)token, (long long)ttl);
    /* ... write to the resource, passing the token along ... */
    rc = dlock_unlock(rl);
    printf("released: %s\n", dlock_errname(rc));

    /* MultiLock: two locks on different nodes, both or neither. */
    if (dlock_reentrant_new(&a, nodes[0], "account:1") != 0 ||
        dlock_reentrant_new(&b, nodes[n - 1], "account:2") != 0)
        return 1;
    both[0] = a;
    both[1] = b;
    rc = dlock_multilock_new(&multi, both, 2);
    if (rc == 0)
        rc = dlock_try_lock(multi, 1000, 10000);
    printf("MultiLock of account:1 and account:2: %s\n", dlock_errname(rc));
    if (rc == 0)
        dlock_unlock(multi);

    dlock_rlock_free(multi); /* before its members: they are borrowed */
    dlock_rlock_free(a);
    dlock_rlock_free(b);
    dlock_rlock_free(rl);
    for (i = 0; i < n; i++)
        dlock_client_free(nodes[i]);
    return 0;
}
