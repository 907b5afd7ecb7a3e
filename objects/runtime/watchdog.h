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

#endif /* DLOCK_OBJECTS_RUNTIME_WATCHDOG_H */
