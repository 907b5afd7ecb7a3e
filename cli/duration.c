/*
 * Durations and counts as written on the command line.
 *
 * A duration reads as flock -w, timeout(1) and sleep(1) read theirs: a
 * bare number is seconds ("10", "1.5"); a number may carry a unit (ms, s,
 * m, h, d) and a fraction ("0.25s", "1.5h"); parts add up when each has a
 * unit, from the largest unit down, each unit once ("1h30m", "2m0.5s").
 * The result is whole milliseconds: a fraction finer than that ("0.0001s")
 * is refused rather than rounded, so that what runs is what was written.
 *
 * Durations are printed back (cli_format_duration) in the same form, so
 * every message gives a duration with its unit.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *unit;
    int64_t ms;
} units[] = {
    /* largest first: the order compounds must follow */
    {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1},
};
#define NUNITS (sizeof units / sizeof units[0])

/* Reads the leading digits of s into *v (saturating above limit).
 * Returns how many digits there were. */
static size_t read_digits(const char *s, int64_t limit, int64_t *v, int *over)
{
    size_t n = 0;

    *v = 0;
    *over = 0;
    for (; s[n] >= '0' && s[n] <= '9'; n++) {
        if (*v > (limit - (s[n] - '0')) / 10)
            *over = 1;
        else
            *v = *v * 10 + (s[n] - '0');
    }
    return n;
}

/* The unit at s (the longest match: "ms" before "m"), or -1. */
static int unit_at(const char *s, size_t *len)
{
    int best = -1;
    size_t i, best_len = 0;

    for (i = 0; i < NUNITS; i++) {
        size_t n = strlen(units[i].unit);
        if (n > best_len && strncmp(s, units[i].unit, n) == 0) {
            best = (int)i;
            best_len = n;
        }
    }
    *len = best_len;
    return best;
}

/* One part: digits, an optional fraction, an optional unit. Adds its
 * milliseconds to *total. Returns the characters read, 0 when s does not
 * start with a number, -1 for "too long", -2 for "finer than 1 ms". *unit
 * gets the unit's index, or -1 when there was none. */
static int read_part(const char *s, int64_t *total, int *unit)
{
    int64_t whole, frac = 0, scale = 1, ms;
    size_t n, f = 0, ulen = 0;
    int over;

    n = read_digits(s, DLOCK_TIME_MAX_MS, &whole, &over);
    if (s[n] == '.') {
        /* The fraction's digits, up to what can matter (6 digits is
         * finer than 1 ms for every unit but d, 8 covers d too); any
         * further digit must be 0. */
        for (f = 1; s[n + f] >= '0' && s[n + f] <= '9'; f++) {
            if (scale < 100000000) {
                frac = frac * 10 + (s[n + f] - '0');
                scale *= 10;
            } else if (s[n + f] != '0') {
                return -2;
            }
        }
        if (f == 1 && n == 0)
            return 0; /* "." alone */
    }
    if (n == 0 && f == 0)
        return 0;
    *unit = unit_at(s + n + f, &ulen);
    ms = *unit < 0 ? 1000 : units[*unit].ms;
    if (over || whole > DLOCK_TIME_MAX_MS / ms)
        return -1;
    /* frac / scale of the unit, in whole ms (ms * frac fits: ms <= 8.64e7,
     * frac < 1e8) */
    if ((ms * frac) % scale != 0)
        return -2;
    if (whole * ms + (ms * frac) / scale > DLOCK_TIME_MAX_MS - *total)
        return -1;
    *total += whole * ms + (ms * frac) / scale;
    return (int)(n + f + ulen);
}

int cli_parse_duration(const char *s, int64_t *out_ms, char *err, size_t errlen)
{
    char max[64];
    int64_t total = 0;
    int parts = 0, last_unit = -1, unit, n;
    size_t at = 0;

    while (s[at] != '\0') {
        n = read_part(s + at, &total, &unit);
        if (n == -1) {
            cli_format_duration(DLOCK_TIME_MAX_MS, max, sizeof max);
            snprintf(err, errlen, "duration '%s' is too long (at most %s)", s, max);
            return -1;
        }
        if (n == -2) {
            snprintf(err, errlen, "duration '%s' is finer than a millisecond", s);
            return -1;
        }
        /* A part must be a number; in a compound every part has a unit,
         * each smaller than the one before. */
        if (n == 0 || (unit < 0 && (parts > 0 || s[at + (size_t)n] != '\0')) ||
            (parts > 0 && unit <= last_unit))
            goto bad;
        last_unit = unit;
        parts++;
        at += (size_t)n;
    }
    if (parts == 0)
        goto bad;
    *out_ms = total;
    return 0;
bad:
    snprintf(err, errlen, "bad duration '%s': expected seconds (10, 1.5) or numbers "
             "with units ms, s, m, h, d (500ms, 0.25s, 2m, 1h30m)", s);
    return -1;
}

void cli_format_duration(int64_t ms, char *buf, size_t len)
{
    size_t i, at = 0;

    buf[0] = '\0';
    if (ms < 0)
        ms = 0;
    if (ms < 1000) {
        snprintf(buf, len, "%lldms", (long long)ms);
        return;
    }
    /* d, h, m as whole parts; seconds with the milliseconds as a fraction
     * (trailing zeros dropped): 90061500 -> "1d1h1m1.5s" */
    for (i = 0; i + 2 < NUNITS && at < len; i++) {
        if (ms >= units[i].ms) {
            at += (size_t)snprintf(buf + at, len - at, "%lld%s",
                                   (long long)(ms / units[i].ms), units[i].unit);
            ms %= units[i].ms;
        }
    }
    if (ms > 0 && at < len) {
        char frac[8];
        size_t f;
        snprintf(frac, sizeof frac, "%03lld", (long long)(ms % 1000));
        for (f = 3; f > 0 && frac[f - 1] == '0'; f--)
            frac[f - 1] = '\0';
        snprintf(buf + at, len - at, "%lld%s%ss", (long long)(ms / 1000), f ? "." : "",
                 frac);
    }
}

int cli_parse_count(const char *s, int64_t lo, int64_t hi, int64_t *out,
                    char *err, size_t errlen)
{
    int64_t v;
    int over;
    size_t n = read_digits(s, hi, &v, &over);

    if (n == 0 || s[n] != '\0') {
        snprintf(err, errlen, "bad number '%s': expected a whole number from "
                 "%lld to %lld", s, (long long)lo, (long long)hi);
        return -1;
    }
    if (over || v < lo || v > hi) {
        snprintf(err, errlen, "number '%s' is out of range (%lld to %lld)", s,
                 (long long)lo, (long long)hi);
        return -1;
    }
    *out = v;
    return 0;
}
