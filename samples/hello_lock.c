/*
 * hello_lock — a first tour of dlock.
 *
 *   hello_lock                         on the in-process mock backend
 *   hello_lock redis://127.0.0.1:6379  on a Redis server
 *
 * It takes a reentrant lock, re-enters it, watches the hold count, lets
 * another thread fail to get it within a short wait, reads the remaining
 * lease, and shows what an error looks like.
 */
#include <dlock.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

/* Prints what a failed call said and stops: the code's name, its message
 * and the object's detail of the failure. */
static void check(int rc, const char *what, dlock_rlock *l)
{
    if (rc == 0)
        return;
    fprintf(stderr, "%s: %s (%s)%s%s\n", what, dlock_errname(rc), dlock_strerror(rc),
            l ? ": " : "", l ? dlock_errmsg(l) : "");
    exit(1);
}

/* Another thread is another owner: it cannot have the lock while main
 * holds it, even through the same client and the same handle. */
static void *contender(void *arg)
{
    dlock_rlock *l = arg;
    int rc = dlock_try_lock(l, 200 /* wait ms */, 5000 /* lease ms */);

    printf("other thread: try_lock(wait 200 ms) -> %s (%s)\n", dlock_errname(rc),
           dlock_strerror(rc));
    if (rc == 0)
        dlock_unlock(l);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *url = argc > 1 ? argv[1] : "mock:";
    dlock_client *client = NULL;
    dlock_rlock *lock = NULL;
    char err[256] = "", owner[DLOCK_OWNER_MAX];
    int64_t count = 0, ttl = 0;
    pthread_t th;
    int rc;

    rc = dlock_client_connect(&client, url, NULL, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "connect %s: %s: %s\n", url, dlock_errname(rc), err);
        return 1;
    }
    check(dlock_reentrant_new(&lock, client, "hello:lock"), "reentrant_new", NULL);
    check(dlock_client_owner(client, owner, sizeof(owner)), "client_owner", NULL);
    printf("backend %s, I am %s\n", url, owner);

    /* lease 0: held until unlocked; the client's watchdog renews it */
    check(dlock_lock(lock, 0), "lock", lock);
    check(dlock_lock(lock, 0), "lock again (re-entry)", lock);
    check(dlock_hold_count(lock, &count), "hold_count", lock);
    printf("locked twice: hold count %" PRId64 "\n", count);

    pthread_create(&th, NULL, contender, lock);
    pthread_join(th, NULL);

    check(dlock_remain_ttl(lock, &ttl), "remain_ttl", lock);
    printf("lease left: %" PRId64 " ms (renewed by the watchdog)\n", ttl);

    check(dlock_unlock(lock), "unlock", lock);
    check(dlock_hold_count(lock, &count), "hold_count", lock);
    printf("unlocked once: hold count %" PRId64 "\n", count);
    check(dlock_unlock(lock), "unlock", lock);

    /* One unlock too many: an honest error code, never a crash. */
    rc = dlock_unlock(lock);
    printf("unlock without holding it -> %s: %s [%s]\n", dlock_errname(rc),
           dlock_strerror(rc), dlock_errmsg(lock));

    /* Bad input is refused and changes nothing. */
    rc = dlock_lock(lock, -5);
    printf("lock with a negative lease -> %s: %s\n", dlock_errname(rc),
           dlock_errmsg(lock));

    dlock_rlock_free(lock);  /* local resources only, never the remote lock */
    dlock_client_free(client);
    return 0;
}
