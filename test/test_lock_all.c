/*
 * Several locks at once against real masters, N = 1 and N = 3: processes
 * that take overlapping sets listed in opposite orders, over and over for
 * a few seconds, all finish (no deadlock) and never overlap on a lock (a
 * checker over the timestamps of every hold, per lock, and the fencing
 * tokens per lock growing); all or none when one lock is held elsewhere,
 * on all masters or on some; re-entry shared with single acquisitions;
 * unlock_all of a lost lock; the watchdog renewing such holds; async
 * calls and cancel; bad input.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static rt_redis srv[3];

static rlock_client *open_client(int n, int64_t watchdog_ms) {
  return rt_client_wd(srv, n, 1000, watchdog_ms);
}

static long long exists_on(int i, const char *key) {
  return rt_redis_int(&srv[i], "EXISTS %s", key);
}

/* EXISTS key on master i once it says want, or its last answer after 5 s:
 * with N = 3 a call returns once a majority answered, and the last
 * master's release may land just after (the library does not wait for
 * it). A release that never lands still fails the check. */
static long long exists_settled(int i, const char *what, long long want) {
  return rt_settle(exists_on, i, what, want, 5000);
}

/* --- opposite orders, across processes ---------------------------------- */

#define NLOCKS 4
#define MAXH 2048

/* Per lock, every hold's [enter, leave] and token. */
typedef struct lock_log {
  volatile int n;
  volatile uint64_t enter[MAXH], leave[MAXH], token[MAXH];
} lock_log;

typedef struct shared {
  lock_log log[NLOCKS];
  volatile int done[4], errors[4], last_error[4];
} shared;

static const char *names[NLOCKS] = {"la", "lb", "lc", "ld"};

/* Process p's set, in its own order: 0 takes a b c, 1 takes c b a (the
 * opposite order), 2 takes d c b, 3 takes b d. */
static const int sets[4][3] = {{0, 1, 2}, {2, 1, 0}, {3, 2, 1}, {1, 3, -1}};

static int run_proc(int n, int p, shared *sh, uint64_t stop_us) {
  rlock_client *c = open_client(n, 0);
  if (c == NULL) return 2;
  rlock *all[NLOCKS];
  for (int k = 0; k < NLOCKS; k++)
    if (rlock_get(c, names[k], &all[k]) != 0) return 3;
  rlock *set[3];
  size_t m = 0;
  for (int k = 0; k < 3 && sets[p][k] >= 0; k++) set[m++] = all[sets[p][k]];
  while (rt_now_us() < stop_us) {
    int rc = rlock_lock_all(set, m, 20000, RLOCK_WATCHDOG);
    if (rc != 0) {
      sh->errors[p]++;
      sh->last_error[p] = rc;
      continue;
    }
    uint64_t t0 = rt_now_us();
    usleep(500 + (unsigned)(t0 % 1500));
    uint64_t t1 = rt_now_us();
    for (size_t k = 0; k < m; k++) {
      int idx = p == 3 ? (k == 0 ? 1 : 3) : sets[p][k];
      lock_log *l = &sh->log[idx];
      uint64_t tok = 0;
      rlock_fencing_token(set[k], &tok);
      int at = __atomic_fetch_add(&l->n, 1, __ATOMIC_SEQ_CST);
      if (at < MAXH) {
        l->enter[at] = t0;
        l->leave[at] = t1;
        l->token[at] = tok;
      }
    }
    rc = rlock_unlock_all(set, m);
    if (rc != 0) {
      sh->errors[p]++;
      sh->last_error[p] = rc;
    }
    sh->done[p]++;
  }
  for (int k = 0; k < NLOCKS; k++) rlock_free(all[k]);
  rlock_client_close(c);
  return 0;
}

/* 1 if no two holds of the log overlap, and tokens grow with time. */
static int exclusive(const lock_log *l, const char *name) {
  int n = l->n < MAXH ? l->n : MAXH;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (i == j) continue;
      if (l->enter[i] < l->leave[j] && l->enter[j] < l->leave[i]) {
        fprintf(stderr, "  lock %s: holds %d and %d overlap\n", name, i, j);
        return 0;
      }
      if (l->enter[i] < l->enter[j] && l->token[i] >= l->token[j]) {
        fprintf(stderr, "  lock %s: token %" PRIu64 " then %" PRIu64 "\n",
                name, l->token[i], l->token[j]);
        return 0;
      }
    }
  return 1;
}

