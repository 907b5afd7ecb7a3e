/*
 * libFuzzer target: what a sentinel and a data node tell the Sentinel
 * topology (backends/redis/parse.c): SENTINEL GET-MASTER-ADDR-BY-NAME
 * replies (dlock__redis_parse_master_addr), ROLE replies
 * (dlock__redis_parse_role), on every reply a server could send
 * (tests/fuzz/resp.h), and +switch-master messages
 * (dlock__redis_parse_switch) on the payload of each string reply and on
 * the raw input. Oracle: an address read is a non-empty host without NUL
 * that fits, and a port 1..65535; a role is a NUL-terminated string and
 * a replica count -1 or what the reply holds; a switch names ports
 * 1..65535 and NUL-terminated names.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlock/errors.h"
#include "../../backends/redis/parse.h"
#include "resp.h"

static void check_switch(const char *msg, size_t len)
{
    dlock__redis_switch sw;

    if (dlock__redis_parse_switch(msg, len, &sw) != 0)
        return;
    if (sw.old_port < 1 || sw.old_port > 65535 || sw.new_port < 1 || sw.new_port > 65535 ||
        strlen(sw.name) >= sizeof sw.name || !sw.name[0] ||
        strlen(sw.new_host) >= sizeof sw.new_host || !sw.new_host[0])
        abort();
}

static void check(const redisReply *r, void *arg)
{
    char host[256];
    int port = 0;
    dlock__redis_role role;

    (void)arg;
    memset(host, 'x', sizeof host);
    if (dlock__redis_parse_master_addr(r, host, sizeof host, &port) == 0) {
        size_t n = strnlen(host, sizeof host);
        if (n == 0 || n >= sizeof host || port < 1 || port > 65535 ||
            r->element[0]->len != n)
            abort();
    }
    if (dlock__redis_parse_role(r, &role) == 0) {
        if (strnlen(role.role, sizeof role.role) >= sizeof role.role || role.replicas < -1 ||
            (role.replicas >= 0 && (size_t)role.replicas != r->element[2]->elements))
            abort();
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
               r->element[0]->type == REDIS_REPLY_STRING) {
        abort(); /* a well-formed ROLE refused */
    }
    if (r->type == REDIS_REPLY_STRING)
        check_switch(r->str, r->len);
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[2]->type == REDIS_REPLY_STRING)
        check_switch(r->element[2]->str, r->element[2]->len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_switch((const char *)data, size);
    each_reply(data, size, check, NULL);
    return 0;
}
