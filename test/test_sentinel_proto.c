/*
 * Unit tests of lib/sentinel_proto on replies captured from a real
 * Sentinel setup of Redis 7.0.15 (test/topology_replies.c): the master's
 * address and the nil for an unknown name, ROLE on a master, a replica
 * and a sentinel (ports as strings on a master, as an integer on a
 * replica), the subscribe confirmation and the +switch-master message of
 * a failover, and a WAIT reply. Then shapes the setup did not produce
 * (PSUBSCRIBE's pmessage, many replicas, other link states), malformed
 * payloads and damaged trees.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "sentinel_proto.h"
#include "topology_checks.h"
#include "topology_fixture.h"

static int I(const char *name) { return (int)rt_capture_get_int(name); }

static void captured(void) {
  redisReply *r;
  RT_REQUIRE((r = rt_capture_reply("sentinel.addr")) != NULL);
  rt_check_addr(r, I("sentinel.master_port"));
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("sentinel.addr_unknown")) != NULL);
  rt_check_addr_unknown(r);
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("role.master")) != NULL);
  rt_check_role_master(r, I("sentinel.replica_port_a"),
                       I("sentinel.replica_port_b"));
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("role.replica")) != NULL);
  rt_check_role_replica(r, I("sentinel.master_port"));
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("role.sentinel")) != NULL);
  rt_check_role_sentinel(r, "mymaster");
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("sentinel.subscribed")) != NULL);
  rt_check_subscribed(r);
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("sentinel.switch")) != NULL);
  rt_check_switch(r, "mymaster", I("switch.old_port"), I("switch.new_port"));
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("wait.reply")) != NULL);
  rt_check_wait(r, 2);
  freeReplyObject(r);
}

/* Replies of one kind given to another parser, and error replies. */
static void wrong_kinds(void) {
  redisReply *role = rt_capture_reply("role.master");
  redisReply *err = rt_capture_reply("err.readonly");
  redisReply *addr = rt_capture_reply("sentinel.addr");
  RT_REQUIRE(role && err && addr);
  rl_hostport hp;
  rl_role ro;
  long long n;
  rl_switch_master sw;
  RT_CHECK_EQ_INT(rl_sentinel_parse_addr(role, &hp), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_sentinel_parse_addr(err, &hp), RLOCK_EREDIS);
  RT_CHECK_EQ_INT(rl_sentinel_parse_addr(NULL, &hp), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_role_parse(addr, &ro), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_role_parse(err, &ro), RLOCK_EREDIS);
  RT_CHECK_EQ_INT(rl_wait_parse(role, &n), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_wait_parse(err, &n), RLOCK_EREDIS);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(role, &sw), 1);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(NULL, &sw), 1);
  freeReplyObject(role);
  freeReplyObject(err);
  freeReplyObject(addr);
}

static void switch_payloads(void) {
  rl_switch_master sw;
  const char *ok = "mymaster 10.0.0.1 6379 10.0.0.2 6380";
  RT_CHECK_EQ_INT(rl_sentinel_parse_switch(ok, strlen(ok), &sw), 0);
  RT_CHECK(strcmp(sw.name, "mymaster") == 0);
  RT_CHECK(strcmp(sw.from.host, "10.0.0.1") == 0 && sw.from.port == 6379);
  RT_CHECK(strcmp(sw.to.host, "10.0.0.2") == 0 && sw.to.port == 6380);
  /* Sentinel with announce-hostnames, or IPv6: the host is a word. */
  const char *v6 = "m ::1 6379 host-b.example 1";
  RT_CHECK_EQ_INT(rl_sentinel_parse_switch(v6, strlen(v6), &sw), 0);
  RT_CHECK(strcmp(sw.from.host, "::1") == 0 && sw.to.port == 1);
  static const char *bad[] = {
      "",
      "mymaster",
      "mymaster 10.0.0.1 6379 10.0.0.2",
      "mymaster 10.0.0.1 6379 10.0.0.2 6380 extra",
      "mymaster 10.0.0.1 6379 10.0.0.2 6380 ",
      " mymaster 10.0.0.1 6379 10.0.0.2 6380",
      "mymaster  10.0.0.1 6379 10.0.0.2 6380",
      "mymaster 10.0.0.1 0 10.0.0.2 6380",
      "mymaster 10.0.0.1 6379 10.0.0.2 65536",
      "mymaster 10.0.0.1 63x9 10.0.0.2 6380",
      "mymaster 10.0.0.1 -1 10.0.0.2 6380",
      "mymaster 10.0.0.1\t6379 10.0.0.2 6380",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    RT_CHECK_EQ_INT(rl_sentinel_parse_switch(bad[i], strlen(bad[i]), &sw),
                    RLOCK_EPROTO);
    RT_CHECK(sw.name[0] == '\0');
  }
  RT_CHECK_EQ_INT(rl_sentinel_parse_switch("m a 1\0 b 2", 11, &sw),
                  RLOCK_EPROTO);
}

