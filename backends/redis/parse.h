/*
 * Redis backend (private): what a server sends, read into plain values —
 * the parsers of the replies and messages the backend acts on, apart from
 * the code that acts on them, so that each is one pure function that the
 * fuzz targets (tests/fuzz/) call as the backend does:
 *   MOVED / ASK redirections (eval.c), CLUSTER SLOTS (cluster.c),
 *   SENTINEL GET-MASTER-ADDR-BY-NAME and +switch-master (topology.c),
 *   ROLE (topology.c, eval.c), and the subscriber's replies (subscriber.c).
 * None allocates, blocks or keeps a pointer past the reply it was given;
 * any thread. Each refuses what it does not know rather than guess.
 */
#ifndef DLOCK_REDIS_PARSE_H
#define DLOCK_REDIS_PARSE_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "eval.h"

/* "MOVED 3999 127.0.0.1:6381" or "ASK ..." (an error reply): fills d's
 * kind, slot (0..16383), host (non-empty) and port (1..65535); 0, or -1
 * when r is not one (d's out fields then unspecified). */
int dlock__redis_parse_redirect(const redisReply *r, dlock__redis_redirect *d);

/* A CLUSTER SLOTS reply, one call of fn per range: lo..hi (lo <= hi <=
 * 16383) served by the master at host:port (port 1..65535; host NULL when
 * the master is announced without one, "" or "?": the node asked stands
 * in). The whole reply is checked before fn is first called, so a
 * malformed one applies nothing. 0, DLOCK_EPROTO (malformed), or fn's
 * first non-zero return. */
typedef int (*dlock__redis_slots_fn)(void *arg, unsigned lo, unsigned hi,
                                     const char *host, int port);
int dlock__redis_parse_slots(const redisReply *r, dlock__redis_slots_fn fn, void *arg);

/* A SENTINEL GET-MASTER-ADDR-BY-NAME reply that is neither nil nor an
 * error (the caller tells those apart): [host, port]. Copies host
 * (non-empty, no NUL, shorter than hostlen) and sets *port (decimal
 * 1..65535). 0 or DLOCK_EPROTO. */
int dlock__redis_parse_master_addr(const redisReply *r, char *host, size_t hostlen,
                                   int *port);

/* A sentinel's "+switch-master <name> <old-ip> <old-port> <new-ip>
 * <new-port>" message (len bytes, not NUL-terminated). 0 (ports 1..65535)
 * or -1. */
typedef struct dlock__redis_switch {
    char name[256];
    char old_host[256], new_host[256];
    int old_port, new_port;
} dlock__redis_switch;
int dlock__redis_parse_switch(const char *msg, size_t len, dlock__redis_switch *out);

/* A ROLE reply: role[] the first element ("master", "slave", "sentinel"...;
 * cut to fit), replicas the number of entries of a master's replica list
 * (its third element), -1 when there is none. 0 or DLOCK_EPROTO (not an
 * array starting with a string). */
typedef struct dlock__redis_role {
    char role[24];
    int replicas;
} dlock__redis_role;
int dlock__redis_parse_role(const redisReply *r, dlock__redis_role *out);

/* What a reply on the subscriber's connection is (sharded: the S-forms,
 * "smessage", "ssubscribe", "sunsubscribe"):
 *   MESSAGE       a message: name and payload (both strings) set
 *   ODD_MESSAGE   a message whose channel or payload is not a string
 *                 (no PUBLISH sends one): to ignore and count
 *   SUBSCRIBED, UNSUBSCRIBED  an acknowledgement: name set (any type: the
 *                 subscriber checks it against what it asked)
 *   PONG          the answer to PING (either form)
 *   ERROR         an error reply
 *   IGNORED       a push of another kind nothing asked for
 *   BAD           anything else: the stream no longer matches */
enum {
    DLOCK__PUBSUB_BAD,
    DLOCK__PUBSUB_MESSAGE,
    DLOCK__PUBSUB_ODD_MESSAGE,
    DLOCK__PUBSUB_SUBSCRIBED,
    DLOCK__PUBSUB_UNSUBSCRIBED,
    DLOCK__PUBSUB_PONG,
    DLOCK__PUBSUB_ERROR,
    DLOCK__PUBSUB_IGNORED,
};
typedef struct dlock__redis_pubsub_event {
    const redisReply *name; /* MESSAGE, SUBSCRIBED, UNSUBSCRIBED */
    const char *payload;    /* MESSAGE */
    size_t len;
} dlock__redis_pubsub_event;
/* Returns the kind; fills *ev for the kinds above. */
int dlock__redis_pubsub_classify(const redisReply *r, int sharded,
                                 dlock__redis_pubsub_event *ev);

#endif /* DLOCK_REDIS_PARSE_H */
