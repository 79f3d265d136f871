/*
 * Regression tests for defects a code review found (each was reproduced
 * by the test below before it was fixed): TTLs shortened by a failed
 * reentrant attempt or extension, a double decrement on unlock retry, a
 * stale token kept after a lease expired, concurrent acquisitions by one
 * async owner, and a close from inside rlock's own callbacks.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[3];

/* 1. A failed reentrant attempt with a short lease shortens the holder's
 * TTL (grant PEXPIREs, undo PEXPIREs again): another client gets in. */
static void reentrant_undo_shortens_ttl(void) {
  rlock_client *a = rt_client(srv, 1, 1000), *b = rt_client(srv, 1, 1000);
  RT_REQUIRE(a && b);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "r1", &la) == 0 && rlock_get(b, "r1", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, RLOCK_WATCHDOG) == 0);
  int rc = rlock_trylock(la, 0, 2); /* lease 2 ms: never any validity */
  RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
  /* A reentrant acquisition with a shorter lease does not cut the TTL. */
  RT_CHECK_EQ_INT(rlock_trylock(la, 0, 100), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(la), 2);
  rt_sleep_ms(300);
  RT_CHECK(rt_redis_int(&srv[0], "PTTL rlock:{r1}") > 10000);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(la), 1); /* A still believes it holds */
  rt_sleep_ms(50);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{r1}");
  fprintf(stderr, "  PTTL after failed reentrant attempt: %lld\n", pttl);
  rc = rlock_trylock(lb, 0, 10000) == 0 ? 0 : -1;
  rc = rlock_trylock(lb, 0, 10000);
  RT_CHECK(rc != 0); /* B must not get it while A holds */
  fprintf(stderr, "  B trylock -> %d, A hold_count %d\n", rc,
          rlock_hold_count(la));
  if (rc == 0) rlock_unlock(lb);
  rlock_force_unlock(la);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* 2. A failed rlock_extend leaves the shorter TTL on the master while the
 * holder keeps its old validity. */
static void failed_extend_shortens_ttl(void) {
  rlock_client *a = rt_client(srv, 1, 1000), *b = rt_client(srv, 1, 1000);
  RT_REQUIRE(a && b);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "r2", &la) == 0 && rlock_get(b, "r2", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 60000) == 0);
  int rc = rlock_extend(la, 2);
  RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
  /* An extension never shortens the TTL either. */
  RT_CHECK_EQ_INT(rlock_extend(la, 5000), 0);
  RT_CHECK(rt_redis_int(&srv[0], "PTTL rlock:{r2}") > 50000);
  rt_sleep_ms(50);
  RT_CHECK_EQ_INT(rlock_hold_count(la), 1);
  rc = rlock_trylock(lb, 0, 10000);
  RT_CHECK(rc != 0);
  fprintf(stderr, "  B trylock -> %d while A hold_count %d\n", rc,
          rlock_hold_count(la));
  if (rc == 0) rlock_unlock(lb);
  rlock_force_unlock(la);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* 3. An unlock that times out may still land late; a retry would then
 * take off a second level. So an unlock without a majority ends the hold:
 * released everywhere, outer levels reported lost, no retry. */
