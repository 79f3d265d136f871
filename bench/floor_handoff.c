/*
 * The raw floor of a lock hand-off: one unlock, its pub/sub message, and
 * the waiter's acquire, done with plain synchronous hiredis on one master
 * by two sides that pass the lock back and forth, in two processes or in
 * two threads of one process. No rlock code is linked here. Each side has
 * a command connection and a subscriber connection to the lock's channel;
 * the waiter sleeps in a blocking read on its subscriber connection, as a
 * waiting rlock thread sleeps until its loop sees the message.
 *
 * Hand-off is timed as in contention.c: from just before the holder sends
 * its unlock to the waiter's granted acquire, on CLOCK_MONOTONIC (shared by
 * all processes). The holder sleeps HOLD_MS before each unlock, so that the
 * waiter is as deeply asleep as a waiter of the rlock benchmark.
 *
 * "direct" is the floor of a hand-off inside one client that does not wait
 * for the message (issue 17 item 3): two threads, and the holder wakes the
 * waiter through a condition variable as soon as its unlock's reply is in;
 * the waiter then acquires. Prints one JSON line.
 *
 * "relay" is the floor of rlock's hand-off within a client in one round
 * trip (lib/transfer.c): two threads, and the holder's one round trip
 * both releases the lock and grants it to the waiter (the unlock and the
 * acquire scripts written together), then wakes the waiter through a
 * condition variable; the hand-off ends when the waiter runs, already
 * holding the lock.
 *
 * "hop" is "procs" with one thread hop added on the waiting side, the
 * least a client with a loop thread must add (rlock's waiter reads the
 * message and its acquire's reply on its loop thread, then wakes the
 * caller): the side that reads the message and acquires wakes a second
 * thread of its process through a condition variable, and the hand-off
 * ends when that thread runs.
 *
 *   floor_handoff procs|threads|direct|relay|hop HOLD_MS SECONDS MASTER
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "raw.h"
#include "stats.h"

#define MAX_SAMPLES 200000

typedef struct shared {
  _Atomic uint64_t released_ns;
  atomic_int ready, stop, errors;
  atomic_long nsamples;
  uint64_t samples[MAX_SAMPLES];
} shared;

static shared *sh;
static char *master;
static int hold_ms;
static uint64_t stop_at;
static char name[64];
static int direct;
static int relay; /* direct, the waiter's acquire sent by the holder */
static pthread_mutex_t turn_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cv = PTHREAD_COND_INITIALIZER;
static int turn; /* direct: the side whose turn it is to acquire */
static int hop;  /* hop: the acquisition is handed to a second thread */
static pthread_mutex_t hop_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hop_cv = PTHREAD_COND_INITIALIZER;
static int hop_state; /* 1: acquired, the caller thread must run; 2: quit */

static void sample(uint64_t t) {
  uint64_t rel = atomic_load(&sh->released_ns);
  long i = atomic_fetch_add(&sh->nsamples, 1);
  if (i < MAX_SAMPLES) sh->samples[i] = t - rel;
}

/* hop: the caller thread of a side, asleep until its side acquired. */
static void *hop_caller(void *arg) {
  (void)arg;
  pthread_mutex_lock(&hop_mu);
  for (;;) {
    while (hop_state == 0) pthread_cond_wait(&hop_cv, &hop_mu);
    if (hop_state == 2) break;
    sample(bench_now_ns());
    hop_state = 0;
    pthread_cond_broadcast(&hop_cv);
  }
  pthread_mutex_unlock(&hop_mu);
  return NULL;
}

/* hop: wakes the caller thread and waits until it took its sample. */
static void hop_handover(void) {
  pthread_mutex_lock(&hop_mu);
  hop_state = 1;
  pthread_cond_broadcast(&hop_cv);
  while (hop_state == 1) pthread_cond_wait(&hop_cv, &hop_mu);
  pthread_mutex_unlock(&hop_mu);
}

/* Reads one pub/sub message; 0, or -1 on an error. */
static int message(redisContext *sub) {
  redisReply *r = NULL;
  if (redisGetReply(sub, (void **)&r) != REDIS_OK || r == NULL) return -1;
  freeReplyObject(r);
  return 0;
}

/* direct: passes the turn to the other side, or waits for ours. */
static void give_turn(int other) {
  pthread_mutex_lock(&turn_mu);
  turn = other;
  pthread_cond_signal(&turn_cv);
  pthread_mutex_unlock(&turn_mu);
}

static void wait_turn(int me) {
  pthread_mutex_lock(&turn_mu);
  while (turn != me) pthread_cond_wait(&turn_cv, &turn_mu);
  pthread_mutex_unlock(&turn_mu);
}

