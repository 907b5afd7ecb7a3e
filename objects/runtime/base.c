/*
 * dlock — the RLock base: argument checking and dispatch of the generic lock
 * functions, and the services every lock type uses (naming keys, running
 * scripts with honest error mapping, remembering the last failure).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fiber.h"
#include "objects/runtime/base.h"
#include "objects/runtime/client.h"
#include "objects/runtime/holds.h"
#include "objects/runtime/metrics.h"
#include "objects/runtime/op.h"
#include "objects/runtime/pins.h"
#include "objects/types/names.h"

/* ---- the base ------------------------------------------------------------ */

static void err_locks_atfork_install(void);

int dlock_rlock_init(dlock_rlock *l, const dlock_rlock_methods *m,
                     dlock_client *c, const char *name)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    char why[DLOCK_ERRMSG_MAX];
    size_t n;

    /* Before any object can record a failure (see err_locks). */
    pthread_once(&once, err_locks_atfork_install);
    if (!l || !m || !c || !name)
        return DLOCK_EINVAL;
    if (dlock__client_check(c) != 0)
        return DLOCK_EFORKED;
    if (m->version < 1 || m->version > DLOCK_RLOCK_METHODS_VERSION)
        return dlock__client_refuse(c, DLOCK_EINVAL,
                                    "a method table of version %d (this library "
                                    "knows 1..%d)", m->version,
                                    DLOCK_RLOCK_METHODS_VERSION);
    n = strnlen(name, DLOCK_NAME_MAX + 1);
    if (n == 0 || n > DLOCK_NAME_MAX)
        return dlock__client_refuse(c, DLOCK_EINVAL, "a name is 1..%d bytes",
                                    DLOCK_NAME_MAX);
    if (dlock__name_check(m, name, n, why, sizeof(why)) != 0)
        return dlock__client_refuse(c, DLOCK_EINVAL, "%s", why);
    memset(l, 0, sizeof(*l));
    l->name = malloc(n + 1);
    if (!l->name)
        return DLOCK_ENOMEM;
    memcpy(l->name, name, n + 1);
    l->name_len = n;
    l->methods = m;
    l->client = c;
    dlock__client_ref(c);
    return 0;
}

int dlock__rlock_new(dlock_rlock **out, size_t size, const dlock_rlock_methods *m,
                     dlock_client *c, const char *name)
{
    dlock_rlock *l = calloc(1, size);
    int rc;

    *out = NULL;
    if (!l)
        return DLOCK_ENOMEM;
    rc = dlock_rlock_init(l, m, c, name);
    if (rc != 0) {
        free(l);
        return rc;
    }
    *out = l;
    return 0;
}

void dlock_rlock_fini(dlock_rlock *l)
{
    if (!l || !l->client)
        return;
    /* In a fork() child the registry's mutex may have been copied locked
     * (another parent thread was in it at the fork), and the client is
     * unusable there anyway: its holds are left to the child's exit. */
    if (dlock__client_check(l->client) == 0)
        dlock__holds_forget_lock(&l->client->holds, l);
    dlock__client_unref(l->client);
    l->client = NULL;
    free(l->errmsg);
    l->errmsg = NULL;
    free(l->name);
    l->name = NULL;
}

void dlock_rlock_free(dlock_rlock *l)
{
    const dlock_rlock_methods *m;

    /* Asynchronous operations in flight keep it: the last one's
     * callback frees it (objects/runtime/pins.h). */
    if (!l || dlock__pin_defer_free(l))
        return;
    m = l->methods;
    dlock_rlock_fini(l);
    if (m && m->destroy)
        m->destroy(l);
    else
        free(l);
}

/* The failure details of all objects share a few locks, picked by address:
 * a mutex per handle would cost more memory than the rest of the handle, and
 * recording a failure is rare and brief. */
#define ERR_LOCKS 32
static pthread_mutex_t err_locks[ERR_LOCKS] = {
#define DLOCK__M4 PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, \
                  PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER
    DLOCK__M4, DLOCK__M4, DLOCK__M4, DLOCK__M4,
    DLOCK__M4, DLOCK__M4, DLOCK__M4, DLOCK__M4,
#undef DLOCK__M4
};

