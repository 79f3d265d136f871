/*
 * A client is usable the moment it is opened: the first call of a fresh
 * client, made at once after rlock_client_open against healthy masters, waits
 * for the first connection attempt instead of failing with RLOCK_ENOQUORUM.
 * 100 fresh clients each make one first call, at N = 1 and N = 3, for
 * trylock(0), force_unlock, is_locked, and lock_async(wait 0) on a caller's
 * loop; every one must succeed. Then rlock_client_wait_ready: ready, not
 * ready (and why), closed, misuse.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common.h"

#define CLIENTS 100

static rt_redis srv[3];

static rlock_client *open_on(int n, uv_loop_t *loop) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = 1000; /* sanitizers and valgrind are slow */
  o.connect_timeout_ms = 5000;
  o.loop = loop;
  return rt_client_opts(srv, n, &o);
}

enum { OP_TRYLOCK, OP_FORCE, OP_IS_LOCKED };

/* One fresh client, one first call; returns its status. */
static int first_call(int n, int op, int i) {
  rlock_client *c = open_on(n, NULL);
  if (c == NULL) return -1000;
  char name[32];
  snprintf(name, sizeof name, "first:%d:%d:%d", n, op, i);
  rlock *l;
  int rc = rlock_get(c, name, &l);
  if (rc == 0) {
    switch (op) {
      case OP_TRYLOCK:
        rc = rlock_trylock(l, 0, 10000);
        if (rc == 0) rc = rlock_unlock(l);
        break;
      case OP_FORCE: rc = rlock_force_unlock(l); break;
      default: rc = rlock_is_locked(l); break;
    }
    rlock_free(l);
  }
  rlock_client_close(c);
  return rc;
}

static void run_blocking(int n, int op) {
  int ok = 0, last_bad = 0;
  for (int i = 0; i < CLIENTS; i++) {
    int rc = first_call(n, op, i);
    if (rc == 0)
      ok++;
    else
      last_bad = rc;
  }
  if (ok != CLIENTS)
    fprintf(stderr, "  N = %d: %d of %d first calls succeeded (last error %s)\n",
            n, ok, CLIENTS, rlock_strerror(last_bad));
  RT_CHECK_EQ_INT(ok, CLIENTS);
}

static void trylock_n1(void) { run_blocking(1, OP_TRYLOCK); }
static void trylock_n3(void) { run_blocking(3, OP_TRYLOCK); }
static void force_n1(void) { run_blocking(1, OP_FORCE); }
static void force_n3(void) { run_blocking(3, OP_FORCE); }
static void is_locked_n1(void) { run_blocking(1, OP_IS_LOCKED); }
static void is_locked_n3(void) { run_blocking(3, OP_IS_LOCKED); }

/* --- lock_async(wait 0) on a caller's loop --------------------------------- */

typedef struct async_state {
  rlock_client *c;
  rlock *l;
  int status;
  int called;
} async_state;

static void on_unlocked(rlock *l, int status, void *arg) {
  (void)l;
  async_state *s = arg;
  if (s->status == 0) s->status = status;
  rlock_free(s->l);
  rlock_client_close(s->c);
}

static void on_locked(rlock *l, int status, void *arg) {
  async_state *s = arg;
  s->status = status;
  s->called = 1;
  if (status == 0 && rlock_unlock_async(l, 1, on_unlocked, s) == 0) return;
  rlock_free(s->l);
  rlock_client_close(s->c);
}

static void run_async(int n) {
  int ok = 0, last_bad = 0;
  for (int i = 0; i < CLIENTS; i++) {
    uv_loop_t loop;
    RT_REQUIRE(uv_loop_init(&loop) == 0);
    async_state s = {.status = -1000};
    s.c = open_on(n, &loop);
    char name[32];
    snprintf(name, sizeof name, "first-async:%d:%d", n, i);
    int rc = s.c ? rlock_get(s.c, name, &s.l) : -1000;
    if (rc == 0) rc = rlock_lock_async(s.l, 1, 0, 10000, on_locked, &s);
    if (rc != 0) {
      s.status = rc;
      if (s.l) rlock_free(s.l);
      if (s.c) rlock_client_close(s.c);
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* returns once the client has closed */
    RT_CHECK(uv_loop_close(&loop) == 0);
    if (s.status == 0)
      ok++;
    else
      last_bad = s.status;
  }
  if (ok != CLIENTS)
    fprintf(stderr, "  N = %d: %d of %d first async calls succeeded (last "
            "error %s)\n", n, ok, CLIENTS, rlock_strerror(last_bad));
  RT_CHECK_EQ_INT(ok, CLIENTS);
}

static void async_n1(void) { run_async(1); }
static void async_n3(void) { run_async(3); }

/* --- rlock_client_wait_ready ---------------------------------------------- */

static void wait_ready_majority_up(void) {
  rlock_client *c = open_on(3, NULL);
  RT_REQUIRE(c != NULL);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 30000), 0);
  RT_CHECK(rt_now_ms() - t0 < 20000); /* it did not wait for the timeout */
  rlock_metrics m;
  RT_CHECK(rlock_metrics_snapshot(c, &m) == 0);
  for (int i = 0; i < 3; i++) RT_CHECK(m.masters[i].error[0] == '\0');
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 0), 0); /* and stays so */
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, -2), RLOCK_EINVAL);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(NULL, 0), RLOCK_EINVAL);
  rlock_client_close(c);
}

