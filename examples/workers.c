/*
 * Blocking workers in threads: two clients (as two processes would have),
 * three worker threads each, contend for one lock held by quorum over the
 * masters given on the command line, and print who holds it, with its
 * fencing token. Inside the critical section each worker checks that
 * nobody else is inside, so mutual exclusion is visible in the output.
 *
 *   workers SECONDS MASTER [MASTER...]
 */
#include <inttypes.h>
#include <pthread.h>
#include <rlock.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define CLIENTS 2
#define WORKERS 3

static atomic_int inside;
static atomic_int violations;
static atomic_long acquisitions;
static atomic_long errors;
static uint64_t last_token;
static volatile int stop;

typedef struct {
  rlock *lock;
  int id;
} worker;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double t0;

static void *run(void *p) {
  worker *w = p;
  while (!stop) {
    int rc = rlock_trylock(w->lock, 2000, 5000);
    if (rc != RLOCK_OK) {
      printf("%6.2fs worker %d: %s\n", now_s() - t0, w->id,
             rlock_strerror(rc));
      atomic_fetch_add(&errors, 1);
      continue;
    }
    if (atomic_fetch_add(&inside, 1) != 0) atomic_fetch_add(&violations, 1);
    uint64_t token = 0;
    rlock_fencing_token(w->lock, &token);
    if (token <= last_token) atomic_fetch_add(&violations, 1);
    last_token = token; /* written only by the holder */
    long n = atomic_fetch_add(&acquisitions, 1) + 1;
    if (n % 25 == 1)
      printf("%6.2fs worker %d holds the lock, token %" PRIu64
             " (acquisition %ld)\n",
             now_s() - t0, w->id, token, n);
    usleep(2000);
    atomic_fetch_sub(&inside, 1);
    rc = rlock_unlock(w->lock);
    if (rc != RLOCK_OK) {
      printf("%6.2fs worker %d: unlock: %s\n", now_s() - t0, w->id,
             rlock_strerror(rc));
      atomic_fetch_add(&errors, 1);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SECONDS MASTER [MASTER...]\n", argv[0]);
    return 2;
  }
  int seconds = atoi(argv[1]);
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with the script's */
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)&argv[2];
  o.nmasters = (size_t)(argc - 2);
  o.master_timeout_ms = 100;
  rlock_client *clients[CLIENTS];
  rlock *locks[CLIENTS];
  for (int i = 0; i < CLIENTS; i++) {
    int rc = rlock_client_open(&clients[i], &o);
    if (rc == 0) rc = rlock_get(clients[i], "workers", &locks[i]);
    if (rc != 0) {
      fprintf(stderr, "workers: %s\n", rlock_strerror(rc));
      return 1;
    }
  }
  printf("workers: %d clients x %d workers, one lock over %zu masters, %d s\n",
         CLIENTS, WORKERS, o.nmasters, seconds);
  t0 = now_s();
  pthread_t th[CLIENTS * WORKERS];
  worker ws[CLIENTS * WORKERS];
  for (int i = 0; i < CLIENTS * WORKERS; i++) {
    ws[i] = (worker){.lock = locks[i % CLIENTS], .id = i};
    pthread_create(&th[i], NULL, run, &ws[i]);
  }
  sleep((unsigned)seconds);
  stop = 1;
  for (int i = 0; i < CLIENTS * WORKERS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < CLIENTS; i++) {
    rlock_free(locks[i]);
    rlock_client_close(clients[i]);
  }
  printf("workers: %ld acquisitions, %d mutual-exclusion or token violations, "
         "%ld waits that timed out or failed\n",
         (long)acquisitions, violations, (long)errors);
  return violations == 0 && acquisitions > 0 ? 0 : 1;
}
