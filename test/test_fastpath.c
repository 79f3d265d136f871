/*
 * The blocking fast path (issue 17 item 2, lib/client.c's top comment): a
 * lone blocking call starts its request and writes it on the calling
 * thread, under the loop lock, while the loop thread sleeps in poll.
 * Against real redis-server processes with real faults:
 *
 * - A deadline armed by a call started that way is kept although the
 *   loop thread slept when it was armed: a lone call to a paused master
 *   fails within the master timeout, not when the loop next wakes (its
 *   next timer is the clock refresh, about 30 s away).
 * - Blocking threads (which take the fast path when one is alone and the
 *   loop sleeps, and post otherwise), async chains and the watchdog's renewals share
 *   one connection while it is killed twice (CLIENT KILL) and then its
 *   master is killed: mutual exclusion holds within the process, each
 *   blocking caller that was granted a lock is the one that holds it (its
 *   reply was not another caller's), every async callback runs exactly
 *   once, every call returns, and calls succeed again after each kill.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "client.h"
#include "common.h"

static uint64_t fast_starts(rlock_client *c) {
  return atomic_load(&((rl_client *)c)->fast_starts);
}

static rlock_client *open_one(rt_redis *r, int64_t master_timeout_ms,
                              int64_t watchdog_ms) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = master_timeout_ms;
  o.retry_delay_ms = 10;
  o.retry_jitter_ms = 10;
  o.watchdog_timeout_ms = watchdog_ms;
  return rt_client_opts(r, 1, &o);
}

static void lone_call_deadline_while_paused(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  rlock_client *c = open_one(&r, 300, 30000);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "fp-paused", &l) == 0);
  /* Lone pairs take the fast path (the loop sleeps between them). */
  for (int i = 0; i < 20; i++) {
    RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
    RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  }
  RT_CHECK(fast_starts(c) > 0);
  /* Let the loop go to sleep past the last deadline it kept (its timer
   * fires then, finding nothing due), then stop the master. */
  rt_sleep_ms(1000);
  uint64_t before = fast_starts(c);
  RT_REQUIRE(rt_redis_pause(&r) == 0);
  uint64_t t0 = rt_now_ms();
  int rc = rlock_trylock(l, 0, 10000);
  uint64_t took = rt_now_ms() - t0;
  RT_CHECK(rc == RLOCK_ENOQUORUM || rc == RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(fast_starts(c), before + 1);
  /* 300 ms of master timeout; 5 s only catches a loop that slept on. */
  if (took >= 5000) fprintf(stderr, "    the call took %llu ms\n",
                            (unsigned long long)took);
  RT_CHECK(took < 5000);
  RT_CHECK(rt_redis_resume(&r) == 0);
  /* The late grant is refused by the master (its deadline passed) or
   * undone: nothing is left. */
  uint64_t end = rt_now_ms() + 5000;
  while (rt_redis_int(&r, "EXISTS rlock:{fp-paused}") != 0 &&
         rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "EXISTS rlock:{fp-paused}"), 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

/* --- many callers, one connection, kills ---------------------------------- */

#define NAMES 4
#define THREADS 6
#define CHAINS 2
#define PHASES 4 /* before, after kill 1, after kill 2, master dead */

typedef struct shared {
  rlock_client *c;
  rlock *locks[NAMES];
  atomic_int inside[NAMES]; /* blocking holders of each lock, now */
  atomic_int stop;
  atomic_int phase;
  atomic_int violations;  /* two holders at once */
  atomic_int wrong_owner; /* granted, but not held by the caller */
  atomic_int ok[PHASES];
  atomic_int errors;
  atomic_int slow; /* workers pause up to 20 ms between pairs */
  /* Async chains. */
  rlock *alocks[CHAINS];
  atomic_int posted, called, inflight, twice;
} shared;

typedef struct chain {
  shared *s;
  int i;
  atomic_int busy; /* 1 from a pair's start until its end */
  atomic_int out;  /* its calls out: a callback that finds none ran twice */
} chain;

static void *blocking_worker(void *arg) {
  shared *s = arg;
  unsigned seed = (unsigned)(uintptr_t)&seed;
  while (!atomic_load(&s->stop)) {
    int k = (int)(rand_r(&seed) % NAMES);
    int phase = atomic_load(&s->phase);
    int rc = rlock_trylock(s->locks[k], 200, 5000);
    if (rc != 0) {
      atomic_fetch_add(&s->errors, 1);
      if (phase == PHASES - 1) rt_sleep_ms(5); /* the master is gone */
      continue;
    }
    if (atomic_fetch_add(&s->inside[k], 1) != 0)
      atomic_fetch_add(&s->violations, 1);
    if (rlock_is_held_by_current_thread(s->locks[k]) == 0)
      atomic_fetch_add(&s->wrong_owner, 1);
    atomic_fetch_add(&s->ok[phase], 1);
    atomic_fetch_sub(&s->inside[k], 1);
    rlock_unlock(s->locks[k]); /* may fail across a kill; counted above */
    /* A pause now and then leaves a call alone among the blocking ones,
     * which is when it takes the fast path. */
    if (atomic_load(&s->slow))
      usleep((unsigned)(rand_r(&seed) % 20000));
    else if (rand_r(&seed) % 2)
      usleep((unsigned)(rand_r(&seed) % 1000));
  }
  return NULL;
}

/* A callback of the chain's call: counted, and checked to be the only
 * one of that call. */
static void called(chain *ch) {
  if (atomic_fetch_sub(&ch->out, 1) != 1) atomic_fetch_add(&ch->s->twice, 1);
  atomic_fetch_add(&ch->s->called, 1);
  atomic_fetch_sub(&ch->s->inflight, 1);
}

/* Counts a call about to be made; undone if it is refused. */
static void posting(chain *ch, int refused) {
  int d = refused ? -1 : 1;
  atomic_fetch_add(&ch->out, d);
  atomic_fetch_add(&ch->s->posted, d);
  atomic_fetch_add(&ch->s->inflight, d);
}

static void on_unlocked(rlock *lock, int status, void *arg) {
  (void)lock, (void)status;
  chain *ch = arg;
  called(ch);
  atomic_store(&ch->busy, 0);
}

static void on_locked(rlock *lock, int status, void *arg) {
  chain *ch = arg;
  called(ch);
  if (status == 0 && !atomic_load(&ch->s->stop)) {
    posting(ch, 0);
    if (rlock_unlock_async(lock, 1000 + (uint64_t)ch->i, on_unlocked, ch) ==
        0)
      return;
    posting(ch, 1);
  }
  atomic_store(&ch->busy, 0);
}

/* Starts the chain's next pair unless one is out. */
static void chain_next(chain *ch) {
  shared *s = ch->s;
  if (atomic_load(&s->stop) || atomic_exchange(&ch->busy, 1)) return;
  posting(ch, 0);
  if (rlock_lock_async(s->alocks[ch->i], 1000 + (uint64_t)ch->i, 200, 5000,
                       on_locked, ch) != 0) {
    posting(ch, 1);
    atomic_store(&ch->busy, 0);
  }
}

/* Restarts idle chains every 2 ms for ms: async pairs keep coming, yet
 * the loop sleeps now and then, so that blocking calls find it asleep. */
static void pump(chain *ch, int ms) {
  for (uint64_t end = rt_now_ms() + (uint64_t)ms; rt_now_ms() < end;) {
    for (int i = 0; i < CHAINS; i++) chain_next(&ch[i]);
    rt_sleep_ms(2);
  }
}

static void mixed_callers_with_kills(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  static shared s;
  memset(&s, 0, sizeof s);
  /* Renewals every 100 ms on the same connection. */
  s.c = open_one(&r, 500, 300);
  RT_REQUIRE(s.c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(s.c, 10000) == 0);
  char name[32];
  for (int i = 0; i < NAMES; i++) {
    snprintf(name, sizeof name, "fp-shared-%d", i);
    RT_REQUIRE(rlock_get(s.c, name, &s.locks[i]) == 0);
  }
  for (int i = 0; i < CHAINS; i++) {
    snprintf(name, sizeof name, "fp-async-%d", i);
    RT_REQUIRE(rlock_get(s.c, name, &s.alocks[i]) == 0);
  }
  rlock *held[2];
  for (int i = 0; i < 2; i++) {
    snprintf(name, sizeof name, "fp-held-%d", i);
    RT_REQUIRE(rlock_get(s.c, name, &held[i]) == 0);
    RT_CHECK_EQ_INT(rlock_trylock(held[i], 0, RLOCK_WATCHDOG), 0);
  }
  uint64_t fast0 = fast_starts(s.c);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++)
    RT_REQUIRE(pthread_create(&th[i], NULL, blocking_worker, &s) == 0);
  static chain ch[CHAINS];
  for (int i = 0; i < CHAINS; i++) {
    ch[i].s = &s;
    ch[i].i = i;
  }
  pump(ch, 1500);
  /* The fast path must have run among the others before the kills.
   * Where the mix above keeps it out (under valgrind, whose threads take
   * turns, it ran once in a run and not at all in the next), this phase
   * goes on, up to 20 s, with the same callers spaced out (blocking
   * pairs up to 20 ms apart, async pairs restarted every 20 ms) until it
   * has. */
  atomic_store(&s.slow, 1);
  for (uint64_t end = rt_now_ms() + 20000;
       fast_starts(s.c) == fast0 && rt_now_ms() < end;) {
    for (int i = 0; i < CHAINS; i++) chain_next(&ch[i]);
    rt_sleep_ms(20);
  }
  atomic_store(&s.slow, 0);
  RT_CHECK(fast_starts(s.c) > fast0);
  /* CLIENT KILL skips the connection that sends it: the harness's. */
  atomic_store(&s.phase, 1);
  RT_CHECK(rt_redis_int(&r, "CLIENT KILL TYPE normal") >= 1);
  pump(ch, 1500);
  atomic_store(&s.phase, 2);
  RT_CHECK(rt_redis_int(&r, "CLIENT KILL TYPE normal") >= 1);
  pump(ch, 1500);
  atomic_store(&s.phase, 3);
  RT_CHECK(rt_redis_kill(&r) == 0);
  pump(ch, 1000);
  atomic_store(&s.stop, 1);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  /* A pair still out ends within the master timeout. */
  uint64_t end = rt_now_ms() + 10000;
  while (atomic_load(&s.inflight) > 0 && rt_now_ms() < end) rt_sleep_ms(10);
  RT_CHECK_EQ_INT(atomic_load(&s.inflight), 0);
  fprintf(stderr,
          "    blocking grants by phase %d %d %d %d, errors %d; async %d "
          "posted, %d called; fast starts %llu\n",
          atomic_load(&s.ok[0]), atomic_load(&s.ok[1]), atomic_load(&s.ok[2]),
          atomic_load(&s.ok[3]), atomic_load(&s.errors),
          atomic_load(&s.posted), atomic_load(&s.called),
          (unsigned long long)(fast_starts(s.c) - fast0));
  RT_CHECK_EQ_INT(atomic_load(&s.violations), 0);
  RT_CHECK_EQ_INT(atomic_load(&s.wrong_owner), 0);
  RT_CHECK_EQ_INT(atomic_load(&s.twice), 0);
  RT_CHECK(atomic_load(&s.ok[0]) > 0);
  RT_CHECK(atomic_load(&s.ok[2]) > 0); /* after the second kill */
  RT_CHECK(atomic_load(&s.called) > 0);
  RT_CHECK(fast_starts(s.c) > fast0);
  for (int i = 0; i < 2; i++) {
    rlock_unlock(held[i]); /* the master is gone: an error, no hang */
    rlock_free(held[i]);
  }
  for (int i = 0; i < NAMES; i++) rlock_free(s.locks[i]);
  for (int i = 0; i < CHAINS; i++) rlock_free(s.alocks[i]);
  rlock_client_close(s.c);
  RT_CHECK_EQ_INT(atomic_load(&s.posted), atomic_load(&s.called));
  rt_redis_stop(&r);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  static const rt_test tests[] = {
      {"lone_call_deadline_while_paused", lone_call_deadline_while_paused},
      {"mixed_callers_with_kills", mixed_callers_with_kills},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
