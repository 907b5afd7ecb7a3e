/*
 * Redis backend: one script call over several slots of one cluster node
 * (see cross.h).
 */
#include "cross.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLAG "allow-cross-slot-keys"

/* The error reply's first word when a key is not served here (a log
 * line then tells it from the script's own errors); the node's own words
 * follow. */
#define NOT_HERE "DLOCKNOTHERE"

/* The prelude: ARGV[1] the key count n, ARGV[2..n] the keys after the
 * declared one, the rest the call's own ARGV. Locals named KEYS and ARGV
 * shadow the globals for the rest of the chunk, the script included. */
static const char prelude[] =
    "local KEYS, ARGV = (function(k, a)\n"
    "    local n = tonumber(a[1])\n"
    "    local keys, args = {k[1]}, {}\n"
    "    for i = 2, n do\n"
    "        keys[i] = a[i]\n"
    "        local r = redis.pcall('exists', a[i])\n"
    "        if type(r) == 'table' and r.err then\n"
    "            return nil, r.err\n"
    "        end\n"
    "    end\n"
    "    for i = n + 1, #a do\n"
    "        args[i - n] = a[i]\n"
    "    end\n"
    "    return keys, args\n"
    "end)(KEYS, ARGV)\n"
    "if not KEYS then\n"
    "    return redis.error_reply('" NOT_HERE " ' .. ARGV)\n"
    "end\n";

static const char *test_flag;

typedef struct derived {
    char *of;            /* the original source */
    dlock_script script; /* its derived form */
    struct derived *next;
} derived;

struct dlock__redis_cross {
    pthread_mutex_t mu;
    derived *list; /* mu; only grows: a client has few scripts */
};

int dlock__redis_cross_new(dlock__redis_cross **out)
{
    dlock__redis_cross *x = calloc(1, sizeof *x);

    *out = NULL;
    if (!x || pthread_mutex_init(&x->mu, NULL) != 0) {
        free(x);
        return DLOCK_ENOMEM;
    }
    *out = x;
    return 0;
}

void dlock__redis_cross_free(dlock__redis_cross *x)
{
    derived *d;

    if (!x)
        return;
    while ((d = x->list) != NULL) {
        x->list = d->next;
        free(d->of);
        free((char *)d->script.source);
        free(d);
    }
    pthread_mutex_destroy(&x->mu);
    free(x);
}

/* A new derived script of script, or NULL. */
static derived *derive(const dlock_script *script)
{
    const char *word = __atomic_load_n(&test_flag, __ATOMIC_ACQUIRE);
    const char *flag = word ? word : FLAG;
    size_t n = strlen(script->source);
    size_t len = strlen("#!lua flags=\n") + strlen(flag) + sizeof prelude + n;
    derived *d = calloc(1, sizeof *d);
    char *src = malloc(len);

    if (!d || !src || !(d->of = strdup(script->source))) {
        free(d);
        free(src);
        return NULL;
    }
    snprintf(src, len, "#!lua flags=%s\n%s%s", flag, prelude, script->source);
    d->script.name = script->name;
    d->script.source = src;
    return d;
}

const dlock_script *dlock__redis_cross_script(dlock__redis_cross *x,
                                              const dlock_script *script)
{
    derived *d;

    pthread_mutex_lock(&x->mu);
    for (d = x->list; d; d = d->next)
        if (strcmp(d->of, script->source) == 0)
            break;
    if (!d && (d = derive(script)) != NULL) {
        d->next = x->list;
        x->list = d;
    }
    pthread_mutex_unlock(&x->mu);
    return d ? &d->script : NULL;
}

void dlock__redis_cross_args(const char **out, size_t *outlen, char *count,
                             size_t nkeys, size_t nargs,
                             const char *const *argv, const size_t *argvlen)
{
    size_t i, j = 0;

    snprintf(count, 24, "%zu", nkeys);
    out[j] = argv[0];
    outlen[j++] = argvlen ? argvlen[0] : strlen(argv[0]);
    out[j] = count;
    outlen[j++] = strlen(count);
    for (i = 1; i < nkeys + nargs; i++) {
        out[j] = argv[i];
        outlen[j++] = argvlen ? argvlen[i] : strlen(argv[i]);
    }
}

/* Whether s[0..len) holds the NUL-terminated word. */
static int holds(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word), i;

    for (i = 0; i + n <= len; i++)
        if (memcmp(s + i, word, n) == 0)
            return 1;
    return 0;
}

int dlock__redis_cross_refused(const char *err, size_t len)
{
    /* Redis 7 and Valkey: "Unexpected flag in script shebang: x" (and the
     * other shebang complaints); Redis 6 and older compile the line as
     * Lua: "... unexpected symbol near '#'". */
    return err && (holds(err, len, "shebang") || holds(err, len, "near '#'"));
}

void dlock__redis_cross_test_flag(const char *word)
{
    __atomic_store_n(&test_flag, word, __ATOMIC_RELEASE);
}
