/*
 * dlock run: hold a lock while a command runs.
 *
 *   dlock run [--wait D] [--lease D] [--fair] [--on-lost kill|term|ignore]
 *             [--conflict-exit-code N] [--watchdog-timeout D] NAME -- COMMAND...
 *
 * One thread reacts to everything: the main thread blocks the signals it
 * handles before the client exists (so the library's threads inherit the
 * mask and never take them) and then takes them one at a time with
 * sigwaitinfo. Events arrive as signals:
 *  - the forwarded ones (TERM INT HUP QUIT USR1 USR2): before COMMAND
 *    runs they cancel the wait for the lock; afterwards they go to COMMAND;
 *  - SIGCHLD: COMMAND ended;
 *  - wake_signal() (SIGRTMIN), sent by our own threads: the acquisition
 *    thread finished, or the watchdog's on_lost found the lock lost. The
 *    signal is only a wake-up; the state under st->mu is the truth.
 * So COMMAND is signalled and reaped by one thread only, and never after
 * it was reaped (its pid could be someone else's by then).
 *
 * The acquisition runs on a thread of its own (so that the main thread can
 * cancel it) with an explicit owner id taken on the main thread, which
 * later unlocks: the *_as calls of api/dlock/rlock.h.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

enum on_lost_mode { LOST_TERM, LOST_KILL, LOST_IGNORE };

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFORWARDED ((int)(sizeof forwarded / sizeof forwarded[0]))

static int wake_signal(void)
{
    return SIGRTMIN;
}

typedef struct run_opts {
    const char *name;
    char **command;
    int64_t wait_ms;        /* when has_wait */
    int has_wait;           /* no --wait: wait as long as it takes */
    const char *wait_text;  /* as typed, for the message */
    int64_t lease_ms;       /* 0: renewed by the watchdog */
    int64_t watchdog_ms;    /* 0: the library's default */
    int fair;
    enum on_lost_mode on_lost;
    int conflict_exit;
} run_opts;

typedef struct run_state {
    const run_opts *o;
    dlock_client *client;
    dlock_rlock *lock;
    char owner[DLOCK_OWNER_MAX];
    pthread_t main_thread;
    pthread_mutex_t mu;
    /* under mu */
    int acquire_done;
    int acquire_rc;
    char acquire_err[512];
    int lost;
} run_state;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- options ------------------------------------------------------------ */

static int parse_duration_opt(const char *opt, const char *arg, int64_t *out)
{
    char err[256];
    if (cli_parse_duration(arg, out, err, sizeof err) != 0)
        return cli_usage("%s: %s", opt, err);
    return 0;
}

