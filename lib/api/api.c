/*
 * The public lock calls: argument checks, then a request to the loop. A
 * blocking call waits on its thread's waiter; an async call returns at
 * once and its callback runs on the loop thread. Arguments are checked
 * here, before anything is queued, so bad input changes nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "lock.h"
#include "options.h"
#include "pubsub.h"
#include "util.h"
#include "wait.h"

/* A lease must be able to leave validity at all (longer than the drift
 * allowance, lease * drift_factor + 2 ms), and no longer than the
 * deployment's longest lease, which the restart quarantine covers. */
static int lease_ok(const rlock *lock, int64_t lease_ms) {
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

static int check_lease(const rlock *lock, int64_t lease_ms) {
  return lease_ms == RLOCK_WATCHDOG || lease_ok(lock, lease_ms);
}

static int check_wait(const rlock *lock, int64_t wait_ms) {
  if (wait_ms == RLOCK_WAIT_FOREVER || wait_ms >= 0) return 1;
  char why[120];
  int n = snprintf(why, sizeof why,
                   "wait_ms %lld: not RLOCK_WAIT_FOREVER (-1) or a number of "
                   "ms from 0",
                   (long long)wait_ms);
  rl_client_note_error(lock->client, why, (size_t)n);
  return 0;
}

static void set_acquire(rl_req *req, rlock *lock, int64_t wait_ms,
                        int64_t lease_ms) {
  rl_client *c = lock->client;
  req->kind = RL_REQ_ACQUIRE;
  req->watchdog = lease_ms == RLOCK_WATCHDOG;
  req->lease_ms = req->watchdog ? c->opts.watchdog_timeout_ms : lease_ms;
  req->t_post = rl_now_ms();
  if (wait_ms == RLOCK_WAIT_FOREVER) {
    req->deadline = RL_FOREVER;
  } else {
    uint64_t now = rl_now_ms();
    req->deadline = (uint64_t)wait_ms > RL_FOREVER - now - 1
                        ? RL_FOREVER - 1
                        : now + (uint64_t)wait_ms;
  }
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
 * A call in its own round (client.c) does not spin: it sleeps in poll(2)
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

/* Posts req and waits for it on the calling thread. */
static int call(rlock *lock, rl_req *req) {
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
  /* Started here when the loop sleeps (client.c's fast path), and often
   * finished here too (its own round), else posted. */
  int fast = rl_client_fast_start(c, req);
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

static int call_thread(rlock *lock, rl_req *req) {
  rl_owner_thread(lock->client, req);
  return call(lock, req);
}

int rlock_trylock(rlock *lock, int64_t wait_ms, int64_t lease_ms) {
  if (lock == NULL || !check_wait(lock, wait_ms) ||
      !check_lease(lock, lease_ms))
    return RLOCK_EINVAL;
  rl_req req;
  memset(&req, 0, sizeof req);
  set_acquire(&req, lock, wait_ms, lease_ms);
  return call_thread(lock, &req);
}

int rlock_lock(rlock *lock, int64_t lease_ms) {
  return rlock_trylock(lock, RLOCK_WAIT_FOREVER, lease_ms);
}

static int simple(rlock *lock, int kind) {
  if (lock == NULL) return RLOCK_EINVAL;
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = kind;
  return call_thread(lock, &req);
}

int rlock_unlock(rlock *lock) { return simple(lock, RL_REQ_UNLOCK); }
int rlock_force_unlock(rlock *lock) { return simple(lock, RL_REQ_FORCE); }
int rlock_is_locked(rlock *lock) { return simple(lock, RL_REQ_IS_LOCKED); }
int rlock_hold_count(rlock *lock) { return simple(lock, RL_REQ_HOLD_COUNT); }

int rlock_is_held_by_current_thread(rlock *lock) {
  return simple(lock, RL_REQ_IS_HELD);
}

int rlock_remaining_lease(rlock *lock, int64_t *ms) {
  if (lock == NULL || ms == NULL) return RLOCK_EINVAL;
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = RL_REQ_PTTL;
  int rc = call_thread(lock, &req);
  if (rc == 0) *ms = req.out_i64;
  return rc;
}

int rlock_fencing_token(rlock *lock, uint64_t *token) {
  if (lock == NULL || token == NULL) return RLOCK_EINVAL;
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = RL_REQ_TOKEN;
  int rc = call_thread(lock, &req);
  if (rc == 0) *token = req.out_u64;
  return rc;
}

/* An async owner's record, read directly: for callers on the loop. */
static rl_hold *owner_hold(rlock *lock, uint64_t owner) {
  rl_req tmp;
  rl_owner_async(lock->client, owner, &tmp);
  rl_hold *h = rl_holds_find(&lock->client->holds, rl_lock_key(lock),
                             lock->keylen, tmp.owner, tmp.ownerlen);
  return h != NULL && !h->lost ? h : NULL;
}

static int owner_query(rlock *lock, uint64_t owner, int kind, uint64_t *out) {
  rl_client *c = lock->client;
  if (rl_client_on_loop(c)) {
    uv_mutex_lock(&c->qmu);
    int closed = c->closed;
    uv_mutex_unlock(&c->qmu);
    if (closed) return RLOCK_ECLOSED;
    rl_hold *h = owner_hold(lock, owner);
    if (kind == RL_REQ_HOLD_COUNT) return h ? (int)h->count : 0;
    if (h == NULL) return RLOCK_ENOTOWNER;
    *out = h->token;
    return RLOCK_OK;
  }
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = kind;
  rl_owner_async(c, owner, &req);
  int rc = call(lock, &req);
  if (rc == 0 && out != NULL) *out = req.out_u64;
  return rc;
}

int rlock_owner_fencing_token(rlock *lock, uint64_t owner, uint64_t *token) {
  if (lock == NULL || token == NULL) return RLOCK_EINVAL;
  return owner_query(lock, owner, RL_REQ_TOKEN, token);
}

int rlock_owner_hold_count(rlock *lock, uint64_t owner) {
  if (lock == NULL) return RLOCK_EINVAL;
  return owner_query(lock, owner, RL_REQ_HOLD_COUNT, NULL);
}

static int post_async(rlock *lock, rl_req *req, uint64_t owner, rlock_cb cb,
                      void *arg) {
  req->lock = lock;
  req->cb = cb;
  req->arg = arg;
  rl_owner_async(lock->client, owner, req);
  rl_lock_ref(lock);
  int rc = rl_client_post(lock->client, req);
  if (rc != 0) {
    rl_lock_unref(lock);
    free(req);
  }
  return rc;
}

int rlock_lock_async(rlock *lock, uint64_t owner, int64_t wait_ms,
                     int64_t lease_ms, rlock_cb cb, void *arg) {
  if (lock == NULL || cb == NULL || !check_wait(lock, wait_ms) ||
      !check_lease(lock, lease_ms))
    return RLOCK_EINVAL;
  rl_req *req = rl_zalloc(sizeof *req);
  if (req == NULL) return RLOCK_ENOMEM;
  set_acquire(req, lock, wait_ms, lease_ms);
  return post_async(lock, req, owner, cb, arg);
}

/* The callback of a fire-and-forget unlock. */
static void ignore_status(rlock *lock, int status, void *arg) {
  (void)lock;
  (void)status;
  (void)arg;
}

int rlock_unlock_async(rlock *lock, uint64_t owner, rlock_cb cb, void *arg) {
  if (lock == NULL) return RLOCK_EINVAL;
  if (cb == NULL) cb = ignore_status;
  rl_req *req = rl_zalloc(sizeof *req);
  if (req == NULL) return RLOCK_ENOMEM;
  req->kind = RL_REQ_UNLOCK;
  return post_async(lock, req, owner, cb, arg);
}

int rlock_extend(rlock *lock, int64_t lease_ms) {
  if (lock == NULL || !lease_ok(lock, lease_ms)) return RLOCK_EINVAL;
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = RL_REQ_EXTEND;
  req.lease_ms = lease_ms;
  return call_thread(lock, &req);
}

int rlock_extend_async(rlock *lock, uint64_t owner, int64_t lease_ms,
                       rlock_cb cb, void *arg) {
  if (lock == NULL || cb == NULL || !lease_ok(lock, lease_ms))
    return RLOCK_EINVAL;
  rl_req *req = rl_zalloc(sizeof *req);
  if (req == NULL) return RLOCK_ENOMEM;
  req->kind = RL_REQ_EXTEND;
  req->lease_ms = lease_ms;
  return post_async(lock, req, owner, cb, arg);
}

int rlock_set_lost_cb(rlock *lock, rlock_lost_cb cb, void *arg) {
  if (lock == NULL) return RLOCK_EINVAL;
  if (rl_client_forked(lock->client)) return RLOCK_EFORKED;
  return rl_lock_set_lost(lock, cb, arg);
}

uint64_t rlock_thread_id(void) { return rl_thread_seq(); }

int rlock_cancel_async(rlock *lock, uint64_t owner) {
  if (lock == NULL) return RLOCK_EINVAL;
  rl_client *c = lock->client;
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = RL_REQ_CANCEL;
  rl_owner_async(c, owner, &req);
  if (rl_client_on_loop(c)) {
    uv_mutex_lock(&c->qmu);
    int closed = c->closed;
    uv_mutex_unlock(&c->qmu);
    if (closed) return RLOCK_ECLOSED;
    return rl_pubsub_cancel(lock, req.owner, req.ownerlen);
  }
  return call(lock, &req);
}

/* For the lock family's calls (family.c), which post their own requests
 * the way these do. */
int rl_req_call(rlock *lock, rl_req *req) { return call(lock, req); }

int rl_lease_check(const rlock *lock, int64_t lease_ms) {
  return check_lease(lock, lease_ms);
}
