/*
 * Any object by its name: what is stored there (the library's
 * dlock_object_kind), its state document whatever its type, the check
 * dlock run makes before it takes a name, and dlock list.
 *
 *   dlock list [--text] [--count N] [PATTERN]
 */
#include "cli.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- kinds ------------------------------------------------------------------- */

const char *cli_kind_what(const char *kind)
{
    const char *what = dlock_object_kind_what(kind);

    return what ? what : kind ? kind : "?";
}

const char *cli_kind_lock(const char *kind, int fair, size_t i)
{
    if (strcmp(kind, "none") == 0 || strcmp(kind, "reentrant") == 0)
        return i == 0 ? (fair ? "fair" : "reentrant") : NULL;
    return dlock_object_kind_lock(kind, i);
}

int cli_kind_of(dlock_client *c, const char *name, const char **kind, char *err,
                size_t errlen)
{
    dlock_rlock *l;
    int rc;

    *kind = "none";
    err[0] = '\0';
    if ((rc = dlock_reentrant_new(&l, c, name)) != 0) {
        /* the library's reason (a reserved form names itself), else the
         * length bound */
        if (dlock_client_errmsg(c)[0])
            snprintf(err, errlen, "%s", dlock_client_errmsg(c));
        else
            snprintf(err, errlen, "bad name (1 to %d bytes)", DLOCK_NAME_MAX);
        return rc;
    }
    rc = dlock_object_kind(dlock_rlock_object(l), kind);
    if (rc != 0)
        snprintf(err, errlen, "%s", dlock_errmsg(l));
    dlock_rlock_free(l);
    return rc;
}

int cli_check_kind(dlock_client *c, const char *name, const char *type)
{
    const char *kind;
    char err[512];
    int rc;

    rc = cli_kind_of(c, name, &kind, err, sizeof err);
    /* A server that cannot be reached now: the acquisition waits for it
     * (and a wrong type then fails it with the library's detail). */
    if (rc == DLOCK_ECONN || rc == DLOCK_ETIMEDOUT)
        return 0;
    if (rc != 0) {
        char what[256];
        snprintf(what, sizeof what, "cannot tell what '%.64s' is", name);
        return cli_failed(what, rc, err);
    }
    if (dlock_lock_type_takes(type, kind))
        return 0;
    cli_error("'%s' is a %s, not a %s", name, cli_kind_what(kind),
              cli_kind_what(dlock_lock_type_kind(type)));
    return CLI_USAGE;
}

/* ---- state documents ------------------------------------------------------- */

/* The state of the lock of the type called type called name. */
static int lock_state(dlock_client *c, const char *name, const char *type, json_t **doc,
                      char *err, size_t errlen)
{
    dlock_rlock *l;
    int rc = dlock_lock_new(&l, c, type, name);

    if (rc != 0) {
        snprintf(err, errlen, "%s", dlock_strerror(rc));
        return rc;
    }
    if ((rc = dlock_rlock_state(l, doc)) != 0)
        snprintf(err, errlen, "%s", dlock_errmsg(l));
    dlock_rlock_free(l);
    return rc;
}

/* The half named by mode ("rwlock_" + "write"), else the last one. */
static const char *half_of(const char *kind, const char *mode)
{
    const char *type, *last = NULL;
    size_t i, n;

    for (i = 0; (type = dlock_object_kind_lock(kind, i)) != NULL; i++) {
        n = strlen(type);
        if (mode && n > strlen(mode) && strcmp(type + n - strlen(mode), mode) == 0 &&
            type[n - strlen(mode) - 1] == '_')
            return type;
        last = type;
    }
    return last;
}

/* The state of the lock stored under name as kind. A kind acted on by
 * several lock types (the read-write lock's halves): each half reports the
 * whole lock (mode, readers, writer), and the lock's TTL and holders are
 * those of the half its mode names ("write"), else of the last one. */
static int lock_state_of_kind(dlock_client *c, const char *name, const char *kind,
                              int fair, json_t **doc, char *err, size_t errlen)
{
    const char *first = cli_kind_lock(kind, fair, 0), *half;
    json_t *mode;
    int rc = lock_state(c, name, first, doc, err, errlen);

    if (rc != 0 || !cli_kind_lock(kind, fair, 1))
        return rc;
    mode = json_object_get(*doc, "mode");
    half = half_of(kind, json_is_string(mode) ? json_string_value(mode) : NULL);
    if (!half || strcmp(half, first) == 0)
        return 0;
    json_decref(*doc);
    *doc = NULL;
    return lock_state(c, name, half, doc, err, errlen);
}

