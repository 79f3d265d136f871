/*
 * What a bench program does between rlock_client_open and its first timed
 * call: wait until a majority of masters is connected, so that connecting
 * is never measured and no program needs a retry loop of its own. This is
 * the only place that knows how; when rlock_client_wait_ready(c, timeout)
 * lands (issue 11), the body below becomes that one call.
 */
#ifndef BENCH_READY_H
#define BENCH_READY_H

#include <stdint.h>
#include <time.h>

#include "rlock.h"

/* 0 once the client can reach a majority, or a negative RLOCK_E* code
 * (RLOCK_ENOQUORUM if timeout_ms passed first). */
static inline int bench_wait_ready(rlock_client *c, int64_t timeout_ms) {
  /* Until rlock_client_wait_ready exists: a read-only quorum round
   * (rlock_is_locked) answers 0 or 1 once a majority is connected. */
  rlock *probe;
  int rc = rlock_get(c, "bench-ready-probe", &probe);
  if (rc != 0) return rc;
  struct timespec ms = {0, 1000000};
  for (int64_t waited = 0;; waited++) {
    rc = rlock_is_locked(probe);
    if (rc >= 0 || rc != RLOCK_ENOQUORUM || waited >= timeout_ms) break;
    nanosleep(&ms, NULL);
  }
  rlock_free(probe);
  return rc >= 0 ? 0 : rc;
}

#endif
