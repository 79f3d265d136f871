/*
 * Unit tests of lib/route, the redirect state machine of one command,
 * driven with the error replies a real cluster gave
 * (test/topology_replies.c) and with times chosen by the test: where each
 * reply sends the command next, the backoff, the limit on redirects, the
 * deadline that never moves, and the rule that a reply after the
 * deadline is LATE, never DONE. Then random event sequences against the
 * invariants.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "route.h"
#include "topology_fixture.h"

static redisReply *R(const char *name) { return rt_capture_reply(name); }
static int I(const char *name) { return (int)rt_capture_get_int(name); }

/* A reply that is no error: a result (here the WAIT reply, an integer). */
static redisReply *result(void) { return R("wait.reply"); }

static void start_and_result(void) {
  rl_route r;
  rl_route_step st;
  RT_CHECK_EQ_INT(rl_route_start(&r, 42, 1000, 1200, 5, &st), RL_ROUTE_SEND);
  RT_CHECK_EQ_INT(st.to_addr, 0);
  RT_CHECK_EQ_INT(st.asking, 0);
  RT_CHECK_EQ_INT(st.at, 1000);
  redisReply *ok = result();
  RT_REQUIRE(ok != NULL);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "127.0.0.1", 1150, &st),
                  RL_ROUTE_DONE);
  RT_CHECK_EQ_INT(st.last_kind, RL_REPLY_RESULT);
  /* Anything after the answer is late. */
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "127.0.0.1", 1160, &st),
                  RL_ROUTE_LATE);
  RT_CHECK_EQ_INT(rl_route_on_deadline(&r, &st), RL_ROUTE_LATE);
  /* A deadline already past: no send at all. */
  RT_CHECK_EQ_INT(rl_route_start(&r, 42, 1000, 1000, 5, &st), RL_ROUTE_FAIL);
  RT_CHECK_EQ_INT(st.fail, RL_ROUTE_ETIMEDOUT);
  freeReplyObject(ok);
}

/* A grant counts only if its reply came by the deadline. */
static void late_reply(void) {
  rl_route r;
  rl_route_step st;
  redisReply *ok = result();
  RT_REQUIRE(ok != NULL);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "h", 200, &st), RL_ROUTE_DONE);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "h", 201, &st), RL_ROUTE_LATE);
  /* After the deadline fired, even a reply stamped earlier is late. */
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_deadline(&r, &st), RL_ROUTE_FAIL);
  RT_CHECK_EQ_INT(st.fail, RL_ROUTE_ETIMEDOUT);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "h", 150, &st), RL_ROUTE_LATE);
  freeReplyObject(ok);
}

static void moved_then_answer(void) {
  rl_route r;
  rl_route_step st;
  redisReply *mv = R("err.moved"), *ok = result();
  RT_REQUIRE(mv && ok);
  rl_route_start(&r, I("err.moved.slot"), 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, mv, "127.0.0.1", 10, &st),
                  RL_ROUTE_SEND);
  RT_CHECK_EQ_INT(st.to_addr, 1);
  RT_CHECK(strcmp(st.host, "127.0.0.1") == 0);
  RT_CHECK_EQ_INT(st.port, I("err.moved.port"));
  RT_CHECK_EQ_INT(st.asking, 0);
  RT_CHECK_EQ_INT(st.update_map, 1);
  RT_CHECK_EQ_INT(st.at, 10); /* at once */
  RT_CHECK_EQ_INT(r.redirects, 1);
  RT_CHECK_EQ_INT(r.deadline, 200); /* unchanged */
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "127.0.0.1", 20, &st),
                  RL_ROUTE_DONE);
  freeReplyObject(mv);
  freeReplyObject(ok);
}

/* ASK: ASKING and the command to the target, the map left alone; a
 * TRYAGAIN there goes back to the same target with ASKING again. */
static void ask_then_tryagain(void) {
  rl_route r;
  rl_route_step st;
  redisReply *ask = R("err.ask"), *again = R("err.tryagain"), *ok = result();
  RT_REQUIRE(ask && again && ok);
  rl_route_start(&r, I("migration.slot"), 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ask, "127.0.0.1", 5, &st),
                  RL_ROUTE_SEND);
  RT_CHECK(st.to_addr && st.asking && !st.update_map && !st.refresh_map);
  RT_CHECK_EQ_INT(st.port, I("migration.to_port"));
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, again, "127.0.0.1", 6, &st),
                  RL_ROUTE_SEND);
  RT_CHECK(st.to_addr && st.asking);
  RT_CHECK_EQ_INT(st.port, I("migration.to_port"));
  RT_CHECK_EQ_INT(st.at, 6 + RL_ROUTE_BACKOFF_MIN_MS);
  RT_CHECK_EQ_INT(r.redirects, 1); /* TRYAGAIN is a retry, not a redirect */
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "127.0.0.1", 20, &st),
                  RL_ROUTE_DONE);
  freeReplyObject(ask);
  freeReplyObject(again);
  freeReplyObject(ok);
}

