/*
 * Hand-off under contention: PROCS processes x THREADS threads, one rlock
 * client per process, take one lock, hold it HOLD_MS, release it, pause
 * GAP_MS (so that the lock goes to a waiter, not straight back), for
 * SECONDS. Hand-off is the time from just before a release to the next
 * acquisition by a worker that was already waiting when the release
 * began; an acquisition of a free lock is not a hand-off and is not
 * counted as one. Each hand-off is classed as between processes or
 * between threads of one client, the two cases the targets judge. Times are
 * on CLOCK_MONOTONIC, shared by all processes, through shared memory.
 *
 * For the shapes that have one, the raw floor follows in a child process
 * (floor_handoff.c): two processes, or two threads, passing the same kind
 * of lock with plain hiredis (unlock, pub/sub message, acquire). Prints
 * JSON lines.
 *
 *   contention PROCS THREADS HOLD_MS SECONDS GAP_MS pubsub|poll MASTER...
 *
 * The fairness mode runs the same shape twice in one invocation, first
 * on a reentrant lock, then on a fair lock (rlock_get_fair), pub/sub.
 * Besides hand-off, it prints each worker's acquisitions (min, max, and
 * their ratio) and the hand-offs of both kinds together, so that the
 * spread of the two locks is read side by side from one run on one
 * machine. With a gap, a releasing worker is not waiting when its own
 * release happens, and who gets the lock is decided among the others:
 * the shape where a plain lock's spread is widest.
 *
 *   contention fairness PROCS THREADS HOLD_MS SECONDS GAP_MS MASTER...
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ready.h"
#include "rlock.h"
#include "spawn.h"
#include "stats.h"

#define MAX_WORKERS 256
#define MAX_SAMPLES 200000

typedef struct samples {
  atomic_long n;
  uint64_t v[MAX_SAMPLES];
} samples;

typedef struct shared {
  _Atomic uint64_t released_ns; /* the last release, 0 once taken */
  atomic_int releaser;           /* process of the last release */
  atomic_long counts[MAX_WORKERS];
  atomic_long free_acquisitions; /* the lock was free: no hand-off */
  atomic_int errors;
  samples cross, same;
} shared;

static int procs, threads, hold_ms, gap_ms, strategy, nmasters;
static int fair;             /* take a fair lock (fairness mode) */
static const char *bench_name = "contention";
static double seconds;
static char **masters;
static shared *sh;
static uint64_t start_ns, stop_ns;

typedef struct {
  rlock *lock;
  int proc, id;
} worker_arg;

static void add(samples *s, uint64_t v) {
  long i = atomic_fetch_add(&s->n, 1);
  if (i < MAX_SAMPLES) s->v[i] = v;
}

static void *worker(void *p) {
  worker_arg *a = p;
  while (bench_now_ns() < stop_ns) {
    uint64_t t_try = bench_now_ns();
    if (rlock_trylock(a->lock, 30000, 10000) != 0) {
      atomic_fetch_add(&sh->errors, 1);
      continue;
    }
    uint64_t now = bench_now_ns();
    uint64_t rel = atomic_exchange(&sh->released_ns, 0);
    int from = atomic_load(&sh->releaser);
    if (rel != 0 && t_try < rel && now > rel)
      add(from == a->proc ? &sh->same : &sh->cross, now - rel);
    else
      atomic_fetch_add(&sh->free_acquisitions, 1);
    atomic_fetch_add(&sh->counts[a->id], 1);
    if (hold_ms > 0) bench_sleep_ns((uint64_t)hold_ms * 1000000u);
    atomic_store(&sh->releaser, a->proc);
    atomic_store(&sh->released_ns, bench_now_ns());
    if (rlock_unlock(a->lock) != 0) atomic_fetch_add(&sh->errors, 1);
    if (gap_ms > 0) bench_sleep_ns((uint64_t)gap_ms * 1000000u);
  }
  return NULL;
}

