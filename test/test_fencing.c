/*
 * Fencing tokens of the reentrant lock against three real masters: an
 * acquisition that is a fresh grant on the masters (after the owner's
 * lease expired everywhere, or on part of a majority) gets a token larger
 * than any intervening holder's, and one async owner's concurrent
 * acquisitions of a lock cannot race each other for the token.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[3];

/* An acquisition by the owner after its fixed lease expired, and after
 * another client held and released the lock, is a fresh grant in Redis:
 * the owner's hold is a new one (count 1), with a token larger than the
 * other client's, not a re-entry that keeps the stale token and counts
 * two levels. */
static void reentry_after_expiry_new_token(void) {
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

/* Two concurrent acquisitions by one async owner, N = 3, counters that
 * disagree (so the token is written back): one is granted with a token
 * past the counters, the other refused with RLOCK_EINVAL rather than
 * racing the first for the count and token (it could commit token 0). */
static atomic_int done5;
static void cb5(rlock *l, int status, void *arg) {
  (void)l;
  *(int *)arg = status;
  atomic_fetch_add(&done5, 1);
}
static void same_owner_concurrent_refused(void) {
  rlock_client *a = rt_client(srv, 3, 1000);
  RT_REQUIRE(a);
  rlock *la;
  RT_REQUIRE(rlock_get(a, "r5", &la) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(la) == 0);
  rt_redis_run(&srv[0], "SET rlock:{r5}:fence 1000");
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


/* The owner's hold expired on a majority (A, B), another client took
 * and released the lock there with a larger token, then the owner's
 * reentrant acquisition is granted fresh on A and reentrant on C (B slow).
 * Fresh grants (1) are fewer than the quorum (2), yet the acquisition must
 * not be taken as reentrant with the old token: if granted, its token is
 * larger than the intervening holder's. */
/* EXISTS what on master i (for rt_settle). */
static long long exists_on(int i, const char *what) {
  return rt_redis_int(&srv[i], "EXISTS %s", what);
}

static void partial_fresh_grant_new_token(void) {
  rlock_client *a = rt_client(srv, 3, 200), *b = rt_client(srv, 3, 200);
  RT_REQUIRE(a && b);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "f1", &la) == 0 && rlock_get(b, "f1", &lb) == 0);
  /* B takes and releases it once (a lease that a loaded machine's round
   * does not use up, and a wait in case the first round is slow). */
  RT_REQUIRE(rlock_trylock(lb, 5000, 10000) == 0);
  RT_REQUIRE(rlock_unlock(lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 5000, 60000) == 0);
  uint64_t ta = 0, tb = 0, ta2 = 0;
  RT_CHECK(rlock_fencing_token(la, &ta) == 0);
  /* A's trylock returned once a majority granted; the third grant may
   * still be on its way, and landing after the DELs below it would undo
   * the expiry they stage. So every master has it first. */
  for (int i = 0; i < 3; i++)
    RT_REQUIRE(rt_settle(exists_on, i, "rlock:{f1}", 1, 5000) == 1);
  /* Expired on a majority. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "DEL rlock:{f1}"), 1);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[1], "DEL rlock:{f1}"), 1);
  /* A wait, in case a round on a loaded machine misses the master
   * timeout. */
  int rcb = rlock_trylock(lb, 5000, 60000);
  if (rcb != 0) {
    char why[256];
    rlock_client_last_error(b, why, sizeof why);
    fprintf(stderr, "  B's trylock: %d (%s)\n", rcb, why);
  }
  RT_CHECK_EQ_INT(rcb, 0);
  RT_REQUIRE(rcb == 0);
  RT_CHECK(rlock_fencing_token(lb, &tb) == 0);
  RT_REQUIRE(rlock_unlock(lb) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  int rc = rlock_trylock(la, 0, 60000);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_CHECK(rlock_fencing_token(la, &ta2) == 0);
  fprintf(stderr, "  trylock %d; tokens: A %" PRIu64 ", B %" PRIu64
          ", A again %" PRIu64 ", count %d\n", rc, ta, tb, ta2,
          rlock_hold_count(la));
  if (rc == 0) RT_CHECK(ta2 > tb);
  rlock_force_unlock(la);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"reentry_after_expiry_new_token", reentry_after_expiry_new_token},
      {"same_owner_concurrent_refused", same_owner_concurrent_refused},
      {"partial_fresh_grant_new_token", partial_fresh_grant_new_token},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