/* Two of three masters down: not ready at the timeout, and the metrics
 * say which masters and why. */
static void wait_ready_majority_down(void) {
  rt_redis down[3];
  RT_REQUIRE(rt_redis_start_many(down, 3) == 0);
  RT_REQUIRE(rt_redis_kill(&down[1]) == 0 && rt_redis_kill(&down[2]) == 0);
  const char *m[3] = {down[0].url, down[1].url, down[2].url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 3;
  o.connect_timeout_ms = 2000;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 500), RLOCK_ENOQUORUM);
  RT_CHECK(rt_now_ms() - t0 >= 490);
  rlock_metrics mm;
  RT_CHECK(rlock_metrics_snapshot(c, &mm) == 0);
  fprintf(stderr, "  errors: \"%s\", \"%s\", \"%s\"\n", mm.masters[0].error,
          mm.masters[1].error, mm.masters[2].error);
  RT_CHECK_EQ_INT(mm.masters[0].up, 1);
  RT_CHECK(mm.masters[0].error[0] == '\0');
  for (int i = 1; i < 3; i++) {
    RT_CHECK_EQ_INT(mm.masters[i].up, 0);
    RT_CHECK(strstr(mm.masters[i].error, "connection refused") != NULL);
  }
  /* A master comes back: ready. */
  RT_REQUIRE(rt_redis_restart(&down[1]) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 30000), 0);
  rlock_client_close(c);
  rt_redis_stop_many(down, 3);
}

typedef struct waiter_arg {
  rlock_client *c;
  int rc;
} waiter_arg;

static void *wait_in_thread(void *p) {
  waiter_arg *a = p;
  a->rc = rlock_client_wait_ready(a->c, 60000);
  return NULL;
}

/* A close wakes a thread that waits; a caller's loop thread may not wait. */
static void wait_ready_closed_and_deadlock(void) {
  rt_redis dead;
  RT_REQUIRE(rt_redis_start(&dead, NULL) == 0);
  RT_REQUIRE(rt_redis_kill(&dead) == 0);
  const char *m[1] = {dead.url};
  rlock_options o;
  rlock_options_init(&o);
  o.masters = m;
  o.nmasters = 1;
  rlock_client *c = NULL;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  waiter_arg a = {c, 99};
  pthread_t th;
  RT_REQUIRE(pthread_create(&th, NULL, wait_in_thread, &a) == 0);
  rt_sleep_ms(200);
  rlock_client_close(c);
  pthread_join(th, NULL);
  RT_CHECK_EQ_INT(a.rc, RLOCK_ECLOSED);

  uv_loop_t loop;
  RT_REQUIRE(uv_loop_init(&loop) == 0);
  o.loop = &loop;
  m[0] = srv[0].url;
  RT_REQUIRE(rlock_client_open(&c, &o) == 0);
  RT_CHECK_EQ_INT(rlock_client_wait_ready(c, 1000), RLOCK_EDEADLK);
  rlock_client_close(c);
  uv_run(&loop, UV_RUN_DEFAULT);
  RT_CHECK(uv_loop_close(&loop) == 0);
  rt_redis_stop(&dead);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"trylock_n1", trylock_n1},     {"trylock_n3", trylock_n3},
      {"force_n1", force_n1},         {"force_n3", force_n3},
      {"is_locked_n1", is_locked_n1}, {"is_locked_n3", is_locked_n3},
      {"async_n1", async_n1},         {"async_n3", async_n3},
      {"wait_ready_majority_up", wait_ready_majority_up},
      {"wait_ready_majority_down", wait_ready_majority_down},
      {"wait_ready_closed_and_deadlock", wait_ready_closed_and_deadlock},
  };
  return rt_main_servers(argc, argv, srv, 3, tests,
                         sizeof tests / sizeof tests[0]);
}
