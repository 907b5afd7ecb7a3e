/*
 * The Prometheus exposition of a client's metrics
 * (dlock_client_metrics_prometheus and _write, api/dlock/metrics.h), on
 * every backend: dlock_test_prometheus("mock"), ("redis").
 *
 * Every rendering is checked line by line against the text exposition
 * format, version 0.0.4, by a small parser written here: "# HELP name
 * text" (text escapes \\ and \n only), "# TYPE name counter|gauge|
 * histogram|summary|untyped", samples "name{label="value",...} value
 * [timestamp]" with metric names [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 * [a-zA-Z_][a-zA-Z0-9_]* (not "__..."), label values with the escapes \\,
 * \" and \n only, a float value; each family's HELP and TYPE once, before
 * its samples, its samples in one group; no series twice; counters named
 * *_total; histograms with cumulative buckets ending in le="+Inf" equal
 * to _count. Then the values are compared with dlock_client_metrics and
 * with what the case did, per lock name as well.
 */
#include "../harness/asserts.h"
#include "../harness/fixture.h"
#include "../harness/runner.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN(state) dlock_fx_begin(state, __func__)

/* ---- the parser ------------------------------------------------------------ */

#define MAX_SERIES 512
#define MAX_FAMILIES 64
#define LABELS_MAX 4096

typedef struct series {
    char name[128];
    char labels[LABELS_MAX]; /* unescaped, "k=v\x1f" per label, in order */
    double value;
} series;

typedef struct family {
    char name[128];
    char type[16];
    int help, typed, samples;
} family;

typedef struct expo {
    series s[MAX_SERIES];
    size_t ns;
    family f[MAX_FAMILIES];
    size_t nf;
    int current; /* the family whose samples are being read, -1: none */
} expo;

static int is_name_start(char c, int colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static int is_name_char(char c, int colon)
{
    return is_name_start(c, colon) || (c >= '0' && c <= '9');
}

/* A name at *p (metric names may hold ':', label names not) into out;
 * advances *p. -1 if there is none. */
static int read_name(const char **p, char *out, size_t len, int colon)
{
    size_t n = 0;

    if (!is_name_start(**p, colon))
        return -1;
    while (is_name_char((*p)[n], colon))
        n++;
    if (n >= len)
        return -1;
    memcpy(out, *p, n);
    out[n] = '\0';
    *p += n;
    return 0;
}

/* A float as the format has them (Go's ParseFloat: also "+Inf", "-Inf",
 * "NaN"), the whole of s[0..n). */
static int read_float(const char *s, size_t n, double *out)
{
    char buf[64], *end;

    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "-Inf") == 0 || strcmp(buf, "NaN") == 0) {
        *out = buf[0] == '-' ? -INFINITY : buf[0] == '+' ? INFINITY : NAN;
        return 0;
    }
    errno = 0;
    *out = strtod(buf, &end);
    return *end == '\0' && errno == 0 ? 0 : -1;
}

static family *find_family(expo *e, const char *name)
{
    size_t i;

    for (i = 0; i < e->nf; i++)
        if (strcmp(e->f[i].name, name) == 0)
            return &e->f[i];
    return NULL;
}

static family *new_family(expo *e, const char *name, const char *what)
{
    family *f = find_family(e, name);

    if (f)
        return f;
    if (e->nf == MAX_FAMILIES) {
        print_error("too many families\n");
        return NULL;
    }
    f = &e->f[e->nf++];
    memset(f, 0, sizeof(*f));
    snprintf(f->name, sizeof(f->name), "%s", name);
    (void)what;
    return f;
}

