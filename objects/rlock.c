/*
 * dlock — the RLock base: argument checking and dispatch of the generic lock
 * functions, and the services every lock type uses (naming keys, running
 * scripts with honest error mapping, remembering the last failure).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the base ------------------------------------------------------------ */

int dlock_rlock_init(dlock_rlock *l, const dlock_rlock_methods *m,
                     dlock_client *c, const char *name)
{
    size_t n;

    if (!l || !m || !c || !name)
        return DLOCK_EINVAL;
    if (dlock__client_check(c) != 0)
        return DLOCK_EFORKED;
    n = strnlen(name, DLOCK_NAME_MAX + 1);
    if (n == 0 || n > DLOCK_NAME_MAX)
        return DLOCK_EINVAL;
    memset(l, 0, sizeof(*l));
    l->name = malloc(n + 1);
    if (!l->name)
        return DLOCK_ENOMEM;
    memcpy(l->name, name, n + 1);
    l->name_len = n;
    if (pthread_mutex_init(&l->err_mutex, NULL) != 0) {
        free(l->name);
        l->name = NULL;
        return DLOCK_ENOMEM;
    }
    l->methods = m;
    l->client = c;
    dlock__client_ref(c);
    return 0;
}

void dlock_rlock_fini(dlock_rlock *l)
{
    if (!l || !l->client)
        return;
    dlock__holds_forget_lock(&l->client->holds, l);
    dlock__client_unref(l->client);
    l->client = NULL;
    pthread_mutex_destroy(&l->err_mutex);
    free(l->name);
    l->name = NULL;
}

void dlock_rlock_free(dlock_rlock *l)
{
    const dlock_rlock_methods *m;

    if (!l)
        return;
    m = l->methods;
    dlock_rlock_fini(l);
    if (m && m->destroy)
        m->destroy(l);
    else
        free(l);
}

int dlock_rlock_fail(dlock_rlock *l, int code, const char *fmt, ...)
{
    va_list ap;

    if (!l)
        return code;
    pthread_mutex_lock(&l->err_mutex);
    va_start(ap, fmt);
    vsnprintf(l->errmsg, sizeof(l->errmsg), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&l->err_mutex);
    return code;
}

const char *dlock_errmsg(dlock_rlock *l)
{
    static __thread char copy[sizeof(((dlock_rlock *)0)->errmsg)];

    if (!l)
        return "lock object is NULL";
    pthread_mutex_lock(&l->err_mutex);
    memcpy(copy, l->errmsg, sizeof(copy));
    pthread_mutex_unlock(&l->err_mutex);
    return copy;
}

const char *dlock_rlock_name(const dlock_rlock *l)
{
    return l ? l->name : NULL;
}

char *dlock_rlock_key(const dlock_rlock *l, const char *prefix,
                      const char *suffix)
{
    /* Braces put the auxiliary keys in the name's cluster slot; a name that
     * already has them is used as it is (Redisson's rule). */
    int braced = memchr(l->name, '{', l->name_len) == NULL;
    size_t n = strlen(prefix) + l->name_len + strlen(suffix) + 3;
    char *key = malloc(n);

    if (key)
        snprintf(key, n, "%s%s%s%s%s", prefix, braced ? "{" : "", l->name,
                 braced ? "}" : "", suffix);
    return key;
}

int dlock__eval_fail(dlock_rlock *l, int code, const dlock_script *s,
                     const char *detail)
{
    /* Lock names may hold newlines or odd bytes; the message shows them
     * as they are, bounded by the buffer. */
    return dlock_rlock_fail(l, code, "%s on \"%.64s\" (script %s): %s",
                            dlock_errname(code), l->name, s->name, detail);
}

int dlock_rlock_eval(dlock_rlock *l, dlock_reply **out,
                     const dlock_script *script, size_t nkeys, size_t nargs,
                     const char *const *argv)
{
    char detail[160] = "";
    dlock_reply *r = NULL;
    int rc;

    *out = NULL;
    rc = dlock_backend_eval(l->client->backend, &r, script, nkeys, nargs, argv,
                            NULL, detail, sizeof(detail));
    if (rc != 0)
        return dlock__eval_fail(l, rc, script, detail[0] ? detail : dlock_strerror(rc));
    if (r->type == DLOCK_REPLY_ERROR) {
        /* e.g. WRONGTYPE: another kind of value is stored under the name */
        snprintf(detail, sizeof(detail), "%s", r->str ? r->str : "error reply");
        dlock_reply_free(r);
        return dlock__eval_fail(l, DLOCK_EPROTO, script, detail);
    }
    *out = r;
    return 0;
}

