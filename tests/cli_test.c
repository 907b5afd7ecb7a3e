/*
 * The dlock command-line tool (cli/), driven as a shell user would: the
 * built binary ($(BUILD)/dlock, next to this program's folder; $DLOCK_CLI
 * overrides) run by fork+exec with a time limit, against a throwaway
 * redis-server (tests/harness/redis_server.h). Its stdout and stderr go to
 * files the test reads once it ended; a run that outlives its limit is
 * killed and fails the case, so a hang never blocks the suite.
 *
 * Mutual exclusion is shown with files, not timing: the command that must
 * run second checks that the first one's "done" file exists.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlock.h"
#include "harness/redis_server.h"
#include "harness/runner.h"

extern char **environ;

static dlock_test_redis *srv;
static const char *extra_env; /* one more NAME=VALUE for the next start_env */
static char dir[64]; /* the group's scratch folder (mkdtemp in /tmp) */
static char url[256];

/* ---- running the tool ------------------------------------------------------ */

typedef struct proc {
    pid_t pid;
    char out_path[PATH_MAX], err_path[PATH_MAX];
    char out[4096], err[4096];
} proc;

static const char *cli_path(void)
{
    static char path[PATH_MAX];
    const char *env = getenv("DLOCK_CLI");
    ssize_t n;
    char *slash;

    if (env && env[0])
        return env;
    n = readlink("/proc/self/exe", path, sizeof path - 16);
    if (n <= 0)
        return "build/dlock";
    path[n] = '\0';
    /* $(BUILD)/tests/dlock_tests -> $(BUILD)/dlock */
    if ((slash = strrchr(path, '/')) != NULL)
        *slash = '\0';
    if ((slash = strrchr(path, '/')) != NULL)
        strcpy(slash + 1, "dlock");
    return path;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Starts `dlock ARGS...` with DLOCK_URL=env_url (NULL: unset), stdin
 * /dev/null, stdout and stderr to files, and no other descriptor. */
static void start_env(proc *p, const char *env_url, const char *const *args)
{
    static int seq;
    const char *argv[32];
    char *envp[256], env_line[300];
    size_t i, n = 0;

    argv[0] = "dlock";
    for (i = 0; args[i] && i < 30; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    for (i = 0; environ[i] && n < 250; i++)
        if (strncmp(environ[i], "DLOCK_URL=", 10) != 0 &&
            strncmp(environ[i], "DLOCK_CONFIG=", 13) != 0)
            envp[n++] = environ[i];
    if (env_url) {
        snprintf(env_line, sizeof env_line, "DLOCK_URL=%s", env_url);
        envp[n++] = env_line;
    }
    if (extra_env)
        envp[n++] = (char *)extra_env;
    envp[n] = NULL;
    seq++;
    snprintf(p->out_path, sizeof p->out_path, "%s/out.%d", dir, seq);
    snprintf(p->err_path, sizeof p->err_path, "%s/err.%d", dir, seq);
    p->out[0] = p->err[0] = '\0';
    fflush(NULL);
    p->pid = fork();
    assert_true(p->pid >= 0);
    if (p->pid == 0) {
        int in = open("/dev/null", O_RDONLY);
        int out = open(p->out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int fd;
        sigset_t none;
        if (in < 0 || out < 0 || err < 0)
            _exit(120);
        dup2(in, 0);
        dup2(out, 1);
        dup2(err, 2);
        for (fd = 3; fd < 1024; fd++)
            close(fd);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        execve(cli_path(), (char *const *)argv, envp);
        _exit(121);
    }
}

static void start(proc *p, const char *const *args)
{
    start_env(p, url, args);
}

static void slurp(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = 0;

    if (f) {
        n = fread(buf, 1, len - 1, f);
        fclose(f);
    }
    buf[n] = '\0';
    unlink(path);
}

/* Waits up to timeout_ms for p to end: its exit code (128+N for signal N,
 * as shells say), or -1 when it had to be killed. */
static int finish(proc *p, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    int status, code = -1;

    for (;;) {
        pid_t r = waitpid(p->pid, &status, WNOHANG);
        if (r == p->pid) {
            code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
            break;
        }
        if (now_ms() > deadline) {
            kill(p->pid, SIGKILL);
            waitpid(p->pid, &status, 0);
            fprintf(stderr, "  dlock (pid %d) still ran after %d ms: killed\n",
                    (int)p->pid, timeout_ms);
            break;
        }
        sleep_ms(5);
    }
    slurp(p->out_path, p->out, sizeof p->out);
    slurp(p->err_path, p->err, sizeof p->err);
    return code;
}

/* Whether p still runs (not reaped). */
static int running(proc *p)
{
    return waitpid(p->pid, NULL, WNOHANG) == 0;
}

/* Runs dlock ARGS... to its end (10 s at most). */
static int run_cli(proc *p, const char *const *args)
{
    start(p, args);
    return finish(p, 10000);
}

/* The one-line error a failure prints: "dlock: ..." holding needle. */
static void assert_one_line_error(const proc *p, const char *needle)
{
    size_t n = strlen(p->err);

    if (strncmp(p->err, "dlock: ", 7) != 0 || n == 0 || p->err[n - 1] != '\n' ||
        strchr(p->err, '\n') != p->err + n - 1 || !strstr(p->err, needle)) {
        fprintf(stderr, "  expected one line 'dlock: ...%s...', got: [%s]\n", needle, p->err);
        fail();
    }
}

static void redis_cmd(char *out, size_t len, const char *a0, const char *a1,
                      const char *a2)
{
    const char *argv[] = {a0, a1, a2, NULL};
    assert_int_equal(dlock_test_redis_command(srv, out, len, argv), 0);
}

/* Waits (5 s at most) until the key exists: the lock was taken. */
static void wait_key(const char *key)
{
    char out[64];
    int64_t deadline = now_ms() + 5000;

    for (;;) {
        redis_cmd(out, sizeof out, "EXISTS", key, NULL);
        if (strcmp(out, "1") == 0)
            return;
        assert_true(now_ms() < deadline);
        sleep_ms(10);
    }
}

static void wait_file(const char *path)
{
    int64_t deadline = now_ms() + 5000;
    while (access(path, F_OK) != 0) {
        assert_true(now_ms() < deadline);
        sleep_ms(10);
    }
}

static int key_exists(const char *key)
{
    char out[64];
    redis_cmd(out, sizeof out, "EXISTS", key, NULL);
    return strcmp(out, "1") == 0;
}

/* Waits (5 s at most) until someone subscribed to channel: a waiter of
 * another process is blocked on it. */
static void wait_subscriber(const char *channel)
{
    char out[512], want[512];
    int64_t deadline = now_ms() + 5000;

    snprintf(want, sizeof want, "%s\n1", channel);
    for (;;) {
        const char *argv[] = {"PUBSUB", "NUMSUB", channel, NULL};
        assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, argv), 0);
        if (strcmp(out, want) == 0)
            return;
        assert_true(now_ms() < deadline);
        sleep_ms(10);
    }
}

static json_t *parse_json(const char *text)
{
    json_error_t jerr;
    json_t *doc = json_loads(text, 0, &jerr);
    if (!doc)
        fprintf(stderr, "  not JSON (%s): [%s]\n", jerr.text, text);
    assert_non_null(doc);
    return doc;
}

/* ---- cases ------------------------------------------------------------------- */

/* Two concurrent runs: the second fails at once with --wait 0 (exit 1, or
 * --conflict-exit-code), or waits and runs after the first with a --wait
 * long enough. */
static void test_concurrent_runs(void **state)
{
    char script[2 * PATH_MAX + 64], check[PATH_MAX + 64], done[PATH_MAX], go[PATH_MAX];
    proc a, b;
    FILE *f;

    /* The first holds the lock until the test says go (a file), not for a
     * time: the refused runs below take what they take on a loaded
     * machine. */
    snprintf(done, sizeof done, "%s/first-done", dir);
    snprintf(go, sizeof go, "%s/first-go", dir);
    snprintf(script, sizeof script, "while [ ! -e %s ]; do sleep 0.02; done; touch %s", go,
             done);
    snprintf(check, sizeof check, "test -e %s && echo after-first", done);
    start(&a, (const char *[]){"run", "cli-job", "--", "sh", "-c", script, NULL});
    wait_key("cli-job");

    assert_int_equal(run_cli(&b, (const char *[]){"run", "--wait", "0", "cli-job",
                                                   "--", "true", NULL}), 1);
    assert_one_line_error(&b, "cli-job");
    assert_int_equal(run_cli(&b, (const char *[]){"run", "--wait", "0",
                                                   "--conflict-exit-code", "7", "cli-job",
                                                   "--", "true", NULL}), 7);
    assert_int_equal(run_cli(&b, (const char *[]){"run", "--wait", "100ms", "cli-job",
                                                   "--", "true", NULL}), 1);
    assert_one_line_error(&b, "100ms");
    /* A bare number is seconds, and the message gives the unit. */
    assert_int_equal(run_cli(&b, (const char *[]){"run", "--wait", "0.2", "cli-job",
                                                   "--", "true", NULL}), 1);
    assert_one_line_error(&b, "within 200ms");
    /* Options after NAME are options, up to "--" or COMMAND. */
    assert_int_equal(run_cli(&b, (const char *[]){"run", "cli-job", "--wait", "0", "-E",
                                                   "8", "--", "true", NULL}), 8);
    assert_one_line_error(&b, "cli-job");
    /* Still the first one's: the refused runs changed nothing. */
    assert_true(running(&a));

    /* Waits for the first to finish, then runs: the file proves the order. */
    start(&b, (const char *[]){"run", "--wait", "8s", "cli-job", "--", "sh", "-c", check,
                               NULL});
    wait_subscriber("redisson_lock__channel:{cli-job}");
    assert_non_null(f = fopen(go, "w"));
    fclose(f);
    assert_int_equal(finish(&b, 10000), 0);
    assert_string_equal(b.out, "after-first\n");
    assert_int_equal(finish(&a, 5000), 0);
    assert_false(key_exists("cli-job"));
}

/* COMMAND never starts without the lock, whatever exit code the refusal
 * was given: --conflict-exit-code 0 (cron's natural choice) once read as
 * "held" and ran COMMAND. Each way run can end before COMMAND: held
 * elsewhere (--wait 0, a --wait that runs out; the reentrant, fair, write
 * and semaphore paths), a signal during the wait, another type stored under
 * the name, an unreachable server. */
static void test_never_runs_unheld(void **state)
{
    char script[2 * PATH_MAX + 64], go[PATH_MAX], ran[PATH_MAX], out[64];
    /* name, then run's options (the lock type, the wait) */
    const char *const rows[][4] = {{"cli-unheld", "--wait", "0", NULL},
                                   {"cli-unheld", "--wait", "300ms", NULL},
                                   {"cli-unheld-fair", "--fair", "--wait=200ms", NULL},
                                   {"cli-unheld-sem", "--semaphore", "1", "--wait=0"}};
    proc h[3], w;
    size_t i, k;
    FILE *f;

    snprintf(go, sizeof go, "%s/unheld-go", dir);
    snprintf(ran, sizeof ran, "%s/unheld-ran", dir);
    snprintf(script, sizeof script, "while [ ! -e %s ]; do sleep 0.02; done", go);
    start(&h[0], (const char *[]){"run", "cli-unheld", "--", "sh", "-c", script, NULL});
    start(&h[1], (const char *[]){"run", "--fair", "cli-unheld-fair", "--", "sh", "-c",
                                  script, NULL});
    start(&h[2], (const char *[]){"run", "--semaphore", "1", "cli-unheld-sem", "--", "sh",
                                  "-c", script, NULL});
    wait_key("cli-unheld");
    wait_key("cli-unheld-fair");
    wait_key("{cli-unheld-sem}:holders");
    for (i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *args[16];
        size_t n = 0;
        int code;

        args[n++] = "run";
        args[n++] = "-E";
        args[n++] = "0";
        for (k = 1; k < 4 && rows[i][k]; k++)
            args[n++] = rows[i][k];
        args[n++] = rows[i][0];
        args[n++] = "--";
        args[n++] = "touch";
        args[n++] = ran;
        args[n] = NULL;
        code = run_cli(&w, args);
        if (code != 0 || access(ran, F_OK) == 0)
            fail_msg("%s %s: exit %d, COMMAND %s; stderr [%s]", rows[i][0], rows[i][1], code,
                     access(ran, F_OK) == 0 ? "ran" : "did not run", w.err);
        assert_non_null(strstr(w.err, rows[i][0]));
    }
    /* A signal during the wait: 128 + N, not COMMAND. */
    start(&w, (const char *[]){"run", "-E", "0", "cli-unheld", "--", "touch", ran, NULL});
    wait_subscriber("redisson_lock__channel:{cli-unheld}");
    assert_int_equal(kill(w.pid, SIGTERM), 0);
    assert_int_equal(finish(&w, 5000), 128 + SIGTERM);
    assert_int_equal(access(ran, F_OK), -1);
    /* Another type under the name: refused, COMMAND does not run. */
    redis_cmd(out, sizeof out, "SET", "cli-unheld-str", "x");
    assert_int_not_equal(run_cli(&w, (const char *[]){"run", "-E", "0", "--wait", "0",
                                                       "cli-unheld-str", "--", "touch", ran,
                                                       NULL}), 0);
    assert_int_equal(access(ran, F_OK), -1);
    redis_cmd(out, sizeof out, "DEL", "cli-unheld-str", NULL);
    /* Nobody listening: the wait runs out, COMMAND does not run. */
    start_env(&w, "redis://127.0.0.1:1", (const char *[]){"run", "-E", "0", "--wait",
                                                          "300ms", "cli-unheld", "--",
                                                          "touch", ran, NULL});
    assert_int_not_equal(finish(&w, 10000), -1);
    assert_int_equal(access(ran, F_OK), -1);

    assert_non_null(f = fopen(go, "w"));
    fclose(f);
    for (i = 0; i < 3; i++)
        assert_int_equal(finish(&h[i], 5000), 0);
    assert_false(key_exists("cli-unheld"));
    assert_false(key_exists("cli-unheld-fair"));
    unlink(go);
}

/* COMMAND's exit status passes through (a signal death as 128+N); the lock
 * is released after it; COMMAND inherits no descriptor of dlock's; a
 * command that does not exist is 127. The fair lock takes the same path. */
static void test_exit_status(void **state)
{
    proc p;

    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-st", "--", "sh", "-c",
                                                   "exit 3", NULL}), 3);
    assert_false(key_exists("cli-st"));
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fair", "cli-st", "--", "sh",
                                                   "-c", "kill -USR1 $$", NULL}),
                     128 + SIGUSR1);
    assert_false(key_exists("cli-st"));
    /* Only 0, 1, 2 and ls's own directory: the Redis connections stay
     * dlock's (close-on-exec). */
    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-st", "--", "ls",
                                                   "/proc/self/fd", NULL}), 0);
    assert_string_equal(p.out, "0\n1\n2\n3\n");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-st", "--",
                                                   "/nonexistent/cmd", NULL}), 127);
    assert_one_line_error(&p, "/nonexistent/cmd");
    assert_false(key_exists("cli-st"));
}