/* "# HELP name text" / "# TYPE name type" / another comment. */
static int parse_comment(expo *e, const char *line)
{
    const char *p = line + 1;
    char name[128];
    family *f;
    int help;

    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, "HELP ", 5) != 0 && strncmp(p, "TYPE ", 5) != 0)
        return 0; /* a plain comment */
    help = p[0] == 'H';
    p += 5;
    while (*p == ' ' || *p == '\t')
        p++;
    if (read_name(&p, name, sizeof(name), 1) != 0 || (*p != ' ' && *p != '\0'))
        return -1;
    f = new_family(e, name, help ? "HELP" : "TYPE");
    if (!f || f->samples > 0)
        return -1; /* HELP or TYPE after its samples */
    while (*p == ' ')
        p++;
    if (help) {
        if (f->help++)
            return -1; /* twice */
        for (; *p; p++)
            if (*p == '\\' && p[1] != '\\' && p[1] != 'n')
                return -1;
            else if (*p == '\\')
                p++;
        return 0;
    }
    if (f->typed++)
        return -1;
    if (strcmp(p, "counter") != 0 && strcmp(p, "gauge") != 0 && strcmp(p, "histogram") != 0 &&
        strcmp(p, "summary") != 0 && strcmp(p, "untyped") != 0)
        return -1;
    snprintf(f->type, sizeof(f->type), "%s", p);
    return 0;
}

/* The family a sample called name belongs to: the family itself, or a
 * histogram's (summary's) for its _bucket, _sum and _count. */
static family *family_of(expo *e, const char *name)
{
    static const char *const suffixes[] = {"_bucket", "_sum", "_count"};
    family *f = find_family(e, name);
    size_t i, n = strlen(name);

    if (f)
        return f;
    for (i = 0; i < 3; i++) {
        size_t k = strlen(suffixes[i]);
        char stem[128];
        if (n > k && n - k < sizeof(stem) && strcmp(name + n - k, suffixes[i]) == 0) {
            memcpy(stem, name, n - k);
            stem[n - k] = '\0';
            f = find_family(e, stem);
            if (f && (strcmp(f->type, "histogram") == 0 ||
                      (strcmp(f->type, "summary") == 0 && i > 0)))
                return f;
        }
    }
    return NULL;
}

static int parse_sample(expo *e, const char *line)
{
    const char *p = line, *v;
    series *s;
    family *f;
    size_t i, w = 0;

    if (e->ns == MAX_SERIES)
        return -1;
    s = &e->s[e->ns];
    memset(s, 0, sizeof(*s));
    if (read_name(&p, s->name, sizeof(s->name), 1) != 0)
        return -1;
    if (*p == '{') {
        p++;
        while (*p != '}') {
            char lname[128];
            size_t start = w;
            if (read_name(&p, lname, sizeof(lname), 0) != 0 || strncmp(lname, "__", 2) == 0 ||
                *p++ != '=' || *p++ != '"')
                return -1;
            w += (size_t)snprintf(s->labels + w, LABELS_MAX - w, "%s=", lname);
            /* the same label twice in a sample */
            for (i = 0; i < start;) {
                size_t len = strcspn(s->labels + i, "\x1f");
                if (strncmp(s->labels + i, s->labels + start, strlen(lname) + 1) == 0)
                    return -1;
                i += len + 1;
            }
            for (; *p != '"'; p++) {
                char c = *p;
                if (c == '\0' || w + 2 >= LABELS_MAX)
                    return -1;
                if (c == '\\') {
                    p++;
                    if (*p == 'n')
                        c = '\n';
                    else if (*p == '\\' || *p == '"')
                        c = *p;
                    else
                        return -1;
                }
                s->labels[w++] = c;
            }
            p++;
            s->labels[w++] = '\x1f';
            if (*p == ',')
                p++;
            else if (*p != '}')
                return -1;
        }
        p++;
    }
    if (*p != ' ')
        return -1;
    while (*p == ' ')
        p++;
    v = p;
    while (*p && *p != ' ')
        p++;
    if (read_float(v, (size_t)(p - v), &s->value) != 0)
        return -1;
    if (*p == ' ') { /* a timestamp: an integer */
        char *end;
        p++;
        (void)strtoll(p, &end, 10);
        if (end == p || *end != '\0')
            return -1;
    } else if (*p != '\0') {
        return -1;
    }
    f = family_of(e, s->name);
    if (!f || !f->help || !f->typed)
        return -1; /* no HELP and TYPE before it */
    if (e->current != (int)(f - e->f) && f->samples > 0)
        return -1; /* its family's samples are not one group */
    e->current = (int)(f - e->f);
    f->samples++;
    for (i = 0; i < e->ns; i++)
        if (strcmp(e->s[i].name, s->name) == 0 && strcmp(e->s[i].labels, s->labels) == 0)
            return -1; /* a series twice */
    e->ns++;
    return 0;
}

