/*
 * dlock mock — running scripts in an embedded Lua 5.1 (private).
 *
 * One Lua state per store, used only under the store mutex, so scripts are
 * atomic and the state needs no locking of its own. The header stays free of
 * Lua types: lua_bridge.c is the only file that includes Lua.
 */
#ifndef DLOCK_MOCK_LUA_BRIDGE_H
#define DLOCK_MOCK_LUA_BRIDGE_H

#include "store.h"

typedef struct dlock__lua dlock__lua;

/* Runs script on st (store mutex held, between dlock__store_begin and
 * dlock__store_end), creating st->lua on first use. The contract is the
 * backend's eval: 0 with *out set (a script error is an ERROR reply), or
 * DLOCK_ENOMEM with a detail in errbuf. */
int dlock__lua_eval(dlock_mock_store *st, dlock_reply **out,
                    const dlock_script *script, size_t nkeys, size_t nargs,
                    const char *const *argv, const size_t *argvlen, char *errbuf,
                    size_t errlen);

void dlock__lua_free(dlock__lua *l); /* NULL is a no-op */

#endif /* DLOCK_MOCK_LUA_BRIDGE_H */
