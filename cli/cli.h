/*
 * dlock(1), the command-line tool: what its files share.
 *
 * Built against the library's public headers only (<dlock.h>), as any
 * program using an installed libdlock would be. One file per concern:
 *   dlock.c     main: the command line, --help, --version, the dispatch
 *   duration.c  durations ("10" = 10 s, "1.5s", "500ms", "1h30m") and counts
 *   connect.c   the client from --url / --config / $DLOCK_URL /
 *               $DLOCK_CONFIG (and a lock handle on it), and the one-line
 *               errors
 *   run.c       dlock run: hold a lock while a command runs
 *   status.c    dlock status and dlock unlock --force
 *   objects.c   any object by name: what is stored there, its state, the
 *               check before run takes a name, and dlock list
 *   counters.c  dlock semaphore and dlock latch
 *   completion.c  dlock completion: bash and zsh scripts from the tables
 *
 * Exit codes (also in cli/dlock.1, EXIT STATUS): see the enum below. A
 * sub-command returns the exit code; every error has been printed on stderr
 * as one line starting "dlock: " by then.
 */
#ifndef DLOCK_CLI_H
#define DLOCK_CLI_H

#include <dlock.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    CLI_OK = 0,
    CLI_CONFLICT = 1, /* not had within --wait (flock(1)'s convention) */
    CLI_USAGE = 2,    /* bad option, duration, count or sub-command */
    /* dlock status (LSB's status codes, as `systemctl status` uses them):
     * 0 held, and */
    CLI_FREE = 3,     /* a lock stored there, held by nobody */
    CLI_ABSENT = 4,   /* nothing stored: a free lock, or a name never set */
    CLI_FAILED = 125, /* dlock itself failed: backend unreachable, error reply */
    CLI_NOEXEC = 126, /* COMMAND found but not executable */
    CLI_NOTFOUND = 127 /* COMMAND not found */
};

/* Room for a library detail (the library keeps up to 1024 bytes,
 * DLOCK_ERRMSG_MAX): a server's own words come last in it, and a cut one
 * reads as a different message. */
#define CLI_ERR_MAX 1024

/* The default when neither --url nor $DLOCK_URL is given. */
#define CLI_DEFAULT_URL "redis://127.0.0.1:6379"

/* Options every sub-command takes (before the sub-command or among its
 * own options). */
typedef struct cli_common {
    const char *url;    /* --url; NULL: see cli_connect */
    const char *config; /* --config FILE; NULL: see cli_connect */
    int quiet;          /* -q: no message when the lock (permits, latch)
                         * was not had within --wait */
    /* Set by the sub-command, not an option: 1 makes the client without
     * its server (the library's lazy connection, api/dlock/redis.h), so
     * that a command that waits (dlock run) waits through a server that
     * is down at start instead of failing at once; a configuration file
     * too, unless it says "lazy_connect": false. */
    int lazy_connect;
} cli_common;

/* The options of cli_common as getopt_long entries and their handling:
 * each sub-command's table starts with CLI_COMMON_LONGS, its optstring
 * with CLI_COMMON_SHORTS, and its switch's default case calls
 * cli_common_option first (1: taken). */
#define CLI_COMMON_LONGS                                                       \
    {"url", required_argument, NULL, 'u'},                                     \
    {"config", required_argument, NULL, 'C'},                                  \
    {"quiet", no_argument, NULL, 'q'},                                         \
    {"help", no_argument, NULL, 'h'}
#define CLI_COMMON_SHORTS "qh"
int cli_common_option(int c, const char *arg, cli_common *co);

/* s on f, with what a terminal would act on escaped: control characters
 * (C0, DEL, and C1 as UTF-8) as \xHH or \u00HH, and '\' as "\\", so that
 * a name or an owner id stored on the server cannot move the cursor,
 * retitle the window or hide text. NULL prints nothing. */
void cli_put_text(FILE *f, const char *s);
/* A JSON text json on f, then a newline, with its C1 controls (raw UTF-8
 * in Jansson's output) as \u00HH: the same JSON, and no byte a terminal
 * would act on. */
void cli_put_json(FILE *f, const char *json);
/* "dlock: <message>\n" on stderr, as one line (newlines in the message
 * become spaces, so an odd lock name cannot split it; other control
 * characters are escaped, as cli_put_text does). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a usage error, pointing at --help; returns CLI_USAGE. */
int cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* cli_usage for a name c refused (DLOCK_EINVAL from a constructor): the
 * library's reason (a reserved form, its length), then frees c. */
