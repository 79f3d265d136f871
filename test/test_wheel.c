/*
 * Unit tests for the watchdog's timer wheel (watchdog/wheel.c). The wheel
 * takes time only as arguments, so every case drives it with a made-up
 * clock and runs in microseconds. Each case prints one line, "PASS: name"
 * or "FAIL: name (file:line: expr)", and the exit status is 1 if any case
 * failed. There is no test framework yet, hence the small harness below.
 */
#include "wheel.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int g_failed;
static const char *g_file;
static int g_line;
static const char *g_expr;

/* Records the first failed check of a case and leaves the case. */
#define CHECK(e)                                                        \
  do {                                                                  \
    if (!(e)) {                                                         \
      if (!g_failed) {                                                  \
        g_failed = 1;                                                   \
        g_file = __FILE__;                                              \
        g_line = __LINE__;                                              \
        g_expr = #e;                                                    \
      }                                                                 \
      return;                                                           \
    }                                                                   \
  } while (0)

#define container_of(p, type, member) \
  ((type *)((char *)(p) - offsetof(type, member)))

enum { ACT_NONE, ACT_CANCEL_OTHER, ACT_REINSERT, ACT_REINSERT_CANCEL,
       ACT_INSERT_OTHER };

/* A stand-in for a held lock: the node plus what its callbacks saw. */
typedef struct item {
  rl_wheel_node node;
  int action;
  struct item *other;   /* the node ACT_CANCEL_OTHER / ACT_INSERT_OTHER acts on */
  uint64_t arg_ms;      /* the expire_ms that the re-inserting actions use */
  int fires;
  uint64_t fired_at;
  uint64_t fired_expire; /* its expire_ms when it last fired */
  uint64_t fired_due;   /* its due_ms when it last fired */
  int bad_state;        /* set if a callback saw a wrong node state */
  int shadow;           /* 1 while the test believes the node armed */
  unsigned gen;         /* the advance during which it was last inserted */
  uint64_t due_ms;      /* max(expire_ms, the wheel's time) when inserted */
  unsigned fired_gen;   /* the advance during which it last fired */
} item;

#define LOG_MAX 20000

static rl_wheel W;
static int W_live;
static uint64_t C_now;      /* the now_ms of the advance in progress */
static unsigned C_gen;      /* counts advances, for item.gen */
static int C_bad_arg;
static size_t C_nlog;
static item *C_log[LOG_MAX];

static int setup(unsigned nslots, uint64_t tick_ms, uint64_t now_ms) {
  int r;

  if (W_live)
    rl_wheel_free(&W);
  r = rl_wheel_init(&W, nslots, tick_ms, now_ms);
  W_live = (r == 0);
  C_now = now_ms;
  C_gen = 0;
  C_bad_arg = 0;
  C_nlog = 0;
  return r;
}

static void item_init(item *it) {
  rl_wheel_node_init(&it->node);
  it->action = ACT_NONE;
  it->other = NULL;
  it->arg_ms = 0;
  it->fires = 0;
  it->fired_at = 0;
  it->fired_expire = 0;
  it->bad_state = 0;
  it->shadow = 0;
  it->gen = 0;
  it->fired_gen = 0;
}

static void arm(item *it, uint64_t expire_ms) {
  it->gen = C_gen;
  it->due_ms = expire_ms > C_now ? expire_ms : C_now;
  it->shadow = 1;
  rl_wheel_insert(&W, &it->node, expire_ms);
}

static void disarm(item *it) {
  it->shadow = 0;
  rl_wheel_cancel(&W, &it->node);
}

