/*
 * The least-privilege ACL user of the README's "Deploying" section, kept
 * in one place (tests/harness/acl_user.txt, one line: the exact ACL
 * SETUSER command the README quotes) so that the README, the redis-acl
 * conformance row and the README check cannot drift apart.
 */
#ifndef DLOCK_TEST_ACL_USER_H
#define DLOCK_TEST_ACL_USER_H

#include <stddef.h>

#include "redis_server.h"

/* Where the line is, relative to the repository (make check runs from
 * there). */
#define DLOCK_TEST_ACL_FILE "tests/harness/acl_user.txt"

/* Reads the line (without its newline) into buf. 0, or -1 with a reason
 * on stderr. */
int dlock_test_acl_line(char *buf, size_t len);

/* Runs the line on r (split at spaces: no argument of it has one), then
 * writes into url "redis://<user>:<password>@127.0.0.1:<port>", the
 * user's URL. 0, or -1 with a reason on stderr (the server's refusal
 * included). */
int dlock_test_acl_apply(dlock_test_redis *r, char *url, size_t len);

#endif /* DLOCK_TEST_ACL_USER_H */
