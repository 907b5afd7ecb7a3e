/* dlock — distributed lock primitives. The whole public API. */
#ifndef DLOCK_H
#define DLOCK_H

#include "dlock/errors.h"
#include "dlock/times.h"
#include "dlock/client.h"
#include "dlock/rlock.h"
#include "dlock/reentrant.h"
#include "dlock/fair.h"
#include "dlock/fenced.h"
#include "dlock/rwlock.h"
#include "dlock/semaphore.h"
#include "dlock/permit_semaphore.h"
#include "dlock/latch.h"
#include "dlock/codec.h"
#include "dlock/bucket.h"
#include "dlock/object.h"
#include "dlock/config.h"
#include "dlock/mock.h"
#include "dlock/redis.h"

#endif /* DLOCK_H */