/* Parses text (each line ending in '\n') into *e; fails the test, naming
 * the line, at the first one that breaks the format. */
static void parse(const char *text, expo *e)
{
    const char *p = text;
    char line[LABELS_MAX + 256];
    int lineno = 0;

    memset(e, 0, sizeof(*e));
    e->current = -1;
    while (*p) {
        size_t n = strcspn(p, "\n");
        int rc;

        lineno++;
        if (p[n] != '\n') {
            print_error("line %d does not end in a newline\n", lineno);
            fail();
        }
        assert_true(n < sizeof(line));
        memcpy(line, p, n);
        line[n] = '\0';
        rc = n == 0 ? 0 : line[0] == '#' ? parse_comment(e, line) : parse_sample(e, line);
        if (rc != 0) {
            print_error("line %d breaks the exposition format: %s\n", lineno, line);
            fail();
        }
        p += n + 1;
    }
}

/* The value of the series name with the labels (as stored: "k=v\x1f"...). */
static double value_of(const expo *e, const char *name, const char *labels)
{
    size_t i;

    for (i = 0; i < e->ns; i++)
        if (strcmp(e->s[i].name, name) == 0 && strcmp(e->s[i].labels, labels) == 0)
            return e->s[i].value;
    print_error("no series %s{%s}\n", name, labels);
    fail();
    return -1;
}

static size_t count_series(const expo *e, const char *name)
{
    size_t i, n = 0;

    for (i = 0; i < e->ns; i++)
        n += strcmp(e->s[i].name, name) == 0;
    return n;
}

/* The checks every rendering gets beyond the grammar: counters are
 * *_total, histograms' buckets cumulative up to +Inf == _count. */
static void check_families(const expo *e)
{
    size_t i, j;

    for (i = 0; i < e->nf; i++) {
        const family *f = &e->f[i];
        size_t n = strlen(f->name);
        assert_true(f->help && f->typed && f->samples > 0);
        assert_true(strncmp(f->name, "dlock_", 6) == 0);
        if (strcmp(f->type, "counter") == 0) {
            assert_true(n > 6 && strcmp(f->name + n - 6, "_total") == 0);
        } else {
            char bucket[160], count[160];
            double last = -1, inf = -1;
            assert_string_equal(f->type, "histogram");
            snprintf(bucket, sizeof(bucket), "%s_bucket", f->name);
            snprintf(count, sizeof(count), "%s_count", f->name);
            for (j = 0; j < e->ns; j++) {
                if (strcmp(e->s[j].name, bucket) != 0)
                    continue;
                assert_true(e->s[j].value >= last);
                last = e->s[j].value;
                if (strstr(e->s[j].labels, "le=+Inf\x1f"))
                    inf = e->s[j].value;
            }
            assert_true(inf >= 0);
            for (j = 0; j < e->ns; j++)
                if (strcmp(e->s[j].name, count) == 0)
                    assert_true(e->s[j].value == inf);
        }
    }
}

/* ---- helpers -------------------------------------------------------------- */

static void free_client(void *c) { dlock_client_free(c); }
static void free_lock(void *l) { dlock_rlock_free(l); }

/* A client of its own on the fixture's store or server, named name, with
 * per-name counters for max names. */
static dlock_client *named_client(dlock_fx *fx, const char *name, int64_t max)
{
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_backend *b = NULL;
    dlock_client *c = NULL;

    o.watchdog_timeout_ms = fx->watchdog_ms;
    o.client_name = name;
    o.metrics_names_max = max;
    assert_int_equal(dlock_fx_backend_new(fx, &b), 0);
    assert_int_equal(dlock_client_new(&c, b, &o), 0);
    return dlock_fx_keep(fx, c, free_client);
}

static dlock_rlock *lock_on(dlock_fx *fx, dlock_client *c, const char *name)
{
    dlock_rlock *l = NULL;

    assert_int_equal(dlock_reentrant_new(&l, c, name), 0);
    return dlock_fx_keep(fx, l, free_lock);
}

