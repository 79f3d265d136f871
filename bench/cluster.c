/*
 * A Redis Cluster as a master against one plain master, in the same run.
 * It starts its own servers through the test
 * harness: one plain redis-server, and a cluster of three primaries and
 * three replicas (harness_cluster.h); one client on each (N = 1). It
 * measures:
 *   - lock+unlock latency (rlock_trylock(0) then rlock_unlock on a
 *     distinct lock each time; the two clients alternate in blocks of 50,
 *     so a noisy neighbour hits both alike): p50 and p99;
 *   - async throughput: 256 acquire+release chains in flight on each
 *     client's loop, three runs of each alternating; medians;
 *   - the watchdog on the cluster: LOCKS locks held with RLOCK_WATCHDOG
 *     (timeout 3 s, so a period of 1 s) for PERIODS periods; EVALSHA calls
 *     per primary in the window (INFO commandstats, reset when it opens:
 *     nothing else is sent then) and renewals (the client's metric), so
 *     locks per call, which watchdog_batch (100) bounds; and the
 *     primaries' used_memory (INFO memory) before and after every lock is
 *     held, per lock: the lock hash and its fencing counter.
 * Prints JSON lines. There is no raw-hiredis floor for the cluster here:
 * the figures compare rlock with itself on the two kinds of master.
 *
 *   bench_cluster ITERATIONS SECONDS LOCKS PERIODS
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "harness_cluster.h"
#include "rlock.h"
#include "stats.h"

#define CHAINS 256
#define NAMES 16

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(uint64_t *v, int n, double p) {
  qsort(v, (size_t)n, sizeof *v, cmp_u64);
  return (double)v[(int)(p * (n - 1))] / 1000.0;
}

static rlock_client *open_url(const char *url, int64_t watchdog_ms) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  if (rlock_client_wait_ready(c, 10000) != 0) {
    rlock_client_close(c);
    return NULL;
  }
  return c;
}

/* --- async chains ---------------------------------------------------------- */

static atomic_long pairs, errors;
static atomic_int stop, live;

typedef struct chain {
  rlock *locks[NAMES];
  uint64_t owner;
  long k;
} chain;

static void chain_next(chain *ch);

static void on_unlocked(rlock *l, int status, void *arg) {
  (void)l;
  atomic_fetch_add(status == 0 ? &pairs : &errors, 1);
  chain_next(arg);
}

static void on_locked(rlock *l, int status, void *arg) {
  chain *ch = arg;
  if (status != 0) {
    atomic_fetch_add(&errors, 1);
    chain_next(ch);
    return;
  }
  if (rlock_unlock_async(l, ch->owner, on_unlocked, ch) != 0)
    atomic_fetch_sub(&live, 1);
}

static void chain_next(chain *ch) {
  if (atomic_load(&stop)) {
    atomic_fetch_sub(&live, 1);
    return;
  }
  rlock *l = ch->locks[ch->k++ % NAMES];
  if (rlock_lock_async(l, ch->owner, 0, 10000, on_locked, ch) != 0)
    atomic_fetch_sub(&live, 1);
}

/* Pairs per second of CHAINS chains on c for seconds. */
static double async_rate(rlock_client *c, const char *tag, double seconds) {
  static chain chains[CHAINS];
  for (int i = 0; i < CHAINS; i++) {
    for (int k = 0; k < NAMES; k++) {
      char name[48];
      snprintf(name, sizeof name, "cl-%s-%d-%d", tag, i, k);
      rlock_get(c, name, &chains[i].locks[k]);
    }
    chains[i].owner = (uint64_t)i + 1;
    chains[i].k = 0;
  }
  atomic_store(&stop, 0);
  atomic_store(&pairs, 0);
  atomic_store(&errors, 0);
  atomic_store(&live, CHAINS);
  uint64_t t0 = now_ns();
  for (int i = 0; i < CHAINS; i++) chain_next(&chains[i]);
  usleep((useconds_t)(seconds * 1e6));
  atomic_store(&stop, 1);
  double t = (double)(now_ns() - t0) / 1e9;
  long done = atomic_load(&pairs);
  while (atomic_load(&live) > 0) usleep(1000);
  for (int i = 0; i < CHAINS; i++)
    for (int k = 0; k < NAMES; k++) rlock_free(chains[i].locks[k]);
  return (double)done / t;
}

static atomic_int wd_failed;

