/*
 * The blocking fast path (lib/core/client.c's top comment): a lone
 * blocking call starts its request and writes it on the calling thread, under the loop
 * lock, while the loop thread sleeps in poll. Against real redis-server
 * processes with real faults:
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
 * - The own loop thread wakes the callers whose requests finished in one
 *   of its turns when the turn ends; more of them than its list holds are
 *   all woken too (wakes_at_turn_end).
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

/* Requests whose caller waited for their replies itself, and those it
 * also finished (client.c: its own round). */
static uint64_t own_rounds(rlock_client *c) {
  return atomic_load(&((rl_client *)c)->own_rounds);
}

static uint64_t own_finished(rlock_client *c) {
  return atomic_load(&((rl_client *)c)->own_finished);
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
  uint64_t own0 = own_rounds(c), fin0 = own_finished(c);
  RT_REQUIRE(rt_redis_pause(&r) == 0);
  uint64_t t0 = rt_now_ms();
  int rc = rlock_trylock(l, 0, 10000);
  uint64_t took = rt_now_ms() - t0;
  RT_CHECK(rc == RLOCK_ENOQUORUM || rc == RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(fast_starts(c), before + 1);
  /* The caller waited in its own round until the command deadline, then
   * left the request to the loop, whose timer failed it. */
  RT_CHECK_EQ_INT(own_rounds(c), own0 + 1);
  RT_CHECK_EQ_INT(own_finished(c), fin0);
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

/* --- the caller's own round ------------------------------------------------ */

/* How many of the n masters have the lock's key. */
static int holders(rt_redis *rs, int n, const char *name) {
  int k = 0;
  for (int i = 0; i < n; i++)
    k += rt_redis_int(&rs[i], "EXISTS rlock:{%s}", name) == 1;
  return k;
}

/* Lone pairs, N = 1 and N = 3: the callers finish their own rounds, and
 * what they decide is what the masters hold. */
static void own_round_lone_calls(void) {
  rt_redis rs[3];
  RT_REQUIRE(rt_redis_start_many(rs, 3) == 0);
  for (int n = 1; n <= 3; n += 2) {
    rlock_options o;
    rlock_options_init(&o);
    o.master_timeout_ms = 2000;
    rlock_client *c = rt_client_opts(rs, n, &o);
    RT_REQUIRE(c != NULL);
    RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
    rlock *l;
    char name[32];
    snprintf(name, sizeof name, "fp-own-%d", n);
    RT_REQUIRE(rlock_get(c, name, &l) == 0);
    uint64_t fin0 = own_finished(c), last = 0;
    int quorum = n / 2 + 1;
    /* 40 pairs, then more, spaced out, until one was finished by its
     * caller (up to 30 s): with N = 3 the last master's reply comes after
     * the caller is done, and a call that finds it still owed (an
     * unlock's reply has a late hook) goes the old way; under the
     * sanitizers on a loaded machine that was every call of 20 s spaced
     * 20 ms apart. So the spaced calls first see every master release the
     * lock, then give its reply 50 ms to come back. */
    uint64_t more_until = 0;
    for (int i = 0;; i++) {
      if (i >= 40 && own_finished(c) != fin0) break;
      if (i == 40) more_until = rt_now_ms() + 30000;
      if (i > 40 && rt_now_ms() >= more_until) break;
      if (i >= 40) {
        uint64_t gone = rt_now_ms() + 2000;
        while (holders(rs, n, name) != 0 && rt_now_ms() < gone)
          rt_sleep_ms(5);
        rt_sleep_ms(50);
      }
      RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
      RT_CHECK(holders(rs, n, name) >= quorum);
      RT_CHECK_EQ_INT(rlock_hold_count(l), 1);
      uint64_t token = 0;
      RT_CHECK_EQ_INT(rlock_fencing_token(l, &token), 0);
      RT_CHECK(token > last);
      last = token;
      RT_CHECK_EQ_INT(rlock_unlock(l), 0);
      RT_CHECK_EQ_INT(rlock_hold_count(l), 0);
    }
    uint64_t end = rt_now_ms() + 5000;
    while (holders(rs, n, name) != 0 && rt_now_ms() < end) rt_sleep_ms(10);
    RT_CHECK_EQ_INT(holders(rs, n, name), 0);
    fprintf(stderr, "    N = %d: %llu calls finished by their caller\n",
            n, (unsigned long long)(own_finished(c) - fin0));
    RT_CHECK(own_finished(c) > fin0);
    rlock_free(l);
    rlock_client_close(c);
  }
  rt_redis_stop_many(rs, 3);
}

/* A lone call on a thread of its own: trylock, then (if granted) unlock
 * on the same thread, the owner. */
typedef struct bg_call {
  rlock *lock;
  int rc, unlock_rc;
  atomic_int done;
  atomic_ullong done_ms;
  pthread_t th;
} bg_call;

static void *bg_trylock(void *arg) {
  bg_call *b = arg;
  b->rc = rlock_trylock(b->lock, 0, 10000);
  atomic_store(&b->done_ms, rt_now_ms());
  atomic_store(&b->done, 1);
  if (b->rc == 0) b->unlock_rc = rlock_unlock(b->lock);
  return NULL;
}

static void bg_start(bg_call *b, rlock *lock) {
  b->lock = lock;
  b->rc = b->unlock_rc = 1;
  atomic_init(&b->done, 0);
  atomic_init(&b->done_ms, 0);
  RT_REQUIRE(pthread_create(&b->th, NULL, bg_trylock, b) == 0);
}

/* Waits (up to 10 s) until the client counts one more own round than
 * before: the caller is in it (the master is paused). */
static int wait_own_round(rlock_client *c, uint64_t before) {
  uint64_t end = rt_now_ms() + 10000;
  while (own_rounds(c) == before && rt_now_ms() < end) rt_sleep_ms(1);
  return own_rounds(c) > before;
}

static void *bg_close(void *arg) {
  rlock_client_close(arg);
  return NULL;
}

/* A lone call whose master is paused waits in its own round (a long
 * command deadline); a close from another thread ends the call at once,
 * not at the deadline, and the grant that lands after the master resumes
 * is undone. (The close itself then lingers until the paused master has
 * its last bytes, as any close does.) */
static void own_round_close(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  rlock_client *c = open_one(&r, 20000, 30000);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "fp-own-close", &l) == 0);
  rt_sleep_ms(200); /* the loop sleeps */
  uint64_t own0 = own_rounds(c);
  rl_client *cc = (rl_client *)c;
  atomic_fetch_add(&cc->refs, 1); /* its counters, read after the close */
  RT_REQUIRE(rt_redis_pause(&r) == 0);
  static bg_call b;
  bg_start(&b, l);
  RT_CHECK(wait_own_round(c, own0));
  rt_sleep_ms(50);
  RT_CHECK_EQ_INT(atomic_load(&b.done), 0);
  uint64_t t0 = rt_now_ms();
  pthread_t closer;
  RT_REQUIRE(pthread_create(&closer, NULL, bg_close, c) == 0);
  pthread_join(b.th, NULL);
  uint64_t took = atomic_load(&b.done_ms) - t0;
  /* 20 s of command deadline; the call ends in milliseconds. */
  if (took >= 10000) fprintf(stderr, "    the call took %llu ms\n",
                             (unsigned long long)took);
  RT_CHECK(took < 10000);
  RT_CHECK_EQ_INT(b.rc, RLOCK_ECLOSED);
  RT_CHECK(rt_redis_resume(&r) == 0);
  pthread_join(closer, NULL);
  uint64_t end = rt_now_ms() + 5000;
  while (rt_redis_int(&r, "EXISTS rlock:{fp-own-close}") != 0 &&
         rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_CHECK_EQ_INT(rt_redis_int(&r, "EXISTS rlock:{fp-own-close}"), 0);
  RT_CHECK_EQ_INT(atomic_load(&cc->own_finished), 0);
  rlock_free(l);
  rl_client_unref(cc);
  rt_redis_stop(&r);
}

typedef struct async_rec {
  atomic_int status, called;
  pthread_t thread;
} async_rec;

static void on_async_done(rlock *lock, int status, void *arg) {
  (void)lock;
  async_rec *a = arg;
  a->thread = pthread_self();
  atomic_store(&a->status, status);
  atomic_fetch_add(&a->called, 1);
}

static int wait_called(async_rec *a) {
  uint64_t end = rt_now_ms() + 10000;
  while (atomic_load(&a->called) == 0 && rt_now_ms() < end) rt_sleep_ms(1);
  return atomic_load(&a->called);
}

/* Replies of other requests on the caller's connection. (1) An async
 * request waits for its reply when a lone call starts: the call is
 * started on the caller, but its reply is not read there (it would come
 * after the other's, whose callback is user code). (2) An async request
 * posted while a caller is in its round: the caller leaves the round to
 * the loop at once. Either way both complete, each callback once and on
 * the loop thread, never on a caller. */
static void own_round_other_requests(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  rlock_client *c = open_one(&r, 20000, 30000);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
  rlock *a, *b;
  RT_REQUIRE(rlock_get(c, "fp-own-async", &a) == 0);
  RT_REQUIRE(rlock_get(c, "fp-own-block", &b) == 0);
  static bg_call call;
  static async_rec rec;
  /* (1) */
  RT_REQUIRE(rt_redis_pause(&r) == 0);
  atomic_init(&rec.called, 0);
  RT_CHECK_EQ_INT(rlock_lock_async(a, 7, 0, 10000, on_async_done, &rec), 0);
  rt_sleep_ms(200); /* written; the loop sleeps again */
  uint64_t fast0 = fast_starts(c), own0 = own_rounds(c);
  bg_start(&call, b);
  uint64_t end = rt_now_ms() + 10000;
  while (fast_starts(c) == fast0 && rt_now_ms() < end) rt_sleep_ms(1);
  RT_CHECK_EQ_INT(fast_starts(c), fast0 + 1);
  RT_CHECK_EQ_INT(own_rounds(c), own0);
  RT_CHECK(rt_redis_resume(&r) == 0);
  pthread_join(call.th, NULL);
  RT_CHECK_EQ_INT(call.rc, 0);
  RT_CHECK_EQ_INT(call.unlock_rc, 0);
  RT_CHECK(wait_called(&rec));
  RT_CHECK_EQ_INT(atomic_load(&rec.status), 0);
  RT_CHECK(!pthread_equal(rec.thread, call.th));
  RT_CHECK(!pthread_equal(rec.thread, pthread_self()));
  atomic_init(&rec.called, 0);
  RT_CHECK_EQ_INT(rlock_unlock_async(a, 7, on_async_done, &rec), 0);
  RT_CHECK(wait_called(&rec));
  RT_CHECK_EQ_INT(atomic_load(&rec.status), 0);
  /* (2) */
  rt_sleep_ms(200);
  own0 = own_rounds(c);
  uint64_t fin0 = own_finished(c);
  RT_REQUIRE(rt_redis_pause(&r) == 0);
  bg_start(&call, b);
  RT_CHECK(wait_own_round(c, own0));
  atomic_init(&rec.called, 0);
  RT_CHECK_EQ_INT(rlock_lock_async(a, 7, 0, 10000, on_async_done, &rec), 0);
  rt_sleep_ms(100);
  RT_CHECK(rt_redis_resume(&r) == 0);
  pthread_join(call.th, NULL);
  RT_CHECK_EQ_INT(call.rc, 0);
  RT_CHECK_EQ_INT(call.unlock_rc, 0);
  /* It left the round (its unlock may have had one of its own). */
  RT_CHECK(own_finished(c) <= fin0 + 1);
  RT_CHECK(wait_called(&rec));
  RT_CHECK_EQ_INT(atomic_load(&rec.status), 0);
  RT_CHECK_EQ_INT(atomic_load(&rec.called), 1);
  RT_CHECK(!pthread_equal(rec.thread, call.th));
  RT_CHECK(!pthread_equal(rec.thread, pthread_self()));
  atomic_init(&rec.called, 0);
  RT_CHECK_EQ_INT(rlock_unlock_async(a, 7, on_async_done, &rec), 0);
  RT_CHECK(wait_called(&rec));
  rlock_free(a);
  rlock_free(b);
  rlock_client_close(c);
  rt_redis_stop(&r);
}

/* Faults during a caller's round. N = 1, the master paused, then killed
 * (SIGKILL) while the caller waits in its round: the call ends with the
 * connection (not at the 20 s deadline), and once the master is back
 * calls succeed and finish on their callers again. N = 3 with one master
 * stopped (SIGSTOP): the caller's round ends on the two that answer; the
 * stopped one's late grant, after SIGCONT, is released. */
static void own_round_master_faults(void) {
  rt_redis rs[4];
  RT_REQUIRE(rt_redis_start_many(rs, 4) == 0);
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = 20000;
  /* The restarted master's grants count at once (a test of the round,
   * not of the restart quarantine). */
  o.restart_quarantine_ms = 0;
  rlock_client *c = rt_client_opts(&rs[0], 1, &o);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "fp-own-kill", &l) == 0);
  rt_sleep_ms(200);
  uint64_t own0 = own_rounds(c);
  RT_REQUIRE(rt_redis_pause(&rs[0]) == 0);
  static bg_call b;
  bg_start(&b, l);
  RT_CHECK(wait_own_round(c, own0));
  rt_sleep_ms(50);
  uint64_t t0 = rt_now_ms();
  /* SIGKILL while stopped, so that it never runs the command (the
   * harness's kill sends SIGCONT first), then the harness reaps it. */
  RT_REQUIRE(kill(rs[0].pid, SIGKILL) == 0);
  RT_REQUIRE(rt_redis_kill(&rs[0]) == 0);
  pthread_join(b.th, NULL);
  uint64_t took = rt_now_ms() - t0;
  if (b.rc != RLOCK_ENOQUORUM && b.rc != RLOCK_EREDIS)
    fprintf(stderr, "    the call returned %s\n", rlock_strerror(b.rc));
  RT_CHECK(b.rc == RLOCK_ENOQUORUM || b.rc == RLOCK_EREDIS);
  if (took >= 10000) fprintf(stderr, "    the call took %llu ms after the "
                             "kill\n", (unsigned long long)took);
  RT_CHECK(took < 10000);
  RT_REQUIRE(rt_redis_restart(&rs[0]) == 0);
  RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
  uint64_t fin0 = own_finished(c);
  int ok = 0;
  for (uint64_t end = rt_now_ms() + 10000;
       (ok < 10 || own_finished(c) == fin0) && rt_now_ms() < end;) {
    if (rlock_trylock(l, 0, 10000) == 0 && rlock_unlock(l) == 0) ok++;
    rt_sleep_ms(5);
  }
  RT_CHECK(ok >= 10);
  RT_CHECK(own_finished(c) > fin0);
  rlock_free(l);
  rlock_client_close(c);

  /* N = 3, on the other three. */
  rt_redis *r3 = &rs[1];
  c = rt_client_opts(r3, 3, &o);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(c, 10000) == 0);
  static rlock_metrics m;
  for (uint64_t end = rt_now_ms() + 10000; rt_now_ms() < end;) {
    int up = 0; /* every master, not just a quorum */
    if (rlock_metrics_snapshot(c, &m) == 0)
      for (int i = 0; i < 3; i++) up += m.masters[i].up;
    if (up == 3) break;
    rt_sleep_ms(10);
  }
  RT_REQUIRE(rlock_get(c, "fp-own-stop", &l) == 0);
  rt_sleep_ms(200);
  fin0 = own_finished(c);
  RT_REQUIRE(rt_redis_pause(&r3[2]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  RT_CHECK_EQ_INT(own_finished(c), fin0 + 1);
  RT_CHECK_EQ_INT(holders(r3, 2, "fp-own-stop"), 2);
  /* Master 2 still owes the acquire's reply, a decided round's: the
   * unlock may take its own round too, reading it if it comes. */
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  fprintf(stderr, "    N = 3, one master stopped: %llu of 2 calls finished "
          "by their caller\n", (unsigned long long)(own_finished(c) - fin0));
  RT_CHECK(rt_redis_resume(&r3[2]) == 0);
  uint64_t end = rt_now_ms() + 5000;
  while (holders(r3, 3, "fp-own-stop") != 0 && rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_CHECK_EQ_INT(holders(r3, 3, "fp-own-stop"), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop_many(rs, 4);
}

/* --- the caller's own wait (lib/lock/fast.c): a blocking trylock that
 * waits for the unlock message reads it on its own thread -------------- */

static uint64_t own_waits(rlock_client *c) {
  return atomic_load(&((rl_client *)c)->own_waits);
}

static uint64_t own_wakes(rlock_client *c) {
  return atomic_load(&((rl_client *)c)->own_wakes);
}

typedef struct wait_call {
  rlock *lock;
  int64_t wait_ms;
  int rc, count, unlock_rc; /* count: its hold count once it had it */
  uint64_t fin; /* the client's own_finished when the call returned */
  atomic_int done;
  atomic_ullong done_ms;
  pthread_t th;
} wait_call;

static void *wait_worker(void *arg) {
  wait_call *w = arg;
  w->rc = rlock_trylock(w->lock, w->wait_ms, 10000);
  w->fin = atomic_load(&w->lock->client->own_finished);
  atomic_store(&w->done_ms, rt_now_ms());
  if (w->rc == 0) {
    w->count = rlock_hold_count(w->lock);
    w->unlock_rc = rlock_unlock(w->lock);
  }
  atomic_store(&w->done, 1);
  return NULL;
}

/* Starts a blocking trylock(wait_ms) of lock on a thread of its own, the
 * loop of c asleep, and waits (up to 10 s) until its caller is in its own
 * wait; 1 if it is (else the call goes on, the loop's way). */
static int start_own_wait(wait_call *w, rlock_client *c, rlock *lock,
                          int64_t wait_ms) {
  rt_sleep_ms(200); /* the loop sleeps */
  uint64_t before = own_waits(c);
  w->lock = lock;
  w->wait_ms = wait_ms;
  w->rc = w->count = w->unlock_rc = 1;
  atomic_init(&w->done, 0);
  atomic_init(&w->done_ms, 0);
  if (pthread_create(&w->th, NULL, wait_worker, w) != 0) abort();
  uint64_t end = rt_now_ms() + 10000;
  while (own_waits(c) == before && !atomic_load(&w->done) &&
         rt_now_ms() < end)
    rt_sleep_ms(1);
  return own_waits(c) > before;
}

/* The waiting client's subscriber connection is made on its first wait:
 * waits of 300 ms on held, the holder's, until one was an own wait (up to
 * 20). 1 once one was. */
static int warm_own_wait(rlock_client *c, rlock *held) {
  for (int i = 0; i < 20; i++) {
    static wait_call w;
    int own = start_own_wait(&w, c, held, 300);
    pthread_join(w.th, NULL);
    RT_CHECK_EQ_INT(w.rc, RLOCK_ETIMEDOUT);
    if (own) return 1;
  }
  return 0;
}

typedef struct own_pair {
  rt_redis r;
  rlock_client *holder, *waiter;
  rlock *hl, *wl; /* the same lock, through each client */
} own_pair;

/* Two clients on one master; the holder holds name (20 s lease), and the
 * waiter's own wait is warmed up on it. A master timeout of 20 s: nothing
 * but what a test does ends an own wait early. */
static void pair_open(own_pair *p, const char *name,
                      int64_t master_timeout_ms) {
  RT_REQUIRE(rt_redis_start(&p->r, NULL) == 0);
  p->holder = open_one(&p->r, master_timeout_ms, 30000);
  p->waiter = open_one(&p->r, master_timeout_ms, 30000);
  RT_REQUIRE(p->holder != NULL && p->waiter != NULL);
  RT_REQUIRE(rlock_client_wait_ready(p->holder, 10000) == 0);
  RT_REQUIRE(rlock_client_wait_ready(p->waiter, 10000) == 0);
  RT_REQUIRE(rlock_get(p->holder, name, &p->hl) == 0);
  RT_REQUIRE(rlock_get(p->waiter, name, &p->wl) == 0);
  RT_REQUIRE(rlock_trylock(p->hl, 0, 20000) == 0);
  RT_REQUIRE(warm_own_wait(p->waiter, p->wl));
}

static void pair_close(own_pair *p) {
  rlock_free(p->hl);
  rlock_free(p->wl);
  rlock_client_close(p->holder);
  if (p->waiter != NULL) rlock_client_close(p->waiter);
  rt_redis_stop(&p->r);
}

/* The unlock's message, read by the waiting caller itself, starts its
 * next attempt there, and the call is finished on its caller: the loop
 * never saw it. (Its lease is 20 s: a missed message would show.) */
static void own_wait_woken_by_message(void) {
  static own_pair p;
  pair_open(&p, "ow-msg", 20000);
  for (int round = 0; round < 3; round++) {
    static wait_call w;
    uint64_t fin0 = own_finished(p.waiter);
    RT_REQUIRE(start_own_wait(&w, p.waiter, p.wl, 30000));
    rt_sleep_ms(100); /* subscribed, confirmed, its retry refused */
    RT_CHECK_EQ_INT(atomic_load(&w.done), 0);
    uint64_t wakes0 = own_wakes(p.waiter);
    uint64_t t0 = rt_now_ms();
    RT_CHECK_EQ_INT(rlock_unlock(p.hl), 0);
    pthread_join(w.th, NULL);
    RT_CHECK_EQ_INT(w.rc, 0);
    RT_CHECK(atomic_load(&w.done_ms) - t0 < 5000);
    RT_CHECK(own_wakes(p.waiter) > wakes0);
    RT_CHECK_EQ_INT(w.fin, fin0 + 1);
    RT_CHECK_EQ_INT(w.count, 1);
    RT_CHECK_EQ_INT(w.unlock_rc, 0);
    RT_CHECK_EQ_INT(rlock_trylock(p.hl, 0, 20000), 0);
  }
  pair_close(&p);
}

typedef struct async_wait {
  atomic_int status, called;
} async_wait;

static void on_async_wait(rlock *lock, int status, void *arg) {
  (void)lock;
  async_wait *a = arg;
  atomic_store(&a->status, status);
  atomic_fetch_add(&a->called, 1);
}

/* A message for another lock, which an async owner of the waiting client
 * waits for, arrives during the own wait: the caller reads it and hands
 * it to the loop, which wakes that waiter (within seconds: its holder's
 * lease is 20 s); the caller's own lock then comes to it too. */
static void own_wait_other_message(void) {
  static own_pair p;
  pair_open(&p, "ow-mine", 20000);
  rlock *ho, *wo;
  RT_REQUIRE(rlock_get(p.holder, "ow-other", &ho) == 0);
  RT_REQUIRE(rlock_get(p.waiter, "ow-other", &wo) == 0);
  RT_REQUIRE(rlock_trylock(ho, 0, 20000) == 0);
  static async_wait a;
  atomic_init(&a.called, 0);
  RT_REQUIRE(rlock_lock_async(wo, 9, 30000, 10000, on_async_wait, &a) == 0);
  static wait_call w;
  RT_REQUIRE(start_own_wait(&w, p.waiter, p.wl, 30000));
  rt_sleep_ms(100);
  uint64_t fin0 = own_finished(p.waiter);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_unlock(ho), 0);
  uint64_t end = rt_now_ms() + 10000;
  while (atomic_load(&a.called) == 0 && rt_now_ms() < end) rt_sleep_ms(1);
  RT_CHECK_EQ_INT(atomic_load(&a.called), 1);
  RT_CHECK_EQ_INT(atomic_load(&a.status), 0);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  RT_CHECK_EQ_INT(atomic_load(&w.done), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(wo, 9), 1);
  /* The caller left its wait to the loop, which now wakes it. */
  RT_CHECK_EQ_INT(rlock_unlock(p.hl), 0);
  pthread_join(w.th, NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK_EQ_INT(w.fin, fin0);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  atomic_init(&a.called, 0);
  RT_CHECK_EQ_INT(rlock_unlock_async(wo, 9, on_async_wait, &a), 0);
  end = rt_now_ms() + 10000;
  while (atomic_load(&a.called) == 0 && rt_now_ms() < end) rt_sleep_ms(1);
  RT_CHECK_EQ_INT(atomic_load(&a.status), 0);
  rlock_free(ho);
  rlock_free(wo);
  RT_REQUIRE(rlock_trylock(p.hl, 0, 20000) == 0); /* as pair_close expects */
  pair_close(&p);
}

typedef struct other_call {
  rlock *lock;
  int rc, unlock_rc;
  atomic_int done;
  pthread_t th;
} other_call;

static void *other_worker(void *arg) {
  other_call *o = arg;
  o->rc = rlock_trylock(o->lock, 0, 10000);
  if (o->rc == 0) o->unlock_rc = rlock_unlock(o->lock);
  atomic_store(&o->done, 1);
  return NULL;
}

/* Another thread's call on the waiting client, posted during the own
 * wait (the caller holds the loop lock), is served at once: the caller
 * hands the loop back (else it would wait out its wait, 20 s). */
static void own_wait_post_served(void) {
  static own_pair p;
  pair_open(&p, "ow-post", 20000);
  rlock *free_lock;
  RT_REQUIRE(rlock_get(p.waiter, "ow-post-free", &free_lock) == 0);
  static wait_call w;
  RT_REQUIRE(start_own_wait(&w, p.waiter, p.wl, 30000));
  rt_sleep_ms(100);
  static other_call o = {.rc = 1, .unlock_rc = 1};
  o.lock = free_lock;
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(pthread_create(&o.th, NULL, other_worker, &o) == 0);
  pthread_join(o.th, NULL);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  RT_CHECK_EQ_INT(o.rc, 0);
  RT_CHECK_EQ_INT(o.unlock_rc, 0);
  RT_CHECK_EQ_INT(atomic_load(&w.done), 0);
  RT_CHECK_EQ_INT(rlock_unlock(p.hl), 0);
  pthread_join(w.th, NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  rlock_free(free_lock);
  RT_REQUIRE(rlock_trylock(p.hl, 0, 20000) == 0);
  pair_close(&p);
}

/* The master stopped (SIGSTOP), then, in a second wait, killed (SIGKILL)
 * during the own wait: each wait still ends by its deadline (1.5 s; the
 * holder's lease is 20 s) with what the loop's wait gives, no hang. */
static void own_wait_master_faults(void) {
  static own_pair p;
  pair_open(&p, "ow-fault", 2000);
  static wait_call w;
  RT_REQUIRE(start_own_wait(&w, p.waiter, p.wl, 1500));
  RT_REQUIRE(rt_redis_pause(&p.r) == 0);
  uint64_t t0 = rt_now_ms();
  pthread_join(w.th, NULL);
  uint64_t took = atomic_load(&w.done_ms) - t0;
  fprintf(stderr, "    stopped: %s after %llu ms\n", rlock_strerror(w.rc),
          (unsigned long long)took);
  RT_CHECK(w.rc == RLOCK_ETIMEDOUT || w.rc == RLOCK_ENOQUORUM);
  RT_CHECK(took < 10000);
  RT_REQUIRE(rt_redis_resume(&p.r) == 0);
  /* Still held by the holder: a wait that is an own wait again. */
  RT_REQUIRE(warm_own_wait(p.waiter, p.wl));
  RT_REQUIRE(start_own_wait(&w, p.waiter, p.wl, 1500));
  t0 = rt_now_ms();
  RT_REQUIRE(rt_redis_kill(&p.r) == 0);
  pthread_join(w.th, NULL);
  took = atomic_load(&w.done_ms) - t0;
  fprintf(stderr, "    killed: %s after %llu ms\n", rlock_strerror(w.rc),
          (unsigned long long)took);
  RT_CHECK(w.rc == RLOCK_ETIMEDOUT || w.rc == RLOCK_ENOQUORUM ||
           w.rc == RLOCK_EREDIS);
  RT_CHECK(took < 10000);
  rlock_free(p.hl);
  rlock_free(p.wl);
  rlock_client_close(p.holder);
  rlock_client_close(p.waiter);
  rt_redis_stop(&p.r);
}

static void *close_worker(void *arg) {
  rlock_client_close(arg);
  return NULL;
}

/* The waiting client closed from another thread during the own wait: the
 * call ends with RLOCK_ECLOSED at once (its wait is 30 s, the lease 20). */
static void own_wait_close(void) {
  static own_pair p;
  pair_open(&p, "ow-close", 20000);
  static wait_call w;
  RT_REQUIRE(start_own_wait(&w, p.waiter, p.wl, 30000));
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_ms();
  pthread_t closer;
  RT_REQUIRE(pthread_create(&closer, NULL, close_worker, p.waiter) == 0);
  pthread_join(w.th, NULL);
  pthread_join(closer, NULL);
  p.waiter = NULL; /* closed; its handle is freed after, as any may be */
  RT_CHECK_EQ_INT(w.rc, RLOCK_ECLOSED);
  RT_CHECK(atomic_load(&w.done_ms) - t0 < 5000);
  /* The holder's lock is untouched by the waiter's close. */
  RT_CHECK_EQ_INT(rlock_hold_count(p.hl), 1);
  pair_close(&p);
}

/* --- callers woken at the end of the loop's turn ----------------------- */

#define TURN_THREADS 128
#define TURN_ROUNDS_MAX 40

typedef struct turn_shared {
  rlock_client *c;
  pthread_barrier_t start, end;
  atomic_int stop;
  atomic_int failures;
  atomic_long pairs;
} turn_shared;

typedef struct turn_worker {
  turn_shared *sh;
  rlock *lock;
} turn_worker;

static void *turn_worker_main(void *arg) {
  turn_worker *w = arg;
  turn_shared *sh = w->sh;
  for (;;) {
    pthread_barrier_wait(&sh->start);
    if (atomic_load(&sh->stop)) break;
    int rc = rlock_trylock(w->lock, 0, 10000);
    if (rc == 0) rc = rlock_unlock(w->lock);
    if (rc != 0) atomic_fetch_add(&sh->failures, 1);
    else atomic_fetch_add(&sh->pairs, 1);
    pthread_barrier_wait(&sh->end);
  }
  return NULL;
}

/* The own loop thread wakes the blocking callers whose requests finished in
 * one of its turns when the turn ends, from a list of RL_DEFER_WAKES
 * (client.c, wake_callers); a caller finished when the list is full is
 * woken at once. 128 threads each make one call at the same moment, round
 * after round, until a turn finished more callers than the list holds:
 * every one of them returns (a caller left unwoken would hang the round
 * and the test's timeout would fail it), each with its lock taken and
 * given back. */
static void wakes_at_turn_end(void) {
  rt_redis r;
  RT_REQUIRE(rt_redis_start(&r, NULL) == 0);
  turn_shared sh = {.c = open_one(&r, 5000, 30000)};
  RT_REQUIRE(sh.c != NULL);
  RT_REQUIRE(rlock_client_wait_ready(sh.c, 10000) == 0);
  rl_client *ic = (rl_client *)sh.c;
  RT_REQUIRE(pthread_barrier_init(&sh.start, NULL, TURN_THREADS + 1) == 0);
  RT_REQUIRE(pthread_barrier_init(&sh.end, NULL, TURN_THREADS + 1) == 0);
  static turn_worker w[TURN_THREADS];
  pthread_t t[TURN_THREADS];
  for (int i = 0; i < TURN_THREADS; i++) {
    char name[32];
    snprintf(name, sizeof name, "fp-turn-%d", i);
    w[i].sh = &sh;
    RT_REQUIRE(rlock_get(sh.c, name, &w[i].lock) == 0);
    RT_REQUIRE(pthread_create(&t[i], NULL, turn_worker_main, &w[i]) == 0);
  }
  int rounds = 0;
  while (rounds < TURN_ROUNDS_MAX &&
         atomic_load(&ic->wakes_overflow) == 0) {
    pthread_barrier_wait(&sh.start);
    pthread_barrier_wait(&sh.end);
    rounds++;
  }
  atomic_store(&sh.stop, 1);
  pthread_barrier_wait(&sh.start);
  for (int i = 0; i < TURN_THREADS; i++) pthread_join(t[i], NULL);
  uint64_t deferred = atomic_load(&ic->wakes_deferred);
  uint64_t overflow = atomic_load(&ic->wakes_overflow);
  printf("# wakes_at_turn_end: %d rounds, %ld pairs, %llu callers woken "
         "at a turn's end, %llu at once (list full)\n",
         rounds, atomic_load(&sh.pairs), (unsigned long long)deferred,
         (unsigned long long)overflow);
  RT_CHECK_EQ_INT(atomic_load(&sh.failures), 0);
  RT_CHECK_EQ_INT(atomic_load(&sh.pairs), (long)rounds * TURN_THREADS);
  RT_CHECK(deferred > 0);
  RT_CHECK(overflow > 0);
  for (int i = 0; i < TURN_THREADS; i++) {
    RT_CHECK_EQ_INT(rlock_hold_count(w[i].lock), 0);
    rlock_free(w[i].lock);
  }
  pthread_barrier_destroy(&sh.start);
  pthread_barrier_destroy(&sh.end);
  rlock_client_close(sh.c);
  rt_redis_stop(&r);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  static const rt_test tests[] = {
      {"lone_call_deadline_while_paused", lone_call_deadline_while_paused},
      {"mixed_callers_with_kills", mixed_callers_with_kills},
      {"own_round_lone_calls", own_round_lone_calls},
      {"own_round_close", own_round_close},
      {"own_round_other_requests", own_round_other_requests},
      {"own_round_master_faults", own_round_master_faults},
      {"own_wait_woken_by_message", own_wait_woken_by_message},
      {"own_wait_other_message", own_wait_other_message},
      {"own_wait_post_served", own_wait_post_served},
      {"own_wait_master_faults", own_wait_master_faults},
      {"own_wait_close", own_wait_close},
      {"wakes_at_turn_end", wakes_at_turn_end},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
