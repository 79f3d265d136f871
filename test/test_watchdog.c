/*
 * The watchdog against real masters: it keeps a held lock alive, never
 * renews an orphan, tells the owner when a lock is lost (force unlock, a
 * stopped majority), renews ten thousand locks with about locks/batch
 * script calls per period, bounds explicit extension, and releases held
 * locks on close.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <uv.h>

#include "common.h"

static rt_redis srv[3];

static rlock_client *wd_client(int n, int64_t wd_ms, int64_t mt_ms) {
  const char *m[3];
  for (int i = 0; i < n; i++) m[i] = srv[i].url;
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.watchdog_timeout_ms = wd_ms;
  o.master_timeout_ms = mt_ms;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.max_extensions = 2;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

typedef struct {
  atomic_int calls;
  atomic_uint_fast64_t at_ms;
  uint64_t owner;
  int is_thread;
} lost_rec;

static void on_lost(rlock *lock, uint64_t owner, int is_thread, void *arg) {
  (void)lock;
  lost_rec *r = arg;
  r->owner = owner;
  r->is_thread = is_thread;
  atomic_store(&r->at_ms, rt_now_ms());
  atomic_fetch_add(&r->calls, 1);
}

static void keeps_alive(void) {
  rlock_client *a = wd_client(1, 900, 500), *b = wd_client(1, 900, 500);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "alive", &la) == 0);
  RT_REQUIRE(rlock_get(b, "alive", &lb) == 0);
  lost_rec lost = {0};
  rlock_set_lost_cb(la, on_lost, &lost);
  RT_REQUIRE(rlock_trylock(la, 0, RLOCK_WATCHDOG) == 0);
  int taken = 0, no_ttl = 0, checks = 0;
  uint64_t end = rt_now_ms() + 5000;
  while (rt_now_ms() < end) {
    if (rlock_trylock(lb, 0, 5000) == 0) {
      taken++;
      rlock_unlock(lb);
    }
    long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{alive}");
    if (pttl <= 0) no_ttl++;
    checks++;
    rt_sleep_ms(50);
  }
  RT_CHECK(checks > 20);
  RT_CHECK_EQ_INT(taken, 0);
  RT_CHECK_EQ_INT(no_ttl, 0);
  RT_CHECK_EQ_INT(atomic_load(&lost.calls), 0);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(la), 1);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{alive}"), 0);
  /* After the unlock nothing renews it: it stays gone. */
  rt_sleep_ms(700);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{alive}"), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void orphan_expires(void) {
  int ready[2];
  RT_REQUIRE(pipe(ready) == 0);
  pid_t pid = fork();
  RT_REQUIRE(pid >= 0);
  if (pid == 0) {
    close(ready[0]);
    rlock_client *c = wd_client(1, 900, 500);
    rlock *l;
    if (c == NULL || rlock_get(c, "orphan", &l) != 0) _exit(2);
    if (rlock_trylock(l, 0, RLOCK_WATCHDOG) != 0) _exit(3);
    if (write(ready[1], "x", 1) != 1) _exit(4);
    for (;;) pause(); /* holds it, renewing, until killed */
  }
  close(ready[1]);
  char x;
  RT_REQUIRE(read(ready[0], &x, 1) == 1);
  close(ready[0]);
  rt_sleep_ms(1500); /* a few renewal periods: still held */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{orphan}"), 1);
  uint64_t killed = rt_now_ms();
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  uint64_t freed = 0;
  while (rt_now_ms() - killed < 5000) {
    if (rt_redis_int(&srv[0], "EXISTS rlock:{orphan}") == 0) {
      freed = rt_now_ms();
      break;
    }
    rt_sleep_ms(20);
  }
  RT_REQUIRE(freed != 0);
  RT_CHECK(freed - killed <= 900 + 500); /* the lease, plus a margin */
  /* Nobody renews an orphan: it stays free. */
  for (int i = 0; i < 20; i++) {
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{orphan}"), 0);
    rt_sleep_ms(50);
  }
}

