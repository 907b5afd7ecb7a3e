/*
 * dlock status [--fair] [--text] NAME   the state of whatever NAME is
 * dlock unlock --force [--fair] NAME    release it whoever holds it
 * dlock fair NAME clear-dead            drop a fair lock's dead waiters
 *
 * status and unlock look at what is stored under NAME first
 * (dlock_object_kind, cli/objects.c) and act on it as what it is.
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

/* One holder's line: owner, holds, lease, and who it is when its client
 * described itself. */
static void print_holder(const char *role, json_t *v)
{
    json_t *who = json_object_get(v, "described");

    printf("  %s ", role);
    put_str(json_object_get(v, "owner"));
    printf(": %lld hold%s", (long long)json_integer_value(json_object_get(v, "holds")),
           json_integer_value(json_object_get(v, "holds")) == 1 ? "" : "s");
    print_ttl("ttl", json_object_get(v, "ttl_ms"));
    if (json_is_string(who)) {
        printf(" (");
        put_str(who);
        printf(")");
    }
    printf("\n");
}

static void print_lock_text(json_t *doc)
{
    json_t *holders = json_object_get(doc, "holders");
    json_t *queue = json_object_get(doc, "queue");
    json_t *mode = json_object_get(doc, "mode");
    json_t *permits = json_object_get(doc, "permits");
    json_t *v;
    size_t i;

    if (json_object_get(doc, "readers")) {
        /* The read-write lock: the whole lock, not the half read. */
        printf("rwlock '");
        put_str(json_object_get(doc, "name"));
        printf("': %s", json_is_string(mode) ? json_string_value(mode) : "free");
        if (json_is_string(mode))
            printf("-locked");
        print_ttl("ttl", json_object_get(doc, "ttl_ms"));
        printf("\n");
        if (json_is_object(json_object_get(doc, "writer")))
            print_holder("writer", json_object_get(doc, "writer"));
        json_array_foreach(json_object_get(doc, "readers"), i, v)
            print_holder("reader", v);
        return;
    }
    put_str(json_object_get(doc, "type"));
    printf(" '");
    put_str(json_object_get(doc, "name"));
    printf("': %s", json_is_true(json_object_get(doc, "locked")) ? "locked" : "free");
    if (json_is_integer(permits))
        printf(", %lld permit%s available", (long long)json_integer_value(permits),
               json_integer_value(permits) == 1 ? "" : "s");
    if (json_is_integer(json_object_get(doc, "token")))
        printf(", token %lld", (long long)json_integer_value(json_object_get(doc, "token")));
    print_ttl("ttl", json_object_get(doc, "ttl_ms"));
    printf("\n");
    json_array_foreach(holders, i, v)
        print_holder("holder", v);
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
    json_t *doc;
    int rc;

    if (!text) {
        cli_put_json(stdout, state);
        free(state);
        return CLI_OK;
    }
    doc = json_loads(state, 0, &jerr);
    free(state);
    rc = cli_print_doc(doc, 1);
    json_decref(doc);
    return rc;
}

int cli_print_doc(json_t *doc, int text)
{
    json_t *type = json_object_get(doc, "type");
    const char *t;

    if (!json_is_string(type)) {
        cli_error("the state is not a JSON object with a type");
        return CLI_FAILED;
    }
    if (!text) {
        char *line = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
        if (!line) {
            cli_error("out of memory");
            return CLI_FAILED;
        }
        cli_put_json(stdout, line);
        free(line);
        return CLI_OK;
    }
    t = json_string_value(type);
    if (json_is_string(json_object_get(doc, "kind")) &&
        strcmp(json_string_value(json_object_get(doc, "kind")), "none") == 0) {
        printf("nothing is stored under '");
        put_str(json_object_get(doc, "name"));
        printf("': a lock nobody holds, or a semaphore or latch never set (or open)\n");
    } else if (strcmp(t, "semaphore") == 0 && !json_object_get(doc, "holders")) {
        json_int_t n = json_integer_value(json_object_get(doc, "permits"));
        printf("semaphore '");
        put_str(json_object_get(doc, "name"));
        printf("': %lld permit%s available", (long long)n, n == 1 ? "" : "s");
        print_ttl("ttl", json_object_get(doc, "ttl_ms"));
        printf("\n");
    } else if (strcmp(t, "counter") == 0) {
        printf("counter '");
        put_str(json_object_get(doc, "name"));
        printf("': %lld (a semaphore's permits or a latch's count)",
               (long long)json_integer_value(json_object_get(doc, "count")));
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
    } else if (!json_object_get(doc, "locked") && !json_object_get(doc, "permits")) {
        printf("'");
        put_str(json_object_get(doc, "name"));
        printf("' is a %s\n", cli_kind_what(json_string_value(json_object_get(doc, "kind"))));
    } else {
        print_lock_text(doc);
    }
    return CLI_OK;
}

/* ---- status and unlock ----------------------------------------------------- */

