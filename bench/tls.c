/*
 * TLS against plain, in the same run: the price of encryption on rlock's
 * connections. It starts its own masters (plain and TLS-only, the same
 * redis-server, certificates from the test harness's throwaway CA), opens
 * one client on each, and measures lock+unlock latency (rlock_trylock(0)
 * then rlock_unlock on a distinct lock each time, the two clients
 * alternating in blocks, so a noisy neighbour hits both alike) and async
 * throughput (256 acquire+release chains in flight on each client's loop,
 * plain and TLS runs alternating). Prints JSON lines.
 *
 *   bench_tls ITERATIONS SECONDS [N]   (N masters of each kind, default 1)
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
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

static rlock_client *open_on(rt_redis *rs, int n) {
  const char *m[8];
  for (int i = 0; i < n; i++) m[i] = rs[i].url;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = 1000;
  o.tls_ca_file = rt_tls()->ca;
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
      snprintf(name, sizeof name, "tls-%s-%d-%d", tag, i, k);
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

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ITERATIONS SECONDS [N]\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]);
  double seconds = atof(argv[2]);
  int n = argc > 3 ? atoi(argv[3]) : 1;
  if (iters < 100 || seconds <= 0 || n < 1 || n > 8) return 2;
  if (rt_tls() == NULL) return 1;
  rt_redis plain[8], tls[8];
  for (int i = 0; i < n; i++)
    if (rt_redis_start_opts(&plain[i], &(rt_redis_opts){0}) != 0 ||
        rt_redis_start_opts(&tls[i], &(rt_redis_opts){.tls = 1}) != 0)
      return 1;
  rlock_client *cp = open_on(plain, n), *ct = open_on(tls, n);
  if (cp == NULL || ct == NULL) return 1;

  /* Latency, alternating blocks of 50. */
  rlock **lp = calloc((size_t)iters, sizeof *lp);
  rlock **lt = calloc((size_t)iters, sizeof *lt);
  uint64_t *dp = calloc((size_t)iters, sizeof *dp);
  uint64_t *dt = calloc((size_t)iters, sizeof *dt);
  for (int i = 0; i < iters; i++) {
    char name[32];
    snprintf(name, sizeof name, "lat-%d", i);
    if (rlock_get(cp, name, &lp[i]) != 0 || rlock_get(ct, name, &lt[i]) != 0)
      return 1;
  }
  int errs = 0;
  for (int i = 0; i < 200; i++) { /* warm up */
    errs += rlock_trylock(lp[i % iters], 0, 10000) != 0;
    errs += rlock_unlock(lp[i % iters]) != 0;
    errs += rlock_trylock(lt[i % iters], 0, 10000) != 0;
    errs += rlock_unlock(lt[i % iters]) != 0;
  }
  for (int b = 0; b < iters; b += 50) {
    int e = b + 50 < iters ? b + 50 : iters;
    for (int pass = 0; pass < 2; pass++) {
      int tls_first = (b / 50) % 2;
      int use_tls = pass == 0 ? tls_first : !tls_first;
      rlock **ls = use_tls ? lt : lp;
      uint64_t *d = use_tls ? dt : dp;
      for (int i = b; i < e; i++) {
        uint64_t t0 = now_ns();
        errs += rlock_trylock(ls[i], 0, 10000) != 0;
        errs += rlock_unlock(ls[i]) != 0;
        d[i] = now_ns() - t0;
      }
    }
  }
  double p50p = pct(dp, iters, 0.5), p99p = pct(dp, iters, 0.99);
  double p50t = pct(dt, iters, 0.5), p99t = pct(dt, iters, 0.99);
  printf("{\"bench\":\"tls_latency\",\"impl\":\"plain\",\"masters\":%d,"
         "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         n, iters, p50p, p99p);
  printf("{\"bench\":\"tls_latency\",\"impl\":\"tls\",\"masters\":%d,"
         "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         n, iters, p50t, p99t);
  printf("{\"bench\":\"tls_latency\",\"masters\":%d,\"ratio_p50\":%.3f,"
         "\"ratio_p99\":%.3f,\"errors\":%d}\n",
         n, p50t / p50p, p99t / p99p, errs);
  fflush(stdout);
  for (int i = 0; i < iters; i++) {
    rlock_free(lp[i]);
    rlock_free(lt[i]);
  }

  /* Async throughput: three runs of each, alternating; medians. */
  double rp[3], rt[3];
  for (int r = 0; r < 3; r++) {
    rp[r] = async_rate(cp, "p", seconds);
    long ep = atomic_load(&errors);
    rt[r] = async_rate(ct, "t", seconds);
    errs += (int)(ep + atomic_load(&errors));
  }
  qsort(rp, 3, sizeof rp[0], bench_cmp_double);
  qsort(rt, 3, sizeof rt[0], bench_cmp_double);
  printf("{\"bench\":\"tls_throughput\",\"impl\":\"plain\",\"mode\":\"async\","
         "\"masters\":%d,\"concurrency\":%d,\"pairs_per_s\":%.0f}\n",
         n, CHAINS, rp[1]);
  printf("{\"bench\":\"tls_throughput\",\"impl\":\"tls\",\"mode\":\"async\","
         "\"masters\":%d,\"concurrency\":%d,\"pairs_per_s\":%.0f}\n",
         n, CHAINS, rt[1]);
  printf("{\"bench\":\"tls_throughput\",\"masters\":%d,\"ratio\":%.3f,"
         "\"errors\":%d}\n",
         n, rt[1] / rp[1], errs);
  rlock_client_close(cp);
  rlock_client_close(ct);
  free(lp);
  free(lt);
  free(dp);
  free(dt);
  rt_redis_stop_many(plain, n);
  rt_redis_stop_many(tls, n);
  return errs ? 1 : 0;
}
