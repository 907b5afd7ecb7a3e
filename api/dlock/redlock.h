/*
 * dlock — Redlock: one lock over several independent Redis servers (or
 * mock stores), held when a majority of them grant it.
 *
 * A Redlock is a dlock_rlock *: every generic function of api/dlock/lock.h
 * works on it. It is made of one fenced reentrant lock called name on each
 * of the n clients ("nodes": independent masters, no replication between
 * them; n odd, 3 or 5 usually). The data on each node is the reentrant
 * lock's (api/dlock/reentrant.h) plus the fenced lock's token counter.
 *
 * Acquisition (one attempt): the acquire script goes to every node at
 * once, each call cut off after the node timeout (default
 * DLOCK_REDLOCK_NODE_TIMEOUT_MS, far below any sensible lease), so an
 * attempt costs the slowest node's round trip, not n of them. It succeeds
 * when at least n/2 + 1 nodes granted it and the validity left,
 *     lease - elapsed - drift, drift = lease x 0.01 + 2 ms,
 * is positive (lease 0: the watchdog timeout of the first client). Else the
 * attempt is undone on every node that granted it or did not answer (a
 * reply that never came may have been a grant) and, while the budget
 * lasts, retried after a release message from any node, the holders' TTL
 * or a random delay (a split vote between contenders).
 *
 * Lease 0: the first client's watchdog (api/dlock/client.h: the one thread
 * that renews that client's lease-0 holds, this handle's among them)
 * renews every watchdog_timeout/3 on every node at once with
 * extend-or-set: a node that lost the key (restarted without persistence)
 * gets it back. When fewer than a majority still hold it, the hold is
 * lost: on_lost is called as for every lock (this handle's,
 * dlock_rlock_set_on_lost, else the first client's; on the watchdog
 * thread, with name and owner; it may free this handle) and the owner's
 * unlock returns DLOCK_ELOST. The first client's max_hold_ms caps the
 * renewal, as for every lock.
 *
 * dlock_extend / dlock_extend_as (api/dlock/lock.h): the new lease goes
 * to every node at once with the renewal's extend step (a node that lost
 * the key is not given it again), each cut off at the node timeout. 0 when
 * a majority took it and the validity left (lease - elapsed - drift, as for
 * an acquisition) is positive: the hold is then good for that validity, as
 * a fresh acquisition is. Lease 0 hands the hold to the watchdog (the
 * first client's watchdog timeout, renewed as above); a lease takes it
 * off, as for every lock (a renewal already in flight may still apply the
 * watchdog's lease once). Failures:
 *  - DLOCK_ELOST: a majority of nodes answered that the owner does not
 *    hold it (lease ran out, force unlock, nodes restarted empty): the
 *    hold this handle had is lost, as the watchdog would find it.
 *    This call's answer is the report (on_lost is not called for it); the
 *    next unlock says DLOCK_ELOST too and releases what is left on the
 *    nodes. DLOCK_ENOTOWNER instead when this handle knew of no hold of
 *    the owner.
 *  - DLOCK_ECONN / DLOCK_ETIMEDOUT: too few nodes answered to tell (the
 *    detail names the nodes that failed and why). Nothing is known lost,
 *    so the hold is kept as it was; the nodes that answered have the new
 *    lease, the others the old one. Ask again, or unlock.
 *  - DLOCK_ETIMEDOUT ("no validity"): a majority took the new lease, but
 *    the round took so long (or the lease is so short: a 2 ms lease is all
 *    drift) that no validity is left: the hold cannot be counted on. The
 *    nodes keep the new lease, and the next unlock tells whether it ran
 *    out.
 * Owner ids as for the other calls; the hold count and the fencing token
 * are unchanged.
 *
 * The node timeout bounds the acquisition attempts (and their undo), the
 * renewals and the extensions: a stalled node costs an attempt that long,
 * never the whole budget. unlock, force_unlock and the reads go to every
 * node at once too, bounded by the backends' own timeouts, as for every
 * lock (a release cut short would leave the lock there for a lease).
 *
 * Answers: lock/try_lock as usual; DLOCK_ECONN or DLOCK_ETIMEDOUT when too
 * few nodes could be reached for a majority (the detail names the nodes
 * that failed and why). unlock releases one hold on every node: 0 when a
 * majority released it, DLOCK_ELOST when this handle's hold had been lost
 * or a majority no longer had it, DLOCK_ENOTOWNER when never held. Reads
 * ask every node: is_locked / is_held = a majority says so; hold_count and
 * remain_ttl = the value a majority reaches (the (n/2+1)-th largest).
 * Nodes that do not answer count as "not held"; fewer than a majority of
 * answers is an error.
 *
 * Owner ids: the calling thread's id on the first client (or the given
 * one) is used on every node.
 *
 * Budgets: a call with a wait returns within wait + the first client's
 * budget_slack_ms, as every lock's; that cap also bounds each node's
 * share, so a try_lock with wait 0 gives each node at most
 * min(node timeout, budget_slack_ms).
 *
 * Not supported (DLOCK_ENOTSUP): dlock_rlock_state, and the object calls
 * of api/dlock/object.h through dlock_rlock_object (a Redlock has no keys
 * of its own; make a fenced lock handle per node for those).
 *
 * Fencing (dlock_redlock_token): every granting node increments its token
 * counter; the acquisition's token is the largest of them, and when the
 * granting nodes disagree the smaller counters are raised to it before the
 * call returns. Any later majority shares at least one node with this one,
 * so a later acquisition's token is larger, even when the majority is made
 * of other nodes. Limits: a node restarted without persistence forgets its
 * counter (and its locks), so the guarantee holds only while nodes keep
 * their data (appendonly with fsync) or a restarted node stays out for a
 * lease; and, as for every lease-based lock, a process paused past its
 * validity may still act: the token is what lets the protected resource
 * refuse it (it must remember the largest token seen).
 *
 * Honest limits of Redlock: its safety assumes bounded clock drift between
 * the nodes and the client (the drift term) and no pause of the holder
 * longer than the validity; use the token for correctness, not the lock
 * alone.
 *
 * Lifetime and threads: the handle keeps the clients alive; all clients
 * must tell time with the same clock (real time, or one virtual clock). A
 * Redlock may be used by any number of threads at once. Freeing it stops
 * the renewal of its holds (never the remote locks).
 */