static pthread_mutex_t *err_lock(const dlock_rlock *l)
{
    return &err_locks[((uintptr_t)l >> 4) % ERR_LOCKS];
}

/* A fork() child records failures too (every call there fails with
 * DLOCK_EFORKED, recorded on the object), so these locks must not be copied
 * into it held by another parent thread: fork() takes them all first and
 * releases them on both sides. */
static void err_locks_prepare(void)
{
    size_t i;

    for (i = 0; i < ERR_LOCKS; i++)
        pthread_mutex_lock(&err_locks[i]);
}

static void err_locks_release(void)
{
    size_t i;

    for (i = ERR_LOCKS; i > 0; i--)
        pthread_mutex_unlock(&err_locks[i - 1]);
}

static void err_locks_atfork_install(void)
{
    pthread_atfork(err_locks_prepare, err_locks_release, err_locks_release);
}

/* *buf = text, reallocated to its size (kept as it was without memory:
 * a detail lost is not an error of the call). */
static void fit_text(char **buf, const char *text)
{
    size_t n = strlen(text) + 1;
    char *p = realloc(*buf, n);

    if (p) {
        memcpy(p, text, n);
        *buf = p;
    }
}

int dlock_rlock_fail(dlock_rlock *l, int code, const char *fmt, ...)
{
    char text[DLOCK_ERRMSG_MAX];
    dlock__carried *k = dlock__carried_here();
    va_list ap;

    if (!l)
        return code;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* Texts sized to fit (an object or an operation pending by the
     * hundred thousand keeps one each; dlock_errmsg copies under the
     * lock). */
    pthread_mutex_lock(err_lock(l));
    fit_text(&l->errmsg, text);
    pthread_mutex_unlock(err_lock(l));
    /* An asynchronous operation keeps its own copy: by the time it ends,
     * another one may have written the object's. */
    if (k)
        fit_text(&k->detail, text);
    return code;
}

const char *dlock_errmsg(dlock_rlock *l)
{
    /* The text handed back, the calling thread's own copy (valid until its
     * next dlock_errmsg): a return buffer, no state of any call. */
    static __thread char copy[DLOCK_ERRMSG_MAX];

    if (!l)
        return "lock object is NULL";
    pthread_mutex_lock(err_lock(l));
    snprintf(copy, sizeof(copy), "%s", l->errmsg ? l->errmsg : "");
    pthread_mutex_unlock(err_lock(l));
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

int dlock_rlock_eval(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                     const dlock_script *script, size_t nkeys, size_t nargs,
                     const char *const *argv)
{
    return dlock__rlock_eval_bin(l, op, out, script, nkeys, nargs, argv, NULL);
}

/* The lock's view of an eval's outcome: a failure or an error reply
 * recorded on l (and op), an ESYNC judged (op.c), or the reply in *out. */
static int eval_judge(dlock_rlock *l, dlock_op *op, int rc, dlock_reply *r,
                      const dlock_script *script, char *detail, size_t len,
                      dlock_reply **out)
{
    if (rc == DLOCK_ESYNC && r) {
        /* It ran: a judged call sees the reply (sync.c); any other one
         * reports the shortfall, its change made. */
        if (dlock__op_judged(op, detail)) {
            rc = 0;
        } else {
            char done[200];
            dlock_reply_free(r);
            snprintf(done, sizeof done, "done, but not synced: %s", detail);
            return dlock__op_note_failure(op, l, dlock__eval_fail(l, rc, script, done));
        }
    }
    if (rc != 0)
        return dlock__op_note_failure(op, l, dlock__eval_fail(l, rc, script,
                                      detail[0] ? detail : dlock_strerror(rc)));
    if (r->type == DLOCK_REPLY_ERROR) {
        /* e.g. WRONGTYPE: another kind of value is stored under the name */
        snprintf(detail, len, "%s", r->str ? r->str : "error reply");
        dlock_reply_free(r);
        return dlock__op_note_failure(op, l, dlock__eval_fail(l, DLOCK_EPROTO, script,
                                                              detail));
    }
    *out = r;
    return 0;
}

int dlock__rlock_eval_bin(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                          const dlock_script *script, size_t nkeys, size_t nargs,
                          const char *const *argv, const size_t *argvlen)
{
    char detail[512] = "";
    dlock_reply *r = NULL;
    int rc;

    *out = NULL;
    rc = dlock_backend_eval_until(l->client->backend, &r, script, nkeys, nargs,
                                  argv, argvlen, dlock__op_cap(op),
                                  detail, sizeof(detail));
    return eval_judge(l, op, rc, r, script, detail, sizeof detail, out);
}

int dlock__rlock_can_split(dlock_rlock *l)
{
    return dlock_backend_can_split(l->client->backend);
}

void dlock__rlock_eval_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h,
                            const dlock_script *script, size_t nkeys,
                            size_t nargs, const char *const *argv)
{
    dlock_backend *b = l->client->backend;
    char detail[512] = "";

    h->script = script;
    h->op = op;
    h->p = NULL;
    h->r = NULL;
    h->rc = dlock_backend_eval_send(b, &h->p, script, nkeys, nargs, argv, NULL,
                                    dlock__op_cap(op), detail, sizeof detail);
    if (h->rc == 0)
        return;
    if (h->rc == DLOCK_ENOTSUP) {
        /* A backend without split calls: the whole call now. */
        h->rc = dlock__rlock_eval_bin(l, op, &h->r, script, nkeys, nargs, argv, NULL);
        return;
    }
    /* Failed before anything was sent: recorded on l as an eval's. */
    h->rc = eval_judge(l, op, h->rc, NULL, script, detail, sizeof detail, &h->r);
}

