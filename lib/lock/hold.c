/*
 * The state changes of a hold: how one is forgotten, how one is lost, and
 * how what is left of a lost one is given back.
 * A hold is a record in the client's table (holds.h); the watchdog only
 * times its renewals. Losing a hold is the lock layer's decision (renew.c,
 * extend.c, release.c, acquire.c all reach it), so it lives here, with the
 * metric, the log line and the owner's callback in one place.
 */
#include <string.h>

#include "kind.h"
#include "lock.h"
#include "round.h"
#include "scripts.h"
#include "util.h"

/* By the kind of the handle that took the hold: its release script
 * (kind.h), which for the reentrant lock is the release script, for the
 * fair lock its last unlock (which tells the next waiter). */
void rl_hold_release_everywhere(rl_client *c, const rl_hold *h) {
  const rl_kind *kind = h->lock != NULL ? h->lock->kind : &rl_kind_lock;
  char owner[RL_HOLDS_OWNER_MAX];
  size_t ownerlen = rl_holds_owner(&c->holds, h, owner);
  rl_call_vals v;
  if (h->lock != NULL) {
    rl_lock_vals(h->lock, &v);
  } else { /* no handle: the hold key is a reentrant lock's hash */
    const char *keys[] = {h->key};
    size_t lens[] = {h->keylen};
    memset(&v, 0, sizeof v);
    v.keys = keys;
    v.keylens = lens;
    v.owner = owner;
    v.ownerlen = ownerlen;
    for (int i = 0; i < c->nmasters; i++)
      rl_call_send_one(c, &kind->release, &v, i);
    return;
  }
  v.owner = owner;
  v.ownerlen = ownerlen;
  v.lease_ms = h->lease_ms;
  for (int i = 0; i < c->nmasters; i++)
    rl_call_send_one(c, &kind->release, &v, i);
}

void rl_hold_drop(rl_client *c, rl_hold *h) {
  rl_watchdog_cancel(&c->watchdog, &h->wd);
  if (!h->lost) RL_ADD(c->metrics.locks_held, -1); /* else when lost */
  rl_hist_observe(&c->metrics.hold, rl_now_ms() - h->acquired_ms);
  rlock *lock = h->lock;
  rl_holds_remove(&c->holds, h);
  if (lock != NULL) rl_lock_unref(lock);
}

void rl_hold_lost(rl_client *c, rl_hold *h) {
  if (h->lost) return;
  h->lost = 1;
  RL_ADD(c->metrics.locks_lost, 1);
  RL_ADD(c->metrics.locks_held, -1); /* held no more, though not unlocked */
  char owner[RL_HOLDS_OWNER_MAX];
  size_t ownerlen = rl_holds_owner(&c->holds, h, owner);
  rl_log(c, RLOCK_LOG_ERROR, "lock %.*s lost by %.*s", (int)h->keylen, h->key,
         (int)ownerlen, owner);
  rl_watchdog_cancel(&c->watchdog, &h->wd);
  /* What survived on some masters would otherwise stay for its lease, and
   * a later acquisition of the same owner would stack on it. */
  rl_hold_release_everywhere(c, h);
  rlock *lock = h->lock;
  void *arg = NULL;
  rlock_lost_cb cb = lock ? rl_lock_lost(lock, &arg) : NULL;
  if (cb != NULL) cb(lock, h->owner_id, h->owner_is_thread, arg);
}

rl_hold *rl_req_live_hold(rl_req *req) {
  rl_hold *h = rl_req_hold(req);
  if (h == NULL) {
    rl_req_finish(req, RLOCK_ENOTOWNER);
    return NULL;
  }
  if (h->lost) {
    rl_hold_drop(req->lock->client, h);
    rl_req_finish(req, RLOCK_ELOST);
    return NULL;
  }
  return h;
}