static void unlock_retry_double_decrement(void) {
  rlock_client *a = rt_client(srv, 1, 200), *b = rt_client(srv, 1, 1000);
  RT_REQUIRE(a && b);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "r3", &la) == 0 && rlock_get(b, "r3", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 60000) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 60000) == 0); /* count 2 */
  RT_REQUIRE(rlock_trylock(lb, 0, 100) == RLOCK_ETIMEDOUT); /* b connected */
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  int rc = rlock_unlock(la);
  RT_CHECK_EQ_INT(rc, RLOCK_ENOQUORUM);
  RT_CHECK_EQ_INT(rlock_hold_count(la), 0); /* the hold has ended */
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(la), 0);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  /* The late decrement and the release both land: the lock is free. */
  int gone = 0;
  for (int i = 0; i < 100 && !gone; i++) {
    gone = rt_redis_int(&srv[0], "EXISTS rlock:{r3}") == 0;
    if (!gone) rt_sleep_ms(20);
  }
  RT_CHECK(gone);
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ELOST); /* the outer level */
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_trylock(lb, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(lb), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* 4. A "reentrant" acquisition after the fixed lease expired is a fresh
 * grant in Redis, but keeps the stale token and an inflated count. */
static void reentrant_after_expiry(void) {
  rlock_client *a = rt_client(srv, 1, 1000), *b = rt_client(srv, 1, 1000);
  RT_REQUIRE(a && b);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "r4", &la) == 0 && rlock_get(b, "r4", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 100) == 0);
  uint64_t ta = 0, tb = 0, ta2 = 0;
  RT_CHECK(rlock_fencing_token(la, &ta) == 0);
  rt_sleep_ms(200);
  RT_REQUIRE(rlock_trylock(lb, 0, 10000) == 0);
  RT_CHECK(rlock_fencing_token(lb, &tb) == 0);
  RT_REQUIRE(rlock_unlock(lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 10000) == 0);
  RT_CHECK(rlock_fencing_token(la, &ta2) == 0);
  fprintf(stderr, "  tokens: A %" PRIu64 ", B %" PRIu64 ", A again %" PRIu64
          ", A count %d\n", ta, tb, ta2, rlock_hold_count(la));
  RT_CHECK(ta2 > tb);
  RT_CHECK_EQ_INT(rlock_hold_count(la), 1); /* a new hold, not count 2 */
  int rc = rlock_unlock(la);
  RT_CHECK_EQ_INT(rc, 0);
  fprintf(stderr, "  A unlock -> %d, count now %d\n", rc,
          rlock_hold_count(la));
  if (rlock_hold_count(la) > 0) {
    rc = rlock_trylock(lb, 0, 10000);
    fprintf(stderr, "  B trylock -> %d while A still counts a hold\n", rc);
    RT_CHECK(rc != 0);
    if (rc == 0) rlock_unlock(lb);
  }
  rlock_force_unlock(la);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* 5. Two concurrent acquisitions by one async owner, N = 3, counters that
 * disagree (write-back needed): the second commits token 0. */
static atomic_int done5;
static void cb5(rlock *l, int status, void *arg) {
  (void)l;
  *(int *)arg = status;
  atomic_fetch_add(&done5, 1);
}
static void concurrent_same_owner_token(void) {
  rlock_client *a = rt_client(srv, 3, 1000);
  RT_REQUIRE(a);
  rlock *la;
  RT_REQUIRE(rlock_get(a, "r5", &la) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(la) == 0);
  { redisReply *x = rt_redis_cmd(&srv[0], "SET rlock:{r5}:fence 1000"); if (x) freeReplyObject(x); }
  int s1 = 99, s2 = 99;
  atomic_store(&done5, 0);
  RT_REQUIRE(rlock_lock_async(la, 7, 0, 10000, cb5, &s1) == 0);
  RT_REQUIRE(rlock_lock_async(la, 7, 0, 10000, cb5, &s2) == 0);
  while (atomic_load(&done5) < 2) rt_sleep_ms(5);
  uint64_t t = 0;
  int rc = rlock_owner_fencing_token(la, 7, &t);
  fprintf(stderr, "  statuses %d %d, token rc %d token %" PRIu64
          ", count %d\n", s1, s2, rc, t, rlock_owner_hold_count(la, 7));
  RT_CHECK(t > 1000);
  /* One owner, one acquisition of a lock in flight: the second is
   * refused rather than racing the first for the count and token. */
  RT_CHECK((s1 == 0 && s2 == RLOCK_EINVAL) || (s2 == 0 && s1 == RLOCK_EINVAL));
  RT_CHECK_EQ_INT(rlock_owner_hold_count(la, 7), 1);
  rlock_force_unlock(la);
  rlock_free(la);
  rlock_client_close(a);
}


