/*
 * dlock — the read-write lock: shared readers, one exclusive writer.
 *
 * A read-write lock is two lock objects under one name: the read half and
 * the write half. Each is an independent dlock_rlock * with the whole RLock
 * API (api/dlock/lock.h): lock, try_lock, unlock, force_unlock, the reads,
 * the *_as variants, free. Make the halves you need; they need not come from
 * the same client, and freeing one never affects the other.
 *
 * Redisson-compatible layout (a Java RReadWriteLock on the same name sees
 * the same lock): a hash at name with field "mode" = "read" | "write", one
 * field per reading owner ("<owner>" = its read hold count) and the writer's
 * field ("<owner>:write" = its write hold count); one expiring marker key per
 * read hold, "{name}:<owner>:rwlock_timeout:<k>" for the owner's k-th hold
 * ("name:<owner>:..." when name already contains '{'). Waiters of both halves
 * are woken on "redisson_rwlock:{name}": a read unlock publishes "0", a write
 * unlock "1".
 *
 * Semantics:
 *  - any number of owners hold the read lock at once; the write lock excludes
 *    readers and other writers. Readers are not held back by a waiting
 *    writer (as in Redisson): a steady stream of overlapping readers can
 *    keep a writer waiting;
 *  - both halves are reentrant, each with its own hold count per owner;
 *  - downgrade: the writer may take the read lock while it holds the write
 *    lock; after its last write unlock it still holds its read holds (mode
 *    becomes "read"), and blocked readers are woken;
 *  - no upgrade: an owner that holds the read lock and does not hold the
 *    write lock gets DLOCK_EDEADLK at once from lock and try_lock of the
 *    write half (whatever the wait), instead of waiting for itself forever.
 *    Nothing changes; unlock every read hold first. (Another thread or
 *    process is another owner: its read holds simply make the writer wait.)
 *  - each read hold has its own lease (its marker's TTL); the hash lives as
 *    long as the longest live read hold, so a writer gets in when the last
 *    live reader's lease ends (a read unlock that shortens the hash's life
 *    publishes the read-unlock message "0", so a sleeping writer, dlock's or
 *    Redisson's, re-reads the TTL within one round trip), and the holds of a reader that died are
 *    collected after their lease: they never block writers for longer.
 *    A live reader's watchdog renews only its own holds;
 *  - read holds of one owner are released newest first. Unlocking a read
 *    hold whose lease has run out returns DLOCK_ELOST and drops all of that
 *    owner's read holds on this lock (the lock object forgets them too);
 *  - re-entry never shortens a hold (api/dlock/lock.h): a write re-entry
 *    and a partial write unlock keep the longer of the time left and the
 *    lease (Redisson instead adds the lease to what is left); a read
 *    re-entry's hold lives at least as long as the owner's longest live
 *    read hold, so a shorter inner lease never ends the outer hold. The
 *    writer's own read holds share the hash, so while the writer also
 *    reads, the hash lives as long as the longer of the two;
 *  - a write unlock wakes every blocked reader with one message;
 *  - lease 0: the client's watchdog renews read holds (their markers and
 *    the hash) and write holds. One renewal covers all of an owner's holds of
 *    that half, so a fixed-lease hold taken by an owner that also has a
 *    lease-0 hold of the same half is renewed with it.
 *
 * Per half:
 *  - is_locked: read half, some owner holds a read lock; write half, some
 *    owner holds the write lock;
 *  - is_held / hold_count: the owner's read / write hold count;
 *  - remain_ttl: read half, the longest remaining lease among the read holds;
 *    write half, the hash's TTL while a writer holds it; -2 when that half
 *    is not locked;
 *  - force_unlock: removes that half's holds only and wakes waiters.
 *    Read half: every read hold and its marker; a writer (with no read
 *    holds left) keeps the write lock. Write half: the writer's holds; the
 *    writer's own read holds stay and mode becomes "read". *existed tells
 *    whether that half was held.
 *
 * Owner ids: a reader's field is the owner id itself and the writer's is the
 * owner id + ":write", beside the field "mode" (Redisson's layout). So the
 * layout reserves two kinds of ids, which both halves refuse with
 * DLOCK_EINVAL before anything is sent (every *_as call, a MultiLock with a
 * half among its members, a guarded write's owner; dlock_errmsg says which
 * rule):
 *  - "mode" (as a reader it would count in the mode field);
 *  - any id that ends in ":write" ("w:write", ":write", "mode:write"): as a
 *    reader it would name the write hold of owner "w", and a read unlock
 *    would delete it.
 * The ids next to them are fine ("Mode", "write", "w:writer"), and the
 * calling thread's own id, "<client-uuid>:<thread-id>", never ends so.
 * The scripts refuse the same ids with an error reply, for a caller that
 * bypasses these checks. The markers built from owner ids,
 * "{name}:<owner>:rwlock_timeout:<k>", are distinct for distinct (owner, k)
 * of one lock (k is all digits); a lock whose name is another's braced
 * prefix plus more ("{n}:x" beside "n") shares that lock's marker names
 * (Redisson's layout too): keep such names apart.
 *
 * Errors: as in api/dlock/lock.h; a key of another type under the name,
 * or a hold count that is not an integer (written by someone else), gives
 * DLOCK_EPROTO, and nothing is changed.
 *
 * Thread-safety: a half may be used by any number of threads at once.
 */
#ifndef DLOCK_RWLOCK_H
#define DLOCK_RWLOCK_H

#include "export.h"

#include "types.h"

#include "client.h"
#include "lock.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Create a handle for the read half / the write half of the read-write lock
 * called name (1..DLOCK_NAME_MAX bytes). Do not touch the backend. The
 * handle keeps c alive; free it with dlock_rlock_free.
 * 0, DLOCK_EINVAL, DLOCK_ENOMEM, DLOCK_EFORKED. */
DLOCK_API int dlock_rwlock_read_new(dlock_rlock **out, dlock_client *c, const char *name);
DLOCK_API int dlock_rwlock_write_new(dlock_rlock **out, dlock_client *c, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* DLOCK_RWLOCK_H */
