/*
 * The watchdog as a mechanism, without a client, Redis or locks: a bare
 * libuv loop, entries that are plain wheel nodes, and a renewal callback
 * that records what it is handed. It checks that entries fall due about
 * one period after they are armed (never before), in batches of at most
 * the configured size, once each; that a cancelled entry never falls due;
 * that the callback may re-arm what it gets; and that the timer does not
 * keep the loop alive once no entry is armed.
 */
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "harness.h"
#include "watchdog.h"

#define NENT 250
#define PERIOD 60

typedef struct entry {
  rl_wheel_node node; /* first: the node is the entry */
  int fired;
  uint64_t armed_at, fired_at;
} entry;

static entry ents[NENT];
static rl_watchdog wd;
static size_t max_batch, calls;
static int rearm_left; /* re-arm each fired entry this many more times */

static void on_due(rl_wheel_node **due, size_t n, void *arg) {
  (void)arg;
  calls++;
  if (n > max_batch) max_batch = n;
  for (size_t i = 0; i < n; i++) {
    entry *e = (entry *)(void *)due[i];
    RT_CHECK(!e->node.armed);
    e->fired++;
    e->fired_at = uv_now(wd.timer.loop);
  }
  if (rearm_left > 0) {
    rearm_left--;
    for (size_t i = 0; i < n; i++) {
      entry *e = (entry *)(void *)due[i];
      e->armed_at = uv_now(wd.timer.loop);
      rl_watchdog_start(&wd, &e->node);
    }
  }
}

static void on_closed(uv_handle_t *h) { (void)h; }

static void setup(uv_loop_t *loop, size_t batch) {
  memset(ents, 0, sizeof ents);
  max_batch = calls = 0;
  rearm_left = 0;
  RT_REQUIRE(rl_watchdog_init(&wd, loop, PERIOD, batch, on_due, NULL) == 0);
  for (int i = 0; i < NENT; i++) rl_wheel_node_init(&ents[i].node);
}

static void teardown(uv_loop_t *loop) {
  rl_watchdog_close(&wd, on_closed);
  uv_run(loop, UV_RUN_DEFAULT);
  RT_CHECK(uv_loop_close(loop) == 0);
}

/* Every armed entry falls due once, not before its period, in batches. */
static void due_in_batches(void) {
  uv_loop_t loop;
  RT_REQUIRE(uv_loop_init(&loop) == 0);
  setup(&loop, 40);
  uv_update_time(&loop);
  for (int i = 0; i < NENT; i++) {
    ents[i].armed_at = uv_now(&loop);
    rl_watchdog_start(&wd, &ents[i].node);
  }
  uint64_t t0 = rt_now_ms();
  uv_run(&loop, UV_RUN_DEFAULT); /* returns once nothing is armed */
  RT_CHECK(rt_now_ms() - t0 < 30000);
  for (int i = 0; i < NENT; i++) {
    RT_CHECK_EQ_INT(ents[i].fired, 1);
    /* An eighth of a period early at most: see watchdog.c. */
    RT_CHECK(ents[i].fired_at + PERIOD / 8 >= ents[i].armed_at + PERIOD);
  }
  RT_CHECK(max_batch <= 40);
  RT_CHECK(calls >= (NENT + 39) / 40);
  teardown(&loop);
}

/* Cancelled entries never fall due; the others still do. */
static void cancel_is_final(void) {
  uv_loop_t loop;
  RT_REQUIRE(uv_loop_init(&loop) == 0);
  setup(&loop, 100);
  for (int i = 0; i < NENT; i++) rl_watchdog_start(&wd, &ents[i].node);
  for (int i = 0; i < NENT; i += 2) rl_watchdog_cancel(&wd, &ents[i].node);
  uv_run(&loop, UV_RUN_DEFAULT);
  for (int i = 0; i < NENT; i++) RT_CHECK_EQ_INT(ents[i].fired, i % 2);
  teardown(&loop);
}

/* The callback re-arms what it is given: each entry comes back. */
static void rearm_from_callback(void) {
  uv_loop_t loop;
  RT_REQUIRE(uv_loop_init(&loop) == 0);
  setup(&loop, NENT);
  for (int i = 0; i < 10; i++) rl_watchdog_start(&wd, &ents[i].node);
  rearm_left = 2;
  uv_run(&loop, UV_RUN_DEFAULT);
  for (int i = 0; i < 10; i++) RT_CHECK_EQ_INT(ents[i].fired, 3);
  for (int i = 10; i < NENT; i++) RT_CHECK_EQ_INT(ents[i].fired, 0);
  teardown(&loop);
}

/* An entry armed with a short delay falls due before one armed earlier
 * with a long one: the timer follows the earliest. */
static void earliest_first(void) {
  uv_loop_t loop;
  RT_REQUIRE(uv_loop_init(&loop) == 0);
  setup(&loop, 10);
  rl_watchdog_arm(&wd, &ents[0].node, 2000);
  rl_watchdog_arm(&wd, &ents[1].node, 20);
  uv_run(&loop, UV_RUN_ONCE);
  while (ents[1].fired == 0 && ents[0].fired == 0) uv_run(&loop, UV_RUN_ONCE);
  RT_CHECK_EQ_INT(ents[1].fired, 1);
  RT_CHECK_EQ_INT(ents[0].fired, 0);
  rl_watchdog_cancel(&wd, &ents[0].node);
  uv_run(&loop, UV_RUN_DEFAULT);
  RT_CHECK_EQ_INT(ents[0].fired, 0);
  teardown(&loop);
}

int main(int argc, char **argv) {
  static const rt_test tests[] = {
      {"due_in_batches", due_in_batches},
      {"cancel_is_final", cancel_is_final},
      {"rearm_from_callback", rearm_from_callback},
      {"earliest_first", earliest_first},
  };
  return rt_main(argc, argv, tests, sizeof tests / sizeof tests[0]);
}
