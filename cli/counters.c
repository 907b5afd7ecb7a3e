/*
 * dlock semaphore [--wait D] NAME acquire [N] | release [N] | set N | status
 * dlock latch [--wait D] NAME await | count-down | set N | status
 *
 * The plain semaphore (api/dlock/semaphore.h) does not record who took a
 * permit: `acquire` in one dlock process and `release` in a later one is
 * the shell's way of using it. `set` sets only what is not set yet (the
 * library's try_set), so it never hands out permits twice: when the count
 * exists it says so and exits 1, leaving it as it is.
 *
 * What `set N` gave is recorded beside the count, in the key
 * "{NAME}:total" (a string integer; Redisson ignores it), and `release` is
 * refused when it would take the available count above it (the library's
 * dlock_semaphore_release_within: one atomic step), so that a release
 * without an acquire cannot create permits. A semaphore set by another
 * program has no total: its releases are not checked. `delete` removes
 * both keys.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

typedef struct counter_args {
    cli_common co;
    const char *name, *action, *number;
    int64_t wait_ms;
    const char *wait_text; /* NULL: no --wait, wait as long as it takes;
                            * else wait_buf: the wait with its unit */
    char wait_buf[64];
    int text;
    int64_t n;             /* the action's number (1 when absent) */
} counter_args;

static const char semaphore_usage[] =
    "Usage: dlock semaphore [--wait D] NAME acquire [N] | release [N] | set N |\n"
    "                                       status [--text] | delete\n"
    "The counting semaphore NAME (Redisson's RSemaphore).\n"
    "  set N        give it N permits if it has no count yet (else exit 1)\n"
    "  acquire [N]  take N permits (default 1), waiting for them (--wait D;\n"
    "               exit 1 when not had within D)\n"
    "  release [N]  give N permits back (default 1); refused (exit 2) beyond the\n"
    "               count set gave\n"
    "  status       the permits available, as JSON (--text: for people)\n"
    "  delete       delete the count (exit 1 when there was none)\n";
static const char latch_usage[] =
    "Usage: dlock latch [--wait D] NAME await | count-down | set N | status [--text]\n"
    "The count-down latch NAME (Redisson's RCountDownLatch).\n"
    "  set N        set the count (N >= 1) if the latch is open (else exit 1)\n"
    "  count-down   take one off; at zero the latch opens\n"
    "  await        wait until it is open (--wait D; exit 1 when not within D)\n"
    "  status       the count (0: open), as JSON (--text: for people)\n";

/* The options of semaphore and latch (one parser). */
const struct option *cli_counter_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {"wait", required_argument, NULL, 'w'},
        {"text", no_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    return longs;
}

/* Options anywhere, then NAME ACTION [NUMBER]. 0, -1 after --help, or
 * the exit code of a usage error. */
static int parse_counter_args(int argc, char **argv, counter_args *a)
{
    const struct option *longs = cli_counter_options();
    char err[256];
    int c;

    while ((c = getopt_long(argc, argv, ":w:" CLI_COMMON_SHORTS, longs, NULL)) != -1) {
        if (cli_common_option(c, optarg, &a->co))
            continue;
        switch (c) {
        case 'w':
            if (cli_parse_duration(optarg, &a->wait_ms, err, sizeof err) != 0)
                return cli_usage("--wait: %s", err);
            cli_format_duration(a->wait_ms, a->wait_buf, sizeof a->wait_buf);
            a->wait_text = a->wait_buf;
            break;
        case 't':
            a->text = 1;
            break;
        case 'h':
            cli_sub_help(strcmp(argv[0], "latch") == 0 ? latch_usage : semaphore_usage);
            return -1;
        default:
            return cli_bad_option(c, argv);
        }
    }
    if (argc - optind < 2)
        return cli_usage("%s: expected NAME and an action", argv[0]);
    if (argc - optind > 3)
        return cli_usage("%s: '%s' is extra", argv[0], argv[optind + 3]);
    a->name = argv[optind];
    a->action = argv[optind + 1];
    a->number = argc - optind == 3 ? argv[optind + 2] : NULL;
    return 0;
}

