/*
 * Fault tests: real time and helper processes (see faults.h).
 */
#include "faults.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int64_t fault_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void fault_sleep_ms(int64_t ms)
{
    struct timespec ts;
    if (ms <= 0)
        return;
    ts.tv_sec = (time_t)(ms / 1000);
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* ---- the registry of running helpers ------------------------------------ */

#define MAX_CHILDREN 64

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t reg[MAX_CHILDREN];

static void reg_add(pid_t pid)
{
    int i;
    pthread_mutex_lock(&reg_mu);
    for (i = 0; i < MAX_CHILDREN; i++)
        if (reg[i] == 0) {
            reg[i] = pid;
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

static void reg_remove(pid_t pid)
{
    int i;
    pthread_mutex_lock(&reg_mu);
    for (i = 0; i < MAX_CHILDREN; i++)
        if (reg[i] == pid)
            reg[i] = 0;
    pthread_mutex_unlock(&reg_mu);
}

void fault_child_kill_all(void)
{
    int i;
    pthread_mutex_lock(&reg_mu);
    for (i = 0; i < MAX_CHILDREN; i++)
        if (reg[i] > 0) {
            /* A stopped child must be continued to die promptly. */
            kill(reg[i], SIGKILL);
            kill(reg[i], SIGCONT);
            waitpid(reg[i], NULL, 0);
            reg[i] = 0;
        }
    pthread_mutex_unlock(&reg_mu);
}

/* ---- spawning ----------------------------------------------------------- */

const char *fault_helper_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("DLOCK_FAULT_HELPER");
    ssize_t n;
    char *slash;

    if (env && env[0])
        return env;
    if (path[0])
        return path;
    n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0) {
        snprintf(path, sizeof path, "./dlock_fault_helper");
        return path;
    }
    path[n] = '\0';
    slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, 32, "dlock_fault_helper");
    return path;
}

int fault_child_spawn(fault_child *c, const char *const *argv)
{
    const char *helper = fault_helper_path();
    int in[2], out[2];
    pid_t parent = getpid(), pid;

    c->pid = 0;
    c->to = c->from = -1;
    if (pipe2(in, O_CLOEXEC) != 0)
        return -1;
    if (pipe2(out, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        return -1;
    }
    if (pid == 0) {
        /* Only async-signal-safe calls until exec: the parent may have
         * threads holding locks that this copy would never see released. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(126);
        dup2(in[0], 0);
        dup2(out[1], 1);
        /* The parent's sockets (hiredis does not set CLOEXEC) must not
         * stay open in the helper: a killed helper would otherwise not be
         * the only one to close them. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        execv(helper, (char *const *)argv);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    c->pid = pid;
    c->to = in[1];
    c->from = out[0];
    reg_add(pid);
    return 0;
}

int fault_child_read_line(fault_child *c, char *buf, size_t len,
                          int64_t timeout_ms)
{
    int64_t deadline = fault_now_ms() + timeout_ms;
    size_t n = 0;

    if (len == 0 || c->from < 0)
        return -1;
    for (;;) {
        struct pollfd p;
        int64_t left = deadline - fault_now_ms();
        char ch;
        ssize_t r;

        if (left <= 0)
            return -1;
        p.fd = c->from;
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, (int)(left > INT_MAX ? INT_MAX : left)) <= 0)
            continue; /* EINTR or timeout: the deadline check decides */
        /* Byte at a time: lines are short and nothing may be read past
         * the newline (the next answer belongs to the next call). */
        r = read(c->from, &ch, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (ch == '\n') {
            buf[n] = '\0';
            return 0;
        }
        if (n + 1 < len)
            buf[n++] = ch;
    }
}

int fault_child_ask(fault_child *c, const char *cmd, char *buf, size_t len,
                    int64_t timeout_ms)
{
    char line[256];
    size_t n;
    int w = snprintf(line, sizeof line, "%s\n", cmd);
    if (w <= 0 || (size_t)w >= sizeof line || c->to < 0)
        return -1;
    for (n = 0; n < (size_t)w;) {
        ssize_t r = write(c->to, line + n, (size_t)w - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        n += (size_t)r;
    }
    return fault_child_read_line(c, buf, len, timeout_ms);
}

int fault_child_wait(fault_child *c, int *status, int64_t timeout_ms)
{
    int64_t deadline = fault_now_ms() + timeout_ms;
    int st = 0;
    if (c->pid <= 0)
        return 0;
    for (;;) {
        pid_t w = waitpid(c->pid, &st, WNOHANG);
        if (w == c->pid || (w < 0 && errno == ECHILD)) {
            reg_remove(c->pid);
            c->pid = 0;
            if (status)
                *status = st;
            if (c->to >= 0)
                close(c->to);
            if (c->from >= 0)
                close(c->from);
            c->to = c->from = -1;
            return 0;
        }
        if (fault_now_ms() >= deadline)
            return -1;
        fault_sleep_ms(5);
    }
}

void fault_child_kill(fault_child *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        kill(c->pid, SIGCONT);
        if (fault_child_wait(c, NULL, 10000) != 0) {
            /* SIGKILL cannot be refused; only a zombie reaper bug lands
             * here. Forget it rather than hang. */
            reg_remove(c->pid);
            c->pid = 0;
        }
    }
    if (c->to >= 0)
        close(c->to);
    if (c->from >= 0)
        close(c->from);
    c->to = c->from = -1;
}
