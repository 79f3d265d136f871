/*
 * What a bench program does between rlock_client_open and its first timed
 * call: wait until a majority of masters has completed its handshake, so
 * that connecting is never measured. (A first call would wait for the
 * connections by itself; the wait is only to keep it out of the figures.)
 */
#ifndef BENCH_READY_H
#define BENCH_READY_H

#include <stdint.h>

#include "rlock.h"

/* 0 once a majority of masters is ready, or a negative RLOCK_E* code
 * (RLOCK_ENOQUORUM if timeout_ms passed first). */
static inline int bench_wait_ready(rlock_client *c, int64_t timeout_ms) {
  return rlock_client_wait_ready(c, timeout_ms);
}

#endif