/* What an action takes after it: no number, an optional one (default 1),
 * or a required one; and its least value. */
typedef struct action_spec {
    const char *name;
    enum { NUM_NONE, NUM_OPTIONAL, NUM_REQUIRED } num;
    int64_t lo;
} action_spec;

static const action_spec semaphore_actions[] = {
    {"acquire", NUM_OPTIONAL, 0}, {"release", NUM_OPTIONAL, 0},
    {"set", NUM_REQUIRED, 0}, {"status", NUM_NONE, 0}, {"delete", NUM_NONE, 0},
    {NULL, NUM_NONE, 0},
};
static const action_spec latch_actions[] = {
    {"await", NUM_NONE, 0}, {"count-down", NUM_NONE, 0},
    {"set", NUM_REQUIRED, 1}, {"status", NUM_NONE, 0}, {NULL, NUM_NONE, 0},
};

static const char *action_at(const action_spec *specs, size_t i)
{
    size_t k;

    for (k = 0; k < i && specs[k].name; k++)
        ;
    return specs[k].name;
}

const char *cli_semaphore_action(size_t i)
{
    return action_at(semaphore_actions, i);
}

const char *cli_latch_action(size_t i)
{
    return action_at(latch_actions, i);
}

/* Checks the action and its number before anything is sent. 0, or the
 * exit code of a usage error. */
static int check_action(const char *what, const action_spec *specs, counter_args *a)
{
    char err[256], known[128] = "";
    size_t i;

    for (i = 0; specs[i].name; i++)
        if (strcmp(specs[i].name, a->action) == 0)
            break;
    if (!specs[i].name) {
        for (i = 0; specs[i].name; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                     i ? ", " : "", specs[i].name);
        return cli_usage("%s: unknown action '%s' (%s)", what, a->action, known);
    }
    a->n = 1;
    if (!a->number) {
        if (specs[i].num == NUM_REQUIRED)
            return cli_usage("%s %s: needs a number", what, a->action);
        return 0;
    }
    if (specs[i].num == NUM_NONE)
        return cli_usage("%s %s takes no number ('%s')", what, a->action, a->number);
    if (cli_parse_count(a->number, specs[i].lo, DLOCK_PERMITS_MAX, &a->n, err,
                        sizeof err) != 0)
        return cli_usage("%s %s: %s", what, a->action, err);
    return 0;
}

/* The bucket of the total `set` recorded for the semaphore called name:
 * "{name}:total" (name as it is when it holds a '{', as the library names
 * auxiliary keys). NULL when it cannot be made. */
static dlock_bucket *total_bucket(dlock_client *c, const char *name)
{
    char key[DLOCK_NAME_MAX + 16];
    dlock_bucket *b = NULL;

    snprintf(key, sizeof key, strchr(name, '{') ? "%s:total" : "{%s}:total", name);
    if (dlock_bucket_new(&b, c, key, dlock_codec_long()) != 0)
        return NULL;
    return b;
}

/* The total recorded for the semaphore: 1 and *out, 0 none, or -1 after the
 * message. */
static int read_total(dlock_bucket *t, const counter_args *a, int64_t *out)
{
    int64_t *v = NULL;
    int rc = t ? dlock_bucket_get(t, (void **)&v) : DLOCK_ENOMEM;

    if (rc != 0) {
        char what[128];
        snprintf(what, sizeof what, "semaphore '%.64s': its total", a->name);
        cli_failed(what, rc, t ? dlock_bucket_errmsg(t) : NULL);
        return -1;
    }
    if (!v)
        return 0;
    *out = *v;
    dlock_bucket_value_free(t, v);
    return 1;
}

