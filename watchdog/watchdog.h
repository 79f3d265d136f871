/*
 * The watchdog's timing: one hashed timer wheel holds one entry per held
 * lock (not per reentrant hold), driven by one uv_timer_t that is armed
 * only while the wheel has entries, for the earliest of them. When entries
 * fall due, it hands them, in batches, to the renewal routine it was
 * given; what a renewal is (which masters, which script, when a lock is
 * lost) is the lock layer's business, so this folder knows nothing of
 * locks, clients or Redis, and can be tested with a bare loop. Loop thread
 * only.
 */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "wheel.h"

/*
 * Called with up to batch due entries at a time. Each entry is disarmed;
 * the callee re-arms it (rl_watchdog_arm) when it wants it again. The
 * array is only valid during the call.
 */
typedef void (*rl_watchdog_due_cb)(rl_wheel_node **due, size_t n, void *arg);

typedef struct rl_watchdog {
  rl_wheel wheel;
  uv_timer_t timer;   /* timer.data is free for the owner */
  uint64_t timer_due; /* uv_now time the timer fires at, when active */
  uint64_t period_ms; /* the renewal period */
  size_t batch;       /* at most this many entries per callback */
  rl_watchdog_due_cb on_due;
  void *arg;
  rl_wheel_node **due; /* collected by one advance of the wheel */
  size_t ndue, capdue;
  int closed;
} rl_watchdog;

/* period_ms >= 1, batch >= 1. 0, or RLOCK_ENOMEM (-6) with no handle
 * left on the loop. */
int rl_watchdog_init(rl_watchdog *w, uv_loop_t *loop, uint64_t period_ms,
                     size_t batch, rl_watchdog_due_cb on_due, void *arg);

/* Arms an entry for one period from now (its node must have been through
 * rl_wheel_node_init once). */
void rl_watchdog_start(rl_watchdog *w, rl_wheel_node *n);

/* Arms (or moves) an entry to fall due delay_ms from now. */
void rl_watchdog_arm(rl_watchdog *w, rl_wheel_node *n, uint64_t delay_ms);

/* rl_watchdog_start for many entries in one callback of the loop (whose
 * time does not move within it): rl_watchdog_start_due gives the time they
 * fall due, rl_watchdog_start_at arms each for it without touching the
 * timer, and rl_watchdog_schedule(w, due) sets the timer once after them.
 * A renewal call re-arms a hundred entries, and reading the loop's time
 * and the timer's state for each was a tenth of its instructions. */
uint64_t rl_watchdog_start_due(const rl_watchdog *w);
void rl_watchdog_start_at(rl_watchdog *w, rl_wheel_node *n, uint64_t due);
void rl_watchdog_schedule(rl_watchdog *w, uint64_t due);

/* Disarms an entry; O(1), a no-op when it is not armed. */
void rl_watchdog_cancel(rl_watchdog *w, rl_wheel_node *n);

/* Stops everything and closes the timer; close_cb gets the timer handle.
 * Entries still armed are forgotten, not called. */
void rl_watchdog_close(rl_watchdog *w, uv_close_cb close_cb);

#endif