int dlock_rlock_eval_acquire(dlock_rlock *l, dlock_reply **out,
                             const char *owner, int64_t lease_ms,
                             const dlock_script *renew,
                             const dlock_script *script, size_t nkeys,
                             size_t nargs, const char *const *argv)
{
    dlock_reply *r;
    int rc, acquired;

    *out = NULL;
    rc = dlock_hold_acquire_begin(l, owner, lease_ms, renew);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "out of memory before acquiring \"%.64s\"",
                                l->name);
    rc = dlock_rlock_eval(l, &r, script, nkeys, nargs, argv);
    acquired = rc == 0 && r->type == DLOCK_REPLY_NIL;
    dlock_hold_acquire_end(l, owner, lease_ms, acquired);
    if (rc != 0)
        return rc;
    if (acquired)
        dlock_reply_free(r);
    else
        *out = r;
    return 0;
}

int dlock_rlock_eval_release(dlock_rlock *l, const char *owner,
                             const dlock_script *script, size_t nkeys,
                             size_t nargs, const char *const *argv)
{
    dlock_reply *r;
    int rc;

    dlock_hold_release_begin(l, owner);
    rc = dlock_rlock_eval(l, &r, script, nkeys, nargs, argv);
    if (rc != 0) {
        dlock_hold_release_end(l, owner, DLOCK_HOLD_FAILED);
        return rc;
    }
    if (r->type == DLOCK_REPLY_NIL) {
        dlock_reply_free(r);
        rc = dlock_hold_missing(l, owner);
        return dlock_rlock_fail(l, rc, rc == DLOCK_ELOST
                                ? "\"%.64s\": the lease ran out or the lock was taken away"
                                : "\"%.64s\" is not held by this owner", l->name);
    }
    if (r->type != DLOCK_REPLY_INTEGER) {
        dlock_hold_release_end(l, owner, DLOCK_HOLD_FAILED);
        return dlock__unexpected_reply(l, script, r);
    }
    dlock_hold_release_end(l, owner, r->integer == 1 ? DLOCK_HOLD_ALL : DLOCK_HOLD_ONE);
    dlock_reply_free(r);
    return 0;
}

/* ---- the generic functions ------------------------------------------------ */

/* Checks l and resolves owner (NULL = the calling thread's) into buf. */
static int prepare(dlock_rlock *l, const char *owner, char *buf)
{
    int rc;

    if (!l || !l->methods || !l->client)
        return DLOCK_EINVAL;
    rc = dlock__client_check(l->client);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "lock object used in a fork() child");
    if (!owner) {
        dlock__client_owner(l->client, buf);
        return 0;
    }
    if (owner[0] == '\0' || strnlen(owner, DLOCK_OWNER_MAX) >= DLOCK_OWNER_MAX)
        return dlock_rlock_fail(l, DLOCK_EINVAL,
                                "owner id must be 1..%d bytes", DLOCK_OWNER_MAX - 1);
    memcpy(buf, owner, strlen(owner) + 1);
    return 0;
}

#define NOTSUP(l, slot)                                                       \
    dlock_rlock_fail(l, DLOCK_ENOTSUP, "%s locks do not support " slot,       \
                     (l)->methods->type)

static int acquire(dlock_rlock *l, const char *owner, int64_t wait_ms,
                   int64_t lease_ms)
{
    char who[DLOCK_OWNER_MAX];
    int rc = prepare(l, owner, who);

    if (rc != 0)
        return rc;
    if (lease_ms < 0)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "lease must be >= 0 ms (0: watchdog)");
    if (wait_ms < 0 && wait_ms != DLOCK_WAIT_FOREVER)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "wait must be >= 0 ms");
    if (!l->methods->acquire)
        return NOTSUP(l, "lock");
    return l->methods->acquire(l, who, wait_ms, lease_ms);
}

