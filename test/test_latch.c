/*
 * Count-down latches against real masters, N = 1 and N = 3: many awaiters
 * (threads of two clients and another process) released together when a
 * third process counts the latch down to zero, and not before; await
 * timing out; what set, count and count-down answer in each state; the
 * TTL rules (an abandoned latch goes, and its awaiters learn it went
 * without opening; an open one lingers, then goes); async await and
 * cancel; every key with a TTL.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

static rt_redis srv[3];

static rlock_client *open_client(int n, int64_t ttl_ms, int64_t linger_ms) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = 1000;
  o.retry_delay_ms = 20000; /* no retry comes soon: wakes are messages */
  o.retry_jitter_ms = 0;
  if (ttl_ms > 0) o.latch_ttl_ms = ttl_ms;
  if (linger_ms > 0) o.latch_linger_ms = linger_ms;
  return rt_client_opts(srv, n, &o);
}

static int keys_with(int n, const char *pattern) {
  int total = 0;
  for (int i = 0; i < n; i++) {
    redisReply *ks = rt_redis_cmd(&srv[i], "KEYS %s", pattern);
    if (ks) total += (int)ks->elements;
    if (ks) freeReplyObject(ks);
  }
  return total;
}

/* The number of keys matching pattern on the first n masters once it is
 * 0, or when ms have passed: keys that expire by a TTL set in one round
 * go from each master a few ms apart. */
static int keys_with_after(int n, const char *pattern, int ms) {
  uint64_t end = rt_now_us() + (uint64_t)ms * 1000;
  int k;
  while ((k = keys_with(n, pattern)) != 0 && rt_now_us() < end) rt_sleep_ms(10);
  return k;
}

static int subscribers_become(int n, const char *channel, long long want,
                              int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  for (;;) {
    int ok = 1;
    for (int i = 0; i < n; i++)
      if (rt_redis_numsub(&srv[i], channel) < want) ok = 0;
    if (ok) return 1;
    if (rt_now_ms() > end) return 0;
    rt_sleep_ms(5);
  }
}

/* --- many awaiters, counted down by another process ----------------------- */

#define WAITERS 8

typedef struct shared {
  volatile int rc[WAITERS + 1];
  volatile uint64_t done_us[WAITERS + 1];
  volatile uint64_t last_down_us; /* when the last count-down began */
} shared;

typedef struct await_arg {
  rlock_latch *latch;
  shared *sh;
  int idx;
} await_arg;

static void *awaiter(void *p) {
  await_arg *a = p;
  a->sh->rc[a->idx] = rlock_latch_await(a->latch, 30000);
  a->sh->done_us[a->idx] = rt_now_us();
  return NULL;
}

/* The processes are forked before this one starts any thread (a client's
 * loop): forking a threaded process is what ThreadSanitizer cannot
 * follow, and the children need nothing of the parent's. */
