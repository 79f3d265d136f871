/*
 * Helpers shared by the integration tests: open a client on test masters
 * with test-friendly options, and count keys on a master.
 */
#ifndef RT_COMMON_H
#define RT_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlock.h"

/* Opens a client on the first n servers of rs; the master timeout is
 * generous because the suite also runs under sanitizers and valgrind.
 * TLS masters (rediss://) are verified against the harness's CA. */
static inline rlock_client *rt_client(rt_redis *rs, int n,
                                      int64_t master_timeout_ms) {
  const char **m = calloc((size_t)n, sizeof *m);
  rlock_options o;
  rlock_options_init(&o);
  for (int i = 0; i < n; i++) {
    m[i] = rs[i].url;
    if (strncmp(m[i], "rediss://", 9) == 0 && rt_tls() != NULL)
      o.tls_ca_file = rt_tls()->ca;
  }
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

/* A fresh client's first call needs no retry (its connections' first
 * attempt is waited for): these two are the plain calls now, kept for the
 * tests that still name them. */
static inline int rt_lock_soon(rlock *l, int64_t lease_ms) {
  return rlock_trylock(l, 0, lease_ms);
}

static inline int rt_force_soon(rlock *l) { return rlock_force_unlock(l); }

#endif