/* Two nodes that send the command to each other: it ends after K. */
static void redirect_limit(void) {
  rl_route r;
  rl_route_step st;
  redisReply *a = R("err.moved"), *b = R("err.ask");
  RT_REQUIRE(a && b);
  rl_route_start(&r, 1, 0, 1000, 3, &st);
  for (int i = 0; i < 3; i++)
    RT_CHECK_EQ_INT(rl_route_on_reply(&r, i % 2 ? b : a, "h", 1 + i, &st),
                    RL_ROUTE_SEND);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, a, "h", 5, &st), RL_ROUTE_FAIL);
  RT_CHECK_EQ_INT(st.fail, RL_ROUTE_EREDIRECTS);
  RT_CHECK_EQ_INT(st.last_kind, RL_REPLY_MOVED);
  /* With K = 0 the first redirect fails. */
  rl_route_start(&r, 1, 0, 1000, 0, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, b, "h", 1, &st), RL_ROUTE_FAIL);
  freeReplyObject(a);
  freeReplyObject(b);
}

/* CLUSTERDOWN (captured 3.6 s into a failover): retried by the map after
 * a backoff that doubles to its cap, until a retry no longer fits. */
static void clusterdown_backoff(void) {
  rl_route r;
  rl_route_step st;
  redisReply *down = R("err.clusterdown");
  RT_REQUIRE(down != NULL);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  uint64_t now = 0, want[] = {5, 10, 20, 40, 50, 50};
  int sends = 0;
  while (rl_route_on_reply(&r, down, "h", now, &st) == RL_ROUTE_SEND) {
    RT_CHECK(st.refresh_map && !st.to_addr && !st.asking);
    if (sends < 6) RT_CHECK_EQ_INT(st.at - now, want[sends]);
    RT_CHECK(st.at < r.deadline);
    now = st.at + 1; /* the reply takes 1 ms */
    sends++;
  }
  /* Sent at 5, 16, 37, 78, 129 and 180; at 181 the next would be at
   * 231, past the deadline of 200. */
  RT_CHECK_EQ_INT(sends, 6);
  RT_CHECK_EQ_INT(st.action, RL_ROUTE_FAIL);
  RT_CHECK_EQ_INT(st.fail, RL_ROUTE_ETIMEDOUT);
  RT_CHECK_EQ_INT(st.last_kind, RL_REPLY_CLUSTERDOWN);
  freeReplyObject(down);
}

static void crossslot_readonly_nonlocal(void) {
  rl_route r;
  rl_route_step st;
  redisReply *cs = R("err.crossslot"), *ro = R("err.readonly_script"),
             *nl = R("err.nonlocal"), *er = R("err.unknown_command");
  RT_REQUIRE(cs && ro && nl && er);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, cs, "h", 1, &st), RL_ROUTE_FAIL);
  RT_CHECK_EQ_INT(st.fail, RL_ROUTE_ECROSSSLOT);
  /* READONLY: nothing was written; ask the map again, after a pause. */
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ro, "h", 1, &st), RL_ROUTE_SEND);
  RT_CHECK(st.refresh_map && !st.to_addr && st.at == 1 + RL_ROUTE_BACKOFF_MIN_MS);
  RT_CHECK_EQ_INT(r.redirects, 1);
  /* A batch script that stopped halfway: its caller must see the reply. */
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, nl, "h", 1, &st), RL_ROUTE_DONE);
  RT_CHECK(st.refresh_map);
  RT_CHECK_EQ_INT(st.last_kind, RL_REPLY_NONLOCAL);
  /* An ordinary error is the command's answer. */
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, er, "h", 1, &st), RL_ROUTE_DONE);
  RT_CHECK_EQ_INT(st.last_kind, RL_REPLY_ERROR);
  RT_CHECK(!st.refresh_map);
  freeReplyObject(cs);
  freeReplyObject(ro);
  freeReplyObject(nl);
  freeReplyObject(er);
}

/* Endpoints Redis could not name: "" is the host that answered, "?" is
 * nobody known (refresh, then the map). */