int cli_object_state(dlock_client *c, const char *name, int fair, json_t **out,
                     char *err, size_t errlen)
{
    const char *kind;
    json_t *doc = NULL;
    int rc;

    *out = NULL;
    if ((rc = cli_kind_of(c, name, &kind, err, errlen)) != 0)
        return rc;
    if (cli_kind_lock(kind, fair, 0)) {
        rc = lock_state_of_kind(c, name, kind, fair, &doc, err, errlen);    } else if (strcmp(kind, "permit_semaphore") == 0) {
        dlock_permit_semaphore *p;
        if ((rc = dlock_permit_semaphore_new(&p, c, name)) == 0) {
            if ((rc = dlock_permit_semaphore_state(p, &doc)) != 0)
                snprintf(err, errlen, "%s", dlock_permit_semaphore_errmsg(p));
            dlock_permit_semaphore_free(p);
        }
    } else if (strcmp(kind, "counter") == 0) {
        dlock_semaphore *s;
        if ((rc = dlock_semaphore_new(&s, c, name)) == 0) {
            if ((rc = dlock_semaphore_state(s, &doc)) == 0) {
                /* The count is a semaphore's or a latch's: say so. */
                json_object_set(doc, "count", json_object_get(doc, "permits"));
                json_object_del(doc, "permits");
                json_object_set_new(doc, "type", json_string("counter"));
            } else {
                snprintf(err, errlen, "%s", dlock_semaphore_errmsg(s));
            }
            dlock_semaphore_free(s);
        }
    } else { /* "string", "other": no dlock object to read */
        doc = json_object();
        json_object_set_new(doc, "type", json_string(kind));
        json_object_set_new(doc, "name", json_string(name));
    }
    if (rc != 0) {
        json_decref(doc);
        return rc;
    }
    json_object_set_new(doc, "kind", json_string(kind));
    cli_describe_holders(c, doc);
    *out = doc;
    return 0;
}

/* ---- dlock list --------------------------------------------------------------- */

static const char list_usage[] =
    "Usage: dlock list [--text] [--count N] [PATTERN]\n"
    "The locks, semaphores and latches whose names match PATTERN (Redis's glob:\n"
    "*, ?, [...]; default *), by SCAN (every master of a cluster): one line of\n"
    "JSON each, as dlock status\n"
    "prints it (--text: one line each for people: type, name, state, TTL,\n"
    "holders, waiters).\n"
    "  --text      one line per object for people\n"
    "  --count N   SCAN's COUNT hint (keys looked at per round trip; 100)\n";

/* One line of --text for an object's state. Every string in it comes from
 * the server (a name, an owner id, a description): escaped, as status
 * --text does, so that none can move the cursor or start a line. */
static void list_line(json_t *doc)
{
    json_t *holders = json_object_get(doc, "holders");
    json_t *queue = json_object_get(doc, "queue");
    json_t *ttl = json_object_get(doc, "ttl_ms");
    json_t *v;
    size_t i;

    printf("%-16s ", json_string_value(json_object_get(doc, "kind")));
    cli_put_text(stdout, json_string_value(json_object_get(doc, "name")));
    if (json_object_get(doc, "count"))
        printf(" count=%lld", (long long)json_integer_value(json_object_get(doc, "count")));
    else if (json_object_get(doc, "permits"))
        printf(" permits=%lld",
               (long long)json_integer_value(json_object_get(doc, "permits")));
    if (json_object_get(doc, "locked"))
        printf(" %s", json_is_true(json_object_get(doc, "locked")) ? "locked" : "free");
    if (json_is_string(json_object_get(doc, "mode"))) {
        printf(" mode=");
        cli_put_text(stdout, json_string_value(json_object_get(doc, "mode")));
    }
    if (json_is_integer(ttl) && json_integer_value(ttl) >= 0)
        printf(" ttl=%lld.%03llds", (long long)(json_integer_value(ttl) / 1000),
               (long long)(json_integer_value(ttl) % 1000));
    else if (json_is_integer(ttl) && json_integer_value(ttl) == -1)
        printf(" ttl=none");
    if (json_array_size(holders)) {
        printf(" holders=");
        json_array_foreach(holders, i, v) {
            json_t *who = json_object_get(v, "described");
            printf("%s", i ? "," : "");
            cli_put_text(stdout, json_string_value(json_object_get(v, "owner")));
            if (json_is_string(who)) {
                printf("(");
                cli_put_text(stdout, json_string_value(who));
                printf(")");
            }
        }
    }
    if (json_is_array(queue))
        printf(" waiters=%zu", json_array_size(queue));
    printf("\n");
}

