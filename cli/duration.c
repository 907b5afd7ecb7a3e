/*
 * Durations and counts as written on the command line.
 *
 * Whole numbers only ("1.5s" is refused, "1500ms" says it): what a shell
 * script writes for a lock's wait or lease, with no rounding to explain.
 */
#include "cli.h"

#include <stdio.h>
#include <string.h>

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

int cli_parse_duration(const char *s, int64_t *out_ms, char *err, size_t errlen)
{
    static const struct { const char *unit; int64_t ms; } units[] = {
        {"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000},
    };
    int64_t v;
    int over;
    size_t n, i;

    n = read_digits(s, DLOCK_TIME_MAX_MS, &v, &over);
    for (i = 0; n > 0 && i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(s + n, units[i].unit) != 0)
            continue;
        if (over || v > DLOCK_TIME_MAX_MS / units[i].ms) {
            snprintf(err, errlen, "duration '%s' is too long (at most %lld ms)",
                     s, (long long)DLOCK_TIME_MAX_MS);
            return -1;
        }
        *out_ms = v * units[i].ms;
        return 0;
    }
    snprintf(err, errlen, "bad duration '%s': expected a whole number of "
             "milliseconds, or one followed by ms, s, m or h (500ms, 10s, 2m)", s);
    return -1;
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
