/*
 * A blocking call's way to the loop and back, and the checks of its
 * arguments that every kind's calls share: a lease the client accepts, a
 * wait. The public calls (lib/api/) and the family's (lib/family/) build
 * a request and hand it to rl_req_call, which posts it (or starts it on
 * the caller's thread when the loop sleeps: fast.c) and waits on the
 * calling thread's waiter.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fast.h"
#include "lock.h"
#include "options.h"
#include "util.h"
#include "wait.h"

/* A lease must be able to leave validity at all (longer than the drift
 * allowance, lease * drift_factor + 2 ms), and no longer than the
 * deployment's longest lease, which the restart quarantine covers. */
int rl_lease_fixed_check(const rlock *lock, int64_t lease_ms) {
  rl_client *c = lock->client;
  char why[240];
  int n = -1;
  if (lease_ms > c->opts.max_lease_ms && lease_ms <= RL_LEASE_MAX_MS) {
    n = snprintf(why, sizeof why,
                 "lease_ms %lld is longer than max_lease_ms %lld (the "
                 "deployment's longest lease)",
                 (long long)lease_ms, (long long)c->opts.max_lease_ms);
  } else if (lease_ms > RL_LEASE_MAX_MS) {
    n = snprintf(why, sizeof why, "lease_ms %lld is longer than 30 days",
                 (long long)lease_ms);
  } else if (lease_ms <= 0) {
    n = snprintf(why, sizeof why,
                 "lease_ms %lld: not a positive number of ms (nor, where "
                 "taken, RLOCK_WATCHDOG)",
                 (long long)lease_ms);
  } else if (lease_ms <= rl_drift_ms(c, lease_ms)) {
    int64_t min = lease_ms;
    while (min <= rl_drift_ms(c, min)) min++; /* drift_factor < 0.5 */
    n = snprintf(why, sizeof why,
                 "lease_ms %lld is too short: a lease must outlast its "
                 "drift allowance (lease_ms * drift_factor + 2 ms), so it "
                 "is at least %lld ms, and in practice the round trip to a "
                 "majority too",
                 (long long)lease_ms, (long long)min);
  }
  if (n < 0) return 1;
  rl_client_note_error(c, why, (size_t)n < sizeof why ? (size_t)n
                                                       : sizeof why - 1);
  return 0;
}

int rl_lease_check(const rlock *lock, int64_t lease_ms) {
  return lease_ms == RLOCK_WATCHDOG || rl_lease_fixed_check(lock, lease_ms);
}

int rl_wait_check(const rlock *lock, int64_t wait_ms) {
  if (wait_ms == RLOCK_WAIT_FOREVER || wait_ms >= 0) return 1;
  char why[120];
  int n = snprintf(why, sizeof why,
                   "wait_ms %lld: not RLOCK_WAIT_FOREVER (-1) or a number of "
                   "ms from 0",
                   (long long)wait_ms);
  rl_client_note_error(lock->client, why, (size_t)n);
  return 0;
}

/*
 * A reply from a nearby master often comes back sooner than a sleeping
 * thread can be woken, so a blocking call that is alone (the only one of
 * its client in flight, and no other thread of the process spinning) and
 * that the loop thread serves spins for a short while on its request's
 * end before it sleeps. With more calls in flight it sleeps at once:
 * spinners would take the CPU that the loop thread and the masters need,
 * and a busy loop wakes sleepers quickly anyway. Nor with more than one
 * master: on the 2-core machine of README's figures, with the masters on
 * the same machine, a 200 us spin made N = 5 take 530-580 us a pair where
 * sleeping at once took 340-410 us (N = 3: 410-430 against 230-240),
 * while at N = 1 it saved 5-10 us a pair.
 *
 * A call in its own round (fast.c) does not spin: it sleeps in poll(2)
 * on its masters' sockets, whose reply wakes it on the CPU that ran the
 * master. Spinning there took the CPU that the master and a waiter of
 * another process needed for a hand-off: 8 interleaved rounds each of
 * bench_contention 2 1 2 2 1 pubsub (N = 1), hand-off between processes
 * p50 236 us with a 200 us spin against 165 without (raw floor 118-120),
 * while bench_latency's N = 1 pair took 72.8 us against 74.8.
 */
#define RL_SPIN_NS 200000
static atomic_int spinners;

/* 1 if this call may spin: it is alone, with one master, and no other
 * thread spins. spin_end(1) after. */
static int spin_begin(rl_client *c) {
  if (c->nmasters > 1 ||
      atomic_load_explicit(&c->blocking, memory_order_relaxed) != 1)
    return 0;
  if (atomic_fetch_add(&spinners, 1) == 0) return 1;
  atomic_fetch_sub(&spinners, 1);
  return 0;
}

static void spin_end(int spin) {
  if (spin) atomic_fetch_sub(&spinners, 1);
}

static void spin_until_finished(rl_req *req) {
  uint64_t end = rl_now_ns() + RL_SPIN_NS;
  for (unsigned i = 1;; i++) {
    if (atomic_load_explicit(&req->finished, memory_order_acquire)) break;
    if ((i & 63) == 0 && rl_now_ns() >= end) break;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

int rl_req_call(rlock *lock, rl_req *req) {
  rl_client *c = lock->client;
  if (rl_client_forked(c)) return RLOCK_EFORKED;
  if (rl_client_on_loop(c)) return RLOCK_EDEADLK;
  rl_waiter *w = rl_waiter_self();
  if (w == NULL) return RLOCK_ENOMEM;
  req->lock = lock;
  req->waiter = w;
  atomic_init(&req->finished, 0);
  atomic_fetch_add_explicit(&c->blocking, 1, memory_order_relaxed);
  int spin = spin_begin(c);
  /* Started here when the loop sleeps (fast.c), and often finished here
   * too (its own round), else posted. */
  int fast = rl_fast_start(c, req);
  if (!fast) {
    int rc = rl_client_post(c, req);
    if (rc != 0) {
      spin_end(spin);
      atomic_fetch_sub_explicit(&c->blocking, 1, memory_order_relaxed);
      return rc;
    }
  }
  if (spin && !(fast & RL_FAST_OWN)) spin_until_finished(req);
  spin_end(spin);
  /* The start armed a deadline the sleeping loop does not know of: it
   * must wake to keep it, unless the reply (which wakes it) is in. */
  if ((fast & RL_FAST_TIMERS) &&
      !atomic_load_explicit(&req->finished, memory_order_acquire))
    rl_client_wake(c);
  /* Even when the spin saw the end, take the mutex: the loop thread may
   * still be inside it, signalling this thread's waiter. */
  uv_mutex_lock(&w->mu);
  while (!req->finished) uv_cond_wait(&w->cond, &w->mu);
  uv_mutex_unlock(&w->mu);
  atomic_fetch_sub_explicit(&c->blocking, 1, memory_order_relaxed);
  return req->status;
}