static void many_awaiters(int n) {
  rt_flush_all(srv, 3);
  shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  RT_REQUIRE(sh != MAP_FAILED);
  memset((void *)sh, 0, sizeof *sh);
  for (int i = 0; i <= WAITERS; i++) sh->rc[i] = -99;
  int go[2];
  RT_REQUIRE(pipe(go) == 0);
  /* One awaiter in a process of its own (the latch may not be set yet
   * when it starts: it waits for that too). */
  pid_t waiter_pid = fork();
  RT_REQUIRE(waiter_pid >= 0);
  if (waiter_pid == 0) {
    close(go[0]);
    close(go[1]);
    rlock_client *c = open_client(n, 0, 0);
    rlock_latch *l;
    if (c == NULL || rlock_latch_get(c, "gate", &l) != 0) _exit(2);
    sh->rc[WAITERS] = rlock_latch_await(l, 30000);
    sh->done_us[WAITERS] = rt_now_us();
    rlock_latch_free(l);
    rlock_client_close(c);
    _exit(0);
  }
  /* Another process counts it down, one at a time, once told to. */
  pid_t down_pid = fork();
  RT_REQUIRE(down_pid >= 0);
  if (down_pid == 0) {
    close(go[1]);
    char x;
    if (read(go[0], &x, 1) != 1) _exit(5);
    rlock_client *c = open_client(n, 0, 0);
    rlock_latch *l;
    if (c == NULL || rlock_latch_get(c, "gate", &l) != 0) _exit(2);
    int64_t v = -1;
    for (int k = 0; k < 3; k++) {
      if (k == 2) sh->last_down_us = rt_now_us();
      if (rlock_latch_count_down(l) != 0) _exit(3);
      if (k < 2 && (rlock_latch_count(l, &v) != 0 || v != 2 - k)) _exit(4);
      if (k < 2) usleep(100000);
    }
    rlock_latch_free(l);
    rlock_client_close(c);
    _exit(0);
  }
  close(go[0]);
  rlock_client *a = open_client(n, 0, 0), *b = open_client(n, 0, 0);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock_latch *la, *lb;
  RT_REQUIRE(rlock_latch_get(a, "gate", &la) == 0);
  RT_REQUIRE(rlock_latch_get(b, "gate", &lb) == 0);
  RT_CHECK_EQ_INT(rlock_latch_set(la, 3), 1);
  pthread_t th[WAITERS];
  await_arg args[WAITERS];
  for (int i = 0; i < WAITERS; i++) {
    args[i] = (await_arg){i < 6 ? la : lb, sh, i};
    pthread_create(&th[i], NULL, awaiter, &args[i]);
  }
  /* Three subscriber connections per master: two clients and the child. */
  RT_CHECK(subscribers_become(n, "rlock:{gate}:l:ch", 3, 10000));
  rt_sleep_ms(200);
  RT_CHECK(write(go[1], "g", 1) == 1);
  close(go[1]);
  int st = 0;
  RT_CHECK(waitpid(down_pid, &st, 0) == down_pid);
  RT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  for (int i = 0; i < WAITERS; i++) pthread_join(th[i], NULL);
  RT_CHECK(waitpid(waiter_pid, &st, 0) == waiter_pid);
  RT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  uint64_t worst = 0;
  for (int i = 0; i <= WAITERS; i++) {
    RT_CHECK_EQ_INT(sh->rc[i], 0);
    /* None went through before the last count-down. */
    RT_CHECK(sh->done_us[i] > sh->last_down_us);
    uint64_t d = sh->done_us[i] - sh->last_down_us;
    if (d > worst) worst = d;
  }
  fprintf(stderr, "  %d awaiters through at most %" PRIu64 " ms after the "
                  "last count-down (no retry for 20 s)\n", WAITERS + 1,
          worst / 1000);
  RT_CHECK(worst < 5000000u);
  int64_t v = -1;
  RT_CHECK_EQ_INT(rlock_latch_count(la, &v), 0);
  RT_CHECK_EQ_INT(v, 0);
  RT_CHECK_EQ_INT(rlock_latch_await(lb, 0), 0); /* open: at once */
  rlock_metrics *m = calloc(1, sizeof *m);
  rlock_metrics_snapshot(a, m);
  RT_CHECK_EQ_INT(m->latch_opened, 6);
  RT_CHECK_EQ_INT(m->latch_waiters, 0);
  free(m);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  rlock_latch_free(la);
  rlock_latch_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
  munmap(sh, sizeof *sh);
}

static void many_awaiters_1(void) { many_awaiters(1); }
static void many_awaiters_3(void) { many_awaiters(3); }

/* --- await timing out, states ---------------------------------------------- */

static void await_timeout(int n) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(n, 0, 0);
  RT_REQUIRE(c != NULL);
  rlock_latch *l;
  RT_REQUIRE(rlock_latch_get(c, "slow", &l) == 0);
  /* Not set yet: waited for, until the wait ends. */
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_latch_await(l, 300), RLOCK_ETIMEDOUT);
  RT_CHECK(rt_now_us() - t0 >= 290000 && rt_now_us() - t0 < 5000000);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 2), 1);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0);
  t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_latch_await(l, 400), RLOCK_ETIMEDOUT);
  RT_CHECK(rt_now_us() - t0 >= 390000 && rt_now_us() - t0 < 5000000);
  RT_CHECK_EQ_INT(rlock_latch_await(l, 0), RLOCK_ETIMEDOUT);
  int64_t v = -1;
  RT_CHECK_EQ_INT(rlock_latch_count(l, &v), 0);
  RT_CHECK_EQ_INT(v, 1);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  rlock_latch_free(l);
  rlock_client_close(c);
}

