/*
 * The nemesis checker: reads the workers' histories after they exited and
 * counts, per group of workers (nemesis.h):
 *
 *  - two owners at once (more than NEM_SEM_PERMITS for the semaphore): a
 *    hold counts from its acquire's return to the earlier of its release's
 *    call and t0 + lease (the lease starts on the server after t0, so an
 *    owner is inside only while its lease surely runs: a holder paused past
 *    its lease is not counted after it). Asserted for Sentinel with
 *    sync_replicas=-1 and for the Redlock (their faults leave a majority
 *    alive); counted and reported for asynchronous replication.
 *  - a stale token accepted: a guarded write accepted with a token not
 *    greater than the token of a write accepted before it started.
 *    Asserted everywhere except for the Sentinel group without sync, whose
 *    kill -9 of the master can lose token increments (api/dlock/fenced.h
 *    says the token guarantee needs sync_replicas there): reported.
 *  - budget: every call (not paused by the nemesis meanwhile) returned
 *    within its budget plus NEM_ROUND_TRIP_MS; the worst overrun.
 *  - recovery: per fault, from its injection to the first acquisition
 *    that a worker of the group began after it.
 */
#include "nemesis.h"

#include <dlock.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEM_MAX_FAULTS 4096

static const char *const kind_names[NEM_NKINDS] = {"reentrant", "fair", "rwwrite",
                                                   "semaphore", "fenced", "redlock"};
static const char *const group_names[NEM_NGROUPS] = {"sentinel-sync", "sentinel-async",
                                                     "redlock-5", "cluster-3"};
static const char *const fault_names[NEM_NFAULTS] = {
    "kill_master", "failover", "kill_node", "pause_node", "proxy_cut",
    "proxy_blackhole", "proxy_delay", "pause_holder", "kill_waiter"};

/* The topology of a group (the faults of the Sentinel set are filed under
 * its sync group). */
static const char *const topology_names[NEM_NGROUPS] = {"sentinel", "sentinel", "redlock",
                                                        "cluster"};
#define FI(group, kind) ((group) * NEM_NFAULTS + (kind))

const char *nem_kind_name(int kind) { return kind_names[kind]; }
const char *nem_group_name(int group) { return group_names[group]; }
const char *nem_fault_name(int fault) { return fault_names[fault]; }

typedef struct gstat {
    int used;
    long ops, acquired, writes_ok, writes_refused, lost_holds, paused_ops;
    long two_owners, stale, over_budget;
    long dropped; /* operations past a worker's history capacity */
    int64_t worst_overrun;
    long leftover_no_ttl, leftover_queue;
} gstat;

struct nem_report {
    unsigned seed;
    int seconds;
    gstat g[NEM_NGROUPS];
    /* per topology and fault kind: index FI(group, kind) */
    long faults[NEM_NGROUPS * NEM_NFAULTS];
    /* recovery times per fault kind */
    int64_t *rec_ms[NEM_NGROUPS * NEM_NFAULTS];
    int nrec_ms[NEM_NGROUPS * NEM_NFAULTS];
    char leftover_example[256];
};

nem_report *nem_report_new(unsigned seed, int seconds)
{
    nem_report *r = calloc(1, sizeof *r);
    int i;
    if (r == NULL)
        return NULL;
    r->seed = seed;
    r->seconds = seconds;
    for (i = 0; i < NEM_NGROUPS * NEM_NFAULTS; i++)
        r->rec_ms[i] = calloc(NEM_MAX_FAULTS, sizeof(int64_t));
    for (i = 0; i < NEM_NGROUPS * NEM_NFAULTS; i++)
        if (r->rec_ms[i] == NULL) {
            nem_report_free(r);
            return NULL;
        }
    return r;
}

void nem_report_free(nem_report *r)
{
    int i;
    if (r == NULL)
        return;
    for (i = 0; i < NEM_NGROUPS * NEM_NFAULTS; i++)
        free(r->rec_ms[i]);
    free(r);
}

void nem_report_add_faults(nem_report *r, const nem_fault_rec *f, int n)
{
    int i;
    for (i = 0; i < n; i++)
        r->faults[FI(f[i].group, f[i].kind)]++;
}

void nem_report_leftover(nem_report *r, int group, const char *what, const char *key)
{
    r->g[group].used = 1;
    if (strcmp(what, "queue") == 0)
        r->g[group].leftover_queue++;
    else
        r->g[group].leftover_no_ttl++;
    if (r->leftover_example[0] == '\0')
        snprintf(r->leftover_example, sizeof r->leftover_example, "%s %s: %s",
                 group_names[group], what, key);
}

