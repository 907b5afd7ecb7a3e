/*
 * make install-check: a program built from the installed headers and
 * dlock.pc only (tests/install/check.sh compiles it in a temporary folder,
 * linked to the shared library and statically). It uses Jansson directly,
 * as dlock's state API invites, so it also checks that `pkg-config --libs
 * dlock` brings -ljansson.
 */
#include <dlock.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, int rc)
{
    fprintf(stderr, "consumer: %s: %s\n", what, dlock_errname(rc));
    return 1;
}

int main(void)
{
    dlock_client *c = NULL;
    dlock_rlock *l = NULL;
    json_t *state = NULL;
    char err[256] = "";
    int rc, status = 1;

    /* the headers it was compiled with and the library it runs with */
    if (strcmp(dlock_version(), DLOCK_VERSION) != 0 ||
        dlock_version_number() != DLOCK_VERSION_NUMBER) {
        fprintf(stderr, "consumer: headers %s, library %s\n", DLOCK_VERSION,
                dlock_version());
        return 1;
    }
    rc = dlock_client_connect(&c, "mock:", NULL, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "consumer: connect: %s %s\n", dlock_errname(rc), err);
        return 1;
    }
    if ((rc = dlock_reentrant_new(&l, c, "install-check")) != 0) {
        status = fail("reentrant_new", rc);
        goto out;
    }
    if ((rc = dlock_lock(l, 10000)) != 0) {
        status = fail("lock", rc);
        goto out;
    }
    if ((rc = dlock_rlock_state(l, &state)) != 0) {
        status = fail("state", rc);
        goto out;
    }
    if (!json_is_object(state) || json_object_size(state) == 0) {
        fprintf(stderr, "consumer: the state is not a JSON object\n");
        goto out;
    }
    if ((rc = dlock_unlock(l)) != 0) {
        status = fail("unlock", rc);
        goto out;
    }
    printf("consumer: dlock %s: lock, state, unlock ok\n", dlock_version());
    status = 0;
out:
    json_decref(state);
    dlock_rlock_free(l);
    dlock_client_free(c);
    return status;
}
