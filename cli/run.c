/*
 * dlock run: hold a lock while a command runs.
 *
 *   dlock run [--wait D] [--lease D] [--on-lost kill|term|ignore]
 *             [--kill-after D] [--lost-exit-code N] [--no-group]
 *             [--conflict-exit-code N] [--watchdog-timeout D]
 *             [--fair [--fair-slack D] | --read | --write | --fenced |
 *              --semaphore N | --redlock] [-v]
 *             NAME [--] COMMAND...
 *
 * The lock type is one of those flags (reentrant without one); before it
 * waits, run looks at what is stored under NAME (cli_check_kind) and
 * refuses a name of another type. --fenced hands the token to COMMAND as
 * $DLOCK_FENCING_TOKEN; --redlock takes its client set from --config.
 *
 * COMMAND never runs without the lock, as far as dlock can see:
 *  - dlock renews the lock itself (a thread calling dlock_extend_as every
 *    third of the lease) rather than through the client's watchdog, because
 *    it must know when each successful renewal was *sent*: the lock is
 *    certainly held until that moment plus the lease. The signals that end
 *    COMMAND are planned back from that moment (the signals' plan, below:
 *    SIGKILL a margin before it, SIGTERM --kill-after before that), so a
 *    COMMAND that ignores SIGTERM is dead before the lease can end;
 *  - COMMAND runs in a process group of its own (unless --no-group), and
 *    every signal dlock sends goes to the group; in a terminal, that group
 *    is the foreground one while COMMAND runs (and a stop of COMMAND stops
 *    dlock too, for the shell's job control);
 *  - COMMAND dies with dlock: PR_SET_PDEATHSIG (SIGKILL) is set in the
 *    child before exec, and the child checks that dlock is still its parent
 *    afterwards (dlock may have died before the prctl); COMMAND's children
 *    are covered by a guardian process, forked from dlock, that waits on a
 *    pipe only dlock holds: at EOF without dlock's "done" byte (dlock was
 *    killed) it sends SIGKILL to COMMAND's group. COMMAND execs only once
 *    the guardian exists (the child waits for dlock's go-ahead on another
 *    pipe), so there is no moment when a group could outlive dlock
 *    unguarded.
 *
 * One thread reacts to everything: the main thread blocks the signals it
 * handles before the client exists (so the library's threads inherit the
 * mask and never take them) and then takes them one at a time with
 * sigwaitinfo. Events arrive as signals:
 *  - the forwarded ones (TERM INT HUP QUIT USR1 USR2): before COMMAND
 *    runs they cancel the wait for the lock; afterwards they go to COMMAND
 *    (its group);
 *  - SIGCHLD: a child ended (COMMAND, or one of its orphans: dlock is their
 *    subreaper, so that it can tell when the group is gone);
 *  - wake_signal() (SIGRTMIN), sent by our own threads: the acquisition
 *    thread finished, or the renewal thread found the lock lost. The
 *    signal is only a wake-up; the state under st->mu is the truth.
 * So COMMAND is signalled and reaped by one thread only, and never after
 * it was reaped (its pid could be someone else's by then).
 *
 * The acquisition runs on a thread of its own (so that the main thread can
 * cancel it) with an explicit owner id taken on the main thread, which
 * later unlocks: the *_as calls of api/dlock/lock.h. The checks before
 * the wait (what is stored under NAME, a semaphore's count) run there
 * too, so that --wait bounds everything: the main thread gives up at
 * --wait + CLI_BUDGET_SLACK_MS from dlock's start, whatever the server
 * does, and ends the process then (a round trip in flight cannot be cut
 * short, so the thread cannot be joined).
 */
#include "cli.h"

#include <dlock/log.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum on_lost_mode { LOST_TERM, LOST_KILL, LOST_IGNORE };

static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
#define NFORWARDED ((int)(sizeof forwarded / sizeof forwarded[0]))

/* The defaults of --watchdog-timeout, --kill-after and --lost-exit-code. */
#define RUN_RENEW_LEASE_MS 30000
#define RUN_KILL_AFTER_MS 10000
#define RUN_LOST_EXIT 124
/* What dlock's start (before --wait is counted) and its exit after giving
 * up may take of the documented bound, --wait + CLI_BUDGET_SLACK_MS. */
#define RUN_EXIT_ALLOWANCE_MS 200

static int wake_signal(void)
{
    return SIGRTMIN;
}

typedef struct run_opts {
    const char *name;
    char **command;
    int64_t wait_ms;        /* when has_wait */
    int has_wait;           /* no --wait: wait as long as it takes */
    int64_t lease_ms;       /* --lease: fixed, never renewed; 0: renewed */
    int64_t renew_ms;       /* --watchdog-timeout: the lease renewed */
    int has_renew;          /* --watchdog-timeout given; else the client's
                             * watchdog_timeout_ms (a configuration's) */
    int64_t kill_after_ms;  /* --kill-after */
    int has_kill_after;     /* given: refused when it does not fit */
    const char *type;       /* the lock type by the library's name
                             * (dlock_lock_new), or "redlock"; NULL:
                             * "reentrant" (--fair, --read, --write,
                             * --semaphore, --fenced, --redlock) */
    const char *type_opt;   /* the option that chose it */
    int fenced;             /* --fenced: a fencing token for COMMAND */
    int64_t permits;        /* --semaphore N */
    int64_t fair_slack_ms;  /* --fair-slack; 0: the library's default */
    int verbose;            /* --verbose */
    int no_group;           /* --no-group: COMMAND in dlock's group */
    enum on_lost_mode on_lost;
    int conflict_exit;
    int lost_exit;          /* --lost-exit-code */
    cli_common *co;
} run_opts;

typedef struct run_state {
    const run_opts *o;
    dlock_client *client;     /* clients[0] */
    dlock_client *clients[DLOCK_REDLOCK_MAX_NODES]; /* --redlock: the set */
    size_t nclients;
    int64_t token;            /* --fenced: the acquisition's token */
    dlock_rlock *lock;
    char owner[DLOCK_OWNER_MAX];
    int64_t t0;               /* when dlock run started: --wait counts from
                               * then, its round trips included */
    pthread_t main_thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;      /* the renewal thread's sleep (CLOCK_MONOTONIC) */
    /* under mu */
    int acquire_done;
    int acquire_known;        /* acquire_rc is final (the holder may still
                               * be being looked up) */
    int acquire_rc;
    int acquire_exit;         /* -1, or the exit code of a refusal said
                               * already (a name of another type) */
    char acquire_err[CLI_ERR_MAX];
    char holder[600];         /* not had: who holds it ("" unknown) */
    char warn[384];           /* -v: the library's last warning while
                               * waiting, "" none since the last progress */
    int64_t certain_until;    /* the lock is ours at least until then */
    int64_t renewed_at;       /* when the last successful renewal was sent */
    char renew_err[384];      /* why the last renewal failed, "" if it did not */
    int lost;
    char lost_why[768];
    int stop_renewing;
} run_state;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The wall-clock time of the monotonic moment t, as HH:MM:SS.mmm. */
static void wall_time(int64_t t, char *buf, size_t len)
{
    struct timespec ts;
    struct tm tm;
    int64_t ms;
    time_t sec;

    clock_gettime(CLOCK_REALTIME, &ts);
    ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 - (now_ms() - t);
    sec = (time_t)(ms / 1000);
    localtime_r(&sec, &tm);
    snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
             (int)(ms % 1000));
}

