/*
 * dlock mock — the hash table behind the keyspace, hashes and sorted sets.
 */
#include "dict.h"

#include <stdlib.h>
#include <string.h>

#define DICT_MIN_BUCKETS 8

static uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t mix64(uint64_t x)
{
    /* The splitmix64 finaliser: full avalanche, so masking the low bits
     * for the bucket index is fine. */
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

/* Keys are short and not attacker-chosen (a test's lock names), so a fast
 * word-at-a-time hash is enough; no need for a keyed one. */
uint64_t dlock__hash_bytes(const char *p, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)len;
    uint64_t w;

    while (len >= 8) {
        memcpy(&w, p, 8);
        h = rotl64(h ^ (w * 0x87c37b91114253d5ULL), 31) * 0x4cf5ad432745937fULL;
        p += 8;
        len -= 8;
    }
    w = 0;
    if (len > 0)
        memcpy(&w, p, len);
    h ^= w * 0x87c37b91114253d5ULL;
    return mix64(h);
}

void dlock__dict_init(dlock__dict *d, void (*free_val)(void *))
{
    memset(d, 0, sizeof(*d));
    d->free_val = free_val;
}

static void free_entry(dlock__dict *d, dlock__dict_entry *e)
{
    if (d->free_val != NULL && e->val != NULL)
        d->free_val(e->val);
    free(e);
}

void dlock__dict_clear(dlock__dict *d)
{
    dlock__dict_entry *e = d->head, *next;

    while (e != NULL) {
        next = e->next;
        free_entry(d, e);
        e = next;
    }
    free(d->buckets);
    d->buckets = NULL;
    d->nbuckets = 0;
    d->size = 0;
    d->head = d->tail = NULL;
}

/* Rebuilds the bucket array at n buckets; keeps the old one on failure
 * (a fuller table is slower, not wrong). */
static void resize(dlock__dict *d, size_t n)
{
    dlock__dict_entry **b = calloc(n, sizeof(*b));
    dlock__dict_entry *e;

    if (b == NULL)
        return;
    for (e = d->head; e != NULL; e = e->next) {
        size_t i = (size_t)e->hash & (n - 1);

        e->chain = b[i];
        b[i] = e;
    }
    free(d->buckets);
    d->buckets = b;
    d->nbuckets = n;
}

dlock__dict_entry *dlock__dict_find(const dlock__dict *d, const char *key,
                                    size_t klen)
{
    uint64_t h;
    dlock__dict_entry *e;

    if (d->size == 0)
        return NULL;
    h = dlock__hash_bytes(key, klen);
    for (e = d->buckets[(size_t)h & (d->nbuckets - 1)]; e != NULL; e = e->chain)
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return e;
    return NULL;
}

dlock__dict_entry *dlock__dict_add(dlock__dict *d, const char *key, size_t klen,
                                   void *val)
{
    dlock__dict_entry *e;
    size_t i;

    if (klen > (size_t)-1 - sizeof(*e) - 1)
        return NULL;
    if (d->nbuckets == 0) {
        resize(d, DICT_MIN_BUCKETS);
        if (d->nbuckets == 0)
            return NULL;
    } else if (d->size >= d->nbuckets) {
        resize(d, d->nbuckets * 2);
    }
    e = malloc(sizeof(*e) + klen + 1);
    if (e == NULL)
        return NULL;
    e->hash = dlock__hash_bytes(key, klen);
    e->val = val;
    e->klen = klen;
    if (klen != 0)
        memcpy(e->key, key, klen);
    e->key[klen] = '\0';
    i = (size_t)e->hash & (d->nbuckets - 1);
    e->chain = d->buckets[i];
    d->buckets[i] = e;
    e->next = NULL;
    e->prev = d->tail;
    if (d->tail != NULL)
        d->tail->next = e;
    else
        d->head = e;
    d->tail = e;
    d->size++;
    return e;
}

void dlock__dict_remove(dlock__dict *d, dlock__dict_entry *e)
{
    dlock__dict_entry **pp = &d->buckets[(size_t)e->hash & (d->nbuckets - 1)];

    while (*pp != e)
        pp = &(*pp)->chain;
    *pp = e->chain;
    if (e->prev != NULL)
        e->prev->next = e->next;
    else
        d->head = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    else
        d->tail = e->prev;
    d->size--;
    free_entry(d, e);
    /* Shrink so that a hash that once held many fields (or a keyspace after
     * a burst) does not keep a large bucket array forever. */
    if (d->nbuckets > DICT_MIN_BUCKETS && d->size < d->nbuckets / 8) {
        resize(d, d->nbuckets / 2);
    }
}

int dlock__dict_delete(dlock__dict *d, const char *key, size_t klen)
{
    dlock__dict_entry *e = dlock__dict_find(d, key, klen);

    if (e == NULL)
        return 0;
    dlock__dict_remove(d, e);
    return 1;
}

dlock__dict_entry *dlock__dict_bucket(const dlock__dict *d, size_t i)
{
    return i < d->nbuckets ? d->buckets[i] : NULL;
}
