/*
 * The at-risk callback (rlock_set_risk_cb) against real masters: a
 * stopped majority puts a held lock at risk before it could be lost, and
 * masters back in time take it out of risk with the lock still held (every
 * kind, and semaphore permits); a single master stopped past the validity
 * gives the risk, then the loss, in that order; healthy renewals say
 * nothing; NULL stops the calls.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[3];

/* What the callbacks said, in order: 1 and 0 from the at-risk callback,
 * 'L' from the lost one. Written on the loop thread, read by the test. */
enum { EV_MAX = 32, EV_LOST = 'L' };

typedef struct {
  atomic_int n;
  int ev[EV_MAX];
  uint64_t at[EV_MAX];
  rlock *lock[EV_MAX];
} events;

static void record(events *e, int what, rlock *lock) {
  int i = atomic_load(&e->n);
  if (i >= EV_MAX) return;
  e->ev[i] = what;
  e->at[i] = rt_now_ms();
  e->lock[i] = lock;
  atomic_store(&e->n, i + 1); /* only the loop thread writes */
}

static void on_risk(rlock *lock, int at_risk, void *arg) {
  record(arg, at_risk, lock);
}

static void on_lost(rlock *lock, uint64_t owner, int is_thread, void *arg) {
  (void)owner;
  (void)is_thread;
  record(arg, EV_LOST, lock);
}

/* Waits up to ms for at least n events; their count. */
static int wait_events(events *e, int n, uint64_t ms) {
  uint64_t t0 = rt_now_ms();
  while (atomic_load(&e->n) < n && rt_now_ms() - t0 < ms) rt_sleep_ms(2);
  return atomic_load(&e->n);
}

static uint64_t at_risk_metric(rlock_client *c) {
  rlock_metrics m;
  if (rlock_metrics_snapshot(c, &m) != 0) return (uint64_t)-1;
  return m.locks_at_risk;
}

/* N = 3, two masters stopped then resumed once the risk is said: 1, then
 * 0, and the lock is still held. get: the kind of handle. */
static void stopped_and_back(int (*get)(rlock_client *, const char *,
                                        rlock **),
                             const char *name, const char *key) {
  const int64_t wd = 3000, mt = 100;
  rlock_client *c = rt_client_wd(srv, 3, mt, wd);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(get(c, name, &l) == 0);
  events e;
  memset(&e, 0, sizeof e);
  RT_REQUIRE(rlock_set_lost_cb(l, on_lost, &e) == 0);
  RT_REQUIRE(rlock_set_risk_cb(l, on_risk, &e) == 0);
  RT_REQUIRE(rlock_trylock(l, 5000, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(1300); /* a renewal or more: all held, nothing said */
  RT_CHECK_EQ_INT(atomic_load(&e.n), 0);
  /* key's time to live on the master left running tells when the last
   * renewal before the pause was (a later one only makes it later). */
  long long pttl = key != NULL ? rt_redis_int(&srv[2], "PTTL %s", key) : -1;
  uint64_t paused = rt_now_ms();
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  int n = wait_events(&e, 1, 5000);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(n >= 1);
  RT_CHECK_EQ_INT(e.ev[0], 1);
  RT_CHECK(e.lock[0] == l);
  /* Not at the first missed renewal: the last renewal that held started
   * at most a period (wd / 3) before the pause, so half its validity
   * lasts until at least pause - wd / 3 + (wd - drift) / 2. And before
   * the validity ends. */
  uint64_t drift = (uint64_t)(wd / 100) + 2;
  uint64_t after = e.at[0] - paused;
  RT_CHECK(after + (uint64_t)(wd / 3) + 20 >= ((uint64_t)wd - drift) / 2);
  RT_CHECK(after < (uint64_t)wd - drift);
  /* Past the halfway point of that renewal's validity (50 ms for the
   * round's start before the master's receipt), not at the first renewal
   * missed, which comes about a period earlier. */
  if (pttl > 0)
    RT_CHECK((int64_t)after + 50 >=
             (int64_t)pttl - (int64_t)((uint64_t)wd - drift) / 2);
  /* Back in time: a renewal holds and says 0; no loss. */
  n = wait_events(&e, 2, 3000);
  RT_REQUIRE(n >= 2);
  RT_CHECK_EQ_INT(e.ev[1], 0);
  RT_CHECK(e.lock[1] == l);
  rt_sleep_ms(1200); /* more renewals: nothing more said */
  RT_CHECK_EQ_INT(atomic_load(&e.n), 2);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(l), 1);
  RT_CHECK_EQ_INT((int)at_risk_metric(c), 1);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

static void majority_stopped_and_back_n3(void) {
  stopped_and_back(rlock_get, "risk-lock", "rlock:{risk-lock}");
}

static void every_kind_n3(void) {
  stopped_and_back(rlock_get_fair, "risk-fair", NULL);
  stopped_and_back(rlock_get_read, "risk-rw", NULL);
  stopped_and_back(rlock_get_write, "risk-rw", NULL);
}

/* N = 1, the master stopped past the validity: 1, then lost. The risk
 * callback is set first and the lost one after: setting one keeps the
 * other. */
static void stopped_past_validity_n1(void) {
  const int64_t wd = 1500, mt = 100;
  rlock_client *c = rt_client_wd(srv, 1, mt, wd);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "risk-lost", &l) == 0);
  events e;
  memset(&e, 0, sizeof e);
  RT_REQUIRE(rlock_set_risk_cb(l, on_risk, &e) == 0);
  RT_REQUIRE(rlock_set_lost_cb(l, on_lost, &e) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(700);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 0);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  int n = wait_events(&e, 2, 5000);
  rt_sleep_ms(300); /* nothing after the loss */
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_REQUIRE(n >= 2);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 2);
  RT_CHECK_EQ_INT(e.ev[0], 1);
  RT_CHECK_EQ_INT(e.ev[1], EV_LOST);
  RT_CHECK(e.at[0] <= e.at[1]);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(l), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ELOST);
  RT_CHECK_EQ_INT((int)at_risk_metric(c), 1);
  rlock_free(l);
  rlock_client_close(c);
}