static void side(int me) {
  raw_conns rc;
  if (raw_open(&rc, &master, 1) != 0) {
    atomic_fetch_add(&sh->errors, 1);
    atomic_fetch_add(&sh->ready, 1);
    return;
  }
  raw_lock l;
  raw_lock_init(&l, name);
  char owner[64];
  raw_owner(owner, sizeof owner, (unsigned)getpid(), (unsigned)me + 1);
  char host[64];
  int port;
  bench_host_port(master, host, sizeof host, &port);
  redisContext *sub = redisConnect(host, port);
  redisReply *r = sub && !sub->err
                      ? redisCommand(sub, "SUBSCRIBE %s", l.channel)
                      : NULL;
  if (r) freeReplyObject(r);
  char other[64];
  raw_owner(other, sizeof other, (unsigned)getpid(), (unsigned)!me + 1);
  /* relay: no one waits for a message (the unlock still publishes it). */
  if (relay && sub) {
    redisFree(sub);
    sub = NULL;
  }
  atomic_fetch_add(&sh->ready, 1);
  while (atomic_load(&sh->ready) < 2) usleep(100);
  if (r == NULL || atomic_load(&sh->errors)) goto out;
  int holder = me == 0;
  if (holder && raw_acquire(&rc, &l, owner, NULL) != 1) goto fail;
  for (;;) {
    if (holder) {
      bench_sleep_ns((uint64_t)hold_ms * 1000000u);
      int last = bench_now_ns() >= stop_at;
      if (last) atomic_store(&sh->stop, 1);
      atomic_store(&sh->released_ns, bench_now_ns());
      if (relay && !last) {
        if (raw_relay(&rc, &l, owner, other) != 1) goto fail;
      } else if (raw_unlock(&rc, &l, owner, NULL) != 1) {
        goto fail;
      }
      if (direct)
        give_turn(!me);
      else if (message(sub) != 0)
        goto fail; /* our own unlock's message */
      if (last) break;
      holder = 0;
    } else {
      if (direct)
        wait_turn(me);
      else if (message(sub) != 0)
        goto fail; /* the other side's unlock */
      if (atomic_load(&sh->stop)) break;
      if (!relay && raw_acquire(&rc, &l, owner, NULL) != 1) goto fail;
      if (hop)
        hop_handover();
      else
        sample(bench_now_ns());
      holder = 1;
    }
  }
  goto out;
fail:
  atomic_fetch_add(&sh->errors, 1);
  atomic_store(&sh->stop, 1);
  if (direct) give_turn(!me); /* never leave the other side waiting */
out:
  if (sub) redisFree(sub);
  raw_close(&rc);
}

static void *thread_side(void *arg) {
  side((int)(long)arg);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 5 || (strcmp(argv[1], "procs") && strcmp(argv[1], "threads") &&
                    strcmp(argv[1], "direct") && strcmp(argv[1], "relay") &&
                    strcmp(argv[1], "hop"))) {
    fprintf(stderr, "usage: floor_handoff procs|threads|direct|relay|hop HOLD_MS "
                    "SECONDS MASTER\n");
    return 2;
  }
  hop = strcmp(argv[1], "hop") == 0;
  int procs = strcmp(argv[1], "procs") == 0 || hop;
  relay = strcmp(argv[1], "relay") == 0;
  direct = strcmp(argv[1], "direct") == 0 || relay;
  turn = 0;
  hold_ms = atoi(argv[2]);
  double seconds = atof(argv[3]);
  master = argv[4];
  snprintf(name, sizeof name, "floor-handoff-%d", (int)getpid());
  sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (sh == MAP_FAILED) return 1;
  uint64_t t0 = bench_now_ns();
  stop_at = t0 + (uint64_t)(seconds * 1e9);
  if (procs) {
    pid_t pid[2];
    for (int i = 0; i < 2; i++) {
      fflush(stdout);
      pid[i] = fork();
      if (pid[i] == 0) {
        pthread_t caller;
        if (hop) pthread_create(&caller, NULL, hop_caller, NULL);
        side(i);
        if (hop) {
          pthread_mutex_lock(&hop_mu);
          hop_state = 2;
          pthread_cond_broadcast(&hop_cv);
          pthread_mutex_unlock(&hop_mu);
          pthread_join(caller, NULL);
        }
        _exit(0);
      }
    }
    for (int i = 0; i < 2; i++) waitpid(pid[i], NULL, 0);
  } else {
    pthread_t th[2];
    for (long i = 0; i < 2; i++) pthread_create(&th[i], NULL, thread_side, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
  }
  long n = atomic_load(&sh->nsamples);
  if (n > MAX_SAMPLES) n = MAX_SAMPLES;
  bench_sort(sh->samples, n);
  printf("{\"bench\":\"handoff\",\"impl\":\"floor\",\"between\":\"%s\","
         "\"masters\":1,\"hold_ms\":%d,\"seconds\":%.2f,\"handoffs\":%ld,"
         "\"handoff_p50_us\":%.1f,\"handoff_p99_us\":%.1f,\"errors\":%d}\n",
         hop     ? "processes_hop"
         : procs ? "processes"
         : relay ? "threads_relay"
         : direct ? "threads_direct"
                  : "threads",
         hold_ms,
         (double)(bench_now_ns() - t0) / 1e9, n, bench_pct_us(sh->samples, n, 0.5),
         bench_pct_us(sh->samples, n, 0.99), atomic_load(&sh->errors));
  return 0;
}
