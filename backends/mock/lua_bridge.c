/*
 * dlock mock — the embedded Lua 5.1 that runs the lock scripts.
 *
 * The environment mirrors Redis 7.0's: the base (minus file access, print
 * and fenv tricks), table, string and math libraries, cjson (Lua CJSON) and
 * bit (LuaBitOp), the very libraries Redis embeds, linked from Debian's
 * packages; a `redis` table with call, pcall, status_reply, error_reply,
 * sha1hex and log; KEYS and ARGV; globals
 * that can be neither created nor overwritten, and reading an undefined one
 * is an error. Values cross the bridge with Redis's conversion rules, and
 * errors carry Redis's wording, so a script that works here works on a
 * server and fails here the way it would fail there.
 *
 * Compiled scripts are cached per dlock_script address (scripts are static
 * data), but keyed by content (api/dlock/sys/backend.h): the entry keeps a
 * copy of the source it compiled, so that a struct on the stack or reused
 * for another source, even at the same source address, is recompiled.
 *
 * Everything here runs under the store mutex; all Lua work that may raise
 * (including out-of-memory) runs inside lua_cpcall, and every C allocation
 * that could be stranded by a Lua error is parked where the caller of
 * lua_cpcall frees it.
 */
#include "lua_bridge.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <lua-bitop.h>
#include <lua-cjson.h>
#include <openssl/evp.h>

#include <pthread.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A script running longer than this in real time is a bug (an infinite
 * loop); it is stopped with an error instead of hanging the test. Redis
 * would only refuse other clients (BUSY), but a mock must not hang. */
#ifndef DLOCK_MOCK_SCRIPT_TIME_LIMIT_MS
#define DLOCK_MOCK_SCRIPT_TIME_LIMIT_MS 10000
#endif
#define SCRIPT_TIME_LIMIT_MS DLOCK_MOCK_SCRIPT_TIME_LIMIT_MS
/* Builds that run untrusted scripts (the fuzz targets, tests/fuzz/) may cap
 * a Lua state's memory in bytes (-DDLOCK_MOCK_LUA_MEM_LIMIT=...): beyond it
 * an allocation fails and the eval reports DLOCK_ENOMEM, instead of one
 * string.rep taking the process down. Off (0) by default, as in Redis. */
#ifndef DLOCK_MOCK_LUA_MEM_LIMIT
#define DLOCK_MOCK_LUA_MEM_LIMIT 0
#endif
#define HOOK_EVERY_INSTRUCTIONS 100000
/* Lua -> reply nesting beyond this is a self-referencing table. */
#define MAX_REPLY_DEPTH 1000
#define STACK_ARGS 16

#define KILL_MSG "ERR script killed: it ran longer than the mock's time limit"

typedef struct cached_script {
    int ref;    /* the compiled function in the registry */
    size_t len;
    char text[]; /* the source compiled */
} cached_script;

struct dlock__lua {
    lua_State *L;
    dlock__dict scripts; /* script address bytes -> cached_script * */
    int env_ref;         /* the read-only proxy every script runs in */

    /* State of the running script (one at a time: the store mutex). */
    dlock_mock_store *st;
    int running;
    int oom;
    int killed;
    int64_t started_ms;
    size_t mem;           /* bytes the Lua state holds (for the cap above) */
    dlock_reply *pending; /* redis.call's reply while it is copied into Lua */
    char *call_err;       /* the last error redis.call raised */
    size_t call_err_len;
};

typedef struct eval_ctx {
    dlock__lua *b;
    const dlock_script *script;
    size_t nkeys, nargs;
    const char *const *argv;
    const size_t *argvlen;
    dlock_reply *reply; /* the result, built in place */
} eval_ctx;

static int64_t real_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *l_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    dlock__lua *b = ud;
    void *p;

    /* Lua 5.1 passes osize 0 for a new block. */
    if (ptr == NULL)
        osize = 0;
    if (nsize == 0) {
        free(ptr);
        b->mem -= osize;
        return NULL;
    }
    if (DLOCK_MOCK_LUA_MEM_LIMIT > 0 && nsize > osize &&
        b->mem + (nsize - osize) > (size_t)DLOCK_MOCK_LUA_MEM_LIMIT)
        return NULL;
    p = realloc(ptr, nsize);
    if (p != NULL)
        b->mem = b->mem - osize + nsize;
    return p;
}

