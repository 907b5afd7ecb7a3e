/*
 * A backend that holds every script call to Redis Cluster's slot rules
 * (see slot_check.h).
 */
#include "cluster.h"
#include "slot_check.h"
#include "wrap_backend.h"

#include "dlock/sys/backend.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSLOTS 16384
/* The masters the slots are dealt to, in ranges, for key_node/eval_node. */
#define NODES 3

/* What a script breaking the rules fails with (the prelude's error). */
#define BREACH "SLOTCHECK"


static pthread_mutex_t counts_mutex = PTHREAD_MUTEX_INITIALIZER;
static slot_check_counts counts;
static char first_breach[256];

/* The checked version of each script, made once and kept for the process
 * (under counts_mutex): a backend may cache a compiled script by the
 * addresses of its struct and source (the mock does), so each version
 * needs addresses of its own that are never reused. */
#define MAX_SCRIPTS 256
static struct checked {
    const dlock_script *orig;
    const char *orig_source;
    int nodes; /* the prelude's slot_check_nodes */
    dlock_script script;
} checked_scripts[MAX_SCRIPTS];
static size_t nchecked;

/* Whether eval_node runs calls over several slots (counts_mutex). */
static int cross_on = 1;

static unsigned node_of(unsigned slot)
{
    return slot * NODES / NSLOTS;
}

/* The harness's own slot function (tests/harness/cluster.h), written
 * independently of the library's. */
unsigned slot_check_slot(const char *key, size_t len)
{
    return dlock_test_cluster_slot_n(key, len);
}

/* Runs first, after a line setting slot_check_nodes (0: every key must be
 * in KEYS[1]'s slot; else NODES: on KEYS[1]'s node, for eval_node):
 * inside the script, redis.call/pcall check that each key a
 * command names (every argument of DEL, EXISTS and UNLINK, else the first)
 * and each SPUBLISH channel has KEYS[1]'s slot (or node), and that nothing publishes
 * with plain PUBLISH (sharded subscribers would never see it). A local
 * `redis` shadows the global one for the script's own code. */
static const char prelude[] =
    "local redis = (function(r)\n"
    "  local function crc16(s)\n"
    "    local crc = 0\n"
    "    for i = 1, #s do\n"
    "      crc = bit.bxor(crc, bit.lshift(string.byte(s, i), 8))\n"
    "      for _ = 1, 8 do\n"
    "        if bit.band(crc, 0x8000) ~= 0 then\n"
    "          crc = bit.band(bit.bxor(bit.lshift(crc, 1), 0x1021), 0xffff)\n"
    "        else\n"
    "          crc = bit.band(bit.lshift(crc, 1), 0xffff)\n"
    "        end\n"
    "      end\n"
    "    end\n"
    "    return crc\n"
    "  end\n"
    "  local function tag(k)\n"
    "    local s = string.find(k, '{', 1, true)\n"
    "    local e = s and string.find(k, '}', s + 1, true)\n"
    "    if e and e > s + 1 then return string.sub(k, s + 1, e - 1) end\n"
    "    return k\n"
    "  end\n"
    "  local home_tag = KEYS[1] and tag(KEYS[1])\n"
    "  local home = KEYS[1] and crc16(home_tag) % 16384\n"
    "  local function node(slot)\n"
    "    return math.floor(slot * slot_check_nodes / 16384)\n"
    "  end\n"
    "  local function elsewhere(k)\n"
    "    local t = tag(k)\n"
    "    if slot_check_nodes > 0 then\n"
    "      return node(crc16(t) % 16384) ~= node(home)\n"
    "    end\n"
    "    return t ~= home_tag and crc16(t) % 16384 ~= home\n"
    "  end\n"
    "  local every = {del = true, exists = true, unlink = true}\n"
    "  local keyless = {time = true, ping = true}\n"
    "  local function check(cmd, ...)\n"
    "    local c = string.lower(cmd)\n"
    "    if c == 'publish' then\n"
    "      error('" BREACH " plain publish on ' .. tostring((...)))\n"
    "    end\n"
    "    if keyless[c] or not home then return end\n"
    "    for i = 1, every[c] and select('#', ...) or 1 do\n"
    "      local k = tostring((select(i, ...)))\n"
    "      if elsewhere(k) then\n"
    "        error('" BREACH " ' .. c .. ' ' .. k .. ' is not in the slot (or node) of ' .. KEYS[1])\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  return setmetatable({\n"
    "    call = function(cmd, ...) check(cmd, ...) return r.call(cmd, ...) end,\n"
    "    pcall = function(cmd, ...) check(cmd, ...) return r.pcall(cmd, ...) end,\n"
    "  }, {__index = r})\n"
    "end)(redis)\n";

