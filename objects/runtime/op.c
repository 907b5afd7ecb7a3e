/*
 * dlock — an operation's context (op.h: struct dlock_op): the owner,
 * the deadline and cap of its round trips, the replica-sync verdict of its
 * writes and its failure detail, carried by the call from step to step
 * instead of being kept by the thread that runs it, so that an operation
 * can be started on one thread and finished on another.
 *
 * Replica sync: the backend reports DLOCK_ESYNC together with the script's
 * reply (the script ran). Most calls just return DLOCK_ESYNC (the change is
 * made; the eval records the detail). Two kinds of call must see the reply
 * and judge themselves, and open a judged region of their op: an
 * acquisition (the wait rolls it back, and the hold bookkeeping must first
 * learn that it succeeded) and a release of a lock (the hold bookkeeping
 * must learn that it was released).
 */
#include <stdio.h>
#include <string.h>

#include "objects/runtime/op.h"

#include "core/fiber.h"
#include "dlock/sys/clock.h"

dlock__carried *dlock__carried_here(void)
{
    dlock__fiber *f = dlock__fiber_current();

    return f ? dlock__fiber_data(f) : NULL;
}

int64_t dlock__op_wait_start(dlock_clock *clk, int64_t wait_ms)
{
    dlock__carried *k = wait_ms > 0 ? dlock__carried_here() : NULL;
    int64_t now = dlock_clock_now(clk);

    if (!k || k->start_ms == INT64_MIN)
        return now;
    now = k->start_ms < now ? k->start_ms : now;
    k->start_ms = INT64_MIN;
    return now;
}

void dlock__op_init(dlock_op *op, const char *owner)
{
    op->owner = owner;
    op->deadline_ms = INT64_MAX;
    op->cap_ms = INT64_MAX;
    op->judging = 0;
    op->unsynced = 0;
    op->sync_detail[0] = '\0';
    op->code = 0;
    op->detail = NULL;
    op->detail_len = 0;
    op->unsure = 0;
}

void dlock__op_attempt_end(dlock_op *op, int rc)
{
    if (op)
        op->unsure = rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT;
}

const char *dlock_op_owner(const dlock_op *op)
{
    return op ? op->owner : NULL;
}

int64_t dlock__op_cap(const dlock_op *op)
{
    return op ? op->cap_ms : INT64_MAX;
}

int64_t dlock__op_cap_within(dlock_op *op, int64_t cap_ms)
{
    int64_t outer = op->cap_ms;

    if (cap_ms < outer)
        op->cap_ms = cap_ms;
    return outer;
}

void dlock__op_cap_restore(dlock_op *op, int64_t outer)
{
    op->cap_ms = outer;
}

void dlock__op_child(dlock_op *child, const dlock_op *parent, int64_t cap_ms)
{
    dlock__op_init(child, parent ? parent->owner : NULL);
    child->deadline_ms = parent ? parent->deadline_ms : INT64_MAX;
    child->cap_ms = dlock__op_cap(parent);
    dlock__op_cap_within(child, cap_ms);
    child->judging = parent ? parent->judging : 0;
}

void dlock__op_merge(dlock_op *parent, const dlock_op *child)
{
    if (!parent || !child->unsynced || !parent->judging)
        return;
    parent->unsynced = 1;
    memcpy(parent->sync_detail, child->sync_detail, sizeof parent->sync_detail);
}

int dlock__op_judge_begin(dlock_op *op)
{
    int outer = op->judging;

    op->judging = 1;
    op->unsynced = 0;
    return outer;
}

int dlock__op_judge_end(dlock_op *op, int outer, char *detail, size_t len)
{
    int was = op->unsynced;

    if (was && detail && len > 0)
        snprintf(detail, len, "%s", op->sync_detail);
    op->unsynced = 0;
    op->judging = outer;
    return was;
}

void dlock__op_clear_note(dlock_op *op)
{
    op->unsynced = 0;
}

int dlock__op_judged(dlock_op *op, const char *detail)
{
    if (!op || !op->judging)
        return 0;
    op->unsynced = 1;
    snprintf(op->sync_detail, sizeof op->sync_detail, "%s", detail);
    return 1;
}

int dlock__op_note_failure(dlock_op *op, const dlock_rlock *l, int code)
{
    if (op) {
        op->code = code;
        if (op->detail && op->detail_len > 0)
            snprintf(op->detail, op->detail_len, "%s", dlock_errmsg((dlock_rlock *)l));
    }
    return code;
}

int dlock__op_release(dlock_rlock *l, dlock_op *op)
{
    char detail[sizeof op->sync_detail];
    int outer = dlock__op_judge_begin(op);
    int rc = l->methods->release(l, op);

    if (!dlock__op_judge_end(op, outer, detail, sizeof detail) || rc != 0)
        return rc;
    return dlock_rlock_fail(l, DLOCK_ESYNC, "\"%.64s\": released, but not synced: %s",
                            l->name, detail);
}

int64_t dlock__add_sat(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}