/* SIGTERM to dlock reaches COMMAND, whose trap decides the exit status. */
static void test_signal_forwarded(void **state)
{
    char script[PATH_MAX + 128], ready[PATH_MAX];
    proc p;

    snprintf(ready, sizeof ready, "%s/sig-ready", dir);
    snprintf(script, sizeof script,
             "trap 'echo got-TERM; kill $!; exit 5' TERM; sleep 30 & touch %s; wait",
             ready);
    start(&p, (const char *[]){"run", "cli-sig", "--", "sh", "-c", script, NULL});
    wait_file(ready);
    assert_int_equal(kill(p.pid, SIGTERM), 0);
    assert_int_equal(finish(&p, 5000), 5);
    assert_string_equal(p.out, "got-TERM\n");
    assert_false(key_exists("cli-sig"));
}

/* status names the holder (the owner field Redis holds); unlock --force
 * takes the lock away, the holder's watchdog (renewing every 100 ms)
 * finds it lost, and --on-lost kill ends COMMAND (137 = 128 + SIGKILL). */
static void test_status_and_lost(void **state)
{
    char script[PATH_MAX + 64], ready[PATH_MAX + 8], field[256];
    proc h, p;
    json_t *doc, *holders;

    snprintf(ready, sizeof ready, "%s/lost-ready", dir);
    snprintf(script, sizeof script, "touch %s; exec sleep 30", ready);
    start(&h, (const char *[]){"run", "--watchdog-timeout", "300ms", "--on-lost", "kill",
                               "--lost-exit-code", "99", "cli-lost", "--", "sh", "-c",
                               script, NULL});
    wait_file(ready);

    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-lost", NULL}), 0);
    doc = parse_json(p.out);
    assert_string_equal(json_string_value(json_object_get(doc, "type")), "reentrant");
    assert_true(json_is_true(json_object_get(doc, "locked")));
    holders = json_object_get(doc, "holders");
    assert_int_equal(json_array_size(holders), 1);
    redis_cmd(field, sizeof field, "HKEYS", "cli-lost", NULL);
    assert_string_equal(json_string_value(json_object_get(json_array_get(holders, 0),
                                                          "owner")), field);
    json_decref(doc);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-lost", NULL}), 0);
    assert_non_null(strstr(p.out, "locked"));
    assert_non_null(strstr(p.out, field));

    assert_true(running(&h));
    assert_int_equal(run_cli(&p, (const char *[]){"unlock", "cli-lost", NULL}), 2);
    assert_int_equal(run_cli(&p, (const char *[]){"unlock", "--force", "cli-lost", NULL}), 0);
    /* --lost-exit-code's N, not COMMAND's 137 */
    assert_int_equal(finish(&h, 5000), 99);
    assert_one_line_error(&h, "lost the lock 'cli-lost'");
    assert_non_null(strstr(h.err, "found it gone"));

    /* nothing stored: status exits 4 */
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-lost", NULL}), 4);
    doc = parse_json(p.out);
    assert_true(json_is_false(json_object_get(doc, "locked")));
    json_decref(doc);

    /* --on-lost ignore: COMMAND runs on, its status passes through. */
    snprintf(script, sizeof script, "touch %s.2; sleep 1; exit 4", ready);
    start(&h, (const char *[]){"run", "--watchdog-timeout", "300ms", "--on-lost", "ignore",
                               "cli-lost", "--", "sh", "-c", script, NULL});
    strcat(ready, ".2");
    wait_file(ready);
    assert_int_equal(run_cli(&p, (const char *[]){"unlock", "--force", "cli-lost", NULL}), 0);
    assert_int_equal(finish(&h, 5000), 4);
    assert_one_line_error(&h, "lost the lock 'cli-lost'");
}

/* A signal while dlock waits for the lock ends the wait: exit 128+N,
 * COMMAND never runs, and a fair-lock waiter leaves the queue. */
static void test_interrupted_wait(void **state)
{
    char script[PATH_MAX + 32], ran[PATH_MAX], out[64];
    proc h, w;
    int64_t deadline = now_ms() + 5000;

    snprintf(ran, sizeof ran, "%s/waiter-ran", dir);
    snprintf(script, sizeof script, "touch %s", ran);
    start(&h, (const char *[]){"run", "--fair", "cli-intr", "--", "sleep", "30", NULL});
    wait_key("cli-intr");
    start(&w, (const char *[]){"run", "--fair", "cli-intr", "--", "sh", "-c", script, NULL});
    for (;;) {
        redis_cmd(out, sizeof out, "LLEN", "redisson_lock_queue:{cli-intr}", NULL);
        if (strcmp(out, "1") == 0)
            break;
        assert_true(now_ms() < deadline);
        sleep_ms(10);
    }
    assert_int_equal(kill(w.pid, SIGTERM), 0);
    assert_int_equal(finish(&w, 5000), 128 + SIGTERM);
    assert_int_equal(access(ran, F_OK), -1);
    redis_cmd(out, sizeof out, "LLEN", "redisson_lock_queue:{cli-intr}", NULL);
    assert_string_equal(out, "0");
    /* The holder passes TERM on to sleep, which dies of it. */
    assert_int_equal(kill(h.pid, SIGTERM), 0);
    assert_int_equal(finish(&h, 5000), 128 + SIGTERM);
    assert_false(key_exists("cli-intr"));
}

/* --lease: no renewal; the lease's end while COMMAND runs is a loss,
 * --on-lost term (the default) ends COMMAND with SIGTERM, and dlock exits
 * 124 (--lost-exit-code's default). */
static void test_lease_ends(void **state)
{
    proc p;

    assert_int_equal(run_cli(&p, (const char *[]){"run", "--lease", "300ms", "cli-lease",
                                                   "--", "sleep", "30", NULL}), 124);
    assert_one_line_error(&p, "lost the lock 'cli-lease'");
    assert_non_null(strstr(p.err, "its --lease of 300ms ends at "));
    assert_non_null(strstr(p.err, "sent SIGTERM"));
    assert_false(key_exists("cli-lease"));
    /* A COMMAND that ends within the lease: no loss, nothing said. */
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--lease", "10s", "cli-lease",
                                                   "--", "true", NULL}), 0);
    assert_string_equal(p.err, "");
    assert_false(key_exists("cli-lease"));
}

static void test_semaphore(void **state)
{
    char out[64];
    proc p, w;
    json_t *doc;

    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem", "set", "2", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem", "set", "5", NULL}), 1);
    assert_one_line_error(&p, "already set");
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem", "acquire", "2", NULL}), 0);
    redis_cmd(out, sizeof out, "GET", "cli-sem", NULL);
    assert_string_equal(out, "0");
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "--wait", "0", "cli-sem",
                                                   "acquire", NULL}), 1);
    assert_one_line_error(&p, "cli-sem");
    /* A waiting acquire gets the permit a release gives back. */
    start(&w, (const char *[]){"semaphore", "cli-sem", "acquire", NULL});
    wait_subscriber("redisson_sc:{cli-sem}");
    assert_true(running(&w));
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem", "release", "2", NULL}), 0);
    assert_int_equal(finish(&w, 5000), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem", "status", NULL}), 0);
    doc = parse_json(p.out);
    assert_string_equal(json_string_value(json_object_get(doc, "type")), "semaphore");
    assert_int_equal(json_integer_value(json_object_get(doc, "permits")), 1);
    json_decref(doc);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem", "status", "--text", NULL}), 0);
    assert_string_equal(p.out, "semaphore 'cli-sem': 1 permit available, no expiry\n");
}

static void test_latch(void **state)
{
    proc p, w;
    json_t *doc;

    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "set", "2", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "set", "2", NULL}), 1);
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "--wait", "0", "cli-latch",
                                                   "await", NULL}), 1);
    assert_one_line_error(&p, "cli-latch");
    start(&w, (const char *[]){"latch", "cli-latch", "await", NULL});
    wait_subscriber("redisson_countdownlatch__channel__{cli-latch}");
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "count-down", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "status", NULL}), 0);
    doc = parse_json(p.out);
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 1);
    json_decref(doc);
    assert_true(running(&w));
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "count-down", NULL}), 0);
    assert_int_equal(finish(&w, 5000), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "status", "--text", NULL}), 0);
    assert_string_equal(p.out, "latch 'cli-latch': open\n");
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-latch", "set", "0", NULL}), 2);
}

/* Usage errors: one line, exit 2, before anything is sent. */
static void test_usage_errors(void **state)
{
    static const struct { const char *args[8]; const char *needle; } cases[] = {
        {{"run", "--wait", "5x", "n", "--", "true"}, "'5x'"},
        {{"run", "--wait", "0.0001s", "n", "--", "true"}, "finer than a millisecond"},
        {{"run", "--lease", "-1", "n", "--", "true"}, "'-1'"},
        {{"run", "--wait", "99999999999999999999", "n", "--", "true"}, "too long"},
        {{"run", "--on-lost", "explode", "n", "--", "true"}, "explode"},
        {{"run", "--conflict-exit-code", "300", "n", "--", "true"}, "300"},
        {{"run", "n", "--"}, "COMMAND"},
        {{"run", "--wait"}, "--wait"},
        {{"frobnicate", "n"}, "frobnicate"},
        {{"status", "--bogus", "n"}, "--bogus"},
        {{"semaphore", "n", "explode"}, "explode"},
        {{"semaphore", "n", "set"}, "number"},
        {{"latch", "n", "await", "3"}, "'3'"},
        {{"--url", "ftp://x", "status", "n"}, "ftp"},
        {{"status", ""}, "bad lock name"},
        {{"run", "", "--", "true"}, "bad lock name"},
        /* another object's key: the library's reason, the form named */
        {{"run", "--fair", "{cli-v}", "--", "true"}, "derives the same keys from it as from"},
        {{"status", "redisson_lock_queue:{cli-v}"}, "a fair lock's wait queue"},
        {{"unlock", "--force", "{cli-v}:holders"}, "a semaphore lock's holders"},
        {{NULL}, "command"},
    };
    size_t i;
    proc p;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (run_cli(&p, cases[i].args) != 2) {
            fprintf(stderr, "  case %zu (%s ...): not exit 2\n", i,
                    cases[i].args[0] ? cases[i].args[0] : "(none)");
            fail();
        }
        assert_one_line_error(&p, cases[i].needle);
        assert_string_equal(p.out, "");
    }
    /* Not a usage error: nothing listens there. */
    assert_int_equal(run_cli(&p, (const char *[]){"--url", "redis://127.0.0.1:1", "status",
                                                   "n", NULL}), 125);
    assert_one_line_error(&p, "127.0.0.1:1");
    assert_int_equal(run_cli(&p, (const char *[]){"--help", NULL}), 0);
    assert_non_null(strstr(p.out, "Usage: dlock"));
    assert_int_equal(run_cli(&p, (const char *[]){"--version", NULL}), 0);
    assert_non_null(strstr(p.out, dlock_version()));
    { /* the build's optional parts (make WITH_TLS=0 WITH_YAML=0) */
        char parts[64];
        snprintf(parts, sizeof parts, "\nbuilt with: %s%smock", dlock_version_info(),
                 dlock_version_info()[0] ? " " : "");
        assert_non_null(strstr(p.out, parts));
    }
}

/* --url, then $DLOCK_URL, then redis://127.0.0.1:6379; other URL forms go
 * to the library as they are (unix:// here). */