/* ---- holds and writes ----------------------------------------------------- */

typedef struct span {
    int64_t a, b; /* [a, b) */
    int64_t token;
    int worker;
} span;

static int by_a(const void *x, const void *y)
{
    const span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a;
}

static int by_b(const void *x, const void *y)
{
    const span *p = x, *q = y;
    return p->b < q->b ? -1 : p->b > q->b;
}

/* The first few violations are printed, to be read with the faults
 * (NEMESIS_VERBOSE=1 prints those); times are fault_now_ms. */
static int shown, quiet; /* quiet: the self-test */
#define SHOW_MAX 5
static const nem_fault_rec *cur_f;
static int cur_nf;

/* Prints the last fault injected before t, if any, after a violation. */
static void show_fault_before(int64_t t)
{
    int i, best = -1;
    for (i = 0; i < cur_nf; i++)
        if (cur_f[i].t0 <= t && (best < 0 || cur_f[i].t0 > cur_f[best].t0))
            best = i;
    if (best >= 0)
        printf("    the last fault before: %s at %lld, healed at %lld\n",
               fault_names[cur_f[best].kind], (long long)cur_f[best].t0,
               (long long)cur_f[best].t1);
}

/* Holds of one group and kind that started while `cap` others were inside. */
static long overlaps(span *s, long n, int cap, int grp, int kind)
{
    long i, j, bad = 0;
    qsort(s, (size_t)n, sizeof *s, by_a);
    for (i = 0; i < n; i++) {
        int inside = 0;
        long last = -1;
        /* spans are short (a lease): look back over those that began within
         * the longest lease */
        for (j = i - 1; j >= 0 && s[i].a - s[j].a < 10000; j--)
            if (s[j].b > s[i].a && s[j].worker != s[i].worker) {
                inside++;
                last = j;
            }
        if (inside < cap)
            continue;
        bad++;
        if (shown++ < SHOW_MAX && !quiet)
            printf("nemesis: %s %s: worker %d inside [%lld, %lld) while worker %d was "
                   "[%lld, %lld)\n",
                   group_names[grp], kind_names[kind], s[i].worker, (long long)s[i].a,
                   (long long)s[i].b, s[last].worker, (long long)s[last].a,
                   (long long)s[last].b);
        if (shown <= SHOW_MAX && !quiet)
            show_fault_before(s[i].a);
    }
    return bad;
}

/* Accepted writes whose token is not above that of a write accepted (and
 * returned) before they began. */
static long stale_writes(span *w, long n, int grp)
{
    span *end = malloc(sizeof *end * (size_t)(n ? n : 1));
    long i, k = 0, bad = 0, top = -1;
    if (end == NULL)
        return 0;
    memcpy(end, w, sizeof *end * (size_t)n);
    qsort(w, (size_t)n, sizeof *w, by_a);
    qsort(end, (size_t)n, sizeof *end, by_b);
    for (i = 0; i < n; i++) {
        for (; k < n && end[k].b < w[i].a; k++)
            if (top < 0 || end[k].token > end[top].token)
                top = k;
        if (top < 0 || w[i].token > end[top].token)
            continue;
        bad++;
        if (shown++ < SHOW_MAX && !quiet)
            printf("nemesis: %s: worker %d's write with token %lld accepted at [%lld, "
                   "%lld], after worker %d's with token %lld at [%lld, %lld]\n",
                   group_names[grp], w[i].worker, (long long)w[i].token,
                   (long long)w[i].a, (long long)w[i].b, end[top].worker,
                   (long long)end[top].token, (long long)end[top].a,
                   (long long)end[top].b);
        if (shown <= SHOW_MAX && !quiet)
            show_fault_before(w[i].a);
    }
    free(end);
    return bad;
}

static void overrun(gstat *g, const nem_rec *q, const char *call, int64_t took,
                    int64_t budget, int rc, int64_t t)
{
    int64_t over = took - budget;
    if (over > g->worst_overrun)
        g->worst_overrun = over;
    if (over <= NEM_ROUND_TRIP_MS)
        return;
    g->over_budget++;
    if (shown++ < SHOW_MAX && !quiet) {
        printf("nemesis: %s %s: worker %d's %s took %lld ms at %lld, budget %lld ms (%s)\n",
               group_names[q->group], kind_names[q->kind], q->worker, call, (long long)took,
               (long long)t, (long long)budget, dlock_errname(rc));
        show_fault_before(t);
    }
}

