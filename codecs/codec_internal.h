/*
 * dlock — what the codec files share, and nobody outside codecs/ sees.
 */
#ifndef DLOCK_CODECS_INTERNAL_H
#define DLOCK_CODECS_INTERNAL_H

#include <stddef.h>

#include "dlock/codec.h"

#include "core/errbuf.h"
#include "core/utf8.h"

#endif /* DLOCK_CODECS_INTERNAL_H */
