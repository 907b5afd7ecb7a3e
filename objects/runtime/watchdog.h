/*
 * dlock — the client's watchdog thread (watchdog.c): started, stopped and
 * orphaned by the client.
 * Private to objects/.
 */
#ifndef DLOCK_OBJECTS_RUNTIME_WATCHDOG_H
#define DLOCK_OBJECTS_RUNTIME_WATCHDOG_H

#include "dlock/client.h"

/* watchdog.c */
int dlock__watchdog_start(dlock_client *c);
/* Stops and joins the watchdog (never called on the watchdog thread). */
void dlock__watchdog_stop(dlock_client *c);
/* Whether the calling thread is c's watchdog (i.e. inside on_lost). */
int dlock__watchdog_is_current(const dlock_client *c);
/* From the watchdog thread: the last reference is gone; stop after the
 * current callback and call dlock__client_destroy_on_watchdog. */
void dlock__watchdog_orphan(dlock_client *c);

/* The loop-driven watchdog, for a single-threaded deterministic run (the
 * simulator, tests/sim/): while dlock__watchdog_threadless is set, a new
 * client starts no watchdog thread, and its lease-0 holds are renewed
 * only where a loop of its drives its watchdog
 * (dlock__loop_drive_watchdog, objects/async/loop.h): one round of
 * dlock__watchdog_round every watchdog_timeout/3 of the client's clock,
 * on the loop's thread, so on_lost callbacks run there. Set it before
 * making the clients, from one thread; not for a client whose backend
 * may block (a round's script calls are made in place). Not public API. */
extern int dlock__watchdog_threadless;
/* One renewal round of c's watchdog, on the calling thread. */
void dlock__watchdog_round(dlock_client *c);

#endif /* DLOCK_OBJECTS_RUNTIME_WATCHDOG_H */
