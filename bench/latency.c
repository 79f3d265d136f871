/*
 * Latency of one lock+unlock pair, rlock against raw hiredis in the same
 * run. rlock: rlock_trylock(0) then rlock_unlock on a distinct lock each
 * time, through the client's loop thread, quorum over the masters given.
 * Baseline: one synchronous hiredis connection per master sending the same
 * two scripts (EVALSHA acquire, EVALSHA unlock) master after master, which
 * is the physical floor of a sequential client. The two alternate in
 * blocks, so a noisy neighbour hits both alike. Prints JSON lines.
 *
 *   latency ITERATIONS MASTER [MASTER...]   (masters as host:port)
 */
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlock.h"
#include "scripts.h"

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
  int i = (int)(p * (n - 1));
  return (double)v[i] / 1000.0;
}

static int raw_pair(redisContext **cs, int n, int i) {
  char key[64], fence[80], owner[32];
  snprintf(key, sizeof key, "rlock:{raw-%d}", i);
  snprintf(fence, sizeof fence, "%s:fence", key);
  snprintf(owner, sizeof owner, "raw:%d", i);
  const char *acq = rl_script_sha(RL_SCRIPT_ACQUIRE);
  const char *unl = rl_script_sha(RL_SCRIPT_UNLOCK);
  for (int m = 0; m < n; m++) {
    redisReply *r = redisCommand(cs[m], "EVALSHA %s 2 %s %s 10000 %s 86400000",
                                 acq, key, fence, owner);
    if (r == NULL || r->type != REDIS_REPLY_ARRAY) return -1;
    freeReplyObject(r);
  }
  for (int m = 0; m < n; m++) {
    char ch[80];
    snprintf(ch, sizeof ch, "%s:ch", key);
    redisReply *r = redisCommand(cs[m], "EVALSHA %s 1 %s 10000 %s %s", unl,
                                 key, owner, ch);
    if (r == NULL || r->type != REDIS_REPLY_INTEGER) return -1;
    freeReplyObject(r);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ITERATIONS MASTER...\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]), n = argc - 2;
  redisContext *cs[64];
  for (int m = 0; m < n; m++) {
    char host[64];
    int port;
    if (sscanf(argv[2 + m], "%63[^:]:%d", host, &port) != 2) return 2;
    cs[m] = redisConnect(host, port);
    if (cs[m] == NULL || cs[m]->err) return 1;
    for (int s = 0; s < RL_SCRIPT_COUNT; s++) {
      redisReply *r = redisCommand(cs[m], "SCRIPT LOAD %s",
                                   rl_script_body((rl_script_id)s));
      if (r) freeReplyObject(r);
    }
  }
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)&argv[2];
  o.nmasters = (size_t)n;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0) return 1;
  rlock **locks = calloc((size_t)iters, sizeof *locks);
  for (int i = 0; i < iters; i++) {
    char name[32];
    snprintf(name, sizeof name, "lat-%d", i);
    if (rlock_get(c, name, &locks[i]) != 0) return 1;
  }
  /* Warm up: connections established, scripts cached, pages touched. */
  for (int i = 0; i < 200; i++) {
    while (rlock_trylock(locks[i % iters], 0, 10000) != 0) {
    }
    rlock_unlock(locks[i % iters]);
    raw_pair(cs, n, i);
  }
  uint64_t *lib = calloc((size_t)iters, sizeof *lib);
  uint64_t *raw = calloc((size_t)iters, sizeof *raw);
  int errors = 0;
  const int block = 50;
  for (int b = 0; b < iters; b += block) {
    int e = b + block < iters ? b + block : iters;
    for (int i = b; i < e; i++) {
      uint64_t t0 = now_ns();
      if (rlock_trylock(locks[i], 0, 10000) != 0) errors++;
      if (rlock_unlock(locks[i]) != 0) errors++;
      lib[i] = now_ns() - t0;
    }
    for (int i = b; i < e; i++) {
      uint64_t t0 = now_ns();
      if (raw_pair(cs, n, i) != 0) errors++;
      raw[i] = now_ns() - t0;
    }
  }
  double lp50 = pct(lib, iters, 0.5), lp99 = pct(lib, iters, 0.99);
  double rp50 = pct(raw, iters, 0.5), rp99 = pct(raw, iters, 0.99);
  /* The distribution, for the report's chart. */
  static const double ps[] = {0.01, 0.05, 0.10, 0.25, 0.50, 0.75,
                              0.90, 0.95, 0.99, 0.999};
  for (int which = 0; which < 2; which++) {
    printf("{\"bench\":\"latency_cdf\",\"impl\":\"%s\",\"masters\":%d,"
           "\"points\":[",
           which ? "raw_hiredis_evalsha_x2" : "rlock", n);
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++)
      printf("%s[%.3f,%.1f]", k ? "," : "", ps[k],
             pct(which ? raw : lib, iters, ps[k]));
    printf("]}\n");
  }
  printf("{\"bench\":\"latency\",\"impl\":\"rlock\",\"masters\":%d,"
         "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f,\"errors\":%d}\n",
         n, iters, lp50, lp99, errors);
  printf("{\"bench\":\"latency\",\"impl\":\"raw_hiredis_evalsha_x2\","
         "\"masters\":%d,\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         n, iters, rp50, rp99);
  printf("{\"bench\":\"latency\",\"masters\":%d,\"ratio_p50\":%.3f,"
         "\"ratio_p99\":%.3f}\n",
         n, lp50 / rp50, lp99 / rp99);
  for (int i = 0; i < iters; i++) rlock_free(locks[i]);
  rlock_client_close(c);
  for (int m = 0; m < n; m++) redisFree(cs[m]);
  free(locks);
  free(lib);
  free(raw);
  return errors ? 1 : 0;
}