static void test_urls(void **state)
{
    char unix_url[PATH_MAX + 16];
    proc p;

    /* $DLOCK_URL alone */
    start_env(&p, url, (const char *[]){"semaphore", "cli-url", "set", "3", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    /* --url wins over $DLOCK_URL */
    start_env(&p, "redis://127.0.0.1:1",
              (const char *[]){"--url", url, "semaphore", "cli-url", "acquire", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    /* the unix socket form, and --url after the sub-command */
    snprintf(unix_url, sizeof unix_url, "unix://%s", dlock_test_redis_socket(srv));
    start_env(&p, NULL, (const char *[]){"semaphore", "--url", unix_url, "cli-url",
                                         "acquire", "2", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "--wait", "0", "cli-url",
                                                   "acquire", NULL}), 1);
    /* Neither: the default address (a server may or may not listen on
     * this machine's 6379; when none does, the error names it). */
    start_env(&p, NULL, (const char *[]){"status", "cli-url", NULL});
    if (finish(&p, 10000) != 0)
        assert_one_line_error(&p, "127.0.0.1:6379");
    /* An empty $DLOCK_URL counts as unset, not as a URL. */
    start_env(&p, "", (const char *[]){"status", "cli-url", NULL});
    if (finish(&p, 10000) != 0)
        assert_one_line_error(&p, "127.0.0.1:6379");
}

/* rediss:// with its query parameters (CA, client certificate and key)
 * goes through as well: a TLS-only server requiring client certificates. */
static void test_tls_url(void **state)
{
    dlock_test_redis *tls = NULL;
    const char *tls_url;
    proc p;
    json_t *doc;

    assert_int_equal(dlock_test_redis_start_tls(&tls, "yes", 0, NULL), 0);
    tls_url = dlock_test_redis_tls_url(tls);
    start_env(&p, tls_url, (const char *[]){"run", "--wait", "0", "cli-tls", "--", "sh",
                                            "-c", "exit 6", NULL});
    assert_int_equal(finish(&p, 10000), 6);
    start_env(&p, tls_url, (const char *[]){"semaphore", "cli-tls", "set", "2", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    start_env(&p, tls_url, (const char *[]){"semaphore", "cli-tls", "status", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    doc = parse_json(p.out);
    assert_int_equal(json_integer_value(json_object_get(doc, "permits")), 2);
    json_decref(doc);
    dlock_test_redis_stop(tls);
}

/* "mock:" is a store private to one dlock process: the tool runs on it
 * (a dry run with no server), and nothing carries over to the next
 * process, so the same `set` succeeds twice. */
static void test_mock_url(void **state)
{
    proc p;
    json_t *doc;

    assert_int_equal(run_cli(&p, (const char *[]){"--url", "mock:", "run", "--wait", "0",
                                                   "m", "--", "sh", "-c", "exit 4", NULL}), 4);
    assert_int_equal(run_cli(&p, (const char *[]){"--url", "mock:", "semaphore", "m",
                                                   "set", "1", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"--url", "mock:", "semaphore", "m",
                                                   "set", "1", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"--url", "mock:", "status", "m", NULL}), 4);
    doc = parse_json(p.out);
    assert_true(json_is_false(json_object_get(doc, "locked")));
    json_decref(doc);
}

/* ---- issue 29: COMMAND never runs without the lock; cron-friendly ------- */

/* Whether process pid is gone: no such process, or a zombie (an orphan
 * handed to a reaper that has not reaped it yet is dead all the same). */
static int proc_gone(pid_t pid)
{
    char path[64], buf[512], *close_paren;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    close_paren = strrchr(buf, ')');
    return !close_paren || close_paren[1] == '\0' || close_paren[2] == 'Z' ||
           close_paren[2] == 'X';
}

/* Waits up to ms for pid to be gone; whether it is. */
static int wait_gone(pid_t pid, int ms)
{
    int64_t deadline = now_ms() + ms;
    while (!proc_gone(pid)) {
        if (now_ms() > deadline)
            return 0;
        sleep_ms(5);
    }
    return 1;
}

static pid_t read_pid(const char *path)
{
    char buf[32] = "";
    FILE *f;

    wait_file(path);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_true(atoi(buf) > 1);
    return (pid_t)atoi(buf);
}

/* A script that records its own pid in <dir>/<tag>.p and its background
 * child's in <dir>/<tag>.c (that one written last), then waits; the
 * child runs `body` (e.g. "exec sleep 30"). */
static void family_script(char *script, size_t len, const char *tag, const char *body,
                          char *p_path, char *c_path, size_t plen)
{
    snprintf(p_path, plen, "%s/%s.p", dir, tag);
    snprintf(c_path, plen, "%s/%s.c", dir, tag);
    snprintf(script, len, "echo $$ > %s; (%s) & echo $! > %s.tmp; mv %s.tmp %s; wait",
             p_path, body, c_path, c_path, c_path);
}

/* kill -9 of dlock while COMMAND runs: COMMAND (PR_SET_PDEATHSIG) and the
 * child it started (the guardian kills the group) are gone within 1 s. */
static void test_killed_dlock(void **state)
{
    char script[1024], pp[128], cp[128];
    pid_t cmd, kid;
    proc p;

    family_script(script, sizeof script, "k9", "exec sleep 30", pp, cp, sizeof pp);
    start(&p, (const char *[]){"run", "cli-k9", "--", "sh", "-c", script, NULL});
    kid = read_pid(cp);
    cmd = read_pid(pp);
    assert_false(proc_gone(cmd));
    assert_false(proc_gone(kid));
    assert_int_equal(kill(p.pid, SIGKILL), 0);
    assert_int_equal(finish(&p, 5000), 128 + SIGKILL);
    assert_true(wait_gone(cmd, 1000));
    assert_true(wait_gone(kid, 1000));
    redis_cmd(script, sizeof script, "DEL", "cli-k9", NULL);
}

/* Signals go to COMMAND's process group (what COMMAND started too);
 * --no-group: to COMMAND alone, as before. */
static void test_group_signals(void **state)
{
    char script[1024], pp[128], cp[128];
    pid_t kid;
    proc p;

    family_script(script, sizeof script, "grp", "exec sleep 30", pp, cp, sizeof pp);
    start(&p, (const char *[]){"run", "cli-grp", "--", "sh", "-c", script, NULL});
    kid = read_pid(cp);
    assert_int_equal(kill(p.pid, SIGTERM), 0);
    assert_int_equal(finish(&p, 5000), 128 + SIGTERM);
    assert_true(wait_gone(kid, 5000));
    assert_false(key_exists("cli-grp"));

    unlink(pp);
    unlink(cp);
    start(&p, (const char *[]){"run", "--no-group", "cli-grp", "--", "sh", "-c", script, NULL});
    kid = read_pid(cp);
    assert_int_equal(kill(p.pid, SIGTERM), 0);
    assert_int_equal(finish(&p, 5000), 128 + SIGTERM);
    assert_false(proc_gone(kid)); /* not signalled: it runs on */
    assert_int_equal(kill(kid, SIGKILL), 0);
    assert_true(wait_gone(kid, 5000));
}

/* A group member that ignores SIGTERM: before the 3 s lease ends the
 * group gets SIGTERM, the member stays, and --kill-after 1s later SIGKILL
 * (still before the lease's end); dlock exits (124) once the group is
 * gone. */
static void test_kill_after(void **state)
{
    char script[1024], pp[128], cp[128];
    int64_t t0 = now_ms();
    pid_t kid;
    proc p;

    family_script(script, sizeof script, "ka", "trap '' TERM; exec sleep 30", pp, cp,
                  sizeof pp);
    start(&p, (const char *[]){"run", "--lease", "3s", "--kill-after", "1s", "cli-ka", "--",
                               "sh", "-c", script, NULL});
    kid = read_pid(cp);
    assert_int_equal(finish(&p, 10000), 124);
    assert_true(proc_gone(kid));
    /* SIGTERM no earlier than 3 s - 1 s - 300 ms, SIGKILL 1 s after it: a
     * lower bound */
    assert_true(now_ms() - t0 >= 2700);
    assert_one_line_error(&p, "lost the lock 'cli-ka'");
    assert_non_null(strstr(p.err, "sent SIGTERM"));
}

/* The server stops mid-job: no renewal gets through, and when the last
 * renewal's lease (1.5 s) ends the lock counts as lost: COMMAND gets
 * SIGTERM and dlock exits with --lost-exit-code. On a server of its own,
 * so that the others' stays up. */
static void test_server_down(void **state)
{
    char script[1024], pp[128], cp[128];
    dlock_test_redis *down = NULL;
    int64_t t_kill;
    pid_t cmd;
    proc p;

    assert_int_equal(dlock_test_redis_start(&down, NULL), 0);
    family_script(script, sizeof script, "down", "exec sleep 30", pp, cp, sizeof pp);
    start_env(&p, dlock_test_redis_url(down),
              (const char *[]){"run", "--watchdog-timeout", "1500ms", "--lost-exit-code", "77",
                               "cli-down", "--", "sh", "-c", script, NULL});
    read_pid(cp);
    cmd = read_pid(pp);
    assert_int_equal(dlock_test_redis_kill(down), 0);
    t_kill = now_ms();
    /* COMMAND would run 30 s; it ends with the lease instead */
    assert_int_equal(finish(&p, 15000), 77);
    assert_true(now_ms() - t_kill < 12000);
    assert_true(proc_gone(cmd));
    assert_one_line_error(&p, "lost the lock 'cli-down'");
    assert_non_null(strstr(p.err, "its lease of 1.5s ends at "));
    assert_non_null(strstr(p.err, "not renewed since "));
    dlock_test_redis_stop(down);
}

/* The durations table: each form as the lease of a run whose COMMAND
 * reads the lock's TTL back (dlock status), and the forms refused. */
static void test_durations(void **state)
{
    static const struct { const char *text; int64_t ms; } good[] = {
        {"20", 20000}, {"12.5", 12500}, {"12.25s", 12250}, {"12500ms", 12500},
        {"0.5m", 30000}, {"1h30m", 5400000}, {"1.5h", 5400000}, {"2d", 172800000},
        {"1d1h1m1.5s", 90061500}, {"2m0.5s", 120500}, {".5m", 30000},
    };
    static const char *const bad[] = {
        "1h30", "30m1h", "1m1m", "0.0001s", "5x", "-1", "1.5.5", "", "ms", "1e3", "1 s",
        "s1", ".", "1ms30s",
    };
    size_t i;
    proc p;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *doc;
        json_int_t ttl;
        start(&p, (const char *[]){"run", "--lease", good[i].text, "cli-dur", "--",
                                   cli_path(), "--url", url, "status", "cli-dur", NULL});
        assert_int_equal(finish(&p, 10000), 0);
        doc = parse_json(p.out);
        ttl = json_integer_value(json_object_get(doc, "ttl_ms"));
        if (ttl > good[i].ms || ttl <= good[i].ms - 5000) {
            fprintf(stderr, "  --lease %s: ttl %lld, expected %lld\n", good[i].text,
                    (long long)ttl, (long long)good[i].ms);
            fail();
        }
        json_decref(doc);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (run_cli(&p, (const char *[]){"run", "--wait", bad[i], "cli-dur", "--", "true",
                                         NULL}) != 2) {
            fprintf(stderr, "  --wait '%s': not a usage error\n", bad[i]);
            fail();
        }
        assert_one_line_error(&p, "--wait");
    }
    /* Errors give durations with their unit. */
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--wait", "99999999999", "n", "--",
                                                   "true", NULL}), 2);
    assert_one_line_error(&p, "at most 11574d1h46m40s");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--watchdog-timeout", "0.002",
                                                   "n", "--", "true", NULL}), 2);
    assert_one_line_error(&p, "at least 3ms");
}

/* -q: no message when the lock (the permits, the latch) was not had;
 * real errors are still said. */
static void test_quiet(void **state)
{
    proc h, p;

    start(&h, (const char *[]){"run", "cli-q", "--", "sleep", "30", NULL});
    wait_key("cli-q");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "-q", "--wait", "0", "cli-q", "--",
                                                   "true", NULL}), 1);
    assert_string_equal(p.err, "");
    assert_int_equal(run_cli(&p, (const char *[]){"-q", "run", "--wait", "0.1", "cli-q",
                                                   "--", "true", NULL}), 1);
    assert_string_equal(p.err, "");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-q", "--quiet", "--wait", "0",
                                                   "-E", "3", "--", "true", NULL}), 3);
    assert_string_equal(p.err, "");
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "-q", "--wait", "0", "cli-q-sem",
                                                   "set", "0", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "-q", "--wait", "0", "cli-q-sem",
                                                   "acquire", NULL}), 1);
    assert_string_equal(p.err, "");
    /* an error is still printed (with --wait 0: without it, run waits for
     * a server that is down) */
    assert_int_equal(run_cli(&p, (const char *[]){"-q", "--url", "redis://127.0.0.1:1", "run",
                                                   "--wait", "0", "cli-q", "--", "true", NULL}),
                     125);
    assert_one_line_error(&p, "127.0.0.1:1");
    assert_int_equal(kill(h.pid, SIGTERM), 0);
    assert_int_equal(finish(&h, 5000), 128 + SIGTERM);
}

/* Every sub-command's --help is its own usage; the URL forms list every
 * scheme; --config FILE / $DLOCK_CONFIG take the library's JSON
 * configuration (a client set is refused by a one-server command), or a
 * Redisson YAML one by its name. */
