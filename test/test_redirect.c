/*
 * Unit tests of lib/redirect: every error reply a cluster or a replica
 * gave in test/topology_replies.c (MOVED with an IP, a hostname, "?" and
 * an empty host; ASK; TRYAGAIN; both CLUSTERDOWN texts; CROSSSLOT;
 * READONLY with and without a script's suffix; the non-local key error of
 * a script; an ordinary error; a watchdog batch's per-key answers under
 * pcall), then host:port forms Redis can send but
 * the harness cannot make (IPv6), malformed texts and random bytes.
 */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "redirect.h"
#include "topology_checks.h"
#include "topology_fixture.h"

static int I(const char *name) { return (int)rt_capture_get_int(name); }

static void with(const char *name, void (*check)(const redisReply *r)) {
  redisReply *r = rt_capture_reply(name);
  RT_REQUIRE(r != NULL);
  check(r);
  freeReplyObject(r);
}

static void moved_ip(const redisReply *r) {
  rt_check_moved(r, I("err.moved.slot"), "127.0.0.1", I("err.moved.port"));
}
static void moved_by_target(const redisReply *r) {
  rt_check_moved(r, I("migration.slot"), "127.0.0.1",
                 I("migration.from_port"));
}
static void moved_hostname(const redisReply *r) {
  char host[64];
  snprintf(host, sizeof host, "node-%d.rlock.test", I("hostname.moved.port"));
  rt_check_moved(r, I("hostname.moved.slot"), host, I("hostname.moved.port"));
}
static void moved_question(const redisReply *r) {
  rt_check_moved(r, I("hostname.moved_unknown.slot"), "?",
                 I("hostname.moved_unknown.port"));
}
static void moved_empty(const redisReply *r) {
  rt_check_moved(r, I("unknown.moved.slot"), "", I("unknown.moved.port"));
}
static void ask(const redisReply *r) {
  rt_check_ask(r, I("migration.slot"), I("migration.to_port"));
}

static void captured_redirects(void) {
  with("err.moved", moved_ip);
  with("err.moved_by_target", moved_by_target);
  with("hostname.moved", moved_hostname);
  with("hostname.moved_unknown", moved_question);
  with("unknown.moved", moved_empty);
  with("err.ask", ask);
}

static void captured_others(void) {
  static const struct {
    const char *name;
    int kind, unserved;
  } cases[] = {
      {"err.tryagain", RL_REPLY_TRYAGAIN, 0},
      {"err.clusterdown", RL_REPLY_CLUSTERDOWN, 0},
      {"err.clusterdown_unserved", RL_REPLY_CLUSTERDOWN, 1},
      {"err.crossslot", RL_REPLY_CROSSSLOT, 0},
      {"err.readonly", RL_REPLY_READONLY, 0},
      {"err.readonly_script", RL_REPLY_READONLY, 0},
      {"err.nonlocal", RL_REPLY_NONLOCAL, 0},
      {"err.unknown_command", RL_REPLY_ERROR, 0},
      {"role.master", RL_REPLY_RESULT, 0},
      {"wait.reply", RL_REPLY_RESULT, 0},
      {"sentinel.addr_unknown", RL_REPLY_RESULT, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    redisReply *r = rt_capture_reply(cases[i].name);
    rl_redirect rd;
    RT_REQUIRE(r != NULL);
    RT_CHECK_EQ_INT(rl_redirect_classify(r, &rd), cases[i].kind);
    RT_CHECK_EQ_INT(rd.kind, cases[i].kind);
    RT_CHECK_EQ_INT(rd.unserved, cases[i].unserved);
    RT_CHECK_EQ_INT(rd.slot, -1);
    freeReplyObject(r);
  }
  rl_redirect rd;
  RT_CHECK_EQ_INT(rl_redirect_classify(NULL, &rd), RL_REPLY_RESULT);
}

/* A watchdog batch's answers under pcall (docs/architecture.md): the texts of
 * the errors a script's calls get, classified like error replies. */
static void captured_batches(void) {
  redisReply *r = rt_capture_reply("script.pcall_batch");
  RT_REQUIRE(r != NULL);
  rt_check_pcall_batch(r, "1N1");
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("script.pcall_migrating")) != NULL);
  rt_check_pcall_batch(r, "N1");
  freeReplyObject(r);
  RT_REQUIRE((r = rt_capture_reply("script.pcall_down")) != NULL);
  RT_REQUIRE(r->type == REDIS_REPLY_ARRAY && r->elements == 1);
  rl_redirect rd;
  RT_CHECK_EQ_INT(rl_redirect_parse(r->element[0]->str, r->element[0]->len,
                                    &rd), RL_REPLY_CLUSTERDOWN);
  freeReplyObject(r);
  /* Without pcall the same error ends the script, with its suffix. */
  const char *t = "ERR Script attempted to execute a command while the "
                  "cluster is down script: 9a1e, on @user_script:4.";
  RT_CHECK_EQ_INT(rl_redirect_parse(t, strlen(t), &rd), RL_REPLY_CLUSTERDOWN);
}

/* Redis writes "%s:%d" with the endpoint as it is (src/cluster.c,
 * clusterRedirectClient), so an IPv6 address comes unbracketed. */
