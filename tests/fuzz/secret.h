/*
 * The fuzz targets' secret oracle (fuzz_url.c, fuzz_config.c,
 * fuzz_redisson_yaml.c): an input
 * is a recipe that puts a known secret, MARKER cut by odd bytes the
 * fuzzer chooses, in a place a secret goes (a URL's user information, a
 * sentinel_password...), with text the fuzzer chooses around it. Whatever
 * the bytes, no text the parser gives back (an error message, a parsed
 * URL's address) may hold any 4 bytes in a row of MARKER.
 *
 * A recipe, after the target's own leading bytes:
 *   k (mod 5), then k pairs (offset mod 17, byte): the bytes put into
 *   MARKER, each at its offset of MARKER (a NUL byte is dropped);
 *   then A, a NUL, B: the text before and after the place (B ends at the
 *   next NUL).
 * A or B holding 4 bytes of MARKER themselves would make a quote of them
 * look like a leak: such a recipe is parsed, but not judged.
 */
#ifndef DLOCK_FUZZ_SECRET_H
#define DLOCK_FUZZ_SECRET_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 16 bytes no message, field name or default holds any 4 of. */
#define MARKER "Qz7xKv3WjTq5Lm2P"
#define MARKER_LEN 16

typedef struct recipe {
    char secret[MARKER_LEN + 5]; /* MARKER with up to 4 bytes put in */
    const char *a, *b;           /* NUL-terminated, inside the copy */
    size_t alen, blen;
    int judged;                  /* 0: A or B holds a piece of MARKER */
    char *copy;                  /* free() it */
} recipe;

/* Whether s holds 4 bytes in a row of MARKER. */
static int holds_marker(const char *s)
{
    size_t i, n = s ? strlen(s) : 0;

    for (i = 0; i + 4 <= MARKER_LEN; i++)
        if (n >= 4 && memmem(s, n, &MARKER[i], 4))
            return 1;
    return 0;
}

/* Reads a recipe from data[0..size); 0, or -1 (too short, no memory). */
static int recipe_read(recipe *r, const uint8_t *data, size_t size)
{
    size_t k, i, len = MARKER_LEN, nul;
    const uint8_t *rest;

    memset(r, 0, sizeof(*r));
    if (size < 1)
        return -1;
    k = data[0] % 5;
    if (size < 1 + 2 * k)
        return -1;
    memcpy(r->secret, MARKER, MARKER_LEN + 1);
    for (i = 0; i < k; i++) {
        size_t off = data[1 + 2 * i] % (MARKER_LEN + 1);
        char byte = (char)data[2 + 2 * i];
        if (byte == '\0')
            continue;
        if (off > len)
            off = len;
        memmove(r->secret + off + 1, r->secret + off, len - off + 1);
        r->secret[off] = byte;
        len++;
    }
    rest = data + 1 + 2 * k;
    size -= 1 + 2 * k;
    r->copy = malloc(size + 2);
    if (!r->copy)
        return -1;
    memcpy(r->copy, rest, size);
    r->copy[size] = '\0';
    r->copy[size + 1] = '\0';
    nul = strlen(r->copy);
    r->a = r->copy;
    r->alen = nul;
    r->b = nul < size ? r->copy + nul + 1 : r->copy + size + 1;
    r->blen = strlen(r->b);
    r->judged = !holds_marker(r->a) && !holds_marker(r->b);
    return 0;
}

/* Aborts when a judged recipe's text leaked a piece of the secret. */
static void recipe_check(const recipe *r, const char *text)
{
    if (r->judged && holds_marker(text))
        abort();
}

/* A failed parse's message: it says why, and quotes no piece of the
 * secret; else aborts. */
static inline void recipe_check_failure(const recipe *r, const char *err)
{
    if (err[0] == '\0')
        abort(); /* a failure always says why */
    recipe_check(r, err);
}

/* The text a target parses, for the targets that put the secret in one of
 * nplaces places of a document (fuzz_config.c, fuzz_redisson_yaml.c):
 * data[0] picks the place, or (nplaces) the raw mode: the rest of data is
 * the text as it is, nothing judged. Else the rest is a recipe and the
 * text is  lead A places[p][0] SECRET places[p][1] B.  *len: the text's
 * length. NULL: the input is skipped (a recipe too short, no memory).
 * The caller frees the text and r->copy. */
static inline char *recipe_text(recipe *r, const uint8_t *data, size_t size,
                                const char *const places[][2], size_t nplaces,
                                const char *lead, size_t *len)
{
    size_t place;
    char *text;

    memset(r, 0, sizeof(*r)); /* raw: nothing judged */
    if (size < 1)
        return NULL;
    place = data[0] % (nplaces + 1);
    if (place == nplaces) {
        *len = size - 1;
        text = malloc(*len + 1);
        if (text) {
            memcpy(text, data + 1, *len);
            text[*len] = '\0';
        }
        return text;
    }
    if (recipe_read(r, data + 1, size - 1) != 0)
        return NULL;
    *len = strlen(lead) + r->alen + strlen(places[place][0]) + strlen(r->secret) +
           strlen(places[place][1]) + r->blen;
    text = malloc(*len + 1);
    if (text)
        snprintf(text, *len + 1, "%s%s%s%s%s%s", lead, r->a, places[place][0], r->secret,
                 places[place][1], r->b);
    return text;
}

#endif /* DLOCK_FUZZ_SECRET_H */
