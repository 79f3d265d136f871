/*
 * An unlock made while a master's connection is down and reconnecting,
 * against a real redis-server:
 *  - the master dropped its clients (CLIENT KILL TYPE normal, as a
 *    failover or a proxy restart does) and the client has noticed: the
 *    unlock waits for the reconnect, is sent then, and returns 0; the key
 *    is gone at once and another client takes the lock at once;
 *  - the master stays down past the hold's validity: the unlock fails
 *    with RLOCK_ENOQUORUM, and returns, within that validity (a generous
 *    bound that catches a hang).
 * No timing is asserted but bounds that catch hangs.
 */
#include <stdio.h>

#include "common.h"

#define MT 1000 /* master timeout: generous for sanitizers and load */

static rlock_client *open_client(rt_redis *srv) {
  rlock_options o;
  rlock_options_init(&o);
  o.master_timeout_ms = MT;
  o.retry_delay_ms = 20;
  o.retry_jitter_ms = 20;
  rlock_client *c = rt_client_opts(srv, 1, &o);
  if (c != NULL && rlock_client_wait_ready(c, 10000) != 0) {
    rlock_client_close(c);
    c = NULL;
  }
  return c;
}

/* Whether master 0 of c shows down within ms (polled every millisecond:
 * the reconnect may follow the drop quickly). */
static int down_within(rlock_client *c, int ms) {
  uint64_t end = rt_now_ms() + (uint64_t)ms;
  rlock_metrics m;
  do {
    if (rlock_metrics_snapshot(c, &m) == 0 && !m.masters[0].up) return 1;
    rt_sleep_ms(1);
  } while (rt_now_ms() < end);
  return 0;
}

/*
 * A holds L (30 s lease). The master drops every normal client; once A
 * has noticed, A unlocks: 0, and the key is gone when the call returns,
 * so that B takes L at once. A reconnect may be quick enough that the
 * test does not see the drop; it tries again then.
 */
static void unlock_after_reconnect(void) {
  rt_redis srv;
  RT_REQUIRE(rt_redis_start(&srv, NULL) == 0);
  rlock_client *a = open_client(&srv);
  rlock_client *b = open_client(&srv);
  RT_REQUIRE(a != NULL && b != NULL);
  rlock *la, *lb;
  RT_REQUIRE(rlock_get(a, "ur", &la) == 0);
  RT_REQUIRE(rlock_get(b, "ur", &lb) == 0);
  RT_REQUIRE(rlock_trylock(la, 0, 30000) == 0);
  int seen = 0;
  for (int attempt = 0; attempt < 10 && !seen; attempt++) {
    RT_REQUIRE(rt_up_within(a, 0, 10000));
    redisReply *r = rt_redis_cmd(&srv, "CLIENT KILL TYPE normal");
    RT_REQUIRE(r != NULL);
    freeReplyObject(r);
    seen = down_within(a, 2000);
  }
  RT_REQUIRE(seen);
  uint64_t t0 = rt_now_ms();
  int rc = rlock_unlock(la);
  uint64_t took = rt_now_ms() - t0;
  long long exists = rt_redis_int(&srv, "EXISTS rlock:{ur}");
  fprintf(stderr, "    unlock while reconnecting: %d (%s) after %llu ms; "
          "key exists: %lld\n",
          rc, rlock_strerror(rc), (unsigned long long)took, exists);
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK_EQ_INT(exists, 0);
  RT_CHECK(took < 10000); /* catches a hang */
  /* B's connection was dropped too: once it is back, L is free. */
  RT_REQUIRE(rt_up_within(b, 0, 10000));
  rc = rlock_trylock(lb, 0, 30000);
  RT_CHECK_EQ_INT(rc, 0);
  if (rc == 0) RT_CHECK_EQ_INT(rlock_unlock(lb), 0);
  rlock_free(la);
  rlock_free(lb);
  rlock_client_close(a);
  rlock_client_close(b);
  rt_redis_stop(&srv);
}

/*
 * A holds L with a 2 s lease; the master is killed and stays down. The
 * unlock cannot be sent: it fails with RLOCK_ENOQUORUM, and returns
 * within the hold's validity plus a generous bound, not after a wait
 * that the master's absence would make endless.
 */
static void unlock_master_stays_down(void) {
  const int64_t lease = 2000;
  rt_redis srv;
  RT_REQUIRE(rt_redis_start(&srv, NULL) == 0);
  rlock_client *a = open_client(&srv);
  RT_REQUIRE(a != NULL);
  rlock *la;
  RT_REQUIRE(rlock_get(a, "ur-down", &la) == 0);
  uint64_t held = rt_now_ms();
  RT_REQUIRE(rlock_trylock(la, 0, lease) == 0);
  RT_REQUIRE(rt_redis_kill(&srv) == 0);
  RT_REQUIRE(down_within(a, 5000));
  uint64_t t0 = rt_now_ms();
  int rc = rlock_unlock(la);
  uint64_t now = rt_now_ms();
  fprintf(stderr, "    unlock with the master down: %d (%s) after %llu ms, "
          "%llu ms after the lock was taken (lease %lld ms)\n",
          rc, rlock_strerror(rc), (unsigned long long)(now - t0),
          (unsigned long long)(now - held), (long long)lease);
  RT_CHECK_EQ_INT(rc, RLOCK_ENOQUORUM);
  RT_CHECK(now - held <= (uint64_t)lease + MT + 3000); /* catches a hang */
  rlock_free(la);
  rlock_client_close(a);
  rt_redis_stop(&srv);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"unlock_after_reconnect", unlock_after_reconnect},
      {"unlock_master_stays_down", unlock_master_stays_down},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
