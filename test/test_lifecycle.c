/*
 * The edges of a grant's life, against real redis-server processes with real
 * faults (SIGSTOP, a delaying or cutting proxy from test/proxy.c):
 *
 * - No grant outlives its request: a grant that arrives after a round was
 *   decided yes is undone when the write-back of the token fails, or when
 *   the acquisition is cancelled; a lost hold's owner field is released on
 *   the masters where it survived, so a later acquisition does not stack
 *   on it; closing a client undoes its acquisitions in flight; a client
 *   killed as it gives up while a majority is stalled leaves nothing for
 *   the stalled masters to grant when they resume (the acquire carries a
 *   deadline in each master's own clock).
 * - A reentrant acquisition within the hold's validity never declares the
 *   hold lost because a minority master lacks it, and unlock tolerates the
 *   counts diverging across masters.
 * - Small things: rlock_unlock_async without a callback; the tool's
 *   `exec -w` bounds the whole call; `scan` counts a lock once; the
 *   no-quorum message names the masters that failed.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "proxy.h"
#include "scripts.h"

static int key_on(rt_redis *r, const char *key) {
  return rt_redis_int(r, "EXISTS %s", key) == 1;
}

/* Waits up to ms until r has key: a call returns once a majority granted,
 * and the last master's grant may still be on its way. */
static int key_within(rt_redis *r, const char *key, int ms) {
  for (uint64_t end = rt_now_ms() + (uint64_t)ms;; rt_sleep_ms(10)) {
    if (key_on(r, key)) return 1;
    if (rt_now_ms() > end) return 0;
  }
}

/* Waits up to ms until no master of rs[0..n-1] has key. */
static int gone_within(rt_redis *rs, int n, const char *key, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  for (;;) {
    int any = 0;
    for (int i = 0; i < n; i++) any |= key_on(&rs[i], key);
    if (!any) return 1;
    if (rt_now_ms() >= end) return 0;
    rt_sleep_ms(20);
  }
}

static rlock_client *open_with(const char *const *m, int n, int64_t mt,
                               int64_t watchdog_ms) {
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = (size_t)n;
  o.master_timeout_ms = mt;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  o.restart_quarantine_ms = 0;
  if (watchdog_ms > 0) o.watchdog_timeout_ms = watchdog_ms;
  rlock_client *c = NULL;
  return rlock_client_open(&c, &o) == 0 ? c : NULL;
}

static atomic_int lost_calls;
static void on_lost(rlock *l, uint64_t owner, int is_thread, void *arg) {
  (void)l, (void)owner, (void)is_thread, (void)arg;
  atomic_fetch_add(&lost_calls, 1);
}

/* --- 11.3: a late grant after a round decided yes ------------------------ */

/*
 * N = 3: A direct, B behind a proxy that delays every command by D, C
 * stopped. A's fencing counter is far above B's, so the token must be
 * written back before it is handed out. The acquire round is decided yes
 * by A and B after D; the write-back needs B again, so it ends after 2D,
 * past the lease: the acquisition fails and its grants are undone. C's
 * grant comes when C resumes, after the decision: it must be undone too.
 * With cancel set, the acquisition is instead cancelled while the
 * write-back is in flight.
 */
#define D_MS 2000
static atomic_int async_status = 1;
static void on_async(rlock *l, int status, void *arg) {
  (void)l, (void)arg;
  atomic_store(&async_status, status);
}

