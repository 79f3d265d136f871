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
 * for the message: two threads, and the holder wakes the
 * waiter through a condition variable as soon as its unlock's reply is in;
 * the waiter then acquires. Prints one JSON line.
 *
 * "relay" is the floor of rlock's hand-off within a client in one round
 * trip (lib/lock/transfer.c): two threads, and the holder's one round trip
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
 * Two designs that would keep the waiter's wake-up out of series with the
 * relay's round trip:
 *
 * "spin" is "relay" with the waiter woken first: the holder signals the
 * waiter's condition variable ("a transfer toward you is in flight")
 * before it writes the relay, and the woken waiter spins on a flag that
 * the holder sets once the relay's replies are in. The wake-up and the
 * round trip overlap, so a hand-off should cost the longer of the two,
 * not their sum. It also prints how long waiters spun (the CPU a
 * hand-off burns in spinning).
 *
 * "read" has the waiter read the relay's replies itself: each side sleeps
 * in a blocking read on its own connection while it waits, and the holder
 * writes the relay (its unlock, the waiter's acquire) on the waiter's
 * connection and reads nothing; the hand-off ends when the waiter has
 * parsed both replies. The socket's wake-up is then the only one.
 *
 * "rtt" is one thread's plain round trip of one EVALSHA, for scale: it
 * sleeps HOLD_MS, times the acquire script ("cold": the machine idled as
 * a waiter does), then the unlock script right after it ("warm").
 *
 *   floor_handoff procs|threads|direct|relay|hop|spin|spinyield|spinlate|
 *                 read|rtt HOLD_MS SECONDS MASTER
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
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
static int spin;                 /* spin: relay, the waiter woken first */
static int spin_yield;           /* spinyield: the spinner yields */
static int spin_late;            /* spinlate: woken after the write */
static atomic_int granted_to = -1; /* spin: the side the relay's reply is for */
static uint64_t spins[MAX_SAMPLES]; /* spin: how long each waiter spun */
static atomic_long nspins;
static int rd;                     /* read: the waiter reads the relay */
static redisContext *conn_of[2];   /* read: each side's connection */
static uint64_t rtt_warm[MAX_SAMPLES]; /* rtt: the unlock, right after */

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

/* spin: the woken waiter spins until the relay's reply is in (or the
 * run stops) and notes how long it spun. */
static void spin_for_grant(int me) {
  uint64_t t0 = bench_now_ns();
  for (unsigned i = 1;
       atomic_load_explicit(&granted_to, memory_order_acquire) != me &&
       !atomic_load(&sh->stop);
       i++) {
    if (spin_yield && (i & 63) == 0) sched_yield();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
  uint64_t t1 = bench_now_ns();
  atomic_store_explicit(&granted_to, -1, memory_order_relaxed);
  long i = atomic_fetch_add(&nspins, 1);
  if (i < MAX_SAMPLES) spins[i] = t1 - t0;
}

/* Writes all of buf on fd; 0, or -1. */
static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n <= 0) return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

/* The holder's turn: holds the lock hold_ms, then stamps the release's
 * start (a hand-off is timed from it); 1 on its last turn, which also
 * tells the other side to stop. */
static int hold_then_release(void) {
  bench_sleep_ns((uint64_t)hold_ms * 1000000u);
  int last = bench_now_ns() >= stop_at;
  if (last) atomic_store(&sh->stop, 1);
  atomic_store(&sh->released_ns, bench_now_ns());
  return last;
}

/* Writes the holder's unlock and, unless last, the acquire for other, in
 * one write on fd; 0, or -1. */
static int write_unlock_acquire(raw_conns *rc, const raw_lock *l,
                                const char *owner, const char *other,
                                int last, int fd) {
  char *u = NULL, *a = NULL;
  int ul = raw_format_unlock(rc, l, owner, &u);
  int al = last ? 0 : raw_format_acquire(rc, l, other, &a);
  char buf[4096];
  int ok = ul > 0 && (last || al > 0) && (size_t)(ul + al) <= sizeof buf;
  if (ok) {
    memcpy(buf, u, (size_t)ul);
    if (al > 0) memcpy(buf + ul, a, (size_t)al);
    ok = write_all(fd, buf, (size_t)(ul + al)) == 0;
  }
  if (u) redisFreeCommand(u);
  if (a) redisFreeCommand(a);
  return ok ? 0 : -1;
}

/* spinlate: raw_relay with the waiter woken between the write and the
 * read of the replies. 1 if both worked, 0 if not, -1 on an I/O error. */
static int relay_late(raw_conns *rc, const raw_lock *l, const char *owner,
                      const char *other, int me) {
  int ok = write_unlock_acquire(rc, l, owner, other, 0, rc->c[0]->fd) == 0;
  give_turn(!me);
  if (!ok) return -1;
  return raw_relay_replies(rc->c[0]);
}

/* read: the holder writes its unlock and the waiter's acquire on the
 * waiter's connection and reads nothing; the waiter, asleep in a blocking
 * read on its own connection, takes both replies. On its last turn the
 * holder writes only the unlock, which tells the waiter to stop. */
static void read_side(int me, raw_conns *rc, const raw_lock *l,
                      const char *owner, const char *other) {
  redisContext *c = rc->c[0];
  int holder = me == 0;
  if (holder && raw_acquire(rc, l, owner, NULL) != 1) goto fail;
  for (;;) {
    if (holder) {
      int last = hold_then_release();
      if (write_unlock_acquire(rc, l, owner, other, last, conn_of[!me]->fd))
        goto fail;
      if (last) break;
      holder = 0;
    } else {
      redisReply *ur = NULL, *ar = NULL;
      if (redisGetReply(c, (void **)&ur) != REDIS_OK) goto fail;
      int ok = raw_released(ur);
      freeReplyObject(ur);
      if (atomic_load(&sh->stop)) break;
      if (redisGetReply(c, (void **)&ar) != REDIS_OK) goto fail;
      ok = ok && raw_granted(ar);
      freeReplyObject(ar);
      if (!ok) goto fail;
      sample(bench_now_ns());
      holder = 1;
    }
  }
  return;
fail:
  atomic_fetch_add(&sh->errors, 1);
  atomic_store(&sh->stop, 1);
  /* Never leave the other side asleep in its read. */
  shutdown(conn_of[!me]->fd, SHUT_RDWR);
}

/* rtt: one thread's round trips of one EVALSHA, cold and warm. */
static void rtt_side(void) {
  raw_conns rc;
  if (raw_open(&rc, &master, 1) != 0) {
    atomic_fetch_add(&sh->errors, 1);
    return;
  }
  raw_lock l;
  raw_lock_init(&l, name);
  char owner[64];
  raw_owner(owner, sizeof owner, (unsigned)getpid(), 1);
  long n = 0;
  while (bench_now_ns() < stop_at && n < MAX_SAMPLES) {
    bench_sleep_ns((uint64_t)hold_ms * 1000000u);
    uint64_t t0 = bench_now_ns();
    if (raw_acquire(&rc, &l, owner, NULL) != 1) break;
    uint64_t t1 = bench_now_ns();
    if (raw_unlock(&rc, &l, owner, NULL) != 1) break;
    uint64_t t2 = bench_now_ns();
    sh->samples[n] = t1 - t0;
    rtt_warm[n] = t2 - t1;
    n++;
  }
  if (bench_now_ns() < stop_at && n < MAX_SAMPLES)
    atomic_fetch_add(&sh->errors, 1);
  atomic_store(&sh->nsamples, n);
  raw_close(&rc);
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
  if ((relay || rd) && sub) {
    redisFree(sub);
    sub = NULL;
  }
  conn_of[me] = rc.c[0];
  atomic_fetch_add(&sh->ready, 1);
  while (atomic_load(&sh->ready) < 2) usleep(100);
  if (r == NULL || atomic_load(&sh->errors)) goto out;
  if (rd) {
    read_side(me, &rc, &l, owner, other);
    goto out;
  }
  int holder = me == 0;
  if (holder && raw_acquire(&rc, &l, owner, NULL) != 1) goto fail;
  for (;;) {
    if (holder) {
      int last = hold_then_release();
      if (spin && (!spin_late || last))
        give_turn(!me); /* the wake-up overlaps the round trip */
      if (spin_late && !last) {
        if (relay_late(&rc, &l, owner, other, me) != 1) goto fail;
      } else if (relay && !last) {
        if (raw_relay(&rc, &l, owner, other) != 1) goto fail;
      } else if (raw_unlock(&rc, &l, owner, NULL) != 1) {
        goto fail;
      }
      if (spin)
        atomic_store_explicit(&granted_to, !me, memory_order_release);
      else if (direct)
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
      if (spin) spin_for_grant(me);
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
  if (spin) atomic_store(&granted_to, !me);
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
                    strcmp(argv[1], "hop") && strcmp(argv[1], "spin") &&
                    strcmp(argv[1], "spinyield") &&
                    strcmp(argv[1], "spinlate") &&
                    strcmp(argv[1], "read") && strcmp(argv[1], "rtt"))) {
    fprintf(stderr, "usage: floor_handoff "
                    "procs|threads|direct|relay|hop|spin|spinyield|spinlate|read|"
                    "rtt "
                    "HOLD_MS "
                    "SECONDS MASTER\n");
    return 2;
  }
  hop = strcmp(argv[1], "hop") == 0;
  int procs = strcmp(argv[1], "procs") == 0 || hop;
  spin_late = strcmp(argv[1], "spinlate") == 0;
  spin_yield = strcmp(argv[1], "spinyield") == 0 || spin_late;
  spin = strcmp(argv[1], "spin") == 0 || spin_yield;
  rd = strcmp(argv[1], "read") == 0;
  int rtt = strcmp(argv[1], "rtt") == 0;
  relay = strcmp(argv[1], "relay") == 0 || spin;
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
  if (rtt) {
    rtt_side();
    long n = atomic_load(&sh->nsamples);
    bench_sort(sh->samples, n);
    bench_sort(rtt_warm, n);
    printf("{\"bench\":\"rtt\",\"impl\":\"floor\",\"script\":\"evalsha\","
           "\"masters\":1,\"idle_ms\":%d,\"seconds\":%.2f,\"calls\":%ld,"
           "\"cold_p50_us\":%.1f,\"cold_p99_us\":%.1f,\"warm_p50_us\":%.1f,"
           "\"warm_p99_us\":%.1f,\"errors\":%d}\n",
           hold_ms, (double)(bench_now_ns() - t0) / 1e9, n,
           bench_pct_us(sh->samples, n, 0.5), bench_pct_us(sh->samples, n, 0.99),
           bench_pct_us(rtt_warm, n, 0.5), bench_pct_us(rtt_warm, n, 0.99),
           atomic_load(&sh->errors));
    return 0;
  }
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
  long ns = atomic_load(&nspins);
  if (ns > MAX_SAMPLES) ns = MAX_SAMPLES;
  bench_sort(spins, ns);
  if (spin)
    printf("{\"bench\":\"handoff_spin\",\"spins\":%ld,\"spin_p50_us\":%.1f,"
           "\"spin_p99_us\":%.1f}\n",
           ns, bench_pct_us(spins, ns, 0.5), bench_pct_us(spins, ns, 0.99));
  printf("{\"bench\":\"handoff\",\"impl\":\"floor\",\"between\":\"%s\","
         "\"masters\":1,\"hold_ms\":%d,\"seconds\":%.2f,\"handoffs\":%ld,"
         "\"handoff_p50_us\":%.1f,\"handoff_p99_us\":%.1f,\"errors\":%d}\n",
         hop     ? "processes_hop"
         : procs ? "processes"
         : spin_late ? "threads_spin_late"
         : spin_yield ? "threads_spin_yield"
         : spin  ? "threads_spin"
         : rd    ? "threads_read"
         : relay ? "threads_relay"
         : direct ? "threads_direct"
                  : "threads",
         hold_ms,
         (double)(bench_now_ns() - t0) / 1e9, n, bench_pct_us(sh->samples, n, 0.5),
         bench_pct_us(sh->samples, n, 0.99), atomic_load(&sh->errors));
  return 0;
}
