/*
 * The pipelined ceiling of one master, the async API's yardstick, measured
 * two ways in a process with no rlock code:
 *   - redis-benchmark, EVALSHA of rlock's acquire script, 50 connections,
 *     pipelines of 16 and 64, lock names randomized with __rand_int__ over
 *     -r 16384 names (as many as the async benchmark's 256 chains x 64
 *     names); a pair is taken as two such calls (pairs/s = calls/s / 2);
 *   - the pair itself: THREADS threads, each with one connection that
 *     keeps DEPTH pairs (acquire script then unlock script, on distinct
 *     locks, 64 x DEPTH names per thread, reused as the async benchmark
 *     reuses its names) in one pipeline, written at once, then every reply
 *     read.
 * The redis-benchmark figure counts acquisitions of fresh or reentered
 * locks that are never released, which is not the work of a pair; the
 * measured pair is. The report judges against the larger of the two. The
 * script bodies come from the generated floor_scripts.h. Prints one JSON
 * line per measurement.
 *
 *   ceiling REQUESTS SECONDS MASTER   (host:port)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "raw.h"
#include "stats.h"

static char *master;
static double seconds;
static int depth;
static atomic_int go, stop, ready;
static atomic_long pairs, errors;

static void redis_benchmark(long requests, int pipeline, const char *sha) {
  char host[64], owner[64], cmd[1024];
  int port;
  bench_host_port(master, host, sizeof host, &port);
  raw_owner(owner, sizeof owner, 42, 1);
  /* The acquire's 10 arguments (lib/lock/acquire.c): lease, owner, count 1, a
   * token floor and a deadline, both fixed here (wall-clock microseconds
   * now, and an hour later), which leaves the script's work the same. */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long us = (unsigned long long)ts.tv_sec * 1000000u +
                          (unsigned long long)ts.tv_nsec / 1000;
  /* The server's own benchmark tool: valkey-benchmark beside
   * RLOCK_TEST_SERVER=valkey-server (as the tests name their cli). */
  const char *server = getenv("RLOCK_TEST_SERVER");
  char tool[256] = "redis-benchmark";
  size_t n = server ? strlen(server) : 0, end = sizeof "-server" - 1;
  if (n > end && strcmp(server + n - end, "-server") == 0)
    snprintf(tool, sizeof tool, "%.*s-benchmark", (int)(n - end), server);
  snprintf(cmd, sizeof cmd,
           "%s -h %s -p %d -c 50 -n %ld -P %d -r 16384 --csv "
           "EVALSHA %s 2 'rlock:{rb-__rand_int__}' "
           "'rlock:{rb-__rand_int__}:fence' 10000 '%s' 1 %llu %llu",
           tool, host, port, requests, pipeline, sha, owner, us,
           us + 3600000000ull);
  FILE *p = popen(cmd, "r");
  if (p == NULL) return;
  char line[1024];
  double rps = 0;
  while (fgets(line, sizeof line, p)) {
    /* "test","rps",...  then  "EVALSHA ...","123456.79",... */
    char *q = strstr(line, "\",\"");
    if (q && strncmp(line, "\"EVALSHA", 8) == 0) rps = atof(q + 3);
  }
  int st = pclose(p);
  printf("{\"bench\":\"ceiling\",\"impl\":\"redis-benchmark\",\"masters\":1,"
         "\"pipeline\":%d,\"clients\":50,\"requests\":%ld,"
         "\"calls_per_s\":%.0f,\"pairs_per_s\":%.0f,\"status\":%d}\n",
         pipeline, requests, rps, rps / 2, st);
  fflush(stdout);
}

static void *pair_thread(void *arg) {
  unsigned id = (unsigned)(long)arg;
  raw_conns rc;
  int ok = raw_open(&rc, &master, 1) == 0;
  atomic_fetch_add(&ready, 1);
  if (!ok) return NULL;
  char owner[64];
  raw_owner(owner, sizeof owner, (unsigned)getpid(), id + 1);
  int nlocks = 64 * depth;
  raw_lock *locks = calloc((size_t)nlocks, sizeof *locks);
  for (int k = 0; k < nlocks; k++) {
    char name[64];
    snprintf(name, sizeof name, "ceil-%d-%u-%d", (int)getpid(), id, k);
    raw_lock_init(&locks[k], name);
  }
  while (!atomic_load(&go)) usleep(100);
  long done = 0, bad = 0;
  for (int b = 0;; b = (b + 1) % 64) {
    int g = raw_pipelined_pairs(&rc, &locks[b * depth], depth, owner);
    if (atomic_load(&stop)) break; /* finished after the window */
    if (g < 0) {
      bad += depth;
      break;
    }
    done += g;
    bad += depth - g;
  }
  atomic_fetch_add(&pairs, done);
  atomic_fetch_add(&errors, bad);
  free(locks);
  raw_close(&rc);
  return NULL;
}

static void pipelined_pairs(int threads) {
  atomic_store(&go, 0);
  atomic_store(&stop, 0);
  atomic_store(&ready, 0);
  atomic_store(&pairs, 0);
  atomic_store(&errors, 0);
  pthread_t th[64];
  for (long i = 0; i < threads; i++)
    pthread_create(&th[i], NULL, pair_thread, (void *)i);
  while (atomic_load(&ready) < threads) usleep(1000);
  uint64_t t0 = bench_now_ns();
  atomic_store(&go, 1);
  bench_sleep_ns((uint64_t)(seconds * 1e9));
  atomic_store(&stop, 1);
  double t = (double)(bench_now_ns() - t0) / 1e9;
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  printf("{\"bench\":\"ceiling\",\"impl\":\"raw_pipelined_pairs\","
         "\"masters\":1,\"threads\":%d,\"depth\":%d,\"seconds\":%.2f,"
         "\"pairs_per_s\":%.0f,\"errors\":%ld}\n",
         threads, depth, t, (double)atomic_load(&pairs) / t,
         atomic_load(&errors));
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ceiling REQUESTS SECONDS MASTER\n");
    return 2;
  }
  long requests = atol(argv[1]);
  seconds = atof(argv[2]);
  master = argv[3];
  raw_conns rc;
  if (raw_open(&rc, &master, 1) != 0) return 1;
  redis_benchmark(requests, 16, rc.acquire_sha);
  redis_benchmark(requests, 64, rc.acquire_sha);
  raw_close(&rc);
  static const int shapes[][2] = {{1, 256}, {2, 128}, {4, 64}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    depth = shapes[s][1];
    pipelined_pairs(shapes[s][0]);
  }
  return 0;
}
