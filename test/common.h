/*
 * Helpers shared by the integration tests: open a client on test masters
 * with test-friendly options, run a command on a master, flush the
 * masters, check that every key has a TTL, wait for a master to be up,
 * and the extend-then-lost check the lock kinds share.
 */
#ifndef RT_COMMON_H
#define RT_COMMON_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rlock.h"

/* Opens a client on the first n servers of rs with the options in o
 * (defined below). TLS masters (rediss://) are verified against the
 * harness's CA. */
static inline rlock_client *rt_client_opts(rt_redis *rs, int n,
                                           rlock_options *o);

/* A client on the first n servers of rs with the given master timeout,
 * retries every 20 ms (jitter 20 ms), and a watchdog timeout
 * (watchdog_ms 0: the default). */
static inline rlock_client *rt_client_wd(rt_redis *rs, int n,
                                         int64_t master_timeout_ms,
                                         int64_t watchdog_ms) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = master_timeout_ms;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  return rt_client_opts(rs, n, &o);
}

/* rt_client_wd with the default watchdog timeout. Tests give a generous
 * master timeout because the suite also runs under sanitizers and
 * valgrind. */
static inline rlock_client *rt_client(rt_redis *rs, int n,
                                      int64_t master_timeout_ms) {
  return rt_client_wd(rs, n, master_timeout_ms, 0);
}

/* rt_client with the caller's options (from rlock_options_init, then
 * set): the masters (and the harness's CA for TLS ones) are filled in. */
static inline rlock_client *rt_client_opts(rt_redis *rs, int n,
                                           rlock_options *o) {
  const char **m = calloc((size_t)n, sizeof *m);
  for (int i = 0; i < n; i++) {
    m[i] = rs[i].url;
    if (strncmp(m[i], "rediss://", 9) == 0 && rt_tls() != NULL)
      o->tls_ca_file = rt_tls()->ca;
  }
  o->masters = m;
  o->nmasters = (size_t)n;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, o) != 0) c = NULL;
  o->masters = NULL;
  free(m);
  return c;
}

/* Runs the command s on r and drops its reply (a fault or a cleanup
 * whose answer the test does not read). */
static inline void rt_redis_run(rt_redis *r, const char *s) {
  redisReply *x = rt_redis_cmd(r, s);
  if (x) freeReplyObject(x);
}

/* FLUSHALL on the first n servers of rs: a test's fresh start. */
static inline void rt_flush_all(rt_redis *rs, int n) {
  for (int i = 0; i < n; i++) rt_redis_run(&rs[i], "FLUSHALL");
}

/* Whether every key on the first n servers of rs has a TTL: nothing a
 * test left behind outlives its leases. Keys without one are listed on
 * stderr. */
static inline int rt_all_keys_have_ttl(rt_redis *rs, int n) {
  int ok = 1;
  for (int i = 0; i < n; i++) {
    redisReply *ks = rt_redis_cmd(&rs[i], "KEYS *");
    for (size_t k = 0; ks && k < ks->elements; k++) {
      long long p = rt_redis_int(&rs[i], "PTTL %s", ks->element[k]->str);
      if (p <= 0 && p != -2) { /* -2: it expired since KEYS */
        fprintf(stderr, "  key %s on master %d: PTTL %lld\n",
                ks->element[k]->str, i, p);
        ok = 0;
      }
    }
    if (ks) freeReplyObject(ks);
  }
  return ok;
}

/* Calls of rt_count_lost, the lost-lock callback of rt_extend_then_lost. */
__attribute__((unused)) static atomic_int rt_lost_calls;

static inline void rt_count_lost(rlock *l, uint64_t owner, int is_thread,
                                 void *arg) {
  (void)l, (void)owner, (void)is_thread, (void)arg;
  atomic_fetch_add(&rt_lost_calls, 1);
}

/* On l: a fixed lease extended by rlock_extend; then a watchdog hold that
 * another client's force (through other, a handle of the same side) takes
 * away: l's lost-lock callback runs once, and its unlock says
 * RLOCK_ELOST. For every kind with rlock handles (fair, read, write). */
static inline void rt_extend_then_lost(rlock *l, rlock *other) {
  int64_t ms = 0;
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 2000), 0);
  RT_CHECK_EQ_INT(rlock_extend(l, 20000), 0);
  RT_CHECK_EQ_INT(rlock_remaining_lease(l, &ms), 0);
  RT_CHECK(ms > 10000);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  atomic_store(&rt_lost_calls, 0);
  rlock_set_lost_cb(l, rt_count_lost, NULL);
  RT_CHECK_EQ_INT(rlock_lock(l, RLOCK_WATCHDOG), 0);
  RT_CHECK_EQ_INT(rlock_force_unlock(other), 0);
  uint64_t end = rt_now_ms() + 15000;
  while (atomic_load(&rt_lost_calls) == 0 && rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_CHECK_EQ_INT(atomic_load(&rt_lost_calls), 1);
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ELOST);
  rlock_set_lost_cb(l, NULL, NULL);
}

/* Whether master idx of c has completed its handshake (its metrics say
 * up) within ms. */
static inline int rt_up_within(rlock_client *c, int idx, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  rlock_metrics m;
  do {
    if (rlock_metrics_snapshot(c, &m) == 0 && m.masters[idx].up) return 1;
    rt_sleep_ms(20);
  } while (rt_now_ms() < end);
  return 0;
}

/* Under valgrind, a process's first TLS connection costs about a second
 * of code translation (OpenSSL's handshake and crypto paths), which a
 * loaded machine can push past a fresh client's connect timeout: a cost
 * of the tool, not of TLS (natively the handshake takes milliseconds).
 * Under valgrind, with RT_TLS=1 or in a program that defines RT_WARM_TLS
 * before including this file, one TLS connection is made and closed
 * before main, against a server of its own. */
__attribute__((constructor, unused)) static void rt_warm_tls(void) {
  const char *pre = getenv("LD_PRELOAD");
  if (pre == NULL || strstr(pre, "vgpreload") == NULL) return;
#ifndef RT_WARM_TLS
  const char *tls = getenv("RT_TLS");
  if (tls == NULL || strcmp(tls, "1") != 0) return;
#endif
  rt_redis r;
  if (rt_redis_start_opts(&r, &(rt_redis_opts){.tls = 1}) != 0) return;
  const char *m[1] = {r.url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.connect_timeout_ms = 30000;
  o.tls_ca_file = rt_tls()->ca;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) == 0) {
    rlock_client_wait_ready(c, 30000);
    rlock_client_close(c);
  }
  rt_redis_stop(&r);
}

#endif