static int semaphore_do(dlock_semaphore *s, dlock_bucket *total, const counter_args *a)
{
    int64_t n = a->n, avail = 0;
    int rc, set = 0;

    if (strcmp(a->action, "acquire") == 0) {
        int exists = 1;
        /* A misspelt name has no count: it would wait for ever. */
        if (!a->co.quiet && dlock_object_exists(dlock_semaphore_object(s), &exists) == 0 &&
            !exists)
            cli_error("semaphore '%s' was never set (dlock semaphore %s set N); waiting "
                      "for a release%s%s", a->name, a->name,
                      a->wait_text ? " for at most " : "", a->wait_text ? a->wait_text : "");
        rc = a->wait_text ? dlock_semaphore_try_acquire(s, n, a->wait_ms)
                          : dlock_semaphore_acquire(s, n);
        if (a->wait_text && (rc == DLOCK_EBUSY || rc == DLOCK_ETIMEDOUT)) {
            if (a->co.quiet)
                return CLI_CONFLICT;
            dlock_semaphore_available_permits(s, &avail);
            cli_error("semaphore '%s': %lld permit%s not available%s%s (%lld now)",
                      a->name, (long long)n, n == 1 ? "" : "s",
                      rc == DLOCK_ETIMEDOUT ? " within " : "",
                      rc == DLOCK_ETIMEDOUT ? a->wait_text : "", (long long)avail);
            return CLI_CONFLICT;
        }
    } else if (strcmp(a->action, "delete") == 0) {
        int existed = 0;
        if (total)
            dlock_bucket_delete(total, NULL);
        rc = dlock_object_delete(dlock_semaphore_object(s), &existed);
        if (rc == 0 && !existed) {
            if (!a->co.quiet)
                cli_error("semaphore '%s' has no count; nothing deleted", a->name);
            return CLI_CONFLICT;
        }
        if (rc != 0)
            return cli_failed("cannot delete", rc, dlock_object_errmsg(dlock_semaphore_object(s)));
    } else if (strcmp(a->action, "release") == 0) {
        int64_t limit = 0;
        int known = read_total(total, a, &limit), done = 0;
        if (known < 0)
            return CLI_FAILED;
        if (!known) {
            rc = dlock_semaphore_release(s, n);
        } else if ((rc = dlock_semaphore_release_within(s, &done, n, limit)) == 0 && !done) {
            dlock_semaphore_available_permits(s, &avail);
            cli_error("semaphore '%s': releasing %lld would make %lld permits available, "
                      "more than the %lld it was set to; nothing released", a->name,
                      (long long)n, (long long)(avail + n), (long long)limit);
            return CLI_USAGE;
        }
    } else if (strcmp(a->action, "set") == 0) {
        rc = dlock_semaphore_try_set_permits(s, &set, n);
        if (rc == 0 && set && total && (rc = dlock_bucket_set(total, &n, 0)) != 0) {
            char what[128];
            snprintf(what, sizeof what, "semaphore '%.64s': set, but its total not recorded",
                     a->name);
            return cli_failed(what, rc, dlock_bucket_errmsg(total));
        }
        if (rc == 0 && !set) {
            if (a->co.quiet)
                return CLI_CONFLICT;
            dlock_semaphore_available_permits(s, &avail);
            cli_error("semaphore '%s' is already set (%lld permits available); unchanged",
                      a->name, (long long)avail);
            return CLI_CONFLICT;
        }
    } else { /* status */
        char *state;
        rc = dlock_semaphore_state_text(s, &state);
        if (rc == 0)
            return cli_print_state(state, a->text);
    }
    if (rc != 0) {
        char what[128];
        snprintf(what, sizeof what, "semaphore '%.64s': %s", a->name, a->action);
        return cli_failed(what, rc, dlock_semaphore_errmsg(s));
    }
    return CLI_OK;
}

