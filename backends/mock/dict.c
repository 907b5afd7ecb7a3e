/*
 * dlock mock — the hash table behind the keyspace, hashes and sorted sets.
 */
#include "dict.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define DICT_MIN_BUCKETS 8
/* The old buckets a resize moves per insertion or removal: done long
 * before the next resize (which comes after at least a quarter as many
 * changes as old buckets). */
#define MOVE_PER_CHANGE 8
/* From this size (bytes) a bucket array is mapped (table_new). */
#define BIG_TABLE (64 * 1024)

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

/* A bucket array of n buckets, zeroed. A large one is mapped, not taken
 * from malloc's heap: freeing a heap block of 64 kB or more (a keyspace
 * shrinking after a burst) makes glibc consolidate every small block freed
 * since its last look, a hundred milliseconds in one command after 100 000
 * operations. */
static dlock__dict_entry **table_new(size_t n)
{
    void *p;

    if (n * sizeof(dlock__dict_entry *) < BIG_TABLE)
        return calloc(n, sizeof(dlock__dict_entry *));
    p = mmap(NULL, n * sizeof(dlock__dict_entry *), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void table_free(dlock__dict_entry **b, size_t n)
{
    if (!b)
        return;
    if (n * sizeof(*b) < BIG_TABLE)
        free(b);
    else
        munmap(b, n * sizeof(*b));
}

void dlock__dict_clear(dlock__dict *d)
{
    dlock__dict_entry *e = d->head, *next;

    while (e != NULL) {
        next = e->next;
        free_entry(d, e);
        e = next;
    }
    table_free(d->buckets, d->nbuckets);
    table_free(d->old, d->old_n);
    d->buckets = d->old = NULL;
    d->nbuckets = d->old_n = d->moved = 0;
    d->size = 0;
    d->head = d->tail = NULL;
}

/* Moves the entries of up to n old buckets to the current array; the old
 * array goes once empty. A resize costs each later insertion or removal a
 * few buckets' moves, never one command the whole table (a keyspace of
 * 100 000 keys would hold the store for milliseconds). */
static void move_some(dlock__dict *d, size_t n)
{
    while (d->old_n && n-- > 0) {
        dlock__dict_entry *e, *next;

        for (e = d->old[d->moved]; e != NULL; e = next) {
            size_t i = (size_t)e->hash & (d->nbuckets - 1);

            next = e->chain;
            e->chain = d->buckets[i];
            d->buckets[i] = e;
        }
        d->old[d->moved++] = NULL;
        if (d->moved == d->old_n) {
            table_free(d->old, d->old_n);
            d->old = NULL;
            d->old_n = d->moved = 0;
        }
    }
}

/* Starts moving to a bucket array of n buckets (a resize still moving
 * ends first); keeps the current one on failure (a fuller table is
 * slower, not wrong). */
static void resize(dlock__dict *d, size_t n)
{
    dlock__dict_entry **b;

    move_some(d, SIZE_MAX);
    if ((b = table_new(n)) == NULL)
        return;
    if (d->nbuckets == 0) {
        d->buckets = b;
        d->nbuckets = n;
        return;
    }
    d->old = d->buckets;
    d->old_n = d->nbuckets;
    d->moved = 0;
    d->buckets = b;
    d->nbuckets = n;
}

/* The slot of e's bucket chain that holds it: in the old array while
 * its bucket has not moved yet. */
static dlock__dict_entry **chain_of(const dlock__dict *d, uint64_t hash)
{
    if (d->old_n) {
        size_t i = (size_t)hash & (d->old_n - 1);

        if (i >= d->moved)
            return &d->old[i];
    }
    return &d->buckets[(size_t)hash & (d->nbuckets - 1)];
}

dlock__dict_entry *dlock__dict_find(const dlock__dict *d, const char *key,
                                    size_t klen)
{
    uint64_t h;
    dlock__dict_entry *e;

    if (d->size == 0)
        return NULL;
    h = dlock__hash_bytes(key, klen);
    for (e = *chain_of(d, h); e != NULL; e = e->chain)
        if (e->hash == h && e->klen == klen && memcmp(e->key, key, klen) == 0)
            return e;
    return NULL;
}

dlock__dict_entry *dlock__dict_add(dlock__dict *d, const char *key, size_t klen,
                                   void *val)
{
    dlock__dict_entry *e, **chain;

    if (klen > (size_t)-1 - sizeof(*e) - 1)
        return NULL;
    move_some(d, MOVE_PER_CHANGE);
    if (d->nbuckets == 0) {
        resize(d, DICT_MIN_BUCKETS);
        if (d->nbuckets == 0)
            return NULL;
    } else if (d->size >= d->nbuckets && !d->old_n) {
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
    chain = chain_of(d, e->hash);
    e->chain = *chain;
    *chain = e;
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
    dlock__dict_entry **pp;

    move_some(d, MOVE_PER_CHANGE);
    pp = chain_of(d, e->hash);
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
    if (d->nbuckets > DICT_MIN_BUCKETS && d->size < d->nbuckets / 8 && !d->old_n)
        resize(d, d->nbuckets / 2);
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
    /* (while a resize moves, the old array's entries come as they move) */
    return i < d->nbuckets ? d->buckets[i] : NULL;
}