/* 6. A lost-lock callback (run from extend_done) that closes the client:
 * extend_done then drops a freed hold and finishes a finished request. */
static rlock_client *c6;
static atomic_int lost6, done6;
static void lost_cb6(rlock *l, uint64_t owner, int is_thread, void *arg) {
  (void)l; (void)owner; (void)is_thread; (void)arg;
  atomic_store(&lost6, 1);
  rlock_client_close(c6); /* on the loop thread: the detached close */
}
static void ext_cb6(rlock *l, int status, void *arg) {
  (void)l; (void)arg;
  fprintf(stderr, "  extend cb status %d\n", status);
  atomic_fetch_add(&done6, 1);
}
static void lock_cb6(rlock *l, int status, void *arg) {
  (void)l;
  *(int *)arg = status;
  atomic_fetch_add(&done6, 1);
}
static void lost_cb_closes_client(void) {
  c6 = rt_client(srv, 1, 1000);
  RT_REQUIRE(c6);
  rlock *l;
  RT_REQUIRE(rlock_get(c6, "r6", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  rlock_set_lost_cb(l, lost_cb6, NULL);
  int st = 99;
  atomic_store(&done6, 0);
  RT_REQUIRE(rlock_lock_async(l, 1, 0, 60000, lock_cb6, &st) == 0);
  while (atomic_load(&done6) < 1) rt_sleep_ms(5);
  RT_REQUIRE(st == 0);
  { redisReply *x = rt_redis_cmd(&srv[0], "DEL rlock:{r6}"); if (x) freeReplyObject(x); } /* lost behind its back */
  RT_REQUIRE(rlock_extend_async(l, 1, 60000, ext_cb6, NULL) == 0);
  for (int i = 0; i < 200 && atomic_load(&done6) < 2; i++) rt_sleep_ms(5);
  rt_sleep_ms(300);
  RT_CHECK(atomic_load(&lost6) == 1);
  rlock_free(l);
}

/* 7. A TIMEOUT callback that closes the client frees the commands that
 * conn.c's on_timer is still walking. */
static rlock_client *c7;
static atomic_int done7;
static void cb7(rlock *l, int status, void *arg) {
  (void)l; (void)arg;
  if (atomic_fetch_add(&done7, 1) == 0) {
    fprintf(stderr, "  first cb status %d: closing from the loop\n", status);
    rlock_client_close(c7);
  }
}
static void timeout_cb_closes_client(void) {
  c7 = rt_client(srv, 1, 200);
  RT_REQUIRE(c7);
  rlock *l;
  RT_REQUIRE(rlock_get(c7, "r7", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  atomic_store(&done7, 0);
  for (uint64_t o = 1; o <= 6; o++)
    RT_REQUIRE(rlock_lock_async(l, o, 0, 10000, cb7, NULL) == 0);
  for (int i = 0; i < 400 && atomic_load(&done7) < 6; i++) rt_sleep_ms(5);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  rt_sleep_ms(200);
  RT_CHECK_EQ_INT(atomic_load(&done7), 6);
  rlock_free(l);
}

int main(int argc, char **argv) {
  if (rt_redis_start_many(srv, 3) != 0) return 1;
  static const rt_test tests[] = {
      {"reentrant_undo_shortens_ttl", reentrant_undo_shortens_ttl},
      {"failed_extend_shortens_ttl", failed_extend_shortens_ttl},
      {"unlock_retry_double_decrement", unlock_retry_double_decrement},
      {"reentrant_after_expiry", reentrant_after_expiry},
      {"concurrent_same_owner_token", concurrent_same_owner_token},
      {"lost_cb_closes_client", lost_cb_closes_client},
      {"timeout_cb_closes_client", timeout_cb_closes_client},
  };
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_redis_stop_many(srv, 3);
  return rc;
}
