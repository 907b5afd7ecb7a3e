/*
 * dlock_sim: the deterministic simulation (make simulate; tests/sim/).
 *
 *   dlock_sim [--seed N] [--seeds K | --seconds S] [--ops N] [options]
 *
 * Runs seeds N, N+1, ... (K of them, or for S seconds of CPU time), each a
 * whole run (tests/sim/world.c) checked by every checker (check.c). Every
 * 16th seed, and every seed given alone, runs twice and the two histories
 * must hash alike. A failing seed prints the violations, the end of its
 * history and the command that replays it, then shrinks: fewer clients,
 * owners, operations, fault kinds and object types, for as long as it
 * still fails, and prints the smallest schedule found.
 *
 *   --clients N, --owners N, --types MASK, --faults MASK, --no-pauses
 *        override what the seed chose (the shrinker's replay line uses them)
 *   --history FILE   write the last run's history, one line per event
 *   --trace          print the whole history of each run
 *   --self-test      plant each bug the checkers exist for; each must be
 *                    caught (exit 1 otherwise)
 *   --no-shrink
 *   --seed-cpu S     a run still going after S CPU seconds (default 60; 0:
 *                    no bound) fails as a timeout, with its replay line, as
 *                    does one whose workload outlasts its virtual bound
 *                    (sim.h: SIM_VIRTUAL_*); a timeout is not shrunk
 *   --plant N        run with planted bug N (SIM_PLANT_*: 1, 2, 7, 8, 10, 12: the
 *                    ones made in the run): shows a failure, its report
 *                    and its shrinking
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/sim/sim.h"

#define DEFAULT_OPS 2000

/* Which fault kinds --faults keeps, one bit each, in this order: refused
 * calls, lost requests, lost replies, late requests, dropped, duplicated
 * and delayed messages, client pauses, a failover, clock skew. */
enum { F_REFUSE, F_LOSE_REQ, F_LOSE_REPLY, F_LATE, F_DROP, F_DUP, F_DELAY, F_PAUSE, F_FAILOVER,
       F_SKEW, F_KINDS };

typedef struct overrides {
    int clients, owners;
    long long types, faults;
    long long ops;
} overrides;

static int *rate_of(sim_config *c, int k)
{
    switch (k) {
    case F_REFUSE: return &c->rates.refuse;
    case F_LOSE_REQ: return &c->rates.lose_request;
    case F_LOSE_REPLY: return &c->rates.lose_reply;
    case F_LATE: return &c->rates.late;
    case F_DROP: return &c->rates.msg_drop;
    case F_DUP: return &c->rates.msg_dup;
    case F_DELAY: return &c->rates.msg_delay;
    case F_PAUSE: return &c->pause_rate;
    case F_FAILOVER: return &c->failover;
    default: return &c->skew;
    }
}

void sim_config_from_seed(sim_config *c, uint64_t seed, int64_t ops)
{
    sim_rng r = {seed * 0x2545f4914f6cdd1dULL + 1};
    int k;

    memset(c, 0, sizeof(*c));
    c->seed = seed;
    c->clients = (int)sim_rng_range(&r, 2, 5);
    c->owners = (int)sim_rng_range(&r, 1, 3);
    c->ops = ops;
    c->types = SIM_T_DEFAULT;
    /* each kind off, rare or frequent: schedules with one fault kind
     * alone are as likely as storms of all of them */
    for (k = 0; k < F_KINDS; k++) {
        static const int lo[F_KINDS] = {20, 20, 20, 20, 100, 100, 100, 5, 1, 1000};
        static const int hi[F_KINDS] = {300, 300, 300, 300, 2000, 2000, 2000, 60, 1, 5000};
        int64_t pick = sim_rng_range(&r, 0, 2);

        *rate_of(c, k) = pick == 0 ? 0 : pick == 1 ? lo[k] : hi[k];
    }
    c->rates.late_max_ms = 500;
    c->rates.msg_delay_max_ms = 300;
    /* two thirds of the seeds fail over (above), half of those with
     * synced writes */
    c->failover_permille = (int)sim_rng_range(&r, 250, 750);
    c->rates.failover_sync = (int)sim_rng_range(&r, 0, 1);
    c->rates.repl_lag_max_ms = 200;
    c->pause_max_ms = 6000;
}

