/*
 * Integration tests of pub/sub waiting: an unlock wakes a blocked waiter
 * long before the holder's lease would have run out (threads, processes,
 * N = 1 and N = 3); unlocks that land while a waiter subscribes are not
 * missed; killed subscriber connections are restored and their waiters
 * still acquire; 64 threads and 8 async waiters keep mutual exclusion and
 * leave no subscription behind; deadlines, client close and async
 * cancellation end a wait; and the polling strategy still works.
 *
 * "Far below the lease" is the only timing these tests assert: the
 * holders use 30 s leases, and a waiter that was not woken by the unlock
 * message would sleep until that lease ran out.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"

#define MT 1000        /* master timeout: generous for valgrind */
#define LEASE 30000    /* the holders' lease */
#define FAR_BELOW 8000 /* a woken waiter acquires well within this */

static rt_redis srv[3];

static rlock_client *open_client(int n, int strategy) {
  const char *m[3];
  for (int i = 0; i < n; i++) m[i] = srv[i].url;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = MT;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.wait_strategy = strategy;
  rlock_client *c = NULL;
  if (rlock_client_open(&c, &o) != 0) return NULL;
  return c;
}

/* PUBSUB NUMSUB of a channel on one master, or -1. */
static long long numsub(rt_redis *r, const char *channel) {
  redisReply *rep = rt_redis_cmd(r, "PUBSUB NUMSUB %s", channel);
  long long v = -1;
  if (rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
      rep->element[1]->type == REDIS_REPLY_INTEGER)
    v = rep->element[1]->integer;
  if (rep != NULL) freeReplyObject(rep);
  return v;
}

/* Waits until every one of the first n masters has want subscribers on
 * channel (at least want when at_least). 1 if it happened in time. */
static int numsub_becomes(int n, const char *channel, long long want,
                          int at_least, int timeout_ms) {
  uint64_t end = rt_now_ms() + (uint64_t)timeout_ms;
  for (;;) {
    int ok = 1;
    for (int i = 0; i < n; i++) {
      long long v = numsub(&srv[i], channel);
      if (at_least ? v < want : v != want) ok = 0;
    }
    if (ok) return 1;
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(5);
  }
}

/* --- a blocked waiter is woken by the unlock ---------------------------- */

typedef struct {
  rlock *lock;
  int64_t wait_ms;
  int rc;
  uint64_t done_us; /* when the call returned */
  int unlock_rc;
} waiter_arg;

static void *waiter(void *p) {
  waiter_arg *a = p;
  a->rc = a->wait_ms == RLOCK_WAIT_FOREVER
              ? rlock_lock(a->lock, 10000)
              : rlock_trylock(a->lock, a->wait_ms, 10000);
  a->done_us = rt_now_us();
  if (a->rc == 0) a->unlock_rc = rlock_unlock(a->lock);
  return NULL;
}

static void woken_not_expired(int n) {
  rlock_client *a = open_client(n, RLOCK_WAIT_PUBSUB);
  rlock_client *b = open_client(n, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "wake", &la) == 0);
  RT_REQUIRE(rlock_get(b, "wake", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
  waiter_arg w = {.lock = lb, .wait_ms = RLOCK_WAIT_FOREVER};
  pthread_t th;
  pthread_create(&th, NULL, waiter, &w);
  /* The waiter subscribes the lock's channel while it waits. */
  RT_CHECK(numsub_becomes(n, "rlock:{wake}:ch", 1, 0, 5000));
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  RT_CHECK(w.done_us - t0 < FAR_BELOW * 1000u);
  /* The last waiter left: the channel is unsubscribed everywhere. */
  RT_CHECK(numsub_becomes(n, "rlock:{wake}:ch", 0, 0, 5000));
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void woken_not_expired_1(void) { woken_not_expired(1); }
static void woken_not_expired_3(void) { woken_not_expired(3); }

/* The same across processes: the waiter is a forked child with its own
 * client, the holder this process. */
static void woken_across_processes(void) {
  int fds[2], go[2];
  RT_REQUIRE(pipe(fds) == 0);
  RT_REQUIRE(pipe(go) == 0);
  pid_t pid = fork();
  RT_REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    close(go[1]);
    char x;
    rlock_client *c = open_client(3, RLOCK_WAIT_PUBSUB);
    rlock *l;
    int rc = 2;
    /* Waits until the parent holds the lock. */
    if (read(go[0], &x, 1) != 1) _exit(6);
    if (c != NULL && rlock_get(c, "procwake", &l) == 0) {
      rc = rlock_trylock(l, 20000, 10000) == 0 ? 0 : 3;
      uint64_t t = rt_now_us();
      if (write(fds[1], &t, sizeof t) != (ssize_t)sizeof t) rc = 4;
      if (rc == 0 && rlock_unlock(l) != 0) rc = 5;
      rlock_free(l);
    }
    if (c != NULL) rlock_client_close(c);
    _exit(rc);
  }
  close(fds[1]);
  close(go[0]);
  rlock_client *c = open_client(3, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "procwake", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, LEASE) == 0);
  RT_CHECK(write(go[1], "g", 1) == 1);
  close(go[1]);
  int subscribed = numsub_becomes(3, "rlock:{procwake}:ch", 1, 0, 10000);
  RT_CHECK(subscribed);
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  uint64_t t1 = 0;
  RT_CHECK(read(fds[0], &t1, sizeof t1) == (ssize_t)sizeof t1);
  int status = 0;
  RT_CHECK(waitpid(pid, &status, 0) == pid);
  RT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (subscribed) RT_CHECK(t1 > t0 && t1 - t0 < FAR_BELOW * 1000u);
  close(fds[0]);
  rlock_free(l);
  rlock_client_close(c);
}

