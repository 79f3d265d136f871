/*
 * The safety rules of fencing and restarts, each as a scenario against real
 * redis-server processes with real faults: a master restarted empty with
 * its wall clock two hours behind (the LD_PRELOAD shim test/clockshift.c),
 * masters unreachable for one client but not another (test/proxy.c), and
 * masters listed twice.
 *
 * - Fencing tokens never go backwards, at N = 3 and N = 5, when the
 *   master that lost its counter has a clock far behind: neither for the
 *   client that saw the earlier tokens nor for a fresh one.
 * - A master that restarted empty does not count toward a quorum until
 *   the longest lease of the deployment has run out: not for a client
 *   that noticed the restart after using short leases or none, and not
 *   for a client opened after the restart, nor when Redis's uptime in
 *   whole seconds of wall clock overstates the real one. Masters started
 *   fresh are usable at once.
 * - One server casts one vote: duplicate addresses are refused at open
 *   (also as localhost and 127.0.0.1, and unix paths), and two different
 *   addresses of one server (TCP and its unix socket) count once.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "common.h"
#include "proxy.h"

#define MT 400 /* master timeout, ms: generous for sanitizers and load */

/* Opens a client on masters[0..n) with the default options but the
 * master timeout, the retry delays, quarantine_ms, and watchdog_ms and
 * max_lease_ms where they are > 0. */
