/*
 * Quorum behaviour against three and five real masters, with faults made
 * by real signals: a stopped minority does not stop the lock; a stopped
 * majority fails an acquisition with RLOCK_ENOQUORUM in about the master
 * timeout and, once the masters resume, leaves no lock key behind (late
 * grants are undone); fencing tokens keep increasing whichever majority
 * grants them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MT 300 /* master timeout for these tests, ms */

static rt_redis srv[5];

static int key_exists_anywhere(int n, const char *key) {
  int any = 0;
  for (int i = 0; i < n; i++)
    if (rt_redis_int(&srv[i], "EXISTS %s", key) != 0) any = 1;
  return any;
}

/* Waits up to ms for the key to be gone from all n masters. */
static int key_gone_within(int n, const char *key, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (rt_now_ms() < end) {
    if (!key_exists_anywhere(n, key)) return 1;
    rt_sleep_ms(20);
  }
  return !key_exists_anywhere(n, key);
}

static void minority_down(int n) {
  /* Rounds decide on the running majority without waiting for the stopped
   * masters' timeouts, so a long timeout costs nothing here and keeps a
   * loaded machine from failing the running masters. */
  rlock_client *c = rt_client(srv, n, 2000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "minority", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  int down = (n - 1) / 2;
  for (int i = 0; i < down; i++) RT_CHECK(rt_redis_pause(&srv[i]) == 0);
  uint64_t prev = 0;
  for (int k = 0; k < 10; k++) {
    RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
    uint64_t t = 0;
    RT_CHECK(rlock_fencing_token(l, &t) == 0);
    RT_CHECK(t > prev);
    prev = t;
    RT_CHECK_EQ_INT(rlock_is_locked(l), 1);
    RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  }
  /* The running majority really holds and releases it. */
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  int holding = 0;
  for (int i = down; i < n; i++)
    holding += rt_redis_int(&srv[i], "EXISTS rlock:{minority}") == 1;
  RT_CHECK_EQ_INT(holding, n - down);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  for (int i = 0; i < down; i++) RT_CHECK(rt_redis_resume(&srv[i]) == 0);
  /* The resumed masters execute the queued scripts; the client undoes
   * or releases what they grant. */
  RT_CHECK(key_gone_within(n, "rlock:{minority}", 5000));
  rlock_free(l);
  rlock_client_close(c);
}

static void majority_down(int n) {
  rlock_client *c = rt_client(srv, n, MT);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "majority", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  int down = n / 2 + 1;
  for (int i = 0; i < down; i++) RT_CHECK(rt_redis_pause(&srv[i]) == 0);
  for (int k = 0; k < 3; k++) {
    uint64_t t0 = rt_now_ms();
    int rc = rlock_trylock(l, 0, 10000);
    uint64_t took = rt_now_ms() - t0;
    RT_CHECK_EQ_INT(rc, RLOCK_ENOQUORUM);
    /* About the master timeout: not before it, and not much after. */
    RT_CHECK(took >= MT - 50);
    RT_CHECK(took < MT + 2000);
  }
  /* A wait bounds the whole call the same way. */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(l, 800, 10000), RLOCK_ENOQUORUM);
  RT_CHECK(rt_now_ms() - t0 < 800 + MT + 2000);
  RT_CHECK_EQ_INT(rlock_is_locked(l), RLOCK_ENOQUORUM);
  /* The minority that answered granted the lock and had it undone (the
   * undo is not waited for by the failing call: give it a moment). */
  int left = n;
  for (int k = 0; k < 100 && left > 0; k++) {
    left = 0;
    for (int i = down; i < n; i++)
      left += rt_redis_int(&srv[i], "EXISTS rlock:{majority}") != 0;
    if (left > 0) rt_sleep_ms(20);
  }
  RT_CHECK_EQ_INT(left, 0);
  for (int i = 0; i < down; i++) RT_CHECK(rt_redis_resume(&srv[i]) == 0);
  /* The stopped masters now run every queued acquire and grant it late;
   * the client must undo each grant. Inspect every master. */
  RT_CHECK(key_gone_within(n, "rlock:{majority}", 5000));
  /* And the lock works again. */
  RT_CHECK_EQ_INT(rlock_trylock(l, 2000, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK(key_gone_within(n, "rlock:{majority}", 2000));
  rlock_free(l);
  rlock_client_close(c);
}

static void minority_down_3(void) { minority_down(3); }
static void minority_down_5(void) { minority_down(5); }
static void majority_down_3(void) { majority_down(3); }
static void majority_down_5(void) { majority_down(5); }

/* Tokens increase across holders while the granting majority changes. */
static void tokens_rotating_majority(void) {
  rlock_client *a = rt_client(srv, 3, MT), *b = rt_client(srv, 3, MT);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "rotate", &la) == 0);
  RT_REQUIRE(rlock_get(b, "rotate", &lb) == 0);
  /* Both clients take it once first (a wait: on a loaded machine a fresh
   * client's first round may find a TLS master slower than MT). */
  RT_REQUIRE(rlock_trylock(la, 5000, 10000) == 0);
  RT_REQUIRE(rlock_unlock(la) == 0);
  RT_REQUIRE(rlock_trylock(lb, 5000, 10000) == 0);
  RT_REQUIRE(rlock_unlock(lb) == 0);
  uint64_t prev = 0;
  for (int k = 0; k < 12; k++) {
    rt_redis *down = &srv[k % 3];
    RT_CHECK(rt_redis_pause(down) == 0);
    rlock *l = k % 2 ? lb : la;
    RT_CHECK_EQ_INT(rlock_trylock(l, 3000, 10000), 0);
    uint64_t t = 0;
    RT_CHECK(rlock_fencing_token(l, &t) == 0);
    RT_CHECK(t > prev);
    prev = t;
    RT_CHECK_EQ_INT(rlock_unlock(l), 0);
    RT_CHECK(rt_redis_resume(down) == 0);
    RT_CHECK(key_gone_within(3, "rlock:{rotate}", 5000));
  }
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

/* Master i's fencing counter of the lock name (0: none). */
static unsigned long long fence_of(int i, const char *name) {
  redisReply *r = rt_redis_cmd(&srv[i], "GET rlock:{%s}:fence", name);
  unsigned long long v = 0;
  if (r && r->type == REDIS_REPLY_STRING) v = strtoull(r->str, NULL, 10);
  if (r) freeReplyObject(r);
  return v;
}

/* A master whose grant comes after the round was decided catches up to
 * the token when its counter was behind, and is sent nothing more when
 * its grant's token was at least the round's (the common case: a late
 * master runs the script later, and a first grant's token follows the
 * client's wall clock then). The catch-up is not sent at once to every
 * master that has not answered: with five masters, that would be two
 * commands more per lock+unlock pair. */
static void late_master_catch_up(void) {
  /* A master timeout far above the pause: this is about a late reply,
   * not a timed-out command. With 300 ms, a TLS run on a loaded machine
   * can time the command out and send a third EVALSHA to the paused
   * master. */
  rlock_client *c = rt_client(srv, 3, 5000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "catchup", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 5000, 10000) == 0); /* every master met */
  uint64_t t0 = 0;
  RT_REQUIRE(rlock_fencing_token(l, &t0) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(key_gone_within(3, "rlock:{catchup}", 3000));
  /* Every counter ends at t0 or above (caught up, or a later grant's).
   * Not at once: a master whose grant came after the two that decided is
   * caught up when its reply arrives, behind the unlock that was sent to
   * it meanwhile (read right after the unlock, fence_of >= t0 fails about
   * once in 80 runs). */
  for (int i = 0; i < 3; i++) {
    int up = 0;
    for (int k = 0; k < 150 && !up; k++) {
      up = fence_of(i, "catchup") >= t0;
      if (!up) rt_sleep_ms(20);
    }
    RT_REQUIRE(up);
  }
  /* Master 2 answers late, with a token of its own above the round's.
   * Its counter is set 1000 s ahead for that: the wall clock that a late
   * grant's token follows is the client's as the master estimates it,
   * never overestimated, and low by up to the round trip of the clock
   * samples of its connection. On a loaded machine that can exceed the
   * 50 ms pause below: a grant below the round's token, rightly caught
   * up (a third EVALSHA), but not this test's case.
   * Masters 0 and 1 are set 500 s ahead, so that both grant one token
   * (their counter plus one): tokens that follow the wall clock differ
   * between masters by microseconds, and two grants that disagree are
   * written back to a majority, master 2 among them (a third EVALSHA
   * that this test is not about). */
  unsigned long long own = t0 + 1000000000ull, mid = t0 + 500000000ull;
  for (int i = 0; i < 3; i++) {
    redisReply *set = rt_redis_cmd(&srv[i], "SET rlock:{catchup}:fence %llu",
                                   i == 2 ? own : mid);
    RT_REQUIRE(set != NULL && set->type == REDIS_REPLY_STATUS);
    freeReplyObject(set);
  }
  long long before = rt_evalsha_calls(&srv[2]);
  RT_REQUIRE(before >= 0);
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  uint64_t t1 = 0;
  RT_CHECK_EQ_INT(rlock_fencing_token(l, &t1), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rt_sleep_ms(50); /* far below the master timeout: nothing times out */
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  RT_CHECK(key_gone_within(3, "rlock:{catchup}", 3000));
  RT_CHECK_EQ_INT(t1, mid + 1);
  RT_CHECK(fence_of(2, "catchup") == own + 1); /* its grant; no catch-up */
  /* Its acquire and its unlock, no catch-up. */
  long long after = rt_evalsha_calls(&srv[2]);
  RT_CHECK_EQ_INT(after - before, 2);
  /* Counters apart: masters 0 and 1 are far ahead of master 2, whose
   * late grant carries a smaller token; it gets the round's. */
  unsigned long long ahead = t1 + 1000000000000ull;
  for (int i = 0; i < 2; i++) {
    redisReply *ok = rt_redis_cmd(&srv[i], "SET rlock:{catchup}:fence %llu",
                                  ahead);
    RT_REQUIRE(ok != NULL && ok->type == REDIS_REPLY_STATUS);
    freeReplyObject(ok);
  }
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  uint64_t t2 = 0;
  RT_CHECK_EQ_INT(rlock_fencing_token(l, &t2), 0);
  RT_CHECK(t2 == ahead + 1);
  RT_CHECK(fence_of(2, "catchup") < t2); /* paused: nothing landed yet */
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  int caught = 0;
  for (int k = 0; k < 100 && !caught; k++) {
    caught = fence_of(2, "catchup") == t2;
    if (!caught) rt_sleep_ms(20);
  }
  RT_CHECK(caught);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK(key_gone_within(3, "rlock:{catchup}", 3000));
  rlock_free(l);
  rlock_client_close(c);
}

static rlock_client *client_with(int n, int64_t quarantine_ms) {
  const char *m[5];
  for (int i = 0; i < n; i++) m[i] = srv[i].url;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = MT;
  o.restart_quarantine_ms = quarantine_ms;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

/* A master that is SIGKILLed and restarted is used again once back. */
static void master_restart(void) {
  /* Reconnection only: the restart quarantine has its own test. */
  rlock_client *c = client_with(3, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "restart", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(rt_redis_kill(&srv[2]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_REQUIRE(rt_redis_restart(&srv[2]) == 0);
  /* Once reconnected, a lock is written to all three masters again. */
  int on_all = 0;
  for (int k = 0; k < 100 && !on_all; k++) {
    RT_REQUIRE(rlock_trylock(l, 2000, 10000) == 0);
    on_all = rt_redis_int(&srv[2], "EXISTS rlock:{restart}") == 1;
    RT_CHECK_EQ_INT(rlock_unlock(l), 0);
    if (!on_all) rt_sleep_ms(50);
  }
  RT_CHECK(on_all);
  rlock_free(l);
  rlock_client_close(c);
}

/*
 * A master that restarted empty does not count toward a quorum until the
 * deployment's longest lease has passed: with it and one more
 * master stopped, an acquisition fails, though the restarted master and
 * the third one would make a majority.
 */
static void restart_quarantine(void) {
  const int64_t lease = 11000;
  /* The deployment's longest lease is 11 s: the quarantine lasts that. It
   * leaves time for what must happen inside it: the clients' reconnection
   * (which backs off up to 2 s, and TLS's handshake waits out the pause
   * below), at most lease - 2 s from the restart, then the checks while
   * it holds, within those 2 s. Under valgrind the reconnection can need
   * more than the 5 s that a 9 s lease would allow. */
  const uint64_t reconnect_by = (uint64_t)lease - 2000;
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 3;
  o.master_timeout_ms = MT;
  o.max_lease_ms = lease;
  o.watchdog_timeout_ms = lease;
  /* The masters are shared with the tests before, which restarted some:
   * a client that learns of those restarts (from the masters' records)
   * rightly quarantines them too. Let their quarantine pass first. */
  for (int i = 0; i < 3; i++) {
    for (;;) {
      redisReply *info = rt_redis_cmd(&srv[i], "INFO server");
      const char *up = info && info->type == REDIS_REPLY_STRING
                           ? strstr(info->str, "uptime_in_seconds:")
                           : NULL;
      long long s = up ? strtoll(up + 18, NULL, 10) : -1;
      if (info) freeReplyObject(info);
      if (s < 0 || s * 1000 > lease) break;
      rt_sleep_ms(200);
    }
  }
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_REQUIRE(c != NULL);
  rlock *l, *loff;
  RT_REQUIRE(rlock_get(c, "quarantine", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, lease) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  uint64_t restarted = rt_now_ms();
  /* The clients meet the new master 800 ms into its run: its uptime reads
   * 0 s, the edge of the rounding below. */
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  rt_sleep_ms(800);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  /* The client with the quarantine off is opened now, knowing nothing of
   * the restart (the hazard the quarantine guards). Opened before the
   * restart, it would have to reconnect through the pause and its
   * backoff, which under valgrind on a loaded machine can take longer
   * than this test waits. */
  rlock_client *off = client_with(3, 0);
  RT_REQUIRE(off != NULL);
  RT_REQUIRE(rlock_get(off, "quarantine", &loff) == 0);
  /* Wait until both clients are connected to the new master: their
   * grants reach it (undone afterwards, or released). */
  int back = 0;
  while (!back && rt_now_ms() - restarted < reconnect_by) {
    RT_REQUIRE(rlock_trylock(l, 1000, 1000) == 0);
    back = rt_redis_int(&srv[0], "EXISTS rlock:{quarantine}") == 1;
    RT_REQUIRE(rlock_unlock(l) == 0);
    if (!back) rt_sleep_ms(20);
  }
  if (!back) {
    char why[256];
    rlock_client_last_error(c, why, sizeof why);
    fprintf(stderr, "  not back: last error %s\n", why);
  }
  RT_REQUIRE(back);
  back = 0;
  while (!back && rt_now_ms() - restarted < reconnect_by) {
    RT_REQUIRE(rlock_trylock(loff, 1000, 1000) == 0);
    back = rt_redis_int(&srv[0], "EXISTS rlock:{quarantine}") == 1;
    RT_REQUIRE(rlock_unlock(loff) == 0);
    if (!back) rt_sleep_ms(20);
  }
  if (!back) {
    char why[256];
    rlock_client_last_error(off, why, sizeof why);
    fprintf(stderr, "  not back (quarantine off): last error %s\n", why);
  }
  RT_REQUIRE(back);
  /* An unlock returns once a majority released; the last master's
   * release may land after this client's next attempt, which would then
   * be refused there as held (RLOCK_ETIMEDOUT). */
  RT_REQUIRE(key_gone_within(3, "rlock:{quarantine}", 3000));
  RT_REQUIRE(rt_now_ms() - restarted < reconnect_by);
  RT_CHECK(rt_redis_pause(&srv[1]) == 0);
  /* Quarantined: the restarted master's grant does not count. */
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 1000), RLOCK_ENOQUORUM);
  /* The failed attempt's grants are undone asynchronously; let the undo
   * land on the two running masters before the next client tries. */
  for (int k = 0; k < 100; k++) {
    if (rt_redis_int(&srv[0], "EXISTS rlock:{quarantine}") == 0 &&
        rt_redis_int(&srv[2], "EXISTS rlock:{quarantine}") == 0)
      break;
    rt_sleep_ms(20);
  }
  /* A client with the quarantine off counts it (the hazard it guards). */
  RT_CHECK_EQ_INT(rlock_trylock(loff, 0, 1000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(loff), 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_CHECK(key_gone_within(3, "rlock:{quarantine}", 3000));
  /* Once the longest lease has passed since the restart, it counts.
   * Redis reports its uptime in whole seconds, and the client takes the
   * floor (the safe side), so the quarantine ends up to 1 s after the
   * lease has passed since the start: before restarted + lease + 1000.
   * Waiting only lease + 500 is not enough: a slow reconnect (under
   * TSan) meets the new master more than half a second into its run, and
   * so does every run with the pause above. */
  while (rt_now_ms() - restarted < (uint64_t)lease + 1100) rt_sleep_ms(50);
  RT_CHECK(rt_redis_pause(&srv[1]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 1000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_CHECK(key_gone_within(3, "rlock:{quarantine}", 3000));
  rlock_free(l);
  rlock_free(loff);
  rlock_client_close(c);
  rlock_client_close(off);
}

/* A client opened while every master is down fails fast, never hangs, and
 * works as soon as a majority is back. */
static void open_while_down(void) {
  for (int i = 0; i < 3; i++) RT_REQUIRE(rt_redis_kill(&srv[i]) == 0);
  rlock_client *c = client_with(3, 0);
  RT_REQUIRE(c != NULL); /* opening does not wait for the masters */
  rlock *l;
  RT_REQUIRE(rlock_get(c, "coldstart", &l) == 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), RLOCK_ENOQUORUM);
  RT_CHECK_EQ_INT(rlock_trylock(l, 500, 10000), RLOCK_ENOQUORUM);
  RT_CHECK(rt_now_ms() - t0 < 500 + MT + 2000);
  /* One master back is not a majority. */
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  rt_sleep_ms(300);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), RLOCK_ENOQUORUM);
  /* Two are: a waiting acquisition gets the lock once they are reached
   * (reconnection backs off up to 2 s). */
  RT_REQUIRE(rt_redis_restart(&srv[1]) == 0);
  t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(l, 10000, 10000), 0);
  RT_CHECK(rt_now_ms() - t0 < 5000);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_REQUIRE(rt_redis_restart(&srv[2]) == 0);
  rlock_free(l);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"minority_down_3", minority_down_3},
      {"minority_down_5", minority_down_5},
      {"majority_down_3", majority_down_3},
      {"majority_down_5", majority_down_5},
      {"tokens_rotating_majority", tokens_rotating_majority},
      {"late_master_catch_up", late_master_catch_up},
      {"master_restart", master_restart},
      {"restart_quarantine", restart_quarantine},
      {"open_while_down", open_while_down},
  };
  return rt_main_servers(argc, argv, srv, 5, tests,
                         sizeof tests / sizeof tests[0]);
}