static void late_grant_after_yes(int cancel) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *pb = rt_proxy_start(srv[1].port);
  RT_REQUIRE(pb != NULL);
  const char *m[3] = {srv[0].url, rt_proxy_url(pb), srv[2].url};
  rlock_client *c = open_with(m, 3, D_MS + 1500, 0);
  RT_REQUIRE(c != NULL);
  /* Every master's handshake done before B's proxy starts to delay: a
   * handshake still going through it then (a loaded machine) is delayed
   * too, and the acquisition below, waiting for B to be ready, runs out
   * of master timeout with C stopped (RLOCK_ENOQUORUM before the
   * cancel). */
  for (int i = 0; i < 3; i++) RT_REQUIRE(rt_up_within(c, i, 10000));
  rlock *l;
  RT_REQUIRE(rlock_get(c, "late", &l) == 0);
  RT_REQUIRE(rlock_force_unlock(l) == 0);
  /* A's counter: about 11 days of microseconds above any clock's. */
  redisReply *t = rt_redis_cmd(&srv[0], "TIME");
  RT_REQUIRE(t != NULL && t->type == REDIS_REPLY_ARRAY);
  long long high = (strtoll(t->element[0]->str, NULL, 10) + 1000000) *
                   1000000LL;
  freeReplyObject(t);
  redisReply *s = rt_redis_cmd(&srv[0], "SET rlock:{late}:fence %lld", high);
  RT_REQUIRE(s != NULL);
  freeReplyObject(s);
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  rt_proxy_delay(pb, D_MS);
  int rc;
  if (!cancel) {
    /* Lease between D and 2D: enough for the acquire round, not for the
     * write-back after it. */
    rc = rlock_trylock(l, 0, D_MS * 2 - 100);
    RT_CHECK(rc != 0);
  } else {
    atomic_store(&async_status, 1);
    RT_REQUIRE(rlock_lock_async(l, 9, 0, 60000, on_async, NULL) == 0);
    /* B runs the acquire after D; its grant reaches the client, which
     * decides and starts the write-back, which B gets D later. */
    uint64_t end = rt_now_ms() + 10000;
    while (!key_on(&srv[1], "rlock:{late}") && rt_now_ms() < end)
      rt_sleep_ms(10);
    RT_CHECK(key_on(&srv[1], "rlock:{late}")); /* B ran the acquire */
    rt_sleep_ms(400);
    RT_CHECK_EQ_INT(atomic_load(&async_status), 1); /* still in flight */
    RT_CHECK_EQ_INT(rlock_cancel_async(l, 9), 0);
    RT_CHECK_EQ_INT(atomic_load(&async_status), RLOCK_ECANCELED);
  }
  rt_proxy_pass(pb);
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  /* C now runs the acquire, granting it; the client must take it back.
   * (B's undo may still be in the proxy, held up to D behind the rest.) */
  rt_sleep_ms(300);
  int left = !gone_within(srv, 3, "rlock:{late}", D_MS + 1500);
  if (left)
    fprintf(stderr, "    a grant stayed: PTTL on A %lld, B %lld, C %lld ms\n",
            rt_redis_int(&srv[0], "PTTL rlock:{late}"),
            rt_redis_int(&srv[1], "PTTL rlock:{late}"),
            rt_redis_int(&srv[2], "PTTL rlock:{late}"));
  RT_CHECK(!left);
  rlock_free(l);
  rlock_client_close(c);
  rt_proxy_stop(pb);
  rt_redis_stop_many(srv, 3);
}

static void late_grant_failed_writeback(void) { late_grant_after_yes(0); }
static void late_grant_cancelled(void) { late_grant_after_yes(1); }

/* --- 11.3: a lost hold's owner field ------------------------------------- */

/*
 * N = 3, watchdog lock. The key is deleted on A and B behind the client's
 * back, so the next renewal finds the hold gone from a majority: lost.
 * C still has the owner field; it must be released, and an acquisition
 * of the same owner right after must not stack on it (one unlock then
 * leaves nothing anywhere).
 */