/* --- unlocks that land while the waiter subscribes ------------------------ */

#define RACE_ITERS 48

/*
 * Each iteration uses a fresh waiting client, whose subscriber connections
 * are only made on its first wait: the window between its failed attempt
 * and a confirmed subscription is then a connect plus a round trip wide,
 * and the unlock, sent 0 to 3.3 ms after the waiter starts, often lands in
 * it. A waiter that missed that unlock would sleep out the 30 s lease.
 */
static void missed_notification_race(void) {
  rlock_client *a = open_client(3, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(a != NULL);
  rlock *la;
  RT_REQUIRE(rlock_get(a, "race", &la) == 0);
  uint64_t worst = 0;
  int failures = 0;
  for (int i = 0; i < RACE_ITERS; i++) {
    rlock_client *b = open_client(3, RLOCK_WAIT_PUBSUB);
    RT_REQUIRE(b != NULL);
    rlock *lb, *warm;
    RT_REQUIRE(rlock_get(b, "race", &lb) == 0);
    RT_REQUIRE(rlock_get(b, "race-warm", &warm) == 0);
    RT_REQUIRE(rlock_trylock(warm, 0, 1000) == 0); /* commands connected */
    RT_REQUIRE(rlock_unlock(warm) == 0);
    RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
    waiter_arg w = {.lock = lb, .wait_ms = 20000};
    pthread_t th;
    pthread_create(&th, NULL, waiter, &w);
    usleep((useconds_t)(i % 12) * 300u);
    uint64_t t0 = rt_now_us();
    RT_CHECK_EQ_INT(rlock_unlock(la), 0);
    pthread_join(th, NULL);
    if (w.rc != 0 || w.unlock_rc != 0) failures++;
    uint64_t waited = w.done_us > t0 ? w.done_us - t0 : 0;
    if (waited > worst) worst = waited;
    rlock_free(lb);
    rlock_free(warm);
    rlock_client_close(b);
  }
  RT_CHECK_EQ_INT(failures, 0);
  /* No waiter slept until the lease ran out. */
  RT_CHECK(worst < FAR_BELOW * 1000u);
  RT_CHECK(numsub_becomes(3, "rlock:{race}:ch", 0, 0, 5000));
  rlock_free(la);
  rlock_client_close(a);
}

/* --- killed subscriber connections ---------------------------------------- */

#define LOST_WAITERS 3

static void lost_messages(void) {
  rlock_client *a = open_client(3, RLOCK_WAIT_PUBSUB);
  rlock_client *b = open_client(3, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "lost", &la) == 0);
  RT_REQUIRE(rlock_get(b, "lost", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
  waiter_arg w[LOST_WAITERS];
  pthread_t th[LOST_WAITERS];
  for (int i = 0; i < LOST_WAITERS; i++) {
    w[i] = (waiter_arg){.lock = lb, .wait_ms = 25000};
    pthread_create(&th[i], NULL, waiter, &w[i]);
  }
  RT_CHECK(numsub_becomes(3, "rlock:{lost}:ch", 1, 0, 5000));
  /* Kill them: they come back, with the subscription. */
  for (int i = 0; i < 3; i++)
    RT_CHECK(rt_redis_int(&srv[i], "CLIENT KILL TYPE pubsub") >= 1);
  RT_CHECK(numsub_becomes(3, "rlock:{lost}:ch", 1, 0, 10000));
  /* Kill them again and unlock at once: the message is published while
   * the subscribers are down, and lost. */
  for (int i = 0; i < 3; i++)
    RT_CHECK(rt_redis_int(&srv[i], "CLIENT KILL TYPE pubsub") >= 1);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  for (int i = 0; i < LOST_WAITERS; i++) {
    pthread_join(th[i], NULL);
    RT_CHECK_EQ_INT(w[i].rc, 0);
    RT_CHECK_EQ_INT(w[i].unlock_rc, 0);
    RT_CHECK(w[i].done_us - t0 < FAR_BELOW * 1000u);
  }
  RT_CHECK(numsub_becomes(3, "rlock:{lost}:ch", 0, 0, 5000));
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* --- contention: 64 threads and 8 async waiters ---------------------------- */

#define CT_THREADS 64
#define CT_ASYNC 8
#define CT_MS 3000

typedef struct contention {
  rlock *locks[2];
  volatile long counter; /* non-atomic on purpose: the lock guards it */
  atomic_long acquisitions;
  atomic_int errors;
  atomic_int async_done;
  uint64_t stop_ms;
} contention;

typedef struct {
  contention *ct;
  rlock *lock;
} ct_thread;

static void *ct_worker(void *p) {
  ct_thread *t = p;
  contention *ct = t->ct;
  while (rt_now_ms() < ct->stop_ms) {
    if (rlock_trylock(t->lock, 60000, 10000) != 0) {
      atomic_fetch_add(&ct->errors, 1);
      continue;
    }
    long v = ct->counter;
    ct->counter = v + 1;
    atomic_fetch_add(&ct->acquisitions, 1);
    if (rlock_unlock(t->lock) != 0) atomic_fetch_add(&ct->errors, 1);
  }
  return NULL;
}

typedef struct {
  contention *ct;
  uint64_t owner;
} ct_async;

static void ct_async_lock(ct_async *a);

static void ct_async_unlocked(rlock *lock, int status, void *arg) {
  (void)lock;
  ct_async *a = arg;
  if (status != 0) atomic_fetch_add(&a->ct->errors, 1);
  if (rt_now_ms() >= a->ct->stop_ms)
    atomic_fetch_add(&a->ct->async_done, 1);
  else
    ct_async_lock(a);
}

static void ct_async_locked(rlock *lock, int status, void *arg) {
  ct_async *a = arg;
  if (status != 0) {
    atomic_fetch_add(&a->ct->errors, 1);
    atomic_fetch_add(&a->ct->async_done, 1);
    return;
  }
  long v = a->ct->counter;
  a->ct->counter = v + 1;
  atomic_fetch_add(&a->ct->acquisitions, 1);
  if (rlock_unlock_async(lock, a->owner, ct_async_unlocked, a) != 0) {
    atomic_fetch_add(&a->ct->errors, 1);
    atomic_fetch_add(&a->ct->async_done, 1);
  }
}

static void ct_async_lock(ct_async *a) {
  if (rlock_lock_async(a->ct->locks[0], a->owner, 60000, 10000,
                       ct_async_locked, a) != 0) {
    atomic_fetch_add(&a->ct->errors, 1);
    atomic_fetch_add(&a->ct->async_done, 1);
  }
}

static void contention_64_threads(void) {
  rlock_client *c[2] = {open_client(3, RLOCK_WAIT_PUBSUB),
                        open_client(3, RLOCK_WAIT_PUBSUB)};
  RT_REQUIRE(c[0] != NULL && c[1] != NULL);
  static contention ct;
  memset(&ct, 0, sizeof ct);
  for (int i = 0; i < 2; i++) {
    RT_REQUIRE(rlock_get(c[i], "contended", &ct.locks[i]) == 0);
    RT_REQUIRE(rlock_trylock(ct.locks[i], 0, 10000) == 0); /* connected */
    RT_REQUIRE(rlock_unlock(ct.locks[i]) == 0);
  }
  ct.stop_ms = rt_now_ms() + CT_MS;
  static ct_thread targs[CT_THREADS];
  static ct_async aargs[CT_ASYNC];
  pthread_t th[CT_THREADS];
  for (int i = 0; i < CT_THREADS; i++) {
    targs[i] = (ct_thread){.ct = &ct, .lock = ct.locks[i % 2]};
    pthread_create(&th[i], NULL, ct_worker, &targs[i]);
  }
  for (int i = 0; i < CT_ASYNC; i++) {
    aargs[i] = (ct_async){.ct = &ct, .owner = 100 + (uint64_t)i};
    ct_async_lock(&aargs[i]);
  }
  for (int i = 0; i < CT_THREADS; i++) pthread_join(th[i], NULL);
  uint64_t end = rt_now_ms() + 60000;
  while (atomic_load(&ct.async_done) < CT_ASYNC && rt_now_ms() < end)
    rt_sleep_ms(10);
  RT_CHECK_EQ_INT(atomic_load(&ct.async_done), CT_ASYNC);
  RT_CHECK_EQ_INT(atomic_load(&ct.errors), 0);
  RT_CHECK(atomic_load(&ct.acquisitions) > CT_THREADS);
  RT_CHECK_EQ_INT(ct.counter, atomic_load(&ct.acquisitions));
  RT_CHECK_EQ_INT(rlock_is_locked(ct.locks[0]), 0);
  /* Every waiter left, so nobody is subscribed any more. */
  RT_CHECK(numsub_becomes(3, "rlock:{contended}:ch", 0, 0, 5000));
  for (int i = 0; i < 2; i++) {
    rlock_free(ct.locks[i]);
    rlock_client_close(c[i]);
  }
}

/* --- deadlines, close, cancel ------------------------------------------------ */

static void trylock_times_out(void) {
  rlock_client *a = open_client(1, RLOCK_WAIT_PUBSUB);
  rlock_client *b = open_client(1, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "timeout", &la) == 0);
  RT_REQUIRE(rlock_get(b, "timeout", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
  RT_REQUIRE(rlock_trylock(lb, 0, 100) == RLOCK_ETIMEDOUT); /* b is connected */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(lb, 200, 10000), RLOCK_ETIMEDOUT);
  uint64_t took = rt_now_ms() - t0;
  RT_CHECK(took >= 190);
  RT_CHECK(took < 200 + MT + 2000);
  RT_CHECK(numsub_becomes(1, "rlock:{timeout}:ch", 0, 0, 5000));
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

#define CLOSE_WAITERS 4

static void close_wakes_waiters(void) {
  rlock_client *a = open_client(3, RLOCK_WAIT_PUBSUB);
  rlock_client *b = open_client(3, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "closing", &la) == 0);
  RT_REQUIRE(rlock_get(b, "closing", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
  waiter_arg w[CLOSE_WAITERS];
  pthread_t th[CLOSE_WAITERS];
  for (int i = 0; i < CLOSE_WAITERS; i++) {
    w[i] = (waiter_arg){.lock = lb, .wait_ms = RLOCK_WAIT_FOREVER};
    pthread_create(&th[i], NULL, waiter, &w[i]);
  }
  RT_CHECK(numsub_becomes(3, "rlock:{closing}:ch", 1, 0, 5000));
  rt_sleep_ms(200); /* all of them asleep in the queue */
  uint64_t t0 = rt_now_ms();
  rlock_client_close(b);
  for (int i = 0; i < CLOSE_WAITERS; i++) {
    pthread_join(th[i], NULL);
    RT_CHECK_EQ_INT(w[i].rc, RLOCK_ECLOSED);
  }
  RT_CHECK(rt_now_ms() - t0 < FAR_BELOW);
  /* Its subscriber connections went with it. */
  RT_CHECK(numsub_becomes(3, "rlock:{closing}:ch", 0, 0, 5000));
  RT_CHECK_EQ_INT(rlock_is_locked(la), 1);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
}

typedef struct {
  atomic_int calls;
  atomic_int status;
} cancel_state;

static void on_cancelled(rlock *lock, int status, void *arg) {
  (void)lock;
  cancel_state *s = arg;
  atomic_store(&s->status, status);
  atomic_fetch_add(&s->calls, 1);
}

static void cancel_async_wait(void) {
  rlock_client *a = open_client(3, RLOCK_WAIT_PUBSUB);
  rlock_client *b = open_client(3, RLOCK_WAIT_PUBSUB);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "cancel", &la) == 0);
  RT_REQUIRE(rlock_get(b, "cancel", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
  RT_CHECK_EQ_INT(rlock_cancel_async(lb, 7), RLOCK_ENOTOWNER);
  cancel_state s;
  atomic_init(&s.calls, 0);
  atomic_init(&s.status, 1);
  RT_REQUIRE(rlock_lock_async(lb, 7, RLOCK_WAIT_FOREVER, 10000, on_cancelled,
                              &s) == 0);
  RT_CHECK(numsub_becomes(3, "rlock:{cancel}:ch", 1, 0, 5000));
  RT_CHECK_EQ_INT(rlock_cancel_async(lb, 8), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(atomic_load(&s.calls), 0);
  RT_CHECK_EQ_INT(rlock_cancel_async(lb, 7), 0);
  /* Off the loop thread, the callback has run when cancel returns. */
  RT_CHECK_EQ_INT(atomic_load(&s.calls), 1);
  RT_CHECK_EQ_INT(atomic_load(&s.status), RLOCK_ECANCELED);
  RT_CHECK_EQ_INT(rlock_cancel_async(lb, 7), RLOCK_ENOTOWNER);
  RT_CHECK(numsub_becomes(3, "rlock:{cancel}:ch", 0, 0, 5000));
  /* The holder was not disturbed, and an unlock now wakes nobody. */
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(la), 1);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(lb, 7), 0);
  RT_CHECK_EQ_INT(atomic_load(&s.calls), 1);
  RT_CHECK_EQ_INT(strcmp(rlock_strerror(RLOCK_ECANCELED), "unknown error") != 0,
                  1);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* --- the polling strategy ------------------------------------------------------ */

static void poll_strategy(void) {
  rlock_client *a = open_client(3, RLOCK_WAIT_POLL);
  rlock_client *b = open_client(3, RLOCK_WAIT_POLL);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "polling", &la) == 0);
  RT_REQUIRE(rlock_get(b, "polling", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, LEASE) == 0);
  waiter_arg w = {.lock = lb, .wait_ms = RLOCK_WAIT_FOREVER};
  pthread_t th;
  pthread_create(&th, NULL, waiter, &w);
  rt_sleep_ms(300);
  /* A polling waiter subscribes nothing. */
  for (int i = 0; i < 3; i++)
    RT_CHECK_EQ_INT(numsub(&srv[i], "rlock:{polling}:ch"), 0);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  RT_CHECK_EQ_INT(w.unlock_rc, 0);
  RT_CHECK(w.done_us - t0 < FAR_BELOW * 1000u);
  /* And it still excludes: threads of both clients on one counter. */
  static contention ct;
  memset(&ct, 0, sizeof ct);
  ct.locks[0] = la;
  ct.locks[1] = lb;
  ct.stop_ms = rt_now_ms() + 1000;
  ct_thread targs[8];
  pthread_t ths[8];
  for (int i = 0; i < 8; i++) {
    targs[i] = (ct_thread){.ct = &ct, .lock = ct.locks[i % 2]};
    pthread_create(&ths[i], NULL, ct_worker, &targs[i]);
  }
  for (int i = 0; i < 8; i++) pthread_join(ths[i], NULL);
  RT_CHECK_EQ_INT(atomic_load(&ct.errors), 0);
  RT_CHECK(atomic_load(&ct.acquisitions) > 8);
  RT_CHECK_EQ_INT(ct.counter, atomic_load(&ct.acquisitions));
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"woken_not_expired_1", woken_not_expired_1},
      {"woken_not_expired_3", woken_not_expired_3},
      {"woken_across_processes", woken_across_processes},
      {"missed_notification_race", missed_notification_race},
      {"lost_messages", lost_messages},
      {"contention_64_threads", contention_64_threads},
      {"trylock_times_out", trylock_times_out},
      {"close_wakes_waiters", close_wakes_waiters},
      {"cancel_async_wait", cancel_async_wait},
      {"poll_strategy", poll_strategy},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
