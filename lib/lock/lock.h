/*
 * Lock operations, run on the loop thread: each takes a request from the
 * queue, runs one or more quorum rounds, and finishes the request. Split
 * by concern: acquire.c (acquisition, retry, fencing), release.c (unlock
 * and force unlock), query.c (the read-only questions).
 */
#ifndef RL_LOCK_H
#define RL_LOCK_H

#include "client.h"

/* A handle's text (client.h): the name, with its NUL, comes first. */
static inline const char *rl_lock_text(const rlock *lock) {
  return (const char *)&lock->at[2 * lock->nkeys + 1];
}
/* Key k of the handle, not NUL-terminated, and its length. */
static inline const char *rl_lock_keyk(const rlock *lock, int k) {
  return rl_lock_text(lock) + lock->at[k];
}
static inline size_t rl_lock_keylenk(const rlock *lock, int k) {
  return lock->at[lock->nkeys + k];
}
/* The hold key (its length is lock->keylen), by which the client's table
 * knows a hold of the handle. */
static inline const char *rl_lock_key(const rlock *lock) {
  return rl_lock_keyk(lock, lock->hold);
}
/* The fencing counter's key and its length. */
static inline const char *rl_lock_fence(const rlock *lock) {
  return rl_lock_keyk(lock, lock->fence);
}
static inline size_t rl_lock_fencelen(const rlock *lock) {
  return rl_lock_keylenk(lock, lock->fence);
}
/* Where its waiters listen (its length is lock->channellen): a stable
 * pointer, so that a wait queue knows its channel by its address. */
static inline const char *rl_lock_channel(const rlock *lock) {
  return rl_lock_text(lock) + lock->at[2 * lock->nkeys];
}

/* Sets the lost-lock callback (any thread); RLOCK_ENOMEM leaves the one
 * set before. */
int rl_lock_set_lost(rlock *lock, rlock_lost_cb cb, void *arg);
/* The lost-lock callback and its argument as last set (NULL: none). */
rlock_lost_cb rl_lock_lost(rlock *lock, void **arg);
/* The same for the at-risk callback (rlock_set_risk_cb). */
int rl_lock_set_risk(rlock *lock, rlock_risk_cb cb, void *arg);
rlock_risk_cb rl_lock_risk(rlock *lock, void **arg);

/* A handle of no kind yet (the caller sets kind, or leaves it NULL for a
 * family object): nkeys keys "<prefix>{<name>}" + suffixes[k], of which
 * hold is the hold key, fence the fencing counter and chan_key the one
 * whose name + ":ch" is the channel; one allocation (client.h), with a
 * reference to the client. NULL when out of memory. The name has been
 * checked. */
rlock *rl_lock_alloc(rl_client *c, const char *name, int nkeys,
                     const char *const *suffixes, int hold, int fence,
                     int chan_key);

/* Writes the owner field of the calling thread, or of an async owner. */
void rl_owner_thread(rl_client *c, rl_req *req);
void rl_owner_async(rl_client *c, uint64_t owner, rl_req *req);

/* Loop thread: starts a request taken from the queue: req->start when
 * set (the lock family's), else by kind (the client's start hook). */
void rl_req_start(rl_req *req);

/*
 * Several locks at once on cluster masters: their names hash to many
 * slots, on several nodes, and one script runs on one node, so
 * rlock_lock_all and rlock_unlock_all are refused when any master of the
 * client is a redis-cluster:// one. RLOCK_EINVAL, with
 * rlock_client_last_error saying "<what> are not yet supported on a
 * redis-cluster:// master" (what: "several locks at once"); 0 when every
 * master is a single server (plain or Sentinel). Any thread: the
 * masters' kinds are fixed at open. Every other kind keeps all its keys
 * and channels under the name's hash tag (one slot), so it runs on a
 * cluster as the reentrant lock does. It lives in the lock layer
 * (lock.c), where the handles and the client's masters are known; the
 * family's set uses it from above.
 */
int rl_family_refused(rl_client *c, const char *what);

void rl_acquire_start(rl_req *req);
void rl_unlock_start(rl_req *req);
void rl_force_start(rl_req *req);
void rl_query_start(rl_req *req);

/* The hold of the request's owner on the request's lock, or NULL. */
rl_hold *rl_req_hold(rl_req *req);

/* The owner's live hold. Without one, finishes req with RLOCK_ENOTOWNER,
 * or with RLOCK_ELOST after dropping a hold that was lost, and returns
 * NULL (hold.c). */
rl_hold *rl_req_live_hold(rl_req *req);

/* Forgets a hold: stops its renewal, drops its handle reference and
 * removes it from the table (hold.c). */
void rl_hold_drop(rl_client *c, rl_hold *h);

/* Marks a hold lost, stops its renewal, releases what is left of it on
 * the masters where it survived (rl_hold_release_everywhere) and runs the
 * handle's lost-lock callback, once (hold.c). */
void rl_hold_lost(rl_client *c, rl_hold *h);

/* The watchdog's renewal routine (renew.c): renews due holds, arg is the
 * client. */
void rl_renew_due(rl_wheel_node **due, size_t n, void *arg);
/* Close: stops the grouping of renewals by node (renew.c). */
void rl_renew_close(rl_client *c);

/* Close: releases every lock the client holds, in batches, then calls
 * done (at once when it holds none). Holds are dropped. */
void rl_release_all(rl_client *c, void (*done)(rl_client *c));

void rl_extend_start(rl_req *req);

/* Posts req (its lock, kind and owner set) and waits for it on the
 * calling thread, as the blocking calls do; RLOCK_EDEADLK on the loop
 * thread (call.c). */
int rl_req_call(rlock *lock, rl_req *req);

/* 1 if lease_ms is RLOCK_WATCHDOG or a lease the client accepts (the
 * reason of a refusal noted in the client's last error), else 0. */
int rl_lease_check(const rlock *lock, int64_t lease_ms);

/* The same for a fixed lease only (RLOCK_WATCHDOG is not one). */
int rl_lease_fixed_check(const rlock *lock, int64_t lease_ms);

/* 1 if wait_ms is RLOCK_WAIT_FOREVER or a number of ms from 0, else 0
 * (the reason noted in the client's last error). */
int rl_wait_check(const rlock *lock, int64_t wait_ms);

/* Stops a request's retry timer, if any. */
void rl_sleep_cancel(rl_req *req);

/* From rl_req_finish: the acquisition's current grants are kept by its
 * hold (status 0) or given back (anything else). */
void rl_acquire_end(rl_req *req, int status);

/* Sends the owner-conditional release of a hold to every master, expecting
 * no answer (hold.c). On each master it lands after every command sent
 * before it, and before any sent after it: the same owner's later
 * acquisition is never hit. */
void rl_hold_release_everywhere(rl_client *c, const rl_hold *h);


/* The call values of a handle's keys and channel (lock.c): what every
 * script call of the handle starts from. */
struct rl_call_vals;
void rl_lock_vals(const rlock *lock, struct rl_call_vals *v);

#endif