static rlock_client *open_leases(const char *const *masters, int n,
                                 int64_t quarantine_ms, int64_t watchdog_ms,
                                 int64_t max_lease_ms) {
  rlock_options o;
  rlock_options_init(&o);
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  if (max_lease_ms > 0) o.max_lease_ms = max_lease_ms;
  o.masters = masters;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = MT;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.restart_quarantine_ms = quarantine_ms;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

static rlock_client *open_on(const char *const *masters, int n,
                             int64_t quarantine_ms) {
  return open_leases(masters, n, quarantine_ms, 0, 0);
}

/* Waits until the client has noticed k restarts of master idx. */
static int restarts_seen(rlock_client *c, int idx, uint64_t k, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  rlock_metrics m;
  do {
    if (rlock_metrics_snapshot(c, &m) == 0 && m.masters[idx].restarts >= k &&
        m.masters[idx].up)
      return 1;
    rt_sleep_ms(20);
  } while (rt_now_ms() < end);
  return 0;
}

/* Pushes a master's lease horizon (rlock:horizon) to ms from now, as an
 * acquisition's grant there does: for a lock a test writes by hand. */
static void plant_horizon(rt_redis *r, int ms) {
  redisReply *rep = rt_redis_cmd(r, "SET rlock:horizon 1 PX %d", ms);
  RT_REQUIRE(rep != NULL && rep->type == REDIS_REPLY_STATUS);
  freeReplyObject(rep);
}

/* The TIME of a server, in seconds. */
static long long server_time(rt_redis *r) {
  redisReply *rep = rt_redis_cmd(r, "TIME");
  long long t = -1;
  if (rep && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2)
    t = strtoll(rep->element[0]->str, NULL, 10);
  if (rep) freeReplyObject(rep);
  return t;
}

/* --- the clock shim itself ------------------------------------------------ */

static void clock_shim_shifts_time(void) {
  char buf[2][512];
  const char *env[3];
  RT_REQUIRE(rt_redis_clockshift_env(-7200, buf, env) == 0);
  rt_redis a, b;
  RT_REQUIRE(rt_redis_start(&a, NULL) == 0);
  RT_REQUIRE(rt_redis_start_ex(&b, NULL, env, NULL) == 0);
  long long d = server_time(&a) - server_time(&b);
  RT_CHECK(d > 7190 && d < 7210);
  /* It survives a restart, and a restart may change it. */
  RT_REQUIRE(rt_redis_kill(&b) == 0);
  RT_REQUIRE(rt_redis_restart(&b) == 0);
  d = server_time(&a) - server_time(&b);
  RT_CHECK(d > 7190 && d < 7210);
  RT_REQUIRE(rt_redis_kill(&b) == 0);
  RT_REQUIRE(rt_redis_restart_ex(&b, NULL) == 0);
  d = server_time(&a) - server_time(&b);
  RT_CHECK(d > -10 && d < 10);
  rt_redis_stop(&a);
  rt_redis_stop(&b);
}

/* --- 10.1: fencing tokens with a master restarted empty, clock behind --- */

/*
 * N = 3: A, B (clock 2 h behind), C. N = 5: A, B, C, D, E. Masters other
 * than B are reached through proxies, so that "unreachable" means no
 * command of the test client reaches them (not even later).
 *  1. All up: token t0.
 *  2. A (and D) unreachable: five acquisitions through the others.
 *  3. B is SIGKILLed and restarted empty, its clock still behind.
 *  4. A (and D) back, C (and E) unreachable: the next acquisition goes
 *     through A, B (and D); its token must be above every earlier one,
 *     for the client that saw them and for a fresh client.
 * The quarantine is off: this is about tokens, not about the restart.
 */
static void token_regression(int n, int fresh) {
  char buf[2][512];
  const char *env[3];
  RT_REQUIRE(rt_redis_clockshift_env(-7200, buf, env) == 0);
  rt_redis srv[5];
  rt_proxy *px[5] = {NULL};
  const char *m[5];
  for (int i = 0; i < n; i++) {
    RT_REQUIRE(rt_redis_start_ex(&srv[i], NULL, i == 1 ? env : NULL, NULL) ==
               0);
    if (i == 1) {
      m[i] = srv[i].url;
    } else {
      RT_REQUIRE((px[i] = rt_proxy_start(srv[i].port)) != NULL);
      m[i] = rt_proxy_url(px[i]);
    }
  }
  /* Which masters drop out in step 2 and in step 4. */
  int out2[2] = {0, 3}, out4[2] = {2, 4}, nout = n == 3 ? 1 : 2;
  rlock_client *c = open_on(m, n, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "fenced", &l) == 0);
  uint64_t t0 = 0, last = 0, t = 0;
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_CHECK(rlock_fencing_token(l, &t0) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  last = t0;
  for (int k = 0; k < nout; k++) rt_proxy_cut(px[out2[k]]);
  for (int k = 0; k < 5; k++) {
    RT_REQUIRE(rlock_trylock(l, 3000, 10000) == 0);
    RT_CHECK(rlock_fencing_token(l, &t) == 0);
    RT_CHECK(t > last);
    last = t;
    RT_REQUIRE(rlock_unlock(l) == 0);
  }
  RT_REQUIRE(rt_redis_kill(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[1]) == 0);
  for (int k = 0; k < nout; k++) {
    rt_proxy_pass(px[out2[k]]);
    rt_proxy_cut(px[out4[k]]);
  }
  rlock_client *c2 = c;
  rlock *l2 = l;
  if (fresh) {
    RT_REQUIRE((c2 = open_on(m, n, 0)) != NULL);
    RT_REQUIRE(rlock_get(c2, "fenced", &l2) == 0);
  }
  /* The masters that are back are reconnected within the wait. */
  RT_CHECK_EQ_INT(rlock_trylock(l2, 5000, 10000), 0);
  t = 0;
  RT_CHECK(rlock_fencing_token(l2, &t) == 0);
  if (getenv("RT_DEBUG"))
    for (int i = 0; i < n; i++) {
      redisReply *f = rt_redis_cmd(&srv[i], "GET rlock:{fenced}:fence");
      fprintf(stderr, "    master %d counter %s\n", i,
              f && f->type == REDIS_REPLY_STRING ? f->str : "(none)");
      if (f) freeReplyObject(f);
    }
  if (t <= last)
    fprintf(stderr, "    token regression: %llu after %llu (t0 %llu)\n",
            (unsigned long long)t, (unsigned long long)last,
            (unsigned long long)t0);
  RT_CHECK(t > last);
  rlock_unlock(l2);
  if (fresh) {
    rlock_free(l2);
    rlock_client_close(c2);
  }
  rlock_free(l);
  rlock_client_close(c);
  for (int i = 0; i < n; i++) {
    rt_proxy_stop(px[i]);
    rt_redis_stop(&srv[i]);
  }
}

static void token_regression_3(void) { token_regression(3, 0); }
static void token_regression_3_fresh(void) { token_regression(3, 1); }
static void token_regression_5(void) { token_regression(5, 0); }
static void token_regression_5_fresh(void) { token_regression(5, 1); }

/* --- 10.2: the restart quarantine covers every client -------------------- */

/*
 * Client X holds L with the watchdog (a 5 s lease, renewed) on A and B;
 * C is unreachable for X (its C goes through a cut proxy). A is SIGKILLed
 * and restarted empty. Client Y, open since before the restart, noticed
 * it; its longest lease so far is y_lease (0: none). Y must not take L,
 * and neither must a client opened after the restart. (X's unlock waits
 * for C while the hold is valid, which the short lease keeps short.)
 */
static void quarantine_two_clients(int64_t y_lease) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *cx = rt_proxy_start(srv[2].port);
  RT_REQUIRE(cx != NULL);
  const char *my[3] = {srv[0].url, srv[1].url, srv[2].url};
  const char *mx[3] = {srv[0].url, srv[1].url, rt_proxy_url(cx)};
  rlock_client *y = open_on(my, 3, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(y != NULL);
  rlock *ly, *warm;
  RT_REQUIRE(rlock_get(y, "L", &ly) == 0);
  RT_REQUIRE(rlock_get(y, "warmup", &warm) == 0);
  RT_REQUIRE(rlock_force_unlock(warm) == 0); /* connected everywhere */
  if (y_lease > 0) {
    RT_REQUIRE(rlock_trylock(warm, 2000, y_lease) == 0);
    RT_REQUIRE(rlock_unlock(warm) == 0);
  }
  rt_proxy_cut(cx);
  rlock_client *x = open_leases(mx, 3, RLOCK_QUARANTINE_AUTO, 5000, 0);
  RT_REQUIRE(x != NULL);
  rlock *lx;
  RT_REQUIRE(rlock_get(x, "L", &lx) == 0);
  RT_REQUIRE(rlock_trylock(lx, 5000, RLOCK_WATCHDOG) == 0);
  RT_REQUIRE(rt_redis_int(&srv[2], "EXISTS rlock:{L}") == 0);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(restarts_seen(y, 0, 1, 10000));
  /* Y: A and C would make a majority, but A forgot X's lock. */
  int rc = rlock_trylock(ly, 0, 10000);
  if (rc == 0) fprintf(stderr, "    Y took L while X holds it\n");
  RT_CHECK(rc != 0);
  if (rc == 0) rlock_unlock(ly);
  /* A client opened after the restart, that never saw A before. */
  rlock_client *z = open_on(my, 3, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(z != NULL);
  rlock *lz;
  RT_REQUIRE(rlock_get(z, "L", &lz) == 0);
  rc = rlock_trylock(lz, 1500, 10000);
  if (rc == 0) fprintf(stderr, "    a fresh client took L while X holds it\n");
  RT_CHECK(rc != 0);
  if (rc == 0) rlock_unlock(lz);
  /* X's hold was never taken from it: B still has it, within its lease.
   * Only B of the masters that count can confirm it now (A forgot, C is
   * cut off), so the unlock cannot show a majority: RLOCK_ENOQUORUM, and
   * the hold ends anyway, released where it is. */
  RT_CHECK_EQ_INT(rt_redis_int(&srv[1], "EXISTS rlock:{L}"), 1);
  rc = rlock_unlock(lx);
  RT_CHECK(rc == 0 || rc == RLOCK_ENOQUORUM);
  uint64_t end = rt_now_ms() + 2000;
  while (rt_redis_int(&srv[1], "EXISTS rlock:{L}") != 0 && rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[1], "EXISTS rlock:{L}"), 0);
  rlock_free(lz);
  rlock_free(lx);
  rlock_free(ly);
  rlock_free(warm);
  rlock_client_close(z);
  rlock_client_close(x);
  rlock_client_close(y);
  rt_proxy_stop(cx);
  rt_redis_stop_many(srv, 3);
}

/*
 * A fresh client's first call, decided by a restarted master and one
 * other before the third answers: the other's records must be in before
 * its grant counts. Y, connected earlier, recorded the masters' run_ids
 * on all three and closed. A is then restarted empty, with nobody
 * connected to see it; L is held on B (A forgot it; C never had it). Z
 * opens while all three are stopped and locks at once, so its call waits
 * for the handshakes; A resumes first, then C, B last: A's grant comes
 * first, C's would decide, and only C's records tell that A is not the
 * server it was. Without them A counts, and Z gets the lock B's holder
 * still has.
 */
static atomic_int first_call_status;
static void on_first_call(rlock *l, int status, void *arg) {
  (void)l, (void)arg;
  atomic_store(&first_call_status, status);
}

static void quarantine_records_before_first_grant(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *y = open_on(m, 3, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(y != NULL);
  rlock *warm;
  RT_REQUIRE(rlock_get(y, "warmup", &warm) == 0);
  RT_REQUIRE(rlock_force_unlock(warm) == 0); /* connected everywhere */
  /* Y's records of the three run_ids are on C. */
  uint64_t end = rt_now_ms() + 10000;
  while (rt_redis_int(&srv[2], "HLEN rlock:run_ids") != 3 &&
         rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_REQUIRE(rt_redis_int(&srv[2], "HLEN rlock:run_ids") == 3);
  rlock_free(warm);
  rlock_client_close(y);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  /* B has a holder's L (its A forgot it; C never had it). */
  redisReply *h = rt_redis_cmd(&srv[1], "HSET rlock:{L} holder:1 1");
  RT_REQUIRE(h != NULL);
  freeReplyObject(h);
  RT_REQUIRE(rt_redis_int(&srv[1], "PEXPIRE rlock:{L} 30000") == 1);
  plant_horizon(&srv[1], 30000); /* as the grant would have */
  for (int i = 0; i < 3; i++) RT_REQUIRE(rt_redis_pause(&srv[i]) == 0);
  rlock_client *z = open_on(m, 3, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(z != NULL);
  rlock *lz;
  RT_REQUIRE(rlock_get(z, "L", &lz) == 0);
  atomic_store(&first_call_status, 1);
  RT_REQUIRE(rlock_lock_async(lz, 1, 0, 10000, on_first_call, NULL) == 0);
  rt_sleep_ms(50);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  rt_sleep_ms(30); /* A's grant first; C's decides */
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  rt_sleep_ms(MT / 2);
  RT_REQUIRE(rt_redis_resume(&srv[1]) == 0);
  end = rt_now_ms() + 10000;
  while (atomic_load(&first_call_status) == 1 && rt_now_ms() < end)
    rt_sleep_ms(5);
  int rc = atomic_load(&first_call_status);
  if (rc == 0) fprintf(stderr, "    the fresh client took L on A and C\n");
  RT_CHECK(rc != 0 && rc != 1);
  if (rc == 0) rlock_unlock_async(lz, 1, NULL, NULL);
  rlock_free(lz);
  rlock_client_close(z);
  rt_redis_stop_many(srv, 3);
}

/* The wall clock's milliseconds within the current second, and the
 * current second. */
static long wall_ms_of_second(long long *sec) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  if (sec != NULL) *sec = (long long)tv.tv_sec;
  return (long)(tv.tv_usec / 1000);
}

/* Sleeps until the wall clock's milliseconds within a second are in
 * [lo, hi). */
static void sleep_until_ms_of_second(long lo, long hi) {
  for (;;) {
    long ms = wall_ms_of_second(NULL);
    if (ms >= lo && ms < hi) return;
    long wait = (lo - ms + 1000) % 1000;
    rt_sleep_ms(wait > 1 ? (int)wait - 1 : 1);
  }
}

/* INFO server's uptime_in_seconds, or -1. */
static long long uptime_s(rt_redis *r) {
  redisReply *rep = rt_redis_cmd(r, "INFO server");
  long long up = -1;
  if (rep != NULL && rep->type == REDIS_REPLY_STRING) {
    const char *p = strstr(rep->str, "uptime_in_seconds:");
    if (p != NULL) up = strtoll(p + 18, NULL, 10);
  }
  if (rep != NULL) freeReplyObject(rep);
  return up;
}

/*
 * Redis reports its uptime as floor(now) - floor(start) of its wall
 * clock, which says 1 s when it started at .95 of a second and is asked
 * at .02 of the next. The quarantine must not end before
 * restart_quarantine_ms of real time since the start. Y recorded the
 * run_ids of A, B and C on them and closed; B has a holder's L (A forgets
 * it in the restart, C never had it). A is SIGKILLed and restarted at .9
 * of a second; Z opens just after the next whole second and tries L
 * until it gets it on A and C. That must not happen before the
 * quarantine has run since the restart began (t0, before the server even
 * started, which only makes the bound weaker).
 */
static void quarantine_uptime_rounding(void) {
  const int64_t q = 3000;
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *y = open_on(m, 3, q);
  RT_REQUIRE(y != NULL);
  rlock *warm;
  RT_REQUIRE(rlock_get(y, "warmup", &warm) == 0);
  RT_REQUIRE(rlock_force_unlock(warm) == 0); /* connected everywhere */
  uint64_t end = rt_now_ms() + 10000;
  while ((rt_redis_int(&srv[1], "HLEN rlock:run_ids") != 3 ||
          rt_redis_int(&srv[2], "HLEN rlock:run_ids") != 3) &&
         rt_now_ms() < end)
    rt_sleep_ms(20);
  RT_REQUIRE(rt_redis_int(&srv[1], "HLEN rlock:run_ids") == 3);
  RT_REQUIRE(rt_redis_int(&srv[2], "HLEN rlock:run_ids") == 3);
  rlock_free(warm);
  rlock_client_close(y);
  redisReply *h = rt_redis_cmd(&srv[1], "HSET rlock:{L} holder:1 1");
  RT_REQUIRE(h != NULL);
  freeReplyObject(h);
  RT_REQUIRE(rt_redis_int(&srv[1], "PEXPIRE rlock:{L} 60000") == 1);
  /* As the grant would have: the quarantine is then the configured one,
   * whose rounding is under test. */
  plant_horizon(&srv[1], 60000);
  int reproduced = 0;
  for (int attempt = 0; attempt < 5 && !reproduced; attempt++) {
    RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
    sleep_until_ms_of_second(900, 940);
    long long sec0;
    wall_ms_of_second(&sec0);
    uint64_t t0 = rt_now_ms();
    RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
    long long sec1;
    wall_ms_of_second(&sec1);
    if (sec1 != sec0) continue; /* it took too long: its start may be late */
    sleep_until_ms_of_second(5, 60);
    long long up = uptime_s(&srv[0]);
    rlock_client *z = open_on(m, 3, q);
    RT_REQUIRE(z != NULL);
    uint64_t opened = rt_now_ms();
    /* Only when the server says 1 s though less than 1 s passed is this
     * the case under test. */
    reproduced = up >= 1 && opened - t0 < 1000;
    fprintf(stderr,
            "    attempt %d: restarted at .9 of a second, uptime %lld s "
            "after %llu ms%s\n",
            attempt, up, (unsigned long long)(opened - t0),
            reproduced ? "" : ": not the case, again");
    rlock *lz;
    RT_REQUIRE(rlock_get(z, "L", &lz) == 0);
    int rc = -1;
    uint64_t got = 0, stop = t0 + (uint64_t)q + 6000;
    while (reproduced && rt_now_ms() < stop) {
      rc = rlock_trylock(lz, 0, 10000);
      if (rc == 0) {
        got = rt_now_ms();
        break;
      }
      rt_sleep_ms(5);
    }
    if (reproduced) {
      fprintf(stderr,
              "    Z took L on A and C %llu ms after A's restart began "
              "(quarantine %lld ms)\n",
              (unsigned long long)(got - t0), (long long)q);
      RT_CHECK_EQ_INT(rc, 0); /* the quarantine ends */
      RT_CHECK(got - t0 >= (uint64_t)q);
      if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(lz), 0);
    }
    rlock_free(lz);
    rlock_client_close(z);
  }
  RT_CHECK(reproduced);
  rt_redis_stop_many(srv, 3);
}

static void quarantine_y_no_lease(void) { quarantine_two_clients(0); }
static void quarantine_y_short_lease(void) { quarantine_two_clients(500); }
static void quarantine_y_long_lease(void) { quarantine_two_clients(45000); }

/* --- the quarantine is as long as the leases the others recorded ------- */

/* Connects client c (NULL passes through) to every master it can reach,
 * by a force unlock sent to all of them. */
static rlock_client *warmed(rlock_client *c) {
  rlock *warm;
  if (c == NULL || rlock_get(c, "warmup", &warm) != 0) return c;
  rlock_force_unlock(warm); /* fails where a master is cut off */
  rlock_free(warm);
  return c;
}

/* Opens a client on masters m with the default options but the master
 * timeout and retry delays (restart_quarantine_ms automatic: the larger
 * of the watchdog timeout and max_lease_ms, 60 s), connected to every
 * master that it can reach. */
static rlock_client *open_connected(const char *const *m, int64_t q) {
  return warmed(open_on(m, 3, q));
}

/* open_connected with the automatic quarantine, made cap ms long by
 * the leases it covers (max_lease_ms and watchdog_timeout_ms = cap), so
 * that a test can see it run out: the length the horizon shortens. */
static rlock_client *open_capped(const char *const *m, int64_t cap) {
  return warmed(open_leases(m, 3, RLOCK_QUARANTINE_AUTO, cap, cap));
}

/* Tries l (1 s leases) every 20 ms until it is granted or until_ms has
 * passed: a majority that counts a restarted master again is one whose
 * attempt succeeds. *got is when the last attempt returned; the status
 * is the last attempt's (-1 if none was made). */
static int take_by(rlock *l, uint64_t until_ms, uint64_t *got) {
  int rc = -1;
  while (rc != 0 && rt_now_ms() < until_ms) {
    rc = rlock_trylock(l, 0, 1000);
    *got = rt_now_ms();
    if (rc != 0) rt_sleep_ms(20);
  }
  return rc;
}

/* A string where a lock's hash would be: the lock's scripts fail there
 * with WRONGTYPE, so that master votes for nobody. */
static void spoil(rt_redis *r, const char *key) {
  redisReply *rep = rt_redis_cmd(r, "SET %s x", key);
  RT_REQUIRE(rep != NULL && rep->type == REDIS_REPLY_STATUS);
  freeReplyObject(rep);
}

/*
 * A quarantine length set by the user is kept whole: the horizon shortens
 * only the automatic one (a deployment where not every client writes the
 * horizon sets one). As quarantine_short_leases_end_early, but Z is
 * opened with restart_quarantine_ms = 4 s: it does not take M on A and B
 * when L's 1.5 s lease has run out, only once 4 s have passed since A's
 * restart.
 */
static void quarantine_configured_kept_whole(void) {
  const int64_t q = 4000;
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *y = open_connected(m, RLOCK_QUARANTINE_AUTO);
  rlock_client *z = open_connected(m, q);
  RT_REQUIRE(y != NULL && z != NULL);
  rlock *ly, *mz;
  RT_REQUIRE(rlock_get(y, "L", &ly) == 0);
  RT_REQUIRE(rlock_get(z, "M", &mz) == 0);
  spoil(&srv[2], "rlock:{M}");
  RT_REQUIRE(rlock_trylock(ly, 0, 1500) == 0);
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(restarts_seen(z, 0, 1, 10000));
  uint64_t got = 0;
  int rc = take_by(mz, t0 + 20000, &got);
  fprintf(stderr, "    Z took M on A and B %llu ms after A's restart\n",
          (unsigned long long)(got - t0));
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(got >= t0 + (uint64_t)q); /* not when L's 1.5 s ran out */
  if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(mz), 0);
  rlock_unlock(ly); /* its lease has run out */
  rlock_free(mz);
  rlock_free(ly);
  rlock_client_close(z);
  rlock_client_close(y);
  rt_redis_stop_many(srv, 3);
}

/*
 * The other masters recorded only a short lease: the restarted master
 * counts again once it has run out, long before the configured 60 s.
 * Y holds L with a 1.5 s lease on A, B and C; A is restarted empty. Z
 * (connected before) takes M, which C cannot grant (a string where M's
 * hash would be): only A and B make its majority, so Z gets M only once A
 * counts, and never before L's lease on B and C has run out.
 */
static void quarantine_short_leases_end_early(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *y = open_connected(m, RLOCK_QUARANTINE_AUTO);
  rlock_client *z = open_connected(m, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(y != NULL && z != NULL);
  rlock *ly, *mz;
  RT_REQUIRE(rlock_get(y, "L", &ly) == 0);
  RT_REQUIRE(rlock_get(z, "M", &mz) == 0);
  spoil(&srv[2], "rlock:{M}");
  uint64_t t_l = rt_now_ms();
  RT_REQUIRE(rlock_trylock(ly, 0, 1500) == 0);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(restarts_seen(z, 0, 1, 10000));
  uint64_t t0 = rt_now_ms(), got = 0;
  /* C's error reply ends each attempt (RLOCK_EREDIS) while A does not
   * count: attempted again until it does. */
  int rc = take_by(mz, t0 + 20000, &got);
  fprintf(stderr, "    Z took M on A and B %llu ms after L's grant\n",
          (unsigned long long)(got - t_l));
  RT_CHECK_EQ_INT(rc, 0);       /* A counts again, well within 60 s */
  RT_CHECK(got >= t_l + 1500);  /* not before L's recorded lease ended */
  RT_CHECK(got - t0 < 20000);
  if (rc == 0) {
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{M}"), 1);
    RT_CHECK_EQ_INT(rlock_unlock(mz), 0);
  }
  rlock_unlock(ly); /* its lease has run out */
  rlock_free(mz);
  rlock_free(ly);
  rlock_client_close(z);
  rlock_client_close(y);
  rt_redis_stop_many(srv, 3);
}

/*
 * A long lease keeps the quarantine until it has run out. X holds L with
 * a 6 s lease on A and B (C is cut off from X, so it never had L); A is
 * restarted empty and forgets it. A and C would make a majority for L:
 * neither Y (connected before the restart) nor Z (opened after it) gets
 * L before X's lease on B has run out, and Y gets it after, long before
 * the configured 60 s. (A lock held by the watchdog, renewed on B across
 * the restart: quarantine_y_*.)
 */
static void quarantine_long_lease_holds(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *cx = rt_proxy_start(srv[2].port);
  RT_REQUIRE(cx != NULL);
  const char *my[3] = {srv[0].url, srv[1].url, srv[2].url};
  const char *mx[3] = {srv[0].url, srv[1].url, rt_proxy_url(cx)};
  rlock_client *y = open_connected(my, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(y != NULL);
  rt_proxy_cut(cx);
  rlock_client *x = open_connected(mx, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(x != NULL);
  rlock *lx, *ly, *lz;
  RT_REQUIRE(rlock_get(x, "L", &lx) == 0);
  RT_REQUIRE(rlock_get(y, "L", &ly) == 0);
  uint64_t t_x = rt_now_ms();
  RT_REQUIRE(rlock_trylock(lx, 5000, 6000) == 0);
  RT_REQUIRE(rt_redis_int(&srv[2], "EXISTS rlock:{L}") == 0);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(restarts_seen(y, 0, 1, 10000));
  rlock_client *z = open_on(my, 3, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(z != NULL);
  RT_REQUIRE(rlock_get(z, "L", &lz) == 0);
  int rc = rlock_trylock(lz, 1500, 1000);
  if (rc == 0 && rt_now_ms() < t_x + 6000)
    fprintf(stderr, "    a fresh client took L while X holds it\n");
  RT_CHECK(rc != 0 || rt_now_ms() >= t_x + 6000);
  if (rc == 0) rlock_unlock(lz);
  rc = rlock_trylock(ly, 20000, 1000);
  uint64_t got = rt_now_ms();
  fprintf(stderr, "    Y took L on A and C %llu ms after X's grant\n",
          (unsigned long long)(got - t_x));
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(got >= t_x + 6000); /* not while X's lease on B lasts */
  if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(ly), 0);
  rlock_free(lz);
  rlock_free(ly);
  rlock_free(lx);
  rlock_client_close(z);
  rlock_client_close(x);
  rlock_client_close(y);
  rt_proxy_stop(cx);
  rt_redis_stop_many(srv, 3);
}

/*
 * A master whose horizon cannot be read keeps the configured quarantine.
 * Z (the automatic quarantine, 6 s for its 6 s leases) reaches C
 * through a proxy; its leases so far were 1 s. C is cut off, then A is restarted: A and B make every
 * majority Z can have now, and without C's horizon nothing tells Z that
 * C holds no longer lease than 1 s. A counts only once 6 s have passed
 * since its restart began, though the 1 s leases ran out long before.
 */
static void quarantine_unread_peer_keeps_configured(void) {
  const int64_t q = 6000;
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *cx = rt_proxy_start(srv[2].port);
  RT_REQUIRE(cx != NULL);
  const char *mz[3] = {srv[0].url, srv[1].url, rt_proxy_url(cx)};
  rlock_client *z = open_capped(mz, q);
  RT_REQUIRE(z != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(z, "M", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  rt_proxy_cut(cx);
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(restarts_seen(z, 0, 1, 10000));
  while (rt_now_ms() < t0 + 2500) rt_sleep_ms(20); /* the 1 s leases ran out */
  int rc = rlock_trylock(l, 1000, 1000);
  if (rc == 0)
    fprintf(stderr, "    Z took M on A and B %llu ms after the restart\n",
            (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(rc != 0 || rt_now_ms() >= t0 + (uint64_t)q);
  if (rc == 0) rlock_unlock(l);
  rc = rlock_trylock(l, 15000, 1000);
  uint64_t got = rt_now_ms();
  RT_CHECK_EQ_INT(rc, 0); /* the configured quarantine ends */
  RT_CHECK(got >= t0 + (uint64_t)q);
  if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(z);
  rt_proxy_stop(cx);
  rt_redis_stop_many(srv, 3);
}

/* Attempts l's trylock (which fails: too few masters count) for ms, so
 * that the client settles rounds and reads the horizons meanwhile. */
static void keep_trying(rlock *l, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  while (rt_now_ms() < end) {
    if (rlock_trylock(l, 0, 1000) == 0) rlock_unlock(l);
    rt_sleep_ms(20);
  }
}

/*
 * Two masters restarted one after the other, each quarantine waiting on a
 * master cut off: once that one answers, both end as soon as the leases
 * recorded on the others have run out, not after the configured 60 s.
 * Y holds L with a 1.5 s lease on A, B and C; Z reaches C through a
 * proxy, which is cut. A is restarted: its bound needs B's and C's
 * horizons, and C cannot be read. Z reads B meanwhile. B is restarted:
 * its bound needs A's, which is pending. C is let through: Z's reading
 * of B from before B's restart bounds what A forgot, A's bound then
 * bounds what B forgot, and Z takes M on A and B (C refuses M: a string
 * where its hash would be) after L's lease ended, well within 60 s.
 */
static void quarantine_sequential_restarts_end_early(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *cz = rt_proxy_start(srv[2].port);
  RT_REQUIRE(cz != NULL);
  const char *my[3] = {srv[0].url, srv[1].url, srv[2].url};
  const char *mz[3] = {srv[0].url, srv[1].url, rt_proxy_url(cz)};
  rlock_client *y = open_connected(my, RLOCK_QUARANTINE_AUTO);
  rlock_client *z = open_connected(mz, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(y != NULL && z != NULL);
  rlock *ly, *mz_l;
  RT_REQUIRE(rlock_get(y, "L", &ly) == 0);
  RT_REQUIRE(rlock_get(z, "M", &mz_l) == 0);
  spoil(&srv[2], "rlock:{M}");
  uint64_t t_l = rt_now_ms();
  RT_REQUIRE(rlock_trylock(ly, 0, 1500) == 0);
  rt_proxy_cut(cz);
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(restarts_seen(z, 0, 1, 10000));
  keep_trying(mz_l, 3 * MT); /* Z reads B after A's ready time */
  RT_REQUIRE(rt_redis_kill(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[1]) == 0);
  RT_REQUIRE(restarts_seen(z, 1, 1, 10000));
  rt_proxy_pass(cz);
  uint64_t t0 = rt_now_ms(), got = 0;
  int rc = take_by(mz_l, t0 + 20000, &got);
  fprintf(stderr, "    Z took M on A and B %llu ms after L's grant\n",
          (unsigned long long)(got - t_l));
  RT_CHECK_EQ_INT(rc, 0);      /* both count again, well within 60 s */
  RT_CHECK(got >= t_l + 1500); /* not before L's recorded lease ended */
  if (rc == 0) {
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{M}"), 1);
    RT_CHECK_EQ_INT(rt_redis_int(&srv[1], "EXISTS rlock:{M}"), 1);
    RT_CHECK_EQ_INT(rlock_unlock(mz_l), 0);
  }
  rlock_unlock(ly); /* its lease has run out */
  rlock_free(mz_l);
  rlock_free(ly);
  rlock_client_close(z);
  rlock_client_close(y);
  rt_proxy_stop(cz);
  rt_redis_stop_many(srv, 3);
}

/*
 * Two masters restarted together forgot the same lease, and nothing else
 * recorded it: both keep the configured length. X holds L with a 5 s
 * lease on A and B (C is cut off from X); A and B are killed and
 * restarted before Z could read either after the other's restart. Each
 * one's bound would need the other's (a reading of its new run bounds
 * only what that run granted): Z (the automatic quarantine, 6 s for
 * its 6 s leases) does not take L on A and C, or B and C, while X holds it, and takes it once the
 * configured length has run.
 */
static void quarantine_both_forgot_keeps_configured(void) {
  const int64_t q = 6000;
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *cx = rt_proxy_start(srv[2].port);
  RT_REQUIRE(cx != NULL);
  const char *mz[3] = {srv[0].url, srv[1].url, srv[2].url};
  const char *mx[3] = {srv[0].url, srv[1].url, rt_proxy_url(cx)};
  rlock_client *z = open_capped(mz, q);
  RT_REQUIRE(z != NULL);
  rt_proxy_cut(cx);
  rlock_client *x = open_connected(mx, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(x != NULL);
  rlock *lx, *lz;
  RT_REQUIRE(rlock_get(x, "L", &lx) == 0);
  RT_REQUIRE(rlock_get(z, "L", &lz) == 0);
  uint64_t t_x = rt_now_ms();
  RT_REQUIRE(rlock_trylock(lx, 3000, 5000) == 0);
  RT_REQUIRE(rt_redis_int(&srv[2], "EXISTS rlock:{L}") == 0);
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_redis_kill(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_kill(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[0]) == 0);
  RT_REQUIRE(rt_redis_restart(&srv[1]) == 0);
  RT_REQUIRE(restarts_seen(z, 0, 1, 10000));
  RT_REQUIRE(restarts_seen(z, 1, 1, 10000));
  uint64_t got = 0;
  int rc = take_by(lz, t0 + 20000, &got);
  fprintf(stderr, "    Z took L %llu ms after X's grant, %llu ms after the "
          "restarts began\n", (unsigned long long)(got - t_x),
          (unsigned long long)(got - t0));
  RT_CHECK_EQ_INT(rc, 0);                    /* the configured length ends */
  RT_CHECK(got >= t_x + 5000);               /* not while X holds L */
  RT_CHECK(got >= t0 + (uint64_t)q);         /* the configured length held */
  if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(lz), 0);
  rlock_free(lz);
  rlock_free(lx);
  rlock_client_close(x);
  rlock_client_close(z);
  rt_proxy_stop(cx);
  rt_redis_stop_many(srv, 3);
}

/*
 * Masters started fresh (no client ever saw them) are trusted at once: a
 * fresh client locks with one of three stopped, so both others count.
 */
static void fresh_masters_usable_at_once(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  rlock_client *c = open_on(m, 3, RLOCK_QUARANTINE_AUTO);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "fresh", &l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 3000, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  /* A master restarted before any client saw it is new to everyone. */
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop_many(srv, 3);
}

/* --- 10.3: one server, one vote ------------------------------------------ */

/* Opens with these masters; returns the open's status and its reason. */
static int open_status(const char *const *m, int n, char *why, size_t size) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = MT;
  o.restart_quarantine_ms = 0;
  rlock_client *c = NULL;
  int rc = rlock_client_open(&c, &o);
  rlock_open_error(why, size);
  if (rc == 0) rlock_client_close(c);
  return rc;
}

/* Counts ERROR log lines that say two masters are one server. */
static atomic_int same_server_logged;
static void on_log(int level, const char *msg, void *arg) {
  (void)arg;
  if (level == RLOCK_LOG_ERROR && strstr(msg, "same server") != NULL)
    atomic_fetch_add(&same_server_logged, 1);
}

/* With B stopped, the only server left must not make a majority alone. */
static void check_one_vote(const char *const *m, rt_redis *a, rt_redis *b) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 3;
  o.master_timeout_ms = MT;
  o.restart_quarantine_ms = 0;
  o.log_cb = on_log;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "dup", &l) == 0);
  RT_REQUIRE(rlock_force_unlock(l) == 0);
  RT_REQUIRE(rt_redis_pause(b) == 0);
  int rc = rlock_trylock(l, 0, 10000);
  if (rc == 0) {
    redisReply *r = rt_redis_cmd(a, "HGETALL rlock:{dup}");
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
      fprintf(stderr, "    one server, two votes: HGETALL = %s %s\n",
              r->element[0]->str, r->element[1]->str);
    if (r) freeReplyObject(r);
    rlock_unlock(l);
  }
  RT_CHECK(rc != 0);
  RT_REQUIRE(rt_redis_resume(b) == 0);
  rlock_free(l);
  rlock_client_close(c);
}

static void duplicate_address_refused(void) {
  rt_redis srv[2];
  RT_REQUIRE(rt_redis_start_many(srv, 2) == 0);
  char why[320], local[64];
  snprintf(local, sizeof local, "localhost:%d", srv[0].port);
  const char *same[3] = {srv[0].url, srv[0].url, srv[1].url};
  const char *spelled[3] = {local, srv[1].url, srv[0].url};
  int rc = open_status(same, 3, why, sizeof why);
  RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
  if (rc == RLOCK_EINVAL) {
    RT_CHECK(strstr(why, "masters[0]") != NULL);
    RT_CHECK(strstr(why, "masters[1]") != NULL);
  } else {
    check_one_vote(same, &srv[0], &srv[1]);
  }
  rc = open_status(spelled, 3, why, sizeof why);
  RT_CHECK_EQ_INT(rc, RLOCK_EINVAL);
  if (rc == RLOCK_EINVAL) {
    RT_CHECK(strstr(why, "masters[0]") != NULL);
    RT_CHECK(strstr(why, "masters[2]") != NULL);
    RT_CHECK(strstr(why, "localhost") != NULL);
  } else {
    check_one_vote(spelled, &srv[0], &srv[1]);
  }
  rt_redis_stop_many(srv, 2);
}

static void duplicate_unix_path_refused(void) {
  rt_redis a;
  const char *args[] = {"--unixsocket", "{dir}/redis.sock", NULL};
  RT_REQUIRE(rt_redis_start_ex(&a, NULL, NULL, args) == 0);
  char u1[400], u2[400], why[320];
  snprintf(u1, sizeof u1, "unix://%s/redis.sock", a.dir);
  snprintf(u2, sizeof u2, "unix://%s/./redis.sock", a.dir);
  const char *m[2] = {u1, u2};
  RT_CHECK_EQ_INT(open_status(m, 2, why, sizeof why), RLOCK_EINVAL);
  RT_CHECK(strstr(why, "masters[1]") != NULL);
  rt_redis_stop(&a);
}

/* TCP and the unix socket of one server: two addresses, one run_id. */
static void same_run_id_counts_once(void) {
  rt_redis a, b;
  const char *args[] = {"--unixsocket", "{dir}/redis.sock", NULL};
  RT_REQUIRE(rt_redis_start_ex(&a, NULL, NULL, args) == 0);
  RT_REQUIRE(rt_redis_start(&b, NULL) == 0);
  char u[400];
  snprintf(u, sizeof u, "unix://%s/redis.sock", a.dir);
  const char *m[3] = {a.url, u, b.url};
  atomic_store(&same_server_logged, 0);
  check_one_vote(m, &a, &b);
  RT_CHECK(atomic_load(&same_server_logged) >= 1); /* said so, at ERROR */
  rt_redis_stop(&a);
  rt_redis_stop(&b);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"clock_shim_shifts_time", clock_shim_shifts_time},
      {"token_regression_3", token_regression_3},
      {"token_regression_3_fresh", token_regression_3_fresh},
      {"token_regression_5", token_regression_5},
      {"token_regression_5_fresh", token_regression_5_fresh},
      {"quarantine_y_no_lease", quarantine_y_no_lease},
      {"quarantine_y_short_lease", quarantine_y_short_lease},
      {"quarantine_y_long_lease", quarantine_y_long_lease},
      {"quarantine_records_before_first_grant",
       quarantine_records_before_first_grant},
      {"quarantine_uptime_rounding", quarantine_uptime_rounding},
      {"quarantine_short_leases_end_early", quarantine_short_leases_end_early},
      {"quarantine_configured_kept_whole", quarantine_configured_kept_whole},
      {"quarantine_long_lease_holds", quarantine_long_lease_holds},
      {"quarantine_unread_peer_keeps_configured",
       quarantine_unread_peer_keeps_configured},
      {"quarantine_sequential_restarts_end_early",
       quarantine_sequential_restarts_end_early},
      {"quarantine_both_forgot_keeps_configured",
       quarantine_both_forgot_keeps_configured},
      {"fresh_masters_usable_at_once", fresh_masters_usable_at_once},
      {"duplicate_address_refused", duplicate_address_refused},
      {"duplicate_unix_path_refused", duplicate_unix_path_refused},
      {"same_run_id_counts_once", same_run_id_counts_once},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