int dlock_lock(dlock_rlock *l, int64_t lease_ms)
{
    return acquire(l, NULL, DLOCK_WAIT_FOREVER, lease_ms);
}

int dlock_lock_as(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    if (!owner)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "owner is NULL") : DLOCK_EINVAL;
    return acquire(l, owner, DLOCK_WAIT_FOREVER, lease_ms);
}

static int try_acquire(dlock_rlock *l, const char *owner, int64_t wait_ms,
                       int64_t lease_ms)
{
    /* DLOCK_WAIT_FOREVER is -1: a negative wait from the caller is an
     * error here, never "forever". */
    if (wait_ms < 0)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "wait must be >= 0 ms") : DLOCK_EINVAL;
    return acquire(l, owner, wait_ms, lease_ms);
}

int dlock_try_lock(dlock_rlock *l, int64_t wait_ms, int64_t lease_ms)
{
    return try_acquire(l, NULL, wait_ms, lease_ms);
}

int dlock_try_lock_as(dlock_rlock *l, const char *owner, int64_t wait_ms,
                      int64_t lease_ms)
{
    if (!owner)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "owner is NULL") : DLOCK_EINVAL;
    return try_acquire(l, owner, wait_ms, lease_ms);
}

static int release(dlock_rlock *l, const char *owner)
{
    char who[DLOCK_OWNER_MAX];
    int rc = prepare(l, owner, who);

    if (rc != 0)
        return rc;
    if (!l->methods->release)
        return NOTSUP(l, "unlock");
    return l->methods->release(l, who);
}

int dlock_unlock(dlock_rlock *l)
{
    return release(l, NULL);
}

int dlock_unlock_as(dlock_rlock *l, const char *owner)
{
    if (!owner)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "owner is NULL") : DLOCK_EINVAL;
    return release(l, owner);
}

int dlock_force_unlock(dlock_rlock *l, int *existed)
{
    char who[DLOCK_OWNER_MAX];
    int dummy, rc = prepare(l, NULL, who);

    if (rc != 0)
        return rc;
    if (!l->methods->force_unlock)
        return NOTSUP(l, "force_unlock");
    return l->methods->force_unlock(l, existed ? existed : &dummy);
}

int dlock_is_locked(dlock_rlock *l, int *out)
{
    char who[DLOCK_OWNER_MAX];
    int rc = prepare(l, NULL, who);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if (!l->methods->is_locked)
        return NOTSUP(l, "is_locked");
    return l->methods->is_locked(l, out);
}

static int is_held(dlock_rlock *l, const char *owner, int *out)
{
    char who[DLOCK_OWNER_MAX];
    int rc = prepare(l, owner, who);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if (!l->methods->is_held)
        return NOTSUP(l, "is_held");
    return l->methods->is_held(l, who, out);
}

int dlock_is_held(dlock_rlock *l, int *out)
{
    return is_held(l, NULL, out);
}

int dlock_is_held_as(dlock_rlock *l, const char *owner, int *out)
{
    if (!owner)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "owner is NULL") : DLOCK_EINVAL;
    return is_held(l, owner, out);
}

static int hold_count(dlock_rlock *l, const char *owner, int64_t *out)
{
    char who[DLOCK_OWNER_MAX];
    int rc = prepare(l, owner, who);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if (!l->methods->hold_count)
        return NOTSUP(l, "hold_count");
    return l->methods->hold_count(l, who, out);
}

int dlock_hold_count(dlock_rlock *l, int64_t *out)
{
    return hold_count(l, NULL, out);
}

int dlock_hold_count_as(dlock_rlock *l, const char *owner, int64_t *out)
{
    if (!owner)
        return l ? dlock_rlock_fail(l, DLOCK_EINVAL, "owner is NULL") : DLOCK_EINVAL;
    return hold_count(l, owner, out);
}

int dlock_remain_ttl(dlock_rlock *l, int64_t *out)
{
    char who[DLOCK_OWNER_MAX];
    int rc = prepare(l, NULL, who);

    if (rc != 0)
        return rc;
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if (!l->methods->remain_ttl)
        return NOTSUP(l, "remain_ttl");
    return l->methods->remain_ttl(l, out);
}