/* Renewals that all hold: no call at all, the counter stays 0. */
static void healthy_says_nothing_n3(void) {
  rlock_client *c = rt_client_wd(srv, 3, 100, 600);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "risk-healthy", &l) == 0);
  events e;
  memset(&e, 0, sizeof e);
  RT_REQUIRE(rlock_set_risk_cb(l, on_risk, &e) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(2000); /* ten renewal periods */
  rlock_metrics m;
  RT_REQUIRE(rlock_metrics_snapshot(c, &m) == 0);
  RT_CHECK(m.renewals >= 5);
  RT_CHECK_EQ_INT((int)m.locks_at_risk, 0);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* Set, then removed (the lost callback kept): the loss is told, the risk
 * is not, though the hold went through it (the counter says so). */
static void null_stops_n3(void) {
  rlock_client *c = rt_client_wd(srv, 3, 100, 1500);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "risk-null", &l) == 0);
  events e;
  memset(&e, 0, sizeof e);
  RT_REQUIRE(rlock_set_risk_cb(l, on_risk, &e) == 0);
  RT_REQUIRE(rlock_set_lost_cb(l, on_lost, &e) == 0);
  RT_REQUIRE(rlock_set_risk_cb(l, NULL, NULL) == 0);
  RT_CHECK_EQ_INT(rlock_set_risk_cb(NULL, on_risk, &e), RLOCK_EINVAL);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(600);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  int n = wait_events(&e, 1, 5000);
  rt_sleep_ms(200);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(n >= 1);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 1);
  RT_CHECK_EQ_INT(e.ev[0], EV_LOST);
  RT_CHECK_EQ_INT((int)at_risk_metric(c), 1);
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ELOST);
  rlock_free(l);
  rlock_client_close(c);
}

/* Semaphore permits, through their own setter: two of three masters
 * stopped and back, 1 then 0 and the permits still held; then the only
 * master stopped past the validity, 1 then lost. */
static void sem_on_risk(rlock_sem *sem, int at_risk, void *arg) {
  (void)sem;
  record(arg, at_risk, NULL);
}

static void sem_on_lost(rlock_sem *sem, uint64_t owner, int is_thread,
                        void *arg) {
  (void)sem;
  (void)owner;
  (void)is_thread;
  record(arg, EV_LOST, NULL);
}

static void sem_permits(void) {
  rlock_client *c = rt_client_wd(srv, 3, 100, 3000);
  RT_REQUIRE(c != NULL);
  rlock_sem *s;
  RT_REQUIRE(rlock_sem_get(c, "risk-sem", 2, &s) == 0);
  events e;
  memset(&e, 0, sizeof e);
  rlock_sem_set_risk_cb(s, sem_on_risk, &e);
  rlock_sem_set_lost_cb(s, sem_on_lost, &e);
  RT_REQUIRE(rlock_sem_acquire(s, 1, 5000, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(1300);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 0);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  int n = wait_events(&e, 1, 5000);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(n >= 1);
  RT_CHECK_EQ_INT(e.ev[0], 1);
  RT_REQUIRE(wait_events(&e, 2, 3000) >= 2);
  RT_CHECK_EQ_INT(e.ev[1], 0);
  rt_sleep_ms(1200);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 2);
  int64_t held = 0;
  RT_CHECK_EQ_INT(rlock_sem_held(s, &held), 0);
  RT_CHECK(held == 1);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), 0);
  rlock_sem_free(s);
  rlock_client_close(c);

  c = rt_client_wd(srv, 1, 100, 1500);
  RT_REQUIRE(c != NULL);
  RT_REQUIRE(rlock_sem_get(c, "risk-sem1", 2, &s) == 0);
  memset(&e, 0, sizeof e);
  rlock_sem_set_risk_cb(s, sem_on_risk, &e);
  rlock_sem_set_lost_cb(s, sem_on_lost, &e);
  RT_REQUIRE(rlock_sem_acquire(s, 1, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(700);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  n = wait_events(&e, 2, 5000);
  rt_sleep_ms(300);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_REQUIRE(n >= 2);
  RT_CHECK_EQ_INT(atomic_load(&e.n), 2);
  RT_CHECK_EQ_INT(e.ev[0], 1);
  RT_CHECK_EQ_INT(e.ev[1], EV_LOST);
  RT_CHECK_EQ_INT(rlock_sem_release(s, 1), RLOCK_ELOST);
  rlock_sem_free(s);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"majority_stopped_and_back_n3", majority_stopped_and_back_n3},
      {"stopped_past_validity_n1", stopped_past_validity_n1},
      {"healthy_says_nothing_n3", healthy_says_nothing_n3},
      {"null_stops_n3", null_stops_n3},
      {"every_kind_n3", every_kind_n3},
      {"sem_permits", sem_permits},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
