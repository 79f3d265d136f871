/*
 * The raw floor of a lock+unlock pair: what the same work costs with plain
 * synchronous hiredis, in a process of its own where no rlock code is
 * linked and no rlock thread runs, so that nothing of the library can slow
 * the baseline down. Each pair is rlock's acquire script then its unlock
 * script (EVALSHA, loaded with SCRIPT LOAD), on a distinct lock, sent to
 * every master at once when there are several (see raw.h). The bench
 * programs run it as a child between their own rounds; it can be run by
 * hand as well. Prints JSON lines.
 *
 *   floor latency ITERATIONS TAG MASTER...
 *       one connection per master, one pair at a time: p50/p99 per pair
 *       (and the raw PING round trip on the first master, for reference)
 *   floor threads SECONDS THREADS TAG MASTER...
 *       THREADS threads, each with its own connection per master: pairs/s
 *
 * TAG goes into the lock names, so that rounds of one run use fresh locks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "raw.h"
#include "stats.h"

static int latency(int iters, const char *tag, char **masters, int n) {
  raw_conns rc;
  if (raw_open(&rc, masters, n) != 0) return 1;
  char owner[64];
  raw_owner(owner, sizeof owner, (unsigned)getpid(), 1);
  uint64_t *all = calloc((size_t)iters, sizeof *all);
  uint64_t *quorum = calloc((size_t)iters, sizeof *quorum);
  int errors = 0;
  /* Warm up: connections, script caches and pages touched. */
  for (int i = 0; i < 200; i++) {
    char name[64];
    raw_lock l;
    snprintf(name, sizeof name, "floor-warm-%s-%d", tag, i);
    raw_lock_init(&l, name);
    raw_acquire(&rc, &l, owner, NULL);
    raw_unlock(&rc, &l, owner, NULL);
  }
  for (int i = 0; i < iters; i++) {
    char name[64];
    raw_lock l;
    snprintf(name, sizeof name, "floor-%s-%d", tag, i);
    raw_lock_init(&l, name);
    uint64_t qa = 0, qu = 0, t0 = bench_now_ns();
    if (raw_acquire(&rc, &l, owner, &qa) != n) errors++;
    if (raw_unlock(&rc, &l, owner, &qu) != n) errors++;
    all[i] = bench_now_ns() - t0;
    quorum[i] = qa + qu;
  }
  bench_sort(all, iters);
  bench_sort(quorum, iters);
  printf("{\"bench\":\"latency\",\"impl\":\"floor\",\"masters\":%d,"
         "\"iterations\":%d,\"p50_us\":%.1f,\"p99_us\":%.1f,"
         "\"quorum_p50_us\":%.1f,\"quorum_p99_us\":%.1f,\"errors\":%d",
         n, iters, bench_pct_us(all, iters, 0.5),
         bench_pct_us(all, iters, 0.99), bench_pct_us(quorum, iters, 0.5),
         bench_pct_us(quorum, iters, 0.99), errors);
  bench_print_points(all, iters);
  printf("}\n");
  /* The bare loopback round trip, the floor under every figure here. */
  enum { PINGS = 2000 };
  uint64_t *ping = calloc(PINGS, sizeof *ping);
  for (int i = 0; i < PINGS; i++) {
    uint64_t t0 = bench_now_ns();
    redisReply *r = redisCommand(rc.c[0], "PING");
    ping[i] = bench_now_ns() - t0;
    if (r) freeReplyObject(r);
  }
  bench_sort(ping, PINGS);
  printf("{\"bench\":\"ping\",\"impl\":\"floor\",\"n\":%d,\"p50_us\":%.1f,"
         "\"p99_us\":%.1f}\n",
         PINGS, bench_pct_us(ping, PINGS, 0.5), bench_pct_us(ping, PINGS, 0.99));
  free(ping);
  free(all);
  free(quorum);
  raw_close(&rc);
  return 0;
}

/* --- threads -------------------------------------------------------------- */

static char **t_masters;
static int t_n;
static const char *t_tag;
static atomic_int t_ready, t_go, t_stop;
static atomic_long t_pairs, t_errors;

static void *thread_main(void *arg) {
  unsigned id = (unsigned)(long)arg;
  raw_conns rc;
  int ok = raw_open(&rc, t_masters, t_n) == 0;
  atomic_fetch_add(&t_ready, 1);
  if (!ok) return NULL;
  char owner[64];
  raw_owner(owner, sizeof owner, (unsigned)getpid(), id);
  raw_lock locks[64];
  for (int k = 0; k < 64; k++) {
    char name[64];
    snprintf(name, sizeof name, "floor-tp-%s-%u-%d", t_tag, id, k);
    raw_lock_init(&locks[k], name);
  }
  while (!atomic_load(&t_go)) usleep(100);
  long pairs = 0, errors = 0;
  for (long k = 0; !atomic_load_explicit(&t_stop, memory_order_relaxed); k++) {
    const raw_lock *l = &locks[k % 64];
    int good = raw_acquire(&rc, l, owner, NULL) == t_n &&
               raw_unlock(&rc, l, owner, NULL) == t_n;
    if (atomic_load(&t_stop)) break; /* finished after the window */
    if (good)
      pairs++;
    else
      errors++;
  }
  atomic_fetch_add(&t_pairs, pairs);
  atomic_fetch_add(&t_errors, errors);
  raw_close(&rc);
  return NULL;
}

static int threads(double seconds, int nthreads, const char *tag,
                   char **masters, int n) {
  t_masters = masters;
  t_n = n;
  t_tag = tag;
  pthread_t *th = calloc((size_t)nthreads, sizeof *th);
  for (long i = 0; i < nthreads; i++)
    pthread_create(&th[i], NULL, thread_main, (void *)i);
  while (atomic_load(&t_ready) < nthreads) usleep(1000);
  uint64_t t0 = bench_now_ns();
  atomic_store(&t_go, 1);
  bench_sleep_ns((uint64_t)(seconds * 1e9));
  atomic_store(&t_stop, 1);
  double t = (double)(bench_now_ns() - t0) / 1e9;
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], NULL);
  printf("{\"bench\":\"throughput\",\"impl\":\"floor\",\"mode\":\"threads\","
         "\"masters\":%d,\"concurrency\":%d,\"seconds\":%.2f,"
         "\"pairs_per_s\":%.0f,\"errors\":%ld}\n",
         n, nthreads, t, (double)atomic_load(&t_pairs) / t,
         atomic_load(&t_errors));
  free(th);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 5 && strcmp(argv[1], "latency") == 0)
    return latency(atoi(argv[2]), argv[3], &argv[4], argc - 4);
  if (argc >= 6 && strcmp(argv[1], "threads") == 0)
    return threads(atof(argv[2]), atoi(argv[3]), argv[4], &argv[5], argc - 5);
  fprintf(stderr,
          "usage: floor latency ITERATIONS TAG MASTER...\n"
          "       floor threads SECONDS THREADS TAG MASTER...\n");
  return 2;
}