const struct option *cli_list_options(void)
{
    static const struct option longs[] = {
        CLI_COMMON_LONGS,
        {"text", no_argument, NULL, 't'},
        {"count", required_argument, NULL, 'n'},
        {NULL, 0, NULL, 0},
    };
    return longs;
}

int cli_list(int argc, char **argv, const cli_common *common)
{
    const struct option *longs = cli_list_options();
    cli_common co = *common;
    const char *pattern = "*";
    char **all = NULL, err[512];
    size_t i;
    int64_t count = 100;
    dlock_client *c;
    int ch, rc, text = 0, status = CLI_OK;

    while ((ch = getopt_long(argc, argv, ":" CLI_COMMON_SHORTS, longs, NULL)) != -1) {
        if (cli_common_option(ch, optarg, &co))
            continue;
        switch (ch) {
        case 't':
            text = 1;
            break;
        case 'n':
            if (cli_parse_count(optarg, 1, 1000000, &count, err, sizeof err) != 0)
                return cli_usage("--count: %s", err);
            break;
        case 'h':
            return cli_sub_help(list_usage);
        default:
            return cli_bad_option(ch, argv);
        }
    }
    if (optind < argc)
        pattern = argv[optind++];
    if (optind < argc)
        return cli_usage("list: one PATTERN only ('%s' is extra)", argv[optind]);
    if ((rc = cli_connect(&c, &co, NULL)) != 0)
        return rc;
    if ((rc = dlock_client_scan(c, pattern, count, &all, err, sizeof err)) != 0) {
        status = cli_failed("cannot list", rc, err);
        goto out;
    }
    for (i = 0; all[i]; i++) {
        json_t *doc;
        rc = cli_object_state(c, all[i], 0, &doc, err, sizeof err);
        if (rc == DLOCK_EINVAL) {
            /* A key no dlock object can have as its name (longer than
             * DLOCK_NAME_MAX, a reserved form such as dlock_owner:x that
             * another client stored): one note saying why, and the
             * listing goes on. */
            cli_error("list: skipped a key of %zu bytes, '%.64s%s': %s", strlen(all[i]),
                      all[i], strlen(all[i]) > 64 ? "..." : "", err);
            continue;
        }
        if (rc != 0) {
            char what[256];
            snprintf(what, sizeof what, "no state of '%.64s'", all[i]);
            status = cli_failed(what, rc, err);
            continue;
        }
        if (strcmp(json_string_value(json_object_get(doc, "kind")), "none") == 0) {
            json_decref(doc); /* gone since the scan */
            continue;
        }
        if (text)
            list_line(doc);
        else if (cli_print_doc(doc, 0) != CLI_OK)
            status = CLI_FAILED;
        json_decref(doc);
    }
out:
    dlock_names_free(all);
    dlock_client_free(c);
    return status;
}

/* "host pid 123 program started 2026-11-27T16:03:36Z" for one owner, into
 * holder; nothing when its client published no description. */
static void describe_one(dlock_client *c, json_t *holder)
{
    const char *owner = json_string_value(json_object_get(holder, "owner"));
    dlock_owner_info info;
    char line[700], when[32];
    struct tm tm;
    time_t t;
    int found;

    if (!owner || dlock_client_owner_info(c, owner, &info, &found) != 0 || !found)
        return;
    t = (time_t)(info.started_ms / 1000);
    gmtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(line, sizeof line, "%s pid %lld %s, started %s", info.host, info.pid,
             info.program, when);
    json_object_set_new(holder, "described", json_string(line));
}

void cli_describe_holders(dlock_client *c, json_t *doc)
{
    const char *const arrays[] = {"holders", "readers"};
    json_t *v;
    size_t i, k;

    for (k = 0; k < 2; k++)
        json_array_foreach(json_object_get(doc, arrays[k]), i, v)
            describe_one(c, v);
    if (json_is_object(json_object_get(doc, "writer")))
        describe_one(c, json_object_get(doc, "writer"));
}
