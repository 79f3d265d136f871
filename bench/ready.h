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
  struct timespec now, ms = {0, 1000000};
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t deadline = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 +
                     timeout_ms;
  for (;;) {
    rc = rlock_is_locked(probe);
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (rc != RLOCK_ENOQUORUM ||
        (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 >= deadline)
      break;
    nanosleep(&ms, NULL);
  }
  rlock_free(probe);
  return rc >= 0 ? 0 : rc;
}

#endif
