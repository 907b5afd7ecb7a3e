/*
 * dlock completion bash|zsh: the shell's completion script on stdout.
 *
 * The script is written from the tables the parsers use (cli_commands(),
 * each sub-command's getopt_long table and its actions, dlock's own
 * options), so that an option added to a parser is completed without a
 * second edit. `make` writes both scripts next to the binary and `make
 * install` puts them where bash-completion and zsh look for them.
 *
 * What each script completes: the sub-commands (and "help"); each one's
 * long options; the actions after NAME (semaphore, latch, fair) or the
 * shell (completion); after `dlock run NAME`, a command, then files;
 * files after --config. A word after an option that takes a value is
 * that value, not an operand. The scripts are plain shell (no
 * bash-completion helpers, no zsh _arguments), so they need nothing
 * beyond the shell itself.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

static const char *const shells[] = {"bash", "zsh", NULL};

/* The options whose value is a file. */
static const char *const file_options[] = {"config", NULL};

const char *cli_completion_action(size_t i)
{
    return i < sizeof shells / sizeof shells[0] ? shells[i] : NULL;
}

const struct option *cli_completion_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {NULL, 0, NULL, 0},
    };
    return longs;
}

static const char completion_usage[] =
    "Usage: dlock completion bash|zsh\n"
    "Prints the shell's completion script for dlock, written from the tables of\n"
    "its options (make install installs both):\n"
    "  bash   source it, or install it as\n"
    "         $PREFIX/share/bash-completion/completions/dlock\n"
    "  zsh    install it as _dlock in a folder of $fpath, e.g.\n"
    "         $PREFIX/share/zsh/site-functions/_dlock\n";

/* The long options of table (as --name), each after sep; with_value: only
 * those that take a value. */
static void put_options(const struct option *table, int with_value, const char *sep)
{
    const char *s = "";

    for (; table->name; table++) {
        if (with_value && table->has_arg != required_argument)
            continue;
        printf("%s--%s", s, table->name);
        s = sep;
    }
}

static void put_actions(const cli_command *cmd, const char *sep)
{
    const char *a;
    size_t i;

    for (i = 0; cmd->action && (a = cmd->action(i)) != NULL; i++)
        printf("%s%s", i ? sep : "", a);
}

/* One branch of the table function: the options, those with a value, the
 * actions, whether a COMMAND follows NAME, where the actions stand. */
static void put_table_entry(const char *name, const struct option *opts,
                            const cli_command *cmd, const char *list)
{
    printf("    %s)\n", name[0] ? name : "''");
    printf("        opts=%c", list[0]);
    put_options(opts, 0, " ");
    printf("%c\n        args=%c", list[1], list[0]);
    put_options(opts, 1, " ");
    printf("%c\n        acts=%c", list[1], list[0]);
    if (cmd)
        put_actions(cmd, " ");
    printf("%c\n", list[1]);
    printf("        takes=%d actpos=%d\n        ;;\n", cmd ? cmd->takes_command : 0,
           cmd && cmd->action ? cmd->action_pos : -1);
}

/* list: how a list of words opens and closes ("''" in bash, "()" in zsh). */
static void put_table(const char *list)
{
    const cli_command *cmds;
    size_t n, i;

    cmds = cli_commands(&n);
    printf("_dlock_table()\n{\n    case $1 in\n");
    put_table_entry("", cli_main_options(), NULL, list);
    for (i = 0; i < n; i++)
        put_table_entry(cmds[i].name, cmds[i].options(), &cmds[i], list);
    printf("    esac\n}\n\n");
}

static void put_commands(void)
{
    const cli_command *cmds;
    size_t n, i;

    cmds = cli_commands(&n);
    for (i = 0; i < n; i++)
        printf("%s ", cmds[i].name);
    printf("help");
}

/* What differs between the shells; the completion logic is the same. */
typedef struct shell_syntax {
    const char *list;    /* how a list of words opens and closes */
    const char *header;  /* the start of the file, before the table */
    const char *locals;  /* the function's variables, up to $cmds' value */
    const char *first, *bound, *word; /* the words before the cursor: word i */
    const char *takes_value; /* a test: $w is an option that takes a value */
    const char *prev_takes_value; /* the same for $prev */
    const char *offer_words;  /* offer the words in the variable %s */
    const char *offer_commands, *offer_files;
    const char *footer;
} shell_syntax;

static const shell_syntax bash_syntax = {
    "''",
    "# bash completion for dlock(1), written by `dlock completion bash` from\n"
    "# the tables of dlock's option parsers (dlock " DLOCK_VERSION ").\n\n",
    "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    "    local opts args acts takes actpos cmd='' w i npos=0 incmd=0 cmdwords=0\n"
    "    COMPREPLY=()\n"
    "    local cmds='",
    "1", "COMP_CWORD", "${COMP_WORDS[i]}",
    "[[ \" $args \" == *\" $w \"* ]]",
    "[[ \" $args \" == *\" $prev \"* ]]",
    "COMPREPLY=($(compgen -W \"$%s\" -- \"$cur\"))",
    "COMPREPLY=($(compgen -c -- \"$cur\"))",
    "compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\"))",
    "complete -F _dlock dlock\n",
};

