/*
 * dlock — distributed lock primitives. The whole public API for
 * applications.
 *
 * Not included here: the method tables of <dlock/sys/backend.h>,
 * <dlock/sys/clock.h> and <dlock/sys/methods.h>, for people who write a backend
 * or a lock type of their own (they include them explicitly). So an
 * application's <dlock.h> pulls in neither those nor <pthread.h>.
 */
#ifndef DLOCK_H
#define DLOCK_H

#include "dlock/export.h"
#include "dlock/version.h"
#include "dlock/errors.h"
#include "dlock/times.h"
#include "dlock/client.h"
#include "dlock/log.h"
#include "dlock/metrics.h"
#include "dlock/backend.h"
#include "dlock/lock.h"
#include "dlock/reentrant.h"
#include "dlock/fair.h"
#include "dlock/fenced.h"
#include "dlock/multilock.h"
#include "dlock/redlock.h"
#include "dlock/spin_lock.h"
#include "dlock/simple_lock.h"
#include "dlock/rwlock.h"
#include "dlock/semaphore.h"
#include "dlock/permit_semaphore.h"
#include "dlock/latch.h"
#include "dlock/async.h"
#include "dlock/codec.h"
#include "dlock/bucket.h"
#include "dlock/object.h"
#include "dlock/config.h"
#include "dlock/mock.h"
#include "dlock/redis.h"

#endif /* DLOCK_H */