/* The whole rendering, malloc'ed (the caller frees it), asked for its
 * length first, as an application would. */
static char *render(dlock_client *c)
{
    int n = dlock_client_metrics_prometheus(c, NULL, 0);
    char *buf;

    assert_true(n > 0);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(dlock_client_metrics_prometheus(c, buf, (size_t)n + 1), n);
    assert_int_equal(strlen(buf), (size_t)n);
    return buf;
}

/* n acquisitions (lock + unlock) of the lock called name on c, through a
 * handle freed at the end (many names outnumber the fixture's room). */
static void acquire_n(dlock_fx *fx, dlock_client *c, const char *name, int n)
{
    dlock_rlock *l = lock_on(fx, c, name);
    int i;

    for (i = 0; i < n; i++) {
        assert_int_equal(dlock_lock(l, fx->long_lease_ms), 0);
        assert_int_equal(dlock_unlock(l), 0);
    }
    dlock_fx_unkeep(fx, l);
    dlock_rlock_free(l);
}

/* "client=<name>\x1f" + more */
static void labels(char *out, size_t len, const char *client, const char *lock,
                   int overflow)
{
    int n = snprintf(out, len, "client=%s\x1f", client);

    if (lock)
        n += snprintf(out + n, len - (size_t)n, "lock=%s\x1f", lock);
    if (overflow)
        snprintf(out + n, len - (size_t)n, "overflow=true\x1f");
}

/* ---- the cases ------------------------------------------------------------ */

/* Activity of every kind counted (acquisitions, re-entries, refusals, a
 * lost hold, waits and holds), rendered, parsed, and every value compared
 * with dlock_client_metrics and with what the case did, per name too. */