static void lost_hold_released(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *c = open_with(m, 3, 1000, 3000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "lost", &l) == 0);
  rlock_set_lost_cb(l, on_lost, NULL);
  atomic_store(&lost_calls, 0);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  for (int i = 0; i < 3; i++)
    RT_REQUIRE(key_within(&srv[i], "rlock:{lost}", 2000));
  RT_REQUIRE(rt_redis_int(&srv[0], "DEL rlock:{lost}") == 1);
  RT_REQUIRE(rt_redis_int(&srv[1], "DEL rlock:{lost}") == 1);
  uint64_t end = rt_now_ms() + 10000;
  while (atomic_load(&lost_calls) == 0 && rt_now_ms() < end) rt_sleep_ms(5);
  RT_REQUIRE(atomic_load(&lost_calls) == 1);
  /* Reacquire at once, as a retrying owner would. */
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ELOST);
  RT_CHECK_EQ_INT(rlock_trylock(l, 2000, RLOCK_WATCHDOG), 0);
  redisReply *r = rt_redis_cmd(&srv[2], "HGETALL rlock:{lost}");
  if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
      strcmp(r->element[1]->str, "1") != 0)
    fprintf(stderr, "    on C after the new acquisition: %s = %s\n",
            r->element[0]->str, r->element[1]->str);
  RT_CHECK(r != NULL && r->type == REDIS_REPLY_ARRAY &&
           (r->elements == 0 || strcmp(r->element[1]->str, "1") == 0));
  if (r) freeReplyObject(r);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK(gone_within(srv, 3, "rlock:{lost}", 1000));
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop_many(srv, 3);
}

/* The lost hold's field is released at once, not left for its lease. */
static void lost_hold_field_released(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *c = open_with(m, 3, 1000, 6000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "lost2", &l) == 0);
  rlock_set_lost_cb(l, on_lost, NULL);
  atomic_store(&lost_calls, 0);
  RT_REQUIRE(rlock_trylock(l, 0, RLOCK_WATCHDOG) == 0);
  /* The call returns on a majority's grants; the third may land a moment
   * later (under load the DEL below could find no key there). */
  for (int i = 0; i < 3; i++)
    RT_REQUIRE(key_within(&srv[i], "rlock:{lost2}", 2000));
  RT_REQUIRE(rt_redis_int(&srv[0], "DEL rlock:{lost2}") == 1);
  RT_REQUIRE(rt_redis_int(&srv[1], "DEL rlock:{lost2}") == 1);
  uint64_t end = rt_now_ms() + 10000;
  while (atomic_load(&lost_calls) == 0 && rt_now_ms() < end) rt_sleep_ms(5);
  RT_REQUIRE(atomic_load(&lost_calls) == 1);
  /* C's TTL was just renewed to 6 s; released, it is gone at once. */
  int gone = gone_within(srv, 3, "rlock:{lost2}", 1500);
  if (!gone)
    fprintf(stderr, "    C keeps the lost hold (PTTL %lld ms)\n",
            rt_redis_int(&srv[2], "PTTL rlock:{lost2}"));
  RT_CHECK(gone);
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ELOST);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop_many(srv, 3);
}

/* --- 11.3: close with an acquisition in flight --------------------------- */

/*
 * A client that holds a lock closes while an async acquisition of another
 * lock (60 s lease) is in flight: the acquisition must be undone, not
 * left for its lease. Ten times, each with a fresh client.
 */
static void close_undoes_in_flight(void) {
  rt_redis srv[1];
  RT_REQUIRE(rt_redis_start_many(srv, 1) == 0);
  const char *m[1] = {srv[0].url};
  int left = 0;
  for (int k = 0; k < 10; k++) {
    rlock_client *c = open_with(m, 1, 2000, 0);
    RT_REQUIRE(c != NULL);
    rlock *held, *l;
    RT_REQUIRE(rlock_get(c, "held", &held) == 0);
    RT_REQUIRE(rlock_get(c, "inflight", &l) == 0);
    RT_REQUIRE(rlock_trylock(held, 0, 60000) == 0);
    RT_REQUIRE(rlock_lock_async(l, 1, 0, 60000, on_async, NULL) == 0);
    rlock_client_close(c);
    rlock_free(l);
    rlock_free(held);
    rt_sleep_ms(100);
    left += key_on(&srv[0], "rlock:{inflight}");
    rt_redis_int(&srv[0], "DEL rlock:{inflight} rlock:{held}");
  }
  if (left) fprintf(stderr, "    %d of 10 closes left a 60 s lock\n", left);
  RT_CHECK_EQ_INT(left, 0);
  rt_redis_stop_many(srv, 1);
}