static dlock__lua *bridge_of(lua_State *L)
{
    void *ud;

    lua_getallocf(L, &ud);
    return ud;
}

static void hook(lua_State *L, lua_Debug *ar)
{
    dlock__lua *b = bridge_of(L);

    (void)ar;
    /* Once killed, keep raising: a pcall in the loop must not save it. */
    if (b->killed || real_ms() - b->started_ms > SCRIPT_TIME_LIMIT_MS) {
        b->killed = 1;
        lua_pushliteral(L, KILL_MSG);
        lua_error(L);
    }
}

/* ---- globals protection ---------------------------------------------------- */

/* Raises msg with the position of the Lua code that triggered the
 * metamethod (level 0 is the metamethod itself). */
static int raise_at_caller(lua_State *L, const char *msg)
{
    luaL_where(L, 1);
    lua_pushstring(L, msg);
    lua_concat(L, 2);
    return lua_error(L);
}

static int l_nonexistent(lua_State *L)
{
    const char *name = lua_type(L, 2) == LUA_TSTRING ? lua_tostring(L, 2) : "?";

    lua_pushfstring(L, "Script attempted to access nonexistent global variable '%s'",
                    name);
    return raise_at_caller(L, lua_tostring(L, -1));
}

static int l_readonly(lua_State *L)
{
    return raise_at_caller(L, "Attempt to modify a readonly table");
}

/* ---- Redis -> Lua ------------------------------------------------------------ */

static void push_reply(lua_State *L, const dlock_reply *r)
{
    size_t i;

    luaL_checkstack(L, 3, "reply too deep");
    switch (r->type) {
    case DLOCK_REPLY_INTEGER:
        lua_pushnumber(L, (lua_Number)r->integer);
        break;
    case DLOCK_REPLY_BULK:
        lua_pushlstring(L, r->str, r->len);
        break;
    case DLOCK_REPLY_STATUS:
    case DLOCK_REPLY_ERROR:
        lua_createtable(L, 0, 1);
        lua_pushlstring(L, r->str, r->len);
        lua_setfield(L, -2, r->type == DLOCK_REPLY_STATUS ? "ok" : "err");
        break;
    case DLOCK_REPLY_ARRAY:
        lua_createtable(L, r->n > INT_MAX ? INT_MAX : (int)r->n, 0);
        for (i = 0; i < r->n && i < INT_MAX; i++) {
            if (r->elems[i] != NULL)
                push_reply(L, r->elems[i]);
            else
                lua_pushboolean(L, 0);
            lua_rawseti(L, -2, (int)i + 1);
        }
        break;
    case DLOCK_REPLY_NIL:
    default:
        lua_pushboolean(L, 0);
        break;
    }
}

/* ---- the redis table ---------------------------------------------------------- */

/* A failure of redis.call itself (bad arguments, a command's error reply):
 * raised as a bare string, without position, as Redis does; remembered so
 * that the top level can tell it from a script's own runtime error. */
static int call_failed(lua_State *L, dlock__lua *b, const char *msg, size_t len,
                       int raise)
{
    if (!raise) {
        lua_createtable(L, 0, 1);
        lua_pushlstring(L, msg, len);
        lua_setfield(L, -2, "err");
        return 1;
    }
    free(b->call_err);
    b->call_err = malloc(len + 1);
    if (b->call_err != NULL) {
        memcpy(b->call_err, msg, len);
        b->call_err[len] = '\0';
        b->call_err_len = len;
    }
    lua_pushlstring(L, msg, len);
    return lua_error(L);
}

#define CALL_FAILED(L, b, lit, raise) call_failed(L, b, lit, sizeof(lit) - 1, raise)

