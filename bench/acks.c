/*
 * The price of replica acknowledgement (rlock_options.replica_acks), in
 * the same run: one master with two replicas (the same redis-server,
 * started through the test harness), three clients on that master with
 * replica_acks 0, 1 and 2, and lock+unlock latency (rlock_trylock(0)
 * then rlock_unlock on a distinct lock each time, the three clients in
 * turn in blocks of 50, so a noisy neighbour hits all alike). The floor
 * is the same library without acknowledgement; what is added is one WAIT
 * per grant and the replicas' time to acknowledge. Prints JSON lines.
 *
 *   bench_acks ITERATIONS
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "rlock.h"

#define KINDS 3

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

static rlock_client *open_on(const char *url, int acks) {
  const char *m[1] = {url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.master_timeout_ms = 1000;
  o.replica_acks = acks;
  o.replica_ack_timeout_ms = 1000;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  if (rlock_client_wait_ready(c, 10000) != 0) {
    rlock_client_close(c);
    return NULL;
  }
  return c;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ITERATIONS\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]);
  if (iters < 100) return 2;
  rt_redis r[3];
  for (int i = 0; i < 3; i++)
    if (rt_redis_start_opts(&r[i], &(rt_redis_opts){0}) != 0) return 1;
  for (int i = 1; i < 3; i++) {
    redisReply *rep = rt_redis_cmd(&r[i], "REPLICAOF 127.0.0.1 %d", r[0].port);
    if (rep == NULL) return 1;
    freeReplyObject(rep);
  }
  /* Both replicas in sync before anything is measured. */
  for (uint64_t end = rt_now_ms() + 20000;; rt_sleep_ms(100)) {
    if (rt_redis_int(&r[0], "WAIT 2 1000") == 2) break;
    if (rt_now_ms() > end) return 1;
  }
  rlock_client *c[KINDS];
  rlock **l[KINDS];
  uint64_t *d[KINDS];
  for (int k = 0; k < KINDS; k++) {
    c[k] = open_on(r[0].url, k);
    l[k] = calloc((size_t)iters, sizeof *l[k]);
    d[k] = calloc((size_t)iters, sizeof *d[k]);
    if (c[k] == NULL || l[k] == NULL || d[k] == NULL) return 1;
    for (int i = 0; i < iters; i++) {
      char name[32];
      snprintf(name, sizeof name, "acks-%d-%d", k, i);
      if (rlock_get(c[k], name, &l[k][i]) != 0) return 1;
    }
  }
  int errs = 0;
  for (int i = 0; i < 200; i++) /* warm up */
    for (int k = 0; k < KINDS; k++) {
      errs += rlock_trylock(l[k][i % iters], 0, 10000) != 0;
      errs += rlock_unlock(l[k][i % iters]) != 0;
    }
  for (int b = 0; b < iters; b += 50) {
    int e = b + 50 < iters ? b + 50 : iters;
    for (int pass = 0; pass < KINDS; pass++) {
      int k = (pass + b / 50) % KINDS;
      for (int i = b; i < e; i++) {
        uint64_t t0 = now_ns();
        errs += rlock_trylock(l[k][i], 0, 10000) != 0;
        errs += rlock_unlock(l[k][i]) != 0;
        d[k][i] = now_ns() - t0;
      }
    }
  }
  double p50[KINDS], p99[KINDS];
  for (int k = 0; k < KINDS; k++) {
    p50[k] = pct(d[k], iters, 0.5);
    p99[k] = pct(d[k], iters, 0.99);
    printf("{\"bench\":\"acks_latency\",\"replica_acks\":%d,\"replicas\":2,"
           "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f,"
           "\"ratio_p50\":%.3f,\"ratio_p99\":%.3f}\n",
           k, iters, p50[k], p99[k], p50[k] / p50[0], p99[k] / p99[0]);
  }
  rlock_metrics m;
  uint64_t unacked = 0;
  for (int k = 0; k < KINDS; k++)
    if (rlock_metrics_snapshot(c[k], &m) == 0) unacked += m.grants_unacked;
  printf("{\"bench\":\"acks_latency\",\"errors\":%d,\"unacked\":%" PRIu64
         "}\n", errs, unacked);
  for (int k = 0; k < KINDS; k++) {
    for (int i = 0; i < iters; i++) rlock_free(l[k][i]);
    rlock_client_close(c[k]);
    free(l[k]);
    free(d[k]);
  }
  rt_redis_stop_many(r, 3);
  return errs ? 1 : 0;
}