/*
 * 2 of 3 masters stopped, their wall clocks two hours behind the client's:
 * a client process fails with RLOCK_ENOQUORUM and is SIGKILLed at once,
 * from the very callback that tells it so, before it can write any undo
 * (and with no close). A, which answered, keeps its grant for the lease:
 * nothing can take back an in-time grant to a client that died. The
 * stopped masters resume after that lease and find the acquire in their
 * sockets: it must grant nothing, because its deadline, in each master's
 * own clock, has passed. One second later no master has the key.
 */
#define STALL_LEASE_MS 3000
static int stall_pipe[2];

static void on_failed_then_die(rlock *l, int status, void *arg) {
  (void)l, (void)arg;
  ssize_t n = write(stall_pipe[1], &status, sizeof status);
  (void)n;
  kill(getpid(), SIGKILL); /* the undos are still queued, never written */
}

static void stalled_majority_killed(void) {
  char buf[2][512];
  const char *env[3];
  RT_REQUIRE(rt_redis_clockshift_env(-7200, buf, env) == 0);
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start(&srv[0], NULL) == 0);
  RT_REQUIRE(rt_redis_start_ex(&srv[1], NULL, env, NULL) == 0);
  RT_REQUIRE(rt_redis_start_ex(&srv[2], NULL, env, NULL) == 0);
  int go[2];
  RT_REQUIRE(pipe(stall_pipe) == 0 && pipe(go) == 0);
  fflush(NULL);
  pid_t pid = fork();
  RT_REQUIRE(pid >= 0);
  if (pid == 0) {
    const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
    rlock_client *c = open_with(m, 3, 300, 0);
    rlock *l;
    if (c == NULL || rlock_get(c, "stalled", &l) != 0) _exit(2);
    for (int i = 0; i < 3; i++)
      if (!rt_up_within(c, i, 10000)) _exit(3);
    char b = 'R';
    if (write(stall_pipe[1], &b, 1) != 1 || read(go[0], &b, 1) != 1)
      _exit(4);
    if (rlock_lock_async(l, 1, 0, STALL_LEASE_MS, on_failed_then_die,
                         NULL) != 0)
      _exit(5);
    for (;;) pause();
  }
  char b = 0;
  RT_REQUIRE(read(stall_pipe[0], &b, 1) == 1 && b == 'R');
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[2]) == 0);
  RT_REQUIRE(write(go[1], &b, 1) == 1);
  int status = 0;
  RT_CHECK(read(stall_pipe[0], &status, sizeof status) == sizeof status);
  RT_CHECK_EQ_INT(status, RLOCK_ENOQUORUM);
  int st = 0;
  waitpid(pid, &st, 0);
  RT_CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  close(stall_pipe[0]), close(stall_pipe[1]), close(go[0]), close(go[1]);
  /* The hard case indeed: A's undo never went out either. */
  long long pttl = rt_redis_int(&srv[0], "PTTL rlock:{stalled}");
  RT_CHECK(pttl > 0 && pttl <= STALL_LEASE_MS);
  if (pttl > 0) rt_sleep_ms((int)pttl + 100);
  RT_REQUIRE(rt_redis_resume(&srv[1]) == 0);
  RT_REQUIRE(rt_redis_resume(&srv[2]) == 0);
  rt_sleep_ms(1000);
  int on = 0;
  for (int i = 0; i < 3; i++) on += key_on(&srv[i], "rlock:{stalled}");
  if (on)
    fprintf(stderr, "    %d master(s) hold the lock for a dead owner "
                    "(PTTL %lld, %lld, %lld ms)\n",
            on, rt_redis_int(&srv[0], "PTTL rlock:{stalled}"),
            rt_redis_int(&srv[1], "PTTL rlock:{stalled}"),
            rt_redis_int(&srv[2], "PTTL rlock:{stalled}"));
  RT_CHECK_EQ_INT(on, 0);
  rt_redis_stop_many(srv, 3);
}

/*
 * A master whose wall clock is two hours ahead of the client's: an acquire
 * whose deadline were in the client's clock would be two hours late for
 * it and refused. The connection writes it in the master's clock, the
 * first call included (queued before the handshake measured the clock).
 */