static int redis_generic(lua_State *L, int raise)
{
    dlock__lua *b = lua_touserdata(L, lua_upvalueindex(1));
    int argc = lua_gettop(L), i;
    const char *stack_argv[STACK_ARGS];
    size_t stack_len[STACK_ARGS];
    const char **argv = stack_argv;
    size_t *lens = stack_len;
    dlock_reply *r;

    if (!b->running)
        return luaL_error(L, "redis.call is only available inside a script");
    if (argc == 0)
        return b->st->server == DLOCK_MOCK_VALKEY_8
                   ? CALL_FAILED(L, b, "ERR Please specify at least one argument for this call",
                                 raise)
                   : CALL_FAILED(L, b,
                                 "ERR Please specify at least one argument for this redis lib call",
                                 raise);
    if (argc > STACK_ARGS) {
        /* Userdata: collected with the state even if a later step raises. */
        void *mem = lua_newuserdata(L, (size_t)argc * (sizeof(*argv) + sizeof(*lens)));

        lens = mem;
        argv = (const char **)(lens + argc);
    }
    for (i = 1; i <= argc; i++) {
        int t = lua_type(L, i);

        if (t == LUA_TNUMBER) {
            /* Not lua_tostring: its "%.14g" loses precision (Redis 7.0
             * uses "%.17g", Valkey the shortest exact text). */
            char buf[64];

            dlock__format_double(b->st, buf, sizeof(buf), (double)lua_tonumber(L, i), 1);
            lua_pushstring(L, buf);
            lua_replace(L, i);
        } else if (t != LUA_TSTRING) {
            return b->st->server == DLOCK_MOCK_VALKEY_8
                       ? CALL_FAILED(L, b, "ERR Command arguments must be strings or integers",
                                     raise)
                       : CALL_FAILED(L, b,
                                     "ERR Lua redis lib command arguments must be strings or integers",
                                     raise);
        }
        argv[i - 1] = lua_tolstring(L, i, &lens[i - 1]);
    }

    r = dlock__store_exec(b->st, argc, argv, lens, 1);
    if (r == NULL) {
        b->oom = 1;
        lua_pushliteral(L, "not enough memory");
        return lua_error(L);
    }
    /* Parked, so that a memory error while copying does not leak it. */
    b->pending = r;
    if (r->type == DLOCK_REPLY_ERROR && raise) {
        /* The message moves into call_err, where it is both remembered and
         * owned across the raise (which does not return). */
        free(b->call_err);
        b->call_err = r->str;
        b->call_err_len = r->len;
        r->str = NULL;
        dlock_reply_free(r);
        b->pending = NULL;
        lua_pushlstring(L, b->call_err, b->call_err_len);
        return lua_error(L);
    }
    push_reply(L, r);
    b->pending = NULL;
    dlock_reply_free(r);
    return 1;
}

static int l_call(lua_State *L)
{
    return redis_generic(L, 1);
}

static int l_redis_pcall(lua_State *L)
{
    return redis_generic(L, 0);
}

static int tagged_reply(lua_State *L, const char *field)
{
    const char *s;
    size_t len;

    if (lua_gettop(L) != 1 || lua_type(L, 1) != LUA_TSTRING)
        return CALL_FAILED(L, lua_touserdata(L, lua_upvalueindex(1)),
                           "ERR wrong number or type of arguments", 1);
    s = lua_tolstring(L, 1, &len);
    /* error_reply("-ERR x") and error_reply("ERR x") mean the same. */
    if (field[0] == 'e' && len > 0 && s[0] == '-') {
        s++;
        len--;
    }
    lua_createtable(L, 0, 1);
    lua_pushlstring(L, s, len);
    lua_setfield(L, -2, field);
    return 1;
}

static int l_status_reply(lua_State *L)
{
    return tagged_reply(L, "ok");
}

static int l_error_reply(lua_State *L)
{
    return tagged_reply(L, "err");
}

static int l_log(lua_State *L)
{
    /* The mock has no server log; accepting the call keeps scripts that
     * log portable. */
    if (lua_gettop(L) < 2 || lua_type(L, 1) != LUA_TNUMBER)
        return luaL_error(L, "redis.log() requires two arguments or more.");
    return 0;
}

/* Redis's redis.sha1hex: exactly one argument; what is not a string or a
 * number hashes as the empty string, as on a server. */