static void test_help_and_config(void **state)
{
    static const char *const subs[] = {"run", "status", "unlock", "semaphore", "latch"};
    char path[PATH_MAX], set_path[PATH_MAX], bad_path[PATH_MAX], want[64], env[PATH_MAX + 16];
    FILE *f;
    size_t i;
    proc p;

    for (i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        assert_int_equal(run_cli(&p, (const char *[]){subs[i], "--help", NULL}), 0);
        snprintf(want, sizeof want, "Usage: dlock %s ", subs[i]);
        assert_non_null(strstr(p.out, want));
        assert_non_null(strstr(p.out, "redis-cluster://"));
    }
    assert_int_equal(run_cli(&p, (const char *[]){"--help", NULL}), 0);
    assert_non_null(strstr(p.out, "rediss-cluster://"));

    snprintf(path, sizeof path, "%s/one.json", dir);
    snprintf(set_path, sizeof set_path, "%s/set.json", dir);
    snprintf(bad_path, sizeof bad_path, "%s/bad.json", dir);
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "{\"url\": \"%s\", \"command_timeout_ms\": 3000}\n", url);
    fclose(f);
    assert_non_null(f = fopen(set_path, "w"));
    fprintf(f, "{\"urls\": [\"%s\", \"%s\"]}\n", url, url);
    fclose(f);
    assert_non_null(f = fopen(bad_path, "w"));
    fprintf(f, "{\"url\": \"%s\",\n \"pool_size\": \"many\"}\n", url);
    fclose(f);

    start_env(&p, NULL, (const char *[]){"--config", path, "run", "--wait", "0", "cli-cfg",
                                         "--", "sh", "-c", "exit 6", NULL});
    assert_int_equal(finish(&p, 10000), 6);
    start_env(&p, NULL, (const char *[]){"semaphore", "cli-cfg", "--config", path, "set", "2",
                                         NULL});
    assert_int_equal(finish(&p, 10000), 0);
    snprintf(env, sizeof env, "DLOCK_CONFIG=%s", path);
    extra_env = env;
    start_env(&p, NULL, (const char *[]){"semaphore", "cli-cfg", "acquire", "2", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    /* both variables: which one was meant? */
    start_env(&p, url, (const char *[]){"status", "cli-cfg", NULL});
    assert_int_equal(finish(&p, 10000), 2);
    assert_one_line_error(&p, "DLOCK_CONFIG");
    extra_env = NULL;
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "--wait", "0", "cli-cfg",
                                                   "acquire", NULL}), 1);

    assert_int_equal(run_cli(&p, (const char *[]){"--config", set_path, "unlock", "--force",
                                                   "cli-cfg", NULL}), 2);
    assert_one_line_error(&p, "client set of 2 servers");
    assert_int_equal(run_cli(&p, (const char *[]){"--config", bad_path, "status", "cli-cfg",
                                                   NULL}), 2);
    assert_one_line_error(&p, "pool_size");
    assert_non_null(strstr(p.err, "bad.json:2:"));
    assert_int_equal(run_cli(&p, (const char *[]){"--config", path, "--url", url, "status",
                                                   "cli-cfg", NULL}), 2);
    assert_one_line_error(&p, "not both");

    /* A Redisson YAML file, by its name (.yaml, .yml): the lock is taken
     * on the server its address names; an error gives the field's line
     * and column. */
    snprintf(path, sizeof path, "%s/redisson.yaml", dir);
    snprintf(bad_path, sizeof bad_path, "%s/bad.YML", dir);
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "singleServerConfig:\n  address: \"%s\"\n  timeout: 3000\n"
               "codec: !<org.redisson.codec.Kryo5Codec> {}\n", url);
    fclose(f);
    assert_non_null(f = fopen(bad_path, "w"));
    fprintf(f, "singleServerConfig:\n  address: \"%s\"\n  timeout: many\n", url);
    fclose(f);
    start_env(&p, NULL, (const char *[]){"--config", path, "semaphore", "cli-yaml", "set", "1",
                                         NULL});
    assert_int_equal(finish(&p, 10000), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"--url", url, "semaphore", "--wait", "0",
                                                   "cli-yaml", "acquire", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"--config", bad_path, "status", "cli-yaml",
                                                   NULL}), 2);
    assert_one_line_error(&p, "singleServerConfig.timeout");
    assert_non_null(strstr(p.err, "bad.YML:3:12: "));
}

/* Issue 29 §2 / 32 §3: `dlock run` without --wait, started while its
 * server is down (a boot script before Redis), waits for the server and
 * then for the lock, and runs COMMAND; with --wait 0 it still fails at
 * once (125: unreachable is not "held by another", exit 1). */
static void test_run_server_down_at_start(void **state)
{
    dlock_test_redis *down = NULL;
    char done[PATH_MAX], script[PATH_MAX + 32];
    proc p, q;
    int64_t t0;

    assert_int_equal(dlock_test_redis_start(&down, NULL), 0);
    assert_int_equal(dlock_test_redis_kill(down), 0); /* its port stays */
    snprintf(done, sizeof done, "%s/ran-after-start", dir);
    snprintf(script, sizeof script, "touch %s", done);
    start_env(&p, dlock_test_redis_url(down),
              (const char *[]){"run", "cli-down", "--", "sh", "-c", script, NULL});
    start_env(&q, dlock_test_redis_url(down),
              (const char *[]){"run", "--wait", "0", "cli-down", "--", "true", NULL});
    assert_int_equal(finish(&q, 10000), 125);
    assert_one_line_error(&q, "cannot connect");
    /* still waiting, for as long as the server is down (not a timing
     * bound: it must not have ended, whatever the load) */
    sleep_ms(500);
    assert_true(running(&p));
    assert_int_equal(access(done, F_OK), -1);
    t0 = now_ms();
    assert_int_equal(dlock_test_redis_restart(down), 0);
    assert_int_equal(finish(&p, 30000), 0);
    assert_int_equal(access(done, F_OK), 0);
    if (now_ms() - t0 > 5000)
        fprintf(stderr, "  (note: ran %lld ms after the server came up)\n",
                (long long)(now_ms() - t0));
    dlock_test_redis_stop(down);
}

/* ---- every lock type (issue 29, section 3) ---------------------------------- */

/* Runs `dlock ARGS... -- sh -c SCRIPT` where "$D" in SCRIPT is the dlock
 * binary: what the script prints while the lock is held lands in p->out.
 * COMMAND does not inherit dlock's $DLOCK_URL (issue 28: it may hold a
 * password), so the script sets it for its own dlock calls. */
static int run_holding(proc *p, const char *const *opts, const char *script)
{
    const char *args[32];
    char sh[2048];
    size_t n = 0, i;

    snprintf(sh, sizeof sh, "D='%s'; export DLOCK_URL='%s'; %s", cli_path(), url, script);
    args[n++] = "run";
    for (i = 0; opts[i]; i++)
        args[n++] = opts[i];
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = sh;
    args[n] = NULL;
    return run_cli(p, args);
}

static void assert_has(const char *text, const char *needle)
{
    if (!strstr(text, needle)) {
        fprintf(stderr, "  expected [%s] in: [%s]\n", needle, text);
        fail();
    }
}

/* status reads whatever is stored under a name as what it is; run refuses
 * a name of another type with one line saying which. */
static void test_status_every_type(void **state)
{
    char out[256];
    proc p;
    json_t *doc;

    /* the read-write lock: either half, and the whole lock in status */
    assert_int_equal(run_holding(&p, (const char *[]){"--read", "cli-rw", NULL},
                                 "$D status --text cli-rw; $D status cli-rw; "
                                 "$D run --wait 0 cli-rw true; echo rc=$?"), 0);
    assert_has(p.out, "rwlock 'cli-rw': read-locked");
    assert_has(p.out, "  reader ");
    assert_has(p.out, "\"kind\":\"rwlock\"");
    assert_has(p.out, "\"mode\":\"read\"");
    assert_has(p.out, "rc=2");
    assert_has(p.err, "'cli-rw' is a read-write lock, not a reentrant lock");
    assert_int_equal(run_holding(&p, (const char *[]){"--write", "cli-rw", NULL},
                                 "$D status --text cli-rw; "
                                 "$D run --read --wait 0 cli-rw true; echo rc=$?"), 0);
    assert_has(p.out, "rwlock 'cli-rw': write-locked, ttl ");
    assert_has(p.out, "  writer ");
    assert_has(p.out, "rc=1"); /* a reader waits for the writer: busy */
    assert_false(key_exists("cli-rw"));
    /* unlock --force as the type stored: a read-write lock's readers */
    assert_int_equal(run_holding(&p, (const char *[]){"--read", "--on-lost", "ignore",
                                                      "cli-rw", NULL},
                                 "$D unlock --force cli-rw; echo rc=$?; $D status cli-rw"),
                     4);
    assert_has(p.out, "rc=0");
    assert_has(p.out, "\"kind\":\"none\"");
    assert_false(key_exists("cli-rw"));

    /* the fenced lock: its token to COMMAND, in status, and by --verbose */
    assert_int_equal(run_holding(&p, (const char *[]){"--fenced", "-v", "cli-fen", NULL},
                                 "echo token=$DLOCK_FENCING_TOKEN; $D status --text cli-fen"),
                     0);
    assert_has(p.out, "token=1\n");
    assert_has(p.out, "fenced 'cli-fen': locked, token 1");
    assert_one_line_error(&p, "lock 'cli-fen' held by ");
    assert_has(p.err, "fencing token 1");
    assert_int_equal(run_holding(&p, (const char *[]){"--fenced", "cli-fen", NULL},
                                 "echo token=$DLOCK_FENCING_TOKEN"), 0);
    assert_has(p.out, "token=2\n");
    /* a free fenced lock is its counter: still a fenced lock */
    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-fen", "true", NULL}), 2);
    assert_one_line_error(&p, "'cli-fen' is a fenced lock, not a reentrant lock");

    /* the semaphore as a lock: one of N permits, its count set to N */
    assert_int_equal(run_holding(&p, (const char *[]){"--semaphore", "2", "cli-sl", NULL},
                                 "$D status --text cli-sl; $D status cli-sl"), 0);
    assert_has(p.out, "semaphore 'cli-sl': locked, 1 permit available");
    assert_has(p.out, "\"kind\":\"semaphore_lock\"");
    redis_cmd(out, sizeof out, "GET", "cli-sl", NULL);
    assert_string_equal(out, "2"); /* the permit came back */

    /* a bare count: a semaphore's or a latch's */
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-cnt", "set", "3", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-cnt", NULL}), 0);
    doc = parse_json(p.out);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "counter");
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), 3);
    json_decref(doc);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-cnt", NULL}), 0);
    assert_string_equal(p.out, "counter 'cli-cnt': 3 (a semaphore's permits or a latch's "
                               "count), no expiry\n");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fair", "cli-cnt", "true", NULL}), 2);
    assert_one_line_error(&p, "'cli-cnt' is a semaphore or latch count, not a fair lock");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--write", "cli-cnt", "true", NULL}),
                     2);
    assert_one_line_error(&p, "not a read-write lock");
    assert_int_equal(run_cli(&p, (const char *[]){"unlock", "--force", "cli-cnt", NULL}), 2);
    assert_one_line_error(&p, "'cli-cnt' is a semaphore or latch count, not a lock");
    redis_cmd(out, sizeof out, "GET", "cli-cnt", NULL);
    assert_string_equal(out, "3");

    /* a simple lock (a string holding an owner id, as another program
     * left it), a string of someone else's, a key of another type */
    redis_cmd(out, sizeof out, "SET", "cli-simple", "0b3b0b3b-0b3b-0b3b-0b3b-0b3b0b3b0b3b:7");
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-simple", NULL}), 0);
    assert_has(p.out, "simple 'cli-simple': locked");
    assert_has(p.out, "holder 0b3b0b3b-0b3b-0b3b-0b3b-0b3b0b3b0b3b:7");
    redis_cmd(out, sizeof out, "SET", "cli-str", "hello");
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-str", NULL}), 0);
    doc = parse_json(p.out);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "string");
    json_decref(doc);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--semaphore", "1", "cli-str", "true",
                                                   NULL}), 2);
    assert_one_line_error(&p, "'cli-str' is a string that is no dlock object, not a "
                              "semaphore held as a lock");
    redis_cmd(out, sizeof out, "RPUSH", "cli-list", "x");
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-list", NULL}), 0);
    assert_string_equal(p.out, "'cli-list' is a key of another Redis type\n");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-list", "true", NULL}), 2);
    assert_one_line_error(&p, "'cli-list' is a key of another Redis type, not a reentrant lock");

    /* a fair lock with waiters only (the queue and deadlines) */
    redis_cmd(out, sizeof out, "RPUSH", "redisson_lock_queue:{cli-fq}", "w1");
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-fq", NULL}), 3); /* free */
    doc = parse_json(p.out);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "fair");
    assert_int_equal(json_array_size(json_object_get(doc, "queue")), 1);
    json_decref(doc);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--wait", "0", "cli-fq", "true",
                                                   NULL}), 2);
    assert_one_line_error(&p, "'cli-fq' is a fair lock, not a reentrant lock");
    redis_cmd(out, sizeof out, "DEL", "redisson_lock_queue:{cli-fq}", NULL);
}

/* The permit-expiring semaphore, made with the library (the tool has no
 * command for it), read by status. */