static const shell_syntax zsh_syntax = {
    "()",
    "#compdef dlock\n"
    "# zsh completion for dlock(1), written by `dlock completion zsh` from\n"
    "# the tables of dlock's option parsers (dlock " DLOCK_VERSION ").\n\n",
    "    local -a cmds opts args acts\n"
    "    local cmd= w cur=${words[CURRENT]} prev=${words[CURRENT-1]}\n"
    "    integer i npos=0 incmd=0 cmdwords=0 takes=0 actpos=-1\n"
    "    cmds=(",
    "2", "CURRENT", "${words[i]}",
    "((${args[(Ie)$w]}))",
    "((${args[(Ie)$prev]}))",
    "compadd -- $%s",
    "_command_names -e",
    "_files",
    "\nif [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
    "    _dlock \"$@\"\n"
    "else\n"
    "    compdef _dlock dlock\n"
    "fi\n",
};

/* The options whose value is a file, as a case pattern. */
static void put_file_options(void)
{
    size_t i;

    for (i = 0; file_options[i]; i++)
        printf("%s--%s", i ? "|" : "", file_options[i]);
}

/* Offers the words of the shell variable var. */
static void put_offer(const shell_syntax *sh, const char *var)
{
    printf(sh->offer_words, var);
}

static void put_script(const shell_syntax *sh)
{
    fputs(sh->header, stdout);
    put_table(sh->list);
    printf("_dlock()\n{\n%s", sh->locals);
    put_commands();
    printf("%c\n", sh->list[1]);
    /* The words before the cursor: the sub-command, its operands (NAME,
     * an action), and whether COMMAND (dlock run) has started: at "--"
     * or at the operand after NAME. A word after an option that takes a
     * value is that value. */
    printf("    _dlock_table ''\n"
           "    for ((i = %s; i < %s; i++)); do\n"
           "        w=%s\n"
           "        if ((incmd)); then\n"
           "            ((cmdwords++))\n"
           "            continue\n"
           "        fi\n"
           "        if [[ $w == -- && -n $cmd ]]; then\n"
           "            ((takes && npos >= 1)) && incmd=1\n"
           "            continue\n"
           "        fi\n"
           "        if [[ $w == -* ]]; then\n"
           "            %s && ((i++))\n"
           "            continue\n"
           "        fi\n"
           "        if [[ -z $cmd ]]; then\n"
           "            cmd=$w\n"
           "            _dlock_table \"$cmd\"\n"
           "        else\n"
           "            ((npos++))\n"
           "            if ((takes && npos > 1)); then\n"
           "                incmd=1 cmdwords=1\n"
           "            fi\n"
           "        fi\n"
           "    done\n",
           sh->first, sh->bound, sh->word, sh->takes_value);
    /* The word at the cursor. */
    printf("    if ((incmd)); then\n"
           "        if ((cmdwords == 0)); then\n"
           "            %s\n"
           "        else\n"
           "            %s\n"
           "        fi\n"
           "        return 0\n"
           "    fi\n"
           "    if [[ $prev == -* ]] && %s; then\n"
           "        case $prev in\n"
           "        ",
           sh->offer_commands, sh->offer_files, sh->prev_takes_value);
    put_file_options();
    printf(")\n"
           "            %s\n"
           "            ;;\n"
           "        esac\n"
           "        return 0\n"
           "    fi\n"
           "    if [[ $cur == -* ]]; then\n"
           "        ",
           sh->offer_files);
    put_offer(sh, "opts");
    printf("\n    elif [[ -z $cmd ]]; then\n        ");
    put_offer(sh, "cmds");
    printf("\n"
           "    elif ((takes && npos == 1)); then\n"
           "        %s\n"
           "    elif ((npos == actpos)); then\n"
           "        ",
           sh->offer_commands);
    put_offer(sh, "acts");
    printf("\n"
           "    fi\n"
           "    return 0\n"
           "}\n%s",
           sh->footer);
}

int cli_completion(int argc, char **argv, const cli_common *common)
{
    const struct option *longs = cli_completion_options();
    cli_common co = *common;
    int ch;

    while ((ch = getopt_long(argc, argv, ":" CLI_COMMON_SHORTS, longs, NULL)) != -1) {
        if (cli_common_option(ch, optarg, &co))
            continue;
        if (ch == 'h')
            return cli_sub_help(completion_usage);
        return cli_bad_option(ch, argv);
    }
    if (argc - optind != 1)
        return cli_usage("completion: expected the shell (bash or zsh)");
    if (strcmp(argv[optind], shells[0]) == 0)
        put_script(&bash_syntax);
    else if (strcmp(argv[optind], shells[1]) == 0)
        put_script(&zsh_syntax);
    else
        return cli_usage("completion: unknown shell '%s' (bash or zsh)", argv[optind]);
    return fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
}