int dlock__rlock_eval_receive(dlock_rlock *l, dlock__eval_half *h,
                              dlock_reply **out)
{
    char detail[512] = "";
    dlock_reply *r = NULL;
    int rc;

    *out = NULL;
    if (!h->p) {
        *out = h->r;
        h->r = NULL;
        return h->rc;
    }
    rc = dlock_backend_eval_receive(l->client->backend, h->p, &r, detail,
                                    sizeof detail);
    h->p = NULL;
    return eval_judge(l, h->op, rc, r, h->script, detail, sizeof detail, out);
}

int dlock__unexpected_reply(dlock_rlock *l, const dlock_script *s, dlock_reply *r)
{
    int type = r ? (int)r->type : -1;

    dlock_reply_free(r);
    return dlock_rlock_fail(l, DLOCK_EPROTO, "script %s: unexpected reply type %d",
                            s->name, type);
}

/* An eval's integer answer (rc, r: how the eval went). */
static int integer_of(dlock_rlock *l, const dlock_script *script, int rc,
                      dlock_reply *r, int64_t *out)
{
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, script, r);
    *out = r->integer;
    dlock_reply_free(r);
    return 0;
}

int dlock_rlock_eval_integer(dlock_rlock *l, dlock_op *op, int64_t *out,
                             const dlock_script *script, size_t nkeys,
                             size_t nargs, const char *const *argv)
{
    dlock_reply *r;
    int rc = dlock_rlock_eval(l, op, &r, script, nkeys, nargs, argv);

    return integer_of(l, script, rc, r, out);
}

int dlock__rlock_receive_integer(dlock_rlock *l, dlock__eval_half *h,
                                 int64_t *out)
{
    const dlock_script *script = h->script;
    dlock_reply *r;
    int rc = dlock__rlock_eval_receive(l, h, &r);

    return integer_of(l, script, rc, r, out);
}

int dlock_rlock_eval_acquire(dlock_rlock *l, dlock_op *op, dlock_reply **out,
                             int64_t lease_ms, const dlock_script *renew,
                             const dlock_script *script, size_t nkeys,
                             size_t nargs, const char *const *argv)
{
    const char *owner = op->owner;
    dlock_reply *r;
    int rc, acquired;

    *out = NULL;
    rc = dlock_hold_acquire_begin(l, owner, lease_ms, renew);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "out of memory before acquiring \"%.64s\"",
                                l->name);
    rc = dlock_rlock_eval(l, op, &r, script, nkeys, nargs, argv);
    dlock__op_attempt_end(op, rc);
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