static void test_status_permit_semaphore(void **state)
{
    dlock_client *c;
    dlock_permit_semaphore *ps;
    char err[256], **ids = NULL;
    proc p;
    json_t *doc;

    assert_int_equal(dlock_client_connect(&c, url, NULL, err, sizeof err), 0);
    assert_int_equal(dlock_permit_semaphore_new(&ps, c, "cli-ps"), 0);
    assert_int_equal(dlock_permit_semaphore_set_permits(ps, 3), 0);
    assert_int_equal(dlock_permit_semaphore_try_acquire(ps, &ids, 1, 0, 60000), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-ps", NULL}), 0);
    doc = parse_json(p.out);
    assert_string_equal(json_string_value(json_object_get(doc, "kind")), "permit_semaphore");
    json_decref(doc);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "cli-ps", "true", NULL}), 2);
    assert_one_line_error(&p, "'cli-ps' is a permit-expiring semaphore, not a reentrant lock");
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--text", "cli-ps*", NULL}), 0);
    assert_has(p.out, "permit_semaphore");
    assert_int_equal(dlock_object_delete(dlock_permit_semaphore_object(ps), NULL), 0);
    dlock_permit_ids_free(ids);
    dlock_permit_semaphore_free(ps);
    dlock_client_free(c);
}

/* list: one line per object whose name matches, its auxiliary keys (the
 * read holds' markers, the tokens, queues, descriptions) never listed as
 * objects of their own. */
static void test_list(void **state)
{
    char out[256];
    proc p;
    const char *line;
    int lines = 0;

    assert_int_equal(run_holding(&p, (const char *[]){"--read", "cli-ls-rw", NULL},
                                 "$D list 'cli-ls-*'; $D list --text 'cli-ls-*'"), 0);
    /* JSON: one object, as status prints it */
    line = p.out;
    {
        const char *nl = strchr(line, '\n');
        char first[4096];
        json_t *doc;
        assert_non_null(nl);
        snprintf(first, sizeof first, "%.*s", (int)(nl - line), line);
        doc = parse_json(first);
        assert_string_equal(json_string_value(json_object_get(doc, "kind")), "rwlock");
        assert_string_equal(json_string_value(json_object_get(doc, "name")), "cli-ls-rw");
        json_decref(doc);
        line = nl + 1;
    }
    assert_has(line, "rwlock           cli-ls-rw locked mode=read ttl=");
    assert_has(line, " holders=");
    for (line = p.out; (line = strchr(line, '\n')) != NULL; line++)
        lines++;
    assert_int_equal(lines, 2);

    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-ls-sem", "set", "4", NULL}),
                     0);
    redis_cmd(out, sizeof out, "SET", "cli-other", "x");
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--text", "cli-ls-*", NULL}), 0);
    assert_string_equal(p.out, "counter          cli-ls-sem count=4 ttl=none\n");
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--text", "cli-nothing-*", NULL}), 0);
    assert_string_equal(p.out, "");
    assert_int_equal(run_cli(&p, (const char *[]){"list", "cli-ls-f*", "extra", NULL}), 2);
    assert_one_line_error(&p, "one PATTERN only");
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--count", "0", NULL}), 2);
}

/* Who holds it: the tool's client describes itself (host, pid, program,
 * start), one key per client, shown next to each holder. */
static void test_owner_description(void **state)
{
    char host[256] = "", want[300], out[64];
    proc p;
    json_t *doc, *h;

    gethostname(host, sizeof host - 1);
    assert_int_equal(run_holding(&p, (const char *[]){"cli-who", NULL},
                                 "echo pid=$PPID; $D status cli-who; $D status --text cli-who; "
                                 "$D list --text cli-who"), 0);
    {
        char *nl = strchr(p.out, '\n'), *json_line;
        assert_non_null(nl);
        *nl = '\0';
        assert_true(strncmp(p.out, "pid=", 4) == 0);
        snprintf(want, sizeof want, "%.200s pid %.20s dlock, started ", host, p.out + 4);
        json_line = nl + 1;
        nl = strchr(json_line, '\n');
        assert_non_null(nl);
        *nl = '\0';
        doc = parse_json(json_line);
        h = json_array_get(json_object_get(doc, "holders"), 0);
        assert_non_null(h);
        assert_has(json_string_value(json_object_get(h, "described")), want);
        json_decref(doc);
        assert_has(nl + 1, want); /* status --text */
        assert_has(nl + 1, "cli-who locked ttl=");
    }
    /* one key per client: the run's, which expires with its watchdog */
    redis_cmd(out, sizeof out, "EXISTS", "cli-who", NULL);
    assert_string_equal(out, "0");
    {
        const char *argv[] = {"KEYS", "dlock_owner:*", NULL};
        char keys[4096];
        assert_int_equal(dlock_test_redis_command(srv, keys, sizeof keys, argv), 0);
        assert_non_null(strstr(keys, "dlock_owner:{"));
    }
    /* an owner id that no client described: shown as is */
    redis_cmd(out, sizeof out, "SET", "cli-who2", "0b3b0b3b-0b3b-0b3b-0b3b-0b3b0b3b0b3b:7");
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-who2", NULL}), 0);
    assert_null(strstr(p.out, "described"));
    /* turned off in the URL (which wins): no description */
    {
        char off[300], sh[400];
        snprintf(off, sizeof off, "%s?describe_owner=0", url);
        /* COMMAND does not inherit $DLOCK_URL: it passes the URL on */
        snprintf(sh, sizeof sh, "DLOCK_URL='%s' \"$0\" status cli-who3", url);
        start_env(&p, off, (const char *[]){"run", "cli-who3", "--", "sh", "-c", sh,
                                            cli_path(), NULL});
        assert_int_equal(finish(&p, 10000), 0);
        assert_has(p.out, "\"kind\":\"reentrant\"");
        assert_null(strstr(p.out, "described"));
    }
    /* a configuration says for itself: "describe_owner": true */
    {
        char path[PATH_MAX];
        FILE *f;
        snprintf(path, sizeof path, "%s/describe.json", dir);
        assert_non_null(f = fopen(path, "w"));
        fprintf(f, "{\"url\": \"%s\", \"describe_owner\": true}\n", url);
        fclose(f);
        start_env(&p, NULL, (const char *[]){"run", "--config", path, "cli-who4", "--", "sh",
                                             "-c", "DLOCK_CONFIG=$1 \"$0\" status cli-who4",
                                             cli_path(), path, NULL});
        assert_int_equal(finish(&p, 10000), 0);
        assert_has(p.out, "\"described\":");
    }
}

/* dlock semaphore: delete, an acquire on a name never set (a hint, and
 * --wait gives up), release beyond the count set gave (refused). */
static void test_semaphore_more(void **state)
{
    char out[64];
    proc p;

    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "--wait", "0.2", "cli-never",
                                                   "acquire", NULL}), 1);
    assert_has(p.err, "semaphore 'cli-never' was never set (dlock semaphore cli-never set N)");
    assert_has(p.err, "not available within 200ms");
    assert_int_equal(run_cli(&p, (const char *[]){"-q", "semaphore", "--wait", "0",
                                                   "cli-never", "acquire", NULL}), 1);
    assert_string_equal(p.err, "");

    /* set 2, two acquires, release, release 5: refused, 1 available */
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "set", "2", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "acquire", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "acquire", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "release", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "release", "5", NULL}),
                     2);
    assert_one_line_error(&p, "releasing 5 would make 6 permits available, more than the 2 "
                              "it was set to; nothing released");
    redis_cmd(out, sizeof out, "GET", "cli-sb", NULL);
    assert_string_equal(out, "1");
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "release", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "release", NULL}), 2);
    redis_cmd(out, sizeof out, "GET", "cli-sb", NULL);
    assert_string_equal(out, "2");
    /* set by another program: no total, not checked */
    redis_cmd(out, sizeof out, "SET", "cli-sb2", "1");
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb2", "release", "3", NULL}),
                     0);
    redis_cmd(out, sizeof out, "GET", "cli-sb2", NULL);
    assert_string_equal(out, "4");

    /* delete: the count and the total; a second delete finds nothing */
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "delete", NULL}), 0);
    assert_false(key_exists("cli-sb"));
    assert_false(key_exists("{cli-sb}:total"));
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "delete", NULL}), 1);
    assert_one_line_error(&p, "has no count; nothing deleted");
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sb", "delete", "2", NULL}),
                     2);
}

/* Fair locks: --fair-slack, and clearing dead waiters wherever they stand. */
static void test_fair_slack_and_clear(void **state)
{
    char out[256];
    proc p;
    const char *push[] = {"RPUSH", "redisson_lock_queue:{cli-fc}", "dead1", "live", "dead2",
                          NULL};
    const char *zadd[] = {"ZADD", "redisson_lock_timeout:{cli-fc}", "1", "dead1",
                          "99999999999999", "live", "5", "dead2", NULL};
    const char *range[] = {"LRANGE", "redisson_lock_queue:{cli-fc}", "0", "-1", NULL};

    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fair", "--fair-slack", "2s",
                                                   "cli-fs", "true", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fair-slack", "2s", "cli-fs", "true",
                                                   NULL}), 2);
    assert_one_line_error(&p, "--fair-slack is for --fair");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fair", "--fair-slack", "0",
                                                   "cli-fs", "true", NULL}), 2);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fair", "--read", "cli-fs", "true",
                                                   NULL}), 2);
    assert_one_line_error(&p, "one lock type at a time");

    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, push), 0);
    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, zadd), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-fc", NULL}), 3);
    assert_has(p.out, "waiting 1: dead1, presumed dead");
    assert_has(p.out, "waiting 3: dead2, presumed dead");
    assert_int_equal(run_cli(&p, (const char *[]){"fair", "cli-fc", "clear-dead", NULL}), 0);
    assert_string_equal(p.out, "2 dead waiters dropped\n");
    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, range), 0);
    assert_string_equal(out, "live");
    assert_int_equal(run_cli(&p, (const char *[]){"fair", "cli-fc", "clear-dead", NULL}), 0);
    assert_string_equal(p.out, "0 dead waiters dropped\n");
    assert_int_equal(run_cli(&p, (const char *[]){"fair", "cli-fc", "purge", NULL}), 2);
    redis_cmd(out, sizeof out, "SET", "cli-fc-str", "x");
    assert_int_equal(run_cli(&p, (const char *[]){"fair", "cli-fc-str", "clear-dead", NULL}), 2);
    assert_one_line_error(&p, "not a fair lock");
    redis_cmd(out, sizeof out, "DEL", "redisson_lock_queue:{cli-fc}", NULL);
    redis_cmd(out, sizeof out, "DEL", "redisson_lock_timeout:{cli-fc}", NULL);
}

/* --redlock over the client set of --config, with its token by --fenced. */
static void test_redlock(void **state)
{
    char path[PATH_MAX];
    FILE *f;
    proc p;

    snprintf(path, sizeof path, "%s/set.json", dir);
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "{\"urls\": [\"%s\"]}\n", url);
    fclose(f);
    start_env(&p, NULL, (const char *[]){"run", "--redlock", "--fenced", "--config", path,
                                         "cli-rl", "--", "sh", "-c",
                                         "echo token=$DLOCK_FENCING_TOKEN", NULL});
    assert_int_equal(finish(&p, 10000), 0);
    assert_has(p.out, "token=");
    assert_null(strstr(p.out, "token=\n"));
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--redlock", "cli-rl", "true", NULL}),
                     2);
    assert_one_line_error(&p, "--redlock needs a client set");
}

/* ---- issue 28 section 7: secrets and terminals --------------------------- */

/* COMMAND does not get $DLOCK_URL (its password); the rest of the
 * environment passes. The password can come from a file the URL names
 * instead (password_file=), so that neither the command line nor the
 * environment holds it. */
