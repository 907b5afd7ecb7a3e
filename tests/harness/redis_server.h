/*
 * Test harness: a throwaway redis-server.
 *
 * dlock_test_redis_start runs `redis-server` (or $DLOCK_REDIS_SERVER) on
 * 127.0.0.1 with a free TCP port, a unix socket and a fresh directory from
 * mkdtemp, no persistence, and waits until it answers. The server dies with
 * the thread that started it (PR_SET_PDEATHSIG), so a crashed test run
 * leaves no server behind; start servers from the test's main thread.
 *
 * Talks to the server over a raw socket: tests need no hiredis.
 * Not thread-safe: one thread drives a given server.
 */
#ifndef DLOCK_TEST_REDIS_SERVER_H
#define DLOCK_TEST_REDIS_SERVER_H

#include <stddef.h>

typedef struct dlock_test_redis dlock_test_redis;

/* Starts a server. extra_args: NULL, or a NULL-terminated list appended to
 * the command line, e.g. {"--requirepass", "secret", NULL}. Retries with
 * another port if the chosen one was taken meanwhile. Returns 0, or -1 with
 * a reason on stderr (*out = NULL). */
int dlock_test_redis_start(dlock_test_redis **out,
                           const char *const *extra_args);

/* TLS: dlock_test_redis_start_tls makes a throwaway PKI with the openssl
 * command in the server's directory, then starts redis-server with
 * --tls-port <free port> and the server certificate. Files (in
 * dlock_test_redis_dir):
 *   ca.crt, ca.key          the CA the server trusts and whose certificates
 *                           it presents
 *   server.crt, server.key  subjectAltName IP:127.0.0.1 and DNS:localhost
 *   client.crt, client.key  a client certificate issued by ca.crt
 *   other-ca.crt            an unrelated CA (for "untrusted" cases)
 * auth_clients: "yes", "optional" or "no" (--tls-auth-clients).
 * plain: also listen on a plain TCP port (dlock_test_redis_url); else
 * --port 0 and the harness talks to the server over its unix socket.
 * Returns 0, or -1 with a reason on stderr. */
int dlock_test_redis_start_tls(dlock_test_redis **out, const char *auth_clients,
                               int plain, const char *const *extra_args);

/* The same, serving the certificates in pki_dir (the directory of a TLS
 * server started before: dlock_test_redis_dir) instead of making its own,
 * so that servers which talk TLS to each other (a cluster's bus) share one
 * CA and one client certificate. pki_dir must outlive this server. */
int dlock_test_redis_start_tls_pki(dlock_test_redis **out,
                                   const char *auth_clients, int plain,
                                   const char *pki_dir,
                                   const char *const *extra_args);

/* Sentinel: starts `redis-server <dir>/sentinel.conf --sentinel` on a free
 * port, monitoring 127.0.0.1:master_port as master_name with the given
 * quorum: down-after-milliseconds 1000, failover-timeout 3000,
 * parallel-syncs 1, resolve-hostnames no, announce-ip 127.0.0.1 (so every
 * address it hands out is a loopback IP). dlock_test_redis_port and
 * _command talk to the sentinel itself. Returns 0, or -1. */
int dlock_test_sentinel_start(dlock_test_redis **out, const char *master_name,
                              int master_port, int quorum);

/* The TLS port (0 without TLS) and the server's directory. */
int dlock_test_redis_tls_port(dlock_test_redis *r);
const char *dlock_test_redis_dir(dlock_test_redis *r);

/* "rediss://<host>:<tls port>?cacert=<dir>/ca.crt&cert=<dir>/client.crt&
 * key=<dir>/client.key" (<dir>: the server's directory, or the pki_dir it
 * was given): host "localhost" (verified by name) or
 * "127.0.0.1" (by IP address). Valid until dlock_test_redis_stop. */
const char *dlock_test_redis_tls_url(dlock_test_redis *r);

/* "redis://127.0.0.1:<port>" (no credentials; "" for a TLS-only server),
 * the port, and the unix socket path. Valid until dlock_test_redis_stop. */
const char *dlock_test_redis_url(dlock_test_redis *r);
int dlock_test_redis_port(dlock_test_redis *r);
const char *dlock_test_redis_socket(dlock_test_redis *r);

/* Stops the process (SIGTERM, then SIGKILL after 5 s) but keeps the port and
 * the directory: the server is down until dlock_test_redis_restart.
 * 0 or -1. */
int dlock_test_redis_kill(dlock_test_redis *r);

/* Starts the server again on the same port with the same arguments
 * (stopping it first if it runs). Data is lost (no persistence). 0 or -1. */
int dlock_test_redis_restart(dlock_test_redis *r);

/* Sends sig to the running server (SIGSTOP stalls it, SIGCONT resumes it).
 * 0, or -1 when it is not running. */
int dlock_test_redis_signal(dlock_test_redis *r, int sig);
/* A server that is slow to answer, whatever the server (a script that
 * spins on TIME lasts 10 times longer on Valkey, whose TIME is frozen
 * during a script): dlock_test_redis_stall stops it now (SIGSTOP) and
 * resumes it (SIGCONT) ms later from a thread of its own, while the
 * caller goes on; connections stay open and commands sent meanwhile are
 * answered after. dlock_test_stall_join waits until it has resumed and
 * frees the stall (0, or -1 when SIGCONT failed). A test that fails in
 * between still gets its server back ms later. 0 or -1. */
typedef struct dlock_test_stall dlock_test_stall;
int dlock_test_redis_stall(dlock_test_stall **out, dlock_test_redis *r, long ms);
int dlock_test_stall_join(dlock_test_stall *s);
/* The server's process id, 0 while it is down. */
int dlock_test_redis_pid(dlock_test_redis *r);
/* Monotonic time in ms, and a sleep that resumes after a signal: for the
 * harness's bounded waits. */
long long dlock_test_now_ms(void);
void dlock_test_sleep_ms(long ms);
/* A TCP port on 127.0.0.1 that was free just now (the kernel's pick), for a
 * second port of a server (e.g. --cluster-port); -1 on error. */
int dlock_test_free_port(void);
/* Stops the server and removes its directory. NULL is a no-op. */
void dlock_test_redis_stop(dlock_test_redis *r);

/* Runs one command on a fresh connection (authenticating first with the
 * --requirepass given at start, if any) and writes the reply into out as
 * text: a status or bulk string as is, an error as "-<message>", an integer
 * in decimal, nil as "(nil)", an array as its elements joined by '\n'.
 * argv is NULL-terminated. Returns 0, or -1 (no reply within 5 s, connection
 * refused, ...). */
int dlock_test_redis_command(dlock_test_redis *r, char *out, size_t outlen,
                             const char *const *argv);

#endif /* DLOCK_TEST_REDIS_SERVER_H */
