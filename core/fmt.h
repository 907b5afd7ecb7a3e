/*
 * dlock — decimal integers for the per-call path.
 *
 * Every lock call formats a few integers (the lease, the owner's thread
 * number, a script's key count): snprintf costs several hundred
 * instructions each, a fifth of a lock+unlock pair's client work. These
 * write the digits directly. Not for text a user reads: use snprintf there.
 */
#ifndef DLOCK_CORE_FMT_H
#define DLOCK_CORE_FMT_H

#include <stddef.h>
#include <stdint.h>

/* Room for any int64_t or uint64_t in decimal, with a sign and the NUL. */
#define DLOCK__FMT_INT_SIZE 21

/* Writes v in decimal and a NUL at buf, which has DLOCK__FMT_INT_SIZE
 * bytes; returns the number of characters before the NUL. */
static inline size_t dlock__fmt_u64(char *buf, uint64_t v)
{
    char tmp[20];
    size_t n = 0, i;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++)
        buf[i] = tmp[n - 1 - i];
    buf[n] = '\0';
    return n;
}

/* As dlock__fmt_u64, with a leading '-' for a negative v (INT64_MIN too). */
static inline size_t dlock__fmt_i64(char *buf, int64_t v)
{
    if (v >= 0)
        return dlock__fmt_u64(buf, (uint64_t)v);
    buf[0] = '-';
    return 1 + dlock__fmt_u64(buf + 1, (uint64_t)0 - (uint64_t)v);
}

#endif /* DLOCK_CORE_FMT_H */