static void apply(sim_config *c, const overrides *o)
{
    int k;

    if (o->clients)
        c->clients = o->clients;
    if (o->owners)
        c->owners = o->owners;
    if (o->types >= 0)
        c->types = (uint32_t)o->types;
    if (o->faults >= 0)
        for (k = 0; k < F_KINDS; k++)
            if (!(o->faults & (1LL << k)))
                *rate_of(c, k) = 0;
}

static const char *check_names(int failed, char *buf, size_t len)
{
    static const char *const names[] = {"exclusion", "fencing", "permits", "fair-order",
                                        "liveness", "expiry", "callbacks", "latch", "timeout",
                                        "lost"};
    size_t i, off = 0;

    buf[0] = '\0';
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (failed & (1 << i))
            off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i]);
    return buf;
}

static void print_tail(const sim_history *h, size_t lines)
{
    char line[256];
    size_t i = h->n > lines ? h->n - lines : 0;

    fprintf(stderr, "sim: the history's last %zu events:\n", h->n - i);
    for (; i < h->n; i++) {
        sim_event_render(h, &h->ev[i], line, sizeof(line));
        fprintf(stderr, "    %s\n", line);
    }
}

static int write_history(const sim_history *h, const char *path)
{
    FILE *f = fopen(path, "w");
    char line[256];
    size_t i;

    if (!f)
        return -1;
    for (i = 0; i < h->n; i++) {
        sim_event_render(h, &h->ev[i], line, sizeof(line));
        fprintf(f, "%s\n", line);
    }
    return fclose(f);
}

static long long faults_mask(const sim_config *c)
{
    long long m = 0;
    int k;

    for (k = 0; k < F_KINDS; k++)
        if (*rate_of((sim_config *)c, k))
            m |= 1LL << k;
    return m;
}

/* The command that replays c, overrides included. */
static void print_replay(const sim_config *c)
{
    fprintf(stderr,
            "sim: replay: make simulate SEED=%llu SIM_ARGS=\"--clients %d --owners %d "
            "--ops %lld --types 0x%x --faults 0x%llx",
            (unsigned long long)c->seed, c->clients, c->owners, (long long)c->ops,
            c->types, faults_mask(c));
    if (c->plant)
        fprintf(stderr, " --plant %d", c->plant);
    fprintf(stderr, "\"\n");
}

/* Runs c and checks it: the failed checkers' bits. */
static int run_checked(const sim_config *c, int verbose, sim_history *h)
{
    if (sim_run(c, h) != 0)
        return -1;
    return sim_check(h, verbose);
}

/* The run that c's replay line (print_replay) makes: built from the
 * seed again, with the line's overrides. */
static void replay_config(const sim_config *c, sim_config *out)
{
    overrides o = {c->clients, c->owners, (long long)c->types, faults_mask(c), c->ops};

    sim_config_from_seed(out, c->seed, c->ops);
    apply(out, &o);
    out->plant = c->plant;
}

/* Fewer of everything while it still fails; prints the smallest, and
 * checks that its replay line fails alike. */
static void shrink(sim_config c, int failed)
{
    int progress = 1, k, tries = 0;
    char names[128];

    fprintf(stderr, "sim: shrinking seed %llu ...\n", (unsigned long long)c.seed);
    while (progress && tries < 200) {
        sim_config t;
        sim_history h;
        int f;

        progress = 0;
        for (k = 0; k < 5 + F_KINDS + SIM_T_KINDS && !progress; k++) {
            t = c;
            if (k == 0 && t.clients > 1)
                t.clients--;
            else if (k == 1 && t.owners > 1)
                t.owners--;
            else if (k == 2 && t.ops > 4)
                t.ops /= 2;
            else if (k == 3 && t.ops > 4)
                t.ops -= t.ops / 4;
            else if (k >= 5 && k < 5 + F_KINDS && *rate_of(&t, k - 5))
                *rate_of(&t, k - 5) = 0;
            else if (k >= 5 + F_KINDS && (t.types & (1u << (k - 5 - F_KINDS))) &&
                     (t.types & ~(1u << (k - 5 - F_KINDS))))
                t.types &= ~(1u << (k - 5 - F_KINDS));
            else
                continue;
            tries++;
            f = run_checked(&t, 0, &h);
            sim_history_free(&h);
            if (f > 0 && (f & failed)) {
                c = t;
                progress = 1;
            }
        }
    }
    fprintf(stderr,
            "sim: smallest failing schedule (%s): seed %llu, %d client(s), %d owner(s), "
            "%lld operations, types 0x%x, faults 0x%llx\n",
            check_names(failed, names, sizeof(names)), (unsigned long long)c.seed,
            c.clients, c.owners, (long long)c.ops, c.types, faults_mask(&c));
    print_replay(&c);
    {
        sim_config r;
        sim_history h;
        int f;

        replay_config(&c, &r);
        f = run_checked(&r, 0, &h);
        sim_history_free(&h);
        if (!(f > 0 && (f & failed)))
            fprintf(stderr, "sim: the replay line above does NOT fail alike (a defect of the "
                            "simulator: the run depends on more than its line)\n");
    }
}