static void deadline_in_master_clock(void) {
  char buf[2][512];
  const char *env[3];
  RT_REQUIRE(rt_redis_clockshift_env(7200, buf, env) == 0);
  rt_redis a;
  RT_REQUIRE(rt_redis_start_ex(&a, NULL, env, NULL) == 0);
  const char *m[1] = {a.url};
  rlock_client *c = open_with(m, 1, 2000, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ahead", &l) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 10000), 0); /* and once connected */
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop(&a);
}

/*
 * The acquire script's deadline, in the master's own clock (here two hours
 * behind the client's): past it nothing is granted, before it (or with 0,
 * none) the grant is as usual. The script side of the two tests above.
 */
static void acquire_script_deadline(void) {
  char buf[2][512];
  const char *env[3];
  RT_REQUIRE(rt_redis_clockshift_env(-7200, buf, env) == 0);
  rt_redis a;
  RT_REQUIRE(rt_redis_start_ex(&a, NULL, env, NULL) == 0);
  redisReply *t = rt_redis_cmd(&a, "TIME");
  RT_REQUIRE(t != NULL && t->type == REDIS_REPLY_ARRAY);
  long long now_us = strtoll(t->element[0]->str, NULL, 10) * 1000000 +
                     strtoll(t->element[1]->str, NULL, 10);
  freeReplyObject(t);
  const char *body = rl_script_body(RL_SCRIPT_ACQUIRE);
  char past[32], future[32];
  snprintf(past, sizeof past, "%lld", now_us - 1000000);
  snprintf(future, sizeof future, "%lld", now_us + 60000000);
  const char *cases[3] = {past, future, "0"};
  const int granted[3] = {0, 1, 1};
  for (int k = 0; k < 3; k++) {
    redisReply *r = rt_redis_cmd(&a, "EVAL %s 2 k{d} k{d}:fence 10000 me 1 5 %s",
                                 body, cases[k]);
    RT_REQUIRE(r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements >= 2);
    RT_CHECK_EQ_INT(r->element[0]->integer, granted[k]);
    if (!granted[k]) RT_CHECK_EQ_INT(r->element[1]->integer, RL_ACQUIRE_REPLY_LATE);
    freeReplyObject(r);
    RT_CHECK_EQ_INT(rt_redis_int(&a, "EXISTS k{d}"), granted[k]);
    rt_redis_int(&a, "DEL k{d}");
  }
  rt_redis_stop(&a);
}

/* --- 11.4: reentrant acquisition with diverging counts ------------------- */

/*
 * N = 3. The thread holds L on A and B (C unreachable). C comes back. The
 * thread locks L again while B is stopped: A (count 2) and C (no hold)
 * decide the round. The hold is within its validity: it is not lost (no
 * callback), its count is 2, and two unlocks leave nothing on any master.
 */
static void reentrant_divergence(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  rt_proxy *pc = rt_proxy_start(srv[2].port);
  RT_REQUIRE(pc != NULL);
  const char *m[3] = {srv[0].url, srv[1].url, rt_proxy_url(pc)};
  rlock_client *c = open_with(m, 3, 500, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "div", &l) == 0);
  rlock_set_lost_cb(l, on_lost, NULL);
  atomic_store(&lost_calls, 0);
  RT_REQUIRE(rlock_force_unlock(l) == 0);
  rt_proxy_cut(pc);
  RT_REQUIRE(rlock_trylock(l, 2000, 20000) == 0);
  RT_REQUIRE(!key_on(&srv[2], "rlock:{div}"));
  rt_proxy_pass(pc);
  RT_REQUIRE(rt_up_within(c, 2, 10000));
  RT_REQUIRE(rt_redis_pause(&srv[1]) == 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 20000), 0);
  RT_CHECK_EQ_INT(rlock_hold_count(l), 2);
  RT_REQUIRE(rt_redis_resume(&srv[1]) == 0);
  rt_sleep_ms(200);
  RT_CHECK_EQ_INT(atomic_load(&lost_calls), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  int gone = gone_within(srv, 3, "rlock:{div}", 1000);
  if (!gone)
    fprintf(stderr, "    left after two unlocks: A %d, B %d, C %d\n",
            key_on(&srv[0], "rlock:{div}"), key_on(&srv[1], "rlock:{div}"),
            key_on(&srv[2], "rlock:{div}"));
  RT_CHECK(gone);
  RT_CHECK_EQ_INT(atomic_load(&lost_calls), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_proxy_stop(pc);
  rt_redis_stop_many(srv, 3);
}

/* --- 11.5: small things --------------------------------------------------- */

static void unlock_async_without_callback(void) {
  rt_redis srv[1];
  RT_REQUIRE(rt_redis_start_many(srv, 1) == 0);
  const char *m[1] = {srv[0].url};
  rlock_client *c = open_with(m, 1, 2000, 0);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "ff", &l) == 0);
  RT_REQUIRE(rlock_force_unlock(l) == 0);
  atomic_store(&async_status, 1);
  RT_REQUIRE(rlock_lock_async(l, 3, 2000, 10000, on_async, NULL) == 0);
  uint64_t end = rt_now_ms() + 10000;
  while (atomic_load(&async_status) == 1 && rt_now_ms() < end) rt_sleep_ms(5);
  RT_REQUIRE(atomic_load(&async_status) == 0);
  RT_CHECK_EQ_INT(rlock_unlock_async(l, 3, NULL, NULL), 0);
  RT_CHECK(gone_within(srv, 1, "rlock:{ff}", 2000));
  /* The hold ends when the unlock's answer is in, just after. */
  uint64_t until = rt_now_ms() + 2000;
  while (rlock_owner_hold_count(l, 3) != 0 && rt_now_ms() < until)
    rt_sleep_ms(5);
  RT_CHECK_EQ_INT(rlock_owner_hold_count(l, 3), 0);
  rlock_free(l);
  rlock_client_close(c);
  rt_redis_stop_many(srv, 1);
}

