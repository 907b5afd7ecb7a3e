/*
 * dlock — the backend registry's side for the built-in backends
 * (core/registry.c).
 */
#ifndef DLOCK_CORE_REGISTRY_H
#define DLOCK_CORE_REGISTRY_H

#include "dlock/sys/backend.h"

/* dlock_backend_register without first registering the built-ins: what a
 * built-in backend's dlock__backend_register_<folder>() calls (from
 * inside that first registration). */
int dlock__backend_register(const char *scheme, dlock_backend_open_fn open, void *arg);

/* Registers the built-in backends (their schemes, configuration parts
 * and formats) once; what the registry's and core/config.c's readers call
 * first. Any thread. */
void dlock__backends_builtin_once(void);

#endif /* DLOCK_CORE_REGISTRY_H */