static void hostports(void) {
  static const struct {
    const char *s, *host;
    int port;
  } good[] = {
      {"10.0.0.1:7000", "10.0.0.1", 7000},
      {"::1:7000", "::1", 7000},
      {"fe80::1:2:6379", "fe80::1:2", 6379},
      {"[::1]:7000", "::1", 7000},
      {"[2001:db8::5]:65535", "2001:db8::5", 65535},
      {"node-3.example.com:1", "node-3.example.com", 1},
      {":6381", "", 6381},
      {"?:6381", "?", 6381},
  };
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    char host[64] = "junk";
    int port = 0;
    RT_CHECK_EQ_INT(rl_hostport_split(good[i].s, strlen(good[i].s), host,
                                      sizeof host, &port), 0);
    RT_CHECK(strcmp(host, good[i].host) == 0);
    RT_CHECK_EQ_INT(port, good[i].port);
  }
  static const char *bad[] = {
      "", "host", "host:", "host:0", "host:65536", "host:123456", "host:12a",
      "host:-1", "ho st:1", "host\t:1", "[::1:7000", "::1]:7000", "[]:7000",
      "[::1]x:7000", "a[b:1", "host: 1",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char host[64];
    int port;
    RT_CHECK_EQ_INT(rl_hostport_split(bad[i], strlen(bad[i]), host,
                                      sizeof host, &port), RLOCK_EPROTO);
  }
  char small[4];
  int port;
  RT_CHECK_EQ_INT(rl_hostport_split("abcd:1", 6, small, sizeof small, &port),
                  RLOCK_EPROTO);
  RT_CHECK_EQ_INT(rl_hostport_split("abc:1", 5, small, sizeof small, &port), 0);
  RT_CHECK_EQ_INT(rl_hostport_split("a\0b:1", 5, small, sizeof small, &port),
                  RLOCK_EPROTO);
}

/* Texts that look like redirects but are not usable: an ordinary error,
 * never a redirect to an address made up from the rest. */
static void malformed(void) {
  static const char *texts[] = {
      "MOVED",           "MOVED ",        "MOVED 1",         "MOVED 1 ",
      "MOVED 1 host",    "MOVED x h:1",   "MOVED 16384 h:1", "MOVED -1 h:1",
      "MOVED 1  h:1",    "MOVED 1 h:0",   "MOVEDX 1 h:1",    "moved 1 h:1",
      "ASK",             "ASK 1",         "ASKING",          "ASK 99999999999 h:1",
      "TRYAGAINX",       "CLUSTERDOWNX",  "READONLYX",       "CROSSSLOTS",
      "ERR Script attempted to access a non local",
  };
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
    rl_redirect rd;
    RT_CHECK_EQ_INT(rl_redirect_parse(texts[i], strlen(texts[i]), &rd),
                    RL_REPLY_ERROR);
    RT_CHECK_EQ_INT(rd.slot, -1);
    RT_CHECK(rd.host[0] == '\0');
  }
  rl_redirect rd;
  RT_CHECK_EQ_INT(rl_redirect_parse(NULL, 0, &rd), RL_REPLY_ERROR);
  /* The words alone are enough: Redis's prose after them may change. */
  RT_CHECK_EQ_INT(rl_redirect_parse("TRYAGAIN", 8, &rd), RL_REPLY_TRYAGAIN);
  RT_CHECK_EQ_INT(rl_redirect_parse("CLUSTERDOWN", 11, &rd),
                  RL_REPLY_CLUSTERDOWN);
  RT_CHECK_EQ_INT(rd.unserved, 0);
  /* A MOVED with trailing text is not a MOVED Redis sends. */
  RT_CHECK_EQ_INT(rl_redirect_parse("MOVED 1 h:1 x", 13, &rd), RL_REPLY_ERROR);
}

static void random_bytes(void) {
  char buf[40];
  uint32_t x = 3;
  int bad = 0;
  static const char *seeds[] = {"MOVED 1 h:1", "ASK 12 [::1]:7", "CLUSTERDOWN"};
  for (int n = 0; n < 200000; n++) {
    size_t len = n % sizeof buf;
    const char *seed = seeds[n % 3];
    for (size_t i = 0; i < len; i++) {
      x = x * 1103515245u + 12345u;
      buf[i] = i < strlen(seed) && (x >> 20) % 4 ? seed[i] : (char)(x >> 16);
    }
    rl_redirect rd;
    int k = rl_redirect_parse(buf, len, &rd);
    if (k < RL_REPLY_ERROR || k > RL_REPLY_NONLOCAL) bad++;
    if ((k == RL_REPLY_MOVED || k == RL_REPLY_ASK) &&
        (rd.slot < 0 || rd.slot > 16383 || rd.port < 1 || rd.port > 65535))
      bad++;
  }
  RT_CHECK_EQ_INT(bad, 0);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"captured_redirects", captured_redirects},
      {"captured_others", captured_others},
      {"captured_batches", captured_batches},
      {"hostports", hostports},
      {"malformed", malformed},
      {"random_bytes", random_bytes},
  };
  fprintf(stderr, "replies captured from %s\n", rt_captured_from);
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