#ifndef DLOCK_REDLOCK_H
#define DLOCK_REDLOCK_H

#include "export.h"

#include "types.h"

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most nodes of a Redlock. */
#define DLOCK_REDLOCK_MAX_NODES 64
/* The default per-node timeout of an attempt and a renewal. */
#define DLOCK_REDLOCK_NODE_TIMEOUT_MS 200

/* Creates a Redlock called name over clients[0..n) (1..DLOCK_REDLOCK_MAX_NODES
 * distinct clients, each on its own server). Does not touch the backends.
 * The handle keeps the clients alive; the array itself is copied.
 * 0, DLOCK_EINVAL (with out set: NULL clients, n out of range, a client
 * given twice, a bad name), DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_redlock_new(dlock_rlock **out, dlock_client *const *clients, size_t n,
                                const char *name);

/* Sets the per-node timeout (1..DLOCK_TIME_MAX_MS ms) for the calls that
 * start afterwards. 0 or DLOCK_EINVAL (not a Redlock, out of range). */
DLOCK_API int dlock_redlock_set_node_timeout(dlock_rlock *l, int64_t ms);

/* The fencing token of the calling thread's (or owner's) latest
 * acquisition through this handle, while it holds the lock (see above).
 * Never blocks. 0, DLOCK_ENOTOWNER (not held through this handle),
 * DLOCK_EINVAL (not a Redlock). */
DLOCK_API int dlock_redlock_token(dlock_rlock *l, int64_t *out);
DLOCK_API int dlock_redlock_token_as(dlock_rlock *l, int64_t *out, const char *owner);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_REDLOCK_H */