int cli_bad_name(dlock_client *c);

/* Parses a duration into milliseconds (cli/duration.c: a bare number is
 * seconds; fractions; units ms, s, m, h, d; compounds such as 1h30m). 0
 * is allowed (for --wait: do not wait). Up to DLOCK_TIME_MAX_MS, whole
 * milliseconds. 0, or -1 with a one-line reason in err. */
int cli_parse_duration(const char *s, int64_t *out_ms, char *err, size_t errlen);
/* Writes ms in the form cli_parse_duration reads, with units ("500ms",
 * "1.5s", "1h30m"). */
void cli_format_duration(int64_t ms, char *buf, size_t len);
/* Parses a decimal count lo..hi (no sign, no unit). 0 or -1 with err. */
int cli_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out,
                    char *err, size_t errlen);

/* The client options of every sub-command: the library's defaults, but
 * a budget slack of CLI_BUDGET_SLACK_MS. A wait's round trips are cut off
 * at wait + slack, and --wait 0 gets one attempt of slack: 50 ms (the
 * library's default, tuned for in-process retry loops) would turn a slow
 * or distant server into "not acquired" for a cron job, whose --wait 0
 * means "do not wait for the holder", not "give up on a slow reply". */
#define CLI_BUDGET_SLACK_MS 2000
void cli_client_options(dlock_client_options *o);

/* Connects a client (opts: NULL for cli_client_options' defaults). Where
 * to: --url, or --config FILE (the library's JSON configuration,
 * api/dlock/config.h), else $DLOCK_URL, or $DLOCK_CONFIG (empty values
 * count as unset), else CLI_DEFAULT_URL; --url with --config, or both
 * variables set, is a usage error. A configuration's own settings apply
 * as written, over opts (which a URL gets as they are). A client set ("urls") is refused:
 * these commands use one server. A URL is connected lazily with
 * co->lazy_connect (the URL's lazy_connect=0 turns that off), and so is a
 * configuration file (its "lazy_connect": false turns that off). 0, or after
 * printing why (the library's detail, never the password): CLI_USAGE for
 * a URL or configuration the library refuses (DLOCK_EINVAL), CLI_FAILED
 * otherwise. */
int cli_connect(dlock_client **out, const cli_common *co,
                const dlock_client_options *opts);
/* The same, telling (used, may be NULL) the client options the client
 * was made with: opts, or a configuration's fields over them (its
 * watchdog_timeout_ms, say). A configuration file gets opts and
 * co->lazy_connect as its defaults, where it does not say otherwise, as a
 * URL does. */
int cli_connect_used(dlock_client **out, const cli_common *co,
                     const dlock_client_options *opts, dlock_client_options *used);
/* The client set of --config / $DLOCK_CONFIG (its "urls", or its one
 * "url"), for --redlock: up to max clients into set, *n of them. 0, or the
 * exit code after the message (nothing left to free). */
int cli_connect_set(dlock_client **set, size_t max, size_t *n, const cli_common *co);
/* cli_connect's client, or the client set of a JSON --config with "urls"
 * (dlock status looks at a Redlock's nodes one by one). The same
 * returns. */
int cli_connect_nodes(dlock_client **set, size_t max, size_t *n, const cli_common *co);
/* Node i of the set connected last, by address ("host:port", a socket's
 * path; never a password): NULL when there is none. From then on, the
 * one-line errors name the nodes of the library's Redlock errors ("node 1
 * DLOCK_ECONN") so. */
const char *cli_node_name(size_t i);
/* The address of url, as cli_node_name gives it, into out. */
void cli_url_endpoint(const char *url, char *out, size_t len);
/* The same, telling the client options the set was made with (used, may
 * be NULL), as cli_connect_used. */
int cli_connect_set_used(dlock_client **set, size_t max, size_t *n, const cli_common *co,
                         dlock_client_options *used);

/* The lock types a name is taken as are the library's, by name
 * (dlock_lock_new: "reentrant", "fair", "rwlock_read"...; dlock run's
 * --fair, --read, --write, --fenced, --semaphore pick one; the Redlock is
 * made apart). */
/* cli_connect, then a handle on the lock called name of the lock type
 * called type. 0, or the exit code after the message (nothing left to
 * free). */
int cli_open_lock(dlock_client **c, dlock_rlock **l, const cli_common *co,
                  const dlock_client_options *opts, const char *name, const char *type);
/* The same with the options used (cli_connect_used). */
int cli_open_lock_used(dlock_client **c, dlock_rlock **l, const cli_common *co,
                       const dlock_client_options *opts, dlock_client_options *used,
                       const char *name, const char *type);