static void exposition_matches_metrics(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = named_client(fx, "orders-service", 2);
    dlock_rlock *a = lock_on(fx, c, "a"), *b = lock_on(fx, c, "b");
    dlock_rlock *b2 = dlock_fx_lock(fx, fx->c2, "b");
    dlock_metrics m = DLOCK_METRICS_INIT;
    static const int64_t bounds[DLOCK_METRICS_BUCKETS - 1] = DLOCK_METRICS_BOUNDS_MS;
    char lb[512], *text;
    expo *e = calloc(1, sizeof(*e));
    double cum = 0;
    size_t i;

    assert_non_null(e);
    assert_string_equal(dlock_client_name(c), "orders-service");
    /* a: 3 acquisitions (one a re-entry), one hold of 1000 ms */
    assert_int_equal(dlock_lock(a, fx->long_lease_ms), 0);
    assert_int_equal(dlock_lock(a, fx->long_lease_ms), 0);
    assert_int_equal(dlock_try_lock_as(a, "someone:1", 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock_as(a, "someone:1", 0, fx->long_lease_ms), DLOCK_EBUSY);
    assert_int_equal(dlock_try_lock_as(a, "someone:1", 0, fx->long_lease_ms), DLOCK_EBUSY);
    dlock_fx_advance(fx, 1000);
    assert_int_equal(dlock_unlock(a), 0);
    assert_int_equal(dlock_unlock(a), 0);
    assert_int_equal(dlock_lock(a, fx->long_lease_ms), 0);
    assert_int_equal(dlock_unlock(a), 0);
    /* b: acquired, taken away by another client, lost at the unlock */
    assert_int_equal(dlock_lock(b, fx->long_lease_ms), 0);
    assert_int_equal(dlock_force_unlock(b2, NULL), 0);
    assert_int_equal(dlock_unlock(b), DLOCK_ELOST);
    /* c, d: beyond the cap of 2, counted as "other" */
    acquire_n(fx, c, "c", 2);
    acquire_n(fx, c, "d", 1);

    text = render(c);
    parse(text, e);
    check_families(e);
    assert_int_equal(dlock_client_metrics(c, &m), 0);

    labels(lb, sizeof(lb), "orders-service", NULL, 0);
    assert_true(m.acquisitions == 7);
    assert_true(value_of(e, "dlock_acquisitions_total", lb) == (double)m.acquisitions);
    assert_true(value_of(e, "dlock_busy_attempts_total", lb) == 3);
    assert_true(value_of(e, "dlock_busy_attempts_total", lb) == (double)m.busy);
    assert_true(value_of(e, "dlock_renewals_total", lb) == (double)m.renewals);
    assert_true(value_of(e, "dlock_renewal_failures_total", lb) == (double)m.renewal_failures);
    assert_true(value_of(e, "dlock_lost_locks_total", lb) == 1);
    assert_true(value_of(e, "dlock_lost_locks_total", lb) == (double)m.lost);
    assert_true(value_of(e, "dlock_reconnects_total", lb) == (double)m.reconnects);
    assert_true(value_of(e, "dlock_unsynced_no_replica_total", lb) ==
                (double)m.unsynced_no_replica);
    assert_true(value_of(e, "dlock_unsynced_refused_total", lb) == (double)m.unsynced_refused);
    assert_true(value_of(e, "dlock_messages_ignored_total", lb) == (double)m.messages_ignored);
    assert_true(value_of(e, "dlock_wait_seconds_count", lb) == (double)m.wait_ms.count);
    assert_true(value_of(e, "dlock_hold_seconds_count", lb) == (double)m.hold_ms.count);
    assert_true(fabs(value_of(e, "dlock_hold_seconds_sum", lb) - m.hold_ms.sum_ms / 1000.0) <
                1e-9);
    assert_true(fabs(value_of(e, "dlock_wait_seconds_sum", lb) - m.wait_ms.sum_ms / 1000.0) <
                1e-9);
    /* the buckets: cumulative, at the documented bounds in seconds */
    for (i = 0; i < DLOCK_METRICS_BUCKETS; i++) {
        char le[64], bl[600];
        cum += (double)m.hold_ms.buckets[i];
        if (i < DLOCK_METRICS_BUCKETS - 1)
            snprintf(le, sizeof(le), "%g", bounds[i] / 1000.0);
        else
            snprintf(le, sizeof(le), "+Inf");
        snprintf(bl, sizeof(bl), "%sle=%s\x1f", lb, le);
        assert_true(value_of(e, "dlock_hold_seconds_bucket", bl) == cum);
    }
    assert_int_equal(count_series(e, "dlock_hold_seconds_bucket"), DLOCK_METRICS_BUCKETS);
    if (fx->is_mock) {
        /* virtual time: the first hold was 1000 ms exactly */
        assert_true(value_of(e, "dlock_hold_seconds_sum", lb) == 1.0);
        snprintf(lb + strlen(lb), sizeof(lb) - strlen(lb), "le=0.5\x1f");
        assert_true(value_of(e, "dlock_hold_seconds_bucket", lb) == 5); /* all but the first */
        labels(lb, sizeof(lb), "orders-service", NULL, 0);
    }

    /* per name: a and b have their own series, c and d are "other" */
    labels(lb, sizeof(lb), "orders-service", "a", 0);
    assert_true(value_of(e, "dlock_lock_acquisitions_total", lb) == 3);
    assert_true(value_of(e, "dlock_lock_busy_attempts_total", lb) == 3);
    assert_true(value_of(e, "dlock_lock_lost_total", lb) == 0);
    labels(lb, sizeof(lb), "orders-service", "b", 0);
    assert_true(value_of(e, "dlock_lock_acquisitions_total", lb) == 1);
    assert_true(value_of(e, "dlock_lock_busy_attempts_total", lb) == 0);
    assert_true(value_of(e, "dlock_lock_lost_total", lb) == 1);
    labels(lb, sizeof(lb), "orders-service", "other", 1);
    assert_true(value_of(e, "dlock_lock_acquisitions_total", lb) == 3);
    assert_true(value_of(e, "dlock_lock_busy_attempts_total", lb) == 0);
    assert_true(value_of(e, "dlock_lock_lost_total", lb) == 0);
    assert_int_equal(count_series(e, "dlock_lock_acquisitions_total"), 3);
    assert_int_equal(count_series(e, "dlock_lock_busy_attempts_total"), 3);
    assert_int_equal(count_series(e, "dlock_lock_lost_total"), 3);
    /* 9 counters, 2 histograms, 3 per-name counters */
    assert_int_equal(e->nf, 14);
    free(text);
    free(e);
}

/* The callback gets the same text, in whole lines; a callback that says
 * stop is called no more; bad arguments are refused. */
typedef struct collected {
    char *text;
    size_t len;
    int calls, stop_after;
} collected;

static int collect(void *arg, const char *data, size_t len)
{
    collected *k = arg;
    char *t = realloc(k->text, k->len + len + 1);

    if (!t)
        return 1;
    memcpy(t + k->len, data, len);
    k->len += len;
    t[k->len] = '\0';
    k->text = t;
    k->calls++;
    return k->stop_after > 0 && k->calls >= k->stop_after;
}

static void callback_gets_the_same_text(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = named_client(fx, "cb", 4000);
    collected k = {NULL, 0, 0, 0}, s = {NULL, 0, 0, 1};
    char name[32], *text;
    int i;

    /* enough names for several chunks */
    for (i = 0; i < 120; i++) {
        snprintf(name, sizeof(name), "lock-%03d", i);
        acquire_n(fx, c, name, 1);
    }
    text = render(c);
    assert_int_equal(dlock_client_metrics_prometheus_write(c, collect, &k), 0);
    assert_non_null(k.text);
    assert_string_equal(k.text, text);
    assert_true(k.calls > 1);
    assert_int_equal(dlock_client_metrics_prometheus_write(c, collect, &s), DLOCK_ECANCELED);
    assert_int_equal(s.calls, 1);
    assert_true(s.len > 0 && s.len < k.len && s.text[s.len - 1] == '\n');
    assert_int_equal(strncmp(s.text, text, s.len), 0);

    assert_int_equal(dlock_client_metrics_prometheus_write(NULL, collect, &k), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics_prometheus_write(c, NULL, &k), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics_prometheus(NULL, text, 10), DLOCK_EINVAL);
    assert_int_equal(dlock_client_metrics_prometheus(c, NULL, 10), DLOCK_EINVAL);
    free(k.text);
    free(s.text);
    free(text);
}

/* A client name and a lock name with a quote, a backslash and a newline
 * come out escaped, and read back as they were. */
static void hostile_names_are_escaped(void **state)
{
    static const char hostile_client[] = "svc \"x\"\\\ny";
    static const char hostile_lock[] = "lock\"}\n# TYPE evil counter\\";
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = named_client(fx, hostile_client, 10);
    expo *e = calloc(1, sizeof(*e));
    char lb[512], *text;

    assert_non_null(e);
    acquire_n(fx, c, hostile_lock, 2);
    text = render(c);
    /* nothing raw: every line is one of the format's */
    parse(text, e);
    check_families(e);
    assert_null(strstr(text, "\n# TYPE evil"));
    assert_non_null(strstr(text, "client=\"svc \\\"x\\\"\\\\\\ny\""));
    labels(lb, sizeof(lb), hostile_client, NULL, 0);
    assert_true(value_of(e, "dlock_acquisitions_total", lb) == 2);
    labels(lb, sizeof(lb), hostile_client, hostile_lock, 0);
    assert_true(value_of(e, "dlock_lock_acquisitions_total", lb) == 2);
    free(text);
    free(e);
}

/* The cap: max names get series of their own, every other name (and a
 * name that is not UTF-8) goes to "other"; off, no per-name family. */
static void cap_and_other_bucket(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = named_client(fx, "capped", 3), *off = named_client(fx, "off", 0);
    expo *e = calloc(1, sizeof(*e));
    char name[32], lb[512], *text;
    int i;

    assert_non_null(e);
    for (i = 0; i < 10; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        acquire_n(fx, c, name, i + 1);
        acquire_n(fx, off, name, 1);
    }
    acquire_n(fx, c, "bad\xff", 1); /* not UTF-8 */
    text = render(c);
    parse(text, e);
    check_families(e);
    assert_int_equal(count_series(e, "dlock_lock_acquisitions_total"), 3 + 1);
    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "n%d", i);
        labels(lb, sizeof(lb), "capped", name, 0);
        assert_true(value_of(e, "dlock_lock_acquisitions_total", lb) == i + 1);
    }
    /* n3..n9: 4 + 5 + ... + 10 = 49, and the bad name's 1 */
    labels(lb, sizeof(lb), "capped", "other", 1);
    assert_true(value_of(e, "dlock_lock_acquisitions_total", lb) == 50);
    free(text);

    text = render(off);
    parse(text, e);
    check_families(e);
    assert_null(strstr(text, "dlock_lock_"));
    assert_int_equal(e->nf, 11); /* 9 counters, 2 histograms */
    labels(lb, sizeof(lb), "off", NULL, 0);
    assert_true(value_of(e, "dlock_acquisitions_total", lb) == 10);
    free(text);
    free(e);
}