static int child(int proc) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)masters;
  o.nmasters = (size_t)nmasters;
  o.wait_strategy = strategy;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0 || bench_wait_ready(c, 5000) != 0)
    return 2;
  rlock *l;
  if ((fair > 0 ? rlock_get_fair(c, "bench-fairness", &l)
            : rlock_get(c, fair < 0 ? "bench-fairness" : "bench-contention",
                        &l)) != 0)
    return 3;
  /* Start together, so that connecting is not measured. */
  while (bench_now_ns() < start_ns) bench_sleep_ns(1000000);
  pthread_t th[MAX_WORKERS];
  worker_arg args[MAX_WORKERS];
  for (int i = 0; i < threads; i++) {
    args[i] = (worker_arg){.lock = l, .proc = proc, .id = proc * threads + i};
    pthread_create(&th[i], NULL, worker, &args[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
  rlock_free(l);
  rlock_client_close(c);
  return 0;
}

/* Prints ,"<name>_n":..,"<name>_p50_us":..,"<name>_p99_us":.. */
static void print_samples(const char *name, samples *s) {
  long n = atomic_load(&s->n);
  if (n > MAX_SAMPLES) n = MAX_SAMPLES;
  bench_sort(s->v, n);
  printf(",\"%s_n\":%ld,\"%s_p50_us\":%.1f,\"%s_p99_us\":%.1f", name, n, name,
         bench_pct_us(s->v, n, 0.5), name, bench_pct_us(s->v, n, 0.99));
}

static void run(void) {
  memset(sh, 0, sizeof *sh);
  start_ns = bench_now_ns() + 1000000000ull;
  stop_ns = start_ns + (uint64_t)(seconds * 1e9);
  pid_t pids[MAX_WORKERS];
  fflush(stdout);
  for (int i = 0; i < procs; i++) {
    pids[i] = fork();
    if (pids[i] == 0) _exit(child(i));
  }
  int bad = 0;
  for (int i = 0; i < procs; i++) {
    int st = 0;
    if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) ||
        WEXITSTATUS(st) != 0)
      bad++;
  }
  double elapsed = (double)(bench_now_ns() - start_ns) / 1e9;
  long total = 0, mn = -1, mx = 0;
  for (int i = 0; i < procs * threads; i++) {
    long n = atomic_load(&sh->counts[i]);
    total += n;
    if (mn < 0 || n < mn) mn = n;
    if (n > mx) mx = n;
  }
  printf("{\"bench\":\"%s\",\"impl\":\"%s\",\"strategy\":\"%s\","
         "\"masters\":%d,\"procs\":%d,\"threads\":%d,\"hold_ms\":%d,"
         "\"gap_ms\":%d,\"seconds\":%.2f,\"acquisitions\":%ld,"
         "\"acq_per_sec\":%.1f,\"free_acquisitions\":%ld",
         bench_name, fair > 0 ? "rlock-fair" : "rlock",
         strategy == RLOCK_WAIT_POLL ? "poll" : "pubsub", nmasters, procs,
         threads, hold_ms, gap_ms, elapsed, total, (double)total / elapsed,
         atomic_load(&sh->free_acquisitions));
  if (fair != 0) {
    /* Every hand-off, between processes or threads alike. */
    static samples all;
    long nc = atomic_load(&sh->cross.n), ns = atomic_load(&sh->same.n);
    if (nc > MAX_SAMPLES) nc = MAX_SAMPLES;
    if (ns > MAX_SAMPLES) ns = MAX_SAMPLES;
    atomic_store(&all.n, 0);
    for (long i = 0; i < nc; i++) add(&all, sh->cross.v[i]);
    for (long i = 0; i < ns; i++) add(&all, sh->same.v[i]);
    print_samples("handoff", &all);
    printf(",\"worker_max_over_min\":%.2f", mn > 0 ? (double)mx / (double)mn
                                                   : -1.0);
  }
  print_samples("cross", &sh->cross);
  print_samples("same", &sh->same);
  printf(",\"worker_min\":%ld,\"worker_max\":%ld,\"errors\":%d,"
         "\"failed_procs\":%d}\n",
         mn, mx, atomic_load(&sh->errors), bad);
  fflush(stdout);
}

/* contention fairness PROCS THREADS HOLD_MS SECONDS GAP_MS MASTER...: a
 * plain lock, then a fair one, same shape, pub/sub. */
static int fairness(int argc, char **argv) {
  if (argc < 8) {
    fprintf(stderr, "usage: contention fairness PROCS THREADS HOLD_MS "
                    "SECONDS GAP_MS MASTER...\n");
    return 2;
  }
  procs = atoi(argv[2]);
  threads = atoi(argv[3]);
  hold_ms = atoi(argv[4]);
  seconds = atof(argv[5]);
  gap_ms = atoi(argv[6]);
  strategy = RLOCK_WAIT_PUBSUB;
  masters = &argv[7];
  nmasters = argc - 7;
  if (procs < 1 || threads < 1 || procs * threads > MAX_WORKERS ||
      hold_ms < 0 || seconds <= 0 || gap_ms < 0)
    return 2;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  bench_name = "fairness";
  fair = -1; /* the plain lock, under the fairness mode's name */
  run();
  fair = 1;
  run();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "fairness") == 0) return fairness(argc, argv);
  if (argc < 8) {
    fprintf(stderr, "usage: contention PROCS THREADS HOLD_MS SECONDS GAP_MS "
                    "pubsub|poll MASTER...\n");
    return 2;
  }
  procs = atoi(argv[1]);
  threads = atoi(argv[2]);
  hold_ms = atoi(argv[3]);
  seconds = atof(argv[4]);
  gap_ms = atoi(argv[5]);
  strategy = strcmp(argv[6], "poll") == 0 ? RLOCK_WAIT_POLL : RLOCK_WAIT_PUBSUB;
  masters = &argv[7];
  nmasters = argc - 7;
  if (procs < 1 || threads < 1 || procs * threads > MAX_WORKERS ||
      hold_ms < 0 || seconds <= 0 || gap_ms < 0)
    return 2;
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  run();
  /* The raw floor of the same shape, one master, pub/sub. */
  if (nmasters == 1 && strategy == RLOCK_WAIT_PUBSUB &&
      (procs == 1) != (threads == 1)) {
    char hold[16];
    snprintf(hold, sizeof hold, "%d", hold_ms);
    char *fa[] = {NULL, procs > 1 ? "procs" : "threads", hold, argv[4],
                  masters[0], NULL};
    bench_spawn("bench_floor_handoff", fa);
  }
  return 0;
}