void nem_report_check(nem_report *r, const nem_slot *slots, int nworkers,
                      const nem_fault_rec *f, int nfaults)
{
    long total = 0, i;
    int w, k, grp;
    span *s, *wr;

    cur_f = f;
    cur_nf = nfaults;
    for (w = 0; w < nworkers; w++) {
        total += slots[w].nrec;
        r->g[slots[w].group].dropped += slots[w].dropped;
    }
    s = malloc(sizeof *s * (size_t)(total + 1));
    wr = malloc(sizeof *wr * (size_t)(total + 1));
    if (s == NULL || wr == NULL) {
        free(s);
        free(wr);
        return;
    }
    for (grp = 0; grp < NEM_NGROUPS; grp++) {
        gstat *g = &r->g[grp];
        long nw = 0;
        for (k = 0; k < NEM_NKINDS; k++) {
            long n = 0;
            for (w = 0; w < nworkers; w++) {
                const nem_slot *sl = &slots[w];
                if (sl->group != grp)
                    continue;
                for (i = 0; i < sl->nrec; i++) {
                    const nem_rec *q = &sl->rec[i];
                    int64_t end;
                    if (q->kind != k)
                        continue;
                    g->used = 1;
                    g->ops++;
                    if (q->paused) {
                        g->paused_ops++;
                    } else {
                        overrun(g, q, "acquire", q->t1 - q->t0, q->budget_ms, q->acq_rc,
                                q->t0);
                        if (q->w0)
                            overrun(g, q, "guarded write", q->w1 - q->w0,
                                    q->call_budget_ms, q->write_rc, q->w0);
                        if (q->t2)
                            overrun(g, q, "release", q->t3 - q->t2, q->call_budget_ms,
                                    q->rel_rc, q->t2);
                    }
                    if (q->acq_rc != 0)
                        continue;
                    g->acquired++;
                    g->lost_holds += q->rel_rc == DLOCK_ELOST || q->rel_rc == DLOCK_ENOTOWNER;
                    if (q->w0 && q->write_rc == 0) {
                        g->writes_ok++;
                        wr[nw].a = q->w0;
                        wr[nw].b = q->w1;
                        wr[nw].token = q->token;
                        wr[nw++].worker = q->worker;
                    } else if (q->w0) {
                        g->writes_refused++;
                    }
                    end = q->t0 + q->lease_ms < q->t2 ? q->t0 + q->lease_ms : q->t2;
                    if (end <= q->t1)
                        continue;
                    s[n].a = q->t1;
                    s[n].b = end;
                    s[n].token = q->token;
                    s[n++].worker = q->worker;
                }
            }
            g->two_owners += overlaps(s, n, k == NEM_SEMAPHORE ? NEM_SEM_PERMITS : 1, grp, k);
        }
        g->stale += stale_writes(wr, nw, grp);
    }
    /* recovery: from each fault to the first acquisition begun after it */
    for (i = 0; i < nfaults; i++) {
        int64_t first = -1;
        if (f[i].kind == NEM_F_PAUSE_HOLDER)
            continue;
        for (w = 0; w < nworkers; w++) {
            const nem_slot *sl = &slots[w];
            long j;
            if (sl->group != f[i].group &&
                !(f[i].group == NEM_SENTINEL_SYNC && sl->group == NEM_SENTINEL_ASYNC))
                continue;
            for (j = 0; j < sl->nrec; j++)
                if (sl->rec[j].t0 >= f[i].t0 && sl->rec[j].acq_rc == 0 &&
                    (first < 0 || sl->rec[j].t1 < first))
                    first = sl->rec[j].t1;
        }
        k = FI(f[i].group, f[i].kind);
        if (first >= 0 && r->nrec_ms[k] < NEM_MAX_FAULTS)
            r->rec_ms[k][r->nrec_ms[k]++] = first - f[i].t0;
    }
    free(s);
    free(wr);
}

/* ---- the report ------------------------------------------------------------ */

static int asserted_two_owners(int grp)
{
    return grp == NEM_SENTINEL_SYNC || grp == NEM_REDLOCK5;
}

static int asserted_stale(int grp)
{
    return grp != NEM_SENTINEL_ASYNC;
}

static int cmp64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static void json_line(json_t *j)
{
    char *t = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (t != NULL)
        printf("%s\n", t);
    free(t);
    json_decref(j);
}

static long group_asserted(const gstat *g, int grp)
{
    return (asserted_two_owners(grp) ? g->two_owners : 0) +
           (asserted_stale(grp) ? g->stale : 0) + g->over_budget + g->leftover_no_ttl +
           g->leftover_queue;
}