static void unknown_endpoints(void) {
  rl_route r;
  rl_route_step st;
  redisReply *empty = R("unknown.moved"), *q = R("hostname.moved_unknown");
  RT_REQUIRE(empty && q);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, empty, "10.1.2.3", 1, &st),
                  RL_ROUTE_SEND);
  RT_CHECK(st.to_addr && strcmp(st.host, "10.1.2.3") == 0);
  RT_CHECK_EQ_INT(st.port, I("unknown.moved.port"));
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, empty, NULL, 1, &st), RL_ROUTE_SEND);
  RT_CHECK(!st.to_addr && st.refresh_map);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, q, "10.1.2.3", 1, &st), RL_ROUTE_SEND);
  RT_CHECK(!st.to_addr && st.refresh_map && !st.update_map);
  RT_CHECK_EQ_INT(st.at, 1 + RL_ROUTE_BACKOFF_MIN_MS);
  freeReplyObject(empty);
  freeReplyObject(q);
}

/* Not written: resend. Written and lost: it may have run; never resend. */
static void unsent_and_lost(void) {
  rl_route r;
  rl_route_step st;
  redisReply *ask = R("err.ask"), *ok = result();
  RT_REQUIRE(ask && ok);
  rl_route_start(&r, 1, 0, 200, 5, &st);
  rl_route_on_reply(&r, ask, "127.0.0.1", 1, &st);
  RT_CHECK_EQ_INT(rl_route_on_unsent(&r, 2, &st), RL_ROUTE_SEND);
  RT_CHECK(!st.to_addr && !st.asking && st.refresh_map);
  RT_CHECK_EQ_INT(st.at, 2 + RL_ROUTE_BACKOFF_MIN_MS);
  RT_CHECK_EQ_INT(rl_route_on_lost(&r, &st), RL_ROUTE_FAIL);
  RT_CHECK_EQ_INT(st.fail, RL_ROUTE_ELOST);
  RT_CHECK_EQ_INT(rl_route_on_reply(&r, ok, "h", 3, &st), RL_ROUTE_LATE);
  RT_CHECK_EQ_INT(rl_route_on_unsent(&r, 4, &st), RL_ROUTE_LATE);
  freeReplyObject(ask);
  freeReplyObject(ok);
}

/* Random events at random times: no SEND at or past the deadline, no
 * more than K redirects followed, no DONE after the deadline, exactly one
 * DONE or FAIL, and only LATE after it. */
static void invariants(void) {
  static const char *names[] = {"err.moved", "err.ask", "err.tryagain",
                                "err.clusterdown", "err.readonly",
                                "err.crossslot", "err.nonlocal",
                                "unknown.moved", "hostname.moved_unknown",
                                "wait.reply", "err.unknown_command"};
  enum { N = sizeof names / sizeof names[0] };
  redisReply *rep[N];
  for (int i = 0; i < N; i++) RT_REQUIRE((rep[i] = R(names[i])) != NULL);
  uint32_t x = 11;
  int bad = 0, outcomes[5] = {0};
  for (int run = 0; run < 20000; run++) {
    rl_route r;
    rl_route_step st;
    uint64_t now = 100, deadline = 100 + run % 300;
    int k = run % 6, finals = 0;
    rl_route_start(&r, 7, now, deadline, k, &st);
    for (int ev = 0; ev < 30; ev++) {
      x = x * 1103515245u + 12345u;
      now += (x >> 16) % 40;
      int what = (int)((x >> 8) % (N + 3));
      int a;
      if (what < N) a = rl_route_on_reply(&r, rep[what], "h", now, &st);
      else if (what == N) a = rl_route_on_unsent(&r, now, &st);
      else if (what == N + 1) a = rl_route_on_lost(&r, &st);
      else a = rl_route_on_deadline(&r, &st);
      outcomes[a]++;
      if (a == RL_ROUTE_SEND && st.at >= deadline) bad++;
      if (a == RL_ROUTE_DONE && now > deadline) bad++;
      if (r.redirects > k + 1) bad++;
      if (a == RL_ROUTE_SEND && st.to_addr && st.port < 1) bad++;
      if (finals && a != RL_ROUTE_LATE) bad++;
      if (a == RL_ROUTE_DONE || a == RL_ROUTE_FAIL) finals++;
    }
  }
  RT_CHECK_EQ_INT(bad, 0);
  RT_CHECK(outcomes[RL_ROUTE_SEND] && outcomes[RL_ROUTE_DONE] &&
           outcomes[RL_ROUTE_LATE] && outcomes[RL_ROUTE_FAIL]);
  for (int i = 0; i < N; i++) freeReplyObject(rep[i]);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"start_and_result", start_and_result},
      {"late_reply", late_reply},
      {"moved_then_answer", moved_then_answer},
      {"ask_then_tryagain", ask_then_tryagain},
      {"redirect_limit", redirect_limit},
      {"clusterdown_backoff", clusterdown_backoff},
      {"crossslot_readonly_nonlocal", crossslot_readonly_nonlocal},
      {"unknown_endpoints", unknown_endpoints},
      {"unsent_and_lost", unsent_and_lost},
      {"invariants", invariants},
  };
  fprintf(stderr, "replies captured from %s\n", rt_captured_from);
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