/* A buffer too small: the whole length is returned every time, nothing is
 * written past len, and what is there is whole lines of the text,
 * NUL-terminated. */
static void small_buffer_truncates_at_a_line(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client *c = named_client(fx, "small", 2);
    char *text, *buf;
    size_t sizes[8], i, len;
    int n;

    acquire_n(fx, c, "x", 1);
    text = render(c);
    len = strlen(text);
    sizes[0] = 1;
    sizes[1] = 10;
    sizes[2] = strcspn(text, "\n") + 1; /* the first line, without room for the NUL */
    sizes[3] = strcspn(text, "\n") + 2; /* ... with it */
    sizes[4] = len / 2;
    sizes[5] = len - 1;
    sizes[6] = len; /* no room for the NUL */
    sizes[7] = len + 1;
    buf = malloc(len + 64);
    assert_non_null(buf);
    for (i = 0; i < 8; i++) {
        memset(buf, '#', len + 64);
        n = dlock_client_metrics_prometheus(c, buf, sizes[i]);
        assert_int_equal(n, (int)len);
        assert_true(buf[sizes[i]] == '#'); /* not a byte past len */
        assert_true(strlen(buf) < sizes[i]);
        assert_int_equal(strncmp(buf, text, strlen(buf)), 0);
        if (strlen(buf) > 0)
            assert_true(buf[strlen(buf) - 1] == '\n');
        if (i == 2)
            assert_int_equal(strlen(buf), 0);
        if (i == 3)
            assert_int_equal(strlen(buf), sizes[2]);
        if (i == 7)
            assert_string_equal(buf, text);
        else
            assert_true(strlen(buf) < len);
    }
    /* len 0 writes nothing at all */
    memset(buf, '#', 8);
    assert_int_equal(dlock_client_metrics_prometheus(c, buf, 0), (int)len);
    assert_true(buf[0] == '#');
    free(buf);
    free(text);
}