/* ---- options ------------------------------------------------------------ */

static const char run_usage[] =
    "Usage: dlock run [OPTIONS] NAME [--] COMMAND [ARG...]\n"
    "Holds the lock NAME while COMMAND runs, releases it after, and exits with\n"
    "COMMAND's status. Options may come anywhere before COMMAND (before -- when\n"
    "COMMAND starts with a dash).\n"
    "  -w, --wait D             wait at most D for the lock (0: do not wait; default:\n"
    "                           as long as it takes); not had: exit 1\n"
    "  -E, --conflict-exit-code N   exit N instead of 1 when not had within --wait\n"
    "  --lease D                hold the lock for D at most, never renewed\n"
    "  --watchdog-timeout D     the lease dlock renews every third of it (30s)\n"
    "  --fair                   the fair lock (FIFO) instead of the reentrant one\n"
    "  --fair-slack D           the fair lock's wait slack W: a dead waiter blocks\n"
    "                           the queue for about D (5m)\n"
    "  --read, --write          the read-write lock's read (shared) or write half\n"
    "  --semaphore N            one of N permits of the semaphore NAME (set to N if\n"
    "                           it has no count yet); a dead holder's permit returns\n"
    "  --redlock                the Redlock over the client set of --config (\"urls\")\n"
    "  --fenced                 the fenced lock: its token goes to COMMAND as\n"
    "                           $DLOCK_FENCING_TOKEN (with --redlock: the Redlock's)\n"
    "  -v, --verbose            say on stderr when the lock is held (and its token)\n"
    "  --on-lost term|kill|ignore   what COMMAND gets when the lock is lost (term)\n"
    "  --kill-after D           SIGKILL D after --on-lost term if still running (10s)\n"
    "  --lost-exit-code N       exit N when the lock was lost while COMMAND ran (124;\n"
    "                           not with --on-lost ignore)\n"
    "  --no-group               COMMAND in dlock's process group; signals to COMMAND\n"
    "                           only, not to what it started\n";

static int parse_duration_opt(const char *opt, const char *arg, int64_t *out)
{
    char err[256];
    if (cli_parse_duration(arg, out, err, sizeof err) != 0)
        return cli_usage("%s: %s", opt, err);
    return 0;
}

static int parse_exit_code(const char *opt, const char *arg, int *out)
{
    char err[256];
    int64_t n;

    if (cli_parse_count(arg, 0, 255, &n, err, sizeof err) != 0)
        return cli_usage("%s: %s", opt, err);
    *out = (int)n;
    return 0;
}

/* The lock type run takes: "reentrant" unless an option chose another. */
static const char *type_of(const run_opts *o)
{
    return o->type ? o->type : "reentrant";
}

static int is_type(const run_opts *o, const char *type)
{
    return strcmp(type_of(o), type) == 0;
}

/* One lock type only. */
static int set_type(run_opts *o, const char *type, const char *opt)
{
    if (o->type && strcmp(o->type, type) != 0)
        return cli_usage("%s and %s: one lock type at a time", o->type_opt, opt);
    o->type = type;
    o->type_opt = opt;
    return 0;
}

/* One option of run's: 0, or the exit code of a usage error (-1 after
 * --help). */
static int run_option(int c, run_opts *o, char **argv)
{
    char min[32];

    switch (c) {
    case 'w':
        o->has_wait = 1;
        return parse_duration_opt("--wait", optarg, &o->wait_ms);
    case 'l':
        return parse_duration_opt("--lease", optarg, &o->lease_ms);
    case 'T':
        o->has_renew = 1;
        if (parse_duration_opt("--watchdog-timeout", optarg, &o->renew_ms) != 0)
            return CLI_USAGE;
        cli_format_duration(3, min, sizeof min);
        if (o->renew_ms < 3)
            return cli_usage("--watchdog-timeout: at least %s", min);
        return 0;
    case 'K':
        o->has_kill_after = 1;
        return parse_duration_opt("--kill-after", optarg, &o->kill_after_ms);
    case 'f':
        return set_type(o, "fair", "--fair");
    case 'r':
        return set_type(o, "rwlock_read", "--read");
    case 'W':
        return set_type(o, "rwlock_write", "--write");
    case 'R':
        return set_type(o, "redlock", "--redlock");
    case 'S': {
        char err[256];
        if (cli_parse_count(optarg, 1, DLOCK_PERMITS_MAX, &o->permits, err, sizeof err) != 0)
            return cli_usage("--semaphore: %s", err);
        return set_type(o, "semaphore_lock", "--semaphore");
    }
    case 'F':
        o->fenced = 1;
        return 0;
    case 'v':
        o->verbose = 1;
        return 0;
    case 'L':
        if (parse_duration_opt("--fair-slack", optarg, &o->fair_slack_ms) != 0)
            return CLI_USAGE;
        if (o->fair_slack_ms < 1)
            return cli_usage("--fair-slack: at least 1ms");
        return 0;
    case 'G':
        o->no_group = 1;
        return 0;
    case 'o':
        if (strcmp(optarg, "term") == 0)
            o->on_lost = LOST_TERM;
        else if (strcmp(optarg, "kill") == 0)
            o->on_lost = LOST_KILL;
        else if (strcmp(optarg, "ignore") == 0)
            o->on_lost = LOST_IGNORE;
        else
            return cli_usage("--on-lost: '%s' is not kill, term or ignore", optarg);
        return 0;
    case 'E':
        return parse_exit_code("--conflict-exit-code", optarg, &o->conflict_exit);
    case 'X':
        return parse_exit_code("--lost-exit-code", optarg, &o->lost_exit);
    case 'h':
        cli_sub_help(run_usage);
        return -1;
    default:
        return cli_bad_option(c, argv);
    }
}

/* dlock run's options: parse_opts' table, and `dlock completion`'s. */
const struct option *cli_run_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {"wait", required_argument, NULL, 'w'},
        {"lease", required_argument, NULL, 'l'},
        {"fair", no_argument, NULL, 'f'},
        {"fair-slack", required_argument, NULL, 'L'},
        {"read", no_argument, NULL, 'r'},
        {"write", no_argument, NULL, 'W'},
        {"semaphore", required_argument, NULL, 'S'},
        {"redlock", no_argument, NULL, 'R'},
        {"fenced", no_argument, NULL, 'F'},
        {"verbose", no_argument, NULL, 'v'},
        {"on-lost", required_argument, NULL, 'o'},
        {"conflict-exit-code", required_argument, NULL, 'E'},
        {"watchdog-timeout", required_argument, NULL, 'T'},
        {"kill-after", required_argument, NULL, 'K'},
        {"lost-exit-code", required_argument, NULL, 'X'},
        {"no-group", no_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    return longs;
}

