/* dlock — the opaque types, declared once (C99 forbids repeating a typedef). */
#ifndef DLOCK_TYPES_H
#define DLOCK_TYPES_H

typedef struct dlock_client dlock_client;
typedef struct dlock_rlock dlock_rlock;
typedef struct dlock_backend dlock_backend;
typedef struct dlock_clock dlock_clock;
typedef struct dlock_subscription dlock_subscription;
typedef struct dlock_vclock dlock_vclock;
typedef struct dlock_mock_store dlock_mock_store;

#endif /* DLOCK_TYPES_H */