static void opposite_orders(int n) {
  rt_flush_all(srv, 3);
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RT_REQUIRE(sh != MAP_FAILED);
  memset((void *)sh, 0, sizeof *sh);
  uint64_t stop = rt_now_us() + 4000000u;
  pid_t pids[4];
  for (int p = 0; p < 4; p++) {
    pids[p] = fork();
    if (pids[p] == 0) _exit(run_proc(n, p, sh, stop));
  }
  for (int p = 0; p < 4; p++) {
    int st = 0;
    RT_CHECK(waitpid(pids[p], &st, 0) == pids[p]);
    RT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  uint64_t took = (rt_now_us() - stop) / 1000;
  fprintf(stderr, "  sets taken: %d %d %d %d (errors %d %d %d %d, last %d), "
                  "done %" PRIu64 " ms after the stop\n",
          sh->done[0], sh->done[1], sh->done[2], sh->done[3], sh->errors[0],
          sh->errors[1], sh->errors[2], sh->errors[3], sh->last_error[0],
          took);
  /* Every process got through, and no call waited out its 20 s: none
   * was stuck behind another (the counts depend on the machine). */
  for (int p = 0; p < 4; p++) {
    RT_CHECK(sh->done[p] >= 2);
    RT_CHECK_EQ_INT(sh->errors[p], 0);
  }
  for (int k = 0; k < NLOCKS; k++) {
    RT_CHECK(sh->log[k].n > 0);
    RT_CHECK(exclusive(&sh->log[k], names[k]));
  }
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  for (int i = 0; i < n; i++)
    for (int k = 0; k < NLOCKS; k++) {
      char key[32];
      snprintf(key, sizeof key, "rlock:{%s}", names[k]);
      RT_CHECK_EQ_INT(exists_settled(i, key, 0), 0); /* all released */
    }
  munmap(sh, sizeof *sh);
}

static void opposite_orders_1(void) { opposite_orders(1); }
static void opposite_orders_3(void) { opposite_orders(3); }

/* --- all or none -------------------------------------------------------------- */

static void all_or_none(int n) {
  rt_flush_all(srv, 3);
  rlock_client *a = open_client(n, 0), *b = open_client(n, 0);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la[3], *lb;
  const char *nm[3] = {"xa", "xb", "xc"};
  for (int k = 0; k < 3; k++) RT_REQUIRE(rlock_get(a, nm[k], &la[k]) == 0);
  RT_REQUIRE(rlock_get(b, "xb", &lb) == 0);
  RT_REQUIRE(rlock_trylock(lb, 0, 10000) == 0);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_lock_all(la, 3, 300, 10000), RLOCK_ETIMEDOUT);
  RT_CHECK(rt_now_us() - t0 >= 290000);
  for (int k = 0; k < 3; k++) RT_CHECK_EQ_INT(rlock_hold_count(la[k]), 0);
  for (int i = 0; i < n; i++) {
    RT_CHECK_EQ_INT(exists_settled(i, "rlock:{xa}", 0), 0);
    RT_CHECK_EQ_INT(exists_settled(i, "rlock:{xc}", 0), 0);
  }
  /* Released by its holder while the set waits: the set gets it all. */
  rlock_free(lb);
  RT_REQUIRE(rlock_get(b, "xb", &lb) == 0);
  RT_CHECK_EQ_INT(rlock_unlock(lb), 0);
  RT_CHECK_EQ_INT(rlock_lock_all(la, 3, 1000, 10000), 0);
  for (int k = 0; k < 3; k++) RT_CHECK_EQ_INT(rlock_hold_count(la[k]), 1);
  RT_CHECK_EQ_INT(rlock_trylock(lb, 0, 10000), RLOCK_ETIMEDOUT);
  RT_CHECK_EQ_INT(rlock_unlock_all(la, 3), 0);
  RT_CHECK_EQ_INT(rlock_trylock(lb, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(lb), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  for (int k = 0; k < 3; k++) rlock_free(la[k]);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
}

static void all_or_none_1(void) { all_or_none(1); }
static void all_or_none_3(void) { all_or_none(3); }

/*
 * N = 3, partial failure: another owner holds xb on masters 0 and 1 only,
 * master 2 grants the whole set. The set is not had (a majority refused),
 * and master 2's grant is undone: none of the set's locks is left there.
 * Then master 0 is paused too: master 2 grants, master 1 refuses, master
 * 0 answers only after the round; its late grant is undone when it does.
 */
static void partial_failure(void) {
  rt_flush_all(srv, 3);
  rlock_client *a = open_client(3, 0);
  RT_REQUIRE(a != NULL);
  rlock *la[3];
  const char *nm[3] = {"pa", "pb", "pc"};
  for (int k = 0; k < 3; k++) RT_REQUIRE(rlock_get(a, nm[k], &la[k]) == 0);
  for (int i = 0; i < 2; i++) {
    long long r1 = rt_redis_int(&srv[i], "HSET rlock:{pb} other:1 1");
    long long r2 = rt_redis_int(&srv[i], "PEXPIRE rlock:{pb} 60000");
    RT_CHECK(r1 == 1 && r2 == 1);
  }
  RT_CHECK_EQ_INT(rlock_lock_all(la, 3, 0, 10000), RLOCK_ETIMEDOUT);
  rt_sleep_ms(100);
  RT_CHECK_EQ_INT(exists_on(2, "rlock:{pa}"), 0);
  RT_CHECK_EQ_INT(exists_on(2, "rlock:{pb}"), 0);
  RT_CHECK_EQ_INT(exists_on(2, "rlock:{pc}"), 0);
  for (int k = 0; k < 3; k++) RT_CHECK_EQ_INT(rlock_hold_count(la[k]), 0);
  /* Master 0 paused: it answers late. */
  rt_redis_int(&srv[0], "DEL rlock:{pb}");
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  RT_CHECK_EQ_INT(rlock_lock_all(la, 3, 0, 10000), RLOCK_ETIMEDOUT);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  uint64_t end = rt_now_ms() + 5000;
  long long left = 1;
  while (rt_now_ms() < end) {
    left = 0;
    for (int i = 0; i < 3; i += 2)
      left += exists_on(i, "rlock:{pa}") + exists_on(i, "rlock:{pc}");
    if (left == 0) break;
    rt_sleep_ms(50);
  }
  RT_CHECK_EQ_INT(left, 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
  for (int k = 0; k < 3; k++) rlock_free(la[k]);
  rlock_client_close(a);
}

/* --- re-entry --------------------------------------------------------------- */

static void reentrancy(int n) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(n, 0);
  RT_REQUIRE(c != NULL);
  rlock *a, *b, *a2;
  RT_REQUIRE(rlock_get(c, "ra", &a) == 0);
  RT_REQUIRE(rlock_get(c, "rb", &b) == 0);
  RT_REQUIRE(rlock_get(c, "ra", &a2) == 0); /* another handle, same lock */
  RT_REQUIRE(rlock_lock(a, 10000) == 0);
  uint64_t ta = 0, tb = 0, t = 0;
  RT_CHECK_EQ_INT(rlock_fencing_token(a, &ta), 0);
  rlock *ab[] = {a, b};
  RT_CHECK_EQ_INT(rlock_lock_all(ab, 2, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 2);
  RT_CHECK_EQ_INT(rlock_hold_count(b), 1);
  RT_CHECK_EQ_INT(rlock_fencing_token(a, &t), 0);
  RT_CHECK_EQ_INT(t, ta); /* a re-entry keeps the token */
  RT_CHECK_EQ_INT(rlock_fencing_token(b, &tb), 0);
  RT_CHECK(tb > 0);
  /* A single unlock of one lock of the set. */
  RT_CHECK_EQ_INT(rlock_unlock(b), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(b), 0);
  /* unlock_all with a lock not held: refused, nothing changed. */
  RT_CHECK_EQ_INT(rlock_unlock_all(ab, 2), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 2);
  /* The other order, and the same lock through two handles: taken once. */
  rlock *baa[] = {b, a, a2};
  RT_CHECK_EQ_INT(rlock_lock_all(baa, 3, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 3);
  RT_CHECK_EQ_INT(rlock_hold_count(b), 1);
  RT_CHECK_EQ_INT(rlock_unlock_all(baa, 3), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 2);
  RT_CHECK_EQ_INT(rlock_hold_count(b), 0);
  for (int i = 0; i < n; i++) {
    RT_CHECK_EQ_INT(exists_settled(i, "rlock:{rb}", 0), 0);
    RT_CHECK_EQ_INT(rt_redis_int(&srv[i], "HLEN rlock:{ra}"), 1);
  }
  RT_CHECK_EQ_INT(rlock_unlock(a), 0);
  RT_CHECK_EQ_INT(rlock_unlock(a), 0);
  RT_CHECK_EQ_INT(rlock_unlock(a), RLOCK_ENOTOWNER);
  for (int i = 0; i < n; i++)
    RT_CHECK_EQ_INT(exists_settled(i, "rlock:{ra}", 0), 0);
  /* Another thread of the process is another owner: it waits. */
  RT_CHECK_EQ_INT(rlock_lock_all(ab, 2, 0, 10000), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  RT_CHECK_EQ_INT(rlock_unlock_all(ab, 2), 0);
  /* Metrics: every lock of a set taken counts as an acquisition of a
   * plain lock (1 rlock_lock, then sets of 2, 2 and 2). */
  rlock_metrics m;
  RT_CHECK_EQ_INT(rlock_metrics_snapshot(c, &m), 0);
  RT_CHECK_EQ_INT(m.lock_all_acquisitions, 3);
  RT_CHECK_EQ_INT(m.acquisitions, 7);
  RT_CHECK_EQ_INT(m.acquisitions_by_kind[0], 7);
  rlock_free(a);
  rlock_free(a2);
  rlock_free(b);
  rlock_client_close(c);
}

static void reentrancy_1(void) { reentrancy(1); }
static void reentrancy_3(void) { reentrancy(3); }

/* --- loss, watchdog, async, bad input ------------------------------------- */

static void unlock_all_lost(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 0), *o = open_client(3, 0);
  RT_REQUIRE(c != NULL && o != NULL);
  rlock *a, *b, *ob;
  RT_REQUIRE(rlock_get(c, "ua", &a) == 0);
  RT_REQUIRE(rlock_get(c, "ub", &b) == 0);
  RT_REQUIRE(rlock_get(o, "ub", &ob) == 0);
  rlock *ab[] = {a, b};
  RT_REQUIRE(rlock_lock_all(ab, 2, 0, 10000) == 0);
  RT_CHECK_EQ_INT(rlock_force_unlock(ob), 0);
  rlock *ba[] = {b, a};
  RT_CHECK_EQ_INT(rlock_unlock_all(ba, 2), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(b), 0);
  for (int i = 0; i < 3; i++)
    RT_CHECK_EQ_INT(exists_settled(i, "rlock:{ua}", 0), 0);
  rlock_free(a);
  rlock_free(b);
  rlock_free(ob);
  rlock_client_close(c);
  rlock_client_close(o);
}

static void watchdog_renews(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 900);
  RT_REQUIRE(c != NULL);
  rlock *a, *b;
  RT_REQUIRE(rlock_get(c, "wa", &a) == 0);
  RT_REQUIRE(rlock_get(c, "wb", &b) == 0);
  rlock *ab[] = {a, b};
  RT_REQUIRE(rlock_lock_all(ab, 2, 0, RLOCK_WATCHDOG) == 0);
  rt_sleep_ms(2000); /* past two leases of 900 ms */
  RT_CHECK_EQ_INT(rlock_is_locked(a), 1);
  RT_CHECK_EQ_INT(rlock_is_held_by_current_thread(b), 1);
  RT_CHECK_EQ_INT(rlock_unlock_all(ab, 2), 0);
  RT_CHECK_EQ_INT(rlock_is_locked(a), 0);
  rlock_free(a);
  rlock_free(b);
  rlock_client_close(c);
}

static atomic_int async_rc[4], async_calls;
static void on_all(int status, void *arg) {
  async_rc[(intptr_t)arg] = status;
  atomic_fetch_add(&async_calls, 1);
}

static int wait_calls(int want) {
  uint64_t end = rt_now_ms() + 5000;
  while (async_calls < want && rt_now_ms() < end) rt_sleep_ms(2);
  return async_calls >= want;
}

static void async_cancel(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 0);
  RT_REQUIRE(c != NULL);
  rlock *a, *b;
  RT_REQUIRE(rlock_get(c, "aa", &a) == 0);
  RT_REQUIRE(rlock_get(c, "ab", &b) == 0);
  rlock *ab[] = {a, b};
  RT_REQUIRE(rlock_lock(b, 10000) == 0); /* this thread holds b */
  async_calls = 0;
  RT_REQUIRE(rlock_lock_all_async(ab, 2, 5, RLOCK_WAIT_FOREVER, 10000, on_all,
                                  (void *)0) == 0);
  rt_sleep_ms(200);
  RT_CHECK_EQ_INT(async_calls, 0); /* waiting for b */
  RT_CHECK_EQ_INT(rlock_cancel_all_async(a, 5), 0);
  RT_REQUIRE(wait_calls(1));
  RT_CHECK_EQ_INT(async_rc[0], RLOCK_ECANCELED);
  RT_CHECK_EQ_INT(rlock_cancel_all_async(a, 5), RLOCK_ENOTOWNER);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(a, 5), 0);
  RT_CHECK_EQ_INT(rlock_unlock(b), 0);
  RT_REQUIRE(rlock_lock_all_async(ab, 2, 5, 1000, 10000, on_all, (void *)1) ==
             0);
  RT_REQUIRE(wait_calls(2));
  RT_CHECK_EQ_INT(async_rc[1], 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(b, 5), 1);
  RT_REQUIRE(rlock_unlock_all_async(ab, 2, 5, on_all, (void *)2) == 0);
  RT_REQUIRE(wait_calls(3));
  RT_CHECK_EQ_INT(async_rc[2], 0);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(a, 5), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, 3));
  rlock_free(a);
  rlock_free(b);
  rlock_client_close(c);
}