static const char status_usage[] =
    "Usage: dlock status [--fair] [--text] NAME\n"
    "The state of whatever is stored under NAME, read as what it is (\"kind\": a\n"
    "reentrant, fair, fenced, read-write or simple lock, a semaphore held as a lock,\n"
    "a permit-expiring semaphore, a semaphore's or latch's count...), as one line\n"
    "of JSON: whether it is locked, its TTL, its holders and who they are, its\n"
    "queue of waiters, mode, token or permits.\n"
    "With a client set (--config FILE with \"urls\": a Redlock's nodes), each node's\n"
    "state in turn, with \"node\": its address.\n"
    "Exit status: 0 held (or a count that is set), 3 stored but held by nobody,\n"
    "4 nothing stored (a lock nobody holds, or a name never set); with a set, 0\n"
    "when a majority of the nodes hold it.\n"
    "  --fair   read a lock with no waiters as the fair lock (stored alike)\n"
    "  --text   the same as lines for people\n";
static const char unlock_usage[] =
    "Usage: dlock unlock --force [--fair] NAME\n"
    "Releases the lock NAME whoever holds it, and wakes its waiters: whatever lock\n"
    "type is stored there (a read-write lock: readers and writer).\n"
    "  --force  required: a lock is released by the process holding it\n"
    "  --fair   the fair lock of NAME instead of the reentrant lock\n";

typedef struct lock_args {
    cli_common co;
    const char *name;
    int fair, text, force;
} lock_args;

/* The options of status and of unlock (one parser, a table each). */
const struct option *cli_status_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {"fair", no_argument, NULL, 'f'},
        {"text", no_argument, NULL, 't'},
        {NULL, 0, NULL, 0},
    };
    return longs;
}

const struct option *cli_unlock_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {"fair", no_argument, NULL, 'f'},
        {"force", no_argument, NULL, 'F'},
        {NULL, 0, NULL, 0},
    };
    return longs;
}

/* Options, then exactly one NAME; is_unlock: unlock's (--force, no --text). Returns 0,
 * -1 after --help, or the exit code of a usage error. */