/* Runs the tool with args, output (stdout and stderr) into out; returns
 * its exit status, or -1 if it ran past bound_ms (then it is killed). */
static int run_tool(char *out, size_t size, int bound_ms, char **args) {
  const char *tool = getenv("RLOCK_TOOL");
  if (tool == NULL) return -2;
  char path[] = "/tmp/rt_tool_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -2;
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    char *argv[32] = {(char *)tool};
    for (int i = 0; args[i] && i < 30; i++) argv[i + 1] = args[i];
    execv(tool, argv);
    _exit(121);
  }
  int st = 0, rc = -1;
  uint64_t end = rt_now_ms() + (uint64_t)bound_ms;
  for (;;) {
    if (waitpid(pid, &st, WNOHANG) == pid) {
      rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + WTERMSIG(st);
      break;
    }
    if (rt_now_ms() >= end) {
      kill(pid, SIGKILL);
      waitpid(pid, NULL, 0);
      break;
    }
    rt_sleep_ms(10);
  }
  ssize_t n = pread(fd, out, size - 1, 0);
  out[n > 0 ? n : 0] = '\0';
  close(fd);
  unlink(path);
  return rc;
}

/* A port nothing listens on. */
static int dead_port(void) {
  rt_redis r;
  if (rt_redis_start(&r, NULL) != 0) return -1;
  int port = r.port;
  rt_redis_stop(&r);
  return port;
}

/* exec -w bounds the whole call, connecting included. */
static void tool_wait_bounds_connect(void) {
  char masters[128], out[4096];
  int p1 = dead_port(), p2 = dead_port(), p3 = dead_port();
  RT_REQUIRE(p1 > 0 && p2 > 0 && p3 > 0);
  snprintf(masters, sizeof masters, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
           p1, p2, p3);
  char *args[] = {"--masters", masters, "exec", "-w", "0.5",
                  "--connect-timeout", "20000", "bounded", "--", "true",
                  NULL};
  uint64_t t0 = rt_now_ms();
  int rc = run_tool(out, sizeof out, 30000, args);
  uint64_t took = rt_now_ms() - t0;
  if (took > 8000) fprintf(stderr, "    exec -w 0.5 took %llu ms\n",
                           (unsigned long long)took);
  RT_CHECK_EQ_INT(rc, 1);
  RT_CHECK(took < 8000);
}