static int latch_do(dlock_latch *l, const counter_args *a)
{
    int64_t n = a->n, count = 0;
    int rc, set = 0;

    if (strcmp(a->action, "await") == 0) {
        int exists = 1;
        /* An open latch is stored as nothing, as a latch never set is: a
         * misspelt name would return at once, unnoticed. Exit 0 still
         * (the latch may have opened before this await came). */
        if (!a->co.quiet && dlock_object_exists(dlock_latch_object(l), &exists) == 0 &&
            !exists)
            cli_error("latch '%s' has no count: it is open, or was never set (dlock latch "
                      "%s set N); not waiting", a->name, a->name);
        rc = a->wait_text ? dlock_latch_await_for(l, a->wait_ms) : dlock_latch_await(l);
        if (a->wait_text && rc == DLOCK_ETIMEDOUT) {
            if (a->co.quiet)
                return CLI_CONFLICT;
            dlock_latch_count(l, &count);
            cli_error("latch '%s' not open within %s (count %lld)", a->name,
                      a->wait_text, (long long)count);
            return CLI_CONFLICT;
        }
    } else if (strcmp(a->action, "count-down") == 0) {
        rc = dlock_latch_count_down(l);
    } else if (strcmp(a->action, "set") == 0) {
        rc = dlock_latch_try_set_count(l, &set, n);
        if (rc == 0 && !set) {
            if (a->co.quiet)
                return CLI_CONFLICT;
            dlock_latch_count(l, &count);
            cli_error("latch '%s' is already set (count %lld); unchanged", a->name,
                      (long long)count);
            return CLI_CONFLICT;
        }
    } else { /* status */
        char *state;
        rc = dlock_latch_state_text(l, &state);
        if (rc == 0)
            return cli_print_state(state, a->text);
    }
    if (rc != 0) {
        char what[128];
        snprintf(what, sizeof what, "latch '%.64s': %s", a->name, a->action);
        return cli_failed(what, rc, dlock_latch_errmsg(l));
    }
    return CLI_OK;
}

int cli_semaphore(int argc, char **argv, const cli_common *co)
{
    counter_args a;
    dlock_client *c;
    dlock_semaphore *s;
    int rc;

    memset(&a, 0, sizeof a);
    a.co = *co;
    if ((rc = parse_counter_args(argc, argv, &a)) != 0)
        return rc < 0 ? CLI_OK : rc;
    if ((rc = check_action("semaphore", semaphore_actions, &a)) != 0)
        return rc;
    if ((rc = cli_connect(&c, &a.co, NULL)) != 0)
        return rc;
    if ((rc = dlock_semaphore_new(&s, c, a.name)) != 0) {
        dlock_client_free(c);
        return rc == DLOCK_EINVAL ? cli_usage("bad semaphore name (1 to %d bytes)", DLOCK_NAME_MAX)
                                  : cli_failed("cannot make the semaphore", rc, NULL);
    }
    {
        dlock_bucket *total = total_bucket(c, a.name);
        rc = semaphore_do(s, total, &a);
        dlock_bucket_free(total);
    }
    dlock_semaphore_free(s);
    dlock_client_free(c);
    return rc;
}

int cli_latch(int argc, char **argv, const cli_common *co)
{
    counter_args a;
    dlock_client *c;
    dlock_latch *l;
    int rc;

    memset(&a, 0, sizeof a);
    a.co = *co;
    if ((rc = parse_counter_args(argc, argv, &a)) != 0)
        return rc < 0 ? CLI_OK : rc;
    if ((rc = check_action("latch", latch_actions, &a)) != 0)
        return rc;
    if ((rc = cli_connect(&c, &a.co, NULL)) != 0)
        return rc;
    if ((rc = dlock_latch_new(&l, c, a.name)) != 0) {
        dlock_client_free(c);
        return rc == DLOCK_EINVAL ? cli_usage("bad latch name (1 to %d bytes)", DLOCK_NAME_MAX)
                                  : cli_failed("cannot make the latch", rc, NULL);
    }
    rc = latch_do(l, &a);
    dlock_latch_free(l);
    dlock_client_free(c);
    return rc;
}
