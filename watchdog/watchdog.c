/*
 * Watchdog driver; see watchdog.h.
 *
 * One timer, armed for the wheel's next due time and only while the wheel
 * has entries: an idle client costs no wake-ups. When it fires, the wheel
 * is advanced to now, then a tick at a time (to each tick's end) while
 * fewer than BURST batches are collected, up to an eighth of a period
 * ahead: renewing a little early is harmless, and it fills batches that
 * would otherwise go out half empty, one timer tick apart. It used to
 * advance a whole eighth at once, which with a million locks sent 1,250
 * renewal calls in one burst every 1.25 s: megabytes of rounds allocated
 * and freed at once (page faults), and every hold read twice far apart in
 * time (cache misses); in steps, a tick or two of due entries go out at a
 * time and their holds are still in cache when the answers come. The due
 * entries are handed over in batches after the advance, never from
 * inside it, so that the renewal routine may arm and cancel freely.
 */
#include "watchdog.h"

#include <stdlib.h>
#include <string.h>

#define TICK_MS 10
#define SLOTS 1024
#define BURST 16 /* batches collected before the advance stops early */

static rl_watchdog *of(uv_timer_t *t) {
  return (rl_watchdog *)(void *)((char *)t - offsetof(rl_watchdog, timer));
}

static void on_timer(uv_timer_t *t);

/* Arms the timer for due, unless it is already armed for earlier. */
static void schedule(rl_watchdog *w, uint64_t due) {
  uint64_t now = uv_now(w->timer.loop);
  if (uv_is_active((uv_handle_t *)&w->timer) && w->timer_due <= due) return;
  w->timer_due = due;
  uv_timer_start(&w->timer, on_timer, due > now ? due - now : 0, 0);
}

void rl_watchdog_arm(rl_watchdog *w, rl_wheel_node *n, uint64_t delay_ms) {
  if (w->closed) return;
  uint64_t due = uv_now(w->timer.loop) + delay_ms;
  rl_wheel_insert(&w->wheel, n, due);
  schedule(w, due);
}

void rl_watchdog_start(rl_watchdog *w, rl_wheel_node *n) {
  rl_watchdog_arm(w, n, w->period_ms);
}

uint64_t rl_watchdog_start_due(const rl_watchdog *w) {
  return uv_now(w->timer.loop) + w->period_ms;
}

void rl_watchdog_start_at(rl_watchdog *w, rl_wheel_node *n, uint64_t due) {
  if (w->closed) return;
  rl_wheel_insert(&w->wheel, n, due);
}

void rl_watchdog_schedule(rl_watchdog *w, uint64_t due) {
  if (w->closed) return;
  schedule(w, due);
}

void rl_watchdog_cancel(rl_watchdog *w, rl_wheel_node *n) {
  if (w->closed) return;
  rl_wheel_cancel(&w->wheel, n);
  /* The timer may fire for nothing; it then re-arms or stays off. */
}

static void collect(rl_wheel_node *node, void *arg) {
  rl_watchdog *w = arg;
  if (w->ndue == w->capdue) {
    size_t cap = w->capdue ? w->capdue * 2 : 256;
    rl_wheel_node **d = realloc(w->due, cap * sizeof *d);
    if (d == NULL) {
      /* Out of memory: this entry comes back on the next tick. */
      rl_wheel_insert(&w->wheel, node, uv_now(w->timer.loop) + TICK_MS);
      return;
    }
    w->due = d;
    w->capdue = cap;
  }
  w->due[w->ndue++] = node;
}

/* Advances the wheel from now, collecting what falls due, as above. */
static void collect_due(rl_watchdog *w, uint64_t now) {
  uint64_t end = now + w->period_ms / 8, to = now;
  w->ndue = 0;
  for (;;) {
    rl_wheel_advance(&w->wheel, to, collect, w);
    if (to >= end || w->ndue >= BURST * w->batch ||
        rl_wheel_count(&w->wheel) == 0)
      break;
    to = ((to + 1) / TICK_MS + 1) * TICK_MS - 1; /* the next tick's end */
    if (to > end) to = end;
  }
}

static void on_timer(uv_timer_t *t) {
  rl_watchdog *w = of(t);
  uint64_t now = uv_now(t->loop);
  collect_due(w, now);
  /* The callback may arm entries (and so reschedule); it never advances
   * the wheel, so w->due stays as collected. */
  size_t n = w->ndue;
  for (size_t i = 0; i < n && !w->closed; i += w->batch)
    w->on_due(w->due + i, n - i < w->batch ? n - i : w->batch, w->arg);
  w->ndue = 0;
  if (w->closed) return;
  uint64_t next = rl_wheel_next_ms(&w->wheel, now);
  if (next != UINT64_MAX) schedule(w, now + (next ? next : 1));
}

int rl_watchdog_init(rl_watchdog *w, uv_loop_t *loop, uint64_t period_ms,
                     size_t batch, rl_watchdog_due_cb on_due, void *arg) {
  memset(w, 0, sizeof *w);
  w->period_ms = period_ms ? period_ms : 1;
  w->batch = batch ? batch : 1;
  w->on_due = on_due;
  w->arg = arg;
  /* The wheel first: on failure no handle is on the loop yet. */
  int rc = rl_wheel_init(&w->wheel, SLOTS, TICK_MS, uv_now(loop));
  if (rc != 0) return rc; /* RLOCK_ENOMEM: the arguments are constants */
  uv_timer_init(loop, &w->timer);
  return 0;
}

void rl_watchdog_close(rl_watchdog *w, uv_close_cb close_cb) {
  w->closed = 1;
  uv_timer_stop(&w->timer);
  rl_wheel_free(&w->wheel);
  free(w->due);
  w->due = NULL;
  uv_close((uv_handle_t *)&w->timer, close_cb);
}
