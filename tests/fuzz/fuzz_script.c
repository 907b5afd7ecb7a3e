/*
 * libFuzzer target: the mock's script bridge (backends/mock/lua_bridge.c).
 * The input is Lua source, run as a dlock_script on a mock backend with two
 * keys and two arguments, on a fresh store each time (no state carries over
 * between inputs, so a crash replays from its input alone).
 *
 * Never hang: `make fuzz` builds the library with a 200 ms script time
 * limit and a 64 MiB Lua memory cap (DLOCK_MOCK_SCRIPT_TIME_LIMIT_MS,
 * DLOCK_MOCK_LUA_MEM_LIMIT), and inputs are capped at 4 KiB. A script may
 * fail (error reply) or run out of memory (DLOCK_ENOMEM); anything else
 * than 0 with a reply, or ENOMEM without one, is a bug.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock.h"
#include "dlock/sys/backend.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const argv[] = {"k1", "{k}2", "a1", "42"};
    dlock_mock_store *st = NULL;
    dlock_backend *b = NULL;
    dlock_reply *r = NULL;
    dlock_script script;
    char *src, err[256];
    int rc;

    if (size > 4096)
        return 0;
    src = malloc(size + 1);
    if (!src)
        return 0;
    memcpy(src, data, size);
    src[size] = '\0';
    if (dlock_mock_store_new(&st, NULL) != 0 ||
        dlock_mock_backend_new(&b, st) != 0)
        abort();
    script.name = "fuzz";
    script.source = src;
    rc = dlock_backend_eval(b, &r, &script, 2, 2, argv, NULL, err, sizeof err);
    if (rc == 0 ? r == NULL : (rc != DLOCK_ENOMEM || r != NULL))
        abort();
    dlock_reply_free(r);
    dlock_backend_free(b);
    dlock_mock_store_free(st);
    free(src);
    return 0;
}
