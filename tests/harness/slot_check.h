/*
 * A backend that wraps another (the mock) and holds every script call to
 * Redis Cluster's rules, so that the lock objects' scripts are checked for
 * them without a cluster:
 *  - key_slot answers the real hash slot (CRC16-XMODEM of the key or of its
 *    first non-empty {hash tag}, mod 16384) and publish_command "spublish",
 *    so the objects and the watchdog act as they do on a cluster;
 *  - every eval whose KEYS do not all share one slot is refused with
 *    Redis's CROSSSLOT error (and counted);
 *  - inside the script, every key a command touches and every SPUBLISH
 *    channel must lie in the slot of KEYS[1] (Redis 7 refuses a script that
 *    reaches another slot): a Lua prelude checks it, and a breach fails the
 *    script (counted too);
 *  - the slots are dealt to 3 masters in ranges (slot * 3 / 16384):
 *    key_node answers the master, and eval_node runs a call whose keys all
 *    lie on one master (the rules above per master instead of per slot),
 *    as Redis 7 does for a script flagged allow-cross-slot-keys; with
 *    cross calls off (slot_check_set_cross), a server that refuses them:
 *    key_node answers the slot and eval_node DLOCK_ENOTSUP.
 * Built on the public backend vtable only. The counters are process-wide.
 */
#ifndef DLOCK_TEST_SLOT_CHECK_H
#define DLOCK_TEST_SLOT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "dlock.h"

/* Redis Cluster's hash slot of key (len bytes). */
unsigned slot_check_slot(const char *key, size_t len);

/* Calls over several slots of one master on (1, the default) or off (0),
 * for every slot-check backend of the process. */
void slot_check_set_cross(int on);

/* Wraps inner, which the new backend takes over (also on failure). */
int slot_check_backend_new(dlock_backend **out, dlock_backend *inner);

typedef struct slot_check_counts {
    uint64_t evals;      /* script calls seen */
    uint64_t cross_keys; /* refused: KEYS over more than one slot */
    uint64_t cross_body; /* failed: the script reached another slot */
    uint64_t renewals;   /* calls of renewal scripts (name with "renew") */
} slot_check_counts;

/* The counters so far, and the first breach's description ("" none). */
void slot_check_counts_get(slot_check_counts *out, char *first, size_t len);
void slot_check_counts_reset(void);

#endif /* DLOCK_TEST_SLOT_CHECK_H */