/* The no-quorum message says which masters failed. */
static void tool_no_quorum_names_masters(void) {
  rt_redis a;
  RT_REQUIRE(rt_redis_start(&a, NULL) == 0);
  char masters[1024], d1[32], d2[32], out[4096];
  int p1 = dead_port(), p2 = dead_port();
  RT_REQUIRE(p1 > 0 && p2 > 0);
  snprintf(d1, sizeof d1, "127.0.0.1:%d", p1);
  snprintf(d2, sizeof d2, "127.0.0.1:%d", p2);
  snprintf(masters, sizeof masters, "%s,%s,%s", a.url, d1, d2);
  char *args[] = {"--masters", masters, "exec", "-w", "1", "nq", "--",
                  "true", NULL};
  int rc = run_tool(out, sizeof out, 30000, args);
  RT_CHECK_EQ_INT(rc, 1);
  if (strstr(out, d1) == NULL || strstr(out, d2) == NULL)
    fprintf(stderr, "    the tool said: %s", out);
  RT_CHECK(strstr(out, d1) != NULL);
  RT_CHECK(strstr(out, d2) != NULL);
  rt_redis_stop(&a);
}

/* scan counts a lock held on three masters once. */
static void tool_scan_counts_once(void) {
  rt_redis srv[3];
  RT_REQUIRE(rt_redis_start_many(srv, 3) == 0);
  const char *m[3] = {srv[0].url, srv[1].url, srv[2].url};
  rlock_client *c = open_with(m, 3, 1000, 0);
  RT_REQUIRE(c != NULL);
  rlock *l1, *l2;
  RT_REQUIRE(rlock_get(c, "one", &l1) == 0);
  RT_REQUIRE(rlock_get(c, "two", &l2) == 0);
  RT_REQUIRE(rlock_trylock(l1, 0, 20000) == 0);
  RT_REQUIRE(rlock_trylock(l2, 0, 20000) == 0);
  for (int i = 0; i < 3; i++)
    RT_REQUIRE(key_within(&srv[i], "rlock:{one}", 2000) &&
               key_within(&srv[i], "rlock:{two}", 2000));
  char masters[1024], out[8192];
  snprintf(masters, sizeof masters, "%s,%s,%s", m[0], m[1], m[2]);
  char *args[] = {"--masters", masters, "scan", NULL};
  RT_CHECK_EQ_INT(run_tool(out, sizeof out, 20000, args), 0);
  if (strstr(out, "2 lock(s)") == NULL) fprintf(stderr, "    scan: %s", out);
  RT_CHECK(strstr(out, "2 lock(s)") != NULL);
  char *jargs[] = {"--masters", masters, "scan", "--json", NULL};
  RT_CHECK_EQ_INT(run_tool(out, sizeof out, 20000, jargs), 0);
  RT_CHECK(strstr(out, "\"locks\":2,") != NULL);
  rlock_unlock(l1);
  rlock_unlock(l2);
  rlock_free(l1);
  rlock_free(l2);
  rlock_client_close(c);
  rt_redis_stop_many(srv, 3);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  static const rt_test tests[] = {
      {"late_grant_failed_writeback", late_grant_failed_writeback},
      {"late_grant_cancelled", late_grant_cancelled},
      {"lost_hold_released", lost_hold_released},
      {"lost_hold_field_released", lost_hold_field_released},
      {"close_undoes_in_flight", close_undoes_in_flight},
      {"stalled_majority_killed", stalled_majority_killed},
      {"deadline_in_master_clock", deadline_in_master_clock},
      {"acquire_script_deadline", acquire_script_deadline},
      {"reentrant_divergence", reentrant_divergence},
      {"unlock_async_without_callback", unlock_async_without_callback},
      {"tool_wait_bounds_connect", tool_wait_bounds_connect},
      {"tool_no_quorum_names_masters", tool_no_quorum_names_masters},
      {"tool_scan_counts_once", tool_scan_counts_once},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
