/*
 * Test harness: a throwaway redis-server (see redis_server.h).
 */
#include "redis_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define READY_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 5000
#define IO_TIMEOUT_MS 5000
#define START_ATTEMPTS 5

struct dlock_test_redis {
    pid_t pid;
    int port;       /* plain TCP; 0: none (--port 0) */
    int tls_port;   /* 0: no TLS */
    int tls;        /* started by dlock_test_redis_start_tls */
    char auth_clients[16];
    char tls_url[1024];
    char dir[256];
    char pki[256];  /* TLS: where its certificates are (dir, or shared) */
    char sock[300];
    char log[300];
    char url[64];
    char conf[300];  /* sentinel: its configuration file; "" otherwise */
    char **extra;   /* copy of the extra arguments, NULL-terminated */
    char *password; /* the --requirepass value, if any */
};

long long dlock_test_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void dlock_test_sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Whether port (0: any) can be bound on loopback now; the port bound, or
 * -1. */
static int try_port(int port)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), got = -1;
    if (fd < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        got = ntohs(a.sin_port);
    close(fd);
    return got;
}

/* A free port below the kernel's ephemeral range (ip_local_port_range),
 * where no outgoing connection takes one: a server killed and restarted on
 * its port then finds it free (a client's connection elsewhere could have
 * been given it meanwhile), and a client reconnecting to a stopped server
 * never gets that port as its own. Failing that (a range of few ports), the
 * kernel's pick. It may be taken again before redis binds it, which
 * start() handles by retrying. */
int dlock_test_free_port(void)
{
    static unsigned seed;
    int low = 32768, high = 60999, tries;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

    if (f) {
        if (fscanf(f, "%d %d", &low, &high) != 2)
            low = 32768;
        fclose(f);
    }
    if (seed == 0)
        seed = (unsigned)getpid() * 2654435761u ^ (unsigned)dlock_test_now_ms();
    for (tries = 0; low - 10000 >= 1000 && tries < 64; tries++) {
        int port;

        seed = seed * 1103515245u + 12345u;
        port = 10000 + (int)((seed >> 8) % (unsigned)(low - 10000));
        if (try_port(port) == port)
            return port;
    }
    return try_port(0);
}

/* A plain connection: TCP when the server has a plain port, else its
 * unix socket (a TLS-only server still serves that in the clear). */
