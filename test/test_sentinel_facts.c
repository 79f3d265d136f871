/*
 * The Sentinel facts of test/TOPOLOGY-FACTS.md, checked against a real
 * 7.0 Sentinel setup: the shapes of ROLE and GET-MASTER-ADDR-BY-NAME, the
 * READONLY errors of a replica, WAIT against paused replicas, the
 * +switch-master message and the length of a failover, the connections
 * Sentinel kills when it reconfigures servers, and what a restarted old
 * master without persistence does before Sentinel demotes it. The
 * client's Sentinel code rests on these facts; every command a
 * check rests on is printed with its reply ("  | PORT> ...").
 */
#include "facts.h"
#include "harness.h"
#include "harness_node.h"
#include "harness_sentinel.h"
#include "sha1.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rt_sentinel S;
static int up;

static int reported_master(void) { return rt_sentinel_master(&S); }

static void test_role_and_address_shapes(void) {
  RT_REQUIRE(up);
  int m = reported_master();
  RT_REQUIRE(m >= 0);
  int r = (m + 1) % RT_SENTINEL_DATA;
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[m], "WAIT 2 2000"), 2);
  /* master: ["master", offset, [[ip, "port", "offset"], ...]] */
  redisReply *role = RT_OBS(&S.data[m], "ROLE");
  RT_REQUIRE(rt_is_array(role, 3));
  RT_CHECK(rt_is_text(role->element[0], REDIS_REPLY_STRING, "master"));
  RT_CHECK(role->element[1]->type == REDIS_REPLY_INTEGER);
  RT_CHECK(rt_is_array(role->element[2], 2));
  for (size_t i = 0; i < role->element[2]->elements; i++) {
    redisReply *e = role->element[2]->element[i];
    RT_CHECK(rt_is_array(e, 3) && e->element[1]->type == REDIS_REPLY_STRING &&
             e->element[2]->type == REDIS_REPLY_STRING);
  }
  freeReplyObject(role);
  /* replica: ["slave", ip, port, state, offset], port an integer here */
  role = RT_OBS(&S.data[r], "ROLE");
  RT_REQUIRE(rt_is_array(role, 5));
  RT_CHECK(rt_is_text(role->element[0], REDIS_REPLY_STRING, "slave"));
  RT_CHECK(role->element[2]->type == REDIS_REPLY_INTEGER &&
           role->element[2]->integer == S.data[m].port);
  RT_CHECK(rt_is_text(role->element[3], REDIS_REPLY_STRING, "connected"));
  RT_CHECK(role->element[4]->type == REDIS_REPLY_INTEGER);
  freeReplyObject(role);
  role = RT_OBS(&S.sentinel[0], "ROLE");
  RT_CHECK(rt_is_array(role, 2) &&
           rt_is_text(role->element[0], REDIS_REPLY_STRING, "sentinel") &&
           rt_is_array(role->element[1], 1) &&
           rt_is_text(role->element[1]->element[0], REDIS_REPLY_STRING,
                      RT_SENTINEL_NAME));
  if (role) freeReplyObject(role);
  redisReply *addr = RT_OBS(&S.sentinel[0], "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                            RT_SENTINEL_NAME);
  char port[16];
  snprintf(port, sizeof port, "%d", S.data[m].port);
  RT_CHECK(rt_is_array(addr, 2) &&
           rt_is_text(addr->element[0], REDIS_REPLY_STRING, "127.0.0.1") &&
           rt_is_text(addr->element[1], REDIS_REPLY_STRING, port));
  if (addr) freeReplyObject(addr);
  addr = RT_OBS(&S.sentinel[0], "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                "no-such-name");
  RT_CHECK(addr && addr->type == REDIS_REPLY_NIL);
  if (addr) freeReplyObject(addr);
  /* A data command on a sentinel. */
  RT_CHECK(rt_err_starts_free(RT_OBS(&S.sentinel[0], "GET x"),
                              "ERR unknown command"));
}

/* What a replica answers to writes, plain and scripted. */
static void test_readonly_texts(void) {
  RT_REQUIRE(up);
  int m = reported_master();
  RT_REQUIRE(m >= 0);
  rt_redis *r = &S.data[(m + 1) % RT_SENTINEL_DATA];
  const char *ro = "READONLY You can't write against a read only replica.";
  RT_CHECK(rt_is_text_free(RT_OBS(r, "SET k v"), REDIS_REPLY_ERROR, ro));
  RT_CHECK(rt_err_starts_free(
      RT_OBS(r, "EVAL %s 1 k", "return redis.call('set',KEYS[1],'v')"),
      "READONLY You can't write against a read only replica. script: "));
  /* A shebang script is refused before it runs, unless it declares
   * no-writes. */
  RT_CHECK(rt_is_text_free(
      RT_OBS(r, "EVAL %s 1 k", "#!lua\nreturn redis.call('set',KEYS[1],'v')"),
      REDIS_REPLY_ERROR, ro));
  redisReply *rep = RT_OBS(
      r, "EVAL %s 1 k", "#!lua flags=no-writes\nreturn redis.call('get',KEYS[1])");
  RT_CHECK(rep && rep->type == REDIS_REPLY_NIL);
  if (rep) freeReplyObject(rep);
}

/* With both replicas paused, a grant pipelined with WAIT 1 gets 0
 * acknowledgements after the timeout; once they resume, both have it. */
static void test_wait_with_paused_replicas(void) {
  RT_REQUIRE(up);
  int m = reported_master();
  RT_REQUIRE(m >= 0);
  int a = (m + 1) % RT_SENTINEL_DATA, b = (m + 2) % RT_SENTINEL_DATA;
  RT_REQUIRE(rt_sentinel_pause(&S, a) == 0 && rt_sentinel_pause(&S, b) == 0);
  const char *body = "return redis.call('set',KEYS[1],ARGV[1])";
  char sha[41];
  rl_sha1_hex(body, strlen(body), sha);
  freeReplyObject(rt_redis_cmd(&S.data[m], "SCRIPT LOAD %s", body));
  redisContext *c = rt_connect(&S.data[m]);
  RT_REQUIRE(c);
  uint64_t t0 = rt_now_ms();
  redisAppendCommand(c, "EVALSHA %s 1 grant token-1", sha);
  redisAppendCommand(c, "WAIT 1 300");
  redisReply *r1 = NULL, *r2 = NULL;
  redisGetReply(c, (void **)&r1);
  redisGetReply(c, (void **)&r2);
  char b1[64], b2[64];
  rt_note("replicas paused; pipelined EVALSHA ... grant token-1; WAIT 1 300 "
          "=> %s; %s after %llu ms", rt_show(r1, b1, sizeof b1),
          rt_show(r2, b2, sizeof b2), (unsigned long long)(rt_now_ms() - t0));
  RT_CHECK(rt_is_text(r1, REDIS_REPLY_STATUS, "OK"));
  RT_CHECK(r2 && r2->type == REDIS_REPLY_INTEGER && r2->integer == 0);
  if (r1) freeReplyObject(r1);
  if (r2) freeReplyObject(r2);
  redisFree(c);
  RT_REQUIRE(rt_sentinel_resume(&S, a) == 0 && rt_sentinel_resume(&S, b) == 0);
  RT_CHECK_EQ_INT(rt_redis_int(&S.data[m], "WAIT 2 5000"), 2);
  RT_CHECK(rt_is_text_free(RT_OBS(&S.data[b], "GET grant"),
                           REDIS_REPLY_STRING, "token-1"));
  RT_CHECK(rt_sentinel_wait_replicas(&S, 10000) == 0);
}

/* Whether a connection was closed by the server: a PING gets no reply. */
static int closed(redisContext *c) {
  redisReply *r = redisCommand(c, "PING");
  int gone = r == NULL;
  if (r) freeReplyObject(r);
  return gone;
}

/* SIGKILL of the master: the +switch-master message, the events before
 * it and their times, and the connections Sentinel kills on the servers
 * it reconfigures. */
static void test_failover_messages_and_timing(void) {
  RT_REQUIRE(up);
  int m = reported_master();
  RT_REQUIRE(m >= 0);
  redisContext *sw = rt_connect(&S.sentinel[0]);
  redisContext *all = rt_connect(&S.sentinel[1]);
  RT_REQUIRE(sw && all);
  freeReplyObject(RT_OBSC(sw, "SUBSCRIBE +switch-master"));
  freeReplyObject(RT_OBSC(all, "PSUBSCRIBE *"));
  /* A normal and a subscribed client on each replica. */
  redisContext *normal[RT_SENTINEL_DATA] = {0}, *subd[RT_SENTINEL_DATA] = {0};
  for (int i = 0; i < RT_SENTINEL_DATA; i++) {
    if (i == m) continue;
    normal[i] = rt_connect(&S.data[i]);
    subd[i] = rt_connect(&S.data[i]);
    RT_REQUIRE(normal[i] && subd[i]);
    freeReplyObject(redisCommand(subd[i], "SUBSCRIBE anything"));
  }
  int old_port = S.data[m].port;
  uint64_t t0 = rt_now_ms();
  RT_REQUIRE(rt_redis_kill(&S.data[m]) == 0);
  /* The events one sentinel publishes, as they come, until another one
   * announces the switch. */
  redisReply *msg = NULL;
  char buf[512];
  while (!msg && rt_now_ms() - t0 < 30000) {
    redisReply *ev = rt_next_reply(all, 50);
    if (ev && rt_is_array(ev, 4))
      rt_note("  %5llu ms: %s %s", (unsigned long long)(rt_now_ms() - t0),
              ev->element[2]->str, ev->element[3]->str);
    if (ev) freeReplyObject(ev);
    msg = rt_next_reply(sw, 1);
  }
  uint64_t t_switch = rt_now_ms();
  rt_note("%llu ms after SIGKILL, on +switch-master: %s",
          (unsigned long long)(t_switch - t0), rt_show(msg, buf, sizeof buf));
  RT_REQUIRE(rt_is_array(msg, 3));
  RT_CHECK(rt_is_text(msg->element[0], REDIS_REPLY_STRING, "message"));
  RT_CHECK(rt_is_text(msg->element[1], REDIS_REPLY_STRING, "+switch-master"));
  char name[64], old_ip[64], new_ip[64];
  int oport = 0, nport = 0;
  RT_CHECK(sscanf(msg->element[2]->str, "%63s %63s %d %63s %d", name, old_ip,
                  &oport, new_ip, &nport) == 5);
  freeReplyObject(msg);
  RT_CHECK(strcmp(name, RT_SENTINEL_NAME) == 0);
  RT_CHECK(strcmp(old_ip, "127.0.0.1") == 0 && strcmp(new_ip, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(oport, old_port);
  int n = rt_sentinel_index_of_port(&S, nport);
  RT_CHECK(n >= 0 && n != m);
  RT_REQUIRE(n >= 0);
  RT_CHECK(rt_sentinel_wait_master_not(&S, m, 20000) == n);
  RT_CHECK(rt_sentinel_wait_replicas(&S, 20000) == 0);
  rt_note("all sentinels and servers agree %llu ms after SIGKILL",
          (unsigned long long)(rt_now_ms() - t0));
  /* Sentinel's SLAVEOF transaction ends in CLIENT KILL TYPE normal and
   * TYPE pubsub: the promoted replica's clients and the other replica's
   * are all disconnected. */
  for (int i = 0; i < RT_SENTINEL_DATA; i++) {
    if (i == m) continue;
    int c1 = closed(normal[i]);
    redisReply *push = rt_next_reply(subd[i], 200);
    int c2 = push == NULL && subd[i]->err != 0;
    if (push) freeReplyObject(push);
    rt_note("%s data[%d]: normal client %s, subscribed client %s",
            i == n ? "promoted" : "reconfigured", i,
            c1 ? "disconnected" : "still connected",
            c2 ? "disconnected" : "still connected");
    RT_CHECK(c1 && c2);
    redisFree(normal[i]);
    redisFree(subd[i]);
  }
  redisFree(sw);
  redisFree(all);
}

/* A killed master restarted without persistence: an empty master that
 * accepts writes until a sentinel converts it, some seconds later, when
 * its data is replaced by the new master's. */
static void test_restarted_old_master(void) {
  RT_REQUIRE(up);
  int n = reported_master(), old = -1;
  RT_REQUIRE(n >= 0);
  for (int i = 0; i < RT_SENTINEL_DATA; i++)
    if (S.data[i].pid == 0) old = i;
  RT_REQUIRE(old >= 0);
  freeReplyObject(rt_redis_cmd(&S.data[n], "SET kept-by-new 1"));
  /* The arguments harness_sentinel.c gives data nodes. */
  RT_REQUIRE(rt_node_restart(&S.data[old], 0, "--repl-diskless-sync-delay 0")
             == 0);
  uint64_t t0 = rt_now_ms();
  redisReply *role = RT_OBS(&S.data[old], "ROLE");
  RT_CHECK(rt_is_array(role, 3) &&
           rt_is_text(role->element[0], REDIS_REPLY_STRING, "master"));
  if (role) freeReplyObject(role);
  RT_CHECK(rt_is_text_free(RT_OBS(&S.data[old], "SET split-brain 1"),
                           REDIS_REPLY_STATUS, "OK"));
  RT_CHECK_EQ_INT(rt_sentinel_master(&S), n);
  uint64_t demoted = 0;
  while (!demoted && rt_now_ms() - t0 < 30000) {
    redisReply *r = rt_redis_cmd(&S.data[old], "ROLE");
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 5 &&
        rt_is_text(r->element[0], REDIS_REPLY_STRING, "slave"))
      demoted = rt_now_ms();
    if (r) freeReplyObject(r);
    rt_sleep_ms(50);
  }
  rt_note("restarted old master said master until %llu ms after its start",
          (unsigned long long)(demoted - t0));
  RT_CHECK(demoted > 0);
  RT_REQUIRE(rt_sentinel_wait_replicas(&S, 20000) == 0);
  role = RT_OBS(&S.data[old], "ROLE");
  if (role) freeReplyObject(role);
  RT_CHECK(rt_is_text_free(RT_OBS(&S.data[old], "SET x 1"), REDIS_REPLY_ERROR,
                           "READONLY You can't write against a read only "
                           "replica."));
  /* The write it accepted as a master is gone with the resync. */
  redisReply *g = RT_OBS(&S.data[old], "GET split-brain");
  RT_CHECK(g && g->type == REDIS_REPLY_NIL);
  if (g) freeReplyObject(g);
  RT_CHECK(rt_is_text_free(RT_OBS(&S.data[old], "GET kept-by-new"),
                           REDIS_REPLY_STRING, "1"));
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"role_and_address_shapes", test_role_and_address_shapes},
      {"readonly_texts", test_readonly_texts},
      {"wait_with_paused_replicas", test_wait_with_paused_replicas},
      {"failover_messages_and_timing", test_failover_messages_and_timing},
      {"restarted_old_master", test_restarted_old_master},
  };
  up = rt_sentinel_start(&S, NULL) == 0;
  int rc = rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
  rt_sentinel_stop(&S);
  return rc;
}
