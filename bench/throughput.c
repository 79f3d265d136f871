/*
 * Throughput of lock+unlock pairs on distinct locks through rlock, against
 * its raw floor measured in the same run. rlock blocking: T threads share
 * one client (one pipelined connection per master). rlock async: C chains
 * of rlock_lock_async / rlock_unlock_async in flight on the client's loop.
 * Floor (floor.c, a child process with no rlock thread in it): T threads,
 * each with its own synchronous hiredis connection per master, sending the
 * same two scripts, to all masters at once for N > 1. The async API's
 * ceiling is redis-benchmark's (ceiling.c), run by scripts/bench. Each
 * configuration runs SECONDS, ROUNDS times, floor and rlock alternating;
 * one JSON line per configuration and round.
 *
 *   throughput SECONDS ROUNDS THREADS INFLIGHT MASTER [MASTER...]
 *     THREADS, INFLIGHT: comma-separated lists ("1,4,16,64"), or "-"
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "ready.h"
#include "rlock.h"
#include "spawn.h"
#include "stats.h"

#define NAMES 64 /* distinct locks per thread or chain */

static int nmasters;
static char **masters;
static char *seconds_arg;
static double seconds;
static int round_no;
static atomic_int stop, go;
static atomic_long pairs, errors;

/* --- floor, in a child process -------------------------------------------- */

static int floor_threads(int n) {
  char nt[16], tag[32];
  snprintf(nt, sizeof nt, "%d", n);
  snprintf(tag, sizeof tag, "%d-%d", (int)getpid(), round_no);
  char *argv[8 + 64] = {NULL, "threads", seconds_arg, nt, tag};
  for (int m = 0; m < nmasters && m < 64; m++) argv[5 + m] = masters[m];
  return bench_spawn("bench_floor", argv);
}

/* --- rlock blocking ------------------------------------------------------- */

typedef struct {
  rlock_client *c;
  long id;
  atomic_int *ready;
} lib_arg;

static void *lib_thread(void *p) {
  lib_arg *a = p;
  rlock *locks[NAMES];
  for (int k = 0; k < NAMES; k++) {
    char name[64];
    snprintf(name, sizeof name, "tp-%d-%ld-%d", round_no, a->id, k);
    if (rlock_get(a->c, name, &locks[k]) != 0) abort();
  }
  atomic_fetch_add(a->ready, 1);
  while (!atomic_load(&go)) usleep(100);
  for (long k = 0;; k++) {
    rlock *l = locks[k % NAMES];
    int ok = rlock_trylock(l, 0, 10000) == 0 && rlock_unlock(l) == 0;
    if (atomic_load(&stop)) break; /* finished after the window */
    atomic_fetch_add(ok ? &pairs : &errors, 1);
  }
  for (int k = 0; k < NAMES; k++) rlock_free(locks[k]);
  return NULL;
}

/* What this process (every rlock thread and caller, not the floor's
 * child) spent during a window: CPU and context switches, per pair. */
typedef struct usage {
  double cpu_us;
  double switches;
} usage;

