/*
 * Redis error replies against real servers put into each state: OOM
 * (maxmemory), READONLY (the master became a replica), BUSY (a script that
 * does not end). Each gives RLOCK_EREDIS with the server's text, never a
 * crash or a hang, and never leaves a lock key behind; with three masters,
 * one refusing master does not stop the lock.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "common.h"

static rt_redis srv[4];

static int last_error_has(rlock_client *c, const char *text) {
  char buf[256];
  rlock_client_last_error(c, buf, sizeof buf);
  if (strstr(buf, text) == NULL) {
    fprintf(stderr, "  last error: '%s', wanted '%s'\n", buf, text);
    return 0;
  }
  return 1;
}

static int config_set(rt_redis *r, const char *k, const char *v) {
  redisReply *rep = rt_redis_cmd(r, "CONFIG SET %s %s", k, v);
  int ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
  if (rep) freeReplyObject(rep);
  return ok;
}

static void oom(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "oom", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(config_set(&srv[0], "maxmemory", "1"));
  int rc = rlock_trylock(l, 0, 5000);
  RT_CHECK_EQ_INT(rc, RLOCK_EREDIS);
  RT_CHECK(last_error_has(c, "OOM"));
  /* With a wait, an error reply is still said at once, not retried into
   * the same refusal until the deadline. */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(l, 3000, 5000), RLOCK_EREDIS);
  RT_CHECK(rt_now_ms() - t0 < 2500);
  RT_REQUIRE(config_set(&srv[0], "maxmemory", "0"));
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{oom}"), 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

static void readonly_replica(void) {
  rlock_client *c = rt_client(srv, 1, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "readonly", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  redisReply *rep = rt_redis_cmd(&srv[0], "REPLICAOF 127.0.0.1 %d", srv[3].port);
  RT_REQUIRE(rep != NULL && rep->type == REDIS_REPLY_STATUS);
  freeReplyObject(rep);
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), RLOCK_EREDIS);
  RT_CHECK(last_error_has(c, "READONLY"));
  rep = rt_redis_cmd(&srv[0], "REPLICAOF NO ONE");
  RT_REQUIRE(rep != NULL);
  freeReplyObject(rep);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{readonly}"), 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 2000, 5000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

static void *busy_script(void *arg) {
  rt_redis *r = arg;
  redisContext *ctx = redisConnect("127.0.0.1", r->port);
  if (ctx == NULL || ctx->err) return NULL;
  redisReply *rep = redisCommand(ctx, "EVAL %s 0",
                                 "local i = 0 while true do i = i + 1 end");
  if (rep) freeReplyObject(rep); /* an error once SCRIPT KILL ends it */
  redisFree(ctx);
  return NULL;
}

static void busy(void) {
  rlock_client *c = rt_client(srv, 1, 2000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "busy", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(config_set(&srv[0], "busy-reply-threshold", "50"));
  pthread_t th;
  pthread_create(&th, NULL, busy_script, &srv[0]);
  rt_sleep_ms(300); /* past the threshold: the server answers BUSY */
  uint64_t t0 = rt_now_ms();
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), RLOCK_EREDIS);
  RT_CHECK(rt_now_ms() - t0 < 2000);
  RT_CHECK(last_error_has(c, "BUSY"));
  redisReply *rep = rt_redis_cmd(&srv[0], "SCRIPT KILL");
  RT_CHECK(rep != NULL);
  if (rep) freeReplyObject(rep);
  pthread_join(th, NULL);
  RT_REQUIRE(config_set(&srv[0], "busy-reply-threshold", "5000"));
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{busy}"), 0);
  RT_CHECK_EQ_INT(rlock_trylock(l, 2000, 5000), 0);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  rlock_free(l);
  rlock_client_close(c);
}

/* One of three masters refuses: the other two still make a majority, and
 * the refusing one is left without a key. */
static void one_refusing_master(void) {
  rlock_client *c = rt_client(srv, 3, 1000);
  RT_REQUIRE(c != NULL);
  rlock *l;
  RT_REQUIRE(rlock_get(c, "refusing", &l) == 0);
  RT_REQUIRE(rlock_trylock(l, 0, 5000) == 0);
  RT_REQUIRE(rlock_unlock(l) == 0);
  RT_REQUIRE(config_set(&srv[1], "maxmemory", "1"));
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[1], "EXISTS rlock:{refusing}"), 0);
  RT_CHECK_EQ_INT(rt_redis_int(&srv[0], "EXISTS rlock:{refusing}"), 1);
  RT_CHECK_EQ_INT(rlock_unlock(l), 0);
  /* Two refusing: no majority, the error is said, nothing is left. */
  RT_REQUIRE(config_set(&srv[2], "maxmemory", "1"));
  RT_CHECK_EQ_INT(rlock_trylock(l, 0, 5000), RLOCK_EREDIS);
  RT_REQUIRE(config_set(&srv[1], "maxmemory", "0"));
  RT_REQUIRE(config_set(&srv[2], "maxmemory", "0"));
  /* The one grant is undone (asynchronously: the call does not wait for
   * the undo's answer). */
  int left = 3;
  for (int k = 0; k < 100 && left > 0; k++) {
    left = 0;
    for (int i = 0; i < 3; i++)
      left += rt_redis_int(&srv[i], "EXISTS rlock:{refusing}") != 0;
    if (left > 0) rt_sleep_ms(20);
  }
  RT_CHECK_EQ_INT(left, 0);
  rlock_free(l);
  rlock_client_close(c);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"oom", oom},
      {"readonly_replica", readonly_replica},
      {"busy", busy},
      {"one_refusing_master", one_refusing_master},
  };
  return rt_main_servers(argc, argv, srv, 4, tests,
                         sizeof tests / sizeof tests[0]);
}
