/*
 * Redis backend (private): the Redis Cluster hash slot of a key.
 *
 * CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the key, modulo
 * 16384; when the key holds a '{' followed later by a '}' with at least
 * one byte between them, only the bytes between the first '{' and the
 * first '}' after it are hashed (the hash tag), so "P:{N}" and "{N}:S"
 * share N's slot. Pure function; any thread.
 */
#ifndef DLOCK_REDIS_SLOT_H
#define DLOCK_REDIS_SLOT_H

#include <stddef.h>

#define DLOCK__REDIS_SLOTS 16384

unsigned dlock__redis_key_slot(const char *key, size_t len);

#endif /* DLOCK_REDIS_SLOT_H */