static int connect_to(const dlock_test_redis *r)
{
    struct sockaddr_in a;
    struct sockaddr_un u;
    struct timeval tv;
    int fd = socket(r->port ? AF_INET : AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int rc;
    if (fd < 0)
        return -1;
    if (r->port) {
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_port = htons((unsigned short)r->port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    } else {
        memset(&u, 0, sizeof u);
        u.sun_family = AF_UNIX;
        snprintf(u.sun_path, sizeof u.sun_path, "%.*s",
                 (int)sizeof u.sun_path - 1, r->sock);
        rc = connect(fd, (struct sockaddr *)&u, sizeof u);
    }
    if (rc != 0) {
        close(fd);
        return -1;
    }
    /* A command goes out in several small writes: without this, the one
     * after AUTH waits for a delayed ACK (40 ms a command). */
    if (r->port) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    tv.tv_sec = IO_TIMEOUT_MS / 1000;
    tv.tv_usec = 0;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Byte at a time: simple, and replies in tests are tiny. */
static int read_line(int fd, char *line, size_t cap)
{
    size_t n = 0;
    for (;;) {
        char ch;
        ssize_t r = recv(fd, &ch, 1, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (ch == '\n') {
            if (n > 0 && line[n - 1] == '\r')
                n--;
            line[n] = '\0';
            return 0;
        }
        if (n + 1 < cap)
            line[n++] = ch;
    }
}

static void append(char *out, size_t outlen, size_t *pos, const char *s,
                   size_t n)
{
    if (*pos + 1 >= outlen)
        return;
    if (n > outlen - *pos - 1)
        n = outlen - *pos - 1;
    memcpy(out + *pos, s, n);
    *pos += n;
    out[*pos] = '\0';
}

static int read_value(int fd, char *out, size_t outlen, size_t *pos, int depth)
{
    char line[512];
    long n, i;
    if (depth > 8 || read_line(fd, line, sizeof line) != 0)
        return -1;
    switch (line[0]) {
    case '+':
    case ':':
        append(out, outlen, pos, line + 1, strlen(line + 1));
        return 0;
    case '-':
        append(out, outlen, pos, line, strlen(line));
        return 0;
    case '$':
        n = strtol(line + 1, NULL, 10);
        if (n < 0) {
            append(out, outlen, pos, "(nil)", 5);
            return 0;
        }
        while (n > 0) {
            char buf[256];
            size_t want = (size_t)n < sizeof buf ? (size_t)n : sizeof buf;
            ssize_t got = recv(fd, buf, want, 0);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                return -1;
            append(out, outlen, pos, buf, (size_t)got);
            n -= (long)got;
        }
        /* The CRLF after the payload reads as an empty line. */
        if (read_line(fd, line, sizeof line) != 0)
            return -1;
        return 0;
    case '*':
        n = strtol(line + 1, NULL, 10);
        if (n < 0) {
            append(out, outlen, pos, "(nil)", 5);
            return 0;
        }
        for (i = 0; i < n; i++) {
            if (i > 0)
                append(out, outlen, pos, "\n", 1);
            if (read_value(fd, out, outlen, pos, depth + 1) != 0)
                return -1;
        }
        return 0;
    default:
        return -1;
    }
}

static int send_command(int fd, const char *const *argv)
{
    char head[64];
    int argc = 0, i;
    while (argv[argc])
        argc++;
    snprintf(head, sizeof head, "*%d\r\n", argc);
    if (write_all(fd, head, strlen(head)) != 0)
        return -1;
    for (i = 0; i < argc; i++) {
        snprintf(head, sizeof head, "$%zu\r\n", strlen(argv[i]));
        if (write_all(fd, head, strlen(head)) != 0 ||
            write_all(fd, argv[i], strlen(argv[i])) != 0 ||
            write_all(fd, "\r\n", 2) != 0)
            return -1;
    }
    return 0;
}

int dlock_test_redis_command(dlock_test_redis *r, char *out, size_t outlen,
                             const char *const *argv)
{
    char scratch[256];
    size_t pos = 0;
    int fd, rc = -1;
    if (!r || !out || outlen == 0 || !argv || !argv[0])
        return -1;
    out[0] = '\0';
    fd = connect_to(r);
    if (fd < 0)
        return -1;
    if (r->password) {
        const char *auth[3];
        size_t spos = 0;
        auth[0] = "AUTH";
        auth[1] = r->password;
        auth[2] = NULL;
        if (send_command(fd, auth) != 0 ||
            read_value(fd, scratch, sizeof scratch, &spos, 0) != 0)
            goto done;
    }
    if (send_command(fd, argv) == 0 &&
        read_value(fd, out, outlen, &pos, 0) == 0)
        rc = 0;
done:
    close(fd);
    return rc;
}

/* Up means: it answers an inline PING, with +PONG or -NOAUTH alike. */
static int answers(const dlock_test_redis *r)
{
    char line[128];
    int fd = connect_to(r), ok = 0;
    if (fd < 0)
        return 0;
    if (write_all(fd, "PING\r\n", 6) == 0 &&
        read_line(fd, line, sizeof line) == 0)
        ok = line[0] == '+' || line[0] == '-';
    close(fd);
    return ok;
}

static int reap(dlock_test_redis *r, int timeout_ms)
{
    long long deadline = dlock_test_now_ms() + timeout_ms;
    for (;;) {
        pid_t w = waitpid(r->pid, NULL, WNOHANG);
        if (w == r->pid || (w < 0 && errno == ECHILD)) {
            r->pid = 0;
            return 0;
        }
        if (dlock_test_now_ms() >= deadline)
            return -1;
        dlock_test_sleep_ms(5);
    }
}

/* 0 = running and answering, 1 = exited (e.g. port taken), -1 = other. */
static int spawn(dlock_test_redis *r)
{
    const char *bin = getenv("DLOCK_REDIS_SERVER");
    char port[16];
    const char *fixed[40];
    const char **argv;
    size_t nextra = 0, i, n = 0;
    char tls_port[16], cert[300], key[300], ca[300];
    pid_t parent = getpid(), pid;
    int64_t deadline;

    if (!bin || !bin[0])
        bin = "redis-server";
    while (r->extra && r->extra[nextra])
        nextra++;
    snprintf(port, sizeof port, "%d", r->port); /* 0 = no plain port */
    fixed[n++] = bin;
    if (r->conf[0]) {
        fixed[n++] = r->conf;
        fixed[n++] = "--sentinel";
    }
    fixed[n++] = "--port";
    fixed[n++] = port;
    fixed[n++] = "--bind";
    fixed[n++] = "127.0.0.1";
    fixed[n++] = "--save";
    fixed[n++] = "";
    fixed[n++] = "--appendonly";
    fixed[n++] = "no";
    fixed[n++] = "--dir";
    fixed[n++] = r->dir;
    fixed[n++] = "--unixsocket";
    fixed[n++] = r->sock;
    fixed[n++] = "--unixsocketperm";
    fixed[n++] = "700";
    fixed[n++] = "--logfile";
    fixed[n++] = r->log;
    fixed[n++] = "--daemonize";
    fixed[n++] = "no";
    if (r->tls) {
        snprintf(tls_port, sizeof tls_port, "%d", r->tls_port);
        snprintf(cert, sizeof cert, "%s/server.crt", r->pki);
        snprintf(key, sizeof key, "%s/server.key", r->pki);
        snprintf(ca, sizeof ca, "%s/ca.crt", r->pki);
        fixed[n++] = "--tls-port";
        fixed[n++] = tls_port;
        fixed[n++] = "--tls-cert-file";
        fixed[n++] = cert;
        fixed[n++] = "--tls-key-file";
        fixed[n++] = key;
        fixed[n++] = "--tls-ca-cert-file";
        fixed[n++] = ca;
        fixed[n++] = "--tls-auth-clients";
        fixed[n++] = r->auth_clients;
    }
    argv = calloc(n + nextra + 1, sizeof *argv);
    if (!argv)
        return -1;
    for (i = 0; i < n; i++)
        argv[i] = fixed[i];
    for (i = 0; i < nextra; i++)
        argv[n + i] = r->extra[i];

    pid = fork();
    if (pid < 0) {
        free(argv);
        return -1;
    }
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(126);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
        }
        execvp(bin, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    r->pid = pid;

    deadline = dlock_test_now_ms() + READY_TIMEOUT_MS;
    while (dlock_test_now_ms() < deadline) {
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w == pid) {
            r->pid = 0;
            if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
                fprintf(stderr, "redis harness: cannot run %s\n", bin);
            return 1;
        }
        if (answers(r))
            return 0;
        dlock_test_sleep_ms(10);
    }
    fprintf(stderr, "redis harness: no answer on port %d within %d ms\n",
            r->port, READY_TIMEOUT_MS);
    dlock_test_redis_kill(r);
    return -1;
}

static void free_server(dlock_test_redis *r)
{
    size_t i;
    if (!r)
        return;
    for (i = 0; r->extra && r->extra[i]; i++)
        free(r->extra[i]);
    free(r->extra);
    free(r);
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

/* The throwaway PKI (see redis_server.h), made by the openssl command in
 * dir: EC P-256 keys (quick to make), valid for two days. */
static int make_certs(const char *dir)
{
    static const char script[] =
        "set -e; cd '%s'\n"
        "K='-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes'\n"
        "openssl req -x509 $K -keyout ca.key -out ca.crt -days 2 "
        "-subj /CN=dlock-test-ca\n"
        "openssl req -x509 $K -keyout other-ca.key -out other-ca.crt -days 2 "
        "-subj /CN=dlock-test-other-ca\n"
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n"
        "extendedKeyUsage=serverAuth,clientAuth\\n' > server.ext\n"
        "printf 'extendedKeyUsage=clientAuth\\n' > client.ext\n"
        "for w in server client; do\n"
        "  openssl req $K -keyout $w.key -out $w.csr -subj /CN=dlock-test-$w\n"
        "  openssl x509 -req -in $w.csr -CA ca.crt -CAkey ca.key "
        "-CAcreateserial -days 2 -extfile $w.ext -out $w.crt\n"
        "done\n";
    char cmd[2048], log[300];
    int rc;

    snprintf(log, sizeof log, "%s/openssl.log", dir);
    snprintf(cmd, sizeof cmd, "( ");
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), script, dir);
    snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), ") > '%s' 2>&1", log);
    rc = system(cmd);
    if (rc != 0) {
        fprintf(stderr, "redis harness: making test certificates failed "
                "(status %d; log: %s)\n", rc, log);
        return -1;
    }
    return 0;
}