static void note(uint64_t *counter, const char *fmt, const char *a, const char *b)
{
    pthread_mutex_lock(&counts_mutex);
    (*counter)++;
    if (!first_breach[0])
        snprintf(first_breach, sizeof(first_breach), fmt, a, b);
    pthread_mutex_unlock(&counts_mutex);
}

/* The script with the prelude (nodes: its slot_check_nodes), or NULL (out
 * of memory, or too many). */
static const dlock_script *checked_version(const dlock_script *script, int nodes)
{
    size_t marker = dlock_script_no_writes(script) ? strlen(DLOCK_SCRIPT_NO_WRITES) : 0;
    const dlock_script *found = NULL;
    struct checked *c;
    char *source, head[64];
    size_t i, n;

    pthread_mutex_lock(&counts_mutex);
    for (i = 0; i < nchecked && !found; i++)
        if (checked_scripts[i].orig == script &&
            checked_scripts[i].orig_source == script->source &&
            checked_scripts[i].nodes == nodes)
            found = &checked_scripts[i].script;
    if (found || nchecked == MAX_SCRIPTS)
        goto out;
    n = (size_t)snprintf(head, sizeof(head), "local slot_check_nodes = %d\n", nodes);
    source = malloc(strlen(script->source) + n + sizeof(prelude));
    if (!source)
        goto out;
    /* The no-writes marker stays the first line. */
    memcpy(source, script->source, marker);
    memcpy(source + marker, head, n);
    memcpy(source + marker + n, prelude, sizeof(prelude) - 1);
    strcpy(source + marker + n + sizeof(prelude) - 1, script->source + marker);
    c = &checked_scripts[nchecked++];
    c->orig = script;
    c->orig_source = script->source;
    c->nodes = nodes;
    c->script.name = script->name;
    c->script.source = source; /* kept for the process */
    found = &c->script;
out:
    pthread_mutex_unlock(&counts_mutex);
    return found;
}

static size_t arg_len(const char *const *argv, const size_t *argvlen, size_t i)
{
    return argvlen ? argvlen[i] : strlen(argv[i]);
}

/* Whether KEYS argv[1..nkeys) share argv[0]'s group (nodes: node, else
 * slot). */
static int keys_together(size_t nkeys, const char *const *argv,
                         const size_t *argvlen, int nodes)
{
    unsigned home = slot_check_slot(argv[0], arg_len(argv, argvlen, 0));
    size_t i;

    for (i = 1; i < nkeys; i++) {
        unsigned s = slot_check_slot(argv[i], arg_len(argv, argvlen, i));
        if (nodes ? node_of(s) != node_of(home) : s != home)
            return 0;
    }
    return 1;
}

/* eval_until (nodes 0) and eval_node (NODES). */
static int checked_eval(dlock_backend *b, dlock_reply **out, const dlock_script *script,
                        size_t nkeys, size_t nargs, const char *const *argv,
                        const size_t *argvlen, int64_t deadline_ms, char *errbuf,
                        size_t errlen, int nodes)
{
    const char *name = script->name ? script->name : "";
    const dlock_script *checked;
    int rc;

    pthread_mutex_lock(&counts_mutex);
    counts.evals++;
    if (strstr(name, "renew"))
        counts.renewals++;
    pthread_mutex_unlock(&counts_mutex);
    if (nkeys > 0 && !keys_together(nkeys, argv, argvlen, nodes)) {
        note(&counts.cross_keys, "%s: KEYS over more than one %s", name,
             nodes ? "node" : "slot");
        *out = dlock_reply_string(DLOCK_REPLY_ERROR,
                                  "CROSSSLOT Keys in request don't hash to the same slot",
                                  53);
        return *out ? 0 : DLOCK_ENOMEM;
    }
    if (!(checked = checked_version(script, nodes))) {
        *out = NULL;
        if (errbuf && errlen > 0)
            snprintf(errbuf, errlen, "slot check: no room for script %s", name);
        return DLOCK_ENOMEM;
    }
    rc = dlock_test_wrap_eval_until(b, out, checked, nkeys, nargs, argv, argvlen,
                                  deadline_ms, errbuf, errlen);
    if (rc == 0 && (*out)->type == DLOCK_REPLY_ERROR && (*out)->str &&
        strstr((*out)->str, BREACH))
        note(&counts.cross_body, "%s: %.200s", name, (*out)->str);
    return rc;
}