/* Options anywhere before COMMAND: before NAME, after it, up to "--" or
 * the first operand after NAME, which starts COMMAND (whose options are
 * never ours). */
static int parse_opts(int argc, char **argv, run_opts *o)
{
    const struct option *longs = cli_run_options();
    int c, rc;

    for (;;) {
        /* "+": stop at the first operand, so that COMMAND's own options
         * are never taken for ours. */
        c = getopt_long(argc, argv, "+:w:E:v" CLI_COMMON_SHORTS, longs, NULL);
        if (c != -1) {
            if (cli_common_option(c, optarg, o->co))
                continue;
            if ((rc = run_option(c, o, argv)) != 0)
                return rc;
            continue;
        }
        if (optind >= argc)
            break;
        if (strcmp(argv[optind - 1], "--") == 0 && optind > 1) {
            /* "--" ends the options: what follows is NAME when not given
             * yet (getopt is not called again: it would permute), then
             * COMMAND, after a second "--" if there is one. */
            if (!o->name) {
                o->name = argv[optind++];
                if (optind < argc && strcmp(argv[optind], "--") == 0)
                    optind++;
            }
            break;
        }
        if (o->name)
            break; /* the first operand after NAME: COMMAND */
        o->name = argv[optind++];
    }
    if (!o->name)
        return cli_usage("run: no lock NAME given");
    if (optind >= argc)
        return cli_usage("run: no COMMAND given (dlock run NAME -- COMMAND ...)");
    if (o->fenced && o->type && !is_type(o, "redlock"))
        return cli_usage("--fenced and %s: a fencing token comes with the fenced lock "
                         "or the Redlock", o->type_opt);
    if (o->fenced && !o->type)
        o->type = "fenced";
    if (o->fair_slack_ms && !is_type(o, "fair"))
        return cli_usage("--fair-slack is for --fair");
    o->command = argv + optind;
    return 0;
}

/* ---- the library's threads ---------------------------------------------- */

/* Marks the lock lost (once) and says why; under st->mu. */
static void mark_lost(run_state *st, const char *why)
{
    if (st->lost)
        return;
    st->lost = 1;
    snprintf(st->lost_why, sizeof st->lost_why, "%s", why);
}

/* -v: the library's warnings while run waits (a connect that failed),
 * kept for the progress line; on any thread, so only recorded here. */
static void on_log(void *arg, int level, const char *msg)
{
    run_state *st = arg;

    if (strncmp(msg, "dlock: ", 7) == 0)
        msg += 7;
    pthread_mutex_lock(&st->mu);
    snprintf(st->warn, sizeof st->warn, "%s", msg);
    pthread_mutex_unlock(&st->mu);
}

/* Before the wait, on the acquisition thread (its round trips count in
 * --wait): what is stored under the name must fit the lock type, and with
 * --semaphore N the count is set to N if it has none, or a count that
 * differs is said. 0, or the exit code after the message. */
static int prepare(run_state *st)
{
    const run_opts *o = st->o;
    dlock_semaphore *s;
    json_t *doc;
    int rc, set = 0;

    if (is_type(o, "redlock"))
        return 0;
    if ((rc = cli_check_kind(st->client, o->name, type_of(o))) != 0 ||
        !is_type(o, "semaphore_lock"))
        return rc;
    if ((rc = dlock_semaphore_new(&s, st->client, o->name)) != 0)
        return cli_failed("cannot make the semaphore", rc, NULL);
    rc = dlock_semaphore_try_set_permits(s, &set, o->permits);
    /* Unreachable now: the wait for a permit waits for it too. */
    if (rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT)
        rc = 0;
    else if (rc != 0)
        rc = cli_failed("cannot set the semaphore's permits", rc, dlock_semaphore_errmsg(s));
    dlock_semaphore_free(s);
    if (rc == 0 && !set && dlock_rlock_state(st->lock, &doc) == 0) {
        /* A count was there: the free permits and those held. */
        json_int_t total = json_integer_value(json_object_get(doc, "permits"));
        json_t *h;
        size_t i;
        json_array_foreach(json_object_get(doc, "holders"), i, h)
            total += json_integer_value(json_object_get(h, "holds"));
        if (total != o->permits)
            cli_error("warning: semaphore '%s' has %lld permits, not the %lld of "
                      "--semaphore %lld (a count set before is kept)", o->name,
                      (long long)total, (long long)o->permits, (long long)o->permits);
        json_decref(doc);
    }
    return rc;
}

/* Who holds the lock that was not had, into buf ("" when it cannot be
 * told): "OWNER (host pid N program, started T)", the first two holders
 * (or the writer), as status shows them. */
static void describe_holders(run_state *st, char *buf, size_t len)
{
    const char *const arrays[] = {"holders", "readers"};
    json_t *doc, *v, *list[3];
    size_t i, k, n = 0, total = 0, off = 0;

    buf[0] = '\0';
    if (dlock_rlock_state(st->lock, &doc) != 0)
        return;
    cli_describe_holders(st->client, doc);
    if (json_is_object(json_object_get(doc, "writer")))
        list[n++] = json_object_get(doc, "writer"), total++;
    for (k = 0; k < 2; k++)
        json_array_foreach(json_object_get(doc, arrays[k]), i, v) {
            if (n < 2)
                list[n++] = v;
            total++;
        }
    for (i = 0; i < n && off < len; i++) {
        const char *who = json_string_value(json_object_get(list[i], "described"));
        off += (size_t)snprintf(buf + off, len - off, "%s%s%s%s%s", i ? ", " : "",
                                json_string_value(json_object_get(list[i], "owner")),
                                who ? " (" : "", who ? who : "", who ? ")" : "");
    }
    if (total > n && off < len)
        snprintf(buf + off, len - off, " and %zu more", total - n);
    json_decref(doc);
}