static int start(dlock_test_redis **out, const char *const *extra_args,
                 const char *auth_clients, int plain, const char *sentinel_conf,
                 const char *pki);

int dlock_test_redis_start(dlock_test_redis **out,
                           const char *const *extra_args)
{
    return start(out, extra_args, NULL, 1, NULL, NULL);
}

int dlock_test_sentinel_start(dlock_test_redis **out, const char *master_name,
                              int master_port, int quorum)
{
    char conf[1024];
    snprintf(conf, sizeof conf,
             "sentinel resolve-hostnames no\n"
             "sentinel announce-ip 127.0.0.1\n"
             "sentinel monitor %s 127.0.0.1 %d %d\n"
             "sentinel down-after-milliseconds %s 1000\n"
             "sentinel failover-timeout %s 3000\n"
             "sentinel parallel-syncs %s 1\n",
             master_name, master_port, quorum, master_name, master_name,
             master_name);
    return start(out, NULL, NULL, 1, conf, NULL);
}

int dlock_test_redis_start_tls(dlock_test_redis **out, const char *auth_clients,
                               int plain, const char *const *extra_args)
{
    if (!auth_clients)
        auth_clients = "yes";
    return start(out, extra_args, auth_clients, plain, NULL, NULL);
}

int dlock_test_redis_start_tls_pki(dlock_test_redis **out,
                                   const char *auth_clients, int plain,
                                   const char *pki_dir,
                                   const char *const *extra_args)
{
    if (!pki_dir || !pki_dir[0])
        return -1;
    if (!auth_clients)
        auth_clients = "yes";
    return start(out, extra_args, auth_clients, plain, NULL, pki_dir);
}