static int sb_eval_until(dlock_backend *b, dlock_reply **out, const dlock_script *script,
                         size_t nkeys, size_t nargs, const char *const *argv,
                         const size_t *argvlen, int64_t deadline_ms, char *errbuf,
                         size_t errlen)
{
    return checked_eval(b, out, script, nkeys, nargs, argv, argvlen, deadline_ms,
                        errbuf, errlen, 0);
}

/* A server that refuses calls over several slots (cross off): DLOCK_ENOTSUP,
 * as the Redis backend says then. */
static int sb_eval_node(dlock_backend *b, dlock_reply **out, const dlock_script *script,
                        size_t nkeys, size_t nargs, const char *const *argv,
                        const size_t *argvlen, int64_t deadline_ms, char *errbuf,
                        size_t errlen)
{
    int on;

    pthread_mutex_lock(&counts_mutex);
    on = cross_on;
    pthread_mutex_unlock(&counts_mutex);
    *out = NULL;
    if (!on || nkeys == 0)
        return DLOCK_ENOTSUP;
    return checked_eval(b, out, script, nkeys, nargs, argv, argvlen, deadline_ms,
                        errbuf, errlen, NODES);
}

static unsigned sb_key_node(dlock_backend *b, const char *key, size_t len)
{
    unsigned slot = slot_check_slot(key, len);
    int on;

    (void)b;
    pthread_mutex_lock(&counts_mutex);
    on = cross_on;
    pthread_mutex_unlock(&counts_mutex);
    return on ? NSLOTS + node_of(slot) : slot;
}

void slot_check_set_cross(int on)
{
    pthread_mutex_lock(&counts_mutex);
    cross_on = on;
    pthread_mutex_unlock(&counts_mutex);
}

static const char *sb_publish_command(dlock_backend *b)
{
    (void)b;
    return "spublish";
}

static unsigned sb_key_slot(dlock_backend *b, const char *key, size_t len)
{
    (void)b;
    return slot_check_slot(key, len);
}

static const dlock_backend_methods slot_methods = {
    .version = DLOCK_BACKEND_VERSION,
    .name = "slot-check",
    .eval = dlock_test_wrap_eval_by_until,
    .subscribe = dlock_test_wrap_subscribe,
    .unsubscribe = dlock_test_wrap_unsubscribe,
    .clock = dlock_test_wrap_clock,
    .free = dlock_test_wrap_free,
    .eval_until = sb_eval_until,
    .subscribe_until = dlock_test_wrap_subscribe_until,
    .reconnects = dlock_test_wrap_reconnects,
    .publish_command = sb_publish_command,
    .key_slot = sb_key_slot,
    .key_node = sb_key_node,
    .eval_node = sb_eval_node,
};

int slot_check_backend_new(dlock_backend **out, dlock_backend *inner)
{
    dlock_test_wrap *sb = calloc(1, sizeof(*sb));

    *out = NULL;
    if (!sb) {
        dlock_backend_free(inner);
        return DLOCK_ENOMEM;
    }
    sb->base.methods = &slot_methods;
    sb->inner = inner;
    *out = &sb->base;
    return 0;
}

void slot_check_counts_get(slot_check_counts *out, char *first, size_t len)
{
    pthread_mutex_lock(&counts_mutex);
    *out = counts;
    if (first && len > 0)
        snprintf(first, len, "%s", first_breach);
    pthread_mutex_unlock(&counts_mutex);
}

void slot_check_counts_reset(void)
{
    pthread_mutex_lock(&counts_mutex);
    memset(&counts, 0, sizeof(counts));
    first_breach[0] = '\0';
    pthread_mutex_unlock(&counts_mutex);
}