static void *acquire_main(void *arg)
{
    run_state *st = arg;
    const run_opts *o = st->o;
    int64_t lease = o->lease_ms > 0 ? o->lease_ms : o->renew_ms, t_call, t, ttl = 0;
    int64_t wait = o->wait_ms, certain;
    char holder[sizeof st->holder] = "";
    int rc = 0, refused;

    if ((refused = prepare(st)) == 0) {
        /* --wait is counted from dlock's start: the checks above took
         * their part of it. */
        wait -= now_ms() - st->t0;
        if (wait < 0)
            wait = 0;
    }
    t_call = now_ms();
    certain = t_call + lease;
    if (refused)
        ;
    else if (is_type(o, "fenced"))
        rc = o->has_wait ? dlock_fenced_try_lock_as(st->lock, &st->token, st->owner,
                                                    wait, lease)
                         : dlock_fenced_lock_as(st->lock, &st->token, st->owner, lease);
    else
        rc = o->has_wait ? dlock_try_lock_as(st->lock, st->owner, wait, lease)
                         : dlock_lock_as(st->lock, st->owner, lease);
    if (rc == 0 && !refused && o->fenced && is_type(o, "redlock"))
        rc = dlock_redlock_token_as(st->lock, &st->token, st->owner);
    /* The checks may have spent the whole --wait, leaving one attempt:
     * refused, it is still the wait that ran out. */
    if (rc == DLOCK_EBUSY && o->has_wait && o->wait_ms > 0)
        rc = DLOCK_ETIMEDOUT;

    if (rc == DLOCK_EBUSY || rc == DLOCK_ETIMEDOUT) {
        /* Say whom it waited for; the main thread may give up on this
         * round trip at its deadline, knowing the outcome already. */
        pthread_mutex_lock(&st->mu);
        st->acquire_rc = rc;
        st->acquire_known = 1;
        pthread_mutex_unlock(&st->mu);
        describe_holders(st, holder, sizeof holder);
    }
    /* The lock was set with its lease at some moment after t_call. After a
     * long wait, its TTL read now gives a later bound: the key lives at
     * least until the moment the read was sent plus the TTL it reports. */
    if (rc == 0 && !refused && now_ms() - t_call > lease / 10) {
        t = now_ms();
        if (dlock_remain_ttl(st->lock, &ttl) == 0 && ttl > 0 && t + ttl > certain)
            certain = t + ttl;
    }
    pthread_mutex_lock(&st->mu);
    st->acquire_rc = rc;
    st->acquire_exit = refused ? refused : -1;
    snprintf(st->acquire_err, sizeof st->acquire_err, "%s",
             rc ? dlock_errmsg(st->lock) : "");
    snprintf(st->holder, sizeof st->holder, "%s", holder);
    st->certain_until = certain;
    st->renewed_at = t_call;
    st->acquire_done = 1;
    pthread_mutex_unlock(&st->mu);
    pthread_kill(st->main_thread, wake_signal());
    return NULL;
}

/* The renewal thread (no --lease): extends the lease every third of it,
 * and after a failure retries every tenth. A renewal that finds the lock
 * gone is a loss; one that fails leaves certain_until where it was, for
 * the main thread to watch. */
static void *renew_main(void *arg)
{
    run_state *st = arg;
    int64_t lease = st->o->renew_ms, next, t;
    int64_t retry = lease / 10 > 10 ? lease / 10 : 10;
    int rc, failed = 0;

    pthread_mutex_lock(&st->mu);
    for (;;) {
        next = failed ? now_ms() + retry : st->renewed_at + lease / 3;
        while (!st->stop_renewing && !st->lost && now_ms() < next) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            t = next - now_ms();
            ts.tv_sec += (time_t)(t / 1000);
            ts.tv_nsec += (long)(t % 1000) * 1000000L;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&st->cond, &st->mu, &ts);
        }
        if (st->stop_renewing || st->lost)
            break;
        pthread_mutex_unlock(&st->mu);
        t = now_ms();
        rc = dlock_extend_as(st->lock, st->owner, lease);
        pthread_mutex_lock(&st->mu);
        failed = rc != 0;
        if (rc == 0) {
            st->renewed_at = t;
            if (t + lease > st->certain_until)
                st->certain_until = t + lease;
            st->renew_err[0] = '\0';
        } else if (rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER) {
            mark_lost(st, "a renewal found it gone (unlocked by force, expired or deleted)");
            pthread_kill(st->main_thread, wake_signal());
            break;
        } else {
            snprintf(st->renew_err, sizeof st->renew_err, "%s (%s)", dlock_strerror(rc),
                     dlock_errmsg(st->lock));
        }
    }
    pthread_mutex_unlock(&st->mu);
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

/* One of set's signals, waiting until the monotonic moment wake_at at most
 * (-1: no limit): the signal, or -1 when none came. */
static int wait_signal(const sigset_t *set, siginfo_t *info, int64_t wake_at)
{
    struct timespec ts;
    int64_t left;

    if (wake_at < 0)
        return sigwaitinfo(set, info);
    left = wake_at - now_ms();
    if (left < 0)
        left = 0;
    ts.tv_sec = (time_t)(left / 1000);
    ts.tv_nsec = (long)(left % 1000) * 1000000L;
    return sigtimedwait(set, info, &ts);
}

/* ---- the phases ------------------------------------------------------------ */

/* What not having the lock is called: a lock's, or a semaphore's permit. */
static void say_not_had(const run_opts *o, int rc, const char *holder)
{
    char wait[64], by[700] = "";
    int sem = is_type(o, "semaphore_lock");

    cli_format_duration(o->wait_ms, wait, sizeof wait);
    if (holder && holder[0])
        snprintf(by, sizeof by, "%s %s", sem ? "; permits held by" : " by", holder);
    if (rc == DLOCK_EBUSY && sem)
        cli_error("no permit of semaphore '%s' is free%s", o->name, by);
    else if (rc == DLOCK_EBUSY)
        cli_error("lock '%s' is held%s", o->name, by[0] ? by : " by another owner");
    else if (sem)
        cli_error("no permit of semaphore '%s' within %s%s", o->name, wait, by);
    else
        cli_error("lock '%s' not acquired within %s%s%s", o->name, wait,
                  by[0] ? ": held" : "", by);
}

/* The progress lines of -v while run waits: after 1 s, then at doubling
 * intervals up to a minute. */
static void progress(run_state *st, int64_t waited)
{
    char dur[32], warn[sizeof st->warn];

    pthread_mutex_lock(&st->mu);
    snprintf(warn, sizeof warn, "%s", st->warn);
    st->warn[0] = '\0';
    pthread_mutex_unlock(&st->mu);
    cli_format_duration(waited - waited % 1000, dur, sizeof dur);
    if (warn[0])
        cli_error("still waiting for %s '%s' after %s: the server is unreachable (%s)",
                  is_type(st->o, "semaphore_lock") ? "a permit of semaphore" : "lock",
                  st->o->name, dur, warn);
    else
        cli_error("still waiting for %s '%s' after %s",
                  is_type(st->o, "semaphore_lock") ? "a permit of semaphore" : "lock",
                  st->o->name, dur);
}

/* The deadline passed with the acquisition thread inside a round trip
 * that nothing can cut short: it cannot be joined, and nothing it uses may
 * be freed under it, so the process ends here (COMMAND never started).
 * A lock that the stalled server grants afterwards ends with its lease
 * (--lease, --watchdog-timeout): nobody renews it. */
static void give_up(run_state *st, int got_sig)
{
    const run_opts *o = st->o;
    char wait[32], slack[32];
    int known, rc;

    pthread_mutex_lock(&st->mu);
    known = st->acquire_known;
    rc = st->acquire_rc;
    pthread_mutex_unlock(&st->mu);
    if (got_sig) {
        fflush(NULL);
        _exit(128 + got_sig);
    }
    if (known) {
        if (!o->co->quiet)
            say_not_had(o, rc, NULL);
        fflush(NULL);
        _exit(o->conflict_exit);
    }
    cli_format_duration(o->wait_ms, wait, sizeof wait);
    cli_format_duration(CLI_BUDGET_SLACK_MS, slack, sizeof slack);
    cli_error("cannot lock '%s': the server did not answer within --wait %s + %s "
              "(stalled or unreachable)", o->name, wait, slack);
    fflush(NULL);
    _exit(CLI_FAILED);
}