static int start(dlock_test_redis **out, const char *const *extra_args,
                 const char *auth_clients, int plain, const char *sentinel_conf,
                 const char *pki)
{
    dlock_test_redis *r;
    const char *tmp = getenv("TMPDIR");
    size_t n = 0, i;
    int attempt, certs_ok = 1;

    if (!out)
        return -1;
    *out = NULL;
    r = calloc(1, sizeof *r);
    if (!r)
        return -1;
    while (extra_args && extra_args[n])
        n++;
    r->extra = calloc(n + 1, sizeof *r->extra);
    if (!r->extra) {
        free_server(r);
        return -1;
    }
    for (i = 0; i < n; i++) {
        r->extra[i] = strdup(extra_args[i]);
        if (!r->extra[i]) {
            free_server(r);
            return -1;
        }
        if (i > 0 && strcmp(extra_args[i - 1], "--requirepass") == 0)
            r->password = r->extra[i];
    }
    /* A unix socket path must stay short (108 bytes). */
    if (!tmp || !tmp[0] || strlen(tmp) > 64)
        tmp = "/tmp";
    snprintf(r->dir, sizeof r->dir, "%s/dlock-redis-XXXXXX", tmp);
    if (!mkdtemp(r->dir)) {
        fprintf(stderr, "redis harness: mkdtemp: %s\n", strerror(errno));
        free_server(r);
        return -1;
    }
    snprintf(r->pki, sizeof r->pki, "%s", pki ? pki : r->dir);
    snprintf(r->sock, sizeof r->sock, "%s/redis.sock", r->dir);
    snprintf(r->log, sizeof r->log, "%s/redis.log", r->dir);
    if (sentinel_conf) {
        FILE *f;
        snprintf(r->conf, sizeof r->conf, "%s/sentinel.conf", r->dir);
        f = fopen(r->conf, "w");
        certs_ok = f && fputs(sentinel_conf, f) >= 0;
        if (f && fclose(f) != 0)
            certs_ok = 0;
    }
    if (auth_clients) {
        r->tls = 1;
        snprintf(r->auth_clients, sizeof r->auth_clients, "%s", auth_clients);
        certs_ok = pki || make_certs(r->dir) == 0;
    }

    for (attempt = 0; certs_ok && attempt < START_ATTEMPTS; attempt++) {
        int rc;
        r->port = plain ? dlock_test_free_port() : 0;
        r->tls_port = r->tls ? dlock_test_free_port() : 0;
        if (r->port < 0 || r->tls_port < 0 || (plain && r->port == 0) ||
            (r->tls && (r->tls_port == 0 || r->tls_port == r->port)))
            continue;
        rc = spawn(r);
        if (rc == 0) {
            if (plain)
                snprintf(r->url, sizeof r->url, "redis://127.0.0.1:%d", r->port);
            if (r->tls)
                snprintf(r->tls_url, sizeof r->tls_url,
                         "rediss://localhost:%d?cacert=%s/ca.crt&"
                         "cert=%s/client.crt&key=%s/client.key",
                         r->tls_port, r->pki, r->pki, r->pki);
            *out = r;
            return 0;
        }
        if (rc < 0)
            break;
    }
    fprintf(stderr, "redis harness: could not start redis-server (log: %s)\n",
            r->log);
    nftw(r->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free_server(r);
    return -1;
}

const char *dlock_test_redis_url(dlock_test_redis *r)
{
    return r ? r->url : NULL;
}

int dlock_test_redis_port(dlock_test_redis *r)
{
    return r ? r->port : -1;
}

int dlock_test_redis_tls_port(dlock_test_redis *r)
{
    return r ? r->tls_port : -1;
}

const char *dlock_test_redis_dir(dlock_test_redis *r)
{
    return r ? r->dir : NULL;
}

const char *dlock_test_redis_tls_url(dlock_test_redis *r)
{
    return r ? r->tls_url : NULL;
}

const char *dlock_test_redis_socket(dlock_test_redis *r)
{
    return r ? r->sock : NULL;
}

int dlock_test_redis_kill(dlock_test_redis *r)
{
    if (!r)
        return -1;
    if (r->pid <= 0)
        return 0;
    kill(r->pid, SIGTERM);
    if (reap(r, STOP_TIMEOUT_MS) == 0)
        return 0;
    kill(r->pid, SIGKILL);
    return reap(r, STOP_TIMEOUT_MS);
}

int dlock_test_redis_restart(dlock_test_redis *r)
{
    int64_t deadline;
    if (!r || dlock_test_redis_kill(r) != 0)
        return -1;
    /* The old socket may linger briefly; redis exits if it cannot bind. */
    deadline = dlock_test_now_ms() + READY_TIMEOUT_MS;
    while (dlock_test_now_ms() < deadline) {
        int rc = spawn(r);
        if (rc == 0)
            return 0;
        if (rc < 0)
            return -1;
        dlock_test_sleep_ms(50);
    }
    return -1;
}

void dlock_test_redis_stop(dlock_test_redis *r)
{
    if (!r)
        return;
    dlock_test_redis_kill(r);
    nftw(r->dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    free_server(r);
}

int dlock_test_redis_pid(dlock_test_redis *r)
{
    return r ? (int)r->pid : 0;
}

int dlock_test_redis_signal(dlock_test_redis *r, int sig)
{
    if (!r || r->pid <= 0)
        return -1;
    return kill(r->pid, sig) == 0 ? 0 : -1;
}

struct dlock_test_stall {
    pthread_t thread;
    pid_t pid;
    long ms;
    int rc;
};

static void *stall_run(void *arg)
{
    dlock_test_stall *s = arg;
    dlock_test_sleep_ms(s->ms);
    s->rc = kill(s->pid, SIGCONT) == 0 ? 0 : -1;
    return NULL;
}

int dlock_test_redis_stall(dlock_test_stall **out, dlock_test_redis *r, long ms)
{
    dlock_test_stall *s;
    *out = NULL;
    if (!r || r->pid <= 0 || !(s = calloc(1, sizeof *s)))
        return -1;
    s->pid = r->pid;
    s->ms = ms;
    if (kill(s->pid, SIGSTOP) != 0) {
        free(s);
        return -1;
    }
    if (pthread_create(&s->thread, NULL, stall_run, s) != 0) {
        kill(s->pid, SIGCONT);
        free(s);
        return -1;
    }
    *out = s;
    return 0;
}

int dlock_test_stall_join(dlock_test_stall *s)
{
    int rc;
    if (!s)
        return -1;
    pthread_join(s->thread, NULL);
    rc = s->rc;
    free(s);
    return rc;
}