/* The name's default, its bounds, and the URL parameters and JSON keys. */
static void client_name_options(void **state)
{
    dlock_fx *fx = BEGIN(state);
    dlock_client_options o = DLOCK_CLIENT_OPTIONS_INIT, newer = DLOCK_CLIENT_OPTIONS_INIT;
    dlock_client *c = named_client(fx, NULL, 0);
    const char *base = fx->is_mock ? "mock:" : dlock_fx_redis_url();
    char url[512], json[768], err[256], longname[DLOCK_CLIENT_NAME_MAX + 2], *text;
    dlock_backend *b = NULL;
    dlock_client *u = NULL;
    const char *sep = strchr(base, '?') ? "&" : "?";

    /* default: the program's name, stable across restarts */
    assert_string_equal(dlock_client_name(c), program_invocation_short_name);
    assert_null(dlock_client_name(NULL));
    /* options of a version this library does not know: refused, nothing
     * made (the backend stays the caller's) */
    newer.version = DLOCK_CLIENT_OPTIONS_VERSION + 1;
    assert_int_equal(dlock_fx_backend_new(fx, &b), 0);
    assert_int_equal(dlock_client_new(&u, b, &newer), DLOCK_EINVAL);
    assert_null(u);
    newer.version = 0;
    assert_int_equal(dlock_client_new(&u, b, &newer), DLOCK_EINVAL);
    assert_null(u);
    dlock_backend_free(b);
    b = NULL;

    /* refused, nothing made: empty, too long, not UTF-8, cap out of range */
    memset(longname, 'n', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = '\0';
    assert_int_equal(dlock_fx_backend_new(fx, &b), 0);
    o.client_name = "";
    assert_int_equal(dlock_client_new(&u, b, &o), DLOCK_EINVAL);
    o.client_name = longname;
    assert_int_equal(dlock_client_new(&u, b, &o), DLOCK_EINVAL);
    o.client_name = "bad\xc3";
    assert_int_equal(dlock_client_new(&u, b, &o), DLOCK_EINVAL);
    o.client_name = "ok";
    o.metrics_names_max = -1;
    assert_int_equal(dlock_client_new(&u, b, &o), DLOCK_EINVAL);
    o.metrics_names_max = DLOCK_METRICS_NAMES_MAX + 1;
    assert_int_equal(dlock_client_new(&u, b, &o), DLOCK_EINVAL);
    assert_null(u);
    o.metrics_names_max = DLOCK_METRICS_NAMES_MAX;
    assert_int_equal(dlock_client_new(&u, b, &o), 0); /* the backend is u's now */
    dlock_client_free(u);

    /* the URL's parameters, percent-encoded, win over the options */
    snprintf(url, sizeof(url), "%s%sclient_name=billing%%20%%22eu%%22&metrics_names_max=1",
             base, sep);
    o.client_name = "from-options";
    o.metrics_names_max = 0;
    assert_int_equal(dlock_client_connect(&u, url, &o, err, sizeof(err)), 0);
    dlock_fx_keep(fx, u, free_client);
    assert_string_equal(dlock_client_name(u), "billing \"eu\"");
    acquire_n(fx, u, "p", 1);
    acquire_n(fx, u, "q", 1);
    text = render(u);
    assert_non_null(strstr(text, "dlock_lock_acquisitions_total{client=\"billing \\\"eu\\\"\","
                                 "lock=\"p\"} 1\n"));
    assert_non_null(strstr(text, "lock=\"other\",overflow=\"true\"} 1\n"));
    free(text);
    snprintf(url, sizeof(url), "%s%sclient_name=", base, sep);
    assert_int_equal(dlock_client_connect(&u, url, NULL, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "client_name"));
    snprintf(url, sizeof(url), "%s%sclient_name=%%ff", base, sep);
    assert_int_equal(dlock_client_connect(&u, url, NULL, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "client_name"));
    snprintf(url, sizeof(url), "%s%sclient_name=a&client_name=b", base, sep);
    assert_int_equal(dlock_client_connect(&u, url, NULL, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "given twice"));
    snprintf(url, sizeof(url), "%s%smetrics_names_max=10001", base, sep);
    assert_int_equal(dlock_client_connect(&u, url, NULL, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "metrics_names_max"));
    assert_null(u);

    /* the JSON keys */
    snprintf(json, sizeof(json),
             "{\"url\": \"%s\", \"client_name\": \"from json\", \"metrics_names_max\": 7}",
             base);
    assert_int_equal(dlock_client_from_json_string(&u, json, err, sizeof(err)), 0);
    dlock_fx_keep(fx, u, free_client);
    assert_string_equal(dlock_client_name(u), "from json");
    snprintf(json, sizeof(json), "{\"url\": \"%s\", \"metrics_names_max\": 10001}", base);
    assert_int_equal(dlock_client_from_json_string(&u, json, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "metrics_names_max"));
    snprintf(json, sizeof(json), "{\"url\": \"%s\", \"client_name\": \"%s\"}", base, longname);
    assert_int_equal(dlock_client_from_json_string(&u, json, err, sizeof(err)), DLOCK_EINVAL);
    assert_non_null(strstr(err, "client_name"));
    assert_null(u);
}

/* ---- the group ----------------------------------------------------------- */

#define CASE(f) DLOCK_FX_CASE(f)

static const struct CMUnitTest prometheus_cases[] = {
    CASE(exposition_matches_metrics),
    CASE(callback_gets_the_same_text),
    CASE(hostile_names_are_escaped),
    CASE(cap_and_other_bucket),
    CASE(small_buffer_truncates_at_a_line),
    CASE(client_name_options),
};

int dlock_test_prometheus(const char *backend)
{
    return DLOCK_FX_RUN_GROUP("prometheus", backend, prometheus_cases);
}