static void recovery(nem_report *r, int k, int64_t *med, int64_t *max)
{
    int n = r->nrec_ms[k];
    *med = *max = -1;
    if (n > 0) {
        qsort(r->rec_ms[k], (size_t)n, sizeof(int64_t), cmp64);
        *med = r->rec_ms[k][n / 2];
        *max = r->rec_ms[k][n - 1];
    }
}

long nem_report_print(nem_report *r)
{
    long asserted = 0, ops = 0, nfaults = 0;
    int64_t worst = 0, med, max;
    int grp, k;

    printf("\nnemesis: seed %u, %d s under faults\n", r->seed, r->seconds);
    printf("%-15s %7s %7s %6s %6s %5s %10s %10s %8s %10s %9s\n", "group", "ops", "held",
           "writes", "refusd", "lost", "two_owners", "stale_tok", "over_bgt", "worst_ms",
           "leftover");
    for (grp = 0; grp < NEM_NGROUPS; grp++) {
        gstat *g = &r->g[grp];
        if (!g->used)
            continue;
        asserted += group_asserted(g, grp);
        ops += g->ops;
        if (g->worst_overrun > worst)
            worst = g->worst_overrun;
        printf("%-15s %7ld %7ld %6ld %6ld %5ld %9ld%s %9ld%s %8ld %10lld %9ld\n",
               group_names[grp], g->ops, g->acquired, g->writes_ok, g->writes_refused,
               g->lost_holds, g->two_owners, asserted_two_owners(grp) ? "!" : "r", g->stale,
               asserted_stale(grp) ? "!" : "r", g->over_budget, (long long)g->worst_overrun,
               g->leftover_no_ttl + g->leftover_queue);
    }
    printf("(! asserted, r reported only; over_bgt: calls past their budget + %d ms; "
           "worst_ms: the worst time past a budget)\n",
           NEM_ROUND_TRIP_MS);
    if (r->leftover_example[0])
        printf("left behind, e.g. %s\n", r->leftover_example);
    for (grp = 0; grp < NEM_NGROUPS; grp++)
        if (r->g[grp].dropped > 0)
            printf("%s: %ld operations past the history's capacity were not checked\n",
                   group_names[grp], r->g[grp].dropped);
    printf("%-9s %-16s %6s %12s %12s\n", "topology", "fault", "count", "recov_med_ms",
           "recov_max_ms");
    for (k = 0; k < NEM_NGROUPS * NEM_NFAULTS; k++) {
        nfaults += r->faults[k];
        if (r->faults[k] == 0)
            continue;
        recovery(r, k, &med, &max);
        if (med < 0)
            printf("%-9s %-16s %6ld %12s %12s\n", topology_names[k / NEM_NFAULTS],
                   fault_names[k % NEM_NFAULTS], r->faults[k], "-", "-");
        else
            printf("%-9s %-16s %6ld %12lld %12lld\n", topology_names[k / NEM_NFAULTS],
                   fault_names[k % NEM_NFAULTS], r->faults[k], (long long)med,
                   (long long)max);
    }
    for (grp = 0; grp < NEM_NGROUPS; grp++) {
        gstat *g = &r->g[grp];
        if (!g->used)
            continue;
        json_line(json_pack(
            "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:{s:I, s:b, s:I, s:b, s:I, s:I, s:I},"
            " s:I, s:I}",
            "nemesis", "group", "group", group_names[grp], "operations", (json_int_t)g->ops,
            "acquired", (json_int_t)g->acquired, "writes_accepted", (json_int_t)g->writes_ok,
            "writes_refused", (json_int_t)g->writes_refused, "lost_holds",
            (json_int_t)g->lost_holds, "paused_operations", (json_int_t)g->paused_ops,
            "violations", "two_owners", (json_int_t)g->two_owners, "two_owners_asserted",
            asserted_two_owners(grp), "stale_token", (json_int_t)g->stale,
            "stale_token_asserted", asserted_stale(grp), "over_budget",
            (json_int_t)g->over_budget, "keys_without_expiry", (json_int_t)g->leftover_no_ttl,
            "queue_entries_left", (json_int_t)g->leftover_queue, "worst_budget_overrun_ms",
            (json_int_t)g->worst_overrun, "asserted_violations",
            (json_int_t)group_asserted(g, grp)));
    }
    for (k = 0; k < NEM_NGROUPS * NEM_NFAULTS; k++) {
        if (r->faults[k] == 0)
            continue;
        recovery(r, k, &med, &max);
        /* null: no recovery measured (a paused holder blocks nobody) */
        json_line(json_pack("{s:s, s:s, s:s, s:I, s:I, s:o, s:o}", "nemesis", "fault",
                            "topology", topology_names[k / NEM_NFAULTS], "fault",
                            fault_names[k % NEM_NFAULTS], "injected",
                            (json_int_t)r->faults[k], "recovered",
                            (json_int_t)r->nrec_ms[k], "recovery_median_ms",
                            med < 0 ? json_null() : json_integer(med), "recovery_max_ms",
                            max < 0 ? json_null() : json_integer(max)));
    }
    json_line(json_pack("{s:s, s:I, s:i, s:I, s:I, s:I, s:I}", "nemesis", "summary", "seed",
                        (json_int_t)r->seed, "seconds", r->seconds, "operations",
                        (json_int_t)ops, "faults", (json_int_t)nfaults,
                        "worst_budget_overrun_ms", (json_int_t)worst,
                        "asserted_violations", (json_int_t)asserted));
    printf("nemesis: %ld operations, %ld faults, %ld asserted violations, worst budget "
           "overrun %lld ms: %s\n",
           ops, nfaults, asserted, (long long)worst, asserted ? "FAIL" : "ok");
    return asserted;
}

