/*
 * dlock — MultiLock: all of several locks, or none (Redisson's
 * RedissonMultiLock).
 *
 * A MultiLock is a dlock_rlock *: every generic function of
 * api/dlock/lock.h works on it. Its members may be of any lock type, on
 * any clients and backends (a MultiLock or a Redlock included).
 *
 * lock / try_lock acquire the members in the order given, each with what is
 * left of the call's budget (the whole call returns within wait_ms + the
 * first member's client's budget_slack_ms). When one fails, the members
 * already taken are released (and the failing one too after a transport
 * error: a reply that never came may have been a grant), and while budget
 * remains it starts again; no partial hold is left behind. Acquire with
 * the same order everywhere, or two MultiLocks sharing members can wait on
 * each other until their budgets end (a dlock_lock without budget: for
 * ever).
 *
 * The owner id (the calling thread's on the first member's client, or the
 * given one) is used on every member, so an explicit id that a member's
 * type reserves (a read-write lock half: "mode", ids ending in ":write") is
 * DLOCK_EINVAL before any member is sent anything; the detail names the
 * member. lease_ms goes to every member (0: each
 * member's client's watchdog renews it; a lost member is reported by that
 * client's on_lost with the member's name).
 *
 * unlock releases one hold of every member (last first): 0, DLOCK_ENOTOWNER
 * (no member held), DLOCK_ELOST (some member was no longer held), or the
 * first member's error (the others are still released). is_held: every
 * member held; hold_count and remain_ttl: the minimum over the members (-2
 * when any is not held); is_locked: any member is locked (someone holds at
 * least part of it). force_unlock: every member; *existed when any was.
 * The detail of a failure names the member.
 *
 * dlock_extend / dlock_extend_as: every member's own extend, with the
 * MultiLock's owner id and lease_ms (0: each member's client's watchdog).
 * The MultiLock's hold is extended only as a whole:
 *  - DLOCK_ENOTSUP, before anything is sent, when a member's type has no
 *    extend (a MultiLock member: when one of its own members has none).
 *  - Then every member's hold is read first (one round trip each). If any
 *    member is not held, no member is extended: DLOCK_ELOST when the
 *    MultiLock is held in part or a member's handle knew of a hold now
 *    gone (lease ran out, force unlock; the detail names the first such
 *    member), DLOCK_ENOTOWNER when no member is held. The members still
 *    held keep their holds and leases: the MultiLock is not held as a
 *    whole, and its unlock releases them and says DLOCK_ELOST.
 *  - Else each member is extended, first to last. A member whose hold
 *    ended between the read and its extension (its lease ran out just
 *    then) stops it there with DLOCK_ELOST, and a member's error (a
 *    transport error) with that error: the members before it have the new
 *    lease, the others their old one, and every member but a lost one is
 *    still held. After DLOCK_ELOST unlock; after an error, extend again or
 *    unlock.
 * 0 means every member was held and took the new lease; the hold counts
 * are unchanged.
 *
 * Not supported (DLOCK_ENOTSUP): dlock_rlock_state, and the object calls
 * of api/dlock/object.h (use the members').
 *
 * Ownership: the member handles are borrowed (the array is copied): keep
 * them until the MultiLock is freed; freeing it frees none of them.
 * Thread-safety: as its members (every built-in type: any threads).
 */
#ifndef DLOCK_MULTILOCK_H
#define DLOCK_MULTILOCK_H

#include "export.h"

#include "types.h"

#include <stddef.h>

#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most members of a MultiLock. */
#define DLOCK_MULTILOCK_MAX 1024

/* Creates a MultiLock over locks[0..n) (1..DLOCK_MULTILOCK_MAX non-NULL
 * handles that support every lock slot). Does not touch the backends.
 * 0, DLOCK_EINVAL (out set to NULL), DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_multilock_new(dlock_rlock **out, dlock_rlock *const *locks, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_MULTILOCK_H */