static void on_fire(rl_wheel_node *node, void *arg) {
  item *it = container_of(node, item, node);

  if (arg != &W)
    C_bad_arg = 1;
  /* Disarmed before the call; never cancelled; once per advance. */
  if (node->armed || node->next != NULL || node->prev != NULL)
    it->bad_state = 1;
  if (!it->shadow || it->fired_gen == C_gen)
    it->bad_state = 1;
  it->shadow = 0;
  it->fired_gen = C_gen;
  it->fired_expire = node->expire_ms;
  it->fired_due = it->due_ms;
  it->fires++;
  it->fired_at = C_now;
  if (C_nlog < LOG_MAX)
    C_log[C_nlog++] = it;
  switch (it->action) {
  case ACT_CANCEL_OTHER:
    disarm(it->other);
    break;
  case ACT_REINSERT:
    arm(it, it->arg_ms);
    break;
  case ACT_REINSERT_CANCEL:
    arm(it, it->arg_ms);
    disarm(it);
    break;
  case ACT_INSERT_OTHER:
    arm(it->other, it->arg_ms);
    break;
  }
}

static size_t adv(uint64_t now_ms) {
  C_now = now_ms;
  C_gen++;
  return rl_wheel_advance(&W, now_ms, on_fire, &W);
}

static uint64_t round_up(uint64_t ms, uint64_t tick_ms) {
  return (ms + tick_ms - 1) / tick_ms * tick_ms;
}

static void test_init_args(void) {
  CHECK(rl_wheel_init(&W, 0, 10, 0) == RLOCK_EINVAL);
  CHECK(rl_wheel_init(&W, 8, 0, 0) == RLOCK_EINVAL);
  CHECK(rl_wheel_init(NULL, 8, 10, 0) == RLOCK_EINVAL);
  CHECK(setup(1, 1, 12345) == 0);
  CHECK(rl_wheel_count(&W) == 0);
  CHECK(adv(99999) == 0);
}

/* Advancing every ms, each node fires exactly at its expire_ms, once. */
static void test_fire_exact_ms(void) {
  static item it[300];
  uint64_t now;
  size_t i;

  CHECK(setup(8, 10, 0) == 0);
  for (i = 0; i < 300; i++) {
    item_init(&it[i]);
    arm(&it[i], (i * 7919) % 300);      /* a permutation of 0..299 */
  }
  CHECK(rl_wheel_count(&W) == 300);
  for (now = 0; now <= 310; now++)
    adv(now);
  CHECK(rl_wheel_count(&W) == 0);
  CHECK(C_nlog == 300);
  for (i = 0; i < 300; i++) {
    CHECK(it[i].fires == 1);
    CHECK(it[i].fired_at == it[i].node.expire_ms);
    CHECK(it[i].bad_state == 0);
  }
  for (i = 1; i < C_nlog; i++)
    CHECK(C_log[i - 1]->node.expire_ms <= C_log[i]->node.expire_ms);
  CHECK(C_bad_arg == 0);
}

/* Advancing once per tick, a node fires on the first advance at or after
 * its expire_ms: never before it, and less than one tick after it. */
static void test_fire_within_tick(void) {
  static item it[200];
  uint64_t now;
  size_t i;

  CHECK(setup(16, 7, 3) == 0);
  for (i = 0; i < 200; i++) {
    item_init(&it[i]);
    arm(&it[i], 3 + (i * 37) % 500);
  }
  for (now = 3; now <= 3 + 520; now += 7) {
    adv(now);
    for (i = 0; i < 200; i++)
      CHECK(it[i].fires == (it[i].node.expire_ms <= now));
  }
  for (i = 0; i < 200; i++) {
    CHECK(it[i].fired_at >= it[i].node.expire_ms);
    CHECK(it[i].fired_at < it[i].node.expire_ms + 7);
  }
}

static void test_cancel_before_due(void) {
  item a, b, never;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  item_init(&never);
  arm(&a, 50);
  arm(&b, 55);
  CHECK(adv(30) == 0);
  disarm(&a);
  CHECK(a.node.armed == 0 && a.node.next == NULL && a.node.prev == NULL);
  CHECK(rl_wheel_count(&W) == 1);
  rl_wheel_cancel(&W, &a.node);         /* twice: a no-op */
  rl_wheel_cancel(&W, &never.node);     /* never armed: a no-op */
  CHECK(rl_wheel_count(&W) == 1);
  CHECK(adv(1000) == 1);
  CHECK(a.fires == 0);
  CHECK(b.fires == 1);
  CHECK(adv(100000) == 0);
  CHECK(a.fires == 0);
}

