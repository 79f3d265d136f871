/*
 * The lease horizon: every script that grants or extends a lease pushes
 * the master's <prefix>horizon key to at least that lease's end, which is
 * what a restarted master's quarantine is bounded by (quarantine.c). Each
 * case deletes the key, makes one grant by one path of one kind, and
 * checks that the key is back with about that lease as its TTL: a path
 * that forgot the push leaves no key (PTTL -2) and fails here. The paths
 * are the first grant of a free lock and the ones behind it (re-entry, a
 * second reader or permit holder, a waiter's grant after a release,
 * several locks at once, the watchdog's renewal).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

#define LEASE 4000

static rt_redis srv;
static rlock_client *c1, *c2;

static rlock_client *open_one(int64_t watchdog_ms) {
  const char *m[1] = {srv.url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

static void clear_horizon(void) {
  RT_CHECK(rt_redis_int(&srv, "DEL rlock:horizon") >= 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv, "PTTL rlock:horizon"), -2);
}

/* The horizon is there and ends about lease ms from now (a little less:
 * time passed since the grant). */
static void check_pushed(const char *path, long long lease) {
  long long p = rt_redis_int(&srv, "PTTL rlock:horizon");
  fprintf(stderr, "  %s: PTTL rlock:horizon %lld (lease %lld)\n", path, p,
          lease);
  RT_CHECK(p > lease - 1500 && p <= lease);
}

static void setup(void) {
  RT_REQUIRE(rt_redis_start(&srv, NULL) == 0);
  c1 = open_one(0);
  c2 = open_one(0);
  RT_REQUIRE(c1 != NULL && c2 != NULL);
}

static void teardown(void) {
  rlock_client_close(c1);
  rlock_client_close(c2);
  rt_redis_stop(&srv);
}

static void reentrant_lock(void) {
  setup();
  rlock *a;
  RT_REQUIRE(rlock_get(c1, "A", &a) == 0);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(a, 0, LEASE) == 0);
  check_pushed("first grant", LEASE);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(a, 0, LEASE) == 0);
  check_pushed("re-entry", LEASE);
  RT_CHECK_EQ_INT(rlock_unlock(a), 0);
  RT_CHECK_EQ_INT(rlock_unlock(a), 0);
  rlock_free(a);
  teardown();
}

typedef struct waiter {
  rlock *lock;
  int rc;
} waiter;

static void *wait_for_lock(void *arg) {
  waiter *w = arg;
  w->rc = rlock_trylock(w->lock, 10000, LEASE);
  return NULL;
}

static void fair_lock(void) {
  setup();
  rlock *f1, *f2;
  RT_REQUIRE(rlock_get_fair(c1, "F", &f1) == 0);
  RT_REQUIRE(rlock_get_fair(c2, "F", &f2) == 0);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(f1, 0, LEASE) == 0);
  check_pushed("fair first grant", LEASE);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(f1, 0, LEASE) == 0);
  check_pushed("fair re-entry", LEASE);
  /* A waiter queued behind the holder is granted by the queue's path. */
  waiter w = {f2, -1};
  pthread_t t;
  RT_REQUIRE(pthread_create(&t, NULL, wait_for_lock, &w) == 0);
  rt_sleep_ms(300);
  RT_CHECK_EQ_INT(rt_redis_int(&srv, "EXISTS rlock:{F}:q"), 1);
  clear_horizon();
  RT_CHECK_EQ_INT(rlock_unlock(f1), 0);
  RT_CHECK_EQ_INT(rlock_unlock(f1), 0);
  pthread_join(t, NULL);
  RT_CHECK_EQ_INT(w.rc, 0);
  check_pushed("fair waiter's grant", LEASE);
  rlock_free(f1);
  rlock_free(f2); /* c2's hold ends with its client */
  teardown();
}

static void read_write_lock(void) {
  setup();
  rlock *r1, *r2, *w1;
  RT_REQUIRE(rlock_get_read(c1, "RW", &r1) == 0);
  RT_REQUIRE(rlock_get_read(c2, "RW", &r2) == 0);
  RT_REQUIRE(rlock_get_write(c1, "W", &w1) == 0);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(r1, 0, LEASE) == 0);
  check_pushed("first reader", LEASE);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(r2, 0, LEASE) == 0);
  check_pushed("second reader", LEASE);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(w1, 0, LEASE) == 0);
  check_pushed("first writer", LEASE);
  clear_horizon();
  RT_REQUIRE(rlock_trylock(w1, 0, LEASE) == 0);
  check_pushed("writer's re-entry", LEASE);
  RT_CHECK_EQ_INT(rlock_unlock(w1), 0);
  RT_CHECK_EQ_INT(rlock_unlock(w1), 0);
  RT_CHECK_EQ_INT(rlock_unlock(r2), 0);
  RT_CHECK_EQ_INT(rlock_unlock(r1), 0);
  rlock_free(r1);
  rlock_free(r2);
  rlock_free(w1);
  teardown();
}

static void semaphore(void) {
  setup();
  rlock_sem *s1, *s2;
  RT_REQUIRE(rlock_sem_get(c1, "S", 3, &s1) == 0);
  RT_REQUIRE(rlock_sem_get(c2, "S", 3, &s2) == 0);
  clear_horizon();
  RT_REQUIRE(rlock_sem_acquire(s1, 1, 0, LEASE) == 0);
  check_pushed("first permit", LEASE);
  clear_horizon();
  RT_REQUIRE(rlock_sem_acquire(s2, 1, 0, LEASE) == 0);
  check_pushed("second holder's permit", LEASE);
  RT_CHECK_EQ_INT(rlock_sem_release(s2, 1), 0);
  RT_CHECK_EQ_INT(rlock_sem_release(s1, 1), 0);
  rlock_sem_free(s1);
  rlock_sem_free(s2);
  teardown();
}

static void several_locks(void) {
  setup();
  rlock *two[2];
  RT_REQUIRE(rlock_get(c1, "X", &two[0]) == 0);
  RT_REQUIRE(rlock_get(c1, "Y", &two[1]) == 0);
  clear_horizon();
  RT_REQUIRE(rlock_lock_all(two, 2, 0, LEASE) == 0);
  check_pushed("several at once", LEASE);
  RT_CHECK_EQ_INT(rlock_unlock(two[0]), 0);
  RT_CHECK_EQ_INT(rlock_unlock(two[1]), 0);
  rlock_free(two[0]);
  rlock_free(two[1]);
  teardown();
}

/* A watchdog hold's renewal (every third of the watchdog's lease) pushes
 * the horizon again, so it keeps ending a lease after the last renewal. */
static void watchdog_renewal(void) {
  RT_REQUIRE(rt_redis_start(&srv, NULL) == 0);
  rlock_client *c = open_one(3000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "WD", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  clear_horizon();
  rt_sleep_ms(1500); /* at least one renewal, 1 s after the grant */
  check_pushed("watchdog renewal", 3000);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&srv);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"reentrant_lock", reentrant_lock},
      {"fair_lock", fair_lock},
      {"read_write_lock", read_write_lock},
      {"semaphore", semaphore},
      {"several_locks", several_locks},
      {"watchdog_renewal", watchdog_renewal},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
