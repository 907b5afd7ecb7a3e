/*
 * Redis backend: the Redis Cluster hash slot of a key (see slot.h).
 */
#include "slot.h"

#include <stdint.h>

/* Bitwise CRC16-XMODEM: a key is a few dozen bytes, and this runs once
 * per call next to a network round trip, so a table buys nothing. */
static uint16_t crc16(const unsigned char *p, size_t n)
{
    uint16_t crc = 0;
    size_t i;
    int b;
    for (i = 0; i < n; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned dlock__redis_key_slot(const char *key, size_t len)
{
    const unsigned char *k = (const unsigned char *)key;
    size_t open, close;

    for (open = 0; open < len && k[open] != '{'; open++)
        ;
    for (close = open + 1; open < len && close < len && k[close] != '}';
         close++)
        ;
    if (open < len && close < len && close > open + 1)
        return crc16(k + open + 1, close - open - 1) & (DLOCK__REDIS_SLOTS - 1);
    return crc16(k, len) & (DLOCK__REDIS_SLOTS - 1);
}