/* The same message through PSUBSCRIBE, and other pushes. */
static void pushes(void) {
  const char *pm =
      "*4\r\n$8\r\npmessage\r\n$1\r\n*\r\n$14\r\n+switch-master\r\n"
      "$36\r\nmymaster 10.0.0.1 6379 10.0.0.2 6380\r\n";
  const char *other =
      "*3\r\n$7\r\nmessage\r\n$6\r\n+sdown\r\n$4\r\nx y \r\n";
  const char *broken =
      "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$8\r\nmymaster\r\n";
  const char *notext =
      "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n:5\r\n";
  redisReply *a = rt_resp_parse(pm, strlen(pm));
  redisReply *b = rt_resp_parse(other, strlen(other));
  redisReply *c = rt_resp_parse(broken, strlen(broken));
  redisReply *d = rt_resp_parse(notext, strlen(notext));
  RT_REQUIRE(a && b && c && d);
  rl_switch_master sw;
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(a, &sw), 0);
  RT_CHECK_EQ_INT(sw.to.port, 6380);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(b, &sw), 1);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(c, &sw), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_sentinel_parse_push(d, &sw), RLOCK_EPROTO);
  freeReplyObject(a);
  freeReplyObject(b);
  freeReplyObject(c);
  freeReplyObject(d);
}

/* ROLE shapes the setup did not show: a master with 20 replicas (16 kept,
 * all counted), a replica still connecting (offset -1), a sentinel with
 * more names than kept. */
