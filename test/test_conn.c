/*
 * The connection layer's life at its edges, against real masters: a
 * stalled master is not "up" (issue 11, item 5); a close flushes what is
 * queued (issue 11, item 3: the undo of an acquisition in flight when the
 * client closes reaches the master).
 */
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common.h"

static rt_redis srv[1];

/* A SIGSTOPped master whose commands time out shows up = 0 until a reply
 * comes again. */
static void stalled_not_up(void) {
  rlock_client *c = rt_client(srv, 1, 200);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "stalled", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 10000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  rlock_metrics m;
  RT_REQUIRE(rlock_metrics_snapshot(c, &m) == 0);
  RT_CHECK_EQ_INT(m.masters[0].up, 1);
  RT_REQUIRE(rt_redis_pause(&srv[0]) == 0);
  int rc = rlock_trylock(l, 0, 10000);
  RT_CHECK_EQ_INT(rc, RLOCK_ENOQUORUM);
  RT_CHECK(rlock_metrics_snapshot(c, &m) == 0);
  fprintf(stderr, "  stopped master: trylock %s, up = %d, timeouts = %llu\n",
          rlock_strerror(rc), m.masters[0].up,
          (unsigned long long)m.masters[0].timeouts);
  RT_CHECK_EQ_INT(m.masters[0].up, 0);
  RT_CHECK(m.masters[0].timeouts >= 1);
  RT_CHECK(rt_redis_resume(&srv[0]) == 0);
  /* The late replies arrive; a fresh command is answered. */
  rc = RLOCK_ENOQUORUM;
  for (int i = 0; i < 50 && rc != 0; i++) {
    rc = rlock_is_locked(l);
    if (rc != 0) rt_sleep_ms(20);
  }
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(rlock_metrics_snapshot(c, &m) == 0);
  RT_CHECK_EQ_INT(m.masters[0].up, 1);
  rlock_free(l);
  rlock_client_close(c);
}

/* A client that holds a lock closes while an acquisition is in flight: the
 * grant that comes back during the close must not outlive the client. */
static void noop_cb(rlock *l, int status, void *arg) {
  (void)l, (void)status, (void)arg;
}

static void close_flushes_undo(void) {
  int left = 0;
  for (int run = 0; run < 10; run++) {
    rlock_client *c = rt_client(srv, 1, 1000);
    RT_REQUIRE(c != NULL);
    rlock *held, *inflight;
    RT_REQUIRE(rlock_get(c, "close:held", &held) == 0);
    RT_REQUIRE(rlock_get(c, "close:inflight", &inflight) == 0);
    RT_REQUIRE(rlock_trylock(held, 0, 60000) == 0);
    RT_REQUIRE(rlock_lock_async(inflight, 1, 0, 60000, noop_cb, NULL) == 0);
    rlock_client_close(c);
    rlock_free(held);
    rlock_free(inflight);
    rt_sleep_ms(100);
    long long ex = rt_redis_int(&srv[0], "EXISTS rlock:{close:inflight}");
    if (ex != 0) {
      left++;
      rt_redis_int(&srv[0], "DEL rlock:{close:inflight}");
    }
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{close:held}"), 0);
  }
  fprintf(stderr, "  %d of 10 closes left the in-flight lock behind\n", left);
  RT_CHECK_EQ_INT(left, 0);
}

int main(int argc, char **argv) {
  if (rt_redis_start_many(srv, 1) != 0) return 1;
  static const rt_test tests[] = {
      {"stalled_not_up", stalled_not_up},
      {"close_flushes_undo", close_flushes_undo},
  };
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_redis_stop_many(srv, 1);
  return rc;
}
