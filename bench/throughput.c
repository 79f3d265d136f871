/*
 * Throughput of lock+unlock pairs on distinct locks, rlock against raw
 * hiredis in the same run. rlock blocking: T threads share one client (and
 * so one pipelined connection per master). rlock async: C chains in flight
 * on the client's loop. Baseline: T threads, each with its own synchronous
 * hiredis connection per master, sending the same two scripts (EVALSHA
 * acquire, EVALSHA unlock) master after master. Each configuration runs
 * for SECONDS; prints one JSON line per configuration.
 *
 *   throughput SECONDS MASTER [MASTER...]   (masters as host:port)
 */
#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlock.h"
#include "scripts.h"

#define NAMES 64 /* distinct locks per thread or chain */

static int nmasters;
static char **masters;
static double seconds;
static atomic_int stop;
static atomic_long pairs, errors;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* --- raw hiredis ---------------------------------------------------------- */

static void *raw_thread(void *arg) {
  long id = (long)arg;
  redisContext *cs[64];
  for (int m = 0; m < nmasters; m++) {
    char host[64];
    int port;
    sscanf(masters[m], "%63[^:]:%d", host, &port);
    cs[m] = redisConnect(host, port);
    if (cs[m] == NULL || cs[m]->err) return NULL;
  }
  const char *acq = rl_script_sha(RL_SCRIPT_ACQUIRE);
  const char *unl = rl_script_sha(RL_SCRIPT_UNLOCK);
  char key[64], fence[80], ch[80], owner[32];
  snprintf(owner, sizeof owner, "raw:%ld", id);
  for (long k = 0; !atomic_load(&stop); k++) {
    snprintf(key, sizeof key, "rlock:{raw-%ld-%ld}", id, k % NAMES);
    snprintf(fence, sizeof fence, "%s:fence", key);
    snprintf(ch, sizeof ch, "%s:ch", key);
    int ok = 1;
    for (int m = 0; m < nmasters; m++) {
      redisReply *r = redisCommand(cs[m], "EVALSHA %s 2 %s %s 10000 %s 86400000",
                                   acq, key, fence, owner);
      ok &= r != NULL && r->type == REDIS_REPLY_ARRAY;
      if (r) freeReplyObject(r);
    }
    for (int m = 0; m < nmasters; m++) {
      redisReply *r = redisCommand(cs[m], "EVALSHA %s 1 %s 10000 %s %s", unl,
                                   key, owner, ch);
      ok &= r != NULL && r->type == REDIS_REPLY_INTEGER;
      if (r) freeReplyObject(r);
    }
    if (ok)
      atomic_fetch_add(&pairs, 1);
    else
      atomic_fetch_add(&errors, 1);
  }
  for (int m = 0; m < nmasters; m++) redisFree(cs[m]);
  return NULL;
}

/* --- rlock blocking ------------------------------------------------------- */

typedef struct {
  rlock_client *c;
  long id;
} lib_arg;

static void *lib_thread(void *p) {
  lib_arg *a = p;
  rlock *locks[NAMES];
  for (int k = 0; k < NAMES; k++) {
    char name[48];
    snprintf(name, sizeof name, "tp-%ld-%d", a->id, k);
    if (rlock_get(a->c, name, &locks[k]) != 0) return NULL;
  }
  for (long k = 0; !atomic_load(&stop); k++) {
    rlock *l = locks[k % NAMES];
    if (rlock_trylock(l, 0, 10000) == 0 && rlock_unlock(l) == 0)
      atomic_fetch_add(&pairs, 1);
    else
      atomic_fetch_add(&errors, 1);
  }
  for (int k = 0; k < NAMES; k++) rlock_free(locks[k]);
  return NULL;
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
  if (status == 0)
    atomic_fetch_add(&pairs, 1);
  else
    atomic_fetch_add(&errors, 1);
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

/* --- driver --------------------------------------------------------------- */

static rlock_client *open_client(void) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = (const char *const *)masters;
  o.nmasters = (size_t)nmasters;
  o.master_timeout_ms = 1000;
  rlock_client *c;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  rlock *l;
  rlock_get(c, "warmup", &l);
  while (rlock_trylock(l, 0, 1000) != 0) usleep(1000);
  rlock_unlock(l);
  rlock_free(l);
  return c;
}

static void report(const char *impl, const char *mode, int conc, double t) {
  printf("{\"bench\":\"throughput\",\"impl\":\"%s\",\"mode\":\"%s\","
         "\"masters\":%d,\"concurrency\":%d,\"seconds\":%.2f,"
         "\"pairs_per_s\":%.0f,\"errors\":%ld}\n",
         impl, mode, nmasters, conc, t, (double)atomic_load(&pairs) / t,
         atomic_load(&errors));
  fflush(stdout);
}

static void run_threads(const char *impl, int n, void *(*fn)(void *),
                        rlock_client *c) {
  pthread_t th[256];
  lib_arg args[256];
  atomic_store(&stop, 0);
  atomic_store(&pairs, 0);
  atomic_store(&errors, 0);
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    args[i] = (lib_arg){.c = c, .id = i};
    pthread_create(&th[i], NULL, fn, c ? (void *)&args[i] : (void *)(long)i);
  }
  usleep((useconds_t)(seconds * 1e6));
  atomic_store(&stop, 1);
  double t = now_s() - t0;
  long done = atomic_load(&pairs);
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
  atomic_store(&pairs, done);
  report(impl, "threads", n, t);
}

static void run_async(rlock_client *c, int n) {
  chain *chains = calloc((size_t)n, sizeof *chains);
  atomic_int live = n;
  atomic_store(&stop, 0);
  atomic_store(&pairs, 0);
  atomic_store(&errors, 0);
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < NAMES; k++) {
      char name[48];
      snprintf(name, sizeof name, "ta-%d-%d", i, k);
      rlock_get(c, name, &chains[i].locks[k]);
    }
    chains[i].owner = (uint64_t)i + 1;
    chains[i].live = &live;
  }
  double t0 = now_s();
  for (int i = 0; i < n; i++) chain_next(&chains[i]);
  usleep((useconds_t)(seconds * 1e6));
  atomic_store(&stop, 1);
  double t = now_s() - t0;
  long done = atomic_load(&pairs);
  while (atomic_load(&live) > 0) usleep(1000);
  atomic_store(&pairs, done);
  report("rlock", "async", n, t);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < NAMES; k++) rlock_free(chains[i].locks[k]);
  free(chains);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s SECONDS MASTER...\n", argv[0]);
    return 2;
  }
  seconds = atof(argv[1]);
  masters = &argv[2];
  nmasters = argc - 2;
  for (int m = 0; m < nmasters; m++) {
    char host[64];
    int port;
    sscanf(masters[m], "%63[^:]:%d", host, &port);
    redisContext *rc = redisConnect(host, port);
    if (rc == NULL || rc->err) return 1;
    for (int s = 0; s < RL_SCRIPT_COUNT; s++) {
      redisReply *r = redisCommand(rc, "SCRIPT LOAD %s",
                                   rl_script_body((rl_script_id)s));
      if (r) freeReplyObject(r);
    }
    redisFree(rc);
  }
  rlock_client *c = open_client();
  if (c == NULL) return 1;
  const int threads[] = {1, 4, 16, 64};
  for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
    run_threads("raw_hiredis", threads[i], raw_thread, NULL);
    run_threads("rlock", threads[i], lib_thread, c);
  }
  const int inflight[] = {1, 16, 64, 256};
  for (size_t i = 0; i < sizeof inflight / sizeof inflight[0]; i++)
    run_async(c, inflight[i]);
  rlock_client_close(c);
  return 0;
}
