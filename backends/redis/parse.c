/*
 * Redis backend: the parsers of what a server sends (see parse.h).
 */
#include "parse.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dlock/errors.h"
#include "slot.h"

/* A port written in decimal, 1..65535, from s[0..len) exactly; -1 else. */
static int port_of(const char *s, size_t len)
{
    int port = 0;
    size_t i;

    if (len == 0 || len > 5)
        return -1;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        port = port * 10 + (s[i] - '0');
    }
    return port >= 1 && port <= 65535 ? port : -1;
}

int dlock__redis_parse_redirect(const redisReply *r, dlock__redis_redirect *d)
{
    const char *p, *colon, *host;
    int kind, slot = 0, port;
    size_t skip, digits = 0, hl;

    if (r->type != REDIS_REPLY_ERROR || !r->str)
        return -1;
    if (strncmp(r->str, "MOVED ", 6) == 0)
        kind = DLOCK__REDIS_MOVED, skip = 6;
    else if (strncmp(r->str, "ASK ", 4) == 0)
        kind = DLOCK__REDIS_ASK, skip = 4;
    else
        return -1;
    /* "<slot> <host>:<port>": the host may hold ':' (IPv6), the port is
     * after the last one */
    for (p = r->str + skip; *p >= '0' && *p <= '9' && digits < 6; p++, digits++)
        slot = slot * 10 + (*p - '0');
    if (digits == 0 || slot >= DLOCK__REDIS_SLOTS || *p != ' ')
        return -1;
    host = p + 1;
    colon = strrchr(host, ':');
    if (!colon)
        return -1;
    hl = (size_t)(colon - host);
    port = port_of(colon + 1, strlen(colon + 1));
    if (hl == 0 || hl >= sizeof d->host || port < 0 || memchr(host, ' ', hl))
        return -1;
    memcpy(d->host, host, hl);
    d->host[hl] = '\0';
    d->slot = slot;
    d->port = port;
    d->kind = kind;
    return 0;
}

/* One CLUSTER SLOTS entry: [lo, hi, [host, port, ...], replicas...]. */
static int slots_entry(const redisReply *e, unsigned *lo, unsigned *hi,
                       const char **host, int *port)
{
    const redisReply *m;

    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[0]->type != REDIS_REPLY_INTEGER ||
        e->element[1]->type != REDIS_REPLY_INTEGER || e->element[0]->integer < 0 ||
        e->element[1]->integer < e->element[0]->integer ||
        e->element[1]->integer >= DLOCK__REDIS_SLOTS)
        return DLOCK_EPROTO;
    m = e->element[2];
    if (m->type != REDIS_REPLY_ARRAY || m->elements < 2 ||
        m->element[0]->type != REDIS_REPLY_STRING ||
        m->element[1]->type != REDIS_REPLY_INTEGER || m->element[1]->integer < 1 ||
        m->element[1]->integer > 65535 ||
        strlen(m->element[0]->str) != m->element[0]->len)
        return DLOCK_EPROTO;
    *lo = (unsigned)e->element[0]->integer;
    *hi = (unsigned)e->element[1]->integer;
    *host = m->element[0]->str;
    if ((*host)[0] == '\0' || strcmp(*host, "?") == 0)
        *host = NULL;
    *port = (int)m->element[1]->integer;
    return 0;
}

int dlock__redis_parse_slots(const redisReply *r, dlock__redis_slots_fn fn, void *arg)
{
    size_t i, pass;

    if (r->type != REDIS_REPLY_ARRAY)
        return DLOCK_EPROTO;
    for (pass = 0; pass < 2; pass++) { /* check all, then apply */
        for (i = 0; i < r->elements; i++) {
            unsigned lo, hi;
            const char *host;
            int port, rc = slots_entry(r->element[i], &lo, &hi, &host, &port);
            if (rc == 0 && pass == 1)
                rc = fn(arg, lo, hi, host, port);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int dlock__redis_parse_master_addr(const redisReply *r, char *host, size_t hostlen,
                                   int *port)
{
    const redisReply *h, *p;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2)
        return DLOCK_EPROTO;
    h = r->element[0];
    p = r->element[1];
    if (h->type != REDIS_REPLY_STRING || p->type != REDIS_REPLY_STRING ||
        h->len == 0 || h->len >= hostlen || strlen(h->str) != h->len ||
        (*port = port_of(p->str, p->len)) < 0)
        return DLOCK_EPROTO;
    memcpy(host, h->str, h->len);
    host[h->len] = '\0';
    return 0;
}

int dlock__redis_parse_switch(const char *msg, size_t len, dlock__redis_switch *out)
{
    char buf[1024], op[8], np[8];
    int n = 0;

    if (len >= sizeof buf || memchr(msg, '\0', len))
        return -1;
    memcpy(buf, msg, len);
    buf[len] = '\0';
    if (sscanf(buf, "%255s %255s %7s %255s %7s %n", out->name, out->old_host, op,
               out->new_host, np, &n) != 5 || buf[n] != '\0')
        return -1;
    out->old_port = port_of(op, strlen(op));
    out->new_port = port_of(np, strlen(np));
    return out->old_port < 0 || out->new_port < 0 ? -1 : 0;
}

int dlock__redis_parse_role(const redisReply *r, dlock__redis_role *out)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING)
        return DLOCK_EPROTO;
    snprintf(out->role, sizeof out->role, "%s", r->element[0]->str);
    out->replicas = r->elements >= 3 && r->element[2]->type == REDIS_REPLY_ARRAY &&
                            r->element[2]->elements <= INT_MAX
                        ? (int)r->element[2]->elements
                        : -1;
    return 0;
}

/* Whether r is the string (or status) s, in any case. */
static int reply_is(const redisReply *r, const char *s)
{
    size_t n = strlen(s);
    return (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           r->len == n && strncasecmp(r->str, s, n) == 0;
}

int dlock__redis_pubsub_classify(const redisReply *r, int sharded,
                                 dlock__redis_pubsub_event *ev)
{
    memset(ev, 0, sizeof *ev);
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
        r->element[0]->type == REDIS_REPLY_STRING) {
        const redisReply *kind = r->element[0];
        if (reply_is(kind, sharded ? "smessage" : "message") && r->elements == 3) {
            if (r->element[1]->type != REDIS_REPLY_STRING ||
                r->element[2]->type != REDIS_REPLY_STRING)
                return DLOCK__PUBSUB_ODD_MESSAGE;
            ev->name = r->element[1];
            ev->payload = r->element[2]->str;
            ev->len = r->element[2]->len;
            return DLOCK__PUBSUB_MESSAGE;
        }
        if (reply_is(kind, sharded ? "ssubscribe" : "subscribe") && r->elements == 3) {
            ev->name = r->element[1];
            return DLOCK__PUBSUB_SUBSCRIBED;
        }
        if (reply_is(kind, sharded ? "sunsubscribe" : "unsubscribe") && r->elements == 3) {
            ev->name = r->element[1];
            return DLOCK__PUBSUB_UNSUBSCRIBED;
        }
        if (reply_is(kind, "pong"))
            return DLOCK__PUBSUB_PONG;
        return DLOCK__PUBSUB_IGNORED; /* nothing else is asked for */
    }
    if (reply_is(r, "PONG"))
        return DLOCK__PUBSUB_PONG;
    if (r->type == REDIS_REPLY_ERROR)
        return DLOCK__PUBSUB_ERROR;
    return DLOCK__PUBSUB_BAD;
}
