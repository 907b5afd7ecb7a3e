/*
 * dlock(1): distributed locks for shell scripts and cron ("run this job on
 * one host only"). The manual is cli/dlock.1; cli/cli.h maps the files.
 *
 *   dlock [--url URL] COMMAND [OPTIONS] ARGS...
 *
 * Options before COMMAND apply to it (--url, --config, --quiet); each
 * sub-command takes them and --help too, so that both
 * `dlock --url U status x` and `dlock status --url U x` work.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char usage_text[] =
    "Usage: dlock [COMMON OPTIONS] COMMAND [OPTIONS] ARGS...\n"
    "\n"
    "Commands (dlock COMMAND --help for each one's usage):\n"
    "  run [--wait D] [--lease D] [--fair] [--on-lost kill|term|ignore]\n"
    "      [--kill-after D] [--lost-exit-code N] [--no-group]\n"
    "      [--conflict-exit-code N] [--watchdog-timeout D] NAME [--] COMMAND [ARG...]\n"
    "          hold the lock NAME while COMMAND runs; exit with COMMAND's status\n"
    "  run ... [--read|--write|--fenced|--semaphore N|--redlock] [--fair-slack D]\n"
    "      [-v] NAME [--] COMMAND [ARG...]\n"
    "          the same with another lock type (see dlock run --help)\n"
    "  status [--fair] [--text] NAME\n"
    "          the state of whatever NAME is (lock, semaphore, latch) as JSON\n"
    "          (--text: as lines for people), its holders described; with a\n"
    "          client set (--config, \"urls\"), node by node\n"
    "  list [--text] [PATTERN]\n"
    "          every lock, semaphore and latch whose name matches, one line each\n"
    "  fair NAME clear-dead\n"
    "          drop the dead waiters from the fair lock NAME's queue\n"
    "  unlock --force [--fair] NAME\n"
    "          release the lock NAME whoever holds it\n"
    "  semaphore [--wait D] NAME acquire [N] | release [N] | set N | status [--text]\n"
    "      | delete\n"
    "  latch [--wait D] NAME await | count-down | set N | status [--text]\n"
    "  completion bash|zsh\n"
    "          the shell completion script, from the tables of these options\n"
    "\n"
    "%s"
    "  --version       the library's version\n"
    "\n"
    "Exit status: run passes COMMAND's on (128+N: killed by signal N); 1: not had\n"
    "within --wait (run: --conflict-exit-code); 124: the lock was lost while\n"
    "COMMAND ran (run: --lost-exit-code); 2: usage error; 125: dlock failed\n"
    "(backend unreachable...); 126/127: COMMAND not executable / not found;\n"
    "status: 0 held, 3 stored but free, 4 nothing stored.\n"
    "See dlock(1).\n";

/* The options every command takes, and the durations: the end of every
 * usage text. */
static const char common_text[] =
    "Options of every command (before or after COMMAND):\n"
    "  --url URL       the backend: redis://, rediss://, unix://, redis-sentinel://,\n"
    "                  rediss-sentinel://, redis-cluster://, rediss-cluster:// or\n"
    "                  mock: (default: $DLOCK_URL, then " CLI_DEFAULT_URL ")\n"
    "  --config FILE   the library's JSON configuration instead of --url, or a\n"
    "                  Redisson YAML one when FILE ends in .yaml or .yml\n"
    "                  (default: $DLOCK_CONFIG)\n"
    "  -q, --quiet     no message when the lock, the permits or the open latch was\n"
    "                  not had within --wait (the exit status says it)\n"
    "  -h, --help      the usage\n"
    "\n"
    "Durations: a bare number is seconds (10, 1.5); units ms, s, m, h, d (500ms,\n"
    "0.25s, 2m, 1h30m). --wait 0: do not wait; no --wait: as long as it takes.\n";

/* --version's second line: the library's optional parts (its build
 * switches, dlock_version_info) and the mock store, which the tool links
 * (libdlock-mock: "mock:" URLs). */
static void print_parts(void)
{
    static const char *const parts[] = {"tls", "yaml"};
    char without[32] = "";
    size_t i;

    for (i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!dlock_version_has(parts[i]))
            snprintf(without + strlen(without), sizeof without - strlen(without), "%s%s",
                     without[0] ? " " : "", parts[i]);
    printf("built with: %s%smock", dlock_version_info(), dlock_version_info()[0] ? " " : "");
    if (without[0])
        printf(" (without: %s)", without);
    printf("\n");
}

static int print_usage(void)
{
    printf(usage_text, common_text);
    return CLI_OK;
}

/* The sub-commands: main's dispatch and `dlock completion`'s words. */
static const cli_command commands[] = {
    {"run", cli_run, cli_run_options, NULL, 0, 1},
    {"status", cli_status, cli_status_options, NULL, 0, 0},
    {"unlock", cli_unlock, cli_unlock_options, NULL, 0, 0},
    {"semaphore", cli_semaphore, cli_counter_options, cli_semaphore_action, 1, 0},
    {"latch", cli_latch, cli_counter_options, cli_latch_action, 1, 0},
    {"list", cli_list, cli_list_options, NULL, 0, 0},
    {"fair", cli_fair, cli_fair_options, cli_fair_action, 1, 0},
    {"completion", cli_completion, cli_completion_options, cli_completion_action, 0, 0},
};

const cli_command *cli_commands(size_t *n)
{
    *n = sizeof commands / sizeof commands[0];
    return commands;
}

const struct option *cli_main_options(void)
{
    static const struct option opts[] = {
        CLI_COMMON_LONGS,
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    return opts;
}

int main(int argc, char **argv)
{
    const struct option *opts = cli_main_options();
    cli_common co = {NULL, NULL, 0, 0};
    size_t i;
    int c;

    opterr = 0;
    /* "+": stop at the sub-command, whose options are its own. */
    while ((c = getopt_long(argc, argv, "+:" CLI_COMMON_SHORTS "V", opts, NULL)) != -1) {
        if (cli_common_option(c, optarg, &co))
            continue;
        switch (c) {
        case 'h':
            return print_usage();
        case 'V':
            printf("dlock %s (library %s)\n", DLOCK_VERSION, dlock_version());
            print_parts();
            return CLI_OK;
        default:
            return cli_bad_option(c, argv);
        }
    }
    if (optind >= argc)
        return cli_usage("no command given");
    if (strcmp(argv[optind], "help") == 0)
        return print_usage();
    for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[optind], commands[i].name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* a fresh getopt scan for the sub-command */
            return commands[i].fn(sub_argc, sub_argv, &co);
        }
    return cli_usage("unknown command '%s'", argv[optind]);
}

int cli_help(void)
{
    return print_usage();
}

int cli_sub_help(const char *text)
{
    printf("%s\n%s", text, common_text);
    return CLI_OK;
}

int cli_bad_option(int c, char **argv)
{
    if (c == ':')
        return cli_usage("option '%s' needs a value", argv[optind - 1]);
    return cli_usage("unknown option '%s'", argv[optind - 1]);
}