static void test_rearm_moves(void) {
  item a, b;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  arm(&a, 50);
  arm(&a, 120);                         /* later */
  CHECK(rl_wheel_count(&W) == 1);
  CHECK(adv(119) == 0);
  CHECK(adv(120) == 1);
  CHECK(a.fires == 1 && a.fired_at == 120);
  arm(&b, 500);
  arm(&b, 130);                         /* earlier */
  CHECK(rl_wheel_count(&W) == 1);
  CHECK(adv(129) == 0);
  CHECK(adv(130) == 1);
  CHECK(adv(1000) == 0);
  CHECK(b.fires == 1 && b.fired_at == 130);
}

/* 10000 nodes due together in one slot all fire; nodes in the same slot a
 * revolution later do not fire with them. */
static void test_many_in_one_slot(void) {
  static item it[10000], later[100];
  size_t i;

  CHECK(setup(8, 10, 0) == 0);
  for (i = 0; i < 10000; i++) {
    item_init(&it[i]);
    arm(&it[i], 77);
  }
  for (i = 0; i < 100; i++) {
    item_init(&later[i]);
    arm(&later[i], 77 + 80);            /* slot 7 again, one turn later */
  }
  CHECK(rl_wheel_count(&W) == 10100);
  CHECK(adv(76) == 0);
  CHECK(adv(77) == 10000);
  CHECK(rl_wheel_count(&W) == 100);
  for (i = 0; i < 10000; i++)
    CHECK(it[i].fires == 1);
  for (i = 0; i < 100; i++)
    CHECK(later[i].fires == 0);
  CHECK(adv(156) == 0);
  CHECK(adv(157) == 100);
  CHECK(rl_wheel_count(&W) == 0);
}