static void on_wd_locked(rlock *l, int status, void *arg) {
  (void)l;
  (void)arg;
  if (status != 0) atomic_fetch_add(&wd_failed, 1);
}

static long long used_memory(rt_redis *r) {
  redisReply *rep = rt_redis_cmd(r, "INFO memory");
  long long v = -1;
  if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
    const char *p = strstr(rep->str, "used_memory:");
    if (p != NULL) v = atoll(p + strlen("used_memory:"));
  }
  if (rep != NULL) freeReplyObject(rep);
  return v;
}

/* The primaries' used_memory, summed. */
static long long primaries_memory(rt_cluster *cl) {
  long long sum = 0;
  for (int i = 0; i < RT_CLUSTER_NODES; i++)
    if (rt_cluster_is_primary(cl, i) == 1) sum += used_memory(&cl->node[i]);
  return sum;
}

/* The watchdog over the cluster: see the top of this file. */
static int watchdog_figures(rt_cluster *cl, const char *url, int nlocks,
                            int periods) {
  rlock_client *c = open_url(url, 3000);
  if (c == NULL) return 1;
  rlock **l = calloc((size_t)nlocks, sizeof *l);
  int errs = 0;
  long long mem0 = primaries_memory(cl);
  for (int i = 0; i < nlocks; i++) {
    char name[32];
    snprintf(name, sizeof name, "wd-%d", i);
    if (rlock_get(c, name, &l[i]) != 0) return 1;
    errs += rlock_lock_async(l[i], (uint64_t)i + 1, 0, RLOCK_WATCHDOG,
                             on_wd_locked, NULL) != 0;
    if (i % 2000 == 1999) usleep(200000); /* keep acquisitions in bounds */
  }
  for (int w = 0; w < 600; w++) { /* every lock held (or failed) */
    rlock_metrics m;
    rlock_metrics_snapshot(c, &m);
    if (m.locks_held + atomic_load(&wd_failed) >= nlocks) break;
    usleep(100000);
  }
  errs += atomic_load(&wd_failed);
  long long mem1 = primaries_memory(cl);
  sleep(2); /* a period passed since the last was taken */
  int prim[3], np = 0;
  for (int i = 0; i < RT_CLUSTER_NODES && np < 3; i++)
    if (rt_cluster_is_primary(cl, i) == 1) prim[np++] = i;
  rlock_metrics m0, m1;
  for (int k = 0; k < np; k++) {
    redisReply *r = rt_redis_cmd(&cl->node[prim[k]], "CONFIG RESETSTAT");
    if (r) freeReplyObject(r);
  }
  rlock_metrics_snapshot(c, &m0);
  sleep((unsigned)periods); /* a period is 1 s */
  long long calls = 0, per[3] = {0};
  for (int k = 0; k < np; k++) calls += per[k] = rt_evalsha_calls(&cl->node[prim[k]]);
  rlock_metrics_snapshot(c, &m1);
  uint64_t renewed = m1.renewals - m0.renewals;
  printf("{\"bench\":\"cluster_watchdog\",\"locks\":%d,\"held\":%lld,"
         "\"periods\":%d,\"renewals\":%llu,\"evalsha_per_primary\":[%lld,"
         "%lld,%lld],\"calls_per_period\":%.1f,\"locks_per_call\":%.1f,"
         "\"renewal_failures\":%llu,\"lost\":%llu,\"errors\":%d,"
         "\"server_bytes_per_lock\":%.0f}\n",
         nlocks, (long long)m1.locks_held, periods,
         (unsigned long long)renewed, per[0], per[1], per[2],
         (double)calls / periods,
         calls > 0 ? (double)renewed / (double)calls : 0.0,
         (unsigned long long)(m1.renewal_failures - m0.renewal_failures),
         (unsigned long long)m1.locks_lost, errs,
         (double)(mem1 - mem0) / nlocks);
  fflush(stdout);
  rlock_client_close(c);
  for (int i = 0; i < nlocks; i++) rlock_free(l[i]);
  free(l);
  return errs != 0;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s ITERATIONS SECONDS LOCKS PERIODS\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]);
  double seconds = atof(argv[2]);
  int nlocks = atoi(argv[3]), periods = atoi(argv[4]);
  if (iters < 100 || seconds <= 0 || nlocks < 1 || periods < 1) return 2;
  static rt_cluster cl;
  rt_redis plain;
  if (rt_redis_start(&plain, NULL) != 0 || rt_cluster_start(&cl, NULL) != 0)
    return 1;
  char url[200];
  snprintf(url, sizeof url, "redis-cluster://127.0.0.1:%d", cl.node[0].port);
  rlock_client *cp = open_url(plain.url, 0), *cc = open_url(url, 0);
  if (cp == NULL || cc == NULL) return 1;

  /* Latency, alternating blocks of 50. */
  rlock **lp = calloc((size_t)iters, sizeof *lp);
  rlock **lc = calloc((size_t)iters, sizeof *lc);
  uint64_t *dp = calloc((size_t)iters, sizeof *dp);
  uint64_t *dc = calloc((size_t)iters, sizeof *dc);
  for (int i = 0; i < iters; i++) {
    char name[32];
    snprintf(name, sizeof name, "lat-%d", i);
    if (rlock_get(cp, name, &lp[i]) != 0 || rlock_get(cc, name, &lc[i]) != 0)
      return 1;
  }
  int errs = 0;
  for (int i = 0; i < 200; i++) { /* warm up */
    errs += rlock_trylock(lp[i % iters], 0, 10000) != 0;
    errs += rlock_unlock(lp[i % iters]) != 0;
    errs += rlock_trylock(lc[i % iters], 0, 10000) != 0;
    errs += rlock_unlock(lc[i % iters]) != 0;
  }
  for (int b = 0; b < iters; b += 50) {
    int e = b + 50 < iters ? b + 50 : iters;
    for (int pass = 0; pass < 2; pass++) {
      int cl_first = (b / 50) % 2;
      int use_cl = pass == 0 ? cl_first : !cl_first;
      rlock **ls = use_cl ? lc : lp;
      uint64_t *d = use_cl ? dc : dp;
      for (int i = b; i < e; i++) {
        uint64_t t0 = now_ns();
        errs += rlock_trylock(ls[i], 0, 10000) != 0;
        errs += rlock_unlock(ls[i]) != 0;
        d[i] = now_ns() - t0;
      }
    }
  }
  double p50p = pct(dp, iters, 0.5), p99p = pct(dp, iters, 0.99);
  double p50c = pct(dc, iters, 0.5), p99c = pct(dc, iters, 0.99);
  printf("{\"bench\":\"cluster_latency\",\"impl\":\"plain\","
         "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         iters, p50p, p99p);
  printf("{\"bench\":\"cluster_latency\",\"impl\":\"cluster\","
         "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         iters, p50c, p99c);
  printf("{\"bench\":\"cluster_latency\",\"ratio_p50\":%.3f,"
         "\"ratio_p99\":%.3f,\"errors\":%d}\n",
         p50c / p50p, p99c / p99p, errs);
  fflush(stdout);
  for (int i = 0; i < iters; i++) {
    rlock_free(lp[i]);
    rlock_free(lc[i]);
  }

  /* Async throughput: three runs of each, alternating; medians. */
  double rp[3], rc[3];
  for (int r = 0; r < 3; r++) {
    rp[r] = async_rate(cp, "p", seconds);
    long ep = atomic_load(&errors);
    rc[r] = async_rate(cc, "c", seconds);
    errs += (int)(ep + atomic_load(&errors));
  }
  qsort(rp, 3, sizeof rp[0], bench_cmp_double);
  qsort(rc, 3, sizeof rc[0], bench_cmp_double);
  printf("{\"bench\":\"cluster_throughput\",\"impl\":\"plain\","
         "\"mode\":\"async\",\"concurrency\":%d,\"pairs_per_s\":%.0f}\n",
         CHAINS, rp[1]);
  printf("{\"bench\":\"cluster_throughput\",\"impl\":\"cluster\","
         "\"mode\":\"async\",\"concurrency\":%d,\"pairs_per_s\":%.0f}\n",
         CHAINS, rc[1]);
  printf("{\"bench\":\"cluster_throughput\",\"ratio\":%.3f,"
         "\"errors\":%d}\n",
         rc[1] / rp[1], errs);
  fflush(stdout);
  rlock_client_close(cp);
  rlock_client_close(cc);
  free(lp);
  free(lc);
  free(dp);
  free(dc);
  errs += watchdog_figures(&cl, url, nlocks, periods);
  rt_cluster_stop(&cl);
  rt_redis_stop(&plain);
  return errs ? 1 : 0;
}