static int l_sha1hex(lua_State *L)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0, i;
    char out[2 * EVP_MAX_MD_SIZE + 1];
    const char *s = "";
    size_t len = 0;

    if (lua_gettop(L) != 1)
        return CALL_FAILED(L, lua_touserdata(L, lua_upvalueindex(1)),
                           "ERR wrong number of arguments", 1);
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER)
        s = lua_tolstring(L, 1, &len);
    if (EVP_Digest(s, len, md, &mdlen, EVP_sha1(), NULL) != 1) {
        bridge_of(L)->oom = 1;
        return luaL_error(L, "not enough memory");
    }
    for (i = 0; i < mdlen; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    lua_pushlstring(L, out, 2 * (size_t)mdlen);
    return 1;
}

static int l_true(lua_State *L)
{
    lua_pushboolean(L, 1);
    return 1;
}

/* pcall and xpcall as in Lua 5.1's base library, except that they do not
 * catch the time-limit kill: otherwise a loop around pcall would survive
 * it forever. */
static int finish_pcall(lua_State *L, int status)
{
    if (bridge_of(L)->killed) {
        lua_pushliteral(L, KILL_MSG);
        return lua_error(L);
    }
    lua_pushboolean(L, status == 0);
    lua_replace(L, 1);
    return lua_gettop(L);
}

static int l_pcall(lua_State *L)
{
    if (lua_gettop(L) == 0) {
        /* Redis 7.0 answers rather than raises here. */
        lua_pushboolean(L, 0);
        lua_pushliteral(L, "bad argument #1 to 'pcall' (value expected)");
        return 2;
    }
    lua_pushnil(L); /* becomes the status slot */
    lua_insert(L, 1);
    return finish_pcall(L, lua_pcall(L, lua_gettop(L) - 2, LUA_MULTRET, 0));
}

static int l_xpcall(lua_State *L)
{
    luaL_checkany(L, 2);
    lua_settop(L, 2);
    lua_insert(L, 1); /* handler below the function */
    return finish_pcall(L, lua_pcall(L, 0, LUA_MULTRET, 1));
}

/* coroutine.resume catches errors too; same treatment. The original is
 * upvalue 1. */
static int l_resume(lua_State *L)
{
    int n = lua_gettop(L);

    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    if (bridge_of(L)->killed) {
        lua_pushliteral(L, KILL_MSG);
        return lua_error(L);
    }
    return lua_gettop(L);
}

static int l_nothing(lua_State *L)
{
    (void)L;
    return 0;
}

/* ---- the state ------------------------------------------------------------------ */

