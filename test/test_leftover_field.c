/*
 * An owner's field left on a master by an unlock that got no answer, on
 * one real redis-server: the hold is over for the client, and the same
 * thread's next acquisition, reentrant lock or write side of a read-write
 * lock, is a new hold, not a re-entry of the leftover one.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[1];

/* Unlocks l while master 0 pauses writes (CLIENT PAUSE WRITE, as a manual
 * failover does): no answer in time, so the hold is over for the client,
 * which tried to release it everywhere; the pause holds that back too.
 * Then the client's connections are killed before the master runs what
 * they sent, and writes go on: the owner's field is left on the master. */
static void unlock_unanswered(rlock *l) {
  rt_redis_run(&srv[0], "CLIENT PAUSE 20000 WRITE");
  RT_CHECK_EQ_INT(rlock_unlock(l), RLOCK_ENOQUORUM);
  rt_redis_run(&srv[0], "CLIENT KILL TYPE normal SKIPME yes");
  rt_redis_run(&srv[0], "CLIENT KILL TYPE pubsub SKIPME yes");
  rt_redis_run(&srv[0], "CLIENT UNPAUSE");
}

/* An unlock that could not reach the master (as in a manual failover)
 * ends the hold on the client and leaves the owner's field on the master
 * until its lease runs out. The same thread's next acquisition finds that
 * field; the acquire script must not take it for a re-entry, which would
 * grant with the counter as it stands, that is with the old hold's token,
 * while the client told the old holder nothing but "no majority": two
 * sections with one token. It gets a new hold with a larger token. The
 * master here pauses writes (CLIENT PAUSE WRITE, as a manual failover
 * does), the client's commands time out, and its connections are killed
 * before the master runs them. */
static void leftover_field_new_token(void) {
  rlock_client *c = rt_client(srv, 1, 300);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "f5", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 20000) == 0);
  uint64_t t1 = 0, t2 = 0;
  RT_REQUIRE(rlock_fencing_token(l, &t1) == 0);
  unlock_unanswered(l);
  /* The field is still there: the case this test is about. */
  RT_REQUIRE(rt_redis_int(&srv[0], "HLEN rlock:{f5}") == 1);
  int rc = rlock_trylock(l, 5000, 20000);
  RT_CHECK_EQ_INT(rc, 0);
  RT_CHECK(rlock_fencing_token(l, &t2) == 0);
  fprintf(stderr, "  tokens: first hold %" PRIu64 ", next %" PRIu64 "\n",
          t1, t2);
  RT_CHECK(t2 > t1);
  if (rc == 0) {
    RT_CHECK_EQ_INT(rlock_hold_count(l), 1);
    RT_CHECK_EQ_INT(rlock_unlock(l), 0);
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{f5}"), 0);
  }
  rlock_client_close(c);
  rlock_free(l);
  rt_redis_run(&srv[0], "FLUSHALL");
}

/* The same with the read side: an unlock of a read hold that got no
 * answer leaves the owner's read field on the master. The same thread's
 * write acquisition must not be refused there with "a read holder asked
 * for the write side" (RLOCK_EDEADLK), since the client holds no read
 * side: it is granted, and the leftover read hold is gone. */
static void leftover_read_field_write_granted(void) {
  rlock_client *c = rt_client(srv, 1, 300);
  RT_REQUIRE(c != NULL);
  rlock *r, *w;
  RT_REQUIRE(rlock_get_read(c, "f6", &r) == 0);
  RT_REQUIRE(rlock_get_write(c, "f6", &w) == 0);
  RT_REQUIRE(rlock_trylock(r, 0, 20000) == 0);
  unlock_unanswered(r);
  /* The read hold is still there: the case this test is about. */
  RT_REQUIRE(rt_redis_int(&srv[0], "HLEN rlock:{f6}:rc") == 1);
  int rc = rlock_trylock(w, 5000, 20000);
  fprintf(stderr, "  write side: %d (%s)\n", rc, rlock_strerror(rc));
  RT_CHECK_EQ_INT(rc, 0);
  if (rc == 0) {
    /* The leftover read hold is gone, and the write side is held. */
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{f6}:rc"), 0);
    RT_CHECK_EQ_INT(rlock_unlock(w), 0);
    RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{f6}:w"), 0);
  }
  rlock_client_close(c);
  rlock_free(r);
  rlock_free(w);
  rt_redis_run(&srv[0], "FLUSHALL");
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"leftover_field_new_token", leftover_field_new_token},
      {"leftover_read_field_write_granted", leftover_read_field_write_granted},
  };
  return rt_main_servers(argc, argv, srv, 1, tests,
                         sizeof tests / sizeof tests[0]);
}
