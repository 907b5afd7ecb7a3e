/*
 * dlock benchmarks — the lock types measured, one row each.
 *
 * Every figure walks this table, so a new lock type is measured everywhere
 * by adding its row (and, when its handle is not a plain constructor's,
 * an open/drop pair next to it).
 */
#include <string.h>

#include "bench.h"

const bench_lock_type bench_lock_types[] = {
    /* name        fifo  make                 open  drop */
    {"reentrant",  0,    dlock_reentrant_new, NULL, NULL},
    {"fair",       1,    dlock_fair_new,      NULL, NULL},
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

int bench_lock_open(bench_lock *out, const bench_lock_type *t, dlock_client *c,
                    const char *name)
{
    out->l = NULL;
    out->keep = NULL;
    out->type = t;
    if (t->make)
        return t->make(&out->l, c, name);
    return t->open(&out->l, &out->keep, c, name);
}

void bench_lock_close(bench_lock *bl)
{
    dlock_rlock_free(bl->l);
    if (bl->keep && bl->type->drop)
        bl->type->drop(bl->keep);
    bl->l = NULL;
    bl->keep = NULL;
}