static void test_run_environment(void **state)
{
    const char *args[] = {"--requirepass", "pw" "Qz7xKv3W", NULL};
    dlock_test_redis *pw = NULL;
    char pw_url[256], file_url[PATH_MAX + 128], path[PATH_MAX];
    FILE *f;
    proc p;

    assert_int_equal(dlock_test_redis_start(&pw, args), 0);
    snprintf(pw_url, sizeof pw_url, "redis://:pwQz7xKv3W@127.0.0.1:%d",
             dlock_test_redis_port(pw));
    extra_env = "DLOCK_TEST_KEPT=kept";
    start_env(&p, pw_url, (const char *[]){"run", "--wait", "0", "cli-env", "--", "sh", "-c",
                                           "echo \"url=${DLOCK_URL-unset} "
                                           "kept=$DLOCK_TEST_KEPT\"; env", NULL});
    extra_env = NULL;
    assert_int_equal(finish(&p, 10000), 0);
    assert_non_null(strstr(p.out, "url=unset kept=kept\n"));
    assert_null(strstr(p.out, "Qz7xKv3W"));

    snprintf(path, sizeof path, "%s/redis-password", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("pwQz7xKv3W\n", f);
    assert_int_equal(fclose(f), 0);
    snprintf(file_url, sizeof file_url, "redis://127.0.0.1:%d?password_file=%s",
             dlock_test_redis_port(pw), path);
    start_env(&p, file_url, (const char *[]){"run", "--wait", "0", "cli-env", "--", "sh",
                                             "-c", "exit 3", NULL});
    assert_int_equal(finish(&p, 10000), 3);
    /* a wrong password in the file: dlock fails (125), and says why
     * without the password; COMMAND does not run */
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("wrongQz7xKv3W\n", f);
    assert_int_equal(fclose(f), 0);
    start_env(&p, file_url, (const char *[]){"run", "--wait", "0", "cli-env", "--", "sh",
                                             "-c", "exit 3", NULL});
    assert_int_equal(finish(&p, 10000), 125);
    assert_one_line_error(&p, "auth");
    assert_null(strstr(p.err, "Qz7xKv3W"));
    /* a file that is not there: a usage error naming the parameter */
    unlink(path);
    start_env(&p, file_url, (const char *[]){"status", "cli-env", NULL});
    assert_int_equal(finish(&p, 10000), 2);
    assert_one_line_error(&p, "cannot read its password_file (No such file or directory)");
    dlock_test_redis_stop(pw);
}

/* None of the bytes the escape tests store (ESC, BEL, the C1 CSI) is in
 * text raw. */
static void assert_no_terminal_controls(const char *text)
{
    assert_null(strchr(text, '\x1b'));
    assert_null(strchr(text, '\x07'));
    assert_null(strstr(text, "\xc2\x9b"));
}

/* status --text escapes what the server stores (owner ids, names): an
 * escape sequence in an owner id reaches the terminal as text. */
static void test_status_text_escapes(void **state)
{
    const char *hset[] = {"HSET", "cli-esc", "\x1b]0;pwned\x07" "a\\b\xc2\x9b" "2J", "1", NULL};
    char out[64];
    proc p;

    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, hset), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-esc", NULL}), 0);
    assert_no_terminal_controls(p.out);
    if (!strstr(p.out, "holder \\x1b]0;pwned\\x07a\\\\b\\u009b2J: 1 hold"))
        fail_msg("status --text: [%s]", p.out);
    /* the JSON form is JSON's own escaping, as before */
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-esc", NULL}), 0);
    assert_null(strchr(p.out, '\x1b'));
    redis_cmd(out, sizeof out, "DEL", "cli-esc", NULL);
}

/* ---- issue 41: list, status, latch, Redlock nodes, completion ------------- */

/* list --text escapes what the server stores as status --text does (no
 * ESC, BEL or C1 control reaches the terminal, a newline in a name cannot
 * start a listing line); the JSON form escapes C1 controls too; a lock
 * named like an auxiliary key is listed; a key too long to be a name is
 * skipped with a note, and the listing goes on (exit 0). */
static void test_list_escapes_and_odd_keys(void **state)
{
    const char *esc[] = {"HSET", "cli-lx-\n\x1b[31mforged", "\x1b]0;t\x07own\xc2\x9b", "1",
                         NULL};
    const char *owner_like[] = {"HSET", "dlock_owner:cli-lx", "o", "1", NULL};
    char long_name[1200], out[64];
    const char *set_long[] = {"SET", long_name, "1", NULL};
    const char *line;
    int lines = 0;
    proc p;

    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, esc), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--text", "cli-lx-*", NULL}), 0);
    assert_no_terminal_controls(p.out);
    for (line = p.out; (line = strchr(line, '\n')) != NULL; line++)
        lines++;
    assert_int_equal(lines, 1);
    assert_has(p.out, "cli-lx-\\x0a\\x1b[31mforged locked");
    assert_has(p.out, "holders=\\x1b]0;t\\x07own\\u009b");
    assert_int_equal(run_cli(&p, (const char *[]){"list", "cli-lx-*", NULL}), 0);
    assert_null(strstr(p.out, "\xc2\x9b"));
    assert_has(p.out, "own\\u009b");
    json_decref(parse_json(p.out));

    /* named like an owner description, but a lock another client stored:
     * dlock cannot open that name (reserved: the library refuses it), and
     * the listing says so rather than hiding it */
    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, owner_like), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--text", "dlock_owner:cli-*", NULL}),
                     0);
    assert_has(p.err, "'dlock_owner:cli-lx'");
    assert_has(p.err, "reserved");

    /* 1100 bytes: no dlock name; the others are listed all the same */
    memset(long_name, 'x', 1100);
    memcpy(long_name, "cli-lx-long", 11);
    long_name[1100] = '\0';
    assert_int_equal(dlock_test_redis_command(srv, out, sizeof out, set_long), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"list", "--text", "cli-lx-*", NULL}), 0);
    assert_has(p.out, "forged locked");
    assert_one_line_error(&p, "skipped a key of 1100 bytes, 'cli-lx-longxxx");
    redis_cmd(out, sizeof out, "DEL", long_name, NULL);
    redis_cmd(out, sizeof out, "DEL", "dlock_owner:cli-lx", NULL);
    redis_cmd(out, sizeof out, "DEL", esc[1], NULL);
}

/* status exits 0 held, 3 stored but free, 4 nothing stored, so that a
 * script can test it; a latch await on a name with no count says so. */
static void test_status_exit_codes(void **state)
{
    proc p;

    assert_int_equal(run_holding(&p, (const char *[]){"cli-sx", NULL},
                                 "$D status cli-sx >/dev/null; echo held=$?"), 0);
    assert_has(p.out, "held=0");
    /* a fenced lock's token stays: stored, free */
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--fenced", "cli-sx-f", "true", NULL}),
                     0);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-sx-f", NULL}), 3);
    assert_has(p.out, "\"locked\":false");
    /* a free reentrant lock, and a misspelt name: nothing stored */
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-sx", NULL}), 4);
    assert_has(p.out, "\"kind\":\"none\"");
    assert_int_equal(run_cli(&p, (const char *[]){"status", "--text", "cli-sx-typo", NULL}), 4);
    assert_string_equal(p.out, "nothing is stored under 'cli-sx-typo': a lock nobody holds, "
                               "or a semaphore or latch never set (or open)\n");
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-sx-l", "set", "1", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"status", "cli-sx-l", NULL}), 0);

    /* an await on a latch with no count: at once, exit 0, and a note */
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-sx-typo", "await", NULL}), 0);
    assert_one_line_error(&p, "latch 'cli-sx-typo' has no count: it is open, or was never set");
    assert_int_equal(run_cli(&p, (const char *[]){"-q", "latch", "cli-sx-typo", "await", NULL}),
                     0);
    assert_string_equal(p.err, "");
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-sx-l", "count-down", NULL}), 0);
    assert_int_equal(run_cli(&p, (const char *[]){"latch", "cli-sx-l", "await", NULL}), 0);
    assert_has(p.err, "has no count");
}

/* A Redlock's errors name its nodes by address (never by index, never
 * with the password), and status reads a client set node by node: held
 * on a majority exits 0. */
static void test_redlock_nodes(void **state)
{
    char path[PATH_MAX], down_path[PATH_MAX], script[PATH_MAX * 2 + 256];
    FILE *f;
    proc p;

    snprintf(path, sizeof path, "%s/nodes.json", dir);
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "{\"urls\": [\"%s\", \"%s/1\", \"redis://u:Secr3tQz@127.0.0.1:1\"]}\n", url,
            url);
    fclose(f);
    snprintf(down_path, sizeof down_path, "%s/nodes-down.json", dir);
    assert_non_null(f = fopen(down_path, "w"));
    fprintf(f, "{\"urls\": [\"%s\", \"redis://127.0.0.1:1\", \"redis://127.0.0.1:2/0\"]}\n",
            url);
    fclose(f);

    snprintf(script, sizeof script,
             "'%s' status --text --config '%s' cli-rn; echo rc=$?", cli_path(), path);
    start_env(&p, NULL, (const char *[]){"run", "--redlock", "--config", path, "--wait", "5",
                                         "cli-rn", "--", "sh", "-c", script, NULL});
    assert_int_equal(finish(&p, 20000), 0);
    assert_has(p.out, "node 127.0.0.1:");
    assert_has(p.out, "fenced 'cli-rn': locked");
    assert_has(p.out, "Redlock 'cli-rn': held on 2 of 3 nodes (2 needed)");
    assert_has(p.out, "rc=0");
    assert_has(p.err, "dlock: node 127.0.0.1:1: no state of 'cli-rn'");
    assert_null(strstr(p.err, "Secr3tQz"));
    /* released: the nodes keep the token counter (free) */
    start_env(&p, NULL, (const char *[]){"status", "--config", path, "cli-rn", NULL});
    assert_int_equal(finish(&p, 10000), 3);
    assert_has(p.out, "\"node\":");

    /* a majority down: the error names the nodes that failed */
    start_env(&p, NULL, (const char *[]){"run", "--redlock", "--config", down_path, "--wait",
                                         "0", "cli-rn", "--", "true", NULL});
    assert_int_equal(finish(&p, 20000), 125);
    assert_has(p.err, "node 127.0.0.1:1 ECONN");
    assert_has(p.err, "node 127.0.0.1:2 ECONN");
    assert_null(strstr(p.err, "node 1 "));
}

/* Runs the shell script text with interpreter shell (timeout(1): 120 s at
 * most: it runs dlock a dozen times, maybe under a sanitizer), "$D" the dlock binary and "$T" the group's folder; its stdout and
 * stderr into out. Its exit status. */
static int run_script(const char *shell, const char *text, char *out, size_t len)
{
    char path[PATH_MAX], cmd[PATH_MAX * 2 + 64];
    FILE *f;
    size_t n;
    int status;

    snprintf(path, sizeof path, "%s/completion-script", dir);
    assert_non_null(f = fopen(path, "w"));
    fprintf(f, "D='%s'; T='%s'\n%s", cli_path(), dir, text);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "timeout 120 %s '%s' 2>&1", shell, path);
    fflush(NULL);
    assert_non_null(f = popen(cmd, "r"));
    n = fread(out, 1, len - 1, f);
    out[n] = '\0';
    status = pclose(f);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* dlock completion bash: a valid bash script, written from the parsers'
 * tables: `dlock run --wa` completes --wait; the sub-commands, their
 * actions, a COMMAND after NAME; every option it offers is in the
 * sub-command's --help (the two cannot drift apart unnoticed). */
static void test_completion_bash(void **state)
{
    static const char script[] =
        "\"$D\" completion bash > \"$T/dlock.bash\" || exit 9\n"
        "bash -n \"$T/dlock.bash\" || exit 8\n"
        ". \"$T/dlock.bash\"\n"
        "complete -p dlock\n"
        "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _dlock\n"
        "      echo \"[$*] -> ${COMPREPLY[*]}\"; }\n"
        "t dlock run --wa\n"
        "t dlock ''\n"
        "t dlock --url redis://x lis\n"
        "t dlock semaphore --wait 5 s ''\n"
        "t dlock latch l co\n"
        "t dlock completion ''\n"
        "t dlock run --wait 5 job printf\n"
        "t dlock run --wait 5 job printf --wa\n"
        "t dlock status --wait\n"
        "for c in '' run status unlock semaphore latch list fair completion; do\n"
        "    _dlock_table \"$c\"\n"
        "    for o in $opts; do\n"
        "        \"$D\" $c --help | grep -q -- \"$o\" || echo \"missing: $c $o\"\n"
        "    done\n"
        "done\n";
    char out[8192];

    assert_int_equal(run_script("bash", script, out, sizeof out), 0);
    assert_has(out, "complete -F _dlock dlock\n");
    assert_has(out, "[dlock run --wa] -> --wait --watchdog-timeout\n");
    assert_has(out, "[dlock ] -> run status unlock semaphore latch list fair completion "
                    "help\n");
    assert_has(out, "[dlock --url redis://x lis] -> list\n");
    assert_has(out, "[dlock semaphore --wait 5 s ] -> acquire release set status delete\n");
    assert_has(out, "[dlock latch l co] -> count-down\n");
    assert_has(out, "[dlock completion ] -> bash zsh\n");
    assert_has(out, "[dlock run --wait 5 job printf] -> printf");
    assert_has(out, "[dlock run --wait 5 job printf --wa] -> \n"); /* COMMAND's own */
    assert_has(out, "[dlock status --wait] -> \n"); /* run's option, not status's */
    if (strstr(out, "missing: ")) {
        fprintf(stderr, "  an option completed but not in --help: %s\n", out);
        fail();
    }
    assert_int_equal(run_cli(&(proc){0}, (const char *[]){"completion", "fish", NULL}), 2);
}

/* dlock completion zsh: zsh -n accepts it, and its function completes as
 * the bash one does (compadd and friends stand in as shell functions).
 * Skipped, and said so, where zsh is not installed. */
static void test_completion_zsh(void **state)
{
    static const char script[] =
        "\"$D\" completion zsh > \"$T/_dlock\" || exit 9\n"
        "zsh -n \"$T/_dlock\" || exit 8\n"
        "compdef() { print \"compdef $*\"; }\n"
        "compadd() { [[ $1 == -- ]] && shift; print -r -- \"compadd: $*\"; }\n"
        "_files() { print files; }\n"
        "_command_names() { print commands; }\n"
        "source \"$T/_dlock\"\n"
        "t() { words=(\"$@\"); CURRENT=$#; print -n \"[$*] \"; _dlock; }\n"
        "t dlock ''\n"
        "t dlock semaphore s ''\n"
        "t dlock run --config ''\n"
        "t dlock run job ''\n"
        "t dlock run job printf ''\n";
    char out[8192];

    if (system("command -v zsh >/dev/null 2>&1") != 0) {
        fprintf(stderr, "  zsh is not installed: the zsh completion is not checked\n");
        skip();
    }
    assert_int_equal(run_script("zsh -f", script, out, sizeof out), 0);
    assert_has(out, "compdef _dlock dlock\n");
    assert_has(out, "[dlock ] compadd: run status unlock semaphore latch list fair "
                    "completion help\n");
    assert_has(out, "[dlock semaphore s ] compadd: acquire release set status delete\n");
    assert_has(out, "[dlock run --config ] files\n");
    assert_has(out, "[dlock run job ] commands\n");
    assert_has(out, "[dlock run job printf ] files\n");
}