static void role_shapes(void) {
  char buf[4096];
  size_t n = (size_t)snprintf(buf, sizeof buf, "*3\r\n$6\r\nmaster\r\n:7\r\n*20\r\n");
  for (int i = 0; i < 20; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "*3\r\n$8\r\n10.0.0.%d\r\n$4\r\n%d\r\n$1\r\n7\r\n",
                          i % 10, 7000 + i);
  redisReply *m = rt_resp_parse(buf, n);
  RT_REQUIRE(m != NULL);
  static rl_role ro;
  RT_CHECK_EQ_INT(rl_role_parse(m, &ro), 0);
  RT_CHECK_EQ_INT(ro.nreplicas, 20);
  RT_CHECK_EQ_INT(ro.replica[0].addr.port, 7000);
  RT_CHECK_EQ_INT(ro.replica[15].addr.port, 7015);
  freeReplyObject(m);

  const char *rep = "*5\r\n$5\r\nslave\r\n$8\r\n10.0.0.1\r\n:6379\r\n"
                    "$10\r\nconnecting\r\n:-1\r\n";
  redisReply *r = rt_resp_parse(rep, strlen(rep));
  RT_REQUIRE(r != NULL);
  RT_CHECK_EQ_INT(rl_role_parse(r, &ro), 0);
  RT_CHECK_EQ_INT(ro.link, RL_LINK_CONNECTING);
  RT_CHECK_EQ_INT(ro.offset, -1);
  freeReplyObject(r);

  n = (size_t)snprintf(buf, sizeof buf, "*2\r\n$8\r\nsentinel\r\n*18\r\n");
  for (int i = 0; i < 18; i++)
    n += (size_t)snprintf(buf + n, sizeof buf - n, "$3\r\nm%02d\r\n", i);
  redisReply *s = rt_resp_parse(buf, n);
  RT_REQUIRE(s != NULL);
  RT_CHECK_EQ_INT(rl_role_parse(s, &ro), 0);
  RT_CHECK_EQ_INT(ro.nnames, 18);
  RT_CHECK_EQ_INT(rl_role_monitors(&ro, "m03"), 1);
  RT_CHECK_EQ_INT(rl_role_monitors(&ro, "m17"), -1); /* not kept: ask */
  freeReplyObject(s);
  /* Not a role at all. */
  const char *what = "*2\r\n$5\r\nproxy\r\n*0\r\n";
  redisReply *w = rt_resp_parse(what, strlen(what));
  RT_REQUIRE(w != NULL);
  RT_CHECK_EQ_INT(rl_role_parse(w, &ro), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(ro.role, 0);
  freeReplyObject(w);
}

static void wait_values(void) {
  const char *neg = ":-1\r\n", *str = "$1\r\n2\r\n";
  redisReply *a = rt_resp_parse(neg, strlen(neg));
  redisReply *b = rt_resp_parse(str, strlen(str));
  RT_REQUIRE(a && b);
  long long n = 99;
  RT_CHECK_EQ_INT(rl_wait_parse(a, &n), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(n, 0);
  RT_CHECK_EQ_INT(rl_wait_parse(b, &n), RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_wait_parse(NULL, &n), RLOCK_EPROTO);
  freeReplyObject(a);
  freeReplyObject(b);
}

static void parse_all(const redisReply *tree, void *data) {
  long *results = data;
  static rl_role ro;
  rl_hostport hp;
  rl_switch_master sw;
  long long n;
  int a = rl_role_parse(tree, &ro), b = rl_sentinel_parse_addr(tree, &hp);
  int c = rl_sentinel_parse_push(tree, &sw), d = rl_wait_parse(tree, &n);
  /* Success means whole values; failure leaves nothing half set. */
  if (a == 0 && (ro.role < RL_ROLE_MASTER || ro.role > RL_ROLE_SENTINEL))
    results[1]++;
  if (a != 0 && ro.role != 0) results[1]++;
  if (b == 0 && (hp.port < 1 || hp.port > 65535 || !hp.host[0])) results[1]++;
  if (c == 0 && (sw.to.port < 1 || !sw.name[0])) results[1]++;
  if (d == 0 && n < 0) results[1]++;
  results[0] += (a == 0) + (b == 0) + (c == 0) + (d == 0);
}

static void damaged(void) {
  static const char *names[] = {"sentinel.addr", "role.master", "role.replica",
                                "role.sentinel", "sentinel.switch",
                                "sentinel.subscribed", "wait.reply"};
  long results[2] = {0, 0}, trees = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    redisReply *r = rt_capture_reply(names[i]);
    RT_REQUIRE(r != NULL);
    trees += rt_mutate_each(r, parse_all, results);
    freeReplyObject(r);
  }
  fprintf(stderr, "  %ld damaged trees, %ld parses accepted\n", trees,
          results[0]);
  RT_CHECK(trees > 300);
  RT_CHECK_EQ_INT(results[1], 0);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"captured", captured},       {"wrong_kinds", wrong_kinds},
      {"switch_payloads", switch_payloads}, {"pushes", pushes},
      {"role_shapes", role_shapes}, {"wait_values", wait_values},
      {"damaged", damaged},
  };
  fprintf(stderr, "replies captured from %s\n", rt_captured_from);
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
