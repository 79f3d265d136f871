/*
 * Elections: how long from a leader's rlock_resign to an observer's
 * callback with the next leader, and to the next leader's campaign
 * returning; p50 and p99 over rounds. Three clients on the masters given
 * (argv[1], comma-separated, or RLOCK_MASTERS): two that take turns
 * leading (the next one already waits in the queue when the leader
 * resigns) and an observer. It prints figures; it does not pass or fail.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlock.h"

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static atomic_uint_fast64_t seen_at, won_at;
static char want[32];
static atomic_int armed;

/* On the loop thread: the time the observer saw the awaited leader. */
static void on_change(rlock_election *e, const char *value, uint64_t token,
                      void *arg) {
  (void)e;
  (void)token;
  (void)arg;
  if (value != NULL && atomic_load(&armed) && strcmp(value, want) == 0)
    atomic_store(&seen_at, now_us());
}

static void on_won(rlock_election *e, int status, void *arg) {
  (void)e;
  (void)arg;
  if (status == 0) atomic_store(&won_at, now_us());
}

static int cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void sleep_us(long us) {
  struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
  nanosleep(&ts, NULL);
}

int main(int argc, char **argv) {
  const char *list = argc > 1 ? argv[1] : getenv("RLOCK_MASTERS");
  int rounds = argc > 2 ? atoi(argv[2]) : 200;
  if (list == NULL || rounds < 1) {
    fprintf(stderr, "usage: bench_election MASTERS[,...] [ROUNDS]\n");
    return 2;
  }
  char *copy = strdup(list);
  const char *m[16];
  size_t n = 0;
  for (char *t = strtok(copy, ","); t != NULL && n < 16; t = strtok(NULL, ","))
    m[n++] = t;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = n;
  rlock_client *c[3];
  rlock_election *e[3];
  for (int i = 0; i < 3; i++) {
    if (rlock_client_open(&c[i], &o) != 0 ||
        rlock_client_wait_ready(c[i], 5000) != 0 ||
        rlock_election_get(c[i], "bench-election", &e[i]) != 0) {
      fprintf(stderr, "cannot open client %d\n", i);
      return 1;
    }
  }
  rlock_observe(e[2], on_change, NULL);
  uint64_t *to_obs = calloc((size_t)rounds, sizeof *to_obs);
  uint64_t *to_won = calloc((size_t)rounds, sizeof *to_won);
  int leader = 0, k = 0;
  if (rlock_campaign(e[0], "first", 5000) != 0) return 1;
  for (int r = 0; r < rounds; r++) {
    int next = 1 - leader;
    snprintf(want, sizeof want, "v%d-%d", next, r);
    atomic_store(&seen_at, 0);
    atomic_store(&won_at, 0);
    if (rlock_campaign_async(e[next], want, 1, 10000, on_won, NULL) != 0)
      return 1;
    sleep_us(20000); /* it is queued */
    atomic_store(&armed, 1);
    uint64_t t0 = now_us();
    rlock_resign(e[leader]);
    while ((atomic_load(&seen_at) == 0 || atomic_load(&won_at) == 0) &&
           now_us() - t0 < 5000000)
      sleep_us(100);
    atomic_store(&armed, 0);
    if (atomic_load(&seen_at) != 0 && atomic_load(&won_at) != 0) {
      to_obs[k] = atomic_load(&seen_at) - t0;
      to_won[k] = atomic_load(&won_at) - t0;
      k++;
    }
    leader = next;
  }
  rlock_resign(e[leader]);
  if (k == 0) return 1;
  qsort(to_obs, (size_t)k, sizeof *to_obs, cmp);
  qsort(to_won, (size_t)k, sizeof *to_won, cmp);
  printf("masters %zu rounds %d\n", n, k);
  printf("resign -> observer callback  p50 %.2f ms  p99 %.2f ms\n",
         (double)to_obs[k / 2] / 1000.0, (double)to_obs[k * 99 / 100] / 1000.0);
  printf("resign -> next leader won    p50 %.2f ms  p99 %.2f ms\n",
         (double)to_won[k / 2] / 1000.0, (double)to_won[k * 99 / 100] / 1000.0);
  for (int i = 0; i < 3; i++) {
    rlock_election_free(e[i]);
    rlock_client_close(c[i]);
  }
  free(to_obs);
  free(to_won);
  free(copy);
  return 0;
}