/* A node several revolutions ahead waits out its rounds. */
static void test_rounds(void) {
  item a, b;
  uint64_t now;

  CHECK(setup(4, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  arm(&a, 3 * 40 + 15);                 /* tick 13: slot 1, three turns on */
  arm(&b, 15);                          /* tick 1: the same slot, now */
  CHECK(a.node.rounds == 3);
  CHECK(b.node.rounds == 0);
  for (now = 0; now < 135; now++) {
    adv(now);
    CHECK(a.fires == 0);
  }
  CHECK(b.fires == 1 && b.fired_at == 15);
  CHECK(adv(135) == 1);
  CHECK(a.fires == 1);
  /* The same, advanced a tick at a time from an odd start. */
  CHECK(setup(3, 5, 1001) == 0);
  item_init(&a);
  arm(&a, 1001 + 5 * 3 * 7 + 2);        /* seven turns on */
  for (now = 1001; now < 1001 + 105; now += 5) {
    adv(now);
    CHECK(a.fires == 0);
  }
  CHECK(adv(1001 + 107) == 1);
}

/* A callback cancels a node due in the same tick, and one due later in the
 * same advance: neither fires. */
static void test_cancel_in_callback(void) {
  item a, b, c;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  item_init(&c);
  a.action = b.action = ACT_CANCEL_OTHER;
  a.other = &b;
  b.other = &a;
  arm(&a, 42);
  arm(&b, 42);
  CHECK(adv(42) == 1);
  CHECK(a.fires + b.fires == 1);
  CHECK(rl_wheel_count(&W) == 0);
  CHECK(adv(1000) == 0);
  CHECK(a.fires + b.fires == 1);

  item_init(&a);
  item_init(&b);
  a.action = ACT_CANCEL_OTHER;
  a.other = &c;
  arm(&a, 1010);
  arm(&c, 1055);                        /* later, same advance */
  arm(&b, 1060);
  CHECK(adv(2000) == 2);
  CHECK(a.fires == 1 && b.fires == 1 && c.fires == 0);
  CHECK(rl_wheel_count(&W) == 0);
}

/* A callback re-inserts its own node and then cancels it. */
static void test_reinsert_then_cancel_self(void) {
  item a;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  a.action = ACT_REINSERT_CANCEL;
  a.arg_ms = 60;
  arm(&a, 20);
  CHECK(adv(30) == 1);
  CHECK(rl_wheel_count(&W) == 0);
  CHECK(a.node.armed == 0);
  CHECK(adv(10000) == 0);
  CHECK(a.fires == 1);
}

/* A callback re-arms its node in the past: one fire per advance, even over
 * jumps of exactly one revolution and of several. */
static void test_reinsert_past_no_loop(void) {
  static const uint64_t steps[] = {0, 0, 1, 10, 80, 81, 800, 7};
  item a;
  uint64_t now = 100;
  size_t i;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  a.action = ACT_REINSERT;
  a.arg_ms = 5;
  arm(&a, 50);
  for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    now += steps[i];
    CHECK(adv(now) == 1);
    CHECK((size_t)a.fires == i + 1);
    CHECK(rl_wheel_count(&W) == 1);
    CHECK(rl_wheel_next_ms(&W, now) == 0);
  }
}

/* A node inserted by a callback, already due, waits for the next advance. */
static void test_insert_due_from_callback(void) {
  item a, b;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  a.action = ACT_INSERT_OTHER;
  a.other = &b;
  a.arg_ms = 25;                        /* due, and in a tick still ahead */
  arm(&a, 15);
  CHECK(adv(200) == 1);
  CHECK(b.fires == 0);
  CHECK(rl_wheel_count(&W) == 1);
  CHECK(adv(200) == 1);
  CHECK(b.fires == 1 && b.fired_at == 200);
}

/* Jumps of 10^12 ticks must not walk every tick (the case would hang), and
 * must fire exactly the nodes that fell due. */
static void test_large_jump(void) {
  static item it[50];
  item far;
  const uint64_t jump = 1000000000000ull;
  uint64_t now;
  size_t i;

  CHECK(setup(64, 1, 0) == 0);
  CHECK(adv(jump) == 0);                /* empty */
  item_init(&far);
  arm(&far, jump + 5);
  CHECK(adv(jump + 4) == 0);
  CHECK(adv(jump + 5) == 1);

  CHECK(setup(64, 10, 0) == 0);
  for (i = 0; i < 50; i++) {
    item_init(&it[i]);
    arm(&it[i], i * 97);                /* up to about 7.5 turns ahead */
  }
  item_init(&far);
  arm(&far, 10 * jump + 3 * 640 + 333); /* 3.5 turns past the jump */
  CHECK(adv(10 * jump) == 50);
  for (i = 0; i < 50; i++)
    CHECK(it[i].fires == 1);
  CHECK(rl_wheel_count(&W) == 1);
  for (now = 10 * jump; now < far.node.expire_ms; now += 3) {
    adv(now);
    CHECK(far.fires == 0);
  }
  adv(far.node.expire_ms);
  CHECK(far.fires == 1 && far.fired_at == far.node.expire_ms);
}

static void test_next_ms(void) {
  static item it[40];
  item a, b;
  uint64_t now, d, e;
  size_t i, rounds = 0;

  CHECK(setup(8, 10, 0) == 0);
  CHECK(rl_wheel_next_ms(&W, 0) == UINT64_MAX);
  item_init(&a);
  item_init(&b);
  arm(&a, 35);
  d = rl_wheel_next_ms(&W, 0);
  CHECK(d > 0 && d <= 40);
  CHECK(rl_wheel_next_ms(&W, 35) == 0);
  CHECK(rl_wheel_next_ms(&W, 50) == 0); /* overdue, not yet advanced */
  arm(&b, 8 * 80 + 3);                  /* eight turns ahead */
  CHECK(rl_wheel_next_ms(&W, 0) <= 40);
  rl_wheel_cancel(&W, &a.node);
  d = rl_wheel_next_ms(&W, 0);
  CHECK(d > 0 && d <= 8 * 80 + 3);
  arm(&a, 0);                           /* in the past */
  CHECK(rl_wheel_next_ms(&W, 0) == 0);
  rl_wheel_cancel(&W, &a.node);
  rl_wheel_cancel(&W, &b.node);
  CHECK(rl_wheel_next_ms(&W, 0) == UINT64_MAX);

  /* A driver sleeping exactly next_ms each time fires every node within a
   * tick of its expire_ms, and does not spin. */
  CHECK(setup(8, 10, 5) == 0);
  for (i = 0; i < 40; i++) {
    item_init(&it[i]);
    arm(&it[i], 5 + (i * 131) % 1500);
  }
  now = 5;
  adv(now);                             /* it[0] is due at once */
  CHECK(it[0].fires == 1);
  while (rl_wheel_count(&W) > 0) {
    d = rl_wheel_next_ms(&W, now);
    CHECK(d > 0 && d != UINT64_MAX);
    now += d;
    adv(now);
    CHECK(++rounds < 200);
  }
  for (i = 0; i < 40; i++) {
    e = it[i].node.expire_ms;
    CHECK(it[i].fires == 1);
    CHECK(it[i].fired_at >= e && it[i].fired_at <= round_up(e, 10));
  }

  /* From before a later tick, the answer is that tick's start (its slot's
   * nodes are not read one by one); from inside it, the node's own time. */
  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  arm(&a, 35);
  CHECK(rl_wheel_next_ms(&W, 0) == 30);
  adv(30);
  CHECK(a.fires == 0);
  CHECK(rl_wheel_next_ms(&W, 30) == 5);
  adv(35);
  CHECK(a.fires == 1 && a.fired_at == 35);

  /* An advance that ends at a tick's last ms leaves nothing due in that
   * tick, so the next one skips its slot (wheel.h: rest); a node made
   * overdue there afterwards is still found. */
  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  arm(&a, 38);
  arm(&b, 8 * 10 + 35); /* the same slot, a revolution on */
  CHECK(adv(39) == 1 && a.fires == 1);
  CHECK(W.rest == 0);
  CHECK(rl_wheel_next_ms(&W, 39) == 8 * 10 + 30 - 39);
  arm(&a, 37); /* already past */
  CHECK(W.rest == 1);
  CHECK(rl_wheel_next_ms(&W, 39) == 0);
  CHECK(adv(40) == 1 && a.fires == 2 && b.fires == 0);
  CHECK(adv(8 * 10 + 35) == 1 && b.fires == 1);
}

static void test_count(void) {
  item a, b, c;

  CHECK(setup(8, 10, 0) == 0);
  item_init(&a);
  item_init(&b);
  item_init(&c);
  CHECK(rl_wheel_count(&W) == 0);
  arm(&a, 10);
  arm(&b, 20);
  arm(&c, 30);
  arm(&c, 31);                          /* re-arm does not count twice */
  CHECK(rl_wheel_count(&W) == 3);
  rl_wheel_cancel(&W, &b.node);
  CHECK(rl_wheel_count(&W) == 2);
  CHECK(adv(10) == 1);
  CHECK(rl_wheel_count(&W) == 1);
  CHECK(adv(31) == 1);
  CHECK(rl_wheel_count(&W) == 0);
}

/* now + r - back, clamped at 0. */
static uint64_t around(uint64_t now, uint64_t r, uint64_t back) {
  return now + r >= back ? now + r - back : 0;
}

/* Random inserts, cancels, callback cancels and re-arms, and advances of
 * every size, checked against the definition after every operation. */
static void test_random_model(void) {
  enum { N = 64 };
  static item it[N];
  unsigned seed = 12345, nslots, round, op;
  uint64_t tick, rev, now, last_tick, d, min_due;
  size_t i, armed, fired;
  item *f;

#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 8) & 0xffffff)
  for (round = 0; round < 300; round++) {
    nslots = 1 + RND() % 16;
    tick = 1 + RND() % 7;
    rev = tick * nslots;
    now = RND() % 1000;
    CHECK(setup(nslots, tick, now) == 0);
    for (i = 0; i < N; i++)
      item_init(&it[i]);
    for (op = 0; op < 400; op++) {
      i = RND() % N;
      switch (RND() % 4) {
      case 0:
        arm(&it[i], around(now, RND() % (rev * 4), tick * 3));
        it[i].action = (int[]){ACT_NONE, ACT_NONE, ACT_REINSERT,
                               ACT_CANCEL_OTHER}[RND() % 4];
        it[i].other = &it[RND() % N];
        it[i].arg_ms = around(now, RND() % (rev * 3), tick * 2);
        break;
      case 1:
        disarm(&it[i]);
        break;
      default:
        now += RND() % 8 == 0 ? RND() % (rev * 5) : RND() % 5;
        C_nlog = 0;
        fired = adv(now);
        CHECK(fired == C_nlog);
        CHECK(C_bad_arg == 0);
        last_tick = 0;
        for (i = 0; i < C_nlog; i++) {
          f = C_log[i];
          CHECK(f->fired_at == now && f->bad_state == 0);
          CHECK(f->fired_expire <= now);
          /* Fired in order of ticks, overdue inserts counting as due
           * on the wheel's tick when they were inserted. */
          CHECK(f->fired_due / tick >= last_tick);
          last_tick = f->fired_due / tick;
        }
        break;
      }
      armed = 0;
      min_due = UINT64_MAX;
      for (i = 0; i < N; i++) {
        CHECK(it[i].node.armed == it[i].shadow);
        if (!it[i].node.armed)
          continue;
        armed++;
        /* Nothing armed before the last advance may be left overdue. */
        if (it[i].gen != C_gen)
          CHECK(it[i].node.expire_ms > now);
        if (it[i].node.expire_ms < min_due)
          min_due = it[i].node.expire_ms;
      }
      CHECK(rl_wheel_count(&W) == armed);
      d = rl_wheel_next_ms(&W, now);
      if (armed == 0) {
        CHECK(d == UINT64_MAX);
      } else {
        CHECK(now + d <= (min_due <= now ? now : round_up(min_due, tick)));
        CHECK(d > 0 || min_due <= now);
      }
    }
  }
#undef RND
}

int main(void) {
  static const struct {
    const char *name;
    void (*fn)(void);
  } cases[] = {
    {"init_args", test_init_args},
    {"fire_exact_ms", test_fire_exact_ms},
    {"fire_within_tick", test_fire_within_tick},
    {"cancel_before_due", test_cancel_before_due},
    {"rearm_moves", test_rearm_moves},
    {"many_in_one_slot", test_many_in_one_slot},
    {"rounds", test_rounds},
    {"cancel_in_callback", test_cancel_in_callback},
    {"reinsert_then_cancel_self", test_reinsert_then_cancel_self},
    {"reinsert_past_no_loop", test_reinsert_past_no_loop},
    {"insert_due_from_callback", test_insert_due_from_callback},
    {"large_jump", test_large_jump},
    {"next_ms", test_next_ms},
    {"count", test_count},
    {"random_model", test_random_model},
  };
  size_t i;
  int failures = 0;

  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    g_failed = 0;
    W_live = 0;
    cases[i].fn();
    if (W_live)
      rl_wheel_free(&W);
    W_live = 0;
    if (g_failed) {
      failures++;
      printf("FAIL: %s (%s:%d: %s)\n", cases[i].name, g_file, g_line, g_expr);
    } else {
      printf("PASS: %s\n", cases[i].name);
    }
  }
  return failures ? 1 : 0;
}
