/*
 * What rlock's own callbacks may do from the loop thread, on one real
 * redis-server: close the client from a lost-lock callback or from a
 * timed-out acquisition's callback, and cancel, from a lost-lock
 * callback, the acquisition that is running it. Each completes, calls
 * every callback once, and leaves nothing freed in use (the sanitizer and
 * valgrind runs check that part).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[1];

/* A lost-lock callback (run from the extension's answer) that closes the
 * client: the extension's completion must not then drop a freed hold or
 * finish a finished request, and the lost-lock callback runs. */
static rlock_client *c6;
static atomic_int lost6, done6;
static void lost_cb6(rlock *l, uint64_t owner, int is_thread, void *arg) {
  (void)l; (void)owner; (void)is_thread; (void)arg;
  atomic_store(&lost6, 1);
  rlock_client_close(c6); /* on the loop thread: the detached close */
}
static void ext_cb6(rlock *l, int status, void *arg) {
  (void)l; (void)arg;
  fprintf(stderr, "  extend cb status %d\n", status);
  atomic_fetch_add(&done6, 1);
}
static void lock_cb6(rlock *l, int status, void *arg) {
  (void)l;
  *(int *)arg = status;
  atomic_fetch_add(&done6, 1);
}
static void lost_cb_closes_client(void) {
  c6 = rt_client(srv, 1, 1000);
  RT_REQUIRE(c6);
  rlock *l;
  RT_REQUIRE(rlock_get(c6, "r6", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  rlock_set_lost_cb(l, lost_cb6, NULL);
  int st = 99;
  atomic_store(&done6, 0);
  RT_REQUIRE(rlock_lock_async(l, 1, 0, 60000, lock_cb6, &st) == 0);
  while (atomic_load(&done6) < 1) rt_sleep_ms(5);
  RT_REQUIRE(st == 0);
  rt_redis_run(&srv[0], "DEL rlock:{r6}"); /* lost behind its back */
  RT_REQUIRE(rlock_extend_async(l, 1, 60000, ext_cb6, NULL) == 0);
  for (int i = 0; i < 200 && atomic_load(&done6) < 2; i++) rt_sleep_ms(5);
  rt_sleep_ms(300);
  RT_CHECK(atomic_load(&lost6) == 1);
  rlock_free(l);
}

/* A callback with RLOCK_ETIMEDOUT that closes the client, while the
 * connection's deadline timer is still walking the commands it times out:
 * the close must not free them under it, and every callback runs. */
static rlock_client *c7;
static atomic_int done7;
static void cb7(rlock *l, int status, void *arg) {
  (void)l; (void)arg;
  if (atomic_fetch_add(&done7, 1) == 0) {
    fprintf(stderr, "  first cb status %d: closing from the loop\n", status);
    rlock_client_close(c7);
  }
}
static void timeout_cb_closes_client(void) {
  c7 = rt_client(srv, 1, 200);
  RT_REQUIRE(c7);
  rlock *l;
  RT_REQUIRE(rlock_get(c7, "r7", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  atomic_store(&done7, 0);
  for (uint64_t o = 1; o <= 6; o++)
    RT_REQUIRE(rlock_lock_async(l, o, 0, 10000, cb7, NULL) == 0);
  for (int i = 0; i < 400 && atomic_load(&done7) < 6; i++) rt_sleep_ms(5);
  RT_REQUIRE(rt_redis_resume(&srv[0]) == 0);
  rt_sleep_ms(200);
  RT_CHECK_EQ_INT(atomic_load(&done7), 6);
  rlock_free(l);
}

/* The lost-lock callback that a won acquisition runs (a fresh grant for
 * an owner thought holding) cancels the owner's pending acquisition, the
 * one being won: the acquisition must not go on with a freed request, and
 * both callbacks run. */
static atomic_int doneB;
static void lost_cbB(rlock *l, uint64_t owner, int is_thread, void *arg) {
  (void)is_thread; (void)arg;
  int rc = rlock_cancel_async(l, owner);
  fprintf(stderr, "  lost cb: cancel -> %d\n", rc);
}
static void cbB(rlock *l, int status, void *arg) {
  (void)l;
  *(int *)arg = status;
  atomic_fetch_add(&doneB, 1);
}
static void lost_cb_cancels_its_acquisition(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "f2", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 1000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  int s1 = 99, s2 = 99;
  atomic_store(&doneB, 0);
  RT_REQUIRE(rlock_lock_async(l, 5, 0, 60000, cbB, &s1) == 0);
  while (atomic_load(&doneB) < 1) rt_sleep_ms(5);
  RT_REQUIRE(s1 == 0);
  rlock_set_lost_cb(l, lost_cbB, NULL);
  rt_redis_run(&srv[0], "DEL rlock:{f2}"); /* its lease ran out */
  RT_REQUIRE(rlock_lock_async(l, 5, 0, 60000, cbB, &s2) == 0);
  for (int i = 0; i < 200 && atomic_load(&doneB) < 2; i++) rt_sleep_ms(5);
  rt_sleep_ms(100);
  fprintf(stderr, "  second status %d, callbacks %d, key exists %lld\n", s2,
          atomic_load(&doneB), rt_redis_int(&srv[0], "EXISTS rlock:{f2}"));
  RT_CHECK_EQ_INT(atomic_load(&doneB), 2);
  rt_redis_run(&srv[0], "DEL rlock:{f2}");
  rlock_free(l);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"lost_cb_closes_client", lost_cb_closes_client},
      {"timeout_cb_closes_client", timeout_cb_closes_client},
      {"lost_cb_cancels_its_acquisition", lost_cb_cancels_its_acquisition},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