/* ---- the checker's own check ------------------------------------------------------ */

static void plant(nem_slot *s, int worker, int kind, int64_t t0, int64_t t1, int64_t t2,
                  int64_t lease, int64_t token, int64_t w0)
{
    nem_rec *q = &s->rec[s->nrec++];
    memset(q, 0, sizeof *q);
    q->worker = (int16_t)worker;
    q->group = NEM_SENTINEL_SYNC;
    q->kind = (int16_t)kind;
    q->t0 = t0;
    q->t1 = t1;
    q->t2 = t2;
    q->t3 = t2 + 1;
    q->lease_ms = lease;
    q->budget_ms = t1 - t0;
    q->call_budget_ms = 1000;
    q->token = token;
    if (w0) {
        q->w0 = w0;
        q->w1 = w0 + 5;
    }
}

int nem_check_self_test(void)
{
    nem_slot *s = calloc(3, sizeof *s);
    nem_report *r = nem_report_new(0, 0);
    const gstat *g;
    int ok;

    if (s == NULL || r == NULL) {
        free(s);
        nem_report_free(r);
        return -1;
    }
    s[0].group = s[1].group = s[2].group = NEM_SENTINEL_SYNC;
    /* two owners: worker 1 enters while worker 0's lease runs */
    plant(&s[0], 0, NEM_REENTRANT, 1000, 1010, 1500, 2000, 0, 0);
    plant(&s[1], 1, NEM_REENTRANT, 1100, 1200, 1300, 2000, 0, 0);
    /* not two owners: worker 0 paused past its lease (t0 + lease = 3500),
     * worker 1 enters after it */
    plant(&s[0], 0, NEM_FAIR, 3000, 3010, 9000, 500, 0, 0);
    plant(&s[1], 1, NEM_FAIR, 3600, 3610, 3700, 2000, 0, 0);
    /* semaphore: two inside is fine, a third is one too many */
    plant(&s[0], 0, NEM_SEMAPHORE, 5000, 5001, 5500, 2000, 0, 0);
    plant(&s[1], 1, NEM_SEMAPHORE, 5000, 5002, 5500, 2000, 0, 0);
    plant(&s[2], 2, NEM_SEMAPHORE, 5100, 5200, 5300, 2000, 0, 0);
    /* fenced: token 7 accepted, then token 6 accepted after it: stale;
     * then 8: fine */
    plant(&s[0], 0, NEM_FENCED, 7000, 7001, 7100, 2000, 7, 7050);
    plant(&s[1], 1, NEM_FENCED, 7200, 7201, 7300, 2000, 6, 7250);
    plant(&s[0], 0, NEM_FENCED, 7400, 7401, 7500, 2000, 8, 7450);
    /* a release past its budget + a round trip */
    s[0].rec[0].t3 = s[0].rec[0].t2 + 1000 + NEM_ROUND_TRIP_MS + 1;
    quiet = 1;
    nem_report_check(r, s, 3, NULL, 0);
    quiet = 0;
    shown = 0;
    g = &r->g[NEM_SENTINEL_SYNC];
    ok = g->two_owners == 2 && g->stale == 1 && g->over_budget == 1 && g->writes_ok == 3;
    if (!ok)
        fprintf(stderr, "nemesis: the checker missed planted violations: two_owners %ld "
                        "(2), stale %ld (1), over_budget %ld (1), writes %ld (3)\n",
                g->two_owners, g->stale, g->over_budget, g->writes_ok);
    free(s);
    nem_report_free(r);
    return ok ? 0 : -1;
}