static void await_timeout_1(void) { await_timeout(1); }
static void await_timeout_3(void) { await_timeout(3); }

static void states(int n) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(n, 0, 0);
  RT_REQUIRE(c != NULL);
  rlock_latch *l;
  RT_REQUIRE(rlock_latch_get(c, "st", &l) == 0);
  int64_t v = -1;
  RT_CHECK_EQ_INT(rlock_latch_count(l, &v), 0);
  RT_CHECK_EQ_INT(v, 0); /* not set */
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), RLOCK_ENOENT);
  RT_CHECK_EQ_INT(keys_with(n, "rlock:{st}*"), 0); /* it changed nothing */
  RT_CHECK_EQ_INT(rlock_latch_set(l, 0), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 2), 1);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 5), 0); /* counting: unchanged */
  RT_CHECK_EQ_INT(rlock_latch_count(l, &v), 0);
  RT_CHECK_EQ_INT(v, 2);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0);
  RT_CHECK_EQ_INT(rlock_latch_count(l, &v), 0);
  RT_CHECK_EQ_INT(v, 0);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0); /* open: nothing to do */
  RT_CHECK_EQ_INT(rlock_latch_await(l, 0), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  /* Set again: a new round, which an await of now waits for. */
  RT_CHECK_EQ_INT(rlock_latch_set(l, 1), 1);
  RT_CHECK_EQ_INT(rlock_latch_await(l, 0), RLOCK_ETIMEDOUT);
  /* Deleted under an awaiter: it went without opening. */
  rlock_latch *l2;
  RT_REQUIRE(rlock_latch_get(c, "st", &l2) == 0);
  RT_CHECK_EQ_INT(rlock_latch_delete(l2), 0);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), RLOCK_ENOENT);
  RT_CHECK_EQ_INT(keys_with(n, "rlock:{st}*"), 0);
  RT_CHECK(strcmp(rlock_latch_name(l), "st") == 0);
  rlock_latch *bad = NULL;
  RT_CHECK_EQ_INT(rlock_latch_get(c, "a}b", &bad), RLOCK_EINVAL);
  RT_CHECK(bad == NULL);
  rlock_latch_free(l2);
  rlock_latch_free(l);
  rlock_client_close(c);
}

static void states_1(void) { states(1); }
static void states_3(void) { states(3); }

/* An awaiter of a latch deleted while it waits learns that it went. */
typedef struct del_arg {
  rlock_latch *latch;
  int rc;
  uint64_t done_us;
} del_arg;

static void *await_long(void *p) {
  del_arg *a = p;
  a->rc = rlock_latch_await(a->latch, 20000);
  a->done_us = rt_now_us();
  return NULL;
}

static void deleted_under_awaiter(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 0, 0);
  RT_REQUIRE(c != NULL);
  rlock_latch *l;
  RT_REQUIRE(rlock_latch_get(c, "del", &l) == 0);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 2), 1);
  del_arg a = {l, -99, 0};
  pthread_t t;
  pthread_create(&t, NULL, await_long, &a);
  RT_CHECK(subscribers_become(3, "rlock:{del}:l:ch", 1, 5000));
  rt_sleep_ms(100);
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_latch_delete(l), 0);
  pthread_join(t, NULL);
  RT_CHECK_EQ_INT(a.rc, RLOCK_ELOST);
  RT_CHECK(a.done_us - t0 < 5000000u);
  rlock_latch_free(l);
  rlock_client_close(c);
}

/* --- TTL rules ------------------------------------------------------------ */

/*
 * latch_ttl_ms 1200, latch_linger_ms 800. An abandoned latch (set, one
 * count-down, then nothing) goes 1.2 s after its last activity, and its
 * awaiter, which nothing wakes, learns it went without opening (its sleep
 * is bounded by the latch's own life). An open latch goes after 0.8 s.
 */