/* ---- issue 41: the lease, the configuration, the wait's bound --------------- */

/* The last line of the file at path as a number (0: none). */
static long long last_number(const char *path, long long *first)
{
    char line[64];
    long long last = 0;
    FILE *f = fopen(path, "r");

    *first = 0;
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f)) {
        long long v = atoll(line);
        if (v > 0 && *first == 0)
            *first = v;
        if (v > 0)
            last = v;
    }
    fclose(f);
    return last;
}

/* The local time of day of unix time ms, in ms. */
static long long day_ms(long long ms)
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    localtime_r(&t, &tm);
    return ((tm.tm_hour * 60LL + tm.tm_min) * 60 + tm.tm_sec) * 1000 + ms % 1000;
}

/* "HH:MM:SS.mmm" after needle in text, in ms of the day (-1: none). */
static long long time_after(const char *text, const char *needle)
{
    const char *p = strstr(text, needle);
    int h, m, sec, ms;

    if (!p || sscanf(p + strlen(needle), "%d:%d:%d.%d", &h, &m, &sec, &ms) != 4)
        return -1;
    return ((h * 60LL + m) * 60 + sec) * 1000 + ms;
}

/* A job that ignores SIGTERM (its children too: an ignored signal stays
 * ignored across exec) and writes the time (unix ms) into <dir>/<tag>.ts
 * every 50 ms, its pid into <dir>/<tag>.p (whole, by a rename). */
static void stubborn_job(char *script, size_t len, const char *tag, char *ts, char *pid,
                         size_t plen)
{
    snprintf(ts, plen, "%s/%s.ts", dir, tag);
    snprintf(pid, plen, "%s/%s.p", dir, tag);
    unlink(ts);
    snprintf(script, len, "trap '' TERM; echo $$ > %s.tmp; mv %s.tmp %s; "
             "while :; do date +%%s%%3N >> %s; sleep 0.05; done", pid, pid, pid, ts);
}

/* Issue 41 §2: SIGKILL lands before the lease can have ended, SIGTERM
 * --kill-after before it, for a job that ignores SIGTERM: with a fixed
 * --lease (the job's last write is before its first one plus the lease:
 * the lock was set before the job started), and with a renewed lease
 * whose server stops (the job's last write is before the lease's end
 * dlock states). A --kill-after that cannot fit is refused. Ordering, not
 * timing: what the job wrote against the lease's end. */
static void test_kill_before_lease_ends(void **state)
{
    char script[1024], ts[128], pp[128];
    dlock_test_redis *down = NULL;
    long long first, last, end;
    pid_t job;
    proc p;

    stubborn_job(script, sizeof script, "kb", ts, pp, sizeof pp);
    start(&p, (const char *[]){"run", "--lease", "5s", "--kill-after", "1s", "cli-kb", "--",
                               "sh", "-c", script, NULL});
    assert_int_equal(finish(&p, 20000), 124);
    job = read_pid(pp);
    assert_true(wait_gone(job, 1000));
    last = last_number(ts, &first);
    assert_true(first > 0);
    if (last >= first + 5000)
        fail_msg("the job wrote at %lld ms, its lock's --lease of 5 s ended before %lld "
                 "(%s)", last - first, 5000LL, p.err);
    assert_non_null(strstr(p.err, "sent SIGTERM, SIGKILL at "));

    /* renewed, the server stopped: dlock says when the lease ends */
    assert_int_equal(dlock_test_redis_start(&down, NULL), 0);
    stubborn_job(script, sizeof script, "kb2", ts, pp, sizeof pp);
    start_env(&p, dlock_test_redis_url(down),
              (const char *[]){"run", "--watchdog-timeout", "6s", "--kill-after", "1s",
                               "cli-kb2", "--", "sh", "-c", script, NULL});
    job = read_pid(pp);
    wait_file(ts);
    assert_int_equal(dlock_test_redis_signal(down, SIGSTOP), 0);
    assert_int_equal(finish(&p, 30000), 124);
    assert_int_equal(dlock_test_redis_signal(down, SIGCONT), 0);
    assert_true(wait_gone(job, 1000));
    last = last_number(ts, &first);
    end = time_after(p.err, "ends at ");
    if (end < 0)
        fail_msg("no lease end in [%s]", p.err);
    end -= day_ms(last);
    if (end < -12LL * 3600 * 1000)
        end += 24LL * 3600 * 1000; /* midnight between them */
    if (end <= 0)
        fail_msg("the job wrote %lld ms after the lease's end (%s)", -end, p.err);
    dlock_test_redis_stop(down);

    assert_int_equal(run_cli(&p, (const char *[]){"run", "--lease", "2s", "--kill-after",
                                                   "2s", "cli-kb", "--", "true", NULL}), 2);
    assert_one_line_error(&p, "--kill-after 2s does not fit in the --lease of 2s");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--watchdog-timeout", "3s",
                                                   "--kill-after", "2s", "cli-kb", "--",
                                                   "true", NULL}), 2);
    assert_one_line_error(&p, "at most 1.2s");
    assert_false(key_exists("cli-kb"));
}

/* Runs `dlock --config path run [OPT [VAL]] NAME -- sh -c "$D status
 * NAME"`, the inner status on the test's server: its JSON document (the
 * caller's). */
static json_t *status_inside(const char *path, const char *name, const char *opt,
                             const char *val)
{
    char sh[PATH_MAX + 256];
    proc p;
    json_t *doc;

    const char *args[12] = {"--config", path, "run"};
    size_t n = 3;

    snprintf(sh, sizeof sh, "DLOCK_URL='%s' '%s' status %s", url, cli_path(), name);
    if (opt)
        args[n++] = opt;
    if (opt && val)
        args[n++] = val;
    args[n++] = name;
    args[n++] = "--";
    args[n++] = "sh";
    args[n++] = "-c";
    args[n++] = sh;
    args[n] = NULL;
    start_env(&p, NULL, args);
    assert_int_equal(finish(&p, 10000), 0);
    doc = parse_json(p.out);
    return doc;
}

/* Writes the two configurations of the test's server: JSON with
 * watchdog_timeout_ms 5000, YAML with lockWatchdogTimeout 4000. */
static void write_configs(char *json_path, char *yaml_path, size_t len)
{
    FILE *f;

    snprintf(json_path, len, "%s/wd.json", dir);
    assert_non_null(f = fopen(json_path, "w"));
    fprintf(f, "{\"url\": \"%s\", \"watchdog_timeout_ms\": 5000}\n", url);
    fclose(f);
    snprintf(yaml_path, len, "%s/wd.yaml", dir);
    assert_non_null(f = fopen(yaml_path, "w"));
    fprintf(f, "singleServerConfig:\n  address: \"%s\"\nlockWatchdogTimeout: 4000\n", url);
    fclose(f);
}

static json_int_t ttl_of(json_t *doc)
{
    return json_integer_value(json_object_get(doc, "ttl_ms"));
}

/* Issue 41 §3: a configuration file gets what a URL gets. Its
 * watchdog_timeout_ms (JSON) or lockWatchdogTimeout (YAML) is the lease
 * run renews (the command line's --watchdog-timeout still wins). */
static void test_config_lease(void **state)
{
    char json_path[PATH_MAX], yaml_path[PATH_MAX];
    json_t *doc;

    write_configs(json_path, yaml_path, sizeof json_path);
    doc = status_inside(json_path, "cli-cfgj", NULL, NULL);
    if (ttl_of(doc) <= 0 || ttl_of(doc) > 5000)
        fail_msg("JSON watchdog_timeout_ms 5000: the lock's TTL is %lld",
                 (long long)ttl_of(doc));
    json_decref(doc);
    doc = status_inside(yaml_path, "cli-cfgy", NULL, NULL);
    if (ttl_of(doc) <= 0 || ttl_of(doc) > 4000)
        fail_msg("YAML lockWatchdogTimeout 4000: the lock's TTL is %lld",
                 (long long)ttl_of(doc));
    json_decref(doc);
    doc = status_inside(yaml_path, "cli-cfgy", "--watchdog-timeout", "20s");
    assert_true(ttl_of(doc) > 5000 && ttl_of(doc) <= 20000);
    json_decref(doc);
    /* a client set's, for --redlock */
    snprintf(json_path, sizeof json_path, "%s/wd-set.json", dir);
    {
        FILE *f = fopen(json_path, "w");
        assert_non_null(f);
        fprintf(f, "{\"urls\": [\"%s\"], \"watchdog_timeout_ms\": 5000}\n", url);
        fclose(f);
    }
    doc = status_inside(json_path, "cli-cfgr", "--redlock", NULL);
    if (ttl_of(doc) <= 0 || ttl_of(doc) > 5000)
        fail_msg("--redlock, watchdog_timeout_ms 5000: the lock's TTL is %lld",
                 (long long)ttl_of(doc));
    json_decref(doc);
}

/* Issue 41 §3: the holder of a lock taken through a configuration file
 * (JSON or YAML, neither saying describe_owner) is described in status. */
static void test_config_describes(void **state)
{
    char json_path[PATH_MAX], yaml_path[PATH_MAX];
    const char *paths[2];
    size_t i;

    write_configs(json_path, yaml_path, sizeof json_path);
    paths[0] = json_path;
    paths[1] = yaml_path;
    for (i = 0; i < 2; i++) {
        json_t *doc = status_inside(paths[i], "cli-cfgd", NULL, NULL);
        json_t *h = json_array_get(json_object_get(doc, "holders"), 0);
        if (!json_is_string(json_object_get(h, "described")))
            fail_msg("%s: the holder is not described", paths[i]);
        json_decref(doc);
    }
}

/* Issue 41 §3: with its server down at start, run --config waits for it
 * within --wait (as with --url) and runs COMMAND once it is up. */
static void test_config_lazy(void **state)
{
    char down_path[PATH_MAX], done[PATH_MAX], script[PATH_MAX + 16];
    dlock_test_redis *down = NULL;
    FILE *f;
    proc p;

    assert_int_equal(dlock_test_redis_start(&down, NULL), 0);
    assert_int_equal(dlock_test_redis_kill(down), 0);
    snprintf(down_path, sizeof down_path, "%s/down.json", dir);
    assert_non_null(f = fopen(down_path, "w"));
    fprintf(f, "{\"url\": \"%s\"}\n", dlock_test_redis_url(down));
    fclose(f);
    snprintf(done, sizeof done, "%s/cfg-ran", dir);
    snprintf(script, sizeof script, "touch %s", done);
    start_env(&p, NULL, (const char *[]){"--config", down_path, "run", "--wait", "60",
                                         "cli-cfgdown", "--", "sh", "-c", script, NULL});
    sleep_ms(500); /* not a timing bound: it must still wait, whatever the load */
    assert_true(running(&p));
    assert_int_equal(dlock_test_redis_restart(down), 0);
    assert_int_equal(finish(&p, 60000), 0);
    assert_int_equal(access(done, F_OK), 0);
    dlock_test_redis_stop(down);
}

/* Issue 41 §4 and §6: against a stalled server (SIGSTOP), run --wait 1
 * ends within --wait + 2 s, the bound dlock(1) states, with 125 (not 124,
 * which timeout(1) and --lost-exit-code use); -v says while it waits that
 * the server is unreachable. The check allows the test's own fork, exec
 * and reaping 500 ms more: the bound is dlock's, from its start. */
static void test_wait_bound(void **state)
{
    dlock_test_redis *down = NULL;
    int64_t t0, took;
    proc p;

    assert_int_equal(dlock_test_redis_start(&down, NULL), 0);
    assert_int_equal(dlock_test_redis_signal(down, SIGSTOP), 0);
    t0 = now_ms();
    start_env(&p, dlock_test_redis_url(down),
              (const char *[]){"run", "-q", "--wait", "1", "cli-stall", "--", "true", NULL});
    assert_int_equal(finish(&p, 20000), 125);
    took = now_ms() - t0;
    if (took >= 1000 + 2000 + 500)
        fail_msg("run --wait 1 against a stalled server took %lld ms (%s)", (long long)took,
                 p.err);
    assert_one_line_error(&p, "cli-stall");
    assert_int_equal(dlock_test_redis_signal(down, SIGCONT), 0);

    /* -v: a progress line while the server is unreachable */
    assert_int_equal(dlock_test_redis_kill(down), 0);
    start_env(&p, dlock_test_redis_url(down),
              (const char *[]){"run", "-v", "--wait", "3", "cli-stall", "--", "true", NULL});
    assert_int_equal(finish(&p, 20000), 125);
    assert_has(p.err, "dlock: still waiting for lock 'cli-stall' after ");
    assert_has(p.err, "the server is unreachable (");
    dlock_test_redis_stop(down);
}

