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

static int call_thread(rlock *lock, rl_req *req) {
  rl_owner_thread(lock->client, req);
  return rl_req_call(lock, req);
}

int rlock_trylock(rlock *lock, int64_t wait_ms, int64_t lease_ms) {
  if (lock == NULL || !rl_wait_check(lock, wait_ms) ||
      !rl_lease_check(lock, lease_ms))
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
  int rc = rl_req_call(lock, &req);
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
  if (lock == NULL || cb == NULL || !rl_wait_check(lock, wait_ms) ||
      !rl_lease_check(lock, lease_ms))
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
  if (lock == NULL || !rl_lease_fixed_check(lock, lease_ms)) return RLOCK_EINVAL;
  rl_req req;
  memset(&req, 0, sizeof req);
  req.kind = RL_REQ_EXTEND;
  req.lease_ms = lease_ms;
  return call_thread(lock, &req);
}

int rlock_extend_async(rlock *lock, uint64_t owner, int64_t lease_ms,
                       rlock_cb cb, void *arg) {
  if (lock == NULL || cb == NULL || !rl_lease_fixed_check(lock, lease_ms))
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

int rlock_set_risk_cb(rlock *lock, rlock_risk_cb cb, void *arg) {
  if (lock == NULL) return RLOCK_EINVAL;
  if (rl_client_forked(lock->client)) return RLOCK_EFORKED;
  return rl_lock_set_risk(lock, cb, arg);
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
  return rl_req_call(lock, &req);
}

/* For the lock family's calls (family.c), which post their own requests
 * the way these do. */