void dlock__rlock_release_send(dlock_rlock *l, dlock_op *op, dlock__eval_half *h,
                               const dlock_script *script, size_t nkeys,
                               size_t nargs, const char *const *argv)
{
    dlock_hold_release_begin(l, op->owner);
    dlock__rlock_eval_send(l, op, h, script, nkeys, nargs, argv);
}

/* A release script's answer (rc, r: how the eval went), for the hold. */
static int release_answer(dlock_rlock *l, const char *owner,
                          const dlock_script *script, int rc, dlock_reply *r)
{
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

int dlock__rlock_release_receive(dlock_rlock *l, dlock__eval_half *h)
{
    const dlock_script *script = h->script;
    const char *owner = h->op->owner;
    dlock_reply *r;
    int rc = dlock__rlock_eval_receive(l, h, &r);

    return release_answer(l, owner, script, rc, r);
}

/* One call on the stack, not the halves: a split call costs a heap copy
 * of its arguments, which only a caller with several nodes earns back. */
int dlock_rlock_eval_release(dlock_rlock *l, dlock_op *op,
                             const dlock_script *script, size_t nkeys,
                             size_t nargs, const char *const *argv)
{
    dlock_reply *r;
    int rc;

    dlock_hold_release_begin(l, op->owner);
    rc = dlock_rlock_eval(l, op, &r, script, nkeys, nargs, argv);
    return release_answer(l, op->owner, script, rc, r);
}

/* ---- the generic functions ------------------------------------------------ */

#define SELF DLOCK__OWNER_SELF
#define GIVEN DLOCK__OWNER_GIVEN
#define NO_OUT DLOCK__NO_OUT

int dlock_rlock_check_owner(dlock_rlock *l, const char *owner)
{
    if (!l || !l->methods)
        return DLOCK_EINVAL;
    if (!owner || owner[0] == '\0' || strnlen(owner, DLOCK_OWNER_MAX) >= DLOCK_OWNER_MAX)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "owner id must be 1..%d bytes",
                                DLOCK_OWNER_MAX - 1);
    return DLOCK_RLOCK_HAS_SLOT(l->methods, check_owner)
               ? l->methods->check_owner(l, owner) : 0;
}

/* The checks every generic call makes before dispatching: l usable, not in
 * a fork() child, the owner (the calling thread's, or a given one that must
 * be an id the lock takes: dlock_rlock_check_owner) resolved into who, out
 * present, and the slot implemented. */
int dlock__rlock_enter(dlock_rlock *l, int mode, const char *owner, char *who,
                       const void *out, const char *slot_name, int has_slot)
{
    int rc;

    if (!l || !l->methods || !l->client)
        return DLOCK_EINVAL;
    rc = dlock__client_check(l->client);
    if (rc != 0)
        return dlock_rlock_fail(l, rc, "lock object used in a fork() child");
    /* Every type alike, also one whose steps run on other threads (a
     * Redlock's fan-out), which the backend's own refusal would miss. */
    if (dlock__blocking_refused())
        return dlock_rlock_fail(l, DLOCK_EDEADLK, DLOCK__REFUSED_DETAIL);
    if (mode == SELF) {
        dlock__client_owner(l->client, who);
    } else if ((rc = dlock_rlock_check_owner(l, owner)) != 0) {
        return rc;
    } else {
        memcpy(who, owner, strlen(owner) + 1);
    }
    if (!out)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "out is NULL");
    if (!has_slot)
        return dlock_rlock_fail(l, DLOCK_ENOTSUP, "%s locks do not support %s",
                                l->methods->type, slot_name);
    return 0;
}

/* Declares who and rc, and returns from the caller when a check fails.
 * ENTER_IF: has_slot evaluated only for a usable l (a slot past the
 * table's version must not be read). */
#define ENTER_IF(l, mode, owner, out, slot_name, has_slot)                     \
    char who[DLOCK_OWNER_MAX];                                                \
    int rc = dlock__rlock_enter(l, mode, owner, who, out, slot_name,           \
                   (l) && (l)->methods && (has_slot));                        \
    if (rc != 0)                                                              \
        return rc
