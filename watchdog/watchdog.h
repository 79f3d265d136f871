/*
 * The watchdog: keeps locks taken with RLOCK_WATCHDOG alive while they are
 * held, and says so when it cannot. One hashed timer wheel holds one entry
 * per held lock (not per reentrant hold), driven by one uv_timer_t that is
 * armed only while the wheel has entries, for the earliest of them. Due
 * locks are renewed in batches: one script call per batch and master, so
 * the cost grows with batches, not with locks. Loop thread only.
 */
#ifndef RL_WATCHDOG_H
#define RL_WATCHDOG_H

#include <stdint.h>
#include <uv.h>

#include "wheel.h"

struct rlock_client;
struct rl_hold;

typedef struct rl_watchdog {
  struct rlock_client *c;
  rl_wheel wheel;
  uv_timer_t timer;
  uint64_t timer_due; /* uv_now time the timer fires at, when active */
  uint64_t period_ms; /* watchdog_timeout_ms / 3 */
  struct rl_hold **due; /* collected by one advance of the wheel */
  size_t ndue, capdue;
  int closed;
} rl_watchdog;

int rl_watchdog_init(rl_watchdog *w, struct rlock_client *c, uv_loop_t *loop);

/* Starts renewing a hold: its first renewal is one period from now. */
void rl_watchdog_start(rl_watchdog *w, struct rl_hold *h);

/* Stops renewing a hold; O(1). Renewals already sent are harmless: the
 * renew script never recreates a key, and their answers are ignored. */
void rl_watchdog_cancel(rl_watchdog *w, struct rl_hold *h);

/* Stops everything and closes the timer; close_cb gets the timer handle. */
void rl_watchdog_close(rl_watchdog *w, uv_close_cb close_cb);

/* Marks a hold lost, stops its renewal and runs the handle's lost-lock
 * callback. */
void rl_hold_lost(struct rlock_client *c, struct rl_hold *h);

#endif
