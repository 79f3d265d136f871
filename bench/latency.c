/*
 * Latency of one lock+unlock pair through rlock's blocking API, one
 * thread, against its raw floor measured in the same run: rlock_trylock
 * (wait 0, lease 10 s) then rlock_unlock, on a distinct lock each time,
 * quorum over the masters given. The floor (floor.c) does the same two
 * scripts with plain hiredis in a child process where no rlock thread
 * lives, to every master at once for N > 1. Rounds alternate floor and
 * rlock (and which goes first), so that a noisy neighbour hits both alike;
 * the report takes the median of each side's rounds. Prints JSON lines.
 *
 *   latency ITERATIONS ROUNDS MASTER [MASTER...]   (masters as host:port)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ready.h"
#include "rlock.h"
#include "spawn.h"
#include "stats.h"

static int n_masters;
static char **masters;

static int floor_round(int iters, int round) {
  char its[16], tag[32];
  snprintf(its, sizeof its, "%d", iters);
  snprintf(tag, sizeof tag, "%d-%d", (int)getpid(), round);
  char *argv[8 + 64] = {NULL, "latency", its, tag};
  for (int m = 0; m < n_masters && m < 64; m++) argv[4 + m] = masters[m];
  return bench_spawn("bench_floor", argv);
}

static int rlock_round(rlock_client *c, int iters, int round) {
  rlock **locks = calloc((size_t)iters, sizeof *locks);
  uint64_t *v = calloc((size_t)iters, sizeof *v);
  int errors = 0;
  for (int i = 0; i < iters; i++) {
    char name[48];
    snprintf(name, sizeof name, "lat-%d-%d", round, i);
    if (rlock_get(c, name, &locks[i]) != 0) return 1;
  }
  for (int i = 0; i < iters; i++) {
    uint64_t t0 = bench_now_ns();
    if (rlock_trylock(locks[i], 0, 10000) != 0) errors++;
    if (rlock_unlock(locks[i]) != 0) errors++;
    v[i] = bench_now_ns() - t0;
  }
  bench_sort(v, iters);
  printf("{\"bench\":\"latency\",\"impl\":\"rlock\",\"masters\":%d,"
         "\"round\":%d,\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f,"
         "\"errors\":%d",
         n_masters, round, iters, bench_pct_us(v, iters, 0.5),
         bench_pct_us(v, iters, 0.99), errors);
  bench_print_points(v, iters);
  printf("}\n");
  for (int i = 0; i < iters; i++) rlock_free(locks[i]);
  free(locks);
  free(v);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s ITERATIONS ROUNDS MASTER...\n", argv[0]);
    return 2;
  }
  int iters = atoi(argv[1]), rounds = atoi(argv[2]);
  masters = &argv[3];
  n_masters = argc - 3;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)masters;
  o.nmasters = (size_t)n_masters;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0 || bench_wait_ready(c, 5000) != 0) {
    fprintf(stderr, "latency: masters not reachable\n");
    return 1;
  }
  /* Warm up: scripts cached, pages and the loop thread's paths touched.
   * Every call must succeed, the first one included. */
  rlock *w;
  if (rlock_get(c, "lat-warmup", &w) != 0) return 1;
  for (int i = 0; i < 200; i++) {
    int rc = rlock_trylock(w, 0, 10000);
    if (rc == 0) rc = rlock_unlock(w);
    if (rc != 0) {
      fprintf(stderr, "latency: warm-up call %d: %s\n", i, rlock_strerror(rc));
      return 1;
    }
  }
  rlock_free(w);
  int bad = 0;
  for (int r = 0; r < rounds; r++) {
    if (r % 2 == 0) bad |= floor_round(iters, r);
    bad |= rlock_round(c, iters, r);
    if (r % 2 == 1) bad |= floor_round(iters, r);
  }
  rlock_client_close(c);
  return bad ? 1 : 0;
}
