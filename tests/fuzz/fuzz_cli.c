/*
 * libFuzzer target: the dlock tool's duration and count parsers
 * (cli/duration.c, compiled in: the tool is not a library). The first
 * byte picks the parser, the rest is the argument as typed. Oracle: a
 * duration read is 0..DLOCK_TIME_MAX_MS, printed back
 * (cli_format_duration) it reads as the same value; a count read is
 * within the bounds asked, written in plain digits; a refusal always
 * says why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char arg[256], err[256], back[64];
    int64_t v = -1, again = -1;
    size_t n;

    if (size < 1 || size > sizeof arg)
        return 0;
    n = size - 1;
    memcpy(arg, data + 1, n);
    arg[n] = '\0';
    err[0] = '\0';
    if (data[0] & 1) {
        if (cli_parse_duration(arg, &v, err, sizeof err) == 0) {
            if (v < 0 || v > DLOCK_TIME_MAX_MS)
                abort();
            cli_format_duration(v, back, sizeof back);
            if (cli_parse_duration(back, &again, err, sizeof err) != 0 || again != v)
                abort();
        } else if (!err[0]) {
            abort();
        }
    } else {
        static const int64_t bounds[][2] = {{0, 1000}, {1, INT64_MAX}, {0, DLOCK_TIME_MAX_MS}};
        const int64_t *b = bounds[(data[0] >> 1) % 3];
        if (cli_parse_count(arg, b[0], b[1], &v, err, sizeof err) == 0) {
            size_t i;
            if (v < b[0] || v > b[1] || !arg[0])
                abort();
            for (i = 0; arg[i]; i++)
                if (arg[i] < '0' || arg[i] > '9')
                    abort();
        } else if (!err[0]) {
            abort();
        }
    }
    return 0;
}