static const char *const plant_names[SIM_PLANT_COUNT] = {
    "none", "busy lock granted", "fencing token too low", "semaphore over-granted",
    "fair grant out of order", "callback twice", "callback past budget",
    "key without expiry", "lock stuck forever", "permit over-granted",
    "permit count lowered", "latch opened early", "workload never ends",
    "lost hold unreported"};
static const int plant_catches[SIM_PLANT_COUNT] = {
    0, SIM_CHECK_EXCLUSION, SIM_CHECK_FENCING, SIM_CHECK_PERMITS, SIM_CHECK_FAIR,
    SIM_CHECK_CALLBACK, SIM_CHECK_CALLBACK, SIM_CHECK_EXPIRY, SIM_CHECK_LIVENESS,
    SIM_CHECK_PERMITS, SIM_CHECK_PERMITS, SIM_CHECK_LATCH, SIM_CHECK_TIMEOUT,
    SIM_CHECK_LOST};

/* Whether planted bug p is made in the run (the fault backend, the
 * store), rather than on its history (sim_plant_history). */
static int planted_in_run(int p)
{
    return p == SIM_PLANT_GRANT_BUSY || p == SIM_PLANT_TOKEN_LOW || p == SIM_PLANT_NO_EXPIRY ||
           p == SIM_PLANT_STUCK || p == SIM_PLANT_PERMIT_LEAK || p == SIM_PLANT_ENDLESS;
}

/* Each planted bug must be caught by its checker on some seed of the
 * first 50 that passes without it (most are on the first). */
static int self_test(int64_t ops)
{
    int p, bad = 0;

    for (p = 1; p < SIM_PLANT_COUNT; p++) {
        uint64_t seed;
        int caught = 0;

        for (seed = 1; seed <= 50 && !caught; seed++) {
            sim_config c;
            sim_history h;
            int f;

            sim_config_from_seed(&c, seed, ops);
            /* the seed passes without the bug */
            if (sim_run(&c, &h) != 0)
                return 1;
            f = sim_check(&h, 0);
            sim_history_free(&h);
            if (f != 0)
                continue;
            c.plant = p;
            if (sim_run(&c, &h) != 0)
                return 1;
            if (!planted_in_run(p) && sim_plant_history(&h, p) != 0) {
                sim_history_free(&h);
                continue;
            }
            f = sim_check(&h, 0);
            caught = f > 0 && (f & plant_catches[p]);
            sim_history_free(&h);
            if (caught)
                printf("sim: self-test: %-26s caught (seed %llu)\n", plant_names[p],
                       (unsigned long long)seed);
        }
        if (!caught) {
            printf("sim: self-test: %-26s NOT caught\n", plant_names[p]);
            bad = 1;
        }
    }
    return bad;
}

static double cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long long count_ops(const sim_history *h)
{
    long long n = 0;
    size_t i;

    for (i = 0; i < h->n; i++)
        n += h->ev[i].kind == SIM_EV_START;
    return n;
}