static void bad_input(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(1, 0), *d = open_client(1, 0);
  RT_REQUIRE(c != NULL && d != NULL);
  rlock *a, *b;
  RT_REQUIRE(rlock_get(c, "ba", &a) == 0);
  RT_REQUIRE(rlock_get(d, "bb", &b) == 0);
  rlock *ab[] = {a, b}, *an[] = {a, NULL};
  RT_CHECK_EQ_INT(rlock_lock_all(ab, 2, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(an, 2, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(ab, 0, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(NULL, 1, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(ab, 1, -7, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(ab, 1, 0, 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_unlock_all(ab, 2), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all_async(ab, 1, 1, 0, 10000, NULL, NULL),
                  RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 0);
  /* Fair, read and write handles: the set's scripts take the reentrant
   * lock's keys only, so they are refused, and nothing is written. */
  rlock *f, *r, *w;
  RT_REQUIRE(rlock_get_fair(c, "bf", &f) == 0);
  RT_REQUIRE(rlock_get_read(c, "brw", &r) == 0);
  RT_REQUIRE(rlock_get_write(c, "brw", &w) == 0);
  rlock *af[] = {a, f}, *ar[] = {a, r}, *wa[] = {w, a};
  RT_CHECK_EQ_INT(rlock_lock_all(af, 2, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(ar, 2, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all(wa, 2, 0, 10000), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_lock_all_async(ar, 2, 1, 0, 10000, NULL, NULL),
                  RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_unlock_all(af, 2), RLOCK_EINVAL);
  char why[256] = "";
  rlock_client_last_error(c, why, sizeof why);
  RT_CHECK(strstr(why, "rlock_get handles") != NULL);
  RT_CHECK_EQ_INT(rlock_hold_count(a), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{ba} rlock:{bf} "
                                            "rlock:{brw}:r rlock:{brw}:w"),
                  0);
  rlock_free(f);
  rlock_free(r);
  rlock_free(w);
  rlock_free(a);
  rlock_free(b);
  rlock_client_close(c);
  rlock_client_close(d);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"opposite_orders_1", opposite_orders_1},
      {"opposite_orders_3", opposite_orders_3},
      {"all_or_none_1", all_or_none_1},
      {"all_or_none_3", all_or_none_3},
      {"partial_failure", partial_failure},
      {"reentrancy_1", reentrancy_1},
      {"reentrancy_3", reentrancy_3},
      {"unlock_all_lost", unlock_all_lost},
      {"watchdog_renews", watchdog_renews},
      {"async_cancel", async_cancel},
      {"bad_input", bad_input},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
