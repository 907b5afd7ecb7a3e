/*
 * Redis backend (private): what a server says of evicting and persisting
 * keys (issue 32 §4; the public side: dlock_server_safety in
 * api/dlock/backend.h).
 *
 * The probe rides on the handshake of a connection being set up (conn.c
 * appends its commands to AUTH/SELECT/PING: the same round trip), and the
 * pool (pool.c) asks for it on the first connection to its server and on
 * the first after it lost them all or failed to connect (a restart, a
 * failover to it). Commands, in that pipeline:
 *   CONFIG GET maxmemory-policy, CONFIG GET save  (unless this server
 *                                                 refused CONFIG before)
 *   INFO memory, INFO persistence
 * CONFIG GET may be refused (the README's least-privilege ACL user has no
 * CONFIG: it would show requirepass and masterauth): then the policy is
 * INFO memory's maxmemory_policy and RDB save points are unknown (INFO
 * does not show them); appendonly is INFO persistence's aof_enabled. No
 * reply of the probe fails the handshake: a refusal leaves a field
 * unknown.
 */
#ifndef DLOCK_REDIS_SAFETY_H
#define DLOCK_REDIS_SAFETY_H

#include <hiredis/hiredis.h>

#include "dlock/backend.h"
#include "conn.h"
#include "internal.h"

/* One server's answers. */
typedef struct dlock__redis_facts {
    int known;            /* 1: a probe's replies were read */
    char policy[32];      /* maxmemory-policy; "" unknown */
    int from_info;        /* CONFIG GET refused: INFO's figures */
    int aof;              /* 1, 0, -1 unknown */
    int rdb;              /* save points: 1 some, 0 none, -1 unknown */
    char where[300];      /* host:port or socket path */
} dlock__redis_facts;

/* The commands of the probe, appended to b; skip_config: this server
 * refused CONFIG before (its ACL), ask INFO only. Returns the number of
 * replies they bring (2 or 4), or -1 (out of memory). */
int dlock__redis_probe_add(dlock__redis_cmdbuf *b, int skip_config);

/* Reads the probe's n replies (as probe_add returned) into f, for the
 * server at where. Takes the replies over (frees them). */
void dlock__redis_probe_read(dlock__redis_facts *f, redisReply **replies,
                             int n, const char *where);

/* The verdicts of one server's facts. */
int dlock__redis_facts_evicts(const dlock__redis_facts *f);
int dlock__redis_facts_tokens_back(const dlock__redis_facts *f);

/* Adds f (a server's facts, f->known) to *out: the least safe server's
 * fields win, servers counts. */
void dlock__redis_safety_merge(dlock_server_safety *out,
                               const dlock__redis_facts *f);

/* After a probe: logs one DLOCK_LOG_WARN line per backend (cfg->warned,
 * shared by the backend's nodes) the first time a server can evict lock
 * keys or send fencing tokens back. Call with no mutex held. */
void dlock__redis_safety_report(const dlock__redis_config *cfg,
                                const dlock__redis_facts *f);

#endif /* DLOCK_REDIS_SAFETY_H */