static int parse_opts(int argc, char **argv, cli_common *co, run_opts *o)
{
    static const struct option longs[] = {
        {"url", required_argument, NULL, 'u'},
        {"wait", required_argument, NULL, 'w'},
        {"lease", required_argument, NULL, 'l'},
        {"fair", no_argument, NULL, 'f'},
        {"on-lost", required_argument, NULL, 'o'},
        {"conflict-exit-code", required_argument, NULL, 'E'},
        {"watchdog-timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char err[256];
    int64_t n;
    int c, rc;

    /* "+": the first operand (NAME) ends the options; COMMAND's own
     * options are never ours. */
    while ((c = getopt_long(argc, argv, "+:w:E:h", longs, NULL)) != -1) {
        switch (c) {
        case 'u':
            co->url = optarg;
            break;
        case 'w':
            if ((rc = parse_duration_opt("--wait", optarg, &o->wait_ms)) != 0)
                return rc;
            o->has_wait = 1;
            o->wait_text = optarg;
            break;
        case 'l':
            if ((rc = parse_duration_opt("--lease", optarg, &o->lease_ms)) != 0)
                return rc;
            break;
        case 'T':
            if ((rc = parse_duration_opt("--watchdog-timeout", optarg, &o->watchdog_ms)) != 0)
                return rc;
            if (o->watchdog_ms < 3)
                return cli_usage("--watchdog-timeout: at least 3ms");
            break;
        case 'f':
            o->fair = 1;
            break;
        case 'o':
            if (strcmp(optarg, "term") == 0)
                o->on_lost = LOST_TERM;
            else if (strcmp(optarg, "kill") == 0)
                o->on_lost = LOST_KILL;
            else if (strcmp(optarg, "ignore") == 0)
                o->on_lost = LOST_IGNORE;
            else
                return cli_usage("--on-lost: '%s' is not kill, term or ignore", optarg);
            break;
        case 'E':
            if (cli_parse_count(optarg, 0, 255, &n, err, sizeof err) != 0)
                return cli_usage("--conflict-exit-code: %s", err);
            o->conflict_exit = (int)n;
            break;
        case 'h':
            cli_help();
            return -1;
        default:
            return cli_bad_option(c, argv);
        }
    }
    if (optind >= argc)
        return cli_usage("run: no lock NAME given");
    o->name = argv[optind++];
    if (optind < argc && strcmp(argv[optind], "--") == 0)
        optind++;
    if (optind >= argc)
        return cli_usage("run: no COMMAND given (dlock run NAME -- COMMAND ...)");
    o->command = argv + optind;
    return 0;
}

/* ---- the library's threads ---------------------------------------------- */

/* On the watchdog thread: only records it and wakes the main thread. */
static void on_lost(void *arg, const char *name, const char *owner)
{
    run_state *st = arg;

    if (strcmp(owner, st->owner) != 0)
        return;
    pthread_mutex_lock(&st->mu);
    st->lost = 1;
    pthread_mutex_unlock(&st->mu);
    pthread_kill(st->main_thread, wake_signal());
}

static void *acquire_main(void *arg)
{
    run_state *st = arg;
    const run_opts *o = st->o;
    int rc = o->has_wait
                 ? dlock_try_lock_as(st->lock, st->owner, o->wait_ms, o->lease_ms)
                 : dlock_lock_as(st->lock, st->owner, o->lease_ms);

    pthread_mutex_lock(&st->mu);
    st->acquire_rc = rc;
    snprintf(st->acquire_err, sizeof st->acquire_err, "%s",
             rc ? dlock_errmsg(st->lock) : "");
    st->acquire_done = 1;
    pthread_mutex_unlock(&st->mu);
    pthread_kill(st->main_thread, wake_signal());
    return NULL;
}

static int is_forwarded(int sig)
{
    int i;
    for (i = 0; i < NFORWARDED; i++)
        if (forwarded[i] == sig)
            return 1;
    return 0;
}

/* ---- the phases ------------------------------------------------------------ */

/* Waits for the lock while taking signals. 0 when held; else the exit
 * code, after the message. */
static int acquire(run_state *st, const sigset_t *set)
{
    const run_opts *o = st->o;
    pthread_t t;
    int got_sig = 0, done = 0, rc, err;
    char detail[512];

    if ((err = pthread_create(&t, NULL, acquire_main, st)) != 0) {
        cli_error("cannot start a thread: %s", strerror(err));
        return CLI_FAILED;
    }
    while (!done) {
        siginfo_t info;
        int sig = sigwaitinfo(set, &info);
        if (sig > 0 && is_forwarded(sig) && !got_sig) {
            /* No COMMAND yet: the signal means "give up", as it would
             * for a process without a handler. */
            got_sig = sig;
            dlock_client_cancel_waits(st->client);
        }
        pthread_mutex_lock(&st->mu);
        done = st->acquire_done;
        pthread_mutex_unlock(&st->mu);
    }
    pthread_join(t, NULL);
    rc = st->acquire_rc;
    snprintf(detail, sizeof detail, "%s", st->acquire_err);
    if (got_sig) {
        if (rc == 0)
            dlock_unlock_as(st->lock, st->owner);
        return 128 + got_sig;
    }
    if (rc == DLOCK_EBUSY) {
        cli_error("lock '%s' is held by another owner", o->name);
        return o->conflict_exit;
    }
    if (rc == DLOCK_ETIMEDOUT) {
        cli_error("lock '%s' not acquired within %s", o->name,
                  o->wait_text ? o->wait_text : "its wait");
        return o->conflict_exit;
    }
    if (rc != 0) {
        char what[256];
        snprintf(what, sizeof what, "cannot lock '%s'", o->name);
        return cli_failed(what, rc, detail);
    }
    return 0;
}

static int spawn_command(const run_opts *o, pid_t *pid)
{
    posix_spawnattr_t attr;
    sigset_t none, dfl;
    int i, err;

    sigemptyset(&none);
    sigemptyset(&dfl);
    for (i = 0; i < NFORWARDED; i++)
        sigaddset(&dfl, forwarded[i]);
    sigaddset(&dfl, SIGCHLD);
    sigaddset(&dfl, SIGPIPE);
    sigaddset(&dfl, wake_signal());
    posix_spawnattr_init(&attr);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    err = posix_spawnp(pid, o->command[0], NULL, &attr, o->command, environ);
    posix_spawnattr_destroy(&attr);
    if (err != 0) {
        cli_error("cannot run '%s': %s", o->command[0], strerror(err));
        return err == ENOENT ? CLI_NOTFOUND : CLI_NOEXEC;
    }
    return 0;
}

/* With a lease of our own (no watchdog): is the lock still ours? Returns
 * when to look again (ms from now), or -1 for never (lost, or no expiry). */
static int64_t check_lease(run_state *st)
{
    int held = 1;
    int64_t ttl = 0;

    if (dlock_is_held_as(st->lock, st->owner, &held) != 0)
        return 1000; /* cannot tell now: look again */
    if (!held) {
        pthread_mutex_lock(&st->mu);
        st->lost = 1;
        pthread_mutex_unlock(&st->mu);
        return -1;
    }
    if (dlock_remain_ttl(st->lock, &ttl) != 0)
        return 1000;
    if (ttl == -1)
        return -1;
    return ttl < 10 ? 10 : ttl;
}

/* Runs COMMAND until it ends; returns its exit code. */
static int supervise(run_state *st, const sigset_t *set, pid_t pid, int *lost_told)
{
    const run_opts *o = st->o;
    int64_t check_at = o->lease_ms > 0 ? now_ms() + o->lease_ms : -1;

    for (;;) {
        siginfo_t info;
        int sig, status, lost;

        pthread_mutex_lock(&st->mu);
        lost = st->lost;
        pthread_mutex_unlock(&st->mu);
        if (lost && !*lost_told) {
            *lost_told = 1;
            check_at = -1;
            if (o->on_lost != LOST_IGNORE)
                kill(pid, o->on_lost == LOST_KILL ? SIGKILL : SIGTERM);
            cli_error("lost the lock '%s' while '%s' ran%s", o->name, o->command[0],
                      o->on_lost == LOST_KILL ? ": sent SIGKILL"
                      : o->on_lost == LOST_TERM ? ": sent SIGTERM" : "");
        }
        if (check_at >= 0) {
            int64_t left = check_at - now_ms();
            struct timespec ts;
            if (left < 0)
                left = 0;
            ts.tv_sec = (time_t)(left / 1000);
            ts.tv_nsec = (long)(left % 1000) * 1000000L;
            sig = sigtimedwait(set, &info, &ts);
            if (sig < 0 && errno == EAGAIN) {
                int64_t next = check_lease(st);
                check_at = next < 0 ? -1 : now_ms() + next;
                continue;
            }
        } else {
            sig = sigwaitinfo(set, &info);
        }
        if (sig == SIGCHLD) {
            if (waitpid(pid, &status, WNOHANG) == pid) {
                if (WIFSIGNALED(status))
                    return 128 + WTERMSIG(status);
                return WEXITSTATUS(status);
            }
        } else if (sig > 0 && is_forwarded(sig) && info.si_code != SI_KERNEL) {
            /* SI_KERNEL: the terminal sent it to its foreground process
             * group, COMMAND included: it has it already. */
            kill(pid, sig);
        }
    }
}

int cli_run(int argc, char **argv, const cli_common *common)
{
    cli_common co = *common;
    run_opts o;
    run_state st;
    dlock_client_options copts;
    sigset_t set;
    pid_t pid;
    int i, rc, status, lost_told = 0;

    memset(&o, 0, sizeof o);
    o.on_lost = LOST_TERM;
    o.conflict_exit = CLI_CONFLICT;
    rc = parse_opts(argc, argv, &co, &o);
    if (rc != 0)
        return rc < 0 ? CLI_OK : rc;

    memset(&st, 0, sizeof st);
    st.o = &o;
    st.main_thread = pthread_self();
    pthread_mutex_init(&st.mu, NULL);

    /* Before any thread exists (the client's included): they inherit it. */
    sigemptyset(&set);
    for (i = 0; i < NFORWARDED; i++)
        sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, wake_signal());
    pthread_sigmask(SIG_BLOCK, &set, NULL);

    cli_client_options(&copts);
    if (o.watchdog_ms > 0)
        copts.watchdog_timeout_ms = o.watchdog_ms;
    copts.on_lost = on_lost;
    copts.on_lost_arg = &st;
    /* A job started before its Redis (a boot script) waits for it, within
     * --wait if given, as it waits for the lock. */
    co.lazy_connect = 1;
    if ((rc = cli_open_lock(&st.client, &st.lock, &co, &copts, o.name, o.fair)) != 0)
        return rc;
    if ((rc = dlock_client_owner(st.client, st.owner, sizeof st.owner)) != 0) {
        dlock_rlock_free(st.lock);
        dlock_client_free(st.client);
        return cli_failed("cannot take an owner id", rc, NULL);
    }

    status = acquire(&st, &set);
    if (status == 0) {
        pthread_mutex_lock(&st.mu);
        lost_told = st.lost;
        pthread_mutex_unlock(&st.mu);
        if (lost_told) {
            cli_error("lost the lock '%s' before '%s' started", o.name, o.command[0]);
            status = CLI_FAILED;
        } else if ((status = spawn_command(&o, &pid)) == 0) {
            status = supervise(&st, &set, pid, &lost_told);
        }
        rc = dlock_unlock_as(st.lock, st.owner);
        if ((rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER) && !lost_told)
            cli_error("lost the lock '%s' while '%s' ran", o.name, o.command[0]);
        else if (rc != 0 && rc != DLOCK_ELOST && rc != DLOCK_ENOTOWNER)
            cli_error("cannot unlock '%s': %s (%s); it is freed when its lease ends",
                      o.name, dlock_strerror(rc), dlock_errmsg(st.lock));
    }
    dlock_rlock_free(st.lock);
    dlock_client_free(st.client);
    pthread_mutex_destroy(&st.mu);
    return status;
}
