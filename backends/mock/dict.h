/*
 * dlock mock — a binary-safe string-keyed hash table (private).
 *
 * Chained buckets for O(1) lookups, plus an insertion-order list so that
 * iteration follows insertion order, as Redis does for small hashes (HGETALL,
 * HKEYS): this keeps the mock's replies identical to a real server's in the
 * differential tests. Not thread-safe: the store mutex covers every dict.
 */
#ifndef DLOCK_MOCK_DICT_H
#define DLOCK_MOCK_DICT_H

#include <stddef.h>
#include <stdint.h>

typedef struct dlock__dict_entry {
    struct dlock__dict_entry *chain;      /* next in the bucket */
    struct dlock__dict_entry *prev, *next; /* insertion order */
    uint64_t hash;
    void *val;
    size_t klen;
    char key[]; /* klen bytes + NUL */
} dlock__dict_entry;

typedef struct dlock__dict {
    dlock__dict_entry **buckets; /* NULL until the first insert */
    size_t nbuckets;             /* 0 or a power of two */
    /* A resize's old array (old_n buckets, 0: none; a power of two),
     * whose buckets below moved are empty: the rest move a few per
     * change (dict.c). */
    dlock__dict_entry **old;
    size_t old_n, moved;
    size_t size;
    dlock__dict_entry *head, *tail;
    void (*free_val)(void *val); /* may be NULL */
} dlock__dict;

void dlock__dict_init(dlock__dict *d, void (*free_val)(void *));
/* Frees every entry (and value); d is empty and reusable afterwards. */
void dlock__dict_clear(dlock__dict *d);

dlock__dict_entry *dlock__dict_find(const dlock__dict *d, const char *key,
                                    size_t klen);
/* Adds key, which must be absent. NULL when out of memory (val untouched). */
dlock__dict_entry *dlock__dict_add(dlock__dict *d, const char *key, size_t klen,
                                   void *val);
/* Unlinks and frees e and its value. */
void dlock__dict_remove(dlock__dict *d, dlock__dict_entry *e);
/* 1 if key was there (and is now gone), else 0. */
int dlock__dict_delete(dlock__dict *d, const char *key, size_t klen);

/* The chain of bucket i (i < nbuckets), for incremental sweeps. */
dlock__dict_entry *dlock__dict_bucket(const dlock__dict *d, size_t i);

uint64_t dlock__hash_bytes(const char *p, size_t len);

#endif /* DLOCK_MOCK_DICT_H */
