/*
 * `make install-check`: a program built from the installed files only that
 * runs the conformance kit (dlock/conformance.h, libdlock_conformance.a):
 * the reentrant lock must pass every case; a type whose constructor fails
 * must fail the cases that make locks (the kit counts and returns
 * failures); a NULL type is DLOCK_EINVAL. argv[1]: a Redis URL (optional),
 * for the reentrant lock's run on a server too.
 */
#include <dlock.h>
#include <dlock/conformance.h>

#include <stdio.h>

static int no_lock(dlock_rlock **out, dlock_client *c, const char *name)
{
    (void)c;
    (void)name;
    *out = NULL;
    return DLOCK_ENOMEM;
}

int main(int argc, char **argv)
{
    static const dlock_conformance_type reentrant = {"reentrant", dlock_reentrant_new};
    static const dlock_conformance_type broken = {"no lock (must fail)", no_lock};
    int ok = dlock_conformance_run(&reentrant, argc > 1 ? argv[1] : NULL);
    int failed = dlock_conformance_run(&broken, NULL);
    int bad = dlock_conformance_run(NULL, NULL);

    printf("conformance kit: reentrant %d failed, broken type %d failed, NULL type %d\n",
           ok, failed, bad);
    return ok == 0 && failed > 0 && bad == DLOCK_EINVAL ? 0 : 1;
}
