/*
 * dlock benchmarks — output: a readable table per figure, and one JSON line
 * per measured row so that results can be tracked over time. The JSON lines
 * are printed under their table and once more, all together, at the end.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define MAX_JSON_LINES 256

static char *json_lines[MAX_JSON_LINES];
static size_t njson;

void bench_heading(const char *title, const char *columns)
{
    size_t n = strlen(columns);

    printf("\n== %s\n%s\n", title, columns);
    while (n-- > 0)
        putchar('-');
    putchar('\n');
    fflush(stdout);
}

void bench_row(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static void append(bench_json *j, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void append(bench_json *j, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (j->len >= sizeof j->buf)
        return;
    va_start(ap, fmt);
    n = vsnprintf(j->buf + j->len, sizeof j->buf - j->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        j->len += (size_t)n;
    if (j->len >= sizeof j->buf)
        j->len = sizeof j->buf - 1;
}

/* Names and labels here are plain ASCII chosen by the program; only the
 * two characters JSON requires are escaped. */
static void append_string(bench_json *j, const char *s)
{
    append(j, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            append(j, "\\%c", *s);
        else
            append(j, "%c", *s);
    }
    append(j, "\"");
}

void bench_json_begin(bench_json *j, const char *bench)
{
    j->len = 0;
    j->buf[0] = '\0';
    append(j, "{\"bench\":");
    append_string(j, bench);
}

void bench_json_str(bench_json *j, const char *key, const char *value)
{
    append(j, ",");
    append_string(j, key);
    append(j, ":");
    if (value)
        append_string(j, value);
    else
        append(j, "null");
}

void bench_json_int(bench_json *j, const char *key, long long value)
{
    append(j, ",");
    append_string(j, key);
    append(j, ":%lld", value);
}

void bench_json_num(bench_json *j, const char *key, double value)
{
    append(j, ",");
    append_string(j, key);
    /* JSON has no NaN or infinity. */
    if (isfinite(value))
        append(j, ":%.6g", value);
    else
        append(j, ":null");
}

void bench_json_keep(const char *line)
{
    if (njson < MAX_JSON_LINES)
        json_lines[njson++] = strdup(line);
}

void bench_json_end(bench_json *j)
{
    append(j, "}");
    printf("%s\n", j->buf);
    fflush(stdout);
    bench_json_keep(j->buf);
}

void bench_json_print_all(void)
{
    size_t i;

    printf("\n== all figures as JSON lines\n");
    for (i = 0; i < njson; i++) {
        if (json_lines[i])
            printf("%s\n", json_lines[i]);
        free(json_lines[i]);
    }
    njson = 0;
    fflush(stdout);
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int64_t bench_quantile(int64_t *v, size_t n, double q)
{
    size_t k;

    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp64);
    k = (size_t)(q * (double)(n - 1) + 0.5);
    return v[k < n ? k : n - 1];
}

const char *bench_verdict(int applicable, int met)
{
    return !applicable ? "n/a" : met ? "met" : "MISSED";
}