static int parse_lock_args(int argc, char **argv, lock_args *a, int is_unlock)
{
    const struct option *longs = is_unlock ? cli_unlock_options() : cli_status_options();
    int c;

    while ((c = getopt_long(argc, argv, ":" CLI_COMMON_SHORTS, longs, NULL)) != -1) {
        if (cli_common_option(c, optarg, &a->co))
            continue;
        switch (c) {
        case 'f':
            a->fair = 1;
            break;
        case 't':
            a->text = 1;
            break;
        case 'F':
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

/* dlock status's exit code for the state doc: held (CLI_OK; also a
 * semaphore's or latch's count, which is there or not), stored but not
 * held (CLI_FREE: a fenced lock's token, a fair lock's queue), or nothing
 * stored (CLI_ABSENT: a free lock, or a name never set). */
static int status_code(json_t *doc)
{
    json_t *locked = json_object_get(doc, "locked");

    if (strcmp(json_string_value(json_object_get(doc, "kind")), "none") == 0)
        return CLI_ABSENT;
    if (json_is_boolean(locked))
        return json_is_true(locked) ? CLI_OK : CLI_FREE;
    return CLI_OK;
}

/* dlock status on each of the n clients of a Redlock's set (n > 1): each
 * node's state, with "node": its address; held when a majority of the
 * nodes hold it (the Redlock's own rule), else free when a node stores
 * something, else absent. */
static int status_nodes(const lock_args *a, dlock_client **set, size_t n)
{
    size_t i, held = 0, stored = 0, read = 0;
    char what[256], err[512];
    int rc;

    for (i = 0; i < n; i++) {
        const char *node = cli_node_name(i) ? cli_node_name(i) : "?";
        json_t *doc;
        rc = cli_object_state(set[i], a->name, a->fair, &doc, err, sizeof err);
        if (rc != 0) {
            snprintf(what, sizeof what, "node %.128s: no state of '%.64s'", node, a->name);
            cli_failed(what, rc, err);
            continue;
        }
        read++;
        rc = status_code(doc);
        held += rc == CLI_OK;
        stored += rc != CLI_ABSENT;
        json_object_set_new(doc, "node", json_string(node));
        if (a->text) {
            printf("node %s: ", node);
            cli_print_doc(doc, 1);
        } else {
            cli_print_doc(doc, 0);
        }
        json_decref(doc);
    }
    if (a->text) {
        printf("Redlock '");
        cli_put_text(stdout, a->name);
        printf("': held on %zu of %zu nodes (%zu needed)%s\n", held, n, n / 2 + 1,
               read < n ? ", some unread" : "");
    }
    if (held >= n / 2 + 1)
        return CLI_OK;
    if (read < n / 2 + 1)
        return CLI_FAILED; /* too few nodes read to tell */
    return stored ? CLI_FREE : CLI_ABSENT;
}

/* dlock status: whatever is stored under the name, read as what it is;
 * on every node of a client set. */
static int status_command(lock_args *a)
{
    dlock_client *set[DLOCK_REDLOCK_MAX_NODES];
    json_t *doc = NULL;
    char what[128], err[512];
    size_t n, i;
    int rc;

    if ((rc = cli_connect_nodes(set, DLOCK_REDLOCK_MAX_NODES, &n, &a->co)) != 0)
        return rc;
    if (n > 1) {
        rc = status_nodes(a, set, n);
    } else if ((rc = cli_object_state(set[0], a->name, a->fair, &doc, err, sizeof err)) ==
               DLOCK_EINVAL && !doc) {
        rc = cli_bad_name(set[0]); /* frees it */
        set[0] = NULL;
    } else if (rc != 0) {
        snprintf(what, sizeof what, "no state of '%.64s'", a->name);
        rc = cli_failed(what, rc, err);
    } else if ((rc = cli_print_doc(doc, a->text)) == CLI_OK) {
        rc = status_code(doc);
    }
    json_decref(doc);
    for (i = 0; i < n; i++)
        dlock_client_free(set[i]);
    return rc;
}

static int lock_command(int argc, char **argv, const cli_common *co, int is_unlock)
{
    lock_args a;
    dlock_client *c;
    dlock_rlock *l;
    char what[128], err[512];
    const char *kind, *type;
    size_t i;
    int rc, existed;

    memset(&a, 0, sizeof a);
    a.co = *co;
    if ((rc = parse_lock_args(argc, argv, &a, is_unlock)) != 0)
        return rc < 0 ? CLI_OK : rc;
    if (!is_unlock)
        return status_command(&a);
    /* The type stored there: its own force_unlock (a read-write lock's
     * two halves, every holder of the semaphore as a lock...). */
    if ((rc = cli_connect(&c, &a.co, NULL)) != 0)
        return rc;
    rc = cli_kind_of(c, a.name, &kind, err, sizeof err);
    if (rc == DLOCK_EINVAL)
        return cli_bad_name(c);
    if (rc != 0) {
        snprintf(what, sizeof what, "cannot tell what '%.64s' is", a.name);
        rc = cli_failed(what, rc, err);
        dlock_client_free(c);
        return rc;
    }
    if (!cli_kind_lock(kind, a.fair, 0)) {
        cli_error("'%s' is a %s, not a lock", a.name, cli_kind_what(kind));
        dlock_client_free(c);
        return CLI_USAGE;
    }
    for (i = 0, rc = 0; (type = cli_kind_lock(kind, a.fair, i)) != NULL && rc == 0; i++) {
        if ((rc = dlock_lock_new(&l, c, type, a.name)) != 0) {
            rc = cli_failed("cannot make the lock", rc, NULL);
            break;
        }
        if ((rc = dlock_force_unlock(l, &existed)) != 0) {
            snprintf(what, sizeof what, "cannot unlock '%.64s'", a.name);
            rc = cli_failed(what, rc, dlock_errmsg(l));
        }
        dlock_rlock_free(l);
    }
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

/* ---- dlock fair NAME clear-dead ------------------------------------------------ */

static const char fair_usage[] =
    "Usage: dlock fair NAME clear-dead\n"
    "Drops from the fair lock NAME's queue every waiter presumed dead (its deadline\n"
    "passed, or a dlock waiter that stopped renewing its place), wherever it stands\n"
    "in line, and says how many.\n";

/* dlock fair's one action. */
static const char clear_dead[] = "clear-dead";

const struct option *cli_fair_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {NULL, 0, NULL, 0},
    };
    return longs;
}

const char *cli_fair_action(size_t i)
{
    return i == 0 ? clear_dead : NULL;
}

int cli_fair(int argc, char **argv, const cli_common *common)
{
    const struct option *longs = cli_fair_options();
    cli_common co = *common;
    dlock_client *c;
    dlock_rlock *l;
    int64_t dropped = 0;
    int ch, rc;

    while ((ch = getopt_long(argc, argv, ":" CLI_COMMON_SHORTS, longs, NULL)) != -1) {
        if (cli_common_option(ch, optarg, &co))
            continue;
        if (ch == 'h')
            return cli_sub_help(fair_usage);
        return cli_bad_option(ch, argv);
    }
    if (argc - optind != 2)
        return cli_usage("fair: expected NAME clear-dead");
    if (strcmp(argv[optind + 1], clear_dead) != 0)
        return cli_usage("fair: unknown action '%s' (%s)", argv[optind + 1], clear_dead);
    if ((rc = cli_open_lock(&c, &l, &co, NULL, argv[optind], "fair")) != 0)
        return rc;
    if ((rc = cli_check_kind(c, argv[optind], "fair")) == 0) {
        rc = dlock_fair_clear_dead(l, &dropped);
        if (rc != 0) {
            char what[128];
            snprintf(what, sizeof what, "cannot clear '%.64s'", argv[optind]);
            rc = cli_failed(what, rc, dlock_errmsg(l));
        } else {
            printf("%lld dead waiter%s dropped\n", (long long)dropped, dropped == 1 ? "" : "s");
        }
    }
    dlock_rlock_free(l);
    dlock_client_free(c);
    return rc;
}
