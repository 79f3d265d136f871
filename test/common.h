/*
 * Helpers shared by the integration tests: open a client on test masters
 * with test-friendly options, and count keys on a master.
 */
#ifndef RT_COMMON_H
#define RT_COMMON_H

#include <stdlib.h>

#include "harness.h"
#include "rlock.h"

/* Opens a client on the first n servers of rs; the master timeout is
 * generous because the suite also runs under sanitizers and valgrind. */
static inline rlock_client *rt_client(rt_redis *rs, int n,
                                      int64_t master_timeout_ms) {
  const char **m = calloc((size_t)n, sizeof *m);
  for (int i = 0; i < n; i++) m[i] = rs[i].url;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = master_timeout_ms;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) c = NULL;
  free(m);
  return c;
}

/* Takes a lock in a retry loop until the masters are connected (a fresh
 * client connects in the background). */
static inline int rt_lock_soon(rlock *l, int64_t lease_ms) {
  return rlock_trylock(l, 5000, lease_ms);
}

/* Force-unlocks once the client has a majority connected (a fresh client
 * connects in the background). */
static inline int rt_force_soon(rlock *l) {
  int rc = RLOCK_ENOQUORUM;
  for (int i = 0; i < 250 && rc == RLOCK_ENOQUORUM; i++) {
    rc = rlock_force_unlock(l);
    if (rc == RLOCK_ENOQUORUM) rt_sleep_ms(20);
  }
  return rc;
}

#endif