int main(int argc, char **argv)
{
    unsigned long long seed = 1, seeds = 0;
    double seconds = 0, t0, seed_cpu = 60;
    long long ops = DEFAULT_OPS, total_ops = 0, total_faults = 0, runs = 0;
    long long total_reported = 0;
    overrides ov = {0, 0, -1, -1, 0};
    const char *history = NULL;
    int trace = 0, selftest = 0, noshrink = 0, failed_seeds = 0, plant = 0, i;
    unsigned long long s;

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--seed") && v)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--seeds") && v)
            seeds = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(a, "--seconds") && v)
            seconds = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--seed-cpu") && v)
            seed_cpu = strtod(argv[++i], NULL);
        else if (!strcmp(a, "--ops") && v)
            ops = strtoll(argv[++i], NULL, 0);
        else if (!strcmp(a, "--clients") && v)
            ov.clients = atoi(argv[++i]);
        else if (!strcmp(a, "--owners") && v)
            ov.owners = atoi(argv[++i]);
        else if (!strcmp(a, "--types") && v)
            ov.types = strtoll(argv[++i], NULL, 0);
        else if (!strcmp(a, "--faults") && v)
            ov.faults = strtoll(argv[++i], NULL, 0);
        else if (!strcmp(a, "--no-pauses"))
            ov.faults = (ov.faults < 0 ? (1LL << F_KINDS) - 1 : ov.faults) &
                        ~(1LL << F_PAUSE);
        else if (!strcmp(a, "--history") && v)
            history = argv[++i];
        else if (!strcmp(a, "--trace"))
            trace = 1;
        else if (!strcmp(a, "--self-test"))
            selftest = 1;
        else if (!strcmp(a, "--no-shrink"))
            noshrink = 1;
        else if (!strcmp(a, "--plant") && v)
            plant = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: dlock_sim [--seed N] [--seeds K | --seconds S] "
                            "[--ops N] [--clients N] [--owners N] [--types MASK] "
                            "[--faults MASK] [--no-pauses] [--history FILE] [--trace] "
                            "[--self-test] [--no-shrink] [--seed-cpu S] [--plant N]\n");
            return 2;
        }
    }
    if (ov.clients < 0 || ov.clients > SIM_MAX_CLIENTS || ov.owners < 0 ||
        ov.owners > SIM_MAX_OWNERS || ops < 1 || (ov.types >= 0 && !(ov.types & SIM_T_ALL))) {
        fprintf(stderr, "dlock_sim: --clients 1..%d, --owners 1..%d, --ops >= 1, "
                        "--types a non-empty mask of 0x%x\n",
                SIM_MAX_CLIENTS, SIM_MAX_OWNERS, SIM_T_ALL);
        return 2;
    }
    if (ov.types >= 0)
        ov.types &= SIM_T_ALL;
    if (selftest)
        return self_test(ops);
    if (seeds == 0 && seconds <= 0)
        seeds = 1;
    t0 = cpu_seconds();
    for (s = seed;; s++) {
        sim_config c;
        sim_history h, again;
        int failed;

        if (seeds ? s - seed >= seeds : cpu_seconds() - t0 >= seconds)
            break;
        sim_config_from_seed(&c, s, ops);
        apply(&c, &ov);
        if (planted_in_run(plant))
            c.plant = plant;
        c.cpu_limit_s = seed_cpu;
        failed = run_checked(&c, 1, &h);
        if (failed < 0)
            return 2;
        runs++;
        total_ops += count_ops(&h);
        total_faults += (long long)h.faults;
        total_reported += h.reported;
        if (trace)
            print_tail(&h, h.n);
        if (history && write_history(&h, history) != 0)
            fprintf(stderr, "sim: cannot write %s\n", history);
        if ((seeds == 1 || (s - seed) % 16 == 0) && !h.timed_out) {
            /* the same seed, the same history, byte for byte */
            if (sim_run(&c, &again) != 0)
                return 2;
            runs++;
            total_ops += count_ops(&again);
            if (again.hash != h.hash || again.n != h.n) {
                fprintf(stderr, "sim: seed %llu: two runs differ (%zu and %zu events)\n", s,
                        h.n, again.n);
                failed |= 1 << 30;
            }
            sim_history_free(&again);
        }
        if (failed) {
            char names[128];

            fprintf(stderr, "sim: seed %llu FAILED (%s)\n", s,
                    failed & (1 << 30) ? "determinism"
                                       : check_names(failed, names, sizeof(names)));
            print_tail(&h, 30);
            print_replay(&c);
            if (!noshrink && !(failed & ((1 << 30) | SIM_CHECK_TIMEOUT)))
                shrink(c, failed);
            failed_seeds++;
        }
        sim_history_free(&h);
        if (failed_seeds >= 3)
            break;
    }
    {
        double cpu = cpu_seconds() - t0;

        printf("sim: %lld run(s) from seed %llu: %lld operations, %lld faults, %d failed; "
               "%lld violation(s) reported where not promised (unsynced failover, fair "
               "order under clock skew); "
               "%.2f CPU s, %.0f operations per CPU second\n",
               runs, seed, total_ops, total_faults, failed_seeds, total_reported, cpu,
               cpu > 0 ? (double)total_ops / cpu : 0.0);
    }
    return failed_seeds ? 1 : 0;
}