static void ttl_rules(int n) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(n, 1200, 800);
  RT_REQUIRE(c != NULL);
  rlock_latch *l;
  RT_REQUIRE(rlock_latch_get(c, "ttl", &l) == 0);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 3), 1);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  RT_CHECK_EQ_INT(keys_with(n, "rlock:{ttl}:l*"), 2 * n); /* :l and :l:d */
  uint64_t t0 = rt_now_us();
  RT_CHECK_EQ_INT(rlock_latch_await(l, 10000), RLOCK_ELOST);
  uint64_t waited = (rt_now_us() - t0) / 1000;
  fprintf(stderr, "  abandoned latch gone, awaiter told after %" PRIu64
                  " ms (ttl 1200)\n", waited);
  RT_CHECK(waited < 6000);
  /* Told when a majority had dropped it (on a loaded machine one master
   * of three may still have both keys at that moment). */
  RT_CHECK_EQ_INT(keys_with_after(n, "rlock:{ttl}*", 1000), 0);
  /* Open: lingers, then goes. */
  RT_CHECK_EQ_INT(rlock_latch_set(l, 1), 1);
  RT_CHECK_EQ_INT(rlock_latch_count_down(l), 0);
  RT_CHECK_EQ_INT(keys_with(n, "rlock:{ttl}:l:d"), 0);
  RT_CHECK(rt_all_keys_have_ttl(srv, n));
  RT_CHECK_EQ_INT(rlock_latch_await(l, 0), 0);
  rt_sleep_ms(1300);
  RT_CHECK_EQ_INT(keys_with(n, "rlock:{ttl}*"), 0);
  rlock_latch_free(l);
  rlock_client_close(c);
}

static void ttl_rules_1(void) { ttl_rules(1); }
static void ttl_rules_3(void) { ttl_rules(3); }

/* --- async ------------------------------------------------------------------ */

static atomic_int async_rc[4], async_calls;
static void on_async(rlock_latch *latch, int status, void *arg) {
  (void)latch;
  async_rc[(intptr_t)arg] = status;
  atomic_fetch_add(&async_calls, 1);
}

static void async_await_cancel(void) {
  rt_flush_all(srv, 3);
  rlock_client *c = open_client(3, 0, 0);
  RT_REQUIRE(c != NULL);
  rlock_latch *l;
  RT_REQUIRE(rlock_latch_get(c, "as", &l) == 0);
  RT_CHECK_EQ_INT(rlock_latch_set(l, 1), 1);
  async_calls = 0;
  RT_REQUIRE(rlock_latch_await_async(l, 1, 10000, on_async, (void *)0) == 0);
  RT_REQUIRE(rlock_latch_await_async(l, 2, 10000, on_async, (void *)1) == 0);
  RT_CHECK(subscribers_become(3, "rlock:{as}:l:ch", 1, 5000));
  RT_CHECK_EQ_INT(rlock_latch_cancel_async(l, 2), 0);
  RT_CHECK_EQ_INT(rlock_latch_cancel_async(l, 2), RLOCK_ENOTOWNER);
  RT_REQUIRE(rlock_latch_count_down_async(l, on_async, (void *)2) == 0);
  uint64_t end = rt_now_ms() + 5000;
  while (async_calls < 3 && rt_now_ms() < end) rt_sleep_ms(2);
  RT_CHECK_EQ_INT(async_calls, 3);
  RT_CHECK_EQ_INT(async_rc[0], 0);
  RT_CHECK_EQ_INT(async_rc[1], RLOCK_ECANCELED);
  RT_CHECK_EQ_INT(async_rc[2], 0);
  rlock_latch_free(l);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"many_awaiters_1", many_awaiters_1},
      {"many_awaiters_3", many_awaiters_3},
      {"await_timeout_1", await_timeout_1},
      {"await_timeout_3", await_timeout_3},
      {"states_1", states_1},
      {"states_3", states_3},
      {"deleted_under_awaiter", deleted_under_awaiter},
      {"ttl_rules_1", ttl_rules_1},
      {"ttl_rules_3", ttl_rules_3},
      {"async_await_cancel", async_await_cancel},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