static void force_unlock_loses(void) {
  rlock_client *a = wd_client(1, 900, 500), *b = wd_client(1, 900, 500);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "forced", &la) == 0);
  RT_REQUIRE(rlock_get(b, "forced", &lb) == 0);
  lost_rec lost = {0};
  rlock_set_lost_cb(la, on_lost, &lost);
  RT_REQUIRE(rlock_trylock(la, 0, RLOCK_WATCHDOG) == 0);
  RT_CHECK_EQ_INT(rlock_force_unlock(lb), 0);
  uint64_t t0 = rt_now_ms();
  while (atomic_load(&lost.calls) == 0 && rt_now_ms() - t0 < 3000)
    rt_sleep_ms(10);
  RT_CHECK_EQ_INT(atomic_load(&lost.calls), 1);
  /* At the next renewal, a third of the timeout later at most. */
  RT_CHECK(atomic_load(&lost.at_ms) - t0 <= 300 + 500);
  RT_CHECK_EQ_INT(lost.is_thread, 1);
  RT_CHECK(lost.owner == rlock_thread_id());
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(la), 0);
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ENOTOWNER);
  rt_sleep_ms(400);
  RT_CHECK_EQ_INT(atomic_load(&lost.calls), 1); /* once */
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void majority_stopped_loses(void) {
  const int64_t wd = 1500, mt = 100;
  rlock_client *a = wd_client(3, wd, mt);
  RT_REQUIRE(a != NULL);
  rlock *la;
  RT_REQUIRE(rlock_get(a, "stopped", &la) == 0);
  lost_rec lost = {0};
  rlock_set_lost_cb(la, on_lost, &lost);
  RT_REQUIRE(rlock_trylock(la, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(600); /* at least one renewal has happened */
  RT_CHECK_EQ_INT(atomic_load(&lost.calls), 0);
  uint64_t paused = rt_now_ms();
  RT_CHECK(rt_redis_pause(&srv[0]) == 0);
  RT_CHECK(rt_redis_pause(&srv[1]) == 0);
  while (atomic_load(&lost.calls) == 0 && rt_now_ms() - paused < 5000)
    rt_sleep_ms(5);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  RT_CHECK(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(atomic_load(&lost.calls) == 1);
  /* Before the validity ends: the last renewal before the pause started
   * no later than the pause, so the validity ended by pause + lease -
   * drift at the latest. */
  uint64_t drift = (uint64_t)(wd / 100) + 2;
  RT_CHECK(atomic_load(&lost.at_ms) - paused < (uint64_t)wd - drift);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(la), 0);
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ELOST);
  rlock_free(la);
  rlock_client_close(a);
}

/* --- 10,000 locks ------------------------------------------------------- */

#define MANY 10000

typedef struct {
  atomic_int ok, failed;
} many_state;

static void many_cb(rlock *lock, int status, void *arg) {
  (void)lock;
  many_state *s = arg;
  if (status == 0)
    atomic_fetch_add(&s->ok, 1);
  else
    atomic_fetch_add(&s->failed, 1);
}

static void ten_thousand(void) {
  /* Renewal every 2 s: a loaded machine (the sanitizers, other test runs
   * beside this one) may stall the loop for a second or two, and what is
   * checked here is batching and that nothing is lost, not speed. */
  const int64_t wd = 6000;
  rlock_client *c = wd_client(1, wd, 2000);
  RT_REQUIRE(c != NULL);
  static rlock *locks[MANY];
  for (int i = 0; i < MANY; i++) {
    char name[32];
    snprintf(name, sizeof name, "many-%d", i);
    RT_REQUIRE(rlock_get(c, name, &locks[i]) == 0);
  }
  lost_rec lost = {0};
  for (int i = 0; i < MANY; i++) rlock_set_lost_cb(locks[i], on_lost, &lost);
  RT_REQUIRE(rlock_trylock(locks[0], 0, RLOCK_WATCHDOG) == 0); /* connected */
  RT_REQUIRE(rlock_unlock(locks[0]) == 0);
  many_state st = {0};
  for (int i = 0; i < MANY; i++)
    RT_REQUIRE(rlock_lock_async(locks[i], 1, 10000, RLOCK_WATCHDOG, many_cb,
                                &st) == 0);
  uint64_t t0 = rt_now_ms();
  while (atomic_load(&st.ok) + atomic_load(&st.failed) < MANY &&
         rt_now_ms() - t0 < 60000)
    rt_sleep_ms(10);
  RT_REQUIRE(atomic_load(&st.ok) == MANY);
  long long before = rt_evalsha_calls(&srv[0]);
  uint64_t w0 = rt_now_ms();
  rt_sleep_ms(5200); /* two renewal periods and a bit */
  long long after = rt_evalsha_calls(&srv[0]);
  uint64_t window = rt_now_ms() - w0;
  RT_REQUIRE(before >= 0 && after >= before);
  double periods = (double)window / (double)(wd / 3);
  double per_period = (double)(after - before) / periods;
  fprintf(stderr, "  renewal calls: %lld in %.1f periods = %.0f per period "
          "for %d locks\n", after - before, periods, per_period, MANY);
  /* About locks / batch (100) per period; one call per lock would be
   * 10,000. */
  RT_CHECK(per_period >= 50);
  RT_CHECK(per_period <= 300);
  /* All still held: 10,000 lock keys with a TTL, no loss reported. */
  int held = 0;
  for (int i = 0; i < MANY; i += 97) {
    char key[48];
    snprintf(key, sizeof key, "rlock:{many-%d}", i);
    held += rt_redis_int(&srv[0], "PTTL %s", key) > 0;
  }
  RT_CHECK_EQ_INT(held, (MANY + 96) / 97);
  RT_CHECK_EQ_INT(atomic_load(&lost.calls), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{many-9999}"), 1);
  /* Close releases all of them. */
  rlock_client_close(c);
  int left = 0;
  for (int i = 0; i < MANY; i += 97) {
    char key[48];
    snprintf(key, sizeof key, "rlock:{many-%d}", i);
    left += rt_redis_int(&srv[0], "EXISTS %s", key) == 1;
  }
  RT_CHECK_EQ_INT(left, 0);
  for (int i = 0; i < MANY; i++) rlock_free(locks[i]);
}

/* --- extension ----------------------------------------------------------- */

static void extension(void) {
  rlock_client *a = wd_client(1, 900, 500), *b = wd_client(1, 900, 500);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "extend", &la) == 0);
  RT_REQUIRE(rlock_get(b, "extend", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 1000) == 0);
  RT_CHECK_EQ_INT(rlock_extend(lb, 5000), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_extend(la, 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_extend(la, 5000), 0);
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{extend}");
  RT_CHECK(pttl > 4000 && pttl <= 5000);
  RT_CHECK_EQ_INT(rlock_extend(la, 8000), 0);
  pttl = rt_redis_int(&srv[0], "PTTL rlock:{extend}");
  RT_CHECK(pttl > 7000);
  /* max_extensions is 2 here. */
  RT_CHECK_EQ_INT(rlock_extend(la, 9000), RLOCK_ELIMIT);
  pttl = rt_redis_int(&srv[0], "PTTL rlock:{extend}");
  RT_CHECK(pttl <= 8000);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  /* A new acquisition has its own budget; lost means lost. */
  RT_REQUIRE(rlock_trylock(la, 0, 1000) == 0);
  RT_CHECK_EQ_INT(rlock_force_unlock(lb), 0);
  RT_CHECK_EQ_INT(rlock_extend(la, 5000), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{extend}"), 0);
  RT_CHECK_EQ_INT(rlock_unlock(la), RLOCK_ENOTOWNER);
  /* The watchdog extends watchdog locks; rlock_extend refuses. */
  RT_REQUIRE(rlock_trylock(la, 0, RLOCK_WATCHDOG) == 0);
  RT_CHECK_EQ_INT(rlock_extend(la, 5000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_unlock(la), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void close_releases(void) {
  rlock_client *a = wd_client(3, 30000, 500);
  RT_REQUIRE(a != NULL);
  rlock *l1, *l2;
  RT_REQUIRE(rlock_get(a, "rel-1", &l1) == 0);
  RT_REQUIRE(rlock_get(a, "rel-2", &l2) == 0);
  RT_REQUIRE(rlock_trylock(l1, 0, RLOCK_WATCHDOG) == 0);
  RT_REQUIRE(rlock_lock(l1, RLOCK_WATCHDOG) == 0); /* reentrant: count 2 */
  RT_REQUIRE(rlock_trylock(l2, 0, 60000) == 0);
  /* The calls return once a majority granted; the third master's grants
   * may still be on their way: up to 2 s for all six keys to show. */
  int before = 0;
  for (int k = 0; k < 200 && before != 6; k++) {
    if (k > 0) rt_sleep_ms(10);
    before = 0;
    for (int i = 0; i < 3; i++)
      before += rt_redis_int(&srv[i], "EXISTS rlock:{rel-1} rlock:{rel-2}");
  }
  RT_CHECK_EQ_INT(before, 6);
  rlock_client_close(a);
  int after = 0;
  for (int i = 0; i < 3; i++)
    after += rt_redis_int(&srv[i], "EXISTS rlock:{rel-1} rlock:{rel-2}");
  RT_CHECK_EQ_INT(after, 0);
  rlock_free(l1);
  rlock_free(l2);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"keeps_alive", keeps_alive},
      {"orphan_expires", orphan_expires},
      {"force_unlock_loses", force_unlock_loses},
      {"majority_stopped_loses", majority_stopped_loses},
      {"ten_thousand", ten_thousand},
      {"extension", extension},
      {"close_releases", close_releases},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