static usage usage_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  usage u = {(double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec +
                 (double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec,
             (double)ru.ru_nvcsw + (double)ru.ru_nivcsw};
  return u;
}

static void report(const char *mode, int conc, double t, usage u0,
                   usage u1) {
  double n = (double)atomic_load(&pairs);
  if (n < 1) n = 1;
  printf("{\"bench\":\"throughput\",\"impl\":\"rlock\",\"mode\":\"%s\","
         "\"masters\":%d,\"concurrency\":%d,\"round\":%d,\"seconds\":%.2f,"
         "\"pairs_per_s\":%.0f,\"errors\":%ld,\"cpu_us_per_pair\":%.1f,"
         "\"switches_per_pair\":%.2f}\n",
         mode, nmasters, conc, round_no, t, (double)atomic_load(&pairs) / t,
         atomic_load(&errors), (u1.cpu_us - u0.cpu_us) / n,
         (u1.switches - u0.switches) / n);
  fflush(stdout);
}

static void run_threads(rlock_client *c, int n) {
  pthread_t *th = calloc((size_t)n, sizeof *th);
  lib_arg *args = calloc((size_t)n, sizeof *args);
  atomic_int ready = 0;
  atomic_store(&stop, 0);
  atomic_store(&go, 0);
  atomic_store(&pairs, 0);
  atomic_store(&errors, 0);
  for (int i = 0; i < n; i++) {
    args[i] = (lib_arg){.c = c, .id = i, .ready = &ready};
    pthread_create(&th[i], NULL, lib_thread, &args[i]);
  }
  while (atomic_load(&ready) < n) usleep(1000);
  usage u0 = usage_now();
  uint64_t t0 = bench_now_ns();
  atomic_store(&go, 1);
  bench_sleep_ns((uint64_t)(seconds * 1e9));
  atomic_store(&stop, 1);
  double t = (double)(bench_now_ns() - t0) / 1e9;
  usage u1 = usage_now();
  long done = atomic_load(&pairs);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  atomic_store(&pairs, done);
  report("threads", n, t, u0, u1);
  free(th);
  free(args);
}

/* --- rlock async ---------------------------------------------------------- */

typedef struct chain {
  rlock *locks[NAMES];
  uint64_t owner;
  long k;
  atomic_int *live;
} chain;

static void chain_next(chain *ch);

static void on_unlocked(rlock *l, int status, void *arg) {
  (void)l;
  chain *ch = arg;
  if (!atomic_load(&stop)) atomic_fetch_add(status == 0 ? &pairs : &errors, 1);
  chain_next(ch);
}

static void on_locked(rlock *l, int status, void *arg) {
  chain *ch = arg;
  if (status != 0) {
    atomic_fetch_add(&errors, 1);
    chain_next(ch);
    return;
  }
  if (rlock_unlock_async(l, ch->owner, on_unlocked, ch) != 0)
    atomic_fetch_sub(ch->live, 1);
}

static void chain_next(chain *ch) {
  if (atomic_load(&stop)) {
    atomic_fetch_sub(ch->live, 1);
    return;
  }
  rlock *l = ch->locks[ch->k++ % NAMES];
  if (rlock_lock_async(l, ch->owner, 0, 10000, on_locked, ch) != 0)
    atomic_fetch_sub(ch->live, 1);
}

static void run_async(rlock_client *c, int n) {
  chain *chains = calloc((size_t)n, sizeof *chains);
  atomic_int live = n;
  atomic_store(&stop, 0);
  atomic_store(&pairs, 0);
  atomic_store(&errors, 0);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < NAMES; k++) {
      char name[64];
      snprintf(name, sizeof name, "ta-%d-%d-%d", round_no, i, k);
      if (rlock_get(c, name, &chains[i].locks[k]) != 0) abort();
    }
    chains[i].owner = (uint64_t)i + 1;
    chains[i].live = &live;
  }
  usage u0 = usage_now();
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < n; i++) chain_next(&chains[i]);
  bench_sleep_ns((uint64_t)(seconds * 1e9));
  atomic_store(&stop, 1);
  double t = (double)(bench_now_ns() - t0) / 1e9;
  usage u1 = usage_now();
  long done = atomic_load(&pairs);
  while (atomic_load(&live) > 0) usleep(1000);
  atomic_store(&pairs, done);
  report("async", n, t, u0, u1);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < NAMES; k++) rlock_free(chains[i].locks[k]);
  free(chains);
}

/* --- driver --------------------------------------------------------------- */

/* Parses "1,4,16" into v; returns the count ("-": none). */
static int parse_list(const char *s, int *v, int max) {
  if (strcmp(s, "-") == 0) return 0;
  int n = 0;
  char *end;
  while (n < max) {
    v[n++] = (int)strtol(s, &end, 10);
    if (*end != ',') break;
    s = end + 1;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s SECONDS ROUNDS THREADS INFLIGHT MASTER...\n",
            argv[0]);
    return 2;
  }
  seconds_arg = argv[1];
  seconds = atof(argv[1]);
  int rounds = atoi(argv[2]);
  int threads[16], inflight[16];
  int nt = parse_list(argv[3], threads, 16);
  int na = parse_list(argv[4], inflight, 16);
  masters = &argv[5];
  nmasters = argc - 5;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)masters;
  o.nmasters = (size_t)nmasters;
  o.master_timeout_ms = 1000;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0 || bench_wait_ready(c, 5000) != 0) {
    fprintf(stderr, "throughput: masters not reachable\n");
    return 1;
  }
  int bad = 0;
  for (round_no = 0; round_no < rounds; round_no++) {
    for (int i = 0; i < nt; i++) {
      if (round_no % 2 == 0) bad |= floor_threads(threads[i]);
      run_threads(c, threads[i]);
      if (round_no % 2 == 1) bad |= floor_threads(threads[i]);
    }
    for (int i = 0; i < na; i++) run_async(c, inflight[i]);
  }
  rlock_client_close(c);
  return bad ? 1 : 0;
}