#define ENTER(l, mode, owner, out, slot)                                       \
    ENTER_IF(l, mode, owner, out, #slot, (l)->methods->slot != NULL)

int dlock__time_arg(dlock_rlock *l, const char *what, int64_t ms, int64_t min_ms)
{
    if (ms >= min_ms && ms <= DLOCK_TIME_MAX_MS)
        return 0;
    return dlock_rlock_fail(l, DLOCK_EINVAL, "%s must be %" PRId64 "..%" PRId64
                            " ms (got %" PRId64 ")", what, min_ms,
                            DLOCK_TIME_MAX_MS, ms);
}

int dlock__rlock_check_times(dlock_rlock *l, int64_t wait_ms, int64_t lease_ms)
{
    int rc = dlock__time_arg(l, "lease (0: watchdog)", lease_ms, 0);

    if (rc != 0)
        return rc;
    /* DLOCK_WAIT_FOREVER comes from the lock calls only: the try_lock calls
     * turn a negative wait into INT64_MIN, an error, never "forever". */
    if (wait_ms < 0 && wait_ms != DLOCK_WAIT_FOREVER)
        return dlock_rlock_fail(l, DLOCK_EINVAL, "wait must be >= 0 ms");
    return 0;
}

static int acquire(dlock_rlock *l, int mode, const char *owner, int64_t wait_ms,
                   int64_t lease_ms)
{
    int64_t start;
    dlock_op op;

    ENTER(l, mode, owner, NO_OUT, acquire);
    rc = dlock__rlock_check_times(l, wait_ms, lease_ms);
    if (rc != 0)
        return rc;
    start = dlock_clock_now(l->client->clock);
    dlock__op_init(&op, who);
    rc = l->methods->acquire(l, &op, wait_ms, lease_ms);
    if (rc == 0) {
        DLOCK__COUNT_NAMED(l->client, acquisitions, l->name, l->name_len);
        dlock__metrics_observe(&l->client->metrics.wait_ms,
                               dlock_clock_now(l->client->clock) - start);
    }
    return rc;
}

int dlock_lock(dlock_rlock *l, int64_t lease_ms)
{
    return acquire(l, SELF, NULL, DLOCK_WAIT_FOREVER, lease_ms);
}

int dlock_lock_as(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return acquire(l, GIVEN, owner, DLOCK_WAIT_FOREVER, lease_ms);
}

int dlock_try_lock(dlock_rlock *l, int64_t wait_ms, int64_t lease_ms)
{
    return acquire(l, SELF, NULL, wait_ms < 0 ? INT64_MIN : wait_ms, lease_ms);
}

int dlock_try_lock_as(dlock_rlock *l, const char *owner, int64_t wait_ms,
                      int64_t lease_ms)
{
    return acquire(l, GIVEN, owner, wait_ms < 0 ? INT64_MIN : wait_ms, lease_ms);
}

/* An unlock not synced to enough replicas keeps its effect and says
 * DLOCK_ESYNC; the hold bookkeeping must still see it done (op.c). */
static int release(dlock_rlock *l, int mode, const char *owner)
{
    dlock_op op;

    ENTER(l, mode, owner, NO_OUT, release);
    dlock__op_init(&op, who);
    return dlock__op_release(l, &op);
}

int dlock_unlock(dlock_rlock *l)
{
    return release(l, SELF, NULL);
}

int dlock_unlock_as(dlock_rlock *l, const char *owner)
{
    return release(l, GIVEN, owner);
}

/* ---- lease control -------------------------------------------------------- */

static int extend(dlock_rlock *l, int mode, const char *owner, int64_t lease_ms)
{
    dlock_lost_fn fn;
    void *arg;

    ENTER_IF(l, mode, owner, NO_OUT, "extend",
             DLOCK_RLOCK_HAS_SLOT((l)->methods, extend));
    rc = dlock__time_arg(l, "lease (0: watchdog)", lease_ms, 0);
    if (rc != 0)
        return rc;
    rc = l->methods->extend(l, who, lease_ms);
    if (rc != DLOCK_ENOTOWNER)
        return rc;
    /* Not held now: lost if this object believed it held (the watchdog
     * stops renewing it; the callback is for what the application did
     * not ask about, so this call's answer is the report). */
    if (dlock__hold_lost(l->client, l, l->name, who, 0, 0, &fn, &arg))
        return dlock_rlock_fail(l, DLOCK_ELOST, "\"%.64s\": the lease ran out or "
                                "the lock was taken away; not extended", l->name);
    return dlock_rlock_fail(l, DLOCK_ENOTOWNER, "\"%.64s\" is not held by this owner",
                            l->name);
}

int dlock_extend(dlock_rlock *l, int64_t lease_ms)
{
    return extend(l, SELF, NULL, lease_ms);
}

int dlock_extend_as(dlock_rlock *l, const char *owner, int64_t lease_ms)
{
    return extend(l, GIVEN, owner, lease_ms);
}

int dlock_rlock_extend_by_renewal(dlock_rlock *l, const char *owner,
                                  int64_t lease_ms, const dlock_script *renew)
{
    char lease[32];
    const char *argv[3];
    dlock_reply *r;
    int rc;

    if (!l || !l->client || !owner || !renew)
        return DLOCK_EINVAL;
    snprintf(lease, sizeof(lease), "%" PRId64,
             lease_ms > 0 ? lease_ms : l->client->opts.watchdog_timeout_ms);
    argv[0] = l->name;
    argv[1] = lease;
    argv[2] = owner;
    rc = dlock_rlock_eval(l, NULL, &r, renew, 1, 2, argv);
    if (rc != 0)
        return rc;
    if (r->type != DLOCK_REPLY_ARRAY || r->n != 1 ||
        r->elems[0]->type != DLOCK_REPLY_INTEGER)
        return dlock__unexpected_reply(l, renew, r);
    rc = r->elems[0]->integer == 1 ? 0 : DLOCK_ENOTOWNER;
    dlock_reply_free(r);
    if (rc == 0)
        dlock__hold_extended(l, owner, lease_ms, renew, NULL);
    return rc;
}

int dlock_rlock_set_on_lost(dlock_rlock *l, dlock_lost_fn fn, void *arg)
{
    if (!l || !l->client)
        return DLOCK_EINVAL;
    if (dlock__client_check(l->client) != 0)
        return dlock_rlock_fail(l, DLOCK_EFORKED, "lock object used in a fork() child");
    pthread_mutex_lock(&l->client->holds.mutex);
    l->on_lost = fn;
    l->on_lost_arg = arg;
    pthread_mutex_unlock(&l->client->holds.mutex);
    return 0;
}

int dlock_force_unlock(dlock_rlock *l, int *existed)
{
    int dummy;
    ENTER(l, SELF, NULL, NO_OUT, force_unlock);
    return l->methods->force_unlock(l, existed ? existed : &dummy);
}

int dlock_is_locked(dlock_rlock *l, int *out)
{
    ENTER(l, SELF, NULL, out, is_locked);
    return l->methods->is_locked(l, out);
}

int dlock_is_held(dlock_rlock *l, int *out)
{
    ENTER(l, SELF, NULL, out, is_held);
    return l->methods->is_held(l, who, out);
}

int dlock_is_held_as(dlock_rlock *l, const char *owner, int *out)
{
    ENTER(l, GIVEN, owner, out, is_held);
    return l->methods->is_held(l, who, out);
}

int dlock_hold_count(dlock_rlock *l, int64_t *out)
{
    ENTER(l, SELF, NULL, out, hold_count);
    return l->methods->hold_count(l, who, out);
}

int dlock_hold_count_as(dlock_rlock *l, const char *owner, int64_t *out)
{
    ENTER(l, GIVEN, owner, out, hold_count);
    return l->methods->hold_count(l, who, out);
}

int dlock_remain_ttl(dlock_rlock *l, int64_t *out)
{
    ENTER(l, SELF, NULL, out, remain_ttl);
    return l->methods->remain_ttl(l, out);
}