/* cli/objects.c. What is stored under name (dlock_object_kind): 0, or the
 * library's code with its detail in err. */
int cli_kind_of(dlock_client *c, const char *name, const char **kind, char *err,
                size_t errlen);
/* A kind in words ("read-write lock"; dlock_object_kind_what, or the kind
 * itself when the library does not know it). */
const char *cli_kind_what(const char *kind);
/* Before dlock run takes name as a lock of the type called type: 0 when
 * what is stored there fits (dlock_lock_type_takes; or the server cannot
 * be asked now), else the exit code after the message ("'x' is a
 * read-write lock, not a reentrant lock": CLI_USAGE). */
int cli_check_kind(dlock_client *c, const char *name, const char *type);
/* The i-th lock type acting on what is stored under a name of kind
 * (dlock_object_kind_lock), a name holding nothing or a plain hash taken
 * as a reentrant lock, or as a fair one when fair; NULL past the last. */
const char *cli_kind_lock(const char *kind, int fair, size_t i);
/* The state document of whatever is stored under name (fair: read a plain
 * hash as a fair lock), with "kind" (dlock_object_kind's) and the holders'
 * owner descriptions. 0 and *out (the caller's), or the library's code
 * with its detail in err. */
struct json_t;
int cli_object_state(dlock_client *c, const char *name, int fair, struct json_t **out,
                     char *err, size_t errlen);
/* Adds "described" (host, pid, program, start, as one string) to each
 * holder of doc whose client published its description. */
void cli_describe_holders(dlock_client *c, struct json_t *doc);
/* Prints "dlock: <what>: <library message> (<detail>)" and returns
 * CLI_FAILED: for a failed library call. */
int cli_failed(const char *what, int rc, const char *detail);

/* --help: the usage text on stdout; returns CLI_OK. */
int cli_help(void);
/* A sub-command's --help: its usage (text) and the options every command
 * takes, on stdout; returns CLI_OK. */
int cli_sub_help(const char *text);
/* For getopt_long's ':' (missing value) and '?' (unknown option), with an
 * optstring starting with ':': the usage error; returns CLI_USAGE. */
int cli_bad_option(int c, char **argv);

/* A sub-command, as main dispatches it (cli/dlock.c) and `dlock
 * completion` describes it: options is the getopt_long table its parser
 * uses (so that a new option is completed without a second edit); action,
 * when not NULL, gives the words its parser takes as its action (i from
 * 0; NULL past the last), operand action_pos (0 first, 1 after NAME);
 * takes_command: a COMMAND follows NAME. */
struct option;
typedef struct cli_command {
    const char *name;
    int (*fn)(int, char **, const cli_common *);
    const struct option *(*options)(void);
    const char *(*action)(size_t i);
    int action_pos;
    int takes_command;
} cli_command;
/* Every sub-command, *n of them. */
const cli_command *cli_commands(size_t *n);
/* The tables: dlock's own options (before COMMAND), and each parser's. */
const struct option *cli_main_options(void);
const struct option *cli_run_options(void);
const struct option *cli_status_options(void);
const struct option *cli_unlock_options(void);
const struct option *cli_counter_options(void); /* semaphore and latch */
const struct option *cli_list_options(void);
const struct option *cli_fair_options(void);
const struct option *cli_completion_options(void);
const char *cli_semaphore_action(size_t i);
const char *cli_latch_action(size_t i);
const char *cli_fair_action(size_t i);
const char *cli_completion_action(size_t i); /* the shells */

/* The sub-commands: argv[0] is the sub-command's name. */
int cli_run(int argc, char **argv, const cli_common *co);
int cli_status(int argc, char **argv, const cli_common *co);
int cli_unlock(int argc, char **argv, const cli_common *co);
int cli_semaphore(int argc, char **argv, const cli_common *co);
int cli_latch(int argc, char **argv, const cli_common *co);
int cli_list(int argc, char **argv, const cli_common *co);
int cli_fair(int argc, char **argv, const cli_common *co);
int cli_completion(int argc, char **argv, const cli_common *co);

/* Prints a state document (one of the library's *_state_text results) on
 * stdout: as is (JSON), or in the human form when text is set. 0, or
 * CLI_FAILED when it is not JSON. Frees state. */
int cli_print_state(char *state, int text);
/* The same for a document (borrowed). */
int cli_print_doc(struct json_t *doc, int text);

#endif /* DLOCK_CLI_H */