static int init_state(lua_State *L)
{
    static const luaL_Reg libs[] = {
        {"", luaopen_base},
        {LUA_TABLIBNAME, luaopen_table},
        {LUA_STRLIBNAME, luaopen_string},
        {LUA_MATHLIBNAME, luaopen_math},
        {NULL, NULL},
    };
    /* Not in Redis's script environment; dofile/loadfile would reach the
     * file system. os and io are never opened at all. */
    static const char *const drop[] = {"print",   "dofile", "loadfile", "getfenv",
                                       "setfenv", "newproxy", "module",  "require",
                                       NULL};
    static const struct {
        const char *name;
        lua_CFunction fn;
    } fns[] = {
        {"call", l_call},
        {"pcall", l_redis_pcall},
        {"status_reply", l_status_reply},
        {"error_reply", l_error_reply},
        {"log", l_log},
        {"sha1hex", l_sha1hex},
        {"replicate_commands", l_true},
        {"set_repl", l_nothing},
    };
    static const luaL_Reg redis_libs[] = {
        {"cjson", luaopen_cjson},
        {"bit", luaopen_bit},
        {NULL, NULL},
    };
    /* Lua CJSON's opener writes process-wide state (its number formatting
     * set-up), and stores open their states in any thread. */
    static pthread_mutex_t open_mutex = PTHREAD_MUTEX_INITIALIZER;
    dlock__lua *b = lua_touserdata(L, 1);
    const luaL_Reg *lib;
    size_t i;
    int rc;

    for (lib = libs; lib->func != NULL; lib++) {
        lua_pushcfunction(L, lib->func);
        lua_pushstring(L, lib->name);
        lua_call(L, 1, 0);
    }
    for (lib = redis_libs; lib->func != NULL; lib++) {
        lua_pushcfunction(L, lib->func);
        pthread_mutex_lock(&open_mutex);
        rc = lua_pcall(L, 0, 1, 0);
        pthread_mutex_unlock(&open_mutex);
        if (rc != 0)
            lua_error(L);
        lua_setfield(L, LUA_GLOBALSINDEX, lib->name);
    }
    for (i = 0; drop[i] != NULL; i++) {
        lua_pushnil(L);
        lua_setfield(L, LUA_GLOBALSINDEX, drop[i]);
    }
    lua_pushcfunction(L, l_pcall);
    lua_setfield(L, LUA_GLOBALSINDEX, "pcall");
    lua_pushcfunction(L, l_xpcall);
    lua_setfield(L, LUA_GLOBALSINDEX, "xpcall");
    lua_getfield(L, LUA_GLOBALSINDEX, "coroutine");
    lua_getfield(L, -1, "resume");
    lua_pushcclosure(L, l_resume, 1);
    lua_setfield(L, -2, "resume");
    lua_pop(L, 1);

    lua_newtable(L);
    for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
        lua_pushlightuserdata(L, b);
        lua_pushcclosure(L, fns[i].fn, 1);
        lua_setfield(L, -2, fns[i].name);
    }
    lua_pushnumber(L, 0);
    lua_setfield(L, -2, "LOG_DEBUG");
    lua_pushnumber(L, 1);
    lua_setfield(L, -2, "LOG_VERBOSE");
    lua_pushnumber(L, 2);
    lua_setfield(L, -2, "LOG_NOTICE");
    lua_pushnumber(L, 3);
    lua_setfield(L, -2, "LOG_WARNING");
    lua_setfield(L, LUA_GLOBALSINDEX, "redis");

    /* Last: from here on the globals table refuses new names (KEYS and
     * ARGV are set with rawset). */
    lua_pushvalue(L, LUA_GLOBALSINDEX);
    lua_createtable(L, 0, 2);
    lua_pushcfunction(L, l_nonexistent);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_readonly);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);

    /* Scripts run in an empty proxy that reads through to the globals and
     * refuses every write, so existing globals cannot be replaced either. */
    lua_newtable(L);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, l_readonly);
    lua_setfield(L, -2, "__newindex");
    lua_setmetatable(L, -2);
    b->env_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

static dlock__lua *bridge_new(void)
{
    dlock__lua *b = calloc(1, sizeof(*b));

    if (b == NULL)
        return NULL;
    dlock__dict_init(&b->scripts, free);
    b->L = lua_newstate(l_alloc, b);
    if (b->L == NULL) {
        free(b);
        return NULL;
    }
    if (lua_cpcall(b->L, init_state, b) != 0) {
        lua_close(b->L);
        free(b);
        return NULL;
    }
    lua_settop(b->L, 0);
    lua_sethook(b->L, hook, LUA_MASKCOUNT, HOOK_EVERY_INSTRUCTIONS);
    return b;
}

void dlock__lua_free(dlock__lua *b)
{
    if (b == NULL)
        return;
    lua_close(b->L);
    dlock__dict_clear(&b->scripts);
    free(b->call_err);
    free(b);
}

/* ---- one eval -------------------------------------------------------------------- */

/* Pushes the compiled script, compiling and caching it on first use.
 * Returns 0 (and sets x->reply) on a compile error. */
static int push_function(lua_State *L, eval_ctx *x)
{
    dlock__lua *b = x->b;
    const char *key = (const char *)&x->script;
    dlock__dict_entry *e = dlock__dict_find(&b->scripts, key, sizeof(x->script));
    size_t len = strlen(x->script->source);
    cached_script *cs;
    int rc;

    if (e != NULL) {
        cs = e->val;
        if (cs->len == len && memcmp(cs->text, x->script->source, len) == 0) {
            lua_rawgeti(L, LUA_REGISTRYINDEX, cs->ref);
            return 1;
        }
        luaL_unref(L, LUA_REGISTRYINDEX, cs->ref);
        dlock__dict_remove(&b->scripts, e);
    }
    rc = luaL_loadbuffer(L, x->script->source, len, "@user_script");
    if (rc == LUA_ERRSYNTAX) {
        x->reply = dlock__reply_errorf("ERR Error compiling script (new function): %s",
                                       lua_tostring(L, -1));
        if (x->reply == NULL)
            b->oom = 1;
        lua_pop(L, 1);
        return 0;
    }
    if (rc != 0)
        lua_error(L); /* out of memory: let lua_cpcall report it */
    lua_rawgeti(L, LUA_REGISTRYINDEX, b->env_ref);
    lua_setfenv(L, -2);

    /* Caching is an optimisation: without memory for it, run uncached. */
    cs = malloc(sizeof(*cs) + len + 1);
    if (cs == NULL)
        return 1;
    lua_pushvalue(L, -1);
    cs->len = len;
    memcpy(cs->text, x->script->source, len + 1);
    cs->ref = luaL_ref(L, LUA_REGISTRYINDEX);
    if (dlock__dict_add(&b->scripts, key, sizeof(x->script), cs) == NULL) {
        luaL_unref(L, LUA_REGISTRYINDEX, cs->ref);
        free(cs);
    }
    return 1;
}