/* When a run that waits gives up, whatever the server does: --wait +
 * CLI_BUDGET_SLACK_MS from dlock's start, a little before it (dlock's own
 * start and exit are in that bound); -1 without --wait. */
static int64_t wait_deadline(const run_state *st)
{
    const run_opts *o = st->o;

    if (!o->has_wait)
        return -1;
    return st->t0 + o->wait_ms + CLI_BUDGET_SLACK_MS - RUN_EXIT_ALLOWANCE_MS;
}

/* Waits for the lock while taking signals. *held says whether the lock
 * is ours (and then 0 is returned); when it is not, the exit code after
 * the message, which may be 0 (--conflict-exit-code 0): only *held lets
 * COMMAND start. With --wait, returns (or ends the process) by --wait +
 * CLI_BUDGET_SLACK_MS after dlock started, whatever the server does; after
 * a forwarded signal, within CLI_BUDGET_SLACK_MS. */
static int acquire(run_state *st, const sigset_t *set, int *held)
{
    const run_opts *o = st->o;
    int64_t deadline = wait_deadline(st);
    int64_t next_progress = st->t0 + 1000, interval = 1000;
    pthread_t t;
    int got_sig = 0, done = 0, rc, err;
    char detail[CLI_ERR_MAX];

    *held = 0;
    if (o->verbose)
        dlock_set_log(on_log, st, DLOCK_LOG_WARN);
    if ((err = pthread_create(&t, NULL, acquire_main, st)) != 0) {
        dlock_set_log(NULL, NULL, 0);
        cli_error("cannot start a thread: %s", strerror(err));
        return CLI_FAILED;
    }
    while (!done) {
        siginfo_t info;
        int64_t wake = deadline, now;
        int sig;

        if (o->verbose && (wake < 0 || next_progress < wake))
            wake = next_progress;
        sig = wait_signal(set, &info, wake);
        now = now_ms();
        if (sig > 0 && is_forwarded(sig) && !got_sig) {
            /* No COMMAND yet: the signal means "give up", as it would
             * for a process without a handler. */
            got_sig = sig;
            dlock_client_cancel_waits(st->client);
            if (deadline < 0 || now + CLI_BUDGET_SLACK_MS < deadline)
                deadline = now + CLI_BUDGET_SLACK_MS;
        }
        pthread_mutex_lock(&st->mu);
        done = st->acquire_done;
        pthread_mutex_unlock(&st->mu);
        if (!done && deadline >= 0 && now >= deadline)
            give_up(st, got_sig);
        if (!done && o->verbose && !got_sig && now >= next_progress) {
            progress(st, now - st->t0);
            if (interval < 60000)
                interval *= 2;
            next_progress = now + interval;
        }
    }
    pthread_join(t, NULL);
    if (o->verbose)
        dlock_set_log(NULL, NULL, 0);
    rc = st->acquire_rc;
    snprintf(detail, sizeof detail, "%s", st->acquire_err);
    if (got_sig) {
        if (rc == 0 && st->acquire_exit < 0)
            dlock_unlock_as(st->lock, st->owner);
        return 128 + got_sig;
    }
    if (st->acquire_exit >= 0)
        return st->acquire_exit;
    if (rc == DLOCK_EBUSY || rc == DLOCK_ETIMEDOUT) {
        if (!o->co->quiet)
            say_not_had(o, rc, st->holder);
        return o->conflict_exit;
    }
    if (rc != 0) {
        char what[256];
        snprintf(what, sizeof what, "cannot lock '%s'", o->name);
        return cli_failed(what, rc, detail);
    }
    *held = 1;
    return 0;
}

/* COMMAND: forked, set up, and exec'd once dlock says go. */
typedef struct child {
    pid_t pid;
    pid_t guardian;     /* 0: none (--no-group) */
    int guardian_fd;    /* write end of the guardian's pipe, -1: none */
    int tty_fd;         /* the terminal given to COMMAND's group, -1: none */
} child;

/* dlock's own variables that may hold a secret: $DLOCK_URL's user
 * information or password parameters. COMMAND does not get them (issue
 * 28): what it needs, it is given explicitly. ($DLOCK_CONFIG names a
 * file, which COMMAND could read or not by its permissions: kept.) */
static const char *const scrubbed[] = {"DLOCK_URL"};

/* The environment COMMAND gets: dlock's, without the variables above
 * (pointers into environ, in a malloc'ed array: free the array only).
 * NULL when out of memory. */
static char **child_environment(void)
{
    size_t n = 0, k = 0, i, j;
    char **env;

    while (environ && environ[n])
        n++;
    env = malloc((n + 1) * sizeof *env);
    if (!env)
        return NULL;
    for (i = 0; i < n; i++) {
        int drop = 0;
        for (j = 0; j < sizeof scrubbed / sizeof scrubbed[0]; j++) {
            size_t len = strlen(scrubbed[j]);
            drop |= strncmp(environ[i], scrubbed[j], len) == 0 && environ[i][len] == '=';
        }
        if (!drop)
            env[k++] = environ[i];
    }
    env[k] = NULL;
    return env;
}

/* In the forked child: only async-signal-safe calls. Never returns. */
static void child_main(const run_opts *o, char **env, pid_t parent, int go_fd,
                       int err_fd)
{
    struct sigaction dfl;
    sigset_t none;
    char b;
    int i, e;

    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (i = 0; i < NFORWARDED; i++)
        sigaction(forwarded[i], &dfl, NULL);
    sigaction(SIGCHLD, &dfl, NULL);
    sigaction(SIGPIPE, &dfl, NULL);
    sigaction(wake_signal(), &dfl, NULL);
    if (!o->no_group)
        setpgid(0, 0);
    /* Dies with dlock; and dlock may have died before the prctl, in which
     * case this process was handed to another parent already. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(CLI_FAILED);
    /* The go-ahead: dlock has set up the guardian. EOF: dlock died. */
    if (read(go_fd, &b, 1) != 1)
        _exit(CLI_FAILED);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvpe(o->command[0], o->command, env);
    e = errno;
    if (write(err_fd, &e, sizeof e) != (ssize_t)sizeof e)
        _exit(CLI_FAILED);
    _exit(CLI_FAILED);
}

/* In the forked guardian: only async-signal-safe calls. Waits for dlock's
 * "done" byte; EOF without it means dlock died: SIGKILL to the group. */
static void guardian_main(int fd, pid_t pgid)
{
    char b = 0;
    ssize_t n;

    /* Its own descriptor as 3, nothing else (none of dlock's connections,
     * no other pipe end that someone waits to see closed). */
    if (dup2(fd, 3) < 0)
        _exit(1);
    close_range(4, ~0U, 0);
    do
        n = read(3, &b, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1 || b != 'd')
        kill(-pgid, SIGKILL);
    _exit(0);
}

static int make_pipe(int fds[2])
{
    if (pipe2(fds, O_CLOEXEC) != 0) {
        cli_error("cannot make a pipe: %s", strerror(errno));
        return -1;
    }
    return 0;
}

