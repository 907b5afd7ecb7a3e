/*
 * dlock benchmarks — the lock types measured, one row each.
 *
 * Every figure walks this table, so a new lock type is measured everywhere
 * by adding its row.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

/* The semaphore as a lock excludes as a lock does with one permit. Setting
 * it only when absent makes this safe to run from every worker. */
static int one_permit(dlock_client *c, const char *name)
{
    dlock_semaphore *s;
    int set, rc = dlock_semaphore_new(&s, c, name);

    if (rc == 0)
        rc = dlock_semaphore_try_set_permits(s, &set, 1);
    dlock_semaphore_free(s);
    return rc;
}

const bench_lock_type bench_lock_types[] = {
    /* name        fifo shared make                      prepare */
    {"reentrant",  0,   0,     dlock_reentrant_new,      NULL},
    {"fair",       1,   0,     dlock_fair_new,           NULL},
    {"read",       0,   1,     dlock_rwlock_read_new,    NULL},
    {"write",      0,   0,     dlock_rwlock_write_new,   NULL},
    {"fenced",     0,   0,     dlock_fenced_new,         NULL},
    {"semaphore",  0,   0,     dlock_semaphore_lock_new, one_permit},
};

const size_t bench_nlock_types = sizeof(bench_lock_types) / sizeof(bench_lock_types[0]);

const bench_lock_type *bench_lock_type_find(const char *name)
{
    size_t i;

    for (i = 0; i < bench_nlock_types; i++)
        if (strcmp(bench_lock_types[i].name, name) == 0)
            return &bench_lock_types[i];
    return NULL;
}

int bench_lock_open(dlock_rlock **out, const bench_lock_type *t, dlock_client *c,
                    const char *name)
{
    int rc = t->prepare ? t->prepare(c, name) : 0;

    *out = NULL;
    return rc != 0 ? rc : t->make(out, c, name);
}

int bench_lock_pair(void *state)
{
    dlock_rlock *l = state;
    int rc = dlock_try_lock(l, BENCH_WAIT_MS, BENCH_LEASE_MS);

    if (rc == 0)
        rc = dlock_unlock(l);
    if (rc != 0)
        fprintf(stderr, "bench: %s pair: %s\n", dlock_rlock_name(l), dlock_errmsg(l));
    return rc;
}

void bench_lock_close(void *state)
{
    dlock_rlock_free(state);
}