static void set_strings(lua_State *L, const char *name, const char *const *argv,
                        const size_t *argvlen, size_t n)
{
    size_t i;

    lua_pushstring(L, name);
    lua_createtable(L, n > INT_MAX ? INT_MAX : (int)n, 0);
    for (i = 0; i < n && i < INT_MAX; i++) {
        if (argvlen != NULL)
            lua_pushlstring(L, argv[i], argvlen[i]);
        else
            lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, (int)i + 1);
    }
    lua_rawset(L, LUA_GLOBALSINDEX);
}

static long long number_to_ll(lua_Number d)
{
    /* What a plain cast gives on x86-64 for NaN and out-of-range values,
     * without the undefined behaviour. */
    if (d != d || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
        return LLONG_MIN;
    return (long long)d;
}

/* Converts the Lua value at idx with Redis's rules into *slot. Allocations
 * land in *slot at once, so the root owns all of them if a Lua error
 * interrupts the walk. */
static void to_reply(lua_State *L, dlock__lua *b, int idx, int depth,
                     dlock_reply **slot)
{
    size_t len, n, i;
    const char *s;

    switch (lua_type(L, idx)) {
    case LUA_TSTRING:
        s = lua_tolstring(L, idx, &len);
        *slot = dlock_reply_string(DLOCK_REPLY_BULK, s, len);
        break;
    case LUA_TNUMBER:
        *slot = dlock_reply_integer(number_to_ll(lua_tonumber(L, idx)));
        break;
    case LUA_TBOOLEAN:
        *slot = lua_toboolean(L, idx) ? dlock_reply_integer(1) : dlock_reply_nil();
        break;
    case LUA_TTABLE:
        if (depth >= MAX_REPLY_DEPTH || !lua_checkstack(L, 4)) {
            *slot = dlock__reply_error("ERR reached lua stack limit");
            break;
        }
        lua_pushliteral(L, "err");
        lua_rawget(L, idx);
        if (lua_type(L, -1) == LUA_TSTRING) {
            s = lua_tolstring(L, -1, &len);
            *slot = dlock_reply_string(DLOCK_REPLY_ERROR, s, len);
            lua_pop(L, 1);
            break;
        }
        lua_pop(L, 1);
        lua_pushliteral(L, "ok");
        lua_rawget(L, idx);
        if (lua_type(L, -1) == LUA_TSTRING) {
            s = lua_tolstring(L, -1, &len);
            *slot = dlock_reply_string(DLOCK_REPLY_STATUS, s, len);
            lua_pop(L, 1);
            break;
        }
        lua_pop(L, 1);
        /* An array ends at the first nil, whatever follows. */
        for (n = 0; n < INT_MAX; n++) {
            lua_rawgeti(L, idx, (int)n + 1);
            if (lua_isnil(L, -1)) {
                lua_pop(L, 1);
                break;
            }
            lua_pop(L, 1);
        }
        *slot = dlock_reply_array(n);
        if (*slot == NULL)
            break;
        for (i = 0; i < n && !b->oom; i++) {
            lua_rawgeti(L, idx, (int)i + 1);
            to_reply(L, b, lua_gettop(L), depth + 1, &(*slot)->elems[i]);
            lua_pop(L, 1);
        }
        return;
    default:
        *slot = dlock_reply_nil();
        break;
    }
    if (*slot == NULL)
        b->oom = 1;
}

/* The reply for a script that raised: its message, prefixed "ERR " unless
 * it already is a Redis error (from redis.call, or an {err=...} table), and
 * followed by the script's name, much as Redis adds the script's SHA. */
static void error_to_reply(lua_State *L, eval_ctx *x)
{
    dlock__lua *b = x->b;
    const char *msg = NULL, *prefix = "ERR ";
    const char *name = x->script->name != NULL ? x->script->name : "?";
    size_t len = 0, plen, nlen = strlen(name), total;
    char *buf;

    if (b->killed) {
        x->reply = dlock__reply_error(KILL_MSG);
        if (x->reply == NULL)
            b->oom = 1;
        return;
    }
    if (lua_type(L, -1) == LUA_TSTRING || lua_type(L, -1) == LUA_TNUMBER) {
        msg = lua_tolstring(L, -1, &len);
        if (b->call_err != NULL && len == b->call_err_len &&
            memcmp(msg, b->call_err, len) == 0)
            prefix = "";
    } else if (lua_type(L, -1) == LUA_TTABLE) {
        lua_getfield(L, -1, "err");
        if (lua_type(L, -1) == LUA_TSTRING) {
            msg = lua_tolstring(L, -1, &len);
            prefix = "";
        }
    }
    if (msg == NULL) {
        msg = "unknown error";
        len = strlen(msg);
    }
    plen = strlen(prefix);
    total = plen + len + sizeof(" script: ") - 1 + nlen;
    buf = malloc(total + 1);
    if (buf == NULL) {
        b->oom = 1;
        return;
    }
    memcpy(buf, prefix, plen);
    memcpy(buf + plen, msg, len);
    memcpy(buf + plen + len, " script: ", sizeof(" script: ") - 1);
    memcpy(buf + total - nlen, name, nlen);
    buf[total] = '\0';
    x->reply = dlock_reply_string(DLOCK_REPLY_ERROR, buf, total);
    free(buf);
    if (x->reply == NULL)
        b->oom = 1;
}

static int eval_protected(lua_State *L)
{
    eval_ctx *x = lua_touserdata(L, 1);
    dlock__lua *b = x->b;
    int rc;

    lua_settop(L, 0);
    if (!push_function(L, x))
        return 0;
    set_strings(L, "KEYS", x->argv, x->argvlen, x->nkeys);
    set_strings(L, "ARGV", x->argv + x->nkeys,
                x->argvlen != NULL ? x->argvlen + x->nkeys : NULL, x->nargs);
    b->started_ms = real_ms();
    rc = lua_pcall(L, 0, 1, 0);
    if (rc == LUA_ERRMEM || b->oom) {
        b->oom = 1;
        return 0;
    }
    if (rc != 0 || b->killed) {
        error_to_reply(L, x);
        return 0;
    }
    to_reply(L, b, 1, 0, &x->reply);
    return 0;
}

int dlock__lua_eval(dlock_mock_store *st, dlock_reply **out,
                    const dlock_script *script, size_t nkeys, size_t nargs,
                    const char *const *argv, const size_t *argvlen, char *errbuf,
                    size_t errlen)
{
    dlock__lua *b;
    eval_ctx x;
    int rc;

    *out = NULL;
    if (st->lua == NULL && (st->lua = bridge_new()) == NULL)
        goto oom;
    b = st->lua;
    b->st = st;
    b->running = 1;
    b->oom = 0;
    b->killed = 0;
    free(b->call_err);
    b->call_err = NULL;
    memset(&x, 0, sizeof(x));
    x.b = b;
    x.script = script;
    x.nkeys = nkeys;
    x.nargs = nargs;
    x.argv = argv;
    x.argvlen = argvlen;
    rc = lua_cpcall(b->L, eval_protected, &x);
    b->running = 0;
    lua_settop(b->L, 0);
    dlock_reply_free(b->pending);
    b->pending = NULL;
    if (rc != 0 || b->oom || x.reply == NULL) {
        dlock_reply_free(x.reply);
        goto oom;
    }
    *out = x.reply;
    return 0;

oom:
    if (errbuf != NULL && errlen > 0)
        snprintf(errbuf, errlen, "mock: out of memory running script %s",
                 script->name != NULL ? script->name : "?");
    return DLOCK_ENOMEM;
}