/* The terminal dlock runs in the foreground of (stdin's, else stdout's or
 * stderr's), -1 when none: a COMMAND in a group of its own gets it, so
 * that it can read from it (a background group that reads stops on
 * SIGTTIN) and Ctrl-C reaches it, as under flock(1). */
static int foreground_tty(void)
{
    int fd;

    for (fd = 0; fd <= 2; fd++)
        if (isatty(fd))
            return tcgetpgrp(fd) == getpgrp() ? fd : -1;
    return -1;
}

/* Sets the terminal's foreground group to pgid. dlock may be in the
 * background by then (giving it back): SIGTTOU would stop it, so it is
 * blocked around the call. */
static int set_foreground(int fd, pid_t pgid)
{
    sigset_t ttou, old;
    int rc;

    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    rc = tcsetpgrp(fd, pgid);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* The terminal back to dlock's group once COMMAND's is done. */
static void take_back_tty(child *ch)
{
    if (ch->tty_fd >= 0)
        set_foreground(ch->tty_fd, getpgrp());
    ch->tty_fd = -1;
}

/* Starts COMMAND (and its guardian). 0, or the exit code after the
 * message. */
static int spawn_command(const run_opts *o, child *ch)
{
    int go[2], err[2], g[2], e = 0;
    pid_t parent = getpid();
    char **env;
    ssize_t n;

    ch->guardian = 0;
    ch->guardian_fd = -1;
    ch->tty_fd = -1;
    if (!(env = child_environment())) {
        cli_error("cannot run '%s': out of memory", o->command[0]);
        return CLI_FAILED;
    }
    if (make_pipe(go) != 0) {
        free(env);
        return CLI_FAILED;
    }
    if (make_pipe(err) != 0) {
        close(go[0]);
        close(go[1]);
        free(env);
        return CLI_FAILED;
    }
    fflush(NULL);
    ch->pid = fork();
    if (ch->pid == 0)
        child_main(o, env, parent, go[0], err[1]);
    free(env);
    close(go[0]);
    close(err[1]);
    if (ch->pid < 0) {
        cli_error("cannot run '%s': %s", o->command[0], strerror(errno));
        close(go[1]);
        close(err[0]);
        return CLI_FAILED;
    }
    if (!o->no_group) {
        setpgid(ch->pid, ch->pid); /* as the child does: whoever is first */
        if (make_pipe(g) == 0) {
            ch->guardian = fork();
            if (ch->guardian == 0)
                guardian_main(g[0], ch->pid);
            close(g[0]);
            if (ch->guardian > 0)
                ch->guardian_fd = g[1];
            else
                close(g[1]);
        }
        if (ch->guardian <= 0) {
            cli_error("cannot start the guardian of '%s': %s", o->command[0],
                      strerror(errno));
            ch->guardian = 0;
            close(go[1]);    /* the child reads EOF and exits */
            close(err[0]);
            waitpid(ch->pid, NULL, 0);
            return CLI_FAILED;
        }
    }
    if (!o->no_group) {
        int fd = foreground_tty();
        if (fd >= 0 && set_foreground(fd, ch->pid) == 0)
            ch->tty_fd = fd;
        else if (fd >= 0)
            cli_error("warning: '%s' cannot read from the terminal (it runs in a process "
                      "group of its own; --no-group keeps it in dlock's): %s",
                      o->command[0], strerror(errno));
    }
    /* Go; then the exec's outcome: EOF when it succeeded (close-on-exec),
     * else its errno. */
    n = write(go[1], "g", 1);
    close(go[1]);
    if (n == 1) {
        do
            n = read(err[0], &e, sizeof e);
        while (n < 0 && errno == EINTR);
    }
    close(err[0]);
    if (n != 0) {
        int status;
        waitpid(ch->pid, &status, 0);
        take_back_tty(ch);
        if (n == (ssize_t)sizeof e) {
            cli_error("cannot run '%s': %s", o->command[0], strerror(e));
            return e == ENOENT ? CLI_NOTFOUND : CLI_NOEXEC;
        }
        cli_error("cannot run '%s'", o->command[0]);
        return CLI_FAILED;
    }
    return 0;
}

/* Tells the guardian that dlock ends normally, and reaps it. */
static void end_guardian(child *ch)
{
    if (ch->guardian_fd >= 0) {
        if (write(ch->guardian_fd, "d", 1) != 1)
            cli_error("cannot reach the guardian: %s", strerror(errno));
        close(ch->guardian_fd);
        ch->guardian_fd = -1;
    }
    if (ch->guardian > 0)
        waitpid(ch->guardian, NULL, 0);
    ch->guardian = 0;
}

/* Sends sig to COMMAND's group (to COMMAND alone with --no-group, and
 * only while it is not reaped). */
static void signal_command(const run_opts *o, const child *ch, int sig, int reaped)
{
    if (!o->no_group)
        kill(-ch->pid, sig);
    else if (!reaped)
        kill(ch->pid, sig);
}

/* Whether some process of COMMAND's group is still there. */
static int group_alive(const child *ch)
{
    return kill(-ch->pid, 0) == 0 || errno != ESRCH;
}

/* ---- the signals' plan ---------------------------------------------------- */

/* The lock is certainly ours until certain_until; after it, another owner
 * may hold it. So the signals are planned back from it: with --on-lost
 * term, SIGTERM at certain_until - kill_after - margin and SIGKILL at
 * certain_until - margin; with kill, SIGKILL at certain_until - margin;
 * with ignore, the loss is only reported, at certain_until. The margin
 * covers dlock's own wake-up and the kernel's delivery of SIGKILL on a
 * busy machine; what it cannot cover (the server's clock running faster
 * than ours, a stop of the whole host) is said in dlock(1). */

/* The margin before the lease's end: a tenth of the lease, 20 ms to 1 s
 * (a short lease leaves its renewals the room they had before the plan:
 * a renewal must answer before the first signal is due). */
static int64_t kill_margin(int64_t lease)
{
    int64_t m = lease / 10;
    return m < 20 ? 20 : m > 1000 ? 1000 : m;
}

/* The lease dlock holds the lock for: --lease, else the renewed one. */
static int64_t lease_of(const run_opts *o)
{
    return o->lease_ms > 0 ? o->lease_ms : o->renew_ms;
}

/* How long before certain_until the first signal goes (the loss is
 * decided then). */
static int64_t signal_ahead(const run_opts *o)
{
    int64_t margin = kill_margin(lease_of(o));

    switch (o->on_lost) {
    case LOST_TERM:
        return o->kill_after_ms + margin;
    case LOST_KILL:
        return margin;
    default:
        return 0;
    }
}

/* Fits --kill-after into the lease: a renewed lease must leave the renewal
 * (every third of it) room before SIGTERM is due, so SIGTERM comes no
 * earlier than half the lease after a renewal; a fixed --lease must not
 * have SIGTERM due before COMMAND starts. The default (10 s) shrinks to
 * half the room when it does not fit; a --kill-after given that does not
 * fit is a usage error. 0 or CLI_USAGE. */
static int plan_signals(run_opts *o)
{
    int64_t lease = lease_of(o), margin = kill_margin(lease);
    int64_t room = (o->lease_ms > 0 ? lease : lease / 2) - margin;
    char ka[32], l[32], most[32], m[32];

    if (o->on_lost != LOST_TERM || o->kill_after_ms <= room)
        return 0;
    if (!o->has_kill_after) {
        /* half the room: COMMAND gets some of the lease before SIGTERM */
        o->kill_after_ms = room > 0 ? room / 2 : 0;
        return 0;
    }
    cli_format_duration(o->kill_after_ms, ka, sizeof ka);
    cli_format_duration(lease, l, sizeof l);
    cli_format_duration(room > 0 ? room : 0, most, sizeof most);
    cli_format_duration(margin, m, sizeof m);
    return cli_usage("--kill-after %s does not fit in the %s of %s: SIGKILL must land "
                     "before the lock can expire, so --kill-after is at most %s here (%s "
                     "less a margin of %s); give a longer %s or a shorter --kill-after",
                     ka, o->lease_ms > 0 ? "--lease" : "lease", l, most,
                     o->lease_ms > 0 ? "the lease" : "half the lease", m,
                     o->lease_ms > 0 ? "--lease" : "--watchdog-timeout");
}

/* COMMAND, which has the terminal, was stopped (Ctrl-Z, or SIGTTIN...):
 * dlock stops too, with the terminal back in its group, so that the shell
 * sees its job stopped; when it is continued (fg: in the foreground
 * again), COMMAND's group gets the terminal back if dlock has it, and
 * SIGCONT. Without the terminal (--no-group, not a terminal) a stopped
 * COMMAND is left to whoever stopped it. */
static void follow_stop(child *ch, int sig)
{
    int fd = ch->tty_fd;

    if (fd < 0)
        return;
    set_foreground(fd, getpgrp());
    kill(getpid(), sig == SIGSTOP ? SIGSTOP : sig == SIGTTIN || sig == SIGTTOU ? sig
                                                                               : SIGTSTP);
    /* continued */
    if (tcgetpgrp(fd) == getpgrp())
        set_foreground(fd, ch->pid);
    kill(-ch->pid, SIGCONT);
}

/* Runs COMMAND until it ends (and, after a loss that signalled it, its
 * group too); returns its exit code. *lost_told: the loss was reported;
 * *stopped: COMMAND was signalled for it before it ended on its own. */
static int supervise(run_state *st, const sigset_t *set, child *ch, int *lost_told,
                     int *stopped,
                     int64_t started)
{
    const run_opts *o = st->o;
    int64_t kill_at = -1, certain, now, ahead = signal_ahead(o);
    int64_t margin = kill_margin(lease_of(o));
    int status = 0, reaped = 0, exit_code = 0, lost, expiring = 0;
    char why[768];

    for (;;) {
        siginfo_t info;
        int64_t wake_at = -1;
        int sig;
        pid_t p;

        now = now_ms();
        pthread_mutex_lock(&st->mu);
        certain = st->certain_until;
        if (!st->lost && now >= certain - ahead) {
            char at[32], last[32], dur[32];
            wall_time(st->renewed_at, last, sizeof last);
            cli_format_duration(lease_of(o), dur, sizeof dur);
            wall_time(certain, at, sizeof at);
            if (o->lease_ms > 0)
                snprintf(why, sizeof why, "its --lease of %s ends at %s", dur, at);
            else
                snprintf(why, sizeof why, "not renewed since %s, its lease of %s ends "
                         "at %s (%s)", last, dur, at,
                         st->renew_err[0] ? st->renew_err : "no renewal answered");
            mark_lost(st, why);
            expiring = 1;
            pthread_cond_broadcast(&st->cond);
        }
        lost = st->lost;
        snprintf(why, sizeof why, "%s", st->lost_why);
        pthread_mutex_unlock(&st->mu);

        if (lost && !*lost_told) {
            char at[32], ran[32], then[32], plan[64] = "";
            *lost_told = 1;
            *stopped = !reaped && o->on_lost != LOST_IGNORE;
            if (o->on_lost != LOST_IGNORE) {
                signal_command(o, ch, o->on_lost == LOST_KILL ? SIGKILL : SIGTERM, reaped);
                if (o->on_lost == LOST_TERM) {
                    /* late (a busy machine): still before the lease ends */
                    kill_at = now + o->kill_after_ms;
                    if (expiring && kill_at > certain - margin)
                        kill_at = certain - margin;
                    wall_time(kill_at, then, sizeof then);
                    snprintf(plan, sizeof plan, ", SIGKILL at %s if still running", then);
                }
            }
            wall_time(now, at, sizeof at);
            cli_format_duration(now - started, ran, sizeof ran);
            if (reaped)
                cli_error("lost the lock '%s' at %s, %s after '%s' started: %s; '%s' had "
                          "ended (status %d), it was not stopped", o->name, at, ran,
                          o->command[0], why, o->command[0], exit_code);
            else
                cli_error("lost the lock '%s' at %s, %s after '%s' started: %s; %s%s",
                          o->name, at, ran, o->command[0], why,
                          o->on_lost == LOST_KILL ? "sent SIGKILL"
                          : o->on_lost == LOST_TERM ? "sent SIGTERM"
                                                    : "--on-lost ignore: left running",
                          plan);
        }
        if (kill_at >= 0 && now >= kill_at) {
            signal_command(o, ch, SIGKILL, reaped);
            kill_at = -1;
        }
        /* Done when COMMAND was reaped, and after a loss that signalled
         * its group, when the group is gone too. */
        if (reaped && (!lost || o->on_lost == LOST_IGNORE || o->no_group ||
                       !group_alive(ch)))
            return exit_code;

        if (!lost)
            wake_at = certain - ahead;
        if (kill_at >= 0 && (wake_at < 0 || kill_at < wake_at))
            wake_at = kill_at;
        if (reaped && (wake_at < 0 || now + 50 < wake_at))
            wake_at = now + 50; /* the group's last members: look again */
        sig = wait_signal(set, &info, wake_at);
        if (sig == SIGCHLD) {
            /* COMMAND, or an orphan of its handed to us (subreaper) */
            while ((p = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
                if (WIFSTOPPED(status)) {
                    if (p == ch->pid)
                        follow_stop(ch, WSTOPSIG(status));
                } else if (p == ch->pid) {
                    reaped = 1;
                    exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                                    : WEXITSTATUS(status);
                } else if (p == ch->guardian) {
                    ch->guardian = 0; /* should not happen: it waits for us */
                }
            }
        } else if (sig > 0 && is_forwarded(sig) &&
                   (!o->no_group || info.si_code != SI_KERNEL)) {
            /* SI_KERNEL: the terminal sent it to its foreground process
             * group; with --no-group COMMAND is in it and has it already. */
            signal_command(o, ch, sig, reaped);
        }
    }
}

static void free_clients(run_state *st)
{
    size_t i;

    for (i = 0; i < st->nclients; i++)
        dlock_client_free(st->clients[i]);
    st->nclients = 0;
    st->client = NULL;
}

/* The lease a configuration gives (watchdog_timeout_ms,
 * lockWatchdogTimeout) when the command line does not. */
static void take_lease(run_opts *o, const dlock_client_options *used)
{
    if (!o->has_renew)
        o->renew_ms = used->watchdog_timeout_ms;
}

/* The client(s) and the lock of o's type (prepare checks it against
 * what is stored under the name, on the acquisition thread). 0, or the
 * exit code after the message (nothing left). */
static int open_lock(run_state *st, run_opts *o, cli_common *co)
{
    dlock_client_options d, used;
    int rc;

    if (is_type(o, "redlock")) {
        if ((rc = cli_connect_set_used(st->clients, DLOCK_REDLOCK_MAX_NODES, &st->nclients,
                                       co, &used)) != 0)
            return rc;
        take_lease(o, &used);
        st->client = st->clients[0];
        rc = dlock_redlock_new(&st->lock, st->clients, st->nclients, o->name);
        if (rc != 0) {
            /* the first node's client holds the reason of a refused name */
            dlock_client *first = rc == DLOCK_EINVAL ? st->clients[0] : NULL;
            if (first)
                st->clients[0] = NULL;
            free_clients(st);
            return first ? cli_bad_name(first)
                         : cli_failed("cannot make the Redlock", rc, NULL);
        }
        return 0;
    }
    cli_client_options(&d);
    if (o->fair_slack_ms)
        d.fair_wait_slack_ms = o->fair_slack_ms;
    if ((rc = cli_open_lock_used(&st->client, &st->lock, co, &d, &used, o->name,
                                 type_of(o))) != 0)
        return rc;
    take_lease(o, &used);
    st->clients[0] = st->client;
    st->nclients = 1;
    return 0;
}

static void *teardown_main(void *arg)
{
    run_state *st = arg;

    dlock_rlock_free(st->lock);
    free_clients(st);
    return NULL;
}

/* Frees the lock and the clients; by deadline at most (-1: no limit),
 * else the process ends there with status: a client's teardown joins its
 * watchdog, which may be inside a round trip with a stalled server (up to
 * the command timeout), and a run that did not get the lock must still
 * end within --wait's bound. */
static void teardown(run_state *st, int64_t deadline, int status)
{
    struct timespec ts;
    pthread_t t;
    int64_t left;

    if (deadline < 0 || pthread_create(&t, NULL, teardown_main, st) != 0) {
        teardown_main(st);
        return;
    }
    left = deadline - now_ms();
    if (left < 0)
        left = 0;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(left / 1000);
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(t, NULL, &ts) != 0) {
        fflush(NULL);
        _exit(status);
    }
}

int cli_run(int argc, char **argv, const cli_common *common)
{
    cli_common co = *common;
    run_opts o;
    run_state st;
    sigset_t set;
    child ch;
    pthread_t renewer;
    int i, rc, status, held, lost_told = 0, stopped = 0, renewing = 0;

    memset(&o, 0, sizeof o);
    o.on_lost = LOST_TERM;
    o.conflict_exit = CLI_CONFLICT;
    o.lost_exit = RUN_LOST_EXIT;
    o.renew_ms = RUN_RENEW_LEASE_MS;
    o.kill_after_ms = RUN_KILL_AFTER_MS;
    o.co = &co;
    rc = parse_opts(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? CLI_OK : rc;

    memset(&st, 0, sizeof st);
    memset(&ch, 0, sizeof ch);
    ch.guardian_fd = -1;
    ch.tty_fd = -1;
    st.o = &o;
    st.t0 = now_ms();
    st.acquire_exit = -1;
    st.main_thread = pthread_self();
    pthread_mutex_init(&st.mu, NULL);
    {
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&st.cond, &ca);
        pthread_condattr_destroy(&ca);
    }

    /* Before any thread exists (the client's included): they inherit it. */
    sigemptyset(&set);
    for (i = 0; i < NFORWARDED; i++)
        sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, wake_signal());
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    /* COMMAND's orphans come to us: we can tell when its group is gone. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);

    /* A job started before its Redis (a boot script) waits for it, within
     * --wait if given, as it waits for the lock. */
    co.lazy_connect = 1;
    if ((rc = open_lock(&st, &o, &co)) != 0)
        return rc;
    if ((rc = plan_signals(&o)) != 0) {
        dlock_rlock_free(st.lock);
        free_clients(&st);
        return rc;
    }
    if ((rc = dlock_client_owner(st.client, st.owner, sizeof st.owner)) != 0) {
        dlock_rlock_free(st.lock);
        free_clients(&st);
        return cli_failed("cannot take an owner id", rc, NULL);
    }

    status = acquire(&st, &set, &held);
    if (held) {
        int64_t started = now_ms();

        if (o.lease_ms == 0) {
            rc = pthread_create(&renewer, NULL, renew_main, &st);
            renewing = rc == 0;
            if (rc != 0)
                cli_error("cannot start a thread: %s", strerror(rc));
        }
        /* Seen by status and list from now on (the watchdog renews it). */
        dlock_client_describe(st.client);
        if (o.fenced) {
            char tok[32];
            snprintf(tok, sizeof tok, "%lld", (long long)st.token);
            setenv("DLOCK_FENCING_TOKEN", tok, 1);
        }
        if (o.verbose) {
            if (o.fenced)
                cli_error("lock '%s' held by %s, fencing token %lld", o.name, st.owner,
                          (long long)st.token);
            else
                cli_error("lock '%s' held by %s", o.name, st.owner);
        }
        if (o.lease_ms == 0 && !renewing)
            status = CLI_FAILED;
        else if ((status = spawn_command(&o, &ch)) == 0)
            status = supervise(&st, &set, &ch, &lost_told, &stopped, started);
        take_back_tty(&ch);
        if (renewing) {
            pthread_mutex_lock(&st.mu);
            st.stop_renewing = 1;
            pthread_cond_broadcast(&st.cond);
            pthread_mutex_unlock(&st.mu);
            pthread_join(renewer, NULL);
        }
        end_guardian(&ch);
        rc = dlock_unlock_as(st.lock, st.owner);
        if ((rc == DLOCK_ELOST || rc == DLOCK_ENOTOWNER) && !lost_told) {
            /* COMMAND ended on its own before the loss was seen: its
             * status stands (as consul lock and etcdctl lock have it). */
            lost_told = 1;
            cli_error("lost the lock '%s' while '%s' ran: the unlock after it found the "
                      "lock gone (unlocked by force, expired or deleted); '%s' had ended "
                      "(status %d), it was not stopped", o.name, o.command[0],
                      o.command[0], status);
        } else if (rc != 0 && rc != DLOCK_ELOST && rc != DLOCK_ENOTOWNER && !lost_told)
            cli_error("cannot unlock '%s': %s (%s); it is freed when its lease ends",
                      o.name, dlock_strerror(rc), dlock_errmsg(st.lock));
        if (stopped)
            status = o.lost_exit;
    }
    teardown(&st, held ? -1 : wait_deadline(&st), status);
    pthread_cond_destroy(&st.cond);
    pthread_mutex_destroy(&st.mu);
    return status;
}
