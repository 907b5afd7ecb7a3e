/*
 * dlock status [--fair] [--text] NAME   the lock's state (api/dlock/rlock.h)
 * dlock unlock --force [--fair] NAME    release it whoever holds it
 *
 * And the human form of every state document (--text), shared with the
 * semaphore and the latch (cli/counters.c).
 */
#include "cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the human form ------------------------------------------------------ */

static void print_ttl(const char *label, json_t *ttl)
{
    json_int_t ms = json_integer_value(ttl);

    if (!json_is_integer(ttl) || ms == -2)
        return;
    if (ms == -1)
        printf(", no expiry");
    else
        printf(", %s %lld.%03llds", label, (long long)(ms / 1000), (long long)(ms % 1000));
}

/* A string of the state document (a name, an owner id: anything the
 * server holds) as text: escaped (cli_put_text). */
static void put_str(json_t *v)
{
    cli_put_text(stdout, json_string_value(v));
}

static void print_lock_text(json_t *doc)
{
    json_t *holders = json_object_get(doc, "holders");
    json_t *queue = json_object_get(doc, "queue");
    json_t *v;
    size_t i;

    put_str(json_object_get(doc, "type"));
    printf(" '");
    put_str(json_object_get(doc, "name"));
    printf("': %s", json_is_true(json_object_get(doc, "locked")) ? "locked" : "free");
    print_ttl("ttl", json_object_get(doc, "ttl_ms"));
    printf("\n");
    json_array_foreach(holders, i, v) {
        printf("  holder ");
        put_str(json_object_get(v, "owner"));
        printf(": %lld hold%s", (long long)json_integer_value(json_object_get(v, "holds")),
               json_integer_value(json_object_get(v, "holds")) == 1 ? "" : "s");
        print_ttl("ttl", json_object_get(v, "ttl_ms"));
        printf("\n");
    }
    json_array_foreach(queue, i, v) {
        json_t *left = json_object_get(v, "remaining_ms");

        printf("  waiting %zu: ", i + 1);
        put_str(json_object_get(v, "owner"));
        /* <= 0: dead, and dropped by the next call once first in line */
        if (json_is_integer(left) && json_integer_value(left) <= 0)
            printf(", presumed dead");
        else
            print_ttl("presumed dead in", left);
        printf("\n");
    }
}

int cli_print_state(char *state, int text)
{
    json_error_t jerr;
    json_t *doc, *type;
    const char *t;

    if (!text) {
        printf("%s\n", state);
        free(state);
        return CLI_OK;
    }
    doc = json_loads(state, 0, &jerr);
    free(state);
    type = json_object_get(doc, "type");
    if (!json_is_string(type)) {
        json_decref(doc);
        cli_error("the state is not a JSON object with a type");
        return CLI_FAILED;
    }
    t = json_string_value(type);
    if (strcmp(t, "semaphore") == 0) {
        json_int_t n = json_integer_value(json_object_get(doc, "permits"));
        printf("semaphore '");
        put_str(json_object_get(doc, "name"));
        printf("': %lld permit%s available", (long long)n, n == 1 ? "" : "s");
        print_ttl("ttl", json_object_get(doc, "ttl_ms"));
        printf("\n");
    } else if (strcmp(t, "latch") == 0) {
        json_int_t n = json_integer_value(json_object_get(doc, "count"));
        printf("latch '");
        put_str(json_object_get(doc, "name"));
        printf("': %s", n == 0 ? "open" : "count ");
        if (n != 0)
            printf("%lld", (long long)n);
        printf("\n");
    } else {
        print_lock_text(doc);
    }
    json_decref(doc);
    return CLI_OK;
}

/* ---- status and unlock ----------------------------------------------------- */

static const char status_usage[] =
    "Usage: dlock status [--fair] [--text] NAME\n"
    "The lock NAME's state as stored, as one line of JSON: type, name, whether it\n"
    "is locked, its TTL, its holders (and with --fair the queue of waiters).\n"
    "  --fair   the fair lock of NAME instead of the reentrant lock\n"
    "  --text   the same as lines for people\n";
static const char unlock_usage[] =
    "Usage: dlock unlock --force [--fair] NAME\n"
    "Releases the lock NAME whoever holds it, and wakes its waiters.\n"
    "  --force  required: a lock is released by the process holding it\n"
    "  --fair   the fair lock of NAME instead of the reentrant lock\n";

typedef struct lock_args {
    cli_common co;
    const char *name;
    int fair, text, force;
} lock_args;

/* Options, then exactly one NAME; is_unlock: unlock's (--force, no --text). Returns 0,
 * -1 after --help, or the exit code of a usage error. */
static int parse_lock_args(int argc, char **argv, lock_args *a, int is_unlock)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {"fair", no_argument, NULL, 'f'},
        {"text", no_argument, NULL, 't'},
        {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    int c;

    while ((c = getopt_long(argc, argv, ":" CLI_COMMON_SHORTS, longs, NULL)) != -1) {
        if (cli_common_option(c, optarg, &a->co))
            continue;
        switch (c) {
        case 'f':
            a->fair = 1;
            break;
        case 't':
            if (is_unlock)
                return cli_usage("unlock takes no --text");
            a->text = 1;
            break;
        case 'F':
            if (!is_unlock)
                return cli_usage("status takes no --force");
            a->force = 1;
            break;
        case 'h':
            cli_sub_help(is_unlock ? unlock_usage : status_usage);
            return -1;
        default:
            return cli_bad_option(c, argv);
        }
    }
    if (optind >= argc)
        return cli_usage("%s: no lock NAME given", argv[0]);
    if (optind + 1 < argc)
        return cli_usage("%s: one NAME only ('%s' is extra)", argv[0], argv[optind + 1]);
    a->name = argv[optind];
    if (is_unlock && !a->force)
        return cli_usage("unlock needs --force: a lock is released by the "
                         "process holding it, --force releases it whoever holds it");
    return 0;
}

static int lock_command(int argc, char **argv, const cli_common *co, int is_unlock)
{
    lock_args a;
    dlock_client *c;
    dlock_rlock *l;
    char *state = NULL, what[128];
    int rc, existed;

    memset(&a, 0, sizeof a);
    a.co = *co;
    if ((rc = parse_lock_args(argc, argv, &a, is_unlock)) != 0)
        return rc < 0 ? CLI_OK : rc;
    if ((rc = cli_open_lock(&c, &l, &a.co, NULL, a.name, a.fair)) != 0)
        return rc;
    if (is_unlock)
        rc = dlock_force_unlock(l, &existed);
    else
        rc = dlock_rlock_state_text(l, &state);
    if (rc != 0) {
        snprintf(what, sizeof what, "%s '%.64s'", is_unlock ? "cannot unlock" : "no state of",
                 a.name);
        rc = cli_failed(what, rc, dlock_errmsg(l));
    } else if (!is_unlock) {
        rc = cli_print_state(state, a.text);
    }
    dlock_rlock_free(l);
    dlock_client_free(c);
    return rc;
}

int cli_status(int argc, char **argv, const cli_common *co)
{
    return lock_command(argc, argv, co, 0);
}

int cli_unlock(int argc, char **argv, const cli_common *co)
{
    return lock_command(argc, argv, co, 1);
}
