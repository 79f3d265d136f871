/*
 * Contention benchmark: P processes x T threads take one lock, hold it H
 * ms, release it, for a fixed time, once with pub/sub waiting and once with
 * polling, against a redis-server of its own. It prints one JSON line per
 * strategy (acquisitions per second, hand-off latency from a release to
 * the next acquisition, p50 and p99, and the fewest and most acquisitions
 * of one worker) and one for a raw round-trip baseline (PING with sync
 * hiredis). Hand-off latency is measured on CLOCK_MONOTONIC, which all
 * processes share, through shared memory. It prints figures; it does not
 * pass or fail.
 *
 * After a release a worker pauses GAP_MS before it tries again, so that
 * the lock goes to a waiter instead of straight back to the thread that
 * released it: hand-off then measures waking, not re-acquiring.
 *
 *   contention [PROCS THREADS HOLD_MS SECONDS [GAP_MS]]   (defaults 4 4 1 5 2)
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "rlock.h"

#define MAX_WORKERS 256
#define MAX_SAMPLES 400000

typedef struct shared {
  _Atomic uint64_t released_ns; /* the last release, 0 once handed off */
  atomic_long counts[MAX_WORKERS];
  atomic_long nsamples;
  atomic_int errors;
  uint64_t samples[MAX_SAMPLES]; /* hand-off latencies, ns */
} shared;

static int procs = 4, threads = 4, hold_ms = 1, seconds = 5, gap_ms = 2;
static shared *sh;
static uint64_t stop_ns;
static rt_redis srv;

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

typedef struct {
  rlock *lock;
  int id;
} worker_arg;

static void *worker(void *p) {
  worker_arg *a = p;
  while (mono_ns() < stop_ns) {
    if (rlock_trylock(a->lock, 30000, 10000) != 0) {
      atomic_fetch_add(&sh->errors, 1);
      continue;
    }
    uint64_t now = mono_ns();
    uint64_t rel = atomic_exchange(&sh->released_ns, 0);
    if (rel != 0 && now > rel) {
      long i = atomic_fetch_add(&sh->nsamples, 1);
      if (i < MAX_SAMPLES) sh->samples[i] = now - rel;
    }
    atomic_fetch_add(&sh->counts[a->id], 1);
    if (hold_ms > 0) sleep_ms(hold_ms);
    atomic_store(&sh->released_ns, mono_ns());
    if (rlock_unlock(a->lock) != 0) atomic_fetch_add(&sh->errors, 1);
    if (gap_ms > 0) sleep_ms(gap_ms);
  }
  return NULL;
}

static int child(int proc, int strategy) {
  const char *m[] = {srv.url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  o.wait_strategy = strategy;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0) return 2;
  rlock *l;
  if (rlock_get(c, "bench", &l) != 0) return 3;
  pthread_t th[MAX_WORKERS];
  worker_arg args[MAX_WORKERS];
  for (int i = 0; i < threads; i++) {
    args[i] = (worker_arg){.lock = l, .id = proc * threads + i};
    pthread_create(&th[i], NULL, worker, &args[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  rlock_free(l);
  rlock_client_close(c);
  return 0;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct_us(uint64_t *v, long n, double p) {
  if (n <= 0) return 0;
  long i = (long)(p * (double)(n - 1));
  return (double)v[i] / 1000.0;
}

static void run(const char *name, int strategy) {
  memset(sh, 0, sizeof *sh);
  /* A second to connect, then the measured period. */
  stop_ns = mono_ns() + 1000000000ull + (uint64_t)seconds * 1000000000ull;
  uint64_t t0 = mono_ns() + 1000000000ull;
  pid_t pids[MAX_WORKERS];
  for (int i = 0; i < procs; i++) {
    pids[i] = fork();
    if (pids[i] == 0) {
      /* Wait for the start so that connecting is not measured. */
      while (mono_ns() < t0) sleep_ms(5);
      _exit(child(i, strategy));
    }
  }
  int bad = 0;
  for (int i = 0; i < procs; i++) {
    int st = 0;
    if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      bad++;
  }
  double elapsed = (double)(mono_ns() - t0) / 1e9;
  long total = 0, mn = -1, mx = 0;
  for (int i = 0; i < procs * threads; i++) {
    long n = atomic_load(&sh->counts[i]);
    total += n;
    if (mn < 0 || n < mn) mn = n;
    if (n > mx) mx = n;
  }
  long ns = atomic_load(&sh->nsamples);
  if (ns > MAX_SAMPLES) ns = MAX_SAMPLES;
  qsort(sh->samples, (size_t)ns, sizeof sh->samples[0], cmp_u64);
  printf("{\"bench\":\"contention\",\"strategy\":\"%s\",\"procs\":%d,"
         "\"threads\":%d,\"hold_ms\":%d,\"gap_ms\":%d,\"seconds\":%.2f,"
         "\"acquisitions\":%ld,\"acq_per_sec\":%.1f,"
         "\"handoff_p50_us\":%.1f,\"handoff_p99_us\":%.1f,"
         "\"worker_min\":%ld,\"worker_max\":%ld,\"errors\":%d,"
         "\"failed_procs\":%d}\n",
         name, procs, threads, hold_ms, gap_ms, elapsed, total,
         (double)total / elapsed, pct_us(sh->samples, ns, 0.50),
         pct_us(sh->samples, ns, 0.99), mn, mx, atomic_load(&sh->errors),
         bad);
  fflush(stdout);
}

static void ping_baseline(void) {
  redisContext *c = redisConnect("127.0.0.1", srv.port);
  if (c == NULL || c->err) {
    if (c) redisFree(c);
    return;
  }
  enum { N = 5000 };
  static uint64_t v[N];
  for (int i = 0; i < N; i++) {
    uint64_t t = mono_ns();
    redisReply *r = redisCommand(c, "PING");
    v[i] = mono_ns() - t;
    if (r) freeReplyObject(r);
  }
  redisFree(c);
  qsort(v, N, sizeof v[0], cmp_u64);
  printf("{\"bench\":\"baseline\",\"op\":\"PING\",\"n\":%d,"
         "\"p50_us\":%.1f,\"p99_us\":%.1f}\n",
         N, pct_us(v, N, 0.50), pct_us(v, N, 0.99));
  fflush(stdout);
}

int main(int argc, char **argv) {
  if (argc == 5 || argc == 6) {
    procs = atoi(argv[1]);
    threads = atoi(argv[2]);
    hold_ms = atoi(argv[3]);
    seconds = atoi(argv[4]);
    if (argc == 6) gap_ms = atoi(argv[5]);
  }
  if (procs < 1 || threads < 1 || procs * threads > MAX_WORKERS ||
      hold_ms < 0 || seconds < 1 || seconds > 60 || gap_ms < 0) {
    fprintf(stderr,
            "usage: contention [PROCS THREADS HOLD_MS SECONDS [GAP_MS]]\n");
    return 2;
  }
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  if (rt_redis_start(&srv, NULL) != 0) return 1;
  ping_baseline();
  run("pubsub", RLOCK_WAIT_PUBSUB);
  run("poll", RLOCK_WAIT_POLL);
  rt_redis_stop(&srv);
  return 0;
}
