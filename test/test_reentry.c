/*
 * Reentrancy and the TTL on the master, on one real redis-server: a
 * reentrant attempt or an extension that fails never shortens the TTL the
 * holder relies on, and an unlock of a reentrant hold that no majority
 * answered ends the whole hold instead of being retried (a retry could
 * take off a second level when the first lands late).
 */
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[1];

/* A reentrant attempt whose lease is too short to give any validity
 * fails without touching the holder's TTL (its grant and undo would
 * otherwise PEXPIRE the key to the short lease), and a reentrant
 * acquisition with a shorter lease does not cut the TTL: while the holder
 * still counts a level, another client does not get in. */
static void failed_reentry_keeps_ttl(void) {
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

/* An rlock_extend too short to give any validity fails and leaves the
 * TTL as it was (the holder keeps its old validity, so the master must
 * too), and an extension never shortens the TTL. */
static void failed_extend_keeps_ttl(void) {
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

/* An unlock that times out may still land late; a retry would then
 * take off a second level. So an unlock without a majority ends the hold:
 * released everywhere, outer levels reported lost, no retry. */
static void unanswered_unlock_ends_hold(void) {
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

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"failed_reentry_keeps_ttl", failed_reentry_keeps_ttl},
      {"failed_extend_keeps_ttl", failed_extend_keeps_ttl},
      {"unanswered_unlock_ends_hold", unanswered_unlock_ends_hold},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