/* Issue 41 §6: a busy or timed-out run names the holder (its owner id
 * and the description status shows); on a semaphore it speaks of
 * permits, and a count that differs from --semaphore N is said. */
static void test_run_names_holder(void **state)
{
    char ready[PATH_MAX], script[PATH_MAX + 64];
    proc h, h2, p;
    int i;

    snprintf(ready, sizeof ready, "%s/holder-ready", dir);
    snprintf(script, sizeof script, "touch %s; exec sleep 30", ready);
    start(&h, (const char *[]){"run", "cli-busy", "--", "sh", "-c", script, NULL});
    wait_file(ready);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--wait", "0", "cli-busy", "--",
                                                   "true", NULL}), 1);
    assert_one_line_error(&p, "lock 'cli-busy' is held by ");
    assert_has(p.err, " pid ");     /* the holder's description */
    assert_has(p.err, " started "); /* (host pid N program, started T) */
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--wait", "300ms", "cli-busy", "--",
                                                   "true", NULL}), 1);
    assert_one_line_error(&p, "lock 'cli-busy' not acquired within 300ms: held by ");
    assert_has(p.err, " pid ");
    assert_int_equal(kill(h.pid, SIGTERM), 0);
    assert_int_equal(finish(&h, 5000), 128 + SIGTERM);

    /* a semaphore of 2 permits, both held: run --semaphore 5 warns of
     * the count and says "permit" */
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem5", "set", "2", NULL}),
                     0);
    for (i = 0; i < 2; i++) {
        unlink(ready);
        start(i ? &h2 : &h, (const char *[]){"run", "--semaphore", "2", "cli-sem5", "--", "sh",
                                             "-c", script, NULL});
        wait_file(ready);
    }
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--semaphore", "5", "--wait", "0",
                                                   "cli-sem5", "--", "true", NULL}), 1);
    assert_has(p.err, "dlock: warning: semaphore 'cli-sem5' has 2 permits, not the 5 of "
                      "--semaphore 5");
    assert_has(p.err, "dlock: no permit of semaphore 'cli-sem5'");
    assert_null(strstr(p.err, "lock 'cli-sem5'"));
    assert_int_equal(kill(h.pid, SIGTERM), 0);
    assert_int_equal(kill(h2.pid, SIGTERM), 0);
    assert_int_equal(finish(&h, 5000), 128 + SIGTERM);
    assert_int_equal(finish(&h2, 5000), 128 + SIGTERM);
    assert_int_equal(run_cli(&p, (const char *[]){"semaphore", "cli-sem5", "delete", NULL}), 0);
}

/* Issue 41 §6: `run -- NAME -- COMMAND` (each "--" where a script writer
 * may put one) takes NAME and COMMAND as such; an unknown URL parameter's
 * hint lists every parameter the URL takes, the client's included. */
static void test_run_double_dash_and_url_hint(void **state)
{
    static const char *const params[] = {
        "cacert", "insecure", "sync_replicas", "multiplex", "lazy_connect", "password_file",
        "max_reply_bytes", "fair_waiter_timeout_ms", "client_name", "metrics_names_max",
        "describe_owner",
    };
    char bad[300], sh[PATH_MAX + 64];
    size_t i;
    proc p;

    snprintf(sh, sizeof sh, "DLOCK_URL='%s' \"$0\" status cli-dd", url);
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--", "cli-dd", "--", "sh", "-c", sh,
                                                   cli_path(), NULL}), 0);
    assert_has(p.out, "\"name\":\"cli-dd\"");
    assert_has(p.out, "\"locked\":true");
    assert_int_equal(run_cli(&p, (const char *[]){"run", "--", "cli-dd", "sh", "-c", "exit 5",
                                                   NULL}), 5);

    snprintf(bad, sizeof bad, "%s?bogus=1", url);
    start_env(&p, bad, (const char *[]){"status", "cli-dd", NULL});
    assert_int_equal(finish(&p, 10000), 2);
    for (i = 0; i < sizeof params / sizeof params[0]; i++)
        if (!strstr(p.err, params[i]))
            fail_msg("the hint leaves out %s: %s", params[i], p.err);
}

/* Issue 41 §6: a wrong password's message is the server's whole reply,
 * also behind a long socket path (the details were cut at 160 bytes). */
static void test_wrong_password_message(void **state)
{
    const char *args[] = {"--requirepass", "rightQz7", NULL};
    char longdir[PATH_MAX], sock[PATH_MAX + 16], pw[PATH_MAX], u[PATH_MAX * 2 + 64];
    dlock_test_redis *r = NULL;
    FILE *f;
    proc p;

    assert_int_equal(dlock_test_redis_start(&r, args), 0);
    snprintf(longdir, sizeof longdir, "%s/sockets-of-the-nightly-report-servers", dir);
    assert_int_equal(mkdir(longdir, 0700), 0);
    snprintf(sock, sizeof sock, "%s/redis.sock", longdir);
    assert_int_equal(symlink(dlock_test_redis_socket(r), sock), 0);
    snprintf(pw, sizeof pw, "%s/wrong-pw", dir);
    assert_non_null(f = fopen(pw, "w"));
    fputs("wrongQz7\n", f);
    fclose(f);
    snprintf(u, sizeof u, "unix://%s?password_file=%s", sock, pw);
    start_env(&p, u, (const char *[]){"run", "--wait", "1",
                                      "a-rather-long-lock-name-for-the-nightly-report", "--",
                                      "true", NULL});
    assert_int_equal(finish(&p, 10000), 125);
    assert_one_line_error(&p, "WRONGPASS");
    if (!strstr(p.err, "user is disabled.)"))
        fail_msg("the server's reply was cut: %s", p.err);
    assert_null(strstr(p.err, "Qz7"));
    dlock_test_redis_stop(r);
}

/* Issue 41 §6: the lock unlocked by force while COMMAND ends on its own
 * (status 0): COMMAND was not stopped, so its status stands, and the line
 * says so (as consul lock and etcdctl lock keep the command's status). */
static void test_force_unlock_at_exit(void **state)
{
    char ready[PATH_MAX], go[PATH_MAX], script[PATH_MAX * 2 + 64];
    proc h, p;

    snprintf(ready, sizeof ready, "%s/fz-ready", dir);
    snprintf(go, sizeof go, "%s/fz-go", dir);
    snprintf(script, sizeof script, "touch %s; while [ ! -e %s ]; do sleep 0.02; done; exit 0",
             ready, go);
    /* a renewal every 20 s: none comes between the unlock and the end */
    start(&h, (const char *[]){"run", "--watchdog-timeout", "60s", "cli-fz", "--", "sh", "-c",
                               script, NULL});
    wait_file(ready);
    assert_int_equal(run_cli(&p, (const char *[]){"unlock", "--force", "cli-fz", NULL}), 0);
    close(open(go, O_WRONLY | O_CREAT, 0600));
    assert_int_equal(finish(&h, 10000), 0);
    assert_one_line_error(&h, "lost the lock 'cli-fz'");
    assert_has(h.err, "it was not stopped");
    assert_null(strstr(h.err, "sent SIG"));
}

/* Reads the pseudo-terminal master into buf (NUL-terminated, *got bytes
 * so far) until needle shows or 10 s pass; whether it showed. */
static int pty_wait_for(int master, char *buf, size_t len, size_t *got, const char *needle)
{
    int64_t deadline = now_ms() + 10000;

    while (!strstr(buf, needle) && now_ms() < deadline && *got < len - 1) {
        struct pollfd pfd = {master, POLLIN, 0};
        ssize_t n;
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        n = read(master, buf + *got, len - 1 - *got);
        if (n <= 0)
            break;
        *got += (size_t)n;
        buf[*got] = '\0';
    }
    return strstr(buf, needle) != NULL;
}

/* On a new pseudo-terminal, a minimal job-control shell: runs `dlock run
 * cli-tty -- sh -c script` in a foreground process group of its own,
 * prints "STOPPED" when it stops and continues it in the foreground, and
 * exits with its status. The shell's pid; *master the terminal. */
static pid_t pty_shell(int *master, const char *script)
{
    pid_t pid = forkpty(master, NULL, NULL, NULL);

    assert_true(pid >= 0);
    if (pid == 0) {
        int status;
        pid_t job;
        setenv("DLOCK_URL", url, 1);
        unsetenv("DLOCK_CONFIG");
        signal(SIGTTOU, SIG_IGN); /* the shell takes the terminal back */
        job = fork();
        if (job == 0) {
            setpgid(0, 0);
            signal(SIGTTOU, SIG_DFL);
            execl(cli_path(), "dlock", "run", "cli-tty", "--", "sh", "-c", script,
                  (char *)NULL);
            _exit(121);
        }
        setpgid(job, job);
        tcsetpgrp(0, job);
        for (;;) {
            if (waitpid(job, &status, WUNTRACED) != job)
                _exit(122);
            if (!WIFSTOPPED(status))
                break;
            tcsetpgrp(0, getpgrp());
            if (write(1, "STOPPED\n", 8) != 8)
                _exit(123);
            tcsetpgrp(0, job); /* fg */
            kill(-job, SIGCONT);
        }
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 124);
    }
    return pid;
}

/* The end of a pty_shell: when ok (all was seen), it exits 0; else it is
 * killed and the case fails, showing what the terminal showed. */
static void pty_end(pid_t pid, int master, int ok, const char *seen)
{
    int status;

    if (!ok)
        kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    close(master);
    if (!ok)
        fail_msg("on the terminal: [%s]", seen);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Issue 41 §6: in a terminal, COMMAND gets the terminal (its group is
 * the foreground one): a job that reads stdin reads it rather than
 * stopping on SIGTTIN. Ctrl-Z stops the job and dlock with it, so that
 * the shell sees its job stopped (not a dlock waiting for ever on a
 * stopped job); fg continues both, the job with the terminal again. */
static void test_run_terminal(void **state)
{
    char buf[4096] = "";
    size_t got = 0;
    int master = -1;
    pid_t pid = pty_shell(&master, "read a; echo \"got:$a\"; read b; echo \"got2:$b\"");

    assert_int_equal(write(master, "hello\n", 6), 6);
    pty_end(pid, master,
            pty_wait_for(master, buf, sizeof buf, &got, "got:hello") &&
                write(master, "\x1a", 1) == 1 &&
                pty_wait_for(master, buf, sizeof buf, &got, "STOPPED") &&
                write(master, "again\n", 6) == 6 &&
                pty_wait_for(master, buf, sizeof buf, &got, "got2:again"),
            buf);
}

static int group_setup(void **state)
{
    char tmpl[] = "/tmp/dlock-cli-test.XXXXXX";

    if (!mkdtemp(tmpl))
        return -1;
    snprintf(dir, sizeof dir, "%s", tmpl);
    if (access(cli_path(), X_OK) != 0) {
        fprintf(stderr, "cli tests: no %s (make builds it)\n", cli_path());
        return -1;
    }
    if (dlock_test_redis_start(&srv, NULL) != 0)
        return -1;
    snprintf(url, sizeof url, "%s", dlock_test_redis_url(srv));
    return 0;
}

static int group_teardown(void **state)
{
    char cmd[PATH_MAX + 16];

    dlock_test_redis_stop(srv);
    srv = NULL;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int dlock_test_cli(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_concurrent_runs),
        cmocka_unit_test(test_never_runs_unheld),
        cmocka_unit_test(test_exit_status),
        cmocka_unit_test(test_signal_forwarded),
        cmocka_unit_test(test_status_and_lost),
        cmocka_unit_test(test_lease_ends),
        cmocka_unit_test(test_interrupted_wait),
        cmocka_unit_test(test_semaphore),
        cmocka_unit_test(test_latch),
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_tls_url),
        cmocka_unit_test(test_mock_url),
        cmocka_unit_test(test_killed_dlock),
        cmocka_unit_test(test_group_signals),
        cmocka_unit_test(test_kill_after),
        cmocka_unit_test(test_server_down),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_quiet),
        cmocka_unit_test(test_help_and_config),
        cmocka_unit_test(test_run_server_down_at_start),
        cmocka_unit_test(test_status_every_type),
        cmocka_unit_test(test_status_permit_semaphore),
        cmocka_unit_test(test_list),
        cmocka_unit_test(test_owner_description),
        cmocka_unit_test(test_semaphore_more),
        cmocka_unit_test(test_fair_slack_and_clear),
        cmocka_unit_test(test_redlock),
        cmocka_unit_test(test_run_environment),
        cmocka_unit_test(test_status_text_escapes),
        cmocka_unit_test(test_list_escapes_and_odd_keys),
        cmocka_unit_test(test_status_exit_codes),
        cmocka_unit_test(test_redlock_nodes),
        cmocka_unit_test(test_completion_bash),
        cmocka_unit_test(test_completion_zsh),
        cmocka_unit_test(test_kill_before_lease_ends),
        cmocka_unit_test(test_config_lease),
        cmocka_unit_test(test_config_describes),
        cmocka_unit_test(test_config_lazy),
        cmocka_unit_test(test_wait_bound),
        cmocka_unit_test(test_run_names_holder),
        cmocka_unit_test(test_run_double_dash_and_url_hint),
        cmocka_unit_test(test_wrong_password_message),
        cmocka_unit_test(test_force_unlock_at_exit),
        cmocka_unit_test(test_run_terminal),
    };
    return DLOCK_RUN_GROUP("cli", tests, group_setup, group_teardown);
}
